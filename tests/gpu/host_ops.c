/* host_ops.c: the host API on the GPU heap (CUDA backend), between any number of PEs
 * (run with 2). Plain C: it includes ishmem.h without nvcc, so it tests the library alone,
 * not the device headers. Build (scripts/gpu-check.sh):
 *   nvcc -arch=sm_90 host_ops.c $(pkg-config --cflags --libs ishmem) -o host_ops
 * EXPECT_GPU=0 in the environment: the CPU backend is expected (ISHMEM_GPU=0 runs); the same
 * checks then run on host memory. Compiled with -DGPU_TEST_NO_CUDART (by plain cc, no CUDA
 * needed) it leaves out the checks made through the CUDA runtime: scripts/mock-gpu-check.sh
 * runs it that way against tests/gpu/mock_libcuda.c on machines without a GPU.
 * Covers: backend queries, heap in device memory, alignment, put/get (host <-> heap, heap ->
 * heap, nbi), p/g (double, char at an odd byte), iput/iget/ibput/ibget, AMOs of every width
 * (int, long, schar with neighbour bytes untouched, uint64 bitwise, float/double
 * fetch/set/swap, nbi fetch), concurrent fetch_inc from every PE, put_signal + wait,
 * signal_fetch/set, wait_until / test_any / wait_until_all on GPU ivars, a second thread
 * calling the API (context push), symmetric globals (host) incl. a heap -> global put,
 * ishmem_ptr as a device address (NULL for a PE of another node), calloc zeroing, free; teams and collectives (a reduction
 * large enough to be sliced from 3 PEs on, in place, into a symmetric global; broadcast,
 * fcollect, collect, alltoall, scans; a split team's sync and reduction). */
#include <ishmem.h>
#include <ishmemx.h>
#ifndef GPU_TEST_NO_CUDART
#include <cuda_runtime_api.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_test.h"

#define N 1024

static int global_arr[N];      /* symmetric global: host memory on both backends */
static long global_ctr;

struct thread_arg {
    int *counter;
    int *buf;
    int peer;
};

