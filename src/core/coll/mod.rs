//! The host collectives over a team: its synchronization (a dissemination barrier on the team's
//! sync area) and the data algorithms, untyped except for the element type of reductions. The
//! checked entries (`core::coll_entry`, called by both doors, `api` and `proxy`) check the
//! arguments; this module moves the bytes.
//!
//! Files: `mod.rs` (the `Team`, its memory primitives and the team-area publication),
//! `agree.rs` (call agreement: records, signatures, the checks), `sync.rs` (the team sync and
//! the wait every poll goes through), `push.rs` (the push collectives), `tree.rs` (the
//! O(log n) tree collectives of large teams across nodes, with their own contract), `algo.rs`
//! (the collectives as the entries call them).
//!
//! Memory: everything goes through five primitives (`pull`, `push`, `get`, `view`, `put_local`)
//! and the sync-word accessors. On the CPU backend peers' heaps are mapped here, so they are
//! memcpy and atomics on mapped memory. On the CUDA backend the heap is GPU memory the host
//! cannot dereference: copies are `Gpu::copy` (cuMemcpy on unified addresses, complete at
//! return; peer heaps are mapped here by CUDA IPC), remote flag stores are the host AMO kernel
//! (a system-scope atomic store), flag polls and the values reductions combine are staged in
//! host memory by device-to-host copies. Symmetric globals stay host memory on both backends.
//!
//! Ordering contract:
//! - Team sync (`sync`): team PE i of n, epoch e = own EPOCH word + 1; for each round k with
//!   2^k < n it stores e with Release into round word k of team PE (i + 2^k) mod n, then waits
//!   with Acquire loads until its own round word k >= e. Each round word of a team has one
//!   writer, and values only grow, so consecutive syncs cannot mix. By the end of the sync every
//!   PE's stores before its arrival happen-before every load any PE makes after leaving (the
//!   release/acquire chains of the rounds reach every pair). On the GPU heap, data copies are
//!   complete (stream-synchronized) before the flag store is launched, and a PE reads data only
//!   after a poll copy saw the flag.
//! - Every synchronized collective (all but the push ones below) starts with a sync (sources
//!   are ready) and ends with one (no PE still reads this PE's memory, so the caller may reuse
//!   it, and the team's words may be reused or, after a destroy, zeroed for a new team). Algorithms that let a PE write where others read
//!   (in-place reductions and scans) put a sync between the last read and the first write.
//! - The sync count of a collective depends only on arguments every PE passes equally (sizes of
//!   broadcast, fcollect, alltoall, reductions; never collect's per-PE sizes).
//! - Push collectives (CPU backend, teams of 2..=`PUSH_PES`, at most ISHMEM_COLL_SMALL_MAX bytes
//!   per PE, or any size in a team across nodes of at most `NET_PUSH_PES`; the choice depends
//!   only on arguments every PE passes equally): no team sync. Each
//!   PE counts the collectives of each push class it starts on the team (own word, the same
//!   sequence on every member since all call the same collectives in the same order). A sender
//!   stores its data into a member's memory, then stores the count with Release into the
//!   member's flag word of (class, sender); a receiver waits with Acquire loads until the flag
//!   of each sender it needs is >= its own count. Flags are per sender, one writer each, values
//!   only grow: a sender one collective ahead writes a larger count after the data of the
//!   current one, never a value that hides a slower PE's missing arrival.
//!   Broadcasts of at most BCAST_SLOT bytes go through the member's broadcast slot of the
//!   count's parity instead of its dest: the root stores into it once the member announced
//!   that it entered count c-1 (so it is done reading the slot's count c-2), and the member
//!   copies the slot into its dest after the flag. fcollect and alltoall of at most one
//!   scratch slot take the reductions' all-send class below (scratch slots, no announcement,
//!   each PE copies the slots into its own dest), and so does collect (sizes, and the blocks
//!   that fit, through the slots; larger blocks pulled from their sources, then a sync).
//!   Into a user's dest (broadcast, fcollect, alltoall) a sender stores only after the member
//!   announced that it entered the collective of that count (its Release store into the
//!   sender's ready word (class, member), read with Acquire): programs commonly read a dest
//!   after the call and pass it to the next collective without a barrier, and the member's
//!   reads of the old contents happen before its announcement. Reductions and scans store
//!   into the member's scratch slot [count parity][sender] instead (dest is written only by
//!   its owner), with no announcement: every member sends in every one and waits for all, so
//!   no PE runs more than one collective of the class ahead, and a slot of parity p is
//!   rewritten (count c+2) only after its reader sent count c+1, which it does after reading
//!   the slot for count c. Source is only read before the sender returns. A PE that returns
//!   may still receive writes into its team area: a broadcast root does not wait for the
//!   announcements it does not need, so a slow member's may land after the root returned.
//!   Hence `ishmem_team_destroy` syncs the team first (`destroy_sync`), after which nobody
//!   writes into the area, and a later split may zero it for another team.
//!   Flag and announcement values are `count << 24 | signature` (`tag`): the signature is a
//!   hash of the call's kind and arguments (`signature`), so values still only grow, and a
//!   receiver that sees a value of its own count with another signature knows the sender is
//!   in a different call.
//!
//! Across nodes (a team with a member on another node, `spans`): the same algorithms, with
//! the accesses to such a member through the network (`net_member`): data stores are network
//! puts, pulls network gets, and flag stores (`store_at`) 8-byte puts (`Net::flag`), not
//! atomics. A flag put arrives after this PE's earlier puts to the same PE: the provider
//! orders writes to a target (FI_ORDER_WAW, as tcp;ofi_rxm does) or `Net::fence` after each
//! data put orders them, so "data, then flag" needs no completion in between, and the
//! receiver's Acquire poll of its own word, which the target's provider writes, sees the data
//! once it sees the flag (the provider writes both from one thread, in order). A flag is read
//! while the network may be writing it; its bytes land in address order, so a torn read shows
//! the old high bytes and is smaller than the value awaited (values only grow). Flags are not
//! flushed by quiet (`Fabric::put_flag`): their target sees them by waiting for them; the
//! barrier before a process leaves (`State::barrier`) sends its flags as atomic writes, which
//! quiet waits to be acknowledged (`sync_delivered`).
//! Flag-in-data (`ll.rs`, issue 31): to a member of another node, the all-send class and the
//! broadcast slots (ring or parity), where the block's message fits its slot and the provider
//! applies each write once (`Net::flag_in_data_ok`: not sockets), send data and flag as one write, every byte carrying a mark bit; the receiver takes it once
//! every byte shows its mark (no reliance on the byte order inside a write) and checks the tag
//! it carries as it would a flag's, and a check word (late second stores of a copy: `ll.rs`);
//! it decodes the data out of the slot, never in place. A slot must be zero before such a
//! message: the reader zeroes what it read (broadcast: after decoding; all-send class: the
//! bytes the previous count's messages used, at the start of the next call, `reduce_begin`)
//! before the announcement or message after which a sender may write them again. Where the
//! team's slot has a block across nodes (`State::bcast_rings`), the all-send class's scratch
//! slots lie there, 256 KiB instead of the team area's 6 KiB (`slot_at`).
//! A network put longer than the provider's inject size reads its source until it completes
//! locally, so push collectives wait for that before they return (`release_sources`); the
//! synchronized ones complete their puts in the sync's quiet. Waits poll local memory and
//! drive the provider (the progress hook of `wait`). Teams of at most `NET_PUSH_PES` PEs take the push
//! paths of broadcast, fcollect and alltoall at any size (`push_ok`). The sync is two-level
//! (`sync_nodes`): shared memory inside a node, dissemination among the nodes' leaders.
//! Teams across nodes of at least `ISHMEM_COLL_TREE_MIN` PEs take the tree forms of broadcast,
//! the reductions, the scans, fcollect and collect instead (`tree.rs`): binomial trees of flags and
//! pulls, O(log n) steps (their contract is in `tree.rs`).
//!
//! Call agreement (every PE of a team must call the same collectives in the same order with
//! the same sizes and root): at entry each PE records its call in its team area (`enter`:
//! count on the team, kind, arguments, function name). Three checks end the job with an error
//! naming both calls instead of a hang or mixed data: the push signatures above (free); after
//! the first sync of a synchronized collective, each PE compares the next team PE's record
//! (`check_neighbour`, one remote read); and a PE that waits long compares every member's
//! record of the same count (`check_agreement`, every ISHMEM_COLL_CHECK_MS, reported when seen
//! twice in a row). Device-side and on-queue collectives record nothing.

