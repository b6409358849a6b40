/* ishmem/cuda_coll.cuh: teams and collectives in CUDA kernels (included by cuda_impl.cuh).
 *
 * Teams live in the symmetric heap, so kernels read the same table the host keeps:
 *  - words ISHMEMI_SYNC_TEAM_AREA and ISHMEMI_SYNC_TEAMS_MAX of this PE's sync area hold the
 *    heap offset of team slot 0's area and the number of slots (written by libishmem at init);
 *  - slot t's area (ISHMEMI_TEAM_AREA_BYTES at that offset + t * ISHMEMI_TEAM_AREA_BYTES) holds,
 *    at word ISHMEMI_TEAM_DESC_WORD, {start, stride, size, my_pe} of the team in this PE's view
 *    (size 0: no team of this PE in the slot), written by the host when the team is made;
 *  - the same area's words hold the team's synchronization state, shared with the host side
 *    (src/core/team.rs): a dissemination barrier whose round-k flag of team PE i is written only
 *    by team PE (i - 2^k) mod n, with the writer's epoch, so flags only grow and back-to-back
 *    syncs cannot mix.
 *
 * Every collective is a template over a group G (thread_rank, num_threads, sync): the plain
 * device forms run it with one thread (`solo`), the _work_group forms with a cooperative group
 * whose threads share the copies and the arithmetic. Algorithms, for PEs on NVLink/PCIe:
 *  - team_sync: the dissemination barrier above (ceil(log2 n) rounds);
 *  - broadcast: sync, every PE pulls the root's source (the reads run on n links at once), sync;
 *  - fcollect / collect / alltoall: sync, every PE pushes its blocks to every PE in rotated
 *    order (PE i starts at i + 1, spreading the load), sync; collect first publishes each PE's
 *    size in its area and reads the others' to place its block;
 *  - reductions and scans: sync, every PE reads every PE's source and combines in team order
 *    (so every PE computes bit-identical floating-point results), sync. When dest overlaps
 *    source, results are held in registers per chunk and written after a sync, so no PE reads a
 *    source element that another has already overwritten.
 * Bad input (invalid team, root out of range, a buffer outside the heap) prints a PE-tagged
 * error naming the function and traps the kernel, as the rest of the device API does.
 *
 * Teams with a member on another node (the job spans nodes and the team's descriptor has
 * ISHMEMI_TEAM_F_REMOTE): no GPU maps that member's heap, so each collective and team sync is
 * one request of the proxy ring (ISHMEMI_PROXY_COLL, device_state.h) posted by the group's
 * first thread: this PE's proxy thread runs the host collective of the same kind on the team
 * (the host API's algorithms, across nodes through the network) and replies; the group then
 * returns. Every member of such a team takes this path, so the host algorithm runs on all of
 * them; the host checks the arguments, and its errors end the job naming the device call. */
#ifndef ISHMEM_CUDA_COLL_CUH
#define ISHMEM_CUDA_COLL_CUH

/* The layout of the sync and team areas (words, sizes) is ishmem/device_state.h's. */

