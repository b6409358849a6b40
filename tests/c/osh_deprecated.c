/* osh_deprecated: the deprecated OpenSHMEM names programs still call, through shmem.h:
 * start_pes, _my_pe/_num_pes, shmalloc/shrealloc/shmemalign/shfree, the wait-while-equal
 * waits (shmem_wait, shmem_TYPENAME_wait) and the untyped shmem_wait_until, the cache routines
 * (no effect), and the active-set collectives with PE_start/logPE_stride/PE_size and pSync:
 * barrier (many back-to-back calls on one pSync, counted), broadcast32/64, collect32/64,
 * fcollect32/64, alltoall32/64, alltoalls32/64 and the TYPENAME_OP_to_all reductions (in place
 * too), on the whole job and, at the same time, on the even and the odd PEs as two sets. Every
 * value is checked, and pSync is back to SHMEM_SYNC_VALUE when all are done; the last line is
 * "PASS: osh_deprecated (N PEs)". */
#include <shmem.h>

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: osh_deprecated: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond); \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSync2[SHMEM_BCAST_SYNC_SIZE];
static long counter;
static long lwait;
static short swait;
static int iwait;
static long long llwait;

#define psync_clean(ps, n) psync_clean_at(ps, n, __LINE__)
static void psync_clean_at(long *ps, int n, int line) {
    for (int k = 0; k < n; k++)
        if (ps[k] != SHMEM_SYNC_VALUE) {
            printf("FAIL: osh_deprecated: PE %d: line %d: pSync[%d] is %ld, not SHMEM_SYNC_VALUE\n", me, line, k, ps[k]);
            failures++;
        }
}

/* the active set as (start, logstride, size) and this PE's index in it */
struct set {
    int start, log, size, idx;
};

static int pe_of(struct set s, int k) { return s.start + (k << s.log); }

static void collectives(struct set s, long *ps) {
    static int i32s[64], i32d[256];
    static long i64s[64], i64d[256];
    int k;
    /* broadcast from the set's last member */
    for (k = 0; k < 4; k++) {
        i32s[k] = 100 * me + k;
        i64s[k] = 1000L * me + k;
        i32d[k] = -1;
        i64d[k] = -1;
    }
    shmem_barrier(s.start, s.log, s.size, ps);
    shmem_broadcast32(i32d, i32s, 4, s.size - 1, s.start, s.log, s.size, ps);
    shmem_broadcast64(i64d, i64s, 3, s.size - 1, s.start, s.log, s.size, ps);
    int root = pe_of(s, s.size - 1);
    for (k = 0; k < 4; k++)
        CHECK(i32d[k] == (me == root ? -1 : 100 * root + k)); /* the root's dest is untouched */
    for (k = 0; k < 3; k++)
        CHECK(i64d[k] == (me == root ? -1 : 1000L * root + k));
    CHECK(i64d[3] == -1);

    /* collect: member k gives k + 1 elements */
    for (k = 0; k <= s.idx; k++)
        i32s[k] = 10 * s.idx + k;
    shmem_collect32(i32d, i32s, (size_t)s.idx + 1, s.start, s.log, s.size, ps);
    int at = 0;
    for (int m = 0; m < s.size; m++)
        for (k = 0; k <= m; k++, at++)
            CHECK(i32d[at] == 10 * m + k);
    for (k = 0; k <= s.idx; k++)
        i64s[k] = -(10L * s.idx + k);
    shmem_collect64(i64d, i64s, (size_t)s.idx + 1, s.start, s.log, s.size, ps);
    at = 0;
    for (int m = 0; m < s.size; m++)
        for (k = 0; k <= m; k++, at++)
            CHECK(i64d[at] == -(10L * m + k));

    /* fcollect: 2 each */
    i32s[0] = me;
    i32s[1] = -me;
    shmem_fcollect32(i32d, i32s, 2, s.start, s.log, s.size, ps);
    for (int m = 0; m < s.size; m++)
        CHECK(i32d[2 * m] == pe_of(s, m) && i32d[2 * m + 1] == -pe_of(s, m));
    i64s[0] = 7L * me;
    shmem_fcollect64(i64d, i64s, 1, s.start, s.log, s.size, ps);
    for (int m = 0; m < s.size; m++)
        CHECK(i64d[m] == 7L * pe_of(s, m));

    /* alltoall: block m of my source (2 elements) goes to member m */
    for (int m = 0; m < s.size; m++)
        for (k = 0; k < 2; k++) {
            i32s[2 * m + k] = 1000 * s.idx + 10 * m + k;
            i64s[2 * m + k] = 1000L * s.idx + 10 * m + k;
        }
    shmem_alltoall32(i32d, i32s, 2, s.start, s.log, s.size, ps);
    shmem_alltoall64(i64d, i64s, 2, s.start, s.log, s.size, ps);
    for (int m = 0; m < s.size; m++)
        for (k = 0; k < 2; k++) {
            CHECK(i32d[2 * m + k] == 1000 * m + 10 * s.idx + k);
            CHECK(i64d[2 * m + k] == 1000L * m + 10 * s.idx + k);
        }
    /* alltoalls: one element per member, source stride 2, dest stride 3 */
    memset(i64d, 0, sizeof i64d);
    for (int m = 0; m < s.size; m++)
        i64s[2 * m] = 100L * s.idx + m;
    shmem_barrier(s.start, s.log, s.size, ps);
    shmem_alltoalls64(i64d, i64s, 3, 2, 1, s.start, s.log, s.size, ps);
    for (int m = 0; m < s.size; m++)
        CHECK(i64d[3 * m] == 100L * m + s.idx && i64d[3 * m + 1] == 0);
    for (int m = 0; m < s.size; m++)
        i32s[m] = 100 * s.idx + m;
    shmem_alltoalls32(i32d, i32s, 1, 1, 1, s.start, s.log, s.size, ps);
    for (int m = 0; m < s.size; m++)
        CHECK(i32d[m] == 100 * m + s.idx);
}

