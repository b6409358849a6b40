/* p2p: wait_until, test, and the _all / _any / _some / _vector forms with status masks, for
 * every point-to-point type; all-excluded and empty wait sets; waits released by other PEs. */
#include "test_util.h"
#include "gen_types.h"
#include <unistd.h>

static int next;

static int sorted_eq(const size_t *idx, size_t n, const size_t *want, size_t wn) {
    if (n != wn)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t j = 0; j < wn; j++)
            found |= idx[i] == want[j];
        if (!found)
            return 0;
    }
    return 1;
}

#define P2P_TEST(TN, T)                                                                         \
    static void p2p_##TN(void) {                                                                \
        enum { M = 8 };                                                                         \
        T *iv = ishmem_calloc(M, sizeof(T));                                                    \
        T cv[M];                                                                                \
        size_t idx[M];                                                                          \
        int none[M] = {0}, all[M], st[M];                                                       \
        for (int i = 0; i < M; i++) {                                                           \
            iv[i] = (T)i;                                                                       \
            cv[i] = (T)i;                                                                       \
            all[i] = 1;                                                                         \
        }                                                                                       \
        /* test: each comparison, true and false */                                            \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_EQ, (T)3), 1);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_EQ, (T)4), 0);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_NE, (T)4), 1);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_NE, (T)3), 0);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_GT, (T)2), 1);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_GT, (T)3), 0);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_GE, (T)3), 1);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_GE, (T)4), 0);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_LT, (T)4), 1);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_LT, (T)3), 0);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_LE, (T)3), 1);                           \
        CHECK_EQ(ishmem_##TN##_test(&iv[3], ISHMEM_CMP_LE, (T)2), 0);                           \
        /* _all */                                                                              \
        CHECK_EQ(ishmem_##TN##_test_all(iv, M, NULL, ISHMEM_CMP_GE, (T)0), 1);                  \
        CHECK_EQ(ishmem_##TN##_test_all(iv, M, none, ISHMEM_CMP_GT, (T)0), 0);                  \
        memset(st, 0, sizeof st);                                                               \
        st[0] = 1; /* exclude the 0 */                                                          \
        CHECK_EQ(ishmem_##TN##_test_all(iv, M, st, ISHMEM_CMP_GT, (T)0), 1);                    \
        CHECK_EQ(ishmem_##TN##_test_all(iv, M, all, ISHMEM_CMP_EQ, (T)99), 1);                  \
        CHECK_EQ(ishmem_##TN##_test_all(iv, 0, NULL, ISHMEM_CMP_EQ, (T)99), 1);                 \
        /* _any */                                                                              \
        for (int i = 0; i < M; i++)                                                             \
            st[i] = i < 5;                                                                      \
        CHECK_EQ(ishmem_##TN##_test_any(iv, M, st, ISHMEM_CMP_GE, (T)3), 5);                    \
        CHECK_EQ(ishmem_##TN##_test_any(iv, M, NULL, ISHMEM_CMP_EQ, (T)6), 6);                  \
        CHECK_EQ(ishmem_##TN##_test_any(iv, M, st, ISHMEM_CMP_LT, (T)3), SIZE_MAX);             \
        CHECK_EQ(ishmem_##TN##_test_any(iv, M, all, ISHMEM_CMP_GE, (T)0), SIZE_MAX);            \
        CHECK_EQ(ishmem_##TN##_test_any(iv, 0, NULL, ISHMEM_CMP_GE, (T)0), SIZE_MAX);           \
        /* _some */                                                                             \
        {                                                                                       \
            size_t w1[3] = {5, 6, 7}, w2[2] = {6, 7};                                           \
            size_t k = ishmem_##TN##_test_some(iv, M, idx, NULL, ISHMEM_CMP_GE, (T)5);          \
            CHECK(sorted_eq(idx, k, w1, 3), #TN "_test_some: %zu indices", k);                  \
            st[5] = 1;                                                                          \
            k = ishmem_##TN##_test_some(iv, M, idx, st, ISHMEM_CMP_GE, (T)5);                   \
            CHECK(sorted_eq(idx, k, w2, 2), #TN "_test_some with status: %zu", k);              \
            CHECK_EQ(ishmem_##TN##_test_some(iv, M, idx, all, ISHMEM_CMP_GE, (T)0), 0);         \
            CHECK_EQ(ishmem_##TN##_test_some(iv, M, idx, NULL, ISHMEM_CMP_GT, (T)7), 0);        \
        }                                                                                       \
        /* _vector */                                                                           \
        CHECK_EQ(ishmem_##TN##_test_all_vector(iv, M, NULL, ISHMEM_CMP_EQ, cv), 1);             \
        cv[2] = (T)42;                                                                          \
        CHECK_EQ(ishmem_##TN##_test_all_vector(iv, M, NULL, ISHMEM_CMP_EQ, cv), 0);             \
        memset(st, 0, sizeof st);                                                               \
        st[2] = 1;                                                                              \
        CHECK_EQ(ishmem_##TN##_test_all_vector(iv, M, st, ISHMEM_CMP_EQ, cv), 1);               \
        CHECK_EQ(ishmem_##TN##_test_all_vector(iv, M, all, ISHMEM_CMP_NE, cv), 1);              \
        for (int i = 0; i < M; i++)                                                             \
            cv[i] = (T)(i == 6 ? 6 : 100);                                                      \
        CHECK_EQ(ishmem_##TN##_test_any_vector(iv, M, NULL, ISHMEM_CMP_EQ, cv), 6);             \
        CHECK_EQ(ishmem_##TN##_test_any_vector(iv, M, all, ISHMEM_CMP_LT, cv), SIZE_MAX);       \
        st[6] = 1;                                                                              \
        CHECK_EQ(ishmem_##TN##_test_any_vector(iv, M, st, ISHMEM_CMP_EQ, cv), SIZE_MAX);        \
        {                                                                                       \
            size_t w[2] = {1, 4};                                                               \
            for (int i = 0; i < M; i++)                                                         \
                cv[i] = (T)(i == 1 || i == 4 ? i : i + 1);                                      \
            size_t k = ishmem_##TN##_test_some_vector(iv, M, idx, NULL, ISHMEM_CMP_EQ, cv);     \
            CHECK(sorted_eq(idx, k, w, 2), #TN "_test_some_vector: %zu", k);                    \
            CHECK_EQ(ishmem_##TN##_test_some_vector(iv, M, idx, all, ISHMEM_CMP_EQ, cv), 0);    \
            /* wait_until forms whose condition already holds */                                \
            ishmem_##TN##_wait_until(&iv[2], ISHMEM_CMP_EQ, (T)2);                              \
            ishmem_##TN##_wait_until_all(iv, M, NULL, ISHMEM_CMP_LT, (T)8);                     \
            ishmem_##TN##_wait_until_all(iv, M, all, ISHMEM_CMP_GT, (T)100); /* empty set */    \
            CHECK_EQ(ishmem_##TN##_wait_until_any(iv, M, st, ISHMEM_CMP_GE, (T)7), 7);          \
            CHECK_EQ(ishmem_##TN##_wait_until_any(iv, M, all, ISHMEM_CMP_GE, (T)0), SIZE_MAX);  \
            CHECK_EQ(ishmem_##TN##_wait_until_any(iv, 0, NULL, ISHMEM_CMP_GE, (T)0), SIZE_MAX); \
            k = ishmem_##TN##_wait_until_some(iv, M, idx, NULL, ISHMEM_CMP_LE, (T)0);           \
            CHECK(k == 1 && idx[0] == 0, #TN "_wait_until_some: %zu", k);                       \
            CHECK_EQ(ishmem_##TN##_wait_until_some(iv, M, idx, all, ISHMEM_CMP_GE, (T)0), 0);   \
            ishmem_##TN##_wait_until_all_vector(iv, M, all, ISHMEM_CMP_EQ, cv);                 \
            memset(st, 0, sizeof st);                                                           \
            st[0] = st[2] = st[3] = st[5] = st[6] = st[7] = 1;                                  \
            ishmem_##TN##_wait_until_all_vector(iv, M, st, ISHMEM_CMP_EQ, cv);                  \
            CHECK_EQ(ishmem_##TN##_wait_until_any_vector(iv, M, NULL, ISHMEM_CMP_EQ, cv), 1);   \
            CHECK_EQ(ishmem_##TN##_wait_until_any_vector(iv, M, all, ISHMEM_CMP_EQ, cv),        \
                     SIZE_MAX);                                                                 \
            k = ishmem_##TN##_wait_until_some_vector(iv, M, idx, NULL, ISHMEM_CMP_EQ, cv);      \
            CHECK(sorted_eq(idx, k, w, 2), #TN "_wait_until_some_vector: %zu", k);              \
            CHECK_EQ(ishmem_##TN##_wait_until_some_vector(iv, M, idx, all, ISHMEM_CMP_EQ, cv),  \
                     0);                                                                        \
        }                                                                                       \
        /* Waits released by the previous PE. */                                               \
        ishmem_barrier_all();                                                                   \
        memset(iv, 0, sizeof(T) * M);                                                           \
        ishmem_barrier_all();                                                                   \
        /* writer side: into next's ivars */                                                   \
        ishmem_##TN##_atomic_set(&iv[2], (T)9, next);                                           \
        usleep(2000);                                                                           \
        ishmem_##TN##_atomic_set(&iv[5], (T)9, next);                                           \
        /* waiter side, status excludes index 2 */                                             \
        memset(st, 0, sizeof st);                                                               \
        st[2] = 1;                                                                              \
        CHECK_EQ(ishmem_##TN##_wait_until_any(iv, M, st, ISHMEM_CMP_EQ, (T)9), 5);              \
        ishmem_##TN##_wait_until(&iv[5], ISHMEM_CMP_EQ, (T)9);                                  \
        ishmem_barrier_all();                                                                   \
        for (int i = 0; i < M; i++)                                                             \
            ishmem_##TN##_p(&iv[i], (T)(i + 1), next);                                          \
        ishmem_##TN##_wait_until_all(iv, M, NULL, ISHMEM_CMP_GT, (T)0);                         \
        for (int i = 0; i < M; i++)                                                             \
            CHECK(iv[i] == (T)(i + 1), #TN ": wait_until_all released early at %d", i);         \
        ishmem_barrier_all();                                                                   \
        ishmem_##TN##_atomic_add(&iv[7], (T)10, next);                                          \
        {                                                                                       \
            size_t k = ishmem_##TN##_wait_until_some(iv, M, idx, NULL, ISHMEM_CMP_GT, (T)8);    \
            CHECK(k == 1 && idx[0] == 7, #TN "_wait_until_some released: %zu", k);              \
        }                                                                                       \
        ishmem_barrier_all();                                                                   \
        for (int i = 0; i < M; i++)                                                             \
            cv[i] = (T)(3 * i);                                                                 \
        ishmem_##TN##_atomic_set(&iv[3], (T)9, next);                                           \
        ishmem_##TN##_wait_until_any_vector(iv, M, NULL, ISHMEM_CMP_EQ, cv);                    \
        ishmem_##TN##_atomic_set(&iv[4], (T)12, next);                                          \
        memset(st, 0, sizeof st);                                                               \
        st[0] = st[1] = st[2] = st[5] = st[6] = st[7] = 1;                                      \
        ishmem_##TN##_wait_until_all_vector(iv, M, st, ISHMEM_CMP_EQ, cv);                      \
        CHECK(iv[3] == (T)9 && iv[4] == (T)12, #TN ": vector waits");                           \
        ishmem_barrier_all();                                                                   \
        ishmem_free(iv);                                                                        \
    }
ISHT_P2P_TYPES(P2P_TEST)

/* test_any / wait_until_any and their _vector forms are fair (issue 14): called again and
 * again while several ivars satisfy the condition, they return each of them in turn (the
 * scan starts after the index returned last time, per array), so a program that waits to
 * see every index without a status mask ends. They used to return the first one for ever. */
static unsigned fair_seen(size_t (*next_index)(int *, size_t, int *), int *iv, size_t n, int *cv) {
    unsigned mask = 0;
    size_t last = SIZE_MAX;
    for (size_t call = 0; call < 2 * n; call++) {
        size_t i = next_index(iv, n, cv);
        CHECK(i < n, "call %zu returned %zu", call, i);
        if (i >= n)
            break;
        CHECK(i != last || n == 1, "call %zu returned index %zu again while others hold", call, i);
        last = i;
        mask |= 1u << i;
    }
    return mask;
}
static size_t fair_test_any(int *iv, size_t n, int *cv) {
    (void)cv;
    return ishmem_int_test_any(iv, n, NULL, ISHMEM_CMP_EQ, 1);
}
static size_t fair_wait_any(int *iv, size_t n, int *cv) {
    (void)cv;
    return ishmem_int_wait_until_any(iv, n, NULL, ISHMEM_CMP_GE, 1);
}
static size_t fair_test_any_vector(int *iv, size_t n, int *cv) {
    return ishmem_int_test_any_vector(iv, n, NULL, ISHMEM_CMP_EQ, cv);
}
static size_t fair_wait_any_vector(int *iv, size_t n, int *cv) {
    return ishmem_int_wait_until_any_vector(iv, n, NULL, ISHMEM_CMP_EQ, cv);
}
static size_t fair_generic_test_any(int *iv, size_t n, int *cv) {
    (void)cv;
    return ishmem_test_any(iv, n, NULL, ISHMEM_CMP_NE, 0);
}

static void fair_any(void) {
    enum { M = 6 };
    const unsigned all = (1u << M) - 1;
    int *iv[5];
    int cv[M];
    for (int a = 0; a < 5; a++) {
        iv[a] = ishmem_malloc(M * sizeof(int));
        for (int i = 0; i < M; i++)
            iv[a][i] = 1;
    }
    for (int i = 0; i < M; i++)
        cv[i] = 1;
    /* every index in turn: i, i+1, ..., wrapping around */
    size_t first = ishmem_int_test_any(iv[0], M, NULL, ISHMEM_CMP_EQ, 1);
    CHECK(first < M, "test_any returned %zu", first);
    for (size_t c = 1; c <= M; c++)
        CHECK_EQ(ishmem_int_test_any(iv[0], M, NULL, ISHMEM_CMP_EQ, 1), (first + c) % M);
    CHECK_EQ(fair_seen(fair_test_any, iv[0], M, cv), all);
    CHECK_EQ(fair_seen(fair_wait_any, iv[1], M, cv), all);
    CHECK_EQ(fair_seen(fair_test_any_vector, iv[2], M, cv), all);
    CHECK_EQ(fair_seen(fair_wait_any_vector, iv[3], M, cv), all);
    CHECK_EQ(fair_seen(fair_generic_test_any, iv[4], M, cv), all);
    /* with a status mask, the excluded indices never come back; the others alternate */
    int st[M] = {1, 0, 1, 1, 0, 1};
    size_t r = ishmem_int_test_any(iv[1], M, st, ISHMEM_CMP_EQ, 1);
    CHECK(r == 1 || r == 4, "test_any with status returned %zu", r);
    for (int c = 0; c < 4; c++) {
        size_t other = r == 1 ? 4 : 1;
        r = ishmem_int_test_any(iv[1], M, st, ISHMEM_CMP_EQ, 1);
        CHECK_EQ(r, other);
    }
    /* only one holds: always that one */
    iv[2][0] = iv[2][1] = iv[2][2] = iv[2][4] = iv[2][5] = 0;
    for (int c = 0; c < 3; c++)
        CHECK_EQ(ishmem_int_wait_until_any(iv[2], M, NULL, ISHMEM_CMP_EQ, 1), 3);
    for (int a = 0; a < 5; a++)
        ishmem_free(iv[a]);

    /* the pattern of the specification's example: every PE sets its ivar on PE 0, which
     * polls test_any (no status mask) until it has seen them all */
    int *flags = ishmem_calloc((size_t)t_npes, sizeof(int));
    ishmem_int_atomic_set(&flags[t_me], 1, 0);
    ishmem_barrier_all();
    if (t_me == 0) {
        unsigned long long seen = 0, want = t_npes >= 64 ? ~0ull : (1ull << t_npes) - 1;
        for (int call = 0; call < 4 * t_npes && seen != want; call++) {
            size_t i = ishmem_int_test_any(flags, (size_t)t_npes, NULL, ISHMEM_CMP_EQ, 1);
            if (i < (size_t)t_npes)
                seen |= 1ull << i;
        }
        CHECK(seen == want, "PE 0 saw the ivars %#llx of %d PEs (want %#llx)", seen, t_npes, want);
    }
    ishmem_barrier_all();
    ishmem_free(flags);
}

/* A global as the waited-on variable, released by a put from PE 0 (a flag after data). */
static long g_flag;
static long g_data[32];

int main(void) {
    test_init();
    next = (t_me + 1) % t_npes;
#define CALL(TN, T) p2p_##TN();
    ISHT_P2P_TYPES(CALL)
    fair_any();

    ishmem_barrier_all();
    if (t_me == 0) {
        long d[32];
        for (int i = 0; i < 32; i++)
            d[i] = 5 * i;
        for (int pe = 0; pe < t_npes; pe++) {
            ishmem_long_put(g_data, d, 32, pe);
            ishmem_fence();
            ishmem_long_p(&g_flag, 1, pe);
        }
    }
    ishmem_long_wait_until(&g_flag, ISHMEM_CMP_EQ, 1);
    for (int i = 0; i < 32; i++)
        CHECK(g_data[i] == 5 * i, "data before flag: g_data[%d] = %ld", i, g_data[i]);

    /* PE 0 waits for a counter that every other PE increments (AMOs from many PEs). */
    ishmem_barrier_all();
    uint64_t *cnt = ishmem_calloc(1, sizeof(uint64_t));
    ishmem_barrier_all();
    if (t_me != 0)
        for (int i = 0; i < 100; i++)
            ishmem_uint64_atomic_inc(cnt, 0);
    if (t_me == 0) {
        ishmem_uint64_wait_until(cnt, ISHMEM_CMP_GE, (uint64_t)(t_npes - 1) * 100);
        CHECK_EQ(*cnt, (uint64_t)(t_npes - 1) * 100);
        CHECK_EQ(ishmem_uint64_test(cnt, ISHMEM_CMP_GT, (uint64_t)(t_npes - 1) * 100), 0);
    }
    ishmem_barrier_all();
    ishmem_free(cnt);
    return test_finish("p2p");
}
