/* mock_proxy_coll.c: the proxy's collective requests (ISHMEMI_PROXY_COLL, device_state.h)
 * without a GPU. Run by scripts/mock-gpu-check.sh against tests/gpu/mock_libcuda.c with the
 * PEs split into pretend nodes (the proxy ring exists only when the job spans nodes): this
 * program posts into its PE's ring what a kernel's collective posts (include/ishmem/cuda_coll.cuh:
 * coll_post), from the host, as the only poster (its own ticket count), and checks the values
 * the proxy thread's host collectives leave in the GPU heap (read back with the host API).
 * Covers: the F_REMOTE flag of the world and shared teams' descriptors, team sync, broadcast
 * (root 1), fcollect, collect (PE i gives i + 1 longs), alltoall, reductions of every element
 * class and operator (int32 sum, double max, uint64 xor, int16 min, uint8 and/or, float prod,
 * int8 prod wrapping, uint32 max), int64 inscan and exscan, an in-place sum, a reduction on the
 * shared team, 1024 + 5 requests (the ring wraps), and the collectives of two teams posted in
 * opposite orders on even and odd PEs (each team's collectives run on a thread of their own).
 * With an argument, a bad request or a fault whose error message the caller checks: "bad_root"
 * (broadcast root out of range), "bad_kind" (an unknown collective), "bad_sym" (dest outside
 * the heap), "bad_inline" (an inline put longer than a slot's inline area), "proxy_panic",
 * "ring_full", "peer_dies" (see below). Also the inline puts (ISHMEMI_PROXY_INLINE): sizes at
 * and around the limit, full areas back to back, the areas wrapping with the slots.
 * Build: cc mock_proxy_coll.c -I$PREFIX/include -L$PREFIX/lib -lishmem */
#include <ishmem.h>
#include <ishmemx.h>
#include <ishmem/device_state.h>
#include <stdint.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "gpu_test.h"

static ishmemi_dev_state_t st;
static int bound;
static int bind(const void *state, size_t bytes) {
    if (bytes != sizeof st) return 1;
    memcpy(&st, state, bytes);
    bound = 1;
    return 0;
}
__attribute__((constructor)) static void register_binder(void) { ishmemx_cuda_register_binder(bind); }

static uint64_t ticket; /* this program is the ring's only poster */

static volatile uint64_t *slot(uint64_t t) {
    return ((volatile ishmemi_proxy_slot_t *)(uintptr_t)st.proxy_ring)[t % ISHMEMI_PROXY_SLOTS].w;
}

/* As the device's proxy_post: takes a ticket, waits for the slot (back-pressure), writes the
 * request; returns the ticket. */
static uint64_t post_only(uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4, uint64_t w5, uint64_t w6) {
    uint64_t t = ticket++;
    volatile uint64_t *s = slot(t);
    if (t >= ISHMEMI_PROXY_SLOTS)
        while (__atomic_load_n(&s[7], __ATOMIC_ACQUIRE) != t - ISHMEMI_PROXY_SLOTS + 1) {
        }
    s[1] = w1, s[2] = w2, s[3] = w3, s[4] = w4, s[5] = w5, s[6] = w6;
    __atomic_store_n(&s[0], t + 1, __ATOMIC_RELEASE);
    return t;
}

/* As the device's proxy_wait: the reply of request t (its halves in words 6 and 7, each beside
 * the request's tag: device_state.h); releases the slot (in word 7, which the device's take
 * accepts as well as the slot's release word in device memory, which this program cannot
 * write). */
static uint64_t wait_reply(uint64_t t) {
    volatile uint64_t *s = slot(t);
    const uint64_t tag = ISHMEMI_PROXY_HELD | ((t + 1) & 0x7fffffffull) << 32;
    uint64_t lo, hi;
    do {
        lo = __atomic_load_n(&s[6], __ATOMIC_RELAXED);
        hi = __atomic_load_n(&s[7], __ATOMIC_ACQUIRE);
    } while (((lo ^ tag) | (hi ^ tag)) >> 32);
    __atomic_store_n(&s[7], t + 1, __ATOMIC_RELEASE);
    return (lo & 0xffffffffull) | hi << 32;
}

