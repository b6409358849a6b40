/* stress: ISHMEM_THREAD_MULTIPLE, T threads per PE (default 8), each doing a seeded random mix
 * of puts, gets, AMOs, signals, waits and quiets against verifiable patterns, K operations per
 * thread (default 20000); then exact checks: no update lost or duplicated.
 *   stress [K [T [seed]]]       (STRESS_OPS=K in the environment also sets K: the long mode)
 *
 * What is checked, exactly:
 * - puts: thread t of PE w owns WORDS words on every PE (region[w][t][...]); it keeps a shadow
 *   of what it last wrote to each; gets after a quiet must read the shadow, and at the end every
 *   word on every PE must equal it.
 * - tickets: fetch_inc on a counter of a random PE gives a ticket; the thread sets the ticket's
 *   bit in that PE's bitmap with fetch_or, which must not have been set (a duplicate). At the
 *   end every counter equals the tickets drawn on it (sum over all threads of all PEs) and
 *   exactly its first `counter` bits are set (none lost).
 * - adds: atomic_add of random values to a random PE's accumulator: the total equals the sum
 *   of the values sent to it.
 * - signals: thread t sends S messages to thread t of the next PE (put_signal, ADD 1, message j
 *   in its own box); a wait for message j (only once the waiter has itself sent j, so that the
 *   ring cannot deadlock) checks every box up to it; at the end the signal word is exactly S.
 * Prints the operation counts; no time is asserted. */
#include "test_util.h"
#include <pthread.h>

static int T = 8;
static long K = 20000;
static unsigned long long seed = 12345;
enum { WORDS = 64 };

static int next, prev;
static long *region;        /* [npes][T][WORDS] */
static long *tickets;       /* one counter per PE */
static uint64_t *bitmap;    /* bits of tickets drawn on this PE: npes * T * K bits */
static long *acc;           /* one accumulator per PE */
static uint64_t *sig;       /* [T]: messages from thread t of prev */
static long *box;           /* [T][S]: message j from thread t of prev */
static long S;              /* messages per thread */
static long *drawn;         /* [npes]: tickets drawn on each PE by this PE's threads (sum) */
static long *added;         /* [npes]: values added to each PE by this PE's threads (sum) */
static long *drawn_all, *added_all; /* symmetric, the sums over all PEs */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long ops_total[8];   /* put get ticket add send wait quiet fence */

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static long *word_of(int writer, int t, int k) { return &region[((long)writer * T + t) * WORDS + k]; }
static long msg_value(int sender, int t, long j) { return ((long)sender << 48) | ((long)t << 40) | j; }

static void send_msg(int t, long j) {
    long v = msg_value(t_me, t, j);
    ishmem_long_put_signal(&box[(long)t * S + j], &v, 1, &sig[t], 1, ISHMEM_SIGNAL_ADD, next);
}

