/*
 * host_bench.c -- host-side (CPU-initiated) micro-benchmarks for ishmem.
 *
 * One source, two builds:
 *   ishmem : cc -O2 host_bench.c $(pkg-config --cflags --libs ishmem)
 *   peer   : oshcc -O2 -DBENCH_PEER_OSHMEM host_bench.c   (OpenMPI OSHMEM)
 * Only ishmem_* / ISHMEM_* names are used below; bench/peer_oshmem.h maps
 * them onto shmem_* for the peer build.
 *
 * PE 0 drives, PE 1 is the target (npes >= 2; PEs >= 2 only join barriers).
 * Every row: warm-up/calibration runs, then REPS timed runs of a loop of
 * `iters` iterations (clock_gettime MONOTONIC on PE 0); the MEDIAN run is
 * reported. Every run verifies its results (VERIFY FAILED ... -> exit 1).
 *
 * Output (PE 0, stdout), CSV:
 *   lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine
 *
 * Usage: host_bench [--quick] [--ops a,b,...] [--reps N] [--target-ms X]
 *                   [--max-bytes N] [--sizes a,b,...] [--no-header] [--target-wait=sleep|barrier]
 * ops: putmem getmem p g fetch_add compare_swap add put_signal barrier_all
 *      broadcast fcollect alltoall sum_reduce   (collectives over all PEs,
 *      8 B .. 1 MiB per PE, time per call; every PE takes part)
 * --sizes: these sizes (bytes, at most 16) for put/get and collectives instead
 *   of the x8 steps; --max-bytes still caps them.
 * --target-wait=sleep (default): passive PEs wait for the end of a one-sided
 *   row in a sleep/poll loop of this program, not in the library's barrier.
 *
 * Environment: BENCH_BACKEND (backend column, default cpu; the peer build
 * reports oshmem), BENCH_MACHINE (machine column, default <nodename>-<N>core),
 * BENCH_PIN=0 (do not pin PE i to the i-th allowed CPU),
 * BENCH_INJECT_FAULT=<op> (test hook: corrupt putmem/getmem data before
 * verification, which must then fail with exit status 1).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <sys/utsname.h>

#ifdef BENCH_PEER_OSHMEM
#include "peer_oshmem.h"
#else
#include <ishmem.h>
#endif

#ifndef BENCH_LIB
#define BENCH_LIB "ishmem"
#endif
/* Collectives over the world team; peer_oshmem.h maps them onto the
 * OpenSHMEM 1.4 active-set routines. */
#ifndef BENCH_BROADCASTMEM
#define BENCH_COLL_INIT(max_bytes) ((void)(max_bytes))
#define BENCH_COLL_FINI() ((void)0)
#define BENCH_BCAST_ROOT_WRITES_DEST 1
#define BENCH_BROADCASTMEM(d, s, n, root) ishmem_broadcastmem(ISHMEM_TEAM_WORLD, (d), (s), (n), (root))
#define BENCH_FCOLLECTMEM(d, s, n) ishmem_fcollectmem(ISHMEM_TEAM_WORLD, (d), (s), (n))
#define BENCH_ALLTOALLMEM(d, s, n) ishmem_alltoallmem(ISHMEM_TEAM_WORLD, (d), (s), (n))
#define BENCH_INT_SUM_REDUCE(d, s, n) ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, (d), (s), (n))
#endif
#ifndef BENCH_VERSION_SUFFIX
#define BENCH_VERSION_SUFFIX ""
#endif

#define CHAIN_N 1024 /* power of two: g-chain array length (4 KiB of int) */
#define MAX_ITERS 100000000L

enum kind { K_BW, K_LAT, K_RATE };

typedef struct row row_t;
typedef double (*run_fn)(const row_t *r, long iters, int *fail);
struct row {
    const char *op;
    enum kind kind;
    size_t bytes;
    run_fn fn;
};

/* ---------------------------------------------------------------- state */
static int me, npes;
static long *g_ctl;         /* symmetric: broadcast slot                 */
static int *g_flag;         /* symmetric: failure flag (lives on PE 0)   */
static long *g_cnt;         /* symmetric: [npes] per-PE counts on PE 0   */
static double *g_tpe;       /* symmetric: [npes] per-PE times on PE 0    */
static unsigned char *sbuf; /* symmetric: source buffer, max_bytes       */
static unsigned char *dbuf; /* symmetric: destination buffer, max_bytes  */
static int *ibuf;           /* symmetric: target of int_p                */
static int *chain;          /* symmetric: [CHAIN_N] next-index array     */
static int *chain_pe1;      /* private (PE 0): copy of PE 1's chain      */
static uint64_t *ctr;       /* symmetric: AMO target                     */
static uint64_t *sig;       /* symmetric: signal word                    */
static uint64_t *pp_src;    /* symmetric: ping-pong payload source       */
static uint64_t *pp_dst;    /* symmetric: ping-pong payload destination  */
static unsigned long g_run; /* lockstep run counter (same on all PEs)    */
static uint64_t g_sigbase;  /* last signal value used (same on all PEs)  */
static unsigned char *csrc; /* symmetric: collective source, coll_max * npes */
static unsigned char *cdst; /* symmetric: collective dest, coll_max * npes   */