static void reductions(struct set s, long *ps) {
    static int is[4], id[4], iw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long ls[2], ld[2], lw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static short ss[2], sd[2], sw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long long qs[1], qd[1], qw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static double ds[2], dd[2], dw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static float fs[1], fd[1], fw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long double xs[1], xd[1], xw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static double _Complex cs[1], cd[1], cw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static float _Complex gs[1], gd[1], gw[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    int sum = 0, mx = 0, all_or = 0;
    long prod = 1;
    for (int m = 0; m < s.size; m++) {
        int p = pe_of(s, m);
        sum += p;
        mx = p > mx ? p : mx;
        all_or |= 1 << p;
        prod *= p + 1;
    }
    is[0] = me;
    is[1] = 1;
    is[2] = 1 << me;
    is[3] = -me;
    shmem_int_sum_to_all(id, is, 2, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == sum && id[1] == s.size);
    shmem_int_max_to_all(id, is, 1, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == mx);
    shmem_int_or_to_all(id, is + 2, 1, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == all_or);
    shmem_int_min_to_all(id, is + 3, 1, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == -mx);
    shmem_int_and_to_all(id, is + 1, 1, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == 1);
    shmem_int_xor_to_all(id, is + 2, 1, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == all_or);
    shmem_int_prod_to_all(id, is + 1, 1, s.start, s.log, s.size, iw, ps);
    CHECK(id[0] == 1);
    /* in place: dest == source */
    ls[0] = me + 1;
    ls[1] = 2;
    shmem_long_prod_to_all(ls, ls, 2, s.start, s.log, s.size, lw, ps);
    CHECK(ls[0] == prod && ls[1] == 1L << s.size);
    ls[0] = me;
    shmem_long_sum_to_all(ld, ls, 1, s.start, s.log, s.size, lw, ps);
    CHECK(ld[0] == sum);
    shmem_long_min_to_all(ld, ls, 1, s.start, s.log, s.size, lw, ps);
    CHECK(ld[0] == s.start);
    shmem_long_max_to_all(ld, ls, 1, s.start, s.log, s.size, lw, ps);
    CHECK(ld[0] == mx);
    ls[0] = 1L << me;
    shmem_long_and_to_all(ld, ls, 1, s.start, s.log, s.size, lw, ps);
    CHECK(ld[0] == (s.size == 1 ? 1L << me : 0));
    shmem_long_or_to_all(ld, ls, 1, s.start, s.log, s.size, lw, ps);
    CHECK(ld[0] == all_or);
    shmem_long_xor_to_all(ld, ls, 1, s.start, s.log, s.size, lw, ps);
    CHECK(ld[0] == all_or);
    ss[0] = (short)me;
    ss[1] = (short)(1 << me);
    shmem_short_sum_to_all(sd, ss, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == sum);
    shmem_short_min_to_all(sd, ss, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == s.start);
    shmem_short_max_to_all(sd, ss, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == mx);
    shmem_short_or_to_all(sd, ss + 1, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == all_or);
    shmem_short_xor_to_all(sd, ss + 1, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == all_or);
    shmem_short_and_to_all(sd, ss + 1, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == (s.size == 1 ? 1 << me : 0));
    ss[0] = (short)(me + 1);
    shmem_short_prod_to_all(sd, ss, 1, s.start, s.log, s.size, sw, ps);
    CHECK(sd[0] == (short)prod);
    qs[0] = (long long)me << 40;
    shmem_longlong_sum_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == (long long)sum << 40);
    shmem_longlong_max_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == (long long)mx << 40);
    shmem_longlong_min_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == (long long)s.start << 40);
    qs[0] = 1LL << me;
    shmem_longlong_or_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == all_or);
    shmem_longlong_xor_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == all_or);
    shmem_longlong_and_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == (s.size == 1 ? 1LL << me : 0));
    qs[0] = me + 1;
    shmem_longlong_prod_to_all(qd, qs, 1, s.start, s.log, s.size, qw, ps);
    CHECK(qd[0] == prod);
    ds[0] = me + 0.5;
    ds[1] = me + 1;
    shmem_double_sum_to_all(dd, ds, 2, s.start, s.log, s.size, dw, ps);
    CHECK(dd[0] == sum + 0.5 * s.size);
    shmem_double_max_to_all(dd, ds, 1, s.start, s.log, s.size, dw, ps);
    CHECK(dd[0] == mx + 0.5);
    shmem_double_min_to_all(dd, ds, 1, s.start, s.log, s.size, dw, ps);
    CHECK(dd[0] == s.start + 0.5);
    shmem_double_prod_to_all(dd, ds + 1, 1, s.start, s.log, s.size, dw, ps);
    CHECK(dd[0] == (double)prod);
    fs[0] = (float)me + 0.25f;
    shmem_float_sum_to_all(fd, fs, 1, s.start, s.log, s.size, fw, ps);
    CHECK(fd[0] == (float)sum + 0.25f * (float)s.size);
    shmem_float_max_to_all(fd, fs, 1, s.start, s.log, s.size, fw, ps);
    CHECK(fd[0] == (float)mx + 0.25f);
    shmem_float_min_to_all(fd, fs, 1, s.start, s.log, s.size, fw, ps);
    CHECK(fd[0] == (float)s.start + 0.25f);
    fs[0] = (float)(me + 1);
    shmem_float_prod_to_all(fd, fs, 1, s.start, s.log, s.size, fw, ps);
    CHECK(fd[0] == (float)prod);
    /* long double: a sum that double cannot hold */
    xs[0] = 1.0L + ldexpl((long double)(me + 1), -60);
    long double want = 0;
    for (int m = 0; m < s.size; m++)
        want += 1.0L + ldexpl((long double)(pe_of(s, m) + 1), -60);
    shmem_longdouble_sum_to_all(xd, xs, 1, s.start, s.log, s.size, xw, ps);
    CHECK(xd[0] == want);
    shmem_longdouble_max_to_all(xd, xs, 1, s.start, s.log, s.size, xw, ps);
    CHECK(xd[0] == 1.0L + ldexpl((long double)(mx + 1), -60));
    shmem_longdouble_min_to_all(xd, xs, 1, s.start, s.log, s.size, xw, ps);
    CHECK(xd[0] == 1.0L + ldexpl((long double)(s.start + 1), -60));
    xs[0] = (long double)(me + 1);
    shmem_longdouble_prod_to_all(xd, xs, 1, s.start, s.log, s.size, xw, ps);
    CHECK(xd[0] == (long double)prod);
    cs[0] = (double)me + 1.0 * I;
    shmem_complexd_sum_to_all(cd, cs, 1, s.start, s.log, s.size, cw, ps);
    CHECK(creal(cd[0]) == sum && cimag(cd[0]) == s.size);
    cs[0] = 1.0 * I;
    shmem_complexd_prod_to_all(cd, cs, 1, s.start, s.log, s.size, cw, ps);
    double _Complex wc = 1;
    for (int m = 0; m < s.size; m++)
        wc *= 1.0 * I;
    CHECK(creal(cd[0]) == creal(wc) && cimag(cd[0]) == cimag(wc));
    gs[0] = (float)me - 2.0f * I;
    shmem_complexf_sum_to_all(gd, gs, 1, s.start, s.log, s.size, gw, ps);
    CHECK(crealf(gd[0]) == (float)sum && cimagf(gd[0]) == -2.0f * (float)s.size);
    gs[0] = 2.0f;
    shmem_complexf_prod_to_all(gd, gs, 1, s.start, s.log, s.size, gw, ps);
    CHECK(crealf(gd[0]) == (float)(1 << s.size) && cimagf(gd[0]) == 0.0f);
}

