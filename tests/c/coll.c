/* coll: the host collectives with exact result checks, over the world team (spelled without
 * and with the team argument), the even PEs (a strided team) and both teams of a 2D split
 * (rows of 2, columns of stride 2): broadcast (every root, small and large: both algorithms),
 * fcollect, collect (a different size on each PE), alltoall, the reductions (integer, small
 * unsigned, float and double; in place too; small and large vectors: both algorithms), the
 * scans (inclusive, exclusive, in place), the generic names, and back-to-back collectives on
 * alternating teams with no barrier between them, and a storm of back-to-back collectives of
 * every kind with alternating roots and no barrier (storm_round).
 * usage: coll [quick|storm]   (quick: small sizes only, for the runs that force every cutover;
 *                              storm: only the storms, on the world and a reversed team) */
#include "test_util.h"
#include <unistd.h>
#include <float.h>
#include <math.h>

#define BIG 300000 /* ints: 1.2 MB, above ISHMEM_BCAST_SCATTER_MIN and REDUCE_SCATTER_MIN */
static size_t big = BIG;

typedef struct {
    ishmem_team_t t;
    const char *name;
    int n, me;
} team_info;

static int *Ia, *Ib;       /* symmetric, BIG ints each */
static char *Ca, *Cb;      /* the same memory as bytes */
static team_info world_ti; /* for the team-less spellings */

/* value of element i contributed by team PE p (small, so products and sums stay exact) */
static int v(int p, size_t i) { return (int)((p * 7 + i * 3 + 1) % 23) - 5; }

static int near(double got, double want) { return fabs(got - want) <= 1e-9 * fabs(want) + 1e-9; }
static int nearf(float got, double want) { return fabs((double)got - want) <= 1e-5 * fabs(want) + 1e-5; }

/* ------------------------------------------------------------------ data movement */
static void test_broadcast(const team_info *ti, size_t n) {
    int roots[2] = {0, ti->n - 1};
    for (int k = 0; k < 2; k++) {
        int root = roots[k];
        for (size_t i = 0; i < n; i++) {
            Ia[i] = v(ti->me + 100, i);
            Ib[i] = -7;
        }
        ishmem_team_sync(ti->t); /* every dest is ready before any PE calls (OpenSHMEM) */
        int rc;
        if (ti->t == ISHMEM_TEAM_WORLD && k == 0)
            rc = ishmem_int_broadcast(Ib, Ia, n, root); /* team-less spelling */
        else
            rc = ishmem_int_broadcast(ti->t, Ib, Ia, n, root);
        CHECK(rc == 0, "%s: broadcast rc %d", ti->name, rc);
        for (size_t i = 0; i < n; i++)
            if (Ib[i] != v(root + 100, i)) {
                CHECK(0, "%s: int_broadcast n %zu root %d [%zu] = %d, want %d", ti->name, n, root, i, Ib[i],
                      v(root + 100, i));
                break;
            }
        ishmem_team_sync(ti->t);
    }
    /* mem form, in place on the root (dest == source everywhere) */
    for (size_t i = 0; i < 24; i++)
        Ca[i] = (char)(ti->me * 3 + i);
    ishmem_team_sync(ti->t);
    CHECK_EQ(ishmem_broadcastmem(ti->t, Ca, Ca, 24, ti->n / 2), 0);
    for (size_t i = 0; i < 24; i++)
        CHECK(Ca[i] == (char)((ti->n / 2) * 3 + i), "%s: broadcastmem [%zu]", ti->name, i);
    /* a float, by the generic name */
    float *fa = (float *)Ib, *fb = (float *)Ia;
    for (int i = 0; i < 5; i++)
        fa[i] = (float)(ti->me + i) / 4.0f;
    ishmem_team_sync(ti->t);
    CHECK_EQ(ishmem_broadcast(ti->t, fb, fa, 5, 0), 0);
    for (int i = 0; i < 5; i++)
        CHECK(fb[i] == (float)i / 4.0f, "%s: generic float broadcast [%d]", ti->name, i);
    ishmem_team_sync(ti->t);
}

