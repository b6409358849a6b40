/* coll_ops.cu: teams and collectives on the CUDA backend, in every form: host (on the GPU
 * heap), device (one thread), work-group (a block and a warp), and on a queue (a CUDA stream),
 * over the world team and a strided team. Each operation's result is checked on every member
 * against values computed here. Then every typed _on_queue collective name (X-macro lists of
 * tests/c/gen_types.h) and every typed device reduction/broadcast name runs once on one
 * element, its result checked.
 * Build: nvcc -std=c++17 -arch=sm_90 coll_ops.cu $(pkg-config --cflags --libs ishmem) */
#include <ishmem.h>
#include <ishmemx.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../c/gen_types.h"
#include "gpu_test.h"

namespace cg = cooperative_groups;

#define N 64 /* elements per PE */
enum form { F_HOST, F_THREAD, F_BLOCK, F_WARP, F_QUEUE, F_COUNT };
static const char *form_name[] = {"host", "thread", "block", "warp", "queue"};
enum op {
    OP_SYNC, OP_BCAST, OP_BCASTMEM, OP_FCOLLECT, OP_COLLECTMEM, OP_ALLTOALL, OP_SUM, OP_MAX, OP_XOR, OP_PROD,
    OP_INSCAN, OP_EXSCAN, OP_SUM_INPLACE, OP_SUM_WORLD_NOTEAM, OP_COUNT
};
static const char *op_name[] = {"team_sync", "long_broadcast", "broadcastmem", "int_fcollect", "collectmem",
                                "int64_alltoall", "int_sum_reduce", "double_max_reduce", "uint64_xor_reduce",
                                "double_prod_reduce", "int_sum_inscan", "int_sum_exscan", "int_sum_reduce(in place)",
                                "int_sum_reduce(no team)"};

static int me, npes;
static cudaStream_t q;
static char *sdst, *ssrc; /* symmetric, N * 8 * npes bytes each */
static int *drc;          /* device: return codes */

/* Source value of team PE i, element e, per op (small, exact in double). */
static long val(int i, int e) { return (long)((i + 1) * 3 + e % 7); }

/* One collective, in form f, by the calling thread / group. */
template <class G>
__device__ int dev_op(const G &g, int f, int op, ishmem_team_t t, char *dst, const char *src, size_t n, int root) {
    switch (op) {
    case OP_SYNC:
        return f == F_THREAD ? ishmem_team_sync(t) : ishmemx_team_sync_work_group(t, g);
    case OP_BCAST:
        return f == F_THREAD ? ishmem_long_broadcast(t, (long *)dst, (const long *)src, n, root)
                             : ishmemx_long_broadcast_work_group(t, (long *)dst, (const long *)src, n, root, g);
    case OP_BCASTMEM:
        return f == F_THREAD ? ishmem_broadcastmem(t, dst, src, n * 8, root)
                             : ishmemx_broadcastmem_work_group(t, dst, src, n * 8, root, g);
    case OP_FCOLLECT:
        return f == F_THREAD ? ishmem_int_fcollect(t, (int *)dst, (const int *)src, n)
                             : ishmemx_int_fcollect_work_group(t, (int *)dst, (const int *)src, n, g);
    case OP_COLLECTMEM: {
        size_t mine = 8 * (size_t)(ishmem_team_my_pe(t) + 1);
        return f == F_THREAD ? ishmem_collectmem(t, dst, src, mine) : ishmemx_collectmem_work_group(t, dst, src, mine, g);
    }
    case OP_ALLTOALL:
        return f == F_THREAD ? ishmem_int64_alltoall(t, (int64_t *)dst, (const int64_t *)src, n)
                             : ishmemx_int64_alltoall_work_group(t, (int64_t *)dst, (const int64_t *)src, n, g);
    case OP_SUM:
        return f == F_THREAD ? ishmem_int_sum_reduce(t, (int *)dst, (const int *)src, n)
                             : ishmemx_int_sum_reduce_work_group(t, (int *)dst, (const int *)src, n, g);
    case OP_MAX:
        return f == F_THREAD ? ishmem_double_max_reduce(t, (double *)dst, (const double *)src, n)
                             : ishmemx_double_max_reduce_work_group(t, (double *)dst, (const double *)src, n, g);
    case OP_XOR:
        return f == F_THREAD ? ishmem_uint64_xor_reduce(t, (uint64_t *)dst, (const uint64_t *)src, n)
                             : ishmemx_uint64_xor_reduce_work_group(t, (uint64_t *)dst, (const uint64_t *)src, n, g);
    case OP_PROD:
        return f == F_THREAD ? ishmem_double_prod_reduce(t, (double *)dst, (const double *)src, n)
                             : ishmemx_double_prod_reduce_work_group(t, (double *)dst, (const double *)src, n, g);
    case OP_INSCAN:
        return f == F_THREAD ? ishmem_int_sum_inscan(t, (int *)dst, (const int *)src, n)
                             : ishmemx_int_sum_inscan_work_group(t, (int *)dst, (const int *)src, n, g);
    case OP_EXSCAN:
        return f == F_THREAD ? ishmem_int_sum_exscan(t, (int *)dst, (const int *)src, n)
                             : ishmemx_int_sum_exscan_work_group(t, (int *)dst, (const int *)src, n, g);
    case OP_SUM_INPLACE:
        return f == F_THREAD ? ishmem_int_sum_reduce(t, (int *)src, (const int *)src, n)
                             : ishmemx_int_sum_reduce_work_group(t, (int *)src, (const int *)src, n, g);
    default: /* the team-less spelling: the world team */
        return f == F_THREAD ? ishmem_int_sum_reduce((int *)dst, (const int *)src, n)
                             : ishmemx_int_sum_reduce_work_group((int *)dst, (const int *)src, n, g);
    }
}