mod agree;
mod algo;
mod ll;
mod push;
mod sync;
mod tree;

use agree::*;
pub use agree::{Head, Watch};

use crate::core::team::{self, TeamDesc};
use crate::core::State;
use crate::ffi::fatal;
use crate::op::AmoOp;
use crate::transport::copy;
use crate::transport::cuda::Gpu;
use crate::wait;
use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU64, Ordering::*};

/// Elements combined per pass of a reduction (bytes): small enough to stay in cache.
const CHUNK_BYTES: usize = 64 << 10;
/// Across nodes, broadcasts of at most `RING_SLOT` bytes go through a ring of `RING` slots
/// over the two parity slots of the broadcast scratch (`broadcast_push`).
const RING: usize = 16;
const RING_SLOT: usize = 2 * team::BCAST_SLOT / RING;
/// Teams across nodes up to this size take the push paths of broadcast, fcollect and alltoall
/// at any size (`push_ok`); larger ones the scatter and pull algorithms, which spread the
/// root's sends.
const NET_PUSH_PES: usize = 4;
/// Byte slices of the scatter broadcast are multiples of this.
const SLICE_ALIGN: usize = 64;

/// A team as one PE takes part in a collective.
pub struct Team<'a> {
    pub st: &'a State,
    pub func: &'a str,
    pub d: TeamDesc,
    /// This PE's number in the team and the team's size.
    pub me: usize,
    pub n: usize,
    /// The team's handle (its slot).
    pub handle: usize,
    /// This PE's record of the collective it is in (`enter`) and its signature.
    entry: Cell<Head>,
    sig: Cell<u64>,
    /// Whether `entry` is written in the team area yet (`enter_lazy`).
    published: Cell<bool>,
    /// This PE's sync area (a heap address as mapped here).
    area: usize,
    gpu: Option<&'a Gpu>,
    /// Whether some member is on another node (reached through the network).
    spans: bool,
    /// Teams across nodes whose slot has a block of its own (`State::bcast_rings`): the address
    /// here of its broadcast ring, which the all-send scratch follows (0: none).
    ring: usize,
    /// Whether a network put since the last `release_sources` reads its source until it
    /// completes locally (longer than the provider's inject size).
    lent: Cell<bool>,
    /// Whether network flags must be known to have arrived at the next quiet (`sync_delivered`).
    flush_flags: Cell<bool>,
    /// The last push of the all-send class (`reduce_push`) went to members of other nodes
    /// through their nodes' first members: Some(whether this PE is its node's first member).
    relayed: Cell<Option<bool>>,
}

