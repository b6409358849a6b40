/* proxy_ops.cu: the device API between PEs of different nodes, through the proxy ring
 * (issue 13). Run with the PEs split into pretend nodes (scripts/gpu-check.sh: 2 PEs as 2
 * nodes; 4 PEs as 2 nodes of 2, so each kernel also reaches a PE of its own node directly).
 * With one node it runs too (every call direct) and checks the same values.
 * Covers, from kernels, to the next PE and to the PE "across" (me + npes/2): putmem (blocking,
 * nbi + quiet, 1 MiB), getmem, int p/g, iput/iget (strided), AMOs (fetch_add, add, compare_swap,
 * swap, fetch, set, fetch_and/or/xor, float swap/fetch), 256 threads doing fetch_add at once
 * (ring contention: the count is exact), put_signal + signal_wait_until ping-pong between the
 * two nodes, fence, barrier_all from a kernel, block-scope put/get (one request per block),
 * a kernel mixing direct stores (node peer) and proxy puts (other node) under one quiet, and
 * ishmem_ptr NULL for a PE of another node. Then collectives from kernels, every kind (team
 * sync, broadcast, fcollect, collect, alltoall, min/and/or/prod/sum/max/xor reductions over
 * several element types, inclusive and exclusive scans, sync_all) in the plain and work_group
 * forms on the world team (through the proxy when it spans nodes) and the shared team (direct),
 * values checked in the kernel; and a reduction and a broadcast on a queue, 1 MiB each. The host
 * checks with the host API.
 * Build: nvcc -arch=sm_90 proxy_ops.cu $(pkg-config --cflags --libs ishmem) */
#include <cooperative_groups.h>
#include <ishmem.h>
#include <ishmemx.h>
#include "gpu_test.h"

namespace cg = cooperative_groups;

#define N 1024
#define BIG (1 << 20)

struct Bufs {
    int *data;      /* N ints */
    int *back;      /* N ints: gets land here (device memory) */
    int *strided;   /* 2N ints */
    long *ctr;      /* [0] fetch_add target, [1] add target, [2] cswap, [3] swap/fetch/set */
    uint64_t *bits; /* and/or/xor */
    float *fl;
    uint64_t *sig;  /* [0] ping, [1] pong */
    int *ping;      /* the ping-pong payload */
    char *big;      /* BIG bytes */
    char *bigsrc;   /* BIG bytes, device memory outside the heap */
    int *mixed;     /* 2 ints: [0] from the node peer (direct), [1] from the other node (proxy) */
    int *out;       /* results for the host (managed memory) */
};

__global__ void rma(Bufs b, int across) {
    int me = ishmem_my_pe();
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    int v[N];
    for (int i = 0; i < N; i++) v[i] = me * 10000 + i;
    ishmem_int_put(b.data, v, N, across);             /* blocking: v is reused at once */
    for (int i = 0; i < N; i++) v[i] = -1;
    ishmem_int_p(&b.data[N - 1], me * 10000 + 4242, across);
    ishmem_quiet();
    ishmem_putmem_nbi(b.big, b.bigsrc, BIG, across);   /* nbi: complete at quiet */
    ishmem_quiet();
    /* strided: every other int of strided gets v[i] */
    int w[N / 2];
    for (int i = 0; i < N / 2; i++) w[i] = me * 100 + i;
    ishmem_int_iput(b.strided, w, 2, 1, N / 2, across);
    ishmem_quiet();
    b.out[0] = 1;
}

__global__ void rma_back(Bufs b, int across) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    /* What this PE wrote on PE across comes back. */
    ishmem_int_get(b.back, b.data, N, across);
    b.out[1] = ishmem_int_g(&b.data[N - 1], across);
    int w[N / 2];
    ishmem_int_iget(w, b.strided, 1, 2, N / 2, across);
    int bad = 0;
    for (int i = 0; i < N / 2; i++) bad += w[i] != ishmem_my_pe() * 100 + i;
    b.out[2] = bad;
    b.out[3] = ishmem_ptr(b.data, across) == NULL;
}

