/* hello.c: every PE writes its number into a symmetric array on every PE, counts itself into
 * a global counter on PE 0 with an atomic add, and sends a greeting around a ring with
 * put-with-signal. Build and run:
 *   cc hello.c $(pkg-config --cflags --libs ishmem) -o hello && ishmrun -n 4 ./hello   */
#include <ishmem.h>
#include <stdio.h>
#include <string.h>

static long arrived = 0;      /* a global: symmetric for host RMA and AMOs */
static char greeting[64];
static uint64_t greeted = 0;

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();

    int *ranks = ishmem_calloc((size_t)npes, sizeof(int));
    for (int pe = 0; pe < npes; pe++)
        ishmem_int_p(&ranks[me], me, pe);
    ishmem_long_atomic_add(&arrived, 1, 0);

    char msg[64];
    snprintf(msg, sizeof msg, "hello from PE %d", me);
    int next = (me + 1) % npes;
    ishmem_putmem_signal(greeting, msg, sizeof msg, &greeted, 1, ISHMEM_SIGNAL_SET, next);
    ishmem_signal_wait_until(&greeted, ISHMEM_CMP_EQ, 1);
    ishmem_barrier_all();

    int ok = 1;
    for (int pe = 0; pe < npes; pe++)
        ok &= ranks[pe] == pe;
    if (me == 0)
        ok &= arrived == npes;
    printf("PE %d of %d got \"%s\": %s\n", me, npes, greeting, ok ? "ok" : "WRONG");

    ishmem_free(ranks);
    ishmem_finalize();
    return ok ? 0 : 1;
}
