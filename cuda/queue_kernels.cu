/* cuda/queue_kernels.cu: the kernels behind the _on_queue forms (ishmemx_*_on_queue), which
 * libishmem enqueues on the caller's CUDA stream. Compiled to PTX by scripts/gen-ptx.sh into
 * src/transport/cuda/queue_kernels.ptx (committed; JIT-compiled by the driver at first use).
 *
 * The kernels use the same device implementation as user kernels (ishmem/cuda_impl.cuh); the
 * library binds this module's copy of the device state (ishmemi_dstate) with
 * cuModuleGetGlobal, as ishmemx_cumodule_init does for user cubins. Addresses are symmetric
 * addresses of the calling PE; the kernels translate them. */
#include <ishmem/cuda_impl.cuh>

/* Contiguous copy by the whole grid: put (remote dest) or get (remote source). */
extern "C" __global__ void ishmemi_q_putmem(void *dest, const void *src, size_t bytes, int pe) {
    char *r = ishmemi::ptr(dest, bytes, pe, "ishmemx_putmem_on_queue");
    ishmemi::copy(r, (const char *)src, bytes, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

extern "C" __global__ void ishmemi_q_getmem(void *dest, const void *src, size_t bytes, int pe) {
    const char *r = ishmemi::ptr(src, bytes, pe, "ishmemx_getmem_on_queue");
    ishmemi::copy((char *)dest, r, bytes, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

/* Put-with-signal in one block: the block copies, then one thread fences and updates the signal. */
extern "C" __global__ void ishmemi_q_put_signal(void *dest, const void *src, size_t bytes, uint64_t *sig, uint64_t value,
                                                int sig_op, int pe) {
    const char *F = "ishmemx_putmem_signal_on_queue";
    if (bytes) ishmemi::copy(ishmemi::ptr(dest, bytes, pe, F), (const char *)src, bytes, threadIdx.x, blockDim.x);
    __syncthreads(); /* then one cumulative fence by the thread that signals */
    if (threadIdx.x == 0) {
        __threadfence_system();
        ishmemi::signal_update(sig, value, sig_op, pe, F);
    }
}

/* The signal alone, after a copy-engine copy earlier on the stream. */
extern "C" __global__ void ishmemi_q_signal(uint64_t *sig, uint64_t value, int sig_op, int pe) {
    __threadfence_system();
    ishmemi::signal_update(sig, value, sig_op, pe, "ishmemx_putmem_signal_on_queue");
}

extern "C" __global__ void ishmemi_q_quiet() { ishmemi::quiet(); }

extern "C" __global__ void ishmemi_q_barrier_all() { ishmemi::barrier_all("ishmemx_barrier_all_on_queue"); }

/* wait_until families on the stream: mode 0 all, 1 any, 2 some. `values` non-NULL selects the
 * vector forms. `ret` (device-accessible, may be NULL) receives the index (any) or count (some). */
template <class T>
__device__ void wait(T *ivars, size_t n, size_t *indices, const int *status, int cmp, T value, const T *values, int mode,
                     size_t *ret) {
    const char *F = "ishmemx_wait_until_on_queue";
    ishmemi::values<T> v{values, value};
    size_t r = 0;
    if (mode == 0) ishmemi::wait_all<T>(ivars, n, status, cmp, v, F);
    else if (mode == 1) r = ishmemi::wait_any<T>(ivars, n, status, cmp, v, F);
    else r = ishmemi::wait_some<T>(ivars, n, indices, status, cmp, v, F);
    if (ret) *ret = r;
}

#define WAIT_KERNEL(suffix, T)                                                                                           \
    extern "C" __global__ void ishmemi_q_wait_##suffix(T *ivars, size_t n, size_t *indices, const int *status, int cmp,  \
                                                       T value, const T *values, int mode, size_t *ret) {                \
        wait<T>(ivars, n, indices, status, cmp, value, values, mode, ret);                                               \
    }
WAIT_KERNEL(i32, int32_t)
WAIT_KERNEL(u32, uint32_t)
WAIT_KERNEL(i64, int64_t)
WAIT_KERNEL(u64, uint64_t)