/// Which host collective a PE entered (`Team::enter`); the record names it in a mismatch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u64)]
pub enum Kind {
    /// team_sync, barrier_all, sync_all (`a`, `b` unused).
    Sync = 1,
    /// `a` bytes from team PE `b`.
    Broadcast,
    /// `a` bytes per PE.
    Fcollect,
    /// `a` bytes per pair of PEs.
    Alltoall,
    /// Sizes differ per PE by design (unused).
    Collect,
    /// `a` bytes; the function (type and operator) must match too.
    Reduce,
    /// `a` bytes; the function (type, inclusive or exclusive) must match too.
    Scan,
    /// `a` = start and stride (two 32-bit halves), `b` = size.
    Split,
    /// `a` = xrange.
    Split2d,
    /// A symmetric memory call (world team only, `core::agree`): `a` = size (free: heap
    /// offset), `b` = alignment (free: 0); the function must match too.
    Memory,
    /// `ishmem_team_destroy` (`a`, `b` unused).
    Destroy,
    /// `a` bytes per pair of PEs; `b` = the dest and source strides in elements (two 32-bit
    /// halves).
    Alltoalls,
}

impl Kind {
    fn from_word(w: u64) -> Option<Kind> {
        use Kind::*;
        [Sync, Broadcast, Fcollect, Alltoall, Collect, Reduce, Scan, Split, Split2d, Memory, Destroy, Alltoalls]
            .into_iter()
            .find(|k| *k as u64 == w & 0xff)
    }
}

/// `[start, start+len)` of the `r`-th of `parts` nearly equal slices of `n` items.
pub fn slice(n: usize, parts: usize, r: usize) -> (usize, usize) {
    let (q, rem) = (n / parts, n % parts);
    (r * q + r.min(rem), q + usize::from(r < rem))
}