static const char *g_inject; /* BENCH_INJECT_FAULT=<op>: test hook */
static double g_target_s = 5e-3; /* wanted duration of one timed run */
static int g_reps = 7;
static char g_machine[160]; /* machine column */

/* ------------------------------------------------------------- helpers */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

/* Seed for one run: differs for every run, op and size. */
static uint64_t run_seed(const row_t *r)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = r->op; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return mix64(h ^ mix64(r->bytes + 0x1234567ull) ^ mix64(g_run * 0x9E3779B97F4A7C15ull));
}

static inline uint64_t pat_word(uint64_t seed, size_t i)
{
    return mix64(seed + (uint64_t)i * 0x9E3779B97F4A7C15ull);
}

static void fill(unsigned char *buf, size_t n, uint64_t seed)
{
    size_t nw = n / 8, i;
    uint64_t *w = (uint64_t *)buf;
    for (i = 0; i < nw; i++) w[i] = pat_word(seed, i);
    for (i = nw * 8; i < n; i++) buf[i] = (unsigned char)pat_word(seed, i);
}

/* Test hook: corrupt one byte before verification of op (BW rows). */
static void maybe_inject(const row_t *r, unsigned char *buf)
{
    if (g_inject && !strcmp(g_inject, r->op)) buf[r->bytes / 2] ^= 0x5a;
}

/* Returns n when buf matches, else the index of the first bad byte. */
static size_t check(const unsigned char *buf, size_t n, uint64_t seed)
{
    size_t nw = n / 8, i;
    const volatile uint64_t *w = (const volatile uint64_t *)buf;
    for (i = 0; i < nw; i++)
        if (w[i] != pat_word(seed, i)) {
            uint64_t e = pat_word(seed, i), g = w[i];
            size_t b = 0;
            while (b < 8 && ((e >> (8 * b)) & 0xff) == ((g >> (8 * b)) & 0xff)) b++;
            return i * 8 + b;
        }
    for (i = nw * 8; i < n; i++)
        if (((const volatile unsigned char *)buf)[i] != (unsigned char)pat_word(seed, i)) return i;
    return n;
}

static void verify_failed(const row_t *r, int *fail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verify_failed(const row_t *r, int *fail, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "VERIFY FAILED op=%s bytes=%zu pe=%d: ", r->op, r->bytes, me);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    *fail = 1;
}

/* Collective: every PE returns PE 0's v. */
static long bcast_long(long v)
{
    ishmem_barrier_all(); /* everyone has consumed the previous value */
    if (me == 0) {
        for (int pe = 1; pe < npes; pe++) ishmem_putmem(g_ctl, &v, sizeof v, pe);
        ishmem_quiet();
    }
    ishmem_barrier_all();
    return me == 0 ? v : *(volatile long *)g_ctl;
}

/* Collective: nonzero on every PE if any PE passed nonzero. */
static int any_fail(int local)
{
    ishmem_barrier_all();
    if (local) {
        ishmem_int_p(g_flag, 1, 0);
        ishmem_quiet();
    }
    ishmem_barrier_all();
    return (int)bcast_long(me == 0 ? (long)*(volatile int *)g_flag : 0);
}

/* End of the timed section of a one-sided row (called by every PE).
 * With --target-wait=sleep (default) the passive PEs do not sit in the
 * library's barrier while PE 0 is timed: they poll a flag that PE 0 sets
 * when done, sleeping between polls (and calling quiet, which lets
 * implementations that need target-side progress make it). The target's
 * CPU is then idle for both libraries alike; on a small VM a spinning
 * target steals cycles from PE 0 (vCPUs that share a core). With
 * --target-wait=barrier the passive PEs wait in ishmem_barrier_all. */
static int g_target_sleep = 1;
static int *g_done;        /* symmetric: release token from PE 0 */
static int g_tok;          /* lockstep token counter (same on all PEs) */
static void end_timed(void)
{
    g_tok++;
    if (g_target_sleep) {
        if (me == 0) {
            for (int pe = 1; pe < npes; pe++) ishmem_int_p(g_done, g_tok, pe);
            ishmem_quiet();
        } else {
            const struct timespec ts = {0, 20000}; /* 20 us */
            while (*(volatile int *)g_done != g_tok) {
                ishmem_quiet();
                nanosleep(&ts, NULL);
            }
        }
    }
    ishmem_barrier_all();
}