namespace ishmemi {

/* A group of one thread: the plain (non work_group) device forms. */
struct solo {
    __device__ __forceinline__ unsigned thread_rank() const { return 0; }
    __device__ __forceinline__ unsigned num_threads() const { return 1; }
    __device__ __forceinline__ void sync() const {}
};

struct tdesc {
    int32_t start, stride, size, my_pe;
    uint64_t area;  /* heap offset of the team's area (team_area_off) */
    uint64_t epoch; /* this PE's team-sync count when looked up; sync_fenced keeps it current */
    __device__ __forceinline__ int world(int i) const { return start + stride * i; }
};

/* A word of this PE's sync area that libishmem writes once at init, before any kernel can
 * use the device API, and never again (ISHMEMI_SYNC_TEAM_AREA, ISHMEMI_SYNC_TEAMS_MAX): read
 * through the read-only data cache (ld.global.nc), so after the first collective of a kernel
 * the team lookup no longer waits for L2 before it can address the team's words (issue 24:
 * three dependent L2 round trips made the two-GPU team_sync 0.7 us slower than its flags). */
__device__ __forceinline__ uint64_t own_init_word(int w) {
    return __ldg((const unsigned long long *)(uintptr_t)(ishmemi_dstate.heap_base + ishmemi_dstate.sync_offset +
                                                        8 * (uint64_t)w));
}

/* Heap offset of team slot t's area, or 0 when t is not a slot. */
__device__ __forceinline__ uint64_t team_area_off(int t) {
    /* Both words are read before the test: two loads in flight, one memory latency (a team
     * lookup sits on the latency path of every collective). */
    uint64_t max = own_init_word(ISHMEMI_SYNC_TEAMS_MAX);
    uint64_t area = own_init_word(ISHMEMI_SYNC_TEAM_AREA);
    if (t < 0 || (uint64_t)t >= max) return 0;
    return area + (uint64_t)t * ISHMEMI_TEAM_AREA_BYTES;
}

/* This PE's view of team t; size 0 when t is not a team of this PE. */
__device__ __forceinline__ tdesc team_lookup(int t) {
    tdesc d = {0, 1, 0, -1, 0, 0};
    if (!ishmemi_dstate.initialized) return d;
    uint64_t off = team_area_off(t);
    if (!off) return d;
    d.area = off;
    const volatile int32_t *w =
        (const volatile int32_t *)(uintptr_t)(ishmemi_dstate.heap_base + off + 8 * ISHMEMI_TEAM_DESC_WORD);
    /* The sync count is read with the descriptor: its load is in flight with theirs, where a
     * read at the sync would add one more memory latency before the first flag store. */
    d.epoch = *(const volatile uint64_t *)(uintptr_t)(ishmemi_dstate.heap_base + off + 8 * ISHMEMI_TEAM_SYNC_EPOCH);
    d.start = w[0];
    d.stride = w[1];
    d.size = w[2];
    d.my_pe = w[3];
    if (d.size <= 0 || d.my_pe < 0) d.size = 0;
    return d;
}

__device__ __noinline__ inline tdesc team_get(int t, const char *fn) {
    if (!ishmemi_dstate.initialized) fail(fn, "called before ishmem_init (or the kernel's module is not bound:", 0, 0);
    tdesc d = team_lookup(t);
    if (d.size == 0) fail(fn, "invalid team, or a team this PE is not a member of (team, 0):", t, 0);
    return d;
}

/* Address of word w, on world PE pe, of the team area at heap offset `area` (team_area_off:
 * symmetric, the same offset everywhere). */
__device__ __forceinline__ uint64_t *team_word(uint64_t area, int w, int pe, const char *fn) {
    uint64_t a = ishmemi_dstate.heap_base + area + 8 * (uint64_t)w;
    return (uint64_t *)ptr((const void *)(uintptr_t)a, 8, pe, fn);
}

__device__ __forceinline__ int team_my_pe(int t) {
    tdesc d = team_lookup(t);
    return d.size ? d.my_pe : -1;
}

__device__ __forceinline__ int team_n_pes(int t) {
    tdesc d = team_lookup(t);
    return d.size ? d.size : -1;
}

__device__ __forceinline__ int team_translate_pe(int src_team, int src_pe, int dest_team) {
    tdesc s = team_lookup(src_team), d = team_lookup(dest_team);
    if (!s.size || !d.size || src_pe < 0 || src_pe >= s.size) return -1;
    int w = s.world(src_pe);
    int rel = w - d.start;
    if (rel % d.stride) return -1;
    int i = rel / d.stride;
    return (i >= 0 && i < d.size) ? i : -1;
}

/* The dissemination barrier of the team d (looked up by team_lookup), by one thread.
 *
 * Ordering: every round's flag store is a release at system scope (st.release.sys: one
 * fence.acq_rel.sys before the store), and every wait an acquire at system scope. The first
 * round's release makes this thread's earlier writes, local and into peers over NVLink/PCIe,
 * visible to the PE that acquires the flag; a group's other threads are covered too, since
 * their writes come before the group's barrier (bar.sync) that precedes the leader's release
 * (release is cumulative in the PTX memory model). Later rounds release again, so what a PE
 * acquired in round k-1 reaches round k's target (dissemination needs the chain to be
 * transitive). This is the whole fence of a team sync: an extra fence.sc.sys before the first
 * store (the earlier form) cost a second wait for the NVLink writes in flight (issue 24:
 * two-GPU thread team_sync 4.89 us). */
__device__ __noinline__ inline void team_sync_one(const tdesc d, uint64_t e, const char *fn) {
    int n = d.size;
    uint64_t area = d.area;
    /* This PE's own words of the area (the area offset came from the team table: in range). */
    volatile uint64_t *own = (volatile uint64_t *)(uintptr_t)(ishmemi_dstate.heap_base + area);
    own[ISHMEMI_TEAM_SYNC_EPOCH] = e;
    for (int k = 0, dist = 1; dist < n && k < ISHMEMI_TEAM_SYNC_ROUNDS; k++, dist <<= 1) {
        int to = d.world((d.my_pe + dist) % n);
        cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*team_word(area, ISHMEMI_TEAM_SYNC_ROUND + k, to, fn))
            .store(e, cuda::memory_order_release);
        uint64_t *mine = (uint64_t *)(own + ISHMEMI_TEAM_SYNC_ROUND + k);
        while (load_acquire(mine) < e) {
        }
    }
}

