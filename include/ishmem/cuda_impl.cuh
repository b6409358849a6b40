/* ishmem/cuda_impl.cuh: the device-side implementation of the ishmem API for CUDA kernels.
 * Included by ishmem.h when compiled by nvcc; header-only, so programs need neither -rdc nor
 * a device library, and every translation unit (and every cubin) gets its own copy.
 *
 * How a kernel reaches a peer: each translation unit holds a __constant__ copy of the
 * library's ishmemi_dev_state_t (peer heap bases as mapped in this process by CUDA IPC),
 * filled by libishmem at ishmem_init through the binder this header registers at static-init
 * time (cubins loaded with cuModuleLoad* call ishmemx_cumodule_init instead). A symmetric
 * address maps to PE pe's copy as peer_base[pe] + (addr - heap_base), and the operation is a
 * plain load, store or system-scope atomic over NVLink or PCIe. A PE of another node (no
 * mapping, peer_base 0, while the job spans nodes) is reached through the proxy ring of
 * device_state.h: the kernel posts a request in pinned host memory, the library's proxy
 * thread (src/core/proxy.rs) runs it on the network. Device collectives and team syncs of a
 * team with a PE of another node are one request per PE (ISHMEMI_PROXY_COLL), which the proxy
 * runs as the host collective (ishmem/cuda_coll.cuh).
 *
 * Bad arguments (PE out of range, an address outside the symmetric heap) print a PE-tagged
 * error naming the function and trap the kernel; -DISHMEM_NO_DEVICE_CHECKS removes the
 * checks. Device-initiated operations need the symmetric heap (globals are symmetric for the
 * host API only). Names starting with ishmemi are internal. */
#ifndef ISHMEM_CUDA_IMPL_CUH
#define ISHMEM_CUDA_IMPL_CUH

#include <ishmem/device_state.h>
#include <cuda_runtime.h>
#include <cuda/atomic>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern "C" void ishmemx_cuda_register_binder(int (*bind)(const void *state, size_t bytes));

static __constant__ ishmemi_dev_state_t ishmemi_dstate;

static int ishmemi_bind_this_unit(const void *state, size_t bytes) {
    return cudaMemcpyToSymbol(ishmemi_dstate, state, bytes) != cudaSuccess;
}

namespace {
struct ishmemi_binder_registration {
    ishmemi_binder_registration() { ishmemx_cuda_register_binder(&ishmemi_bind_this_unit); }
};
static ishmemi_binder_registration ishmemi_binder_registration_instance;
} // namespace