/* Pin this PE to one CPU (the my_pe-th CPU it may run on), unless the
 * launcher already bound it to a single CPU (oshrun binds to cores), the job
 * oversubscribes the CPUs, or BENCH_PIN=0. Both libraries then run with one
 * PE per core, which removes scheduler placement from the numbers. */
static void pin_self(void)
{
    const char *e = getenv("BENCH_PIN");
    cpu_set_t set;
    if ((e && !strcmp(e, "0")) || sched_getaffinity(0, sizeof set, &set) != 0) return;
    int n = CPU_COUNT(&set);
    if (n <= 1 || npes > n) return;
    for (int c = 0, k = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        if (k++ == me % n) {
            CPU_ZERO(&set);
            CPU_SET(c, &set);
            sched_setaffinity(0, sizeof set, &set);
            return;
        }
    }
}

static void die_all(int rc)
{
    ishmem_barrier_all();
    ishmem_finalize();
    exit(rc);
}

/* ------------------------------------------------------------ the rows */

/* putmem bandwidth: PE 0 -> PE 1, quiet once at the end; PE 1 verifies. */
static double run_putmem(const row_t *r, long iters, int *fail)
{
    const size_t n = r->bytes;
    const uint64_t seed = run_seed(r);
    double t = 0;
    if (me == 0) fill(sbuf, n, seed);
    ishmem_barrier_all();
    if (me == 0) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) ishmem_putmem(dbuf, sbuf, n, 1);
        ishmem_quiet();
        t = now_s() - t0;
    }
    end_timed();
    if (me == 1) {
        maybe_inject(r, dbuf);
        size_t bad = check(dbuf, n, seed);
        if (bad != n) verify_failed(r, fail, "first bad byte at offset %zu", bad);
    }
    return t;
}

/* getmem bandwidth: PE 0 <- PE 1 (blocking gets); PE 0 verifies. */
static double run_getmem(const row_t *r, long iters, int *fail)
{
    const size_t n = r->bytes;
    const uint64_t seed = run_seed(r);
    double t = 0;
    if (me == 1) fill(sbuf, n, seed);
    ishmem_barrier_all();
    if (me == 0) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) ishmem_getmem(dbuf, sbuf, n, 1);
        t = now_s() - t0;
        maybe_inject(r, dbuf);
        size_t bad = check(dbuf, n, seed);
        if (bad != n) verify_failed(r, fail, "first bad byte at offset %zu", bad);
    }
    end_timed();
    return t;
}

/* p latency: int_p + quiet per iteration; PE 1 checks the last value. */
static double run_p(const row_t *r, long iters, int *fail)
{
    const unsigned base = (unsigned)(run_seed(r) & 0xffffff);
    double t = 0;
    ishmem_barrier_all();
    if (me == 0) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) {
            ishmem_int_p(ibuf, (int)((base + (unsigned)i) & 0x7fffffff), 1);
            ishmem_quiet();
        }
        t = now_s() - t0;
    }
    end_timed();
    if (me == 1) {
        int want = (int)((base + (unsigned)(iters - 1)) & 0x7fffffff);
        int got = *(volatile int *)ibuf;
        if (got != want) verify_failed(r, fail, "last value %d, expected %d", got, want);
    }
    return t;
}

/* g latency as a dependency chain: idx = g(&chain[idx]) on PE 1. */
static double run_g(const row_t *r, long iters, int *fail)
{
    const int start = (int)(run_seed(r) & (CHAIN_N - 1));
    double t = 0;
    ishmem_barrier_all();
    if (me == 0) {
        int idx = start;
        double t0 = now_s();
        for (long i = 0; i < iters; i++) idx = ishmem_int_g(&chain[idx], 1) & (CHAIN_N - 1);
        t = now_s() - t0;
        int want = start;
        for (long i = 0; i < iters; i++) want = chain_pe1[want];
        if (idx != want) verify_failed(r, fail, "chain ended at %d, expected %d", idx, want);
    }
    end_timed();
    return t;
}

static void reset_ctr(void)
{
    if (me == 1) *(volatile uint64_t *)ctr = 0;
}

static void check_ctr(const row_t *r, int *fail, uint64_t want)
{
    if (me == 1) {
        uint64_t got = *(volatile uint64_t *)ctr;
        if (got != want)
            verify_failed(r, fail, "target counter %llu, expected %llu",
                          (unsigned long long)got, (unsigned long long)want);
    }
}

/* fetch_add latency: each fetched value must equal the iteration. */
static double run_fetch_add(const row_t *r, long iters, int *fail)
{
    double t = 0;
    reset_ctr();
    ishmem_barrier_all();
    if (me == 0) {
        long bad = 0;
        double t0 = now_s();
        for (long i = 0; i < iters; i++)
            bad += ishmem_uint64_atomic_fetch_add(ctr, 1, 1) != (uint64_t)i;
        t = now_s() - t0;
        if (bad) verify_failed(r, fail, "%ld fetched values out of sequence", bad);
    }
    end_timed();
    check_ctr(r, fail, (uint64_t)iters);
    return t;
}

