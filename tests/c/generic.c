/* generic: the C11 _Generic names (ishmem_put, ishmem_g, ishmem_atomic_fetch_add,
 * ishmem_wait_until, ...) select the typed routine from the pointer's type. */
#include "test_util.h"

static int next, prev;
#define V(T, pe, i) ((T)((pe) * 13 + (i) * 3 + 2))

#define GEN_RMA(TN, T)                                                                      \
    static void gen_rma_##TN(void) {                                                        \
        enum { M = 12 };                                                                    \
        T *dst = ishmem_calloc(M, sizeof(T)), *src = ishmem_malloc(M * sizeof(T)), loc[M];  \
        uint64_t *sig = ishmem_calloc(1, sizeof(uint64_t));                                 \
        for (int i = 0; i < M; i++)                                                         \
            src[i] = V(T, t_me, i);                                                         \
        ishmem_barrier_all();                                                               \
        ishmem_put(dst, src, M, next);                                                      \
        ishmem_barrier_all();                                                               \
        for (int i = 0; i < M; i++)                                                         \
            CHECK(dst[i] == V(T, prev, i), "generic put " #TN " [%d]", i);                  \
        memset(loc, 0, sizeof loc);                                                         \
        ishmem_get(loc, src, M, next);                                                      \
        for (int i = 0; i < M; i++)                                                         \
            CHECK(loc[i] == V(T, next, i), "generic get " #TN " [%d]", i);                  \
        CHECK(ishmem_g(&src[4], next) == V(T, next, 4), "generic g " #TN);                  \
        const T *csrc = src;                                                                \
        CHECK(ishmem_g(&csrc[5], next) == V(T, next, 5), "generic g const " #TN);           \
        ishmem_barrier_all();                                                               \
        ishmem_p(&dst[0], V(T, t_me, 50), next);                                            \
        ishmem_barrier_all();                                                               \
        CHECK(dst[0] == V(T, prev, 50), "generic p " #TN);                                  \
        ishmem_barrier_all();                                                               \
        ishmem_iput(dst, src, 2, 3, 4, next);                                               \
        ishmem_barrier_all();                                                               \
        for (int j = 0; j < 4; j++)                                                         \
            CHECK(dst[2 * j] == V(T, prev, 3 * j), "generic iput " #TN " [%d]", j);         \
        memset(loc, 0, sizeof loc);                                                         \
        ishmem_iget(loc, src, 3, 2, 4, next);                                               \
        for (int j = 0; j < 4; j++)                                                         \
            CHECK(loc[3 * j] == V(T, next, 2 * j), "generic iget " #TN " [%d]", j);         \
        ishmem_barrier_all();                                                               \
        ishmem_put_nbi(dst, src + 1, 3, next);                                              \
        ishmem_quiet();                                                                     \
        ishmem_barrier_all();                                                               \
        CHECK(dst[2] == V(T, prev, 3), "generic put_nbi " #TN);                             \
        ishmem_get_nbi(loc, src + 6, 2, next);                                              \
        ishmem_quiet();                                                                     \
        CHECK(loc[1] == V(T, next, 7), "generic get_nbi " #TN);                             \
        ishmem_barrier_all();                                                               \
        ishmemx_ibput(dst, src, 4, 3, 2, 3, next);                                          \
        ishmem_barrier_all();                                                               \
        CHECK(dst[8] == V(T, prev, 6) && dst[9] == V(T, prev, 7), "generic ibput " #TN);    \
        memset(loc, 0, sizeof loc);                                                         \
        ishmemx_ibget(loc, src, 3, 4, 2, 3, next);                                          \
        CHECK(loc[6] == V(T, next, 8) && loc[7] == V(T, next, 9), "generic ibget " #TN);    \
        ishmem_barrier_all();                                                               \
        ishmem_put_signal(dst, src, M, sig, 1, ISHMEM_SIGNAL_ADD, next);                    \
        ishmem_put_signal_nbi(dst, src, M, sig, 2, ISHMEM_SIGNAL_ADD, next);                \
        ishmem_quiet();                                                                     \
        ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 3);                                    \
        CHECK(dst[M - 1] == V(T, prev, M - 1), "generic put_signal " #TN);                  \
        ishmem_barrier_all();                                                               \
        ishmem_free(sig);                                                                   \
        ishmem_free(src);                                                                   \
        ishmem_free(dst);                                                                   \
    }
#define GEN_RMA_TYPES(X)                                                                    \
    X(float, float) X(double, double) X(char, char) X(schar, signed char) X(short, short)    \
    X(int, int) X(long, long) X(longlong, long long) X(uchar, unsigned char)                \
    X(ushort, unsigned short) X(uint, unsigned int) X(ulong, unsigned long)                 \
    X(ulonglong, unsigned long long)
GEN_RMA_TYPES(GEN_RMA)

/* AMOs: each PE owns the word on next. */
#define GEN_AMO_STD(TN, T)                                                                  \
    static void gen_amo_std_##TN(T *d) {                                                    \
        ishmem_atomic_set(d, (T)4, next);                                                   \
        CHECK(ishmem_atomic_fetch(d, next) == (T)4, "generic atomic_set/fetch " #TN);       \
        CHECK(ishmem_atomic_swap(d, (T)6, next) == (T)4, "generic atomic_swap " #TN);       \
        CHECK(ishmem_atomic_fetch(d, next) == (T)6, "generic atomic_swap stored " #TN);     \
    }
#define GEN_AMO_STD_NBI(TN, T)                                                              \
    static void gen_amo_std_nbi_##TN(T *d) {                                                \
        T f = (T)0;                                                                         \
        ishmem_atomic_set(d, (T)7, next);                                                   \
        ishmem_atomic_fetch_nbi(&f, d, next);                                               \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)7, "generic atomic_fetch_nbi " #TN);                                  \
        ishmem_atomic_swap_nbi(&f, d, (T)8, next);                                          \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)7 && ishmem_atomic_fetch(d, next) == (T)8, "generic swap_nbi " #TN);  \
    }
#define GEN_AMO_EXT(TN, T)                                                                  \
    static void gen_amo_ext_##TN(T *d) {                                                    \
        ishmem_atomic_set(d, (T)1, next);                                                   \
        CHECK(ishmem_atomic_compare_swap(d, (T)1, (T)2, next) == (T)1, "cswap ok " #TN);    \
        CHECK(ishmem_atomic_compare_swap(d, (T)1, (T)3, next) == (T)2, "cswap fail " #TN);  \
        CHECK(ishmem_atomic_fetch_inc(d, next) == (T)2, "generic fetch_inc " #TN);          \
        ishmem_atomic_inc(d, next);                                                         \
        CHECK(ishmem_atomic_fetch_add(d, (T)10, next) == (T)4, "generic fetch_add " #TN);   \
        ishmem_atomic_add(d, (T)5, next);                                                   \
        CHECK(ishmem_atomic_fetch(d, next) == (T)19, "generic add " #TN);                   \
    }
#define GEN_AMO_EXT_NBI(TN, T)                                                              \
    static void gen_amo_ext_nbi_##TN(T *d) {                                                \
        T f = (T)0;                                                                         \
        ishmem_atomic_set(d, (T)1, next);                                                   \
        ishmem_atomic_compare_swap_nbi(&f, d, (T)1, (T)5, next);                            \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)1, "generic compare_swap_nbi " #TN);                                  \
        ishmem_atomic_fetch_inc_nbi(&f, d, next);                                           \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)5, "generic fetch_inc_nbi " #TN);                                     \
        ishmem_atomic_fetch_add_nbi(&f, d, (T)4, next);                                     \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)6 && ishmem_atomic_fetch(d, next) == (T)10, "fetch_add_nbi " #TN);    \
    }
#define GEN_AMO_BIT(TN, T)                                                                  \
    static void gen_amo_bit_##TN(T *d) {                                                    \
        ishmem_atomic_set(d, (T)0x0F, next);                                                \
        CHECK(ishmem_atomic_fetch_and(d, (T)0x3C, next) == (T)0x0F, "fetch_and " #TN);      \
        ishmem_atomic_and(d, (T)0x1C, next);                                                \
        CHECK(ishmem_atomic_fetch_or(d, (T)0x40, next) == (T)0x0C, "fetch_or " #TN);        \
        ishmem_atomic_or(d, (T)0x01, next);                                                 \
        CHECK(ishmem_atomic_fetch_xor(d, (T)0x4D, next) == (T)0x4D, "fetch_xor " #TN);      \
        ishmem_atomic_xor(d, (T)0x22, next);                                                \
        CHECK(ishmem_atomic_fetch(d, next) == (T)0x22, "generic xor " #TN);                 \
    }
#define GEN_AMO_BIT_NBI(TN, T)                                                              \
    static void gen_amo_bit_nbi_##TN(T *d) {                                                \
        T f = (T)0;                                                                         \
        ishmem_atomic_set(d, (T)0x0F, next);                                                \
        ishmem_atomic_fetch_and_nbi(&f, d, (T)0x3C, next);                                  \
        ishmem_atomic_fetch_or_nbi(&f, d, (T)0x40, next);                                   \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x0C, "fetch_or_nbi " #TN);                                           \
        ishmem_atomic_fetch_xor_nbi(&f, d, (T)0x4C, next);                                  \
        ishmem_quiet();                                                                     \
        CHECK(f == (T)0x4C && ishmem_atomic_fetch(d, next) == (T)0, "fetch_xor_nbi " #TN);  \
    }
GEN_AMO_STD(float, float)
GEN_AMO_STD(double, double)
GEN_AMO_STD(schar, signed char)
GEN_AMO_STD(int, int)
GEN_AMO_STD(ulonglong, unsigned long long)
GEN_AMO_STD_NBI(double, double)
GEN_AMO_STD_NBI(long, long)
GEN_AMO_STD_NBI(uint, unsigned int)
GEN_AMO_EXT(schar, signed char)
GEN_AMO_EXT(long, long)
GEN_AMO_EXT(uint, unsigned int)
GEN_AMO_EXT(ulonglong, unsigned long long)
GEN_AMO_EXT_NBI(int, int)
GEN_AMO_EXT_NBI(longlong, long long)
GEN_AMO_EXT_NBI(ulong, unsigned long)
GEN_AMO_BIT(schar, signed char)
GEN_AMO_BIT(uint, unsigned int)
GEN_AMO_BIT(ulong, unsigned long)
GEN_AMO_BIT_NBI(ulonglong, unsigned long long)
GEN_AMO_BIT_NBI(uint, unsigned int)

#define GEN_P2P(TN, T)                                                                      \
    static void gen_p2p_##TN(void) {                                                        \
        T *iv = ishmem_calloc(4, sizeof(T));                                                \
        T cv[4] = {(T)0, (T)5, (T)0, (T)7};                                                 \
        int st[4] = {0, 0, 1, 0};                                                           \
        size_t idx[4];                                                                      \
        ishmem_barrier_all();                                                               \
        ishmem_atomic_set(&iv[1], (T)5, next);                                              \
        ishmem_atomic_set(&iv[3], (T)7, next);                                              \
        ishmem_wait_until(&iv[3], ISHMEM_CMP_EQ, (T)7);                                     \
        ishmem_wait_until_all(iv, 4, st, ISHMEM_CMP_GE, (T)0);                              \
        CHECK(ishmem_wait_until_any(iv, 4, st, ISHMEM_CMP_GT, (T)6) == 3, "wait_any " #TN); \
        CHECK(ishmem_wait_until_some(iv, 4, idx, st, ISHMEM_CMP_EQ, (T)5) == 1 && idx[0] == 1, \
              "wait_some " #TN);                                                            \
        ishmem_wait_until_all_vector(iv, 4, st, ISHMEM_CMP_EQ, cv);                         \
        CHECK(ishmem_wait_until_any_vector(iv, 4, st, ISHMEM_CMP_EQ, cv) == 0,              \
              "wait_any_vector " #TN);                                                      \
        CHECK(ishmem_wait_until_some_vector(iv, 4, idx, NULL, ISHMEM_CMP_EQ, cv) == 4,      \
              "wait_some_vector " #TN);                                                     \
        CHECK(ishmem_test(&iv[1], ISHMEM_CMP_EQ, (T)5) == 1, "test " #TN);                  \
        CHECK(ishmem_test(&iv[1], ISHMEM_CMP_LT, (T)5) == 0, "test false " #TN);            \
        CHECK(ishmem_test_all(iv, 4, NULL, ISHMEM_CMP_LE, (T)7) == 1, "test_all " #TN);     \
        CHECK(ishmem_test_any(iv, 4, st, ISHMEM_CMP_GT, (T)5) == 3, "test_any " #TN);       \
        CHECK(ishmem_test_some(iv, 4, idx, NULL, ISHMEM_CMP_EQ, (T)0) == 2, "test_some " #TN); \
        CHECK(ishmem_test_all_vector(iv, 4, NULL, ISHMEM_CMP_EQ, cv) == 1, "test_all_v " #TN); \
        CHECK(ishmem_test_any_vector(iv, 4, NULL, ISHMEM_CMP_GT, cv) == SIZE_MAX,           \
              "test_any_vector " #TN);                                                      \
        CHECK(ishmem_test_some_vector(iv, 4, idx, st, ISHMEM_CMP_GE, cv) == 3,              \
              "test_some_vector " #TN);                                                     \
        ishmem_barrier_all();                                                               \
        ishmem_free(iv);                                                                    \
    }
GEN_P2P(int, int)
GEN_P2P(long, long)
GEN_P2P(longlong, long long)
GEN_P2P(uint, unsigned int)
GEN_P2P(ulong, unsigned long)
GEN_P2P(ulonglong, unsigned long long)

int main(void) {
    test_init();
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;
#define CALL_RMA(TN, T) gen_rma_##TN();
    GEN_RMA_TYPES(CALL_RMA)
    unsigned char *area = ishmem_calloc(32, 16);
    int s = 0;
#define W(T) ((T *)(area + 16 * (s++ % 32)))
    gen_amo_std_float(W(float));
    gen_amo_std_double(W(double));
    gen_amo_std_schar(W(signed char));
    gen_amo_std_int(W(int));
    gen_amo_std_ulonglong(W(unsigned long long));
    gen_amo_std_nbi_double(W(double));
    gen_amo_std_nbi_long(W(long));
    gen_amo_std_nbi_uint(W(unsigned int));
    gen_amo_ext_schar(W(signed char));
    gen_amo_ext_long(W(long));
    gen_amo_ext_uint(W(unsigned int));
    gen_amo_ext_ulonglong(W(unsigned long long));
    gen_amo_ext_nbi_int(W(int));
    gen_amo_ext_nbi_longlong(W(long long));
    gen_amo_ext_nbi_ulong(W(unsigned long));
    gen_amo_bit_schar(W(signed char));
    gen_amo_bit_uint(W(unsigned int));
    gen_amo_bit_ulong(W(unsigned long));
    gen_amo_bit_nbi_ulonglong(W(unsigned long long));
    gen_amo_bit_nbi_uint(W(unsigned int));
    /* int64_t and size_t resolve through their underlying types */
    int64_t *i64 = W(int64_t);
    ishmem_atomic_set(i64, (int64_t)1 << 40, next);
    CHECK(ishmem_atomic_fetch_add(i64, (int64_t)1, next) == (int64_t)1 << 40, "int64_t generic");
    size_t *sz = W(size_t);
    ishmem_atomic_set(sz, (size_t)3, next);
    CHECK(ishmem_atomic_fetch(sz, next) == 3, "size_t generic");
    gen_p2p_int();
    gen_p2p_long();
    gen_p2p_longlong();
    gen_p2p_uint();
    gen_p2p_ulong();
    gen_p2p_ulonglong();
    ishmem_barrier_all();
    ishmem_free(area);
    return test_finish("generic");
}
