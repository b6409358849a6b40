/* openshmem: an OpenSHMEM program written only with the shmem_* names and <shmem.h> (issue 25),
 * built with the ishmem-oshcc wrapper and run unchanged under ishmrun: setup and queries,
 * put/get (typed, generic, SIZE, mem, nbi, strided, 1.6 ibput), p/g, atomics (generic,
 * typed, nbi, the deprecated 1.4 spellings), put-with-signal and the 1.6 signal_add, wait_until,
 * barrier, reductions, scans, broadcast, fcollect, alltoall, a team split. Every value is
 * checked; the last line is "PASS: openshmem (N PEs)". */
#include <shmem.h>

#include <stdio.h>
#include <string.h>

#define N 16

static long g_dst[N]; /* symmetric: a global of the executable */
static int g_counter;

static int me, npes, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL: openshmem: PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, #cond);   \
            fflush(stdout);                                                                  \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static long lsum(long n) { return n * (n - 1) / 2; } /* 0 + 1 + ... + n-1 */

int main(void) {
    int initialized = -1;
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0);
    shmem_init();
    shmem_query_initialized(&initialized);
    CHECK(initialized != 0);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes >= 1 && me >= 0 && me < npes);
    CHECK(_my_pe() == me && _num_pes() == npes);

    /* queries */
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION);
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0);
    int provided = -1;
    shmem_query_thread(&provided);
    CHECK(provided >= SHMEM_THREAD_SINGLE && provided <= SHMEM_THREAD_MULTIPLE);
    printf("openshmem: hello from PE %d of %d\n", me, npes);

    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *buf = shmem_malloc(N * sizeof(long));
    long *src = shmem_calloc(N, sizeof(long));
    int *ibuf = shmem_align(64, N * sizeof(int));
    CHECK(buf && src && ibuf && ((size_t)ibuf % 64) == 0);
    CHECK(shmem_ptr(buf, me) == buf);
    CHECK(shmem_addr_accessible(g_dst, right) == 1 && shmem_pe_accessible(right) == 1);

    /* put: typed to the right neighbour's heap, generic to its global */
    for (int i = 0; i < N; i++)
        src[i] = 1000L * me + i;
    shmem_long_put(buf, src, N, right);
    shmem_put(g_dst, src, N, right);
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == 1000L * left + i && g_dst[i] == 1000L * left + i);
    shmem_barrier_all();

    /* get: SIZE and mem forms from the left neighbour, then nbi + quiet */
    long got[N];
    memset(got, 0, sizeof got);
    shmem_get64(got, src, N, left);
    for (int i = 0; i < N; i++)
        CHECK(got[i] == 1000L * left + i);
    memset(got, 0, sizeof got);
    shmem_getmem(got, src, sizeof got, right);
    for (int i = 0; i < N; i++)
        CHECK(got[i] == 1000L * right + i);
    memset(got, 0, sizeof got);
    shmem_get_nbi(got, src, N, left);
    shmem_quiet();
    CHECK(got[N - 1] == 1000L * left + N - 1);

    /* p/g and strided: every other element, then blocks of 2 (1.6 ibput) */
    shmem_int_p(&ibuf[0], 7 * me, right);
    shmem_barrier_all();
    CHECK(ibuf[0] == 7 * left);
    CHECK(shmem_int_g(&ibuf[0], right) == 7 * me);
    CHECK(shmem_g(&ibuf[0], left) == 7 * ((left + npes - 1) % npes));
    shmem_barrier_all();
    memset(buf, 0, N * sizeof(long));
    shmem_barrier_all();
    shmem_long_iput(buf, src, 2, 1, N / 2, right); /* src[0..8) to buf[0, 2, 4, ...] */
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == (i % 2 == 0 ? 1000L * left + i / 2 : 0));
    shmem_barrier_all();
    memset(buf, 0, N * sizeof(long));
    shmem_barrier_all();
    shmem_long_ibput(buf, src, 4, 2, 2, N / 4, right); /* blocks of 2 at strides 4 (dest), 2 (src) */
    shmem_barrier_all();
    for (int b = 0; b < N / 4; b++) {
        CHECK(buf[4 * b] == 1000L * left + 2 * b && buf[4 * b + 1] == 1000L * left + 2 * b + 1);
        CHECK(buf[4 * b + 2] == 0 && buf[4 * b + 3] == 0);
    }
    shmem_barrier_all();

    /* atomics on PE 0's counter: generic, typed, deprecated spellings, nbi */
    if (me == 0)
        g_counter = 0;
    shmem_barrier_all();
    int old = shmem_atomic_fetch_add(&g_counter, 1, 0);
    CHECK(old >= 0 && old < 8 * npes); /* each PE adds 8 in all */
    shmem_int_atomic_add(&g_counter, 2, 0);
    shmem_int_fadd(&g_counter, 3, 0); /* OpenSHMEM 1.4 spelling */
    shmem_int_inc(&g_counter, 0);
    int fetched = -1;
    shmem_int_atomic_fetch_inc_nbi(&fetched, &g_counter, 0);
    shmem_quiet();
    CHECK(fetched >= 0);
    shmem_barrier_all();
    CHECK(shmem_int_atomic_fetch(&g_counter, 0) == 8 * npes);
    CHECK(shmem_int_fetch(&g_counter, 0) == 8 * npes);
    shmem_barrier_all();
    if (me == npes - 1) {
        CHECK(shmem_atomic_compare_swap(&g_counter, 8 * npes, -5, 0) == 8 * npes);
        CHECK(shmem_int_atomic_swap(&g_counter, 9, 0) == -5);
    }
    shmem_barrier_all();
    CHECK(shmem_int_g(&g_counter, 0) == 9);

    /* put with signal (ADD) to the right; the 1.6 signal_add; wait_until */
    static uint64_t sig;
    sig = 0;
    ibuf[2] = -1;
    shmem_barrier_all();
    shmem_int_put_signal(&ibuf[3], &me, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_add(&sig, 10, right);
    CHECK(shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 11) == 11);
    CHECK(ibuf[3] == left && shmem_signal_fetch(&sig) == 11);
    shmem_int_atomic_set(&ibuf[2], me, right);
    shmem_int_wait_until(&ibuf[2], SHMEM_CMP_EQ, left);
    CHECK(ibuf[2] == left);
    CHECK(shmem_int_test(&ibuf[2], SHMEM_CMP_NE, left) == 0);
    shmem_barrier_all();

    /* collectives over SHMEM_TEAM_WORLD, team first */
    int *ired = shmem_malloc(4 * sizeof(int));
    int *ires = shmem_malloc(4 * sizeof(int));
    for (int i = 0; i < 4; i++)
        ired[i] = me + i;
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, ires, ired, 4) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(ires[i] == (int)(lsum(npes) + (long)i * npes));
    CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, ires, ired, 4) == 0);
    CHECK(ires[0] == npes - 1 && ires[3] == npes + 2);
    CHECK(shmem_int_sum_inscan(SHMEM_TEAM_WORLD, ires, ired, 1) == 0); /* 1.6 */
    CHECK(ires[0] == (int)lsum(me + 1));
    shmem_barrier_all();
    memset(buf, 0, N * sizeof(long));
    shmem_barrier_all();
    CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, buf, src, N, npes - 1) == 0);
    for (int i = 0; i < N; i++)
        CHECK(buf[i] == 1000L * (npes - 1) + i);
    long *all = shmem_malloc((size_t)npes * sizeof(long));
    long mine = 100 + me;
    long *one = shmem_malloc(sizeof(long));
    *one = mine;
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, all, one, 1) == 0);
    for (int p = 0; p < npes; p++)
        CHECK(all[p] == 100 + p);
    long *a2a_src = shmem_malloc((size_t)npes * sizeof(long));
    for (int p = 0; p < npes; p++)
        a2a_src[p] = 10L * me + p;
    CHECK(shmem_alltoall(SHMEM_TEAM_WORLD, all, a2a_src, 1) == 0);
    for (int p = 0; p < npes; p++)
        CHECK(all[p] == 10L * p + me);

    /* a team of the even PEs */
    shmem_team_t evens = SHMEM_TEAM_INVALID;
    shmem_team_config_t cfg = {0};
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, &cfg, 0, &evens) == 0);
    if (me % 2 == 0) {
        CHECK(evens != SHMEM_TEAM_INVALID && shmem_team_my_pe(evens) == me / 2);
        CHECK(shmem_team_n_pes(evens) == (npes + 1) / 2);
        CHECK(shmem_team_translate_pe(evens, shmem_team_my_pe(evens), SHMEM_TEAM_WORLD) == me);
        ired[0] = 1;
        CHECK(shmem_int_sum_reduce(evens, ires, ired, 1) == 0);
        CHECK(ires[0] == (npes + 1) / 2);
        CHECK(shmem_team_sync(evens) == 0);
        shmem_team_destroy(evens);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID);
    }
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0);

    shmem_barrier_all();
    shmem_free(a2a_src);
    shmem_free(one);
    shmem_free(all);
    shmem_free(ires);
    shmem_free(ired);
    shmem_free(ibuf);
    shmem_free(src);
    shmem_free(buf);
    if (failures)
        shmem_global_exit(1);
    shmem_finalize();
    printf("PASS: openshmem (%d PEs)\n", npes);
    return 0;
}