namespace ishmemi {

typedef cuda::memory_order mo;

__device__ __noinline__ inline void fail(const char *fn, const char *what, long long a, long long b) {
    printf("[PE %d] ERROR: %s: %s %lld %lld\n", (int)ishmemi_dstate.my_pe, fn, what, a, b);
    __trap();
}

/* Says which check of ptr() failed (the slow path, out of line), then traps. */
__device__ __noinline__ inline void ptr_fail(const void *addr, size_t len, int pe, const char *fn) {
    uint64_t off = (uint64_t)(uintptr_t)addr - ishmemi_dstate.heap_base;
    if (!ishmemi_dstate.initialized)
        fail(fn, "called before ishmem_init (or the kernel's module is not bound:", 0, 0);
    if (pe < 0 || pe >= ishmemi_dstate.n_pes)
        fail(fn, "pe out of range (pe, n_pes):", pe, ishmemi_dstate.n_pes);
    if (off >= ishmemi_dstate.heap_size || len > ishmemi_dstate.heap_size - off)
        fail(fn, "address outside the symmetric heap (address, bytes):", (long long)(uintptr_t)addr, (long long)len);
    if (ishmemi_dstate.proxy_ring)
        fail(fn, "PE is on another node, which this device call cannot reach (pe, 0):", pe, 0);
    fail(fn, "PE is not reachable from this GPU (pe, 0):", pe, 0);
}

/* Whether PE pe (in range) is on another node and reached through the proxy ring. */
__device__ __forceinline__ bool via_proxy(int pe) {
    return ishmemi_dstate.proxy_ring != 0 && ((unsigned)pe >= ISHMEMI_MAX_LOCAL_PES || ishmemi_dstate.peer_base[pe] == 0);
}

/* The slow path of rptr: NULL when the operation goes through the proxy (the range is checked
 * against this PE's heap), else the failure of ptr. */
__device__ __noinline__ inline char *rptr_slow(const void *addr, size_t len, int pe, const char *fn) {
    uint64_t off = (uint64_t)(uintptr_t)addr - ishmemi_dstate.heap_base;
    if (ishmemi_dstate.initialized && pe >= 0 && pe < ishmemi_dstate.n_pes && via_proxy(pe) &&
        off < ishmemi_dstate.heap_size && len <= ishmemi_dstate.heap_size - off)
        return NULL;
    ptr_fail(addr, len, pe, fn);
    return NULL;
}

/* PE pe's copy of the symmetric range [addr, addr+len), checked. The checks are folded into
 * one predicate and one branch: GPUs do not speculate, so every branch before the access sits
 * on the latency path of a dependent chain of remote operations. */
__device__ __forceinline__ char *ptr(const void *addr, size_t len, int pe, const char *fn) {
    uint64_t off = (uint64_t)(uintptr_t)addr - ishmemi_dstate.heap_base;
#ifndef ISHMEM_NO_DEVICE_CHECKS
    uint64_t size = ishmemi_dstate.heap_size;
    bool in_range = (unsigned)pe < (unsigned)ishmemi_dstate.n_pes && (unsigned)pe < ISHMEMI_MAX_LOCAL_PES;
    uint64_t base = ishmemi_dstate.peer_base[in_range ? pe : 0];
    bool ok = in_range & (ishmemi_dstate.initialized != 0) & (off < size) & (len <= size - off) & (base != 0);
    if (__builtin_expect(!ok, 0)) ptr_fail(addr, len, pe, fn);
    return (char *)(uintptr_t)(base + off);
#else
    return (char *)(uintptr_t)(ishmemi_dstate.peer_base[pe] + off);
#endif
}

/* Like ptr, but NULL when PE pe is on another node (the caller goes through the proxy). */
__device__ __forceinline__ char *rptr(const void *addr, size_t len, int pe, const char *fn) {
    uint64_t off = (uint64_t)(uintptr_t)addr - ishmemi_dstate.heap_base;
#ifndef ISHMEM_NO_DEVICE_CHECKS
    uint64_t size = ishmemi_dstate.heap_size;
    bool in_range = (unsigned)pe < (unsigned)ishmemi_dstate.n_pes && (unsigned)pe < ISHMEMI_MAX_LOCAL_PES;
    uint64_t base = ishmemi_dstate.peer_base[in_range ? pe : 0];
    bool ok = in_range & (ishmemi_dstate.initialized != 0) & (off < size) & (len <= size - off) & (base != 0);
    if (__builtin_expect(!ok, 0)) return rptr_slow(addr, len, pe, fn);
    return (char *)(uintptr_t)(base + off);
#else
    uint64_t base = (unsigned)pe < ISHMEMI_MAX_LOCAL_PES ? ishmemi_dstate.peer_base[pe] : 0;
    return base ? (char *)(uintptr_t)(base + off) : NULL;
#endif
}

/* ---- the proxy ring (device_state.h): requests for PEs of other nodes ---- */
__device__ __forceinline__ void copy(char *d, const char *s, size_t n, unsigned rank, unsigned size);
__device__ __forceinline__ unsigned long long *proxy_word(int w) {
    return (unsigned long long *)(uintptr_t)(ishmemi_dstate.heap_base + ishmemi_dstate.sync_offset + 8 * (uint64_t)w);
}
__device__ __forceinline__ volatile uint64_t *proxy_slot(uint64_t t) {
    return ((volatile ishmemi_proxy_slot_t *)(uintptr_t)ishmemi_dstate.proxy_ring)[t % ISHMEMI_PROXY_SLOTS].w;
}
/* The bounce buffers of the slots (device memory of this PE's heap), then one release word
 * per slot (device_state.h): the offset is written at init, before any kernel runs. */
__device__ __forceinline__ uint64_t proxy_bounce_base() {
    return ishmemi_dstate.heap_base + *(const uint64_t *)proxy_word(ISHMEMI_SYNC_PROXY_BOUNCE);
}
__device__ __forceinline__ volatile uint64_t *proxy_released(uint64_t t) {
    return (volatile uint64_t *)(uintptr_t)(proxy_bounce_base() + ISHMEMI_PROXY_SLOTS * ISHMEMI_PROXY_BOUNCE_BYTES +
                                            8 * (t % ISHMEMI_PROXY_SLOTS));
}
/* The slot's release word, read with acquire at GPU scope (its writer, proxy_release, wrote it
 * after its last read of the slot: the slot's words are rewritten only after those reads). */
__device__ __forceinline__ uint64_t proxy_released_load(uint64_t t) {
    uint64_t v;
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"((uint64_t)(uintptr_t)proxy_released(t)) : "memory");
    return v;
}
/* Releases ticket t's slot for its next taker: t + 1 into its release word, a release store at
 * GPU scope (every earlier read of the slot, its reply and its bounce buffer is done first). */
__device__ __forceinline__ void proxy_release(uint64_t t) {
    asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"((uint64_t)(uintptr_t)proxy_released(t)), "l"(t + 1) : "memory");
}
/* The tag of request t's reply words (device_state.h): ISHMEMI_PROXY_HELD and the low 31 bits
 * of t + 1 in the upper half of words 6 and 7, the reply's halves in their lower halves. */
__device__ __forceinline__ uint64_t proxy_tag(uint64_t t) {
    return ISHMEMI_PROXY_HELD | ((t + 1) & 0x7fffffffull) << 32;
}
/* Takes a ticket and waits until its slot is free. The threads of a warp that call it together
 * take consecutive tickets, in lane order, with one atomic (a warp's threads putting their
 * consecutive shares post requests the proxy merges). A slot is free once its previous
 * occupant is released: by its waiter, in the slot's release word in device memory (a local
 * read), or by the proxy (no reply), in word 7 of the slot (a read across the bus). */
__device__ __noinline__ inline uint64_t proxy_take() {
    unsigned mask = __activemask(), lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    unsigned leader = __ffs(mask) - 1;
    unsigned long long base = 0;
    if (lane == leader) base = atomicAdd(proxy_word(ISHMEMI_SYNC_PROXY_TICKET), (unsigned long long)__popc(mask));
    base = __shfl_sync(mask, base, leader);
    uint64_t t = base + __popc(mask & ((1u << lane) - 1));
    if (t >= ISHMEMI_PROXY_SLOTS) {
        uint64_t prev = t - ISHMEMI_PROXY_SLOTS + 1; /* the previous occupant, done and released */
        if (proxy_released_load(t) != prev) {
            volatile uint64_t *s = proxy_slot(t);
            while (s[7] != prev && proxy_released_load(t) != prev) {
            }
        }
    }
    return t;
}
/* The bounce buffer of ticket t's slot (device memory of this PE's heap). */
__device__ __forceinline__ char *proxy_bounce(uint64_t t) {
    return (char *)(uintptr_t)(proxy_bounce_base() + (t % ISHMEMI_PROXY_SLOTS) * ISHMEMI_PROXY_BOUNCE_BYTES);
}
/* Fills the slot of ticket t (taken by proxy_take) and publishes it. */
__device__ __noinline__ inline void proxy_publish(uint64_t t, uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4, uint64_t w5,
                                                  uint64_t w6) {
    volatile uint64_t *s = proxy_slot(t);
    s[1] = w1;
    s[2] = w2;
    s[3] = w3;
    s[4] = w4;
    s[5] = w5;
    s[6] = w6;
    __threadfence_system();
    s[0] = t + 1;
}
/* Posts one request; returns its ticket. */
__device__ __noinline__ inline uint64_t proxy_post(uint64_t w1, uint64_t w2, uint64_t w3, uint64_t w4, uint64_t w5, uint64_t w6) {
    uint64_t t = proxy_take();
    proxy_publish(t, w1, w2, w3, w4, w5, w6);
    return t;
}
/* Waits until request t is done and returns its reply: the proxy writes its low half into word
 * 6 and its high half into word 7, each beside the request's tag (proxy_tag), word 7 last
 * (device_state.h). The thread polls both words in one 16-byte load across the bus and takes
 * the reply once BOTH carry the tag: the load is not promised to be one access (PTX models a
 * vector load as one load per element, in no set order), but each aligned 8-byte word is read
 * whole, so a read that mixes old and new words shows the old word's tag (an earlier occupant's,
 * its own request's word 6 with bit 63 clear, or word 7 not yet done) and is polled again: a
 * reply is never assembled from halves of two writes. Then the slot is released (proxy_release:
 * its release word in device memory). acquire: a system fence after the done words, for callers
 * that read memory the request wrote (a get's data, a collective's result); a g or an AMO reads
 * only the reply, which came in the same load. */
__device__ __noinline__ inline uint64_t proxy_wait(uint64_t t, bool acquire = true) {
    const unsigned long long *s = (const unsigned long long *)proxy_slot(t);
    const unsigned long long tag = proxy_tag(t);
    unsigned long long lo, hi;
    do {
        asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(lo), "=l"(hi) : "l"(s + 6) : "memory");
    } while (((lo ^ tag) | (hi ^ tag)) >> 32);
    if (acquire) __threadfence_system();
    proxy_release(t);
    return (lo & 0xffffffffull) | hi << 32;
}
__device__ __forceinline__ uint64_t proxy_w1(int kind, unsigned width, int op, bool reply, int pe) {
    return (uint64_t)kind | (uint64_t)width << 8 | (uint64_t)(op & 0xff) << 16 | (reply ? ISHMEMI_PROXY_REPLY : 0) |
           (uint64_t)(uint32_t)pe << 32;
}
/* The inline area of ticket t's slot (device_state.h: pinned host memory after the slots). */
__device__ __forceinline__ char *proxy_inline(uint64_t t) {
    return (char *)(uintptr_t)(ishmemi_dstate.proxy_ring + ISHMEMI_PROXY_SLOTS * sizeof(ishmemi_proxy_slot_t) +
                               (t % ISHMEMI_PROXY_SLOTS) * ISHMEMI_PROXY_INLINE_BYTES);
}
/* Whether a put of bytes from src goes inline (its bytes written into the ring's slots).
 * readable: the kernel may read src; false for the on-queue forms, whose source the host
 * passes and may be pageable host memory, which only the proxy thread can read. */
