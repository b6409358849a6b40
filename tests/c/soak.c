/* soak: a seeded random mix of every operation family, round after round, for a given time,
 * with exact checks after each round.
 *   soak [seconds [seed]]          (SOAK_SECONDS, SOAK_SEED in the environment also set them)
 * Every PE draws the same "shared" random sequence (so collective choices agree) and its own
 * sequence for the rest. One round:
 *   1. malloc/calloc/align/free churn: 0-3 new blocks of 8 B .. 64 KiB, 0-3 freed; each PE
 *      fills its copy of a new block with a pattern of (block, PE, stamp).
 *   2. RMA: on a random live block every PE writes the pattern of (block, itself, round) into
 *      the next PE's copy (putmem, put_nbi halves, or iput of even and odd words), quiet,
 *      barrier, then reads it back from the next PE (getmem, get_nbi or iget) and checks it.
 *   3. AMOs on random PEs: add, fetch_add, inc, fetch_inc, compare_swap loops (+1), xor,
 *      fetch_xor, swap; the totals are checked after a barrier against sum/xor reductions of
 *      what every PE sent to each.
 *   4. signals: put_signal (ADD) of a message to the next PE, signal_wait_until on its own
 *      word, the message checked; also signal_fetch.
 *   5. collectives on a random team (split_strided of the world with random start, stride,
 *      size): broadcast, fcollect, collect, alltoall, sum/max reductions, sync; checked;
 *      destroyed.
 *   6. checksum: every live block read back and compared with its pattern; the errors of all
 *      PEs summed (sum_reduce); PE 0 decides, by broadcast, whether another round runs.
 * The heap is never dereferenced by the host (every access is an ishmem call), so the program
 * runs on the CUDA backend too (ISHMEM_GPU=1).
 * At the end PE 0 prints rounds, operations, errors, resident memory (private and shared) after
 * round 1, at half time and at the end, and open descriptors; the descriptors must not grow
 * from half time to the end.
 * SOAK_FAULT=kill|segv|exit0 with SOAK_FAULT_PE=n and SOAK_FAULT_MS=t: PE n does that t ms
 * after init (a timer signal): SIGKILL and SIGSEGV wherever it is, exit(0) (without
 * ishmem_finalize) at its next operation, for the fault runs (scripts/reliability.sh). */
#include "test_util.h"
#include <dirent.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BLOCKS = 24, MAX_BYTES = 65536 };
typedef struct {
    char *p;
    size_t n;      /* bytes, a multiple of 8 */
    uint64_t id;   /* content of PE q: pat(id, writer(q), stamp) */
    uint64_t stamp;
    int by_prev;   /* 1: written by the previous PE, else by the owner */
} block_t;

static block_t blocks[MAX_BLOCKS];
static int nblocks;
static uint64_t next_id = 1;
static long ops, errors;
static uint64_t shared_rng, own_rng;
static int next_pe, prev_pe;
static long *amo;          /* [4]: add total, xor total, swap word, spare */
static long *sums, *sums_all; /* [2 * npes]: adds and xors sent to each PE; their reductions */
static uint64_t *sig;
static long *msg;          /* [8] */
static long *word;         /* [1] the continue flag / error count */
static long *word_all;
static uint64_t stats_buf[8];

static volatile sig_atomic_t fault_due; /* exit0: the timer fired; exit at the next tick */
/* Counts operations; the exit(0) fault happens here, between two calls (exit from inside a
 * library call, from a signal handler, is undefined behaviour). */
static void tick(long n) {
    ops += n;
    if (fault_due) exit(0);
}