static void test_fcollect_collect_alltoall(const team_info *ti, size_t n) {
    /* fcollect of longs */
    long *la = (long *)Ia, *lb = (long *)Ib;
    for (size_t i = 0; i < n; i++)
        la[i] = v(ti->me, i) * 1000L;
    if (ti->t == ISHMEM_TEAM_WORLD)
        CHECK_EQ(ishmem_long_fcollect(lb, la, n), 0);
    else
        CHECK_EQ(ishmem_long_fcollect(ti->t, lb, la, n), 0);
    for (int p = 0; p < ti->n; p++)
        for (size_t i = 0; i < n; i++)
            if (lb[p * n + i] != v(p, i) * 1000L) {
                CHECK(0, "%s: long_fcollect block %d [%zu]", ti->name, p, i);
                p = ti->n;
                break;
            }
    ishmem_team_sync(ti->t);
    /* collect of shorts: team PE p gives p + 1 + n elements */
    short *sa = (short *)Ia, *sb = (short *)Ib;
    size_t mine = (size_t)ti->me + 1 + n;
    for (size_t i = 0; i < mine; i++)
        sa[i] = (short)(ti->me * 50 + i);
    CHECK_EQ(ishmem_short_collect(ti->t, sb, sa, mine), 0);
    size_t off = 0;
    for (int p = 0; p < ti->n; p++) {
        for (size_t i = 0; i < (size_t)p + 1 + n; i++)
            if (sb[off + i] != (short)(p * 50 + i)) {
                CHECK(0, "%s: short_collect block %d [%zu] = %d", ti->name, p, i, sb[off + i]);
                break;
            }
        off += (size_t)p + 1 + n;
    }
    ishmem_team_sync(ti->t);
    /* a PE contributing nothing, by the generic name */
    for (size_t i = 0; i < 3; i++)
        sa[i] = (short)(ti->me + 10 * i);
    CHECK_EQ(ishmem_collect(ti->t, sb, sa, ti->me == 0 ? 0 : 3), 0);
    for (int p = 1; p < ti->n; p++)
        for (size_t i = 0; i < 3; i++)
            CHECK(sb[3 * (p - 1) + i] == (short)(p + 10 * i), "%s: collect with an empty block", ti->name);
    ishmem_team_sync(ti->t);
    /* blocks of very different sizes in one call (even team PEs 3 shorts, odd 1600: on the
     * push path the small ones travel with the sizes, the large ones are pulled) */
    {
        size_t cnt = ti->me % 2 ? 1600 : 3;
        for (size_t i = 0; i < cnt; i++)
            sa[i] = (short)(ti->me * 3 + i * 7);
        CHECK_EQ(ishmem_short_collect(ti->t, sb, sa, cnt), 0);
        size_t at = 0;
        for (int p = 0; p < ti->n; p++) {
            size_t pc = p % 2 ? 1600 : 3;
            for (size_t i = 0; i < pc; i++)
                if (sb[at + i] != (short)(p * 3 + i * 7)) {
                    CHECK(0, "%s: mixed-size short_collect block %d [%zu] = %d", ti->name, p, i, sb[at + i]);
                    break;
                }
            at += pc;
        }
        ishmem_team_sync(ti->t);
    }
    /* alltoall of int64: block j of PE p's source goes to block p of PE j's dest */
    int64_t *xa = (int64_t *)Ia, *xb = (int64_t *)Ib;
    for (int j = 0; j < ti->n; j++)
        for (size_t i = 0; i < n; i++)
            xa[j * n + i] = (int64_t)ti->me * 1000000 + j * 1000 + (int64_t)i;
    CHECK_EQ(ishmem_int64_alltoall(ti->t, xb, xa, n), 0);
    for (int p = 0; p < ti->n; p++)
        for (size_t i = 0; i < n; i++)
            if (xb[p * n + i] != (int64_t)p * 1000000 + ti->me * 1000 + (int64_t)i) {
                CHECK(0, "%s: int64_alltoall block %d [%zu]", ti->name, p, i);
                p = ti->n;
                break;
            }
    ishmem_team_sync(ti->t);
    /* alltoallmem and fcollectmem */
    for (int j = 0; j < ti->n; j++)
        for (int i = 0; i < 3; i++)
            Ca[j * 3 + i] = (char)(ti->me * 16 + j * 4 + i);
    CHECK_EQ(ishmem_alltoallmem(ti->t, Cb, Ca, 3), 0);
    for (int p = 0; p < ti->n; p++)
        for (int i = 0; i < 3; i++)
            CHECK(Cb[p * 3 + i] == (char)(p * 16 + ti->me * 4 + i), "%s: alltoallmem", ti->name);
    ishmem_team_sync(ti->t);
    CHECK_EQ(ishmem_fcollectmem(ti->t, Cb, Ca, 2), 0);
    for (int p = 0; p < ti->n; p++)
        CHECK(Cb[p * 2 + 1] == (char)(p * 16 + 1), "%s: fcollectmem", ti->name);
    ishmem_team_sync(ti->t);
}

