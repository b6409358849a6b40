/* ishmem/device_state.h: the state a GPU kernel needs to reach the PEs of the job, shared
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
    uint32_t flags;       /* ISHMEMI_DEV_F_* */
    /* Each PE's heap as mapped in this process (CUDA IPC), 0 where not reachable. */
    uint64_t peer_base[ISHMEMI_MAX_LOCAL_PES];
    /* The proxy ring (ISHMEMI_PROXY_SLOTS slots of ishmemi_proxy_slot_t, pinned host memory
     * the GPU writes): set when the job spans nodes; 0: PEs of other nodes are unreachable. */
    uint64_t proxy_ring;
} ishmemi_dev_state_t;

#define ISHMEMI_DEV_F_DEBUG 1u /* ISHMEM_DEBUG=1: ishmemx_print's DEBUG messages are printed */

#ifdef __cplusplus
static_assert(sizeof(ishmemi_dev_state_t) == 48 + 8 * ISHMEMI_MAX_LOCAL_PES, "ishmemi_dev_state_t layout");
#else
_Static_assert(sizeof(ishmemi_dev_state_t) == 48 + 8 * ISHMEMI_MAX_LOCAL_PES, "ishmemi_dev_state_t layout");
#endif

/* ---- The proxy ring: how a kernel reaches a PE of another node (src/core/proxy.rs). A
 * thread takes a ticket t (atomic add on the sync-area word ISHMEMI_SYNC_PROXY_TICKET of its
 * own heap; the threads of a warp calling together take consecutive tickets in lane order),
 * waits until slot t % ISHMEMI_PROXY_SLOTS is free (its previous occupant's ticket + 1,
 * t - SLOTS + 1, in word 7 or in the slot's release word, below), writes words 1..6, a system
 * fence, then word 0 = t + 1. The host's proxy thread reads slot after slot in ticket order,
 * runs each request on the network, and writes word 7 = t + 1 (the slot is free), or, when the
 * request asked for a reply v, word 6 = TAG | (v & 0xffffffff), then word 7 = TAG | (v >> 32),
 * TAG = ISHMEMI_PROXY_HELD | ((t + 1) & 0x7fffffff) << 32 (bit 63 and the ticket's low 31 bits,
 * in the upper half of both words). The waiter reads words 6 and 7 in one 16-byte load and
 * takes the reply only when both carry TAG: each aligned 8-byte word is read whole, but the
 * pair is not promised to be read at one instant, and a stale word never carries TAG (the
 * previous occupant's tag differs; word 6 as the poster wrote it has bit 63 clear: 0, an
 * address or the collective's word, below). Then it releases the slot by writing t + 1 into
 * the slot's release word: device memory of this PE's heap, one word per slot after the bounce
 * buffers (below), read by the next taker without crossing the bus. Word 1: kind (bits 0..7), width
 * (8..15), AMO, signal or reduction operator (16..23), ISHMEMI_PROXY_REPLY (bit 24),
 * ISHMEMI_PROXY_INLINE (bit 25, below), target PE (32..63). Words 2..6: the symmetric address, the local address or value, bytes, a second
 * value (AMO compare, signal value), the signal address (ISHMEMI_PROXY_COLL: see there; the
 * reply, once done). A request that blocks the proxy thread (a collective waits for the team) delays
 * this PE's later requests until it returns: they are served in ticket order. */
typedef struct ishmemi_proxy_slot {
    uint64_t w[8];
} ishmemi_proxy_slot_t;
#define ISHMEMI_PROXY_SLOTS 1024
/* A get into a local buffer the host cannot address (a kernel's stack: not __isGlobal)
 * travels through the bounce buffer of the request's slot, ISHMEMI_PROXY_BOUNCE_BYTES of this
 * PE's heap at sync word ISHMEMI_SYNC_PROXY_BOUNCE + (ticket % SLOTS) * BOUNCE_BYTES, in chunks
 * of that. The slots' release words follow the bounce buffers: word (ticket % SLOTS) at
 * ISHMEMI_SYNC_PROXY_BOUNCE + SLOTS * BOUNCE_BYTES, zeroed at init. */