/* Team-wide barrier for a group: every thread's earlier writes (local and remote) are visible
 * to the team when any PE leaves it. The group's barrier orders its threads' writes before the
 * leader's first release (team_sync_one), which covers them all: one fence per group, not one
 * per thread. A team of one PE has nobody to order against: the group barrier alone. */
template <class G> __device__ __forceinline__ void sync_fenced(const G &g, int t, tdesc &d, const char *fn) {
    (void)t;
    g.sync();
    if (d.size > 1) {
        /* Every thread counts the sync (d.epoch, read by team_lookup), the leader runs it. The
         * count is this PE's alone: nothing else syncs the team while a collective of it runs. */
        d.epoch++;
        if (g.thread_rank() == 0) team_sync_one(d, d.epoch, fn);
        g.sync();
    }
}

/* ---- teams with a member on another node: collectives run by the host, through the proxy ---- */

/* Whether team t has a member on another node (ISHMEMI_TEAM_F_REMOTE in this PE's descriptor
 * of the slot). A flag the host sets (src/core/team.rs) rather than a via_proxy check of every
 * member: one load instead of one per member, and it is computed from the job's node
 * placement, so every member of the team (and the on-queue path of src/core/queue_coll.rs,
 * which reads the same descriptor) decides alike; PEs deciding differently would run different
 * algorithms against each other. Behind proxy_ring != 0 (a constant-memory load): jobs of one
 * node never read the descriptor. A slot without a team of this PE reads as not remote, and
 * the node path reports the invalid team. */
__device__ __noinline__ inline bool team_remote_slow(int t) {
    if (!ishmemi_dstate.initialized) return false;
    uint64_t off = team_area_off(t);
    if (!off) return false;
    const volatile ishmemi_team_desc_t *d =
        (const volatile ishmemi_team_desc_t *)(uintptr_t)(ishmemi_dstate.heap_base + off + 8 * ISHMEMI_TEAM_DESC_WORD);
    uint32_t f = d->flags;
    return d->size > 0 && (f & ISHMEMI_TEAM_F_USED) && (f & ISHMEMI_TEAM_F_REMOTE);
}
__device__ __forceinline__ bool team_remote(int t) { return ishmemi_dstate.proxy_ring != 0 && team_remote_slow(t); }

/* The element class of a reduction's type (ISHMEMI_COLL_T_*). */
template <class T> __device__ __forceinline__ constexpr int coll_class() {
    return (T)0.5 != (T)0 ? ISHMEMI_COLL_T_FLOAT : (T)-1 < (T)0 ? ISHMEMI_COLL_T_SIGNED : ISHMEMI_COLL_T_UNSIGNED;
}

/* Posts collective `what` of team t to this PE's proxy and waits for the host's status. The
 * slot is published after a system fence (proxy_publish), so the host's collective sees the
 * group's earlier writes (the caller fenced them before the group's sync); requests this PE
 * posted earlier run first (ticket order). The host returns 0 or ends the job: another status
 * is an internal error, which traps here. */
