/* spec_examples: the kinds of example programs the OpenSHMEM 1.5/1.6 specification shows with
 * its routines, written anew for this suite (own code; shmem.h and the shmem_* names only),
 * each a function run in turn by every PE and each checking its values instead of printing
 * them: hello, put to a neighbour, strided put, get with a rotation, p/g, atomic race for a
 * winner, fetch-and-add tickets, a lock-protected counter, put-with-signal and signal wait,
 * wait_until on a flag, test_any over flags, broadcast, collect, fcollect, alltoall,
 * alltoalls, sum/max/and reductions, inclusive and exclusive scans (1.6), a strided team and a
 * 2-D split with reductions inside, team_ptr (1.6), pe_quiet (1.6), global data as symmetric
 * data, calloc and align. Last line: "PASS: spec_examples (N PEs)". */
#include <shmem.h>

#include <stdio.h>
#include <string.h>

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: spec_examples: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond); \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* hello: every PE knows its number and the job size, in the world team too */
static void ex_hello(void) {
    CHECK(me >= 0 && me < npes);
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes);
}

/* put: PE i sends 8 longs to PE i+1, which finds them after the barrier */
static long put_dest[8];
static void ex_put(void) {
    long src[8];
    for (int i = 0; i < 8; i++)
        src[i] = 100 * me + i;
    shmem_long_put(put_dest, src, 8, (me + 1) % npes);
    shmem_barrier_all();
    int from = (me + npes - 1) % npes;
    for (int i = 0; i < 8; i++)
        CHECK(put_dest[i] == 100 * from + i);
    shmem_barrier_all();
}

/* iput: every other element of the source lands in every third slot of the target */
static short iput_dest[12];
static void ex_iput(void) {
    short src[8];
    for (int i = 0; i < 8; i++)
        src[i] = (short)(me * 10 + i);
    for (int i = 0; i < 12; i++)
        iput_dest[i] = -1;
    shmem_barrier_all();
    shmem_short_iput(iput_dest, src, 3, 2, 4, (me + 1) % npes);
    shmem_barrier_all();
    int from = (me + npes - 1) % npes;
    for (int i = 0; i < 12; i++)
        CHECK(iput_dest[i] == (i % 3 == 0 ? (short)(from * 10 + 2 * (i / 3)) : -1));
    shmem_barrier_all();
}

/* get: each PE reads the array of the PE on its left */
static int get_src[4];
static void ex_get(void) {
    for (int i = 0; i < 4; i++)
        get_src[i] = me * 4 + i;
    shmem_barrier_all();
    int out[4], left = (me + npes - 1) % npes;
    shmem_int_get(out, get_src, 4, left);
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == left * 4 + i);
    shmem_barrier_all();
}

/* p and g: single elements, typed and generic */
static double pg_val;
static void ex_pg(void) {
    shmem_double_p(&pg_val, me + 0.5, (me + 1) % npes);
    shmem_barrier_all();
    CHECK(pg_val == (me + npes - 1) % npes + 0.5);
    CHECK(shmem_g(&pg_val, (me + 1) % npes) == me + 0.5);
    shmem_barrier_all();
}

/* race: every PE tries to swap its number into PE 0's word; exactly one wins */
static int race_word = -1;
static void ex_race(void) {
    int old = shmem_int_atomic_compare_swap(&race_word, -1, me, 0);
    int won = old == -1;
    int *wins = shmem_malloc(sizeof(int)), *total = shmem_malloc(sizeof(int));
    *wins = won;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, total, wins, 1);
    CHECK(*total == 1);
    int winner = shmem_int_atomic_fetch(&race_word, 0);
    CHECK(winner >= 0 && winner < npes);
    CHECK(!won || winner == me);
    shmem_free(total);
    shmem_free(wins);
}

/* tickets: fetch-and-add hands out every number 0..npes*3-1 exactly once */
static long ticket;
static void ex_tickets(void) {
    long mine[3];
    for (int i = 0; i < 3; i++)
        mine[i] = shmem_long_atomic_fetch_inc(&ticket, 0);
    long *all = shmem_malloc(3 * (size_t)npes * sizeof(long)), *src = shmem_malloc(3 * sizeof(long));
    memcpy(src, mine, sizeof(mine));
    shmem_long_fcollect(SHMEM_TEAM_WORLD, all, src, 3);
    long seen = 0;
    for (int i = 0; i < 3 * npes; i++)
        seen |= 1L << all[i];
    CHECK(seen == (1L << (3 * npes)) - 1);
    CHECK(shmem_long_atomic_fetch(&ticket, 0) == 3L * npes);
    shmem_free(src);
    shmem_free(all);
}

