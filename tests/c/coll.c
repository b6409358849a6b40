/* coll: the host collectives with exact result checks, over the world team (spelled without
 * and with the team argument), the even PEs (a strided team) and both teams of a 2D split
 * (rows of 2, columns of stride 2): broadcast (every root, small and large: both algorithms),
 * fcollect, collect (a different size on each PE), alltoall, the reductions (integer, small
 * unsigned, float and double; in place too; small and large vectors: both algorithms), the
 * scans (inclusive, exclusive, in place), the generic names, and back-to-back collectives on
 * alternating teams with no barrier between them.
 * usage: coll [quick]   (quick: small sizes only, for the runs that force every cutover) */
#include "test_util.h"
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
    for (size_t i = 0; i < n; i++)
        if (wb[i] != (unsigned short)(60000 + (ti->n - 1) * 500 + i % 7)) {
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
    size_t sizes[3] = {1, 37, big};
    for (int s = 0; s < 3; s++) {
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

int main(int argc, char **argv) {
    test_init();
    if (argc > 1 && !strcmp(argv[1], "quick"))
        big = 3000;
    Ia = ishmem_malloc(BIG * sizeof(int));
    Ib = ishmem_malloc(BIG * sizeof(int));
    CHECK(Ia && Ib, "allocation");
    Ca = (char *)Ia;
    Cb = (char *)Ib;
    world_ti = (team_info){ISHMEM_TEAM_WORLD, "world", t_npes, t_me};
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

    ishmem_team_destroy(xt);
    ishmem_team_destroy(yt);
    if (even != ISHMEM_TEAM_INVALID)
        ishmem_team_destroy(even);
    ishmem_barrier_all();
    ishmem_free(Ib);
    ishmem_free(Ia);
    return test_finish("coll");
}