/* ------------------------------------------------------------------ reductions and scans */
static void test_int_reductions(const team_info *ti, size_t n) {
    for (int op = 0; op < 4; op++) {
        for (size_t i = 0; i < n; i++)
            Ia[i] = op == 1 ? 1 + (ti->me + (int)i) % 3 * (i % 5 == 0) : v(ti->me, i);
        int rc;
        const char *name[4] = {"sum", "prod", "min", "max"};
        if (ti->t == ISHMEM_TEAM_WORLD) {
            if (op == 0) rc = ishmem_int_sum_reduce(Ib, Ia, n);
            else if (op == 1) rc = ishmem_int_prod_reduce(ISHMEM_TEAM_WORLD, Ib, Ia, n);
            else if (op == 2) rc = ishmem_min_reduce(Ib, Ia, n); /* generic, team-less */
            else rc = ishmem_max_reduce(ISHMEM_TEAM_WORLD, Ib, Ia, n);
        } else {
            if (op == 0) rc = ishmem_int_sum_reduce(ti->t, Ib, Ia, n);
            else if (op == 1) rc = ishmem_int_prod_reduce(ti->t, Ib, Ia, n);
            else if (op == 2) rc = ishmem_int_min_reduce(ti->t, Ib, Ia, n);
            else rc = ishmem_max_reduce(ti->t, Ib, Ia, n);
        }
        CHECK(rc == 0, "%s: int %s rc %d", ti->name, name[op], rc);
        for (size_t i = 0; i < n; i++) {
            long long want = op == 1 ? 1 : op == 0 ? 0 : op == 2 ? 1000 : -1000;
            for (int p = 0; p < ti->n; p++) {
                long long x = op == 1 ? 1 + (p + (int)i) % 3 * (i % 5 == 0) : v(p, i);
                if (op == 0) want += x;
                else if (op == 1) want *= x;
                else if (op == 2) want = x < want ? x : want;
                else want = x > want ? x : want;
            }
            if (Ib[i] != (int)want) {
                CHECK(0, "%s: int_%s_reduce n %zu [%zu] = %d, want %lld", ti->name, name[op], n, i, Ib[i], want);
                break;
            }
        }
        ishmem_team_sync(ti->t);
    }
    /* in place */
    for (size_t i = 0; i < n; i++)
        Ia[i] = v(ti->me, i);
    CHECK_EQ(ishmem_int_sum_reduce(ti->t, Ia, Ia, n), 0);
    for (size_t i = 0; i < n; i++) {
        int want = 0;
        for (int p = 0; p < ti->n; p++)
            want += v(p, i);
        if (Ia[i] != want) {
            CHECK(0, "%s: in-place int_sum_reduce n %zu [%zu] = %d, want %d", ti->name, n, i, Ia[i], want);
            break;
        }
    }
    ishmem_team_sync(ti->t);
}

static void test_small_unsigned(const team_info *ti, size_t n) {
    unsigned char *ua = (unsigned char *)Ia, *ub = (unsigned char *)Ib;
    unsigned short *wa = (unsigned short *)Ia, *wb = (unsigned short *)Ib;
    for (int op = 0; op < 4; op++) {
        for (size_t i = 0; i < n; i++)
            ua[i] = (unsigned char)(0x5A ^ (ti->me * 37 + i * 11));
        if (op == 0) CHECK_EQ(ishmem_uchar_and_reduce(ti->t, ub, ua, n), 0);
        if (op == 1) CHECK_EQ(ishmem_uchar_or_reduce(ti->t, ub, ua, n), 0);
        if (op == 2) CHECK_EQ(ishmem_xor_reduce(ti->t, ub, ua, n), 0);
        if (op == 3) CHECK_EQ(ishmem_uchar_sum_reduce(ti->t, ub, ua, n), 0);
        for (size_t i = 0; i < n; i++) {
            unsigned want = op == 0 ? 0xFF : 0;
            for (int p = 0; p < ti->n; p++) {
                unsigned x = (unsigned char)(0x5A ^ (p * 37 + i * 11));
                want = op == 0 ? want & x : op == 1 ? want | x : op == 2 ? want ^ x : want + x;
            }
            if (ub[i] != (unsigned char)want) {
                CHECK(0, "%s: uchar op %d [%zu] = %u, want %u", ti->name, op, i, ub[i], want & 0xFF);
                break;
            }
        }
        ishmem_team_sync(ti->t);
    }
    for (size_t i = 0; i < n; i++)
        wa[i] = (unsigned short)(60000 + ti->me * 500 + i % 7);
    CHECK_EQ(ishmem_ushort_max_reduce(ti->t, wb, wa, n), 0);
    /* past 11 PEs the larger values wrap: the maximum is over what each PE gave */
    unsigned short wmax[7] = {0};
    for (int p = 0; p < ti->n; p++)
        for (int k = 0; k < 7; k++) {
            unsigned short x = (unsigned short)(60000 + p * 500 + k);
            if (x > wmax[k]) wmax[k] = x;
        }
    for (size_t i = 0; i < n; i++)
        if (wb[i] != wmax[i % 7]) {
            CHECK(0, "%s: ushort_max_reduce [%zu] = %u", ti->name, i, wb[i]);
            break;
        }
    ishmem_team_sync(ti->t);
    CHECK_EQ(ishmem_ushort_sum_reduce(ti->t, wb, wa, n), 0); /* wraps */
    for (size_t i = 0; i < n; i++) {
        unsigned want = 0;
        for (int p = 0; p < ti->n; p++)
            want += 60000 + p * 500 + i % 7;
        if (wb[i] != (unsigned short)want) {
            CHECK(0, "%s: ushort_sum_reduce [%zu]", ti->name, i);
            break;
        }
    }
    ishmem_team_sync(ti->t);
}