__global__ void amos(Bufs b, int across) {
    int me = ishmem_my_pe();
    /* every thread of every block: one fetch_add each, to PE across */
    long old = ishmem_long_atomic_fetch_add(&b.ctr[0], 1, across);
    if (old < 0) b.out[4] = -1;
    ishmem_long_atomic_add(&b.ctr[1], 2, across);
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        b.out[5] = (int)ishmem_long_atomic_compare_swap(&b.ctr[2], 0, 100 + me, across); /* 0 */
        b.out[6] = (int)ishmem_long_atomic_compare_swap(&b.ctr[2], 0, 999, across);      /* 100+me */
        b.out[7] = (int)ishmem_long_atomic_swap(&b.ctr[3], 7 + me, across);               /* 0 */
        b.out[8] = (int)ishmem_long_atomic_fetch(&b.ctr[3], across);                       /* 7+me */
        ishmem_long_atomic_set(&b.ctr[3], 50 + me, across);
        ishmem_uint64_atomic_or(&b.bits[0], 0xF0ull, across);
        b.out[9] = (int)ishmem_uint64_atomic_fetch_and(&b.bits[0], 0x30ull, across);       /* 0xF0 */
        b.out[10] = (int)ishmem_uint64_atomic_fetch_xor(&b.bits[0], 0x3ull, across);       /* 0x30 */
        float f = ishmem_float_atomic_swap(&b.fl[0], 2.5f + me, across);                   /* 0 */
        b.out[11] = f == 0.0f;
        b.out[12] = ishmem_float_atomic_fetch(&b.fl[0], across) == 2.5f + me;
        ishmem_quiet();
    }
}

/* Ping-pong between PE 0 and PE across0 (PE 0's partner on the other node): put_signal, wait. */
__global__ void pingpong(Bufs b, int partner, int rounds, int starter) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (int r = 1; r <= rounds; r++) {
        if (starter) {
            int v = r;
            ishmem_putmem_signal(b.ping, &v, sizeof v, &b.sig[0], r, ISHMEM_SIGNAL_SET, partner);
            ishmem_signal_wait_until(&b.sig[1], ISHMEM_CMP_GE, r);
            if (*(volatile int *)b.ping != r + 1000) b.out[13]++;
        } else {
            ishmem_signal_wait_until(&b.sig[0], ISHMEM_CMP_GE, r);
            int v = *(volatile int *)b.ping + 1000;
            ishmem_putmem_signal(b.ping, &v, sizeof v, &b.sig[1], r, ISHMEM_SIGNAL_SET, partner);
        }
    }
}

__global__ void fenced(Bufs b, int across) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    ishmem_int_p(&b.data[0], 31, across);
    ishmem_fence();
    ishmem_int_p(&b.data[1], 32, across); /* ordered after the first */
    ishmem_barrier_all();                 /* every PE's puts are in before anyone goes on */
    b.out[14] = b.data[0] * 100 + b.data[1]; /* what the PE across wrote here */
}

__global__ void block_scope(Bufs b, int across) {
    cg::thread_block g = cg::this_thread_block();
    ishmemx_int_put_work_group(b.data + blockIdx.x * 64, b.back + blockIdx.x * 64, 64, across, g);
    ishmemx_int_get_work_group(b.back + N / 2 + blockIdx.x * 64, b.data + blockIdx.x * 64, 64, across, g);
}

__global__ void mixed(Bufs b, int node_peer, int across) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    int me = ishmem_my_pe();
    for (int i = 0; i < 10; i++) {
        ishmem_int_p(&b.mixed[0], me * 10 + i, node_peer); /* direct */
        ishmem_int_p(&b.mixed[1], me * 10 + i, across);    /* proxy */
    }
    ishmem_quiet(); /* covers both routes */
}

/* ---- collectives from kernels (through the proxy when the team spans nodes) ---- */
#define K 4 /* elements per PE */
struct CollBufs {
    long *src, *dst; /* K * npes longs each, symmetric */
    int *out;        /* [0] wrong values, [1] nonzero return codes, [2] collectives run */
};

/* Every collective kind once, by group g (one thread: the plain forms; a block: the
 * work_group forms): the group writes the source, calls, then its first thread checks dest.
 * Sources are written just before each call, so the host collective run by the proxy must see
 * the kernel's stores. The shared team's reduction (this node: the direct path) is mixed in. */
template <class G> __device__ void coll_all(const G &g, bool wg, CollBufs c) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    unsigned r = g.thread_rank(), nt = g.num_threads();
    long *s = c.src, *d = c.dst;
    int wrong = 0, rcs = 0, runs = 0;
    const ishmem_team_t W = ISHMEM_TEAM_WORLD;