__global__ void k_op(int f, int op, ishmem_team_t t, char *dst, const char *src, size_t n, int root, int *rc) {
    auto blk = cg::this_thread_block();
    int r;
    if (f == F_BLOCK) r = dev_op(blk, f, op, t, dst, src, n, root);
    else if (f == F_WARP) r = dev_op(cg::tiled_partition<32>(blk), f, op, t, dst, src, n, root);
    else r = dev_op(blk, f, op, t, dst, src, n, root);
    if (threadIdx.x == 0) *rc = r;
}

static int host_op(int f, int op, ishmem_team_t t, char *dst, const char *src, size_t n, int root, int mine) {
    if (f == F_HOST) {
        switch (op) {
        case OP_SYNC: return ishmem_team_sync(t);
        case OP_BCAST: return ishmem_long_broadcast(t, (long *)dst, (const long *)src, n, root);
        case OP_BCASTMEM: return ishmem_broadcastmem(t, dst, src, n * 8, root);
        case OP_FCOLLECT: return ishmem_int_fcollect(t, (int *)dst, (const int *)src, n);
        case OP_COLLECTMEM: return ishmem_collectmem(t, dst, src, 8 * (size_t)(mine + 1));
        case OP_ALLTOALL: return ishmem_int64_alltoall(t, (int64_t *)dst, (const int64_t *)src, n);
        case OP_SUM: return ishmem_int_sum_reduce(t, (int *)dst, (const int *)src, n);
        case OP_MAX: return ishmem_double_max_reduce(t, (double *)dst, (const double *)src, n);
        case OP_XOR: return ishmem_uint64_xor_reduce(t, (uint64_t *)dst, (const uint64_t *)src, n);
        case OP_PROD: return ishmem_double_prod_reduce(t, (double *)dst, (const double *)src, n);
        case OP_INSCAN: return ishmem_int_sum_inscan(t, (int *)dst, (const int *)src, n);
        case OP_EXSCAN: return ishmem_int_sum_exscan(t, (int *)dst, (const int *)src, n);
        case OP_SUM_INPLACE: return ishmem_int_sum_reduce(t, (int *)src, (const int *)src, n);
        default: return ishmem_int_sum_reduce((int *)dst, (const int *)src, n);
        }
    }
    if (f == F_QUEUE) {
        switch (op) {
        case OP_SYNC: ishmemx_team_sync_on_queue(t, drc, q); break;
        case OP_BCAST: ishmemx_long_broadcast_on_queue(t, (long *)dst, (const long *)src, n, root, drc, q); break;
        case OP_BCASTMEM: ishmemx_broadcastmem_on_queue(t, dst, src, n * 8, root, drc, q); break;
        case OP_FCOLLECT: ishmemx_int_fcollect_on_queue(t, (int *)dst, (const int *)src, n, drc, q); break;
        case OP_COLLECTMEM: ishmemx_collectmem_on_queue(t, dst, src, 8 * (size_t)(mine + 1), drc, q); break;
        case OP_ALLTOALL: ishmemx_int64_alltoall_on_queue(t, (int64_t *)dst, (const int64_t *)src, n, drc, q); break;
        case OP_SUM: ishmemx_int_sum_reduce_on_queue(t, (int *)dst, (const int *)src, n, drc, q); break;
        case OP_MAX: ishmemx_double_max_reduce_on_queue(t, (double *)dst, (const double *)src, n, drc, q); break;
        case OP_XOR: ishmemx_uint64_xor_reduce_on_queue(t, (uint64_t *)dst, (const uint64_t *)src, n, drc, q); break;
        case OP_PROD: ishmemx_double_prod_reduce_on_queue(t, (double *)dst, (const double *)src, n, drc, q); break;
        case OP_INSCAN: ishmemx_int_sum_inscan_on_queue(t, (int *)dst, (const int *)src, n, drc, q); break;
        case OP_EXSCAN: ishmemx_int_sum_exscan_on_queue(t, (int *)dst, (const int *)src, n, drc, q); break;
        case OP_SUM_INPLACE: ishmemx_int_sum_reduce_on_queue(t, (int *)src, (const int *)src, n, drc, q); break;
        default: ishmemx_int_sum_reduce_on_queue((int *)dst, (const int *)src, n, drc, q); break;
        }
        CHECK(cudaStreamSynchronize(q) == cudaSuccess, "queue %s: %s", op_name[op], cudaGetErrorString(cudaGetLastError()));
        int rc = -1;
        cudaMemcpy(&rc, drc, sizeof rc, cudaMemcpyDeviceToHost);
        return rc;
    }
    int threads = f == F_THREAD ? 1 : f == F_WARP ? 32 : 256;
    k_op<<<1, threads>>>(f, op, t, dst, src, n, root, drc);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "kernel %s %s: %s", form_name[f], op_name[op],
          cudaGetErrorString(cudaGetLastError()));
    int rc = -1;
    cudaMemcpy(&rc, drc, sizeof rc, cudaMemcpyDeviceToHost);
    return rc;
}