#define ISHMEMI_PROXY_BOUNCE_BYTES 256
/* Inline puts: a put of at most ISHMEMI_PROXY_INLINE_BYTES (and a put from a buffer the host
 * cannot address, in chunks of that) carries its bytes in the ring. The kernel writes them
 * into the inline area of its slot, ISHMEMI_PROXY_INLINE_BYTES of the same pinned host memory
 * after the slots (proxy_ring + ISHMEMI_PROXY_SLOTS * 64 + (ticket % SLOTS) *
 * ISHMEMI_PROXY_INLINE_BYTES), before it publishes the slot; word 1 has ISHMEMI_PROXY_INLINE,
 * word 3 the area's address, word 4 the bytes. The proxy reads them there (no device-to-host
 * copy), and a kernel never waits for an inline put, blocking or not: its source is free once
 * the bytes are in the slot. The area belongs to the slot until the proxy marks it done.
 * Inline puts that follow each other (full areas of consecutive tickets, destinations
 * following on) run as one request. */
#define ISHMEMI_PROXY_INLINE_BYTES 1024
#define ISHMEMI_PROXY_INLINE (1ull << 25)
/* Bytes of the ring: the slots, then their inline areas. */
#define ISHMEMI_PROXY_RING_BYTES (ISHMEMI_PROXY_SLOTS * (64 + ISHMEMI_PROXY_INLINE_BYTES))
#define ISHMEMI_PROXY_HELD (1ull << 63)
#define ISHMEMI_PROXY_REPLY (1ull << 24)
#define ISHMEMI_PROXY_PUT 1        /* bytes from local word 3 (inline: the slot's area) to symmetric word 2 */
#define ISHMEMI_PROXY_GET 2        /* bytes from symmetric word 2 into local word 3 */
#define ISHMEMI_PROXY_P 3          /* the value in word 3 (width bytes) */
#define ISHMEMI_PROXY_G 4          /* a value of width bytes, replied */
#define ISHMEMI_PROXY_AMO 5        /* operator as the host AMO kernel's (fetch 0 .. xor 7) */
#define ISHMEMI_PROXY_FENCE 6
#define ISHMEMI_PROXY_QUIET 7      /* replied once every earlier request is complete */
#define ISHMEMI_PROXY_PUT_SIGNAL 8 /* a put, then the signal (operator 0 set, 1 add) */
#define ISHMEMI_PROXY_NOP 9        /* nothing (ishmemx_nop: measures the proxy path) */
#define ISHMEMI_PROXY_COLL 10      /* a collective or team sync, run by the host (below) */
/* ISHMEMI_PROXY_COLL: a device collective or team sync on a team with a member on another
 * node (ISHMEMI_TEAM_F_REMOTE), posted once per PE by the first thread of the calling group
 * and always replied. The proxy thread runs it as the host collective of the same kind (the
 * code of ishmem_team_sync, ishmem_broadcastmem, ishmem_<T>_<op>_reduce, ... on the team), so
 * every member of the team runs the host algorithm, and replies with its return code (0; a
 * failure ends the job with a PE-tagged error naming the device call). Word 1: kind, width =
 * the element size in bytes (1 for the byte collectives), operator = ISHMEMI_COLL_OP_* of a
 * reduction, ISHMEMI_PROXY_REPLY, target PE = this PE. Word 2: dest; word 3: source (symmetric
 * addresses of this PE); word 4: elements of width bytes (per PE: broadcast, fcollect, collect,
 * alltoall blocks; reductions and scans: of the whole array); word 5: the root's team PE
 * (broadcast); the reply is the return code; word 6: the team handle (bits 0..31),
 * ISHMEMI_COLL_* (bits 32..39), the element class ISHMEMI_COLL_T_* (bits 40..47). The
 * kernel's earlier stores are visible to the host (a system fence before the slot is
 * published), and the request runs after this PE's earlier requests (ticket order). */