int main(void) {
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    CHECK(me == shmem_my_pe() && npes == shmem_n_pes());
    for (int k = 0; k < SHMEM_REDUCE_SYNC_SIZE; k++)
        pSync[k] = SHMEM_SYNC_VALUE;
    for (int k = 0; k < SHMEM_BCAST_SYNC_SIZE; k++)
        pSync2[k] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* memory */
    long *a = (long *)shmalloc(4 * sizeof(long));
    CHECK(a != NULL);
    for (int k = 0; k < 4; k++)
        a[k] = 10L * me + k;
    long *b = (long *)shrealloc(a, 64 * sizeof(long));
    CHECK(b != NULL);
    for (int k = 0; k < 4; k++)
        CHECK(b[k] == 10L * me + k);
    void *al = shmemalign(256, 100);
    CHECK(al != NULL && ((size_t)al & 255) == 0);
    shfree(al);
    shfree(b);

    /* the cache routines: no effect */
    counter = 5;
    shmem_set_cache_inv();
    shmem_set_cache_line_inv(&counter);
    shmem_clear_cache_line_inv(&counter);
    shmem_clear_cache_inv();
    shmem_udcflush_line(&counter);
    shmem_udcflush();
    CHECK(counter == 5);
    counter = 0;

    /* deprecated waits: PE right sets my variables after I start waiting on the old values */
    int right = (me + 1) % npes;
    shmem_barrier_all();
    shmem_long_p(&lwait, 3, right);
    shmem_short_p(&swait, 4, right);
    shmem_int_p(&iwait, 5, right);
    shmem_longlong_p(&llwait, 6, right);
    shmem_wait(&lwait, 0);
    CHECK(lwait == 3);
    shmem_short_wait(&swait, 0);
    CHECK(swait == 4);
    shmem_int_wait(&iwait, 0);
    CHECK(iwait == 5);
    shmem_longlong_wait(&llwait, 0);
    CHECK(llwait == 6);
    shmem_long_wait(&lwait, 0);
    shmem_barrier_all();
    shmem_long_atomic_add(&lwait, 4, right);
    (shmem_wait_until)(&lwait, SHMEM_CMP_GE, 7); /* the function, not the C11 generic macro */
    CHECK(lwait == 7);

    /* barrier: back-to-back on one pSync, each PE adding to PE 0's counter between them */
    for (int r = 0; r < 40; r++) {
        shmem_long_atomic_inc(&counter, 0);
        shmem_barrier(0, 0, npes, pSync);
        if (me == 0)
            CHECK(counter == (long)npes * (r + 1));
        shmem_barrier(0, 0, npes, pSync);
    }
    /* (a PE already in its next call may have counted itself in: look only when all are out) */
    shmem_barrier_all();
    psync_clean(pSync, SHMEM_BARRIER_SYNC_SIZE);
    shmem_barrier_all(); /* nobody starts the next call before PE 0 has looked */

    /* the whole job, then evens and odds as two sets at once (each its own pSync) */
    struct set world = {0, 0, npes, me};
    collectives(world, pSync);
    reductions(world, pSync);
    struct set half = (me % 2 == 0) ? (struct set){0, 1, (npes + 1) / 2, me / 2} : (struct set){1, 1, npes / 2, me / 2};
    long *ps = me % 2 == 0 ? pSync : pSync2;
    if (half.size > 0) {
        collectives(half, ps);
        reductions(half, ps);
    }
    shmem_barrier_all();
    psync_clean(pSync, SHMEM_REDUCE_SYNC_SIZE);
    psync_clean(pSync2, SHMEM_BCAST_SYNC_SIZE);
    if (failures == 0 && me == 0)
        printf("PASS: osh_deprecated (%d PEs)\n", npes);
    shmem_finalize();
    return failures != 0;
}
