/* agree CASE: programs that break (or must not break) the PEs' agreement on calls, arguments,
 * settings and team slots (issue 27 items 2, 3, 4, 6 and minors). Each bad case must end the
 * job with one PE-tagged ERROR line naming what differs (checked by tests/expect_fail.sh);
 * "survived" marks a PE that got past the point where the library should have ended the job.
 * Success cases print PASS.
 *
 *   team_reuse       a destroyed team's late broadcast announcement must not reach the team
 *                    that reuses its slot (3 PEs on one node, 4 on 2 pretend nodes)
 *   malloc_barrier   ishmem_malloc on PE 0 against ishmem_barrier_all on the others
 *   malloc_size      ishmem_malloc(64) on the first node against malloc(4096) on the others
 *                    (across nodes: the PEs of one node agree among themselves)
 *   free_team_area   ishmem_free of the block that holds the team sync areas
 *   free_after_lib   the same block through calloc'ed neighbours (must still be refused)
 *   setting VAR VAL  the PEs of the last node (the last PE on one node) set VAR=VAL before init
 *   align_nodes      ishmem_align of large alignments across nodes (common_align)
 *   attr_mpi_comm    ishmemx_init_attr with mpi_comm set
 *   attr_init_rt     ishmemx_init_attr with ISHMEMX_RUNTIME_MPI and initialize_runtime true
 *   ll_scratch       (across nodes) small fcollects and reductions, sent to other nodes as
 *                    flag-in-data messages, after larger ones whose raw bytes filled the same
 *                    scratch slots with bytes that look like such a message (issue 31)
 *   ll_size          (2 PEs on 2 nodes) an 8-byte fcollect against a 4-byte one */
#include "test_util.h"
#include <unistd.h>

static int survived(const char *what) {
    fprintf(stderr, "FAIL: [PE %d] %s returned instead of ending the job\n", t_me, what);
    return 4;
}

/* The rank from the launcher's environment (before init). */
static int env_rank(void) {
    const char *r = getenv("ISHMRUN_RANK");
    if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMI_RANK");
    return r ? atoi(r) : -1;
}

static int env_size(void) {
    const char *r = getenv("ISHMRUN_SIZE");
    if (!r) r = getenv("OMPI_COMM_WORLD_SIZE");
    if (!r) r = getenv("PMI_SIZE");
    return r ? atoi(r) : -1;
}

/* Whether this PE is on the first node (the PEs that share a node with PE 0). */
static int on_first_node(void) { return t_same_node(0); }

static void msleep(int ms) { usleep((useconds_t)ms * 1000); }

/* Issue 27 item 2: T = {0, L} broadcasts 9 times from 0 (L sleeps before the last, so its
 * announcement of entry comes late), both destroy T; U = {0, O} (made earlier) splits V, which
 * takes T's slot; V broadcasts 4 times from 0 while O is slow: O must receive 201..204. */
static int team_reuse(void) {
    if (t_npes < 3) {
        fprintf(stderr, "FAIL: team_reuse needs 3 or more PEs\n");
        return 2;
    }
    int L = t_npes / 2;   /* 3 PEs: 1 (same node); 4 PEs on 2 nodes: 2 (the other node) */
    int O = L == 1 ? 2 : 1;
    /* 8-byte blocks: the broadcast slots on one node (every call announced), the small ring
     * across nodes (a member announces every 8th call, which the root does not wait for):
     * the 9th call's announcement is late in both */
    enum { NT = 1, ROUNDS = 9 };
    long *src = ishmem_calloc(NT, sizeof(long));
    long *dst = ishmem_calloc(NT, sizeof(long));
    ishmem_team_t T = ISHMEM_TEAM_INVALID, U = ISHMEM_TEAM_INVALID, V = ISHMEM_TEAM_INVALID;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, L, 2, NULL, 0, &T), 0);
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, O, 2, NULL, 0, &U), 0);
    ishmem_barrier_all();
    if (t_me == 0 || t_me == L) {
        for (int i = 1; i <= ROUNDS; i++) {
            if (t_me == L && i == ROUNDS) msleep(400);
            for (int k = 0; k < NT; k++) src[k] = 100 * i + k;
            CHECK_EQ(ishmem_long_broadcast(T, dst, src, NT, 0), 0);
            CHECK_EQ(dst[NT - 1], 100 * i + NT - 1);
        }
        ishmem_team_destroy(T);
    }
    if (t_me == 0 || t_me == O) {
        CHECK_EQ(ishmem_team_split_strided(U, 0, 1, 2, NULL, 0, &V), 0);
        CHECK(V == T || t_me == O, "V got slot %d, T had %d (the test needs the slot reused)", V, T);
        /* the late announcement (if any) lands meanwhile */
        msleep(800);
        for (int i = 1; i <= 4; i++) {
            if (t_me == O && i == 1) msleep(300);
            src[0] = 200 + i;
            CHECK_EQ(ishmem_long_broadcast(V, dst, src, 1, 0), 0);
            if (t_me == O) CHECK(dst[0] == 200 + i, "PE %d received %ld for %d in V's broadcast %d", t_me, dst[0], 200 + i, i);
        }
        ishmem_team_destroy(V);
    }
    if (U != ISHMEM_TEAM_INVALID) ishmem_team_destroy(U);
    ishmem_barrier_all();
    ishmem_free(dst);
    ishmem_free(src);
    return test_finish("team_reuse");
}

