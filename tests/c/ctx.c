/* ctx: OpenSHMEM contexts, shmem_realloc and shmem_malloc_with_hints (issue 25), written with
 * <shmem.h> and the shmem_* names only. Every PE, on contexts made with each option
 * (SERIALIZED, PRIVATE, NOSTORE, none) and on SHMEM_CTX_DEFAULT: typed, SIZE and mem puts and
 * gets, nbi, strided and blocked ones, p/g, AMOs (typed, nbi, bitwise), put-with-signal and
 * signal_add/set, each to the next PE, then ctx_fence/ctx_quiet and a barrier, and the values
 * are checked where they landed; the C11 generic names with a context first. A team context
 * (even PEs) takes team PE numbers. get_team, INVALID handling. realloc keeps the contents
 * and gives the same offset on every PE (a remote put into the new block); with hints.
 * With ISHMEM_OFI_STAGING=always across nodes contexts cannot be offered: create must fail
 * cleanly (nonzero, SHMEM_CTX_INVALID) and the context part is skipped.
 * The last line is "PASS: ctx (N PEs)". */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 8

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: ctx: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond);         \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static int ints[N], ints2[N], strided[2 * N];
static long longs[N];
static uint32_t u32s[N];
static uint64_t u64s[N], sig;
static char bytes[64];
static int amo_i;
static long amo_l;
static unsigned int amo_u;
static uint64_t amo_u64;
static int total; /* failures of every PE, summed on PE 0 */

/* One round of every operation family on ctx towards the next PE; `round` makes the values
 * of each round differ. */
static void round_on(shmem_ctx_t ctx, int round) {
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    int src[N];
    long lsrc[N];
    uint32_t s32[N];
    uint64_t s64[N];
    char msg[64];
    for (int i = 0; i < N; i++) {
        src[i] = round * 1000 + me * 10 + i;
        lsrc[i] = -src[i];
        s32[i] = (uint32_t)src[i] * 3u;
        s64[i] = (uint64_t)src[i] << 33;
    }
    snprintf(msg, sizeof msg, "round %d from PE %d", round, me);
    memset(ints, 0, sizeof ints);
    memset(ints2, 0, sizeof ints2);
    memset(strided, 0, sizeof strided);
    amo_i = 0;
    amo_l = 100;
    amo_u = 0xf0u;
    amo_u64 = 0;
    sig = 0;
    shmem_barrier_all();

    shmem_ctx_int_put(ctx, ints, src, N, next);
    shmem_ctx_long_put_nbi(ctx, longs, lsrc, N, next);
    shmem_ctx_put32(ctx, u32s, s32, N, next);
    shmem_ctx_putmem_nbi(ctx, bytes, msg, sizeof msg, next);
    shmem_ctx_int_iput(ctx, strided, src, 2, 1, N, next); /* every other element */
    shmem_ctx_int_ibput(ctx, ints2, src, 4, 4, 2, 2, next); /* blocks of 2 at 0 and 4 */
    shmem_ctx_int_p(ctx, &ints2[2], src[7], next);
    shmem_ctx_int_atomic_add(ctx, &amo_i, me + 1, next);
    shmem_ctx_long_atomic_inc(ctx, &amo_l, next);
    shmem_ctx_uint_atomic_or(ctx, &amo_u, 0x0fu, next);
    shmem_ctx_uint64_atomic_set(ctx, &amo_u64, (uint64_t)round << 40, next);
    shmem_ctx_fence(ctx);
    shmem_ctx_uint64_put_signal(ctx, u64s, s64, N, &sig, 7, SHMEM_SIGNAL_SET, next);
    shmem_ctx_signal_add(ctx, &sig, 3, next);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();

    /* what prev sent here */
    int exp[N];
    for (int i = 0; i < N; i++)
        exp[i] = round * 1000 + prev * 10 + i;
    for (int i = 0; i < N; i++) {
        CHECK(ints[i] == exp[i]);
        CHECK(longs[i] == -exp[i]);
        CHECK(u32s[i] == (uint32_t)exp[i] * 3u);
        CHECK(u64s[i] == (uint64_t)exp[i] << 33);
        CHECK(strided[2 * i] == exp[i] && strided[2 * i + 1] == 0);
    }
    CHECK(ints2[0] == exp[0] && ints2[1] == exp[1] && ints2[4] == exp[4] && ints2[5] == exp[5]);
    CHECK(ints2[2] == exp[7] && ints2[3] == 0);
    char want[64];
    snprintf(want, sizeof want, "round %d from PE %d", round, prev);
    CHECK(strcmp(bytes, want) == 0);
    CHECK(amo_i == prev + 1);
    CHECK(amo_l == 101);
    CHECK(amo_u == 0xffu);
    CHECK(amo_u64 == (uint64_t)round << 40);
    CHECK(sig == 10);
    shmem_barrier_all();

    /* gets, g, fetching AMOs from the next PE (its values came from me) */
    int got[N] = {0};
    long lgot[N] = {0};
    uint64_t g64[N] = {0};
    int gs[N] = {0};
    shmem_ctx_int_get(ctx, got, ints, N, next);
    shmem_ctx_long_get_nbi(ctx, lgot, longs, N, next);
    shmem_ctx_get64(ctx, g64, u64s, N, next);
    shmem_ctx_int_iget(ctx, gs, strided, 1, 2, N, next);
    shmem_ctx_quiet(ctx);
    for (int i = 0; i < N; i++) {
        CHECK(got[i] == src[i]);
        CHECK(lgot[i] == lsrc[i]);
        CHECK(g64[i] == s64[i]);
        CHECK(gs[i] == src[i]);
    }
    CHECK(shmem_ctx_int_g(ctx, &ints[3], next) == src[3]);
    shmem_barrier_all();
    int old = shmem_ctx_int_atomic_fetch_add(ctx, &amo_i, 5, next);
    shmem_barrier_all(); /* every PE added to its next: amo_i here is (prev + 1) + 5 */
    CHECK(old == me + 1);
    CHECK(amo_i == prev + 6);
    shmem_barrier_all();
    CHECK(shmem_ctx_int_atomic_compare_swap(ctx, &amo_i, me + 6, -1, next) == me + 6);
    CHECK(shmem_ctx_int_atomic_swap(ctx, &amo_i, 42, next) == -1);
    CHECK(shmem_ctx_int_atomic_fetch(ctx, &amo_i, next) == 42);
    int fetched = 0;
    shmem_ctx_int_atomic_fetch_inc_nbi(ctx, &fetched, &amo_i, next);
    shmem_ctx_quiet(ctx);
    CHECK(fetched == 42);
    CHECK(shmem_ctx_uint_atomic_fetch_and(ctx, &amo_u, 0x3cu, next) == 0xffu);
    CHECK(shmem_ctx_uint_atomic_fetch_xor(ctx, &amo_u, 0x01u, next) == 0x3cu);
    shmem_barrier_all();
    CHECK(amo_i == 43);
    CHECK(amo_u == 0x3du);

    /* C11 generic names with the context first, and without */
    memset(ints, 0, sizeof ints);
    longs[0] = 0;
    shmem_barrier_all();
    shmem_put(ctx, ints, src, N, next);
    shmem_p(ctx, &longs[0], 77L, next);
    shmem_atomic_add(ctx, &amo_l, 2L, next);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(ints[i] == exp[i]);
    CHECK(longs[0] == 77);
    CHECK(amo_l == 103);
    CHECK(shmem_atomic_fetch(ctx, &amo_l, next) == 103);
    CHECK(shmem_g(ctx, &longs[0], next) == 77);
    CHECK(shmem_g(&longs[0], next) == 77);
    shmem_barrier_all();
}

