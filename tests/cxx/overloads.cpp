// overloads: the C++ generic names (overloads of ishmem_put, ishmem_g, ishmem_atomic_*,
// ishmem_wait_until, ishmem_test_*, ishmemx_ibput, ...) on several types, asserting values.
#include "test_util.h"
#include <type_traits>
#include <vector>

static int next_pe, prev_pe;

template <typename T> static T V(int pe, int i) { return static_cast<T>(pe * 13 + i * 3 + 2); }

template <typename T> static void rma(const char *tn) {
    const int M = 12;
    T *dst = static_cast<T *>(ishmem_calloc(M, sizeof(T)));
    T *src = static_cast<T *>(ishmem_malloc(M * sizeof(T)));
    auto *sig = static_cast<uint64_t *>(ishmem_calloc(1, sizeof(uint64_t)));
    std::vector<T> loc(M);
    for (int i = 0; i < M; i++)
        src[i] = V<T>(t_me, i);
    static_assert(std::is_same<decltype(ishmem_g(src, 0)), T>::value, "ishmem_g returns T");
    ishmem_barrier_all();
    ishmem_put(dst, src, M, next_pe);
    ishmem_barrier_all();
    for (int i = 0; i < M; i++)
        CHECK(dst[i] == V<T>(prev_pe, i), "%s: put [%d]", tn, i);
    ishmem_get(loc.data(), src, M, next_pe);
    for (int i = 0; i < M; i++)
        CHECK(loc[i] == V<T>(next_pe, i), "%s: get [%d]", tn, i);
    const T *csrc = src;
    CHECK(ishmem_g(csrc + 4, next_pe) == V<T>(next_pe, 4), "%s: g", tn);
    ishmem_barrier_all();
    ishmem_p(dst, V<T>(t_me, 40), next_pe);
    ishmem_barrier_all();
    CHECK(dst[0] == V<T>(prev_pe, 40), "%s: p", tn);
    ishmem_barrier_all();
    ishmem_iput(dst, src, 2, 3, 4, next_pe);
    ishmem_barrier_all();
    for (int j = 0; j < 4; j++)
        CHECK(dst[2 * j] == V<T>(prev_pe, 3 * j), "%s: iput [%d]", tn, j);
    std::fill(loc.begin(), loc.end(), T());
    ishmem_iget(loc.data(), src, 3, 2, 4, next_pe);
    for (int j = 0; j < 4; j++)
        CHECK(loc[3 * j] == V<T>(next_pe, 2 * j), "%s: iget [%d]", tn, j);
    ishmem_barrier_all();
    ishmem_put_nbi(dst, src + 1, 3, next_pe);
    ishmem_quiet();
    ishmem_barrier_all();
    CHECK(dst[2] == V<T>(prev_pe, 3), "%s: put_nbi", tn);
    ishmem_get_nbi(loc.data(), src + 6, 2, next_pe);
    ishmem_quiet();
    CHECK(loc[1] == V<T>(next_pe, 7), "%s: get_nbi", tn);
    ishmem_barrier_all();
    ishmemx_ibput(dst, src, 4, 3, 2, 3, next_pe);
    ishmem_barrier_all();
    CHECK(dst[8] == V<T>(prev_pe, 6) && dst[9] == V<T>(prev_pe, 7), "%s: ibput", tn);
    std::fill(loc.begin(), loc.end(), T());
    ishmemx_ibget(loc.data(), src, 3, 4, 2, 3, next_pe);
    CHECK(loc[6] == V<T>(next_pe, 8) && loc[7] == V<T>(next_pe, 9), "%s: ibget", tn);
    ishmem_barrier_all();
    ishmem_put_signal(dst, src, M, sig, 1, ISHMEM_SIGNAL_ADD, next_pe);
    ishmem_put_signal_nbi(dst, src, M, sig, 2, ISHMEM_SIGNAL_ADD, next_pe);
    ishmem_quiet();
    CHECK(ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 3) == 3, "%s: put_signal", tn);
    CHECK(dst[M - 1] == V<T>(prev_pe, M - 1), "%s: put_signal data", tn);
    ishmem_barrier_all();
    ishmem_free(sig);
    ishmem_free(src);
    ishmem_free(dst);
}

template <typename T> static void amo_std(T *d, const char *tn) {
    ishmem_atomic_set(d, T(4), next_pe);
    CHECK(ishmem_atomic_fetch(d, next_pe) == T(4), "%s: atomic_set/fetch", tn);
    CHECK(ishmem_atomic_swap(d, T(6), next_pe) == T(4), "%s: atomic_swap", tn);
    T f = T(0);
    ishmem_atomic_fetch_nbi(&f, d, next_pe);
    ishmem_quiet();
    CHECK(f == T(6), "%s: atomic_fetch_nbi", tn);
    ishmem_atomic_swap_nbi(&f, d, T(9), next_pe);
    ishmem_quiet();
    CHECK(f == T(6) && ishmem_atomic_fetch(d, next_pe) == T(9), "%s: atomic_swap_nbi", tn);
}

