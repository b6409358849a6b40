/* osh_types: OpenSHMEM's long double and complex names through shmem.h (ishmem.h has no such
 * types; libishmem implements these shmem_* names itself). long double: p and g (the value
 * passed on the stack and returned in st(0): assembly entry points), put, get, nbi, iput,
 * iget, ibput, ibget, put_signal, the context forms, broadcast, collect, fcollect, alltoall(s),
 * the max/min/sum/prod reductions and the sum scans; the values differ only below double's
 * precision (1 + k * 2^-60), so a copy or a reduction done in double would fail. float/double
 * _Complex: the sum and prod reductions and the sum scans. Every value is checked; the last
 * line is "PASS: osh_types (N PEs)". */
#include <shmem.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: osh_types: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond);   \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

#define N 4
/* v(pe, k): distinct long doubles that round to the same double */
static long double v(int pe, int k) { return 1.0L + ldexpl((long double)(pe * N + k + 1), -60); }

static long double ld_src[N], ld_dst[N], ld_all[64 * N], ld_red[N], ld_scan[N];
static long double one_ld;
static uint64_t sig;
static float _Complex cf_src[2], cf_dst[2];
static double _Complex cd_src[2], cd_dst[2];

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    CHECK((double)v(0, 0) == (double)v(1, 1) && v(0, 0) != v(1, 1)); /* the premise */

    for (int k = 0; k < N; k++)
        ld_src[k] = v(me, k);
    shmem_barrier_all();

    /* p and g: the value itself */
    shmem_longdouble_p(&one_ld, v(me, 2), right);
    shmem_barrier_all();
    CHECK(one_ld == v(left, 2));
    CHECK(shmem_longdouble_g(&ld_src[3], right) == v(right, 3));
    CHECK(shmem_ctx_longdouble_g(SHMEM_CTX_DEFAULT, &ld_src[1], left) == v(left, 1));
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    int crc = shmem_ctx_create(SHMEM_CTX_PRIVATE, &c);
    /* The staged heap across nodes (ISHMEM_OFI_STAGING=always) has one quiet for all
     * operations, so contexts are refused there, cleanly: the ctx forms then run on the
     * default context (tests/c/ctx.c checks the refusal itself). */
    const char *staging = getenv("ISHMEM_OFI_STAGING");
    int refused = staging && strcmp(staging, "always") == 0 && crc != 0;
    if (refused) {
        CHECK(c == SHMEM_CTX_INVALID);
        c = SHMEM_CTX_DEFAULT;
    } else {
        CHECK(crc == 0 && c != SHMEM_CTX_INVALID);
    }
    shmem_barrier_all();
    shmem_ctx_longdouble_p(c, &one_ld, v(me, 0), left);
    shmem_ctx_quiet(c);
    shmem_barrier_all();
    CHECK(one_ld == v(right, 0));
    CHECK(shmem_ctx_longdouble_g(c, &ld_src[2], right) == v(right, 2));

    /* put, get, nbi, strided, blocked, put_signal, ctx put */
    shmem_longdouble_put(ld_dst, ld_src, N, right);
    shmem_barrier_all();
    for (int k = 0; k < N; k++)
        CHECK(ld_dst[k] == v(left, k));
    long double got[N];
    shmem_longdouble_get(got, ld_src, N, right);
    for (int k = 0; k < N; k++)
        CHECK(got[k] == v(right, k));
    memset(got, 0, sizeof got);
    shmem_longdouble_get_nbi(got, ld_src, N, left);
    shmem_quiet();
    for (int k = 0; k < N; k++)
        CHECK(got[k] == v(left, k));
    shmem_barrier_all();
    memset(ld_dst, 0, sizeof ld_dst);
    shmem_barrier_all();
    shmem_longdouble_put_nbi(ld_dst, ld_src, N, right);
    shmem_barrier_all();
    for (int k = 0; k < N; k++)
        CHECK(ld_dst[k] == v(left, k));
    shmem_barrier_all();
    memset(ld_dst, 0, sizeof ld_dst);
    shmem_barrier_all();
    shmem_longdouble_iput(ld_dst, ld_src, 2, 2, 2, right); /* dst[0], dst[2] <- src[0], src[2] */
    shmem_barrier_all();
    CHECK(ld_dst[0] == v(left, 0) && ld_dst[2] == v(left, 2) && ld_dst[1] == 0 && ld_dst[3] == 0);
    memset(got, 0, sizeof got);
    shmem_longdouble_iget(got, ld_src, 1, 3, 2, left); /* got[0], got[1] <- src[0], src[3] */
    CHECK(got[0] == v(left, 0) && got[1] == v(left, 3));
    memset(got, 0, sizeof got);
    shmem_longdouble_ibget(got, ld_src, 2, 2, 1, 2, right); /* blocks of 1: src[0], src[2] */
    CHECK(got[0] == v(right, 0) && got[2] == v(right, 2) && got[1] == 0);
    shmem_barrier_all();
    memset(ld_dst, 0, sizeof ld_dst);
    shmem_barrier_all();
    shmem_longdouble_ibput(ld_dst, ld_src, 2, 2, 2, 1, right); /* blocks of 2: src[0..2] */
    shmem_barrier_all();
    CHECK(ld_dst[0] == v(left, 0) && ld_dst[1] == v(left, 1) && ld_dst[2] == 0);
    shmem_barrier_all();
    memset(ld_dst, 0, sizeof ld_dst);
    shmem_barrier_all();
    shmem_longdouble_put_signal(ld_dst, ld_src, N, &sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
    for (int k = 0; k < N; k++)
        CHECK(ld_dst[k] == v(left, k));
    shmem_barrier_all();
    shmem_ctx_longdouble_put(c, ld_dst, ld_src, N, left);
    shmem_ctx_quiet(c);
    shmem_barrier_all();
    for (int k = 0; k < N; k++)
        CHECK(ld_dst[k] == v(right, k));
    if (!refused)
        shmem_ctx_destroy(c);

    /* collectives */
    CHECK(shmem_longdouble_broadcast(SHMEM_TEAM_WORLD, ld_dst, ld_src, N, npes - 1) == 0);
    for (int k = 0; k < N; k++)
        CHECK(ld_dst[k] == v(npes - 1, k));
    CHECK(shmem_longdouble_fcollect(SHMEM_TEAM_WORLD, ld_all, ld_src, N) == 0);
    for (int p = 0; p < npes; p++)
        for (int k = 0; k < N; k++)
            CHECK(ld_all[p * N + k] == v(p, k));
    CHECK(shmem_longdouble_collect(SHMEM_TEAM_WORLD, ld_all, ld_src, 1) == 0);
    for (int p = 0; p < npes; p++)
        CHECK(ld_all[p] == v(p, 0));
    /* alltoall: block p of my source goes to PE p */
    static long double a2a_src[64], a2a_dst[64];
    for (int p = 0; p < npes; p++)
        a2a_src[p] = v(me, p);
    CHECK(shmem_longdouble_alltoall(SHMEM_TEAM_WORLD, a2a_dst, a2a_src, 1) == 0);
    for (int p = 0; p < npes; p++)
        CHECK(a2a_dst[p] == v(p, me));
    CHECK(shmem_longdouble_alltoalls(SHMEM_TEAM_WORLD, a2a_dst, a2a_src, 1, 1, 1) == 0);
    for (int p = 0; p < npes; p++)
        CHECK(a2a_dst[p] == v(p, me));

    /* reductions in extended precision */
    CHECK(shmem_longdouble_sum_reduce(SHMEM_TEAM_WORLD, ld_red, ld_src, N) == 0);
    for (int k = 0; k < N; k++) {
        long double want = 0;
        for (int p = 0; p < npes; p++)
            want += v(p, k);
        CHECK(ld_red[k] == want);
    }
    CHECK(shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, ld_red, ld_src, N) == 0);
    for (int k = 0; k < N; k++)
        CHECK(ld_red[k] == v(npes - 1, k));
    CHECK(shmem_longdouble_min_reduce(SHMEM_TEAM_WORLD, ld_red, ld_src, N) == 0);
    for (int k = 0; k < N; k++)
        CHECK(ld_red[k] == v(0, k));
    CHECK(shmem_longdouble_prod_reduce(SHMEM_TEAM_WORLD, ld_red, ld_src, 1) == 0);
    {
        long double want = 1;
        for (int p = 0; p < npes; p++)
            want *= v(p, 0);
        /* (1 + a)(1 + b)... keeps its first-order terms: above 1 by more than double can hold */
        CHECK(fabsl(ld_red[0] - want) <= ldexpl(1, -62) && (double)ld_red[0] == 1.0 && ld_red[0] > 1.0L);
    }
    CHECK(shmem_longdouble_sum_inscan(SHMEM_TEAM_WORLD, ld_scan, ld_src, 1) == 0);
    {
        long double want = 0;
        for (int p = 0; p <= me; p++)
            want += v(p, 0);
        CHECK(ld_scan[0] == want);
    }
    CHECK(shmem_longdouble_sum_exscan(SHMEM_TEAM_WORLD, ld_scan, ld_src, 1) == 0);
    if (me > 0) {
        long double want = 0;
        for (int p = 0; p < me; p++)
            want += v(p, 0);
        CHECK(ld_scan[0] == want);
    }

    /* complex: sum and prod, and the scans */
    cf_src[0] = (float)me + 2.0f * (float)me * I;
    cf_src[1] = 1.0f + 1.0f * I;
    cd_src[0] = (double)me - 3.0 * (double)me * I;
    cd_src[1] = 1.0 - 1.0 * I;
    CHECK(shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, cf_dst, cf_src, 2) == 0);
    int tri = npes * (npes - 1) / 2;
    CHECK(crealf(cf_dst[0]) == (float)tri && cimagf(cf_dst[0]) == 2.0f * (float)tri);
    CHECK(crealf(cf_dst[1]) == (float)npes && cimagf(cf_dst[1]) == (float)npes);
    CHECK(shmem_complexf_prod_reduce(SHMEM_TEAM_WORLD, cf_dst, cf_src, 2) == 0);
    float _Complex wantf = 1;
    for (int p = 0; p < npes; p++)
        wantf *= 1.0f + 1.0f * I; /* (1+i)^n: 1+i, 2i, -2+2i, -4 */
    CHECK(crealf(cf_dst[1]) == crealf(wantf) && cimagf(cf_dst[1]) == cimagf(wantf));
    CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, cd_dst, cd_src, 2) == 0);
    CHECK(creal(cd_dst[0]) == (double)tri && cimag(cd_dst[0]) == -3.0 * (double)tri);
    CHECK(shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, cd_dst, cd_src, 2) == 0);
    double _Complex wantd = 1;
    for (int p = 0; p < npes; p++)
        wantd *= 1.0 - 1.0 * I;
    CHECK(creal(cd_dst[1]) == creal(wantd) && cimag(cd_dst[1]) == cimag(wantd));
    CHECK(shmem_complexd_sum_inscan(SHMEM_TEAM_WORLD, cd_dst, cd_src, 1) == 0);
    CHECK(creal(cd_dst[0]) == (double)(me * (me + 1) / 2) && cimag(cd_dst[0]) == -3.0 * (double)(me * (me + 1) / 2));
    CHECK(shmem_complexf_sum_exscan(SHMEM_TEAM_WORLD, cf_dst, cf_src, 1) == 0);
    if (me > 0)
        CHECK(crealf(cf_dst[0]) == (float)(me * (me - 1) / 2) && cimagf(cf_dst[0]) == 2.0f * (float)(me * (me - 1) / 2));
    CHECK(shmem_complexd_sum_exscan(SHMEM_TEAM_WORLD, cd_dst, cd_src, 1) == 0);
    CHECK(shmem_complexf_sum_inscan(SHMEM_TEAM_WORLD, cf_dst, cf_src, 1) == 0);
    CHECK(crealf(cf_dst[0]) == (float)(me * (me + 1) / 2));

    shmem_barrier_all();
    if (failures == 0 && me == 0)
        printf("PASS: osh_types (%d PEs)\n", npes);
    shmem_finalize();
    return failures != 0;
}