__device__ __forceinline__ bool proxy_put_inline(const void *src, size_t bytes, bool readable) {
    return readable && (bytes <= ISHMEMI_PROXY_INLINE_BYTES || !__isGlobal(src));
}
/* A put through the proxy; blocking: returns once the proxy has read the source. A small put
 * (at most ISHMEMI_PROXY_INLINE_BYTES), or one from a buffer the host cannot address (the
 * kernel's stack, in chunks of that), carries its bytes in its slots' inline areas: the proxy
 * needs no copy from the GPU, and the source is free once they are written, so nothing is
 * waited for. */
__device__ __noinline__ inline void proxy_put(void *dest, const void *src, size_t bytes, int pe, bool blocking,
                                              bool readable = true) {
    if (proxy_put_inline(src, bytes, readable)) {
        for (size_t off = 0; off < bytes; off += ISHMEMI_PROXY_INLINE_BYTES) {
            size_t n = bytes - off < ISHMEMI_PROXY_INLINE_BYTES ? bytes - off : ISHMEMI_PROXY_INLINE_BYTES;
            uint64_t t = proxy_take();
            char *b = proxy_inline(t);
            copy(b, (const char *)src + off, n, 0, 1);
            /* proxy_publish's system fence orders these stores before the slot's word 0. */
            proxy_publish(t, proxy_w1(ISHMEMI_PROXY_PUT, 0, 0, false, pe) | ISHMEMI_PROXY_INLINE, (uint64_t)(uintptr_t)dest + off,
                          (uint64_t)(uintptr_t)b, n, 0, 0);
        }
        return;
    }
    uint64_t t = proxy_post(proxy_w1(ISHMEMI_PROXY_PUT, 0, 0, blocking, pe), (uint64_t)(uintptr_t)dest, (uint64_t)(uintptr_t)src,
                            bytes, 0, 0);
    if (blocking) proxy_wait(t);
}
__device__ __noinline__ inline void proxy_get(void *dest, const void *src, size_t bytes, int pe) {
    if (__isGlobal(dest)) {
        proxy_wait(proxy_post(proxy_w1(ISHMEMI_PROXY_GET, 0, 0, true, pe), (uint64_t)(uintptr_t)src, (uint64_t)(uintptr_t)dest,
                              bytes, 0, 0));
        return;
    }
    for (size_t off = 0; off < bytes; off += ISHMEMI_PROXY_BOUNCE_BYTES) {
        size_t n = bytes - off < ISHMEMI_PROXY_BOUNCE_BYTES ? bytes - off : ISHMEMI_PROXY_BOUNCE_BYTES;
        uint64_t t = proxy_take();
        char *b = proxy_bounce(t);
        proxy_publish(t, proxy_w1(ISHMEMI_PROXY_GET, 0, 0, true, pe), (uint64_t)(uintptr_t)src + off, (uint64_t)(uintptr_t)b, n, 0, 0);
        volatile uint64_t *s = proxy_slot(t);
        const uint64_t tag = proxy_tag(t);
        while ((s[7] ^ tag) >> 32) { /* done (the reply itself is not needed) */
        }
        __threadfence_system();
        for (size_t i = 0; i < n; i++) ((char *)dest)[off + i] = ((volatile char *)b)[i];
        proxy_release(t); /* after the bounce buffer's reads: the next taker may reuse it */
    }
}
template <class T> __device__ __forceinline__ uint64_t bits(T v) {
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T> __device__ __forceinline__ T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
/* An AMO through the proxy (op: the host AMO kernel's codes); fetch: waits for the old value. */
template <class T> __device__ __forceinline__ T proxy_amo(int op, T *dest, T v, T cond, int pe, bool fetch) {
    uint64_t t = proxy_post(proxy_w1(ISHMEMI_PROXY_AMO, sizeof(T), op, fetch, pe), (uint64_t)(uintptr_t)dest, bits(v), sizeof(T),
                            bits(cond), 0);
    return fetch ? from_bits<T>(proxy_wait(t, false)) : T();
}
/* Completes every earlier proxy request of this PE (nothing to do when none was posted since
 * the last proxy quiet). */
__device__ __forceinline__ void proxy_quiet() {
    if (!ishmemi_dstate.proxy_ring) return;
    unsigned long long taken = *(volatile unsigned long long *)proxy_word(ISHMEMI_SYNC_PROXY_TICKET);
    if (taken == *(volatile unsigned long long *)proxy_word(ISHMEMI_SYNC_PROXY_QUIET)) return;
    uint64_t t = proxy_post(proxy_w1(ISHMEMI_PROXY_QUIET, 0, 0, true, ishmemi_dstate.my_pe), 0, 0, 0, 0, 0);
    proxy_wait(t);
    atomicMax(proxy_word(ISHMEMI_SYNC_PROXY_QUIET), (unsigned long long)(t + 1));
}

__device__ __forceinline__ uint64_t *sync_word(int word, int pe) {
    uint64_t a = ishmemi_dstate.heap_base + ishmemi_dstate.sync_offset + 8 * (uint64_t)word;
    return (uint64_t *)ptr((const void *)(uintptr_t)a, 8, pe, "ishmem_barrier_all");
}

/* ---- copies ---- */

/* Copies n bytes with the threads [rank, size) of a group: in the widest words (16, 8 or 4
 * bytes) both addresses allow, U words in flight per thread, then the tail. */
template <class W, int U>
__device__ __forceinline__ size_t copy_words_u(char *d, const char *s, size_t n, unsigned rank, unsigned size) {
    size_t words = n / sizeof(W);
    const W *sw = (const W *)s;
    W *dw = (W *)d;
    size_t i = rank;
    for (; i + (U - 1) * (size_t)size < words; i += U * (size_t)size) {
        W v[U];
#pragma unroll
        for (int k = 0; k < U; k++) v[k] = sw[i + k * (size_t)size];
#pragma unroll
        for (int k = 0; k < U; k++) dw[i + k * (size_t)size] = v[k];
    }
    /* The tail: at most U - 1 words per thread, the only words of a thread's or a warp's small
     * put. Not unrolled: nvcc unrolled it by four behind a prologue run on every call (see
     * copy() for what the two changes gave). */
#pragma unroll 1
    for (; i < words; i += size)
        dw[i] = sw[i];
    return words * sizeof(W);
}
template <class W>
__device__ __forceinline__ size_t copy_words(char *d, const char *s, size_t n, unsigned rank, unsigned size) {
    return copy_words_u<W, 4>(d, s, n, rank, size);
}

/* Copies n bytes with the threads [rank, size) of a group: four words in flight per thread.
 * Returns as soon as the widest words covered everything (the usual case), and copy_words_u's
 * tail is not unrolled: with both, device putmem_nbi/getmem_nbi of 4 KiB - 256 KiB on two
 * H100s took 0.66-0.88 of the time before at thread and warp scope, 0.75-0.88 at block scope
 * (issue 24: bench/results/gpu-x2-issue24/round3-ab/; before, the thread and warp rows were
 * 1.09-1.38x behind NVSHMEM 3.8.0, where NVSHMEM's warp put ran 15% fewer instructions). */
__device__ __forceinline__ void copy(char *d, const char *s, size_t n, unsigned rank, unsigned size) {
    uintptr_t a = (uintptr_t)d | (uintptr_t)s;
    size_t done = 0;
    if ((a & 15) == 0) {
        done = copy_words<int4>(d, s, n, rank, size);
        if (done == n) return;
    }
    if ((a & 7) == 0) {
        done += copy_words<uint64_t>(d + done, s + done, n - done, rank, size);
        if (done == n) return;
    }
    if ((a & 3) == 0) done += copy_words<uint32_t>(d + done, s + done, n - done, rank, size);
    for (size_t j = done + rank; j < n; j += size)
        d[j] = s[j];
}

/* The copy of a lone thread inside the plain (one-thread) device collectives: eight 16-byte
 * words in flight, since nothing else hides its load latency (issue 24: one thread moving
 * 1 MiB into a peer over NVLink took 2.7 ms with four in flight, 2.3 ms with eight, on two
 * H200s). The RMA calls keep copy(): a kernel of 1024 threads each calling putmem must stay
 * within 64 registers, and a runtime choice between the two loops in copy() cost the
 * work-group puts about 15% at 4-256 KiB. */
__device__ __forceinline__ void copy_lone(char *d, const char *s, size_t n) {
    uintptr_t a = (uintptr_t)d | (uintptr_t)s;
    size_t done = 0;
    if ((a & 15) == 0) done += copy_words_u<int4, 8>(d, s, n, 0, 1);
    if ((a & 7) == 0) done += copy_words_u<uint64_t, 4>(d + done, s + done, n - done, 0, 1);
    if ((a & 3) == 0) done += copy_words_u<uint32_t, 4>(d + done, s + done, n - done, 0, 1);
    for (size_t j = done; j < n; j++)
        d[j] = s[j];
}

__device__ __forceinline__ void put(void *dest, const void *src, size_t bytes, int pe, const char *fn, bool readable = true) {
    if (bytes == 0) return;
    char *r = rptr(dest, bytes, pe, fn);
    if (__builtin_expect(r == NULL, 0)) return proxy_put(dest, src, bytes, pe, true, readable);
    copy(r, (const char *)src, bytes, 0, 1);
}

__device__ __forceinline__ void get(void *dest, const void *src, size_t bytes, int pe, const char *fn) {
    if (bytes == 0) return;
    char *r = rptr(src, bytes, pe, fn);
    if (__builtin_expect(r == NULL, 0)) return proxy_get(dest, src, bytes, pe);
    copy((char *)dest, r, bytes, 0, 1);
}

/* Bytes spanned by nblocks (> 0) blocks of bsize elements spaced stride elements apart:
 * ((nblocks - 1) * stride + bsize) * elem. An overflow is an error, as on the host (a wrapped
 * span would pass the range check of a far smaller one); checked even with
 * ISHMEM_NO_DEVICE_CHECKS, since the copy loops would then write outside the heap. */
__device__ __forceinline__ size_t strided_span(size_t stride, size_t bsize, size_t nblocks, size_t elem, const char *fn) {
    const size_t max = ~(size_t)0;
    size_t n = nblocks - 1;
    if (__builtin_expect((stride != 0 && n > (max - bsize) / stride) || (elem != 0 && n * stride + bsize > max / elem), 0))
        fail(fn, "size overflow: blocks, stride:", (long long)nblocks, (long long)stride);
    return (n * stride + bsize) * elem;
}

/* Strided blocks: nblocks blocks of bsize elements, strides in elements. */
__device__ __forceinline__ void strided(bool is_put, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                                        size_t bsize, size_t nblocks, size_t elem, int pe, const char *fn, bool readable = true) {
#ifndef ISHMEM_NO_DEVICE_CHECKS
    if (dst < (ptrdiff_t)(bsize ? bsize : 1) || sst < (ptrdiff_t)(bsize ? bsize : 1))
        fail(fn, "stride below the block size (dst, sst):", dst, sst);
#endif
    if (bsize == 0 || nblocks == 0) return;
    size_t span = strided_span((size_t)(is_put ? dst : sst), bsize, nblocks, elem, fn);
    char *remote = rptr(is_put ? (const void *)dest : src, span, pe, fn);
    if (__builtin_expect(remote == NULL, 0)) {
        /* One proxy request per block, in order; the last put waits until its source is read
         * (so do the earlier ones: the proxy runs them in order). */
        for (size_t b = 0; b < nblocks; b++) {
            char *d = (char *)dest + b * (size_t)dst * elem;
            const char *s = (const char *)src + b * (size_t)sst * elem;
            if (is_put) proxy_put(d, s, bsize * elem, pe, b + 1 == nblocks, readable);
            else proxy_get(d, s, bsize * elem, pe);
        }
        return;
    }
    char *d = is_put ? remote : (char *)dest;
    const char *s = is_put ? (const char *)src : remote;
    for (size_t b = 0; b < nblocks; b++)
        copy(d + b * (size_t)dst * elem, s + b * (size_t)sst * elem, bsize * elem, 0, 1);
}

template <class T> __device__ __forceinline__ void p(T *dest, T value, int pe, const char *fn) {
    char *r = rptr(dest, sizeof(T), pe, fn);
    if (__builtin_expect(r == NULL, 0)) {
        proxy_post(proxy_w1(ISHMEMI_PROXY_P, sizeof(T), 0, false, pe), (uint64_t)(uintptr_t)dest, bits(value), sizeof(T), 0, 0);
        return;
    }
    *(volatile T *)r = value;
}

template <class T> __device__ __forceinline__ T g(const T *src, int pe, const char *fn) {
    const char *r = rptr(src, sizeof(T), pe, fn);
    if (__builtin_expect(r == NULL, 0))
        return from_bits<T>(proxy_wait(
            proxy_post(proxy_w1(ISHMEMI_PROXY_G, sizeof(T), 0, true, pe), (uint64_t)(uintptr_t)src, 0, sizeof(T), 0, 0), false));
    return *(const volatile T *)r;
}

/* ---- atomics (system scope: atomic with respect to every GPU and the host) ---- */

template <class T> __device__ __forceinline__ cuda::atomic_ref<T, cuda::thread_scope_system> at(T *dest, int pe, const char *fn) {
    T *r = (T *)ptr(dest, sizeof(T), pe, fn);
#ifndef ISHMEM_NO_DEVICE_CHECKS
    if ((uintptr_t)r % sizeof(T))
        fail(fn, "AMO target not aligned (address, size):", (long long)(uintptr_t)dest, (long long)sizeof(T));
#endif
    return cuda::atomic_ref<T, cuda::thread_scope_system>(*r);
}

/* Whether an AMO on d at PE pe goes through the proxy (checked like at()). */
template <class T> __device__ __forceinline__ bool amo_remote(T *d, int pe, const char *fn) {
    if (__builtin_expect(!ishmemi_dstate.proxy_ring, 1)) return false;
    if (rptr(d, sizeof(T), pe, fn) != NULL) return false;
#ifndef ISHMEM_NO_DEVICE_CHECKS
    if ((uintptr_t)d % sizeof(T))
        fail(fn, "AMO target not aligned (address, size):", (long long)(uintptr_t)d, (long long)sizeof(T));
#endif
    return true;
}
/* The host AMO kernel's operator codes (cuda/host_kernels.cu). */
enum { AMO_FETCH = 0, AMO_SET = 1, AMO_SWAP = 2, AMO_CAS = 3, AMO_ADD = 4, AMO_AND = 5, AMO_OR = 6, AMO_XOR = 7 };

template <class T> __device__ __forceinline__ T fetch(T *d, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_FETCH, d, T(), T(), pe, true);
    return at(d, pe, fn).load(cuda::memory_order_relaxed);
}
template <class T> __device__ __forceinline__ void set(T *d, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) {
        proxy_amo<T>(AMO_SET, d, v, T(), pe, false);
        return;
    }
    at(d, pe, fn).store(v, cuda::memory_order_relaxed);
}
template <class T> __device__ __forceinline__ T swap(T *d, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_SWAP, d, v, T(), pe, true);
    return at(d, pe, fn).exchange(v, cuda::memory_order_relaxed);
}
template <class T> __device__ __forceinline__ T cswap(T *d, T cond, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_CAS, d, v, cond, pe, true);
    at(d, pe, fn).compare_exchange_strong(cond, v, cuda::memory_order_relaxed);
    return cond; /* the old value, whether or not it matched */
}
template <class T> __device__ __forceinline__ T fadd(T *d, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_ADD, d, v, T(), pe, true);
    return at(d, pe, fn).fetch_add(v, cuda::memory_order_relaxed);
}
template <class T> __device__ __forceinline__ T fand(T *d, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_AND, d, v, T(), pe, true);
    return at(d, pe, fn).fetch_and(v, cuda::memory_order_relaxed);
}
template <class T> __device__ __forceinline__ T f_or(T *d, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_OR, d, v, T(), pe, true);
    return at(d, pe, fn).fetch_or(v, cuda::memory_order_relaxed);
}
template <class T> __device__ __forceinline__ T fxor(T *d, T v, int pe, const char *fn) {
    if (amo_remote(d, pe, fn)) return proxy_amo<T>(AMO_XOR, d, v, T(), pe, true);
    return at(d, pe, fn).fetch_xor(v, cuda::memory_order_relaxed);
}