/* Issue 31: across nodes the all-send class (fcollect, alltoall, reductions of at most one
 * scratch slot) sends blocks of at most 512 bytes to a member of another node as one write
 * whose every byte has its top bit set; the receiver takes the message once every byte of it
 * shows that bit, so its slot must be zero before. Here every other call is a raw 700-byte
 * fcollect (above the message size: data and flag) whose bytes all have the top bit set, and
 * lands in the slot of the same parity as the next-but-one 8-byte call: unless the receiver
 * zeroed it, it takes the raw bytes for the small call's message (a wrong tag: a mismatch
 * error, or wrong values). The same for broadcasts: 8-byte ones go through a ring of slots
 * laid over the slots of 300-byte ones, which are raw. */
static int ll_scratch(void) {
    enum { RAW = 700, BRAW = 300, ROUNDS = 40 };
    int n = t_npes;
    unsigned char *rsrc = ishmem_malloc(RAW), *rdst = ishmem_malloc((size_t)RAW * n);
    long *src = ishmem_calloc(1, sizeof(long)), *dst = ishmem_calloc((size_t)n, sizeof(long));
    long *rs = ishmem_calloc(1, sizeof(long)), *rd = ishmem_calloc(1, sizeof(long));
    CHECK(rsrc && rdst && src && dst && rs && rd, "PE %d: allocation failed", t_me);
    for (int r = 0; r < ROUNDS; r++) {
        if (r % 3 == 1) {
            for (int i = 0; i < RAW; i++) rsrc[i] = (unsigned char)(0x80 | ((t_me * 31 + r + i) & 0x7f));
            CHECK_EQ(ishmem_fcollectmem(ISHMEM_TEAM_WORLD, rdst, rsrc, RAW), 0);
            for (int p = 0; p < n; p++)
                for (int i = 0; i < RAW; i += 97)
                    CHECK(rdst[p * RAW + i] == (unsigned char)(0x80 | ((p * 31 + r + i) & 0x7f)),
                          "PE %d: round %d raw fcollect [%d][%d] = %#x", t_me, r, p, i, rdst[p * RAW + i]);
            /* a broadcast above the ring's blocks: raw bytes in the parity slot under the ring */
            CHECK_EQ(ishmem_broadcastmem(ISHMEM_TEAM_WORLD, rdst, rsrc, BRAW, r % n), 0);
            for (int i = 0; i < BRAW; i += 41)
                CHECK(rdst[i] == (unsigned char)(0x80 | (((r % n) * 31 + r + i) & 0x7f)),
                      "PE %d: round %d raw broadcast [%d] = %#x", t_me, r, i, rdst[i]);
            continue;
        }
        *src = 7000L * r + 1;
        CHECK_EQ(ishmem_broadcastmem(ISHMEM_TEAM_WORLD, dst, src, sizeof(long), r % n), 0);
        CHECK(dst[0] == 7000L * r + 1, "PE %d: round %d broadcast = %ld", t_me, r, dst[0]);
        *src = 1000L * r + t_me;
        CHECK_EQ(ishmem_fcollectmem(ISHMEM_TEAM_WORLD, dst, src, sizeof(long)), 0);
        for (int p = 0; p < n; p++)
            CHECK(dst[p] == 1000L * r + p, "PE %d: round %d fcollect [%d] = %ld, want %ld", t_me, r, p, dst[p],
                  1000L * r + p);
        *rs = (long)r << 8 | (1L << t_me);
        CHECK_EQ(ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, rd, rs, 1), 0);
        CHECK(*rd == (((long)n * r) << 8) + ((1L << n) - 1), "PE %d: round %d sum_reduce = %#lx", t_me, r, *rd);
    }
    ishmem_barrier_all();
    ishmem_free(rd);
    ishmem_free(rs);
    ishmem_free(dst);
    ishmem_free(src);
    ishmem_free(rdst);
    ishmem_free(rsrc);
    return test_finish("ll_scratch");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "FAIL: usage: agree CASE [args]\n");
        return 2;
    }
    const char *c = argv[1];

    if (!strcmp(c, "setting")) {
        /* the PEs of the last pretend node (ISHMEM_NODE_SPLIT=2), or the last PE, differ */
        if (argc < 4) return 2;
        int r = env_rank(), n = env_size();
        const char *split = getenv("ISHMEM_NODE_SPLIT");
        int nodes = split ? atoi(split) : 1;
        int last_node = nodes > 1 ? r >= n - n / nodes : r == n - 1;
        if (r >= 0 && n > 0 && last_node) setenv(argv[2], argv[3], 1);
        test_init();
        long *x = ishmem_calloc(1, sizeof(long));
        /* one collective of each kind the settings steer: the job must not get here */
        ishmem_long_p(x, t_me, (t_me + 1) % t_npes);
        ishmem_barrier_all();
        long *y = ishmem_calloc(1, sizeof(long));
        ishmem_long_broadcast(ISHMEM_TEAM_WORLD, y, x, 1, 0);
        return survived("ishmem_init with a setting that differs between PEs");
    }
    if (!strcmp(c, "attr_mpi_comm")) {
        ishmemx_attr_t a = ISHMEMX_ATTR_INITIALIZER;
        static long fake_comm;
        a.mpi_comm = &fake_comm;
        ishmemx_init_attr(&a);
        return survived("ishmemx_init_attr with mpi_comm set");
    }
    if (!strcmp(c, "attr_init_rt")) {
        ishmemx_attr_t a = ISHMEMX_ATTR_INITIALIZER;
        a.runtime = ISHMEMX_RUNTIME_MPI;
        a.initialize_runtime = true;
        ishmemx_init_attr(&a);
        return survived("ishmemx_init_attr asking to initialize MPI");
    }
    if (!strcmp(c, "attr_ok")) {
        /* not an error: MPI already set up by the program (or not used), nothing asked of MPI */
        ishmemx_attr_t a = ISHMEMX_ATTR_INITIALIZER;
        a.runtime = ISHMEMX_RUNTIME_MPI;
        a.initialize_runtime = false;
        ishmemx_init_attr(&a);
        test_init_ids();
        return test_finish("attr_ok");
    }

    test_init();
    if (!strcmp(c, "team_reuse")) return team_reuse();
    if (!strcmp(c, "ll_scratch")) return ll_scratch();
    if (!strcmp(c, "ll_size")) {
        long *src = ishmem_calloc(2, 8), *dst = ishmem_calloc(4, 8);
        src[0] = 7;
        ishmem_fcollectmem(ISHMEM_TEAM_WORLD, dst, src, t_me == 0 ? 8 : 4);
        ishmem_barrier_all();
        return survived("a 4-byte fcollect against an 8-byte one");
    }
    if (!strcmp(c, "malloc_barrier")) {
        long *p = NULL;
        if (t_me == 0)
            p = ishmem_malloc(64);
        else
            ishmem_barrier_all();
        /* the heaps have split: a later call's blocks differ between the PEs */
        long *q = ishmem_malloc(64);
        (void)p;
        (void)q;
        ishmem_barrier_all();
        return survived("ishmem_malloc on PE 0 against ishmem_barrier_all");
    }
    if (!strcmp(c, "malloc_size")) {
        long *p = ishmem_malloc(on_first_node() ? 64 : 4096);
        ishmem_barrier_all();
        (void)p;
        return survived("ishmem_malloc with a size that differs between nodes");
    }
    if (!strcmp(c, "align_nodes")) {
        /* the heap bases of every PE decide which alignments hold at one offset */
        for (size_t al = 4096; al <= ((size_t)1 << 24); al <<= 2) {
            char *p = ishmem_align(al, 64);
            CHECK(p != NULL, "ishmem_align(%zu, 64) returned NULL", al);
            if (!p) continue;
            CHECK(((uintptr_t)p & (al - 1)) == 0, "ishmem_align(%zu) gave %p", al, (void *)p);
            /* the same offset on every PE: a put to the next PE lands in its block */
            ishmem_long_p((long *)p, 1000 + t_me, (t_me + 1) % t_npes);
            ishmem_barrier_all();
            CHECK_EQ(*(long *)p, 1000 + (t_me + t_npes - 1) % t_npes);
            ishmem_barrier_all();
            ishmem_free(p);
        }
        return test_finish("align_nodes");
    }
    if (!strcmp(c, "free_team_area") || !strcmp(c, "free_after_lib")) {
        /* The library's team sync areas are the first block of the CPU heap (ISHMEM_TEAMS_MAX
         * x 12 KiB, 64 by default), right before the first user block. */
        char *first = ishmem_malloc(64);
        if (!strcmp(c, "free_after_lib")) {
            ishmem_free(first);
            first = ishmem_calloc(8, 8);
        }
        char *area = first - 64 * 12288;
        ishmem_free(area);
        /* the next block would overlap the team areas (abort word, flags) */
        long *next = ishmem_malloc(8);
        (void)next;
        ishmem_barrier_all();
        return survived("ishmem_free of the team sync areas");
    }
    fprintf(stderr, "FAIL: unknown case %s\n", c);
    return 2;
}
