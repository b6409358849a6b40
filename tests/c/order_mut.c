/* order_mut: ordering and completion under conditions that make a missing fence, quiet or wait
 * show (issue 26: the mutation check, scripts/mutation-check.sh, builds libraries with one of
 * them removed and needs a test that fails). Even PE counts >= 4. Writer i's target is
 * t(i) = (i + npes/2) % npes (a PE of the other node under ISHMEM_NODE_SPLIT=2) and its checker
 * c(i) = i ^ 1 (a PE of its own node, neither i nor t(i)), so data and flag travel on different
 * paths. Every round ends with a barrier; each phase runs ROUNDS rounds (argument 1, default
 * 300) of BYTES-sized blocks.
 *   quiet          put_nbi block -> t; quiet; p(flag) -> c; c waits for the flag, then gets the
 *                  block from t (its own path to t) and checks it
 *   get            get_nbi block <- t; quiet; the local copy is checked
 *   amo_fence_put  non-fetching add of 1 to x on c; fence; p(flag = round) -> c; c waits for the
 *                  flag and reads x (>= round); no barrier per round, 4 x ROUNDS rounds
 *   fence_global   put block -> t's heap; fence; p(flag) -> a symmetric global of t; t waits for
 *                  the flag and checks the block (staged heaps: mailbox, then the network)
 *   put_fence_amo  put block -> t; fence; non-fetching add of 1 to a counter on t; t waits for
 *                  the counter and checks the block
 *   signal         put_signal block + signal (SET round) -> t; t waits for the signal, checks
 *                  (1 MiB blocks where t is on this node, read from the end)
 *   signal_gate    where t is on this node (the writer's own thread copies the block), one PE
 *                  of each pair writes per round: put_signal of GATE_PAGES pages whose last
 *                  page is PROT_NONE; the copy faults on it and the writer's SIGSEGV handler
 *                  holds it until t says it has checked the block, or for GATE_S seconds.
 *                  A signal set before the data is seen by t with the last page missing, every
 *                  round, whatever the load; put_signal as it should be waits GATE_S per round.
 *                  (The signal phase's kill on one node is a race that heavy load can lose.)
 *   team_sync      a team of the even PEs and one of the odd ones (each spanning both nodes):
 *                  every member stores a block into its own copy, team_sync, then every
 *                  member reads the block of its team's last PE
 * Arguments: [rounds [phase...]] (default: every phase).
 * Prints "PASS: order_mut (N PEs)"; every wrong round is counted and the first few printed. */
#include "test_util.h"
#include <stdbool.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { BYTES = 32768, WORDS = BYTES / 8, SHOW = 3 };

static int npes, me, tgt, chk, wr_of_chk, wr_of_tgt, rounds = 300, ran;
static long *data, *flag, *x, *cnt, *blk;
static uint64_t *sig;
static long src[WORDS], buf[WORDS];

static long pat(int round, int pe, int k) { return ((long)round << 40) | ((long)pe << 32) | k; }

/* The number of the n words of b that are not round/pe's pattern (and the first seen), read
 * from the last word down: a copy still in progress (copies run upwards) shows at once. */
static int stale_n(const volatile long *b, int n, int round, int pe, long *first) {
    int bad = 0;
    for (int k = n - 1; k >= 0; k--)
        if (b[k] != pat(round, pe, k)) {
            if (!bad)
                *first = b[k];
            bad++;
        }
    return bad;
}
static int stale(const long *b, int round, int pe, long *first) { return stale_n(b, WORDS, round, pe, first); }

static void fill(int round) {
    for (int k = 0; k < WORDS; k++) src[k] = pat(round, me, k);
}

static int wrong;
static void report(const char *phase, int round, int bad, long first, const char *what) {
    if (bad == 0)
        return;
    if (++wrong <= SHOW)
        fprintf(stderr, "FAIL: [PE %d] order_mut %s: round %d: %s (%d wrong, e.g. 0x%lx)\n", me, phase, round,
                what, bad, (unsigned long)first);
}

