/* queue_ops.cu: every _on_queue name, enqueued on a CUDA stream, with its effect checked.
 * Each PE works on the next PE (puts, signals) or the previous one (gets); the data is checked
 * after the stream is synchronized and a barrier. The typed names come from the X-macro lists
 * of tests/c/gen_types.h, so a type added to the table is tested here too.
 * Across nodes (pretend nodes of scripts/gpu-check.sh): the typed families above run on the
 * PEs of this node (peer mappings: "next" and "previous" are taken in this PE's node, the
 * shared team; on one node, the world); barrier_all_on_queue and sync_all_on_queue span every
 * node and are checked with device puts to every PE (through the proxy for the other nodes)
 * that must have landed when the barrier on the queue completes; and remote_ops() runs
 * putmem/getmem/put_signal/iput/ibget on the queue to a PE of the other node (through the
 * proxy ring), from and into device, pinned host and pageable host buffers. */
#include <ishmem.h>
#include <ishmemx.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../c/gen_types.h"
#include "gpu_test.h"

#define BYTES 4096
static int me, npes, next_pe, prev_pe;
static cudaStream_t q;
static char *sym;      /* symmetric, BYTES */
static char *dsrc;     /* device-local source/destination, BYTES */
static char host[BYTES];

static unsigned char pat(int pe, int k) { return (unsigned char)(pe * 37 + k * 11 + 1); }

static void sync_all_pes(void) {
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "stream: %s", cudaGetErrorString(cudaGetLastError()));
    ishmem_barrier_all();
}