static void test_floating(const team_info *ti, size_t n) {
    double *da = (double *)Ia, *db = (double *)Ib;
    size_t nd = n / 2 ? n / 2 : 1;
    for (size_t i = 0; i < nd; i++)
        da[i] = 0.1 * (ti->me + 1) + (double)i / 3.0;
    CHECK_EQ(ishmem_double_sum_reduce(ti->t, db, da, nd), 0);
    for (size_t i = 0; i < nd; i++) {
        double want = 0;
        for (int p = 0; p < ti->n; p++)
            want += 0.1 * (p + 1) + (double)i / 3.0;
        if (!near(db[i], want)) {
            CHECK(0, "%s: double_sum_reduce [%zu] = %.17g, want %.17g", ti->name, i, db[i], want);
            break;
        }
    }
    ishmem_team_sync(ti->t);
    CHECK_EQ(ishmem_prod_reduce(ti->t, db, da, nd), 0);
    for (size_t i = 0; i < nd; i++) {
        double want = 1;
        for (int p = 0; p < ti->n; p++)
            want *= 0.1 * (p + 1) + (double)i / 3.0;
        if (!near(db[i], want)) {
            CHECK(0, "%s: double_prod_reduce [%zu] = %.17g, want %.17g", ti->name, i, db[i], want);
            break;
        }
    }
    ishmem_team_sync(ti->t);
    float *fa = (float *)Ia, *fb = (float *)Ib;
    for (size_t i = 0; i < (n > 3 ? n : 3); i++)
        fa[i] = 0.5f * (float)(ti->me + 1) + (float)(i % 13) * 0.25f;
    CHECK_EQ(ishmem_float_sum_reduce(ti->t, fb, fa, n), 0);
    for (size_t i = 0; i < n; i++) {
        double want = 0;
        for (int p = 0; p < ti->n; p++)
            want += 0.5 * (p + 1) + (i % 13) * 0.25;
        if (!nearf(fb[i], want)) {
            CHECK(0, "%s: float_sum_reduce [%zu] = %g, want %g", ti->name, i, fb[i], want);
            break;
        }
    }
    ishmem_team_sync(ti->t);
    CHECK_EQ(ishmem_float_prod_reduce(ti->t, fb, fa, 3), 0);
    double want = 1;
    for (int p = 0; p < ti->n; p++)
        want *= 0.5 * (p + 1) + 0.5;
    if (want > FLT_MAX) /* past ~40 PEs the product is beyond float: IEEE arithmetic gives +inf */
        CHECK(isinf(fb[2]) && fb[2] > 0, "%s: float_prod_reduce = %g, want +inf (%g > FLT_MAX)", ti->name, fb[2], want);
    else
        CHECK(nearf(fb[2], want), "%s: float_prod_reduce = %g, want %g", ti->name, fb[2], want);
    CHECK_EQ(ishmem_float_min_reduce(ti->t, fb, fa, 3), 0);
    CHECK(fb[1] == 0.75f, "%s: float_min_reduce = %g", ti->name, fb[1]);
    ishmem_team_sync(ti->t);
}

