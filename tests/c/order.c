/* order: fence, quiet, barrier_all and sync_all make earlier stores visible. */
#include "test_util.h"

enum { N = 256, ITERS = 200 };
static int next, prev;
static long g_seq;

int main(void) {
    test_init();
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;
    int *data = ishmem_calloc(N, sizeof(int));
    long *flag = ishmem_calloc(2, sizeof(long));
    long *counter = ishmem_calloc(1, sizeof(long));
    int src[N];

    /* fence: data then flag, in order, many times. */
    for (int it = 1; it <= ITERS; it++) {
        for (int i = 0; i < N; i++)
            src[i] = it * 10000 + t_me * 100 + i % 100;
        ishmem_int_put(data, src, N, next);
        ishmem_fence();
        ishmem_long_p(&flag[0], it, next);
        ishmem_long_wait_until(&flag[0], ISHMEM_CMP_EQ, it);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += data[i] != it * 10000 + prev * 100 + i % 100;
        CHECK(bad == 0, "fence: iteration %d: %d stale elements", it, bad);
        /* tell prev that its next message may come (our data buffer is free again) */
        ishmem_long_atomic_set(&flag[1], it, prev);
        ishmem_long_wait_until(&flag[1], ISHMEM_CMP_EQ, it);
        if (t_failures)
            break;
    }

    /* quiet: data (nbi) then flag. */
    ishmem_barrier_all();
    for (int i = 0; i < N; i++)
        src[i] = -t_me - i;
    ishmem_int_put_nbi(data, src, N, next);
    ishmem_quiet();
    ishmem_long_atomic_set(&flag[0], -1, next);
    ishmem_long_wait_until(&flag[0], ISHMEM_CMP_EQ, -1);
    for (int i = 0; i < N; i++)
        CHECK(data[i] == -prev - i, "quiet: data[%d] = %d", i, data[i]);
    ishmem_barrier_all(); /* everyone checked before data is written again */

    /* barrier_all completes puts: each PE writes into next, barrier, check. */
    int first_bad = -1;
    for (int it = 0; it < ITERS; it++) {
        int v = it * 7 + t_me;
        ishmem_int_put(&data[it % N], &v, 1, next);
        ishmem_long_atomic_inc(counter, 0);
        ishmem_barrier_all();
        int ok = data[it % N] == it * 7 + prev;
        if (t_me == 0)
            ok &= *counter == (long)(it + 1) * t_npes;
        if (!ok && first_bad < 0) {
            first_bad = it;
            CHECK(data[it % N] == it * 7 + prev, "barrier_all: it %d: data %d", it, data[it % N]);
            if (t_me == 0)
                CHECK(*counter == (long)(it + 1) * t_npes, "barrier_all: counter %ld at it %d",
                      *counter, it);
        }
        ishmem_barrier_all();
    }

    /* sync_all: local stores are seen by the others' gets after it. */
    first_bad = -1;
    for (int it = 0; it < ITERS; it++) {
        g_seq = (long)it * 1000 + t_me;
        data[0] = it;
        ishmem_sync_all();
        long peer = ishmem_long_g(&g_seq, next);
        int pd = ishmem_int_g(&data[0], prev);
        if (first_bad < 0 && (peer != (long)it * 1000 + next || pd != it)) {
            first_bad = it;
            CHECK(peer == (long)it * 1000 + next, "sync_all: it %d: peer seq %ld", it, peer);
            CHECK(pd == it, "sync_all: it %d: peer data %d", it, pd);
        }
        ishmem_sync_all();
    }

    ishmem_barrier_all();
    ishmem_free(counter);
    ishmem_free(flag);
    ishmem_free(data);
    return test_finish("order");
}
