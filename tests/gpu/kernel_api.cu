/* kernel_api.cu: kernels using the device API of ishmem.h (the lead's header-only CUDA
 * implementation, bound by its static-init binder): my_pe/n_pes, p, put, g, atomic
 * fetch_add to PE 0 from every PE, quiet; the host checks with the host API.
 * Build: nvcc -arch=sm_90 kernel_api.cu $(pkg-config --cflags --libs ishmem) */
#include <cooperative_groups.h>
#include <ishmem.h>
#include <ishmemx.h>
#include "gpu_test.h"

#define N 256

__global__ void talk(int *data, int *counter, int *seen) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int peer = (me + 1) % npes;
    if (threadIdx.x == 0) {
        int v[N];
        for (int i = 0; i < N; i++)
            v[i] = me * 1000 + i;
        ishmem_int_put(data, v, N, peer);
        ishmem_int_p(&data[N], 77 + me, peer);
        seen[0] = me;
        seen[1] = npes;
        seen[2] = ishmem_int_atomic_fetch_add(counter, 1, 0) >= 0;
        ishmem_quiet();
    }
}

__global__ void look(int *data, int *seen) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int peer = (me + 1) % npes;
    if (threadIdx.x == 0) seen[3] = ishmem_int_g(&data[N], peer); /* what this PE wrote there */
}

/* test_any / wait_until_any in a kernel are fair (issue 14): 2 * FAIR_N calls on ivars that all
 * hold return the indices in turn, wrapping around; with a status mask only the active ones. */
#define FAIR_N 5
__global__ void fair(int *iv, size_t *got) {
    if (threadIdx.x != 0) return;
    for (int c = 0; c < 2 * FAIR_N; c++)
        got[c] = ishmem_int_test_any(iv, FAIR_N, NULL, ISHMEM_CMP_EQ, 1);
    for (int c = 0; c < 2 * FAIR_N; c++)
        got[2 * FAIR_N + c] = ishmem_int_wait_until_any(iv + FAIR_N, FAIR_N, NULL, ISHMEM_CMP_GE, 1);
    int st[FAIR_N] = {0, 1, 0, 1, 1};
    for (int c = 0; c < 4; c++)
        got[4 * FAIR_N + c] = ishmem_int_test_any(iv + 2 * FAIR_N, FAIR_N, st, ISHMEM_CMP_EQ, 1);
}

/* The OpenSHMEM 1.5 names in a kernel (issue 14): pe_accessible, addr_accessible, and
 * ishmem_sync(team) as a barrier of the world team (one thread per PE). */
__global__ void oshmem15(int *heap, int *out) {
    if (threadIdx.x != 0) return;
    int npes = ishmem_n_pes(), me = ishmem_my_pe();
    out[0] = ishmem_pe_accessible(npes - 1);
    out[1] = ishmem_pe_accessible(npes);
    out[2] = ishmem_pe_accessible(-1);
    out[3] = ishmem_addr_accessible(heap, 0);
    out[4] = ishmem_addr_accessible(out, 0); /* managed memory, not symmetric */
    ishmem_int_p(heap, 500 + me, (me + 1) % npes);
    ishmem_quiet();
    out[5] = ishmem_sync(ISHMEM_TEAM_WORLD);
    out[6] = heap[0];
}

/* Device put and get at every alignment of the copy loop (issue 24: copy() returns once the
 * widest words covered the range, and its tails are not unrolled): block b runs case b, a
 * destination offset, a source offset and a length, at the scope of the kernel (0 a thread,
 * 1 a warp, 2 the block); the put goes to the next PE, the get reads the previous PE's source
 * into this PE's gdst. Each case owns SWEEP_STRIDE bytes of dst and gdst; the host checks the
 * bytes of the range and one sentinel byte on each side. */
