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

/* Reductions and scans: ishmemi_q_<op>_<type>(team, dest, source, n, mode, ret), mode 0 reduce,
 * 1 inclusive scan, 2 exclusive scan (sum only). */
#define REDUCE_KERNEL(opname, OP, suffix, T)                                                                           \
    extern "C" __global__ void ISHMEMI_QB ishmemi_q_##opname##_##suffix(int team, T *dest, const T *src, size_t n, int mode,     \
                                                              int *ret) {                                              \
        auto g = cooperative_groups::this_thread_block();                                                              \
        q_ret(ret, ishmemi::reduce<ishmemi::OP>(g, team, dest, src, n, mode, "ishmemx_" #opname "_on_queue"));        \
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
