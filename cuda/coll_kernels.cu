/* cuda/coll_kernels.cu: the kernels behind the collective _on_queue forms (team_sync, broadcast,
 * collect, fcollect, alltoall, reductions and scans), compiled to PTX by scripts/gen-ptx.sh into
 * src/transport/cuda/coll_kernels.ptx. A module of its own, loaded at the first collective on a
 * queue, so programs that use only RMA on queues never JIT-compile it.
 *
 * Teams and collectives on the stream: one block of threads runs the work-group form of
 * ishmem/cuda_coll.cuh. `ret` (device-accessible, may be NULL) receives the return code. The
 * function name in error messages is the on_queue name of the family. */
#include <ishmem/cuda_impl.cuh>
#include <cooperative_groups.h>

/* One block of 1024 threads (src/api/queue_coll.rs): the compiler must keep every kernel within
 * the registers that allow it (64 per thread). */
#define ISHMEMI_QB __launch_bounds__(1024, 1)

__device__ __forceinline__ void q_ret(int *ret, int rc) {
    if (ret && threadIdx.x == 0) *ret = rc;
}

extern "C" __global__ void ISHMEMI_QB ishmemi_q_team_sync(int team, int *ret) {
    auto g = cooperative_groups::this_thread_block();
    q_ret(ret, ishmemi::team_sync(g, team, "ishmemx_team_sync_on_queue"));
}

extern "C" __global__ void ISHMEMI_QB ishmemi_q_broadcast(int team, void *dest, const void *src, size_t bytes, int root, int *ret) {
    auto g = cooperative_groups::this_thread_block();
    q_ret(ret, ishmemi::broadcast(g, team, dest, src, bytes, root, "ishmemx_broadcast_on_queue"));
}

extern "C" __global__ void ISHMEMI_QB ishmemi_q_fcollect(int team, void *dest, const void *src, size_t bytes, int *ret) {
    auto g = cooperative_groups::this_thread_block();
    q_ret(ret, ishmemi::fcollect(g, team, dest, src, bytes, "ishmemx_fcollect_on_queue"));
}

extern "C" __global__ void ISHMEMI_QB ishmemi_q_collect(int team, void *dest, const void *src, size_t bytes, int *ret) {
    auto g = cooperative_groups::this_thread_block();
    q_ret(ret, ishmemi::collect(g, team, dest, src, bytes, "ishmemx_collect_on_queue"));
}

extern "C" __global__ void ISHMEMI_QB ishmemi_q_alltoall(int team, void *dest, const void *src, size_t bytes, int *ret) {
    auto g = cooperative_groups::this_thread_block();
    q_ret(ret, ishmemi::alltoall(g, team, dest, src, bytes, "ishmemx_alltoall_on_queue"));
}

/* A load that skips L1 (peers' memory is read once per element). */
template <class T> __device__ __forceinline__ T ldcg(const T *p) {
    if constexpr (sizeof(T) == 1) {
        unsigned char u = __ldcg((const unsigned char *)p);
        return *(T *)&u;
    } else if constexpr (sizeof(T) == 2) {
        unsigned short u = __ldcg((const unsigned short *)p);
        return *(T *)&u;
    } else if constexpr (sizeof(T) == 4) {
        unsigned int u = __ldcg((const unsigned int *)p);
        return *(T *)&u;
    } else {
        unsigned long long u = __ldcg((const unsigned long long *)p);
        return *(T *)&u;
    }
}

/* Large reductions on a queue (src/core/queue_coll.rs, reduce_split): elements [lo, lo + len)
 * of every team PE's source, combined in team order, stored into every team PE's dest (this
 * PE's own and, over NVLink/PCIe, the others'), by a whole grid. The host checked team and
 * ranges and enqueued a team sync before (every source is ready) and after (every slice is in
 * every dest). Slice [lo, lo + len) of any PE's source is read by this grid alone, so storing
 * into the others' dest is safe even in place (dest = source). */
template <int OP, class T> __device__ __forceinline__ void slice_reduce(int team, T *dest, const T *src, size_t lo, size_t len) {
    ishmemi::tdesc d = ishmemi::team_lookup(team);
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = lo + (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < lo + len; e += stride) {
        T acc = ldcg(ishmemi::peer_raw(src + e, d.world(0)));
#pragma unroll 1
        for (int p = 1; p < d.size; p++) acc = ishmemi::combine<OP, T>(acc, ldcg(ishmemi::peer_raw(src + e, d.world(p))));
#pragma unroll 1
        for (int p = 0; p < d.size; p++) *(T *)ishmemi::peer_raw(dest + e, d.world(p)) = acc;
    }
}

/* A grid's copy of n bytes between addresses the host translated (a peer's heap mapped here,
 * or this PE's): the block moves of the data collectives on a queue (src/core/queue_coll.rs,
 * grid_copies), between two team-sync kernels. */