#define SWEEP_STRIDE 4608 /* 16 bytes before (a 16-byte aligned start), the longest case at 16 + 8, a byte after */
#define SWEEP_NOFF 4
#define SWEEP_NLEN 15
#define SWEEP_CASES (SWEEP_NOFF * SWEEP_NOFF * SWEEP_NLEN)
__device__ __host__ static inline void sweep_case(int c, int *doff, int *soff, int *len) {
    const int offs[SWEEP_NOFF] = {0, 1, 4, 8};
    const int lens[SWEEP_NLEN] = {0, 1, 3, 15, 16, 17, 31, 48, 64, 100, 255, 256, 257, 1000, 4101};
    *doff = offs[c % SWEEP_NOFF];
    *soff = offs[(c / SWEEP_NOFF) % SWEEP_NOFF];
    *len = lens[c / (SWEEP_NOFF * SWEEP_NOFF)];
}
__device__ __host__ static inline unsigned char sweep_byte(int pe, size_t i) { return (unsigned char)(pe * 37 + i * 7 + 1); }
__global__ void sweep(int scope, unsigned char *dst, unsigned char *gdst, const unsigned char *src) {
    namespace cg = cooperative_groups;
    int npes = ishmem_n_pes(), me = ishmem_my_pe();
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    int doff, soff, len;
    sweep_case(blockIdx.x, &doff, &soff, &len);
    unsigned char *d = dst + (size_t)blockIdx.x * SWEEP_STRIDE + 16 + doff;
    unsigned char *g = gdst + (size_t)blockIdx.x * SWEEP_STRIDE + 16 + doff;
    const unsigned char *s = src + 16 + soff;
    cg::thread_block blk = cg::this_thread_block();
    if (scope == 0) {
        if (threadIdx.x == 0) {
            ishmem_putmem_nbi(d, s, len, next);
            ishmem_getmem_nbi(g, s, len, prev);
        }
    } else if (scope == 1) {
        cg::thread_block_tile<32> warp = cg::tiled_partition<32>(blk);
        if (threadIdx.x < 32) {
            ishmemx_putmem_nbi_work_group(d, s, len, next, warp);
            ishmemx_getmem_nbi_work_group(g, s, len, prev, warp);
        }
    } else {
        ishmemx_putmem_nbi_work_group(d, s, len, next, blk);
        ishmemx_getmem_nbi_work_group(g, s, len, prev, blk);
    }
    blk.sync();
    if (threadIdx.x == 0) ishmem_quiet();
}

static void check_copy_sweep(void) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int prev = (me + npes - 1) % npes;
    size_t span = (size_t)SWEEP_CASES * SWEEP_STRIDE;
    unsigned char *dst = (unsigned char *)ishmem_malloc(span), *gdst = (unsigned char *)ishmem_malloc(span);
    unsigned char *src = (unsigned char *)ishmem_malloc(SWEEP_STRIDE);
    unsigned char *host = (unsigned char *)malloc(span), *hsrc = (unsigned char *)malloc(SWEEP_STRIDE);
    CHECK(dst && gdst && src && host && hsrc, "copy sweep: buffers");
    if (!dst || !gdst || !src || !host || !hsrc) return;
    CHECK(((uintptr_t)dst | (uintptr_t)gdst | (uintptr_t)src) % 16 == 0, "copy sweep: heap blocks not 16-byte aligned");
    for (size_t i = 0; i < SWEEP_STRIDE; i++) hsrc[i] = sweep_byte(me, i);
    CHECK(cudaMemcpy(src, hsrc, SWEEP_STRIDE, cudaMemcpyHostToDevice) == cudaSuccess, "copy sweep: source");
    const char *scopes[] = {"thread", "warp", "block"};
    for (int scope = 0; scope < 3; scope++) {
        CHECK(cudaMemset(dst, 0xEE, span) == cudaSuccess && cudaMemset(gdst, 0xEE, span) == cudaSuccess &&
                  cudaDeviceSynchronize() == cudaSuccess,
              "copy sweep: memset");
        ishmem_barrier_all();
        sweep<<<SWEEP_CASES, 128>>>(scope, dst, gdst, src);
        cudaError_t ce = cudaDeviceSynchronize();
        CHECK(ce == cudaSuccess, "copy sweep %s kernel: %s", scopes[scope], cudaGetErrorString(ce));
        ishmem_barrier_all(); /* every PE's puts into this PE are complete */
        for (int which = 0; which < 2; which++) {
            /* dst: the previous PE's put of its source; gdst: this PE's get of the previous
             * PE's source */
            CHECK(cudaMemcpy(host, which ? gdst : dst, span, cudaMemcpyDeviceToHost) == cudaSuccess, "copy sweep: read back");
            int bad = 0;
            for (int c = 0; c < SWEEP_CASES && bad < 3; c++) {
                int doff, soff, len;
                sweep_case(c, &doff, &soff, &len);
                const unsigned char *r = host + (size_t)c * SWEEP_STRIDE + 16 + doff;
                int first = -2; /* -1: the sentinel before, len: the one after */
                if (r[-1] != 0xEE) first = -1;
                for (int i = 0; i < len && first == -2; i++)
                    if (r[i] != sweep_byte(prev, 16 + soff + i)) first = i;
                if (first == -2 && r[len] != 0xEE) first = len;
                if (first != -2) {
                    bad++;
                    CHECK(0, "copy sweep %s %s: dest offset %d source offset %d length %d: byte %d is %#x", scopes[scope],
                          which ? "getmem_nbi" : "putmem_nbi", doff, soff, len, first, r[first]);
                }
            }
            CHECK(bad == 0, "copy sweep %s %s: %d cases wrong (at most 3 listed)", scopes[scope], which ? "get" : "put", bad);
        }
    }
    ishmem_barrier_all();
    free(host);
    free(hsrc);
    ishmem_free(src);
    ishmem_free(gdst);
    ishmem_free(dst);
}