#define ISHMEMI_COLL_SYNC 0
#define ISHMEMI_COLL_BROADCAST 1
#define ISHMEMI_COLL_FCOLLECT 2
#define ISHMEMI_COLL_COLLECT 3
#define ISHMEMI_COLL_ALLTOALL 4
#define ISHMEMI_COLL_REDUCE 5
#define ISHMEMI_COLL_INSCAN 6 /* sum only, as the API */
#define ISHMEMI_COLL_EXSCAN 7
#define ISHMEMI_COLL_T_UNSIGNED 0 /* element classes: unsigned integer, signed integer, IEEE float */
#define ISHMEMI_COLL_T_SIGNED 1
#define ISHMEMI_COLL_T_FLOAT 2
#define ISHMEMI_COLL_OP_AND 0 /* reduction operators (cuda_coll.cuh's rop) */
#define ISHMEMI_COLL_OP_OR 1
#define ISHMEMI_COLL_OP_XOR 2
#define ISHMEMI_COLL_OP_MAX 3
#define ISHMEMI_COLL_OP_MIN 4
#define ISHMEMI_COLL_OP_SUM 5
#define ISHMEMI_COLL_OP_PROD 6

/* Sync area layout (uint64_t words from sync_offset): */
#define ISHMEMI_SYNC_BARRIER_ARRIVE 0 /* incremented by every PE at each device barrier */
#define ISHMEMI_SYNC_BARRIER_EPOCH 1  /* device barriers completed by this PE (own use) */
#define ISHMEMI_SYNC_TEAM_AREA 2 /* sync-area word: heap offset of team slot 0's area */
#define ISHMEMI_SYNC_TEAMS_MAX 3 /* sync-area word: number of team slots */
#define ISHMEMI_SYNC_PROXY_TICKET 4 /* sync-area word: proxy tickets taken by this PE's kernels */
#define ISHMEMI_SYNC_PROXY_QUIET 5  /* sync-area word: tickets taken at the last proxy quiet */
#define ISHMEMI_SYNC_PROXY_BOUNCE 6 /* sync-area word: heap offset of the proxy bounce buffers */

/* ---- Teams (host side in src/core/team.rs, which mirrors this layout with the same asserts).
 * A team handle (ishmem_team_t) is an index into a table of ISHMEM_TEAMS_MAX descriptors that
 * every PE keeps for itself: 0 ISHMEM_TEAM_WORLD, 1 ISHMEM_TEAM_SHARED, 2 ISHMEMX_TEAM_NODE,
 * then the teams made by splits. A split picks the lowest slot free on every PE of the parent
 * team, so a team has the same handle on all of its members (disjoint teams may share one).
 * Members are the world PEs start + stride * i, i in [0, size) (stride may be negative). */
typedef struct ishmemi_team_desc {
    int32_t start;        /* world PE of team PE 0 */
    int32_t stride;       /* world PE distance between team PEs i and i+1 (nonzero) */
    int32_t size;         /* PEs in the team; 0: slot free */
    int32_t my_pe;        /* this PE's number in the team (members only hold a team) */
    uint64_t sync_offset; /* offset in every PE's heap of the team's sync area (same on all) */
    int32_t num_contexts; /* ishmem_team_config_t.num_contexts given at the split */
    uint32_t flags;       /* ISHMEMI_TEAM_F_* */
} ishmemi_team_desc_t;

#define ISHMEMI_TEAM_F_USED 1u       /* the slot holds a team of this PE */
#define ISHMEMI_TEAM_F_PREDEFINED 2u /* world, shared, node: never destroyed */
/* A member is on another node (the job spans nodes): this PE's GPU cannot map its heap, so
 * device collectives and team syncs of the team go through the proxy (ISHMEMI_PROXY_COLL).
 * The same on every member (node placement is the job's), so all take the same path. */
