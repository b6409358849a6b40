/* sigexp.cu: a design experiment, not a benchmark row. Measures the put_signal ping-pong round
 * trip (8 B payload + 8 B signal, one thread per PE, 2 PEs) with different fence/store/poll
 * choices, to pick the device implementation. Build: nvcc -arch=sm_90 sigexp.cu
 * $(pkg-config --cflags --libs ishmem) -lcuda; run: ishmrun -n 2 ./sigexp on TWO GPUs (nvidia-h200-x2).
 * Not on one GPU: two spinning kernels of two processes time-slice there, so every round trip
 * waits for a context switch and the run takes hours (seen on nvidia-h100-x1, 2026-11-23).
 * Not run yet on two GPUs (the kind was not lent); see the closing notes. */
#include <ishmem.h>
#include <ishmemx.h>
#include <cuda/atomic>
#include <cuda.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

enum { SEND_FENCE_SC = 0, SEND_RELEASE = 1, SEND_FENCE_ACQREL = 2, SEND_NOFENCE_VOLATILE = 3, NSEND };
enum { POLL_ACQUIRE = 0, POLL_VOLATILE_FENCE = 1, POLL_RELAXED_FENCE = 2, NPOLL };
static const char *send_name[] = {"fence.sc+relaxed", "st.release.sys", "fence.acq_rel+relaxed", "fence.sc+volatile"};
static const char *poll_name[] = {"ld.acquire.sys", "volatile+fence.acq_rel", "ld.relaxed.sys+fence.acq_rel"};

__device__ __forceinline__ void send(uint64_t *rdata, uint64_t *rsig, uint64_t payload, uint64_t v, int mode) {
    *(volatile uint64_t *)rdata = payload;
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> s(*rsig);
    switch (mode) {
    case SEND_FENCE_SC: __threadfence_system(); s.store(v, cuda::memory_order_relaxed); break;
    case SEND_RELEASE: s.store(v, cuda::memory_order_release); break;
    case SEND_FENCE_ACQREL: asm volatile("fence.acq_rel.sys;" ::: "memory"); s.store(v, cuda::memory_order_relaxed); break;
    default: __threadfence_system(); *(volatile uint64_t *)rsig = v; break;
    }
}

__device__ __forceinline__ void poll(uint64_t *sig, uint64_t v, int mode) {
    cuda::atomic_ref<uint64_t, cuda::thread_scope_system> s(*sig);
    switch (mode) {
    case POLL_ACQUIRE: while (s.load(cuda::memory_order_acquire) != v) {} break;
    case POLL_VOLATILE_FENCE: while (*(volatile uint64_t *)sig != v) {} asm volatile("fence.acq_rel.sys;" ::: "memory"); break;
    default: while (s.load(cuda::memory_order_relaxed) != v) {} asm volatile("fence.acq_rel.sys;" ::: "memory"); break;
    }
}

__global__ void pingpong(uint64_t *data, uint64_t *sig, uint64_t base, long iters, int me, int smode, int pmode,
                         unsigned long long *bad, long long *cycles) {
    int peer = 1 - me;
    uint64_t *rdata = (uint64_t *)ishmem_ptr(data, peer);
    uint64_t *rsig = (uint64_t *)ishmem_ptr(sig, peer);
    unsigned long long b = 0;
    long long t0 = 0;
    for (long i = 0; i < iters; i++) {
        if (i == iters / 10) t0 = clock64();
        uint64_t v = base + i + 1;
        if (me == 0) {
            send(rdata, rsig, v * 3, v, smode);
            poll(sig, v, pmode);
            b += *(volatile uint64_t *)data != v * 5;
        } else {
            poll(sig, v, pmode);
            b += *(volatile uint64_t *)data != v * 3;
            send(rdata, rsig, v * 5, v, smode);
        }
    }
    *cycles = clock64() - t0;
    *bad = b;
}

__global__ void peer_addr(uint64_t *slots, int peer, uint64_t *out) { *out = (uint64_t)ishmem_ptr(slots, peer); }

/* On-queue barrier, 2 PEs: kernel (the library's) vs stream memory operations (write the
 * peer's slot[me], wait on my slot[peer]); back to back on one stream like the benchmark row. */