/// Byte slice `r` of `parts` of `nb` bytes, in whole `SLICE_ALIGN` blocks (the last clamped).
fn byte_slice(nb: usize, parts: usize, r: usize) -> (usize, usize) {
    let (s, l) = slice(nb.div_ceil(SLICE_ALIGN), parts, r);
    let start = (s * SLICE_ALIGN).min(nb);
    (start, ((s + l) * SLICE_ALIGN).min(nb) - start)
}

/// The offset of each block when `sizes` are laid end to end, and the total (saturating, so
/// an overflow shows as usize::MAX).
fn prefix_offsets(sizes: &[usize]) -> (Vec<usize>, usize) {
    let mut offs = Vec::with_capacity(sizes.len());
    let mut total = 0usize;
    for &s in sizes {
        offs.push(total);
        total = total.saturating_add(s);
    }
    (offs, total)
}

/// A host buffer of `n` elements of `T` (zeroed: `T` is a plain C number type).
fn buffer<T: Copy + Default>(n: usize) -> Vec<T> {
    vec![T::default(); n]
}

impl<'a> Team<'a> {
    pub fn new(st: &'a State, func: &'a str, handle: usize, d: TeamDesc) -> Team<'a> {
        let area = st.heap.base + d.sync_offset as usize;
        let (entry, sig) = (Cell::new([0; HEAD_WORDS]), Cell::new(0));
        let published = Cell::new(false);
        let spans = st.net.is_some() && (0..d.n()).any(|i| st.off_node(d.world(i)));
        let ring = match st.bcast_rings.as_ref().and_then(|r| r.of(d.sync_offset as usize)) {
            Some(r) if spans => st.heap.base + r,
            _ => 0,
        };
        let (lent, flush_flags) = (Cell::new(false), Cell::new(false));
        Team {
            st,
            func,
            d,
            me: d.my_pe as usize,
            n: d.n(),
            handle,
            entry,
            sig,
            published,
            area,
            gpu: st.gpu_heap(area),
            spans,
            ring,
            lent,
            flush_flags,
            relayed: Cell::new(None),
        }
    }

    /// The world team.
    pub fn world(st: &'a State, func: &'a str) -> Team<'a> {
        Team::new(st, func, 0, st.world)
    }

    // ---------------------------------------------------------------- sync words

    fn word(&self, w: usize) -> usize {
        self.area + 8 * w
    }

    /// This PE's word `w` (Acquire).
    fn load(&self, w: usize) -> u64 {
        let a = self.word(w);
        match self.gpu {
            Some(g) => {
                let mut v = 0u64;
                // SAFETY: v is a local word; a is an aligned word of this PE's GPU heap (the sync
                // area).
                unsafe { g.copy(self.func, &mut v as *mut u64 as usize, a, 8) };
                v
            }
            // SAFETY: a is an aligned word of this PE's mapped heap (the sync area).
            None => unsafe { AtomicU64::from_ptr(a as *mut u64) }.load(Acquire),
        }
    }

    /// The network and PE number of team PE `i` when it is on another node.
    #[inline(always)]
    fn net_member(&self, i: usize) -> Option<(&'a crate::core::net::Net, usize)> {
        if !self.spans {
            return None;
        }
        let pe = self.d.world(i);
        match &self.st.net {
            Some(n) if self.st.off_node(pe) => Some((n, pe)),
            _ => None,
        }
    }

    /// Team PE `i`'s word `w`.
    fn load_at(&self, w: usize, i: usize) -> u64 {
        if let Some((n, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "team sync word", self.word(w), 8);
            return n.fetch(self.func, pe, at, 8);
        }
        let r = self.st.remote(self.func, "team sync word", self.word(w), 8, self.d.world(i));
        match self.gpu {
            Some(g) => {
                let mut v = 0u64;
                // SAFETY: v is a local word; r is the aligned word of PE i's heap as mapped here.
                unsafe { g.copy(self.func, &mut v as *mut u64 as usize, r, 8) };
                v
            }
            // SAFETY: r is the aligned word of PE i's heap as mapped here.
            None => unsafe { AtomicU64::from_ptr(r as *mut u64) }.load(Acquire),
        }
    }

    /// Stores `v` into team PE `i`'s word `w` (Release; on the GPU heap a system-scope atomic;
    /// on another node an 8-byte put, which arrives after this PE's earlier puts to that PE:
    /// see `push`).
    fn store_at(&self, w: usize, i: usize, v: u64) {
        if let Some((n, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "team sync word", self.word(w), 8);
            if self.flush_flags.get() {
                // An atomic write asks delivery completion: its acknowledgement leaves the
                // target when the value lands, before the target can see it and leave (a flush
                // read posted later could find the target gone). Ordered after this PE's
                // earlier flag puts to the word by the fence.
                n.fence(self.func);
                return n.set(self.func, pe, at, 8, v);
            }
            return n.flag(self.func, pe, at, v);
        }
        let r = self.st.remote(self.func, "team sync word", self.word(w), 8, self.d.world(i));
        match self.gpu {
            Some(g) => {
                // SAFETY: r is the aligned word of PE i's heap as mapped here, accessed atomically.
                unsafe { g.amo(self.func, r, 8, AmoOp::Set, v, 0) };
            }
            // SAFETY: r is the aligned word of PE i's heap as mapped here.
            None => unsafe { AtomicU64::from_ptr(r as *mut u64) }.store(v, Release),
        }
    }

    // ---------------------------------------------------------------- data primitives

    /// Team PE `i`'s copy of this PE's symmetric range, as mapped here.
    fn remote(&self, what: &str, sym: usize, n: usize, i: usize) -> usize {
        self.st.remote(self.func, what, sym, n, self.d.world(i))
    }

    /// Copies `n` bytes of team PE `i`'s copy of symmetric `src` to this PE's `dst`.
    ///
    /// # Safety
    /// `[dst, dst+n)` is symmetric memory of this PE, writable, and not accessed by this
    /// process or, through the network, by another PE during the call (it may be `src` itself
    /// when `i` is this PE). PE `i` does not write its `[src, src+n)` during the call (the
    /// range itself is checked here: `remote`).
    unsafe fn pull(&self, dst: usize, src: usize, i: usize, n: usize) {
        if n == 0 || (i == self.me && dst == src) {
            return;
        }
        if let Some((net, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "source", src, n);
            // SAFETY: dst..dst+n is this PE's symmetric memory (checked by the caller).
            return unsafe { net.get(self.func, pe, dst as *mut u8, n, at) };
        }
        let r = self.remote("source", src, n, i);
        match self.st.gpu_for(src, dst) {
            // SAFETY: r..r+n is mapped symmetric memory (checked); dst..dst+n is this PE's
            // symmetric memory (checked by the caller); the GPU copy allows overlap (i = me).
            Some(g) => unsafe { g.copy(self.func, dst, r, n) },
            // SAFETY: r..r+n is mapped symmetric memory (checked); dst..dst+n is this PE's
            // symmetric memory (checked by the caller); the copy allows overlap (i = me).
            None => unsafe { copy::copy(dst as *mut u8, r as *const u8, n, self.st.cfg.nt_copy_min) },
        }
    }

    /// Copies `n` host bytes at `src` to team PE `i`'s copy of symmetric `dst`.
    ///
    /// # Safety
    /// `src` is readable for `n` bytes until return. PE `i` does not access its
    /// `[dst, dst+n)` during the copy (the collective's protocol: it announced its entry, or
    /// the range is scratch it reads only after this PE's flag); the range itself is checked
    /// here (`remote`).
    unsafe fn push(&self, dst: usize, src: *const u8, i: usize, n: usize) {
        if n == 0 {
            return;
        }
        if let Some((net, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "dest", dst, n);
            // SAFETY: src is a host buffer of n bytes. `Net::put` returns with it free
            // (injected, copied into the registered put ring, or waited for), so nothing here
            // is lent to `release_sources`: marking it so made every push collective of more
            // than inject_size bytes wait for the put's local completion, which on
            // tcp;ofi_rxm is the target's acknowledgement (a round trip per call).
            unsafe { net.put_before_flag(self.func, pe, src, n, at) };
            // The flag that announces the data to PE i comes after it (nothing to do where the
            // provider orders writes to a target, as tcp;ofi_rxm does).
            net.fence(self.func);
            return;
        }
        let r = self.remote("dest", dst, n, i);
        match self.st.gpu_heap(dst) {
            // SAFETY: r..r+n is mapped symmetric memory (checked); src is a buffer of n bytes.
            Some(g) => unsafe { g.copy(self.func, r, src as usize, n) },
            // SAFETY: r..r+n is mapped symmetric memory (checked); src is a host buffer of n
            // bytes.
            None => unsafe { copy::copy(r as *mut u8, src, n, self.st.cfg.nt_copy_min) },
        }
    }

    /// Before a push collective returns: waits until the network puts that read a source of
    /// this call (the caller's, or a staging buffer) are done reading it.
    fn release_sources(&self) {
        if self.lent.replace(false) {
            if let Some(n) = &self.st.net {
                n.complete_local(self.func);
            }
        }
    }

    /// Copies `n` bytes of team PE `i`'s copy of symmetric `src` into host memory at `out`.
    ///
    /// # Safety
    /// `out` is writable for `n` bytes and not otherwise accessed during the call, and does
    /// not overlap the source; PE `i` does not write its `[src, src+n)` during the call (the
    /// range itself is checked here).
    unsafe fn get(&self, out: *mut u8, src: usize, i: usize, n: usize) {
        if n == 0 {
            return;
        }
        if let Some((net, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "source", src, n);
            // SAFETY: out is a host buffer of n bytes.
            return unsafe { net.get(self.func, pe, out, n, at) };
        }
        let r = self.remote("source", src, n, i);
        match self.st.gpu_heap(src) {
            // SAFETY: r..r+n is mapped symmetric memory (checked); out is a buffer of n bytes.
            Some(g) => unsafe { g.copy(self.func, out as usize, r, n) },
            // SAFETY: as in `push`, the other way round.
            None => unsafe { std::ptr::copy_nonoverlapping(r as *const u8, out, n) },
        }
    }

    /// Team PE `i`'s copy of symmetric `[src, src+n)` readable by the host: the mapped memory
    /// itself, or (GPU heap) a copy in `stage`.
    fn view<T: Copy + Default>(&self, src: usize, i: usize, n: usize, stage: &mut Vec<T>) -> *const T {
        let bytes = n * size_of::<T>();
        if let Some((net, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "source", src, bytes);
            stage.resize(n, T::default());
            // SAFETY: stage holds n T, bytes in all; any bits are a T (plain C numbers).
            unsafe { net.get(self.func, pe, stage.as_mut_ptr().cast(), bytes, at) };
            return stage.as_ptr();
        }
        let r = self.remote("source", src, bytes, i);
        match self.st.gpu_heap(src) {
            Some(g) => {
                stage.resize(n, T::default());
                // SAFETY: stage holds n T, bytes in all; r..r+bytes is mapped symmetric memory
                // (checked by `remote`); any bits are a T (plain C numbers).
                unsafe { g.copy(self.func, stage.as_mut_ptr() as usize, r, bytes) };
                stage.as_ptr()
            }
            None => r as *const T,
        }
    }

    /// Copies `n` host bytes at `src` to this PE's symmetric `dst`.
    ///
    /// # Safety
    /// As `push` with this PE as the target: `src` readable for `n` bytes, and no other PE
    /// accesses this PE's `[dst, dst+n)` during the copy.
    unsafe fn put_local(&self, dst: usize, src: *const u8, n: usize) {
        // SAFETY: the caller's contract is push's for team PE `me`.
        unsafe { self.push(dst, src, self.me, n) }
    }
}