/* One collective request, encoded as cuda_coll.cuh's coll_post does; returns its ticket. */
static uint64_t coll_post(int team, int what, int cls, unsigned width, int op, void *dest, const void *src, size_t n,
                          int root) {
    uint64_t w1 = ISHMEMI_PROXY_COLL | (uint64_t)width << 8 | (uint64_t)(op & 0xff) << 16 | ISHMEMI_PROXY_REPLY |
                  (uint64_t)(uint32_t)st.my_pe << 32;
    uint64_t w6 = (uint64_t)(uint32_t)team | (uint64_t)what << 32 | (uint64_t)cls << 40;
    return post_only(w1, (uint64_t)(uintptr_t)dest, (uint64_t)(uintptr_t)src, n, (uint64_t)(uint32_t)root, w6);
}

/* One collective, waited for: its return code. */
static int coll(int team, int what, int cls, unsigned width, int op, void *dest, const void *src, size_t n, int root) {
    return (int)wait_reply(coll_post(team, what, cls, width, op, dest, src, n, root));
}

/* A device p of a long to PE pe, no reply (cuda_impl.cuh: proxy_w1(ISHMEMI_PROXY_P, ...)). */
static void p_post(long *dest, long v, int pe) {
    post_only(ISHMEMI_PROXY_P | (uint64_t)sizeof(long) << 8 | (uint64_t)(uint32_t)pe << 32, (uint64_t)(uintptr_t)dest,
              (uint64_t)v, sizeof(long), 0, 0);
}

/* An inline put of n bytes (at most ISHMEMI_PROXY_INLINE_BYTES, or more for the bad case),
 * as cuda_impl.cuh's proxy_put posts it: the bytes into the slot's inline area, then the
 * request with ISHMEMI_PROXY_INLINE and the area's address; no reply. */
static void inline_post(void *dest, const void *data, size_t n, int pe) {
    uint64_t t = ticket;
    volatile uint64_t *s = slot(t);
    if (t >= ISHMEMI_PROXY_SLOTS)
        while (__atomic_load_n(&s[7], __ATOMIC_ACQUIRE) != t - ISHMEMI_PROXY_SLOTS + 1) {
        }
    char *area = (char *)(uintptr_t)(st.proxy_ring + ISHMEMI_PROXY_SLOTS * sizeof(ishmemi_proxy_slot_t) +
                                     (t % ISHMEMI_PROXY_SLOTS) * ISHMEMI_PROXY_INLINE_BYTES);
    memcpy(area, data, n);
    post_only(ISHMEMI_PROXY_PUT | ISHMEMI_PROXY_INLINE | (uint64_t)(uint32_t)pe << 32, (uint64_t)(uintptr_t)dest,
              (uint64_t)(uintptr_t)area, n, 0, 0);
}

/* A device quiet through the proxy: replied once every earlier request is complete. */
static void quiet_post(void) {
    wait_reply(post_only(ISHMEMI_PROXY_QUIET | ISHMEMI_PROXY_REPLY | (uint64_t)(uint32_t)st.my_pe << 32, 0, 0, 0, 0, 0));
}

static int me, npes;
static char *dst, *src; /* symmetric (GPU heap: the host reaches it through the API only) */
#define BYTES 4096

static void put_src(const void *h, size_t n) { ishmem_putmem(src, h, n, me); }
static void get_dst(void *h, size_t n) { ishmem_getmem(h, dst, n, me); }
static void zero_dst(void) {
    static char z[BYTES];
    ishmem_putmem(dst, z, BYTES, me);
}

/* This PE's descriptor flags of team slot t (the words kernels read). */
static uint32_t desc_flags(int t) {
    uint64_t *sync = (uint64_t *)(uintptr_t)st.heap_base;
    uint64_t area = ishmem_uint64_g(&sync[ISHMEMI_SYNC_TEAM_AREA], me);
    ishmemi_team_desc_t d;
    ishmem_getmem(&d, (char *)(uintptr_t)(st.heap_base + area + (uint64_t)t * ISHMEMI_TEAM_AREA_BYTES) + 8 * ISHMEMI_TEAM_DESC_WORD,
                  sizeof d, me);
    return d.flags;
}

