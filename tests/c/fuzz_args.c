/* fuzz_args SEED: one call with a random invalid argument (issue 12, item 4), chosen by SEED
 * (the same on every PE): a random PE calls a random function of a random family (RMA, strided
 * RMA, AMO, signal, wait/test, collectives, teams, memory) with one argument drawn from a class
 * of invalid values (PE out of range, an address outside the symmetric heap or straddling its
 * end, a misaligned AMO target, an overflowing size or stride, an invalid team or root, a
 * wrong cmp or sig_op, NULL, a pointer that is not an allocation's start); the other PEs wait
 * in a barrier. The library must end the whole job with one "[PE n] ERROR: <function>: ..."
 * line; before the call the PE prints "FUZZ: [PE n] <function>: <what>" so that the runner
 * (tests/scripts/fuzz_args.sh) knows which function the error must name. A call that returns
 * prints "FAIL: ...". */
#include "test_util.h"
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

static uint64_t rng;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t n) { return next() % n; }

static const char *what = "";
static const char *fname = "";
static int bad_pe_num;

/* ---- classes of invalid values ---- */
static int bad_pe(void) {
    static char buf[64];
    int v;
    switch (below(6)) {
    case 0: v = -1; break;
    case 1: v = t_npes; break;
    case 2: v = t_npes + 1 + (int)below(1000); break;
    case 3: v = INT_MAX; break;
    case 4: v = INT_MIN; break;
    default: v = -2 - (int)below(100000); break;
    }
    snprintf(buf, sizeof buf, "pe %d of %d", v, t_npes);
    what = buf;
    return v;
}

static long stack_words[64]; /* a global: symmetric by default, never an allocation's start */
static char *heap_block; /* a symmetric block of 4 KiB */

/* An address that is not symmetric (local side of nothing): a stack or malloc'ed buffer, a
 * low unmapped address, the top of the address space, NULL. Never dereferenced by this
 * program. */
static long *main_stack; /* an array on main's stack */
static void *outside(void) {
    void *p;
    switch (below(6)) {
    case 0: p = main_stack; what = "a stack address"; break;
    case 1: p = malloc(256); what = "a malloc'ed address"; break;
    case 2: p = (void *)(uintptr_t)(0x1000 + 8 * below(4096)); what = "a low unmapped address"; break;
    case 3: p = (void *)(UINTPTR_MAX - 4095 - 8 * below(64)); what = "the top of the address space"; break;
    case 4: p = (char *)malloc(256) + 3; what = "a misaligned malloc'ed address"; break;
    default: p = NULL; what = "NULL"; break;
    }
    return p;
}

/* A count of elements of `elem` bytes whose byte size overflows. */
static size_t overflow_count(size_t elem) {
    switch (below(3)) {
    case 0: what = "nelems SIZE_MAX"; return SIZE_MAX;
    case 1:
        /* (for 1-byte elements no product overflows: a count above PTRDIFF_MAX bytes) */
        what = elem == 1 ? "nelems SIZE_MAX - k" : "nelems SIZE_MAX / elem + 1 + k";
        return elem == 1 ? SIZE_MAX - below(1000) : SIZE_MAX / elem + 1 + below(1000);
    default: what = "nelems (SIZE_MAX >> 1) / elem + 1"; return (SIZE_MAX >> 1) / elem + 1;
    }
}

/* A count that fits size_t but runs past the end of the heap from heap_block. */
static size_t straddle_count(size_t elem) {
    what = "a range from a heap block past the heap's end";
    return ((size_t)1 << (40 + below(8))) / elem;
}

static int bad_cmp(void) {
    static const int vals[] = {0, 7, 8, -1, 100, INT_MAX, INT_MIN};
    static char buf[64];
    int v = vals[below(sizeof vals / sizeof vals[0])];
    snprintf(buf, sizeof buf, "cmp %d", v);
    what = buf;
    return v;
}

static int bad_sig_op(void) {
    static const int vals[] = {2, 3, -1, 255, INT_MAX, INT_MIN};
    static char buf[64];
    int v = vals[below(sizeof vals / sizeof vals[0])];
    snprintf(buf, sizeof buf, "sig_op %d", v);
    what = buf;
    return v;
}

static ishmem_team_t bad_team(int allow_invalid) {
    static char buf[64];
    ishmem_team_t v;
    switch (below(allow_invalid ? 5 : 4)) {
    case 0: v = 17; break;            /* a slot with no team */
    case 1: v = 4096 + (int)below(1000); break;
    case 2: v = INT_MAX; break;
    case 3: v = -2 - (int)below(1000); break;
    default: v = ISHMEM_TEAM_INVALID; break;
    }
    snprintf(buf, sizeof buf, "team %d", v);
    what = buf;
    return v;
}

/* A misaligned address inside heap_block for an AMO on `size`-byte words. */
static void *misaligned(size_t size) {
    static char buf[64];
    size_t off = 1 + below(size - 1);
    snprintf(buf, sizeof buf, "a target misaligned by %zu bytes", off);
    what = buf;
    return heap_block + 64 + off;
}

