/* bench/exp/proxy_lat_probe.cu: where a kernel's round trip through the proxy ring goes
 * (issue 23: g, fetch_add and compare_swap through the proxy were 4-8 us over the same call
 * from the host). One thread of PE 0 posts requests through the library's own ring functions
 * (include/ishmem/cuda_impl.cuh) and stamps %globaltimer between the phases of each:
 *   take     ticket and free slot (the slot-free check: the release word in device memory, or
 *            word 7 of the slot across the bus),
 *   publish  words 1..6 into the slot (pinned host memory), system fence, word 0,
 *   wait     until the done word: the proxy's pick-up, its run of the request, the reply
 *            crossing back and the kernel's poll seeing it,
 *   release  the slot's release word (and, old style, the reply read and fences).
 * Variants: "new" is the library's path (proxy_take, proxy_publish, proxy_wait without acquire
 * as g and AMOs use it: both reply words in one 16-byte load, each checked for the request's
 * tag, with counts of torn polls: wait_counting); "old" redoes what the ring
 * did before (word 7 read across the bus at every take, done word polled alone, a system
 * fence, the reply read in a second load, a system fence, word 7 written). Requests: NOP with
 * a reply (the proxy does nothing: the wait is the ring's own round trip) and G of an int on
 * PE 1 (the proxy's run is the mailbox round trip, as from the host). With
 * ISHMEMI_PROXY_PROFILE=1 the proxy thread prints at finalize its mean time per request kind:
 * wait minus that is the ring's share (post crossing, pick-up, reply crossing, poll).
 * Output: one CSV line per variant and request: probe,variant,request,take_us,publish_us,
 * wait_us,release_us,total_us.
 *   nvcc -std=c++17 -arch=sm_90 -Iinclude bench/exp/proxy_lat_probe.cu -Lprefix/lib -lishmem
 *   ISHMEM_GPU=1 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo ISHMEM_OFI_PROVIDER='tcp;ofi_rxm' \
 *     ISHMEMI_PROXY_PROFILE=1 ishmrun -n 2 ./proxy_lat_probe */
#include <cuda_runtime.h>
#include <ishmem.h>
#include <ishmemx.h>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                        \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "proxy_lat_probe: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

__device__ __forceinline__ unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The ring before this change: word 7 read at every take. */
__device__ __noinline__ uint64_t take_old() {
    uint64_t t = atomicAdd(ishmemi::proxy_word(ISHMEMI_SYNC_PROXY_TICKET), 1ull);
    if (t >= ISHMEMI_PROXY_SLOTS) {
        uint64_t prev = t - ISHMEMI_PROXY_SLOTS + 1;
        volatile uint64_t *s = ishmemi::proxy_slot(t);
        /* (the release word too: earlier requests of this run released their slots there) */
        while (s[7] != prev && *ishmemi::proxy_released(t) != prev) {
        }
    }
    return t;
}
/* The wait before this change: done word alone, fence, the reply in a second load, fence
 * (the reply's halves are now in words 6 and 7 beside the tag: device_state.h). */
__device__ __noinline__ uint64_t wait_old(uint64_t t, unsigned long long *t_done) {
    volatile uint64_t *s = ishmemi::proxy_slot(t);
    const uint64_t tag = ishmemi::proxy_tag(t);
    while ((s[7] ^ tag) >> 32) {
    }
    *t_done = now();
    __threadfence_system();
    uint64_t lo = s[6], hi = s[7];
    __threadfence_system();
    s[7] = t + 1;
    return (lo & 0xffffffffull) | hi << 32;
}
/* The library's wait (ishmemi::proxy_wait without acquire, as g and AMOs use it), counting its
 * polls: torn[0] polls whose word 7 carried the tag while word 6 did not (a 16-byte load that
 * was not one snapshot: the proxy stores word 6 first), torn[1] polls with word 6 tagged and
 * word 7 not (read between the proxy's two stores). Any count is evidence of what the tag
 * check guards against; zero is not proof that a load cannot tear. */
__device__ __noinline__ uint64_t wait_counting(uint64_t t, unsigned long long *torn) {
    const unsigned long long *s = (const unsigned long long *)ishmemi::proxy_slot(t);
    const unsigned long long tag = ishmemi::proxy_tag(t);
    unsigned long long lo, hi;
    for (;;) {
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(s + 6) : "memory");
        bool ok6 = !((lo ^ tag) >> 32), ok7 = !((hi ^ tag) >> 32);
        if (ok6 && ok7) break;
        if (ok7) torn[0]++;
        if (ok6) torn[1]++;
    }
    ishmemi::proxy_release(t);
    return (lo & 0xffffffffull) | hi << 32;
}

