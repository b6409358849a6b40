/* oshmem15: the OpenSHMEM 1.5 names beyond Intel SHMEM (issue 14): ishmem_pe_accessible,
 * ishmem_addr_accessible and ishmem_sync(team) (ishmem_global_exit: bad_input global_exit*
 * and uid_crash global_exit, which end the job). */
#include "test_util.h"

static long g_sym[4]; /* symmetric: a global of the executable */

int main(void) {
    test_init();
    int n = t_npes;

    /* pe_accessible: every PE of the job, nothing else (not an error) */
    for (int pe = 0; pe < n; pe++)
        CHECK_EQ(ishmem_pe_accessible(pe), 1);
    CHECK_EQ(ishmem_pe_accessible(-1), 0);
    CHECK_EQ(ishmem_pe_accessible(n), 0);
    CHECK_EQ(ishmem_pe_accessible(1 << 30), 0);

    /* addr_accessible: the symmetric heap (first and last byte of a block) and symmetric
     * globals on every PE; stack, malloc'ed memory and out-of-range PEs not */
    char *heap = ishmem_malloc(4096);
    int local = 0;
    char *priv = malloc(64);
    for (int pe = 0; pe < n; pe++) {
        CHECK_EQ(ishmem_addr_accessible(heap, pe), 1);
        CHECK_EQ(ishmem_addr_accessible(heap + 4095, pe), 1);
        CHECK_EQ(ishmem_addr_accessible(&g_sym[3], pe), 1);
        CHECK_EQ(ishmem_addr_accessible(&local, pe), 0);
        CHECK_EQ(ishmem_addr_accessible(priv, pe), 0);
        CHECK_EQ(ishmem_addr_accessible(NULL, pe), 0);
    }
    CHECK_EQ(ishmem_addr_accessible(heap, n), 0);
    CHECK_EQ(ishmem_addr_accessible(heap, -1), 0);
    free(priv);

    /* ishmem_sync(team): a barrier of the team, as ishmem_team_sync. Each PE puts its number
     * into the next PE's heap, syncs the world team, and reads what the previous PE put. */
    for (int round = 0; round < 20; round++) {
        long v = 1000L * round + t_me;
        ishmem_long_put((long *)heap, &v, 1, (t_me + 1) % n);
        ishmem_quiet();
        CHECK_EQ(ishmem_sync(ISHMEM_TEAM_WORLD), 0);
        CHECK_EQ(*(long *)heap, 1000L * round + (t_me + n - 1) % n);
        CHECK_EQ(ishmem_sync(ISHMEM_TEAM_WORLD), 0); /* nobody overwrites before all read */
    }
    /* ... on a split team (the even PEs), mixed with ishmem_team_sync on the same team */
    ishmem_team_t even;
    CHECK_EQ(ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even), 0);
    if (even != ISHMEM_TEAM_INVALID) {
        int m = ishmem_team_n_pes(even), me = ishmem_team_my_pe(even);
        for (int round = 0; round < 10; round++) {
            long v = 7000L + round;
            int dest = ishmem_team_translate_pe(even, (me + 1) % m, ISHMEM_TEAM_WORLD);
            ishmem_long_put((long *)heap + 1, &v, 1, dest);
            ishmem_quiet();
            CHECK_EQ(round % 2 ? ishmem_team_sync(even) : ishmem_sync(even), 0);
            CHECK_EQ(((long *)heap)[1], 7000L + round);
            CHECK_EQ(ishmem_sync(even), 0);
        }
        ishmem_team_destroy(even);
    }
    ishmem_barrier_all();
    ishmem_free(heap);
    return test_finish("oshmem15");
}
