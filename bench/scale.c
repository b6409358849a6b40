/* scale.c: what one PE costs and how long the job-wide operations take, for docs/SCALING.md
 * (issue 29; run by scripts/scale-check.sh at 16, 32 and 64 PEs).
 *
 *   scale [iterations]     (default 50)
 *
 * Every PE measures its own figures; PE 0 prints the maximum (and the mean where it says so)
 * over the PEs, one `SCALE key value` line each:
 *   init_s           seconds in ishmem_init (each PE from its own call to its return)
 *   rss_kib          resident set after init and after the measurements (VmRSS)
 *   fds, threads     open file descriptors, threads (/proc/self/fd, /proc/self/status)
 *   tcp_conns        this process's established TCP connections (/proc/self/net/tcp{,6}
 *                    matched to its socket inodes); unix_socks: other sockets
 *   <coll>_us        microseconds per call of barrier_all, broadcastmem 8 B, long sum_reduce
 *                    of 1 element (8 B), fcollectmem 8 B on the world team: each PE times
 *                    `iterations` calls after a barrier and 5 warm-up calls; max over PEs
 * The finalize time cannot be collected after finalize: every PE prints its own line
 * `SCALE_FIN pe seconds` (the driver takes the maximum). The results of the collectives are
 * checked (a wrong value prints FAIL and the program exits 1). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ishmem.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long status_field(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

#define MAX_SOCKS 65536
static unsigned long socks[MAX_SOCKS];
static int nsocks;

/* Counts the descriptors and remembers the socket inodes. */
static long count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;
    char path[300], link[128];
    nsocks = 0;
    if (!d) return -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        n++;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t l = readlink(path, link, sizeof link - 1);
        if (l <= 0) continue;
        link[l] = 0;
        unsigned long ino;
        if (sscanf(link, "socket:[%lu]", &ino) == 1 && nsocks < MAX_SOCKS) socks[nsocks++] = ino;
    }
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static int is_mine(unsigned long ino) {
    for (int i = 0; i < nsocks; i++)
        if (socks[i] == ino) return 1;
    return 0;
}

/* Established TCP connections among this process's sockets. */
static long tcp_established(void) {
    const char *files[] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
    long n = 0;
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        char line[512];
        if (!f) continue;
        if (!fgets(line, sizeof line, f)) { fclose(f); continue; }
        while (fgets(line, sizeof line, f)) {
            unsigned st;
            unsigned long ino;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &ino) == 2 && st == 1 && is_mine(ino))
                n++;
        }
        fclose(f);
    }
    return n;
}

static long *g_src, *g_dst, *g_stat, *g_fc;
static int me, npes, failed;

/* Maximum (op 0) or sum (op 1) of v over the PEs, at PE 0 and everywhere. */
static long reduce_long(long v, int sum) {
    *g_src = v;
    ishmem_barrier_all();
    if (sum)
        ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, g_dst, g_src, 1);
    else
        ishmem_long_max_reduce(ISHMEM_TEAM_WORLD, g_dst, g_src, 1);
    return *g_dst;
}

static void report(const char *key, long mine, int with_mean) {
    long mx = reduce_long(mine, 0);
    long sum = reduce_long(mine, 1);
    if (me == 0) {
        if (with_mean)
            printf("SCALE %s max %ld mean %.1f\n", key, mx, (double)sum / npes);
        else
            printf("SCALE %s max %ld\n", key, mx);
    }
}

static void report_t(const char *key, double secs, double scale) {
    long ns = (long)(secs * 1e9);
    long mx = reduce_long(ns, 0);
    long sum = reduce_long(ns, 1);
    if (me == 0) printf("SCALE %s max %.3f mean %.3f\n", key, mx * 1e-9 * scale, sum * 1e-9 * scale / npes);
}

enum { BARRIER, BCAST, REDUCE, FCOLLECT };

static void one(int which, long it) {
    switch (which) {
    case BARRIER: ishmem_barrier_all(); break;
    case BCAST:
        *g_src = me == 0 ? 1000 + it : -1;
        ishmem_broadcastmem(ISHMEM_TEAM_WORLD, g_dst, g_src, 8, 0);
        if (*g_dst != 1000 + it) { fprintf(stderr, "FAIL: [PE %d] broadcast %ld: got %ld\n", me, it, *g_dst); failed = 1; }
        break;
    case REDUCE:
        *g_src = me + it;
        ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, g_dst, g_src, 1);
        if (*g_dst != (long)npes * (npes - 1) / 2 + (long)npes * it) {
            fprintf(stderr, "FAIL: [PE %d] sum_reduce %ld: got %ld\n", me, it, *g_dst);
            failed = 1;
        }
        break;
    case FCOLLECT:
        *g_src = me * 7 + it;
        ishmem_fcollectmem(ISHMEM_TEAM_WORLD, g_fc, g_src, 8);
        for (int p = 0; p < npes; p++)
            if (g_fc[p] != p * 7 + it) { fprintf(stderr, "FAIL: [PE %d] fcollect %ld: PE %d's block is %ld\n", me, it, p, g_fc[p]); failed = 1; break; }
        break;
    }
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 50;
    if (iters < 1) iters = 1;
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines show as they come (progress of slow runs) */
    double t0 = now();
    ishmem_init();
    double t_init = now() - t0;
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    g_src = ishmem_malloc(8);
    g_dst = ishmem_malloc(8);
    g_stat = ishmem_malloc(8);
    g_fc = ishmem_malloc(8 * (size_t)npes);
    if (!g_src || !g_dst || !g_stat || !g_fc) {
        fprintf(stderr, "FAIL: [PE %d] ishmem_malloc\n", me);
        return 1;
    }
    if (me == 0) printf("SCALE npes %d\n", npes);
    report_t("init_s", t_init, 1.0);
    long fds = count_fds();
    long tcp = tcp_established();
    report("rss_init_kib", status_field("VmRSS"), 1);
    report("fds", fds, 1);
    report("sockets", nsocks, 1);
    report("tcp_conns", tcp, 1);
    report("threads", status_field("Threads"), 1);

    const char *names[] = {"barrier_all_us", "broadcast8_us", "sum_reduce8_us", "fcollect8_us"};
    for (int w = BARRIER; w <= FCOLLECT; w++) {
        for (long i = 0; i < 5; i++) one(w, i);
        ishmem_barrier_all();
        double t = now();
        for (long i = 0; i < iters; i++) one(w, i);
        double per = (now() - t) / (double)iters;
        report_t(names[w], per, 1e6);
    }
    /* connections opened by the collectives (a provider connecting per peer shows here) */
    fds = count_fds();
    tcp = tcp_established();
    report("fds_after", fds, 1);
    report("tcp_conns_after", tcp, 1);
    report("threads_after", status_field("Threads"), 1);
    report("rss_after_kib", status_field("VmRSS"), 1);
    report("failed", failed, 0);
    fflush(stdout);
    double t1 = now();
    ishmem_finalize();
    double t_fin = now() - t1;
    printf("SCALE_FIN %d %.6f\n", me, t_fin);
    return failed;
}