template <typename T> static void amo_ext(T *d, const char *tn) {
    ishmem_atomic_set(d, T(1), next_pe);
    CHECK(ishmem_atomic_compare_swap(d, T(1), T(2), next_pe) == T(1), "%s: cswap ok", tn);
    CHECK(ishmem_atomic_compare_swap(d, T(1), T(3), next_pe) == T(2), "%s: cswap fail", tn);
    CHECK(ishmem_atomic_fetch_inc(d, next_pe) == T(2), "%s: fetch_inc", tn);
    ishmem_atomic_inc(d, next_pe);
    CHECK(ishmem_atomic_fetch_add(d, T(10), next_pe) == T(4), "%s: fetch_add", tn);
    ishmem_atomic_add(d, T(5), next_pe);
    CHECK(ishmem_atomic_fetch(d, next_pe) == T(19), "%s: add", tn);
    T f = T(0);
    ishmem_atomic_compare_swap_nbi(&f, d, T(19), T(20), next_pe);
    ishmem_atomic_fetch_inc_nbi(&f, d, next_pe);
    ishmem_quiet();
    CHECK(f == T(20), "%s: fetch_inc_nbi", tn);
    ishmem_atomic_fetch_add_nbi(&f, d, T(2), next_pe);
    ishmem_quiet();
    CHECK(f == T(21) && ishmem_atomic_fetch(d, next_pe) == T(23), "%s: fetch_add_nbi", tn);
}

template <typename T> static void amo_bit(T *d, const char *tn) {
    ishmem_atomic_set(d, T(0x0F), next_pe);
    CHECK(ishmem_atomic_fetch_and(d, T(0x3C), next_pe) == T(0x0F), "%s: fetch_and", tn);
    ishmem_atomic_and(d, T(0x1C), next_pe);
    CHECK(ishmem_atomic_fetch_or(d, T(0x40), next_pe) == T(0x0C), "%s: fetch_or", tn);
    ishmem_atomic_or(d, T(0x01), next_pe);
    CHECK(ishmem_atomic_fetch_xor(d, T(0x4D), next_pe) == T(0x4D), "%s: fetch_xor", tn);
    ishmem_atomic_xor(d, T(0x22), next_pe);
    CHECK(ishmem_atomic_fetch(d, next_pe) == T(0x22), "%s: xor", tn);
    T f = T(0);
    ishmem_atomic_fetch_and_nbi(&f, d, T(0x20), next_pe);
    ishmem_atomic_fetch_or_nbi(&f, d, T(0x01), next_pe);
    ishmem_quiet();
    CHECK(f == T(0x20), "%s: fetch_or_nbi", tn);
    ishmem_atomic_fetch_xor_nbi(&f, d, T(0x21), next_pe);
    ishmem_quiet();
    CHECK(f == T(0x21) && ishmem_atomic_fetch(d, next_pe) == T(0), "%s: fetch_xor_nbi", tn);
}

template <typename T> static void p2p(const char *tn) {
    T *iv = static_cast<T *>(ishmem_calloc(4, sizeof(T)));
    T cv[4] = {T(0), T(5), T(0), T(7)};
    int st[4] = {0, 0, 1, 0};
    size_t idx[4];
    ishmem_barrier_all();
    ishmem_atomic_set(&iv[1], T(5), next_pe);
    ishmem_atomic_set(&iv[3], T(7), next_pe);
    ishmem_wait_until(&iv[3], ISHMEM_CMP_EQ, T(7));
    ishmem_wait_until_all(iv, 4, st, ISHMEM_CMP_GE, T(0));
    CHECK(ishmem_wait_until_any(iv, 4, st, ISHMEM_CMP_GT, T(6)) == 3, "%s: wait_until_any", tn);
    CHECK(ishmem_wait_until_some(iv, 4, idx, st, ISHMEM_CMP_EQ, T(5)) == 1 && idx[0] == 1,
          "%s: wait_until_some", tn);
    ishmem_wait_until_all_vector(iv, 4, st, ISHMEM_CMP_EQ, cv);
    CHECK(ishmem_wait_until_any_vector(iv, 4, st, ISHMEM_CMP_EQ, cv) == 0, "%s: any_vector", tn);
    CHECK(ishmem_wait_until_some_vector(iv, 4, idx, nullptr, ISHMEM_CMP_EQ, cv) == 4,
          "%s: some_vector", tn);
    CHECK(ishmem_test(&iv[1], ISHMEM_CMP_EQ, T(5)) == 1, "%s: test", tn);
    CHECK(ishmem_test(&iv[1], ISHMEM_CMP_LT, T(5)) == 0, "%s: test false", tn);
    CHECK(ishmem_test_all(iv, 4, nullptr, ISHMEM_CMP_LE, T(7)) == 1, "%s: test_all", tn);
    CHECK(ishmem_test_any(iv, 4, st, ISHMEM_CMP_GT, T(5)) == 3, "%s: test_any", tn);
    CHECK(ishmem_test_some(iv, 4, idx, nullptr, ISHMEM_CMP_EQ, T(0)) == 2, "%s: test_some", tn);
    CHECK(ishmem_test_all_vector(iv, 4, nullptr, ISHMEM_CMP_EQ, cv) == 1, "%s: all_vector", tn);
    CHECK(ishmem_test_any_vector(iv, 4, nullptr, ISHMEM_CMP_GT, cv) == SIZE_MAX,
          "%s: test_any_vector", tn);
    CHECK(ishmem_test_some_vector(iv, 4, idx, st, ISHMEM_CMP_GE, cv) == 3, "%s: some_vector", tn);
    CHECK(ishmem_test_any(iv, 4, nullptr, ISHMEM_CMP_GT, T(100)) == SIZE_MAX, "%s: any none", tn);
    ishmem_barrier_all();
    ishmem_free(iv);
}

