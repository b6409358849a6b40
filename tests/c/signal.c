/* signal: put_signal (SET and ADD, blocking and nbi, typed, SIZE and mem), signal_fetch,
 * signal_wait_until, ishmemx_signal_add / ishmemx_signal_set, a ping-pong around the ring. */
#include "test_util.h"

enum { N = 64, ROUNDS = 300 };
static int next, prev;
static uint64_t g_sig; /* a global signal word */
static int g_payload[N];

int main(void) {
    test_init();
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;
    uint64_t *sig = ishmem_calloc(16, sizeof(uint64_t));
    int *data = ishmem_calloc(N, sizeof(int));
    int src[N];
    for (int i = 0; i < N; i++)
        src[i] = t_me * 1000 + i;
    ishmem_barrier_all();

    /* SET: the data is there once the signal is. */
    ishmem_int_put_signal(data, src, N, &sig[0], 100 + (uint64_t)t_me, ISHMEM_SIGNAL_SET, next);
    uint64_t got = ishmem_signal_wait_until(&sig[0], ISHMEM_CMP_EQ, 100 + (uint64_t)prev);
    CHECK_EQ(got, 100 + (uint64_t)prev);
    for (int i = 0; i < N; i++)
        CHECK(data[i] == prev * 1000 + i, "put_signal SET: data[%d] = %d", i, data[i]);
    CHECK_EQ(ishmem_signal_fetch(&sig[0]), 100 + (uint64_t)prev);

    /* ADD from every PE to every PE: exact sum, every PE's slot arrived. */
    ishmem_barrier_all();
    memset(data, 0, sizeof(int) * N);
    ishmem_barrier_all();
    for (int pe = 0; pe < t_npes; pe++) {
        int v = 7 * t_me + 1;
        ishmem_int_put_signal(&data[t_me], &v, 1, &sig[1], (uint64_t)t_me + 1, ISHMEM_SIGNAL_ADD, pe);
    }
    uint64_t want = (uint64_t)t_npes * (t_npes + 1) / 2;
    got = ishmem_signal_wait_until(&sig[1], ISHMEM_CMP_GE, want);
    CHECK_EQ(got, want);
    for (int pe = 0; pe < t_npes; pe++)
        CHECK(data[pe] == 7 * pe + 1, "put_signal ADD: slot %d = %d", pe, data[pe]);

    /* nbi forms, typed: long SET then double ADD. */
    ishmem_barrier_all();
    long lsrc[4] = {t_me, -t_me, 3, 4}, *ldst = ishmem_calloc(4, sizeof(long));
    double dsrc[2] = {t_me + 0.5, 2.25}, *ddst = ishmem_calloc(2, sizeof(double));
    ishmem_long_put_signal_nbi(ldst, lsrc, 4, &sig[2], 0xABCDEF0123ULL, ISHMEM_SIGNAL_SET, next);
    ishmem_double_put_signal_nbi(ddst, dsrc, 2, &sig[3], 5, ISHMEM_SIGNAL_ADD, next);
    ishmem_quiet();
    CHECK_EQ(ishmem_signal_wait_until(&sig[2], ISHMEM_CMP_NE, 0), 0xABCDEF0123ULL);
    CHECK_EQ(ishmem_signal_wait_until(&sig[3], ISHMEM_CMP_GT, 4), 5);
    CHECK(ldst[0] == prev && ldst[1] == -prev && ldst[3] == 4, "long_put_signal_nbi data");
    CHECK(ddst[0] == prev + 0.5 && ddst[1] == 2.25, "double_put_signal_nbi data");

    /* SIZE and mem forms accumulate into one signal word (ADD), nbi and blocking. */
    ishmem_barrier_all();
    unsigned char *bdst = ishmem_calloc(6, 64);
    unsigned char bsrc[64];
    for (int i = 0; i < 64; i++)
        bsrc[i] = (unsigned char)(t_me * 16 + i);
    ishmem_put8_signal(bdst + 0 * 64, bsrc, 64, &sig[4], 1, ISHMEM_SIGNAL_ADD, next);
    ishmem_put16_signal_nbi(bdst + 1 * 64, bsrc, 32, &sig[4], 2, ISHMEM_SIGNAL_ADD, next);
    ishmem_put32_signal(bdst + 2 * 64, bsrc, 16, &sig[4], 4, ISHMEM_SIGNAL_ADD, next);
    ishmem_put64_signal_nbi(bdst + 3 * 64, bsrc, 8, &sig[4], 8, ISHMEM_SIGNAL_ADD, next);
    ishmem_put128_signal(bdst + 4 * 64, bsrc, 4, &sig[4], 16, ISHMEM_SIGNAL_ADD, next);
    ishmem_putmem_signal_nbi(bdst + 5 * 64, bsrc, 64, &sig[4], 32, ISHMEM_SIGNAL_ADD, next);
    ishmem_quiet();
    CHECK_EQ(ishmem_signal_wait_until(&sig[4], ISHMEM_CMP_EQ, 63), 63);
    int bad = 0;
    for (int k = 0; k < 6 * 64; k++)
        bad += bdst[k] != (unsigned char)(prev * 16 + k % 64);
    CHECK(bad == 0, "SIZE/mem put_signal: %d bytes wrong", bad);

    /* ishmemx_signal_set / ishmemx_signal_add, on the heap and on a global. */
    ishmem_barrier_all();
    /* two AMOs to one word are ordered only by a fence (signaling/AMO sections: no
     * ordering without a memory-ordering routine); across nodes the set and the add may
     * otherwise land in either order (seen: signal.srun.64, the add before the set) */
    ishmemx_signal_set(&sig[5], 1000, next);
    ishmem_fence();
    ishmemx_signal_add(&sig[5], 234, next);
    ishmemx_signal_add(&g_sig, (uint64_t)t_me + 1, 0);
    ishmem_barrier_all();
    CHECK_EQ(ishmem_signal_fetch(&sig[5]), 1234);
    if (t_me == 0)
        CHECK_EQ(ishmem_signal_fetch(&g_sig), want);
    /* signal_wait_until with every comparison, already satisfied */
    CHECK_EQ(ishmem_signal_wait_until(&sig[5], ISHMEM_CMP_LE, 1234), 1234);
    CHECK_EQ(ishmem_signal_wait_until(&sig[5], ISHMEM_CMP_LT, 1235), 1234);
    CHECK_EQ(ishmem_signal_wait_until(&sig[5], ISHMEM_CMP_GE, 1234), 1234);
    CHECK_EQ(ishmem_signal_wait_until(&sig[5], ISHMEM_CMP_GT, 0), 1234);
    CHECK_EQ(ishmem_signal_wait_until(&sig[5], ISHMEM_CMP_NE, 7), 1234);
    /* ADD wraps modulo 2^64 */
    ishmem_barrier_all();
    ishmemx_signal_set(&sig[6], UINT64_MAX, next);
    ishmem_fence();
    ishmemx_signal_add(&sig[6], 2, next);
    ishmem_barrier_all();
    CHECK_EQ(ishmem_signal_fetch(&sig[6]), 1);
    /* put_signal onto a global payload and a global signal word */
    ishmem_barrier_all();
    ishmem_int_put_signal(g_payload, src, N, &g_sig, 77, ISHMEM_SIGNAL_SET, next);
    ishmem_signal_wait_until(&g_sig, ISHMEM_CMP_EQ, 77);
    CHECK(g_payload[N - 1] == prev * 1000 + N - 1, "global payload %d", g_payload[N - 1]);

    /* Ping-pong around the ring: PE 0 starts round r, each PE forwards it. */
    ishmem_barrier_all();
    int *token = ishmem_calloc(2, sizeof(int));
    uint64_t *rsig = &sig[7];
    for (int r = 1; r <= ROUNDS; r++) {
        int msg[2] = {r, t_me};
        if (t_me == 0) {
            ishmem_int_put_signal(token, msg, 2, rsig, (uint64_t)r, ISHMEM_SIGNAL_SET, next);
            ishmem_signal_wait_until(rsig, ISHMEM_CMP_EQ, (uint64_t)r);
        } else {
            ishmem_signal_wait_until(rsig, ISHMEM_CMP_EQ, (uint64_t)r);
        }
        CHECK(token[0] == r && token[1] == prev, "round %d: token %d from %d", r, token[0], token[1]);
        if (t_me != 0)
            ishmem_int_put_signal_nbi(token, msg, 2, rsig, (uint64_t)r, ISHMEM_SIGNAL_SET, next);
        if (t_failures > 20)
            break;
    }
    ishmem_barrier_all();
    ishmem_free(token);
    ishmem_free(bdst);
    ishmem_free(ddst);
    ishmem_free(ldst);
    ishmem_free(data);
    ishmem_free(sig);
    return test_finish("signal");
}
