/* memory: ishmem_malloc / calloc / align / free, symmetric addresses, reuse.
 * usage: memory            the functional test
 *        memory large GIB  allocate GIB GiB (run with ISHMEM_SYMMETRIC_SIZE big enough) and
 *                          touch its first and last bytes on the next PE remotely */
#include "test_util.h"

/* ishmem_align with alignments 4 MiB .. 2^max_k (issue 14: they used to give addresses
 * aligned to 2 MiB only): the address is aligned on every PE, several such blocks live at
 * once, and each is the same symmetric block (a put through this PE's address lands in the
 * next PE's copy). */
static void big_alignments(int max_k) {
    int next = (t_me + 1) % t_npes, prev = (t_me + t_npes - 1) % t_npes;
    enum { KMAX = 40 };
    unsigned char *blk[KMAX] = {0};
    for (int k = 22; k <= max_k; k++) {
        size_t alignment = (size_t)1 << k;
        blk[k] = ishmem_align(alignment, 100);
        CHECK(blk[k] != NULL, "align(2^%d) NULL", k);
        CHECK(((uintptr_t)blk[k] % alignment) == 0, "align(2^%d) gave %p, not a multiple of %zu", k,
              (void *)blk[k], alignment);
        if (blk[k])
            ishmem_uchar_put(blk[k], (const unsigned char[]){(unsigned char)(k + 16 * t_me)}, 1, next);
    }
    ishmem_barrier_all();
    for (int k = 22; k <= max_k; k++)
        if (blk[k])
            CHECK_EQ(blk[k][0], k + 16 * prev);
    ishmem_barrier_all();
    for (int k = max_k; k >= 22; k--)
        ishmem_free(blk[k]);
}

