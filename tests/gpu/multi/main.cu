/* multi/main.cu + multi/part.cu: the device API in a program built from several .cu files in
 * one plain line, without -rdc and without a device archive:
 *   nvcc main.cu part.cu $(pkg-config --cflags --libs ishmem)
 * Each file holds its own copy of the device state (bound by libishmem at ishmem_init). A kernel
 * of each file puts into the right neighbour's heap, p's a flag with a fetch_add from the other
 * file, and after a device barrier every PE checks what both files delivered. */
#include <ishmem.h>
#include <ishmemx.h>
#include <stdio.h>
#include "../gpu_test.h"

void part_launch(long *dst, int pe, long value, long *counter); /* part.cu */
void part_barrier(void);                                         /* part.cu */

__global__ void main_put(long *dst, int pe, long value) {
    long v[4] = {value, value + 1, value + 2, value + 3};
    ishmem_long_put(dst, v, 4, pe);
    ishmem_quiet();
}

int main(void) {
    ishmem_init();
    gt_me = ishmem_my_pe();
    int n = ishmem_n_pes();
    int right = (gt_me + 1) % n;
    long *buf = (long *)ishmem_calloc(8, sizeof(long));
    long *counter = (long *)ishmem_calloc(1, sizeof(long));
    CHECK(buf && counter, "symmetric allocation");
    ishmem_barrier_all();

    main_put<<<1, 1>>>(buf, right, 100 * gt_me);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "main_put");
    part_launch(buf + 4, right, 1000 * gt_me, counter);
    part_barrier(); /* a device barrier_all from the other file */

    long got[8];
    CHECK(cudaMemcpy(got, buf, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
    int left = (gt_me + n - 1) % n;
    for (int i = 0; i < 4; i++) {
        CHECK(got[i] == 100L * left + i, "main.cu put [%d] = %ld, want %ld", i, got[i], 100L * left + i);
        CHECK(got[4 + i] == 1000L * left + i, "part.cu put [%d] = %ld, want %ld", i, got[4 + i], 1000L * left + i);
    }
    long c = 0;
    CHECK(cudaMemcpy(&c, counter, sizeof c, cudaMemcpyDeviceToHost) == cudaSuccess, "copy counter");
    CHECK(c == 1, "counter on PE %d = %ld, want 1 (one fetch_add from the left PE)", gt_me, c);

    ishmem_free(counter);
    ishmem_free(buf);
    int rc = gpu_test_end("multi");
    ishmem_finalize();
    return rc;
}
