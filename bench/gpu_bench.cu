/*
 * gpu_bench.cu -- GPU (device- and stream-initiated) micro-benchmarks for
 * ishmem, the GPU half of the suite whose host half is bench/host_bench.c.
 *
 * One source, two builds:
 *   ishmem : nvcc -arch=sm_90 -I include bench/gpu_bench.cu -L... -lishmem
 *            (ishmem's CUDA device API: header-only, no -rdc)
 *   peer   : nvcc -rdc=true -arch=sm_90 -DBENCH_PEER_NVSHMEM -Ibench \
 *            -I$NV/include bench/gpu_bench.cu -L$NV/lib -lnvshmem_device \
 *            -l:libnvshmem_host.so.3 -Xlinker -rpath,$NV/lib      (NVSHMEM 3.x)
 * Only ishmem_* / ishmemx_* / ISHMEM_* names are used below;
 * bench/peer_nvshmem.h maps them (and the few BENCH_* hooks) onto NVSHMEM.
 * bench/run_gpu.sh builds and runs it; bench/README-gpu.md explains the rows.
 *
 * PE 0 drives, PE 1 is the target (PEs >= 2 only join barriers). With one PE (NPES=1: the
 * one-GPU side-by-side mode of run_gpu.sh, since NVSHMEM hangs with 2 PEs on one GPU) PE 0
 * targets itself: every row runs the whole API path, but the "remote" side is local HBM, the
 * collectives run on a team of one, and put_signal is a round trip to itself.
 * Phase A (one-sided rows): PE 0 alone, the others sleep-poll a flag; phase B
 * (put_signal, barrier_all*, collectives): every PE, in lockstep through host
 * barriers.
 * Every row: warm-up/calibration runs, then REPS timed runs (cudaEvent pairs
 * around one kernel launch that loops in-kernel, or around a batch of stream
 * operations; host-clock (CLOCK_MONOTONIC) for host-blocking and
 * enqueue+synchronize rows); the MEDIAN run is reported. Data is verified
 * after every bandwidth row and after every run of a latency row
 * (VERIFY FAILED ... on stderr -> exit status 1).
 *
 * Output (PE 0, stdout), CSV as host_bench (anything else that is printed on
 * stdout, by a library for instance, is sent to stderr):
 *   lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine
 * Naming (compare.py groups by (op, scope, npes, bytes)):
 *   scope thread|warp|block : device-initiated; the scope of the call.
 *     op putmem_nbi_<G>x1024 / getmem_nbi_<G>x1024: bandwidth (GB/s) of a
 *     kernel of G blocks of 1024 threads in which every thread (thread), every
 *     warp (warp) or every block (block) moves its share of `bytes` per
 *     iteration, quiet at the end of the kernel.
 *   scope thread, ops p, putmem_quiet, g, fetch_add, compare_swap, put_signal,
 *     barrier_all: latency (us) of one thread (<<<1,1>>>) looping in-kernel.
 *   scope thread|block, ops broadcast, fcollect, alltoall, sum_reduce,
 *     team_sync: latency (us per call) of team-world collectives, every PE
 *     taking part: one thread (<<<1,1>>>) calls the device form, or one block
 *     (<<<1,1024>>>) the work-group form, in a loop; bytes = per PE (0 for
 *     team_sync), 8 B .. 1 MiB.
 *   scope queue: host-enqueued stream operations (ishmemx_*_on_queue).
 *   scope host : host-initiated calls on the GPU heap, host clock: putmem_blocking
 *     (8 B), and with --scopes including host (the default) the host forms of
 *     p, putmem_quiet, g, fetch_add, compare_swap, put_signal (ping-pong of
 *     PE 0 and 1 from their CPUs), barrier_all and putmem_nbi (bandwidth: back
 *     to back, one quiet), the baseline of the device rows in the same run.
 *
 * Usage: gpu_bench [--quick] [--ops a,b,...] [--scopes thread,warp,block]
 *                  [--grids 1,8,32,132] [--reps N] [--target-ms X]
 *                  [--max-bytes N] [--coll-sizes 8,4096,...] [--no-header]
 * Process model: fork mode (default): the program forks NPES (default 2)
 * PEs before any CUDA call; rank 0 (the parent) makes the unique id and hands
 * it over a pipe; PE r uses GPU r % ngpus. Launcher mode: RANK=r NRANKS=n
 * UID_FILE=/path, one process per PE (rank 0 writes the id to the file).
 * -DBENCH_NO_QUEUE leaves out the queue (stream) rows, for a library
 * without ishmemx_*_on_queue yet. -DBENCH_NO_COLL leaves out the collective
 * rows; the ishmem build leaves them out by itself when its device header
 * does not define ISHMEM_HAVE_DEVICE_COLLECTIVES.
 * Environment: BENCH_MACHINE (machine column, default <gpu name>-x<ngpus>),
 * BENCH_BACKEND (backend column of the ishmem build, default cuda),
 * BENCH_INJECT_FAULT=<op> (test hook: corrupt the data of the first
 * row of op -- putmem_nbi, getmem_nbi, putmem_on_queue, broadcast, fcollect,
 * alltoall or sum_reduce (on the last PE) -- before verification, which must
 * then fail with exit status 1).
 */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#ifdef BENCH_PEER_NVSHMEM
#include "peer_nvshmem.h"
#else
#include <ishmem.h>
#include <ishmemx.h>
#endif

#include <algorithm>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace cg = cooperative_groups;

/* ------------------------------------------------------ library hooks */
#ifndef BENCH_LIB
#define BENCH_LIB "ishmem"
#endif
#ifndef BENCH_VERSION_SUFFIX
#define BENCH_VERSION_SUFFIX ""
#endif
#ifndef BENCH_HEAP_ENV
#define BENCH_HEAP_ENV "ISHMEM_SYMMETRIC_SIZE"
#endif
#ifndef BENCH_BEFORE_INIT
#define BENCH_BEFORE_INIT() do { } while (0)
#endif
#ifndef BENCH_HAVE_COLLECTIVE_LAUNCH
/* ishmem's device barrier needs one calling thread per PE, nothing more. */
static inline cudaError_t bench_collective_launch(const void *fn, dim3 grid, dim3 block, void **args,
                                                  size_t shmem, cudaStream_t stream) {
    return cudaLaunchKernel(fn, grid, block, args, shmem, stream);
}
#endif

/* ------------------------------------------------------------- limits */
#define CHAIN_N 1024                     /* g chain: ints on PE 1 (power of two) */
#define ROT_BYTES ((size_t)256 << 20)    /* rotation span: >= 2x L2 (60 MB on H200) */
#define THREAD_MAX_BYTES ((size_t)1 << 20) /* thread scope only up to 1 MiB */
#define BLOCK_THREADS 1024
#define MAX_ITERS 10000000L

static int g_me = -1, g_npes = 0;
/* The target of the one-sided rows: PE 1, or PE 0 itself in a job of one PE (the one-GPU
 * side-by-side mode: NVSHMEM cannot run 2 PEs on one GPU, so both libraries target themselves). */
static int g_tgt = 1;

#define CK(x)                                                                               \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "gpu_bench[PE%d]: CUDA error '%s' at %s:%d: %s\n", g_me,        \
                    cudaGetErrorString(e_), __FILE__, __LINE__, #x);                        \
            fflush(stderr);                                                                 \
            _exit(3);                                                                       \
        }                                                                                   \
    } while (0)

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "gpu_bench[PE%d]: ", g_me);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ------------------------------------------------------------ patterns */
__host__ __device__ __forceinline__ uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}
/* word i of the pattern of seed; never 0, so cleared memory never passes */
__host__ __device__ __forceinline__ uint64_t pat_word(uint64_t seed, size_t i) {
    return mix64(seed + (uint64_t)i * 0x9E3779B97F4A7C15ull) | 1;
}

__global__ void k_fill(uint64_t *p, size_t nw, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += (size_t)gridDim.x * blockDim.x)
        p[i] = pat_word(seed, i);
}

/* res[0] += mismatches, res[1] = min(index of a mismatch) */
__global__ void k_check(const uint64_t *p, size_t nw, uint64_t seed, unsigned long long *res) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != pat_word(seed, i)) {
            atomicAdd(&res[0], 1ull);
            atomicMin(&res[1], (unsigned long long)i);
        }
}

__global__ void k_flip(unsigned char *p) { *p ^= 0x5a; }

/* ------------------------------------------------- bandwidth kernels */
enum { SC_THREAD = 0, SC_WARP = 1, SC_BLOCK = 2 };
static const char *const SCOPE_NAME[] = {"thread", "warp", "block"};

struct Xfer {
    char *dst;
    const char *src;
    size_t n;           /* bytes per iteration, whole grid */
    size_t nchunks;     /* rotation: iteration i uses chunk (start + i) % nchunks */
    size_t start_chunk;
    long iters;
    int pe;
};

/* The share [off, off+len) of n bytes of unit u of `units` (16-byte multiples). */
__device__ __forceinline__ void share_of(size_t n, size_t units, size_t u, size_t *off, size_t *len) {
    size_t share = ((n + units - 1) / units + 15) & ~(size_t)15;
    size_t o = u * share;
    *off = o;
    *len = o < n ? (share < n - o ? share : n - o) : 0;
}

/* Every unit (thread, warp or block of the grid) moves its share of each
 * n-byte chunk; the grid walks `iters` chunks; quiet once at the end. */