/// Writes `bytes` at offset `off` of this PE's heap (based at `heap_base`; GPU memory when
/// `gpu` is given), complete at return.
///
/// # Safety
/// `heap_base` must be this PE's mapped heap (on `gpu` when given) and `[off, off+len)` a
/// range of the library's reserved part of it that no other PE accesses at this time.
unsafe fn write_heap(func: &str, heap_base: usize, gpu: Option<&Gpu>, off: usize, bytes: &[u8]) {
    let a = heap_base + off;
    match gpu {
        // SAFETY: as below; bytes is readable for its length.
        Some(g) => unsafe { g.copy(func, a, bytes.as_ptr() as usize, bytes.len()) },
        // SAFETY: the caller passes a range of the library's reserved part of this PE's mapped
        // heap (the sync area or a team area) that no other PE accesses at this time.
        None => unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a as *mut u8, bytes.len()) },
    }
}

/// Writes slot `d`'s descriptor into this PE's sync area of the slot (`ISHMEMI_TEAM_DESC_WORD`),
/// where device code looks teams up; a free slot's descriptor has size 0.
///
/// # Safety
/// `heap_base` must be this PE's mapped heap (on `gpu` when given), holding slot `d`'s sync
/// area, which no other PE accesses at this time.
pub unsafe fn publish_desc(func: &str, heap_base: usize, gpu: Option<&Gpu>, d: &TeamDesc) {
    // SAFETY: the descriptor word of slot d's area, per the caller.
    unsafe { write_heap(func, heap_base, gpu, d.sync_offset as usize + 8 * team::W_DESC, d.as_bytes()) };
}

