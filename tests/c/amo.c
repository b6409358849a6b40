/* amo: every atomic operation for every AMO type (fetch, set, swap, compare_swap, fetch_inc,
 * inc, fetch_add, add, fetch_and/or/xor, and/or/xor, and the nbi forms), on the heap and on
 * globals; concurrent fetch_add / fetch_inc / compare_swap from all PEs to PE 0. */
#include "test_util.h"
#include "gen_types.h"

static int next;

/* Every PE owns the AMO target words on PE next (slot of its own type), so results are
 * deterministic without barriers. */
static unsigned char *area; /* symmetric, 16 bytes per type */

#define STD_TEST(TN, T)                                                                     \
    static void std_##TN(T *d) {                                                            \
        ishmem_##TN##_atomic_set(d, (T)5, next);                                            \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)5, #TN "_atomic_set/fetch");        \
        T old = ishmem_##TN##_atomic_swap(d, (T)9, next);                                   \
        CHECK(old == (T)5, #TN "_atomic_swap returned the old value");                     \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)9, #TN "_atomic_swap stored");      \
        CHECK(ishmem_##TN##_g(d, next) == (T)9, #TN ": g after swap");                      \
    }
ISHT_AMO_STD_TYPES(STD_TEST)

#define STD_NBI_TEST(TN, T)                                                                 \
    static void std_nbi_##TN(T *d) {                                                        \
        T f = (T)0;                                                                         \
        ishmem_##TN##_atomic_set(d, (T)3, next);                                            \
        ishmem_##TN##_atomic_fetch_nbi(&f, d, next);                                        \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)3, #TN "_atomic_fetch_nbi");                                          \
        ishmem_##TN##_atomic_swap_nbi(&f, d, (T)12, next);                                  \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)3, #TN "_atomic_swap_nbi fetched");                                   \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)12, #TN "_atomic_swap_nbi stored"); \
    }
ISHT_AMO_STD_NBI_TYPES(STD_NBI_TEST)

