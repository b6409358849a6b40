/* cumodule.cu: ishmemx_cumodule_init for a module loaded with cuModuleLoad (argv[1]: the cubin
 * of tests/gpu/modules/dstate_module.cu). The driver API is reached with dlopen, so the program
 * needs no -lcuda. Checks: NULL is refused with a nonzero status; after binding, a kernel of
 * the module sees this PE's state and stores into the peer's heap.
 * Build: nvcc -arch=sm_90 cumodule.cu $(pkg-config --cflags --libs ishmem) -ldl */
#include <ishmem.h>
#include <ishmemx.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <string.h>
#include "gpu_test.h"

typedef CUresult (*load_fn)(CUmodule *, const char *);
typedef CUresult (*getfn_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                              void **, void **);

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    gt_me = me;
    int prev = (me + npes - 1) % npes;
    CHECK(argc > 1, "usage: cumodule path/to/dstate_module.cubin");
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(lib != NULL, "dlopen libcuda.so.1: %s", dlerror());
    if (argc < 2 || !lib) {
        ishmem_finalize();
        return gpu_test_end("cumodule");
    }
    load_fn load = (load_fn)dlsym(lib, "cuModuleLoad");
    getfn_fn getfn = (getfn_fn)dlsym(lib, "cuModuleGetFunction");
    launch_fn launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
    CHECK(load && getfn && launch, "driver entry points");
    CHECK(ishmemx_gpu_in_use() == 1, "the GPU backend is not in use");
    long long *report = NULL;
    CHECK(cudaMallocManaged(&report, 4 * sizeof(long long)) == cudaSuccess, "cudaMallocManaged");
    if (gt_fails) {
        ishmem_finalize();
        return gpu_test_end("cumodule");
    }

    printf("cumodule: PE %d: the next line is an expected error message\n", me);
    fflush(stdout);
    CHECK(ishmemx_cumodule_init(NULL) != 0, "cumodule_init(NULL) returned 0");

    CUmodule m = NULL;
    CUresult r = load(&m, argv[1]);
    CHECK(r == CUDA_SUCCESS, "cuModuleLoad(%s): %d", argv[1], (int)r);
    CHECK(r == CUDA_SUCCESS && ishmemx_cumodule_init(m) == 0, "ishmemx_cumodule_init failed");
    CUfunction f = NULL;
    if (r == CUDA_SUCCESS) r = getfn(&f, m, "put_to_peer");
    CHECK(r == CUDA_SUCCESS, "cuModuleGetFunction: %d", (int)r);
    if (r != CUDA_SUCCESS) {
        ishmem_finalize();
        return gpu_test_end("cumodule");
    }

    int *data = (int *)ishmem_calloc(16, sizeof(int));
    memset(report, 0xff, 4 * sizeof(long long));
    int value = 5000;
    void *args[] = {&data, &value, &report};
    r = launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    CHECK(r == CUDA_SUCCESS, "cuLaunchKernel: %d", (int)r);
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(ce == cudaSuccess, "kernel: %s", cudaGetErrorString(ce));
    CHECK(report[0] == me && report[1] == npes && report[2] == 1, "module state: pe %lld n %lld init %lld", report[0],
          report[1], report[2]);
    ishmem_barrier_all();
    CHECK(ishmem_int_g(data, me) == 5000 + prev, "data %d, want %d", ishmem_int_g(data, me), 5000 + prev);
    ishmem_barrier_all();
    cudaFree(report);
    ishmem_free(data);
    ishmem_finalize();
    return gpu_test_end("cumodule");
}
