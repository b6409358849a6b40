/* bench/exp/mock_proxy_lat.c: where the proxy ring adds time to an operation on another node's
 * GPU heap, without a GPU (issue 23). Runs against tests/gpu/mock_libcuda.c (GPU copies and the
 * AMO kernel on the CPU) with 2 PEs as 2 pretend nodes: PE 0 posts into its proxy ring, from
 * the host, exactly what a kernel's p + quiet, g, fetch_add and put_signal post
 * (include/ishmem/cuda_impl.cuh), and times them beside the same operations as host calls;
 * then PE 0 and PE 1 ping-pong put_signal both ways (ring and host). Prints one line per row:
 *   mock_proxy_lat,<op>,<ring|host>,<us per operation>
 * The GPU's own costs (copies and kernel launches beside a running kernel, PCIe reads of the
 * ring) are not in it: what remains is the proxy's software path and the network.
 * Build and run (after make install):
 *   cc -O2 -DGPU_TEST_NO_CUDART -Itests/gpu bench/exp/mock_proxy_lat.c -Ibuild/prefix/include \
 *      -Lbuild/prefix/lib -lishmem -Wl,-rpath,$PWD/build/prefix/lib -o build/mock_proxy_lat
 *   LD_LIBRARY_PATH=build/mock-gpu/lib ISHMEM_GPU=1 ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo \
 *      ISHMEM_OFI_PROVIDER='tcp;ofi_rxm' build/prefix/bin/ishmrun -n 2 build/mock_proxy_lat [N]
 * (scripts/mock-gpu-check.sh builds the mock libcuda into build/mock-gpu/lib.) */
#include <ishmem.h>
#include <ishmemx.h>
#include <ishmem/device_state.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ishmemi_dev_state_t st;
static int bound;
static int bind(const void *state, size_t bytes) {
    if (bytes != sizeof st) return 1;
    memcpy(&st, state, bytes);
    bound = 1;
    return 0;
}
__attribute__((constructor)) static void register_binder(void) { ishmemx_cuda_register_binder(bind); }

static uint64_t ticket; /* this program is its ring's only poster */