static int large(size_t gib) {
    test_init();
    size_t bytes = gib << 30;
    unsigned char *p = ishmem_malloc(bytes);
    CHECK(p != NULL, "ishmem_malloc(%zu GiB) returned NULL", gib);
    if (p) {
        int next = (t_me + 1) % t_npes;
        unsigned char first = (unsigned char)(0x10 + t_me), last = (unsigned char)(0x80 + t_me);
        ishmem_uchar_p(&p[0], first, next);
        ishmem_uchar_p(&p[bytes - 1], last, next);
        ishmem_barrier_all();
        int prev = (t_me + t_npes - 1) % t_npes;
        CHECK_EQ(p[0], 0x10 + prev);
        CHECK_EQ(p[bytes - 1], 0x80 + prev);
        CHECK_EQ(ishmem_uchar_g(&p[bytes - 1], next), 0x80 + t_me);
        unsigned char *far = ishmem_ptr(&p[bytes - 1], next);
        CHECK(far && *far == 0x80 + t_me, "ishmem_ptr to the last byte");
        ishmem_free(p);
        ishmem_barrier_all();
    }
    /* with GIB GiB of heap, alignments up to 2^(30 + log2 GIB - 1) fit */
    int max_k = 29;
    while (((size_t)2 << max_k) <= bytes)
        max_k++;
    big_alignments(max_k);
    return test_finish("memory large");
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "large"))
        return large((size_t)atoi(argv[2]));
    test_init();
    int next = (t_me + 1) % t_npes;

    /* malloc: a symmetric block (the same block on every PE, reachable remotely through
     * this PE's address; the virtual addresses of the PEs need not be equal). */
    long *a = ishmem_malloc(100 * sizeof(long));
    CHECK(a != NULL, "malloc");
    CHECK(((uintptr_t)a % 8) == 0, "malloc alignment %p", (void *)a);
    long *addrs = ishmem_malloc((size_t)t_npes * sizeof(long));
    CHECK(addrs != NULL &&
              ((char *)addrs >= (char *)(a + 100) || (char *)(addrs + t_npes) <= (char *)a),
          "blocks overlap");
    for (int i = 0; i < 100; i++)
        a[i] = t_me * 1000 + i;
    ishmem_barrier_all();
    long tmp[100];
    ishmem_long_get(tmp, a, 100, next);
    for (int i = 0; i < 100; i++)
        CHECK(tmp[i] == next * 1000 + i, "a[%d] on PE %d = %ld", i, next, tmp[i]);

    /* malloc(0): NULL or a pointer that can be freed. */
    void *z = ishmem_malloc(0);
    ishmem_free(z);
    ishmem_free(NULL); /* no effect */

    /* calloc zeroes, even over memory that was used before. */
    char *dirty = ishmem_malloc(4096);
    memset(dirty, 0xAB, 4096);
    ishmem_barrier_all();
    ishmem_free(dirty);
    unsigned *c = ishmem_calloc(1024, sizeof(unsigned));
    CHECK(c != NULL, "calloc");
    int nonzero = 0;
    for (int i = 0; i < 1024; i++)
        nonzero += c[i] != 0;
    CHECK_EQ(nonzero, 0);
    /* and the peer's copy is zero too */
    unsigned peerc[1024];
    ishmem_barrier_all();
    ishmem_uint_get(peerc, c, 1024, next);
    nonzero = 0;
    for (int i = 0; i < 1024; i++)
        nonzero += peerc[i] != 0;
    CHECK_EQ(nonzero, 0);
    void *c0 = ishmem_calloc(0, 8);
    ishmem_free(c0);

    /* align: every power of two up to 2 MiB. */
    void *al[22];
    for (int k = 0; k < 22; k++) {
        size_t alignment = (size_t)1 << k;
        al[k] = ishmem_align(alignment, 24);
        CHECK(al[k] != NULL, "align(%zu) NULL", alignment);
        CHECK(((uintptr_t)al[k] % alignment) == 0, "align(%zu) gave %p", alignment, al[k]);
        if (al[k]) {
            memset(al[k], k, 24);
        }
    }
    ishmem_barrier_all();
    for (int k = 0; k < 22; k++) {
        unsigned char v[24];
        ishmem_getmem(v, al[k], 24, next);
        CHECK(v[0] == k && v[23] == k, "aligned block %d on PE %d: %d %d", k, next, v[0], v[23]);
    }
    for (int k = 21; k >= 0; k--)
        ishmem_free(al[k]);
    /* ... and above, up to half the default 1 GiB heap */
    big_alignments(29);

    /* Distinct live blocks do not overlap. */
    char *b1 = ishmem_malloc(1000), *b2 = ishmem_malloc(1000), *b3 = ishmem_malloc(1);
    CHECK(b1 && b2 && b3, "malloc");
    CHECK(b2 >= b1 + 1000 || b1 >= b2 + 1000, "b1 %p b2 %p overlap", (void *)b1, (void *)b2);
    CHECK(b3 >= b2 + 1000 || b2 >= b3 + 1, "b2 %p b3 %p overlap", (void *)b2, (void *)b3);
    CHECK(b3 >= b1 + 1000 || b1 >= b3 + 1, "b1 %p b3 %p overlap", (void *)b1, (void *)b3);

    /* Free then reuse: the heap does not leak; a freed block's space comes back. */
    ishmem_free(b2);
    char *b4 = ishmem_malloc(1000);
    CHECK(b4 != NULL, "malloc after free");
    ishmem_free(b1);
    ishmem_free(b3);
    ishmem_free(b4);
    for (int round = 0; round < 80; round++) {
        /* 80 x 16 MiB > 1 GiB default heap: the space must be reused. (Few rounds: each
         * malloc and free is a job-wide collective, a network round trip across nodes.) */
        void *p = ishmem_malloc(16 << 20);
        CHECK(p != NULL, "malloc round %d", round);
        if (!p)
            break;
        ishmem_free(p);
    }
    /* Many small blocks, freed in a different order. */
    void *many[256];
    for (int i = 0; i < 256; i++) {
        many[i] = ishmem_malloc((size_t)(i % 17 + 1) * 8);
        CHECK(many[i] != NULL, "many[%d]", i);
        if (many[i])
            memset(many[i], i, (size_t)(i % 17 + 1) * 8);
    }
    ishmem_barrier_all();
    for (int i = 0; i < 256; i++) {
        unsigned char last;
        ishmem_getmem(&last, (char *)many[i] + (i % 17 + 1) * 8 - 1, 1, next);
        CHECK(last == (unsigned char)i, "many[%d] last byte %d", i, last);
    }
    ishmem_barrier_all();
    for (int i = 0; i < 256; i += 2)
        ishmem_free(many[i]);
    for (int i = 255; i > 0; i -= 2)
        ishmem_free(many[i]);

    ishmem_barrier_all();
    ishmem_free(addrs);
    ishmem_free(c);
    ishmem_free(a);
    return test_finish("memory");
}
