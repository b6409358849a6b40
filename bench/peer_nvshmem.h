/*
 * peer_nvshmem.h -- map the ishmem (Intel SHMEM) names used by
 * bench/gpu_bench.cu onto NVIDIA NVSHMEM 3.x, so that one CUDA source
 * measures both libraries (host_bench.c does the same with peer_oshmem.h).
 *
 * Selected by compiling gpu_bench.cu with -DBENCH_PEER_NVSHMEM:
 *   nvcc -rdc=true -arch=sm_90 -DBENCH_PEER_NVSHMEM -I$NV/include -Ibench \
 *        bench/gpu_bench.cu -L$NV/lib -lnvshmem_device -l:libnvshmem_host.so.3 \
 *        -Xlinker -rpath,$NV/lib
 * (NV = the folder of the nvidia-nvshmem-cu13 wheel, see bench/run_gpu.sh).
 *
 * Everything NVSHMEM-specific that gpu_bench.cu needs lives here:
 *  - plain name mappings ishmem_* -> nvshmem_*;
 *  - work-group forms: ishmemx_{put,get}mem_nbi_work_group(..., group) picks
 *    nvshmemx_*_block for a cooperative_groups::thread_block, *_warp for a
 *    32-thread tile and the thread form for a 1-thread tile;
 *  - queue forms: ishmemx_queue_t is a cudaStream_t and *_on_queue maps to
 *    nvshmemx_*_on_stream;
 *  - team collectives: ishmem_{broadcastmem,fcollectmem,alltoallmem,
 *    int_sum_reduce,team_sync} map to the nvshmem_* device forms of the same
 *    arguments, and their ishmemx_*_work_group forms (thread_block only) to
 *    nvshmemx_*_block;
 *  - unique-id init: ishmemx_uniqueid_t / ishmemx_attr_t / ishmemx_init_attr
 *    wrap nvshmemx_get_uniqueid, nvshmemx_set_attr_uniqueid_args and
 *    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, ...);
 *  - hooks of the benchmark: BENCH_LIB, BENCH_BACKEND_FIXED,
 *    BENCH_VERSION_SUFFIX, BENCH_HEAP_ENV (heap size variable),
 *    BENCH_BEFORE_INIT() (environment NVSHMEM needs on these machines) and
 *    bench_collective_launch() (NVSHMEM wants kernels that call
 *    nvshmem_barrier_all or any other collective launched with
 *    nvshmemx_collective_launch).
 */
#ifndef BENCH_PEER_NVSHMEM_H
#define BENCH_PEER_NVSHMEM_H

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- what the CSV reports ---------------------------------------------- */
#define BENCH_LIB "nvshmem"
#define BENCH_BACKEND_FIXED "cuda" /* backend column; BENCH_BACKEND is ignored */
#define BENCH_STR_(x) #x
#define BENCH_STR(x) BENCH_STR_(x)
/* info_get_version gives the OpenSHMEM spec version (1.3); append the
 * NVSHMEM release so the column names the implementation too. */
#define BENCH_VERSION_SUFFIX                                                  \
    "-nvshmem" BENCH_STR(NVSHMEM_VENDOR_MAJOR_VERSION) "." BENCH_STR(         \
        NVSHMEM_VENDOR_MINOR_VERSION) "." BENCH_STR(NVSHMEM_VENDOR_PATCH_VERSION)

/* Symmetric heap size variable (the benchmark sets it when unset). */
#define BENCH_HEAP_ENV "NVSHMEM_SYMMETRIC_SIZE"

/* Environment that NVSHMEM needs on the lent machines (shared/DEVICE-NOTES.md):
 * no NVLink SHARP / multicast objects, no remote (IB) transport. Values set
 * by the caller win. */
#define BENCH_BEFORE_INIT()                                                   \
    do {                                                                      \
        setenv("NVSHMEM_DISABLE_NVLS", "1", 0);                               \
        setenv("NCCL_NVLS_ENABLE", "0", 0);                                   \
        setenv("NVSHMEM_REMOTE_TRANSPORT", "none", 0);                        \
    } while (0)

/* ---- setup / teardown / queries (host; my_pe/n_pes also device) -------- */
#define ishmem_init                    nvshmem_init
#define ishmem_finalize                nvshmem_finalize
#define ishmem_my_pe                   nvshmem_my_pe
#define ishmem_n_pes                   nvshmem_n_pes
#define ishmem_malloc                  nvshmem_malloc
#define ishmem_free                    nvshmem_free
#define ishmem_info_get_version        nvshmem_info_get_version

/* ---- RMA (host and device) --------------------------------------------- */
#define ishmem_putmem                  nvshmem_putmem
#define ishmem_getmem                  nvshmem_getmem
#define ishmem_putmem_nbi              nvshmem_putmem_nbi
#define ishmem_getmem_nbi              nvshmem_getmem_nbi
#define ishmem_int_p                   nvshmem_int_p
#define ishmem_int_g                   nvshmem_int_g