static void test_scans(const team_info *ti, size_t n) {
    for (int incl = 0; incl < 2; incl++) {
        for (size_t i = 0; i < n; i++)
            Ia[i] = v(ti->me, i);
        int rc;
        if (ti->t == ISHMEM_TEAM_WORLD)
            rc = incl ? ishmem_int_sum_inscan(Ib, Ia, n) : ishmem_sum_exscan(Ib, Ia, n);
        else
            rc = incl ? ishmem_int_sum_inscan(ti->t, Ib, Ia, n) : ishmem_sum_exscan(ti->t, Ib, Ia, n);
        CHECK(rc == 0, "%s: scan rc", ti->name);
        for (size_t i = 0; i < n; i++) {
            int want = 0;
            for (int p = 0; p < ti->me + incl; p++)
                want += v(p, i);
            if (Ib[i] != want) {
                CHECK(0, "%s: int_sum_%s n %zu [%zu] = %d, want %d", ti->name, incl ? "inscan" : "exscan", n, i,
                      Ib[i], want);
                break;
            }
        }
        ishmem_team_sync(ti->t);
        /* in place */
        for (size_t i = 0; i < n; i++)
            Ia[i] = v(ti->me, i);
        rc = incl ? ishmem_int_sum_inscan(ti->t, Ia, Ia, n) : ishmem_int_sum_exscan(ti->t, Ia, Ia, n);
        for (size_t i = 0; i < n; i++) {
            int want = 0;
            for (int p = 0; p < ti->me + incl; p++)
                want += v(p, i);
            if (Ia[i] != want) {
                CHECK(0, "%s: in-place int_sum_%s n %zu [%zu] = %d, want %d", ti->name, incl ? "inscan" : "exscan",
                      n, i, Ia[i], want);
                break;
            }
        }
        ishmem_team_sync(ti->t);
    }
    double *da = (double *)Ia, *db = (double *)Ib;
    for (size_t i = 0; i < 6; i++)
        da[i] = 1.0 / (ti->me + 1) + (double)i;
    CHECK_EQ(ishmem_double_sum_inscan(ti->t, db, da, 6), 0);
    for (size_t i = 0; i < 6; i++) {
        double want = 0;
        for (int p = 0; p <= ti->me; p++)
            want += 1.0 / (p + 1) + (double)i;
        CHECK(near(db[i], want), "%s: double_sum_inscan [%zu] = %.17g, want %.17g", ti->name, i, db[i], want);
    }
    ishmem_team_sync(ti->t);
}

static void run_all(const team_info *ti) {
    /* Across nodes, with the smallest all-send scratch (ISHMEM_SYMMETRIC_SIZE=128M: slots of
     * 64 KiB at 2 PEs, 32 KiB at 4): 20000 ints (80 KB) go chunk by chunk through the slots;
     * 100000 (400 KB) at 3-4 PEs by the push reduce-scatter rounds (n slots each) and a tail
     * of chunks; big by the reduce-scatter by reads at 3+ PEs, chunks at 2. With the largest
     * (2 MiB, the default 1 GiB heap: slots of 512 KiB at 2 PEs, 341 KiB at 3, 256 KiB at 4):
     * 20000 in one push, 100000 by chunks at 3-4 PEs, big by one round and a tail at 3-4 */
    size_t sizes[5] = {1, 37, big < 20000 ? big : 20000, big < 100000 ? big : 100000, big};
    for (int s = 0; s < 5; s++) {
        size_t n = sizes[s];
        test_broadcast(ti, n);
        test_int_reductions(ti, n);
        test_scans(ti, n);
        test_small_unsigned(ti, n);
        test_floating(ti, n);
    }
    size_t movs[2] = {1, 1000};
    for (int s = 0; s < 2; s++)
        test_fcollect_collect_alltoall(ti, movs[s]);
}

/* back-to-back reductions on two teams sharing PEs, no barrier in between */
static void back_to_back(const team_info *a, const team_info *b) {
    int *x = Ia, *y = Ia + 64, *r = Ib, *q = Ib + 64;
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 4; i++) {
            x[i] = round + a->me + i;
            y[i] = round * 2 + b->me + i;
        }
        ishmem_int_sum_reduce(a->t, r, x, 4);
        if (b->t != ISHMEM_TEAM_INVALID)
            ishmem_int_max_reduce(b->t, q, y, 4);
        for (int i = 0; i < 4; i++) {
            CHECK(r[i] == a->n * (round + i) + a->n * (a->n - 1) / 2, "back-to-back sum round %d", round);
            if (b->t != ISHMEM_TEAM_INVALID)
                CHECK(q[i] == round * 2 + b->n - 1 + i, "back-to-back max round %d", round);
        }
        if (t_failures)
            break;
    }
}

/* ------------------------------------------------------------------ back-to-back storm
 * Round r of every kind, with no barrier anywhere: broadcast (root r mod n), fcollect, alltoall,
 * sum and max reductions, an in-place sum, a double sum, inclusive and exclusive scans, and
 * every 5th round larger ones (past ISHMEM_COLL_SMALL_MAX at its default, so the push and the
 * synchronized algorithms interleave on one team). Each round writes its own dest arrays (the
 * caller keeps dest ready: OpenSHMEM), sources are reused every round (reusable once a call
 * returns). A PE runs ahead into the next round while a slower one still waits: per-sender
 * flags must tell the rounds apart. Checked at once, and again after a final barrier (no late
 * push overwrote an earlier round). */
