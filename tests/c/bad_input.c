/* bad_input CASE: one bad call per case, made by the last PE while the others wait in a
 * barrier; the library must print one "[PE n] ERROR: <function>: <message>" line and end the
 * whole job with a nonzero status (checked by expect_fail.sh). "exhaust" is a success case:
 * ishmem_malloc returns NULL when the heap is too small. */
#include "test_util.h"
#include <shmem.h> /* the OpenSHMEM contexts, shmem_realloc, shmem_malloc_with_hints */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static int bad_pe(void) { return t_npes - 1; }

/* Others wait; a barrier that returns means the library did not end the job. */
static int others_wait(void) {
    ishmem_barrier_all();
    fprintf(stderr, "FAIL: [PE %d] the barrier returned although PE %d failed\n", t_me, bad_pe());
    return 3;
}

#define BAD_ONLY() if (t_me != bad_pe()) return others_wait()

/* fatal_slow: holds stdout's lock for a second */
static int stdout_held;
static void *hold_stdout(void *arg) {
    (void)arg;
    flockfile(stdout);
    __atomic_store_n(&stdout_held, 1, __ATOMIC_RELEASE);
    sleep(1);
    funlockfile(stdout);
    return NULL;
}

/* ctx_private_thread: a thread other than the creator uses a private context. */
static void *private_put(void *arg) {
    static int word;
    shmem_ctx_int_p(*(shmem_ctx_t *)arg, &word, 1, 0);
    return NULL;
}

