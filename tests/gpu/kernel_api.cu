/* kernel_api.cu: kernels using the device API of ishmem.h (the lead's header-only CUDA
 * implementation, bound by its static-init binder): my_pe/n_pes, p, put, g, atomic
 * fetch_add to PE 0 from every PE, quiet; the host checks with the host API.
 * Build: nvcc -arch=sm_90 kernel_api.cu $(pkg-config --cflags --libs ishmem) */
#include <ishmem.h>
#include <ishmemx.h>
#include "gpu_test.h"

#define N 256

__global__ void talk(int *data, int *counter, int *seen) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int peer = (me + 1) % npes;
    if (threadIdx.x == 0) {
        int v[N];
        for (int i = 0; i < N; i++)
            v[i] = me * 1000 + i;
        ishmem_int_put(data, v, N, peer);
        ishmem_int_p(&data[N], 77 + me, peer);
        seen[0] = me;
        seen[1] = npes;
        seen[2] = ishmem_int_atomic_fetch_add(counter, 1, 0) >= 0;
        ishmem_quiet();
    }
}

__global__ void look(int *data, int *seen) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int peer = (me + 1) % npes;
    if (threadIdx.x == 0) seen[3] = ishmem_int_g(&data[N], peer); /* what this PE wrote there */
}

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int prev = (me + npes - 1) % npes;
    int *seen = NULL;
    CHECK(ishmemx_gpu_in_use() == 1, "the GPU backend is not in use");
    CHECK(cudaMallocManaged(&seen, 4 * sizeof(int)) == cudaSuccess, "cudaMallocManaged");
    if (gt_fails) { /* nothing below can work */
        ishmem_finalize();
        return gpu_test_end("kernel_api");
    }
    int *data = (int *)ishmem_calloc(N + 1, sizeof(int));
    int *counter = (int *)ishmem_calloc(1, sizeof(int));
    seen[0] = seen[1] = seen[2] = seen[3] = -1;
    ishmem_barrier_all();
    talk<<<1, 32>>>(data, counter, seen);
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "talk kernel: %s", cudaGetErrorString(ce));
    ishmem_barrier_all();
    CHECK(seen[0] == me && seen[1] == npes && seen[2] == 1, "device my_pe %d n_pes %d amo %d", seen[0], seen[1], seen[2]);
    int got[N + 1];
    ishmem_int_get(got, data, N + 1, me);
    CHECK(got[0] == prev * 1000 && got[N - 1] == prev * 1000 + N - 1 && got[N] == 77 + prev, "data %d %d %d", got[0],
          got[N - 1], got[N]);
    if (me == 0) CHECK(ishmem_int_atomic_fetch(counter, 0) == npes, "counter %d", ishmem_int_atomic_fetch(counter, 0));
    look<<<1, 32>>>(data, seen);
    ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess && seen[3] == 77 + me, "device g: %d (err %s)", seen[3], cudaGetErrorString(ce));
    ishmem_barrier_all();
    cudaFree(seen);
    ishmem_free(counter);
    ishmem_free(data);
    ishmem_finalize();
    return gpu_test_end("kernel_api");
}