/* compare_swap latency: cswap(i -> i+1) must succeed every time. */
static double run_compare_swap(const row_t *r, long iters, int *fail)
{
    double t = 0;
    reset_ctr();
    ishmem_barrier_all();
    if (me == 0) {
        long bad = 0;
        double t0 = now_s();
        for (long i = 0; i < iters; i++)
            bad += ishmem_uint64_atomic_compare_swap(ctr, (uint64_t)i, (uint64_t)i + 1, 1) !=
                   (uint64_t)i;
        t = now_s() - t0;
        if (bad) verify_failed(r, fail, "%ld compare_swaps returned a wrong old value", bad);
    }
    end_timed();
    check_ctr(r, fail, (uint64_t)iters);
    return t;
}

/* add throughput: non-fetching adds, one quiet at the end. */
static double run_add(const row_t *r, long iters, int *fail)
{
    double t = 0;
    reset_ctr();
    ishmem_barrier_all();
    if (me == 0) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) ishmem_uint64_atomic_add(ctr, 1, 1);
        ishmem_quiet();
        t = now_s() - t0;
    }
    end_timed();
    check_ctr(r, fail, (uint64_t)iters);
    return t;
}

static inline uint64_t pp_payload(uint64_t seed, uint64_t v, int from)
{
    return mix64(seed ^ (v * 2 + (uint64_t)from));
}

/* put_signal ping-pong: PE 0 putmem_signal(8 B) -> PE 1 waits, answers. */
static double run_put_signal(const row_t *r, long iters, int *fail)
{
    const uint64_t seed = run_seed(r);
    const uint64_t base = g_sigbase;
    double t = 0;
    long bad = 0;
    ishmem_barrier_all();
    if (me == 0) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) {
            uint64_t v = base + (uint64_t)i + 1;
            *pp_src = pp_payload(seed, v, 0);
            ishmem_putmem_signal(pp_dst, pp_src, sizeof(uint64_t), sig, v, ISHMEM_SIGNAL_SET, 1);
            ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, v);
            bad += *(volatile uint64_t *)pp_dst != pp_payload(seed, v, 1);
        }
        t = now_s() - t0;
    } else if (me == 1) {
        for (long i = 0; i < iters; i++) {
            uint64_t v = base + (uint64_t)i + 1;
            ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, v);
            bad += *(volatile uint64_t *)pp_dst != pp_payload(seed, v, 0);
            *pp_src = pp_payload(seed, v, 1);
            ishmem_putmem_signal(pp_dst, pp_src, sizeof(uint64_t), sig, v, ISHMEM_SIGNAL_SET, 0);
        }
        ishmem_quiet();
    }
    ishmem_barrier_all();
    if (bad) verify_failed(r, fail, "%ld payloads arrived wrong or before their signal", bad);
    g_sigbase = base + (uint64_t)iters;
    return t;
}

/* barrier_all latency (all PEs); afterwards every PE reports its count. */
static double run_barrier_all(const row_t *r, long iters, int *fail)
{
    double t0, t;
    ishmem_barrier_all();
    t0 = now_s();
    for (long i = 0; i < iters; i++) ishmem_barrier_all();
    t = now_s() - t0;
    long done = iters;
    ishmem_putmem(&g_cnt[me], &done, sizeof done, 0);
    ishmem_quiet();
    ishmem_barrier_all();
    if (me == 0)
        for (int pe = 0; pe < npes; pe++)
            if (((volatile long *)g_cnt)[pe] != iters)
                verify_failed(r, fail, "pe %d did %ld barriers, expected %ld", pe,
                              ((volatile long *)g_cnt)[pe], iters);
    return t;
}

/* ---------------------------------------------------------- collectives
 * Every PE calls the collective `iters` times back to back (the row reports
 * the slowest PE, see run_once);
 * then the data of the last call is verified on every PE. r->bytes is the
 * per-PE block: broadcast moves it from PE 0 to all, fcollect gathers one
 * block of each PE everywhere, alltoall sends one block to each PE,
 * sum_reduce adds bytes/4 ints over all PEs. */
static uint64_t coll_seed(const row_t *r, int pe) { return run_seed(r) ^ mix64((uint64_t)pe + 77); }

