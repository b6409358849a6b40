/* multi/part.cu: the second file of the multi-file device API test (see main.cu). */
#include <ishmem.h>
#include <stdio.h>

__global__ void part_put(long *dst, int pe, long value, long *counter) {
    for (int i = 0; i < 4; i++) ishmem_long_p(dst + i, value + i, pe);
    long old = ishmem_long_atomic_fetch_add(counter, 1, pe);
    (void)old;
    ishmem_quiet();
}

__global__ void part_barrier_kernel(void) { ishmem_barrier_all(); }

void part_launch(long *dst, int pe, long value, long *counter) {
    part_put<<<1, 1>>>(dst, pe, value, counter);
    if (cudaDeviceSynchronize() != cudaSuccess) fprintf(stderr, "part_put failed\n");
}

void part_barrier(void) {
    part_barrier_kernel<<<1, 1>>>();
    if (cudaDeviceSynchronize() != cudaSuccess) fprintf(stderr, "part_barrier_kernel failed\n");
}
