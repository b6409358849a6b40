/* qreduce: time ishmemx_float_sum_reduce_on_queue (out of place, world team) for a few sizes and
 * print one line per size: the whole-GPU path (ISHMEM_QUEUE_REDUCE_SPLIT_MIN, 256K by default)
 * against one block (run with ISHMEM_QUEUE_REDUCE_SPLIT_MIN=1T). Meant for 1 PE on one GPU
 * (the kernel-throughput difference) or one PE per GPU; with several PEs on one GPU the
 * team-sync kernels time-slice and the figures mean nothing.
 *   nvcc -arch=sm_90 bench/exp/qreduce.cu $(pkg-config --cflags --libs ishmem) -o qreduce
 *   ishmrun -n 1 ./qreduce */
#include <ishmem.h>
#include <ishmemx.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    const size_t max_bytes = (size_t)256 << 20;
    float *src = (float *)ishmem_malloc(max_bytes), *dst = (float *)ishmem_malloc(max_bytes);
    if (!src || !dst) {
        fprintf(stderr, "qreduce: no symmetric memory for 2 x %zu bytes\n", max_bytes);
        return 1;
    }
    cudaMemset(src, 0, max_bytes);
    cudaStream_t q;
    cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking);
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    const char *env = getenv("ISHMEM_QUEUE_REDUCE_SPLIT_MIN");
    for (size_t bytes = 64 << 10; bytes <= max_bytes; bytes *= 16) {
        size_t n = bytes / sizeof(float);
        int iters = bytes >= ((size_t)16 << 20) ? 5 : 20;
        for (int i = 0; i < 2; i++) ishmemx_float_sum_reduce_on_queue(ISHMEM_TEAM_WORLD, dst, src, n, NULL, q);
        cudaStreamSynchronize(q);
        ishmem_barrier_all();
        cudaEventRecord(t0, q);
        for (int i = 0; i < iters; i++) ishmemx_float_sum_reduce_on_queue(ISHMEM_TEAM_WORLD, dst, src, n, NULL, q);
        cudaEventRecord(t1, q);
        cudaEventSynchronize(t1);
        float ms = 0;
        cudaEventElapsedTime(&ms, t0, t1);
        double us = ms * 1000.0 / iters;
        if (me == 0)
            printf("qreduce npes=%d split_min=%s bytes=%zu us=%.1f GB/s=%.1f\n", npes, env ? env : "default", bytes, us,
                   bytes / us / 1e3);
    }
    ishmem_barrier_all();
    ishmem_free(dst);
    ishmem_free(src);
    ishmem_finalize();
    return 0;
}
