/* ctx_quiet: a context's quiet waits for its own operations and for nothing else (issue 25).
 * Needs 4 PEs on 2 nodes (ISHMEM_NODE_SPLIT=2 or pretend nodes): PEs 0,1 and 2,3. PE 3 (S)
 * is stopped with SIGSTOP by its node peer PE 2 (H), so that no network operation to S can
 * complete (S's provider never runs). Then PE 0:
 *   1. posts a put to S on context A (it stays outstanding),
 *   2. puts to H and adds to a word of H on context B and calls shmem_ctx_quiet(B): it must
 *      return although A's put is outstanding (a quiet of every operation would wait for S for ever: the
 *      job then ends with the network's stall error); it tells H so (flag `go`, through B),
 *   3. calls shmem_ctx_quiet(A): it must not return while S is stopped; when it returns it
 *      tells H (flag `returned`, through B).
 * H checks, while S is still stopped: B's data arrived, S's copy of A's data is still 0 (A's
 * put really was outstanding when B's quiet returned), and for 3 s that `returned` does not
 * come (a quiet that waits for nothing would send it at once); then H resumes S (SIGCONT) and
 * `returned` must come. S checks A's put landed. The last line is
 * "PASS: ctx_quiet (N PEs)"; on other layouts (one node, other PE counts) only the value part
 * runs, saying so. */
#define _GNU_SOURCE
#include <shmem.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define N 16
#define I 0 /* the initiator */
#define H 2 /* the helper, on S's node */
#define S 3 /* the stopped PE */

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: ctx_quiet: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond);   \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static int s_pid, stopped, go, returned, s_release, total;
static int a_data[N], b_data[N];
static long a_amo;

/* The scheduler state of pid (R, S, T, ...), '?' when unknown. */
static char proc_state(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void stall_part(void) {
    if (me == S)
        s_pid = (int)getpid();
    memset(a_data, 0, sizeof a_data);
    memset(b_data, 0, sizeof b_data);
    a_amo = 0;
    shmem_barrier_all();
    if (me == H) {
        int pid = shmem_int_g(&s_pid, S);
        CHECK(kill(pid, SIGSTOP) == 0);
        while (proc_state(pid) != 'T' && proc_state(pid) != 't')
            usleep(1000);
        shmem_int_p(&stopped, 1, I);
        shmem_quiet();

        shmem_int_wait_until(&go, SHMEM_CMP_EQ, 1);
        /* context B's quiet returned: its data is here, and S is still stopped, with A's put
         * not applied (S's memory is mapped here, so this is a plain load) */
        for (int i = 0; i < N; i++)
            CHECK(b_data[i] == 2000 + i);
        CHECK(a_amo == 5);
        CHECK(proc_state(pid) == 'T' || proc_state(pid) == 't');
        int *s_a = shmem_ptr(a_data, S);
        CHECK(s_a != NULL);
        if (s_a)
            CHECK(s_a[N - 1] == 0);
        /* A's quiet must not return while S is stopped */
        double end = now_s() + 3.0;
        while (now_s() < end && !shmem_int_test(&returned, SHMEM_CMP_EQ, 1))
            usleep(2000);
        int early = shmem_int_test(&returned, SHMEM_CMP_EQ, 1);
        if (early)
            printf("FAIL: ctx_quiet: PE %d: shmem_ctx_quiet(A) on PE %d returned while PE %d, the target of A's "
                   "put, was stopped\n", me, I, S);
        CHECK(!early);
        CHECK(kill(pid, SIGCONT) == 0);
        shmem_int_wait_until(&returned, SHMEM_CMP_EQ, 1);
        shmem_int_p(&s_release, 1, S); /* a store: S is on this node */
    } else if (me == S) {
        /* stopped in here by H; no library call until released */
        while (!*(volatile int *)&s_release)
            usleep(1000);
        for (int i = 0; i < N; i++)
            CHECK(a_data[i] == 1000 + i);
    } else if (me == I) {
        shmem_int_wait_until(&stopped, SHMEM_CMP_EQ, 1);
        shmem_ctx_t a, b;
        CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &a) == 0);
        CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &b) == 0);
        int src[N];
        for (int i = 0; i < N; i++)
            src[i] = 1000 + i;
        shmem_ctx_int_put(a, a_data, src, N, S);
        for (int i = 0; i < N; i++)
            src[i] = 2000 + i;
        shmem_ctx_int_put(b, b_data, src, N, H);
        shmem_ctx_long_atomic_add(b, &a_amo, 5, H);
        shmem_ctx_quiet(b); /* must not wait for A's operations to S */
        shmem_ctx_int_p(b, &go, 1, H);
        shmem_ctx_quiet(b);
        shmem_ctx_quiet(a); /* returns once S runs again and has them */
        shmem_ctx_int_p(b, &returned, 1, H);
        shmem_ctx_quiet(b);
        shmem_ctx_destroy(a);
        shmem_ctx_destroy(b);
    }
    shmem_barrier_all();
}

/* Any layout: a context's quiet makes its puts visible, ordered by its fence. */
static void value_part(void) {
    shmem_ctx_t c;
    CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &c) == 0);
    memset(a_data, 0, sizeof a_data);
    shmem_barrier_all();
    int next = (me + 1) % npes, src[N];
    for (int i = 0; i < N; i++)
        src[i] = me * 100 + i;
    shmem_ctx_int_put_nbi(c, a_data, src, N - 1, next);
    shmem_ctx_fence(c);
    shmem_ctx_int_p(c, &a_data[N - 1], 1, next);
    shmem_ctx_quiet(c);
    shmem_barrier_all();
    int prev = (me + npes - 1) % npes;
    CHECK(a_data[N - 1] == 1);
    for (int i = 0; i < N - 1; i++)
        CHECK(a_data[i] == prev * 100 + i);
    shmem_ctx_destroy(c);
    shmem_barrier_all();
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    /* 2 nodes of 2: PE 0 reaches S through the network, H through shared memory */
    int layout = npes == 4;
    if (layout) {
        int mine[2] = {shmem_ptr(&total, S) != NULL, shmem_ptr(&total, H) != NULL};
        static int all[4][2];
        shmem_int_put(all[me], mine, 2, 0);
        shmem_barrier_all();
        if (me == 0)
            layout = !all[I][0] && !all[I][1] && all[H][0] && all[S][1];
        static int ok;
        if (me == 0)
            ok = layout;
        shmem_barrier_all();
        layout = shmem_int_g(&ok, 0);
        shmem_barrier_all();
    }
    value_part();
    if (layout)
        stall_part();
    else if (me == 0)
        printf("ctx_quiet: not 4 PEs on 2 nodes of 2: the part with a stopped PE is not run\n");
    shmem_int_atomic_add(&total, failures, 0);
    shmem_barrier_all();
    if (me == 0) {
        if (total == 0)
            printf("PASS: ctx_quiet (%d PEs)\n", npes);
        else
            printf("FAIL: ctx_quiet: %d failures\n", total);
    }
    shmem_finalize();
    return total == 0 ? 0 : 1;
}
