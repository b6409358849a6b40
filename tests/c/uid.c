/* uid: unique-id init. The program drives itself: `uid N` (never initialized) makes a unique
 * id, starts N copies of itself as `uid child RANK N` (the id in hex in UID_TEST_HEX) (fork + exec before any init),
 * waits for them and fails if any failed. Each child initializes with ishmemx_init_attr and
 * checks its rank, the job size, the runtime type, RMA, AMOs and barriers.
 * `uid file DIR RANK N`: started by someone else (a shell loop, one process per rank, maybe on
 * different nodes sharing DIR): rank 0 makes the id and writes it to DIR/uid-<parent pid>.hex
 * (the ranks of one loop share their parent, so an older run's file is never read), the others
 * wait for that file (20 s at most), then each is a child as above. */
#include "test_util.h"
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void to_hex(const ishmemx_uniqueid_t *u, char *out) {
    for (int i = 0; i < 128; i++)
        sprintf(out + 2 * i, "%02x", u->internal[i]);
}

static int from_hex(const char *s, ishmemx_uniqueid_t *u) {
    if (strlen(s) != 256)
        return -1;
    for (int i = 0; i < 128; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        u->internal[i] = (unsigned char)v;
    }
    return 0;
}

static long g_sum;

/* RDV_WAIT=<file> (tests/scripts/rdv_flood.sh): wait until the file exists before init. */
static void wait_for_go(void) {
    const char *go = getenv("RDV_WAIT");
    for (int i = 0; go && i < 1200 && access(go, F_OK) != 0; i++)
        usleep(50000);
}

static int child(int rank, int n, const char *hex) {
    ishmemx_uniqueid_t uid;
    if (!hex || from_hex(hex, &uid)) {
        fprintf(stderr, "FAIL: bad or missing UID_TEST_HEX (the unique id in hex)\n");
        return 2;
    }
    wait_for_go();
    ishmemx_attr_t a = ISHMEMX_ATTR_INITIALIZER;
    a.use_uid = true;
    a.uid = &uid;
    a.rank = rank;
    a.nranks = n;
    ishmemx_init_attr(&a);
    test_init_ids();
    int inited = 0;
    ishmemx_query_initialized(&inited);
    CHECK_EQ(inited, 1);
    CHECK_EQ(t_me, rank);
    CHECK_EQ(t_npes, n);
    CHECK_EQ(ishmemx_runtime_get_type(), ISHMEMX_RUNTIME_UNIQUEID);
    int level = -1;
    ishmem_query_thread(&level);
    CHECK_EQ(level, ISHMEM_THREAD_MULTIPLE);

    int next = (t_me + 1) % t_npes, prev = (t_me + t_npes - 1) % t_npes;
    int *buf = ishmem_calloc(16, sizeof(int));
    int src[16];
    for (int i = 0; i < 16; i++)
        src[i] = t_me * 100 + i;
    ishmem_int_put(buf, src, 16, next);
    ishmem_long_atomic_add(&g_sum, t_me + 1, 0);
    ishmem_barrier_all();
    for (int i = 0; i < 16; i++)
        CHECK(buf[i] == prev * 100 + i, "buf[%d] = %d", i, buf[i]);
    if (t_me == 0)
        CHECK_EQ(g_sum, (long)t_npes * (t_npes + 1) / 2);
    CHECK_EQ(ishmem_int_g(&buf[3], next), t_me * 100 + 3);
    void *peer = ishmem_ptr(buf, next);
    if (ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, next, ISHMEM_TEAM_SHARED) >= 0)
        CHECK(peer != NULL, "ishmem_ptr to the next PE");
    else
        CHECK(peer == NULL, "ishmem_ptr to the next PE, on another node");
    ishmem_barrier_all();
    ishmem_free(buf);
    return test_finish("uid");
}