static volatile uint64_t *slot(uint64_t t) {
    return ((volatile ishmemi_proxy_slot_t *)(uintptr_t)st.proxy_ring)[t % ISHMEMI_PROXY_SLOTS].w;
}
static uint64_t post(uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4, uint64_t w5, uint64_t w6) {
    uint64_t t = ticket++;
    volatile uint64_t *s = slot(t);
    if (t >= ISHMEMI_PROXY_SLOTS)
        while (__atomic_load_n(&s[7], __ATOMIC_ACQUIRE) != t - ISHMEMI_PROXY_SLOTS + 1) {
        }
    s[1] = w1, s[2] = w2, s[3] = w3, s[4] = w4, s[5] = w5, s[6] = w6;
    __atomic_store_n(&s[0], t + 1, __ATOMIC_RELEASE);
    return t;
}
static uint64_t wait_reply(uint64_t t) {
    volatile uint64_t *s = slot(t);
    while (__atomic_load_n(&s[7], __ATOMIC_ACQUIRE) != ((t + 1) | ISHMEMI_PROXY_HELD)) {
    }
    uint64_t v = s[5];
    __atomic_store_n(&s[7], t + 1, __ATOMIC_RELEASE);
    return v;
}
static uint64_t w1(int kind, unsigned width, int op, int reply, int pe) {
    return (uint64_t)kind | (uint64_t)width << 8 | (uint64_t)(op & 0xff) << 16 | (reply ? ISHMEMI_PROXY_REPLY : 0) |
           (uint64_t)(uint32_t)pe << 32;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void row(const char *op, const char *path, double s, long n) {
    printf("mock_proxy_lat,%s,%s,%.2f\n", op, path, s / (double)n * 1e6);
    fflush(stdout);
}

/* A kernel's signal_wait_until reads its GPU memory and nothing else: through the ring, the
 * waiting side polls the word with ishmem_signal_fetch (a read of this PE's heap that drives no
 * network progress), so only the progress thread serves the mailbox, as beside a kernel. */
static void wait_sig(uint64_t *sig, uint64_t v, int host) {
    if (host) ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, v);
    else
        while (ishmem_signal_fetch(sig) != v) {
        }
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000;
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    if (npes != 2 || !bound || !st.proxy_ring) {
        fprintf(stderr, "mock_proxy_lat: needs 2 PEs on 2 pretend nodes with the mock GPU (bound %d, ring %llx)\n", bound,
                (unsigned long long)st.proxy_ring);
        return 1;
    }
    long *x = ishmem_malloc(64);
    uint64_t *sig = ishmem_malloc(8), *rbuf = ishmem_malloc(8);
    long zero = 0;
    ishmem_putmem(x, &zero, sizeof zero, me);
    ishmem_uint64_atomic_set(sig, 0, me);
    ishmem_barrier_all();
    int peer = 1 - me;
    if (me == 0) {
        double t = now();
        for (long i = 0; i < n; i++) {
            post(w1(ISHMEMI_PROXY_P, 8, 0, 0, peer), (uint64_t)(uintptr_t)x, (uint64_t)i, 8, 0, 0);
            wait_reply(post(w1(ISHMEMI_PROXY_QUIET, 0, 0, 1, me), 0, 0, 0, 0, 0));
        }
        row("p+quiet", "ring", now() - t, n);
        t = now();
        for (long i = 0; i < n; i++) {
            ishmem_long_p(x, i, peer);
            ishmem_quiet();
        }
        row("p+quiet", "host", now() - t, n);
        t = now();
        long bad = 0;
        for (long i = 0; i < n; i++) bad += (long)wait_reply(post(w1(ISHMEMI_PROXY_G, 8, 0, 1, peer), (uint64_t)(uintptr_t)x, 0, 8, 0, 0)) != n - 1;
        row("g", "ring", now() - t, n);
        t = now();
        for (long i = 0; i < n; i++) bad += ishmem_long_g(x, peer) != n - 1;
        row("g", "host", now() - t, n);
        t = now();
        for (long i = 0; i < n; i++) wait_reply(post(w1(ISHMEMI_PROXY_AMO, 8, 4 /* add */, 1, peer), (uint64_t)(uintptr_t)x, 1, 8, 0, 0));
        row("fetch_add", "ring", now() - t, n);
        t = now();
        for (long i = 0; i < n; i++) ishmem_long_atomic_fetch_add(x, 1, peer);
        row("fetch_add", "host", now() - t, n);
        if (bad) {
            fprintf(stderr, "mock_proxy_lat: %ld gets returned a wrong value\n", bad);
            return 1;
        }
    }
    ishmem_barrier_all();
    /* put_signal ping-pong: through the ring, then from the host */
    for (int path = 0; path < 2; path++) {
        uint64_t base = (uint64_t)path * (uint64_t)n * 4;
        ishmem_barrier_all();
        double t = now();
        for (long i = 0; i < n; i++) {
            uint64_t v = base + (uint64_t)i + 1, payload = v * 3;
            if (me == 1) wait_sig(sig, v, path);
            if (path == 0)
                wait_reply(post(w1(ISHMEMI_PROXY_PUT_SIGNAL, 8, 0, 1, peer), (uint64_t)(uintptr_t)rbuf, (uint64_t)(uintptr_t)&payload, 8, v,
                                (uint64_t)(uintptr_t)sig));
            else
                ishmem_putmem_signal(rbuf, &payload, 8, sig, v, ISHMEM_SIGNAL_SET, peer);
            if (me == 0) wait_sig(sig, v, path);
        }
        ishmem_quiet();
        if (me == 0) row("put_signal", path ? "host" : "ring", now() - t, n);
    }
    ishmem_barrier_all();
    ishmem_finalize();
    return 0;
}