/* ---- AMO ------------------------------------------------------------------ */
#define ishmem_uint64_atomic_fetch_add     nvshmem_uint64_atomic_fetch_add
#define ishmem_uint64_atomic_compare_swap  nvshmem_uint64_atomic_compare_swap

/* ---- signals ------------------------------------------------------------- */
#define ishmem_putmem_signal_nbi       nvshmem_putmem_signal_nbi
#define ishmem_signal_wait_until       nvshmem_signal_wait_until
#define ISHMEM_SIGNAL_SET              NVSHMEM_SIGNAL_SET
#define ISHMEM_SIGNAL_ADD              NVSHMEM_SIGNAL_ADD
#define ISHMEM_CMP_EQ                  NVSHMEM_CMP_EQ
#define ISHMEM_CMP_GE                  NVSHMEM_CMP_GE

/* ---- ordering / sync ----------------------------------------------------- */
#define ishmem_quiet                   nvshmem_quiet
#define ishmem_fence                   nvshmem_fence
#define ishmem_barrier_all             nvshmem_barrier_all

/* ---- queue (stream) forms ------------------------------------------------ */
typedef cudaStream_t ishmemx_queue_t;
#define ishmemx_putmem_on_queue        nvshmemx_putmem_on_stream
#define ishmemx_getmem_on_queue        nvshmemx_getmem_on_stream
#define ishmemx_quiet_on_queue         nvshmemx_quiet_on_stream
#define ishmemx_barrier_all_on_queue   nvshmemx_barrier_all_on_stream
/* collective queue forms: ishmem's take an `int *ret` before the queue, NVSHMEM's return it */
#define ishmemx_broadcastmem_on_queue(t, d, s, n, root, ret, q) ((void)(ret), nvshmemx_broadcastmem_on_stream(t, d, s, n, root, q))
#define ishmemx_fcollectmem_on_queue(t, d, s, n, ret, q) ((void)(ret), nvshmemx_fcollectmem_on_stream(t, d, s, n, q))
#define ishmemx_alltoallmem_on_queue(t, d, s, n, ret, q) ((void)(ret), nvshmemx_alltoallmem_on_stream(t, d, s, n, q))
#define ishmemx_int_sum_reduce_on_queue(t, d, s, n, ret, q) ((void)(ret), nvshmemx_int_sum_reduce_on_stream(t, d, s, n, q))
#define ishmemx_team_sync_on_queue(t, ret, q) ((void)(ret), nvshmemx_team_sync_on_stream(t, q))

/* ---- work-group forms ----------------------------------------------------
 * ishmem's are templates over any cooperative group; NVSHMEM has a fixed
 * _block and _warp variant each, so the group type picks the variant here. */
namespace bench_peer {
template <unsigned Size> struct tile_scope;
template <> struct tile_scope<1> {
    static __device__ __forceinline__ void put(void *d, const void *s, size_t n, int pe) {
        nvshmem_putmem_nbi(d, s, n, pe);
    }
    static __device__ __forceinline__ void get(void *d, const void *s, size_t n, int pe) {
        nvshmem_getmem_nbi(d, s, n, pe);
    }
};
template <> struct tile_scope<32> {
    static __device__ __forceinline__ void put(void *d, const void *s, size_t n, int pe) {
        nvshmemx_putmem_nbi_warp(d, s, n, pe);
    }
    static __device__ __forceinline__ void get(void *d, const void *s, size_t n, int pe) {
        nvshmemx_getmem_nbi_warp(d, s, n, pe);
    }
};
} // namespace bench_peer

__device__ __forceinline__ void ishmemx_putmem_nbi_work_group(void *dest, const void *src, size_t nbytes, int pe,
                                                              const cooperative_groups::thread_block &) {
    nvshmemx_putmem_nbi_block(dest, src, nbytes, pe);
}
__device__ __forceinline__ void ishmemx_getmem_nbi_work_group(void *dest, const void *src, size_t nbytes, int pe,
                                                              const cooperative_groups::thread_block &) {
    nvshmemx_getmem_nbi_block(dest, src, nbytes, pe);
}
/* tiled_partition<32>(block) (warp) or tiled_partition<1> (one thread); other
 * tile sizes have no NVSHMEM counterpart and fail to compile. */
template <unsigned Size, class Parent>
__device__ __forceinline__ void ishmemx_putmem_nbi_work_group(void *dest, const void *src, size_t nbytes, int pe,
                                                              const cooperative_groups::thread_block_tile<Size, Parent> &) {
    bench_peer::tile_scope<Size>::put(dest, src, nbytes, pe);
}
template <unsigned Size, class Parent>
__device__ __forceinline__ void ishmemx_getmem_nbi_work_group(void *dest, const void *src, size_t nbytes, int pe,
                                                              const cooperative_groups::thread_block_tile<Size, Parent> &) {
    bench_peer::tile_scope<Size>::get(dest, src, nbytes, pe);
}