/* Fills this PE's source for op as team PE i; zeroes the destination. */
static void fill(int op, int i, int size) {
    static char h[N * 8 * 64];
    size_t bytes = (size_t)N * 8 * (size_t)size;
    memset(h, 0, bytes);
    for (int e = 0; e < N * size; e++) {
        long v = val(i, e);
        switch (op) {
        case OP_BCAST: case OP_BCASTMEM: ((long *)h)[e] = v * 1000 + i; break;
        case OP_ALLTOALL: ((int64_t *)h)[e] = (int64_t)i * 100000 + e; break;
        case OP_MAX: ((double *)h)[e] = (double)((v * 37 + i * 11) % 101) - 50.5; break;
        case OP_XOR: ((uint64_t *)h)[e] = (uint64_t)v * 0x9E3779B97F4A7C15ull; break;
        case OP_PROD: ((double *)h)[e] = (e + i) % 3 == 0 ? 2.0 : 0.5 + (double)i; break;
        case OP_COLLECTMEM: ((long *)h)[e] = (long)i * 1000 + e; break;
        default: ((int *)h)[e] = (int)v - 4; break;
        }
    }
    cudaMemcpy(ssrc, h, bytes, cudaMemcpyHostToDevice);
    cudaMemset(sdst, 0, bytes);
    cudaDeviceSynchronize();
}