template <int SCOPE, bool PUT>
__global__ void __launch_bounds__(BLOCK_THREADS) k_bw(Xfer a) {
    cg::thread_block blk = cg::this_thread_block();
    size_t units, u;
    if (SCOPE == SC_BLOCK) {
        units = gridDim.x;
        u = blockIdx.x;
    } else if (SCOPE == SC_WARP) {
        units = (size_t)gridDim.x * (blockDim.x / 32);
        u = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    } else {
        units = (size_t)gridDim.x * blockDim.x;
        u = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    }
    size_t off, len;
    share_of(a.n, units, u, &off, &len);
    if (len) { /* uniform over the calling group */
        size_t chunk = a.start_chunk;
        if constexpr (SCOPE == SC_BLOCK) {
            for (long i = 0; i < a.iters; i++) {
                size_t at = chunk * a.n + off;
                if (PUT) ishmemx_putmem_nbi_work_group(a.dst + at, a.src + at, len, a.pe, blk);
                else ishmemx_getmem_nbi_work_group(a.dst + at, a.src + at, len, a.pe, blk);
                if (++chunk == a.nchunks) chunk = 0;
            }
        } else if constexpr (SCOPE == SC_WARP) {
            cg::thread_block_tile<32> warp = cg::tiled_partition<32>(blk);
            for (long i = 0; i < a.iters; i++) {
                size_t at = chunk * a.n + off;
                if (PUT) ishmemx_putmem_nbi_work_group(a.dst + at, a.src + at, len, a.pe, warp);
                else ishmemx_getmem_nbi_work_group(a.dst + at, a.src + at, len, a.pe, warp);
                if (++chunk == a.nchunks) chunk = 0;
            }
        } else {
            for (long i = 0; i < a.iters; i++) {
                size_t at = chunk * a.n + off;
                if (PUT) ishmem_putmem_nbi(a.dst + at, a.src + at, len, a.pe);
                else ishmem_getmem_nbi(a.dst + at, a.src + at, len, a.pe);
                if (++chunk == a.nchunks) chunk = 0;
            }
        }
    }
    blk.sync();
    if (blk.thread_rank() == 0) ishmem_quiet();
}

/* --------------------------------------------------- latency kernels */
/* int_p + quiet per iteration */
__global__ void k_p(int *dst, int base, long iters, int pe) {
    for (long i = 0; i < iters; i++) {
        ishmem_int_p(dst, base + (int)i, pe);
        ishmem_quiet();
    }
}

/* 8-byte putmem + quiet per iteration; the payload changes every time */
__global__ void k_putmem_quiet(uint64_t *dst, uint64_t *src, uint64_t base, long iters, int pe) {
    for (long i = 0; i < iters; i++) {
        *(volatile uint64_t *)src = base + (uint64_t)i;
        ishmem_putmem(dst, src, sizeof(uint64_t), pe);
        ishmem_quiet();
    }
}

/* g as a dependency chain: each index comes from the previous g */
__global__ void k_g(const int *chain, int start, long iters, int pe, int *out) {
    int idx = start;
    for (long i = 0; i < iters; i++) idx = ishmem_int_g(chain + idx, pe) & (CHAIN_N - 1);
    *out = idx;
}

/* fetch_add: each fetched value must follow the previous one; the next
 * address depends on the previous result (ctr[1] is never used in practice),
 * so the atomics cannot overlap. res[0] = out-of-sequence values. */
__global__ void k_fetch_add(uint64_t *ctr, long iters, int pe, unsigned long long *res) {
    uint64_t prev = ishmem_uint64_atomic_fetch_add(ctr, 1, pe);
    unsigned long long bad = 0;
    for (long i = 1; i < iters; i++) {
        uint64_t r = ishmem_uint64_atomic_fetch_add(ctr + (prev >> 63), 1, pe);
        bad += r != prev + 1;
        prev = r;
    }
    res[0] = bad;
}

/* compare_swap: cswap(cur -> cur+1) must succeed every time; the first call
 * (cswap 0 -> 0) reads the current value. res[0] = failed swaps. */
__global__ void k_compare_swap(uint64_t *ctr, long iters, int pe, unsigned long long *res) {
    uint64_t cur = ishmem_uint64_atomic_compare_swap(ctr, 0, 0, pe);
    unsigned long long bad = 0;
    for (long i = 1; i < iters; i++) {
        uint64_t r = ishmem_uint64_atomic_compare_swap(ctr, cur, cur + 1, pe);
        if (r == cur) cur++;
        else { bad++; cur = r; }
    }
    res[0] = bad;
}

__host__ __device__ __forceinline__ uint64_t pp_payload(uint64_t seed, uint64_t v, int from) {
    return mix64(seed ^ (v * 2 + (uint64_t)from));
}

/* put_signal ping-pong, one thread on each of PE 0 and 1: PE 0 sends 8 B +
 * signal v, PE 1 waits for v, checks the payload and answers; PE 0 waits for
 * the answer. res[0] = payloads that arrived wrong or before their signal. */
__global__ void k_pingpong(uint64_t *rbuf, uint64_t *sbuf, uint64_t *sig, uint64_t seed, uint64_t base,
                           long iters, int me, int peer, unsigned long long *res) {
    unsigned long long bad = 0;
    for (long i = 0; i < iters; i++) {
        uint64_t v = base + (uint64_t)i + 1;
        if (me == 0) {
            *(volatile uint64_t *)sbuf = pp_payload(seed, v, 0);
            ishmem_putmem_signal_nbi(rbuf, sbuf, sizeof(uint64_t), sig, v, ISHMEM_SIGNAL_SET, peer);
            ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, v);
            bad += *(volatile uint64_t *)rbuf != pp_payload(seed, v, peer);
        } else {
            ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, v);
            bad += *(volatile uint64_t *)rbuf != pp_payload(seed, v, 0);
            *(volatile uint64_t *)sbuf = pp_payload(seed, v, 1);
            ishmem_putmem_signal_nbi(rbuf, sbuf, sizeof(uint64_t), sig, v, ISHMEM_SIGNAL_SET, peer);
        }
    }
    ishmem_quiet();
    res[0] = bad;
}

__global__ void k_barrier(long iters) {
    for (long i = 0; i < iters; i++) ishmem_barrier_all();
}

/* after the barrier row: every PE writes `val` into slot[me] of every other
 * PE, barrier, then checks that all slots hold val. res[0] = bad slots. */
__global__ void k_barrier_check(int *slot, int val, unsigned long long *res) {
    int me = ishmem_my_pe(), n = ishmem_n_pes();
    for (int pe = 0; pe < n; pe++)
        if (pe != me) ishmem_int_p(slot + me, val, pe);
    ishmem_quiet();
    ishmem_barrier_all();
    unsigned long long bad = 0;
    for (int pe = 0; pe < n; pe++)
        if (pe != me) bad += ((volatile int *)slot)[pe] != val;
    res[0] = bad;
}

/* ------------------------------------------------ collective kernels
 * Team-based collectives over ISHMEM_TEAM_WORLD, every PE taking part.
 * Scope thread: <<<1,1>>>, one thread calls the device form in a loop;
 * scope block: <<<1,1024>>>, the block calls the work-group form in a loop.
 * The ishmem build needs device collectives in the headers (the device header
 * defines ISHMEM_HAVE_DEVICE_COLLECTIVES); -DBENCH_NO_COLL leaves them out. */
#if !defined(BENCH_NO_COLL) && (defined(BENCH_PEER_NVSHMEM) || defined(ISHMEM_HAVE_DEVICE_COLLECTIVES))
#define BENCH_COLL 1
#endif
enum { CO_BROADCAST = 0, CO_FCOLLECT, CO_ALLTOALL, CO_SUM_REDUCE, CO_TEAM_SYNC, CO_N };
static const char *const COLL_NAME[CO_N] = {"broadcast", "fcollect", "alltoall", "sum_reduce", "team_sync"};

/* Pattern seed of block `blk` of PE `pe`'s source (fcollect: blk 0; alltoall:
 * the block for PE blk). */
__host__ __device__ __forceinline__ uint64_t coll_seed(uint64_t seed, int pe, int blk) {
    return mix64(seed ^ ((uint64_t)(pe * 256 + blk + 1) * 0xD1B54A32D192ED03ull));
}
/* sum_reduce: element i of PE pe's source; |v| < 2^19, so sums of <= 8 PEs
 * never overflow and the expected result is exact. */
__host__ __device__ __forceinline__ int red_val(uint64_t seed, size_t i, int pe) {
    return (int)(mix64(seed + (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)pe * 0xD1B54A32D192ED03ull) &
                 0xfffff) - 0x80000;
}

__global__ void k_ifill(int *p, size_t n, uint64_t seed, int pe) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = red_val(seed, i, pe);
}

/* res[0] += wrong sums, res[1] = min(index of a wrong sum) */
__global__ void k_icheck(const int *p, size_t n, uint64_t seed, int npes, unsigned long long *res) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int want = 0;
        for (int pe = 0; pe < npes; pe++) want += red_val(seed, i, pe);
        if (p[i] != want) {
            atomicAdd(&res[0], 1ull);
            atomicMin(&res[1], (unsigned long long)i);
        }
    }
}

#ifdef BENCH_COLL
struct Coll {
    char *dst;
    const char *src;
    size_t nelems; /* bytes per PE (sum_reduce: ints) */
    long iters;
    unsigned long long *res; /* res[0] = calls that returned nonzero */
};

template <int OP, class G> __device__ __forceinline__ int coll_call_wg(const Coll &a, const G &g) {
    if constexpr (OP == CO_BROADCAST) return ishmemx_broadcastmem_work_group(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, 0, g);
    else if constexpr (OP == CO_FCOLLECT) return ishmemx_fcollectmem_work_group(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, g);
    else if constexpr (OP == CO_ALLTOALL) return ishmemx_alltoallmem_work_group(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, g);
    else if constexpr (OP == CO_SUM_REDUCE)
        return ishmemx_int_sum_reduce_work_group(ISHMEM_TEAM_WORLD, (int *)a.dst, (const int *)a.src, a.nelems, g);
    else return ishmemx_team_sync_work_group(ISHMEM_TEAM_WORLD, g);
}

template <int OP> __device__ __forceinline__ int coll_call(const Coll &a) {
    if constexpr (OP == CO_BROADCAST) return ishmem_broadcastmem(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, 0);
    else if constexpr (OP == CO_FCOLLECT) return ishmem_fcollectmem(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems);
    else if constexpr (OP == CO_ALLTOALL) return ishmem_alltoallmem(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems);
    else if constexpr (OP == CO_SUM_REDUCE)
        return ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, (int *)a.dst, (const int *)a.src, a.nelems);
    else return ishmem_team_sync(ISHMEM_TEAM_WORLD);
}

/* `iters` back-to-back calls; launched <<<1,1>>> (BLK false) or <<<1,1024>>>. */
template <int OP, bool BLK> __global__ void __launch_bounds__(BLOCK_THREADS) k_coll(Coll a) {
    unsigned long long bad = 0;
    if constexpr (BLK) {
        cg::thread_block blk = cg::this_thread_block();
        for (long i = 0; i < a.iters; i++) bad += coll_call_wg<OP>(a, blk) != 0;
    } else {
        for (long i = 0; i < a.iters; i++) bad += coll_call<OP>(a) != 0;
    }
    if (threadIdx.x == 0) a.res[0] = bad;
}