#define STORM_ROUNDS 24
#define STORM_STRIDE 12500 /* ints of Ib per round (24 rounds: all of Ib) */

/* broadcast: 12-84 B (across nodes the ring of 128-byte slots), every 5th round 6000 B (past
 * the slots), and rounds 2, 7, ... 680 B to 1480 B (the parity slots up to 1 KiB, then
 * straight into dest: size changes between ring, parity slots and dest in one run) */
static size_t storm_bcast_n(int r) { return r % 5 == 4 ? 1500 : r % 5 == 2 ? (size_t)(150 + 10 * r) : (size_t)(1 + r % 7) * 3; }
/* fcollect's block: its dest holds 2560 ints per round (n x 280 up to 9 PEs; fewer beyond) */
static size_t storm_coll_n(int r, int n) {
    size_t most = 2560 / (size_t)n;
    return r % 5 == 4 ? (most < 280 ? most : 280) : (size_t)(1 + r % 4);
}
/* alltoall's block: its dest holds 64 ints per round (5 up to 12 PEs; fewer beyond, 1 at 64) */
static size_t storm_a2a_n(size_t nc, int n) {
    size_t most = 64 / (size_t)n, na = nc < 5 ? nc : 5;
    return na < most ? na : most;
}
static size_t storm_red_n(int r) { return r % 5 == 4 ? 1100 : (size_t)(1 + (r * 13) % 200); }
/* collect: team PE p's count in round r (every 5th round, with up to 4 PEs, odd PEs give 400:
 * past the scratch slot, so inline and pulled blocks mix in one call) */
static size_t storm_collect_n(int r, int p, int n) { return r % 5 == 4 && p % 2 && n <= 4 ? 400 : (size_t)(1 + (p + r) % 3); }

/* "slow" mode: the team's last PE sleeps this long before some calls of every round, so the
 * others wait long in mixed calls (run with ISHMEM_COLL_CHECK_MS=1: the call-agreement check
 * of long waits runs often and must not take a lagging PE for a mismatch) */
static int slow_us;
#define SLOW_POINT() do { if (slow_us && me == n - 1) usleep(slow_us); } while (0)

