/* globals: the executable's globals and statics are symmetric: .data, a large .bss (64 MiB),
 * statics of functions, variables of every alignment; each PE writes into the next PE's copy
 * with puts and AMOs; local values written before init survive the move into shared memory.
 * Built twice: as a PIE (the default) and with -no-pie. */
#include "test_util.h"

#define BIG (64u << 20)
static unsigned char big_bss[BIG];                 /* .bss, 64 MiB */
long data_arr[8] = {1, 2, 3, 4, 5, 6, 7, 8};       /* .data */
static char small_char = 'x';                      /* .data, 1 byte */
static _Alignas(64) double aligned_dbl[4];         /* .bss, 64-byte aligned */
uint64_t counters[16];                             /* .bss, AMO targets */
static int before_init_bss;                        /* written before ishmem_init */
static int before_init_data = 7;                   /* changed before ishmem_init */

static int *fn_static(void) {
    static int s[3] = {9, 9, 9};
    return s;
}

int main(void) {
    before_init_bss = 1234;
    before_init_data = 4321;
    big_bss[BIG / 2] = 0x5A;
    test_init();
    int next = (t_me + 1) % t_npes, prev = (t_me + t_npes - 1) % t_npes;

    /* values written before init are still there */
    CHECK_EQ(before_init_bss, 1234);
    CHECK_EQ(before_init_data, 4321);
    CHECK_EQ(big_bss[BIG / 2], 0x5A);
    CHECK_EQ(data_arr[7], 8);
    ishmem_barrier_all();

    /* puts into every kind of global of the next PE */
    unsigned char v = (unsigned char)(0x10 + t_me);
    ishmem_uchar_p(&big_bss[0], v, next);
    ishmem_uchar_p(&big_bss[BIG - 1], v, next);
    ishmem_putmem(&big_bss[BIG / 4], &v, 1, next);
    long l = 100 + t_me;
    ishmem_long_put(&data_arr[3], &l, 1, next);
    ishmem_char_p(&small_char, (char)('a' + t_me), next);
    double d[4] = {t_me + 0.25, t_me + 0.5, t_me + 0.75, t_me + 1.0};
    ishmem_double_put(aligned_dbl, d, 4, next);
    int s = 50 + t_me;
    ishmem_int_put(&fn_static()[2], &s, 1, next);
    for (int i = 0; i < 16; i++)
        ishmem_uint64_atomic_add(&counters[i], (uint64_t)(t_me + 1) << i, 0);
    ishmem_barrier_all();

    CHECK_EQ(big_bss[0], 0x10 + prev);
    CHECK_EQ(big_bss[BIG - 1], 0x10 + prev);
    CHECK_EQ(big_bss[BIG / 4], 0x10 + prev);
    CHECK_EQ(big_bss[BIG / 2], 0x5A);
    CHECK_EQ(data_arr[3], 100 + prev);
    CHECK_EQ(data_arr[2], 3);
    CHECK_EQ(small_char, 'a' + prev);
    for (int i = 0; i < 4; i++)
        CHECK(aligned_dbl[i] == prev + 0.25 * (i + 1), "aligned_dbl[%d] = %g", i, aligned_dbl[i]);
    CHECK_EQ(fn_static()[2], 50 + prev);
    CHECK_EQ(fn_static()[1], 9);
    if (t_me == 0) {
        uint64_t sum = (uint64_t)t_npes * (t_npes + 1) / 2;
        for (int i = 0; i < 16; i++)
            CHECK_EQ(counters[i], sum << i);
    }
    /* gets and ishmem_ptr on globals */
    CHECK_EQ(ishmem_uchar_g(&big_bss[BIG - 1], next), 0x10 + t_me);
    unsigned char *far = ishmem_ptr(&big_bss[BIG - 1], next);
    if (t_same_node(next))
        CHECK(far && *far == 0x10 + t_me, "ishmem_ptr into the big .bss");
    else
        CHECK(far == NULL, "ishmem_ptr into another node's .bss");
    long got[8];
    ishmem_long_get(got, data_arr, 8, prev);
    CHECK(got[3] == 100 + (prev + t_npes - 1) % t_npes && got[7] == 8, "get of .data: %ld %ld",
          got[3], got[7]);
    ishmem_barrier_all();
    return test_finish("globals");
}