static void phase_quiet(void) {
    for (int r = 1; r <= rounds; r++) {
        fill(r);
        ishmem_long_put_nbi(data + (size_t)me * WORDS, src, WORDS, tgt);
        ishmem_quiet();
        ishmem_long_p(&flag[me], r, chk);
        /* the checker of writer w = me ^ 1 */
        ishmem_long_wait_until(&flag[wr_of_chk], ISHMEM_CMP_GE, r);
        int t = (wr_of_chk + npes / 2) % npes;
        long first = 0;
        ishmem_long_get(buf, data + (size_t)wr_of_chk * WORDS, WORDS, t);
        report("quiet", r, stale(buf, r, wr_of_chk, &first), first, "the block behind the flag is stale");
        ishmem_barrier_all();
    }
}

static void phase_get(void) {
    for (int r = 1; r <= rounds; r++) {
        fill(r);
        memcpy(blk, src, BYTES); /* this PE's own copy: t(j) of some j gets it */
        ishmem_barrier_all();
        memset(buf, 0, BYTES);
        ishmem_long_get_nbi(buf, blk, WORDS, tgt);
        ishmem_quiet();
        long first = 0;
        report("get", r, stale(buf, r, tgt, &first), first, "get_nbi's data is not there after quiet");
        ishmem_barrier_all();
    }
}

/* No barrier per round (the writer may run ahead: x and the flag only grow), 4x the rounds. */
static void phase_amo_fence_put(void) {
    ran = 4 * rounds;
    for (int r = 1; r <= ran; r++) {
        ishmem_long_atomic_add(&x[me], 1, chk);
        ishmem_fence();
        ishmem_long_p(&flag[me], r, chk);
        ishmem_long_wait_until(&flag[wr_of_chk], ISHMEM_CMP_GE, r);
        long v = ishmem_long_atomic_fetch(&x[wr_of_chk], me);
        if (v < r)
            report("amo_fence_put", r, 1, v, "the add before the fence is not there with the flag after it");
    }
}

/* The block into the heap, the flag into a symmetric global (with ISHMEM_OFI_STAGING=always
 * they take different paths to a PE of another node: the mailbox and the network). */
static long gflag[64];
static void phase_fence_global(void) {
    for (int r = 1; r <= rounds; r++) {
        fill(r);
        ishmem_long_put(data + (size_t)me * WORDS, src, WORDS, tgt);
        ishmem_fence();
        ishmem_long_p(&gflag[me], r, tgt);
        ishmem_long_wait_until(&gflag[wr_of_tgt], ISHMEM_CMP_GE, r);
        long first = 0;
        report("fence_global", r, stale(data + (size_t)wr_of_tgt * WORDS, r, wr_of_tgt, &first), first,
               "the block before the fence is stale when the flag after it is seen");
        ishmem_barrier_all();
    }
}

static void phase_put_fence_amo(void) {
    for (int r = 1; r <= rounds; r++) {
        fill(r);
        ishmem_long_put(data + (size_t)me * WORDS, src, WORDS, tgt);
        ishmem_fence();
        ishmem_long_atomic_add(&cnt[me], 1, tgt);
        /* t is an involution: the PE whose target is this PE is this PE's target */
        ishmem_long_wait_until(&cnt[wr_of_tgt], ISHMEM_CMP_GE, r);
        long first = 0;
        report("put_fence_amo", r, stale(data + (size_t)wr_of_tgt * WORDS, r, wr_of_tgt, &first), first,
               "the block before the fence is stale when the add after it is seen");
        ishmem_barrier_all();
    }
}

/* 1 MiB blocks where the target is on this node (a copy the reader can catch in progress),
 * BYTES across nodes. */