// collectives: the generic names with and without a team, over the world and the even PEs
template <typename T> static void coll(const char *tn) {
    const int M = 6;
    int n = t_npes, me = t_me;
    T *dst = static_cast<T *>(ishmem_calloc(M * n, sizeof(T)));
    T *src = static_cast<T *>(ishmem_malloc(M * n * sizeof(T)));
    for (int i = 0; i < M * n; i++)
        src[i] = static_cast<T>(me + i + 1);
    CHECK(ishmem_broadcast(dst, src, M, n - 1) == 0, "%s: broadcast", tn);
    CHECK(dst[M - 1] == static_cast<T>(n - 1 + M), "%s: broadcast value", tn);
    CHECK(ishmem_sum_reduce(dst, src, M) == 0, "%s: sum_reduce", tn);
    CHECK(dst[2] == static_cast<T>(n * (n - 1) / 2 + 3 * n), "%s: sum_reduce value", tn);
    CHECK(ishmem_max_reduce(ISHMEM_TEAM_WORLD, dst, src, M) == 0, "%s: max_reduce", tn);
    CHECK(dst[0] == static_cast<T>(n), "%s: max_reduce value", tn);
    CHECK(ishmem_min_reduce(dst, src, M) == 0 && dst[1] == static_cast<T>(2), "%s: min_reduce", tn);
    CHECK(ishmem_prod_reduce(ISHMEM_TEAM_SHARED, dst, src, 1) == 0, "%s: prod_reduce", tn);
    CHECK(ishmem_fcollect(dst, src, 2) == 0 && dst[2 * (n - 1) + 1] == static_cast<T>(n + 1), "%s: fcollect", tn);
    CHECK(ishmem_collect(ISHMEM_TEAM_WORLD, dst, src, 1) == 0 && dst[n - 1] == static_cast<T>(n), "%s: collect", tn);
    CHECK(ishmem_alltoall(dst, src, 1) == 0 && dst[n - 1] == static_cast<T>(n + me), "%s: alltoall", tn);
    CHECK(ishmem_sum_inscan(dst, src, 1) == 0 && dst[0] == static_cast<T>((me + 1) * (me + 2) / 2), "%s: inscan", tn);
    CHECK(ishmem_sum_exscan(ISHMEM_TEAM_WORLD, dst, src, 1) == 0 && dst[0] == static_cast<T>(me * (me + 1) / 2),
          "%s: exscan", tn);
    ishmem_team_t even;
    CHECK(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even) == 0, "split");
    if (even != ISHMEM_TEAM_INVALID) {
        CHECK(ishmem_sum_reduce(even, dst, src, M) == 0, "%s: sum_reduce(even)", tn);
        int ne = ishmem_team_n_pes(even), want = 0;
        for (int j = 0; j < ne; j++)
            want += 2 * j + 1;
        CHECK(dst[0] == static_cast<T>(want), "%s: sum_reduce(even) value", tn);
        CHECK(ishmem_broadcast(even, dst, src, 2, ne - 1) == 0 && dst[1] == static_cast<T>(2 * (ne - 1) + 2),
              "%s: broadcast(even)", tn);
        ishmem_team_destroy(even);
    }
    ishmem_barrier_all();
    ishmem_free(src);
    ishmem_free(dst);
}