/// `publish_desc` on this PE's heap: a slot released by a team destroy (only this PE reads
/// the slot's descriptor words).
pub fn publish_slot(st: &State, func: &str, d: &TeamDesc) {
    // SAFETY: st.heap is this PE's mapped heap (on st.gpu when given), holding every slot's
    // sync area, reserved at init; only this PE accesses the descriptor word.
    unsafe { publish_desc(func, st.heap.base, st.gpu.as_ref(), d) };
}

/// Init: records where the team areas are (GPU sync-area words `ISHMEMI_SYNC_TEAM_AREA` and
/// `ISHMEMI_SYNC_TEAMS_MAX`, CUDA backend only: the CPU heap has no sync area) and publishes
/// every slot's descriptor. The areas are zero (fresh heap file, or zeroed GPU memory).
///
/// # Safety
/// `heap_base` must be this PE's mapped heap (on `gpu` when given), with the pool's team areas
/// (and on the GPU the sync area) reserved in it, before any other PE may access them.
pub unsafe fn publish_pool(func: &str, heap_base: usize, gpu: Option<&Gpu>, pool: &team::TeamPool) {
    if gpu.is_some() {
        let words = [pool.slot(0).sync_offset, pool.max() as u64];
        // SAFETY: two u64 are 16 plain bytes.
        let b = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), 16) };
        // SAFETY: two words of the GPU heap's sync area, per the caller.
        unsafe { write_heap(func, heap_base, gpu, 8 * crate::transport::cuda::state::SYNC_TEAM_AREA, b) };
    }
    for t in pool.table().iter().filter(|d| d.is_used()) {
        // SAFETY: t is a slot of the pool, whose areas the caller reserved.
        unsafe { publish_desc(func, heap_base, gpu, t) };
    }
}