#define REDUCE_CHECK(T, CLS, OP, WHAT, INIT, COMBINE)                                                        \
    do {                                                                                                   \
        T h[16], want[16], got[16];                                                                        \
        for (int e = 0; e < 16; e++) h[e] = (T)(INIT(me, e));                                              \
        put_src(h, sizeof h);                                                                              \
        zero_dst();                                                                                        \
        int upto = (WHAT) == ISHMEMI_COLL_REDUCE ? npes : (WHAT) == ISHMEMI_COLL_INSCAN ? me + 1 : me;     \
        for (int e = 0; e < 16; e++) {                                                                     \
            T acc = 0;                                                                                     \
            for (int p = 0; p < upto; p++) {                                                               \
                T v = (T)(INIT(p, e));                                                                     \
                acc = p == 0 ? v : (T)(COMBINE(acc, v));                                                   \
            }                                                                                              \
            want[e] = acc;                                                                                 \
        }                                                                                                  \
        int rc = coll(ISHMEM_TEAM_WORLD, WHAT, CLS, sizeof(T), OP, dst, src, 16, 0);                       \
        get_dst(got, sizeof got);                                                                          \
        int bad = 0;                                                                                       \
        for (int e = 0; e < 16; e++) bad += got[e] != want[e];                                             \
        CHECK(rc == 0 && bad == 0, "%s %s op %d: rc %d, %d wrong (e.g. got %g, want %g)", #T, #WHAT, OP,   \
              rc, bad, (double)got[1], (double)want[1]);                                                   \
    } while (0)

#define I_A(p, e) ((p) * 7 + (e) * 3 - 20)
#define I_BITS(p, e) (0xFFu ^ (1u << (((p) + (e)) % 8)))
#define I_F(p, e) (0.5f + (float)(((p) + (e)) % 3))
#define I_PROD8(p, e) ((p) * 3 + (e) + 7)
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define MAXF(a, b) ((a) > (b) ? (a) : (b))
#define MINF(a, b) ((a) < (b) ? (a) : (b))
#define XORF(a, b) ((a) ^ (b))
#define ANDF(a, b) ((a) & (b))
#define ORF(a, b) ((a) | (b))