template <typename T> static void coll_bits(const char *tn) {
    int n = t_npes; // the low nibble is set everywhere, the high one (t_me) AND-ed away
    T *dst = static_cast<T *>(ishmem_calloc(2, sizeof(T)));
    T *src = static_cast<T *>(ishmem_malloc(2 * sizeof(T)));
    src[0] = static_cast<T>(0x0F | (t_me << 4));
    src[1] = static_cast<T>(t_me + 1);
    CHECK(ishmem_and_reduce(dst, src, 2) == 0 && dst[0] == static_cast<T>(0x0F), "%s: and_reduce", tn);
    unsigned o = 0, x = 0;
    for (int p = 0; p < n; p++)
        o |= unsigned(p + 1), x ^= unsigned(p + 1);
    CHECK(ishmem_or_reduce(ISHMEM_TEAM_WORLD, dst, src, 2) == 0 && dst[1] == static_cast<T>(o), "%s: or_reduce", tn);
    CHECK(ishmem_xor_reduce(dst, src, 2) == 0 && dst[1] == static_cast<T>(x), "%s: xor_reduce", tn);
    ishmem_barrier_all();
    ishmem_free(src);
    ishmem_free(dst);
}

int main() {
    test_init();
    next_pe = (t_me + 1) % t_npes;
    prev_pe = (t_me + t_npes - 1) % t_npes;
    rma<float>("float");
    rma<double>("double");
    rma<char>("char");
    rma<signed char>("signed char");
    rma<short>("short");
    rma<int>("int");
    rma<long>("long");
    rma<long long>("long long");
    rma<unsigned char>("unsigned char");
    rma<unsigned short>("unsigned short");
    rma<unsigned int>("unsigned int");
    rma<unsigned long>("unsigned long");
    rma<unsigned long long>("unsigned long long");

    auto *area = static_cast<unsigned char *>(ishmem_calloc(32, 16));
    int s = 0;
    auto w = [&](void) { return static_cast<void *>(area + 16 * (s++ % 32)); };
    amo_std(static_cast<float *>(w()), "float");
    amo_std(static_cast<double *>(w()), "double");
    amo_std(static_cast<int *>(w()), "int");
    amo_std(static_cast<unsigned long *>(w()), "unsigned long");
    amo_ext(static_cast<int *>(w()), "int");
    amo_ext(static_cast<long long *>(w()), "long long");
    amo_ext(static_cast<unsigned int *>(w()), "unsigned int");
    amo_ext(static_cast<unsigned long long *>(w()), "unsigned long long");
    amo_bit(static_cast<unsigned int *>(w()), "unsigned int");
    amo_bit(static_cast<unsigned long *>(w()), "unsigned long");
    amo_bit(static_cast<unsigned long long *>(w()), "unsigned long long");
    // fixed-width types resolve through their underlying types
    auto *u64 = static_cast<uint64_t *>(w());
    ishmem_atomic_set(u64, uint64_t(1) << 63, next_pe);
    CHECK(ishmem_atomic_fetch_xor(u64, uint64_t(1) << 63, next_pe) == uint64_t(1) << 63, "uint64_t");
    CHECK(ishmem_atomic_fetch(u64, next_pe) == 0, "uint64_t xor");

    p2p<int>("int");
    p2p<long>("long");
    p2p<long long>("long long");
    p2p<unsigned int>("unsigned int");
    p2p<unsigned long>("unsigned long");
    p2p<unsigned long long>("unsigned long long");
    coll<float>("float");
    coll<double>("double");
    coll<int>("int");
    coll<long long>("long long");
    coll<unsigned short>("unsigned short");
    coll<signed char>("signed char");
    coll_bits<unsigned char>("unsigned char");
    coll_bits<unsigned int>("unsigned int");
    coll_bits<unsigned long>("unsigned long");
    // the typed names without a team are C++ overloads of the exported team-first symbols
    int *a = static_cast<int *>(ishmem_malloc(4 * sizeof(int)));
    int *b = static_cast<int *>(ishmem_malloc(4 * sizeof(int)));
    a[0] = t_me;
    CHECK(ishmem_int_sum_reduce(b, a, 1) == 0 && b[0] == t_npes * (t_npes - 1) / 2, "ishmem_int_sum_reduce(3 args)");
    CHECK(ishmem_int_max_reduce(ISHMEM_TEAM_WORLD, b, a, 1) == 0 && b[0] == t_npes - 1, "ishmem_int_max_reduce(4 args)");
    CHECK(ishmem_broadcastmem(b, a, 4, 0) == 0 && b[0] == 0, "ishmem_broadcastmem(4 args)");
    CHECK(ishmem_team_sync(ISHMEM_TEAM_WORLD) == 0, "team_sync");
    ishmem_free(b);
    ishmem_free(a);

    ishmem_barrier_all();
    ishmem_free(area);
    return test_finish("overloads");
}