static long check_box(int t, long upto, long from) {
    long fails = 0;
    for (long j = from; j < upto; j++) {
        long got = box[(long)t * S + j], want = msg_value(prev, t, j);
        if (got != want) {
            fails++;
            CHECK(got == want, "thread %d message %ld: got %lx want %lx", t, j, got, want);
        }
    }
    return fails;
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t s = seed ^ ((uint64_t)t_me << 32) ^ (uint64_t)t * 0x1234567ull;
    long *shadow = calloc((size_t)t_npes * WORDS, sizeof(long));
    char *pending = calloc((size_t)t_npes, 1);
    long *my_drawn = calloc((size_t)t_npes, sizeof(long));
    long *my_added = calloc((size_t)t_npes, sizeof(long));
    long ops[8] = {0};
    long seq = 0, sent = 0, recvd = 0, fails = 0;
    for (long i = 0; i < K; i++) {
        uint64_t r = rnd(&s);
        int pe = (int)((r >> 8) % (uint64_t)t_npes);
        int op = (int)(r % 100);
        if (op < 30) { /* put 1..4 consecutive words of own region on pe */
            int n = 1 + (int)((r >> 20) % 4), k = (int)((r >> 24) % (WORDS - n + 1));
            long v[4];
            for (int j = 0; j < n; j++) v[j] = shadow[pe * WORDS + k + j] = ((long)t_me << 48) | ((long)t << 40) | ++seq;
            if (n == 1) ishmem_long_p(word_of(t_me, t, k), v[0], pe);
            else ishmem_long_put(word_of(t_me, t, k), v, (size_t)n, pe);
            pending[pe] = 1;
            ops[0]++;
        } else if (op < 45) { /* get a word of own region; exact once quieted */
            int k = (int)((r >> 24) % WORDS);
            long got = (r >> 40) & 1 ? ishmem_long_g(word_of(t_me, t, k), pe) : 0;
            if (!((r >> 40) & 1)) ishmem_long_get(&got, word_of(t_me, t, k), 1, pe);
            if (!pending[pe] && got != shadow[pe * WORDS + k]) {
                fails++;
                CHECK(0, "thread %d: get of word %d on PE %d: %lx, wrote %lx", t, k, pe, got, shadow[pe * WORDS + k]);
            }
            ops[1]++;
        } else if (op < 60) { /* a ticket: unique, never lost */
            long tk = ishmem_long_atomic_fetch_inc(tickets, pe);
            if (tk < 0 || tk >= (long)t_npes * T * K) {
                fails++;
                CHECK(0, "ticket %ld out of range on PE %d", tk, pe);
            } else {
                uint64_t bit = (uint64_t)1 << (tk % 64);
                uint64_t old = ishmem_uint64_atomic_fetch_or(&bitmap[tk / 64], bit, pe);
                if (old & bit) {
                    fails++;
                    CHECK(0, "ticket %ld drawn twice on PE %d", tk, pe);
                }
            }
            my_drawn[pe]++;
            ops[2]++;
        } else if (op < 70) { /* add */
            long v = (long)((r >> 32) % 1000) + 1;
            if ((r >> 45) & 1) ishmem_long_atomic_add(acc, v, pe);
            else (void)ishmem_long_atomic_fetch_add(acc, v, pe);
            my_added[pe] += v;
            ops[3]++;
        } else if (op < 82) { /* send a message to thread t of next */
            if (sent < S) {
                send_msg(t, sent++);
                ops[4]++;
            }
        } else if (op < 94) { /* wait for the next message (one this thread has itself sent) */
            if (recvd < sent) {
                uint64_t v = ishmem_signal_wait_until(&sig[t], ISHMEM_CMP_GE, (uint64_t)recvd + 1);
                if (v > (uint64_t)S) {
                    fails++;
                    CHECK(0, "thread %d: signal %llu beyond %ld", t, (unsigned long long)v, S);
                    v = (uint64_t)S;
                }
                fails += check_box(t, (long)v, recvd);
                recvd = (long)v;
                ops[5]++;
            }
        } else if (op < 98) {
            ishmem_quiet();
            memset(pending, 0, (size_t)t_npes);
            ops[6]++;
        } else {
            ishmem_fence();
            ops[7]++;
        }
    }
    while (sent < S) send_msg(t, sent++);
    uint64_t v = ishmem_signal_wait_until(&sig[t], ISHMEM_CMP_GE, (uint64_t)S);
    fails += check_box(t, S, recvd);
    ishmem_quiet();
    /* every word of own region, on every PE, holds what this thread last wrote there */
    for (int pe = 0; pe < t_npes; pe++) {
        long got[WORDS];
        ishmem_long_get(got, word_of(t_me, t, 0), WORDS, pe);
        for (int k = 0; k < WORDS; k++)
            if (got[k] != shadow[pe * WORDS + k]) {
                fails++;
                CHECK(0, "thread %d: word %d on PE %d: %lx, last wrote %lx", t, k, pe, got[k], shadow[pe * WORDS + k]);
            }
    }
    pthread_mutex_lock(&mu);
    for (int pe = 0; pe < t_npes; pe++) {
        drawn[pe] += my_drawn[pe];
        added[pe] += my_added[pe];
    }
    for (int j = 0; j < 8; j++) ops_total[j] += ops[j];
    pthread_mutex_unlock(&mu);
    (void)v;
    free(shadow);
    free(pending);
    free(my_drawn);
    free(my_added);
    return (void *)(intptr_t)fails;
}

