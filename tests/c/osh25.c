/* osh25: the OpenSHMEM routines that Intel SHMEM has no name for (issue 25), through shmem.h:
 * distributed locks (set/test/clear_lock: many PEs increment a plain, non-atomic counter on PE
 * 0 with a get and a put under the lock; the total must be exact, one node and across nodes,
 * where clear_lock's quiet is what makes the last holder's put visible to the next one),
 * alltoalls/alltoallsmem with strides (typed, generic, mem; world and a split team),
 * pe_quiet, team_ptr and pcontrol. Every value is checked; the last line is
 * "PASS: osh25 (N PEs)".
 *
 * `osh25 nolock` runs the counter without the lock and reports the lost updates (a
 * demonstration that the counter test needs the lock: it fails there). */
#include <shmem.h>

#include <stdio.h>
#include <string.h>

#define ITERS 200

static long lock;        /* symmetric globals, 0 at start */
static long counter;
static long flag;

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: osh25: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond);       \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* One increment of PE 0's counter: a get and a put, not an atomic (with a little work between
 * them, so that PEs without the lock would overlap even on a machine of few cores). */
static void bump(void) {
    long v = shmem_long_g(&counter, 0);
    for (volatile int spin = 0; spin < 20000; spin++) {
    }
    shmem_long_p(&counter, v + 1, 0);
}

static void locks(int use_lock) {
    if (me == 0)
        counter = 0;
    shmem_barrier_all();
    for (int i = 0; i < ITERS; i++) {
        if (use_lock) {
            if (i % 2 == 0) {
                shmem_set_lock(&lock);
            } else {
                while (shmem_test_lock(&lock) != 0) {
                }
            }
        }
        bump();
        if (use_lock)
            shmem_clear_lock(&lock);
        else
            shmem_quiet();
    }
    shmem_barrier_all();
    long total = shmem_long_g(&counter, 0);
    if (!use_lock) {
        if (me == 0)
            printf("osh25 nolock: counter %ld of %ld (%ld updates lost)%s\n", total, (long)npes * ITERS,
                   (long)npes * ITERS - total, total == (long)npes * ITERS ? "" : "\nFAIL: osh25: lost updates without the lock");
        return;
    }
    CHECK(total == (long)npes * ITERS);
    if (me == 0)
        printf("osh25: counter %ld after %d PEs x %d locked increments\n", total, npes, ITERS);
    /* test_lock on a held lock says 1 and does not take it; after clear it is free */
    shmem_barrier_all();
    if (me == 0) {
        shmem_set_lock(&lock);
        flag = 1;
    }
    shmem_barrier_all();
    if (me != 0)
        CHECK(shmem_test_lock(&lock) == 1);
    shmem_barrier_all();
    if (me == 0)
        shmem_clear_lock(&lock);
    shmem_barrier_all();
    if (me == npes - 1) {
        CHECK(shmem_test_lock(&lock) == 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
}

/* dest and source of the alltoalls tests (allocated by every PE: shmem_malloc is collective
 * over the world, the alltoalls of a split team are not) */
#define POOL 4096
static void *pool_d, *pool_s;

/* alltoalls: element k of the block for PE j sits at index (j * n + k) * stride. */
#define A2AS(T, NAME, CALL)                                                                  \
    static void a2as_##NAME(shmem_team_t team, ptrdiff_t dst, ptrdiff_t sst, size_t n) {    \
        int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);                       \
        size_t ds = ((size_t)tn * n) * (size_t)dst, ss = ((size_t)tn * n) * (size_t)sst;    \
        if (ds * sizeof(T) > POOL || ss * sizeof(T) > POOL) {                                \
            printf("FAIL: osh25: " #NAME " test too large for the pool\n");                 \
            failures++;                                                                      \
            return;                                                                          \
        }                                                                                    \
        T *d = (T *)pool_d, *s = (T *)pool_s;                                                \
        for (size_t i = 0; i < ds; i++)                                                      \
            d[i] = (T)77;                                                                    \
        for (size_t i = 0; i < ss; i++)                                                      \
            s[i] = (T)99;                                                                    \
        for (int j = 0; j < tn; j++)                                                         \
            for (size_t k = 0; k < n; k++)                                                   \
                s[((size_t)j * n + k) * (size_t)sst] = (T)(tme * 16 + j * 4 + (int)k);       \
        CHECK(CALL == 0);                                                                    \
        for (int j = 0; j < tn; j++)                                                         \
            for (size_t k = 0; k < n; k++)                                                   \
                for (ptrdiff_t g = 0; g < dst; g++) {                                        \
                    size_t at = ((size_t)j * n + k) * (size_t)dst + (size_t)g;              \
                    T want = g == 0 ? (T)(j * 16 + tme * 4 + (int)k) : (T)77;                \
                    if (d[at] != want) {                                                     \
                        printf("FAIL: osh25: PE %d: " #NAME " dst %td sst %td: dest[%zu] %g, want %g\n", \
                               me, dst, sst, at, (double)d[at], (double)want);              \
                        failures++;                                                          \
                    }                                                                        \
                }                                                                            \
    }
A2AS(int, int, shmem_int_alltoalls(team, d, s, dst, sst, n))
A2AS(long, long, shmem_alltoalls(team, d, s, dst, sst, n))
A2AS(double, double, shmem_double_alltoalls(team, d, s, dst, sst, n))
A2AS(uint16_t, uint16, shmem_uint16_alltoalls(team, d, s, dst, sst, n))
A2AS(unsigned char, mem, shmem_alltoallsmem(team, d, s, dst, sst, n))

static void alltoalls(void) {
    pool_d = shmem_malloc(POOL);
    pool_s = shmem_malloc(POOL);
    long *buf = shmem_malloc(sizeof(long));
    a2as_int(SHMEM_TEAM_WORLD, 1, 1, 3);
    a2as_int(SHMEM_TEAM_WORLD, 2, 3, 3);
    a2as_long(SHMEM_TEAM_WORLD, 3, 2, 2);
    a2as_double(SHMEM_TEAM_WORLD, 2, 5, 4);
    a2as_uint16(SHMEM_TEAM_WORLD, 4, 1, 1);
    a2as_mem(SHMEM_TEAM_WORLD, 3, 2, 5);
    a2as_int(SHMEM_TEAM_WORLD, 2, 2, 0); /* nothing to move: still a collective */
    /* the even PEs as a team */
    shmem_team_t even;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    CHECK(rc == 0);
    if (even != SHMEM_TEAM_INVALID) {
        a2as_long(even, 2, 3, 3);
        a2as_mem(even, 1, 4, 7);
        /* team_ptr: team numbering; outside the team and the invalid team give NULL */
        for (int i = 0; i < shmem_team_n_pes(even); i++)
            CHECK(shmem_team_ptr(even, buf, i) == shmem_ptr(buf, 2 * i));
        CHECK(shmem_team_ptr(even, buf, shmem_team_n_pes(even)) == NULL);
        CHECK(shmem_team_ptr(even, buf, -1) == NULL);
        shmem_team_destroy(even);
    }
    shmem_free(buf);
    shmem_free(pool_s);
    shmem_free(pool_d);
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, &counter, 0) == NULL);
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, &counter, me) == (void *)&counter);
}