enum { SIG_WORDS = 131072 };
static long sig_src[SIG_WORDS];
static void phase_signal(void) {
    int n = t_same_node(tgt) ? SIG_WORDS : WORDS;
    long *blocks = ishmem_calloc((size_t)npes * SIG_WORDS, sizeof(long));
    CHECK(blocks != NULL, "ishmem_calloc of the signal blocks failed");
    if (!blocks)
        return;
    for (int r = 1; r <= rounds; r++) {
        for (int k = 0; k < n; k++) sig_src[k] = pat(r, me, k);
        ishmem_barrier_all();
        ishmem_long_put_signal(blocks + (size_t)me * SIG_WORDS, sig_src, n, &sig[me], (uint64_t)r, ISHMEM_SIGNAL_SET, tgt);
        ishmem_signal_wait_until(&sig[wr_of_tgt], ISHMEM_CMP_GE, (uint64_t)r);
        long first = 0;
        report("signal", r, stale_n(blocks + (size_t)wr_of_tgt * SIG_WORDS, n, r, wr_of_tgt, &first), first,
               "the block is stale when its signal is seen");
        ishmem_barrier_all();
    }
    ishmem_free(blocks);
}

/* signal_gate: the source's last page faults until the target has looked, or GATE_S pass. */
enum { GATE_PAGES = 16, GATE_ROUNDS = 2 };
#define GATE_S 1.0
static char *gsrc;
static size_t gpage;
static volatile sig_atomic_t gate_armed;
static long *gchecked; /* symmetric: [writer] = the round its target has checked */
static int gate_round;
static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static void gate_handler(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    char *a = (char *)si->si_addr, *last = gsrc + (GATE_PAGES - 1) * gpage;
    if (!gate_armed || a < last || a >= last + gpage) {
        signal(sig, SIG_DFL); /* not the gate: fault again, as without this handler */
        return;
    }
    double end = mono_s() + GATE_S;
    while (*(volatile long *)&gchecked[me] < gate_round && mono_s() < end) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    gate_armed = 0;
    mprotect(last, gpage, PROT_READ | PROT_WRITE);
}
static void phase_signal_gate(void) {
    if (!t_same_node(tgt)) { /* across nodes the provider reads the source: not a fault */
        ran = 0;
        return;
    }
    gpage = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = GATE_PAGES * gpage / sizeof(long);
    gsrc = mmap(NULL, GATE_PAGES * gpage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long *blocks = ishmem_calloc((size_t)npes * n, sizeof(long));
    gchecked = ishmem_calloc((size_t)npes, sizeof(long));
    CHECK(gsrc != MAP_FAILED && blocks && gchecked, "signal_gate: mmap or ishmem_calloc failed");
    if (gsrc == MAP_FAILED || !blocks || !gchecked)
        return;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = gate_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    ran = GATE_ROUNDS; /* the rounds in which this PE reads */
    for (int r = 1; r <= 2 * GATE_ROUNDS; r++) {
        int writer = (me < tgt) == (r % 2 == 1);
        uint64_t *s = sig + npes; /* this phase's signals, after the signal phase's */
        ishmem_barrier_all();
        if (writer) {
            long *w = (long *)gsrc;
            for (size_t k = 0; k < n; k++) w[k] = pat(r, me, (int)k);
            gate_round = r;
            mprotect(gsrc + (GATE_PAGES - 1) * gpage, gpage, PROT_NONE);
            gate_armed = 1;
            ishmem_long_put_signal(blocks + (size_t)me * n, w, n, &s[me], (uint64_t)r, ISHMEM_SIGNAL_SET, tgt);
            CHECK(!gate_armed, "signal_gate: round %d: the copy of put_signal never read the source's last page", r);
            gate_armed = 0;
            mprotect(gsrc + (GATE_PAGES - 1) * gpage, gpage, PROT_READ | PROT_WRITE);
        } else {
            ishmem_signal_wait_until(&s[wr_of_tgt], ISHMEM_CMP_GE, (uint64_t)r);
            long first = 0;
            report("signal_gate", r, stale_n(blocks + (size_t)wr_of_tgt * n, (int)n, r, wr_of_tgt, &first), first,
                   "the block is incomplete when its signal is seen (the writer's copy is held at its last page)");
            ishmem_long_p(&gchecked[wr_of_tgt], r, wr_of_tgt);
        }
        ishmem_barrier_all();
    }
    sigaction(SIGSEGV, &old, NULL);
    ishmem_free(gchecked);
    ishmem_free(blocks);
    munmap(gsrc, GATE_PAGES * gpage);
}

static void phase_team_sync(void) {
    ishmem_team_t even, odd;
    int rc = ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, npes / 2, NULL, 0, &even);
    rc |= ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd);
    ishmem_team_t team = me % 2 ? odd : even;
    CHECK(rc == 0 && team != ISHMEM_TEAM_INVALID, "team_split_strided: %d", rc);
    if (rc != 0 || team == ISHMEM_TEAM_INVALID)
        return;
    int n = ishmem_team_n_pes(team);
    int last = ishmem_team_translate_pe(team, n - 1, ISHMEM_TEAM_WORLD);
    for (int r = 1; r <= rounds; r++) {
        fill(r);
        if (me == last) /* the last member is slow: a sync that does not wait for it shows */
            for (int k = 0; k < 20; k++) memcpy(blk, src, BYTES);
        memcpy(blk, src, BYTES);
        ishmem_team_sync(team);
        long first = 0;
        ishmem_long_get(buf, blk, WORDS, last);
        report("team_sync", r, stale(buf, r, last, &first), first, "the team's last PE's block is stale after team_sync");
        ishmem_team_sync(team);
    }
    ishmem_team_destroy(team);
    ishmem_barrier_all();
}

