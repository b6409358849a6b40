/* coll_loop.c -- a fixed number of back-to-back broadcasts or fcollects of one size, timed
 * on every PE, for syscall counts, CPU splits and profiles per call (issue 31; host_bench
 * calibrates its iteration count, this does not). The same source builds against ishmem and,
 * with -DBENCH_PEER_OSHMEM (oshcc -Ibench), OpenMPI OSHMEM (peer_oshmem.h).
 *
 *   cc -O2 bench/exp/coll_loop.c -o /tmp/coll_loop $(pkg-config --cflags --libs ishmem)
 *   ISHMEM_NODE_SPLIT=2 ISHMEM_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo \
 *       ishmrun -n 2 /tmp/coll_loop BYTES ITERS b|f      (b: broadcast from PE 0, f: fcollect,
 *                                                         i: broadcast with source = dest)
 */
#ifdef BENCH_PEER_OSHMEM
#include "peer_oshmem.h"
#else
#include <ishmem.h>
#define BENCH_COLL_INIT(m) ((void)(m))
#define BENCH_BROADCASTMEM(d, s, n, root) ishmem_broadcastmem(ISHMEM_TEAM_WORLD, (d), (s), (n), (root))
#define BENCH_FCOLLECTMEM(d, s, n) ishmem_fcollectmem(ISHMEM_TEAM_WORLD, (d), (s), (n))
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 4096;
    long iters = argc > 2 ? atol(argv[2]) : 20000;
    int bcast = argc > 3 ? argv[3][0] != 'f' : 1;
    int inplace = argc > 3 && argv[3][0] == 'i'; /* i: broadcast with source = dest (the root's dest not copied) */
    ishmem_init();
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    BENCH_COLL_INIT(n);
    char *s = ishmem_malloc(n), *d = ishmem_malloc(n * (size_t)np);
    for (size_t i = 0; i < n; i++) s[i] = (char)(i * 7 + (size_t)me);
    if (inplace) {
        if (me == 0) memcpy(d, s, n);
        s = d;
    }
    for (long i = -100; i < iters; i++) { /* 100 warm-up calls, then the timed ones */
        static double t0;
        if (i == 0) {
            ishmem_barrier_all();
            t0 = now();
        }
        if (bcast) BENCH_BROADCASTMEM(d, s, n, 0);
        else BENCH_FCOLLECTMEM(d, s, n);
        if (i == iters - 1) printf("pe %d %s %zu B x %ld: %.3f us/call\n", me, bcast ? "broadcast" : "fcollect", n,
                                   iters, (now() - t0) / (double)iters * 1e6);
    }
    ishmem_barrier_all();
    /* the last call's data, so that a broken run does not pass for a fast one */
    size_t bad = 0;
    for (int pe = 0; pe < (bcast ? 1 : np); pe++)
        for (size_t i = 0; i < n; i++) bad += d[(size_t)pe * n + i] != (char)(i * 7 + (size_t)pe);
    if (bad && (!bcast || me != 0)) printf("pe %d: %zu bytes wrong\n", me, bad);
    ishmem_finalize();
    return bad && (!bcast || me != 0);
}
