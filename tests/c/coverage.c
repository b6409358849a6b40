/* coverage: calls every exported host symbol of libishmem (abi/symbols.txt) at least once and
 * checks its effect. `nm -u coverage` must list every name (test coverage.symbols).
 * usage: coverage [init|thread|attr]   which of the three init routines starts the job */
#include "test_util.h"
#include "gen_types.h"

static int next, prev;
static long cov_lock;   /* symmetric (a global): the lock of the lock coverage */
static int cov_locked; /* this PE's count of its own critical sections */
static unsigned char *Hd, *Hs; /* symmetric scratch: destination and source, 4 KiB each */
static uint64_t *sigw;         /* symmetric signal word */
static uint64_t sig_expect;    /* every PE sends one signal to next per step: same count */
static int steps;

#define SYNC() ishmem_barrier_all()
#define V(T, pe, i) ((T)((pe) * 17 + (i) * 5 + 1))

/* ------------------------------------------------------------------ RMA, typed */
#define COV_RMA(TN, T)                                                                      \
    static void cov_rma_##TN(void) {                                                        \
        T *d = (T *)Hd, *s = (T *)Hs, loc[8];                                               \
        for (int i = 0; i < 8; i++)                                                         \
            s[i] = V(T, t_me, i);                                                           \
        SYNC();                                                                             \
        ishmem_##TN##_put(d, s, 8, next);                                                   \
        SYNC();                                                                             \
        for (int i = 0; i < 8; i++)                                                         \
            CHECK(d[i] == V(T, prev, i), "ishmem_" #TN "_put [%d]", i);                     \
        ishmem_##TN##_get(loc, s, 8, next);                                                 \
        for (int i = 0; i < 8; i++)                                                         \
            CHECK(loc[i] == V(T, next, i), "ishmem_" #TN "_get [%d]", i);                   \
        SYNC();                                                                             \
        ishmem_##TN##_p(&d[0], V(T, t_me, 20), next);                                       \
        SYNC();                                                                             \
        CHECK(d[0] == V(T, prev, 20), "ishmem_" #TN "_p");                                  \
        CHECK(ishmem_##TN##_g(&s[1], next) == V(T, next, 1), "ishmem_" #TN "_g");           \
        SYNC();                                                                             \
        ishmem_##TN##_iput(d, s, 2, 1, 4, next);                                            \
        SYNC();                                                                             \
        for (int j = 0; j < 4; j++)                                                         \
            CHECK(d[2 * j] == V(T, prev, j), "ishmem_" #TN "_iput [%d]", j);                \
        ishmem_##TN##_iget(loc, s, 1, 2, 4, next);                                          \
        for (int j = 0; j < 4; j++)                                                         \
            CHECK(loc[j] == V(T, next, 2 * j), "ishmem_" #TN "_iget [%d]", j);              \
        SYNC();                                                                             \
        ishmem_##TN##_put_nbi(d, s + 4, 4, next);                                           \
        ishmem_quiet();                                                                     \
        SYNC();                                                                             \
        for (int i = 0; i < 4; i++)                                                         \
            CHECK(d[i] == V(T, prev, 4 + i), "ishmem_" #TN "_put_nbi [%d]", i);             \
        ishmem_##TN##_get_nbi(loc, s + 2, 4, next);                                         \
        ishmem_quiet();                                                                     \
        for (int i = 0; i < 4; i++)                                                         \
            CHECK(loc[i] == V(T, next, 2 + i), "ishmem_" #TN "_get_nbi [%d]", i);           \
        SYNC();                                                                             \
        ishmemx_##TN##_ibput(d, s, 4, 2, 2, 2, next);                                       \
        SYNC();                                                                             \
        CHECK(d[0] == V(T, prev, 0) && d[1] == V(T, prev, 1) && d[4] == V(T, prev, 2) &&    \
                  d[5] == V(T, prev, 3),                                                    \
              "ishmemx_" #TN "_ibput");                                                     \
        ishmemx_##TN##_ibget(loc, s, 2, 4, 2, 2, next);                                     \
        CHECK(loc[0] == V(T, next, 0) && loc[1] == V(T, next, 1) && loc[2] == V(T, next, 4) && \
                  loc[3] == V(T, next, 5),                                                  \
              "ishmemx_" #TN "_ibget");                                                     \
        SYNC();                                                                             \
        for (int i = 0; i < 8; i++)                                                         \
            s[i] = V(T, t_me, i + 30);                                                      \
        ishmem_##TN##_put_signal(d, s, 8, sigw, 1, ISHMEM_SIGNAL_ADD, next);                \
        sig_expect++;                                                                       \
        ishmem_signal_wait_until(sigw, ISHMEM_CMP_EQ, sig_expect);                          \
        for (int i = 0; i < 8; i++)                                                         \
            CHECK(d[i] == V(T, prev, i + 30), "ishmem_" #TN "_put_signal [%d]", i);         \
        SYNC();                                                                             \
        s[7] = V(T, t_me, 77);                                                              \
        sig_expect += 1000;                                                                 \
        ishmem_##TN##_put_signal_nbi(d, s, 8, sigw, sig_expect, ISHMEM_SIGNAL_SET, next);   \
        ishmem_quiet();                                                                     \
        ishmem_signal_wait_until(sigw, ISHMEM_CMP_EQ, sig_expect);                          \
        CHECK(d[7] == V(T, prev, 77), "ishmem_" #TN "_put_signal_nbi");                     \
        SYNC();                                                                             \
        steps++;                                                                            \
    }
ISHT_RMA_TYPES(COV_RMA)

/* ------------------------------------------------------------------ RMA, SIZE and mem */
typedef void (*cont_fn)(void *, const void *, size_t, int);
typedef void (*strided_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);
typedef void (*block_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, size_t, int);
typedef void (*signal_fn)(void *, const void *, size_t, uint64_t *, uint64_t, int, int);

static unsigned char B(int pe, size_t k) { return (unsigned char)(pe * 29 + k * 3 + 7); }

static void cov_bytes(const char *name, size_t E, cont_fn put, cont_fn get, cont_fn put_nbi,
                      cont_fn get_nbi, strided_fn iput, strided_fn iget, block_fn ibput,
                      block_fn ibget, signal_fn put_signal, signal_fn put_signal_nbi) {
    unsigned char loc[16 * 8];
    size_t n = 8 * E;
    for (size_t k = 0; k < n; k++)
        Hs[k] = B(t_me, k);
    SYNC();
    put(Hd, Hs, 8, next);
    SYNC();
    for (size_t k = 0; k < n; k++)
        CHECK(Hd[k] == B(prev, k), "%s put: byte %zu", name, k);
    get(loc, Hs, 8, next);
    for (size_t k = 0; k < n; k++)
        CHECK(loc[k] == B(next, k), "%s get: byte %zu", name, k);
    SYNC();
    memset(Hd, 0, n);
    SYNC();
    put_nbi(Hd, Hs + E, 7, next);
    ishmem_quiet();
    SYNC();
    for (size_t k = 0; k < 7 * E; k++)
        CHECK(Hd[k] == B(prev, k + E), "%s put_nbi: byte %zu", name, k);
    get_nbi(loc, Hs + 2 * E, 6, next);
    ishmem_quiet();
    for (size_t k = 0; k < 6 * E; k++)
        CHECK(loc[k] == B(next, k + 2 * E), "%s get_nbi: byte %zu", name, k);
    if (iput) {
        SYNC();
        memset(Hd, 0, n);
        SYNC();
        iput(Hd, Hs, 2, 1, 4, next); /* dest element 2j = source element j */
        SYNC();
        for (size_t j = 0; j < 4; j++)
            for (size_t o = 0; o < E; o++)
                CHECK(Hd[2 * j * E + o] == B(prev, j * E + o) && Hd[(2 * j + 1) * E + o] == 0,
                      "%s iput: element %zu", name, j);
        memset(loc, 0, sizeof loc);
        iget(loc, Hs, 1, 2, 4, next); /* local element j = source element 2j */
        for (size_t j = 0; j < 4; j++)
            for (size_t o = 0; o < E; o++)
                CHECK(loc[j * E + o] == B(next, 2 * j * E + o), "%s iget: element %zu", name, j);
        SYNC();
        memset(Hd, 0, n);
        SYNC();
        ibput(Hd, Hs, 4, 2, 2, 2, next); /* dest 0,1,4,5 = source 0,1,2,3 */
        SYNC();
        static const int dmap[4] = {0, 1, 4, 5};
        for (size_t j = 0; j < 4; j++)
            for (size_t o = 0; o < E; o++)
                CHECK(Hd[dmap[j] * E + o] == B(prev, j * E + o), "%s ibput: element %zu", name, j);
        CHECK(Hd[2 * E] == 0 && Hd[6 * E] == 0, "%s ibput wrote between blocks", name);
        ibget(loc, Hs, 2, 4, 2, 2, next); /* local 0,1,2,3 = source 0,1,4,5 */
        for (size_t j = 0; j < 4; j++)
            for (size_t o = 0; o < E; o++)
                CHECK(loc[j * E + o] == B(next, dmap[j] * E + o), "%s ibget: element %zu", name, j);
    }
    SYNC();
    for (size_t k = 0; k < n; k++)
        Hs[k] = B(t_me + 3, k);
    put_signal(Hd, Hs, 8, sigw, 1, ISHMEM_SIGNAL_ADD, next);
    sig_expect++;
    ishmem_signal_wait_until(sigw, ISHMEM_CMP_EQ, sig_expect);
    for (size_t k = 0; k < n; k++)
        CHECK(Hd[k] == B(prev + 3, k), "%s put_signal: byte %zu", name, k);
    SYNC();
    for (size_t k = 0; k < n; k++)
        Hs[k] = B(t_me + 5, k);
    sig_expect += 1000;
    put_signal_nbi(Hd, Hs, 8, sigw, sig_expect, ISHMEM_SIGNAL_SET, next);
    ishmem_quiet();
    ishmem_signal_wait_until(sigw, ISHMEM_CMP_EQ, sig_expect);
    for (size_t k = 0; k < n; k++)
        CHECK(Hd[k] == B(prev + 5, k), "%s put_signal_nbi: byte %zu", name, k);
    SYNC();
    steps++;
}

/* ------------------------------------------------------------------ AMOs (own word on next) */
#define COV_AMO_STD(TN, T)                                                                  \
    static void cov_amo_std_##TN(T *d) {                                                    \
        ishmem_##TN##_atomic_set(d, (T)3, next);                                            \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)3, "ishmem_" #TN "_atomic_set/fetch"); \
        CHECK(ishmem_##TN##_atomic_swap(d, (T)8, next) == (T)3, "ishmem_" #TN "_atomic_swap"); \
        CHECK(ishmem_##TN##_g(d, next) == (T)8, "ishmem_" #TN "_atomic_swap stored");        \
    }
ISHT_AMO_STD_TYPES(COV_AMO_STD)
#define COV_AMO_STD_NBI(TN, T)                                                              \
    static void cov_amo_std_nbi_##TN(T *d) {                                                \
        T f = (T)0;                                                                         \
        ishmem_##TN##_atomic_set(d, (T)5, next);                                            \
        ishmem_##TN##_atomic_fetch_nbi(&f, d, next);                                        \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)5, "ishmem_" #TN "_atomic_fetch_nbi");                                \
        ishmem_##TN##_atomic_swap_nbi(&f, d, (T)6, next);                                   \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)5 && ishmem_##TN##_atomic_fetch(d, next) == (T)6,                     \
              "ishmem_" #TN "_atomic_swap_nbi");                                            \
    }
ISHT_AMO_STD_NBI_TYPES(COV_AMO_STD_NBI)
#define COV_AMO_EXT(TN, T)                                                                  \
    static void cov_amo_ext_##TN(T *d) {                                                    \
        ishmem_##TN##_atomic_set(d, (T)1, next);                                            \
        CHECK(ishmem_##TN##_atomic_compare_swap(d, (T)1, (T)2, next) == (T)1,               \
              "ishmem_" #TN "_atomic_compare_swap success");                                \
        CHECK(ishmem_##TN##_atomic_compare_swap(d, (T)1, (T)9, next) == (T)2,               \
              "ishmem_" #TN "_atomic_compare_swap failure");                                \
        CHECK(ishmem_##TN##_atomic_fetch_inc(d, next) == (T)2, "ishmem_" #TN "_atomic_fetch_inc"); \
        ishmem_##TN##_atomic_inc(d, next);                                                  \
        CHECK(ishmem_##TN##_atomic_fetch_add(d, (T)6, next) == (T)4,                        \
              "ishmem_" #TN "_atomic_fetch_add");                                           \
        ishmem_##TN##_atomic_add(d, (T)7, next);                                            \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)17, "ishmem_" #TN "_atomic_add");   \
    }
ISHT_AMO_EXT_TYPES(COV_AMO_EXT)
#define COV_AMO_EXT_NBI(TN, T)                                                              \
    static void cov_amo_ext_nbi_##TN(T *d) {                                                \
        T f = (T)0;                                                                         \
        ishmem_##TN##_atomic_set(d, (T)1, next);                                            \
        ishmem_##TN##_atomic_compare_swap_nbi(&f, d, (T)1, (T)4, next);                     \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)1, "ishmem_" #TN "_atomic_compare_swap_nbi");                         \
        ishmem_##TN##_atomic_fetch_inc_nbi(&f, d, next);                                    \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)4, "ishmem_" #TN "_atomic_fetch_inc_nbi");                            \
        ishmem_##TN##_atomic_fetch_add_nbi(&f, d, (T)10, next);                             \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)5 && ishmem_##TN##_atomic_fetch(d, next) == (T)15,                    \
              "ishmem_" #TN "_atomic_fetch_add_nbi");                                       \
    }
ISHT_AMO_EXT_NBI_TYPES(COV_AMO_EXT_NBI)
#define COV_AMO_BIT(TN, T)                                                                  \
    static void cov_amo_bit_##TN(T *d) {                                                    \
        ishmem_##TN##_atomic_set(d, (T)0x0F, next);                                         \
        CHECK(ishmem_##TN##_atomic_fetch_and(d, (T)0x3C, next) == (T)0x0F,                  \
              "ishmem_" #TN "_atomic_fetch_and");                                           \
        ishmem_##TN##_atomic_and(d, (T)0x1C, next);                                         \
        CHECK(ishmem_##TN##_atomic_fetch_or(d, (T)0x40, next) == (T)0x0C,                   \
              "ishmem_" #TN "_atomic_and / fetch_or");                                      \
        ishmem_##TN##_atomic_or(d, (T)0x01, next);                                          \
        CHECK(ishmem_##TN##_atomic_fetch_xor(d, (T)0x4D, next) == (T)0x4D,                  \
              "ishmem_" #TN "_atomic_or / fetch_xor");                                      \
        ishmem_##TN##_atomic_xor(d, (T)0x22, next);                                         \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)0x22, "ishmem_" #TN "_atomic_xor"); \
    }
ISHT_AMO_BIT_TYPES(COV_AMO_BIT)
#define COV_AMO_BIT_NBI(TN, T)                                                              \
    static void cov_amo_bit_nbi_##TN(T *d) {                                                \
        T f = (T)0;                                                                         \
        ishmem_##TN##_atomic_set(d, (T)0x0F, next);                                         \
        ishmem_##TN##_atomic_fetch_and_nbi(&f, d, (T)0x3C, next);                           \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x0F, "ishmem_" #TN "_atomic_fetch_and_nbi");                         \
        ishmem_##TN##_atomic_fetch_or_nbi(&f, d, (T)0x40, next);                            \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x0C, "ishmem_" #TN "_atomic_fetch_or_nbi");                          \
        ishmem_##TN##_atomic_fetch_xor_nbi(&f, d, (T)0x4C, next);                           \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x4C && ishmem_##TN##_atomic_fetch(d, next) == (T)0,                  \
              "ishmem_" #TN "_atomic_fetch_xor_nbi");                                       \
    }
ISHT_AMO_BIT_NBI_TYPES(COV_AMO_BIT_NBI)

/* ------------------------------------------------------------------ point-to-point */
#define COV_P2P(TN, T)                                                                      \
    static void cov_p2p_##TN(void) {                                                        \
        T *iv = (T *)Hd;                                                                    \
        T cv[4] = {(T)1, (T)2, (T)3, (T)4};                                                 \
        int st[4] = {0, 1, 0, 0};                                                           \
        size_t idx[4], any;                                                                 \
        SYNC();                                                                             \
        memset(iv, 0, 4 * sizeof(T));                                                       \
        SYNC();                                                                             \
        for (int i = 0; i < 4; i++)                                                         \
            ishmem_##TN##_atomic_set(&iv[i], (T)(i + 1), next);                             \
        ishmem_##TN##_wait_until(&iv[3], ISHMEM_CMP_EQ, (T)4); /* released by prev */       \
        CHECK(ishmem_##TN##_test(&iv[0], ISHMEM_CMP_EQ, (T)1) == 1, "ishmem_" #TN "_test"); \
        CHECK(ishmem_##TN##_test(&iv[0], ISHMEM_CMP_GT, (T)1) == 0, "ishmem_" #TN "_test 0"); \
        CHECK(ishmem_##TN##_test_all(iv, 4, NULL, ISHMEM_CMP_GE, (T)1) == 1,                \
              "ishmem_" #TN "_test_all");                                                   \
        CHECK(ishmem_##TN##_test_all(iv, 4, NULL, ISHMEM_CMP_GE, (T)2) == 0,                \
              "ishmem_" #TN "_test_all 0");                                                 \
        /* (any satisfying index: 2 or 3; p2p.c checks the fair order) */                    \
        any = ishmem_##TN##_test_any(iv, 4, st, ISHMEM_CMP_GE, (T)2);                       \
        CHECK(any == 2 || any == 3, "ishmem_" #TN "_test_any: %zu", any);                   \
        CHECK(ishmem_##TN##_test_some(iv, 4, idx, st, ISHMEM_CMP_GE, (T)2) == 2 &&          \
                  idx[0] + idx[1] == 5,                                                     \
              "ishmem_" #TN "_test_some");                                                  \
        CHECK(ishmem_##TN##_test_all_vector(iv, 4, NULL, ISHMEM_CMP_EQ, cv) == 1,           \
              "ishmem_" #TN "_test_all_vector");                                            \
        CHECK(ishmem_##TN##_test_any_vector(iv, 4, NULL, ISHMEM_CMP_NE, cv) == SIZE_MAX,    \
              "ishmem_" #TN "_test_any_vector");                                            \
        CHECK(ishmem_##TN##_test_some_vector(iv, 4, idx, st, ISHMEM_CMP_LE, cv) == 3,       \
              "ishmem_" #TN "_test_some_vector");                                           \
        ishmem_##TN##_wait_until_all(iv, 4, st, ISHMEM_CMP_GT, (T)0);                       \
        any = ishmem_##TN##_wait_until_any(iv, 4, st, ISHMEM_CMP_GT, (T)2);                 \
        CHECK(any == 2 || any == 3, "ishmem_" #TN "_wait_until_any: %zu", any);             \
        CHECK(ishmem_##TN##_wait_until_some(iv, 4, idx, NULL, ISHMEM_CMP_LT, (T)2) == 1 &&  \
                  idx[0] == 0,                                                              \
              "ishmem_" #TN "_wait_until_some");                                            \
        ishmem_##TN##_wait_until_all_vector(iv, 4, NULL, ISHMEM_CMP_EQ, cv);                \
        any = ishmem_##TN##_wait_until_any_vector(iv, 4, st, ISHMEM_CMP_GE, cv);            \
        CHECK(any == 0 || any == 2 || any == 3, "ishmem_" #TN "_wait_until_any_vector: %zu", any); \
        CHECK(ishmem_##TN##_wait_until_some_vector(iv, 4, idx, st, ISHMEM_CMP_EQ, cv) == 3, \
              "ishmem_" #TN "_wait_until_some_vector");                                     \
        SYNC();                                                                             \
        steps++;                                                                            \
    }
ISHT_P2P_TYPES(COV_P2P)

/* ------------------------------------------------------------------ collectives, typed */
/* PE p contributes element i = p + i + 1 (prod: PE 0 gives i + 2, the others 1) */
#define COV_COLL(TN, T)                                                                     \
    static void cov_coll_##TN(void) {                                                       \
        T *d = (T *)Hd, *s = (T *)Hs;                                                       \
        int n = t_npes, me = t_me;                                                          \
        for (int i = 0; i < 2 * n + 4; i++)                                                 \
            s[i] = (T)(me + i + 1);                                                         \
        CHECK_EQ(ishmem_##TN##_broadcast(ISHMEM_TEAM_WORLD, d, s, 3, n - 1), 0);            \
        for (int i = 0; i < 3; i++)                                                         \
            CHECK(d[i] == (T)(n - 1 + i + 1), "ishmem_" #TN "_broadcast [%d]", i);          \
        CHECK_EQ(ishmem_##TN##_fcollect(d, s, 2), 0);                                       \
        for (int p = 0; p < n; p++)                                                         \
            CHECK(d[2 * p] == (T)(p + 1) && d[2 * p + 1] == (T)(p + 2),                     \
                  "ishmem_" #TN "_fcollect block %d", p);                                   \
        CHECK_EQ(ishmem_##TN##_collect(ISHMEM_TEAM_WORLD, d, s, 1), 0);                     \
        for (int p = 0; p < n; p++)                                                         \
            CHECK(d[p] == (T)(p + 1), "ishmem_" #TN "_collect [%d]", p);                    \
        CHECK_EQ(ishmem_##TN##_alltoall(d, s, 1), 0);                                       \
        for (int p = 0; p < n; p++)                                                         \
            CHECK(d[p] == (T)(p + me + 1), "ishmem_" #TN "_alltoall [%d]: got %lld", p, (long long)d[p]);              \
        /* strided: PE p's element for me is s[2 * me], placed at d[3 * p] */               \
        CHECK_EQ(ishmem_##TN##_alltoalls(ISHMEM_TEAM_WORLD, d, s, 3, 2, 1), 0);             \
        for (int p = 0; p < n; p++)                                                         \
            CHECK(d[3 * p] == (T)(p + 2 * me + 1), "ishmem_" #TN "_alltoalls [%d]", p);     \
        CHECK_EQ(ishmem_##TN##_sum_reduce(ISHMEM_TEAM_WORLD, d, s, 2), 0);                  \
        CHECK(d[1] == (T)(n * (n - 1) / 2 + 2 * n), "ishmem_" #TN "_sum_reduce: got %lld", (long long)d[1]);           \
        CHECK_EQ(ishmem_##TN##_min_reduce(d, s, 2), 0);                                     \
        CHECK(d[0] == (T)1 && d[1] == (T)2, "ishmem_" #TN "_min_reduce: got %lld %lld", (long long)d[0], (long long)d[1]);                   \
        CHECK_EQ(ishmem_##TN##_max_reduce(ISHMEM_TEAM_WORLD, d, s, 2), 0);                  \
        CHECK(d[0] == (T)n && d[1] == (T)(n + 1), "ishmem_" #TN "_max_reduce: got %lld %lld", (long long)d[0], (long long)d[1]);             \
        CHECK_EQ(ishmem_##TN##_sum_inscan(ISHMEM_TEAM_WORLD, d, s, 2), 0);                  \
        CHECK(d[0] == (T)((me + 1) * (me + 2) / 2), "ishmem_" #TN "_sum_inscan: got %lld", (long long)d[0]);           \
        CHECK_EQ(ishmem_##TN##_sum_exscan(d, s, 2), 0);                                     \
        CHECK(d[0] == (T)(me * (me + 1) / 2), "ishmem_" #TN "_sum_exscan: got %lld", (long long)d[0]);                 \
        for (int i = 0; i < 2; i++)                                                         \
            s[i] = (T)(me == 0 ? i + 2 : 1);                                                \
        CHECK_EQ(ishmem_##TN##_prod_reduce(ISHMEM_TEAM_WORLD, d, s, 2), 0);                 \
        CHECK(d[0] == (T)2 && d[1] == (T)3, "ishmem_" #TN "_prod_reduce: got %lld %lld", (long long)d[0], (long long)d[1]);                  \
        steps++;                                                                            \
    }
ISHT_COLL_TYPES(COV_COLL)
#define COV_RBIT(TN, T)                                                                     \
    static void cov_rbit_##TN(void) {                                                       \
        T *d = (T *)Hd, *s = (T *)Hs;                                                       \
        s[0] = (T)(1u << (t_me % 7));                                                       \
        s[1] = (T)(0x70 | t_me);                                                            \
        unsigned a0 = 0x7F, a1 = 0x7F, o0 = 0, o1 = 0, x0 = 0, x1 = 0;                      \
        for (int p = 0; p < t_npes; p++) {                                                  \
            unsigned b0 = 1u << (p % 7), b1 = 0x70u | (unsigned)p;                          \
            a0 &= b0, a1 &= b1, o0 |= b0, o1 |= b1, x0 ^= b0, x1 ^= b1;                     \
        }                                                                                   \
        CHECK_EQ(ishmem_##TN##_and_reduce(ISHMEM_TEAM_WORLD, d, s, 2), 0);                  \
        CHECK(d[0] == (T)a0 && d[1] == (T)a1, "ishmem_" #TN "_and_reduce: got %lld %lld, want %lld %lld", (long long)d[0], (long long)d[1], (long long)(T)a0, (long long)(T)a1);                 \
        CHECK_EQ(ishmem_##TN##_or_reduce(d, s, 2), 0);                                      \
        CHECK(d[0] == (T)o0 && d[1] == (T)o1, "ishmem_" #TN "_or_reduce: got %lld %lld, want %lld %lld", (long long)d[0], (long long)d[1], (long long)(T)o0, (long long)(T)o1);                  \
        CHECK_EQ(ishmem_##TN##_xor_reduce(ISHMEM_TEAM_WORLD, d, s, 2), 0);                  \
        CHECK(d[0] == (T)x0 && d[1] == (T)x1, "ishmem_" #TN "_xor_reduce: got %lld %lld, want %lld %lld", (long long)d[0], (long long)d[1], (long long)(T)x0, (long long)(T)x1);                 \
    }
ISHT_REDUCE_BIT_TYPES(COV_RBIT)

/* ------------------------------------------------------------------ teams, mem collectives */
static void cov_teams(void) {
    int n = t_npes, me = t_me;
    CHECK_EQ(ishmem_team_my_pe(ISHMEM_TEAM_WORLD), me);
    int node_n = 0;
    for (int pe = 0; pe < n; pe++)
        node_n += t_same_node(pe);
    CHECK_EQ(ishmem_team_n_pes(ISHMEM_TEAM_SHARED), node_n);
    ishmem_team_t odd = 99, x = 99, y = 99;
    ishmem_team_config_t cfg = {2};
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, n > 1, 2, n / 2 > 0 ? n / 2 : 1, &cfg,
                                       ISHMEM_TEAM_NUM_CONTEXTS, &odd),
             0);
    if (n == 1 || me % 2) {
        /* odd's PE 0 is world PE 1 (or 0 alone): its index in this PE's node team */
        int w0 = n > 1;
        int want = -1;
        if (t_same_node(w0)) {
            want = 0;
            for (int pe = 0; pe < w0; pe++)
                want += t_same_node(pe);
        }
        CHECK_EQ(ishmem_team_translate_pe(odd, 0, ISHMEMX_TEAM_NODE), want);
        ishmem_team_config_t got = {0};
        CHECK_EQ(ishmem_team_get_config(odd, ISHMEM_TEAM_NUM_CONTEXTS, &got), 0);
        CHECK_EQ(got.num_contexts, 2);
        CHECK_EQ(ishmem_team_sync(odd), 0);
        ishmem_team_destroy(odd);
    } else {
        CHECK_EQ(odd, ISHMEM_TEAM_INVALID);
    }
    CHECK_EQ(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, 2, NULL, 0, &x, NULL, 0, &y), 0);
    CHECK_EQ(ishmem_team_my_pe(x), me % 2);
    CHECK_EQ(ishmem_team_my_pe(y), me / 2);
    ishmem_team_destroy(x);
    ishmem_team_destroy(y);
    /* the mem forms, with and without the team */
    for (int i = 0; i < 2 * n + 8; i++)
        Hs[i] = B(me, (size_t)i);
    CHECK_EQ(ishmem_broadcastmem(ISHMEM_TEAM_WORLD, Hd, Hs, 5, 0), 0);
    CHECK(Hd[4] == B(0, 4), "ishmem_broadcastmem");
    CHECK_EQ(ishmem_fcollectmem(Hd, Hs, 2), 0);
    CHECK(Hd[2 * (n - 1) + 1] == B(n - 1, 1), "ishmem_fcollectmem");
    CHECK_EQ(ishmem_collectmem(ISHMEM_TEAM_WORLD, Hd, Hs, 1), 0);
    CHECK(Hd[n - 1] == B(n - 1, 0), "ishmem_collectmem");
    CHECK_EQ(ishmem_alltoallmem(Hd, Hs, 2), 0);
    CHECK(Hd[0] == B(0, 2 * (size_t)me) && Hd[1] == B(0, 2 * (size_t)me + 1), "ishmem_alltoallmem");
    /* strided bytes: PE p's byte for me is Hs[3 * me], placed at Hd[2 * p] */
    CHECK_EQ(ishmem_alltoallsmem(ISHMEM_TEAM_WORLD, Hd, Hs, 2, 3, 1), 0);
    for (int p = 0; p < n; p++)
        CHECK(Hd[2 * p] == B(p, 3 * (size_t)me), "ishmem_alltoallsmem [%d]", p);
    CHECK_EQ(ishmem_team_sync(ISHMEM_TEAM_WORLD), 0);
    /* OpenSHMEM 1.5 additions (oshmem15.c checks them fully) */
    CHECK_EQ(ishmem_sync(ISHMEM_TEAM_WORLD), 0);
    CHECK_EQ(ishmem_pe_accessible(t_npes - 1), 1);
    CHECK_EQ(ishmem_pe_accessible(t_npes), 0);
    CHECK_EQ(ishmem_addr_accessible(&t_me, 0), 1); /* a global: symmetric */
    /* locks, pe_quiet, team_ptr, pcontrol (osh25.c checks them fully) */
    ishmem_set_lock(&cov_lock);
    cov_locked++;
    ishmem_clear_lock(&cov_lock);
    ishmem_barrier_all();
    if (t_me == 0) {
        CHECK_EQ(ishmem_test_lock(&cov_lock), 0); /* free after the barrier: taken */
        ishmem_clear_lock(&cov_lock);
    }
    CHECK_EQ(cov_locked, 1);
    int next = (t_me + 1) % t_npes;
    Hd[0] = 0;
    ishmem_barrier_all();
    ishmem_uint8_p((uint8_t *)Hd, 7, next);
    ishmem_pe_quiet(&next, 1);
    ishmem_barrier_all();
    CHECK(Hd[0] == 7, "ishmem_pe_quiet: the put before it arrived");
    CHECK(ishmem_team_ptr(ISHMEM_TEAM_WORLD, Hd, t_me) == (void *)Hd, "ishmem_team_ptr to this PE");
    CHECK(ishmem_team_ptr(ISHMEM_TEAM_INVALID, Hd, t_me) == NULL, "ishmem_team_ptr of the invalid team");
    ishmem_pcontrol(1);
}

/* ------------------------------------------------------------------ main */
static long g_word;

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "init";
    /* GPU extensions before init: no GPU in use, no device; a NULL binder is ignored */
    int gpu_before = ishmemx_gpu_in_use();
    int dev_before = ishmemx_gpu_device();
    ishmemx_cuda_register_binder(NULL);
    int major = 0, minor = 0;
    ishmem_info_get_version(&major, &minor);
    if (!strcmp(mode, "init")) {
        ishmem_init();
    } else if (!strcmp(mode, "thread")) {
        int provided = -1;
        int rc = ishmem_init_thread(ISHMEM_THREAD_SERIALIZED, &provided);
        if (rc != 0 || provided != ISHMEM_THREAD_SERIALIZED) {
            fprintf(stderr, "FAIL: ishmem_init_thread: rc %d provided %d\n", rc, provided);
            return 1;
        }
    } else if (!strcmp(mode, "attr")) {
        ishmemx_attr_t a = ISHMEMX_ATTR_INITIALIZER;
        ishmemx_init_attr(&a);
    } else {
        fprintf(stderr, "FAIL: unknown mode %s\n", mode);
        return 2;
    }
    test_init_ids();
    CHECK(major == 1 && minor == 5, "ishmem_info_get_version: %d.%d", major, minor);
    int inited = 0;
    ishmemx_query_initialized(&inited);
    CHECK_EQ(inited, 1);
    int level = -1;
    ishmem_query_thread(&level);
    CHECK_EQ(level, strcmp(mode, "thread") ? ISHMEM_THREAD_MULTIPLE : ISHMEM_THREAD_SERIALIZED);
    int rt = ishmemx_runtime_get_type();
    CHECK(rt == ISHMEMX_RUNTIME_ISHMRUN || rt == ISHMEMX_RUNTIME_PMIX || rt == ISHMEMX_RUNTIME_PMI ||
              rt == ISHMEMX_RUNTIME_SINGLETON,
          "ishmemx_runtime_get_type = %d", rt);
    char name[ISHMEM_MAX_NAME_LEN];
    ishmem_info_get_name(name);
    CHECK(!strcmp(name, ISHMEM_VENDOR_STRING), "ishmem_info_get_name: %s", name);
    ishmemx_uniqueid_t uid;
    memset(&uid, 0, sizeof uid);
    CHECK_EQ(ishmemx_get_uniqueid(&uid), 0);
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;

    /* GPU extensions: the CPU backend (no GPU) gives 0 / -1; a GPU backend a device >= 0.
     * ishmemx_cumodule_init(NULL) reports an error and returns nonzero. */
    CHECK_EQ(gpu_before, 0);
    CHECK_EQ(dev_before, -1);
    int gpu = ishmemx_gpu_in_use();
    int dev = ishmemx_gpu_device();
    CHECK(gpu == 0 || gpu == 1, "ishmemx_gpu_in_use = %d", gpu);
    CHECK(gpu ? dev >= 0 : dev == -1, "ishmemx_gpu_device = %d with gpu_in_use = %d", dev, gpu);
    CHECK(ishmemx_cumodule_init(NULL) != 0, "ishmemx_cumodule_init(NULL) returned 0");

    /* debugging extensions (tests/c/ext.c checks them in detail): a DEBUG message prints
     * nothing without ISHMEM_DEBUG; the stamps are nanoseconds of CLOCK_REALTIME */
    ishmemx_print(__FILE__, __LINE__, __func__, "coverage", ISHMEMX_PRINT_DEBUG);
    unsigned long ts[2] = {0, 0};
    ishmemx_timestamp(ishmemx_ts_handle(&ts[0]));
    ishmemx_timestamp_nbi(ishmemx_ts_handle(&ts[1]));
    CHECK(ts[0] > 0 && ts[1] >= ts[0], "timestamps %lu %lu", ts[0], ts[1]);
    ishmemx_nop();
    ishmemx_nop_no_r();

    /* memory */
    Hd = ishmem_align(64, 4096);
    Hs = ishmem_malloc(4096);
    sigw = ishmem_calloc(1, sizeof(uint64_t));
    CHECK(Hd && Hs && sigw, "allocation");
    CHECK(((uintptr_t)Hd & 63) == 0, "ishmem_align(64)");
    CHECK(*sigw == 0, "ishmem_calloc zeroes");
    CHECK((ishmem_ptr(Hd, next) != NULL) == (ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, next, ISHMEM_TEAM_SHARED) >= 0),
          "ishmem_ptr: mapped exactly for the PEs of this node");
    CHECK(ishmem_ptr(&level, next) == NULL, "ishmem_ptr of a stack address");

#define CALL_RMA(TN, T) cov_rma_##TN();
    ISHT_RMA_TYPES(CALL_RMA)
#define CALL_SIZE(BITS)                                                                     \
    cov_bytes("size" #BITS, BITS / 8, ishmem_put##BITS, ishmem_get##BITS,                   \
              ishmem_put##BITS##_nbi, ishmem_get##BITS##_nbi, ishmem_iput##BITS,             \
              ishmem_iget##BITS, ishmemx_ibput##BITS, ishmemx_ibget##BITS,                   \
              ishmem_put##BITS##_signal, ishmem_put##BITS##_signal_nbi);
    ISHT_SIZES(CALL_SIZE)
    cov_bytes("mem", 1, ishmem_putmem, ishmem_getmem, ishmem_putmem_nbi, ishmem_getmem_nbi, NULL,
              NULL, NULL, NULL, ishmem_putmem_signal, ishmem_putmem_signal_nbi);

    SYNC();
    memset(Hd, 0, 4096);
    SYNC();
    int s = 0;
#define SLOT(T) ((T *)(Hd + 16 * (s++ % 256)))
#define CALL_AMO_STD(TN, T) cov_amo_std_##TN(SLOT(T));
#define CALL_AMO_STD_NBI(TN, T) cov_amo_std_nbi_##TN(SLOT(T));
#define CALL_AMO_EXT(TN, T) cov_amo_ext_##TN(SLOT(T));
#define CALL_AMO_EXT_NBI(TN, T) cov_amo_ext_nbi_##TN(SLOT(T));
#define CALL_AMO_BIT(TN, T) cov_amo_bit_##TN(SLOT(T));
#define CALL_AMO_BIT_NBI(TN, T) cov_amo_bit_nbi_##TN(SLOT(T));
    ISHT_AMO_STD_TYPES(CALL_AMO_STD)
    ISHT_AMO_STD_NBI_TYPES(CALL_AMO_STD_NBI)
    ISHT_AMO_EXT_TYPES(CALL_AMO_EXT)
    ISHT_AMO_EXT_NBI_TYPES(CALL_AMO_EXT_NBI)
    ISHT_AMO_BIT_TYPES(CALL_AMO_BIT)
    ISHT_AMO_BIT_NBI_TYPES(CALL_AMO_BIT_NBI)
#define CALL_P2P(TN, T) cov_p2p_##TN();
    ISHT_P2P_TYPES(CALL_P2P)

    /* teams and collectives */
#define CALL_COLL(TN, T) cov_coll_##TN();
#define CALL_RBIT(TN, T) cov_rbit_##TN();
    ISHT_COLL_TYPES(CALL_COLL)
    ISHT_REDUCE_BIT_TYPES(CALL_RBIT)
    cov_teams();

    /* signals, ordering, sync */
    SYNC();
    ishmemx_signal_set(sigw, 40, next);
    ishmem_fence(); /* orders the two updates of one word (none without it) */
    ishmemx_signal_add(sigw, 2, next);
    CHECK_EQ(ishmem_signal_wait_until(sigw, ISHMEM_CMP_EQ, 42), 42);
    CHECK_EQ(ishmem_signal_fetch(sigw), 42);
    ishmem_sync_all();
    ishmem_long_p(&g_word, 1, next);
    ishmem_fence();
    ishmem_long_atomic_add(&g_word, 1, next);
    ishmem_quiet();
    ishmem_barrier_all();
    CHECK_EQ(g_word, 2);
    ishmem_sync_all();

    ishmem_free(sigw);
    ishmem_free(Hs);
    ishmem_free(Hd);
    if (t_me == 0)
        printf("coverage: %d RMA/p2p/collective steps\n", steps);
    /* ishmem_global_exit ends the process (here alone: after finalize) with the status */
    ishmem_global_exit(test_finish("coverage"));
    return 99;
}