static void *other_thread(void *p) {
    struct thread_arg *a = (struct thread_arg *)p;
    /* A thread with no CUDA context current: the library must make its own current. */
    ishmem_int_atomic_add(a->counter, 1, a->peer);
    int v[4] = {7, 8, 9, 10};
    ishmem_int_put(a->buf, v, 4, a->peer);
    return NULL;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int peer = (me + 1) % npes, prev = mod(me - 1, npes);
    const char *e = getenv("EXPECT_GPU");
    int expect_gpu = e ? atoi(e) : 1;

    /* ---- backend ---- */
    CHECK(ishmemx_gpu_in_use() == expect_gpu, "gpu_in_use %d, expected %d", ishmemx_gpu_in_use(), expect_gpu);
    if (expect_gpu)
        CHECK(ishmemx_gpu_device() >= 0, "gpu_device %d", ishmemx_gpu_device());
    else
        CHECK(ishmemx_gpu_device() == -1, "gpu_device %d on the CPU backend", ishmemx_gpu_device());

    int *buf = (int *)ishmem_malloc(N * sizeof(int));
    CHECK(buf != NULL, "malloc");
#ifndef GPU_TEST_NO_CUDART
    if (expect_gpu) {
        struct cudaPointerAttributes at;
        cudaError_t ce = cudaPointerGetAttributes(&at, buf);
        CHECK(ce == cudaSuccess && at.type == cudaMemoryTypeDevice, "heap pointer %p: err %d type %d", (void *)buf,
              (int)ce, (int)at.type);
    }
#endif
    void *aligned = ishmem_align((size_t)1 << 21, 64);
    CHECK(aligned && ((uintptr_t)aligned % ((size_t)1 << 21)) == 0, "align(2 MiB) gave %p", aligned);
    /* alignments above 2 MiB hold for the address (issue 14); on the GPU heap up to 32 MiB
     * (its start is aligned to that; larger ones only where the PEs' heaps agree) */
    for (int k = 22; k <= 25; k++) {
        void *big = ishmem_align((size_t)1 << k, 64);
        CHECK(big && ((uintptr_t)big % ((size_t)1 << k)) == 0, "align(2^%d) gave %p", k, big);
        ishmem_free(big);
    }

    /* ---- put / get ---- */
    int src[N], got[N];
    for (int i = 0; i < N; i++)
        src[i] = me * 1000 + i;
    ishmem_int_put(buf, src, N, peer);
    ishmem_barrier_all();
    ishmem_int_get(got, buf, N, me);
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (got[i] != prev * 1000 + i) bad = i;
    CHECK(bad < 0, "local get after peer put: [%d] = %d", bad, bad < 0 ? 0 : got[bad]);
#ifndef GPU_TEST_NO_CUDART
    if (expect_gpu) {
        memset(got, 0, sizeof got);
        cudaError_t ce = cudaMemcpy(got, buf, sizeof got, cudaMemcpyDeviceToHost);
        CHECK(ce == cudaSuccess && got[5] == prev * 1000 + 5 && got[N - 1] == prev * 1000 + N - 1,
              "cudaMemcpy of the heap: err %d, [5] = %d", (int)ce, got[5]);
    }
#endif
    ishmem_int_get(got, buf, N, peer);
    CHECK(got[0] == me * 1000 && got[N - 1] == me * 1000 + N - 1, "get from peer: %d %d", got[0], got[N - 1]);

    int *buf2 = (int *)ishmem_calloc(N, sizeof(int));
    ishmem_int_get(got, buf2, N, me);
    bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (got[i] != 0) bad = i;
    CHECK(bad < 0, "calloc not zero at %d", bad);
    ishmem_barrier_all();
    ishmem_int_put_nbi(buf2, buf, N, peer); /* heap -> peer heap */
    ishmem_quiet();
    ishmem_barrier_all();
    ishmem_int_get(got, buf2, N, me);
    int pp = mod(me - 2, npes);
    CHECK(got[0] == pp * 1000 && got[N - 1] == pp * 1000 + N - 1, "heap->heap put_nbi: %d %d (want base %d)", got[0],
          got[N - 1], pp * 1000);

    /* ---- p / g ---- */
    double *d = (double *)ishmem_calloc(8, sizeof(double));
    char *c = (char *)ishmem_calloc(8, 1);
    ishmem_barrier_all();
    ishmem_double_p(&d[3], 2.5 + me, peer);
    ishmem_char_p(&c[3], (char)('a' + me), peer);
    ishmem_barrier_all();
    CHECK(ishmem_double_g(&d[3], me) == 2.5 + prev, "double g local %g", ishmem_double_g(&d[3], me));
    CHECK(ishmem_double_g(&d[3], peer) == 2.5 + me, "double g peer %g", ishmem_double_g(&d[3], peer));
    CHECK(ishmem_char_g(&c[3], me) == (char)('a' + prev) && ishmem_char_g(&c[2], me) == 0 &&
              ishmem_char_g(&c[4], me) == 0,
          "char p/g at an odd byte: %d %d %d", ishmem_char_g(&c[2], me), ishmem_char_g(&c[3], me),
          ishmem_char_g(&c[4], me));

    /* ---- strided ---- */
    long *s = (long *)ishmem_calloc(64, sizeof(long));
    long ls[32], lg[32];
    for (int i = 0; i < 32; i++)
        ls[i] = me * 100 + i;
    ishmem_barrier_all();
    ishmem_long_iput(s, ls, 2, 1, 16, peer); /* s[2i] = ls[i] */
    ishmem_barrier_all();
    ishmem_long_iget(lg, s, 1, 2, 16, me);
    CHECK(lg[0] == prev * 100 && lg[15] == prev * 100 + 15, "iput/iget: %ld %ld", lg[0], lg[15]);
    CHECK(ishmem_long_g(&s[1], me) == 0 && ishmem_long_g(&s[31], me) == 0, "iput wrote between strides");
    int *ib = (int *)ishmem_calloc(64, sizeof(int));
    int is[64], ig[64];
    for (int i = 0; i < 64; i++)
        is[i] = me * 100 + i;
    ishmem_barrier_all();
    ishmemx_int_ibput(ib, is, 8, 4, 3, 5, peer); /* block b: ib[8b..8b+2] = is[4b..4b+2] */
    ishmem_barrier_all();
    memset(ig, 0, sizeof ig);
    ishmemx_int_ibget(ig, ib, 4, 8, 3, 5, me); /* back to the source layout */
    int okb = 1;
    for (int b = 0; b < 5; b++)
        for (int k = 0; k < 3; k++)
            okb &= ig[4 * b + k] == prev * 100 + 4 * b + k;
    CHECK(okb && ishmem_int_g(&ib[3], me) == 0, "ibput/ibget: ig[4] = %d, ib[3] = %d", ig[4], ishmem_int_g(&ib[3], me));

    /* ---- AMOs ---- */
    int *ai = (int *)ishmem_calloc(4, sizeof(int));
    long *al = (long *)ishmem_calloc(4, sizeof(long));
    signed char *ac = (signed char *)ishmem_calloc(8, 1);
    uint64_t *au = (uint64_t *)ishmem_calloc(4, sizeof(uint64_t));
    float *af = (float *)ishmem_calloc(2, sizeof(float));
    double *ad = (double *)ishmem_calloc(2, sizeof(double));
    ishmem_barrier_all();
    /* Every PE increments PE 0's counters concurrently. */
    for (int i = 0; i < 50; i++) {
        ishmem_int_atomic_fetch_inc(&ai[0], 0);
        ishmem_long_atomic_add(&al[0], 2, 0);
    }
    for (int i = 0; i < 10; i++)
        ishmem_schar_atomic_inc(&ac[1], 0);
    ishmem_barrier_all();
    if (me == 0) {
        CHECK(ishmem_int_atomic_fetch(&ai[0], 0) == 50 * npes, "int fetch_inc total %d", ishmem_int_atomic_fetch(&ai[0], 0));
        CHECK(ishmem_long_atomic_fetch(&al[0], 0) == 100L * npes, "long add total %ld", ishmem_long_atomic_fetch(&al[0], 0));
        CHECK(ishmem_schar_atomic_fetch(&ac[1], 0) == 10 * npes, "schar inc total %d", ishmem_schar_atomic_fetch(&ac[1], 0));
        CHECK(ishmem_schar_atomic_fetch(&ac[0], 0) == 0 && ishmem_schar_atomic_fetch(&ac[2], 0) == 0,
              "schar neighbours touched");
    }
    ishmem_barrier_all();
    /* Sequences on the peer's objects (only this PE touches them: index by me is not needed,
     * each PE targets its own `peer` and objects [1..]). */
    ishmem_int_atomic_set(&ai[1], 5, peer);
    CHECK(ishmem_int_atomic_compare_swap(&ai[1], 5, 7, peer) == 5, "int cas hit");
    CHECK(ishmem_int_atomic_compare_swap(&ai[1], 5, 9, peer) == 7, "int cas miss");
    CHECK(ishmem_int_atomic_swap(&ai[1], -3, peer) == 7, "int swap");
    CHECK(ishmem_int_atomic_fetch_add(&ai[1], 10, peer) == -3, "int fetch_add");
    int fetched = 0;
    ishmem_int_atomic_fetch_add_nbi(&fetched, &ai[1], 1, peer);
    ishmem_quiet();
    CHECK(fetched == 7 && ishmem_int_atomic_fetch(&ai[1], peer) == 8, "int fetch_add_nbi: %d", fetched);
    ishmem_schar_atomic_set(&ac[5], -2, peer);
    CHECK(ishmem_schar_atomic_fetch_add(&ac[5], 3, peer) == -2, "schar fetch_add");
    CHECK(ishmem_schar_atomic_compare_swap(&ac[5], 1, 0x70, peer) == 1, "schar cas");
    CHECK(ishmem_schar_atomic_fetch_and(&ac[5], 0x0f, peer) == 0x70, "schar fetch_and");
    CHECK(ishmem_schar_atomic_fetch_or(&ac[5], 0x41, peer) == 0, "schar fetch_or");
    CHECK(ishmem_schar_atomic_fetch_xor(&ac[5], 0x01, peer) == 0x41, "schar fetch_xor");
    CHECK(ishmem_schar_atomic_swap(&ac[5], -128, peer) == 0x40, "schar swap");
    CHECK(ishmem_schar_atomic_fetch(&ac[5], peer) == -128 && ishmem_schar_atomic_fetch(&ac[4], peer) == 0 &&
              ishmem_schar_atomic_fetch(&ac[6], peer) == 0,
          "schar value / neighbours");
    ishmem_uint64_atomic_set(&au[1], 0xF0F0F0F0F0F0F0F0ull, peer);
    CHECK(ishmem_uint64_atomic_fetch_xor(&au[1], 0xFFFFFFFF00000000ull, peer) == 0xF0F0F0F0F0F0F0F0ull, "u64 xor");
    CHECK(ishmem_uint64_atomic_fetch_and(&au[1], 0xFFFF0000FFFF0000ull, peer) == 0x0F0F0F0FF0F0F0F0ull, "u64 and");
    CHECK(ishmem_uint64_atomic_fetch_or(&au[1], 1, peer) == 0x0F0F0000F0F00000ull, "u64 or");
    CHECK(ishmem_uint64_atomic_compare_swap(&au[1], 0x0F0F0000F0F00001ull, UINT64_MAX, peer) == 0x0F0F0000F0F00001ull,
          "u64 cas");
    CHECK(ishmem_uint64_atomic_fetch(&au[1], peer) == UINT64_MAX, "u64 value");
    ishmem_float_atomic_set(&af[1], 1.5f, peer);
    CHECK(ishmem_float_atomic_swap(&af[1], -0.25f, peer) == 1.5f, "float swap");
    CHECK(ishmem_float_atomic_fetch(&af[1], peer) == -0.25f, "float fetch");
    ishmem_double_atomic_set(&ad[1], 1e300, peer);
    CHECK(ishmem_double_atomic_swap(&ad[1], -2.5, peer) == 1e300, "double swap");
    CHECK(ishmem_double_atomic_fetch(&ad[1], peer) == -2.5, "double fetch");
    long lf = 0;
    ishmem_long_atomic_fetch_nbi(&lf, &al[0], 0);
    ishmem_quiet();
    CHECK(lf == 100L * npes, "long fetch_nbi %ld", lf);

    /* ---- signals ---- */
    uint64_t *sig = (uint64_t *)ishmem_calloc(2, sizeof(uint64_t));
    int *msg = (int *)ishmem_calloc(N, sizeof(int));
    ishmem_barrier_all();
    ishmem_int_put_signal(msg, src, N, sig, 1, ISHMEM_SIGNAL_ADD, peer);
    uint64_t sv = ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, 1);
    CHECK(sv == 1, "signal_wait_until returned %llu", (unsigned long long)sv);
    ishmem_int_get(got, msg, N, me);
    CHECK(got[0] == prev * 1000 && got[N - 1] == prev * 1000 + N - 1, "put_signal data %d %d", got[0], got[N - 1]);
    CHECK(ishmem_signal_fetch(sig) == 1, "signal_fetch %llu", (unsigned long long)ishmem_signal_fetch(sig));
    ishmem_barrier_all();
    ishmemx_signal_set(&sig[1], 5, peer);
    ishmemx_signal_add(&sig[1], 2, peer);
    ishmem_barrier_all();
    CHECK(ishmem_signal_fetch(&sig[1]) == 7, "signal set+add %llu", (unsigned long long)ishmem_signal_fetch(&sig[1]));

    /* ---- waits on GPU ivars ---- */
    int *flag = (int *)ishmem_calloc(4, sizeof(int));
    ishmem_barrier_all();
    ishmem_int_p(&flag[2], 42, peer);
    ishmem_int_wait_until(&flag[2], ISHMEM_CMP_EQ, 42);
    CHECK(ishmem_int_test_any(flag, 4, NULL, ISHMEM_CMP_EQ, 42) == 2, "test_any");
    int status[4] = {1, 1, 0, 1};
    ishmem_int_wait_until_all(flag, 4, status, ISHMEM_CMP_EQ, 42);
    CHECK(ishmem_int_test(&flag[1], ISHMEM_CMP_EQ, 0) == 1, "test");
    uint64_t *u = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    ishmem_barrier_all();
    ishmem_uint64_atomic_add(u, 3, peer);
    ishmem_uint64_wait_until(u, ISHMEM_CMP_GE, 3);
    CHECK(ishmem_uint64_atomic_fetch(u, me) == 3, "u64 wait_until");

    /* ---- another thread ---- */
    int *tb = (int *)ishmem_calloc(8, sizeof(int));
    ishmem_barrier_all();
    struct thread_arg ta = {&ai[2], tb, peer};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, other_thread, &ta) == 0, "pthread_create");
    pthread_join(th, NULL);
    ishmem_barrier_all();
    CHECK(ishmem_int_g(&ai[2], me) == 1 && ishmem_int_g(&tb[3], me) == 10, "thread's AMO/put: %d %d",
          ishmem_int_g(&ai[2], me), ishmem_int_g(&tb[3], me));

    /* ---- symmetric globals (host memory) ---- */
    ishmem_int_put(global_arr, src, N, peer);
    ishmem_long_atomic_add(&global_ctr, 1, 0);
    ishmem_barrier_all();
    CHECK(global_arr[0] == prev * 1000 && global_arr[N - 1] == prev * 1000 + N - 1, "global put: %d", global_arr[0]);
    if (me == 0) CHECK(global_ctr == npes, "global AMO total %ld", global_ctr);
    ishmem_barrier_all();
    ishmem_int_put(global_arr, buf, N, peer); /* heap (device) -> peer's global (host) */
    ishmem_barrier_all();
    CHECK(global_arr[7] == pp * 1000 + 7, "heap -> global put: %d (want %d)", global_arr[7], pp * 1000 + 7);
    ishmem_int_get(got, global_arr, N, peer);
    CHECK(got[7] == mod(peer - 2, npes) * 1000 + 7, "get from peer global %d", got[7]);

    /* ---- teams and collectives: on the GPU heap the host moves data with copies, stages the
     * values it combines, and sets the team's sync flags with the AMO kernel ---- */
    {
        const int M = 32768; /* 128 KiB of ints: the sliced reduction from 3 PEs on */
        int *cs = (int *)ishmem_malloc(M * sizeof(int)), *cd = (int *)ishmem_malloc(M * sizeof(int));
        int *hv = (int *)malloc(M * sizeof(int));
        for (int i = 0; i < M; i++)
            hv[i] = me * 100 + i % 50;
        ishmem_int_put(cs, hv, M, me);
        CHECK(ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, cd, cs, M) == 0, "int_sum_reduce rc");
        ishmem_int_get(hv, cd, M, me);
        bad = -1;
        for (int i = 0; i < M && bad < 0; i++)
            if (hv[i] != 100 * npes * (npes - 1) / 2 + npes * (i % 50)) bad = i;
        CHECK(bad < 0, "int_sum_reduce [%d] = %d", bad, bad < 0 ? 0 : hv[bad]);
        CHECK(ishmem_int_max_reduce(cs, cs, 40) == 0, "in-place int_max_reduce rc"); /* team-less */
        CHECK(ishmem_int_g(&cs[39], me) == (npes - 1) * 100 + 39, "in-place int_max_reduce: %d", ishmem_int_g(&cs[39], me));
        ishmem_int_p(&cs[0], me + 5, me);
        CHECK(ishmem_int_broadcast(ISHMEM_TEAM_WORLD, cd, cs, 1, npes - 1) == 0, "broadcast rc");
        CHECK(ishmem_int_g(cd, me) == npes + 4, "broadcast: %d", ishmem_int_g(cd, me));
        CHECK(ishmem_int_fcollect(ISHMEM_TEAM_WORLD, cd, cs, 1) == 0, "fcollect rc");
        ishmem_int_get(got, cd, npes, me);
        for (int p = 0; p < npes; p++)
            CHECK(got[p] == p + 5, "fcollect [%d] = %d", p, got[p]);
        CHECK(ishmem_int_collect(ISHMEM_TEAM_WORLD, cd, cs, me == 0 ? 0 : 1) == 0, "collect rc");
        ishmem_int_get(got, cd, npes - 1, me);
        for (int p = 1; p < npes; p++)
            CHECK(got[p - 1] == p + 5, "collect [%d] = %d", p - 1, got[p - 1]);
        for (int p = 0; p < npes; p++)
            ishmem_int_p(&cs[p], me * 10 + p, me);
        CHECK(ishmem_int_alltoall(ISHMEM_TEAM_WORLD, cd, cs, 1) == 0, "alltoall rc");
        ishmem_int_get(got, cd, npes, me);
        for (int p = 0; p < npes; p++)
            CHECK(got[p] == p * 10 + me, "alltoall [%d] = %d", p, got[p]);
        double dv[3] = {0.5 * me, 1.0, (double)me}, dg[3];
        double *ds = (double *)cs + 1000, *dd = (double *)cd + 1000; /* clear of cs[0 .. npes) */
        ishmem_double_put(ds, dv, 3, me);
        CHECK(ishmem_double_sum_inscan(ISHMEM_TEAM_WORLD, dd, ds, 3) == 0, "double_sum_inscan rc");
        ishmem_double_get(dg, dd, 3, me);
        CHECK(dg[1] == me + 1.0 && dg[2] == me * (me + 1) / 2.0, "double_sum_inscan %g %g", dg[1], dg[2]);
        CHECK(ishmem_double_sum_exscan(ISHMEM_TEAM_WORLD, dd, ds, 3) == 0, "double_sum_exscan rc");
        ishmem_double_get(dg, dd, 3, me);
        CHECK(dg[1] == (double)me, "double_sum_exscan %g", dg[1]);
        /* a heap source reduced into a symmetric global (host memory) */
        CHECK(ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, global_arr, cs, 2) == 0, "reduce into a global rc");
        CHECK(global_arr[1] == 10 * npes * (npes - 1) / 2 + npes, "reduce into a global: %d", global_arr[1]);
        /* a split team: its own sync area and handle */
        ishmem_team_t even = ISHMEM_TEAM_INVALID;
        CHECK(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even) == 0, "split");
        if (me % 2 == 0) {
            CHECK(ishmem_team_my_pe(even) == me / 2, "even team my_pe %d", ishmem_team_my_pe(even));
            for (int k = 0; k < 5; k++)
                CHECK(ishmem_team_sync(even) == 0, "team_sync");
            CHECK(ishmem_int_sum_reduce(even, cd, cs, 2) == 0, "reduce over the even team rc");
            int want = 0;
            for (int p = 0; p < npes; p += 2) want += p * 10 + 1;
            CHECK(ishmem_int_g(&cd[1], me) == want, "reduce over the even team: %d (want %d)", ishmem_int_g(&cd[1], me), want);
            ishmem_team_destroy(even);
        } else {
            CHECK(even == ISHMEM_TEAM_INVALID, "odd PE got team %d", even);
        }
        ishmem_barrier_all();
        free(hv);
        ishmem_free(cd);
        ishmem_free(cs);
    }

    /* ---- ishmem_ptr (NULL for a PE of another node: fabric mode, ISHMEM_NODE_SPLIT) ---- */
    int peer_on_node = ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, peer, ISHMEM_TEAM_SHARED) >= 0;
    int *pb = (int *)ishmem_ptr(buf, peer);
    CHECK((pb != NULL) == peer_on_node, "ishmem_ptr(heap, peer) is %p, peer on this node: %d", (void *)pb, peer_on_node);