static void queue_barrier_exp(int me) {
    cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    uint64_t *slots = (uint64_t *)ishmem_calloc(2, 8);
    uint64_t *pa; cudaMallocManaged(&pa, 8);
    peer_addr<<<1, 1>>>(slots, 1 - me, pa);
    cudaDeviceSynchronize();
    CUdevice dev; cuCtxGetDevice(&dev);
    int can_wait = 0, can_flush = 0;
    cuDeviceGetAttribute(&can_wait, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev);
    cuDeviceGetAttribute(&can_flush, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, dev);
    if (me == 0) printf("sigexp,attrs,wait_value_nor=%d,flush_remote_writes=%d\n", can_wait, can_flush);
    const long N = 2000;
    uint64_t epoch = 0;
    for (int variant = 0; variant < 3; variant++) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            ishmem_barrier_all();
            cudaEvent_t a, z; cudaEventCreate(&a); cudaEventCreate(&z);
            cudaEventRecord(a, st);
            for (long i = 0; i < N; i++) {
                if (variant == 0) { ishmemx_barrier_all_on_queue(st); continue; }
                epoch++;
                CUstreamBatchMemOpParams ops[2];
                memset(ops, 0, sizeof ops);
                ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
                ops[0].writeValue.address = (CUdeviceptr)(*pa + 8 * me);
                ops[0].writeValue.value64 = epoch;
                ops[0].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
                ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
                ops[1].waitValue.address = (CUdeviceptr)(slots + (1 - me));
                ops[1].waitValue.value64 = epoch;
                ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ | (variant == 2 && can_flush ? CU_STREAM_WAIT_VALUE_FLUSH : 0);
                CUresult r = cuStreamBatchMemOp((CUstream)st, 2, ops, 0);
                if (r != CUDA_SUCCESS) { printf("sigexp: cuStreamBatchMemOp failed %d\n", (int)r); return; }
            }
            cudaEventRecord(z, st);
            if (cudaStreamSynchronize(st) != cudaSuccess) { printf("sigexp: stream failed\n"); return; }
            float ms; cudaEventElapsedTime(&ms, a, z);
            double us = ms * 1e3 / N;
            if (us < best) best = us;
        }
        static const char *names[] = {"kernel (ishmemx_barrier_all_on_queue)", "batch memop write+wait", "batch memop write+wait(flush)"};
        if (me == 0) printf("sigexp,queue_barrier,%s,%.3f us\n", names[variant], best);
        fflush(stdout);
    }
    ishmem_barrier_all();
    ishmem_free(slots);
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe();
    int ndev = 0;
    cudaGetDeviceCount(&ndev);
    if (ndev < 2) { if (!me) fprintf(stderr, "sigexp: needs 2 visible GPUs (one per PE), found %d\n", ndev); ishmem_finalize(); return 1; }
    if (ishmem_n_pes() != 2) { if (!me) fprintf(stderr, "sigexp: run on 2 PEs\n"); ishmem_finalize(); return 1; }
    uint64_t *data = (uint64_t *)ishmem_calloc(1, 8), *sig = (uint64_t *)ishmem_calloc(1, 8);
    unsigned long long *bad; long long *cyc;
    cudaMallocManaged(&bad, 8); cudaMallocManaged(&cyc, 8);
    int clk = 0; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    const long iters = 20000;
    uint64_t base = 0;
    int fails = 0;
    for (int s = 0; s < NSEND; s++)
        for (int p = 0; p < NPOLL; p++) {
            double best = 1e30;
            for (int rep = 0; rep < 5; rep++) {
                ishmem_barrier_all();
                cudaEvent_t a, z; cudaEventCreate(&a); cudaEventCreate(&z);
                cudaEventRecord(a);
                pingpong<<<1, 1>>>(data, sig, base, iters, me, s, p, bad, cyc);
                cudaEventRecord(z);
                if (cudaDeviceSynchronize() != cudaSuccess) { fprintf(stderr, "kernel failed\n"); return 1; }
                float ms; cudaEventElapsedTime(&ms, a, z);
                double us = ms * 1e3 / iters;
                if (us < best) best = us;
                fails += *bad != 0;
                base += iters;
                ishmem_barrier_all();
            }
            if (me == 0) printf("sigexp,%s,%s,%.3f us RT,bad=%llu\n", send_name[s], poll_name[p], best, *bad);
            fflush(stdout);
        }
    queue_barrier_exp(me);
    ishmem_free(sig); ishmem_free(data);
    ishmem_finalize();
    return fails != 0;
}
