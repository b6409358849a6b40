/* threads: ishmem_init_thread(ISHMEM_THREAD_MULTIPLE); 4 pthreads per PE doing AMOs, puts,
 * gets and put_signal concurrently; exact totals. */
#include "test_util.h"
#include <pthread.h>

enum { T = 4, K = 2000 };
static int next, prev;
static long *counter;   /* on PE 0: every thread of every PE adds 1, K times */
static uint64_t *bits;  /* on every PE: thread t of prev sets bit t, via fetch_or */
static int *slots;      /* T * K ints: thread t of prev writes slot t*K+i */
static uint64_t *sig;   /* T words: thread t of prev adds K via put_signal */
static long *blk;       /* T * 8 longs written with put_signal */
static long g_total;    /* a global: every thread adds its thread number + 1 on every PE */

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    long fails = 0;
    for (int i = 0; i < K; i++) {
        long old = ishmem_long_atomic_fetch_add(counter, 1, 0);
        if (old < 0 || old >= (long)t_npes * T * K)
            fails++;
        ishmem_int_p(&slots[t * K + i], t_me * 1000000 + t * K + i, next);
        if (i % 100 == 0) {
            for (int pe = 0; pe < t_npes; pe++)
                ishmem_long_atomic_add(&g_total, t + 1, pe);
            int back = ishmem_int_g(&slots[t * K + i], next);
            if (back != t_me * 1000000 + t * K + i)
                fails++;
        }
    }
    ishmem_uint64_atomic_fetch_or(bits, (uint64_t)1 << t, next);
    long b[8];
    for (int j = 0; j < 8; j++)
        b[j] = t_me * 100 + t * 10 + j;
    for (int i = 0; i < K; i++)
        ishmem_long_put_signal(&blk[t * 8], b, 8, &sig[t], 1, ISHMEM_SIGNAL_ADD, next);
    /* each thread waits for its own signal word, fed by the same thread of prev */
    ishmem_signal_wait_until(&sig[t], ISHMEM_CMP_EQ, K);
    return (void *)(intptr_t)fails;
}

int main(void) {
    int provided = -1;
    int rc = ishmem_init_thread(ISHMEM_THREAD_MULTIPLE, &provided);
    test_init_ids();
    CHECK_EQ(rc, 0);
    CHECK_EQ(provided, ISHMEM_THREAD_MULTIPLE);
    int q = -1;
    ishmem_query_thread(&q);
    CHECK_EQ(q, ISHMEM_THREAD_MULTIPLE);
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;

    counter = ishmem_calloc(1, sizeof(long));
    bits = ishmem_calloc(1, sizeof(uint64_t));
    slots = ishmem_calloc(T * K, sizeof(int));
    sig = ishmem_calloc(T, sizeof(uint64_t));
    blk = ishmem_calloc(T * 8, sizeof(long));
    ishmem_barrier_all();

    pthread_t th[T];
    for (int t = 0; t < T; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < T; t++) {
        void *r = NULL;
        pthread_join(th[t], &r);
        CHECK((intptr_t)r == 0, "thread %d saw %ld wrong values", t, (long)(intptr_t)r);
    }
    ishmem_barrier_all();

    if (t_me == 0)
        CHECK_EQ(*counter, (long)t_npes * T * K);
    CHECK_EQ(*bits, (1u << T) - 1);
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < K; i++)
            bad += slots[t * K + i] != prev * 1000000 + t * K + i;
    CHECK(bad == 0, "%d slots wrong", bad);
    for (int t = 0; t < T; t++) {
        CHECK_EQ(sig[t], K);
        for (int j = 0; j < 8; j++)
            CHECK(blk[t * 8 + j] == prev * 100 + t * 10 + j, "blk[%d][%d]", t, j);
    }
    long want = 0;
    for (int t = 0; t < T; t++)
        want += (long)(t + 1) * (K / 100);
    CHECK_EQ(g_total, want * t_npes);

    ishmem_barrier_all();
    ishmem_free(blk);
    ishmem_free(sig);
    ishmem_free(slots);
    ishmem_free(bits);
    ishmem_free(counter);
    return test_finish("threads");
}