int main(int argc, char **argv) {
    const char *env = getenv("STRESS_OPS");
    if (env) K = atol(env);
    if (argc > 1) K = atol(argv[1]);
    if (argc > 2) T = atoi(argv[2]);
    if (argc > 3) seed = strtoull(argv[3], NULL, 0);
    int provided = -1;
    int rc = ishmem_init_thread(ISHMEM_THREAD_MULTIPLE, &provided);
    test_init_ids();
    CHECK_EQ(rc, 0);
    CHECK_EQ(provided, ISHMEM_THREAD_MULTIPLE);
    if (K < 1 || T < 1 || T > 64) {
        fprintf(stderr, "FAIL: usage: stress [ops_per_thread>=1 [threads 1..64 [seed]]]\n");
        return 2;
    }
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;
    S = K / 8 + 1;
    long bits = (long)t_npes * T * K;
    region = ishmem_calloc((size_t)t_npes * T * WORDS, sizeof(long));
    tickets = ishmem_calloc(1, sizeof(long));
    bitmap = ishmem_calloc((size_t)(bits + 63) / 64, sizeof(uint64_t));
    acc = ishmem_calloc(1, sizeof(long));
    sig = ishmem_calloc((size_t)T, sizeof(uint64_t));
    box = ishmem_calloc((size_t)T * S, sizeof(long));
    drawn_all = ishmem_calloc((size_t)t_npes, sizeof(long));
    added_all = ishmem_calloc((size_t)t_npes, sizeof(long));
    long *drawn_sym = ishmem_calloc((size_t)t_npes, sizeof(long));
    long *added_sym = ishmem_calloc((size_t)t_npes, sizeof(long));
    CHECK(region && tickets && bitmap && acc && sig && box && drawn_all && added_all && drawn_sym && added_sym,
          "allocation failed");
    drawn = drawn_sym;
    added = added_sym;
    ishmem_barrier_all();

    pthread_t th[64];
    for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    long fails = 0;
    for (int t = 0; t < T; t++) {
        void *r;
        pthread_join(th[t], &r);
        fails += (long)(intptr_t)r;
    }
    ishmem_barrier_all();
    /* every PE's tickets and sums, summed over all PEs */
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, drawn_all, drawn_sym, (size_t)t_npes);
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, added_all, added_sym, (size_t)t_npes);
    long want_tickets = drawn_all[t_me];
    CHECK(*tickets == want_tickets, "PE %d counter %ld, tickets drawn on it %ld", t_me, *tickets, want_tickets);
    long set = 0, stray = 0;
    for (long b = 0; b < bits; b++) {
        int on = (bitmap[b / 64] >> (b % 64)) & 1;
        if (on) set++;
        if (on != (b < want_tickets)) stray++;
    }
    CHECK(set == want_tickets && stray == 0, "bitmap: %ld bits set, %ld misplaced, %ld tickets", set, stray, want_tickets);
    CHECK(*acc == added_all[t_me], "accumulator %ld, added %ld", *acc, added_all[t_me]);
    for (int t = 0; t < T; t++)
        CHECK(sig[t] == (uint64_t)S, "signal of thread %d: %llu, want %ld", t, (unsigned long long)sig[t], S);
    CHECK(fails == 0, "%ld failed checks in the threads", fails);
    long total = 0;
    for (int j = 0; j < 8; j++) total += ops_total[j];
    printf("stress: PE %d: %d threads x %ld ops: put %ld get %ld ticket %ld add %ld send %ld wait %ld quiet %ld fence %ld (total %ld; tickets here %ld)\n",
           t_me, T, K, ops_total[0], ops_total[1], ops_total[2], ops_total[3], ops_total[4], ops_total[5], ops_total[6],
           ops_total[7], total, want_tickets);
    fflush(stdout);
    ishmem_barrier_all();
    return test_finish("stress");
}