/* After a team_sync row: `rounds` times, every PE writes val + r into
 * slot[me] of every other PE and quiets, team_sync (in the row's scope), then
 * every slot must hold val + r; a second team_sync keeps round r + 1's
 * writes away until every PE has checked round r. res[0] = bad slots. */
template <bool BLK> __global__ void __launch_bounds__(BLOCK_THREADS) k_sync_check(int *slot, int val, int rounds,
                                                                                unsigned long long *res) {
    int me = ishmem_my_pe(), n = ishmem_n_pes();
    unsigned long long bad = 0;
    for (int r = 0; r < rounds; r++) {
        if (threadIdx.x == 0) {
            for (int pe = 0; pe < n; pe++)
                if (pe != me) ishmem_int_p(slot + me, val + r, pe);
            ishmem_quiet();
        }
        for (int k = 0; k < 2; k++) {
            if constexpr (BLK) {
                cg::thread_block blk = cg::this_thread_block();
                blk.sync();
                ishmemx_team_sync_work_group(ISHMEM_TEAM_WORLD, blk);
            } else {
                ishmem_team_sync(ISHMEM_TEAM_WORLD);
            }
            if (k == 0 && threadIdx.x == 0)
                for (int pe = 0; pe < n; pe++)
                    if (pe != me) bad += ((volatile int *)slot)[pe] != val + r;
        }
    }
    if (threadIdx.x == 0) res[0] = bad;
}
#endif /* BENCH_COLL */

/* ---------------------------------------------------------------- state */
struct Opts {
    int quick = 0, header = 1, reps = 7;
    double target_s = 5e-3;
    size_t max_bytes = (size_t)1 << 30;
    std::string ops, scopes, grids, coll_sizes;
};
static Opts g_o;

static char *A, *B;          /* symmetric, g_buf bytes each: A = PE 0's local side */
static size_t g_buf;
static int *g_ctl, *g_flag, *g_done; /* symmetric control words */
static int *ibuf;            /* symmetric: int_p target */
static uint64_t *u8dst, *u8src, *u8tmp; /* symmetric 8-byte slots */
static int *chain;           /* symmetric [CHAIN_N] */
static std::vector<int> chain_host;
static uint64_t *ctr;        /* symmetric [2] AMO target */
static uint64_t *sig, *pp_s, *pp_r; /* symmetric ping-pong words */
static int *bslot;           /* symmetric [npes] barrier check slots */
static unsigned long long *dres; /* device-local results [4] */
static int *dint;            /* device-local int */
static cudaStream_t st;
static cudaEvent_t ev0, ev1;
static char g_prefix[256], g_machine[160];
static unsigned long g_run;  /* runs so far (PE 0), makes seeds and payloads unique */
static uint64_t g_sigbase;   /* signal values used so far (same on all PEs) */
static const char *g_inject;
static int g_injected;
static FILE *g_csv; /* the original stdout; fd 1 itself goes to stderr (libraries print there) */

static double now_s() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool list_has(const std::string &list, const char *item) {
    if (list.empty()) return true;
    size_t n = strlen(item);
    for (size_t p = 0; p <= list.size();) {
        size_t e = list.find(',', p);
        if (e == std::string::npos) e = list.size();
        if (e - p == n && !list.compare(p, n, item)) return true;
        p = e + 1;
    }
    return false;
}

static void emit(const char *op, const char *scope, size_t bytes, long iters, double v, const char *unit) {
    /* lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine */
    fprintf(g_csv, "%s,%s,%s,%d,%zu,%ld,%.5g,%s,%s\n", g_prefix, op, scope, g_npes, bytes, iters, v, unit,
            g_machine);
    fflush(g_csv);
    note("%-28s %-6s %11zu B  %10.4g %-4s (%ld iters)", op, scope, bytes, v, unit, iters);
}

static bool g_fail_local;
static void verify_failed(const char *op, const char *scope, size_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void verify_failed(const char *op, const char *scope, size_t bytes, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "VERIFY FAILED op=%s scope=%s bytes=%zu pe=%d: ", op, scope, bytes, g_me);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    g_fail_local = true;
}

/* event-timed section on st: seconds */
template <class F> static double time_events(F &&launch) {
    CK(cudaEventRecord(ev0, st));
    launch();
    CK(cudaGetLastError());
    CK(cudaEventRecord(ev1, st));
    CK(cudaEventSynchronize(ev1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev0, ev1));
    return (double)ms * 1e-3;
}

/* One calibration decision from a run of `it` iterations that took t seconds: > 0 the next
 * count to try, < 0 minus the final count (never decided on the very first run: the caller
 * runs run(1) before). */
static long calib_step(double t, long it, long max_iters) {
    const double target = g_o.target_s;
    double want = t > 0 ? (double)it * target / t : (double)max_iters;
    if (want > (double)max_iters) want = (double)max_iters;
    if (t >= target / 2 || it >= max_iters) return -(want < 1 ? 1 : (long)(want + 0.5));
    double g = want / (double)it;
    g = g < 2 ? 2 : g > 100 ? 100 : g;
    long next = (long)((double)it * g);
    return next > max_iters ? max_iters : next;
}

/* Calibrates iterations so one run takes about the target time, one warm-up run at the final
 * count, then REPS timed runs; returns the median seconds of one run. run(iters) -> s.
 * decide(code) -> code lets every PE take PE 0's decision (lockstep rows); identity otherwise. */
template <class F, class D> static double calibrated(F &&run, D &&decide, long max_iters, long *iters_out) {
    long it = 1, final_it = 0;
    run(1); /* first touch, module load */
    for (int k = 0; k < 12 && !final_it; k++) {
        long code = decide(calib_step(run(it), it, max_iters));
        if (code < 0) final_it = -code;
        else it = code;
    }
    if (!final_it) final_it = it;
    run(final_it); /* warm-up at the final count */
    std::vector<double> ts;
    for (int k = 0; k < g_o.reps; k++) ts.push_back(run(final_it));
    std::sort(ts.begin(), ts.end());
    size_t r = ts.size();
    *iters_out = final_it;
    return (r & 1) ? ts[r / 2] : 0.5 * (ts[r / 2 - 1] + ts[r / 2]);
}

template <class F> static double measure(F &&run, long max_iters, long *iters_out) {
    return calibrated(run, [](long code) { return code; }, max_iters, iters_out);
}

static void check_region(const void *buf, size_t bytes, uint64_t seed, unsigned long long *bad,
                         unsigned long long *first) {
    unsigned long long h[2] = {0, ~0ull};
    CK(cudaMemcpy(dres, h, sizeof h, cudaMemcpyHostToDevice));
    k_check<<<1024, 256, 0, st>>>((const uint64_t *)buf, bytes / 8, seed, dres);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(h, dres, sizeof h, cudaMemcpyDeviceToHost));
    *bad = h[0];
    *first = h[1];
}

static void fill_region(void *buf, size_t bytes, uint64_t seed) {
    k_fill<<<1024, 256, 0, st>>>((uint64_t *)buf, bytes / 8, seed);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(st));
}

/* ------------------------------------------------ one-sided rows (PE 0) */
struct BwRow {
    bool put;
    int scope; /* SC_* or -1: queue */
    int grid;
    size_t bytes;
};

template <int SCOPE, bool PUT> static void launch_bw(int grid, const Xfer &x) {
    k_bw<SCOPE, PUT><<<grid, BLOCK_THREADS, 0, st>>>(x);
}

static void launch_bw_any(const BwRow &r, const Xfer &x) {
    switch (r.scope * 2 + (r.put ? 1 : 0)) {
    case SC_THREAD * 2: launch_bw<SC_THREAD, false>(r.grid, x); break;
    case SC_THREAD * 2 + 1: launch_bw<SC_THREAD, true>(r.grid, x); break;
    case SC_WARP * 2: launch_bw<SC_WARP, false>(r.grid, x); break;
    case SC_WARP * 2 + 1: launch_bw<SC_WARP, true>(r.grid, x); break;
    case SC_BLOCK * 2: launch_bw<SC_BLOCK, false>(r.grid, x); break;
    default: launch_bw<SC_BLOCK, true>(r.grid, x); break;
    }
}

/* Bandwidth row. PE 0's A is the local side, PE 1's B the remote side.
 * Iteration i of the row moves chunk (i mod nchunks) of a span of >= 256 MiB
 * (the chunks of consecutive runs follow on, so small sizes sweep the span
 * and do not sit in L2); the pattern is a function of the row's seed and the
 * word's offset in the span, so after the row the first min(iterations,
 * nchunks) chunks of the destination must hold it. put: PE 1's B is read
 * back into PE 0's (cleared) A and checked; get: A is checked. */
static void run_bw(const BwRow &r) {
    const bool queue = r.scope < 0;
    char op[64];
    if (queue) snprintf(op, sizeof op, "putmem_on_queue");
    else snprintf(op, sizeof op, "%s_%dx%d", r.put ? "putmem_nbi" : "getmem_nbi", r.grid, BLOCK_THREADS);
    const char *scope = queue ? "queue" : SCOPE_NAME[r.scope];
    const size_t n = r.bytes, span = n > ROT_BYTES ? n : ROT_BYTES, nchunks = span / n;
    const uint64_t seed = mix64(str_hash(op) ^ mix64(str_hash(scope) + n) ^ mix64(++g_run * 0x9E3779B97F4A7C15ull));

    fill_region(A, span, seed);
    if (!r.put) { /* the pattern goes to PE 1's B; A is cleared */
        ishmem_putmem(B, A, span, g_tgt);
        ishmem_quiet();
        CK(cudaMemsetAsync(A, 0, span, st));
        CK(cudaStreamSynchronize(st));
    }
    char *dst = r.put ? B : A;
    const char *src = r.put ? A : B;
    size_t pos = 0;
    long total = 0;
    auto run = [&](long it) -> double {
        double t;
        if (queue) {
#ifndef BENCH_NO_QUEUE
            t = time_events([&] {
                size_t c = pos;
                for (long i = 0; i < it; i++) {
                    ishmemx_putmem_on_queue(dst + c * n, src + c * n, n, g_tgt, st);
                    if (++c == nchunks) c = 0;
                }
                ishmemx_quiet_on_queue(st);
            });
#else
            t = 0;
#endif
        } else {
            Xfer x = {dst, src, n, nchunks, pos, it, g_tgt};
            t = time_events([&] { launch_bw_any(r, x); });
        }
        pos = (size_t)(((unsigned long long)pos + (unsigned long long)it) % nchunks);
        total += it;
        return t;
    };
    long iters = 0;
    double med = measure(run, queue ? 100000L : MAX_ITERS, &iters);

    /* verify */
    const size_t covered = (size_t)std::min<unsigned long long>((unsigned long long)total, nchunks) * n;
    if (r.put) {
        CK(cudaMemsetAsync(A, 0, covered, st));
        CK(cudaStreamSynchronize(st));
        ishmem_getmem(A, B, covered, g_tgt);
    }
    const char *base_op = r.put ? (queue ? "putmem_on_queue" : "putmem_nbi") : "getmem_nbi";
    if (g_inject && !g_injected && !strcmp(g_inject, base_op)) {
        g_injected = 1;
        k_flip<<<1, 1, 0, st>>>((unsigned char *)A + covered / 2);
        CK(cudaGetLastError());
    }
    unsigned long long bad, first;
    check_region(A, covered, seed, &bad, &first);
    if (bad) {
        verify_failed(op, scope, n, "%llu of %zu words wrong, first at byte offset %llu", bad, covered / 8,
                      first * 8);
        return;
    }
    emit(op, scope, n, iters, (double)n * (double)iters / med / 1e9, "GB/s");
}