/* Checks this PE's destination (team PE i of size PEs) after op. */
static void verify(int op, int f, int i, int size, const char *team) {
    static char h[N * 8 * 64];
    const char *buf = op == OP_SUM_INPLACE ? ssrc : sdst;
    cudaMemcpy(h, buf, (size_t)N * 8 * (size_t)size, cudaMemcpyDeviceToHost);
    long bad = 0;
    for (int e = 0; e < N; e++) {
        switch (op) {
        case OP_SYNC: return;
        case OP_BCAST: case OP_BCASTMEM: bad += ((long *)h)[e] != val(0, e) * 1000 + 0; break;
        case OP_FCOLLECT:
            for (int p = 0; p < size; p++) bad += ((int *)h)[p * N + e] != (int)val(p, e) - 4;
            break;
        case OP_COLLECTMEM: {
            /* PE p contributed (p + 1) longs: its first p + 1 elements. */
            if (e == 0) {
                int at = 0;
                for (int p = 0; p < size; p++)
                    for (int k = 0; k <= p; k++, at++) bad += ((long *)h)[at] != (long)p * 1000 + k;
            }
            break;
        }
        case OP_ALLTOALL:
            for (int p = 0; p < size; p++) bad += ((int64_t *)h)[p * N + e] != (int64_t)p * 100000 + i * N + e;
            break;
        case OP_MAX: {
            double m = -1e300;
            for (int p = 0; p < size; p++) m = fmax(m, (double)((val(p, e) * 37 + p * 11) % 101) - 50.5);
            bad += ((double *)h)[e] != m;
            break;
        }
        case OP_XOR: {
            uint64_t x = 0;
            for (int p = 0; p < size; p++) x ^= (uint64_t)val(p, e) * 0x9E3779B97F4A7C15ull;
            bad += ((uint64_t *)h)[e] != x;
            break;
        }
        case OP_PROD: {
            double x = 1;
            for (int p = 0; p < size; p++) x *= (e + p) % 3 == 0 ? 2.0 : 0.5 + (double)p;
            bad += fabs(((double *)h)[e] - x) > 1e-9 * fabs(x);
            break;
        }
        default: {
            int s = 0, upto = op == OP_INSCAN ? i + 1 : op == OP_EXSCAN ? i : size;
            for (int p = 0; p < upto; p++) s += (int)val(p, e) - 4;
            bad += ((int *)h)[e] != s;
            break;
        }
        }
    }
    CHECK(bad == 0, "%s %s on team %s: %ld wrong elements (team PE %d of %d)", form_name[f], op_name[op], team, bad, i,
          size);
}

/* COLL_OPS_TRACE=1: each PE prints every call it starts and how long the previous one took
 * (stderr), so that a run that stalls shows where and a slow one shows what costs. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run_team(ishmem_team_t t, const char *tname) {
    int i = ishmem_team_my_pe(t), size = ishmem_team_n_pes(t);
    if (i < 0) return; /* not a member */
    const char *tr = getenv("COLL_OPS_TRACE");
    int trace = tr && *tr && strcmp(tr, "0");
    double t0 = now_s(), last = t0;
    for (int f = 0; f < F_COUNT; f++)
        for (int op = 0; op < OP_COUNT; op++) {
            if (op == OP_SUM_WORLD_NOTEAM && t != ISHMEM_TEAM_WORLD) continue;
            if (trace) {
                double n = now_s();
                fprintf(stderr, "coll_ops trace: PE %d: %s %s on team %s at %.3f s (previous %.3f s)\n", gt_me,
                        form_name[f], op_name[op], tname, n - t0, n - last);
                last = n;
            }
            fill(op, i, size);
            ishmem_team_sync(t);
            int rc = host_op(f, op, t, sdst, ssrc, N, 0, i);
            CHECK(rc == 0, "%s %s on team %s returned %d", form_name[f], op_name[op], tname, rc);
            ishmem_team_sync(t);
            verify(op, f, i, size, tname);
        }
}

/* Device-side team queries. */
__global__ void k_query(ishmem_team_t t, int *out) {
    out[0] = ishmem_team_my_pe(t);
    out[1] = ishmem_team_n_pes(t);
    out[2] = ishmem_team_translate_pe(t, 0, ISHMEM_TEAM_WORLD);
    out[3] = ishmem_team_my_pe(ISHMEM_TEAM_INVALID);
}

/* ---- every typed name once, one element, values 1 on every PE ---- */
#define ALL_TYPED_DEVICE(TN, T)                                                                                        \
    do {                                                                                                               \
        T *d = (T *)dst, *s = (T *)src;                                                                                \
        s[0] = (T)1;                                                                                                   \
        bad += ishmem_##TN##_sum_reduce(ISHMEM_TEAM_WORLD, d, s, 1) != 0 || d[0] != (T)n;                            \
        bad += ishmem_##TN##_max_reduce(ISHMEM_TEAM_WORLD, d, s, 1) != 0 || d[0] != (T)1;                            \
        bad += ishmem_##TN##_broadcast(ISHMEM_TEAM_WORLD, d, s, 1, 0) != 0 || d[0] != (T)1;                          \
        bad += ishmemx_##TN##_sum_inscan_work_group(ISHMEM_TEAM_WORLD, d, s, 1, cg::this_thread_block()) != 0 ||     \
               d[0] != (T)(me + 1);                                                                                    \
    } while (0)