static void contexts(void) {
    shmem_team_t t = (shmem_team_t)&t; /* neither a team nor SHMEM_TEAM_INVALID */
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD);
    t = (shmem_team_t)&t;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID);
    shmem_ctx_quiet(SHMEM_CTX_INVALID); /* no-ops */
    shmem_ctx_fence(SHMEM_CTX_INVALID);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);

    const char *staging = getenv("ISHMEM_OFI_STAGING");
    shmem_ctx_t probe = (shmem_ctx_t)&t;
    int rc = shmem_ctx_create(0, &probe);
    if (staging && strcmp(staging, "always") == 0 && rc != 0) {
        /* the staged heap across nodes: refused, cleanly */
        CHECK(probe == SHMEM_CTX_INVALID);
        if (me == 0)
            printf("ctx: contexts refused on the staged heap, as documented\n");
        return;
    }
    CHECK(rc == 0 && probe != SHMEM_CTX_INVALID && probe != SHMEM_CTX_DEFAULT);
    shmem_ctx_destroy(probe);

    long options[] = {0, SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE,
                      SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED};
    shmem_ctx_t ctxs[5];
    for (int k = 0; k < 5; k++) {
        CHECK(shmem_ctx_create(options[k], &ctxs[k]) == 0);
        t = (shmem_team_t)&t;
        CHECK(shmem_ctx_get_team(ctxs[k], &t) == 0 && t == SHMEM_TEAM_WORLD);
        for (int j = 0; j < k; j++)
            CHECK(ctxs[j] != ctxs[k]);
    }
    int round = 1;
    for (int k = 0; k < 5; k++)
        if (options[k] != SHMEM_CTX_NOSTORE) /* NOSTORE: no puts or AMOs promised */
            round_on(ctxs[k], round++);
    round_on(SHMEM_CTX_DEFAULT, round++);
    /* two contexts interleaved, each quieted */
    memset(ints, 0, sizeof ints);
    shmem_barrier_all();
    int v1 = 11 + me, v2 = 22 + me, next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    shmem_ctx_int_put_nbi(ctxs[0], &ints[0], &v1, 1, next);
    shmem_ctx_int_put_nbi(ctxs[1], &ints[1], &v2, 1, next);
    shmem_ctx_quiet(ctxs[1]);
    shmem_ctx_quiet(ctxs[0]);
    shmem_barrier_all();
    CHECK(ints[0] == 11 + prev && ints[1] == 22 + prev);
    /* NOSTORE: gets */
    CHECK(shmem_ctx_int_g(ctxs[3], &ints[1], next) == 22 + me);
    for (int k = 0; k < 5; k++)
        shmem_ctx_destroy(ctxs[k]);

    /* a team context: the even PEs, PE numbers of that team */
    shmem_team_t even = SHMEM_TEAM_INVALID;
    int ne = (npes + 1) / 2;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, ne, NULL, 0, &even);
    shmem_ctx_t tc = SHMEM_CTX_DEFAULT;
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID);
        CHECK(shmem_team_create_ctx(even, SHMEM_CTX_PRIVATE, &tc) == 0);
        t = (shmem_team_t)&t;
        CHECK(shmem_ctx_get_team(tc, &t) == 0 && t == even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID);
        CHECK(shmem_team_create_ctx(even, 0, &tc) != 0 && tc == SHMEM_CTX_INVALID);
    }
    memset(ints, 0, sizeof ints);
    shmem_barrier_all();
    if (me % 2 == 0) {
        int tme = shmem_team_my_pe(even);
        int tnext = (tme + 1) % ne;
        int v = 500 + me;
        shmem_ctx_int_put(tc, &ints[2], &v, 1, tnext);       /* team PE tnext = world 2 * tnext */
        shmem_ctx_int_atomic_add(tc, &ints[3], 1000, tnext);
        shmem_ctx_quiet(tc);
    }
    shmem_barrier_all();
    if (me % 2 == 0) {
        int tme = shmem_team_my_pe(even);
        int tprev = (tme + ne - 1) % ne;
        CHECK(ints[2] == 500 + 2 * tprev);
        CHECK(ints[3] == 1000);
        shmem_ctx_destroy(tc);
        shmem_team_destroy(even);
    } else {
        CHECK(ints[2] == 0 && ints[3] == 0);
    }
    shmem_barrier_all();
}

