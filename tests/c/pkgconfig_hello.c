/* Built by scripts/pkgconfig.sh with exactly `cc prog.c $(pkg-config --cflags --libs ishmem)`. */
#include <ishmem.h>
#include <stdio.h>

static long arrived;

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    ishmem_long_atomic_add(&arrived, 1, 0);
    ishmem_barrier_all();
    long n = ishmem_long_g(&arrived, 0);
    printf("pkgconfig: PE %d of %d %s\n", me, npes, n == npes ? "ok" : "WRONG");
    ishmem_finalize();
    return n == npes ? 0 : 1;
}
