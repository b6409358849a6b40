// ishmem.h alone in a C++17 translation unit (compiled with -Wall -Wextra -Werror [-pedantic]).
#include <ishmem.h>

int header_test_cxx();
int header_test_cxx() {
    int x = 0;
    void (*init)() = ishmem_init;
    (void)init;
    (void)sizeof(ishmem_int_g(&x, 0));
    (void)sizeof(ishmem_g(&x, 0)); // an overload
    // collectives: with and without the team, typed, mem and generic
    int d[4] = {0}, s[4] = {0};
    int (*red)(ishmem_team_t, int *, const int *, size_t) = ishmem_int_sum_reduce;
    (void)red;
    (void)sizeof(ishmem_int_sum_reduce(d, s, 4));
    (void)sizeof(ishmem_int_sum_reduce(ISHMEM_TEAM_WORLD, d, s, 4));
    (void)sizeof(ishmem_sum_reduce(d, s, 4));
    (void)sizeof(ishmem_sum_reduce(ISHMEM_TEAM_SHARED, d, s, 4));
    (void)sizeof(ishmem_broadcast(d, s, 4, 0));
    (void)sizeof(ishmem_broadcast(ISHMEM_TEAM_WORLD, d, s, 4, 0));
    (void)sizeof(ishmem_broadcastmem(d, s, 16, 0));
    (void)sizeof(ishmem_alltoallmem(ISHMEM_TEAM_WORLD, d, s, 4));
    (void)sizeof(ishmem_team_sync(ISHMEM_TEAM_WORLD));
    return ISHMEM_MAJOR_VERSION * 100 + ISHMEM_MINOR_VERSION;
}
