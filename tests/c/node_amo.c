/* node_amo.c: while the job spans nodes, AMOs to a PE of this node are the CPU's atomics on its
 * mapped memory (where the provider applies every AMO with the target CPU's atomics too:
 * tcp;ofi_rxm, sockets), not provider requests that wait for the target's progress.
 * Run with 4 PEs as 2 pretend nodes of 2 (ISHMEM_NODE_SPLIT=2: PEs 0,1 and 2,3).
 *
 * PEs 2 and 3 (the other node) add to PE 1's counter through the network. Then PE 1 stops
 * itself (SIGSTOP: every thread of it, its progress thread too) and PE 0 runs fetching and
 * non-fetching AMOs, a compare-swap and a put-with-signal on PE 1's words. Through the
 * provider they would wait for PE 1's progress: an alarm then fails the test (after argv[1]
 * seconds, default 20; ISHMEMI_OFI_NODE_AMO_NET=1 shows it). PE 0 continues PE 1 (SIGCONT); then PE 0 and the
 * other node's PEs add to the counter at once, and PE 1 checks every value. */
#include "test_util.h"
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#define OTHER_ADDS 1000
#define FETCHES 100

static long ctr;
static long pid_word;
static long payload[4];
static uint64_t sig;
static volatile pid_t g_stopped = 0;
static unsigned g_alarm_s = 20;

static void on_alarm(int s) {
    (void)s;
    static const char m[] = "FAIL: [PE 0] AMOs to a stopped PE of this node did not complete in time: "
                            "they wait for its progress (network AMOs)\n";
    ssize_t w = write(2, m, sizeof m - 1);
    (void)w;
    if (g_stopped > 0) kill(g_stopped, SIGCONT);
    _exit(3);
}

/* Whether process pid is stopped (state T in /proc/pid/stat). */
static int is_stopped(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

int main(int argc, char **argv) {
    if (argc > 1) g_alarm_s = (unsigned)atoi(argv[1]);
    test_init();
    if (t_npes != 4) {
        fprintf(stderr, "FAIL: [PE %d] node_amo needs 4 PEs (2 pretend nodes of 2), got %d\n", t_me, t_npes);
        ishmem_finalize();
        return 2;
    }
    CHECK(t_same_node(t_me ^ 1) && !t_same_node(t_me ^ 2), "PEs 0,1 and 2,3 must be the two nodes (ISHMEM_NODE_SPLIT=2)");
    pid_word = (long)getpid();
    ishmem_barrier_all();

    /* The other node: network AMOs on PE 1's counter. */
    if (t_me >= 2) {
        for (int i = 0; i < OTHER_ADDS; i++) ishmem_long_atomic_add(&ctr, 1, 1);
        ishmem_quiet();
    }
    ishmem_barrier_all();

    if (t_me == 1) {
        raise(SIGSTOP); /* until PE 0's SIGCONT */
    } else if (t_me == 0) {
        pid_t p1 = (pid_t)ishmem_long_g(&pid_word, 1);
        g_stopped = p1;
        signal(SIGALRM, on_alarm);
        alarm(g_alarm_s);
        while (!is_stopped(p1)) usleep(1000);
        for (int i = 0; i < FETCHES; i++) CHECK_EQ(ishmem_long_atomic_fetch_add(&ctr, 1, 1), 2 * OTHER_ADDS + i);
        ishmem_long_atomic_add(&ctr, 5, 1);
        long want = 2 * OTHER_ADDS + FETCHES + 5;
        CHECK_EQ(ishmem_long_atomic_compare_swap(&ctr, want, 7, 1), want);
        CHECK_EQ(ishmem_long_atomic_fetch(&ctr, 1), 7);
        long src[4] = {11, 22, 33, 44};
        ishmem_long_put_signal(payload, src, 4, &sig, 9, ISHMEM_SIGNAL_SET, 1);
        ishmem_uint64_atomic_add(&sig, 1, 1);
        ishmem_quiet();
        CHECK_EQ(ishmem_signal_fetch(&sig), 0); /* this PE's own word: untouched */
        CHECK_EQ(ishmem_uint64_atomic_fetch(&sig, 1), 10);
        CHECK(is_stopped(p1), "PE 1 ran before the SIGCONT");
        alarm(0);
        kill(p1, SIGCONT);
    }
    ishmem_barrier_all();

    /* Both nodes at once: atomic with each other. */
    if (t_me != 1) {
        for (int i = 0; i < OTHER_ADDS; i++) ishmem_long_atomic_add(&ctr, 1, 1);
        ishmem_quiet();
    }
    ishmem_barrier_all();
    if (t_me == 1) {
        CHECK_EQ(ctr, 7 + 3 * OTHER_ADDS);
        CHECK_EQ(sig, 10);
        for (int i = 0; i < 4; i++) CHECK_EQ(payload[i], 11 * (i + 1));
    }
    return test_finish("node_amo");
}