static uint64_t rnd(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t pat(uint64_t id, int pe, uint64_t stamp, size_t i) {
    uint64_t s = id * 0x100000001b3ull ^ ((uint64_t)pe << 40) ^ (stamp << 8) ^ i;
    return rnd(&s);
}
static void fill(uint64_t *buf, size_t words, uint64_t id, int pe, uint64_t stamp) {
    for (size_t i = 0; i < words; i++) buf[i] = pat(id, pe, stamp, i);
}
static long compare(const char *what, const uint64_t *got, size_t words, uint64_t id, int pe, uint64_t stamp) {
    for (size_t i = 0; i < words; i++)
        if (got[i] != pat(id, pe, stamp, i)) {
            fprintf(stderr, "FAIL: [PE %d] %s: block %llu word %zu of %zu: %llx, want %llx\n", t_me, what,
                    (unsigned long long)id, i, words, (unsigned long long)got[i],
                    (unsigned long long)pat(id, pe, stamp, i));
            return 1;
        }
    return 0;
}

static uint64_t lbuf[MAX_BYTES / 8], lbuf2[MAX_BYTES / 8];

/* own copy of a symmetric object, through the library (the heap may be GPU memory) */
static void put_own(void *sym, const void *src, size_t n) { ishmem_putmem(sym, src, n, t_me); tick(1); }
static void get_own(void *dst, const void *sym, size_t n) { ishmem_getmem(dst, sym, n, t_me); tick(1); }

static void churn(void) {
    int nfree = (int)(rnd(&shared_rng) % 4), nnew = (int)(rnd(&shared_rng) % 4);
    for (int k = 0; k < nfree && nblocks > 0; k++) {
        int i = (int)(rnd(&shared_rng) % (uint64_t)nblocks);
        ishmem_free(blocks[i].p);
        tick(1);
        blocks[i] = blocks[--nblocks];
    }
    for (int k = 0; k < nnew && nblocks < MAX_BLOCKS; k++) {
        size_t n = 8 * (1 + rnd(&shared_rng) % (MAX_BYTES / 8));
        int how = (int)(rnd(&shared_rng) % 3);
        void *p = how == 0 ? ishmem_malloc(n) : how == 1 ? ishmem_calloc(n / 8, 8) : ishmem_align((size_t)64 << (rnd(&shared_rng) % 6), n);
        tick(1);
        if (!p) {
            errors++;
            fprintf(stderr, "FAIL: [PE %d] allocation of %zu bytes returned NULL\n", t_me, n);
            continue;
        }
        if (how == 1) { /* calloc: zero on every PE */
            get_own(lbuf, p, n);
            for (size_t i = 0; i < n / 8; i++)
                if (lbuf[i]) {
                    errors++;
                    fprintf(stderr, "FAIL: [PE %d] calloc'ed block not zero at word %zu\n", t_me, i);
                    break;
                }
        }
        block_t b = {(char *)p, n, next_id++, 0, 0};
        fill(lbuf, n / 8, b.id, t_me, 0);
        put_own(b.p, lbuf, n);
        blocks[nblocks++] = b;
    }
    ishmem_barrier_all();
    tick(1);
}

static void rma(uint64_t round) {
    if (nblocks == 0) return;
    block_t *b = &blocks[rnd(&shared_rng) % (uint64_t)nblocks];
    size_t w = b->n / 8;
    int how = (int)(rnd(&shared_rng) % 3);
    fill(lbuf, w, b->id, t_me, round);
    if (how == 0) {
        ishmem_putmem(b->p, lbuf, b->n, next_pe);
        tick(1);
    } else if (how == 1) {
        size_t h = w / 2;
        ishmem_long_put_nbi((long *)b->p, (long *)lbuf, h, next_pe);
        ishmem_long_put_nbi((long *)b->p + h, (long *)lbuf + h, w - h, next_pe);
        tick(2);
    } else {
        ishmem_long_iput((long *)b->p, (long *)lbuf, 2, 2, (w + 1) / 2, next_pe);
        if (w > 1) ishmem_long_iput((long *)b->p + 1, (long *)lbuf + 1, 2, 2, w / 2, next_pe);
        tick(2);
    }
    ishmem_quiet();
    ishmem_barrier_all();
    tick(2);
    b->stamp = round;
    b->by_prev = 1;
    memset(lbuf2, 0, b->n);
    how = (int)(rnd(&own_rng) % 3);
    if (how == 0) {
        ishmem_getmem(lbuf2, b->p, b->n, next_pe);
        tick(1);
    } else if (how == 1) {
        ishmem_long_get_nbi((long *)lbuf2, (long *)b->p, w, next_pe);
        ishmem_quiet();
        tick(2);
    } else {
        ishmem_long_iget((long *)lbuf2, (long *)b->p, 1, 1, w, next_pe);
        tick(1);
    }
    errors += compare("rma read back", lbuf2, w, b->id, t_me, round);
}

static void amos(void) {
    long zero[2 * 64] = {0};
    long n = 5 + (long)(rnd(&own_rng) % 20);
    long mine[2 * 64] = {0};
    for (long k = 0; k < n; k++) {
        int pe = (int)(rnd(&own_rng) % (uint64_t)t_npes);
        long v = (long)(rnd(&own_rng) % 1000);
        switch (rnd(&own_rng) % 8) {
        case 0: ishmem_long_atomic_add(&amo[0], v, pe); mine[pe] += v; break;
        case 1: (void)ishmem_long_atomic_fetch_add(&amo[0], v, pe); mine[pe] += v; break;
        case 2: ishmem_long_atomic_inc(&amo[0], pe); mine[pe] += 1; break;
        case 3: (void)ishmem_long_atomic_fetch_inc(&amo[0], pe); mine[pe] += 1; break;
        case 4: {
            long old = ishmem_long_atomic_fetch(&amo[0], pe), seen;
            while ((seen = ishmem_long_atomic_compare_swap(&amo[0], old, old + 1, pe)) != old) { old = seen; tick(1); }
            mine[pe] += 1;
            tick(1);
            break;
        }
        case 5: ishmem_ulong_atomic_xor((unsigned long *)&amo[1], (unsigned long)v, pe); mine[t_npes + pe] ^= v; break;
        case 6: (void)ishmem_ulong_atomic_fetch_xor((unsigned long *)&amo[1], (unsigned long)v, pe); mine[t_npes + pe] ^= v; break;
        default: {
            long old = ishmem_long_atomic_swap(&amo[2], 1000 + t_me, pe);
            if (old != 0 && (old < 1000 || old >= 1000 + t_npes)) {
                errors++;
                fprintf(stderr, "FAIL: [PE %d] swap returned %ld\n", t_me, old);
            }
            break;
        }
        }
        tick(1);
    }
    /* what this PE sent to each PE, summed (adds) and xored (xors) over all PEs */
    put_own(sums, mine, 2 * (size_t)t_npes * sizeof(long));
    ishmem_barrier_all();
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, sums_all, sums, (size_t)t_npes);
    ishmem_ulong_xor_reduce(ISHMEM_TEAM_WORLD, (unsigned long *)sums_all + t_npes, (unsigned long *)sums + t_npes, (size_t)t_npes);
    tick(3);
    long tot[2 * 64], now[3];
    get_own(tot, sums_all, 2 * (size_t)t_npes * sizeof(long));
    get_own(now, amo, 3 * sizeof(long));
    if (now[0] != tot[t_me] || now[1] != tot[t_npes + t_me]) {
        errors++;
        fprintf(stderr, "FAIL: [PE %d] AMO totals add %ld xor %ld, sent %ld and %ld\n", t_me, now[0], now[1], tot[t_me],
                tot[t_npes + t_me]);
    }
    ishmem_barrier_all(); /* every PE has read its totals before the next round's AMOs */
    put_own(amo, zero, 2 * sizeof(long));
    ishmem_barrier_all();
    tick(3);
}