enum { NOP = 0, G = 1 };
/* res[4 * k + phase]: summed ns of phase over n requests of kind k (0 NOP, 1 G) */
__global__ void probe(bool old, int n, const int *x, int pe, unsigned long long *res, int *bad, unsigned long long *torn) {
    for (int k = 0; k < 2; k++) {
        unsigned long long acc[4] = {0, 0, 0, 0};
        for (int i = 0; i < n + 10; i++) { /* 10 warm-up requests */
            uint64_t w1 = k == NOP ? ishmemi::proxy_w1(ISHMEMI_PROXY_NOP, 0, 0, true, ishmemi_dstate.my_pe)
                                   : ishmemi::proxy_w1(ISHMEMI_PROXY_G, sizeof(int), 0, true, pe);
            uint64_t w2 = k == NOP ? 0 : (uint64_t)(uintptr_t)x;
            uint64_t w4 = k == NOP ? 0 : sizeof(int);
            unsigned long long t0 = now();
            uint64_t t = old ? take_old() : ishmemi::proxy_take();
            unsigned long long t1 = now();
            ishmemi::proxy_publish(t, w1, w2, 0, w4, 0, 0);
            unsigned long long t2 = now(), t3;
            uint64_t v;
            if (old) {
                v = wait_old(t, &t3);
            } else {
                v = wait_counting(t, torn);
                t3 = now(); /* the release store is inside the wait: counted with it */
            }
            unsigned long long t4 = now();
            if (k == G && (int)v != 4242) (*bad)++;
            if (i >= 10) {
                acc[0] += t1 - t0;
                acc[1] += t2 - t1;
                acc[2] += t3 - t2;
                acc[3] += t4 - t3;
            }
        }
        for (int p = 0; p < 4; p++) res[4 * k + p] = acc[p];
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 500;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    /* one PE per GPU (2 pretend nodes: each PE is rank 0 of its node, so choose here) */
    const char *rk = getenv("ISHMRUN_RANK");
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(rk && ndev > 0 ? atoi(rk) % ndev : 0));
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    if (npes != 2) {
        fprintf(stderr, "proxy_lat_probe: 2 PEs (on 2 nodes) expected\n");
        ishmem_global_exit(1);
    }
    int *x = (int *)ishmem_malloc(sizeof(int));
    ishmem_int_p(x, 4242, me);
    ishmem_barrier_all();
    unsigned long long *res;
    int *bad;
    CK(cudaMallocManaged(&res, 8 * sizeof *res));
    CK(cudaMallocManaged(&bad, sizeof *bad));
    unsigned long long *torn;
    CK(cudaMallocManaged(&torn, 2 * sizeof *torn));
    torn[0] = torn[1] = 0;
    unsigned long long waits = 0;
    if (me == 0) {
        printf("probe,variant,request,take_us,publish_us,wait_us,release_us,total_us\n");
        for (int r = 0; r < rounds; r++) {
            for (int old = 0; old < 2; old++) {
                *bad = 0;
                probe<<<1, 1>>>(old != 0, n, x, 1, res, bad, torn);
                if (!old) waits += 2ull * (n + 10);
                CK(cudaGetLastError());
                CK(cudaDeviceSynchronize());
                for (int k = 0; k < 2; k++) {
                    double us[4], tot = 0;
                    for (int p = 0; p < 4; p++) tot += us[p] = (double)res[4 * k + p] / n / 1e3;
                    printf("proxy_lat_probe,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f\n", old ? "old" : "new", k ? "g" : "nop", us[0],
                           us[1], us[2], us[3], tot);
                }
                if (*bad) printf("proxy_lat_probe: %d g replies were not 4242 (%s)\n", *bad, old ? "old" : "new");
                fflush(stdout);
            }
        }
    }
    if (me == 0)
        printf("proxy_lat_probe: torn polls: %llu with word 7 tagged and word 6 not, %llu the other way, in %llu replied requests\n",
               torn[0], torn[1], waits);
    ishmem_barrier_all();
    ishmem_free(x);
    ishmem_finalize();
    return 0;
}