int main(int argc, char **argv) {
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    gt_me = me;
    CHECK(bound && st.proxy_ring != 0, "no proxy ring (bound %d): run with the PEs split into nodes", bound);
    if (!bound || !st.proxy_ring) {
        ishmem_finalize();
        return gpu_test_end("mock_proxy_coll");
    }
    dst = (char *)ishmem_malloc(BYTES);
    src = (char *)ishmem_malloc(BYTES);
    CHECK(dst && src, "symmetric allocation");
    int node_pes = ishmem_team_n_pes(ISHMEM_TEAM_SHARED);

    if (argc > 1) {
        /* Error paths: each ends the job with a PE-tagged message naming the device call. */
        ishmem_barrier_all();
        if (!strcmp(argv[1], "bad_root")) coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_BROADCAST, 0, 1, 0, dst, src, 8, npes + 3);
        if (!strcmp(argv[1], "bad_kind") && me == npes - 1) coll(ISHMEM_TEAM_WORLD, 42, 0, 1, 0, dst, src, 8, 0);
        if (!strcmp(argv[1], "bad_sym") && me == 0) coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_FCOLLECT, 0, 1, 0, malloc(64), src, 8, 0);
        /* an inline put longer than the slot's inline area */
        if (!strcmp(argv[1], "bad_inline") && me == 0) {
            static char big[ISHMEMI_PROXY_INLINE_BYTES + 1];
            inline_post(dst, big, sizeof big, npes - 1);
        }
        /* Faults (item 5 of issue 13). The proxy thread dies: run with
         * ISHMEMI_TEST_PROXY_FAULT=panic@0; PE 0's first request panics the thread, the job
         * ends naming it, PE 0 and the internal error. */
        if (!strcmp(argv[1], "proxy_panic") && me == 0) {
            p_post((long *)dst, 1, npes - 1);
            ishmem_quiet(); /* the host goes on; the job must end anyway */
            sleep(30);
        }
        /* A request that never finishes and a full ring behind it: run with
         * ISHMEMI_TEST_PROXY_FAULT=stall@3 ISHMEM_PROXY_STALL_S=2; PE 0 posts more requests
         * than the ring holds (the poster waits for slots that never free), the proxy's monitor
         * ends the job naming the device call, request 3 and its PE. */
        if (!strcmp(argv[1], "ring_full") && me == 0)
            for (int i = 0; i < 2 * ISHMEMI_PROXY_SLOTS; i++) p_post((long *)dst, i, npes - 1);
        /* A PE of the other node dies while this PE's kernel waits on it in a collective: PE 0
         * posts a team sync the last PE never joins (it is SIGKILLed); the job ends naming it. */
        if (!strcmp(argv[1], "peer_dies")) {
            if (me == npes - 1) {
                usleep(300000);
                kill(getpid(), SIGKILL);
            }
            if (me == 0) coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_SYNC, 0, 1, 0, NULL, NULL, 0, 0);
            sleep(30);
        }
        ishmem_barrier_all();
        printf("mock_proxy_coll: PE %d: %s did not end the job\n", me, argv[1]);
        ishmem_finalize();
        return 1;
    }

    /* the descriptors' flags: the world spans the nodes, the shared team is this node */
    CHECK(desc_flags(ISHMEM_TEAM_WORLD) & ISHMEMI_TEAM_F_REMOTE, "world flags %#x", desc_flags(ISHMEM_TEAM_WORLD));
    CHECK(!(desc_flags(ISHMEM_TEAM_SHARED) & ISHMEMI_TEAM_F_REMOTE), "shared flags %#x", desc_flags(ISHMEM_TEAM_SHARED));

    /* Inline puts (issue 23): the bytes in the ring's inline areas, to the PE of the other node
     * whose far is this PE. Sizes at and around the limit with 16-byte gaps that must stay 0;
     * 8 full areas back to back to consecutive destinations (the proxy runs them as one
     * request when it finds them posted together); 1100 8-byte puts (the inline areas wrap
     * with the slots). Then a proxy quiet, and each PE checks what its far wrote here. */
    {
#define INL ISHMEMI_PROXY_INLINE_BYTES
        enum { WRAP = ISHMEMI_PROXY_SLOTS + 76 };
        static const size_t sizes[] = {1, 7, INL - 1, INL};
        size_t offs[4], o = 0;
        for (int i = 0; i < 4; i++) offs[i] = o, o += sizes[i] + 16;
        const size_t full_at = (o + 63) & ~(size_t)63, wrap_at = full_at + 8 * INL, total = wrap_at + WRAP * 8;
        char *ib = (char *)ishmem_malloc(total);
        static unsigned char h[8 * INL], z[8 * INL + 4096 + WRAP * 8], got[8 * INL + 4096 + WRAP * 8];
        CHECK(ib && total <= sizeof z, "inline buffer (%zu bytes)", total);
        ishmem_putmem(ib, z, total, me);
        ishmem_barrier_all();
        int far = (me + npes / 2) % npes;
#define IPAT(pe, i) ((unsigned char)((pe) * 29 + (i) * 7 + ((i) >> 8) + 3))
        for (size_t i = 0; i < sizeof h; i++) h[i] = IPAT(me, i);
        for (int i = 0; i < 4; i++) inline_post(ib + offs[i], h, sizes[i], far);
        for (int a = 0; a < 8; a++) inline_post(ib + full_at + (size_t)a * INL, h + (size_t)a * INL, INL, far);
        for (int i = 0; i < WRAP; i++) {
            long v = (long)me * 100000 + i;
            inline_post(ib + wrap_at + 8 * (size_t)i, &v, 8, far);
        }
        quiet_post();
        ishmem_barrier_all();
        ishmem_getmem(got, ib, total, me);
        int from = (me + npes / 2) % npes; /* the PE whose far is this PE (npes even) */
        size_t wrong = 0, first = SIZE_MAX;
        for (size_t i = 0; i < total; i++) {
            unsigned char want = 0;
            for (int k = 0; k < 4; k++)
                if (i >= offs[k] && i < offs[k] + sizes[k]) want = IPAT(from, i - offs[k]);
            if (i >= full_at && i < wrap_at) want = IPAT(from, i - full_at);
            if (i >= wrap_at) {
                long v = (long)from * 100000 + (long)((i - wrap_at) / 8);
                want = ((unsigned char *)&v)[(i - wrap_at) % 8];
            }
            if (got[i] != want && wrong++ == 0) first = i;
        }
        CHECK(wrong == 0, "inline puts from PE %d: %zu of %zu bytes wrong (first at %zu: %d)", from, wrong, total, first,
              first == SIZE_MAX ? 0 : got[first]);
        ishmem_free(ib);
#undef IPAT
#undef INL
    }

    /* Puts from device memory (this PE's GPU heap), not inline, posted back to back without
     * waiting (nbi): the proxy copies a run of them into its staging buffer with one
     * synchronization (6 of 2000 bytes to destinations 48 bytes apart), and one longer than
     * half the buffer through its halves in turn (600 KiB + 7); a proxy quiet, then each PE
     * checks what its far wrote here, the gaps included. */
    {
        enum { NB = 6, SZ = 2000, GAP = 48, BIG = 600 * 1024 + 7 };
        const size_t big_at = NB * (SZ + GAP), total = big_at + BIG + GAP;
        char *gs = (char *)ishmem_malloc(total), *gd = (char *)ishmem_malloc(total);
        unsigned char *h = (unsigned char *)malloc(total), *got = (unsigned char *)malloc(total);
        CHECK(gs && gd && h && got, "device-source buffers (%zu bytes)", total);
#define DPAT(pe, i) ((unsigned char)((pe) * 41 + (i) * 3 + ((i) >> 9) + 5))
        for (size_t i = 0; i < total; i++) h[i] = DPAT(me, i);
        ishmem_putmem(gs, h, total, me);
        memset(got, 0, total);
        ishmem_putmem(gd, got, total, me);
        ishmem_barrier_all();
        int far = (me + npes / 2) % npes;
        uint64_t w1 = ISHMEMI_PROXY_PUT | (uint64_t)(uint32_t)far << 32;
        for (int b = 0; b < NB; b++) {
            size_t o = (size_t)b * (SZ + GAP);
            post_only(w1, (uint64_t)(uintptr_t)(gd + o), (uint64_t)(uintptr_t)(gs + o), SZ, 0, 0);
        }
        post_only(w1, (uint64_t)(uintptr_t)(gd + big_at), (uint64_t)(uintptr_t)(gs + big_at), BIG, 0, 0);
        quiet_post();
        ishmem_barrier_all();
        ishmem_getmem(got, gd, total, me);
        size_t wrong = 0, first = SIZE_MAX;
        for (size_t i = 0; i < total; i++) {
            int in = (i < big_at && i % (SZ + GAP) < SZ) || (i >= big_at && i < big_at + BIG);
            unsigned char want = in ? DPAT(far, i) : 0;
            if (got[i] != want && wrong++ == 0) first = i;
        }
        CHECK(wrong == 0, "puts from device memory (staging buffer): %zu of %zu bytes wrong (first at %zu)", wrong, total, first);
#undef DPAT
        free(h);
        free(got);
        ishmem_free(gd);
        ishmem_free(gs);
    }

    /* team sync, many times: the ring wraps (more requests than slots) */
    int bad = 0;
    for (int i = 0; i < ISHMEMI_PROXY_SLOTS + 5; i++) bad += coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_SYNC, 0, 1, 0, NULL, NULL, 0, 0) != 0;
    CHECK(bad == 0, "team syncs: %d nonzero", bad);

    /* broadcast 100 bytes from team PE 1 */
    {
        char h[100], got[100];
        for (int i = 0; i < 100; i++) h[i] = (char)(me * 31 + i);
        put_src(h, sizeof h);
        zero_dst();
        int rc = coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_BROADCAST, 0, 1, 0, dst, src, 100, 1 % npes);
        get_dst(got, sizeof got);
        int wrong = 0;
        for (int i = 0; i < 100; i++) wrong += got[i] != (char)((1 % npes) * 31 + i);
        CHECK(rc == 0 && wrong == 0, "broadcast: rc %d, %d wrong", rc, wrong);
    }
    /* fcollect 4 ints per PE (width 4) */
    {
        int h[4], got[4 * 64];
        for (int i = 0; i < 4; i++) h[i] = me * 100 + i;
        put_src(h, sizeof h);
        zero_dst();
        int rc = coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_FCOLLECT, 0, 4, 0, dst, src, 4, 0);
        get_dst(got, 16 * (size_t)npes);
        int wrong = 0;
        for (int p = 0; p < npes; p++)
            for (int i = 0; i < 4; i++) wrong += got[4 * p + i] != p * 100 + i;
        CHECK(rc == 0 && wrong == 0, "fcollect: rc %d, %d wrong", rc, wrong);
    }
    /* collect: PE i gives i + 1 longs (bytes, width 1) */
    {
        long h[64], got[64 * 65 / 2];
        for (int i = 0; i <= me; i++) h[i] = me * 1000L + i;
        put_src(h, 8 * (size_t)(me + 1));
        zero_dst();
        int rc = coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_COLLECT, 0, 1, 0, dst, src, 8 * (size_t)(me + 1), 0);
        size_t total = (size_t)npes * (size_t)(npes + 1) / 2;
        get_dst(got, 8 * total);
        int wrong = 0, at = 0;
        for (int p = 0; p < npes; p++)
            for (int i = 0; i <= p; i++, at++) wrong += got[at] != p * 1000L + i;
        CHECK(rc == 0 && wrong == 0, "collect: rc %d, %d wrong", rc, wrong);
    }
    /* alltoall 2 longs per pair (width 8) */
    {
        long h[2 * 64], got[2 * 64];
        for (int p = 0; p < npes; p++) h[2 * p] = me * 100L + p, h[2 * p + 1] = -(me * 100L + p);
        put_src(h, 16 * (size_t)npes);
        zero_dst();
        int rc = coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_ALLTOALL, 0, 8, 0, dst, src, 2, 0);
        get_dst(got, 16 * (size_t)npes);
        int wrong = 0;
        for (int p = 0; p < npes; p++) wrong += got[2 * p] != p * 100L + me || got[2 * p + 1] != -(p * 100L + me);
        CHECK(rc == 0 && wrong == 0, "alltoall: rc %d, %d wrong", rc, wrong);
    }
    /* reductions and scans, every element class and operator */
    REDUCE_CHECK(int32_t, ISHMEMI_COLL_T_SIGNED, ISHMEMI_COLL_OP_SUM, ISHMEMI_COLL_REDUCE, I_A, ADD);
    REDUCE_CHECK(double, ISHMEMI_COLL_T_FLOAT, ISHMEMI_COLL_OP_MAX, ISHMEMI_COLL_REDUCE, I_A, MAXF);
    REDUCE_CHECK(uint64_t, ISHMEMI_COLL_T_UNSIGNED, ISHMEMI_COLL_OP_XOR, ISHMEMI_COLL_REDUCE, I_BITS, XORF);
    REDUCE_CHECK(int16_t, ISHMEMI_COLL_T_SIGNED, ISHMEMI_COLL_OP_MIN, ISHMEMI_COLL_REDUCE, I_A, MINF);
    REDUCE_CHECK(uint8_t, ISHMEMI_COLL_T_UNSIGNED, ISHMEMI_COLL_OP_AND, ISHMEMI_COLL_REDUCE, I_BITS, ANDF);
    REDUCE_CHECK(uint8_t, ISHMEMI_COLL_T_UNSIGNED, ISHMEMI_COLL_OP_OR, ISHMEMI_COLL_REDUCE, I_BITS, ORF);
    REDUCE_CHECK(float, ISHMEMI_COLL_T_FLOAT, ISHMEMI_COLL_OP_PROD, ISHMEMI_COLL_REDUCE, I_F, MUL);
    REDUCE_CHECK(int8_t, ISHMEMI_COLL_T_SIGNED, ISHMEMI_COLL_OP_PROD, ISHMEMI_COLL_REDUCE, I_PROD8, MUL);
    REDUCE_CHECK(uint32_t, ISHMEMI_COLL_T_UNSIGNED, ISHMEMI_COLL_OP_MAX, ISHMEMI_COLL_REDUCE, I_A, MAXF);
    REDUCE_CHECK(int64_t, ISHMEMI_COLL_T_SIGNED, ISHMEMI_COLL_OP_SUM, ISHMEMI_COLL_INSCAN, I_A, ADD);
    REDUCE_CHECK(int64_t, ISHMEMI_COLL_T_SIGNED, ISHMEMI_COLL_OP_SUM, ISHMEMI_COLL_EXSCAN, I_A, ADD);
    /* in place (dest == source) */
    {
        int h[8], got[8];
        for (int e = 0; e < 8; e++) h[e] = me + e;
        put_src(h, sizeof h);
        int rc = coll(ISHMEM_TEAM_WORLD, ISHMEMI_COLL_REDUCE, ISHMEMI_COLL_T_SIGNED, 4, ISHMEMI_COLL_OP_SUM, src, src, 8, 0);
        ishmem_getmem(got, src, sizeof got, me);
        int wrong = 0;
        for (int e = 0; e < 8; e++) wrong += got[e] != npes * (npes - 1) / 2 + npes * e;
        CHECK(rc == 0 && wrong == 0, "in-place sum: rc %d, %d wrong", rc, wrong);
    }
    /* the shared team (this node): the proxy runs any team's collective */
    {
        int h[4] = {me, 1, 2 * me, 3}, got[4];
        put_src(h, sizeof h);
        zero_dst();
        int rc = coll(ISHMEM_TEAM_SHARED, ISHMEMI_COLL_REDUCE, ISHMEMI_COLL_T_SIGNED, 4, ISHMEMI_COLL_OP_SUM, dst, src, 4, 0);
        get_dst(got, sizeof got);
        int s = 0;
        for (int i = 0; i < node_pes; i++) s += ishmem_team_translate_pe(ISHMEM_TEAM_SHARED, i, ISHMEM_TEAM_WORLD);
        CHECK(rc == 0 && got[0] == s && got[1] == node_pes && got[2] == 2 * s && got[3] == 3 * node_pes,
              "shared-team sum: rc %d, %d %d %d %d", rc, got[0], got[1], got[2], got[3]);
    }
    /* Collectives of two teams posted in opposite orders on even and odd PEs, both in the ring
     * before either is waited for (two blocks of a kernel, each in its team's collective): the
     * proxy must not wait in the first while the second is the one the other PEs are in. */
    {
        ishmem_team_t ta, tb;
        int ra = ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &ta);
        int rb = ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &tb);
        CHECK(ra == 0 && rb == 0, "team splits: %d %d", ra, rb);
        int wrong = 0, rcs = 0;
        for (int round = 0; round < 20; round++) {
            int h[2] = {me + round, 10 * me + round}, got[2] = {-1, -1};
            ishmem_putmem(src, &h[0], sizeof(int), me);
            ishmem_putmem(src + 64, &h[1], sizeof(int), me);
            int sa = ISHMEMI_COLL_T_SIGNED, sum = ISHMEMI_COLL_OP_SUM;
            uint64_t t1, t2;
            if ((me + round) % 2 == 0) {
                t1 = coll_post(ta, ISHMEMI_COLL_REDUCE, sa, 4, sum, dst, src, 1, 0);
                t2 = coll_post(tb, ISHMEMI_COLL_REDUCE, sa, 4, sum, dst + 64, src + 64, 1, 0);
            } else {
                t2 = coll_post(tb, ISHMEMI_COLL_REDUCE, sa, 4, sum, dst + 64, src + 64, 1, 0);
                t1 = coll_post(ta, ISHMEMI_COLL_REDUCE, sa, 4, sum, dst, src, 1, 0);
            }
            rcs += wait_reply(t2) != 0;
            rcs += wait_reply(t1) != 0;
            ishmem_getmem(&got[0], dst, sizeof(int), me);
            ishmem_getmem(&got[1], dst + 64, sizeof(int), me);
            int base = npes * (npes - 1) / 2;
            wrong += got[0] != base + npes * round || got[1] != 10 * base + npes * round;
        }
        CHECK(rcs == 0 && wrong == 0, "two teams in opposite orders: %d nonzero return codes, %d wrong rounds", rcs, wrong);
        ishmem_team_destroy(ta);
        ishmem_team_destroy(tb);
    }
    /* host collectives after the proxy's (the team's call counts agree) */
    {
        int h = me + 1, got = -1;
        put_src(&h, sizeof h);
        ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, (int *)dst, (const int *)src, 1);
        get_dst(&got, sizeof got);
        CHECK(got == npes * (npes + 1) / 2, "host sum after the proxy's: %d", got);
    }
    ishmem_barrier_all();
    ishmem_free(src);
    ishmem_free(dst);
    ishmem_finalize();
    return gpu_test_end("mock_proxy_coll");
}