/* ---- ordering ---- */
/* Direct stores: a system fence; requests through the proxy: a quiet request when any was
 * posted since the last one. */
__device__ __forceinline__ void quiet() {
    __threadfence_system();
    proxy_quiet();
}

/* ---- point-to-point synchronization ---- */
template <class T> __device__ __forceinline__ bool cmp(T v, int op, T t) {
    switch (op) {
    case 1: return v == t;
    case 2: return v != t;
    case 3: return v > t;
    case 4: return v >= t;
    case 5: return v < t;
    default: return v <= t;
    }
}

__device__ __forceinline__ void check_cmp(int op, const char *fn) {
#ifndef ISHMEM_NO_DEVICE_CHECKS
    if (op < 1 || op > 6) fail(fn, "invalid comparison operator (cmp, 0):", op, 0);
#endif
}

template <class T> __device__ __forceinline__ T load_acquire(T *p) {
    return cuda::atomic_ref<T, cuda::thread_scope_system>(*p).load(cuda::memory_order_acquire);
}



template <class T> struct values {
    const T *many;
    T one;
    __device__ __forceinline__ T operator[](size_t i) const { return many ? many[i] : one; }
};

template <class T> __device__ __forceinline__ bool holds(T *ivars, size_t i, int op, values<T> v) {
    return cmp(load_acquire(ivars + i), op, v[i]);
}
__device__ __forceinline__ bool active(const int *status, size_t i) { return !status || status[i] == 0; }