#define CALL(name) fname = #name

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "FAIL: usage: fuzz_args SEED\n");
        return 2;
    }
    rng = strtoull(argv[1], NULL, 0);
    long stack_local[8] = {0};
    main_stack = stack_local;
    test_init();
    heap_block = ishmem_calloc(4096, 1);
    long *lb = (long *)heap_block;
    uint64_t *sig = (uint64_t *)(heap_block + 2048);
    long src[64] = {0};
    ishmem_barrier_all();

    bad_pe_num = (int)below((uint64_t)t_npes);
    const int ncases = 26;
    int c = (int)below(ncases);
    if (t_me != bad_pe_num) {
        ishmem_barrier_all();
        fprintf(stderr, "FAIL: [PE %d] the barrier returned although PE %d made a bad call\n", t_me, bad_pe_num);
        return 3;
    }
    /* the bad call, described first */
    int pe = (t_me + 1) % t_npes;
    size_t n = 4;
    void *dest = lb, *from = src;
    int k = (int)below(4);
    switch (c) {
    /* ---- RMA ---- */
    case 0: case 1: case 2: {
        /* put / get / putmem_nbi: pe, symmetric side outside, straddling, NULL local, overflow */
        const char *names[] = {"ishmem_long_put", "ishmem_long_get", "ishmem_putmem_nbi"};
        fname = names[c];
        size_t elem = c == 2 ? 1 : sizeof(long);
        switch (below(5)) {
        case 0: pe = bad_pe(); break;
        case 1: dest = outside(); if (!dest) dest = (void *)(uintptr_t)0x2000; break;
        case 2: n = straddle_count(elem); break;
        case 3: from = NULL; what = "NULL local buffer"; break;
        default: n = overflow_count(elem); break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        if (c == 0) ishmem_long_put((long *)dest, (long *)from, n, pe);
        else if (c == 1) ishmem_long_get((long *)from, (long *)dest, n, pe);
        else ishmem_putmem_nbi(dest, from, n, pe);
        break;
    }
    case 3: CALL(ishmem_int_p);
        if (k & 1) pe = bad_pe(); else dest = outside();
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_int_p((int *)dest, 1, pe);
        break;
    case 4: CALL(ishmem_double_g);
        if (k & 1) pe = bad_pe(); else dest = outside();
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_double_g((double *)dest, pe);
        break;
    case 5: CALL(ishmem_getmem);
        switch (k) {
        case 0: pe = bad_pe(); break;
        case 1: dest = outside(); if (!dest) dest = (void *)(uintptr_t)0x2000; break;
        case 2: n = straddle_count(1); break;
        default: n = overflow_count(1); break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_getmem(src, dest, n, pe);
        break;
    /* ---- strided RMA ---- */
    case 6: case 7: {
        fname = c == 6 ? "ishmem_long_iput" : "ishmem_long_iget";
        ptrdiff_t dst = 1, sst = 1;
        /* the stride of the symmetric side (iput: dest, iget: source): a local buffer with a
         * wild stride is the caller's memory error, as for memcpy */
        ptrdiff_t *sym = c == 6 ? &dst : &sst;
        switch (below(5)) {
        case 0: dst = 0; what = "dst stride 0"; break;
        case 1: sst = -1 - (ptrdiff_t)below(100); what = "a negative sst stride"; break;
        case 2: *sym = PTRDIFF_MAX; n = 2 + below(10); what = "symmetric stride PTRDIFF_MAX"; break;
        case 3: *sym = (ptrdiff_t)1 << 40; n = 2; what = "symmetric blocks spaced past the heap's end"; break;
        default: pe = bad_pe(); break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        if (c == 6) ishmem_long_iput(lb, src, dst, sst, n, pe);
        else ishmem_long_iget(lb, lb + 8, dst, sst, n, pe);
        break;
    }
    /* ---- AMO ---- */
    case 8: CALL(ishmem_int64_atomic_add);
        if (k == 0) pe = bad_pe(); else if (k == 1) dest = outside(); else dest = misaligned(8);
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_int64_atomic_add((int64_t *)dest, 1, pe);
        break;
    case 9: CALL(ishmem_long_atomic_fetch_inc);
        if (k == 0) pe = bad_pe(); else if (k == 1) dest = outside(); else dest = misaligned(sizeof(long));
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_long_atomic_fetch_inc((long *)dest, pe);
        break;
    case 10: CALL(ishmem_uint64_atomic_compare_swap);
        if (k == 0) pe = bad_pe(); else if (k == 1) dest = outside(); else dest = misaligned(8);
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_uint64_atomic_compare_swap((uint64_t *)dest, 0, 1, pe);
        break;
    case 11: CALL(ishmem_int_atomic_fetch);
        if (k == 0) pe = bad_pe(); else if (k == 1) dest = outside(); else dest = misaligned(4);
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_int_atomic_fetch((int *)dest, pe);
        break;
    /* ---- signals ---- */
    case 12: {
        CALL(ishmem_putmem_signal);
        int op = ISHMEM_SIGNAL_SET;
        uint64_t *s = sig;
        switch (below(5)) {
        case 0: op = bad_sig_op(); break;
        case 1: s = outside(); break;
        case 2: s = misaligned(8); break;
        case 3: pe = bad_pe(); break;
        default: dest = outside(); if (!dest) dest = (void *)(uintptr_t)0x2000; break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_putmem_signal(dest, src, 8, s, 1, op, pe);
        break;
    }
    case 13: {
        CALL(ishmem_signal_wait_until);
        uint64_t *s = sig;
        int cmp = ISHMEM_CMP_EQ;
        if (k & 1) cmp = bad_cmp(); else s = outside();
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_signal_wait_until(s, cmp, 0);
        break;
    }
    /* ---- point-to-point synchronization ---- */
    case 14: {
        CALL(ishmem_long_wait_until);
        int cmp = ISHMEM_CMP_EQ;
        if (k & 1) cmp = bad_cmp(); else dest = outside();
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_long_wait_until((long *)dest, cmp, 0);
        break;
    }
    case 15: {
        CALL(ishmem_int_test);
        int cmp = ISHMEM_CMP_EQ;
        if (k & 1) cmp = bad_cmp(); else dest = outside();
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_int_test((int *)dest, cmp, 0);
        break;
    }
    /* ---- collectives (checked before any other PE is waited for) ---- */
    case 16: {
        CALL(ishmem_int_sum_reduce);
        ishmem_team_t t = ISHMEM_TEAM_WORLD;
        int *d = (int *)lb, *s = (int *)lb + 64;
        switch (below(4)) {
        case 0: t = bad_team(1); break;
        case 1: d = outside(); break;
        case 2: s = d + 1; what = "overlapping dest and source"; break;
        default: n = overflow_count(sizeof(int)); break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_int_sum_reduce(t, d, s, n);
        break;
    }
    case 17: {
        CALL(ishmem_long_broadcast);
        ishmem_team_t t = ISHMEM_TEAM_WORLD;
        int root = 0;
        long *d = lb;
        switch (below(3)) {
        case 0: t = bad_team(1); break;
        case 1: root = bad_pe(); what = "root out of range"; break;
        default: d = outside(); break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_long_broadcast(t, d, lb + 64, n, root);
        break;
    }
    case 18: {
        CALL(ishmem_int_fcollect);
        ishmem_team_t t = ISHMEM_TEAM_WORLD;
        int *d = (int *)lb + 128;
        switch (below(3)) {
        case 0: t = bad_team(1); break;
        case 1: d = outside(); break;
        default: n = overflow_count(sizeof(int)); break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_int_fcollect(t, d, (int *)lb, n);
        break;
    }
    case 19: {
        CALL(ishmem_long_alltoall);
        ishmem_team_t t = ISHMEM_TEAM_WORLD;
        if (k & 1) t = bad_team(1); else n = overflow_count(sizeof(long));
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_long_alltoall(t, lb + 128, lb, n);
        break;
    }
    case 20: CALL(ishmem_team_sync);
        {
            ishmem_team_t t = bad_team(0);
            fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
            (void)ishmem_team_sync(t);
        }
        break;
    /* ---- teams ---- */
    case 21: CALL(ishmem_team_my_pe);
        {
            ishmem_team_t t = bad_team(0);
            fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
            (void)ishmem_team_my_pe(t);
        }
        break;
    case 22: {
        CALL(ishmem_team_get_config);
        ishmem_team_config_t cfg;
        ishmem_team_t t = ISHMEM_TEAM_WORLD;
        long mask = 0;
        if (k & 1) {
            t = bad_team(0);
        } else {
            static const long masks[] = {2, 4, 6, 7, -1, LONG_MAX};
            static char buf[64];
            mask = masks[below(6)];
            snprintf(buf, sizeof buf, "config_mask %ld", mask);
            what = buf;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        (void)ishmem_team_get_config(t, mask, &cfg);
        break;
    }
    case 23: CALL(ishmem_team_destroy);
        what = "the world team";
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_team_destroy(ISHMEM_TEAM_WORLD);
        break;
    /* ---- memory ---- */
    case 24: {
        CALL(ishmem_free);
        void *p;
        switch (k) {
        case 0: p = heap_block + 64 * (1 + below(60)); what = "an interior pointer"; break;
        case 1: p = malloc(64); what = "a malloc'ed pointer"; break;
        case 2: p = stack_words; what = "a global variable"; break;
        default: p = heap_block + 1; what = "a misaligned heap pointer"; break;
        }
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_free(p);
        break;
    }
    default: {
        CALL(ishmem_long_p);
        pe = bad_pe();
        fprintf(stderr, "FUZZ: [PE %d] %s: %s\n", t_me, fname, what);
        ishmem_long_p(lb, 1, pe);
        break;
    }
    }
    fprintf(stderr, "FAIL: [PE %d] %s (%s) returned instead of ending the job\n", t_me, fname, what);
    return 4;
}