static double coll_time(const row_t *r, long iters)
{
    const size_t n = r->bytes;
    /* the operation is chosen once, outside the timed loop */
    const int op = !strcmp(r->op, "broadcast") ? 0 : !strcmp(r->op, "fcollect") ? 1
                 : !strcmp(r->op, "alltoall") ? 2 : 3;
    ishmem_barrier_all();
    double t0 = now_s();
    switch (op) {
    case 0: for (long i = 0; i < iters; i++) BENCH_BROADCASTMEM(cdst, csrc, n, 0); break;
    case 1: for (long i = 0; i < iters; i++) BENCH_FCOLLECTMEM(cdst, csrc, n); break;
    case 2: for (long i = 0; i < iters; i++) BENCH_ALLTOALLMEM(cdst, csrc, n); break;
    default:
        for (long i = 0; i < iters; i++) BENCH_INT_SUM_REDUCE((int *)cdst, (const int *)csrc, n / sizeof(int));
        break;
    }
    double t = now_s() - t0;
    ishmem_barrier_all();
    return t;
}

static double run_broadcast(const row_t *r, long iters, int *fail)
{
    const size_t n = r->bytes;
    if (me == 0) fill(csrc, n, coll_seed(r, 0));
    memset(cdst, 0, n);
    double t = coll_time(r, iters);
    if (me != 0 || BENCH_BCAST_ROOT_WRITES_DEST) {
        size_t at = check(cdst, n, coll_seed(r, 0));
        if (at != n) verify_failed(r, fail, "pe %d: byte %zu of %zu differs from the root's", me, at, n);
    }
    return t;
}

static double run_fcollect(const row_t *r, long iters, int *fail)
{
    const size_t n = r->bytes;
    fill(csrc, n, coll_seed(r, me));
    memset(cdst, 0, n * (size_t)npes);
    double t = coll_time(r, iters);
    for (int pe = 0; pe < npes; pe++) {
        size_t at = check(cdst + (size_t)pe * n, n, coll_seed(r, pe));
        if (at != n) verify_failed(r, fail, "pe %d: block of pe %d: byte %zu of %zu wrong", me, pe, at, n);
    }
    return t;
}

static double run_alltoall(const row_t *r, long iters, int *fail)
{
    const size_t n = r->bytes;
    for (int pe = 0; pe < npes; pe++) fill(csrc + (size_t)pe * n, n, coll_seed(r, me * 1000 + pe));
    memset(cdst, 0, n * (size_t)npes);
    double t = coll_time(r, iters);
    for (int pe = 0; pe < npes; pe++) {
        size_t at = check(cdst + (size_t)pe * n, n, coll_seed(r, pe * 1000 + me));
        if (at != n) verify_failed(r, fail, "pe %d: block from pe %d: byte %zu of %zu wrong", me, pe, at, n);
    }
    return t;
}

static double run_sum_reduce(const row_t *r, long iters, int *fail)
{
    const size_t n = r->bytes / sizeof(int);
    int *src = (int *)csrc, *dst = (int *)cdst;
    for (size_t i = 0; i < n; i++) src[i] = (int)((i * 7 + (size_t)me * 13) % 1000) - 300;
    memset(cdst, 0, r->bytes);
    double t = coll_time(r, iters);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int want = 0;
        for (int pe = 0; pe < npes; pe++) want += (int)((i * 7 + (size_t)pe * 13) % 1000) - 300;
        bad += dst[i] != want;
    }
    if (bad) verify_failed(r, fail, "pe %d: %zu of %zu sums wrong", me, bad, n);
    return t;
}

/* ------------------------------------------------------------- driver */
/* Rows where every PE does the same work (barrier and collectives) report
 * the slowest PE's time; one-sided rows report PE 0's (the others wait). */
static int every_pe_timed(const row_t *r)
{
    return !strcmp(r->op, "barrier_all") || !strcmp(r->op, "broadcast") ||
           !strcmp(r->op, "fcollect") || !strcmp(r->op, "alltoall") || !strcmp(r->op, "sum_reduce");
}