/* ---- teams and collectives (OpenSHMEM 1.5 team forms, device) ------------
 * Thread scope: NVSHMEM's device forms have the same names and arguments.
 * Work-group forms: only a whole block (cooperative_groups::thread_block)
 * maps, onto the nvshmemx_*_block variants. Kernels calling these must be
 * launched with bench_collective_launch (nvshmemx_collective_launch). */
typedef nvshmem_team_t ishmem_team_t;
#define ISHMEM_TEAM_WORLD              NVSHMEM_TEAM_WORLD
#define ishmem_broadcastmem            nvshmem_broadcastmem
#define ishmem_fcollectmem             nvshmem_fcollectmem
#define ishmem_alltoallmem             nvshmem_alltoallmem
#define ishmem_int_sum_reduce          nvshmem_int_sum_reduce
#define ishmem_team_sync               nvshmem_team_sync

__device__ __forceinline__ int ishmemx_broadcastmem_work_group(ishmem_team_t team, void *dest, const void *src,
                                                               size_t nelems, int root,
                                                               const cooperative_groups::thread_block &) {
#ifdef __CUDA_ARCH__
    /* NVSHMEM 3.4.5's host/nvshmemx_coll_api.h declares nvshmemx_broadcastmem_block
     * without PE_root; the device definition (device/nvshmemx_coll_defines.cuh)
     * has it. Only the device pass sees the right one, so call it only there. */
    return nvshmemx_broadcastmem_block(team, dest, src, nelems, root);
#else
    (void)team, (void)dest, (void)src, (void)nelems, (void)root;
    return 0;
#endif
}
__device__ __forceinline__ int ishmemx_fcollectmem_work_group(ishmem_team_t team, void *dest, const void *src,
                                                              size_t nelems, const cooperative_groups::thread_block &) {
    return nvshmemx_fcollectmem_block(team, dest, src, nelems);
}
__device__ __forceinline__ int ishmemx_alltoallmem_work_group(ishmem_team_t team, void *dest, const void *src,
                                                              size_t nelems, const cooperative_groups::thread_block &) {
    return nvshmemx_alltoallmem_block(team, dest, src, nelems);
}
__device__ __forceinline__ int ishmemx_int_sum_reduce_work_group(ishmem_team_t team, int *dest, const int *src,
                                                                 size_t nreduce,
                                                                 const cooperative_groups::thread_block &) {
    return nvshmemx_int_sum_reduce_block(team, dest, src, nreduce);
}
__device__ __forceinline__ int ishmemx_team_sync_work_group(ishmem_team_t team,
                                                            const cooperative_groups::thread_block &) {
    return nvshmemx_team_sync_block(team);
}

/* ---- unique-id initialisation -------------------------------------------- */
typedef nvshmemx_uniqueid_t ishmemx_uniqueid_t;

/* The fields of ishmem's ishmemx_attr_t that the benchmark uses. */
typedef struct ishmemx_attr_t {
    bool use_uid;
    int rank;
    int nranks;
    const ishmemx_uniqueid_t *uid;
} ishmemx_attr_t;
#define ISHMEMX_ATTR_INITIALIZER { false, -1, 0, NULL }

static inline int ishmemx_get_uniqueid(ishmemx_uniqueid_t *uid) {
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER; /* carries the struct version */
    int rc = nvshmemx_get_uniqueid(&id);
    *uid = id;
    return rc;
}

/* Like ishmem's: returns only on success (prints and exits otherwise). */
static inline void ishmemx_init_attr(ishmemx_attr_t *a) {
    if (!a->use_uid) {
        nvshmem_init();
        return;
    }
    nvshmemx_init_attr_t na = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(a->rank, a->nranks, a->uid, &na) != 0) {
        fprintf(stderr, "peer_nvshmem.h: nvshmemx_set_attr_uniqueid_args(rank %d, nranks %d) failed\n",
                a->rank, a->nranks);
        exit(2);
    }
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &na) != 0) {
        fprintf(stderr, "peer_nvshmem.h: nvshmemx_init_attr(UNIQUEID) failed on rank %d\n", a->rank);
        exit(2);
    }
}

/* ---- launching kernels that call ishmem_barrier_all or collectives -------- */
#define BENCH_HAVE_COLLECTIVE_LAUNCH 1
static inline cudaError_t bench_collective_launch(const void *fn, dim3 grid, dim3 block, void **args,
                                                  size_t shmem, cudaStream_t stream) {
    return nvshmemx_collective_launch(fn, grid, block, args, shmem, stream) == 0 ? cudaSuccess
                                                                                : cudaErrorLaunchFailure;
}

#endif /* BENCH_PEER_NVSHMEM_H */
