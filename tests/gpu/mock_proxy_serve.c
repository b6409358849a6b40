/* mock_proxy_serve.c: the proxy thread serves its PE's staging mailbox while it is idle (issue
 * 23), without a GPU. Run by scripts/mock-gpu-check.sh against tests/gpu/mock_libcuda.c, 2 PEs
 * on 2 pretend nodes, with ISHMEMI_TEST_PROGRESS_NO_SERVE=1: the progress threads neither drive
 * the provider nor serve the mailbox. PE 1's host thread then stays out of the library (it
 * sleeps, looking for a file) while PE 0 calls p + quiet, g, fetch_add and put_signal on PE 1's
 * GPU heap: every one of them is applied by PE 1's mailbox, which only PE 1's proxy thread can
 * serve now (as it must while PE 1's kernels wait for a signal from another node). PE 0 then
 * creates the file (argv[1]). A proxy thread that does not serve: PE 0's first call waits until
 * PE 1 enters the library, PE 1 gives up after 30 s ("PE 0's calls did not finish").
 * Build: cc mock_proxy_serve.c -I$PREFIX/include -L$PREFIX/lib -lishmem */
#define _GNU_SOURCE
#include <ishmem.h>
#include <ishmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "gpu_test.h"

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    CHECK(argc > 1, "usage: mock_proxy_serve FLAG-FILE");
    CHECK(npes == 2 && ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, 1 - me, ISHMEM_TEAM_SHARED) < 0,
          "2 PEs on 2 nodes expected (run with ISHMEM_NODE_SPLIT=2)");
    if (gt_fails) return gpu_test_end("mock_proxy_serve");
    const char *flag = argv[1];
    int *x = (int *)ishmem_malloc(sizeof(int));
    uint64_t *ctr = (uint64_t *)ishmem_malloc(sizeof(uint64_t)), *sig = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    uint64_t *data = (uint64_t *)ishmem_malloc(64);
    ishmem_int_p(x, -1, me);
    ishmem_uint64_p(ctr, 0, me);
    ishmem_uint64_p(sig, 0, me);
    ishmem_barrier_all();
    if (me == 0) {
        for (int i = 0; i < 20; i++) {
            ishmem_int_p(x, i, 1);
            ishmem_quiet();
            int v = ishmem_int_g(x, 1);
            CHECK(v == i, "round %d: g read %d after p + quiet", i, v);
            uint64_t old = ishmem_uint64_atomic_fetch_add(ctr, 3, 1);
            CHECK(old == 3 * (uint64_t)i, "round %d: fetch_add returned %llu", i, (unsigned long long)old);
        }
        uint64_t src[8];
        for (int k = 0; k < 8; k++) src[k] = 0x5100 + (uint64_t)k;
        ishmem_putmem_signal(data, src, sizeof src, sig, 77, ISHMEM_SIGNAL_SET, 1);
        ishmem_quiet();
        FILE *f = fopen(flag, "w");
        CHECK(f != NULL, "cannot create %s", flag);
        if (f) fclose(f);
    } else {
        int seen = 0;
        for (int ms = 0; ms < 30000 && !seen; ms += 10) {
            seen = access(flag, F_OK) == 0;
            if (!seen) usleep(10000);
        }
        CHECK(seen, "PE 0's calls did not finish in 30 s while this PE's host thread was outside the library "
                    "(its proxy thread did not serve the mailbox)");
    }
    ishmem_barrier_all();
    if (me == 1) {
        CHECK(ishmem_int_g(x, me) == 19, "x %d", ishmem_int_g(x, me));
        CHECK(ishmem_uint64_atomic_fetch(ctr, me) == 60, "counter %llu", (unsigned long long)ishmem_uint64_atomic_fetch(ctr, me));
        CHECK(ishmem_uint64_atomic_fetch(sig, me) == 77, "signal %llu", (unsigned long long)ishmem_uint64_atomic_fetch(sig, me));
        uint64_t got[8];
        ishmem_getmem(got, data, sizeof got, me);
        int bad = 0;
        for (int k = 0; k < 8; k++) bad += got[k] != 0x5100 + (uint64_t)k;
        CHECK(bad == 0, "%d words of the put_signal's data differ", bad);
    }
    ishmem_barrier_all();
    int r = gpu_test_end("mock_proxy_serve");
    ishmem_free(data);
    ishmem_free(sig);
    ishmem_free(ctr);
    ishmem_free(x);
    ishmem_finalize();
    return r;
}
