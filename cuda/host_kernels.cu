/* cuda/host_kernels.cu: the kernels libishmem's host API runs on the GPU heap. Compiled to PTX
 * by scripts/gen-ptx.sh (nvcc -arch=compute_80 -ptx) into src/transport/cuda/host_kernels.ptx,
 * which is committed and JIT-compiled by the driver at ishmem_init (sm_80 .. sm_90 and later).
 *
 * ishmemi_host_amo: one atomic memory operation by one thread on a symmetric address (this
 * PE's heap or a peer's, as mapped here by CUDA IPC). System-scope, sequentially consistent,
 * so it is atomic against the device API's atomics (ishmem/cuda_impl.cuh) from any GPU of the
 * node. The fetched value goes to `result` (pinned host memory), zero-extended to 64 bits.
 * Byte-wide operations are CAS loops on the aligned 32-bit word holding the byte (the heap is
 * a multiple of 64 bytes long, so that word lies inside it).
 *
 * The op and width codes are mirrored in src/transport/cuda/mod.rs (AmoOp). */
#include <cuda/atomic>
#include <stdint.h>

#define OP_FETCH 0
#define OP_SET 1
#define OP_SWAP 2
#define OP_CAS 3
#define OP_ADD 4
#define OP_AND 5
#define OP_OR 6
#define OP_XOR 7

template <class T> __device__ __forceinline__ T apply(unsigned op, T old, T v, T cond) {
    switch (op) {
    case OP_SET:
    case OP_SWAP: return v;
    case OP_CAS: return old == cond ? v : old;
    case OP_ADD: return (T)(old + v);
    case OP_AND: return old & v;
    case OP_OR: return old | v;
    case OP_XOR: return old ^ v;
    default: return old; /* OP_FETCH */
    }
}

template <class T> __device__ __forceinline__ T amo(T *p, unsigned op, T v, T cond) {
    cuda::atomic_ref<T, cuda::thread_scope_system> a(*p);
    const cuda::memory_order sc = cuda::memory_order_seq_cst;
    switch (op) {
    case OP_FETCH: return a.load(sc);
    case OP_SET: a.store(v, sc); return 0;
    case OP_SWAP: return a.exchange(v, sc);
    case OP_CAS: a.compare_exchange_strong(cond, v, sc, sc); return cond;
    case OP_ADD: return a.fetch_add(v, sc);
    case OP_AND: return a.fetch_and(v, sc);
    case OP_OR: return a.fetch_or(v, sc);
    case OP_XOR: return a.fetch_xor(v, sc);
    }
    return 0;
}

__device__ __forceinline__ uint8_t amo8(uintptr_t addr, unsigned op, uint8_t v, uint8_t cond) {
    uint32_t *w = (uint32_t *)(addr & ~(uintptr_t)3);
    unsigned shift = (unsigned)(addr & 3) * 8;
    cuda::atomic_ref<uint32_t, cuda::thread_scope_system> a(*w);
    uint32_t old = a.load(cuda::memory_order_seq_cst);
    for (;;) {
        uint8_t ob = (uint8_t)(old >> shift);
        uint8_t nb = apply<uint8_t>(op, ob, v, cond);
        if (op == OP_FETCH || (nb == ob && op != OP_SET && op != OP_SWAP))
            return ob;
        uint32_t nw = (old & ~(0xffu << shift)) | ((uint32_t)nb << shift);
        if (a.compare_exchange_weak(old, nw, cuda::memory_order_seq_cst, cuda::memory_order_seq_cst))
            return ob;
    }
}

extern "C" __global__ void ishmemi_host_amo(uint64_t addr, unsigned width, unsigned op, uint64_t value, uint64_t cond,
                                            uint64_t *result) {
    uint64_t r = 0;
    switch (width) {
    case 1: r = amo8((uintptr_t)addr, op, (uint8_t)value, (uint8_t)cond); break;
    case 4: r = amo<uint32_t>((uint32_t *)(uintptr_t)addr, op, (uint32_t)value, (uint32_t)cond); break;
    case 8: r = amo<unsigned long long>((unsigned long long *)(uintptr_t)addr, op, (unsigned long long)value,
                                        (unsigned long long)cond); break;
    }
    *result = r;
    __threadfence_system();
}