int main(int argc, char **argv) {
    test_init();
    me = t_me;
    npes = t_npes;
    if (npes < 4 || npes % 2) {
        fprintf(stderr, "FAIL: [PE %d] order_mut needs an even number of PEs >= 4 (got %d)\n", me, npes);
        ishmem_finalize();
        return 1;
    }
    if (argc > 1)
        rounds = atoi(argv[1]);
    tgt = (me + npes / 2) % npes;
    chk = me ^ 1;
    wr_of_chk = me ^ 1;
    wr_of_tgt = tgt;
    data = ishmem_calloc((size_t)npes * WORDS, sizeof(long));
    blk = ishmem_calloc(WORDS, sizeof(long));
    flag = ishmem_calloc((size_t)npes, sizeof(long));
    x = ishmem_calloc((size_t)npes, sizeof(long));
    cnt = ishmem_calloc((size_t)npes, sizeof(long));
    sig = ishmem_calloc(2 * (size_t)npes, sizeof(uint64_t));
    CHECK(data && blk && flag && x && cnt && sig, "ishmem_calloc failed");
    static const struct {
        const char *name;
        void (*run)(void);
    } phases[] = {{"quiet", phase_quiet},
                  {"get", phase_get},
                  {"amo_fence_put", phase_amo_fence_put},
                  {"put_fence_amo", phase_put_fence_amo},
                  {"fence_global", phase_fence_global},
                  {"signal", phase_signal},
                  {"signal_gate", phase_signal_gate},
                  {"team_sync", phase_team_sync}};
    int nph = (int)(sizeof phases / sizeof phases[0]);
    for (int a = 2; a < argc; a++) {
        bool ok = false;
        for (int p = 0; p < nph; p++) ok |= !strcmp(argv[a], phases[p].name);
        CHECK(ok, "unknown phase '%s'", argv[a]);
    }
    for (int p = 0; p < nph && !t_failures; p++) {
        bool want = argc <= 2;
        for (int a = 2; a < argc; a++) want |= !strcmp(argv[a], phases[p].name);
        if (!want)
            continue;
        memset(flag, 0, (size_t)npes * sizeof(long));
        ishmem_barrier_all();
        wrong = 0;
        ran = rounds;
        phases[p].run();
        CHECK(wrong == 0, "phase %s: %d of %d rounds wrong", phases[p].name, wrong, ran);
        ishmem_barrier_all();
    }
    return test_finish("order_mut");
}