static void check_oshmem15(void) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int *heap = (int *)ishmem_calloc(1, sizeof(int)), *out = NULL;
    CHECK(heap && cudaMallocManaged(&out, 8 * sizeof(int)) == cudaSuccess, "oshmem15: buffers");
    if (!heap || !out) return;
    ishmem_barrier_all();
    oshmem15<<<1, 32>>>(heap, out);
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "oshmem15 kernel: %s", cudaGetErrorString(ce));
    CHECK(out[0] == 1 && out[1] == 0 && out[2] == 0, "device pe_accessible: %d %d %d", out[0], out[1], out[2]);
    CHECK(out[3] == 1 && out[4] == 0, "device addr_accessible: %d %d", out[3], out[4]);
    CHECK(out[5] == 0 && out[6] == 500 + (me + npes - 1) % npes, "device ishmem_sync: %d, value %d", out[5], out[6]);
    ishmem_barrier_all();
    cudaFree(out);
    ishmem_free(heap);
}

static void check_fair(void) {
    int *iv = (int *)ishmem_malloc(3 * FAIR_N * sizeof(int));
    size_t *got = NULL;
    CHECK(iv && cudaMallocManaged(&got, (4 * FAIR_N + 4) * sizeof(size_t)) == cudaSuccess, "fair: buffers");
    if (!iv || !got) return;
    int ones[3 * FAIR_N];
    for (int i = 0; i < 3 * FAIR_N; i++) ones[i] = 1;
    ishmem_int_put(iv, ones, 3 * FAIR_N, ishmem_my_pe());
    fair<<<1, 32>>>(iv, got);
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "fair kernel: %s", cudaGetErrorString(ce));
    for (int form = 0; form < 2; form++) {
        size_t *g = got + 2 * FAIR_N * form;
        CHECK(g[0] < FAIR_N, "fair form %d: first index %zu", form, g[0]);
        for (int c = 1; c < 2 * FAIR_N; c++)
            CHECK(g[c] == (g[0] + c) % FAIR_N, "fair form %d: call %d returned %zu, want %zu", form, c, g[c],
                  (g[0] + c) % FAIR_N);
    }
    size_t *m = got + 4 * FAIR_N;
    CHECK((m[0] == 0 || m[0] == 2) && m[1] == 2 - m[0] && m[2] == m[0] && m[3] == m[1],
          "fair with status: %zu %zu %zu %zu (want 0 and 2 alternating)", m[0], m[1], m[2], m[3]);
    cudaFree(got);
    ishmem_free(iv);
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int prev = (me + npes - 1) % npes;
    int *seen = NULL;
    CHECK(ishmemx_gpu_in_use() == 1, "the GPU backend is not in use");
    CHECK(cudaMallocManaged(&seen, 4 * sizeof(int)) == cudaSuccess, "cudaMallocManaged");
    if (gt_fails) { /* nothing below can work */
        ishmem_finalize();
        return gpu_test_end("kernel_api");
    }
    int *data = (int *)ishmem_calloc(N + 1, sizeof(int));
    int *counter = (int *)ishmem_calloc(1, sizeof(int));
    seen[0] = seen[1] = seen[2] = seen[3] = -1;
    ishmem_barrier_all();
    talk<<<1, 32>>>(data, counter, seen);
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "talk kernel: %s", cudaGetErrorString(ce));
    ishmem_barrier_all();
    CHECK(seen[0] == me && seen[1] == npes && seen[2] == 1, "device my_pe %d n_pes %d amo %d", seen[0], seen[1], seen[2]);
    int got[N + 1];
    ishmem_int_get(got, data, N + 1, me);
    CHECK(got[0] == prev * 1000 && got[N - 1] == prev * 1000 + N - 1 && got[N] == 77 + prev, "data %d %d %d", got[0],
          got[N - 1], got[N]);
    if (me == 0) CHECK(ishmem_int_atomic_fetch(counter, 0) == npes, "counter %d", ishmem_int_atomic_fetch(counter, 0));
    look<<<1, 32>>>(data, seen);
    ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess && seen[3] == 77 + me, "device g: %d (err %s)", seen[3], cudaGetErrorString(ce));
    ishmem_barrier_all();
    check_fair();
    check_oshmem15();
    check_copy_sweep();
    cudaFree(seen);
    ishmem_free(counter);
    ishmem_free(data);
    ishmem_finalize();
    return gpu_test_end("kernel_api");
}
