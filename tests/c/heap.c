/* heap: exhaustion and fragmentation of the symmetric heap (run with a small heap,
 * ISHMEM_SYMMETRIC_SIZE=4M). Three cycles of:
 *   1. 64 KiB blocks until ishmem_malloc returns NULL, then 64-byte blocks until NULL; every
 *      block filled with its own pattern (through ishmem_putmem: the heap may be GPU memory);
 *   2. requests that can never be met return NULL: malloc(SIZE_MAX), calloc whose count x size
 *      overflows, align(4096, SIZE_MAX / 2), malloc(0);
 *   3. every pattern intact (no allocation overlapped another, nothing was corrupted);
 *   4. every other 64 KiB block and every small block freed: a 192 KiB request returns NULL
 *      (no hole is that large), 64 KiB requests fill the holes again (at least half the blocks);
 *   5. every pattern intact; everything freed; one block as large as all the 64 KiB blocks
 *      together succeeds (the free ranges coalesced) and holds a pattern end to end.
 * The cycles find the same number of blocks (nothing leaks in the allocator). With
 * ISHMEM_DEBUG=1 each NULL comes with a warning saying why (checked by ctest). */
#include "test_util.h"

enum { BIG = 65536, SMALL = 64, MAXB = 4096 };
static void *big[MAXB], *small[MAXB];
static int nbig, nsmall;
static uint64_t buf[(3 * BIG) / 8];

static uint64_t pat(uintptr_t p, size_t i) {
    uint64_t z = (uint64_t)p * 0x9e3779b97f4a7c15ull + i + (uint64_t)t_me * 0x1000003ull;
    z ^= z >> 29;
    return z * 0xbf58476d1ce4e5b9ull;
}
static void fill(void *p, size_t n) {
    for (size_t off = 0; off < n; off += sizeof buf) {
        size_t c = n - off < sizeof buf ? n - off : sizeof buf;
        for (size_t i = 0; i < c / 8; i++) buf[i] = pat((uintptr_t)p, off / 8 + i);
        ishmem_putmem((char *)p + off, buf, c, t_me);
    }
}
static int intact(void *p, size_t n) {
    for (size_t off = 0; off < n; off += sizeof buf) {
        size_t c = n - off < sizeof buf ? n - off : sizeof buf;
        ishmem_getmem(buf, (char *)p + off, c, t_me);
        for (size_t i = 0; i < c / 8; i++)
            if (buf[i] != pat((uintptr_t)p, off / 8 + i)) return 0;
    }
    return 1;
}
static void check_all(const char *when) {
    for (int i = 0; i < nbig; i++)
        if (big[i]) CHECK(intact(big[i], BIG), "%s: 64 KiB block %d at %p corrupted", when, i, big[i]);
    for (int i = 0; i < nsmall; i++)
        if (small[i]) CHECK(intact(small[i], SMALL), "%s: small block %d at %p corrupted", when, i, small[i]);
}

static int cycle(void) {
    nbig = nsmall = 0;
    while (nbig < MAXB && (big[nbig] = ishmem_malloc(BIG)) != NULL) fill(big[nbig++], BIG);
    CHECK(nbig > 0 && nbig < MAXB, "64 KiB blocks before NULL: %d (run with ISHMEM_SYMMETRIC_SIZE=4M)", nbig);
    while (nsmall < MAXB && (small[nsmall] = ishmem_malloc(SMALL)) != NULL) fill(small[nsmall++], SMALL);
    CHECK(nsmall < MAXB, "small blocks never ran out");

    CHECK(ishmem_malloc(SIZE_MAX) == NULL, "malloc(SIZE_MAX)");
    CHECK(ishmem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflowing count x size");
    CHECK(ishmem_align(4096, SIZE_MAX / 2) == NULL, "align(4096, SIZE_MAX / 2)");
    CHECK(ishmem_malloc(0) == NULL, "malloc(0)");
    CHECK(ishmem_malloc(BIG) == NULL, "64 KiB after exhaustion");
    check_all("after exhaustion");

    for (int i = 0; i < nbig; i += 2) {
        ishmem_free(big[i]);
        big[i] = NULL;
    }
    for (int i = 0; i < nsmall; i++) {
        ishmem_free(small[i]);
        small[i] = NULL;
    }
    CHECK(ishmem_malloc(3 * BIG) == NULL, "192 KiB from a heap of 64 KiB holes");
    int refilled = 0;
    for (int i = 0; i < nbig; i += 2)
        if ((big[i] = ishmem_malloc(BIG)) != NULL) {
            fill(big[i], BIG);
            refilled++;
        }
    CHECK(refilled >= (nbig + 1) / 2, "64 KiB blocks refilled into the holes: %d of %d", refilled, (nbig + 1) / 2);
    check_all("after refilling the holes");

    for (int i = 0; i < nbig; i++)
        if (big[i]) ishmem_free(big[i]);
    void *all = ishmem_malloc((size_t)nbig * BIG);
    CHECK(all != NULL, "one block of %d x 64 KiB after freeing everything", nbig);
    if (all) {
        fill(all, (size_t)nbig * BIG);
        /* a peer writes the last word too */
        ishmem_barrier_all();
        uint64_t v = 0xfeedull + (uint64_t)t_me;
        ishmem_putmem((char *)all + (size_t)nbig * BIG - 8, &v, 8, (t_me + 1) % t_npes);
        ishmem_barrier_all();
        uint64_t got = 0;
        ishmem_getmem(&got, (char *)all + (size_t)nbig * BIG - 8, 8, t_me);
        CHECK_EQ(got, 0xfeedull + (uint64_t)((t_me + t_npes - 1) % t_npes));
        ishmem_putmem((char *)all + (size_t)nbig * BIG - 8, &buf[0], 0, t_me);
        ishmem_barrier_all();
        ishmem_free(all);
    }
    return nbig;
}

int main(void) {
    test_init();
    int first = cycle();
    for (int c = 1; c < 3; c++) {
        int n = cycle();
        CHECK(n == first, "cycle %d: %d blocks, the first cycle %d (a leak in the allocator?)", c, n, first);
    }
    if (t_me == 0) printf("heap: %d blocks of 64 KiB per cycle, 3 cycles\n", first);
    return test_finish("heap");
}
