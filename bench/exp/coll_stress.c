/* coll_stress.c -- a loop of small collectives on the world team whose inputs change every
 * iteration, each result checked (issue 31's wrong-result hunt; bench/exp/sockets_flake.sh runs
 * it as PROGRAM). A stale or mixed block from an earlier call shows as a wrong value with its
 * iteration. Usage: coll_stress [ITERATIONS]  (default 2000). Prints "PASS" or FAIL lines. */
#include <ishmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int me, n, fails;

#define FAILF(...)                                                                                 \
    do {                                                                                           \
        if (fails++ < 8) {                                                                         \
            fprintf(stderr, "FAIL [PE %d] ", me);                                                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    ishmem_init();
    me = ishmem_my_pe();
    n = ishmem_n_pes();
    int64_t *s64 = ishmem_malloc(1024 * sizeof(int64_t));
    int64_t *d64 = ishmem_malloc(1024 * sizeof(int64_t));
    int8_t *s8 = ishmem_malloc(1024);
    int8_t *d8 = ishmem_malloc(1024);
    uint32_t *s32 = ishmem_malloc(1024 * sizeof(uint32_t));
    uint32_t *d32 = ishmem_malloc(1024 * sizeof(uint32_t));
    if (!s64 || !d64 || !s8 || !d8 || !s32 || !d32) {
        fprintf(stderr, "FAIL [PE %d] ishmem_malloc\n", me);
        return 1;
    }
    for (int it = 0; it < iters && fails == 0; it++) {
        /* sizes move between calls: 1..48 elements (8..384 bytes of int64) */
        int k = 1 + (it * 7) % 48;
        /* ptrdiff-like inclusive and exclusive sums */
        for (int i = 0; i < k; i++)
            s64[i] = (int64_t)(me + 1) * 1000003 + (int64_t)it * 31 + i;
        ishmem_int64_sum_inscan(ISHMEM_TEAM_WORLD, d64, s64, (size_t)k);
        for (int i = 0; i < k; i++) {
            int64_t want = 0;
            for (int p = 0; p <= me; p++)
                want += (int64_t)(p + 1) * 1000003 + (int64_t)it * 31 + i;
            if (d64[i] != want) {
                FAILF("it %d inscan k %d [%d]: got %lld want %lld", it, k, i, (long long)d64[i], (long long)want);
                break;
            }
        }
        ishmem_int64_sum_exscan(ISHMEM_TEAM_WORLD, d64, s64, (size_t)k);
        for (int i = 0; i < k; i++) {
            int64_t want = 0;
            for (int p = 0; p < me; p++)
                want += (int64_t)(p + 1) * 1000003 + (int64_t)it * 31 + i;
            if (d64[i] != want) {
                FAILF("it %d exscan k %d [%d]: got %lld want %lld", it, k, i, (long long)d64[i], (long long)want);
                break;
            }
        }
        /* int8 min: each PE's values differ per iteration */
        int k8 = 1 + (it * 13) % 300;
        for (int i = 0; i < k8; i++)
            s8[i] = (int8_t)((me * 37 + it * 11 + i * 3) & 0x7f);
        ishmem_int8_min_reduce(ISHMEM_TEAM_WORLD, d8, s8, (size_t)k8);
        for (int i = 0; i < k8; i++) {
            int8_t want = 127;
            for (int p = 0; p < n; p++) {
                int8_t v = (int8_t)((p * 37 + it * 11 + i * 3) & 0x7f);
                if (v < want)
                    want = v;
            }
            if (d8[i] != want) {
                FAILF("it %d int8_min k %d [%d]: got %d want %d", it, k8, i, d8[i], want);
                break;
            }
        }
        /* uint64 xor */
        for (int i = 0; i < k; i++)
            s64[i] = ((int64_t)it << 32) ^ ((int64_t)(me + 1) << (8 * (i % 4))) ^ i;
        ishmem_uint64_xor_reduce(ISHMEM_TEAM_WORLD, (uint64_t *)d64, (uint64_t *)s64, (size_t)k);
        for (int i = 0; i < k; i++) {
            uint64_t want = 0;
            for (int p = 0; p < n; p++)
                want ^= ((uint64_t)it << 32) ^ ((uint64_t)(p + 1) << (8 * (i % 4))) ^ (uint64_t)i;
            if ((uint64_t)d64[i] != want) {
                FAILF("it %d xor k %d [%d]: got %llx want %llx", it, k, i, (unsigned long long)d64[i], (unsigned long long)want);
                break;
            }
        }
        /* uint32 alltoall: 1..24 per pair */
        int ka = 1 + (it * 5) % 24;
        for (int p = 0; p < n; p++)
            for (int i = 0; i < ka; i++)
                s32[p * ka + i] = (uint32_t)(me << 24 | p << 16 | (it & 0xfff) << 4 | (i & 15));
        ishmem_uint32_alltoall(ISHMEM_TEAM_WORLD, d32, s32, (size_t)ka);
        for (int p = 0; p < n; p++)
            for (int i = 0; i < ka; i++) {
                uint32_t want = (uint32_t)(p << 24 | me << 16 | (it & 0xfff) << 4 | (i & 15));
                if (d32[p * ka + i] != want) {
                    FAILF("it %d alltoall ka %d from PE %d [%d]: got %x want %x", it, ka, p, i, d32[p * ka + i], want);
                    p = n;
                    break;
                }
            }
        /* fcollect of k int64 */
        for (int i = 0; i < k; i++)
            s64[i] = (int64_t)me << 40 | (int64_t)it << 8 | i;
        ishmem_int64_fcollect(ISHMEM_TEAM_WORLD, d64, s64, (size_t)k);
        for (int p = 0; p < n; p++)
            for (int i = 0; i < k; i++) {
                int64_t want = (int64_t)p << 40 | (int64_t)it << 8 | i;
                if (d64[p * k + i] != want) {
                    FAILF("it %d fcollect k %d from PE %d [%d]: got %llx want %llx", it, k, p, i, (long long)d64[p * k + i], (long long)want);
                    p = n;
                    break;
                }
            }
        /* broadcast of 8..1200 bytes from a rotating root */
        int root = it % n;
        int kb = 1 + (it * 17) % 150;
        for (int i = 0; i < kb; i++)
            s64[i] = (int64_t)me << 40 | (int64_t)it << 8 | (i & 255);
        ishmem_int64_broadcast(ISHMEM_TEAM_WORLD, d64, s64, (size_t)kb, root);
        if (me != root)
            for (int i = 0; i < kb; i++) {
                int64_t want = (int64_t)root << 40 | (int64_t)it << 8 | (i & 255);
                if (d64[i] != want) {
                    FAILF("it %d broadcast kb %d root %d [%d]: got %llx want %llx", it, kb, root, i, (long long)d64[i], (long long)want);
                    break;
                }
            }
    }
    ishmem_barrier_all();
    if (me == 0 && fails == 0)
        printf("PASS: coll_stress (%d PEs, %d iterations)\n", n, iters);
    ishmem_finalize();
    return fails ? 1 : 0;
}
