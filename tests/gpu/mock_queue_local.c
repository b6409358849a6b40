/* mock_queue_local.c: the contiguous on-queue puts and gets inside one node, without a GPU. Run
 * by scripts/mock-gpu-check.sh against tests/gpu/mock_libcuda.c (which runs the SM copy kernels
 * ishmemi_q_putmem/getmem as the device does, and copy-engine copies as memmove) with 2 PEs,
 * on one mock device and on two. Each PE puts to and gets from its peer (8 B, 4 KiB from its
 * GPU heap, 4 KiB from host memory, 4 KiB into its heap, 512 B into host memory, 64 KiB + 1 B)
 * and from itself (4 KiB put, 64 B get), completes them with quiet_on_queue and checks every
 * byte with the host API. Under ISHMEM_QUEUE_STATS=1 the finalize line tells which path each
 * took; the script checks it: to a PE on another GPU every copy is a copy-engine copy (NVSHMEM
 * does the same; a kernel per small put cost twice the time on two H100s, issue 24), within one
 * GPU the kernel serves those up to ISHMEM_QUEUE_KERNEL_MAX whose local side it can reach:
 *   two devices: 9 calls, 2 kernel launches (the PE's own), 6 copy-engine copies;
 *   one device:  9 calls, 5 kernel launches, 3 copy-engine copies (host memory, 64 KiB + 1).
 * The stream is NULL (the mock's streams are synchronous).
 * Build: cc mock_queue_local.c -I$PREFIX/include -L$PREFIX/lib -lishmem */
#include <ishmem.h>
#include <ishmemx.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_test.h"

#define BIG (64 * 1024 + 1)
#define AREA (4 * BIG)
static int me, far;
static char *sym;
static unsigned char host[BIG], back[BIG];

static unsigned char pat(int pe, size_t i, int k) { return (unsigned char)(pe * 37 + i * 7 + (i >> 8) + k * 11 + 1); }

/* n bytes at PE pe's sym + off equal pattern (src_pe, k) shifted by `from`. */
static void expect_at(const char *what, int pe, size_t off, size_t n, int src_pe, size_t from, int k) {
    ishmem_getmem(back, sym + off, n, pe);
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (back[i] != pat(src_pe, from + i, k) && bad++ == 0) first = i;
    CHECK(bad == 0, "%s: %zu of %zu bytes wrong (first at %zu)", what, bad, n, first);
}

int main(void) {
    ishmem_init();
    me = ishmem_my_pe();
    gt_me = me;
    CHECK(ishmemx_gpu_in_use() == 1, "GPU backend expected");
    CHECK(ishmem_n_pes() == 2, "2 PEs expected, got %d", ishmem_n_pes());
    far = 1 - me;
    sym = (char *)ishmem_malloc(AREA);
    CHECK(sym != NULL, "ishmem_malloc(%d)", AREA);
    /* sym[0, BIG) holds this PE's pattern 1, the rest is zero; host holds pattern 2 */
    for (size_t i = 0; i < BIG; i++) host[i] = pat(me, i, 1);
    ishmem_putmem(sym, host, BIG, me);
    memset(back, 0, sizeof back);
    for (size_t off = BIG; off < AREA; off += BIG) ishmem_putmem(sym + off, back, off + BIG <= AREA ? BIG : AREA - off, me);
    for (size_t i = 0; i < BIG; i++) host[i] = pat(me, i, 2);
    ishmem_barrier_all();

    ishmemx_queue_t q = NULL;
    char *r1 = sym + BIG, *r2 = sym + 2 * BIG, *r3 = sym + 3 * BIG;
    /* to the peer */
    ishmemx_putmem_on_queue(r1, sym, 8, far, q);                /* 8 B from the GPU heap */
    ishmemx_putmem_on_queue(r1 + 64, sym + 64, 4096, far, q);   /* 4 KiB from the GPU heap */
    ishmemx_putmem_on_queue(r1 + 8192, host, 4096, far, q);     /* 4 KiB from host memory */
    ishmemx_getmem_on_queue(r2, sym + 16, 4096, far, q);        /* 4 KiB into the GPU heap */
    static unsigned char hget[512];
    ishmemx_getmem_on_queue(hget, sym + 100, 512, far, q);      /* 512 B into host memory */
    ishmemx_putmem_on_queue(r3, sym, BIG, far, q);              /* above ISHMEM_QUEUE_KERNEL_MAX */
    /* to itself */
    ishmemx_putmem_on_queue(r2 + 8192, sym + 3, 4096, me, q);
    ishmemx_getmem_on_queue(r2 + 16384, sym + 5, 64, me, q);
    ishmemx_quiet_on_queue(q);
    ishmem_barrier_all();

    expect_at("putmem_on_queue 8 B to the peer", me, BIG, 8, far, 0, 1);
    expect_at("putmem_on_queue 4 KiB to the peer", me, BIG + 64, 4096, far, 64, 1);
    {
        ishmem_getmem(back, r1 + 8192, 4096, me);
        size_t bad = 0;
        for (size_t i = 0; i < 4096; i++) bad += back[i] != pat(far, i, 2);
        CHECK(bad == 0, "putmem_on_queue 4 KiB from host memory to the peer: %zu bytes wrong", bad);
    }
    expect_at("getmem_on_queue 4 KiB from the peer", me, 2 * BIG, 4096, far, 16, 1);
    {
        size_t bad = 0;
        for (size_t i = 0; i < 512; i++) bad += hget[i] != pat(far, 100 + i, 1);
        CHECK(bad == 0, "getmem_on_queue 512 B from the peer into host memory: %zu bytes wrong", bad);
    }
    expect_at("putmem_on_queue 64 KiB + 1 B to the peer", me, 3 * BIG, BIG, far, 0, 1);
    expect_at("putmem_on_queue 4 KiB to itself", me, 2 * BIG + 8192, 4096, me, 3, 1);
    expect_at("getmem_on_queue 64 B from itself", me, 2 * BIG + 16384, 64, me, 5, 1);
    /* nothing beyond the puts' ends was written */
    ishmem_getmem(back, r1 + 8, 56, me);
    size_t stray = 0;
    for (int i = 0; i < 56; i++) stray += back[i] != 0;
    CHECK(stray == 0, "bytes after the 8-byte put: %zu not zero", stray);

    ishmem_barrier_all();
    ishmem_free(sym);
    int rc = gpu_test_end("mock_queue_local");
    ishmem_finalize();
    return rc;
}