#ifndef GPU_TEST_NO_CUDART
    if (expect_gpu && pb) {
        int v = -1;
        cudaError_t ce = cudaMemcpy(&v, pb + 9, sizeof v, cudaMemcpyDefault);
        CHECK(ce == cudaSuccess && v == ishmem_int_g(&buf[9], peer), "cudaMemcpy from ishmem_ptr: err %d, %d vs %d",
              (int)ce, v, ishmem_int_g(&buf[9], peer));
    }
#endif
    CHECK((ishmem_ptr(global_arr, peer) != NULL) == peer_on_node, "ishmem_ptr(global, peer): wrong for a peer on node %d", peer_on_node);

    ishmem_barrier_all();
    ishmem_free(tb);
    ishmem_free(u);
    ishmem_free(flag);
    ishmem_free(msg);
    ishmem_free(sig);
    ishmem_free(ad);
    ishmem_free(af);
    ishmem_free(au);
    ishmem_free(ac);
    ishmem_free(al);
    ishmem_free(ai);
    ishmem_free(ib);
    ishmem_free(s);
    ishmem_free(c);
    ishmem_free(d);
    ishmem_free(buf2);
    ishmem_free(aligned);
    ishmem_free(buf);
    ishmem_finalize();
    return gpu_test_end("host_ops");
}