/// Zeroes this PE's sync area of team slot `d` and publishes its descriptor (a new team, or
/// a free slot when `d` is not used).
pub fn reset_area(st: &State, func: &str, d: &TeamDesc) {
    let a = st.heap.base + d.sync_offset as usize;
    match st.gpu_heap(a) {
        // SAFETY: as below, on the GPU heap.
        Some(g) => unsafe { g.memset(func, a, team::AREA_BYTES) },
        // SAFETY: the area lies in this PE's mapped heap (reserved at init); no PE uses it
        // (its slot is free on every PE of the new team until the split's last sync).
        None => unsafe { std::ptr::write_bytes(a as *mut u8, 0, team::AREA_BYTES) },
    }
    if let Some((r, len)) = st.bcast_rings.as_ref().and_then(|b| Some((b.of(d.sync_offset as usize)?, b.block()))) {
        // SAFETY: the slot's block (ring, scratch and relay flags) of len bytes, reserved at
        // init in this PE's (CPU) heap; no PE uses it, as the area above.
        unsafe { std::ptr::write_bytes((st.heap.base + r) as *mut u8, 0, len) };
    }
    // SAFETY: as above: st.heap is this PE's heap, holding d's area, which no PE uses yet.
    unsafe { publish_desc(func, st.heap.base, st.gpu_heap(a), d) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_offsets_saturate() {
        assert_eq!(prefix_offsets(&[3, 0, 5]), (vec![0, 3, 3], 8));
        assert_eq!(prefix_offsets(&[usize::MAX, 1]).1, usize::MAX);
    }

    #[test]
    fn slices_cover_exactly() {
        for n in 0..40 {
            for parts in 1..9 {
                let mut next = 0;
                for r in 0..parts {
                    let (s, l) = slice(n, parts, r);
                    assert_eq!(s, next);
                    next += l;
                    assert!(l <= n / parts + 1);
                }
                assert_eq!(next, n);
            }
        }
        for nb in [0, 1, 63, 64, 65, 1000, 4096 * 3 + 5] {
            for parts in 1..6 {
                let mut next = 0;
                for r in 0..parts {
                    let (s, l) = byte_slice(nb, parts, r);
                    assert_eq!(s, next, "nb {nb} parts {parts} r {r}");
                    assert!(s % SLICE_ALIGN == 0 || l == 0);
                    next += l;
                }
                assert_eq!(next, nb);
            }
        }
    }
}
