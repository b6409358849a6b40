/* sync2_probe.cu: what a two-PE synchronization and a one-thread 1 MiB reduction cost between
 * two GPUs, by the instruction forms the device collectives can use (issue 24: ishmem's
 * thread team_sync measured 4.89 us where NVSHMEM's took 1.55 us; thread sum_reduce 1 MiB
 * 59 ms vs 24 ms). Run with 2 PEs, one per GPU:
 *   nvcc -O2 -arch=sm_90 -std=c++17 -Iinclude bench/exp/sync2_probe.cu -Lprefix/lib -lishmem -o p
 *   ishmrun -n 2 ./p
 * Prints, on PE 0, us per sync (the median of 5 runs of ITERS back-to-back syncs of both PEs)
 * for each variant, and ms per 1 MiB reduction for the reduction variants (each checked). */
#include <ishmem.h>
#include <ishmemx.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;
#define ITERS 20000

__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_ar_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_ar_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ uint64_t ld_acq_sys(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t ld_rlx_sys(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_rel_sys(uint64_t *p, uint64_t v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_rlx_sys(uint64_t *p, uint64_t v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* flag[0] on each PE is written by the other PE with sequence numbers base+1, base+2, ... */
template <int V> __device__ __forceinline__ void one_sync(uint64_t *mine, uint64_t *peer, uint64_t s, int *scratch) {
    if (V == 0) {
        ishmem_team_sync(ISHMEM_TEAM_WORLD);
        return;
    }
    if (V == 6) {
        ishmem_barrier_all();
        return;
    }
    if (V == 7) { /* a local store first, then the variant 3 sync: what a fence waits for */
        *(volatile int *)scratch = (int)s;
    }
    if (V == 2) fence_sc_sys();
    if (V == 3 || V == 7) fence_ar_sys();
    if (V == 5) fence_ar_gpu();
    if (V == 4) st_rel_sys(peer, s);
    else if (V == 8) st_rlx_sys(peer, s);
    else *(volatile uint64_t *)peer = s;
    if (V == 1 || V == 2 || V == 5)
        while (*(volatile uint64_t *)mine < s) {
        }
    else if (V == 8) {
        while (ld_rlx_sys(mine) < s) {
        }
        fence_ar_sys();
    } else
        while (ld_acq_sys(mine) < s) {
        }
}

template <int V> __global__ void k_sync(uint64_t *mine, int other, uint64_t base, long iters, int *scratch) {
    uint64_t *peer = (uint64_t *)ishmem_ptr(mine, other);
    for (long i = 1; i <= iters; i++) one_sync<V>(mine, peer, base + i, scratch);
}
/* block form: the block syncs, thread 0 runs the variant, the block syncs */
template <int V> __global__ void k_sync_blk(uint64_t *mine, int other, uint64_t base, long iters, int *scratch) {
    uint64_t *peer = (uint64_t *)ishmem_ptr(mine, other);
    cg::thread_block b = cg::this_thread_block();
    for (long i = 1; i <= iters; i++) {
        if (V == 0) {
            ishmemx_team_sync_work_group(ISHMEM_TEAM_WORLD, b);
            continue;
        }
        b.sync();
        if (b.thread_rank() == 0) one_sync<V>(mine, peer, base + i, scratch);
        b.sync();
    }
}

/* ---- one-thread int sum of 2 PEs, 1 MiB per PE ---- */
__global__ void k_red_lib(int *dst, const int *src, size_t n) { ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, dst, src, n); }
/* pull with U 16-byte words per PE in flight */
template <int U> __global__ void k_red_pull(int *dst, const int *src, size_t n, uint64_t *mine, uint64_t s, int other) {
    uint64_t *peer = (uint64_t *)ishmem_ptr(mine, other);
    st_rel_sys(peer, s);
    while (ld_acq_sys(mine) < s) {
    }
    const int4 *a = (const int4 *)src, *b = (const int4 *)ishmem_ptr(src, other);
    if (other < 1) { const int4 *t = a; a = b; b = t; } /* team order: PE 0's words first */
    int4 *d = (int4 *)dst;
    size_t nv = n / 4;
    for (size_t i = 0; i < nv; i += U) {
        int4 x[U], y[U];
#pragma unroll
        for (int k = 0; k < U; k++) x[k] = __ldcg(a + i + k);
#pragma unroll
        for (int k = 0; k < U; k++) y[k] = __ldcg(b + i + k);
#pragma unroll
        for (int k = 0; k < U; k++) d[i + k] = make_int4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w);
    }
    st_rel_sys(peer, s + 1);
    while (ld_acq_sys(mine) < s + 1) {
    }
}
/* push: each PE stores its source into the other's dest, syncs, then adds its own source */
template <int U> __global__ void k_red_push(int *dst, const int *src, size_t n, uint64_t *mine, uint64_t s, int other) {
    uint64_t *peer = (uint64_t *)ishmem_ptr(mine, other);
    st_rel_sys(peer, s);
    while (ld_acq_sys(mine) < s) {
    }
    const int4 *a = (const int4 *)src;
    int4 *r = (int4 *)ishmem_ptr(dst, other);
    size_t nv = n / 4;
    for (size_t i = 0; i < nv; i += U) {
        int4 x[U];
#pragma unroll
        for (int k = 0; k < U; k++) x[k] = __ldcg(a + i + k);
#pragma unroll
        for (int k = 0; k < U; k++) r[i + k] = x[k];
    }
    st_rel_sys(peer, s + 1);
    while (ld_acq_sys(mine) < s + 1) {
    }
    int4 *d = (int4 *)dst;
    for (size_t i = 0; i < nv; i += U) {
        int4 x[U], y[U];
#pragma unroll
        for (int k = 0; k < U; k++) x[k] = __ldcg(a + i + k);
#pragma unroll
        for (int k = 0; k < U; k++) y[k] = __ldcg(d + i + k);
#pragma unroll
        for (int k = 0; k < U; k++) d[i + k] = make_int4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w);
    }
}
/* one-thread copy of 1 MiB into the peer (fcollect/alltoall/put at thread scope), U words in flight */
template <int U> __global__ void k_put1(int *dst, const int *src, size_t n, int other) {
    const int4 *a = (const int4 *)src;
    int4 *r = (int4 *)ishmem_ptr(dst, other);
    size_t nv = n / 4;
    for (size_t i = 0; i < nv; i += U) {
        int4 x[U];
#pragma unroll
        for (int k = 0; k < U; k++) x[k] = __ldcg(a + i + k);
#pragma unroll
        for (int k = 0; k < U; k++) r[i + k] = x[k];
    }
    fence_sc_sys();
}
__global__ void k_fill(int *p, size_t n, int me) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = (int)(i * 7 + me * 1000003) & 0x7ffff;
}
__global__ void k_check(const int *p, size_t n, unsigned long long *bad) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (p[i] != ((int)(i * 7) & 0x7ffff) + ((int)(i * 7 + 1000003) & 0x7ffff)) atomicAdd(bad, 1ull);
}

