/* initfini: one init/finalize job, checking that the library gives back what it took: the
 * process opens no more descriptors after ishmem_finalize than before ishmem_init (heap and
 * control files, pidfds, sockets of the bootstrap all closed). With an argument N, also
 * N rounds of symmetric allocation and a barrier in between. With a second argument "late":
 * the last PE enters a last broadcast 600 ms after the others (the root waits for it while
 * the other members, done, are already in ishmem_finalize: that is no error). Prints
 * "initfini: PE n fds before init A, after init B, after finalize C". */
#include "test_util.h"
#include <dirent.h>
#include <unistd.h>

/* The CUDA driver keeps the descriptors it opened (its device files, and the eventfds and
 * pipes of its threads) until the process exits: cuInit cannot be undone. On the CUDA backend
 * those are not counted (and the 1,000-jobs loop shows their number does not grow). */
static int gpu_used;

static int driver_fd(const char *target) {
    return gpu_used && (!strncmp(target, "/dev/nvidia", 11) || !strncmp(target, "anon_inode:", 11) ||
                        !strncmp(target, "pipe:", 5));
}

/* Counts this process's descriptors, the CUDA driver's left out; `list`: prints each. */
static long walk_fds(int list) {
    long n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
        char path[300], target[256] = "";
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k > 0) target[k] = 0;
        if (!driver_fd(target)) n++;
        if (list) fprintf(stderr, "  [PE %d] fd %s -> %s%s\n", t_me, e->d_name, target, driver_fd(target) ? " (CUDA driver)" : "");
    }
    closedir(d);
    return n;
}

static long count_fds(void) { return walk_fds(0); }
static void list_fds(void) { walk_fds(1); }

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 0;
    long before = count_fds();
    test_init();
    gpu_used = ishmemx_gpu_in_use();
    long during = count_fds();
    for (int i = 0; i < rounds; i++) {
        long *p = ishmem_calloc(1024, sizeof(long));
        CHECK(p != NULL, "calloc");
        ishmem_long_p(p, t_me, (t_me + 1) % t_npes);
        ishmem_barrier_all();
        CHECK_EQ(ishmem_long_g(p, t_me), (t_me + t_npes - 1) % t_npes);
        ishmem_barrier_all();
        ishmem_free(p);
    }
    if (argc > 2 && !strcmp(argv[2], "late")) {
        long *src = ishmem_calloc(8, sizeof(long)), *dst = ishmem_calloc(8, sizeof(long));
        long v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];
        ishmem_putmem(src, v, sizeof v, t_me);
        ishmem_barrier_all();
        if (t_me == t_npes - 1) usleep(600000);
        ishmem_long_broadcast(ISHMEM_TEAM_WORLD, dst, src, 8, 0);
        ishmem_getmem(got, dst, sizeof got, t_me);
        CHECK(t_me == 0 || memcmp(got, v, sizeof v) == 0, "broadcast");
        /* no barrier: members that got the block go straight to finalize */
    }
    ishmem_finalize();
    long after = count_fds();
    fprintf(stdout, "initfini: PE %d fds before init %ld, after init %ld, after finalize %ld\n", t_me, before, during, after);
    if (after > before) { /* fewer is fine: PMI-1 hands the PE a descriptor that init closes */
        fprintf(stderr, "FAIL: [PE %d] open descriptors: %ld before init, %ld after finalize\n", t_me, before, after);
        list_fds();
        t_failures++;
    }
    if (t_failures) return 1;
    if (t_me == 0) printf("PASS: initfini (%d PEs)\n", t_npes);
    return 0;
}
