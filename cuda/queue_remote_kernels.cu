/* cuda/queue_remote_kernels.cu: the kernels of the _on_queue RMA forms to a PE of another node
 * (a job across nodes: the PE is reached through the proxy ring, rptr is NULL), which libishmem
 * enqueues on the caller's CUDA stream. A module of its own (PTX by scripts/gen-ptx.sh into
 * src/transport/cuda/queue_remote_kernels.ptx), loaded at the first such call: a job of one node
 * never loads or JIT-compiles it, and the queue module (cuda/queue_kernels.cu) of the mapped path
 * is unchanged. Addresses are symmetric addresses of the calling PE. */
#include <ishmem/cuda_impl.cuh>

/* The RMA forms to a PE of another node (reached through the proxy ring: rptr is NULL), one
 * thread each: the device operation posts the request and waits as a device call does (the put
 * until the proxy has read the source, so the stream may reuse it; the get until the data is in
 * dest; put_signal until the proxy has put the data, ordered, then updated the signal; strided:
 * one request per block, the last put waiting). The host checked the ranges and chose this path;
 * the mapped path never launches these. Local buffers may be device memory or host memory (the
 * proxy thread reads and writes them on the host, through a host buffer for device memory): so
 * the puts here never go inline (device_state.h: ISHMEMI_PROXY_INLINE), whose bytes the kernel
 * would read, and pageable host memory is not readable by a kernel. */
extern "C" __global__ void ishmemi_q_proxy_putmem(void *dest, const void *src, size_t bytes, int pe) {
    ishmemi::put(dest, src, bytes, pe, "ishmemx_putmem_on_queue", false);
}

extern "C" __global__ void ishmemi_q_proxy_getmem(void *dest, const void *src, size_t bytes, int pe) {
    ishmemi::get(dest, src, bytes, pe, "ishmemx_getmem_on_queue");
}

extern "C" __global__ void ishmemi_q_proxy_put_signal(void *dest, const void *src, size_t bytes, uint64_t *sig,
                                                      uint64_t value, int sig_op, int pe) {
    ishmemi::put_signal(dest, src, bytes, sig, value, sig_op, pe, "ishmemx_putmem_signal_on_queue", false);
}

/* Strides dst and sst and the block size in elements of elem bytes (is_put: 1 put, 0 get). */
extern "C" __global__ void ishmemi_q_proxy_strided(int is_put, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                                                   size_t bsize, size_t nblocks, size_t elem, int pe) {
    ishmemi::strided(is_put != 0, dest, src, dst, sst, bsize, nblocks, elem, pe,
                     is_put ? "ishmemx_iput_on_queue" : "ishmemx_iget_on_queue", false);
}