/* lock: a count on PE 0 updated with a get and a put under a lock */
static long lock_word, lock_count;
static void ex_lock(void) {
    for (int i = 0; i < 20; i++) {
        shmem_set_lock(&lock_word);
        long v = shmem_long_g(&lock_count, 0);
        shmem_long_p(&lock_count, v + 1, 0);
        shmem_clear_lock(&lock_word);
    }
    shmem_barrier_all();
    CHECK(shmem_long_g(&lock_count, 0) == 20L * npes);
}

/* put with signal: the data and a signal add to the right neighbour, who waits for it */
static uint64_t sig;
static int sig_data[16];
static void ex_signal(void) {
    int src[16];
    for (int i = 0; i < 16; i++)
        src[i] = me + i;
    shmem_int_put_signal(sig_data, src, 16, &sig, 1, SHMEM_SIGNAL_ADD, (me + 1) % npes);
    uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
    CHECK(got == 1);
    int from = (me + npes - 1) % npes;
    for (int i = 0; i < 16; i++)
        CHECK(sig_data[i] == from + i);
    shmem_barrier_all();
    sig = 0;
    shmem_barrier_all();
    shmem_signal_set(&sig, 7, (me + 1) % npes);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 7);
    CHECK(shmem_signal_fetch(&sig) == 7);
    shmem_barrier_all();
}

/* wait_until: PE 0 releases everyone by setting their flag */
static int go;
static void ex_wait(void) {
    if (me == 0)
        for (int pe = 0; pe < npes; pe++)
            shmem_int_atomic_set(&go, 5, pe);
    shmem_int_wait_until(&go, SHMEM_CMP_GE, 5);
    CHECK(go == 5);
    shmem_barrier_all();
}

/* test_any: PE 0 watches one flag per PE until it has seen them all */
static void ex_test_any(void) {
    int *flags = shmem_calloc((size_t)npes, sizeof(int));
    int status[64] = {0};
    shmem_int_atomic_set(&flags[me], 1, 0);
    if (me == 0) {
        int seen = 0;
        while (seen < npes) {
            size_t i = shmem_int_test_any(flags, (size_t)npes, status, SHMEM_CMP_EQ, 1);
            if (i != SIZE_MAX) {
                CHECK(status[i] == 0);
                status[i] = 1;
                seen++;
            }
        }
    }
    shmem_barrier_all();
    shmem_free(flags);
}

/* broadcast, collect, fcollect, alltoall */
static void ex_collectives(void) {
    long *src = shmem_malloc(4 * (size_t)npes * sizeof(long));
    long *dst = shmem_malloc(4 * (size_t)npes * sizeof(long));
    for (int i = 0; i < 4 * npes; i++)
        src[i] = me * 1000 + i;
    int root = npes - 1;
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 4, root) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(dst[i] == root * 1000 + i);
    /* collect: PE i gives i+1 elements */
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)(me % 4) + 1) == 0);
    int at = 0;
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i <= pe % 4; i++)
            CHECK(dst[at++] == pe * 1000 + i);
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, 2) == 0);
    for (int pe = 0; pe < npes; pe++)
        CHECK(dst[2 * pe] == pe * 1000 && dst[2 * pe + 1] == pe * 1000 + 1);
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 2) == 0);
    for (int pe = 0; pe < npes; pe++)
        CHECK(dst[2 * pe] == pe * 1000 + 2 * me && dst[2 * pe + 1] == pe * 1000 + 2 * me + 1);
    /* alltoalls: one element per PE, taken every 2nd element of source, put every 2nd of dest */
    for (int i = 0; i < 2 * npes; i++)
        dst[i] = -1;
    CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 2, 2, 1) == 0);
    for (int pe = 0; pe < npes; pe++)
        CHECK(dst[2 * pe] == pe * 1000 + 2 * me && dst[2 * pe + 1] == -1);
    shmem_free(dst);
    shmem_free(src);
}

