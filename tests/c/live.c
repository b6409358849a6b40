/* live.c: liveness and leaving the job across nodes (issue 27, items 7 and the minors on
 * exit without finalize and global_exit). Run with 4 PEs as 2 pretend nodes of 2
 * (ISHMEM_NODE_SPLIT=2: PEs 0,1 and 2,3), or with 2 PEs as 2 nodes of 1.
 *
 *   live stop SECONDS   the first PE of the last node stops itself (SIGSTOP) for SECONDS while
 *                       the others wait in a barrier (a child process sends SIGCONT), then
 *                       every PE checks a put to and from it: a live PE that was silent must
 *                       not be declared dead. PASS: live stop (N PEs)
 *   live exit0          PE 1 calls exit(0) without ishmem_finalize while the others wait in a
 *                       barrier: the job must end (nonzero) within seconds, naming PE 1
 *   live global_exit    PE 1 calls ishmem_global_exit(5) while the others wait in a barrier:
 *                       every PE of every node must end with status 5
 *   live global_exit_reaped  the same, and each PE of the last node is SIGKILLed (by a child
 *                       it forked) the moment any PE of the first node ends, as OpenMPI's mpirun
 *                       ends a job at the first process to exit: the other node must have said
 *                       why it ends (no PE of the first node exits before the other nodes were
 *                       told and their leaders left)
 *   live kill           the last PE is killed (SIGKILL) while the others wait in a barrier */
#include "test_util.h"
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static long target[4];
static long pids[1]; /* symmetric: this PE's pid */

/* A child that SIGKILLs this process as soon as any of the processes `pid[0..n)` ends (a launcher
 * that ends the job at the first process to exit, only faster); it dies with this process. */
static int reap_when_gone(const long *pid, int n) {
    pid_t parent = getpid();
    struct pollfd p[64];
    for (int i = 0; i < n; i++) {
        p[i].fd = (int)syscall(SYS_pidfd_open, (pid_t)pid[i], 0);
        p[i].events = POLLIN;
        if (p[i].fd < 0) {
            fprintf(stderr, "FAIL: [PE %d] pidfd_open(%ld) failed (another pid namespace?)\n", t_me, pid[i]);
            return -1;
        }
    }
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "FAIL: [PE %d] fork failed\n", t_me);
        return -1;
    }
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        while (poll(p, (nfds_t)n, -1) <= 0) {
        }
        if (getppid() == parent)
            kill(parent, SIGKILL);
        _exit(0);
    }
    for (int i = 0; i < n; i++) close(p[i].fd);
    return 0;
}

static int others_wait(void) {
    ishmem_barrier_all();
    fprintf(stderr, "FAIL: [PE %d] the barrier returned although a PE left the job\n", t_me);
    return 3;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "FAIL: usage: live stop SECONDS | exit0 | global_exit | global_exit_reaped | kill\n");
        return 2;
    }
    const char *c = argv[1];
    test_init();
    int last_leader = t_npes / 2; /* first PE of the second node (2 nodes) */
    if (!strcmp(c, "stop")) {
        int secs = argc > 2 ? atoi(argv[2]) : 7;
        ishmem_barrier_all();
        if (t_me == last_leader) {
            pid_t parent = getpid();
            pid_t child = fork();
            if (child < 0) {
                fprintf(stderr, "FAIL: [PE %d] fork failed\n", t_me);
                return 1;
            }
            if (child == 0) {
                sleep((unsigned)secs);
                kill(parent, SIGCONT);
                _exit(0);
            }
            fprintf(stderr, "[PE %d] stopping myself for %d s\n", t_me, secs);
            raise(SIGSTOP);
            int st = 0;
            waitpid(child, &st, 0);
            fprintf(stderr, "[PE %d] running again\n", t_me);
        }
        ishmem_barrier_all();
        /* every PE writes its number into slot 0 of its right neighbour; the stopped PE too */
        long v = 100 + t_me;
        ishmem_long_put(&target[0], &v, 1, (t_me + 1) % t_npes);
        ishmem_barrier_all();
        CHECK_EQ(target[0], 100 + (t_me + t_npes - 1) % t_npes);
        long got = ishmem_long_g(&target[0], last_leader);
        CHECK_EQ(got, 100 + (last_leader + t_npes - 1) % t_npes);
        return test_finish("live stop");
    }
    if (!strcmp(c, "exit0")) {
        ishmem_barrier_all();
        if (t_me == 1) {
            usleep(200000);
            exit(0); /* finalizes at exit, while the others wait in a barrier */
        }
        return others_wait();
    }
    if (!strcmp(c, "global_exit") || !strcmp(c, "global_exit_reaped")) {
        if (!strcmp(c, "global_exit_reaped")) {
            /* the PEs of the last node watch every PE of the first */
            long first[64];
            pids[0] = (long)getpid();
            ishmem_barrier_all();
            for (int i = 0; i < last_leader && i < 64; i++) first[i] = ishmem_long_g(&pids[0], i);
            if (t_me >= last_leader && reap_when_gone(first, last_leader < 64 ? last_leader : 64) != 0)
                return 1;
        }
        ishmem_barrier_all();
        if (t_me == 1) {
            usleep(200000);
            ishmem_global_exit(5);
            fprintf(stderr, "FAIL: [PE %d] ishmem_global_exit returned\n", t_me);
            return 4;
        }
        return others_wait();
    }
    if (!strcmp(c, "kill")) {
        ishmem_barrier_all();
        if (t_me == t_npes - 1) {
            usleep(200000);
            kill(getpid(), SIGKILL);
        }
        return others_wait();
    }
    fprintf(stderr, "FAIL: unknown case %s\n", c);
    return 2;
}
