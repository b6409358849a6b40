/* mock_queue_remote.c: the on-queue RMA forms to a PE of another node without a GPU. Run by
 * scripts/mock-gpu-check.sh against tests/gpu/mock_libcuda.c with the PEs split into 2 pretend
 * nodes: libishmem enqueues its one-thread proxy kernels (cuda/queue_remote_kernels.cu), which
 * the mock runs on the launching thread as the device does (posting into the proxy ring and
 * waiting), and the proxy thread runs the requests through the network to the other node's GPU
 * heap. Checks the values: putmem (source in this PE's GPU heap, then in host memory), getmem
 * (into host memory and into the GPU heap), put_signal SET and ADD (data there when the signal
 * is seen), iput, ibput, iget, ibget, each completed by quiet_on_queue (a proxy quiet) and
 * read back with the host API. The stream is NULL (the mock's streams are synchronous). With
 * an argument, a bad call whose error message the caller checks: "bad_global" (a put to a
 * symmetric global of a PE of another node), "bad_sym" (dest not symmetric).
 * Build: cc mock_queue_remote.c -I$PREFIX/include -L$PREFIX/lib -lishmem */
#include <ishmem.h>
#include <ishmemx.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_test.h"

#define BYTES 4096
static int me, npes, far;
static char *sym; /* symmetric (GPU heap: the host reaches it through the API only) */
static uint64_t *sig;
static char host[BYTES], back[BYTES];
static long global_long; /* symmetric data segment */

static unsigned char pat(int pe, int k) { return (unsigned char)(pe * 37 + k * 11 + 1); }

/* This PE's sym filled with pattern k, and the host buffer with pattern k ^ 0x5a; all PEs. */
static void prepare(int k) {
    memset(host, pat(me, k), BYTES);
    ishmem_putmem(sym, host, BYTES, me);
    memset(host, pat(me, k) ^ 0x5a, BYTES);
    ishmem_barrier_all();
}

/* n bytes at PE pe's sym + off, every `stride` bytes `width` bytes, hold v. */
static void expect_at(const char *what, int pe, size_t off, size_t n, size_t stride, size_t width, unsigned char v) {
    ishmem_getmem(back, sym + off, n, pe);
    size_t bad = 0;
    for (size_t i = 0; i < n; i += stride)
        for (size_t j = 0; j < width && i + j < n; j++) bad += (unsigned char)back[i + j] != v;
    CHECK(bad == 0, "%s: %zu bytes differ from %d (e.g. %d)", what, bad, v, (unsigned char)back[0]);
}