/* reductions and scans */
static void ex_reductions(void) {
    int *src = shmem_malloc(3 * sizeof(int)), *dst = shmem_malloc(3 * sizeof(int));
    for (int i = 0; i < 3; i++)
        src[i] = me + i;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 3);
    for (int i = 0; i < 3; i++)
        CHECK(dst[i] == npes * (npes - 1) / 2 + npes * i);
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, dst, src, 3);
    for (int i = 0; i < 3; i++)
        CHECK(dst[i] == npes - 1 + i);
    unsigned *usrc = shmem_malloc(sizeof(unsigned)), *udst = shmem_malloc(sizeof(unsigned));
    *usrc = 0xff ^ (1u << (me % 8));
    shmem_uint_and_reduce(SHMEM_TEAM_WORLD, udst, usrc, 1);
    unsigned want = 0xff;
    for (int pe = 0; pe < npes; pe++)
        want &= 0xff ^ (1u << (pe % 8));
    CHECK(*udst == want);
    shmem_int_sum_inscan(SHMEM_TEAM_WORLD, dst, src, 1);
    CHECK(dst[0] == me * (me + 1) / 2);
    shmem_int_sum_exscan(SHMEM_TEAM_WORLD, dst, src, 1);
    if (me > 0)
        CHECK(dst[0] == me * (me - 1) / 2);
    shmem_free(udst);
    shmem_free(usrc);
    shmem_free(dst);
    shmem_free(src);
}

/* teams: the even PEs as a strided team, and a 2-D split into rows of 2 */
static void ex_teams(void) {
    int *src = shmem_malloc(sizeof(int)), *dst = shmem_malloc(sizeof(int));
    *src = me;
    shmem_team_t even;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID);
        CHECK(shmem_team_my_pe(even) == me / 2);
        CHECK(shmem_team_translate_pe(even, shmem_team_my_pe(even), SHMEM_TEAM_WORLD) == me);
        shmem_int_sum_reduce(even, dst, src, 1);
        int want = 0;
        for (int pe = 0; pe < npes; pe += 2)
            want += pe;
        CHECK(*dst == want);
        CHECK(shmem_team_ptr(even, src, shmem_team_my_pe(even)) == (void *)src);
        shmem_team_sync(even);
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID);
    }
    shmem_team_t row, col;
    shmem_team_config_t cfg = {0};
    shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &cfg, 0, &row, &cfg, 0, &col);
    CHECK(shmem_team_my_pe(row) == me % 2 && shmem_team_my_pe(col) == me / 2);
    shmem_int_sum_reduce(row, dst, src, 1);
    int base = me - me % 2;
    CHECK(*dst == (base + 1 < npes ? 2 * base + 1 : base));
    shmem_team_destroy(row);
    shmem_team_destroy(col);
    shmem_free(dst);
    shmem_free(src);
}

/* pe_quiet: a put to the right neighbour completed before the flag that says so */
static long pq_data[32];
static int pq_flag;
static void ex_pe_quiet(void) {
    long src[32];
    for (int i = 0; i < 32; i++)
        src[i] = me * 32 + i;
    int right = (me + 1) % npes;
    shmem_long_put_nbi(pq_data, src, 32, right);
    shmem_pe_quiet(&right, 1);
    shmem_int_atomic_set(&pq_flag, 1, right);
    shmem_int_wait_until(&pq_flag, SHMEM_CMP_EQ, 1);
    int left = (me + npes - 1) % npes;
    for (int i = 0; i < 32; i++)
        CHECK(pq_data[i] == left * 32 + i);
    shmem_barrier_all();
}

/* memory: calloc is zeroed, align aligns, and the same address is valid on every PE */
static void ex_memory(void) {
    long *z = shmem_calloc(16, sizeof(long));
    for (int i = 0; i < 16; i++)
        CHECK(z[i] == 0);
    double *a = shmem_align(256, 8 * sizeof(double));
    CHECK(((size_t)a % 256) == 0);
    a[0] = me;
    shmem_barrier_all();
    CHECK(shmem_double_g(a, (me + 1) % npes) == (me + 1) % npes);
    shmem_barrier_all();
    shmem_free(a);
    shmem_free(z);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    ex_hello();
    ex_put();
    ex_iput();
    ex_get();
    ex_pg();
    ex_race();
    ex_tickets();
    ex_lock();
    ex_signal();
    ex_wait();
    ex_test_any();
    ex_collectives();
    ex_reductions();
    ex_teams();
    ex_pe_quiet();
    ex_memory();
    shmem_barrier_all();
    if (me == 0 && failures == 0)
        printf("PASS: spec_examples (%d PEs)\n", npes);
    shmem_finalize();
    return failures != 0;
}