static void signals(uint64_t round) {
    fill(lbuf, 8, 7, t_me, round);
    ishmem_long_put_signal(msg, (long *)lbuf, 8, sig, 1, ISHMEM_SIGNAL_ADD, next_pe);
    uint64_t v = ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, round);
    uint64_t f = ishmem_signal_fetch(sig);
    tick(3);
    if (v != round || f != round) {
        errors++;
        fprintf(stderr, "FAIL: [PE %d] signal %llu (fetch %llu), want %llu\n", t_me, (unsigned long long)v,
                (unsigned long long)f, (unsigned long long)round);
    }
    get_own(lbuf2, msg, 64);
    errors += compare("signal message", lbuf2, 8, 7, prev_pe, round);
    ishmem_barrier_all(); /* the message is read before the next round's */
    tick(1);
}

static void collectives(uint64_t round) {
    int stride = 1 + (int)(rnd(&shared_rng) % (uint64_t)t_npes);
    int start = (int)(rnd(&shared_rng) % (uint64_t)t_npes);
    int maxsize = (t_npes - 1 - start) / stride + 1;
    int size = 1 + (int)(rnd(&shared_rng) % (uint64_t)maxsize);
    size_t nelem = 1 + rnd(&shared_rng) % 512; /* longs per PE */
    int root_r = (int)(rnd(&shared_rng) % (uint64_t)size);
    ishmem_team_t team = ISHMEM_TEAM_INVALID;
    int rc = ishmem_team_split_strided(ISHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &team);
    tick(1);
    int member = t_me >= start && (t_me - start) % stride == 0 && (t_me - start) / stride < size;
    if (rc != 0 || (member != (team != ISHMEM_TEAM_INVALID))) {
        errors++;
        fprintf(stderr, "FAIL: [PE %d] split(%d, %d, %d): rc %d, team %d\n", t_me, start, stride, size, rc, (int)team);
    }
    size_t bytes = nelem * 8 * (size_t)size;
    long *src = ishmem_malloc(bytes), *dst = ishmem_malloc(bytes), *red = ishmem_malloc(2 * nelem * 8);
    tick(3);
    if (member && team != ISHMEM_TEAM_INVALID && src && dst && red) {
        int me = ishmem_team_my_pe(team), n = ishmem_team_n_pes(team);
        if (me != (t_me - start) / stride || n != size) {
            errors++;
            fprintf(stderr, "FAIL: [PE %d] team_my_pe %d n_pes %d\n", t_me, me, n);
        }
        /* broadcast: the root's pattern */
        fill(lbuf, nelem, 11, root_r, round);
        put_own(src, lbuf, nelem * 8);
        ishmem_long_broadcast(team, dst, src, nelem, root_r);
        get_own(lbuf2, dst, nelem * 8);
        errors += compare("broadcast", lbuf2, nelem, 11, root_r, round);
        /* fcollect: block j from team PE j */
        fill(lbuf, nelem, 12, me, round);
        put_own(src, lbuf, nelem * 8);
        ishmem_long_fcollect(team, dst, src, nelem);
        get_own(lbuf2, dst, bytes);
        for (int j = 0; j < n; j++) errors += compare("fcollect", lbuf2 + (size_t)j * nelem, nelem, 12, j, round);
        /* collect: team PE j gives j % 3 + 1 elements */
        size_t mine = (size_t)(me % 3 + 1);
        fill(lbuf, mine, 13, me, round);
        put_own(src, lbuf, mine * 8);
        ishmem_long_collect(team, dst, src, mine);
        size_t total = 0;
        for (int j = 0; j < n; j++) total += (size_t)(j % 3 + 1);
        get_own(lbuf2, dst, total * 8);
        for (int j = 0, off = 0; j < n; off += j % 3 + 1, j++)
            errors += compare("collect", lbuf2 + off, (size_t)(j % 3 + 1), 13, j, round);
        /* alltoall: block j of PE i is pattern (i, j) */
        size_t per = nelem / (size_t)n > 0 ? nelem / (size_t)n : 1;
        for (int j = 0; j < n; j++) fill(lbuf + (size_t)j * per, per, 14 + (uint64_t)j * 1000, me, round);
        put_own(src, lbuf, per * (size_t)n * 8);
        ishmem_long_alltoall(team, dst, src, per);
        get_own(lbuf2, dst, per * (size_t)n * 8);
        for (int j = 0; j < n; j++) errors += compare("alltoall", lbuf2 + (size_t)j * per, per, 14 + (uint64_t)me * 1000, j, round);
        /* reductions: sum and max of small values */
        for (size_t i = 0; i < nelem; i++) lbuf[i] = (uint64_t)(long)((i * 7 + (size_t)me * 13 + round) % 1000);
        put_own(src, lbuf, nelem * 8);
        ishmem_long_sum_reduce(team, red, src, nelem);
        ishmem_long_max_reduce(team, red + nelem, src, nelem);
        get_own(lbuf2, red, 2 * nelem * 8);
        for (size_t i = 0; i < nelem; i++) {
            long s = 0, m = -1;
            for (int j = 0; j < n; j++) {
                long v = (long)((i * 7 + (size_t)j * 13 + round) % 1000);
                s += v;
                if (v > m) m = v;
            }
            if ((long)lbuf2[i] != s || (long)lbuf2[nelem + i] != m) {
                errors++;
                fprintf(stderr, "FAIL: [PE %d] reduce element %zu: sum %ld max %ld, want %ld %ld\n", t_me, i,
                        (long)lbuf2[i], (long)lbuf2[nelem + i], s, m);
                break;
            }
        }
        ishmem_team_sync(team);
        tick(8);
    }
    if (team != ISHMEM_TEAM_INVALID) {
        ishmem_team_destroy(team);
        tick(1);
    }
    ishmem_barrier_all(); /* nobody frees the buffers while a team member still reads them */
    ishmem_free(src);
    ishmem_free(dst);
    ishmem_free(red);
    tick(4);
}