static int host_get_int(const int *sym, int pe) { return ishmem_int_g(sym, pe); }

static uint64_t host_get_u64(const uint64_t *sym, int pe) {
    uint64_t v = 0;
    ishmem_getmem(u8tmp, sym, sizeof v, pe);
    CK(cudaMemcpy(&v, u8tmp, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

static void set_u64(uint64_t *local, uint64_t v) { CK(cudaMemcpy(local, &v, sizeof v, cudaMemcpyHostToDevice)); }

/* Latency rows driven by PE 0 alone. */
static void run_lat_p() {
    int want = 0;
    auto run = [&](long it) -> double {
        int base = (int)(mix64(++g_run) & 0xffffff);
        double t = time_events([&] { k_p<<<1, 1, 0, st>>>(ibuf, base, it, g_tgt); });
        want = base + (int)(it - 1);
        int got = host_get_int(ibuf, g_tgt);
        if (got != want) verify_failed("p", "thread", 4, "last value %d, expected %d", got, want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit("p", "thread", sizeof(int), iters, med / (double)iters * 1e6, "us");
}

static void run_lat_putmem_quiet() {
    auto run = [&](long it) -> double {
        uint64_t base = mix64(++g_run) >> 8;
        double t = time_events([&] { k_putmem_quiet<<<1, 1, 0, st>>>(u8dst, u8src, base, it, g_tgt); });
        uint64_t got = host_get_u64(u8dst, g_tgt), want = base + (uint64_t)(it - 1);
        if (got != want)
            verify_failed("putmem_quiet", "thread", 8, "last value %llu, expected %llu", (unsigned long long)got,
                          (unsigned long long)want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit("putmem_quiet", "thread", sizeof(uint64_t), iters, med / (double)iters * 1e6, "us");
}

static void run_lat_g() {
    auto run = [&](long it) -> double {
        int start = (int)(mix64(++g_run) & (CHAIN_N - 1));
        double t = time_events([&] { k_g<<<1, 1, 0, st>>>(chain, start, it, g_tgt, dint); });
        int got;
        CK(cudaMemcpy(&got, dint, sizeof got, cudaMemcpyDeviceToHost));
        int want = start;
        for (long i = 0; i < it; i++) want = chain_host[want];
        if (got != want) verify_failed("g", "thread", 4, "chain ended at %d, expected %d", got, want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit("g", "thread", sizeof(int), iters, med / (double)iters * 1e6, "us");
}

static void run_lat_amo(bool cswap) {
    const char *op = cswap ? "compare_swap" : "fetch_add";
    auto run = [&](long it) -> double {
        uint64_t before = host_get_u64(ctr, g_tgt);
        double t = time_events([&] {
            if (cswap) k_compare_swap<<<1, 1, 0, st>>>(ctr, it, g_tgt, dres);
            else k_fetch_add<<<1, 1, 0, st>>>(ctr, it, g_tgt, dres);
        });
        unsigned long long bad;
        CK(cudaMemcpy(&bad, dres, sizeof bad, cudaMemcpyDeviceToHost));
        uint64_t after = host_get_u64(ctr, g_tgt);
        uint64_t want = before + (uint64_t)(cswap ? it - 1 : it);
        if (bad || after != want)
            verify_failed(op, "thread", 8, "%llu results out of sequence; target %llu, expected %llu", bad,
                          (unsigned long long)after, (unsigned long long)want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit(op, "thread", sizeof(uint64_t), iters, med / (double)iters * 1e6, "us");
}

/* ---- host-initiated rows on the GPU heap (scope host): the same operations from the CPU,
 * across the same PEs, in the same run, so the device rows (which reach PEs of other nodes
 * through the proxy) have their host baseline beside them. Host clock. Not in the peer
 * (NVSHMEM) build. */
#ifndef BENCH_PEER_NVSHMEM
static void run_host_lat_p() {
    auto run = [&](long it) -> double {
        int base = (int)(mix64(++g_run) & 0xffffff);
        double t0 = now_s();
        for (long i = 0; i < it; i++) {
            ishmem_int_p(ibuf, base + (int)i, g_tgt);
            ishmem_quiet();
        }
        double t = now_s() - t0;
        int got = host_get_int(ibuf, g_tgt), want = base + (int)(it - 1);
        if (got != want) verify_failed("p", "host", 4, "last value %d, expected %d", got, want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit("p", "host", sizeof(int), iters, med / (double)iters * 1e6, "us");
}

/* 8-byte putmem from a host variable + quiet; the payload changes every time */
static void run_host_lat_putmem_quiet() {
    auto run = [&](long it) -> double {
        uint64_t base = mix64(++g_run) >> 8, v = 0;
        double t0 = now_s();
        for (long i = 0; i < it; i++) {
            *(volatile uint64_t *)&v = base + (uint64_t)i;
            ishmem_putmem(u8dst, &v, sizeof v, g_tgt);
            ishmem_quiet();
        }
        double t = now_s() - t0;
        uint64_t got = host_get_u64(u8dst, g_tgt), want = base + (uint64_t)(it - 1);
        if (got != want)
            verify_failed("putmem_quiet", "host", 8, "last value %llu, expected %llu", (unsigned long long)got,
                          (unsigned long long)want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit("putmem_quiet", "host", sizeof(uint64_t), iters, med / (double)iters * 1e6, "us");
}

/* g as a dependency chain, as k_g */
static void run_host_lat_g() {
    auto run = [&](long it) -> double {
        int start = (int)(mix64(++g_run) & (CHAIN_N - 1)), idx = start;
        double t0 = now_s();
        for (long i = 0; i < it; i++) idx = ishmem_int_g(chain + idx, g_tgt) & (CHAIN_N - 1);
        double t = now_s() - t0;
        int want = start;
        for (long i = 0; i < it; i++) want = chain_host[want];
        if (idx != want) verify_failed("g", "host", 4, "chain ended at %d, expected %d", idx, want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit("g", "host", sizeof(int), iters, med / (double)iters * 1e6, "us");
}

static void run_host_lat_amo(bool cswap) {
    const char *op = cswap ? "compare_swap" : "fetch_add";
    auto run = [&](long it) -> double {
        uint64_t before = host_get_u64(ctr, g_tgt);
        unsigned long long bad = 0;
        double t0 = now_s();
        if (cswap) {
            uint64_t cur = ishmem_uint64_atomic_compare_swap(ctr, 0, 0, g_tgt);
            for (long i = 1; i < it; i++) {
                uint64_t r = ishmem_uint64_atomic_compare_swap(ctr, cur, cur + 1, g_tgt);
                if (r == cur) cur++;
                else { bad++; cur = r; }
            }
        } else {
            uint64_t prev = ishmem_uint64_atomic_fetch_add(ctr, 1, g_tgt);
            for (long i = 1; i < it; i++) {
                uint64_t r = ishmem_uint64_atomic_fetch_add(ctr + (prev >> 63), 1, g_tgt);
                bad += r != prev + 1;
                prev = r;
            }
        }
        double t = now_s() - t0;
        uint64_t after = host_get_u64(ctr, g_tgt);
        uint64_t want = before + (uint64_t)(cswap ? it - 1 : it);
        if (bad || after != want)
            verify_failed(op, "host", 8, "%llu results out of sequence; target %llu, expected %llu", bad,
                          (unsigned long long)after, (unsigned long long)want);
        return t;
    };
    long iters;
    double med = measure(run, MAX_ITERS, &iters);
    if (!g_fail_local) emit(op, "host", sizeof(uint64_t), iters, med / (double)iters * 1e6, "us");
}

/* putmem of n bytes (GPU heap to GPU heap) back to back, one quiet at the end: GB/s */
static void run_host_bw(size_t n) {
    const size_t span = n > ROT_BYTES ? n : ROT_BYTES, nchunks = span / n;
    const uint64_t seed = mix64(str_hash("putmem_host") ^ mix64(n) ^ mix64(++g_run * 0x9E3779B97F4A7C15ull));
    fill_region(A, span, seed);
    size_t pos = 0;
    long total = 0;
    auto run = [&](long it) -> double {
        double t0 = now_s();
        size_t c = pos;
        for (long i = 0; i < it; i++) {
            ishmem_putmem_nbi(B + c * n, A + c * n, n, g_tgt);
            if (++c == nchunks) c = 0;
        }
        ishmem_quiet();
        double t = now_s() - t0;
        pos = (size_t)(((unsigned long long)pos + (unsigned long long)it) % nchunks);
        total += it;
        return t;
    };
    long iters = 0;
    double med = measure(run, 100000L, &iters);
    const size_t covered = (size_t)std::min<unsigned long long>((unsigned long long)total, nchunks) * n;
    CK(cudaMemsetAsync(A, 0, covered, st));
    CK(cudaStreamSynchronize(st));
    ishmem_getmem(A, B, covered, g_tgt);
    unsigned long long bad, first;
    check_region(A, covered, seed, &bad, &first);
    if (bad) {
        verify_failed("putmem_nbi", "host", n, "%llu of %zu words wrong, first at byte offset %llu", bad, covered / 8,
                      first * 8);
        return;
    }
    emit("putmem_nbi", "host", n, iters, (double)n * (double)iters / med / 1e9, "GB/s");
}
#endif

/* 8-byte stream puts: lat = enqueue + quiet_on_queue + synchronize each
 * time (what a host thread waits for), pipelined = back to back, one quiet
 * and synchronize at the end (per operation). Host clock. */
#ifndef BENCH_NO_QUEUE
static void run_queue_small(bool pipelined) {
    const char *op = pipelined ? "putmem_on_queue_pipelined" : "putmem_on_queue_lat";
    auto run = [&](long it) -> double {
        uint64_t v = mix64(++g_run);
        set_u64(u8src, v);
        double t0 = now_s();
        for (long i = 0; i < it; i++) {
            ishmemx_putmem_on_queue(u8dst, u8src, sizeof(uint64_t), g_tgt, st);
            if (!pipelined) {
                ishmemx_quiet_on_queue(st);
                CK(cudaStreamSynchronize(st));
            }
        }
        if (pipelined) {
            ishmemx_quiet_on_queue(st);
            CK(cudaStreamSynchronize(st));
        }
        double t = now_s() - t0;
        uint64_t got = host_get_u64(u8dst, g_tgt);
        if (got != v)
            verify_failed(op, "queue", 8, "value %llu, expected %llu", (unsigned long long)got,
                          (unsigned long long)v);
        return t;
    };
    long iters;
    double med = measure(run, 1000000L, &iters);
    if (!g_fail_local) emit(op, "queue", sizeof(uint64_t), iters, med / (double)iters * 1e6, "us");
}
#endif

/* host-initiated blocking putmem of 8 B; host clock */
static void run_host_putmem() {
    auto run = [&](long it) -> double {
        uint64_t v = mix64(++g_run);
        set_u64(u8src, v);
        double t0 = now_s();
        for (long i = 0; i < it; i++) ishmem_putmem(u8dst, u8src, sizeof(uint64_t), g_tgt);
        ishmem_quiet();
        double t = now_s() - t0;
        uint64_t got = host_get_u64(u8dst, g_tgt);
        if (got != v)
            verify_failed("putmem_blocking", "host", 8, "value %llu, expected %llu", (unsigned long long)got,
                          (unsigned long long)v);
        return t;
    };
    long iters;
    double med = measure(run, 1000000L, &iters);
    if (!g_fail_local) emit("putmem_blocking", "host", sizeof(uint64_t), iters, med / (double)iters * 1e6, "us");
}

/* ------------------------------------------- collective helpers (all PEs) */
static int bcast_int(int v) {
    ishmem_barrier_all(); /* everyone has consumed the previous value */
    if (g_me == 0) {
        for (int pe = 1; pe < g_npes; pe++) ishmem_int_p(g_ctl, v, pe);
        ishmem_quiet();
    }
    ishmem_barrier_all();
    if (g_me != 0) CK(cudaMemcpy(&v, g_ctl, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

static int any_fail(int local) {
    ishmem_barrier_all();
    if (local && g_me != 0) {
        ishmem_int_p(g_flag, 1, 0);
        ishmem_quiet();
    }
    ishmem_barrier_all();
    int v = local;
    if (g_me == 0) {
        int f = 0;
        CK(cudaMemcpy(&f, g_flag, sizeof f, cudaMemcpyDeviceToHost));
        v |= f;
    }
    return bcast_int(v);
}

/* One run of a row that every PE takes part in: all PEs leave a host
 * barrier, launch, PE 0 times its launch. Returns PE 0's seconds. */
template <class F> static double lockstep_run(F &&launch) {
    CK(cudaStreamSynchronize(st));
    ishmem_barrier_all();
    double t = 0;
    if (g_me == 0) t = time_events(launch);
    else {
        launch();
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
    }
    return t;
}

template <class F> static double lockstep_measure(F &&run) {
    run(); /* warm-up */
    std::vector<double> ts;
    for (int k = 0; k < g_o.reps; k++) ts.push_back(run());
    std::sort(ts.begin(), ts.end());
    size_t r = ts.size();
    return (r & 1) ? ts[r / 2] : 0.5 * (ts[r / 2 - 1] + ts[r / 2]);
}

static int run_put_signal() {
    const long N = g_o.quick ? 2000 : 10000;
    unsigned long long bad_total = 0;
    uint64_t seed = mix64(str_hash("put_signal"));
    auto run = [&]() -> double {
        uint64_t base = g_sigbase;
        g_sigbase += (uint64_t)N;
        double t = lockstep_run([&] {
            if (g_me < 2)
                k_pingpong<<<1, 1, 0, st>>>(pp_r, pp_s, sig, seed, base, N, g_me, g_npes == 1 ? 0 : 1 - g_me, dres);
        });
        if (g_me < 2) {
            unsigned long long bad;
            CK(cudaMemcpy(&bad, dres, sizeof bad, cudaMemcpyDeviceToHost));
            bad_total += bad;
        }
        return t;
    };
    double med = lockstep_measure(run);
    if (bad_total)
        verify_failed("put_signal", "thread", 8, "%llu payloads arrived wrong or before their signal", bad_total);
    int fail = any_fail(bad_total != 0);
    if (!fail && g_me == 0) emit("put_signal", "thread", sizeof(uint64_t), N, med / (double)N * 1e6, "us");
    return fail;
}

static int run_barrier_all() {
    const long N = g_o.quick ? 2000 : 10000;
    long n = N;
    void *args[] = {&n};
    auto run = [&]() -> double {
        return lockstep_run([&] { CK(bench_collective_launch((const void *)k_barrier, 1, 1, args, 0, st)); });
    };
    double med = lockstep_measure(run);
    /* check: the barrier orders every PE's puts before every PE's reads */
    int val = (int)(mix64(++g_run + 77) & 0x7fffffff);
    val = bcast_int(val);
    int v2 = val;
    void *cargs[] = {&bslot, &v2, &dres};
    lockstep_run([&] { CK(bench_collective_launch((const void *)k_barrier_check, 1, 1, cargs, 0, st)); });
    unsigned long long bad;
    CK(cudaMemcpy(&bad, dres, sizeof bad, cudaMemcpyDeviceToHost));
    if (bad) verify_failed("barrier_all", "thread", 0, "%llu peers' values missing after the barrier", bad);
    int fail = any_fail(bad != 0);
    if (!fail && g_me == 0) emit("barrier_all", "thread", 0, N, med / (double)N * 1e6, "us");
    return fail;
}

#ifndef BENCH_PEER_NVSHMEM
/* put_signal ping-pong from the host of PE 0 and 1 (8 B from a host variable + signal set,
 * signal_wait_until on the host), as k_pingpong; the last payload is checked. */
static int run_host_put_signal() {
    const long N = g_o.quick ? 2000 : 10000;
    unsigned long long bad_total = 0;
    uint64_t seed = mix64(str_hash("put_signal_host"));
    auto run = [&]() -> double {
        uint64_t base = g_sigbase;
        g_sigbase += (uint64_t)N;
        CK(cudaStreamSynchronize(st));
        ishmem_barrier_all();
        double t0 = now_s();
        if (g_me < 2) {
            int peer = g_npes == 1 ? 0 : 1 - g_me;
            uint64_t s = 0;
            for (long i = 0; i < N; i++) {
                uint64_t v = base + (uint64_t)i + 1;
                if (g_me == 0) {
                    *(volatile uint64_t *)&s = pp_payload(seed, v, 0);
                    ishmem_putmem_signal(pp_r, &s, sizeof s, sig, v, ISHMEM_SIGNAL_SET, peer);
                    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, v);
                } else {
                    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, v);
                    *(volatile uint64_t *)&s = pp_payload(seed, v, 1);
                    ishmem_putmem_signal(pp_r, &s, sizeof s, sig, v, ISHMEM_SIGNAL_SET, peer);
                }
            }
            ishmem_quiet();
            uint64_t last = base + (uint64_t)N, got = 0;
            if (g_me == 0) {
                CK(cudaMemcpy(&got, pp_r, sizeof got, cudaMemcpyDeviceToHost));
                bad_total += got != pp_payload(seed, last, peer);
            }
        }
        return now_s() - t0;
    };
    double med = lockstep_measure(run);
    if (bad_total) verify_failed("put_signal", "host", 8, "%llu last payloads wrong", bad_total);
    int fail = any_fail(bad_total != 0);
    if (!fail && g_me == 0) emit("put_signal", "host", sizeof(uint64_t), N, med / (double)N * 1e6, "us");
    return fail;
}

static int run_host_barrier_all() {
    const long N = g_o.quick ? 2000 : 10000;
    auto run = [&]() -> double {
        CK(cudaStreamSynchronize(st));
        ishmem_barrier_all();
        double t0 = now_s();
        for (long i = 0; i < N; i++) ishmem_barrier_all();
        return now_s() - t0;
    };
    double med = lockstep_measure(run);
    int fail = any_fail(0);
    if (!fail && g_me == 0) emit("barrier_all", "host", 0, N, med / (double)N * 1e6, "us");
    return fail;
}
#endif

#ifndef BENCH_NO_QUEUE
static int run_barrier_all_on_queue() {
    const long N = g_o.quick ? 500 : 2000;
    auto run = [&]() -> double {
        return lockstep_run([&] {
            for (long i = 0; i < N; i++) ishmemx_barrier_all_on_queue(st);
        });
    };
    double med = lockstep_measure(run);
    int fail = any_fail(0);
    if (!fail && g_me == 0) emit("barrier_all_on_queue", "queue", 0, N, med / (double)N * 1e6, "us");
    return fail;
}
#endif

/* Like measure(), for rows every PE takes part in: every PE calls
 * run(iters) with the same iters (PE 0 decides from its own time and
 * broadcasts the decision); run returns PE 0's seconds. */
template <class F> static double lockstep_calibrated(F &&run, long max_iters, long *iters_out) {
    /* max_iters fits an int */
    return calibrated(run, [](long code) { return (long)bcast_int(g_me == 0 ? (int)code : 0); }, max_iters, iters_out);
}

#ifdef BENCH_COLL
/* sizes per PE of the collective rows (host_bench's) */
static std::vector<size_t> coll_sizes() {
    std::vector<size_t> s;
    if (!g_o.coll_sizes.empty()) {
        for (size_t p = 0; p <= g_o.coll_sizes.size();) {
            size_t e = g_o.coll_sizes.find(',', p);
            if (e == std::string::npos) e = g_o.coll_sizes.size();
            size_t v = strtoull(g_o.coll_sizes.substr(p, e - p).c_str(), NULL, 0);
            if (v) s.push_back(v);
            p = e + 1;
        }
    } else if (g_o.quick) s = {8, 4096, 262144};
    else s = {8, 64, 512, 4096, 32768, 262144, (size_t)1 << 20};
    std::vector<size_t> out;
    for (size_t n : s)
        if (n <= g_o.max_bytes) out.push_back(n);
    return out;
}

static uint64_t g_coll_run; /* collective rows so far: the same count on every PE */

template <int OP> static const void *coll_kernel_of(bool blk) {
    return blk ? (const void *)k_coll<OP, true> : (const void *)k_coll<OP, false>;
}
static const void *coll_kernel(int op, bool blk) {
    switch (op) {
    case CO_BROADCAST: return coll_kernel_of<CO_BROADCAST>(blk);
    case CO_FCOLLECT: return coll_kernel_of<CO_FCOLLECT>(blk);
    case CO_ALLTOALL: return coll_kernel_of<CO_ALLTOALL>(blk);
    case CO_SUM_REDUCE: return coll_kernel_of<CO_SUM_REDUCE>(blk);
    default: return coll_kernel_of<CO_TEAM_SYNC>(blk);
    }
}

/* One collective row, every PE: PE 0 times a kernel of `iters` back-to-back
 * calls (A = source, B = destination, both symmetric); the destination,
 * cleared before the row, is checked on every PE after the timed runs
 * against the patterns of this row (seeded per row, so stale data fails):
 *   broadcast : B = root (PE 0)'s source; the others' sources hold other data;
 *   fcollect  : block j of B = PE j's source;
 *   alltoall  : block j of B on PE i = block i of PE j's source;
 *   sum_reduce: B[k] = sum over PEs of their source[k] (exact ints);
 *   team_sync : k_sync_check (values written before a sync are seen after it).
 * Every call's return value must be 0. */
/* Host-enqueued form of a collective (scope queue): one call on the stream, status to NULL. */
static void coll_enqueue(int op, const Coll &a) {
    switch (op) {
    case CO_BROADCAST: ishmemx_broadcastmem_on_queue(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, 0, NULL, st); break;
    case CO_FCOLLECT: ishmemx_fcollectmem_on_queue(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, NULL, st); break;
    case CO_ALLTOALL: ishmemx_alltoallmem_on_queue(ISHMEM_TEAM_WORLD, a.dst, a.src, a.nelems, NULL, st); break;
    case CO_SUM_REDUCE:
        ishmemx_int_sum_reduce_on_queue(ISHMEM_TEAM_WORLD, (int *)a.dst, (const int *)a.src, a.nelems, NULL, st);
        break;
    default: ishmemx_team_sync_on_queue(ISHMEM_TEAM_WORLD, NULL, st); break;
    }
}

/* mode: 0 thread, 1 block (device forms in one kernel), 2 queue (`<op>_on_queue` rows: iters
 * calls enqueued on the stream back to back, timed by events around them). */
static int run_coll(int op, int mode, size_t n) {
    const bool blk = mode == 1, queue = mode == 2;
    char qname[64];
    snprintf(qname, sizeof qname, "%s_on_queue", COLL_NAME[op]);
    const char *name = queue ? qname : COLL_NAME[op], *scope = queue ? "queue" : blk ? "block" : "thread";
    const size_t bytes = op == CO_TEAM_SYNC ? 0 : n;
    const uint64_t seed =
        mix64(str_hash(name) ^ mix64(str_hash(scope) + bytes) ^ mix64(++g_coll_run * 0x9E3779B97F4A7C15ull));
    const size_t nblk = (op == CO_FCOLLECT || op == CO_ALLTOALL) ? (size_t)g_npes : 1;
    switch (op) {
    case CO_BROADCAST: fill_region(A, n, g_me == 0 ? coll_seed(seed, 0, 0) : coll_seed(seed, g_me, 99)); break;
    case CO_FCOLLECT: fill_region(A, n, coll_seed(seed, g_me, 0)); break;
    case CO_ALLTOALL:
        for (int j = 0; j < g_npes; j++) fill_region(A + (size_t)j * n, n, coll_seed(seed, g_me, j));
        break;
    case CO_SUM_REDUCE:
        k_ifill<<<1024, 256, 0, st>>>((int *)A, n / sizeof(int), seed, g_me);
        CK(cudaGetLastError());
        break;
    default: break;
    }
    if (bytes) CK(cudaMemsetAsync(B, 0, bytes * nblk, st));
    CK(cudaStreamSynchronize(st));

    Coll a = {B, A, op == CO_SUM_REDUCE ? n / sizeof(int) : n, 1, dres};
    void *args[] = {&a};
    const void *fn = coll_kernel(op, blk); /* unused by the queue rows */
    const dim3 threads(blk ? BLOCK_THREADS : 1);
    unsigned long long bad_rc = 0;
    if (queue) CK(cudaMemset(dres, 0, sizeof(unsigned long long)));
    auto run = [&](long it) -> double {
        a.iters = it;
        double t = queue ? lockstep_run([&] {
            for (long i = 0; i < it; i++) coll_enqueue(op, a);
        })
                         : lockstep_run([&] { CK(bench_collective_launch(fn, dim3(1), threads, args, 0, st)); });
        unsigned long long b = 0;
        CK(cudaMemcpy(&b, dres, sizeof b, cudaMemcpyDeviceToHost));
        bad_rc += b;
        return t;
    };
    long iters = 0;
    double med = lockstep_calibrated(run, 1000000L, &iters);
    CK(cudaDeviceSynchronize());
    ishmem_barrier_all(); /* every PE's last call is complete */

    /* test hook: corrupt the last PE's result of the first row of this op */
    if (g_inject && !g_injected && !strcmp(g_inject, name) && bytes) {
        g_injected = 1;
        if (g_me == g_npes - 1) {
            k_flip<<<1, 1, 0, st>>>((unsigned char *)B + (bytes * nblk) / 2);
            CK(cudaGetLastError());
        }
    }
    unsigned long long bad = 0, first = ~0ull;
    int bad_blk = -1;
    switch (op) {
    case CO_BROADCAST: check_region(B, n, coll_seed(seed, 0, 0), &bad, &first); break;
    case CO_FCOLLECT:
    case CO_ALLTOALL:
        for (int j = 0; j < g_npes; j++) {
            unsigned long long b, f;
            check_region(B + (size_t)j * n, n, op == CO_FCOLLECT ? coll_seed(seed, j, 0) : coll_seed(seed, j, g_me),
                         &b, &f);
            if (b && bad_blk < 0) {
                bad_blk = j;
                first = f;
            }
            bad += b;
        }
        break;
    case CO_SUM_REDUCE: {
        unsigned long long h[2] = {0, ~0ull};
        CK(cudaMemcpy(dres, h, sizeof h, cudaMemcpyHostToDevice));
        k_icheck<<<1024, 256, 0, st>>>((const int *)B, n / sizeof(int), seed, g_npes, dres);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(st));
        CK(cudaMemcpy(h, dres, sizeof h, cudaMemcpyDeviceToHost));
        bad = h[0];
        first = h[1];
        break;
    }
    default: {
        int val = bcast_int((int)(mix64(seed) & 0x3fffffff));
        int rounds = 3;
        void *cargs[] = {&bslot, &val, &rounds, &dres};
        const void *cfn = blk || queue ? (const void *)k_sync_check<true> : (const void *)k_sync_check<false>;
        lockstep_run([&] { CK(bench_collective_launch(cfn, dim3(1), threads, cargs, 0, st)); });
        CK(cudaMemcpy(&bad, dres, sizeof bad, cudaMemcpyDeviceToHost));
        break;
    }
    }
    if (bad_rc)
        verify_failed(name, scope, bytes, "%llu calls returned nonzero (%ld iterations per run)", bad_rc, iters);
    if (bad) {
        if (op == CO_TEAM_SYNC)
            verify_failed(name, scope, bytes, "%llu peers' values missing after team_sync (3 rounds)", bad);
        else if (op == CO_SUM_REDUCE)
            verify_failed(name, scope, bytes, "%llu of %zu sums wrong, first at element %llu", bad, n / sizeof(int),
                          first);
        else if (bad_blk >= 0)
            verify_failed(name, scope, bytes, "%llu of %zu words wrong, first in the block of PE %d at byte %llu", bad,
                          n * nblk / 8, bad_blk, first * 8);
        else
            verify_failed(name, scope, bytes, "%llu of %zu words differ from the root's, first at byte %llu", bad,
                          n / 8, first * 8);
    }
    int fail = any_fail(bad != 0 || bad_rc != 0);
    if (!fail && g_me == 0) emit(name, scope, bytes, iters, med / (double)iters * 1e6, "us");
    return fail;
}
#endif /* BENCH_COLL */

/* Every collective row (op-major, then scope thread, block, then size). */
static int run_collectives() {
    bool any = false;
    for (int op = 0; op < CO_N; op++) {
        char qname[64];
        snprintf(qname, sizeof qname, "%s_on_queue", COLL_NAME[op]);
        any |= list_has(g_o.ops, COLL_NAME[op]) || list_has(g_o.ops, qname);
    }
    if (!any) return 0;
#ifdef BENCH_COLL
    const std::vector<size_t> sizes = coll_sizes();
    for (int op = 0; op < CO_N; op++) {
        char qname[64];
        snprintf(qname, sizeof qname, "%s_on_queue", COLL_NAME[op]);
        for (int mode : {0, 1, 2}) {
            if (!list_has(g_o.ops, mode == 2 ? qname : COLL_NAME[op])) continue;
            if (mode < 2 && !list_has(g_o.scopes, mode ? "block" : "thread")) continue;
            if (op == CO_TEAM_SYNC) {
                if (run_coll(op, mode, 0)) return 1;
                continue;
            }
            std::vector<size_t> sz = sizes;
            if (mode == 2 && !g_o.quick) { /* the copy-engine and whole-GPU paths */
                const size_t nblk = (op == CO_FCOLLECT || op == CO_ALLTOALL) ? (size_t)g_npes : 1;
                for (size_t big : {(size_t)16 << 20, (size_t)256 << 20})
                    if (big <= g_o.max_bytes && big * nblk <= g_buf) sz.push_back(big);
            }
            for (size_t n : sz)
                if (run_coll(op, mode, n)) return 1;
        }
    }
#else
    if (g_me == 0)
        note("collective rows (broadcast, fcollect, alltoall, sum_reduce, team_sync) left out: built without "
             "device collectives (BENCH_NO_COLL, or the ishmem headers lack ISHMEM_HAVE_DEVICE_COLLECTIVES)");
#endif
    return 0;
}

/* -------------------------------------------------------------- driver */
static const char *const ALL_OPS[] = {"putmem_nbi", "getmem_nbi", "p", "putmem_quiet", "g", "fetch_add",
                                      "compare_swap", "put_signal", "barrier_all", "putmem_on_queue",
                                      "putmem_on_queue_lat", "putmem_on_queue_pipelined",
                                      "barrier_all_on_queue", "putmem_blocking", "broadcast", "fcollect",
                                      "alltoall", "sum_reduce", "team_sync", "broadcast_on_queue",
                                      "fcollect_on_queue", "alltoall_on_queue", "sum_reduce_on_queue",
                                      "team_sync_on_queue"};

static void sanitize(char *s) {
    for (; *s; s++)
        if (*s == ',' || *s == '\n' || *s == '"' || *s == ' ') *s = '_';
}

static int reap_children(int rc);

/* every PE: leave together (after a failure too) */
static void finish(int rc) {
    CK(cudaDeviceSynchronize());
    ishmem_barrier_all();
    ishmem_finalize();
    fflush(stdout);
    exit(reap_children(rc));
}

static std::vector<size_t> bw_sizes() {
    std::vector<size_t> s;
    if (g_o.quick) s = {4096, 65536, (size_t)1 << 20, (size_t)16 << 20};
    else
        for (size_t n = 4096; n <= ((size_t)1 << 30); n *= 4) s.push_back(n); /* 4 KiB .. 1 GiB, x4 */
    std::vector<size_t> out;
    for (size_t n : s)
        if (n <= g_o.max_bytes) out.push_back(n);
    return out;
}

static std::vector<int> bw_grids() {
    std::vector<int> all = g_o.quick ? std::vector<int>{1, 32} : std::vector<int>{1, 8, 32, 132};
    if (g_o.grids.empty()) return all;
    std::vector<int> out;
    for (size_t p = 0; p <= g_o.grids.size();) {
        size_t e = g_o.grids.find(',', p);
        if (e == std::string::npos) e = g_o.grids.size();
        int g = atoi(g_o.grids.substr(p, e - p).c_str());
        if (g > 0) out.push_back(g);
        p = e + 1;
    }
    return out;
}

static int run_pe(int rank, int nranks, const ishmemx_uniqueid_t *uid) {
    g_me = rank;
    g_inject = getenv("BENCH_INJECT_FAULT");
    if (g_inject && !*g_inject) g_inject = NULL;
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1) {
        note("no CUDA device");
        return 3;
    }
    CK(cudaSetDevice(rank % ndev)); /* before init */
    note("rank %d/%d on GPU %d of %d: initialising", rank, nranks, rank % ndev, ndev);
    double t_init = now_s();
    ishmemx_attr_t attr = ISHMEMX_ATTR_INITIALIZER;
    attr.use_uid = true;
    attr.uid = uid;
    attr.rank = rank;
    attr.nranks = nranks;
    ishmemx_init_attr(&attr);
    g_me = ishmem_my_pe();
    g_npes = ishmem_n_pes();
    note("initialised in %.2f s (pe %d of %d)", now_s() - t_init, g_me, g_npes);
    g_tgt = g_npes == 1 ? 0 : 1;
    if (g_npes == 1) note("one PE: every row targets PE 0 itself (the one-GPU side-by-side mode)");

    /* symmetric allocations: same order and sizes on every PE */
    A = (char *)ishmem_malloc(g_buf);
    B = (char *)ishmem_malloc(g_buf);
    g_ctl = (int *)ishmem_malloc(sizeof(int));
    g_flag = (int *)ishmem_malloc(sizeof(int));
    g_done = (int *)ishmem_malloc(sizeof(int));
    ibuf = (int *)ishmem_malloc(sizeof(int));
    u8dst = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    u8src = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    u8tmp = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    chain = (int *)ishmem_malloc(sizeof(int) * CHAIN_N);
    ctr = (uint64_t *)ishmem_malloc(2 * sizeof(uint64_t));
    sig = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    pp_s = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    pp_r = (uint64_t *)ishmem_malloc(sizeof(uint64_t));
    bslot = (int *)ishmem_malloc(sizeof(int) * (size_t)g_npes);
    if (!A || !B || !g_ctl || !g_flag || !g_done || !ibuf || !u8dst || !u8src || !u8tmp || !chain || !ctr ||
        !sig || !pp_s || !pp_r || !bslot) {
        note("ishmem_malloc failed (2 buffers of %zu MiB; %s=%s)", g_buf >> 20, BENCH_HEAP_ENV,
             getenv(BENCH_HEAP_ENV) ? getenv(BENCH_HEAP_ENV) : "(unset)");
        _exit(3);
    }
    CK(cudaMalloc(&dres, 4 * sizeof(unsigned long long)));
    CK(cudaMalloc(&dint, sizeof(int)));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaEventCreate(&ev0));
    CK(cudaEventCreate(&ev1));
    CK(cudaMemset(g_ctl, 0, sizeof(int)));
    CK(cudaMemset(g_flag, 0, sizeof(int)));
    CK(cudaMemset(g_done, 0, sizeof(int)));
    CK(cudaMemset(ibuf, 0, sizeof(int)));
    CK(cudaMemset(u8dst, 0, 8));
    CK(cudaMemset(u8src, 0, 8));
    CK(cudaMemset(ctr, 0, 16));
    CK(cudaMemset(sig, 0, 8));
    CK(cudaMemset(pp_s, 0, 8));
    CK(cudaMemset(pp_r, 0, 8));
    CK(cudaMemset(bslot, 0, sizeof(int) * (size_t)g_npes));
    /* chain: one random cycle over CHAIN_N slots (Sattolo), same on every PE */
    {
        std::vector<int> perm(CHAIN_N);
        for (int i = 0; i < CHAIN_N; i++) perm[i] = i;
        uint64_t s = 0xC0FFEEull;
        for (int i = CHAIN_N - 1; i > 0; i--) {
            s = mix64(s + 1);
            int j = (int)(s % (uint64_t)i);
            std::swap(perm[i], perm[j]);
        }
        chain_host.assign(CHAIN_N, 0);
        for (int i = 0; i < CHAIN_N; i++) chain_host[perm[i]] = perm[(i + 1) % CHAIN_N];
        CK(cudaMemcpy(chain, chain_host.data(), sizeof(int) * CHAIN_N, cudaMemcpyHostToDevice));
    }
    CK(cudaDeviceSynchronize());
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
    if (!backend || !*backend) backend = "cuda";
#endif
    const char *m = getenv("BENCH_MACHINE");
    if (m && *m) snprintf(g_machine, sizeof g_machine, "%s", m);
    else {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, rank % ndev));
        snprintf(g_machine, sizeof g_machine, "%.100s-x%d", prop.name, ndev);
    }
    sanitize(g_machine);
    char be[64];
    snprintf(be, sizeof be, "%s", backend);
    sanitize(be);
    snprintf(g_prefix, sizeof g_prefix, "%s,%s,%s", BENCH_LIB, version, be);
    if (g_me == 0 && g_o.header) {
        fprintf(g_csv, "lib,version,backend,op,scope,npes,bytes,iters,value,unit,machine\n");
        fflush(g_csv);
    }

    /* ---- phase A: one-sided rows, PE 0 alone; the others wait (below) */
    double t_a = now_s();
    if (g_me == 0) {
        std::vector<BwRow> rows;
        const std::vector<size_t> sizes = bw_sizes();
        const std::vector<int> grids = bw_grids();
        for (int put = 1; put >= 0; put--) {
            if (!list_has(g_o.ops, put ? "putmem_nbi" : "getmem_nbi")) continue;
            for (int sc : {SC_BLOCK, SC_WARP, SC_THREAD}) {
                if (!list_has(g_o.scopes, SCOPE_NAME[sc])) continue;
                for (int g : grids)
                    for (size_t n : sizes)
                        if (sc != SC_THREAD || n <= THREAD_MAX_BYTES) rows.push_back({put != 0, sc, g, n});
            }
        }
#ifndef BENCH_NO_QUEUE
        if (list_has(g_o.ops, "putmem_on_queue"))
            for (size_t n : sizes) rows.push_back({true, -1, 0, n});
#endif
        note("phase A: %zu bandwidth rows + latency rows", rows.size());
        for (const BwRow &r : rows) {
            run_bw(r);
            if (g_fail_local) break;
        }
        if (!g_fail_local && list_has(g_o.ops, "p")) run_lat_p();
        if (!g_fail_local && list_has(g_o.ops, "putmem_quiet")) run_lat_putmem_quiet();
        if (!g_fail_local && list_has(g_o.ops, "g")) run_lat_g();
        if (!g_fail_local && list_has(g_o.ops, "fetch_add")) run_lat_amo(false);
        if (!g_fail_local && list_has(g_o.ops, "compare_swap")) run_lat_amo(true);
#ifndef BENCH_NO_QUEUE
        if (!g_fail_local && list_has(g_o.ops, "putmem_on_queue_lat")) run_queue_small(false);
        if (!g_fail_local && list_has(g_o.ops, "putmem_on_queue_pipelined")) run_queue_small(true);
#endif
        if (!g_fail_local && list_has(g_o.ops, "putmem_blocking")) run_host_putmem();
#ifndef BENCH_PEER_NVSHMEM
        if (list_has(g_o.scopes, "host")) {
            if (list_has(g_o.ops, "putmem_nbi"))
                for (size_t n : sizes)
                    if (!g_fail_local) run_host_bw(n);
            if (!g_fail_local && list_has(g_o.ops, "p")) run_host_lat_p();
            if (!g_fail_local && list_has(g_o.ops, "putmem_quiet")) run_host_lat_putmem_quiet();
            if (!g_fail_local && list_has(g_o.ops, "g")) run_host_lat_g();
            if (!g_fail_local && list_has(g_o.ops, "fetch_add")) run_host_lat_amo(false);
            if (!g_fail_local && list_has(g_o.ops, "compare_swap")) run_host_lat_amo(true);
        }
#endif
        note("phase A done in %.1f s%s", now_s() - t_a, g_fail_local ? " (verification failed)" : "");
    }
    CK(cudaDeviceSynchronize());
    /* The other PEs wait for the end of phase A in a sleep/poll loop of this
     * program (as host_bench --target-wait=sleep), not in a library barrier
     * that would spin on their GPU and CPU for minutes. */
    if (g_me == 0) {
        for (int pe = 1; pe < g_npes; pe++) ishmem_int_p(g_done, 1, pe);
        ishmem_quiet();
    } else {
        int done = 0;
        while (!done) {
            usleep(2000);
            CK(cudaMemcpy(&done, g_done, sizeof done, cudaMemcpyDeviceToHost));
        }
    }
    if (bcast_int(g_fail_local ? 1 : 0)) finish(1);

    /* ---- phase B: rows every PE takes part in */
    double t_b = now_s();
    if (list_has(g_o.ops, "put_signal") && run_put_signal()) finish(1);
    if (list_has(g_o.ops, "barrier_all") && run_barrier_all()) finish(1);
#ifndef BENCH_PEER_NVSHMEM
    if (list_has(g_o.scopes, "host")) {
        if (list_has(g_o.ops, "put_signal") && run_host_put_signal()) finish(1);
        if (list_has(g_o.ops, "barrier_all") && run_host_barrier_all()) finish(1);
    }
#endif
#ifndef BENCH_NO_QUEUE
    if (list_has(g_o.ops, "barrier_all_on_queue") && run_barrier_all_on_queue()) finish(1);
#endif
    if (run_collectives()) finish(1);
    if (g_me == 0) note("phase B done in %.1f s", now_s() - t_b);

    CK(cudaDeviceSynchronize());
    ishmem_barrier_all();
    ishmem_free(bslot);
    ishmem_free(pp_r);
    ishmem_free(pp_s);
    ishmem_free(sig);
    ishmem_free(ctr);
    ishmem_free(chain);
    ishmem_free(u8tmp);
    ishmem_free(u8src);
    ishmem_free(u8dst);
    ishmem_free(ibuf);
    ishmem_free(g_done);
    ishmem_free(g_flag);
    ishmem_free(g_ctl);
    ishmem_free(B);
    ishmem_free(A);
    CK(cudaFree(dres));
    CK(cudaFree(dint));
    ishmem_finalize();
    return 0;
}

/* ------------------------------------------------------ process model */
#define MAX_PES 8
static volatile sig_atomic_t g_parent_done;
static pid_t g_child[MAX_PES];
static volatile int g_child_status[MAX_PES];
static volatile sig_atomic_t g_child_reaped[MAX_PES];
static int g_nchildren; /* > 0 only in the fork-mode parent */

/* A PE that dies (signal, CUDA error: status >= 2) leaves the others in a
 * barrier for ever: the parent (PE 0) gives up at once instead. */
static void on_sigchld(int) {
    int saved = errno, stt;
    for (int i = 1; i <= g_nchildren; i++) { /* our children only: never reap a library's */
        if (g_child_reaped[i] || waitpid(g_child[i], &stt, WNOHANG) != g_child[i]) continue;
        g_child_status[i] = stt;
        g_child_reaped[i] = 1;
        if (!g_parent_done && (WIFSIGNALED(stt) || (WIFEXITED(stt) && WEXITSTATUS(stt) >= 2))) {
            static const char msg[] = "gpu_bench: a child PE died (signal or exit status >= 2); giving up\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
            _exit(5);
        }
    }
    errno = saved;
}

static void usage() {
    fprintf(stderr,
            "usage: gpu_bench [--quick] [--ops a,b,...] [--scopes thread,warp,block,host]\n"
            "                 [--grids 1,8,32,132] [--reps N] [--target-ms X] [--max-bytes N]\n"
            "                 [--coll-sizes 8,4096,...] [--no-header]\n"
            "ops:");
    for (const char *op : ALL_OPS) fprintf(stderr, " %s", op);
    fprintf(stderr, "\nenv: NPES (fork mode, 1..8, default 2) or RANK/NRANKS/UID_FILE (launcher mode)\n");
}

int main(int argc, char **argv) {
    bool bad_args = false, reps_set = false, target_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--quick")) g_o.quick = 1;
        else if (!strcmp(a, "--no-header")) g_o.header = 0;
        else if (!strcmp(a, "--ops") && more) g_o.ops = argv[++i];
        else if (!strcmp(a, "--scopes") && more) g_o.scopes = argv[++i];
        else if (!strcmp(a, "--grids") && more) g_o.grids = argv[++i];
        else if (!strcmp(a, "--coll-sizes") && more) g_o.coll_sizes = argv[++i];
        else if (!strcmp(a, "--reps") && more) { g_o.reps = atoi(argv[++i]); reps_set = true; }
        else if (!strcmp(a, "--target-ms") && more) { g_o.target_s = atof(argv[++i]) * 1e-3; target_set = true; }
        else if (!strcmp(a, "--max-bytes") && more) g_o.max_bytes = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
        else { fprintf(stderr, "gpu_bench: unknown argument %s\n", a); bad_args = true; }
    }
    if (g_o.quick) {
        if (!reps_set) g_o.reps = 5;
        if (!target_set) g_o.target_s = 1e-3;
    }
    for (const std::string *l : {&g_o.ops, &g_o.scopes}) {
        for (size_t p = 0; !l->empty() && p <= l->size();) {
            size_t e = l->find(',', p);
            if (e == std::string::npos) e = l->size();
            std::string item = l->substr(p, e - p);
            bool known = false;
            if (l == &g_o.ops) {
                for (const char *op : ALL_OPS) known |= item == op;
            } else {
                for (const char *sc : SCOPE_NAME) known |= item == sc;
                known |= item == "host";
            }
            if (!known) { fprintf(stderr, "gpu_bench: unknown name '%s'\n", item.c_str()); bad_args = true; }
            p = e + 1;
        }
    }
    if (g_o.reps < 1 || g_o.target_s <= 0 || g_o.max_bytes < 4096) bad_args = true;
    if (bad_args) {
        usage();
        return 2;
    }

    /* The CSV keeps the original stdout; fd 1 becomes stderr, so that whatever
     * a library prints on stdout (in any PE) lands in the log, not the CSV. */
    fflush(stdout);
    int csv_fd = dup(1);
    g_csv = csv_fd >= 0 ? fdopen(csv_fd, "w") : NULL;
    if (!g_csv || dup2(2, 1) < 0) {
        fprintf(stderr, "gpu_bench: cannot set up the CSV output\n");
        return 3;
    }

    /* buffers: the rotation span or the largest size, whichever is larger */
    g_buf = ROT_BYTES;
    for (size_t n : bw_sizes()) g_buf = std::max(g_buf, n);
    char heap[64];
    snprintf(heap, sizeof heap, "%zuM", (2 * g_buf >> 20) + 256);
    setenv(BENCH_HEAP_ENV, heap, 0); /* a value set by the caller wins */
    BENCH_BEFORE_INIT();

    ishmemx_uniqueid_t uid;
    memset(&uid, 0, sizeof uid);
    const char *r = getenv("RANK");
    if (r) { /* launcher mode: the id goes through a file */
        int rank = atoi(r), n = getenv("NRANKS") ? atoi(getenv("NRANKS")) : 0;
        const char *f = getenv("UID_FILE");
        if (n < 1 || !f) {
            fprintf(stderr, "gpu_bench: launcher mode needs NRANKS >= 1 and UID_FILE\n");
            return 2;
        }
        std::string tmp = std::string(f) + ".tmp";
        if (rank == 0) {
            if (ishmemx_get_uniqueid(&uid) != 0) { fprintf(stderr, "gpu_bench: get_uniqueid failed\n"); return 3; }
            FILE *fp = fopen(tmp.c_str(), "wb");
            if (!fp || fwrite(&uid, sizeof uid, 1, fp) != 1) return 3;
            fclose(fp);
            if (rename(tmp.c_str(), f)) return 3;
        } else {
            FILE *fp;
            while (!(fp = fopen(f, "rb"))) usleep(10000);
            size_t got = fread(&uid, sizeof uid, 1, fp);
            fclose(fp);
            if (got != 1) return 3;
        }
        return run_pe(rank, n, &uid);
    }

    /* fork mode: children are made before any CUDA call; pipes carry the id */
    int n = getenv("NPES") ? atoi(getenv("NPES")) : 2;
    if (n < 1 || n > MAX_PES) {
        fprintf(stderr, "gpu_bench: NPES must be 1..%d\n", MAX_PES);
        return 2;
    }
    fflush(stdout);
    fflush(stderr);
    int p[MAX_PES][2];
    for (int i = 1; i < n; i++)
        if (pipe(p[i])) return 3;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld, old_mask;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old_mask); /* until g_child[] is filled in */
    pid_t parent = getpid();
    for (int i = 1; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) return 3;
        if (pid == 0) { /* child: rank i */
            g_nchildren = 0;
            signal(SIGCHLD, SIG_DFL);
            sigprocmask(SIG_SETMASK, &old_mask, NULL);
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* die with the parent (timeouts) */
            if (getppid() != parent) _exit(3);
            for (int k = 1; k < n; k++) close(p[k][1]);
            if (read(p[i][0], &uid, sizeof uid) != (ssize_t)sizeof uid) _exit(3);
            fflush(stdout);
            _exit(run_pe(i, n, &uid));
        }
        g_child[i] = pid;
        g_nchildren = i;
        close(p[i][0]);
    }
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (ishmemx_get_uniqueid(&uid) != 0) { /* rank 0 (the parent) */
        fprintf(stderr, "gpu_bench: get_uniqueid failed\n");
        return 3;
    }
    for (int i = 1; i < n; i++)
        if (write(p[i][1], &uid, sizeof uid) != (ssize_t)sizeof uid) return 3;
    return reap_children(run_pe(0, n, &uid));
}

/* fork-mode parent: wait for the children; the worst exit status wins */
static int reap_children(int rc) {
    g_parent_done = 1;
    for (int i = 1; i <= g_nchildren; i++) {
        int stt = 0;
        if (!g_child_reaped[i]) {
            while (waitpid(g_child[i], &stt, 0) < 0 && errno == EINTR) {
            }
            if (!g_child_reaped[i]) g_child_status[i] = stt;
        }
        stt = g_child_status[i];
        int crc = WIFEXITED(stt) ? WEXITSTATUS(stt) : 128 + (WIFSIGNALED(stt) ? WTERMSIG(stt) : 0);
        if (crc > rc) rc = crc;
    }
    return rc;
}