static void storm_round(const team_info *ti, int r, int check_only) {
    int n = ti->n, me = ti->me, root = r % n;
    int *d = Ib + (size_t)r * STORM_STRIDE;
    int *bd = d, *fd = d + 2048, *ad = d + 4608, *sd = d + 4672, *md = d + 5888, *ip = d + 7104;
    int *si = d + 8320, *se = d + 9536;
    double *dd = (double *)(d + 10752); /* 64 doubles */
    int *cd = d + 10880;                /* collect: up to 1620 ints */
    int *cs = Ia + 5200;
    int *bs = Ia, *fs = Ia + 2048, *as = Ia + 2400, *ss = Ia + 2600, *ms = Ia + 3800;
    double *ds = (double *)(Ia + 5000);
    size_t nb = storm_bcast_n(r), nc = storm_coll_n(r, n), nr = storm_red_n(r), na = storm_a2a_n(nc, n);
    size_t ndb = nr < 64 ? nr : 64;
    if (!check_only) {
        for (size_t i = 0; i < nb; i++)
            bs[i] = v(me + 3 * r, i);
        SLOW_POINT();
        CHECK_EQ(ishmem_int_broadcast(ti->t, bd, bs, nb, root), 0);
        for (size_t i = 0; i < nc; i++)
            fs[i] = v(me + r, i);
        CHECK_EQ(ishmem_int_fcollect(ti->t, fd, fs, nc), 0);
        for (int j = 0; j < n; j++)
            for (size_t i = 0; i < na; i++)
                as[j * na + i] = me * 1000 + j * 10 + (int)i + r;
        CHECK_EQ(ishmem_int_alltoall(ti->t, ad, as, na), 0);
        for (size_t i = 0; i < nr; i++) {
            ss[i] = v(me + r, i);
            ms[i] = v(me + 2 * r, i);
            ip[i] = v(me + r + 1, i);
        }
        for (size_t i = 0; i < ndb; i++)
            ds[i] = (me + r + (int)i) * 0.25 + 1.0 / 3.0;
        SLOW_POINT();
        CHECK_EQ(ishmem_int_sum_reduce(ti->t, sd, ss, nr), 0);
        CHECK_EQ(ishmem_int_max_reduce(ti->t, md, ms, nr), 0);
        CHECK_EQ(ishmem_int_sum_reduce(ti->t, ip, ip, nr), 0);
        CHECK_EQ(ishmem_double_sum_reduce(ti->t, dd, ds, ndb), 0);
        CHECK_EQ(ishmem_int_sum_inscan(ti->t, si, ss, nr), 0);
        CHECK_EQ(ishmem_int_sum_exscan(ti->t, se, ss, nr), 0);
        size_t nco = storm_collect_n(r, me, n);
        for (size_t i = 0; i < nco; i++)
            cs[i] = v(me * 5 + r, i);
        SLOW_POINT();
        CHECK_EQ(ishmem_int_collect(ti->t, cd, cs, nco), 0);
        if (r % 3 == 0 && ti->t == ISHMEM_TEAM_WORLD) {
            SLOW_POINT();
            ishmem_barrier_all(); /* recorded on the world team: lagging, not a mismatch */
        }
    }
    {
        size_t at = 0;
        for (int p = 0; p < n; p++) {
            size_t pc = storm_collect_n(r, p, n);
            for (size_t i = 0; i < pc; i++)
                if (cd[at + i] != v(p * 5 + r, i)) {
                    CHECK(0, "%s: storm round %d collect [%d][%zu] = %d, want %d (%s)", ti->name, r, p, i, cd[at + i],
                          v(p * 5 + r, i), check_only ? "after the barrier" : "at return");
                    break;
                }
            at += pc;
        }
    }
    const char *when = check_only ? "after the barrier" : "at return";
    for (size_t i = 0; i < nb; i++)
        if (bd[i] != v(root + 3 * r, i)) {
            CHECK(0, "%s: storm round %d broadcast n %zu root %d [%zu] = %d, want %d (%s)", ti->name, r, nb, root, i,
                  bd[i], v(root + 3 * r, i), when);
            break;
        }
    for (int p = 0; p < n; p++)
        for (size_t i = 0; i < nc; i++)
            if (fd[p * nc + i] != v(p + r, i)) {
                CHECK(0, "%s: storm round %d fcollect [%d][%zu] = %d, want %d (%s)", ti->name, r, p, i, fd[p * nc + i],
                      v(p + r, i), when);
                p = n;
                break;
            }
    for (int p = 0; p < n; p++)
        for (size_t i = 0; i < na; i++)
            if (ad[p * na + i] != p * 1000 + me * 10 + (int)i + r) {
                CHECK(0, "%s: storm round %d alltoall [%d][%zu] = %d (%s)", ti->name, r, p, i, ad[p * na + i], when);
                p = n;
                break;
            }
    for (size_t i = 0; i < nr; i++) {
        int sum = 0, mx = -1000, isum = 0, incl = 0, excl = 0;
        for (int p = 0; p < n; p++) {
            sum += v(p + r, i);
            mx = v(p + 2 * r, i) > mx ? v(p + 2 * r, i) : mx;
            isum += v(p + r + 1, i);
            if (p < me)
                excl += v(p + r, i);
            if (p <= me)
                incl += v(p + r, i);
        }
        if (sd[i] != sum || md[i] != mx || ip[i] != isum || si[i] != incl || se[i] != excl) {
            CHECK(0, "%s: storm round %d n %zu [%zu]: sum %d/%d max %d/%d in-place %d/%d inscan %d/%d exscan %d/%d (%s)",
                  ti->name, r, nr, i, sd[i], sum, md[i], mx, ip[i], isum, si[i], incl, se[i], excl, when);
            break;
        }
    }
    for (size_t i = 0; i < ndb; i++) {
        double want = 0;
        for (int p = 0; p < n; p++)
            want += (p + r + (int)i) * 0.25 + 1.0 / 3.0;
        if (!near(dd[i], want)) {
            CHECK(0, "%s: storm round %d double sum [%zu] = %g, want %g (%s)", ti->name, r, i, dd[i], want, when);
            break;
        }
    }
}

static void storm(const team_info *ti) {
    if (ti->t == ISHMEM_TEAM_INVALID)
        return;
    ishmem_team_sync(ti->t); /* the dest arrays of every round are ready */
    for (int r = 0; r < STORM_ROUNDS && !t_failures; r++)
        storm_round(ti, r, 0);
    ishmem_team_sync(ti->t);
    for (int r = 0; r < STORM_ROUNDS && !t_failures; r++)
        storm_round(ti, r, 1);
    ishmem_team_sync(ti->t);
}

/* ------------------------------------------------------------------ broadcast runs
 * Runs of 40 back-to-back broadcasts of one size (no barrier), the root changing every 7 calls,
 * then a run whose size changes every call. Across nodes a root stays up to its ring's depth - 1
 * calls ahead of a member (issue 31: slots of the block's flag-in-data message, 2-16 of them in
 * 16 KiB), and the team's last PE lags now and then so that the root does run ahead: a root that
 * wrote a slot before its member read it shows as a wrong block. Every call's data differs. */
