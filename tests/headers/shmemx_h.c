/* shmemx.h (which includes shmem.h) beside ishmemx.h in a C11 translation unit: the two name
 * sets coexist (compiled with -Wall -Wextra -Werror [-pedantic]). */
#include <shmemx.h>
#include <ishmemx.h>

int header_test_c(void);
int header_test_c(void) {
    int d[4] = {0}, s[4] = {0}, ret = 0;
    shmemx_queue_t q = (ishmemx_queue_t)0;
    void (*put)(int *, const int *, size_t, int, shmemx_queue_t) = shmemx_int_put_on_queue;
    (void)put;
    shmemx_put_on_queue(d, s, 4, 0, q); /* a generic name */
    shmemx_sum_reduce_on_queue(SHMEM_TEAM_WORLD, d, s, 4, &ret, q);
    ishmem_int_put(d, s, 4, 0);
    return shmemx_gpu_in_use() + (SHMEMX_TEAM_NODE != SHMEM_TEAM_INVALID) + ISHMEMX_TEAM_NODE;
}