__device__ __noinline__ inline void coll_post(int t, int what, int cls, unsigned width, int op, const void *dest,
                                              const void *src, size_t n, int root, const char *fn) {
    uint64_t w6 = (uint64_t)(uint32_t)t | (uint64_t)(what & 0xff) << 32 | (uint64_t)(cls & 0xff) << 40;
    uint64_t t_ = proxy_post(proxy_w1(ISHMEMI_PROXY_COLL, width, op, true, ishmemi_dstate.my_pe), (uint64_t)(uintptr_t)dest,
                             (uint64_t)(uintptr_t)src, n, (uint64_t)(uint32_t)root, w6);
    int rc = (int)proxy_wait(t_);
    if (rc != 0) fail(fn, "the host collective run for it through the proxy returned (status, team):", rc, t);
}

/* A collective of a team with a member on another node, for a group: every thread's earlier
 * writes are made visible (each fences, then the group syncs), the first thread posts the one
 * request of the group and waits, and the group syncs again, after which dest is complete for
 * every thread. Returns the host's status (0). */
template <class G>
__device__ __forceinline__ int coll_proxy(const G &g, int t, int what, int cls, unsigned width, int op, const void *dest,
                                          const void *src, size_t n, int root, const char *fn) {
    __threadfence_system();
    g.sync();
    if (g.thread_rank() == 0) coll_post(t, what, cls, width, op, dest, src, n, root, fn);
    g.sync();
    return 0;
}

/* Checks that [addr, addr + len) lies in the symmetric heap (for buffers every PE reaches). */
__device__ __noinline__ inline void check_sym(const void *addr, size_t len, const char *fn) {
    if (len) ptr(addr, len, ishmemi_dstate.my_pe, fn);
}

/* Checks that team PEs [0, upto) all reach [addr, addr + len) (reductions read every source). */
__device__ __noinline__ inline void check_team_reach(const void *addr, size_t len, const tdesc d, int upto, const char *fn) {
    for (int p = 0; p < upto; p++) ptr(addr, len, d.world(p), fn);
}

template <class G> __device__ __forceinline__ int team_sync(const G &g, int t, const char *fn) {
    if (team_remote(t)) return coll_proxy(g, t, ISHMEMI_COLL_SYNC, 0, 1, 0, NULL, NULL, 0, 0, fn);
    tdesc d = team_get(t, fn);
    sync_fenced(g, t, d, fn);
    return 0;
}

/* ---- data movement collectives (bytes) ---- */

/* The group's copy: a lone thread (solo) keeps more words in flight (copy_lone). */
template <class G> __device__ __forceinline__ void gcopy(const G &g, char *d, const char *s, size_t n) {
    copy(d, s, n, g.thread_rank(), g.num_threads());
}
template <> __device__ __forceinline__ void gcopy<solo>(const solo &, char *d, const char *s, size_t n) { copy_lone(d, s, n); }

template <class G>
__device__ __forceinline__ int broadcast(const G &g, int t, void *dest, const void *src, size_t bytes, int root, const char *fn) {
    if (team_remote(t)) return coll_proxy(g, t, ISHMEMI_COLL_BROADCAST, 0, 1, 0, dest, src, bytes, root, fn);
    tdesc d = team_get(t, fn);
    if (root < 0 || root >= d.size) fail(fn, "PE_root out of range for the team (PE_root, team size):", root, d.size);
    check_sym(dest, bytes, fn);
    check_sym(src, bytes, fn);
    sync_fenced(g, t, d, fn);
    if (bytes) {
        const char *from = ptr(src, bytes, d.world(root), fn);
        if ((const void *)from != (const void *)dest)
            gcopy(g, (char *)dest, from, bytes);
    }
    sync_fenced(g, t, d, fn);
    return 0;
}

template <class G>
__device__ __forceinline__ int fcollect(const G &g, int t, void *dest, const void *src, size_t bytes, const char *fn) {
    if (team_remote(t)) return coll_proxy(g, t, ISHMEMI_COLL_FCOLLECT, 0, 1, 0, dest, src, bytes, 0, fn);
    tdesc d = team_get(t, fn);
    int n = d.size;
    check_sym(dest, bytes * (size_t)n, fn);
    check_sym(src, bytes, fn);
    sync_fenced(g, t, d, fn);
    if (bytes)
        for (int j = 1; j <= n; j++) {
            int to = d.world((d.my_pe + j) % n);
            gcopy(g, ptr((char *)dest + (size_t)d.my_pe * bytes, bytes, to, fn), (const char *)src, bytes);
        }
    sync_fenced(g, t, d, fn);
    return 0;
}