extern "C" __global__ void __launch_bounds__(512) ishmemi_q_copy(char *to, const char *from, size_t n) {
    ishmemi::copy(to, from, n, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

/* Large sum scans on a queue (reduce_split's sibling in src/api/queue_coll.rs): for elements
 * [lo, lo + len), the running sum over team PEs 0, 1, ... of their sources, stored into each
 * PE's dest (inclusive: after adding its value; exclusive: before). Element e of every PE is
 * touched by this PE's grid alone, each source element read before the same PE's dest element
 * is written, so dest may be the source. Team syncs before and after are the host's. */
template <class T>
__device__ __forceinline__ void slice_scan(int team, T *dest, const T *src, size_t lo, size_t len, int inclusive) {
    ishmemi::tdesc d = ishmemi::team_lookup(team);
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t e = lo + (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < lo + len; e += stride) {
        T acc = (T)0;
#pragma unroll 1
        for (int p = 0; p < d.size; p++) {
            T v = ldcg(ishmemi::peer_raw(src + e, d.world(p)));
            T *out = (T *)ishmemi::peer_raw(dest + e, d.world(p));
            if (!inclusive) *out = acc;
            acc = ishmemi::combine<ishmemi::R_SUM, T>(acc, v);
            if (inclusive) *out = acc;
        }
    }
}
#define SCAN_KERNEL(suffix, T)                                                                                         \
    extern "C" __global__ void __launch_bounds__(512) ishmemi_qscan_##suffix(int team, T *dest, const T *src, size_t lo, \
                                                                             size_t len, int inclusive) {              \
        slice_scan<T>(team, dest, src, lo, len, inclusive);                                                            \
    }
SCAN_KERNEL(i8, int8_t)
SCAN_KERNEL(u8, uint8_t)
SCAN_KERNEL(i16, int16_t)
SCAN_KERNEL(u16, uint16_t)
SCAN_KERNEL(i32, int32_t)
SCAN_KERNEL(u32, uint32_t)
SCAN_KERNEL(i64, int64_t)
SCAN_KERNEL(u64, uint64_t)
SCAN_KERNEL(f32, float)
SCAN_KERNEL(f64, double)

/* Reductions and scans: ishmemi_q_<op>_<type>(team, dest, source, n, mode, ret), mode 0 reduce,
 * 1 inclusive scan, 2 exclusive scan (sum only); ishmemi_qs_<op>_<type>(team, dest, source, lo,
 * len): the slice kernel of the large reductions (512 threads per block, any grid). */
#define REDUCE_KERNEL(opname, OP, suffix, T)                                                                           \
    extern "C" __global__ void ISHMEMI_QB ishmemi_q_##opname##_##suffix(int team, T *dest, const T *src, size_t n, int mode,     \
                                                              int *ret) {                                              \
        auto g = cooperative_groups::this_thread_block();                                                              \
        q_ret(ret, ishmemi::reduce<ishmemi::OP>(g, team, dest, src, n, mode, "ishmemx_" #opname "_on_queue"));        \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(512) ishmemi_qs_##opname##_##suffix(int team, T *dest, const T *src,  \
                                                                                     size_t lo, size_t len) {          \
        slice_reduce<ishmemi::OP, T>(team, dest, src, lo, len);                                                        \
    }
#define INT_REDUCTIONS(opname, OP)                                                                                     \
    REDUCE_KERNEL(opname, OP, i8, int8_t)                                                                              \
    REDUCE_KERNEL(opname, OP, u8, uint8_t)                                                                             \
    REDUCE_KERNEL(opname, OP, i16, int16_t)                                                                            \
    REDUCE_KERNEL(opname, OP, u16, uint16_t)                                                                           \
    REDUCE_KERNEL(opname, OP, i32, int32_t)                                                                            \
    REDUCE_KERNEL(opname, OP, u32, uint32_t)                                                                           \
    REDUCE_KERNEL(opname, OP, i64, int64_t)                                                                            \
    REDUCE_KERNEL(opname, OP, u64, uint64_t)
#define ALL_REDUCTIONS(opname, OP)                                                                                     \
    INT_REDUCTIONS(opname, OP)                                                                                         \
    REDUCE_KERNEL(opname, OP, f32, float)                                                                              \
    REDUCE_KERNEL(opname, OP, f64, double)
INT_REDUCTIONS(and, R_AND)
INT_REDUCTIONS(or, R_OR)
INT_REDUCTIONS(xor, R_XOR)
ALL_REDUCTIONS(max, R_MAX)
ALL_REDUCTIONS(min, R_MIN)
ALL_REDUCTIONS(sum, R_SUM)
ALL_REDUCTIONS(prod, R_PROD)