static double run_once(const row_t *r, long iters)
{
    int fail = 0;
    double t = r->fn(r, iters, &fail);
    g_run++;
    if (any_fail(fail)) die_all(1);
    if (every_pe_timed(r)) {
        ishmem_putmem(&g_tpe[me], &t, sizeof t, 0);
        ishmem_quiet();
        ishmem_barrier_all();
        if (me == 0)
            for (int pe = 0; pe < npes; pe++) {
                double tp = ((volatile double *)g_tpe)[pe];
                if (tp > t) t = tp;
            }
    }
    return t;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(const row_t *r, const char *prefix)
{
    /* calibration doubles as warm-up: scale iters up until one run takes
     * at least half the target (and never decide on the very first run,
     * which may include connection setup / first-touch costs), then scale
     * to the target. */
    long iters = 1, final = 0;
    for (int runs = 1;; runs++) {
        iters = bcast_long(iters);
        double t = run_once(r, iters);
        long next = 0;
        if (me == 0) {
            double want = t > 0 ? (double)iters * g_target_s / t : (double)MAX_ITERS;
            if (want > MAX_ITERS) want = MAX_ITERS;
            if (runs >= 2 && (t >= g_target_s / 2 || iters >= MAX_ITERS)) {
                final = want < 1 ? 1 : (long)(want + 0.5);
            } else if (t >= g_target_s / 2) {
                next = want < 1 ? 1 : (long)(want + 0.5); /* re-measure once */
            } else {
                double g = want / (double)iters; /* growth, clamped to [2,100] */
                g = g < 2 ? 2 : g > 100 ? 100 : g;
                next = (long)((double)iters * g);
                if (next > MAX_ITERS) next = MAX_ITERS;
            }
        }
        next = bcast_long(next);
        if (!next) break;
        iters = next;
    }
    iters = bcast_long(final);
    run_once(r, iters); /* one warm-up run at the final size */

    double *ts = calloc((size_t)g_reps, sizeof(double));
    for (int k = 0; k < g_reps; k++) ts[k] = run_once(r, iters);
    if (me == 0) {
        qsort(ts, (size_t)g_reps, sizeof(double), cmp_dbl);
        double med = (g_reps & 1) ? ts[g_reps / 2] : 0.5 * (ts[g_reps / 2 - 1] + ts[g_reps / 2]);
        double v;
        const char *unit;
        switch (r->kind) {
        case K_BW: v = (double)r->bytes * (double)iters / med / 1e9; unit = "GB/s"; break;
        case K_RATE: v = (double)iters / med / 1e6; unit = "Mops/s"; break;
        default: v = med / (double)iters * 1e6; unit = "us"; break;
        }
        /* lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine */
        printf("%s,%s,host,%d,%zu,%ld,%.5g,%s,%s\n", prefix, r->op, npes, r->bytes, iters, v,
               unit, g_machine);
        fflush(stdout);
    }
    free(ts);
}

static const char *ALL_OPS[] = {"putmem", "getmem", "p", "g", "fetch_add", "compare_swap",
                                "add", "put_signal", "barrier_all", "broadcast", "fcollect",
                                "alltoall", "sum_reduce"};
#define N_OPS (sizeof ALL_OPS / sizeof ALL_OPS[0])

static int op_wanted(const char *ops, const char *op)
{
    if (!ops) return 1;
    size_t n = strlen(op);
    for (const char *p = ops; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, op, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static void sanitize(char *s)
{
    for (; *s; s++)
        if (*s == ',' || *s == '\n' || *s == '"') *s = '_';
}

static void usage(void)
{
    fprintf(stderr,
            "usage: host_bench [--quick] [--ops a,b,...] [--reps N] [--target-ms X]\n"
            "                  [--max-bytes N] [--sizes a,b,...] [--no-header]\n"
            "                  [--target-wait=sleep|barrier]\n"
            "ops: putmem getmem p g fetch_add compare_swap add put_signal barrier_all\n"
            "     broadcast fcollect alltoall sum_reduce\n");
}

int main(int argc, char **argv)
{
    int quick = 0, header = 1;
    const char *ops = NULL;
    size_t max_bytes = (size_t)64 << 20;
    const char *sizes_arg = NULL; /* --sizes 4096,8192: these sizes instead of the x8 steps */
    int bad_args = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--no-header")) header = 0;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops = argv[++i];
        else if (!strncmp(argv[i], "--ops=", 6)) ops = argv[i] + 6;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--target-ms") && i + 1 < argc) g_target_s = atof(argv[++i]) * 1e-3;
        else if (!strcmp(argv[i], "--target-wait=sleep")) g_target_sleep = 1;
        else if (!strcmp(argv[i], "--target-wait=barrier")) g_target_sleep = 0;
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else bad_args = 1;
    }
    if (quick) {
        if (g_reps == 7) g_reps = 5;
        if (g_target_s == 5e-3) g_target_s = 2e-3;
    }
    if (g_reps < 1 || g_target_s <= 0) bad_args = 1;
    if (ops) {
        for (const char *p = ops; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            int known = 0;
            for (size_t k = 0; k < N_OPS; k++)
                if (strlen(ALL_OPS[k]) == len && !strncmp(ALL_OPS[k], p, len)) known = 1;
            if (!known) bad_args = 1;
            if (!e) break;
            p = e + 1;
        }
    }

    g_inject = getenv("BENCH_INJECT_FAULT");

    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    if (bad_args) {
        if (me == 0) {
            for (int i = 1; i < argc; i++) fprintf(stderr, "%s%s", i > 1 ? " " : "args: ", argv[i]);
            fputc('\n', stderr);
            usage();
        }
        die_all(2);
    }
    pin_self();
    if (npes < 2) {
        if (me == 0) fprintf(stderr, "host_bench: needs at least 2 PEs (got %d)\n", npes);
        die_all(2);
    }

    /* sizes: 8 B .. 64 MiB (x8 up to 256 KiB, then x4), capped at max_bytes */
    static const size_t full_sizes[] = {8, 64, 512, 4096, 32768, 262144,
                                        1 << 20, 4 << 20, 16 << 20, 64 << 20};
    static const size_t quick_sizes[] = {8, 4096, 1 << 20, 64 << 20};
    const size_t *sizes = quick ? quick_sizes : full_sizes;
    size_t nsizes = quick ? sizeof quick_sizes / sizeof *quick_sizes
                          : sizeof full_sizes / sizeof *full_sizes;
    static size_t given[16];
    if (sizes_arg) {
        size_t n = 0;
        for (char *p = (char *)sizes_arg; *p && n < sizeof given / sizeof *given;) {
            given[n++] = strtoull(p, &p, 0);
            if (*p == ',') p++;
            else if (*p) break;
        }
        sizes = given;
        nsizes = n;
    }
    size_t buf_bytes = 8;
    for (size_t k = 0; k < nsizes; k++)
        if (sizes[k] <= max_bytes && sizes[k] > buf_bytes) buf_bytes = sizes[k];
    int need_bufs = op_wanted(ops, "putmem") || op_wanted(ops, "getmem");
    /* collectives: 8 B .. 1 MiB per PE (x8), capped at max_bytes */
    static const size_t coll_full[] = {8, 64, 512, 4096, 32768, 262144, 1 << 20};
    static const size_t coll_quick[] = {8, 4096, 262144};
    const size_t *csizes = quick ? coll_quick : coll_full;
    size_t ncsizes = quick ? sizeof coll_quick / sizeof *coll_quick : sizeof coll_full / sizeof *coll_full;
    if (sizes_arg) {
        csizes = sizes;
        ncsizes = nsizes;
    }
    size_t coll_max = 8;
    for (size_t k = 0; k < ncsizes; k++)
        if (csizes[k] <= max_bytes && csizes[k] > coll_max) coll_max = csizes[k];
    int need_coll = op_wanted(ops, "broadcast") || op_wanted(ops, "fcollect") || op_wanted(ops, "alltoall") ||
                    op_wanted(ops, "sum_reduce");

    /* symmetric allocations: same order and sizes on every PE */
    g_ctl = ishmem_malloc(sizeof(long));
    g_flag = ishmem_malloc(sizeof(int));
    g_done = ishmem_malloc(sizeof(int));
    g_cnt = ishmem_malloc(sizeof(long) * (size_t)npes);
    g_tpe = ishmem_malloc(sizeof(double) * (size_t)npes);
    ibuf = ishmem_malloc(sizeof(int));
    chain = ishmem_malloc(sizeof(int) * CHAIN_N);
    ctr = ishmem_malloc(sizeof(uint64_t));
    sig = ishmem_malloc(sizeof(uint64_t));
    pp_src = ishmem_malloc(sizeof(uint64_t));
    pp_dst = ishmem_malloc(sizeof(uint64_t));
    sbuf = need_bufs ? ishmem_malloc(buf_bytes) : NULL;
    dbuf = need_bufs ? ishmem_malloc(buf_bytes) : NULL;
    csrc = need_coll ? ishmem_malloc(coll_max * (size_t)npes) : NULL;
    cdst = need_coll ? ishmem_malloc(coll_max * (size_t)npes) : NULL;
    if (!g_ctl || !g_flag || !g_done || !g_cnt || !g_tpe || !ibuf || !chain || !ctr || !sig || !pp_src || !pp_dst ||
        (need_bufs && (!sbuf || !dbuf)) || (need_coll && (!csrc || !cdst))) {
        fprintf(stderr, "host_bench: pe %d: ishmem_malloc failed (buffers of %zu bytes; "
                        "raise the symmetric heap size)\n", me, buf_bytes);
        exit(3);
    }
    *g_flag = 0;
    *g_done = 0;
    *ctr = 0;
    *sig = 0;
    *pp_src = *pp_dst = 0;
    *ibuf = 0;
    if (need_bufs) {
        memset(sbuf, 0, buf_bytes);
        memset(dbuf, 0, buf_bytes);
    }

    /* chain: one random cycle over CHAIN_N slots (Sattolo), different per PE;
     * PE 0 keeps a private copy of PE 1's to verify the g chain. */
    {
        int *tmp = malloc(sizeof(int) * CHAIN_N);
        for (int who = 0; who < 2; who++) {
            int pe = who == 0 ? me : 1;
            uint64_t s = 0xC0FFEEull + (uint64_t)pe * 7919;
            int perm[CHAIN_N];
            for (int i = 0; i < CHAIN_N; i++) perm[i] = i;
            for (int i = CHAIN_N - 1; i > 0; i--) {
                s = mix64(s + 1);
                int j = (int)(s % (uint64_t)i); /* j < i: one single cycle */
                int x = perm[i]; perm[i] = perm[j]; perm[j] = x;
            }
            for (int i = 0; i < CHAIN_N; i++) tmp[perm[i]] = perm[(i + 1) % CHAIN_N];
            if (who == 0) memcpy(chain, tmp, sizeof(int) * CHAIN_N);
            else if (me == 0) {
                chain_pe1 = malloc(sizeof(int) * CHAIN_N);
                memcpy(chain_pe1, tmp, sizeof(int) * CHAIN_N);
            }
        }
        free(tmp);
    }
    if (need_coll) BENCH_COLL_INIT(coll_max);
    ishmem_barrier_all();

    /* CSV identity columns */
    int vmaj = 0, vmin = 0;
    ishmem_info_get_version(&vmaj, &vmin);
    char version[96];
    snprintf(version, sizeof version, "%d.%d%s", vmaj, vmin, BENCH_VERSION_SUFFIX);
#ifdef BENCH_BACKEND_FIXED
    const char *backend = BENCH_BACKEND_FIXED;
#else
    const char *backend = getenv("BENCH_BACKEND");
    if (!backend || !*backend) backend = "cpu";
#endif
    const char *m = getenv("BENCH_MACHINE");
    if (m && *m) {
        snprintf(g_machine, sizeof g_machine, "%s", m);
    } else {
        struct utsname u;
        if (uname(&u) != 0) snprintf(u.nodename, sizeof u.nodename, "host");
        snprintf(g_machine, sizeof g_machine, "%.100s-%ldcore", u.nodename,
                 sysconf(_SC_NPROCESSORS_ONLN));
    }
    sanitize(g_machine);
    char be[64], prefix[256]; /* prefix = lib,version,backend */
    snprintf(be, sizeof be, "%s", backend);
    sanitize(be);
    snprintf(prefix, sizeof prefix, "%s,%s,%s", BENCH_LIB, version, be);

    if (me == 0 && header) {
        printf("lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine\n");
        fflush(stdout);
    }

    row_t rows[64];
    int nrows = 0;
    if (op_wanted(ops, "putmem"))
        for (size_t k = 0; k < nsizes; k++)
            if (sizes[k] <= max_bytes) rows[nrows++] = (row_t){"putmem", K_BW, sizes[k], run_putmem};
    if (op_wanted(ops, "getmem"))
        for (size_t k = 0; k < nsizes; k++)
            if (sizes[k] <= max_bytes) rows[nrows++] = (row_t){"getmem", K_BW, sizes[k], run_getmem};
    if (op_wanted(ops, "p")) rows[nrows++] = (row_t){"p", K_LAT, sizeof(int), run_p};
    if (op_wanted(ops, "g")) rows[nrows++] = (row_t){"g", K_LAT, sizeof(int), run_g};
    if (op_wanted(ops, "fetch_add"))
        rows[nrows++] = (row_t){"fetch_add", K_LAT, sizeof(uint64_t), run_fetch_add};
    if (op_wanted(ops, "compare_swap"))
        rows[nrows++] = (row_t){"compare_swap", K_LAT, sizeof(uint64_t), run_compare_swap};
    if (op_wanted(ops, "add")) rows[nrows++] = (row_t){"add", K_RATE, sizeof(uint64_t), run_add};
    if (op_wanted(ops, "put_signal"))
        rows[nrows++] = (row_t){"put_signal", K_LAT, sizeof(uint64_t), run_put_signal};
    if (op_wanted(ops, "barrier_all"))
        rows[nrows++] = (row_t){"barrier_all", K_LAT, 0, run_barrier_all};
    static const struct { const char *op; run_fn fn; } colls[] = {
        {"broadcast", run_broadcast}, {"fcollect", run_fcollect}, {"alltoall", run_alltoall},
        {"sum_reduce", run_sum_reduce}};
    for (size_t c = 0; c < sizeof colls / sizeof *colls; c++)
        if (op_wanted(ops, colls[c].op))
            for (size_t k = 0; k < ncsizes; k++)
                if (csizes[k] <= max_bytes) rows[nrows++] = (row_t){colls[c].op, K_LAT, csizes[k], colls[c].fn};

    for (int k = 0; k < nrows; k++) measure(&rows[k], prefix);

    ishmem_barrier_all();
    if (need_coll) {
        BENCH_COLL_FINI();
        ishmem_free(cdst);
        ishmem_free(csrc);
    }
    if (need_bufs) {
        ishmem_free(dbuf);
        ishmem_free(sbuf);
    }
    ishmem_free(pp_dst);
    ishmem_free(pp_src);
    ishmem_free(sig);
    ishmem_free(ctr);
    ishmem_free(chain);
    ishmem_free(ibuf);
    ishmem_free(g_cnt);
    ishmem_free(g_tpe);
    ishmem_free(g_done);
    ishmem_free(g_flag);
    ishmem_free(g_ctl);
    free(chain_pe1);
    ishmem_finalize();
    return 0;
}