template <class G>
__device__ __forceinline__ int collect(const G &g, int t, void *dest, const void *src, size_t bytes, const char *fn) {
    if (team_remote(t)) return coll_proxy(g, t, ISHMEMI_COLL_COLLECT, 0, 1, 0, dest, src, bytes, 0, fn);
    tdesc d = team_get(t, fn);
    int n = d.size;
    check_sym(src, bytes, fn);
    uint64_t area = d.area;
    if (g.thread_rank() == 0) *(volatile uint64_t *)team_word(area, ISHMEMI_TEAM_SYNC_VALUE, d.world(d.my_pe), fn) = bytes;
    sync_fenced(g, t, d, fn);
    size_t before = 0, total = 0;
    for (int j = 0; j < n; j++) {
        uint64_t b = *(volatile uint64_t *)team_word(area, ISHMEMI_TEAM_SYNC_VALUE, d.world(j), fn);
        if (j < d.my_pe) before += b;
        total += b;
    }
    check_sym(dest, total, fn);
    if (bytes)
        for (int j = 1; j <= n; j++) {
            int to = d.world((d.my_pe + j) % n);
            gcopy(g, ptr((char *)dest + before, bytes, to, fn), (const char *)src, bytes);
        }
    sync_fenced(g, t, d, fn);
    return 0;
}

template <class G>
__device__ __forceinline__ int alltoall(const G &g, int t, void *dest, const void *src, size_t bytes, const char *fn) {
    if (team_remote(t)) return coll_proxy(g, t, ISHMEMI_COLL_ALLTOALL, 0, 1, 0, dest, src, bytes, 0, fn);
    tdesc d = team_get(t, fn);
    int n = d.size;
    check_sym(dest, bytes * (size_t)n, fn);
    check_sym(src, bytes * (size_t)n, fn);
    sync_fenced(g, t, d, fn);
    if (bytes)
        for (int j = 1; j <= n; j++) {
            int p = (d.my_pe + j) % n;
            gcopy(g, ptr((char *)dest + (size_t)d.my_pe * bytes, bytes, d.world(p), fn), (const char *)src + (size_t)p * bytes,
                  bytes);
        }
    sync_fenced(g, t, d, fn);
    return 0;
}

/* ---- reductions and scans ---- */
enum rop { R_AND, R_OR, R_XOR, R_MAX, R_MIN, R_SUM, R_PROD };
static_assert(R_AND == ISHMEMI_COLL_OP_AND && R_OR == ISHMEMI_COLL_OP_OR && R_XOR == ISHMEMI_COLL_OP_XOR &&
                  R_MAX == ISHMEMI_COLL_OP_MAX && R_MIN == ISHMEMI_COLL_OP_MIN && R_SUM == ISHMEMI_COLL_OP_SUM &&
                  R_PROD == ISHMEMI_COLL_OP_PROD,
              "rop codes are the proxy's ISHMEMI_COLL_OP_*");

template <int OP, class T> __device__ __forceinline__ T combine(T a, T b) {
    if constexpr (OP == R_AND) return a & b;
    else if constexpr (OP == R_OR) return a | b;
    else if constexpr (OP == R_XOR) return a ^ b;
    else if constexpr (OP == R_MAX) return a > b ? a : b;
    else if constexpr (OP == R_MIN) return a < b ? a : b;
    else if constexpr (OP == R_SUM) return (T)(a + b);
    else return (T)(a * b);
}

/* mode 0: reduction over all team PEs; 1: inclusive scan (PEs 0..me); 2: exclusive scan
 * (PEs 0..me-1; PE 0 gets zeros). */
/* PE pe's copy of a symmetric address whose range and reachability were checked before. */
template <class T> __device__ __forceinline__ const T *peer_raw(const T *a, int pe) {
    return (const T *)(uintptr_t)(ishmemi_dstate.peer_base[pe] + ((uint64_t)(uintptr_t)a - ishmemi_dstate.heap_base));
}

template <int OP, class T> __device__ __forceinline__ T fold(const tdesc &d, const T *src, size_t e, int upto) {
    T acc = *(const volatile T *)peer_raw(src + e, d.world(0));
#pragma unroll 1
    for (int p = 1; p < upto; p++) acc = combine<OP, T>(acc, *(const volatile T *)peer_raw(src + e, d.world(p)));
    return acc;
}

