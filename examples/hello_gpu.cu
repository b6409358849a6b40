/* hello_gpu.cu: a kernel on each PE writes into the next PE's GPU heap and raises a signal
 * there, then waits for its own signal; the host checks the data. Build and run:
 *   nvcc hello_gpu.cu $(pkg-config --cflags --libs ishmem) -o hello_gpu && ishmrun -n 2 ./hello_gpu
 * No -rdc and no device library: the device API is header-only. */
#include <ishmem.h>
#include <ishmemx.h>
#include <stdio.h>

#define N 1024

__global__ void ring(int *data, uint64_t *sig) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int next = (me + 1) % npes;
    for (int i = threadIdx.x; i < N; i += blockDim.x)
        data[N + i] = me * 1000 + i;                  /* stage the message locally */
    __syncthreads();
    if (threadIdx.x == 0) {
        ishmem_int_put_signal(data, data + N, N, sig, 1, ISHMEM_SIGNAL_SET, next);
        ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 1);
    }
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int *data = (int *)ishmem_calloc(2 * N, sizeof(int));
    uint64_t *sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    ring<<<1, 256>>>(data, sig);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "PE %d: kernel failed: %s\n", me, cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    int got[N];
    ishmem_int_get(got, data, N, me);                 /* host get from the GPU heap */
    int prev = (me + npes - 1) % npes, ok = 1;
    for (int i = 0; i < N; i++)
        ok &= got[i] == prev * 1000 + i;
    printf("PE %d of %d (GPU %d): %s\n", me, npes, ishmemx_gpu_device(), ok ? "ok" : "WRONG");
    ishmem_barrier_all();
    ishmem_free(sig);
    ishmem_free(data);
    ishmem_finalize();
    return ok ? 0 : 1;
}