#define EXT_TEST(TN, T)                                                                     \
    static void ext_##TN(T *d) {                                                            \
        ishmem_##TN##_atomic_set(d, (T)10, next);                                           \
        T r = ishmem_##TN##_atomic_compare_swap(d, (T)10, (T)20, next);                     \
        CHECK(r == (T)10, #TN "_atomic_compare_swap success returned old");                 \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)20, #TN ": cswap success stored");  \
        r = ishmem_##TN##_atomic_compare_swap(d, (T)10, (T)30, next);                       \
        CHECK(r == (T)20, #TN "_atomic_compare_swap failure returned current");             \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)20, #TN ": cswap failure changed"); \
        r = ishmem_##TN##_atomic_fetch_inc(d, next);                                        \
        CHECK(r == (T)20, #TN "_atomic_fetch_inc returned");                                \
        ishmem_##TN##_atomic_inc(d, next);                                                  \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)22, #TN "_atomic_inc");             \
        r = ishmem_##TN##_atomic_fetch_add(d, (T)7, next);                                  \
        CHECK(r == (T)22, #TN "_atomic_fetch_add returned");                                \
        ishmem_##TN##_atomic_add(d, (T)-3, next);                                           \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)26, #TN "_atomic_add");             \
        /* wrap-around of unsigned / two's complement types */                             \
        ishmem_##TN##_atomic_set(d, (T)-1, next);                                           \
        ishmem_##TN##_atomic_inc(d, next);                                                  \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)0, #TN ": inc wraps -1 to 0");      \
    }
ISHT_AMO_EXT_TYPES(EXT_TEST)

#define EXT_NBI_TEST(TN, T)                                                                 \
    static void ext_nbi_##TN(T *d) {                                                        \
        T f = (T)0;                                                                         \
        ishmem_##TN##_atomic_set(d, (T)40, next);                                           \
        ishmem_##TN##_atomic_compare_swap_nbi(&f, d, (T)40, (T)41, next);                   \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)40, #TN "_atomic_compare_swap_nbi success fetched");                  \
        ishmem_##TN##_atomic_compare_swap_nbi(&f, d, (T)40, (T)99, next);                   \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)41, #TN "_atomic_compare_swap_nbi failure fetched");                  \
        ishmem_##TN##_atomic_fetch_inc_nbi(&f, d, next);                                    \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)41, #TN "_atomic_fetch_inc_nbi");                                     \
        ishmem_##TN##_atomic_fetch_add_nbi(&f, d, (T)8, next);                              \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)42, #TN "_atomic_fetch_add_nbi");                                     \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)50, #TN ": nbi result");            \
    }
ISHT_AMO_EXT_NBI_TYPES(EXT_NBI_TEST)

#define BIT_TEST(TN, T)                                                                     \
    static void bit_##TN(T *d) {                                                            \
        ishmem_##TN##_atomic_set(d, (T)0x6C, next);                                         \
        T r = ishmem_##TN##_atomic_fetch_and(d, (T)0x3A, next);                             \
        CHECK(r == (T)0x6C, #TN "_atomic_fetch_and returned");                              \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)(0x6C & 0x3A), #TN ": and");        \
        ishmem_##TN##_atomic_and(d, (T)0x0F, next);                                         \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)(0x6C & 0x3A & 0x0F), #TN "_and");  \
        r = ishmem_##TN##_atomic_fetch_or(d, (T)0x50, next);                                \
        CHECK(r == (T)0x08, #TN "_atomic_fetch_or returned");                               \
        ishmem_##TN##_atomic_or(d, (T)0x01, next);                                          \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)0x59, #TN "_atomic_or");            \
        r = ishmem_##TN##_atomic_fetch_xor(d, (T)0x0F, next);                               \
        CHECK(r == (T)0x59, #TN "_atomic_fetch_xor returned");                              \
        ishmem_##TN##_atomic_xor(d, (T)0x7F, next);                                         \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)(0x59 ^ 0x0F ^ 0x7F), #TN "_xor");  \
        /* the high bit */                                                                  \
        ishmem_##TN##_atomic_set(d, (T)0, next);                                            \
        ishmem_##TN##_atomic_or(d, (T)(1ULL << (sizeof(T) * 8 - 1)), next);                 \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)(1ULL << (sizeof(T) * 8 - 1)),      \
              #TN ": or of the high bit");                                                  \
    }
ISHT_AMO_BIT_TYPES(BIT_TEST)

#define BIT_NBI_TEST(TN, T)                                                                 \
    static void bit_nbi_##TN(T *d) {                                                        \
        T f = (T)0;                                                                         \
        ishmem_##TN##_atomic_set(d, (T)0xF0, next);                                         \
        ishmem_##TN##_atomic_fetch_and_nbi(&f, d, (T)0x3C, next);                           \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0xF0, #TN "_atomic_fetch_and_nbi");                                   \
        ishmem_##TN##_atomic_fetch_or_nbi(&f, d, (T)0x03, next);                            \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x30, #TN "_atomic_fetch_or_nbi");                                    \
        ishmem_##TN##_atomic_fetch_xor_nbi(&f, d, (T)0xFF, next);                           \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x33, #TN "_atomic_fetch_xor_nbi");                                   \
        CHECK(ishmem_##TN##_atomic_fetch(d, next) == (T)0xCC, #TN ": nbi bit result");      \
    }
ISHT_AMO_BIT_NBI_TYPES(BIT_NBI_TEST)

/* Globals are AMO targets too. */
long g_counter;
static uint64_t s_bits;
static double s_dbl;

enum { K = 500 };

int main(void) {
    test_init();
    next = (t_me + 1) % t_npes;
    area = ishmem_calloc(64, 16);
    ishmem_barrier_all();

    int slot = 0;
#define RUN(prefix, TN, T) prefix##_##TN((T *)(area + 16 * (slot++ % 64)));
#define RUN_STD(TN, T) RUN(std, TN, T)
#define RUN_STD_NBI(TN, T) RUN(std_nbi, TN, T)
#define RUN_EXT(TN, T) RUN(ext, TN, T)
#define RUN_EXT_NBI(TN, T) RUN(ext_nbi, TN, T)
#define RUN_BIT(TN, T) RUN(bit, TN, T)
#define RUN_BIT_NBI(TN, T) RUN(bit_nbi, TN, T)
    ISHT_AMO_STD_TYPES(RUN_STD)
    ISHT_AMO_STD_NBI_TYPES(RUN_STD_NBI)
    ISHT_AMO_EXT_TYPES(RUN_EXT)
    ISHT_AMO_EXT_NBI_TYPES(RUN_EXT_NBI)
    ISHT_AMO_BIT_TYPES(RUN_BIT)
    ISHT_AMO_BIT_NBI_TYPES(RUN_BIT_NBI)

    /* float and double: non-integral values survive fetch / set / swap exactly. */
    float *fd = (float *)(area + 16 * 60);
    double *dd = (double *)(area + 16 * 61);
    ishmem_float_atomic_set(fd, 1.25f, next);
    CHECK(ishmem_float_atomic_fetch(fd, next) == 1.25f, "float set/fetch");
    CHECK(ishmem_float_atomic_swap(fd, -3.5e7f, next) == 1.25f, "float swap");
    CHECK(ishmem_float_g(fd, next) == -3.5e7f, "float swap stored");
    ishmem_double_atomic_set(dd, 0.1, next);
    CHECK(ishmem_double_atomic_fetch(dd, next) == 0.1, "double set/fetch");
    CHECK(ishmem_double_atomic_swap(dd, 1e300, next) == 0.1, "double swap");
    double dfetch = 0;
    ishmem_double_atomic_swap_nbi(&dfetch, dd, -2.5, next);
    ishmem_quiet();
    CHECK(dfetch == 1e300, "double swap_nbi fetched");
    CHECK(ishmem_double_g(dd, next) == -2.5, "double swap_nbi stored");

    /* Globals and statics. */
    ishmem_barrier_all();
    ishmem_long_atomic_add(&g_counter, t_me + 1, 0);
    ishmem_uint64_atomic_or(&s_bits, (uint64_t)1 << (t_me % 64), 0);
    if (t_me == 0)
        ishmem_double_atomic_set(&s_dbl, 6.5, next);
    ishmem_barrier_all();
    if (t_me == 0) {
        CHECK_EQ(g_counter, (long)t_npes * (t_npes + 1) / 2);
        uint64_t want = 0;
        for (int pe = 0; pe < t_npes; pe++)
            want |= (uint64_t)1 << (pe % 64);
        CHECK_EQ(s_bits, want);
    }
    if (t_me == (t_npes > 1 ? 1 : 0))
        CHECK(s_dbl == 6.5, "double set on a static: %g", s_dbl);

    /* Narrow AMOs under contention are atomic and touch only their own bytes: PE k adds to
     * byte k % 8 and to 32-bit word k % 4 of PE 0, toggles its bit with xor an even number of
     * times, then sets it with or. */
    signed char *b8 = ishmem_calloc(8, 1);
    int32_t *w32 = ishmem_calloc(4, sizeof(int32_t));
    uint64_t *mask = ishmem_calloc(1, sizeof(uint64_t));
    ishmem_barrier_all();
    for (int i = 0; i < K; i++) {
        ishmem_schar_atomic_add(&b8[t_me % 8], 1, 0);
        ishmem_int32_atomic_fetch_add(&w32[t_me % 4], -1, 0);
        ishmem_uint64_atomic_fetch_xor(mask, (uint64_t)1 << (t_me % 64), 0);
        ishmem_uint64_atomic_xor(mask, (uint64_t)1 << (t_me % 64), 0);
    }
    ishmem_uint64_atomic_or(mask, (uint64_t)1 << (t_me % 64), 0);
    ishmem_barrier_all();
    if (t_me == 0) {
        for (int j = 0; j < 8; j++) {
            int n = 0;
            for (int pe = 0; pe < t_npes; pe++)
                n += pe % 8 == j;
            CHECK(b8[j] == (signed char)(unsigned char)(n * K), "schar add, byte %d: %d", j, b8[j]);
        }
        for (int j = 0; j < 4; j++) {
            int n = 0;
            for (int pe = 0; pe < t_npes; pe++)
                n += pe % 4 == j;
            CHECK(w32[j] == -n * K, "int32 fetch_add, word %d: %d", j, (int)w32[j]);
        }
        uint64_t want = 0;
        for (int pe = 0; pe < t_npes; pe++)
            want |= (uint64_t)1 << (pe % 64);
        CHECK_EQ(*mask, want);
    }
    ishmem_barrier_all();
    ishmem_free(mask);
    ishmem_free(w32);
    ishmem_free(b8);

    /* Concurrent fetch_add from all PEs to PE 0: exact sum; fetch_inc gives distinct tickets. */
    long *sum = ishmem_calloc(1, sizeof(long));
    uint64_t *ticket = ishmem_calloc(1, sizeof(uint64_t));
    int *seen = ishmem_calloc((size_t)t_npes * K, sizeof(int));
    int *winners = ishmem_calloc(1, sizeof(int));
    int *lock = ishmem_calloc(1, sizeof(int));
    ishmem_barrier_all();
    for (int i = 0; i < K; i++) {
        ishmem_long_atomic_fetch_add(sum, (long)(t_me + 1) * 1000 + i, 0);
        uint64_t t = ishmem_uint64_atomic_fetch_inc(ticket, 0);
        CHECK(t < (uint64_t)t_npes * K, "ticket %llu out of range", (unsigned long long)t);
        if (t < (uint64_t)t_npes * K)
            ishmem_int_atomic_inc(&seen[t], 0);
    }
    /* exactly one PE wins a compare_swap race */
    if (ishmem_int_atomic_compare_swap(lock, 0, t_me + 1, 0) == 0)
        ishmem_int_atomic_add(winners, 1, 0);
    ishmem_barrier_all();
    if (t_me == 0) {
        long want = 0;
        for (int pe = 0; pe < t_npes; pe++)
            want += (long)(pe + 1) * 1000 * K + (long)K * (K - 1) / 2;
        CHECK_EQ(*sum, want);
        CHECK_EQ(*ticket, (uint64_t)t_npes * K);
        int dup = 0;
        for (int i = 0; i < t_npes * K; i++)
            dup += seen[i] != 1;
        CHECK(dup == 0, "%d tickets not handed out exactly once", dup);
        CHECK_EQ(*winners, 1);
        CHECK(*lock >= 1 && *lock <= t_npes, "lock holder %d", *lock);
    }
    ishmem_barrier_all();
    ishmem_free(lock);
    ishmem_free(winners);
    ishmem_free(seen);
    ishmem_free(ticket);
    ishmem_free(sum);
    ishmem_free(area);
    return test_finish("amo");
}