/* 16-byte words of T, combined lane by lane. */
template <class T> union vec16 {
    int4 w;
    T e[16 / sizeof(T)];
};
template <int OP, class T> __device__ __forceinline__ int4 combine16(int4 a, int4 b) {
    vec16<T> x, y;
    x.w = a;
    y.w = b;
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(T)); i++) x.e[i] = combine<OP, T>(x.e[i], y.e[i]);
    return x.w;
}
/* 16-byte words in flight per thread and PE in the vector loop of fold_into: more for one
 * thread (latency-bound: nothing else hides the loads), fewer for a group (registers: 1024
 * threads of a block get 64 each). */
template <class G> struct fold_unroll { static constexpr int value = 4; };
template <> struct fold_unroll<solo> { static constexpr int value = 8; };

/* dest[e] = src[e] of team PEs 0..upto-1 combined in team order, for the group's share of the
 * n elements (dest disjoint from every PE's source). Where dest and src are 16-byte aligned
 * (the same on every PE: symmetric addresses, heaps mapped at aligned bases), the bulk moves
 * in 16-byte words, fold_unroll words per PE issued before any is combined, read through L2
 * (ld.cg: the sources were published by the team sync before, and L1 is not coherent); the
 * tail, or everything when unaligned, element by element. */
template <int OP, class G, class T>
__device__ __forceinline__ void fold_into(const G &g, const tdesc &d, T *dest, const T *src, size_t n, int upto) {
    unsigned r = g.thread_rank(), nt = g.num_threads();
    size_t done = 0;
    if (upto > 0 && 16 % sizeof(T) == 0 && ((uintptr_t)dest % 16 | (uintptr_t)src % 16) == 0) {
        constexpr int U = fold_unroll<G>::value;
        const size_t nv = n * sizeof(T) / 16;
        int4 *dv = (int4 *)dest;
        for (size_t base = r; base < nv; base += (size_t)U * nt) {
            int4 acc[U];
            const int4 *s0 = (const int4 *)peer_raw(src, d.world(0));
#pragma unroll
            for (int k = 0; k < U; k++) {
                size_t i = base + (size_t)k * nt;
                acc[k] = i < nv ? __ldcg(s0 + i) : make_int4(0, 0, 0, 0);
            }
#pragma unroll 1
            for (int p = 1; p < upto; p++) {
                const int4 *sp = (const int4 *)peer_raw(src, d.world(p));
                int4 v[U];
#pragma unroll
                for (int k = 0; k < U; k++) {
                    size_t i = base + (size_t)k * nt;
                    v[k] = i < nv ? __ldcg(sp + i) : make_int4(0, 0, 0, 0);
                }
#pragma unroll
                for (int k = 0; k < U; k++) acc[k] = combine16<OP, T>(acc[k], v[k]);
            }
#pragma unroll
            for (int k = 0; k < U; k++) {
                size_t i = base + (size_t)k * nt;
                if (i < nv) dv[i] = acc[k];
            }
        }
        done = nv * 16 / sizeof(T);
    }
    for (size_t e = done + r; e < n; e += nt) dest[e] = upto > 0 ? fold<OP, T>(d, src, e, upto) : (T)0;
}

/* Whether a reduction takes the push path of reduce: a lone thread (the plain device form,
 * latency-bound: issue 24, a one-thread 1 MiB int sum between two GPUs took 59 ms pulling), a
 * team of two, a reduction (not a scan), dest disjoint from the source. Every PE decides alike
 * (same group kind, team, mode, symmetric addresses). */
template <class G> __device__ __forceinline__ bool push_pair(const tdesc &d, int mode, bool overlap) {
    (void)d, (void)mode, (void)overlap;
    return false;
}
template <> __device__ __forceinline__ bool push_pair<solo>(const tdesc &d, int mode, bool overlap) {
    return d.size == 2 && mode == 0 && !overlap;
}

/* dest[e] = combine(src[e], dest[e]) (mine_first) or combine(dest[e], src[e]), one thread,
 * 16-byte words with 8 in flight where both are aligned, then element by element. */