template <class T> __device__ __forceinline__ int test_all(T *iv, size_t n, const int *st, int op, values<T> v, const char *fn) {
    check_cmp(op, fn);
    if (n) ptr(iv, n * sizeof(T), ishmemi_dstate.my_pe, fn);
    for (size_t i = 0; i < n; i++)
        if (active(st, i) && !holds(iv, i, op, v)) return 0;
    return 1;
}
/* test_any and wait_until_any are fair (as on the host, src/api/fair.rs): a scan starts after
 * the index the previous call on the same array returned, so repeated calls while several
 * ivars hold return each in turn. The positions live in a small table per translation unit,
 * indexed by a hash of the array's address; entries are a hint only (a collision or a race
 * between threads restarts a rotation, any satisfying index is still a correct answer). */
#define ISHMEMI_FAIR_SLOTS 64
static __device__ unsigned long long ishmemi_fair_key[ISHMEMI_FAIR_SLOTS];
static __device__ unsigned long long ishmemi_fair_next[ISHMEMI_FAIR_SLOTS];
__device__ __forceinline__ unsigned fair_slot(const void *iv) {
    return (unsigned)((((unsigned long long)(uintptr_t)iv >> 2) * 0x9E3779B97F4A7C15ull) >> 58);
}
__device__ __forceinline__ size_t fair_start(const void *iv, size_t n) {
    unsigned s = fair_slot(iv);
    if (*(volatile unsigned long long *)&ishmemi_fair_key[s] != (unsigned long long)(uintptr_t)iv) return 0;
    return (size_t)(*(volatile unsigned long long *)&ishmemi_fair_next[s] % n);
}
__device__ __forceinline__ void fair_returned(const void *iv, size_t i) {
    unsigned s = fair_slot(iv);
    *(volatile unsigned long long *)&ishmemi_fair_next[s] = (unsigned long long)i + 1;
    *(volatile unsigned long long *)&ishmemi_fair_key[s] = (unsigned long long)(uintptr_t)iv;
}
template <class T> __device__ __forceinline__ size_t test_any(T *iv, size_t n, const int *st, int op, values<T> v, const char *fn) {
    check_cmp(op, fn);
    if (!n) return SIZE_MAX;
    ptr(iv, n * sizeof(T), ishmemi_dstate.my_pe, fn);
    size_t s = fair_start(iv, n);
    for (size_t k = 0; k < n; k++) {
        size_t i = s + k < n ? s + k : s + k - n;
        if (active(st, i) && holds(iv, i, op, v)) {
            fair_returned(iv, i);
            return i;
        }
    }
    return SIZE_MAX;
}
template <class T> __device__ __forceinline__ size_t test_some(T *iv, size_t n, size_t *idx, const int *st, int op, values<T> v, const char *fn) {
    check_cmp(op, fn);
    if (n) ptr(iv, n * sizeof(T), ishmemi_dstate.my_pe, fn);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (active(st, i) && holds(iv, i, op, v)) idx[k++] = i;
    return k;
}
__device__ __forceinline__ bool any_active(const int *st, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (active(st, i)) return true;
    return false;
}
template <class T> __device__ __forceinline__ void wait_all(T *iv, size_t n, const int *st, int op, values<T> v, const char *fn) {
    while (!test_all(iv, n, st, op, v, fn)) {
    }
}
template <class T> __device__ __forceinline__ size_t wait_any(T *iv, size_t n, const int *st, int op, values<T> v, const char *fn) {
    if (!any_active(st, n)) return SIZE_MAX;
    size_t i;
    while ((i = test_any(iv, n, st, op, v, fn)) == SIZE_MAX) {
    }
    return i;
}
template <class T> __device__ __forceinline__ size_t wait_some(T *iv, size_t n, size_t *idx, const int *st, int op, values<T> v, const char *fn) {
    if (!any_active(st, n)) return 0;
    size_t k;
    while ((k = test_some(iv, n, idx, st, op, v, fn)) == 0) {
    }
    return k;
}