static int from_file(const char *dir, int rank, int n) {
    char path[4096], tmp[4096], hex[258];
    snprintf(path, sizeof path, "%s/uid-%d.hex", dir, (int)getppid());
    if (rank == 0) {
        mkdir(dir, 0755);
        ishmemx_uniqueid_t uid;
        CHECK_EQ(ishmemx_get_uniqueid(&uid), 0);
        to_hex(&uid, hex);
        snprintf(tmp, sizeof tmp, "%s/uid.hex.%d", dir, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f || fputs(hex, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
            fprintf(stderr, "FAIL: cannot write %s\n", path);
            return 2;
        }
    } else {
        for (int i = 0;; i++) {
            FILE *f = fopen(path, "r");
            if (f) {
                size_t got = fread(hex, 1, 256, f);
                fclose(f);
                hex[got] = 0;
                if (got == 256)
                    break;
            }
            if (i == 2000) {
                fprintf(stderr, "FAIL: rank %d: no unique id in %s after 20 s\n", rank, path);
                return 2;
            }
            usleep(10000);
        }
    }
    return child(rank, n, hex);
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "child"))
        return child(atoi(argv[2]), atoi(argv[3]), getenv("UID_TEST_HEX"));
    if (argc == 5 && !strcmp(argv[1], "file"))
        return from_file(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc != 2) {
        fprintf(stderr, "FAIL: usage: uid N\n");
        return 2;
    }
    int n = atoi(argv[1]);
    ishmemx_uniqueid_t uid, uid2;
    memset(&uid, 0, sizeof uid);
    memset(&uid2, 0, sizeof uid2);
    CHECK_EQ(ishmemx_get_uniqueid(&uid), 0);
    CHECK_EQ(ishmemx_get_uniqueid(&uid2), 0);
    static const ishmemx_uniqueid_t zero;
    CHECK(memcmp(&uid, &zero, sizeof uid) != 0, "ishmemx_get_uniqueid wrote nothing");
    CHECK(memcmp(&uid, &uid2, sizeof uid) != 0, "two unique ids are equal");
    int inited = 7;
    ishmemx_query_initialized(&inited);
    CHECK_EQ(inited, 0); /* making an id does not initialize */
    char hex[257];
    to_hex(&uid, hex);

    pid_t pids[64];
    if (n < 1 || n > 64) {
        fprintf(stderr, "FAIL: N must be 1..64\n");
        return 2;
    }
    for (int r = 0; r < n; r++) {
        char rs[16], ns[16];
        snprintf(rs, sizeof rs, "%d", r);
        snprintf(ns, sizeof ns, "%d", n);
        pids[r] = fork();
        if (pids[r] == 0) {
            /* the id is the job's password: in the environment, which only this user reads,
             * never on the command line, which ps shows to everyone (issue 30) */
            setenv("UID_TEST_HEX", hex, 1);
            execl("/proc/self/exe", argv[0], "child", rs, ns, (char *)NULL);
            perror("execl");
            _exit(127);
        }
        if (pids[r] < 0) {
            /* never kill(-1, ...) below: stop the children started so far and give up */
            fprintf(stderr, "FAIL: fork of uid child rank %d failed\n", r);
            for (int q = 0; q < r; q++) {
                kill(pids[q], SIGKILL);
                waitpid(pids[q], NULL, 0);
            }
            return 1;
        }
    }
    int failed = 0, left = n;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int done[64] = {0};
    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            for (int r = 0; r < n; r++)
                if (pids[r] == p) {
                    done[r] = 1;
                    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "FAIL: uid child rank %d ended with status 0x%x\n", r, status);
                        failed++;
                    }
                }
            left--;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 60) {
            fprintf(stderr, "FAIL: uid children did not finish in 60 s\n");
            for (int r = 0; r < n; r++)
                if (!done[r] && pids[r] > 0) /* a pid of 0 or -1 would signal a group or everyone */
                    kill(pids[r], SIGKILL);
            failed++;
            t0 = now; /* reap them on the next rounds */
        }
        usleep(5000);
    }
    if (failed || t_failures)
        return 1;
    printf("PASS: uid driver (%d children)\n", n);
    return 0;
}