template <int OP, class T> __device__ __forceinline__ void combine_pair(T *dest, const T *src, size_t n, bool mine_first) {
    size_t done = 0;
    if (16 % sizeof(T) == 0 && ((uintptr_t)dest % 16 | (uintptr_t)src % 16) == 0) {
        constexpr int U = 8;
        const size_t nv = n * sizeof(T) / 16;
        int4 *dv = (int4 *)dest;
        const int4 *sv = (const int4 *)src;
        size_t i = 0;
        for (; i + U <= nv; i += U) {
            int4 a[U], b[U];
#pragma unroll
            for (int k = 0; k < U; k++) a[k] = __ldcg(sv + i + k);
#pragma unroll
            for (int k = 0; k < U; k++) b[k] = __ldcg(dv + i + k);
#pragma unroll
            for (int k = 0; k < U; k++) dv[i + k] = mine_first ? combine16<OP, T>(a[k], b[k]) : combine16<OP, T>(b[k], a[k]);
        }
        for (; i < nv; i++) {
            int4 a = __ldcg(sv + i), b = __ldcg(dv + i);
            dv[i] = mine_first ? combine16<OP, T>(a, b) : combine16<OP, T>(b, a);
        }
        done = nv * 16 / sizeof(T);
    }
    for (size_t e = done; e < n; e++) {
        T a = src[e], b = *(volatile T *)(dest + e);
        dest[e] = mine_first ? combine<OP, T>(a, b) : combine<OP, T>(b, a);
    }
}

template <int OP, class G, class T>
__device__ __forceinline__ int reduce(const G &g, int t, T *dest, const T *src, size_t n, int mode, const char *fn) {
    if (team_remote(t))
        return coll_proxy(g, t, mode == 0 ? ISHMEMI_COLL_REDUCE : mode == 1 ? ISHMEMI_COLL_INSCAN : ISHMEMI_COLL_EXSCAN,
                          coll_class<T>(), sizeof(T), OP, dest, src, n, 0, fn);
    tdesc d = team_get(t, fn);
    check_sym(dest, n * sizeof(T), fn);
    check_sym(src, n * sizeof(T), fn);
    int upto = mode == 0 ? d.size : mode == 1 ? d.my_pe + 1 : d.my_pe;
    bool overlap = (const char *)dest < (const char *)(src + n) && (const char *)src < (const char *)(dest + n);
    if (n) check_team_reach(src, n * sizeof(T), d, upto, fn);
    sync_fenced(g, t, d, fn);
    unsigned r = g.thread_rank(), nt = g.num_threads();
    if (push_pair<G>(d, mode, overlap)) {
        /* Two PEs, one thread each: this PE's source is stored into the other PE's dest (stores
         * do not wait, where a pull waits for every remote load), the sync publishes it, and
         * each PE combines its own source with what arrived, in team order (PE 0's element
         * first), so both get bit-identical results. No sync after: the other PE touches
         * neither buffer of this PE again, and its next collective starts with a sync. */
        if (n) {
            int other = d.world(1 - d.my_pe);
            copy_lone(ptr(dest, n * sizeof(T), other, fn), (const char *)src, n * sizeof(T));
        }
        sync_fenced(g, t, d, fn);
        combine_pair<OP>(dest, src, n, d.my_pe == 0);
        return 0;
    }
    if (!overlap) {
        fold_into<OP>(g, d, dest, src, n, upto);
    } else {
        /* In place: each round computes up to K elements per thread into registers, waits for
         * every PE to finish reading them, then writes them (the next round reads other
         * elements, so it needs no second sync). */
        const int K = 4;
        size_t chunk = (size_t)K * nt;
        for (size_t base = 0; base < n; base += chunk) {
            T v[K];
#pragma unroll
            for (int k = 0; k < K; k++) {
                size_t e = base + (size_t)k * nt + r;
                if (e < n) v[k] = upto > 0 ? fold<OP, T>(d, src, e, upto) : (T)0;
            }
            sync_fenced(g, t, d, fn);
#pragma unroll
            for (int k = 0; k < K; k++) {
                size_t e = base + (size_t)k * nt + r;
                if (e < n) dest[e] = v[k];
            }
        }
    }
    sync_fenced(g, t, d, fn);
    return 0;
}

} // namespace ishmemi

#endif