static const size_t bcast_run_bytes[] = {8, 512, 1000, 4096, 6000, 64, 2040, 7000};
#define BCAST_RUN_SIZES (sizeof bcast_run_bytes / sizeof bcast_run_bytes[0])

static char bcast_run_byte(int call, size_t b, int root) { return (char)(call * 31 + (int)b * 7 + root * 5 + 1); }

static void bcast_runs(const team_info *ti) {
    if (ti->t == ISHMEM_TEAM_INVALID)
        return;
    char *src = (char *)Ia, *dst = (char *)Ib;
    int call = 0;
    ishmem_team_sync(ti->t);
    for (size_t k = 0; k <= BCAST_RUN_SIZES && !t_failures; k++) {
        for (int i = 0; i < 40 && !t_failures; i++, call++) {
            size_t nb = k == BCAST_RUN_SIZES ? bcast_run_bytes[(size_t)i % BCAST_RUN_SIZES] : bcast_run_bytes[k];
            int root = (call / 7) % ti->n;
            if (ti->me == root)
                for (size_t b = 0; b < nb; b++)
                    src[b] = bcast_run_byte(call, b, root);
            if (ti->me == ti->n - 1 && call % 9 == 4)
                usleep(2000);
            CHECK_EQ(ishmem_broadcastmem(ti->t, dst, src, nb, root), 0);
            for (size_t b = 0; b < nb; b++)
                if (dst[b] != bcast_run_byte(call, b, root)) {
                    CHECK(0, "%s: broadcast run %zu call %d (%zu B from root %d): byte %zu = %d, want %d", ti->name, k, call,
                          nb, root, b, dst[b], bcast_run_byte(call, b, root));
                    break;
                }
        }
    }
    ishmem_team_sync(ti->t);
}

int main(int argc, char **argv) {
    test_init();
    int storm_only = argc > 1 && (!strcmp(argv[1], "storm") || !strcmp(argv[1], "slow"));
    if (argc > 1 && !strcmp(argv[1], "slow"))
        slow_us = 10000;
    if (argc > 1 && !strcmp(argv[1], "quick"))
        big = 3000;
    Ia = ishmem_malloc(BIG * sizeof(int));
    Ib = ishmem_malloc(BIG * sizeof(int));
    CHECK(Ia && Ib, "allocation");
    Ca = (char *)Ia;
    Cb = (char *)Ib;
    world_ti = (team_info){ISHMEM_TEAM_WORLD, "world", t_npes, t_me};
    storm(&world_ti);
    bcast_runs(&world_ti);
    if (storm_only) {
        /* the same on a strided team (every PE but the last, reversed) */
        ishmem_team_t rev;
        int rn = t_npes > 1 ? t_npes - 1 : 1;
        CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, rn - 1, -1, rn, NULL, 0, &rev), 0);
        team_info rti = {rev, "reversed", ishmem_team_n_pes(rev), ishmem_team_my_pe(rev)};
        storm(&rti);
        storm(&world_ti);
        if (rev != ISHMEM_TEAM_INVALID)
            ishmem_team_destroy(rev);
        ishmem_barrier_all();
        ishmem_free(Ib);
        ishmem_free(Ia);
        return test_finish("coll");
    }
    run_all(&world_ti);

    /* the even PEs */
    ishmem_team_t even;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, (t_npes + 1) / 2, NULL, 0, &even), 0);
    team_info eti = {even, "even", ishmem_team_n_pes(even), ishmem_team_my_pe(even)};
    if (even != ISHMEM_TEAM_INVALID)
        run_all(&eti);

    /* both teams of a 2D split: rows of 2 PEs, columns of stride 2 */
    ishmem_team_t xt, yt;
    CHECK_EQ(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, 2, NULL, 0, &xt, NULL, 0, &yt), 0);
    team_info xti = {xt, "x-axis", ishmem_team_n_pes(xt), ishmem_team_my_pe(xt)};
    team_info yti = {yt, "y-axis", ishmem_team_n_pes(yt), ishmem_team_my_pe(yt)};
    run_all(&xti);
    run_all(&yti);
    ishmem_barrier_all();
    back_to_back(&world_ti, &xti);
    back_to_back(&yti, &eti);
    storm(&eti);
    storm(&yti);
    bcast_runs(&yti);
    bcast_runs(&eti);

    ishmem_team_destroy(xt);
    ishmem_team_destroy(yt);
    if (even != ISHMEM_TEAM_INVALID)
        ishmem_team_destroy(even);
    ishmem_barrier_all();
    ishmem_free(Ib);
    ishmem_free(Ia);
    return test_finish("coll");
}