/* What the bad PE reaches if the library let the bad call return. */
static int survived(const char *what) {
    fprintf(stderr, "FAIL: [PE %d] %s returned instead of ending the job\n", t_me, what);
    return 4;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "FAIL: usage: bad_input CASE\n");
        return 2;
    }
    const char *c = argv[1];
    int src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int local = 0;

    if (!strcmp(c, "before_init")) {
        void *p = ishmem_malloc(8);
        (void)p;
        return survived("ishmem_malloc before ishmem_init");
    }
    if (!strcmp(c, "before_init_put")) {
        ishmem_int_p(&local, 1, 0);
        return survived("ishmem_int_p before ishmem_init");
    }

    if (!strcmp(c, "status_returns")) {
        /* not an error (issue 14): failures reported by the return value print no ERROR line
         * (a warning with ISHMEM_DEBUG=1) and the program goes on */
        int provided = -5;
        CHECK_EQ(ishmem_init_thread(7, &provided), 1);
        CHECK_EQ(provided, -5);
        CHECK_EQ(ishmemx_get_uniqueid(NULL), 1);
        test_init();
        CHECK_EQ(ishmemx_cumodule_init(NULL), 1);
        return test_finish("status_returns");
    }

    if (!strcmp(c, "config_mismatch")) {
        /* PE 1 takes another push cutover than PE 0: init must refuse */
        const char *r = getenv("ISHMRUN_RANK");
        if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r) r = getenv("PMI_RANK");
        if (r && atoi(r) == 1) setenv("ISHMEM_COLL_SMALL_MAX", "8K", 1);
    }

    test_init();
    int *buf = ishmem_calloc(64, sizeof(int));

    if (!strcmp(c, "pe_range")) {
        BAD_ONLY();
        ishmem_int_put(buf, src, 1, 7);
        return survived("ishmem_int_put to PE 7");
    }
    if (!strcmp(c, "pe_negative")) {
        BAD_ONLY();
        (void)ishmem_long_g((long *)buf, -1);
        return survived("ishmem_long_g from PE -1");
    }
    if (!strcmp(c, "pe_range_amo")) {
        BAD_ONLY();
        ishmem_int_atomic_inc(buf, t_npes);
        return survived("ishmem_int_atomic_inc on PE npes");
    }
    if (!strcmp(c, "lock_not_held")) {
        BAD_ONLY();
        ishmem_clear_lock((long *)buf);
        return survived("ishmem_clear_lock of a lock this PE does not hold");
    }
    if (!strcmp(c, "lock_recursive")) {
        BAD_ONLY();
        ishmem_set_lock((long *)buf);
        ishmem_set_lock((long *)buf);
        return survived("a second ishmem_set_lock of a held lock");
    }
    if (!strcmp(c, "lock_outside")) {
        BAD_ONLY();
        long priv = 0;
        ishmem_set_lock(&priv);
        return survived("ishmem_set_lock on a stack address");
    }
    if (!strcmp(c, "alltoalls_stride")) {
        ishmem_int_alltoalls(ISHMEM_TEAM_WORLD, buf, buf + 64, 0, 1, 1);
        return survived("ishmem_int_alltoalls with dst 0");
    }
    if (!strcmp(c, "outside")) {
        BAD_ONLY();
        ishmem_int_put(&local, src, 1, 0);
        return survived("ishmem_int_put to a stack address");
    }
    if (!strcmp(c, "outside_get")) {
        BAD_ONLY();
        int *priv = malloc(64);
        ishmem_int_get(src, priv, 4, 0);
        return survived("ishmem_int_get from a malloc'ed address");
    }
    if (!strcmp(c, "past_end")) {
        /* run with ISHMEM_SYMMETRIC_SIZE=1M: 2 MiB from the start of a block cannot fit */
        BAD_ONLY();
        size_t n = (size_t)2 << 20;
        char *big = calloc(1, n);
        ishmem_putmem(buf, big, n, 0);
        return survived("ishmem_putmem past the end of the heap");
    }
    if (!strcmp(c, "size_overflow")) {
        BAD_ONLY();
        ishmem_int_put(buf, src, SIZE_MAX / 2, 0);
        return survived("ishmem_int_put of SIZE_MAX/2 ints");
    }
    if (!strcmp(c, "init_twice")) {
        BAD_ONLY();
        ishmem_init();
        return survived("a second ishmem_init");
    }
    if (!strcmp(c, "free_nonheap")) {
        BAD_ONLY();
        ishmem_free(&local);
        return survived("ishmem_free of a stack address");
    }
    if (!strcmp(c, "free_interior")) {
        char *p = ishmem_malloc(64);
        BAD_ONLY();
        ishmem_free(p + 8);
        return survived("ishmem_free of an interior pointer");
    }
    if (!strcmp(c, "double_free")) {
        char *p = ishmem_malloc(64);
        ishmem_free(p);
        BAD_ONLY();
        ishmem_free(p);
        return survived("a second ishmem_free");
    }
    if (!strcmp(c, "exhaust")) {
        /* run with ISHMEM_SYMMETRIC_SIZE=1M (and ISHMEM_DEBUG=1 for the warning) */
        void *p = ishmem_malloc((size_t)2 << 20);
        CHECK(p == NULL, "ishmem_malloc(2 MiB) in a 1 MiB heap returned %p", p);
        void *q = ishmem_calloc((size_t)1 << 20, 4);
        CHECK(q == NULL, "ishmem_calloc(1M, 4) in a 1 MiB heap returned %p", q);
        void *r = ishmem_align(64, SIZE_MAX / 2);
        CHECK(r == NULL, "ishmem_align(64, SIZE_MAX/2) returned %p", r);
        /* the heap still works afterwards */
        int *ok = ishmem_malloc(1024);
        CHECK(ok != NULL, "ishmem_malloc(1 KiB) after exhaustion");
        if (ok) {
            ishmem_int_p(ok, 5, (t_me + 1) % t_npes);
            ishmem_barrier_all();
            CHECK_EQ(*ok, 5);
            ishmem_barrier_all();
            ishmem_free(ok);
        }
        ishmem_free(buf);
        return test_finish("exhaust");
    }
    if (!strcmp(c, "mismatch")) {
        void *p = ishmem_malloc(t_me == bad_pe() ? 32 : 16);
        (void)p;
        ishmem_barrier_all();
        return survived("ishmem_malloc with different sizes");
    }
    if (!strcmp(c, "mismatch_op")) {
        void *p = t_me == bad_pe() ? ishmem_calloc(2, 8) : ishmem_malloc(16);
        (void)p;
        ishmem_barrier_all();
        return survived("ishmem_calloc on one PE, ishmem_malloc on the others");
    }
    if (!strcmp(c, "bad_cmp")) {
        BAD_ONLY();
        ishmem_int_wait_until(buf, 9, 0);
        return survived("ishmem_int_wait_until with cmp 9");
    }
    if (!strcmp(c, "bad_cmp_test")) {
        BAD_ONLY();
        (void)ishmem_long_test((long *)buf, 0, 0);
        return survived("ishmem_long_test with cmp 0");
    }
    if (!strcmp(c, "bad_sigop")) {
        BAD_ONLY();
        uint64_t *sig = (uint64_t *)(buf + 32);
        ishmem_putmem_signal(buf, src, 4, sig, 1, 5, 0);
        return survived("ishmem_putmem_signal with sig_op 5");
    }
    if (!strcmp(c, "unaligned_amo")) {
        BAD_ONLY();
        ishmem_int64_atomic_add((int64_t *)((char *)buf + 4), 1, 0);
        return survived("an unaligned ishmem_int64_atomic_add");
    }
    if (!strcmp(c, "bad_stride")) {
        BAD_ONLY();
        ishmem_int_iput(buf, src, 0, 1, 4, 0);
        return survived("ishmem_int_iput with dst stride 0");
    }
    if (!strcmp(c, "queue_on_cpu")) {
        BAD_ONLY();
        ishmemx_putmem_on_queue(buf, buf, 4, 0, NULL);
        return survived("ishmemx_putmem_on_queue on the CPU backend");
    }
    if (!strcmp(c, "null_source")) {
        BAD_ONLY();
        ishmem_int_put(buf, NULL, 4, 0);
        return survived("ishmem_int_put from NULL");
    }
    if (!strcmp(c, "after_finalize")) {
        ishmem_finalize();
        if (t_me != bad_pe())
            return 0;
        ishmem_int_p(buf, 1, 0);
        return survived("ishmem_int_p after ishmem_finalize");
    }
    if (!strcmp(c, "sigkill")) {
        /* PE 1 dies by SIGKILL after init; the others wait in a barrier */
        if (t_me == 1) {
            raise(SIGKILL);
            pause();
        }
        return others_wait();
    }
    if (!strcmp(c, "no_finalize")) {
        /* PE 1 ends without ishmem_finalize and without running exit handlers (so without the
         * library's finalize at exit, as a PE that dies); the others wait in a barrier */
        if (t_me == 1)
            _exit(0);
        return others_wait();
    }
    if (!strcmp(c, "implicit_finalize")) {
        /* not an error (issue 14): every PE returns from main without ishmem_finalize; the
         * library finalizes at exit, quietly, and the job ends with status 0 on every run */
        int v = 100 + t_me;
        ishmem_int_put(buf, &v, 1, (t_me + 1) % t_npes);
        ishmem_barrier_all();
        CHECK_EQ(ishmem_int_g(buf, t_me), 100 + (t_me + t_npes - 1) % t_npes); /* (GPU heap too) */
        if (t_me == 0 && !t_failures)
            printf("PASS: implicit_finalize (%d PEs)\n", t_npes);
        return t_failures ? 1 : 0;
    }
    if (!strcmp(c, "implicit_mixed")) {
        /* the last PE returns from main at once without ishmem_finalize (it waits at exit for
         * the others to finalize); the others work a while, then call ishmem_finalize */
        if (t_me == t_npes - 1)
            return 0;
        usleep(300000);
        ishmem_int_p(buf, 1, t_me); /* no collective calls: PE 0 is in its finalize */
        return test_finish("implicit_mixed");
    }
    if (!strcmp(c, "global_exit")) {
        /* PE 1 calls ishmem_global_exit(5) while the others wait in a barrier: every PE ends
         * with status 5 */
        if (t_me == 1) {
            usleep(100000);
            ishmem_global_exit(5);
            return survived("ishmem_global_exit(5)");
        }
        return others_wait();
    }
    if (!strcmp(c, "global_exit0")) {
        /* PE 0 calls ishmem_global_exit(0) while the others wait in a barrier: the job ends
         * with status 0 */
        if (t_me == 0) {
            printf("PASS: global_exit0 (%d PEs)\n", t_npes);
            ishmem_global_exit(0);
            return survived("ishmem_global_exit(0)");
        }
        return others_wait();
    }
    if (!strcmp(c, "fatal_slow")) {
        /* the bad PE fails, but its exit takes a second (another thread holds stdout, which the
         * exit path flushes); the others end 0.3 s after noticing. ishmrun must still name it. */
        BAD_ONLY();
        pthread_t th;
        pthread_create(&th, NULL, hold_stdout, NULL);
        while (!__atomic_load_n(&stdout_held, __ATOMIC_ACQUIRE))
            usleep(1000);
        ishmem_int_put(buf, src, 1, 7);
        return survived("ishmem_int_put to PE 7");
    }
    if (!strcmp(c, "global_past_end")) {
        /* 64 MiB from a small global runs past the end of the symmetric data segment */
        static int g_small[4];
        BAD_ONLY();
        size_t n = (size_t)64 << 20;
        char *big = calloc(1, n);
        ishmem_putmem(g_small, big, n, 0);
        return survived("ishmem_putmem past the end of the data segment");
    }
    if (!strcmp(c, "stride_past_end")) {
        /* run with ISHMEM_SYMMETRIC_SIZE=1M: two ints 4 MiB apart cannot fit */
        BAD_ONLY();
        ishmem_int_iput(buf, src, (ptrdiff_t)1 << 20, 1, 2, 0);
        return survived("ishmem_int_iput spanning past the end of the heap");
    }
    if (!strcmp(c, "null_dest")) {
        BAD_ONLY();
        ishmem_int_get(NULL, buf, 4, 0);
        return survived("ishmem_int_get into NULL");
    }
    if (!strcmp(c, "outside_amo")) {
        BAD_ONLY();
        long l = 0;
        ishmem_long_atomic_inc(&l, 0);
        return survived("ishmem_long_atomic_inc on a stack address");
    }
    if (!strcmp(c, "wait_outside")) {
        BAD_ONLY();
        ishmem_int_wait_until(&local, ISHMEM_CMP_EQ, 0);
        return survived("ishmem_int_wait_until on a stack address");
    }
    if (!strcmp(c, "bad_cmp_signal")) {
        BAD_ONLY();
        (void)ishmem_signal_wait_until((uint64_t *)(buf + 32), 42, 0);
        return survived("ishmem_signal_wait_until with cmp 42");
    }
    if (!strcmp(c, "sig_outside")) {
        BAD_ONLY();
        uint64_t sig = 0;
        ishmem_int_put_signal(buf, src, 4, &sig, 1, ISHMEM_SIGNAL_SET, 0);
        return survived("ishmem_int_put_signal with a stack signal word");
    }
    if (!strcmp(c, "global_put")) {
        /* a put into a global of PE 0: fine by default, an error with
         * ISHMEM_SYMMETRIC_GLOBALS=0 */
        static int g_target[4];
        if (t_me == bad_pe()) {
            ishmem_int_put(g_target, src, 4, 0);
            ishmem_quiet();
        }
        ishmem_barrier_all();
        if (t_me == 0)
            CHECK(g_target[3] == 4, "global put: %d", g_target[3]);
        ishmem_free(buf);
        return test_finish("global_put");
    }
    /* ---- teams and collectives ---- */
    if (!strcmp(c, "config_mismatch")) return survived("ishmem_init with different ISHMEM_COLL_SMALL_MAX");
    /* Collective calls that cannot be one call (every PE makes a call here) */
    if (!strcmp(c, "coll_mismatch_push")) {
        /* both small (push path): the signature in the flags differs */
        (void)ishmem_broadcastmem(ISHMEM_TEAM_WORLD, buf, buf + 32, t_me == bad_pe() ? 16 : 32, 0);
        return survived("ishmem_broadcastmem with different sizes");
    }
    if (!strcmp(c, "coll_mismatch_sync")) {
        /* both large (synchronized path), same bytes, different type: the neighbour check */
        size_t n = 8192;
        char *big = ishmem_calloc(4, n * sizeof(long));
        if (t_me == bad_pe())
            (void)ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, (int *)big, (int *)(big + 2 * n * sizeof(long)), 2 * n);
        else
            (void)ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, (long *)big, (long *)(big + 2 * n * sizeof(long)), n);
        return survived("int and long sum reductions as one call");
    }
    if (!strcmp(c, "coll_mismatch_hang")) {
        /* one small (push), one large (synchronized): they would wait for ever; the check of
         * a long wait names both calls */
        size_t n = 16384;
        char *big = ishmem_calloc(2, n);
        (void)ishmem_broadcastmem(ISHMEM_TEAM_WORLD, big, big + n, t_me == bad_pe() ? 64 : n, 0);
        return survived("ishmem_broadcastmem of 64 and 16384 bytes as one call");
    }
    if (!strcmp(c, "coll_mismatch_barrier")) {
        /* barrier_all against fcollect on the world team: a hang, named by the long-wait check */
        if (t_me == bad_pe())
            ishmem_barrier_all();
        else
            (void)ishmem_int_fcollect(ISHMEM_TEAM_WORLD, buf, buf + 32, 2);
        return survived("ishmem_barrier_all against ishmem_int_fcollect");
    }
    if (!strcmp(c, "coll_wait_report")) {
        /* not an error: PE 1 is 3 s late to a barrier; PE 0 (ISHMEM_COLL_CHECK_MS=2: the report
         * after 1.2 s) prints where the team's PEs are, once, and both finish */
        ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, buf, buf + 32, 2);
        if (t_me == 1) usleep(3000000);
        ishmem_barrier_all();
        return test_finish("coll_wait_report");
    }
    if (!strcmp(c, "coll_mismatch_split")) {
        ishmem_team_t t;
        (void)ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, t_me == bad_pe() ? 1 : 2, NULL, 0, &t);
        ishmem_team_sync(ISHMEM_TEAM_WORLD);
        return survived("ishmem_team_split_strided with different sizes");
    }
    if (!strcmp(c, "coll_team_invalid")) {
        BAD_ONLY();
        (void)ishmem_int_sum_reduce(ISHMEM_TEAM_INVALID, buf, buf + 8, 4);
        return survived("ishmem_int_sum_reduce on ISHMEM_TEAM_INVALID");
    }
    if (!strcmp(c, "coll_team_unknown")) {
        BAD_ONLY();
        (void)ishmem_team_sync(17);
        return survived("ishmem_team_sync on a slot without a team");
    }
    if (!strcmp(c, "coll_team_handle")) {
        BAD_ONLY();
        (void)ishmem_long_max_reduce(100, (long *)buf, (long *)buf + 8, 2);
        return survived("ishmem_long_max_reduce on handle 100");
    }
    if (!strcmp(c, "coll_nonmember")) {
        /* PE 0 alone forms a team; PE 1 uses PE 0's handle */
        ishmem_team_t t0 = ISHMEM_TEAM_INVALID;
        if (ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &t0) != 0)
            return survived("the split");
        ishmem_team_t h = 3; /* the first split team's handle */
        if (t_me == 0 && t0 != h)
            fprintf(stderr, "FAIL: [PE 0] first split team is %d, not %d\n", t0, h);
        BAD_ONLY();
        (void)ishmem_int_sum_reduce(h, buf, buf + 8, 4);
        return survived("a collective on a team this PE is not in");
    }
    if (!strcmp(c, "coll_root")) {
        BAD_ONLY();
        (void)ishmem_int_broadcast(ISHMEM_TEAM_WORLD, buf, buf + 8, 4, 5);
        return survived("ishmem_int_broadcast with root 5");
    }
    if (!strcmp(c, "coll_root_negative")) {
        BAD_ONLY();
        (void)ishmem_broadcastmem(buf, buf + 8, 4, -1); /* the team-less spelling */
        return survived("ishmem_broadcastmem with root -1");
    }
    if (!strcmp(c, "coll_outside")) {
        BAD_ONLY();
        int priv[8];
        (void)ishmem_int_fcollect(ISHMEM_TEAM_WORLD, priv, buf, 1);
        return survived("ishmem_int_fcollect into a stack array");
    }
    if (!strcmp(c, "coll_overlap")) {
        BAD_ONLY();
        (void)ishmem_int_fcollect(ISHMEM_TEAM_WORLD, buf, buf + 1, 4);
        return survived("ishmem_int_fcollect with overlapping buffers");
    }
    if (!strcmp(c, "coll_partial_overlap")) {
        BAD_ONLY();
        (void)ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, buf, buf + 1, 4);
        return survived("ishmem_int_sum_reduce with partly overlapping buffers");
    }
    if (!strcmp(c, "coll_unaligned")) {
        BAD_ONLY();
        (void)ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, (int *)((char *)buf + 2), buf + 16, 2);
        return survived("ishmem_int_sum_reduce on an unaligned dest");
    }
    if (!strcmp(c, "coll_size_overflow")) {
        BAD_ONLY();
        (void)ishmem_long_alltoall(ISHMEM_TEAM_WORLD, (long *)buf, (long *)buf + 8, SIZE_MAX / 4);
        return survived("ishmem_long_alltoall of SIZE_MAX / 4 elements");
    }
    if (!strcmp(c, "split_bad") || !strcmp(c, "split_2d_bad")) {
        /* not an error (issue 14): arguments that describe no team give a nonzero status and
         * ISHMEM_TEAM_INVALID on every PE; with ISHMEM_DEBUG=1 a warning says why */
        ishmem_team_t t = 77, x = 77, y = 77;
        if (!strcmp(c, "split_bad")) {
            CHECK(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, t_npes + 1, NULL, 0, &t) != 0,
                  "split_strided of %d PEs out of %d returned 0", t_npes + 1, t_npes);
            CHECK_EQ(t, ISHMEM_TEAM_INVALID);
        } else {
            CHECK(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, 0, NULL, 0, &x, NULL, 0, &y) != 0,
                  "split_2d with xrange 0 returned 0");
            CHECK(x == ISHMEM_TEAM_INVALID && y == ISHMEM_TEAM_INVALID, "split_2d teams %d %d", x, y);
        }
        ishmem_free(buf);
        return test_finish(c);
    }
    if (!strcmp(c, "destroy_world")) {
        BAD_ONLY();
        ishmem_team_destroy(ISHMEM_TEAM_WORLD);
        return survived("ishmem_team_destroy(ISHMEM_TEAM_WORLD)");
    }
    if (!strcmp(c, "team_my_pe_bad")) {
        BAD_ONLY();
        (void)ishmem_team_my_pe(9);
        return survived("ishmem_team_my_pe(9)");
    }
    if (!strcmp(c, "config_mask")) {
        BAD_ONLY();
        ishmem_team_config_t cfg;
        (void)ishmem_team_get_config(ISHMEM_TEAM_WORLD, 6, &cfg);
        return survived("ishmem_team_get_config with mask 6");
    }
    if (!strcmp(c, "team_exhaust") || !strcmp(c, "team_exhaust_2d")) {
        /* run with ISHMEM_TEAMS_MAX=4: one slot beyond the predefined teams. A split that finds
         * none free returns nonzero and ISHMEM_TEAM_INVALID (a warning with ISHMEM_DEBUG=1, no
         * ERROR line); the job goes on. */
        ishmem_team_t a = ISHMEM_TEAM_INVALID, b = 77, x = 77, y = 77;
        CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, t_npes, NULL, 0, &a), 0);
        CHECK_EQ(a, 3);
        CHECK(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &b) != 0, "second split");
        CHECK_EQ(b, ISHMEM_TEAM_INVALID);
        ishmem_team_destroy(a);
        /* a 2D split needs two slots: still too few */
        CHECK(ishmem_team_split_2d(ISHMEM_TEAM_WORLD, 1, NULL, 0, &x, NULL, 0, &y) != 0, "2D split");
        CHECK(x == ISHMEM_TEAM_INVALID && y == ISHMEM_TEAM_INVALID, "2D split teams %d %d", x, y);
        CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, t_npes, NULL, 0, &b), 0);
        CHECK_EQ(b, 3);
        CHECK_EQ(ishmem_team_sync(b), 0);
        ishmem_team_destroy(b);
        ishmem_free(buf);
        return test_finish("team_exhaust");
    }
    /* OpenSHMEM contexts, realloc and malloc_with_hints (issue 25) */
    if (!strcmp(c, "ctx_options")) {
        BAD_ONLY();
        shmem_ctx_t x;
        shmem_ctx_create(0x10, &x);
        return survived("shmem_ctx_create with option bits 0x10");
    }
    if (!strcmp(c, "ctx_invalid")) {
        BAD_ONLY();
        shmem_ctx_int_p(SHMEM_CTX_INVALID, buf, 1, 0);
        return survived("shmem_ctx_int_p on SHMEM_CTX_INVALID");
    }
    if (!strcmp(c, "ctx_destroyed")) {
        BAD_ONLY();
        shmem_ctx_t x;
        CHECK_EQ(shmem_ctx_create(0, &x), 0);
        shmem_ctx_destroy(x);
        shmem_ctx_int_atomic_inc(x, buf, 0);
        return survived("shmem_ctx_int_atomic_inc on a destroyed context");
    }
    if (!strcmp(c, "ctx_private_thread")) {
        BAD_ONLY();
        static shmem_ctx_t px;
        CHECK_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &px), 0);
        pthread_t th;
        pthread_create(&th, NULL, private_put, &px);
        pthread_join(th, NULL);
        return survived("a SHMEM_CTX_PRIVATE context used by another thread");
    }
    if (!strcmp(c, "ctx_team_pe")) {
        shmem_team_t pair = SHMEM_TEAM_INVALID, solo = SHMEM_TEAM_INVALID;
        CHECK_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, NULL, 0, &solo, NULL, 0, &pair), 0);
        BAD_ONLY();
        shmem_ctx_t x;
        CHECK_EQ(shmem_team_create_ctx(solo, 0, &x), 0);
        shmem_ctx_int_p(x, buf, 1, 1);
        return survived("shmem_ctx_int_p to PE 1 of a team of 1");
    }
    if (!strcmp(c, "hints")) {
        BAD_ONLY();
        shmem_malloc_with_hints(64, 0x8);
        return survived("shmem_malloc_with_hints with hint bits 0x8");
    }
    if (!strcmp(c, "realloc_bad_ptr")) {
        BAD_ONLY();
        shmem_realloc(&local, 64);
        return survived("shmem_realloc of a stack address");
    }
    if (!strcmp(c, "realloc_mismatch")) {
        void *p = shmem_realloc(buf, t_me == bad_pe() ? 512 : 256);
        (void)p;
        ishmem_barrier_all();
        return survived("shmem_realloc with different sizes");
    }
    if (!strcmp(c, "hang")) {
        /* PE 0 never reaches the barrier: for ishmrun --timeout */
        if (t_me == 0)
            sleep(600);
        return others_wait();
    }
    if (!strcmp(c, "exit3")) {
        /* every PE finalizes; PE 1 then exits with status 3 */
        ishmem_free(buf);
        ishmem_finalize();
        return t_me == 1 ? 3 : 0;
    }
    fprintf(stderr, "FAIL: unknown case %s\n", c);
    return 2;
}