/* ---- signals ---- */
__device__ __forceinline__ void signal_update(uint64_t *sig, uint64_t v, int op, int pe, const char *fn) {
#ifndef ISHMEM_NO_DEVICE_CHECKS
    if (op != 0 && op != 1) fail(fn, "invalid signal operator (sig_op, 0):", op, 0);
#endif
    if (op == 0) set(sig, v, pe, fn);
    else fadd(sig, v, pe, fn);
}

__device__ __forceinline__ void put_signal(void *dest, const void *src, size_t bytes, uint64_t *sig, uint64_t v, int op, int pe, const char *fn,
                                           bool readable = true) {
    if (ishmemi_dstate.proxy_ring && rptr(dest, bytes ? bytes : 1, pe, fn) == NULL) {
#ifndef ISHMEM_NO_DEVICE_CHECKS
        if (op != 0 && op != 1) fail(fn, "invalid signal operator (sig_op, 0):", op, 0);
        if (rptr(sig, 8, pe, fn) != NULL || (uintptr_t)sig % 8) fail(fn, "signal address not usable (address, 0):", (long long)(uintptr_t)sig, 0);
#endif
        if (proxy_put_inline(src, bytes, readable)) {
            /* The bytes inline, then the signal alone (0 bytes), which the proxy runs after the
             * put with a fence between: nothing to wait for. */
            proxy_put(dest, src, bytes, pe, false);
            proxy_post(proxy_w1(ISHMEMI_PROXY_PUT_SIGNAL, 8, op, false, pe), (uint64_t)(uintptr_t)dest, 0, 0, v,
                       (uint64_t)(uintptr_t)sig);
            return;
        }
        /* One request: the proxy puts, orders, then updates the signal. */
        proxy_wait(proxy_post(proxy_w1(ISHMEMI_PROXY_PUT_SIGNAL, 8, op, true, pe), (uint64_t)(uintptr_t)dest,
                              (uint64_t)(uintptr_t)src, bytes, v, (uint64_t)(uintptr_t)sig));
        return;
    }
    put(dest, src, bytes, pe, fn);
    __threadfence_system(); /* the data is visible before the signal */
    signal_update(sig, v, op, pe, fn);
}