static void memory(void) {
    /* realloc: contents kept up to the smaller size, the same block on every PE */
    int *p = shmem_malloc(4 * sizeof(int));
    CHECK(p != NULL);
    for (int i = 0; i < 4; i++)
        p[i] = me * 100 + i;
    int *q = shmem_realloc(p, 4096 * sizeof(int));
    CHECK(q != NULL);
    for (int i = 0; i < 4; i++)
        CHECK(q[i] == me * 100 + i);
    int v = me;
    shmem_int_put(&q[4095], &v, 1, (me + 1) % npes);
    shmem_barrier_all();
    CHECK(q[4095] == (me + npes - 1) % npes);
    int *r = shmem_realloc(q, 2 * sizeof(int)); /* shrink */
    CHECK(r != NULL && r[0] == me * 100 && r[1] == me * 100 + 1);
    CHECK(shmem_realloc(r, 0) == NULL); /* frees */
    int *s = shmem_realloc(NULL, 16 * sizeof(int)); /* a malloc */
    CHECK(s != NULL);
    s[0] = 0;
    shmem_barrier_all();
    shmem_int_atomic_add(&s[0], 1, 0);
    shmem_barrier_all();
    if (me == 0)
        CHECK(s[0] == npes);
    /* a size the heap cannot hold: NULL, the block stays */
    CHECK(shmem_realloc(s, (size_t)1 << 62) == NULL);
    CHECK(s[0] == (me == 0 ? npes : 0));
    shmem_free(s);

    /* malloc_with_hints: the known hints, and none */
    long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                    SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
    for (int k = 0; k < 4; k++) {
        uint64_t *h = shmem_malloc_with_hints(8 * sizeof(uint64_t), hints[k]);
        CHECK(h != NULL);
        h[0] = 0;
        shmem_barrier_all();
        shmem_uint64_atomic_add(&h[0], (uint64_t)me + 1, 0);
        shmem_barrier_all();
        if (me == 0)
            CHECK(h[0] == (uint64_t)npes * (npes + 1) / 2);
        shmem_free(h);
    }
    CHECK(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    contexts();
    memory();
    shmem_barrier_all();
    shmem_int_atomic_add(&total, failures, 0);
    shmem_barrier_all();
    if (me == 0) {
        if (total == 0)
            printf("PASS: ctx (%d PEs)\n", npes);
        else
            printf("FAIL: ctx: %d failures\n", total);
    }
    shmem_finalize();
    return total == 0 ? 0 : 1;
}
