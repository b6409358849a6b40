/* kernel_state.cu: the device-state binder path, independent of the device API headers. It
 * includes only ishmem/device_state.h and declares the few host functions it calls, holds
 * its own __constant__ ishmemi_dev_state_t and registers binders at static-init time, as
 * ishmem/cuda_impl.cuh does. Checks: the binder ran during ishmem_init with the right
 * my_pe/n_pes/heap/peer bases; a kernel reading the state stores into the peer's heap through
 * peer_base and bumps the peer's word with a system-scope atomic; the host sees both; the
 * sync area is reserved and zeroed; a binder that fails at init is retried by the next
 * ishmem_barrier_all; a binder registered after init runs at once.
 * Build: nvcc -arch=sm_90 kernel_state.cu $(pkg-config --cflags --libs ishmem) */
#include <ishmem/device_state.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_test.h"

extern "C" {
void ishmem_init(void);
void ishmem_finalize(void);
int ishmem_my_pe(void);
int ishmem_n_pes(void);
void *ishmem_malloc(size_t);
void *ishmem_calloc(size_t, size_t);
void ishmem_free(void *);
void ishmem_barrier_all(void);
void ishmem_int_get(int *dest, const int *src, size_t n, int pe);
long ishmem_long_g(const long *src, int pe);
int ishmemx_gpu_in_use(void);
void ishmemx_cuda_register_binder(int (*bind)(const void *state, size_t bytes));
}

static __constant__ ishmemi_dev_state_t test_dstate;
static ishmemi_dev_state_t host_copy;
static int bind_calls, flaky_calls, late_calls;

static int bind_test_state(const void *state, size_t bytes) {
    bind_calls++;
    if (bytes != sizeof(ishmemi_dev_state_t)) return 1;
    memcpy(&host_copy, state, bytes);
    return cudaMemcpyToSymbol(test_dstate, state, bytes) != cudaSuccess;
}

/* Fails the first time (as a module not registered yet would), succeeds on the retry. */
static int flaky_binder(const void *state, size_t bytes) {
    (void)state;
    (void)bytes;
    return flaky_calls++ == 0;
}

static int late_binder(const void *state, size_t bytes) {
    (void)state;
    (void)bytes;
    late_calls++;
    return 0;
}

namespace {
struct registration {
    registration() {
        ishmemx_cuda_register_binder(&bind_test_state);
        ishmemx_cuda_register_binder(&flaky_binder);
    }
} registration_instance;
} // namespace

#define N 4096

/* One block: stores me*100000+i into the peer's copy of data, then adds 1 to the peer's
 * counter (system scope), then reports what it read from the state. */
__global__ void store_to_peer(int *data, unsigned long long *counter, long long *report) {
    const ishmemi_dev_state_t &s = test_dstate;
    int me = s.my_pe, peer = (me + 1) % s.n_pes;
    uint64_t off = (uint64_t)(uintptr_t)data - s.heap_base;
    int *remote = (int *)(uintptr_t)(s.peer_base[peer] + off);
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        remote[i] = me * 100000 + i;
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t coff = (uint64_t)(uintptr_t)counter - s.heap_base;
        atomicAdd_system((unsigned long long *)(uintptr_t)(s.peer_base[peer] + coff), 1ull);
        report[0] = s.my_pe;
        report[1] = s.n_pes;
        report[2] = (long long)s.initialized;
        report[3] = (long long)(s.peer_base[me] == s.heap_base);
        /* The sync area: zero at init (nobody ran a device barrier). */
        report[4] = (long long)*(volatile unsigned long long *)(uintptr_t)(s.heap_base + s.sync_offset);
    }
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int prev = (me + npes - 1) % npes;
    int flaky0 = flaky_calls; /* ishmemx_gpu_in_use below retries pending binders */
    CHECK(bind_calls == 1, "binder ran %d times during init", bind_calls);
    CHECK(flaky0 == 1, "flaky binder calls at init: %d", flaky0);
    CHECK(host_copy.initialized == 1 && host_copy.my_pe == me && host_copy.n_pes == npes, "state: pe %d n %d init %u",
          host_copy.my_pe, host_copy.n_pes, host_copy.initialized);
    CHECK(host_copy.heap_base != 0 && host_copy.heap_base % (2u << 20) == 0, "heap_base %#llx",
          (unsigned long long)host_copy.heap_base);
    for (int q = 0; q < npes; q++)
        CHECK(host_copy.peer_base[q] != 0, "peer_base[%d] is 0", q);
    CHECK(host_copy.sync_offset == 0, "sync_offset %llu", (unsigned long long)host_copy.sync_offset);
    long long *report = NULL;
    CHECK(cudaMallocManaged(&report, 8 * sizeof(long long)) == cudaSuccess, "cudaMallocManaged");
    if (gt_fails) { /* no GPU backend or no state: nothing below can work */
        ishmem_finalize();
        return gpu_test_end("kernel_state");
    }

    int *data = (int *)ishmem_calloc(N, sizeof(int));
    unsigned long long *counter = (unsigned long long *)ishmem_calloc(1, sizeof(unsigned long long));
    CHECK((uint64_t)(uintptr_t)data >= host_copy.heap_base + ISHMEMI_SYNC_BYTES,
          "first block %p inside the sync area (heap %#llx)", (void *)data, (unsigned long long)host_copy.heap_base);
    ishmem_barrier_all(); /* the callocs above (or this barrier) retried the flaky binder */
    CHECK(flaky_calls == 2, "flaky binder not retried by calloc/barrier_all: %d calls", flaky_calls);
    CHECK(ishmemx_gpu_in_use() == 1, "the GPU backend is not in use");

    memset(report, 0xff, 8 * sizeof(long long));
    store_to_peer<<<1, 256>>>(data, counter, report);
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "kernel: %s", cudaGetErrorString(ce));
    CHECK(report[0] == me && report[1] == npes && report[2] == 1 && report[3] == 1 && report[4] == 0,
          "kernel read pe %lld n %lld init %lld self %lld sync %lld", report[0], report[1], report[2], report[3], report[4]);
    ishmem_barrier_all();
    int *got = (int *)malloc(N * sizeof(int));
    ishmem_int_get(got, data, N, me);
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (got[i] != prev * 100000 + i) bad = i;
    CHECK(bad < 0, "data from the peer's kernel: [%d] = %d", bad, bad < 0 ? 0 : got[bad]);
    CHECK(ishmem_long_g((const long *)counter, me) == 1, "counter %ld", ishmem_long_g((const long *)counter, me));

    ishmemx_cuda_register_binder(&late_binder);
    CHECK(late_calls == 1, "binder registered after init ran %d times", late_calls);

    ishmem_barrier_all();
    cudaFree(report);
    free(got);
    ishmem_free(counter);
    ishmem_free(data);
    ishmem_finalize();
    return gpu_test_end("kernel_state");
}