/* ---- whole-job barrier from a kernel: one thread per PE calls it ---- */
__device__ __forceinline__ void barrier_all(const char *fn) {
    (void)fn;
    /* One system fence makes this PE's earlier puts and AMOs visible before it arrives
     * anywhere; the arrivals themselves are relaxed atomics; the wait polls with acquire loads
     * (cheaper than a full fence after a relaxed loop). */
    quiet();
    int n = ishmemi_dstate.n_pes;
    uint64_t *epoch = sync_word(ISHMEMI_SYNC_BARRIER_EPOCH, ishmemi_dstate.my_pe);
    uint64_t e = *epoch + 1;
    *epoch = e;
    uint64_t *mine = (uint64_t *)(uintptr_t)(ishmemi_dstate.heap_base + ishmemi_dstate.sync_offset + 8 * ISHMEMI_SYNC_BARRIER_ARRIVE);
    for (int pe = 0; pe < n; pe++) {
        if (via_proxy(pe)) /* another node: an AMO through the proxy (in order after the quiet) */
            proxy_amo<uint64_t>(AMO_ADD, mine, 1, 0, pe, false);
        else
            cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*sync_word(ISHMEMI_SYNC_BARRIER_ARRIVE, pe))
                .fetch_add(1, cuda::memory_order_relaxed);
    }
    uint64_t *arrive = sync_word(ISHMEMI_SYNC_BARRIER_ARRIVE, ishmemi_dstate.my_pe);
    while (load_acquire(arrive) < e * (uint64_t)n) {
    }
}

/* ---- work-group forms (Group: any cooperative group with thread_rank, num_threads, sync) ---- */
/* Work-group forms: to a PE of another node, one request for the whole group (its first
 * thread posts and waits). */
template <class G> __device__ __forceinline__ void wg_put(const G &g, void *dest, const void *src, size_t bytes, int pe, const char *fn) {
    if (bytes) {
        char *r = rptr(dest, bytes, pe, fn);
        if (r == NULL) {
            if (g.thread_rank() == 0) proxy_put(dest, src, bytes, pe, true);
        } else {
            copy(r, (const char *)src, bytes, g.thread_rank(), g.num_threads());
        }
    }
    g.sync();
}

template <class G> __device__ __forceinline__ void wg_get(const G &g, void *dest, const void *src, size_t bytes, int pe, const char *fn) {
    if (bytes) {
        char *r = rptr(src, bytes, pe, fn);
        if (r == NULL) {
            if (g.thread_rank() == 0) proxy_get(dest, src, bytes, pe);
        } else {
            copy((char *)dest, r, bytes, g.thread_rank(), g.num_threads());
        }
    }
    g.sync();
}

/* The nbi forms: a direct copy leaves the group unsynchronized (the data is complete at the
 * next quiet, which synchronizes the group); through the proxy, as the blocking form. */
template <class G> __device__ __forceinline__ void wg_put_nbi(const G &g, void *dest, const void *src, size_t bytes, int pe, const char *fn) {
    if (bytes) {
        char *r = rptr(dest, bytes, pe, fn);
        if (r != NULL) return copy(r, (const char *)src, bytes, g.thread_rank(), g.num_threads());
    }
    wg_put(g, dest, src, bytes, pe, fn);
}
template <class G> __device__ __forceinline__ void wg_get_nbi(const G &g, void *dest, const void *src, size_t bytes, int pe, const char *fn) {
    if (bytes) {
        char *r = rptr(src, bytes, pe, fn);
        if (r != NULL) return copy((char *)dest, r, bytes, g.thread_rank(), g.num_threads());
    }
    wg_get(g, dest, src, bytes, pe, fn);
}

/* ishmemx_quiet_work_group and ishmemx_fence_work_group: the group barrier orders every
 * thread's operations before the leader's quiet (a cumulative system fence, and the proxy's
 * quiet when requests went through it), then the group leaves together. */
template <class G> __device__ __forceinline__ void wg_quiet(const G &g) {
    g.sync();
    if (g.thread_rank() == 0) quiet();
    g.sync();
}