int main(int argc, char **argv) {
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    gt_me = me;
    CHECK(ishmemx_gpu_in_use() == 1, "GPU backend expected");
    far = (me + npes / 2) % npes;
    CHECK(npes % 2 == 0 && ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, far, ISHMEM_TEAM_SHARED) < 0,
          "PE %d expected on another node (run with ISHMEM_NODE_SPLIT=2)", far);
    sym = (char *)ishmem_malloc(BYTES);
    sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    ishmemx_queue_t q = NULL;
    if (argc > 1) {
        if (!strcmp(argv[1], "bad_global")) ishmemx_long_put_on_queue(&global_long, (long *)host, 1, far, q);
        if (!strcmp(argv[1], "bad_sym")) ishmemx_putmem_on_queue(malloc(64), host, 64, far, q);
        ishmemx_quiet_on_queue(q);
        ishmem_finalize();
        return 0; /* the bad call should have ended the job */
    }
    int k = 0;

    /* putmem from this PE's GPU heap (device memory: the proxy copies it through a host
     * buffer), then from host memory; quiet_on_queue, then a host get of the target */
    prepare(++k);
    ishmemx_putmem_on_queue(sym + 1024, sym, 1024, far, q);
    ishmemx_putmem_nbi_on_queue(sym + 2048, host, 1024, far, q);
    ishmemx_quiet_on_queue(q);
    expect_at("putmem_on_queue from the GPU heap (other node)", far, 1024, 1024, 1, 1, pat(me, k));
    expect_at("putmem_nbi_on_queue from host memory (other node)", far, 2048, 1024, 1, 1, pat(me, k) ^ 0x5a);
    ishmem_barrier_all();

    /* getmem into host memory and into this PE's GPU heap */
    prepare(++k);
    memset(back, 0, BYTES);
    ishmemx_getmem_on_queue(back, sym, 512, far, q);
    size_t bad = 0;
    for (int i = 0; i < 512; i++) bad += (unsigned char)back[i] != pat(far, k);
    CHECK(bad == 0, "getmem_on_queue into host memory (other node): %zu bytes differ", bad);
    ishmemx_getmem_nbi_on_queue(sym + 3072, sym + 8, 512, far, q);
    ishmemx_quiet_on_queue(q);
    expect_at("getmem_nbi_on_queue into the GPU heap (other node)", me, 3072, 512, 1, 1, pat(far, k));
    ishmem_barrier_all();

    /* put_signal: SET 7 with 100 bytes, then ADD 5 with 64 longs (nbi); the data is here once
     * the signal is */
    prepare(++k);
    ishmemx_putmem_signal_on_queue(sym + 100, host, 100, sig, 7, ISHMEM_SIGNAL_SET, far, q);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 7);
    expect_at("putmem_signal_on_queue (other node)", me, 100, 100, 1, 1, pat(far, k) ^ 0x5a);
    ishmem_barrier_all(); /* every PE saw 7 before any adds */
    ishmemx_long_put_signal_nbi_on_queue((long *)(sym + 1024), (long *)(sym + 512), 64, sig, 5, ISHMEM_SIGNAL_ADD, far, q);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, 12); /* far may have added 1 already */
    expect_at("long_put_signal_nbi_on_queue (other node)", me, 1024, 512, 1, 1, pat(far, k));
    ishmemx_putmem_signal_on_queue(NULL, NULL, 0, sig, 1, ISHMEM_SIGNAL_ADD, far, q);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 13);
    ishmem_barrier_all();

    /* strided: iput 8 ints every 3rd from host memory; ibput 4 blocks of 2 longs, 4 apart
     * there, from the GPU heap (2 apart); iget 8 shorts every 2nd into host memory (every 3rd
     * there); ibget 3 blocks of 3 bytes into the GPU heap */
    prepare(++k);
    memset(back, 0, BYTES);
    ishmem_putmem(sym + 2048, back, 1024, me); /* zeros where the puts land */
    ishmem_barrier_all();
    for (int i = 0; i < 8; i++) ((int *)host)[i] = me * 1000 + i;
    ishmemx_int_iput_on_queue((int *)(sym + 2048), (int *)host, 3, 1, 8, far, q);
    ishmemx_ibput64_on_queue(sym + 2560, sym, 4, 2, 2, 4, far, q);
    ishmemx_quiet_on_queue(q);
    ishmem_barrier_all();
    int iv[24];
    ishmem_getmem(iv, sym + 2048, sizeof iv, me);
    bad = 0;
    for (int i = 0; i < 24; i++) bad += iv[i] != (i % 3 ? 0 : far * 1000 + i / 3);
    CHECK(bad == 0, "int_iput_on_queue (other node): %zu ints wrong (e.g. [3] = %d)", bad, iv[3]);
    for (int b = 0; b < 4; b++) {
        expect_at("ibput64_on_queue blocks (other node)", me, 2560 + 32 * b, 16, 1, 1, pat(far, k));
        expect_at("ibput64_on_queue gaps (other node)", me, 2560 + 32 * b + 16, 16, 1, 1, 0);
    }
    short sv[16];
    memset(sv, 0, sizeof sv);
    for (int i = 0; i < 8; i++) {
        short v = (short)(far * 100 + i);
        ishmem_putmem(sym + 3072 + 6 * i, &v, 2, far); /* far's shorts, every 3rd */
    }
    ishmem_barrier_all();
    ishmemx_short_iget_on_queue(sv, (short *)(sym + 3072), 2, 3, 8, far, q);
    bad = 0;
    for (int i = 0; i < 16; i++) bad += sv[i] != (i % 2 ? 0 : (short)(far * 100 + i / 2));
    CHECK(bad == 0, "short_iget_on_queue (other node): %zu shorts wrong", bad);
    ishmemx_ibget8_on_queue(sym + 3584, sym, 4, 5, 3, 3, far, q);
    ishmemx_quiet_on_queue(q);
    for (int b = 0; b < 3; b++) expect_at("ibget8_on_queue (other node)", me, 3584 + 4 * b, 3, 1, 1, pat(far, k));
    ishmem_barrier_all();

    ishmem_free(sig);
    ishmem_free(sym);
    ishmem_finalize();
    return gpu_test_end("mock_queue_remote");
}