/* Fills the local symmetric buffer and the device source with this PE's pattern k. */
static void prepare(int k) {
    memset(host, pat(me, k), BYTES);
    cudaMemcpy(dsrc, host, BYTES, cudaMemcpyHostToDevice);
    cudaMemcpy(sym, host, BYTES, cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
    ishmem_barrier_all();
}

/* Checks `n` bytes at `p` (device memory), every `stride` bytes `width` bytes, hold value v. */
static void expect(const char *what, const char *p, size_t n, size_t stride, size_t width, unsigned char v) {
    CHECK(cudaMemcpy(host, p, n, cudaMemcpyDeviceToHost) == cudaSuccess, "%s: copy back", what);
    size_t bad = 0;
    for (size_t i = 0; i < n; i += stride)
        for (size_t j = 0; j < width; j++)
            bad += (unsigned char)host[i + j] != v;
    CHECK(bad == 0, "%s: %zu bytes differ from %d", what, bad, v);
}

static int k = 0;

/* Puts me * 100 + round into slot me of every PE (a device put: through the proxy to a PE of
 * another node); completed by the barrier on the queue that follows. */
__global__ void put_everywhere(long *slots, int round) {
    int me_ = ishmem_my_pe(), n = ishmem_n_pes();
    for (int p = 0; p < n; p++) ishmem_long_p(&slots[me_], me_ * 100L + round, p);
}

/* Contiguous put/get families of one element size. */
#define CONTIG(name_put, name_get, name_put_nbi, name_get_nbi, T, ES)                                   \
    do {                                                                                              \
        size_t n = 64 / (ES);                                                                         \
        prepare(++k);                                                                                 \
        name_put((T *)sym, (const T *)dsrc, n, next_pe, q);                                           \
        sync_all_pes();                                                                               \
        expect(#name_put, sym, n *(ES), 1, 1, pat(prev_pe, k));                                       \
        prepare(++k);                                                                                 \
        name_put_nbi((T *)(sym + 1024), (const T *)dsrc, n, next_pe, q);                              \
        ishmemx_quiet_on_queue(q);                                                                    \
        sync_all_pes();                                                                               \
        expect(#name_put_nbi, sym + 1024, n *(ES), 1, 1, pat(prev_pe, k));                            \
        prepare(++k);                                                                                 \
        name_get((T *)dsrc, (const T *)sym, n, next_pe, q);                                           \
        sync_all_pes();                                                                               \
        expect(#name_get, dsrc, n *(ES), 1, 1, pat(next_pe, k));                                      \
        prepare(++k);                                                                                 \
        name_get_nbi((T *)(dsrc + 1024), (const T *)sym, n, next_pe, q);                              \
        sync_all_pes();                                                                               \
        expect(#name_get_nbi, dsrc + 1024, n *(ES), 1, 1, pat(next_pe, k));                           \
    } while (0)

/* Strided families: 8 elements, stride 3 (iput/iget) or blocks of 2 every 4 (ibput/ibget). */
#define STRIDED(name_iput, name_iget, name_ibput, name_ibget, T, ES)                                  \
    do {                                                                                              \
        prepare(++k);                                                                                 \
        cudaMemset(sym, 0, BYTES);                                                                    \
        cudaDeviceSynchronize();                                                                      \
        ishmem_barrier_all();                                                                         \
        name_iput((T *)sym, (const T *)dsrc, 3, 1, 8, next_pe, q);                                    \
        sync_all_pes();                                                                               \
        expect(#name_iput, sym, 8 * 3 * (ES), 3 * (ES), (ES), pat(prev_pe, k));                        \
        expect(#name_iput " gaps", sym + (ES), 7 * 3 * (ES), 3 * (ES), (ES), 0);                       \
        prepare(++k);                                                                                 \
        name_iget((T *)dsrc, (const T *)sym, 2, 1, 8, next_pe, q);                                    \
        sync_all_pes();                                                                               \
        expect(#name_iget, dsrc, 8 * 2 * (ES), 2 * (ES), (ES), pat(next_pe, k));                       \
        prepare(++k);                                                                                 \
        name_ibput((T *)sym, (const T *)dsrc, 4, 2, 2, 4, next_pe, q);                                \
        sync_all_pes();                                                                               \
        expect(#name_ibput, sym, 4 * 4 * (ES), 4 * (ES), 2 * (ES), pat(prev_pe, k));                   \
        prepare(++k);                                                                                 \
        name_ibget((T *)dsrc, (const T *)sym, 2, 4, 2, 4, next_pe, q);                                \
        sync_all_pes();                                                                               \
        expect(#name_ibget, dsrc, 4 * 2 * (ES), 2 * (ES), 2 * (ES), pat(next_pe, k));                  \
    } while (0)

static uint64_t *sig;

/* Put-with-signal families: SET then ADD; the signal is awaited on the queue. */
#define SIGNAL(name, name_nbi, T, ES)                                                                 \
    do {                                                                                              \
        prepare(++k);                                                                                 \
        ishmem_uint64_p(sig, 0, me);                                                                  \
        ishmem_barrier_all();                                                                         \
        name((T *)sym, (const T *)dsrc, 32 / (ES), sig, 5, ISHMEM_SIGNAL_SET, next_pe, q);             \
        ishmemx_signal_wait_until_on_queue(sig, ISHMEM_CMP_EQ, 5, q);                                 \
        sync_all_pes();                                                                               \
        expect(#name, sym, 32, 1, 1, pat(prev_pe, k));                                                \
        CHECK(ishmem_signal_fetch(sig) == 5, #name ": signal %llu", (unsigned long long)ishmem_signal_fetch(sig)); \
        prepare(++k);                                                                                 \
        name_nbi((T *)(sym + 2048), (const T *)dsrc, 1024 / (ES), sig, 2, ISHMEM_SIGNAL_ADD, next_pe, q); \
        ishmemx_signal_wait_until_on_queue(sig, ISHMEM_CMP_GE, 7, q);                                 \
        sync_all_pes();                                                                               \
        expect(#name_nbi, sym + 2048, 1024, 1, 1, pat(prev_pe, k));                                   \
        CHECK(ishmem_signal_fetch(sig) == 7, #name_nbi ": signal %llu", (unsigned long long)ishmem_signal_fetch(sig)); \
    } while (0)

#define RMA_TYPE(TN, CT)                                                                              \
    CONTIG(ishmemx_##TN##_put_on_queue, ishmemx_##TN##_get_on_queue, ishmemx_##TN##_put_nbi_on_queue, \
           ishmemx_##TN##_get_nbi_on_queue, CT, sizeof(CT));                                          \
    STRIDED(ishmemx_##TN##_iput_on_queue, ishmemx_##TN##_iget_on_queue, ishmemx_##TN##_ibput_on_queue, \
            ishmemx_##TN##_ibget_on_queue, CT, sizeof(CT));                                           \
    SIGNAL(ishmemx_##TN##_put_signal_on_queue, ishmemx_##TN##_put_signal_nbi_on_queue, CT, sizeof(CT));

struct b16 { char b[16]; };
#define SIZE_FORMS(BITS)                                                                              \
    CONTIG(ishmemx_put##BITS##_on_queue, ishmemx_get##BITS##_on_queue, ishmemx_put##BITS##_nbi_on_queue, \
           ishmemx_get##BITS##_nbi_on_queue, void, (BITS) / 8);                                       \
    STRIDED(ishmemx_iput##BITS##_on_queue, ishmemx_iget##BITS##_on_queue, ishmemx_ibput##BITS##_on_queue, \
            ishmemx_ibget##BITS##_on_queue, void, (BITS) / 8);                                        \
    SIGNAL(ishmemx_put##BITS##_signal_on_queue, ishmemx_put##BITS##_signal_nbi_on_queue, void, (BITS) / 8);

/* wait_until families on the queue: the previous PE sets our ivars from the host. */
#define P2P_TYPE(TN, CT)                                                                              \
    do {                                                                                              \
        CT *iv = (CT *)(sym + 3072);                                                                  \
        cudaMemset(iv, 0, 4 * sizeof(CT));                                                            \
        cudaDeviceSynchronize();                                                                      \
        ishmem_barrier_all();                                                                         \
        for (int i = 0; i < 4; i++) ishmem_##TN##_p(iv + i, (CT)(i + 1), next_pe);                    \
        *status = 0; status[1] = 1; status[2] = 0; status[3] = 0;                                     \
        for (int i = 0; i < 4; i++) values[i] = (CT)(i + 1);                                          \
        ishmemx_##TN##_wait_until_on_queue(iv, ISHMEM_CMP_EQ, (CT)1, q);                              \
        ishmemx_##TN##_wait_until_all_on_queue(iv, 4, status, ISHMEM_CMP_GE, (CT)1, q);               \
        ishmemx_##TN##_wait_until_any_on_queue(iv, 4, status, ISHMEM_CMP_EQ, (CT)3, ret, q);          \
        ishmemx_##TN##_wait_until_some_on_queue(iv, 4, indices, status, ISHMEM_CMP_GE, (CT)2, ret + 1, q); \
        ishmemx_##TN##_wait_until_all_vector_on_queue(iv, 4, status, ISHMEM_CMP_EQ, (CT *)values_t, q); \
        ishmemx_##TN##_wait_until_any_vector_on_queue(iv, 4, status, ISHMEM_CMP_EQ, (CT *)values_t, ret + 2, q); \
        ishmemx_##TN##_wait_until_some_vector_on_queue(iv, 4, indices + 4, status, ISHMEM_CMP_EQ, (CT *)values_t, ret + 3, q); \
        sync_all_pes();                                                                               \
        CHECK(ret[0] == 2, #TN " wait_until_any_on_queue: %zu", ret[0]);                              \
        CHECK(ret[1] == 2 && indices[0] == 2 && indices[1] == 3, #TN " wait_until_some_on_queue: %zu", ret[1]); \
        /* fair (issue 14): the scan starts after index 2, returned by the any above on iv */     \
        CHECK(ret[2] == 3, #TN " wait_until_any_vector_on_queue: %zu", ret[2]);                       \
        CHECK(ret[3] == 3, #TN " wait_until_some_vector_on_queue: %zu", ret[3]);                      \
    } while (0);

/* The on-queue RMA forms to PE `far` of another node (2 pretend nodes: far = me + npes/2, so
 * far's far is this PE): each reaches it through the proxy ring, in stream order. */
static char *hpin; /* pinned host buffer, BYTES */
static char hpage[BYTES]; /* pageable host buffer */
static void remote_ops(void) {
    int far = (me + npes / 2) % npes;
    CHECK(npes % 2 == 0 && ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, far, ISHMEM_TEAM_SHARED) < 0,
          "remote_ops: PE %d expected on another node", far);
    if (me == 0) printf("queue_ops: on-queue RMA to PEs of another node\n");
    char *got = (char *)malloc(BYTES);

    /* putmem from a device buffer, which the stream overwrites right after (the put read it
     * first); quiet_on_queue, then a host get of the target sees the data */
    prepare(++k);
    ishmemx_putmem_on_queue(sym, dsrc, BYTES, far, q);
    cudaMemsetAsync(dsrc, 0, BYTES, q);
    ishmemx_quiet_on_queue(q);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "remote putmem: %s", cudaGetErrorString(cudaGetLastError()));
    ishmem_getmem(got, sym, BYTES, far);
    size_t bad = 0;
    for (int i = 0; i < BYTES; i++) bad += (unsigned char)got[i] != pat(me, k);
    CHECK(bad == 0, "putmem_on_queue to PE %d of another node: %zu bytes differ (host get after quiet_on_queue)", far, bad);
    sync_all_pes();
    expect("putmem_on_queue (other node)", sym, BYTES, 1, 1, pat(far, k));

    /* put_nbi from pinned host memory and putmem from pageable host memory */
    prepare(++k);
    memset(hpin, pat(me, k) ^ 0x5a, BYTES);
    memset(hpage, pat(me, k) ^ 0xa5, BYTES);
    ishmemx_putmem_nbi_on_queue(sym, hpin, 1024, far, q);
    ishmemx_putmem_on_queue(sym + 1024, hpage, 1024, far, q);
    ishmemx_quiet_on_queue(q);
    sync_all_pes();
    expect("putmem_nbi_on_queue from pinned host memory (other node)", sym, 1024, 1, 1, pat(far, k) ^ 0x5a);
    expect("putmem_on_queue from pageable host memory (other node)", sym + 1024, 1024, 1, 1, pat(far, k) ^ 0xa5);

    /* getmem into a device buffer, then a copy on the stream of what it got */
    prepare(++k);
    cudaMemset(dsrc, 0, BYTES);
    cudaDeviceSynchronize();
    ishmemx_getmem_on_queue(dsrc, sym, 1024, far, q);
    cudaMemcpyAsync(dsrc + 2048, dsrc, 1024, cudaMemcpyDeviceToDevice, q);
    sync_all_pes();
    expect("getmem_on_queue (other node)", dsrc, 1024, 1, 1, pat(far, k));
    expect("getmem_on_queue, then a copy on the stream (other node)", dsrc + 2048, 1024, 1, 1, pat(far, k));

    /* get_nbi into pinned host memory, getmem into pageable host memory */
    prepare(++k);
    memset(hpin, 0, BYTES);
    memset(hpage, 0, BYTES);
    ishmemx_getmem_nbi_on_queue(hpin, sym, 512, far, q);
    ishmemx_getmem_on_queue(hpage, sym + 512, 512, far, q);
    sync_all_pes();
    bad = 0;
    for (int i = 0; i < 512; i++) bad += (unsigned char)hpin[i] != pat(far, k);
    for (int i = 0; i < 512; i++) bad += (unsigned char)hpage[i] != pat(far, k);
    CHECK(bad == 0, "getmem(_nbi)_on_queue into host memory (other node): %zu bytes differ", bad);

    /* put_signal (SET, then ADD with the nbi form): far's signal to this PE is awaited on the
     * queue; once the wait is done the data is here (no barrier in between) */
    prepare(++k);
    ishmem_uint64_p(sig, 0, me);
    ishmem_barrier_all();
    ishmemx_putmem_signal_on_queue(sym, dsrc, 512, sig, 9, ISHMEM_SIGNAL_SET, far, q);
    ishmemx_signal_wait_until_on_queue(sig, ISHMEM_CMP_EQ, 9, q);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "remote put_signal: %s", cudaGetErrorString(cudaGetLastError()));
    expect("putmem_signal_on_queue (other node), data when the signal is seen", sym, 512, 1, 1, pat(far, k));
    CHECK(ishmem_signal_fetch(sig) == 9, "putmem_signal_on_queue (other node): signal %llu",
          (unsigned long long)ishmem_signal_fetch(sig));
    ishmem_barrier_all(); /* every PE saw 9 before any adds */
    ishmemx_long_put_signal_nbi_on_queue((long *)(sym + 1024), (const long *)dsrc, 64, sig, 3, ISHMEM_SIGNAL_ADD, far, q);
    ishmemx_signal_wait_until_on_queue(sig, ISHMEM_CMP_EQ, 12, q);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess, "remote put_signal_nbi: %s", cudaGetErrorString(cudaGetLastError()));
    expect("long_put_signal_nbi_on_queue (other node), data when the signal is seen", sym + 1024, 512, 1, 1, pat(far, k));
    sync_all_pes();

    /* iput: 8 ints every 3rd; ibget: 4 blocks of 2 longs, 4 apart there, 3 apart here */
    prepare(++k);
    cudaMemset(sym, 0, BYTES);
    cudaDeviceSynchronize();
    ishmem_barrier_all();
    ishmemx_int_iput_on_queue((int *)sym, (const int *)dsrc, 3, 1, 8, far, q);
    ishmemx_quiet_on_queue(q);
    sync_all_pes();
    expect("int_iput_on_queue (other node)", sym, 8 * 3 * 4, 3 * 4, 4, pat(far, k));
    expect("int_iput_on_queue gaps (other node)", sym + 4, 7 * 3 * 4, 3 * 4, 4, 0);
    prepare(++k);
    cudaMemset(dsrc, 0, BYTES);
    cudaDeviceSynchronize();
    ishmemx_ibget64_on_queue(dsrc, sym, 3, 4, 2, 4, far, q);
    sync_all_pes();
    expect("ibget64_on_queue (other node)", dsrc, 4 * 3 * 8, 3 * 8, 2 * 8, pat(far, k));
    expect("ibget64_on_queue gaps (other node)", dsrc + 16, 4 * 3 * 8 - 16, 3 * 8, 8, 0);
    free(got);
}

int main(void) {
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    gt_me = me;
    {
        /* next and previous PE of this node (RMA on a queue maps the node's heaps) */
        int ns = ishmem_team_n_pes(ISHMEM_TEAM_SHARED), nm = ishmem_team_my_pe(ISHMEM_TEAM_SHARED);
        next_pe = ishmem_team_translate_pe(ISHMEM_TEAM_SHARED, (nm + 1) % ns, ISHMEM_TEAM_WORLD);
        prev_pe = ishmem_team_translate_pe(ISHMEM_TEAM_SHARED, (nm + ns - 1) % ns, ISHMEM_TEAM_WORLD);
        CHECK(next_pe >= 0 && prev_pe >= 0, "node peers %d %d", next_pe, prev_pe);
        if (me == 0) printf("queue_ops: %d PEs, %d on this node\n", npes, ns);
    }
    CHECK(ishmemx_gpu_in_use() == 1, "GPU backend expected");
    cudaStreamCreate(&q);
    sym = (char *)ishmem_malloc(BYTES);
    sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    cudaMalloc(&dsrc, BYTES);
    int *status;
    size_t *ret, *indices;
    long long *values;
    cudaMallocManaged(&status, 4 * sizeof(int));
    cudaMallocManaged(&ret, 4 * sizeof(size_t));
    cudaMallocManaged(&indices, 8 * sizeof(size_t));
    cudaMallocManaged(&values, 4 * sizeof(long long));
    void *values_t;
    cudaMallocManaged(&values_t, 4 * sizeof(long long));

    cudaMallocHost(&hpin, BYTES);
    if (ishmem_team_n_pes(ISHMEM_TEAM_SHARED) < npes) remote_ops();
    ISHT_RMA_TYPES(RMA_TYPE)
    ISHT_SIZES(SIZE_FORMS)
    CONTIG(ishmemx_putmem_on_queue, ishmemx_getmem_on_queue, ishmemx_putmem_nbi_on_queue, ishmemx_getmem_nbi_on_queue, void, 1);
    SIGNAL(ishmemx_putmem_signal_on_queue, ishmemx_putmem_signal_nbi_on_queue, void, 1);
    /* Large copies take the copy-engine path (above ISHMEM_QUEUE_KERNEL_MAX). */
    {
        size_t big = 8 << 20;
        char *bs = (char *)ishmem_malloc(big), *bd;
        cudaMalloc(&bd, big);
        cudaMemset(bd, pat(me, 99), big);
        cudaDeviceSynchronize();
        ishmem_barrier_all();
        ishmemx_putmem_on_queue(bs, bd, big, next_pe, q);
        ishmemx_barrier_all_on_queue(q);
        CHECK(cudaStreamSynchronize(q) == cudaSuccess, "big put");
        char *h = (char *)malloc(big);
        cudaMemcpy(h, bs, big, cudaMemcpyDeviceToHost);
        size_t bad = 0;
        for (size_t i = 0; i < big; i++) bad += (unsigned char)h[i] != pat(prev_pe, 99);
        CHECK(bad == 0, "8 MiB putmem_on_queue: %zu bytes wrong", bad);
        free(h);
        ishmemx_sync_all_on_queue(q);
        cudaStreamSynchronize(q);
        ishmem_barrier_all();
        ishmem_free(bs);
        cudaFree(bd);
    }
    /* barrier_all_on_queue and sync_all_on_queue over every PE, every node: a kernel on the
     * queue puts this PE's number + round into its slot on every PE, then the barrier on the
     * queue; when the stream is done, every PE's put of the round is here. */
    {
        CHECK(npes <= 64, "at most 64 PEs");
        long *slots = (long *)ishmem_calloc((size_t)npes, sizeof(long));
        ishmem_barrier_all();
        for (int round = 1; round <= 3; round++) {
            put_everywhere<<<1, 1, 0, q>>>(slots, round);
            if (round == 2) ishmemx_sync_all_on_queue(q); /* a second kind of barrier between */
            ishmemx_barrier_all_on_queue(q);
            CHECK(cudaStreamSynchronize(q) == cudaSuccess, "barrier_all_on_queue round %d: %s", round,
                  cudaGetErrorString(cudaGetLastError()));
            long h[64];
            cudaMemcpy(h, slots, (size_t)npes * sizeof(long), cudaMemcpyDeviceToHost);
            int bad = 0;
            for (int p = 0; p < npes; p++) bad += h[p] != p * 100L + round;
            CHECK(bad == 0, "barrier_all_on_queue round %d: %d PEs' puts missing (e.g. slot 0: %ld)", round, bad, h[0]);
            /* nobody puts the next round before every PE has read this one */
            ishmemx_sync_all_on_queue(q);
            CHECK(cudaStreamSynchronize(q) == cudaSuccess, "sync_all_on_queue");
        }
        ishmem_barrier_all();
        ishmem_free(slots);
    }
#define P2P_ALL(TN, CT)                                                                               \
    for (int i = 0; i < 4; i++) ((CT *)values_t)[i] = (CT)(i + 1);                                    \
    P2P_TYPE(TN, CT)
    ISHT_P2P_TYPES(P2P_ALL)
    (void)values;

    cudaFreeHost(hpin);
    cudaStreamDestroy(q);
    ishmem_barrier_all();
    ishmem_free(sig);
    ishmem_free(sym);
    ishmem_finalize();
    return gpu_test_end("queue_ops");
}
