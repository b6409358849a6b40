/* conns: how many connections a PE holds across pretend nodes (issue 29, docs/SCALING.md).
 * Run with ISHMEM_NODE_SPLIT (nodes of consecutive PEs; the first PE of each is its leader).
 * Init must raise the soft limit on open files to the hard one (the test lowers it to 64 first).
 * After init, barriers and 1 s of idling (10 periods of ISHMEM_PEER_CHECK_MS), each PE counts
 * its established TCP connections (its socket inodes in /proc/self/net/tcp{,6}). Run with
 * ISHMEM_COLL_CHECK_MS=0: the agreement checks of a collective that waits long read every member
 * (and connect to those of other nodes), which a loaded machine makes happen at any barrier.
 *   - a PE that is not its node's leader made no network operation (barriers cross the network
 *     only between leaders): it holds none. (Before issue 29 every PE's probe thread read the
 *     leader of every other node every 100 ms: nodes - 1 connections on each PE, and every
 *     leader served every PE of the job.)
 *   - a leader holds its liveness connections (one per other node) and those of the barrier's
 *     dissemination rounds among leaders and its liveness probe: at most
 *     (nodes - 1) + 2 * ceil(log2(nodes)) + 2. */
#include "test_util.h"
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_SOCKS 4096
static unsigned long socks[MAX_SOCKS];
static int nsocks;

static void collect_sockets(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[300], link[128];
    nsocks = 0;
    if (!d) return;
    while ((e = readdir(d))) {
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t l = readlink(path, link, sizeof link - 1);
        if (l <= 0) continue;
        link[l] = 0;
        unsigned long ino;
        if (sscanf(link, "socket:[%lu]", &ino) == 1 && nsocks < MAX_SOCKS) socks[nsocks++] = ino;
    }
    closedir(d);
}

static long tcp_established(void) {
    const char *files[] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
    long n = 0;
    collect_sockets();
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        char line[512];
        if (!f) continue;
        if (!fgets(line, sizeof line, f)) {
            fclose(f);
            continue;
        }
        while (fgets(line, sizeof line, f)) {
            unsigned st;
            unsigned long ino;
            if (sscanf(line, "%*s %*s %*s %x %*s %*s %*s %*s %*s %lu", &st, &ino) != 2 || st != 1) continue;
            for (int k = 0; k < nsocks; k++)
                if (socks[k] == ino) {
                    n++;
                    break;
                }
        }
        fclose(f);
    }
    return n;
}

