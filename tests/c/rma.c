/* rma: put, get, p, g, iput, iget, ibput, ibget, put_nbi, get_nbi for every RMA type, every
 * SIZE and mem; globals and statics as targets; overlapping and zero-length transfers. */
#include "test_util.h"
#include "gen_types.h"

enum { N = 48 };
static int next, prev;

/* Value of element i of PE pe's source data. */
#define VAL(T, pe, i) ((T)((pe) * 31 + (i) * 7 + 1))

/* Both sides finished with the previous step; clear p; everyone cleared. */
static void clear_sync(void *p, size_t n) {
    ishmem_barrier_all();
    memset(p, 0, n);
    ishmem_barrier_all();
}

#define RMA_TYPED(TN, T)                                                                    \
    static void rma_##TN(void) {                                                            \
        T *dst = ishmem_calloc(N, sizeof(T));                                               \
        T *src = ishmem_malloc(N * sizeof(T));                                              \
        T loc[N];                                                                           \
        CHECK(dst && src, #TN ": alloc");                                                   \
        for (int i = 0; i < N; i++)                                                         \
            src[i] = VAL(T, t_me, i);                                                       \
        ishmem_barrier_all();                                                               \
        /* put */                                                                           \
        ishmem_##TN##_put(dst, src, N, next);                                               \
        ishmem_barrier_all();                                                               \
        for (int i = 0; i < N; i++)                                                         \
            CHECK(dst[i] == VAL(T, prev, i), #TN "_put: dst[%d]", i);                       \
        /* get */                                                                           \
        memset(loc, 0, sizeof loc);                                                         \
        ishmem_##TN##_get(loc, src, N, next);                                               \
        for (int i = 0; i < N; i++)                                                         \
            CHECK(loc[i] == VAL(T, next, i), #TN "_get: loc[%d]", i);                       \
        /* p and g */                                                                       \
        clear_sync(dst, N * sizeof(T));                                                     \
        ishmem_##TN##_p(&dst[N - 1], VAL(T, t_me, 1000), next);                             \
        ishmem_barrier_all();                                                               \
        CHECK(dst[N - 1] == VAL(T, prev, 1000), #TN "_p");                                  \
        CHECK(dst[N - 2] == (T)0, #TN "_p wrote a neighbour");                              \
        CHECK(ishmem_##TN##_g(&src[7], next) == VAL(T, next, 7), #TN "_g");                 \
        CHECK(ishmem_##TN##_g(&src[0], t_me) == VAL(T, t_me, 0), #TN "_g self");            \
        /* put_nbi / get_nbi */                                                             \
        clear_sync(dst, N * sizeof(T));                                                     \
        ishmem_##TN##_put_nbi(dst + 1, src, N - 1, next);                                   \
        ishmem_quiet();                                                                     \
        ishmem_barrier_all();                                                               \
        CHECK(dst[0] == (T)0, #TN "_put_nbi wrote before dest");                            \
        for (int i = 1; i < N; i++)                                                         \
            CHECK(dst[i] == VAL(T, prev, i - 1), #TN "_put_nbi: dst[%d]", i);               \
        memset(loc, 0, sizeof loc);                                                         \
        ishmem_##TN##_get_nbi(loc, src + 2, N - 2, next);                                   \
        ishmem_quiet();                                                                     \
        for (int i = 0; i < N - 2; i++)                                                     \
            CHECK(loc[i] == VAL(T, next, i + 2), #TN "_get_nbi: loc[%d]", i);               \
        CHECK(loc[N - 1] == (T)0, #TN "_get_nbi wrote past the end");                       \
        /* iput: dest stride 3, source stride 2, 10 elements */                            \
        clear_sync(dst, N * sizeof(T));                                                     \
        ishmem_##TN##_iput(dst, src, 3, 2, 10, next);                                       \
        ishmem_barrier_all();                                                               \
        for (int j = 0; j < N; j++) {                                                       \
            T want = (j % 3 == 0 && j / 3 < 10) ? VAL(T, prev, (j / 3) * 2) : (T)0;         \
            CHECK(dst[j] == want, #TN "_iput: dst[%d]", j);                                 \
        }                                                                                   \
        /* iget: dest stride 2, source stride 3, 12 elements */                            \
        memset(loc, 0, sizeof loc);                                                         \
        ishmem_##TN##_iget(loc, src, 2, 3, 12, next);                                       \
        for (int j = 0; j < N; j++) {                                                       \
            T want = (j % 2 == 0 && j / 2 < 12) ? VAL(T, next, (j / 2) * 3) : (T)0;         \
            CHECK(loc[j] == want, #TN "_iget: loc[%d]", j);                                 \
        }                                                                                   \
        /* ibput: blocks of 3, 4 blocks, dest stride 5, source stride 4 */                 \
        clear_sync(dst, N * sizeof(T));                                                     \
        ishmemx_##TN##_ibput(dst, src, 5, 4, 3, 4, next);                                   \
        ishmem_barrier_all();                                                               \
        for (int j = 0; j < N; j++) {                                                       \
            int b = j / 5, o = j % 5;                                                       \
            T want = (b < 4 && o < 3) ? VAL(T, prev, b * 4 + o) : (T)0;                     \
            CHECK(dst[j] == want, #TN "_ibput: dst[%d]", j);                                \
        }                                                                                   \
        /* ibget: blocks of 2, 6 blocks, dest stride 3, source stride 5 */                 \
        memset(loc, 0, sizeof loc);                                                         \
        ishmemx_##TN##_ibget(loc, src, 3, 5, 2, 6, next);                                   \
        for (int j = 0; j < N; j++) {                                                       \
            int b = j / 3, o = j % 3;                                                       \
            T want = (b < 6 && o < 2) ? VAL(T, next, b * 5 + o) : (T)0;                     \
            CHECK(loc[j] == want, #TN "_ibget: loc[%d]", j);                                \
        }                                                                                   \
        /* zero length: no effect, NULL source allowed */                                  \
        clear_sync(dst, N * sizeof(T));                                                     \
        ishmem_##TN##_put(dst, NULL, 0, next);                                              \
        ishmem_##TN##_put_nbi(dst, src, 0, next);                                           \
        ishmem_##TN##_iput(dst, src, 1, 1, 0, next);                                        \
        ishmemx_##TN##_ibput(dst, src, 1, 1, 0, 3, next);                                   \
        ishmemx_##TN##_ibput(dst, src, 4, 4, 2, 0, next);                                   \
        loc[0] = VAL(T, 9, 9);                                                              \
        ishmem_##TN##_get(loc, src, 0, next);                                               \
        ishmem_##TN##_get_nbi(loc, src, 0, next);                                           \
        ishmem_##TN##_iget(loc, src, 1, 1, 0, next);                                        \
        ishmemx_##TN##_ibget(loc, src, 1, 1, 0, 2, next);                                   \
        ishmem_quiet();                                                                     \
        ishmem_barrier_all();                                                               \
        CHECK(loc[0] == VAL(T, 9, 9), #TN ": zero-length get wrote");                       \
        for (int j = 0; j < N; j++)                                                         \
            CHECK(dst[j] == (T)0, #TN ": zero-length put wrote dst[%d]", j);                \
        ishmem_barrier_all();                                                               \
        ishmem_free(src);                                                                   \
        ishmem_free(dst);                                                                   \
    }
ISHT_RMA_TYPES(RMA_TYPED)

static unsigned char pat(int pe, size_t k) { return (unsigned char)(pe * 37 + k * 11 + 3); }

typedef void (*cont_fn)(void *, const void *, size_t, int);
typedef void (*strided_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);
typedef void (*block_fn)(void *, const void *, ptrdiff_t, ptrdiff_t, size_t, size_t, int);

/* The SIZE (and mem, E = 1) routines on byte buffers with elements of E bytes. */
static void rma_sized(const char *name, size_t E, cont_fn put, cont_fn get, cont_fn put_nbi,
                      cont_fn get_nbi, strided_fn iput, strided_fn iget, block_fn ibput,
                      block_fn ibget) {
    size_t bytes = N * E;
    unsigned char *dst = ishmem_calloc(N, E);
    unsigned char *src = ishmem_malloc(bytes);
    unsigned char loc[N * 16];
    for (size_t k = 0; k < bytes; k++)
        src[k] = pat(t_me, k);
    ishmem_barrier_all();

    put(dst, src, N, next);
    ishmem_barrier_all();
    for (size_t k = 0; k < bytes; k++)
        CHECK(dst[k] == pat(prev, k), "%s put: byte %zu", name, k);
    memset(loc, 0, sizeof loc);
    get(loc, src, N, next);
    for (size_t k = 0; k < bytes; k++)
        CHECK(loc[k] == pat(next, k), "%s get: byte %zu", name, k);

    clear_sync(dst, bytes);
    put_nbi(dst + E, src, N - 2, next);
    ishmem_quiet();
    ishmem_barrier_all();
    for (size_t k = 0; k < bytes; k++) {
        unsigned char want = (k >= E && k < (N - 1) * E) ? pat(prev, k - E) : 0;
        CHECK(dst[k] == want, "%s put_nbi: byte %zu", name, k);
    }
    memset(loc, 0, sizeof loc);
    get_nbi(loc, src + E, N - 1, next);
    ishmem_quiet();
    for (size_t k = 0; k < bytes; k++) {
        unsigned char want = k < (N - 1) * E ? pat(next, k + E) : 0;
        CHECK(loc[k] == want, "%s get_nbi: byte %zu", name, k);
    }

    if (iput) {
        clear_sync(dst, bytes);
        iput(dst, src, 4, 3, 11, next); /* dest stride 4, source stride 3 */
        ishmem_barrier_all();
        for (size_t k = 0; k < bytes; k++) {
            size_t j = k / E, o = k % E;
            unsigned char want = (j % 4 == 0 && j / 4 < 11) ? pat(prev, (j / 4) * 3 * E + o) : 0;
            CHECK(dst[k] == want, "%s iput: byte %zu", name, k);
        }
        memset(loc, 0, sizeof loc);
        iget(loc, src, 3, 2, 15, next); /* dest stride 3, source stride 2 */
        for (size_t k = 0; k < bytes; k++) {
            size_t j = k / E, o = k % E;
            unsigned char want = (j % 3 == 0 && j / 3 < 15) ? pat(next, (j / 3) * 2 * E + o) : 0;
            CHECK(loc[k] == want, "%s iget: byte %zu", name, k);
        }
        clear_sync(dst, bytes);
        ibput(dst, src, 7, 5, 4, 6, next); /* dest stride 7, source stride 5, 6 blocks of 4 */
        ishmem_barrier_all();
        for (size_t k = 0; k < bytes; k++) {
            size_t j = k / E, o = k % E, b = j / 7, bo = j % 7;
            unsigned char want = (b < 6 && bo < 4) ? pat(prev, (b * 5 + bo) * E + o) : 0;
            CHECK(dst[k] == want, "%s ibput: byte %zu", name, k);
        }
        memset(loc, 0, sizeof loc);
        ibget(loc, src, 4, 6, 3, 7, next); /* dest stride 4, source stride 6, 7 blocks of 3 */
        for (size_t k = 0; k < bytes; k++) {
            size_t j = k / E, o = k % E, b = j / 4, bo = j % 4;
            unsigned char want = (b < 7 && bo < 3) ? pat(next, (b * 6 + bo) * E + o) : 0;
            CHECK(loc[k] == want, "%s ibget: byte %zu", name, k);
        }
    }
    ishmem_barrier_all();
    ishmem_free(src);
    ishmem_free(dst);
}

/* Globals and statics of the executable are symmetric. */
long g_bss[16];
long g_data[4] = {11, 22, 33, 44};
double g_dbl[8];
static int s_int;
static short s_arr[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static void rma_globals(void) {
    static unsigned fn_static[4];
    ishmem_barrier_all();
    long v[16];
    for (int i = 0; i < 16; i++)
        v[i] = 100 * t_me + i;
    ishmem_long_put(g_bss, v, 16, next);
    ishmem_int_p(&s_int, 7 + t_me, next);
    double d[8];
    for (int i = 0; i < 8; i++)
        d[i] = t_me + i / 4.0;
    ishmem_double_iput(g_dbl, d, 2, 2, 4, next);
    ishmem_uint_p(&fn_static[t_me % 4], 0xC0DE0000u + (unsigned)t_me, next);
    ishmem_barrier_all();
    for (int i = 0; i < 16; i++)
        CHECK(g_bss[i] == 100 * prev + i, "global bss[%d] = %ld", i, g_bss[i]);
    CHECK(s_int == 7 + prev, "static int = %d", s_int);
    for (int i = 0; i < 8; i++) {
        double want = (i % 2 == 0) ? prev + i / 4.0 : 0.0;
        CHECK(g_dbl[i] == want, "global double[%d] = %g", i, g_dbl[i]);
    }
    CHECK(fn_static[prev % 4] == 0xC0DE0000u + (unsigned)prev, "function static = %x",
          fn_static[prev % 4]);
    long gd[4];
    ishmem_long_get(gd, g_data, 4, next);
    CHECK(gd[0] == 11 && gd[3] == 44, "get of initialized global: %ld %ld", gd[0], gd[3]);
    CHECK(ishmem_short_g(&s_arr[9], next) == 10, "g of a static array");
    ishmem_barrier_all();
    /* The executable's globals can also be the local source/dest of a heap transfer. */
    long *h = ishmem_malloc(4 * sizeof(long));
    ishmem_long_put(h, g_data, 4, next);
    ishmem_barrier_all();
    CHECK(h[1] == 22, "put from a global to the heap");
    ishmem_barrier_all();
    ishmem_free(h);
}

static void rma_overlap_and_large(void) {
    /* A put or get to oneself with overlapping ranges behaves like memmove. */
    unsigned char *ov = ishmem_malloc(256);
    unsigned char ref[256];
    for (int i = 0; i < 256; i++)
        ov[i] = ref[i] = (unsigned char)i;
    ishmem_putmem(ov + 10, ov, 100, t_me);
    for (int i = 0; i < 256; i++) {
        unsigned char want = (i >= 10 && i < 110) ? ref[i - 10] : ref[i];
        CHECK(ov[i] == want, "overlapping putmem to self: byte %d = %d", i, ov[i]);
    }
    for (int i = 0; i < 256; i++)
        ov[i] = (unsigned char)i;
    ishmem_getmem(ov, ov + 5, 100, t_me);
    for (int i = 0; i < 256; i++) {
        unsigned char want = i < 100 ? ref[i + 5] : ref[i];
        CHECK(ov[i] == want, "overlapping getmem from self: byte %d = %d", i, ov[i]);
    }
    int *iv = (int *)ov;
    for (int i = 0; i < 64; i++)
        iv[i] = i;
    ishmem_int_put(iv + 1, iv, 40, t_me);
    for (int i = 0; i < 41; i++)
        CHECK(iv[i] == (i == 0 ? 0 : i - 1), "overlapping int_put to self: [%d] = %d", i, iv[i]);
    ishmem_barrier_all();
    ishmem_free(ov);

    /* All-to-all: every PE writes its slot on every PE. */
    int *slots = ishmem_calloc((size_t)t_npes * 8, sizeof(int));
    int mine[8];
    for (int i = 0; i < 8; i++)
        mine[i] = t_me * 8 + i;
    for (int pe = 0; pe < t_npes; pe++)
        ishmem_int_put(&slots[t_me * 8], mine, 8, pe);
    ishmem_barrier_all();
    for (int k = 0; k < t_npes * 8; k++)
        CHECK(slots[k] == k, "all-to-all slot %d = %d", k, slots[k]);
    ishmem_barrier_all();
    ishmem_free(slots);

    /* A large transfer (8 MiB), unaligned offsets. */
    size_t big = (size_t)8 << 20;
    unsigned char *bb = ishmem_malloc(big + 64);
    unsigned char *lb = malloc(big + 64);
    for (size_t k = 0; k < big + 64; k++) {
        bb[k] = 0;
        lb[k] = pat(t_me, k);
    }
    ishmem_barrier_all();
    ishmem_putmem(bb + 3, lb + 1, big, next);
    ishmem_barrier_all();
    size_t bad = 0;
    for (size_t k = 0; k < big + 64; k++) {
        unsigned char want = (k >= 3 && k < big + 3) ? pat(prev, k - 2) : 0;
        bad += bb[k] != want;
    }
    CHECK(bad == 0, "8 MiB putmem: %zu bytes wrong", bad);
    memset(lb, 0, big + 64);
    ishmem_getmem_nbi(lb, bb + 3, big, next);
    ishmem_quiet();
    bad = 0;
    for (size_t k = 0; k < big; k++)
        bad += lb[k] != pat(t_me, k + 1);
    CHECK(bad == 0, "8 MiB getmem_nbi: %zu bytes wrong", bad);
    free(lb);
    ishmem_barrier_all();
    ishmem_free(bb);

    /* A blocking put's source may be reused as soon as the call returns (across nodes the
     * provider reads a large source after the call was posted). */
    size_t mb = (size_t)1 << 20;
    unsigned char *md = ishmem_calloc(mb, 1);
    unsigned char *ms = malloc(mb);
    for (size_t k = 0; k < mb; k++)
        ms[k] = pat(t_me, k);
    ishmem_barrier_all();
    ishmem_putmem(md, ms, mb, next);
    memset(ms, 0xEE, mb);
    ishmem_barrier_all();
    bad = 0;
    for (size_t k = 0; k < mb; k++)
        bad += md[k] != pat(prev, k);
    CHECK(bad == 0, "1 MiB putmem, source overwritten after return: %zu bytes wrong", bad);
    free(ms);
    ishmem_barrier_all();
    ishmem_free(md);
}

int main(void) {
    test_init();
    next = (t_me + 1) % t_npes;
    prev = (t_me + t_npes - 1) % t_npes;

#define CALL_TYPED(TN, T) rma_##TN();
    ISHT_RMA_TYPES(CALL_TYPED)

#define CALL_SIZED(B)                                                                       \
    rma_sized("size" #B, B / 8, ishmem_put##B, ishmem_get##B, ishmem_put##B##_nbi,          \
              ishmem_get##B##_nbi, ishmem_iput##B, ishmem_iget##B, ishmemx_ibput##B,         \
              ishmemx_ibget##B);
    ISHT_SIZES(CALL_SIZED)
    rma_sized("mem", 1, ishmem_putmem, ishmem_getmem, ishmem_putmem_nbi, ishmem_getmem_nbi, NULL,
              NULL, NULL, NULL);

    rma_globals();
    rma_overlap_and_large();
    return test_finish("rma");
}