static int me;
static uint64_t *flags; /* symmetric: [0] sync flag, [16] reduction flag */
static uint64_t seq = 0, rseq = 0;

template <class F> static double time_runs(F launch, long iters, int runs = 5) {
    std::vector<double> t;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int r = 0; r < runs + 1; r++) {
        ishmem_barrier_all();
        cudaEventRecord(a);
        launch();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (cudaGetLastError() != cudaSuccess) { fprintf(stderr, "kernel failed\n"); exit(1); }
        if (r) t.push_back(ms * 1e3 / iters);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <int V> static void sync_row(const char *name, int *scratch) {
    double thr = time_runs([&] { k_sync<V><<<1, 1>>>(flags, 1 - me, seq, ITERS, scratch); seq += ITERS; }, ITERS);
    double blk = time_runs([&] { k_sync_blk<V><<<1, 1024>>>(flags, 1 - me, seq, ITERS, scratch); seq += ITERS; }, ITERS);
    if (me == 0) printf("sync %-44s thread %7.3f us  block %7.3f us\n", name, thr, blk);
}

int main() {
    ishmem_init();
    me = ishmem_my_pe();
    if (ishmem_n_pes() != 2) { fprintf(stderr, "2 PEs\n"); return 1; }
    flags = (uint64_t *)ishmem_calloc(64, 8);
    int *scratch = (int *)ishmem_malloc(256);
    ishmem_barrier_all();
    /* seq is the same on both PEs: every row runs the same number of syncs */
    sync_row<0>("0 ishmem_team_sync (library)", scratch);
    seq = 0;
    cudaMemset(flags, 0, 64 * 8);
    cudaDeviceSynchronize();
    sync_row<1>("1 volatile store, volatile spin (no fence)", scratch);
    sync_row<2>("2 fence.sc.sys + 1", scratch);
    sync_row<3>("3 fence.acq_rel.sys, store, ld.acquire.sys spin", scratch);
    sync_row<4>("4 st.release.sys, ld.acquire.sys spin", scratch);
    sync_row<5>("5 fence.acq_rel.gpu + 1 (not enough; for scale)", scratch);
    sync_row<7>("7 local store, then 3", scratch);
    sync_row<8>("8 fence.ar.sys, st.relaxed, relaxed spin, fence.ar", scratch);
    sync_row<6>("6 ishmem_barrier_all (library)", scratch);

    const size_t bytes = 1 << 20, n = bytes / 4;
    int *src = (int *)ishmem_malloc(bytes), *dst = (int *)ishmem_malloc(bytes);
    unsigned long long *bad;
    cudaMalloc(&bad, 8);
    k_fill<<<64, 256>>>(src, n, me);
    cudaDeviceSynchronize();
    uint64_t *rmine = flags + 16;
    auto check = [&](const char *name, double ms) {
        cudaMemset(bad, 0, 8);
        k_check<<<64, 256>>>(dst, n, bad);
        unsigned long long b = 0;
        cudaMemcpy(&b, bad, 8, cudaMemcpyDeviceToHost);
        ishmem_barrier_all();
        if (me == 0) printf("reduce %-40s %8.3f ms/call  %s\n", name, ms, b ? "WRONG" : "ok");
        cudaMemset(dst, 0, bytes);
        cudaDeviceSynchronize();
        ishmem_barrier_all();
    };
    check("init (expect WRONG)", 0);
    check("lib ishmem_int_sum_reduce (1 thread)", 1e-3 * time_runs([&] { k_red_lib<<<1, 1>>>(dst, src, n); }, 1, 3));
    check("pull U=8", 1e-3 * time_runs([&] { k_red_pull<8><<<1, 1>>>(dst, src, n, rmine, rseq + 1, 1 - me); rseq += 2; }, 1, 3));
    check("pull U=16", 1e-3 * time_runs([&] { k_red_pull<16><<<1, 1>>>(dst, src, n, rmine, rseq + 1, 1 - me); rseq += 2; }, 1, 3));
    check("pull U=32", 1e-3 * time_runs([&] { k_red_pull<32><<<1, 1>>>(dst, src, n, rmine, rseq + 1, 1 - me); rseq += 2; }, 1, 3));
    check("push U=8", 1e-3 * time_runs([&] { k_red_push<8><<<1, 1>>>(dst, src, n, rmine, rseq + 1, 1 - me); rseq += 2; }, 1, 3));
    check("push U=16", 1e-3 * time_runs([&] { k_red_push<16><<<1, 1>>>(dst, src, n, rmine, rseq + 1, 1 - me); rseq += 2; }, 1, 3));
    check("push U=32", 1e-3 * time_runs([&] { k_red_push<32><<<1, 1>>>(dst, src, n, rmine, rseq + 1, 1 - me); rseq += 2; }, 1, 3));
    for (int u : {4, 8, 16, 32}) {
        double ms = 1e-3 * time_runs([&] {
            if (u == 4) k_put1<4><<<1, 1>>>(dst, src, n, 1 - me);
            if (u == 8) k_put1<8><<<1, 1>>>(dst, src, n, 1 - me);
            if (u == 16) k_put1<16><<<1, 1>>>(dst, src, n, 1 - me);
            if (u == 32) k_put1<32><<<1, 1>>>(dst, src, n, 1 - me);
        }, 1, 3);
        if (me == 0) printf("put1 1 MiB one thread U=%-2d %8.3f ms\n", u, ms);
    }
    ishmem_barrier_all();
    ishmem_finalize();
    return 0;
}