template <class G>
__device__ __forceinline__ void wg_strided(const G &g, bool is_put, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                                           size_t bsize, size_t nblocks, size_t elem, int pe, const char *fn) {
#ifndef ISHMEM_NO_DEVICE_CHECKS
    if (dst < (ptrdiff_t)(bsize ? bsize : 1) || sst < (ptrdiff_t)(bsize ? bsize : 1))
        fail(fn, "stride below the block size (dst, sst):", dst, sst);
#endif
    if (bsize && nblocks) {
        size_t span = strided_span((size_t)(is_put ? dst : sst), bsize, nblocks, elem, fn);
        char *remote = rptr(is_put ? (const void *)dest : src, span, pe, fn);
        if (remote == NULL) {
            if (g.thread_rank() == 0) strided(is_put, dest, src, dst, sst, bsize, nblocks, elem, pe, fn);
            g.sync();
            return;
        }
        char *d = is_put ? remote : (char *)dest;
        const char *s = is_put ? (const char *)src : remote;
        if (bsize == 1) {
            for (size_t b = g.thread_rank(); b < nblocks; b += g.num_threads())
                copy(d + b * (size_t)dst * elem, s + b * (size_t)sst * elem, elem, 0, 1);
        } else {
            for (size_t b = 0; b < nblocks; b++)
                copy(d + b * (size_t)dst * elem, s + b * (size_t)sst * elem, bsize * elem, g.thread_rank(), g.num_threads());
        }
    }
    g.sync();
}

template <class G>
__device__ __forceinline__ void wg_put_signal(const G &g, void *dest, const void *src, size_t bytes, uint64_t *sig, uint64_t v,
                                              int op, int pe, const char *fn) {
    if (ishmemi_dstate.proxy_ring && rptr(dest, bytes ? bytes : 1, pe, fn) == NULL) {
        if (g.thread_rank() == 0) put_signal(dest, src, bytes, sig, v, op, pe, fn);
        g.sync();
        return;
    }
    if (bytes) copy(ptr(dest, bytes, pe, fn), (const char *)src, bytes, g.thread_rank(), g.num_threads());
    /* The group barrier orders every thread's stores before the leader's system fence, which
     * is cumulative: one fence makes the whole group's data visible before the signal. */
    g.sync();
    if (g.thread_rank() == 0) {
        __threadfence_system();
        signal_update(sig, v, op, pe, fn);
    }
    g.sync();
}

/* ---- ishmemx_print, ishmemx_timestamp, ishmemx_nop ---- */

/* ishmemx_print in a kernel: device printf, which the CUDA driver writes to the host process's
 * stdout when the host synchronizes with the kernel's work (so every message type lands on
 * stdout, not stderr). The tags are the host's: [PE n] DEBUG/WARNING/ERROR: [file:line: func: ]
 * text; DEBUG only with ISHMEM_DEBUG=1; ERROR traps the kernel after printing; STDOUT and
 * STDERR print the text alone. No host buffer to drain. */
__device__ __noinline__ inline void print(const char *file, long line, const char *func, const char *out, int type) {
    const char *F = "ishmemx_print";
    if (!out) fail(F, "out is NULL", 0, 0);
    if ((unsigned)type > 4u) fail(F, "invalid message type (type, 0) (ISHMEMX_PRINT_DEBUG .. ISHMEMX_PRINT_STDERR are 0 .. 4):", type, 0);
    int n = 0;
    while (out[n]) n++;
    if (type >= 3) {
        printf("%s", out);
        return;
    }
    if (type == 0 && !(ishmemi_dstate.flags & ISHMEMI_DEV_F_DEBUG)) return;
    bool nl = n > 0 && out[n - 1] == '\n'; /* one line per message (device printf has no %.*s) */
    const char *kind = type == 0 ? "DEBUG" : type == 1 ? "WARNING" : "ERROR";
    char pe[12] = "?";
    if (ishmemi_dstate.initialized) {
        unsigned v = (unsigned)ishmemi_dstate.my_pe, k = 0;
        char d[12];
        do { d[k++] = (char)('0' + v % 10); v /= 10; } while (v && k < 11);
        for (unsigned j = 0; j < k; j++) pe[j] = d[k - 1 - j];
        pe[k] = 0;
    }
    const char *fn_ = func ? func : "?";
    if (file && nl) printf("[PE %s] %s: %s:%ld: %s: %s", pe, kind, file, line, fn_, out);
    else if (file) printf("[PE %s] %s: %s:%ld: %s: %s\n", pe, kind, file, line, fn_, out);
    else if (nl) printf("[PE %s] %s: %s", pe, kind, out);
    else printf("[PE %s] %s: %s\n", pe, kind, out);
    if (type == 2) __trap();
}

/* ishmemx_timestamp(_nbi) in a kernel: the GPU's global nanosecond timer (%globaltimer) into
 * the 8-byte cell dst (GPU memory, or host memory the GPU can write: mapped pinned memory).
 * The blocking form makes the store visible to the host and the other GPUs before it returns
 * (a system fence); the nbi form leaves that to the next quiet, fence or the kernel's end. */
__device__ __forceinline__ void timestamp(uintptr_t dst, bool blocking, const char *fn) {
    if (__builtin_expect(dst == 0 || (dst & 7) != 0, 0)) fail(fn, "dst is NULL or not aligned to 8 bytes (dst, 0):", (long long)dst, 0);
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    *(volatile unsigned long long *)dst = t;
    if (blocking) __threadfence_system();
}

/* ishmemx_nop(_no_r) in a kernel: a request to the host proxy that does nothing (with or
 * without waiting for the reply), to measure the proxy path. Where no proxy runs (a job of one
 * node: every device operation is a direct load, store or atomic) both return at once. */
__device__ __forceinline__ void nop(bool wait_reply) {
    if (!ishmemi_dstate.proxy_ring) return;
    uint64_t t = proxy_post(proxy_w1(ISHMEMI_PROXY_NOP, 0, 0, wait_reply, ishmemi_dstate.my_pe), 0, 0, 0, 0, 0);
    if (wait_reply) proxy_wait(t);
}

} // namespace ishmemi

#include <ishmem/cuda_coll.cuh>

#endif