#define ISHMEMI_TEAM_F_REMOTE 4u

#ifdef __cplusplus
static_assert(sizeof(ishmemi_team_desc_t) == 32, "ishmemi_team_desc_t layout");
#else
_Static_assert(sizeof(ishmemi_team_desc_t) == 32, "ishmemi_team_desc_t layout");
#endif

/* Every team slot owns ISHMEMI_TEAM_AREA_BYTES of symmetric heap, reserved at init after the
 * sync area above (ISHMEM_TEAMS_MAX of them, contiguous): slot t's area starts at heap offset
 * ISHMEMI_SYNC_TEAM_AREA's value + t * ISHMEMI_TEAM_AREA_BYTES (= the descriptor's
 * sync_offset). Zeroed when a team takes the slot (before the split's last synchronization);
 * the slot's descriptor (size 0 when free) is kept at ISHMEMI_TEAM_DESC_WORD, so a kernel can
 * look a team up in the heap: the host writes it at init, split and destroy. Layout in
 * uint64_t words from the area's start: */
#define ISHMEMI_TEAM_AREA_BYTES 12288 /* 1 KiB of sync words, then the push region below */
#define ISHMEMI_TEAM_SYNC_EPOCH 0   /* team syncs this PE completed (own use) */
#define ISHMEMI_TEAM_SYNC_VALUE 1   /* a value this PE publishes to the team (collect: bytes) */
#define ISHMEMI_TEAM_SYNC_ROUND 8   /* word 8+k: dissemination round k's flag, written by the */
#define ISHMEMI_TEAM_SYNC_ROUNDS 32 /*   team PE (me - 2^k) mod size with its epoch */
#define ISHMEMI_TEAM_DESC_WORD 40   /* words 40..43: this PE's ishmemi_team_desc_t of the slot */
/* words 44..55: the host's record of its last host collective on the team (never device code) */
#define ISHMEMI_TEAM_SPLIT_WORD 64  /* words 64..127: this PE's free-slot bitmap during a split */
#define ISHMEMI_TEAM_SPLIT_WORDS 64
/* Team sync (dissemination barrier) of team PE i of n: e = ++epoch; for each round k with
 * 2^k < n: store e (release) into round word k of team PE (i + 2^k) mod n, then wait until
 * own round word k >= e (acquire). Only one PE ever writes a given round word of a team, and
 * values only grow, so back-to-back syncs cannot mix. */
/* The push collectives of the host on the CPU backend (src/core/coll.rs; device code never
 * touches these words, nor does the host on the CUDA backend): a sender stores its data into
 * each member's memory (into a dest once the member announced it entered the collective),
 * then its count (release) into the member's flag word for it. */
#define ISHMEMI_TEAM_PUSH_COUNT 128 /* words 128..130: push collectives of each class started */
#define ISHMEMI_TEAM_PUSH_FLAGS 192 /* word 192 + 64 * class + j: count of the class team PE j */
#define ISHMEMI_TEAM_PUSH_PES 64    /*   last delivered here (class 0 broadcast, 1 fcollect and */
#define ISHMEMI_TEAM_PUSH_CLASSES 3 /*   alltoall, 2 reductions and scans); teams up to 64 PEs */
#define ISHMEMI_TEAM_PUSH_READY 384 /* word 384 + 64 * class + j (classes 0, 1): the count of the */
                                    /*   class team PE j entered (it may be stored into now) */
#define ISHMEMI_TEAM_PUSH_SCRATCH 4096       /* bytes 4096..10239: the all-send class's */
#define ISHMEMI_TEAM_PUSH_SCRATCH_BYTES 6144 /*   scratch, 2 x size slots (count parity, sender) */
#define ISHMEMI_TEAM_BCAST_SCRATCH 10240     /* bytes 10240..12287: 2 broadcast slots (count */
#define ISHMEMI_TEAM_BCAST_SLOT 1024         /*   parity) a root fills before the member enters */

#endif
