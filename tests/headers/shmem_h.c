/* shmem.h alone in a C11 translation unit (compiled with -Wall -Wextra -Werror [-pedantic]). */
#include <shmem.h>

int header_test_c(void);
int header_test_c(void) {
    int x = 0;
    void (*init)(void) = shmem_init;
    (void)init;
    (void)sizeof(shmem_int_g(&x, 0));
    (void)sizeof(shmem_g(&x, 0)); /* a generic name */
    (void)sizeof(shmem_atomic_fetch(&x, 0));
    (void)sizeof(shmem_int_fetch(&x, 0)); /* deprecated spelling */
    /* collectives: the team first, typed, mem and generic */
    int d[4] = {0}, s[4] = {0};
    int (*red)(shmem_team_t, int *, const int *, size_t) = shmem_int_sum_reduce;
    (void)red;
    (void)sizeof(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, d, s, 4));
    (void)sizeof(shmem_sum_reduce(SHMEM_TEAM_SHARED, d, s, 4));
    (void)sizeof(shmem_broadcast(SHMEM_TEAM_WORLD, d, s, 4, 0));
    (void)sizeof(shmem_broadcastmem(SHMEM_TEAM_WORLD, d, s, 16, 0));
    (void)sizeof(shmem_sum_inscan(SHMEM_TEAM_WORLD, d, s, 4));
    (void)sizeof(shmem_team_sync(SHMEM_TEAM_WORLD));
    (void)sizeof(shmem_sync(SHMEM_TEAM_WORLD));
    /* contexts: typed and generic forms with a context first (issue 25) */
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    (void)sizeof(shmem_ctx_int_g(ctx, &x, 0));
    (void)sizeof(shmem_g(ctx, &x, 0));
    (void)sizeof(shmem_atomic_fetch_add(ctx, &x, 1, 0));
    (void)sizeof(shmem_atomic_fetch_add(&x, 1, 0));
    void (*cput)(shmem_ctx_t, int *, const int *, size_t, int) = shmem_ctx_int_put;
    (void)cput;
    int (*mk)(long, shmem_ctx_t *) = shmem_ctx_create;
    (void)mk;
    void *(*re)(void *, size_t) = shmem_realloc;
    (void)re;
    (void)(SHMEM_CTX_INVALID == ctx);
    (void)(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE | SHMEM_MALLOC_ATOMICS_REMOTE |
           SHMEM_MALLOC_SIGNAL_REMOTE);
    shmem_team_config_t cfg = {0};
    (void)cfg;
    long psync[SHMEM_BCAST_SYNC_SIZE] = {SHMEM_SYNC_VALUE};
    (void)psync;
    return SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION + SHMEM_CMP_EQ + SHMEM_THREAD_MULTIPLE +
           SHMEM_SIGNAL_ADD + SHMEM_MAX_NAME_LEN + (int)sizeof(SHMEM_VENDOR_STRING);
}