/* pe_quiet: data put to the right neighbour is complete before the flag that announces it. */
static void pe_quiet(void) {
    long *data = shmem_calloc(64, sizeof(long));
    long src[64];
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (int i = 0; i < 64; i++)
        src[i] = me * 1000 + i;
    flag = 0;
    shmem_barrier_all();
    shmem_long_put_nbi(data, src, 64, right);
    int pes[2] = {right, left};
    shmem_pe_quiet(pes, 2);
    shmem_long_atomic_set(&flag, 1, right);
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 64; i++)
        CHECK(data[i] == left * 1000 + i);
    shmem_pe_quiet(NULL, 0);
    shmem_barrier_all();
    shmem_free(data);
}

int main(int argc, char **argv) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    shmem_pcontrol(1);
    if (argc > 1 && strcmp(argv[1], "nolock") == 0) {
        locks(0);
        shmem_finalize();
        return 0;
    }
    /* profiling hook: any level is accepted (0 off, 1 on, 2 flush, others a tool's own) */
    shmem_pcontrol(0);
    shmem_pcontrol(2);
    shmem_pcontrol(7, "a tool's argument", 3);
    locks(1);
    alltoalls();
    pe_quiet();
    shmem_barrier_all();
    if (me == 0 && failures == 0)
        printf("PASS: osh25 (%d PEs)\n", npes);
    shmem_finalize();
    return failures != 0;
}