static void checksum(void) {
    for (int i = 0; i < nblocks; i++) {
        block_t *b = &blocks[i];
        get_own(lbuf, b->p, b->n);
        errors += compare("checksum", lbuf, b->n / 8, b->id, b->by_prev ? prev_pe : t_me, b->stamp);
    }
}

static long count_fds(void) {
    long n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n - 3; /* ., .., and the descriptor of the listing itself */
}
/* kB of resident memory from /proc/self/status: RssAnon (the process's private memory: what a
 * leak grows) or RssShmem (shared memory: the heaps' pages this process touched, which grow
 * until the allocator has used all the offsets it will use) */
static long rss_kb(const char *which) {
    char line[256];
    long v = -1;
    size_t n = strlen(which);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, which, n) && line[n] == ':') v = atol(line + n + 1);
    fclose(f);
    return v;
}

static volatile sig_atomic_t fault_kind;
static volatile int *volatile null_target; /* NULL: a store through it is the SIGSEGV fault */
/* "soak: fault <kind> on PE <n> (pid <p>) at <CLOCK_REALTIME ns>" on stderr, async-signal-safe: the
 * fault runs measure from it to the job's end. */
static void say_fault(void) {
    static const char *kinds[] = {"", "kill", "segv", "exit0"};
    char line[128], num[24];
    size_t n = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long vals[3] = {(unsigned long long)t_me, (unsigned long long)getpid(),
                                  (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec};
    const char *parts[] = {"soak: fault ", kinds[fault_kind], " on PE ", NULL, " (pid ", NULL, ") at ", NULL, "\n"};
    for (int i = 0, v = 0; i < 9; i++) {
        const char *p = parts[i];
        if (!p) {
            int k = 0;
            unsigned long long x = vals[v++];
            do { num[k++] = (char)('0' + x % 10); x /= 10; } while (x);
            while (k) line[n++] = num[--k];
            continue;
        }
        while (*p) line[n++] = *p++;
    }
    if (write(2, line, n) < 0) return;
}
static void fault_handler(int s) {
    (void)s;
    say_fault();
    if (fault_kind == 1) raise(SIGKILL);
    if (fault_kind == 2) *null_target = 1; /* SIGSEGV */
    if (fault_kind == 3) fault_due = 1; /* exit(0) without ishmem_finalize at the next tick */
}
static void arm_fault(void) {
    const char *f = getenv("SOAK_FAULT"), *pe = getenv("SOAK_FAULT_PE"), *ms = getenv("SOAK_FAULT_MS");
    if (!f || !pe || atoi(pe) != t_me) return;
    fault_kind = !strcmp(f, "kill") ? 1 : !strcmp(f, "segv") ? 2 : !strcmp(f, "exit0") ? 3 : 0;
    if (!fault_kind) {
        fprintf(stderr, "FAIL: SOAK_FAULT=%s: not kill, segv or exit0\n", f);
        exit(2);
    }
    long t = ms ? atol(ms) : 1000;
    struct itimerval it = {{0, 0}, {t / 1000, (t % 1000) * 1000}};
    signal(SIGALRM, fault_handler);
    setitimer(ITIMER_REAL, &it, NULL);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    double seconds = getenv("SOAK_SECONDS") ? atof(getenv("SOAK_SECONDS")) : 10;
    uint64_t seed = getenv("SOAK_SEED") ? strtoull(getenv("SOAK_SEED"), NULL, 0) : 1;
    if (argc > 1) seconds = atof(argv[1]);
    if (argc > 2) seed = strtoull(argv[2], NULL, 0);
    test_init();
    arm_fault();
    if (t_npes > 64) {
        fprintf(stderr, "FAIL: soak runs at most 64 PEs\n");
        return 2;
    }
    shared_rng = seed;
    own_rng = seed ^ (0x51ed27ull * (uint64_t)(t_me + 1));
    next_pe = (t_me + 1) % t_npes;
    prev_pe = (t_me + t_npes - 1) % t_npes;
    amo = ishmem_calloc(4, sizeof(long));
    sums = ishmem_calloc(2 * (size_t)t_npes, sizeof(long));
    sums_all = ishmem_calloc(2 * (size_t)t_npes, sizeof(long));
    sig = ishmem_calloc(1, sizeof(uint64_t));
    msg = ishmem_calloc(8, sizeof(long));
    word = ishmem_calloc(1, sizeof(long));
    word_all = ishmem_calloc(1, sizeof(long));
    CHECK(amo && sums && sums_all && sig && msg && word && word_all, "allocation failed");
    ishmem_barrier_all();
    double t0 = now_s();
    long fds0 = 0, fds_half = -1, anon0 = 0, shm0 = 0, anon_half = -1, shm_half = -1;
    uint64_t round = 0;
    for (;;) {
        round++;
        churn();
        rma(round);
        amos();
        signals(round);
        collectives(round);
        checksum();
        /* errors of every PE, and PE 0's word on whether to go on */
        put_own(word, &errors, sizeof errors);
        ishmem_barrier_all();
        ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, word_all, word, 1);
        long go = now_s() - t0 < seconds;
        put_own(word, &go, sizeof go);
        ishmem_barrier_all();
        ishmem_long_broadcast(ISHMEM_TEAM_WORLD, word_all + 0, word, 1, 0); /* (reuses word_all) */
        tick(4);
        get_own(&go, word_all, sizeof go);
        if (round == 1) {
            fds0 = count_fds();
            anon0 = rss_kb("RssAnon");
            shm0 = rss_kb("RssShmem");
        }
        if (anon_half < 0 && now_s() - t0 >= seconds / 2) {
            fds_half = count_fds();
            anon_half = rss_kb("RssAnon");
            shm_half = rss_kb("RssShmem");
        }
        if (!go) break;
    }
    while (nblocks > 0) ishmem_free(blocks[--nblocks].p);
    long fds1 = count_fds(), anon1 = rss_kb("RssAnon"), shm1 = rss_kb("RssShmem");
    CHECK(errors == 0, "%ld errors", errors);
    /* from half time on (a network provider opens its connections when first used) */
    long fds_ref = fds_half < 0 ? fds0 : fds_half;
    CHECK(fds1 == fds_ref, "open descriptors grew from %ld (half time) to %ld", fds_ref, fds1);
    long mine[3] = {ops, errors, anon1 - (anon_half < 0 ? anon0 : anon_half)}, all[3];
    put_own(sums, mine, sizeof mine);
    ishmem_barrier_all();
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, sums_all, sums, 3);
    get_own(all, sums_all, sizeof all);
    (void)stats_buf;
    if (t_me == 0)
        printf("soak: %d PEs, %.0f s, seed %llu: rounds %llu, operations %ld, errors %ld; PE 0 memory (kB) after round 1 / "
               "at half time / at the end: private (RssAnon) %ld / %ld / %ld, shared heap pages (RssShmem) %ld / %ld / %ld; "
               "open fds %ld / %ld / %ld; private growth in the second half summed over PEs %ld kB\n",
               t_npes, now_s() - t0, (unsigned long long)seed, (unsigned long long)round, all[0], all[1], anon0, anon_half,
               anon1, shm0, shm_half, shm1, fds0, fds_half, fds1, all[2]);
    fflush(stdout);
    return test_finish("soak");
}
