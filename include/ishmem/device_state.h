/* ishmem/device_state.h: the state a GPU kernel needs to reach the PEs of its node, shared
 * by libishmem (which fills it; mirrored in src/transport/cuda/state.rs with the same
 * asserts) and the CUDA device API of ishmem/cuda_device.cuh (which reads it).
 * Not part of the user API: names starting with ishmemi_ may change between releases. */
#ifndef ISHMEM_DEVICE_STATE_H
#define ISHMEM_DEVICE_STATE_H

#include <stdint.h>

#define ISHMEMI_MAX_LOCAL_PES 64
/* Bytes at the start of every PE's GPU heap reserved for the library (device barriers). */
#define ISHMEMI_SYNC_BYTES 4096

typedef struct ishmemi_dev_state {
    int32_t my_pe;        /* this PE */
    int32_t n_pes;        /* PEs of the job */
    uint64_t heap_base;   /* this PE's symmetric heap, a device address */
    uint64_t heap_size;   /* bytes of heap per PE */
    uint64_t sync_offset; /* offset in every heap of the library's sync area */
    uint32_t initialized; /* 1 once filled in by ishmem_init */
    uint32_t reserved;
    /* Each PE's heap as mapped in this process (CUDA IPC), 0 where not reachable. */
    uint64_t peer_base[ISHMEMI_MAX_LOCAL_PES];
} ishmemi_dev_state_t;

#ifdef __cplusplus
static_assert(sizeof(ishmemi_dev_state_t) == 40 + 8 * ISHMEMI_MAX_LOCAL_PES, "ishmemi_dev_state_t layout");
#else
_Static_assert(sizeof(ishmemi_dev_state_t) == 40 + 8 * ISHMEMI_MAX_LOCAL_PES, "ishmemi_dev_state_t layout");
#endif

/* Sync area layout (uint64_t words from sync_offset): */
#define ISHMEMI_SYNC_BARRIER_ARRIVE 0 /* incremented by every PE at each device barrier */
#define ISHMEMI_SYNC_BARRIER_EPOCH 1  /* device barriers completed by this PE (own use) */

#endif