int main(void) {
    /* a low soft limit on open files, as many systems give (1,024) but lower: a job across nodes
     * raises it to the hard limit at init (a leader of a job of 1,000 nodes holds ~1,000
     * liveness connections; docs/SCALING.md) */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t hard = rl.rlim_max;
    if (rl.rlim_max > 64) {
        rl.rlim_cur = 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    ishmem_init();
    test_init_ids();
    int ppn = ishmem_team_n_pes(ISHMEMX_TEAM_NODE);
    CHECK(ppn >= 1 && t_npes % ppn == 0, "node team of %d PEs in a job of %d", ppn, t_npes);
    int nodes = t_npes / ppn;
    getrlimit(RLIMIT_NOFILE, &rl);
    CHECK(rl.rlim_cur == hard, "soft limit on open files after init %llu, want the hard limit %llu (the job spans %d nodes)",
          (unsigned long long)rl.rlim_cur, (unsigned long long)hard, nodes);

    CHECK(nodes >= 2, "the job must span pretend nodes (ISHMEM_NODE_SPLIT), got %d node(s)", nodes);
    for (int i = 0; i < 5; i++) ishmem_barrier_all();
    usleep(1000 * 1000);
    ishmem_barrier_all();
    long conns = tcp_established();
    int leader = t_me % ppn == 0;
    int log2n = 0;
    while ((1 << log2n) < nodes) log2n++;
    printf("conns: PE %d (%s) holds %ld TCP connections (%d nodes)\n", t_me, leader ? "leader" : "member", conns, nodes);
    fflush(stdout);
    if (leader) {
        long most = (nodes - 1) + 2 * log2n + 2;
        CHECK(conns >= nodes - 1 && conns <= most, "leader PE %d holds %ld TCP connections; want %d to %ld (%d nodes)",
              t_me, conns, nodes - 1, most, nodes);
    } else {
        CHECK(conns == 0, "PE %d (not a node leader, no network operation made) holds %ld TCP connections; want 0 (%d nodes)",
              t_me, conns, nodes);
    }
    ishmem_barrier_all();

    /* Which form the world team's small reductions and fcollects take: the tree when the team
     * spans nodes and has at least ISHMEM_COLL_TREE_MIN PEs (default 16, docs/ENV.md), else the
     * push form. The push form connects every PE to the first PE of every other node (the relay
     * across nodes: that PE passes blocks on to its node-mates; before it, to every PE of another
     * node); the tree only to
     * its binomial-tree parent and children (place r: parent r & (r - 1), children r + 2^j for
     * 2^j below r's lowest set bit), of which those on other nodes need a connection. A member
     * (not a leader) holds what ishmem_malloc below connected (one here) before them;
     * the push form adds one to the first PE of each other node, the tree only its far tree neighbours
     * (none for members of 2-PE nodes). */
    const char *tm = getenv("ISHMEM_COLL_TREE_MIN");
    long tree_min = tm && *tm ? strtol(tm, NULL, 0) : 16;
    int tree = tree_min > 0 && t_npes >= (tree_min < 2 ? 2 : tree_min);
    long *src = ishmem_malloc(sizeof(long)), *sum = ishmem_malloc(sizeof(long));
    long *all = ishmem_malloc(t_npes * sizeof(long));
    CHECK(src && sum && all, "ishmem_malloc failed");
    *src = 1000 + t_me;
    ishmem_barrier_all();
    /* ishmem_malloc's call check reads the next PE (on another node for a member): one
     * connection before the collectives */
    long before = tcp_established();
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, sum, src, 1), 0);
        CHECK_EQ(*sum, 1000L * t_npes + (long)t_npes * (t_npes - 1) / 2);
        CHECK_EQ(ishmem_long_fcollect(ISHMEM_TEAM_WORLD, all, src, 1), 0);
        for (int j = 0; j < t_npes; j++) CHECK_EQ(all[j], 1000 + j);
    }
    ishmem_barrier_all();
    long after = tcp_established();
    int tree_far = 0; /* tree neighbours of this PE on other nodes */
    if (t_me > 0 && (t_me & (t_me - 1)) / ppn != t_me / ppn) tree_far++;
    for (int b = 1; b < t_npes && (t_me & b) == 0; b <<= 1)
        if (t_me + b < t_npes && (t_me + b) / ppn != t_me / ppn) tree_far++;
    printf("conns: PE %d (%s) holds %ld TCP connections after %s reductions and fcollects, %ld before "
           "(ISHMEM_COLL_TREE_MIN %ld)\n",
           t_me, leader ? "leader" : "member", after, tree ? "tree" : "push", before, tree_min);
    fflush(stdout);
    if (!leader && tree)
        CHECK(after <= before + tree_far,
              "member PE %d holds %ld TCP connections after world sum_reduce and fcollect of 8 B, %ld before; want at "
              "most %ld more (tree form: %d PEs, %d nodes, ISHMEM_COLL_TREE_MIN %ld)",
              t_me, after, before, (long)tree_far, t_npes, nodes, tree_min);
    /* push form: a member sends its block over the network to the first PE of each other node
     * only, which passes it on to its node-mates (the relay across nodes): one connection per
     * other node. (Before the relay: one to every PE of another node, t_npes - ppn.) */
    if (!leader && !tree)
        CHECK(after >= nodes - 1 && after <= before + nodes - 1,
              "member PE %d holds %ld TCP connections after world sum_reduce and fcollect of 8 B, %ld before; want "
              "%d to %ld, one to the first PE of every other node (push form, relayed: %d PEs, %d nodes, "
              "ISHMEM_COLL_TREE_MIN %ld)",
              t_me, after, before, nodes - 1, before + nodes - 1, t_npes, nodes, tree_min);
    ishmem_barrier_all();
    return test_finish("conns");
}