#define FILL(expr)                                                                                     \
    do {                                                                                               \
        for (unsigned i_ = r; i_ < (unsigned)(K * npes); i_ += nt) {                                  \
            int i = (int)i_;                                                                           \
            (void)i;                                                                                   \
            expr;                                                                                      \
        }                                                                                              \
    } while (0)
#define CALL(plain, work)                                                                              \
    do {                                                                                               \
        int rc_ = wg ? (work) : (plain);                                                               \
        rcs += rc_ != 0;                                                                               \
        runs++;                                                                                        \
        g.sync();                                                                                      \
    } while (0)
    /* team sync */
    CALL(ishmem_team_sync(W), ishmemx_team_sync_work_group(W, g));
    /* broadcast K longs from the last PE */
    FILL(s[i] = me * 100 + i);
    CALL(ishmem_long_broadcast(W, d, s, K, npes - 1), ishmemx_long_broadcast_work_group(W, d, s, K, npes - 1, g));
    if (r == 0)
        for (int i = 0; i < K; i++) wrong += d[i] != (npes - 1) * 100 + i;
    g.sync();
    /* fcollect K longs per PE */
    FILL(s[i] = me * 100 + i + 1);
    CALL(ishmem_long_fcollect(W, d, s, K), ishmemx_long_fcollect_work_group(W, d, s, K, g));
    if (r == 0)
        for (int p = 0; p < npes; p++)
            for (int i = 0; i < K; i++) wrong += d[p * K + i] != p * 100 + i + 1;
    g.sync();
    /* collect: PE p gives p % K + 1 longs */
    FILL(s[i] = me * 100 + i + 2);
    CALL(ishmem_long_collect(W, d, s, me % K + 1), ishmemx_long_collect_work_group(W, d, s, me % K + 1, g));
    if (r == 0) {
        int at = 0;
        for (int p = 0; p < npes; p++)
            for (int i = 0; i <= p % K; i++, at++) wrong += d[at] != p * 100 + i + 2;
    }
    g.sync();
    /* alltoall: block p of PE q's source is q * 1000 + p * 10 + i */
    FILL(s[i] = me * 1000 + (i / K) * 10 + i % K);
    CALL(ishmem_long_alltoall(W, d, s, K), ishmemx_long_alltoall_work_group(W, d, s, K, g));
    if (r == 0)
        for (int p = 0; p < npes; p++)
            for (int i = 0; i < K; i++) wrong += d[p * K + i] != p * 1000 + me * 10 + i;
    g.sync();
    /* reductions: int min, uint and, ushort or, float prod, double sum, long max, uchar xor */
    {
        int *si = (int *)s, *di = (int *)d;
        FILL(if (i < K) si[i] = (me * 7 + i) % 5 - 2);
        CALL(ishmem_int_min_reduce(W, di, si, K), ishmemx_int_min_reduce_work_group(W, di, si, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                int m = 1 << 30;
                for (int p = 0; p < npes; p++) m = min(m, (p * 7 + i) % 5 - 2);
                wrong += di[i] != m;
            }
        g.sync();
    }
    {
        unsigned *su = (unsigned *)s, *du = (unsigned *)d;
        FILL(if (i < K) su[i] = ~(1u << ((me + i) % 32)));
        CALL(ishmem_uint_and_reduce(W, du, su, K), ishmemx_uint_and_reduce_work_group(W, du, su, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                unsigned a = ~0u;
                for (int p = 0; p < npes; p++) a &= ~(1u << ((p + i) % 32));
                wrong += du[i] != a;
            }
        g.sync();
    }
    {
        unsigned short *su = (unsigned short *)s, *du = (unsigned short *)d;
        FILL(if (i < K) su[i] = (unsigned short)(1u << ((me + i) % 16)));
        CALL(ishmem_ushort_or_reduce(W, du, su, K), ishmemx_ushort_or_reduce_work_group(W, du, su, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                unsigned short o = 0;
                for (int p = 0; p < npes; p++) o |= (unsigned short)(1u << ((p + i) % 16));
                wrong += du[i] != o;
            }
        g.sync();
    }
    {
        float *sf = (float *)s, *df = (float *)d;
        FILL(if (i < K) sf[i] = 0.5f + (float)((me + i) % 3));
        CALL(ishmem_float_prod_reduce(W, df, sf, K), ishmemx_float_prod_reduce_work_group(W, df, sf, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                float x = 1.0f;
                for (int p = 0; p < npes; p++) x *= 0.5f + (float)((p + i) % 3);
                wrong += df[i] != x;
            }
        g.sync();
    }
    {
        double *sd = (double *)s, *dd = (double *)d;
        FILL(if (i < K) sd[i] = 0.25 * (me + 1) + i);
        CALL(ishmem_double_sum_reduce(W, dd, sd, K), ishmemx_double_sum_reduce_work_group(W, dd, sd, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                double x = 0;
                for (int p = 0; p < npes; p++) x += 0.25 * (p + 1) + i;
                wrong += dd[i] != x;
            }
        g.sync();
    }
    {
        FILL(if (i < K) s[i] = (long)((me * 13 + i * 5) % 11) - 5);
        CALL(ishmem_long_max_reduce(W, d, s, K), ishmemx_long_max_reduce_work_group(W, d, s, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                long m = -1000;
                for (int p = 0; p < npes; p++) m = max(m, (long)((p * 13 + i * 5) % 11) - 5);
                wrong += d[i] != m;
            }
        g.sync();
    }
    {
        unsigned char *sc = (unsigned char *)s, *dc = (unsigned char *)d;
        FILL(if (i < K) sc[i] = (unsigned char)(me * 37 + i));
        CALL(ishmem_uchar_xor_reduce(W, dc, sc, K), ishmemx_uchar_xor_reduce_work_group(W, dc, sc, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) {
                unsigned char x = 0;
                for (int p = 0; p < npes; p++) x ^= (unsigned char)(p * 37 + i);
                wrong += dc[i] != x;
            }
        g.sync();
    }
    /* scans (long sums): inclusive, then exclusive in place */
    FILL(if (i < K) s[i] = me + 10 * i);
    CALL(ishmem_long_sum_inscan(W, d, s, K), ishmemx_long_sum_inscan_work_group(W, d, s, K, g));
    if (r == 0)
        for (int i = 0; i < K; i++) {
            long x = 0;
            for (int p = 0; p <= me; p++) x += p + 10 * i;
            wrong += d[i] != x;
        }
    g.sync();
    CALL(ishmem_long_sum_exscan(W, s, s, K), ishmemx_long_sum_exscan_work_group(W, s, s, K, g));
    if (r == 0)
        for (int i = 0; i < K; i++) {
            long x = 0;
            for (int p = 0; p < me; p++) x += p + 10 * i;
            wrong += s[i] != x;
        }
    g.sync();
    /* the shared team (this node's PEs: direct), then the world again (proxy across nodes) */
    {
        const ishmem_team_t S = ISHMEM_TEAM_SHARED;
        FILL(if (i < K) s[i] = me + 1 + i);
        CALL(ishmem_long_sum_reduce(S, d, s, K), ishmemx_long_sum_reduce_work_group(S, d, s, K, g));
        if (r == 0) {
            long w = 0;
            int n = ishmem_team_n_pes(S);
            for (int k = 0; k < n; k++) w += ishmem_team_translate_pe(S, k, W) + 1;
            for (int i = 0; i < K; i++) wrong += d[i] != w + (long)n * i;
        }
        g.sync();
        CALL(ishmem_long_sum_reduce(W, d, s, K), ishmemx_long_sum_reduce_work_group(W, d, s, K, g));
        if (r == 0)
            for (int i = 0; i < K; i++) wrong += d[i] != (long)npes * (npes + 1) / 2 + (long)npes * i;
        g.sync();
    }
    CALL((ishmem_sync_all(), 0), (ishmemx_sync_all_work_group(g), 0));
#undef FILL
#undef CALL
    if (r == 0) {
        c.out[0] += wrong;
        c.out[1] += rcs;
        c.out[2] += runs;
    }
}

/* The plain forms' "group": the calling thread alone. */
struct one_thread {
    __device__ unsigned thread_rank() const { return 0; }
    __device__ unsigned num_threads() const { return 1; }
    __device__ void sync() const {}
};

__global__ void colls(CollBufs c, int wg) {
    if (wg) coll_all(cg::this_thread_block(), true, c);
    else if (threadIdx.x == 0) coll_all(one_thread{}, false, c);
}

static int check_launch(const char *what) {
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "%s kernel: %s", what, cudaGetErrorString(ce));
    return ce == cudaSuccess;
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    CHECK(ishmemx_gpu_in_use() == 1, "the GPU backend is not in use");
    int node_pes = ishmem_team_n_pes(ISHMEM_TEAM_SHARED);
    int across = (me + npes / 2) % npes;   /* on the other node when 2 nodes split the PEs */
    int from = (me + npes - npes / 2) % npes; /* the PE whose "across" is this one */
    int node_peer = ishmem_team_translate_pe(ISHMEM_TEAM_SHARED, (ishmem_team_my_pe(ISHMEM_TEAM_SHARED) + 1) % node_pes,
                                             ISHMEM_TEAM_WORLD);
    int remote = ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, across, ISHMEM_TEAM_SHARED) < 0;
    if (me == 0) printf("proxy_ops: %d PEs, %d per node, PE across %s\n", npes, node_pes, remote ? "on another node" : "on this node");

    Bufs b;
    b.data = (int *)ishmem_calloc(N, sizeof(int));
    b.back = (int *)ishmem_calloc(N, sizeof(int));
    b.strided = (int *)ishmem_calloc(2 * N, sizeof(int));
    b.ctr = (long *)ishmem_calloc(4, sizeof(long));
    b.bits = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    b.fl = (float *)ishmem_calloc(1, sizeof(float));
    b.sig = (uint64_t *)ishmem_calloc(2, sizeof(uint64_t));
    b.ping = (int *)ishmem_calloc(1, sizeof(int));
    b.big = (char *)ishmem_calloc(BIG, 1);
    b.mixed = (int *)ishmem_calloc(2, sizeof(int));
    CHECK(cudaMalloc(&b.bigsrc, BIG) == cudaSuccess, "cudaMalloc");
    CHECK(cudaMallocManaged(&b.out, 32 * sizeof(int)) == cudaSuccess, "cudaMallocManaged");
    {
        char *h = (char *)malloc(BIG);
        for (int i = 0; i < BIG; i++) h[i] = (char)(me * 7 + i * 13);
        cudaMemcpy(b.bigsrc, h, BIG, cudaMemcpyHostToDevice);
        free(h);
    }
    for (int i = 0; i < 32; i++) b.out[i] = 0;
    ishmem_barrier_all();

    /* ---- RMA ---- */
    rma<<<1, 32>>>(b, across);
    check_launch("rma");
    ishmem_barrier_all();
    int got[N];
    ishmem_int_get(got, b.data, N, me);
    int bad = 0;
    for (int i = 0; i < N - 1; i++) bad += got[i] != from * 10000 + i;
    CHECK(bad == 0 && got[N - 1] == from * 10000 + 4242, "device put from PE %d: %d wrong, last %d", from, bad, got[N - 1]);
    {
        char *h = (char *)malloc(BIG);
        ishmem_getmem(h, b.big, BIG, me);
        int wrong = 0;
        for (int i = 0; i < BIG; i++) wrong += h[i] != (char)(from * 7 + i * 13);
        CHECK(wrong == 0, "device putmem_nbi 1 MiB from PE %d: %d bytes wrong", from, wrong);
        free(h);
    }
    int st[2 * N];
    ishmem_int_get(st, b.strided, 2 * N, me);
    bad = 0;
    for (int i = 0; i < N / 2; i++) bad += st[2 * i] != from * 100 + i || st[2 * i + 1] != 0;
    CHECK(bad == 0, "device iput from PE %d: %d wrong", from, bad);
    ishmem_barrier_all();
    rma_back<<<1, 32>>>(b, across);
    check_launch("rma_back");
    int back[N];
    cudaMemcpy(back, b.back, sizeof back, cudaMemcpyDeviceToHost);
    bad = 0;
    for (int i = 0; i < N - 1; i++) bad += back[i] != me * 10000 + i;
    CHECK(bad == 0, "device get from PE %d: %d wrong", across, bad);
    CHECK(b.out[1] == me * 10000 + 4242, "device g: %d", b.out[1]);
    CHECK(b.out[2] == 0, "device iget: %d wrong", b.out[2]);
    CHECK(b.out[3] == remote, "device ishmem_ptr to PE %d: NULL %d, remote %d", across, b.out[3], remote);
    ishmem_barrier_all();

    /* ---- AMOs ---- */
    const int blocks = 4, threads = 64;
    amos<<<blocks, threads>>>(b, across);
    check_launch("amos");
    ishmem_barrier_all();
    long c[4];
    ishmem_long_get(c, b.ctr, 4, me);
    CHECK(c[0] == blocks * threads && b.out[4] == 0, "device fetch_add x %d: %ld", blocks * threads, c[0]);
    CHECK(c[1] == 2L * blocks * threads, "device add: %ld", c[1]);
    CHECK(b.out[5] == 0 && b.out[6] == 100 + me && c[2] == 100 + from, "device compare_swap: %d %d %ld", b.out[5], b.out[6], c[2]);
    CHECK(b.out[7] == 0 && b.out[8] == 7 + me && c[3] == 50 + from, "device swap/fetch/set: %d %d %ld", b.out[7], b.out[8], c[3]);
    uint64_t bits = ishmem_uint64_atomic_fetch(b.bits, me);
    CHECK(b.out[9] == 0xF0 && b.out[10] == 0x30 && bits == 0x33, "device and/or/xor: %x %x %llx", b.out[9], b.out[10],
          (unsigned long long)bits);
    float f = ishmem_float_atomic_fetch(b.fl, me);
    CHECK(b.out[11] == 1 && b.out[12] == 1 && f == 2.5f + from, "device float swap/fetch: %d %d %f", b.out[11], b.out[12], f);
    ishmem_barrier_all();

    /* ---- put_signal ping-pong between PE 0 and PE across(0) ---- */
    const int rounds = 50;
    int partner0 = npes / 2;
    if (npes > 1 && (me == 0 || me == partner0)) {
        pingpong<<<1, 32>>>(b, me == 0 ? partner0 : 0, rounds, me == 0);
        check_launch("pingpong");
        CHECK(b.out[13] == 0, "ping-pong: %d rounds saw a wrong payload", b.out[13]);
    }
    ishmem_barrier_all();

    /* ---- fence and barrier_all from a kernel ---- */
    fenced<<<1, 32>>>(b, across);
    check_launch("fenced");
    CHECK(b.out[14] == 3132, "device fence/barrier_all: %d", b.out[14]);
    ishmem_barrier_all();

    /* ---- block scope ---- */
    {
        int h[N];
        for (int i = 0; i < N; i++) h[i] = me * 1000 + i;
        cudaMemcpy(b.back, h, sizeof h, cudaMemcpyHostToDevice);
        ishmem_barrier_all();
        block_scope<<<N / 2 / 64, 128>>>(b, across);
        check_launch("block_scope");
        ishmem_barrier_all();
        ishmem_int_get(got, b.data, N / 2, me);
        bad = 0;
        for (int i = 0; i < N / 2; i++) bad += got[i] != from * 1000 + i;
        CHECK(bad == 0, "block-scope put from PE %d: %d wrong", from, bad);
        cudaMemcpy(h, b.back, sizeof h, cudaMemcpyDeviceToHost);
        bad = 0;
        for (int i = 0; i < N / 2; i++) bad += h[N / 2 + i] != me * 1000 + i;
        CHECK(bad == 0, "block-scope get from PE %d: %d wrong", across, bad);
    }
    ishmem_barrier_all();

    /* ---- both routes in one kernel ---- */
    mixed<<<1, 32>>>(b, node_peer, across);
    check_launch("mixed");
    ishmem_barrier_all();
    int mx[2];
    ishmem_int_get(mx, b.mixed, 2, me);
    int from_node = ishmem_team_translate_pe(ISHMEM_TEAM_SHARED, (ishmem_team_my_pe(ISHMEM_TEAM_SHARED) + node_pes - 1) % node_pes,
                                             ISHMEM_TEAM_WORLD);
    if (node_pes > 1 || from_node == me)
        CHECK(mx[0] == from_node * 10 + 9, "mixed, direct from PE %d: %d", from_node, mx[0]);
    CHECK(mx[1] == from * 10 + 9, "mixed, proxy from PE %d: %d", from, mx[1]);

    ishmem_barrier_all();

    /* ---- collectives from kernels: plain (one thread), then work_group (a block) ---- */
    {
        CollBufs c;
        c.src = (long *)ishmem_calloc((size_t)K * npes, sizeof(long));
        c.dst = (long *)ishmem_calloc((size_t)K * npes, sizeof(long));
        CHECK(cudaMallocManaged(&c.out, 3 * sizeof(int)) == cudaSuccess, "cudaMallocManaged");
        for (int wg = 0; wg < 2; wg++) {
            c.out[0] = c.out[1] = c.out[2] = 0;
            ishmem_barrier_all();
            colls<<<1, wg ? 128 : 32>>>(c, wg);
            if (check_launch(wg ? "colls (work_group)" : "colls (plain)"))
                CHECK(c.out[0] == 0 && c.out[1] == 0 && c.out[2] == 17, "device collectives (%s): %d wrong values, %d nonzero returns, %d run",
                      wg ? "work_group" : "plain", c.out[0], c.out[1], c.out[2]);
        }
        ishmem_barrier_all();
        cudaFree(c.out);
        ishmem_free(c.dst);
        ishmem_free(c.src);
    }

    /* ---- collectives on a queue of sizes that take the copy engines and the whole-GPU
     * reduction on one node (across nodes: one kernel, through the proxy) ---- */
    {
        const size_t L = (1 << 17) + 3; /* longs: 1 MiB + 24 bytes, above both cutovers */
        long *qs = (long *)ishmem_malloc(L * sizeof(long)), *qd = (long *)ishmem_malloc(L * sizeof(long));
        long *h = (long *)malloc(L * sizeof(long));
        int *qrc;
        cudaStream_t q;
        cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking);
        CHECK(cudaMallocManaged(&qrc, 2 * sizeof(int)) == cudaSuccess, "cudaMallocManaged");
        qrc[0] = qrc[1] = -1;
        for (size_t i = 0; i < L; i++) h[i] = (long)(i % 1000) * (me + 1) - 7;
        cudaMemcpy(qs, h, L * sizeof(long), cudaMemcpyHostToDevice);
        ishmem_barrier_all();
        ishmemx_long_sum_reduce_on_queue(ISHMEM_TEAM_WORLD, qd, qs, L, qrc, q);
        CHECK(cudaStreamSynchronize(q) == cudaSuccess, "sum_reduce_on_queue: %s", cudaGetErrorString(cudaGetLastError()));
        cudaMemcpy(h, qd, L * sizeof(long), cudaMemcpyDeviceToHost);
        size_t wrong = 0;
        long tri = (long)npes * (npes + 1) / 2;
        for (size_t i = 0; i < L; i++) wrong += h[i] != (long)(i % 1000) * tri - 7L * npes;
        CHECK(qrc[0] == 0 && wrong == 0, "long_sum_reduce_on_queue of %zu: rc %d, %zu wrong", L, qrc[0], wrong);
        ishmem_barrier_all();
        ishmemx_long_broadcast_on_queue(ISHMEM_TEAM_WORLD, qd, qs, L, npes - 1, qrc + 1, q);
        CHECK(cudaStreamSynchronize(q) == cudaSuccess, "broadcast_on_queue: %s", cudaGetErrorString(cudaGetLastError()));
        cudaMemcpy(h, qd, L * sizeof(long), cudaMemcpyDeviceToHost);
        wrong = 0;
        for (size_t i = 0; i < L; i++) wrong += h[i] != (long)(i % 1000) * npes - 7;
        CHECK(qrc[1] == 0 && wrong == 0, "long_broadcast_on_queue of %zu from PE %d: rc %d, %zu wrong", L, npes - 1, qrc[1], wrong);
        ishmem_barrier_all();
        cudaFree(qrc);
        cudaStreamDestroy(q);
        free(h);
        ishmem_free(qd);
        ishmem_free(qs);
    }

    ishmem_barrier_all();
    cudaFree(b.bigsrc);
    cudaFree(b.out);
    ishmem_free(b.mixed);
    ishmem_free(b.big);
    ishmem_free(b.ping);
    ishmem_free(b.sig);
    ishmem_free(b.fl);
    ishmem_free(b.bits);
    ishmem_free(b.ctr);
    ishmem_free(b.strided);
    ishmem_free(b.back);
    ishmem_free(b.data);
    ishmem_finalize();
    return gpu_test_end("proxy_ops");
}