__global__ void k_all_typed(char *dst, char *src, int n, int me, int *bad_out) {
    int bad = 0;
#define X(TN, T) ALL_TYPED_DEVICE(TN, T);
    ISHT_COLL_TYPES(X)
#undef X
    *bad_out = bad;
}

#define ALL_TYPED_QUEUE(TN, T)                                                                                         \
    do {                                                                                                               \
        T one = (T)1, got[64];                                                                                         \
        cudaMemcpy(src, &one, sizeof one, cudaMemcpyHostToDevice);                                                     \
        ishmemx_##TN##_sum_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_sum_reduce", dst, got, sizeof(T), (T)npes);                                                      \
        ishmemx_##TN##_max_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_max_reduce", dst, got, sizeof(T), (T)1);                                                         \
        ishmemx_##TN##_min_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_min_reduce", dst, got, sizeof(T), (T)1);                                                         \
        ishmemx_##TN##_prod_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                  \
        check_q(#TN "_prod_reduce", dst, got, sizeof(T), (T)1);                                                        \
        ishmemx_##TN##_sum_inscan_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_sum_inscan", dst, got, sizeof(T), (T)(me + 1));                                                  \
        ishmemx_##TN##_sum_exscan_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_sum_exscan", dst, got, sizeof(T), (T)me);                                                        \
        ishmemx_##TN##_broadcast_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, 0, drc, q);                 \
        check_q(#TN "_broadcast", dst, got, sizeof(T), (T)1);                                                          \
        ishmemx_##TN##_fcollect_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                     \
        check_q(#TN "_fcollect", dst, got, sizeof(T), (T)1);                                                           \
        ishmemx_##TN##_collect_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                      \
        check_q(#TN "_collect", dst, got, sizeof(T), (T)1);                                                            \
        cudaMemcpy(src, &one, sizeof one, cudaMemcpyHostToDevice);                                                     \
        for (int p = 1; p < npes; p++) cudaMemcpy(src + p * sizeof(T), &one, sizeof one, cudaMemcpyHostToDevice);     \
        ishmemx_##TN##_alltoall_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                     \
        check_q(#TN "_alltoall", dst, got, sizeof(T), (T)1);                                                           \
    } while (0)

#define BIT_TYPED_QUEUE(TN, T)                                                                                         \
    do {                                                                                                               \
        T one = (T)1, got[64];                                                                                         \
        cudaMemcpy(src, &one, sizeof one, cudaMemcpyHostToDevice);                                                     \
        ishmemx_##TN##_and_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_and_reduce", dst, got, sizeof(T), (T)1);                                                         \
        ishmemx_##TN##_or_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                    \
        check_q(#TN "_or_reduce", dst, got, sizeof(T), (T)1);                                                          \
        ishmemx_##TN##_xor_reduce_on_queue(ISHMEM_TEAM_WORLD, (T *)dst, (const T *)src, 1, drc, q);                   \
        check_q(#TN "_xor_reduce", dst, got, sizeof(T), (T)(npes & 1));                                                \
    } while (0)

/* After a queue collective of one element per PE: every element of dst (npes of them for the
 * gathering ones, which all hold `want`) and the return code. */
template <class T> static void check_q_t(const char *what, char *dst, T *got, size_t es, T want) {
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "%s: stream", what);
    int rc = -1;
    cudaMemcpy(&rc, drc, sizeof rc, cudaMemcpyDeviceToHost);
    CHECK(rc == 0, "%s_on_queue returned %d", what, rc);
    cudaMemcpy(got, dst, es, cudaMemcpyDeviceToHost);
    CHECK(got[0] == want, "%s_on_queue: got %g, want %g", what, (double)got[0], (double)want);
    ishmem_barrier_all();
}
#define check_q(what, dst, got, es, want) check_q_t(what, dst, got, es, want)

/* sum and max over the team (world PEs start + stride * i, i < size) of L elements, checked
 * exactly; every PE of the job calls it for the world team, members for a split team. a, b: L
 * ints, x: L doubles, symmetric (allocated by every PE in main). */
#define L_LARGE (((size_t)1 << 20) + 3)
static void large_reductions(ishmem_team_t t, int start, int stride, int size, const char *team, int *a, int *b, double *x) {
    const size_t L = L_LARGE;
    int *h = (int *)malloc(L * sizeof(int));
    double *hx = (double *)malloc(L * sizeof(double));
    for (size_t e = 0; e < L; e++) {
        h[e] = (int)((e * 7 + (size_t)me * 13) % 1000) - 300;
        hx[e] = (double)((e * 31 + (size_t)me * 17) % 977) - 400.25;
    }
    cudaMemcpy(a, h, L * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(x, hx, L * sizeof(double), cudaMemcpyHostToDevice);
    cudaMemset(b, 0, L * sizeof(int));
    cudaDeviceSynchronize();
    ishmemx_int_sum_reduce_on_queue(t, b, a, L, drc, q);
    ishmemx_double_max_reduce_on_queue(t, x, x, L, drc, q);    /* in place */
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "large reductions (%s): %s", team, cudaGetErrorString(cudaGetLastError()));
    int rc = -1;
    cudaMemcpy(&rc, drc, sizeof rc, cudaMemcpyDeviceToHost);
    CHECK(rc == 0, "large reductions (%s) returned %d", team, rc);
    cudaMemcpy(h, b, L * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(hx, x, L * sizeof(double), cudaMemcpyDeviceToHost);
    size_t bad = 0, badx = 0;
    for (size_t e = 0; e < L; e++) {
        int want = 0;
        double wx = -1e300;
        for (int i = 0; i < size; i++) {
            size_t pe = (size_t)(start + stride * i);
            want += (int)((e * 7 + pe * 13) % 1000) - 300;
            double v = (double)((e * 31 + pe * 17) % 977) - 400.25;
            if (v > wx) wx = v;
        }
        bad += h[e] != want;
        badx += hx[e] != wx;
    }
    CHECK(bad == 0, "large int sum_reduce_on_queue (%s): %zu of %zu elements wrong", team, bad, L);
    CHECK(badx == 0, "large in-place double max_reduce_on_queue (%s): %zu of %zu elements wrong", team, badx, L);

    /* scans: inclusive out of place (a -> b), then exclusive in place (a) */
    int my = (me - start) / stride;
    ishmemx_int_sum_inscan_on_queue(t, b, a, L, drc, q);
    ishmemx_int_sum_exscan_on_queue(t, a, a, L, drc, q);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "large scans (%s): %s", team, cudaGetErrorString(cudaGetLastError()));
    rc = -1;
    cudaMemcpy(&rc, drc, sizeof rc, cudaMemcpyDeviceToHost);
    CHECK(rc == 0, "large scans (%s) returned %d", team, rc);
    int *hs = (int *)malloc(L * sizeof(int));
    cudaMemcpy(h, b, L * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(hs, a, L * sizeof(int), cudaMemcpyDeviceToHost);
    size_t badi = 0, bade = 0;
    for (size_t e = 0; e < L; e++) {
        int below = 0;
        for (int i = 0; i < my; i++) below += (int)((e * 7 + (size_t)(start + stride * i) * 13) % 1000) - 300;
        int mine = (int)((e * 7 + (size_t)me * 13) % 1000) - 300;
        badi += h[e] != below + mine;
        bade += hs[e] != below;
    }
    CHECK(badi == 0, "large int sum_inscan_on_queue (%s): %zu of %zu elements wrong", team, badi, L);
    CHECK(bade == 0, "large in-place int sum_exscan_on_queue (%s): %zu of %zu elements wrong", team, bade, L);
    free(hs);
    free(h);
    free(hx);
    ishmem_team_sync(t);
}

int main(void) {
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    gt_me = me;
    CHECK(npes <= 64, "at most 64 PEs");
    cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking);
    size_t bytes = (size_t)N * 8 * (size_t)npes;
    sdst = (char *)ishmem_malloc(bytes);
    ssrc = (char *)ishmem_malloc(bytes);
    CHECK(sdst && ssrc, "symmetric allocation");
    CHECK(cudaMalloc(&drc, sizeof(int)) == cudaSuccess, "cudaMalloc");

    /* a strided team: PEs 1, 3, ... with 4 PEs or more; all PEs (as a new team) otherwise */
    ishmem_team_t strided = ISHMEM_TEAM_INVALID;
    int start = npes >= 4 ? 1 : 0, stride = npes >= 4 ? 2 : 1, size = npes >= 4 ? npes / 2 : npes;
    int rc = ishmem_team_split_strided(ISHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &strided);
    CHECK(rc == 0, "split_strided returned %d", rc);
    int member = me >= start && (me - start) % stride == 0 && (me - start) / stride < size;
    CHECK((strided != ISHMEM_TEAM_INVALID) == member, "membership of the strided team");

    int *dq;
    cudaMallocManaged(&dq, 4 * sizeof(int));
    k_query<<<1, 1>>>(ISHMEM_TEAM_WORLD, dq);
    cudaDeviceSynchronize();
    CHECK(dq[0] == me && dq[1] == npes && dq[2] == 0 && dq[3] == -1, "device team queries on world: %d %d %d %d", dq[0],
          dq[1], dq[2], dq[3]);
    if (member) {
        k_query<<<1, 1>>>(strided, dq);
        cudaDeviceSynchronize();
        CHECK(dq[0] == (me - start) / stride && dq[1] == size && dq[2] == start,
              "device team queries on the strided team: %d %d %d", dq[0], dq[1], dq[2]);
    }

    run_team(ISHMEM_TEAM_WORLD, "world");
    ishmem_barrier_all();
    if (member) run_team(strided, "strided");
    ishmem_barrier_all();

    /* every typed device name (one thread), then every typed queue name */
    int *dbad;
    cudaMallocManaged(&dbad, sizeof(int));
    *dbad = -1;
    cudaMemset(ssrc, 0, bytes);
    cudaDeviceSynchronize();
    ishmem_barrier_all();
    k_all_typed<<<1, 1>>>(sdst, ssrc, npes, me, dbad);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "k_all_typed: %s", cudaGetErrorString(cudaGetLastError()));
    CHECK(*dbad == 0, "typed device collectives: %d wrong", *dbad);
    ishmem_barrier_all();
    {
        char *dst = sdst, *src = ssrc;
#define X(TN, T) ALL_TYPED_QUEUE(TN, T);
        ISHT_COLL_TYPES(X)
#undef X
#define X(TN, T) BIT_TYPED_QUEUE(TN, T);
        ISHT_REDUCE_BIT_TYPES(X)
#undef X
        /* the mem forms and team_sync on the queue */
        long one = 1;
        long got[64];
        cudaMemcpy(src, &one, sizeof one, cudaMemcpyHostToDevice);
        ishmemx_fcollectmem_on_queue(ISHMEM_TEAM_WORLD, dst, src, 8, drc, q);
        check_q("fcollectmem", dst, got, 8, 1L);
        ishmemx_alltoallmem_on_queue(ISHMEM_TEAM_WORLD, dst, src, 0, drc, q);
        check_q("alltoallmem(0 bytes)", dst, got, 8, 1L);
        ishmemx_team_sync_on_queue(ISHMEM_TEAM_WORLD, NULL, q);
        ishmemx_sync_all_on_queue(q);
        ishmemx_barrier_all_on_queue(q);
        CHECK(cudaStreamSynchronize(q) == cudaSuccess, "syncs on the queue");
    }

    /* Large reductions on the queue (the whole-GPU path from ISHMEM_QUEUE_REDUCE_SPLIT_MIN,
     * 256K by default): an odd length (uneven slices), out of place and in place, world and
     * strided team. */
    {
        int *a = (int *)ishmem_malloc(L_LARGE * sizeof(int));
        int *b = (int *)ishmem_malloc(L_LARGE * sizeof(int));
        double *x = (double *)ishmem_malloc(L_LARGE * sizeof(double));
        CHECK(a && b && x, "large symmetric buffers");
        if (a && b && x) {
            large_reductions(ISHMEM_TEAM_WORLD, 0, 1, npes, "world", a, b, x);
            ishmem_barrier_all();
            if (member) large_reductions(strided, start, stride, size, "strided", a, b, x);
        }
        ishmem_barrier_all();
        ishmem_free(x);
        ishmem_free(b);
        ishmem_free(a);
    }

    ishmem_barrier_all();
    if (strided != ISHMEM_TEAM_INVALID) ishmem_team_destroy(strided);
    ishmem_free(ssrc);
    ishmem_free(sdst);
    cudaFree(drc);
    int r = gpu_test_end("coll_ops");
    ishmem_finalize();
    return r;
}
