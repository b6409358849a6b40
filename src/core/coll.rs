//! The host collectives over a team: its synchronization (a dissemination barrier on the team's
//! sync area) and the data algorithms, untyped except for the element type of reductions. The
//! API layer (`api::coll`, `api::team`) checks the arguments; this module moves the bytes.
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
//! A network put longer than the provider's inject size reads its source until it completes
//! locally, so push collectives wait for that before they return (`release_sources`); the
//! synchronized ones complete their puts in the sync's quiet. Waits poll local memory and
//! drive the provider (`wait::NET_PROGRESS`). Teams of at most `NET_PUSH_PES` PEs take the push
//! paths of broadcast, fcollect and alltoall at any size (`push_ok`). The sync is two-level
//! (`sync_nodes`): shared memory inside a node, dissemination among the nodes' leaders.
//!
//! Call agreement (every PE of a team must call the same collectives in the same order with
//! the same sizes and root): at entry each PE records its call in its team area (`enter`:
//! count on the team, kind, arguments, function name). Three checks end the job with an error
//! naming both calls instead of a hang or mixed data: the push signatures above (free); after
//! the first sync of a synchronized collective, each PE compares the next team PE's record
//! (`check_neighbour`, one remote read); and a PE that waits long compares every member's
//! record of the same count (`check_agreement`, every ISHMEM_COLL_CHECK_MS, reported when seen
//! twice in a row). Device-side and on-queue collectives record nothing.

use crate::core::team::{self, TeamDesc};
use crate::core::{wait, State};
use crate::ffi::fatal;
use crate::transport::copy;
use crate::transport::cuda::{AmoOp, Gpu};
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
    /// Whether a network put since the last `release_sources` reads its source until it
    /// completes locally (longer than the provider's inject size).
    lent: Cell<bool>,
    /// Whether network flags must be known to have arrived at the next quiet (`sync_delivered`).
    flush_flags: Cell<bool>,
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
}

impl Kind {
    fn from_word(w: u64) -> Option<Kind> {
        use Kind::*;
        [Sync, Broadcast, Fcollect, Alltoall, Collect, Reduce, Scan, Split, Split2d, Memory, Destroy].into_iter().find(|k| *k as u64 == w & 0xff)
    }
}

/// The head of a PE's entry record (`team::W_ENTRY`): `count << 8 | kind`, two arguments, and
/// a hash of the function's name (`name_hash`); the name itself follows in the team area.
pub type Head = [u64; HEAD_WORDS];
const HEAD_WORDS: usize = 4;
/// Bytes of the name that follows the head (NUL-padded; longer names are cut).
const NAME_BYTES: usize = 8 * (team::ENTRY_WORDS - HEAD_WORDS);

/// One round of a fast 64-bit mix (multiply and xor-shift), for hashes compared only
/// between PEs of one job.
fn mix(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

/// A hash of a function's name (its bytes as little-endian words).
fn name_hash(name: &str) -> u64 {
    name_words(name).iter().fold(0x243f_6a88_85a3_08d3, |h, &w| mix(h, w))
}

/// Words of an entry record after the head: a function name, NUL-padded, cut to
/// `NAME_BYTES - 1` bytes.
type NameWords = [u64; team::ENTRY_WORDS - HEAD_WORDS];

/// `name` as the words of an entry record.
fn name_words(name: &str) -> NameWords {
    let mut words: NameWords = [0; team::ENTRY_WORDS - HEAD_WORDS];
    let name = name.as_bytes();
    for (w, c) in words.iter_mut().zip(name[..name.len().min(NAME_BYTES - 1)].chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_ne_bytes(b);
    }
    words
}

/// The call a whole entry record (head and name words) describes, as `describe_call`.
fn describe_record(e: &[u64; team::ENTRY_WORDS]) -> String {
    let bytes: Vec<u8> = e[HEAD_WORDS..].iter().flat_map(|w| w.to_ne_bytes()).take_while(|&b| b != 0).collect();
    let head: Head = e[..HEAD_WORDS].try_into().unwrap_or_default();
    describe_call(&head, &String::from_utf8_lossy(&bytes))
}

/// The words of a head that every PE of one correct call has alike: the kind, and by kind
/// the arguments (and for reductions and scans the function, which names type and operator).
fn essential(e: &Head) -> &[u64] {
    match Kind::from_word(e[0]) {
        Some(Kind::Sync | Kind::Collect | Kind::Destroy) => &[],
        Some(Kind::Broadcast | Kind::Split) => &e[1..3],
        Some(Kind::Fcollect | Kind::Alltoall | Kind::Split2d) => &e[1..2],
        Some(Kind::Reduce | Kind::Scan | Kind::Memory) => &e[1..4],
        None => &e[1..],
    }
}

/// Whether two PEs' heads of the same collective call can belong to one correct call.
fn heads_agree(x: &Head, y: &Head) -> bool {
    x[0] & 0xff == y[0] & 0xff && essential(x) == essential(y)
}

/// What the checks of one long wait remember (`Team::check_agreement`): the first sighting of
/// a disagreement (`suspect`, reported when seen again), and how many checks ran.
#[derive(Default)]
pub struct Watch {
    suspect: Option<(usize, Head)>,
    checks: u64,
}

/// Checks of one wait after which it warns where the team's PEs are (60 s at the default
/// ISHMEM_COLL_CHECK_MS of 100).
const HANG_WARN_CHECKS: u64 = 600;

/// Bits of a push flag that carry the call's signature (the count is above them).
const SIG_BITS: u32 = 24;
const SIG_MASK: u64 = (1 << SIG_BITS) - 1;

/// A 24-bit hash of the kind and `essential(e)`, carried in the push flags so that a receiver
/// notices a sender in a different call at no cost.
fn signature(e: &Head) -> u64 {
    let h = essential(e).iter().fold(mix(0, e[0] & 0xff), |h, &w| mix(h, w));
    (h ^ (h >> 24) ^ (h >> 48)) & SIG_MASK
}

/// The call a record describes, e.g. `ishmem_broadcastmem (64 bytes from root 0)`.
fn describe_call(e: &Head, name: &str) -> String {
    let args = match Kind::from_word(e[0]) {
        Some(Kind::Broadcast) => format!(" ({} bytes from root {})", e[1], e[2]),
        Some(Kind::Fcollect) => format!(" ({} bytes per PE)", e[1]),
        Some(Kind::Alltoall) => format!(" ({} bytes to each PE)", e[1]),
        Some(Kind::Reduce | Kind::Scan) => format!(" ({} bytes)", e[1]),
        Some(Kind::Split) => format!(" (start {}, stride {}, size {})", e[1] as u32 as i32, (e[1] >> 32) as u32 as i32, e[2]),
        Some(Kind::Split2d) => format!(" (xrange {})", e[1]),
        Some(Kind::Memory) if e[2] == 0 => format!(" (heap offset {:#x})", e[1]),
        Some(Kind::Memory) if e[2] == 1 => format!(" (size {})", e[1]),
        Some(Kind::Memory) => format!(" (alignment {}, size {})", e[2], e[1]),
        Some(Kind::Sync | Kind::Collect | Kind::Destroy) => String::new(),
        None => format!(" (unknown record {:#x})", e[0]),
    };
    format!("{name}{args}")
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
        let (lent, flush_flags) = (Cell::new(false), Cell::new(false));
        Team { st, func, d, me: d.my_pe as usize, n: d.n(), handle, entry, sig, published, area, gpu: st.gpu_heap(area), spans, lent, flush_flags }
    }

    /// The world team.
    pub fn world(st: &'a State, func: &'a str) -> Team<'a> {
        Team::new(st, func, 0, st.world)
    }

    // ---------------------------------------------------------------- call agreement

    /// Records that this PE enters the next host collective of the team (`kind` with
    /// arguments `a`, `b`, and the function's name): `entry` and `sig` here at once; the team
    /// area copy, which peers read, is written before this PE first syncs or waits in the call
    /// (`publish`, off the path of its first stores).
    pub fn enter(&self, kind: Kind, a: u64, b: u64) {
        let seq = self.st.next_team_seq(self.handle);
        self.record(seq, kind, a, b);
    }

    /// Identifies the function name (a static string: address and length; never 0).
    fn name_key(&self) -> usize {
        self.func.as_ptr() as usize ^ self.func.len().rotate_right(16)
    }

    /// Makes this PE's record of call `seq` (`entry`, with its `sig`).
    pub fn record(&self, seq: u64, kind: Kind, a: u64, b: u64) {
        // The name's hash, cached per team slot with the name it is of (set by `publish`: the
        // same function is usually called again).
        let h = if self.st.team_name[self.handle].load(Relaxed) == self.name_key() {
            self.st.team_name_hash[self.handle].load(Relaxed)
        } else {
            name_hash(self.func)
        };
        let e: Head = [seq << 8 | kind as u64, a, b, h];
        self.entry.set(e);
        self.sig.set(signature(&e));
        self.published.set(false);
    }

    /// Writes this PE's record into its team area: the head, and the name where it changed.
    fn publish(&self) {
        let e = self.entry.get();
        let at = self.word(team::W_ENTRY);
        let (name_at, hash_of) = (&self.st.team_name[self.handle], &self.st.team_name_hash[self.handle]);
        let same_name = name_at.load(Relaxed) == self.name_key();
        let mut rec = [0u64; team::ENTRY_WORDS];
        rec[..HEAD_WORDS].copy_from_slice(&e);
        if !same_name || self.gpu.is_some() {
            rec[HEAD_WORDS..].copy_from_slice(&name_words(self.func));
        }
        match self.gpu {
            Some(g) => g.copy(self.func, at, rec.as_ptr() as usize, size_of_val(&rec)),
            None => {
                let words = if same_name { HEAD_WORDS } else { team::ENTRY_WORDS };
                for (i, v) in rec.iter().enumerate().take(words).skip(1) {
                    // SAFETY: aligned words of this PE's team area, written only by this PE.
                    unsafe { AtomicU64::from_ptr((at + 8 * i) as *mut u64) }.store(*v, Relaxed);
                }
                // SAFETY: as above.
                unsafe { AtomicU64::from_ptr(at as *mut u64) }.store(e[0], Release);
            }
        }
        if !same_name {
            hash_of.store(e[3], Relaxed);
            name_at.store(self.name_key(), Relaxed);
        }
        self.published.set(true);
    }

    /// Copies `n` words of team PE `i`'s entry record into `out`.
    fn read_entry(&self, i: usize, out: &mut [u64]) {
        self.read_words(i, team::W_ENTRY, out)
    }

    /// Writes `vals` into this PE's team area from word `w` (Release; peers read them after
    /// a sync, `read_words`).
    pub fn write_own(&self, w: usize, vals: &[u64]) {
        let at = self.word(w);
        match self.gpu {
            Some(g) => g.copy(self.func, at, vals.as_ptr() as usize, size_of_val(vals)),
            None => {
                for (k, v) in vals.iter().enumerate() {
                    // SAFETY: aligned words of this PE's team area, written only by this PE.
                    unsafe { AtomicU64::from_ptr((at + 8 * k) as *mut u64) }.store(*v, Release);
                }
            }
        }
    }

    /// Copies words `w..w + out.len()` of team PE `i`'s team area into `out` (through the
    /// network for a PE of another node).
    pub fn read_words(&self, i: usize, w: usize, out: &mut [u64]) {
        if let Some((n, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "team area", self.word(w), 8 * out.len());
            // SAFETY: out is writable for its length.
            unsafe { n.get(self.func, pe, out.as_mut_ptr().cast(), 8 * out.len(), at) };
            return;
        }
        let r = self.st.remote(self.func, "team area", self.word(w), 8 * out.len(), self.d.world(i));
        match self.gpu {
            Some(g) => g.copy(self.func, out.as_mut_ptr() as usize, r, 8 * out.len()),
            None => {
                for (k, v) in out.iter_mut().enumerate() {
                    // SAFETY: aligned words of PE i's team area as mapped here.
                    *v = unsafe { AtomicU64::from_ptr((r + 8 * k) as *mut u64) }.load(Acquire);
                }
            }
        }
    }

    /// Team PE `i`'s record head.
    fn head_of(&self, i: usize) -> Head {
        let mut e = [0; HEAD_WORDS];
        self.read_entry(i, &mut e);
        e
    }

    /// Called now and then while this PE waits long in a collective: ends the job with an
    /// error when a team PE is in the same collective call (by count) with arguments that
    /// cannot belong to it, seen twice in a row (`suspect` keeps the first sighting, so a
    /// record being rewritten, or a peer just past the call, is not taken for a mismatch).
    pub fn check_agreement(&self, watch: &mut Watch) {
        if !self.published.get() {
            self.publish();
        }
        let own = self.entry.get();
        let seq = own[0] >> 8;
        if seq == 0 {
            return;
        }
        watch.checks += 1;
        if watch.checks == HANG_WARN_CHECKS {
            self.report_wait();
        }
        let suspect = &mut watch.suspect;
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            let theirs = self.head_of(j);
            if theirs[0] >> 8 != seq || heads_agree(&own, &theirs) {
                continue;
            }
            if *suspect == Some((j, theirs)) {
                self.mismatch(j);
            }
            *suspect = Some((j, theirs));
            return;
        }
        *suspect = None;
    }

    /// Team PE `i`'s last recorded call, described (`call 7, ishmem_team_sync`).
    fn describe_member(&self, i: usize) -> String {
        if i == self.me {
            let own = self.entry.get();
            return format!("call {}, {}", own[0] >> 8, describe_call(&own, self.func));
        }
        let mut e = [0u64; team::ENTRY_WORDS];
        self.read_entry(i, &mut e);
        if e[0] >> 8 == 0 {
            return "no host collective on this team yet".into();
        }
        format!("call {}, {}", e[0] >> 8, describe_record(&e))
    }

    /// A warning, once per long wait (`HANG_WARN_CHECKS` checks): where every team PE is, so
    /// that a program whose PEs call different numbers of collectives (which no count can
    /// match up) shows why it waits.
    #[cold]
    fn report_wait(&self) {
        const SHOW: usize = 16;
        let list: Vec<String> = (0..self.n.min(SHOW)).map(|i| format!("team PE {i}: {}", self.describe_member(i))).collect();
        let more = if self.n > SHOW { format!("; {} more PEs not shown", self.n - SHOW) } else { String::new() };
        crate::ffi::warn(
            self.func,
            &format!(
                "still waiting after {} ms in collective call {} on team {}; the team's PEs last recorded: {}{more} \
                 (a PE in a barrier records only once it waits long; every PE must call the same collectives in the same order)",
                HANG_WARN_CHECKS * self.st.cfg.coll_check_ms,
                self.entry.get()[0] >> 8,
                self.handle,
                list.join("; ")
            ),
        );
    }

    /// Ends the job naming this PE's call and team PE `j`'s (which cannot be one call).
    #[cold]
    fn mismatch(&self, j: usize) -> ! {
        let own = self.entry.get();
        // A peer writes its record before its first wait in the call, which comes right
        // after the stores that revealed the mismatch: give it a moment to appear.
        let t0 = std::time::Instant::now();
        let mut theirs = [0u64; team::ENTRY_WORDS];
        loop {
            self.read_entry(j, &mut theirs);
            if theirs[0] >> 8 >= own[0] >> 8 || t0.elapsed() > std::time::Duration::from_secs(1) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        fatal(
            self.func,
            &format!(
                "collective call {} on team {} differs between PEs: this PE (team PE {}) is in {}, team PE {j} in {}; \
                 every PE of a team must call the same collectives in the same order with the same sizes, root and split arguments",
                own[0] >> 8,
                self.handle,
                self.me,
                describe_call(&own, self.func),
                describe_record(&theirs)
            ),
        )
    }

    /// After the first sync of a synchronized collective, when every member has entered its
    /// call: the next team PE's call must agree with this PE's (one remote read of a cache
    /// line; around the ring every pair of neighbours is compared, so any disagreement is
    /// found by one PE).
    fn check_neighbour(&self) {
        if self.n < 2 {
            return;
        }
        let j = (self.me + 1) % self.n;
        if !heads_agree(&self.entry.get(), &self.head_of(j)) {
            self.mismatch(j);
        }
    }

    /// A push flag or announcement `got` from team PE `j` for push count `c`: when it is for
    /// call `c` (not yet a later one), its signature must be this PE's.
    #[inline]
    fn check_tag(&self, got: u64, c: u64, j: usize) {
        if got >> SIG_BITS == c && got & SIG_MASK != self.sig.get() {
            self.mismatch(j);
        }
    }

    /// Polls `done` with backoff; a long wait checks the team's call agreement.
    fn wait(&self, done: impl FnMut() -> bool) {
        if !self.published.get() && self.entry.get()[0] != 0 {
            self.publish();
        }
        let mut watch = Watch::default();
        let mut done = done;
        let mut seen = None;
        let period = self.st.cfg.coll_check_ms.clamp(1, crate::transport::shm::FINALIZING_CHECK_MS);
        let mut last = std::time::Instant::now();
        wait::until_checked(self.st.cfg.wait_spin, self.st.cfg.wait_sleep_max_us, period, &mut done, || {
            if last.elapsed() >= std::time::Duration::from_millis(self.st.cfg.coll_check_ms) {
                last = std::time::Instant::now();
                self.check_agreement(&mut watch);
            }
            // World team: a PE in finalize that never made this call (its world call count,
            // published at finalize, is below this call's) will never come: seen on two
            // checks, the job ends. (A member that made the call and then finalized is
            // fine: this PE may wait for a slower third. Split teams are not checked: a
            // team's count there can be zeroed by a later split.)
            let call = self.entry.get()[0] >> 8;
            let now = if self.handle == 0 && call > 0 {
                self.st.finalizing_peer(|pe| self.d.contains(pe)).filter(|&(_, _, made)| made < call)
            } else {
                None
            };
            if now.is_some() && now == seen {
                let (pe, pid, _) = now.unwrap_or_default();
                self.st.peer_finalizing(&format!("{} (collective call {call} on team {})", self.func, self.handle), pe, pid);
            }
            seen = now;
        });
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
                g.copy(self.func, &mut v as *mut u64 as usize, a, 8);
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
                g.copy(self.func, &mut v as *mut u64 as usize, r, 8);
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
                g.amo(self.func, r, 8, AmoOp::Set, v, 0);
            }
            // SAFETY: r is the aligned word of PE i's heap as mapped here.
            None => unsafe { AtomicU64::from_ptr(r as *mut u64) }.store(v, Release),
        }
    }

    /// Waits until this PE's word `w` is at least `v`.
    fn wait_ge(&self, w: usize, v: u64) {
        self.wait(|| self.load(w) >= v);
    }

    /// The collective part of `ishmem_team_destroy`: a recorded sync, after which no member
    /// writes into this PE's area of the team any more, so the slot can be freed and reused.
    /// The sync is what makes it so: a push broadcast's root returns before every member has
    /// announced its entry (`broadcast_push`), and a late announcement would otherwise land in
    /// the area after a later split gave the slot to another team and zeroed it. Each member
    /// announces before it syncs; across nodes, where flags are not flushed by quiet, the
    /// sync's quiet is made to deliver this PE's flags to every member of another node first.
    pub fn destroy_sync(&self) {
        self.enter(Kind::Destroy, 0, 0);
        if let Some(n) = self.st.net.as_ref().filter(|_| self.spans) {
            for i in 0..self.n {
                if self.net_member(i).is_some() {
                    n.flush_flags_to(self.d.world(i));
                }
            }
        }
        self.sync();
    }

    /// `ishmem_team_sync`: a recorded sync.
    pub fn team_sync(&self) {
        self.enter(Kind::Sync, 0, 0);
        self.sync();
    }

    /// `sync` whose network flags are known to have arrived once the next quiet returns (the
    /// last barrier before a process leaves the job: a flag still on its way must not be lost).
    pub fn sync_delivered(&self) {
        self.flush_flags.set(true);
        self.sync();
        self.flush_flags.set(false);
    }

    /// The team sync (see the ordering contract above).
    pub fn sync(&self) {
        // Members read this PE's record once the sync is done (`check_neighbour`).
        if !self.published.get() && self.entry.get()[0] != 0 {
            self.publish();
        }
        if self.n <= 1 {
            fence(SeqCst);
            return;
        }
        if self.spans {
            // Network puts made before the sync (pushes of an algorithm) complete first.
            if let Some(n) = &self.st.net {
                n.quiet(self.func);
            }
        }
        let e = self.load(team::W_EPOCH) + 1;
        self.store_at(team::W_EPOCH, self.me, e);
        // The mutant: the team's last PE leaves at once and the others sync without it.
        #[cfg(ishmem_mutation = "team_sync_skip")]
        if self.me == self.n - 1 {
            return;
        }
        #[cfg(ishmem_mutation = "team_sync_skip")]
        if !(self.spans && self.gpu.is_none()) {
            return self.disseminate(e, self.n - 1, self.me, |i| i);
        }
        if self.spans && self.gpu.is_none() {
            // (Its node-local arrivals are CPU atomics on host memory: not the GPU heap, whose
            // teams take the dissemination below.)
            return self.sync_nodes(e);
        }
        self.disseminate(e, self.n, self.me, |i| i);
    }

    /// The dissemination rounds of sync epoch `e` among `n` team PEs, of which this PE is the
    /// `me`-th and the `i`-th is team PE `pe(i)`.
    fn disseminate(&self, e: u64, n: usize, me: usize, pe: impl Fn(usize) -> usize) {
        let (mut k, mut dist) = (0, 1);
        while dist < n {
            self.store_at(team::W_ROUND + k, pe((me + dist) % n), e);
            self.wait_ge(team::W_ROUND + k, e);
            k += 1;
            dist <<= 1;
        }
    }

    /// The sync of a team across nodes, in two levels: the members of each node arrive at
    /// their leader (the node's lowest team PE) through shared memory (an atomic add to its
    /// `W_NODE_ARRIVE` word, Release); the leaders run the dissemination rounds among
    /// themselves over the network (flags as puts); each leader then releases its node
    /// (epoch `e` into its `W_NODE_RELEASE`, Release, which the members poll with Acquire).
    /// Network latency is paid log2(nodes) times instead of log2(PEs), and no flag of a PE
    /// that is not a leader crosses the network. The happens-before chains of the flat sync
    /// hold: arrival (Release) -> leader (Acquire) -> leaders' rounds -> release (Release) ->
    /// member (Acquire). The arrival count cannot run ahead: a member arrives for epoch e+1
    /// only after its leader released epoch e, which it did after counting every arrival of e.
    fn sync_nodes(&self, e: u64) {
        let node_of = |i: usize| self.st.nodes.node_of[self.d.world(i)];
        let mine = self.st.my_node;
        // The leaders in team order, this PE's leader, and its node's member count.
        let mut leaders: Vec<usize> = Vec::new();
        let mut seen: std::collections::HashSet<usize> = std::collections::HashSet::new();
        let (mut leader, mut members) = (usize::MAX, 0u64);
        let n = self.n;
        #[cfg(ishmem_mutation = "team_sync_skip")]
        let n = n - 1;
        for i in 0..n {
            let node = node_of(i);
            if seen.insert(node) {
                leaders.push(i);
            }
            if node == mine {
                leader = leader.min(i);
                members += 1;
            }
        }
        if leader != self.me {
            let a = self.remote("team sync word", self.word(team::W_NODE_ARRIVE), 8, leader);
            // SAFETY: a is the aligned arrival word of the leader's team area, mapped here (a
            // PE of this node).
            unsafe { AtomicU64::from_ptr(a as *mut u64) }.fetch_add(1, AcqRel);
            return self.wait(|| self.load_at(team::W_NODE_RELEASE, leader) >= e);
        }
        if members > 1 {
            self.wait_ge(team::W_NODE_ARRIVE, e * (members - 1));
        }
        let li = leaders.iter().position(|&l| l == self.me).unwrap_or(0);
        self.disseminate(e, leaders.len(), li, |k| leaders[k]);
        if members > 1 {
            self.store_at(team::W_NODE_RELEASE, self.me, e);
        }
    }

    // ---------------------------------------------------------------- push collectives

    /// Whether a collective of `nb` bytes per PE takes the push path (see the contract): the
    /// CPU backend (peers' memory is mapped here, or reached by network puts), 2..=PUSH_PES
    /// PEs, at most ISHMEM_COLL_SMALL_MAX bytes (not 0). A team across nodes of at most
    /// `NET_PUSH_PES` PEs pushes blocks of any size: the alternative, two syncs around pulls,
    /// costs two network latencies and a round trip more, where a push costs the member's
    /// announcement. Every PE decides alike.
    fn push_ok(&self, nb: usize) -> bool {
        let max = self.st.cfg.coll_small_max;
        self.gpu.is_none() && (2..=team::PUSH_PES).contains(&self.n) && max > 0 && (nb <= max || self.spans && self.n <= NET_PUSH_PES)
    }

    /// Stores `v` into this PE's own-use word `w` of the team area (read back by `load`).
    fn set_own(&self, w: usize, v: u64) {
        // SAFETY: an aligned word of this PE's team area, written only by this PE.
        unsafe { AtomicU64::from_ptr(self.word(w) as *mut u64) }.store(v, Relaxed);
    }

    /// Starts a push collective of `class`: its count on this PE (1, 2, ...).
    fn push_begin(&self, class: usize) -> u64 {
        let w = team::W_PUSH_COUNT + class;
        let c = self.load(w) + 1;
        // SAFETY: an aligned word of this PE's team area, written only by this PE.
        unsafe { AtomicU64::from_ptr(self.word(w) as *mut u64) }.store(c, Relaxed);
        c
    }

    /// The flag word of (`class`, sender `j`).
    fn flag_word(class: usize, j: usize) -> usize {
        team::W_PUSH_FLAGS + class * team::PUSH_PES + j
    }

    /// The value of push flags and announcements of count `c`: the count above the call's
    /// signature (values still only grow).
    fn tag(&self, c: u64) -> u64 {
        c << SIG_BITS | self.sig.get()
    }

    /// Waits until this PE's word `w`, written by team PE `j`, reaches count `c`, and checks
    /// its signature.
    fn wait_tag(&self, w: usize, c: u64, j: usize) {
        self.wait_tag_from(w, c, c, j);
    }

    /// Waits until word `w` (written by team PE `j`) reaches count `need`; when it already
    /// shows count `c` (this call), checks its signature.
    fn wait_tag_from(&self, w: usize, need: u64, c: u64, j: usize) {
        let mut got = 0;
        self.wait(|| {
            got = self.load(w);
            got >= need << SIG_BITS
        });
        self.check_tag(got, c, j);
    }

    /// Announces to team PE `j` that this PE entered collective `c` of `class` (its dest may be
    /// written now).
    fn post_ready(&self, class: usize, j: usize, c: u64) {
        self.store_at(team::W_PUSH_READY + class * team::PUSH_PES + self.me, j, self.tag(c));
    }

    /// Waits until team PE `j` entered collective `c` of `class`.
    fn wait_ready(&self, class: usize, j: usize, c: u64) {
        self.wait_tag(team::W_PUSH_READY + class * team::PUSH_PES + j, c, j);
    }

    /// Waits until the flag of every other member in `class` reaches count `c` (Acquire), and
    /// checks their signatures.
    fn wait_all(&self, class: usize, c: u64) {
        let mut j = 0;
        self.wait(|| {
            while j < self.n {
                if j != self.me {
                    let got = self.load(Self::flag_word(class, j));
                    if got < c << SIG_BITS {
                        return false;
                    }
                    self.check_tag(got, c, j);
                }
                j += 1;
            }
            true
        });
    }

    /// Bytes of one scratch slot of the reductions (a multiple of 64).
    fn slot_bytes(&self) -> usize {
        team::PUSH_SCRATCH_BYTES / (2 * self.n) / 64 * 64
    }

    /// Byte offset in the team area of scratch slot (parity of `c`, sender `j`).
    fn slot_at(&self, c: u64, j: usize) -> usize {
        self.area + team::PUSH_SCRATCH + ((c as usize & 1) * self.n + j) * self.slot_bytes()
    }

    /// Broadcast by the root's pushes; each member announces its entry to the root, waits for
    /// the root's flag of the count. Blocks up to `BCAST_SLOT` bytes go to the member's
    /// broadcast slot of the count's parity (not its dest), as soon as the member entered the
    /// previous broadcast (then it has read the slot's last contents, of count c-2), and the
    /// member copies the slot into its dest: in a run of broadcasts the root stays up to one
    /// call ahead, so a member waits for one transfer per call instead of a round trip.
    /// Larger blocks go straight into the member's `dst` once it entered this call.
    ///
    /// Across nodes, where the member's announcement takes a network latency, blocks of at
    /// most `RING_SLOT` bytes go to a ring of `RING` slots laid over the two parity slots
    /// instead (slot c mod RING): the root writes slot c once the member entered count
    /// c-RING+1 (so it has read the slot's last contents), and stays up to RING-1 calls ahead.
    /// A ring slot and a parity slot overlap, so each PE records the last count that used
    /// the ring and the last that used a parity slot (`W_BCAST_RING`, `W_BCAST_PAR`: every PE
    /// sees the same sequence of sizes), and the root also waits until the member entered the
    /// count after the last use of the other kind.
    fn broadcast_push(&self, dst: usize, src: usize, nb: usize, root: usize) {
        let c = self.push_begin(team::PUSH_BCAST);
        let fw = Self::flag_word(team::PUSH_BCAST, root);
        let base = self.area + team::BCAST_SCRATCH;
        let ring = self.spans && nb <= RING_SLOT;
        // The count each member must have entered before the root writes this call's slot.
        let (slot, need) = if ring {
            let need = c.saturating_sub(RING as u64 - 1).max(self.load(team::W_BCAST_PAR) + 1);
            self.set_own(team::W_BCAST_RING, c);
            (Some(base + (c as usize % RING) * RING_SLOT), need)
        } else if nb <= team::BCAST_SLOT {
            let need = (c - 1).max(if self.spans { self.load(team::W_BCAST_RING) + 1 } else { 0 });
            if self.spans {
                self.set_own(team::W_BCAST_PAR, c);
            }
            (Some(base + (c as usize & 1) * team::BCAST_SLOT), need)
        } else {
            (None, c)
        };
        if self.me == root {
            for k in 1..self.n {
                let j = (self.me + k) % self.n;
                let ready = team::W_PUSH_READY + team::PUSH_BCAST * team::PUSH_PES + j;
                match slot {
                    Some(slot) => {
                        self.wait_tag_from(ready, need, c, j);
                        // PE j's slot of this count (in its team area), which PE j last read
                        // for an earlier count before it entered count `need` (seen above) and
                        // reads again only after the flag below.
                        self.push(slot, src as *const u8, j, nb);
                    }
                    None => {
                        self.wait_tag(ready, c, j);
                        self.push(dst, src as *const u8, j, nb);
                    }
                }
                self.store_at(fw, j, self.tag(c));
            }
            if dst != src {
                self.put_local(dst, src as *const u8, nb);
            }
            self.release_sources();
        } else {
            if self.must_announce(root, c, need) {
                self.post_ready(team::PUSH_BCAST, root, c);
            }
            self.wait_tag(fw, c, root);
            if let Some(slot) = slot {
                // The slot holds the root's block of count c (its flag seen) until this PE
                // enters count c+1.
                self.put_local(dst, slot as *const u8, nb);
            }
        }
    }

    /// Whether a member announces its entry into broadcast `c` to `root`, whose wait for it
    /// needs count `need` (computed alike on every PE). On one node: always. Across nodes,
    /// each announcement is a network message, so a member announces only when the root
    /// needs it (its last announcement to this root is below `need`) or when its last one
    /// is RING/2 counts old: in a run of ring broadcasts from one root (need = c-RING+1)
    /// every RING/2 calls, which keeps the root from waiting, since every window of RING
    /// counts the root may wait in holds an announcement. No deadlock: the root of count c
    /// sent every earlier count, so the member reaches every count up to c and announces by
    /// then. The last announcement (root + 1, count) is in own-use words of the team area.
    fn must_announce(&self, root: usize, c: u64, need: u64) -> bool {
        if !self.spans {
            return true;
        }
        let last = if self.load(team::W_BCAST_ANN_ROOT) == root as u64 + 1 { self.load(team::W_BCAST_ANN_COUNT) } else { 0 };
        if last >= need && c - last < RING as u64 / 2 {
            return false;
        }
        self.set_own(team::W_BCAST_ANN_ROOT, root as u64 + 1);
        self.set_own(team::W_BCAST_ANN_COUNT, c);
        true
    }

    /// fcollect or alltoall (as `move_push`) of at most one scratch slot per PE, in the
    /// all-send class: the blocks go to the members' scratch with no announcement (`reduce_push`),
    /// then each PE copies every member's block from its scratch into its own `dst`.
    fn move_scratch(&self, dst: usize, src: usize, nb: usize, all: bool) {
        let block = |j: usize| if all { src + j * nb } else { src };
        let c = self.reduce_push(nb, block);
        for j in 0..self.n {
            let from = if j == self.me { block(j) } else { self.slot_at(c, j) };
            // from: this PE's checked source (disjoint from dst, checked), or PE j's slot of
            // count c, filled before its flag (seen by reduce_push) and not rewritten before
            // this PE's next flag of the class.
            self.put_local(dst + j * nb, from as *const u8, nb);
        }
    }

    /// fcollect (`all` false: block `me` of `src` to each PE) or alltoall (`all`: block j of
    /// `src` to PE j) by pushes: entry announced to every member; block `me` of each member's
    /// `dst` once it entered, then the flag; wait for every member's.
    fn move_push(&self, dst: usize, src: usize, nb: usize, all: bool) {
        let c = self.push_begin(team::PUSH_MOVE);
        let fw = Self::flag_word(team::PUSH_MOVE, self.me);
        let block = |j: usize| if all { src + j * nb } else { src };
        for k in 1..self.n {
            self.post_ready(team::PUSH_MOVE, (self.me + k) % self.n, c);
        }
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            self.wait_ready(team::PUSH_MOVE, j, c);
            self.push(dst + self.me * nb, block(j) as *const u8, j, nb);
            self.store_at(fw, j, self.tag(c));
        }
        self.put_local(dst + self.me * nb, block(self.me) as *const u8, nb);
        self.release_sources();
        self.wait_all(team::PUSH_MOVE, c);
    }

    /// The all-send class (reductions, scans, and fcollect and alltoall of at most one slot)
    /// by pushes: `nb` bytes at `block(j)` (this PE's checked source) into its slot of every
    /// other member j's scratch, then the flag; wait for every member's. Returns the count,
    /// which names the slots to read (`slot_at`).
    fn reduce_push(&self, nb: usize, block: impl Fn(usize) -> usize) -> u64 {
        let c = self.push_begin(team::PUSH_REDUCE);
        let fw = Self::flag_word(team::PUSH_REDUCE, self.me);
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            // PE j's scratch slot for this PE and parity (in its team area; nb <= slot_bytes),
            // which PE j does not read until it sees the flag below.
            self.push(self.slot_at(c, self.me), block(j) as *const u8, j, nb);
            self.store_at(fw, j, self.tag(c));
        }
        self.release_sources();
        self.wait_all(team::PUSH_REDUCE, c);
        c
    }

    /// Combines team PEs `0..upto`'s vectors of push count `c` (own: `src`, others: scratch) in
    /// team order and writes the result (zeros when `upto` is 0) to `dst`.
    fn combine_pushed<T: Copy + Default>(&self, dst: usize, src: usize, nelem: usize, c: u64, upto: usize, comb: fn(&mut [T], &[T])) {
        let mut buf = std::mem::MaybeUninit::<[u64; team::PUSH_SCRATCH_BYTES / 4 / 8]>::uninit();
        debug_assert!(nelem * size_of::<T>() <= size_of_val(&buf) && align_of::<T>() <= 8);
        // In place (dst = src), this PE's own vector is read after the first writes: combine in
        // a buffer. Otherwise straight into dst (this PE's memory, which no PE reads here).
        let at: *mut T = if dst == src { buf.as_mut_ptr().cast() } else { dst as *mut T };
        // SAFETY: at is dst (this PE's checked, aligned dest of nelem T) or buf (8-byte
        // aligned, at least nelem T: nb <= slot_bytes <= PUSH_SCRATCH_BYTES / 4 for 2+ PEs); T
        // is a plain C number type, valid for any bits, and every element is written below
        // before it is read (fill, or the copy of PE 0's vector).
        let acc = unsafe { std::slice::from_raw_parts_mut(at, nelem) };
        if upto == 0 {
            acc.fill(T::default());
        }
        for j in 0..upto {
            let p = if j == self.me { src } else { self.slot_at(c, j) } as *const T;
            // SAFETY: p is this PE's checked, aligned source, or the scratch slot PE j filled
            // with nelem T before its flag (seen by wait_all); slots are 64-byte aligned. No
            // PE writes either until this PE's next push of the class; neither overlaps acc
            // (in place, acc is buf).
            let v = unsafe { std::slice::from_raw_parts(p, nelem) };
            if j == 0 {
                acc.copy_from_slice(v);
            } else {
                comb(acc, v);
            }
        }
        if dst == src {
            self.put_local(dst, acc.as_ptr().cast(), nelem * size_of::<T>());
        }
    }

    /// Whether a reduction or scan of `nb` bytes takes the push path.
    fn reduce_push_ok(&self, nb: usize) -> bool {
        self.push_ok(nb) && nb <= self.slot_bytes()
    }

    // ---------------------------------------------------------------- data primitives

    /// Team PE `i`'s copy of this PE's symmetric range, as mapped here.
    fn remote(&self, what: &str, sym: usize, n: usize, i: usize) -> usize {
        self.st.remote(self.func, what, sym, n, self.d.world(i))
    }

    /// Copies `n` bytes of team PE `i`'s copy of symmetric `src` to this PE's `dst`.
    fn pull(&self, dst: usize, src: usize, i: usize, n: usize) {
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
            Some(g) => g.copy(self.func, dst, r, n),
            // SAFETY: r..r+n is mapped symmetric memory (checked); dst..dst+n is this PE's
            // symmetric memory (checked by the caller); the copy allows overlap (i = me).
            None => unsafe { copy::copy(dst as *mut u8, r as *const u8, n, self.st.cfg.nt_copy_min) },
        }
    }

    /// Copies `n` host bytes at `src` to team PE `i`'s copy of symmetric `dst`.
    fn push(&self, dst: usize, src: *const u8, i: usize, n: usize) {
        if n == 0 {
            return;
        }
        if let Some((net, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "dest", dst, n);
            // SAFETY: src is a host buffer of n bytes; a put longer than the inject size reads
            // it until it completes locally, which `release_sources` (or a sync's quiet) waits
            // for before the collective returns.
            unsafe { net.put(self.func, pe, src, n, at) };
            if n > net.inject_size() {
                self.lent.set(true);
            }
            // The flag that announces the data to PE i comes after it (nothing to do where the
            // provider orders writes to a target, as tcp;ofi_rxm does).
            net.fence(self.func);
            return;
        }
        let r = self.remote("dest", dst, n, i);
        match self.st.gpu_heap(dst) {
            Some(g) => g.copy(self.func, r, src as usize, n),
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
    fn get(&self, out: *mut u8, src: usize, i: usize, n: usize) {
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
            Some(g) => g.copy(self.func, out as usize, r, n),
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
                g.copy(self.func, stage.as_mut_ptr() as usize, r, bytes);
                stage.as_ptr()
            }
            None => r as *const T,
        }
    }

    /// Copies `n` host bytes at `src` to this PE's symmetric `dst`.
    fn put_local(&self, dst: usize, src: *const u8, n: usize) {
        self.push(dst, src, self.me, n)
    }

    // ---------------------------------------------------------------- algorithms

    /// Broadcast of `nb` bytes from team PE `root`'s `src` to every PE's `dst` (root's too).
    /// Small: every PE pulls the whole block from the root. Large (3+ PEs): each PE pulls one
    /// slice from the root, then the slices it lacks from their owners' `dst`.
    pub fn broadcast(&self, dst: usize, src: usize, nb: usize, root: usize) {
        self.enter(Kind::Broadcast, nb as u64, root as u64);
        if self.push_ok(nb) {
            return self.broadcast_push(dst, src, nb, root);
        }
        self.sync();
        self.check_neighbour();
        if self.n >= 3 && nb >= self.st.cfg.bcast_scatter_min && nb > 0 {
            if self.me == root {
                self.pull(dst, src, root, nb);
            } else {
                let (s, l) = byte_slice(nb, self.n, self.me);
                self.pull(dst + s, src + s, root, l);
            }
            self.sync();
            if self.me != root {
                for k in 1..self.n {
                    let j = (self.me + k) % self.n;
                    let (s, l) = byte_slice(nb, self.n, j);
                    if j == root {
                        self.pull(dst + s, src + s, root, l);
                    } else {
                        self.pull(dst + s, dst + s, j, l);
                    }
                }
            }
        } else {
            self.pull(dst, src, root, nb);
        }
        self.sync();
    }

    /// fcollect: block j of `dst` (`nb` bytes each) is team PE j's `src`.
    pub fn fcollect(&self, dst: usize, src: usize, nb: usize) {
        self.enter(Kind::Fcollect, nb as u64, 0);
        self.exchange(dst, src, nb, false);
    }

    /// alltoall: block j of this PE's `dst` is block `me` of team PE j's `src`.
    pub fn alltoall(&self, dst: usize, src: usize, nb: usize) {
        self.enter(Kind::Alltoall, nb as u64, 0);
        self.exchange(dst, src, nb, true);
    }

    /// fcollect (`all` false) or alltoall (`all`): the push paths for small blocks, else each
    /// PE pulls its blocks, in an order rotated by its number so that no PE is read by all at
    /// once, between two syncs.
    fn exchange(&self, dst: usize, src: usize, nb: usize, all: bool) {
        if self.reduce_push_ok(nb) {
            return self.move_scratch(dst, src, nb, all);
        }
        if self.push_ok(nb) {
            return self.move_push(dst, src, nb, all);
        }
        self.sync();
        self.check_neighbour();
        let from = if all { src + self.me * nb } else { src };
        for k in 0..self.n {
            let j = (self.me + k) % self.n;
            self.pull(dst + j * nb, from, j, nb);
        }
        self.sync();
    }

    /// collect: the PEs' `src` blocks (`nb` bytes here, each PE its own size) concatenated in
    /// team order. Each PE publishes its size in its VALUE word; `check_dest(total)` validates
    /// the destination once the total is known. Returns the total bytes.
    pub fn collect(&self, dst: usize, src: usize, nb: usize, check_dest: impl Fn(usize)) -> usize {
        self.enter(Kind::Collect, 0, 0);
        // Sizes differ per PE, so the choice depends on the team alone.
        if self.push_ok(0) && self.slot_bytes() >= 64 {
            return self.collect_push(dst, src, nb, check_dest);
        }
        self.store_at(team::W_VALUE, self.me, nb as u64);
        self.sync();
        self.check_neighbour();
        let sizes: Vec<usize> = (0..self.n).map(|i| self.load_at(team::W_VALUE, i) as usize).collect();
        let (offs, total) = prefix_offsets(&sizes);
        check_dest(total);
        for k in 0..self.n {
            let j = (self.me + k) % self.n;
            self.pull(dst + offs[j], src, j, sizes[j]);
        }
        self.sync();
        total
    }

    /// collect on the push path, in the all-send class: each PE stores its size, and its block
    /// when it fits (at most slot_bytes - 8), into its scratch slot of every other member, then
    /// the flag; after every member's flag each PE knows all sizes, checks its dest, and copies
    /// the blocks that came inline. Blocks that did not fit are pulled from their owners'
    /// sources, and then (every PE sees the same sizes, so all do it) a team sync keeps each
    /// source alive until nobody reads it.
    fn collect_push(&self, dst: usize, src: usize, nb: usize, check_dest: impl Fn(usize)) -> usize {
        let cap = self.slot_bytes() - 8;
        let c = self.push_begin(team::PUSH_REDUCE);
        let fw = Self::flag_word(team::PUSH_REDUCE, self.me);
        let inline = if nb <= cap { nb } else { 0 };
        // What goes to members on other nodes: the size, then the inline block, in one put.
        let mut msg: Vec<u8> = Vec::new();
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            if self.net_member(j).is_some() {
                if msg.is_empty() {
                    msg.extend_from_slice(&(nb as u64).to_ne_bytes());
                    // SAFETY: src..src+nb is this PE's checked source (inline <= nb).
                    msg.extend_from_slice(unsafe { std::slice::from_raw_parts(src as *const u8, inline) });
                }
                // PE j's scratch slot for this PE and parity, read only after the flag below.
                self.push(self.slot_at(c, self.me), msg.as_ptr(), j, msg.len());
                self.store_at(fw, j, self.tag(c));
                continue;
            }
            let r = self.st.remote(self.func, "team scratch", self.slot_at(c, self.me), 8 + inline, self.d.world(j));
            // SAFETY: r..r+8+inline is PE j's scratch slot for this PE and parity (mapped, in its
            // team area, 8 + inline <= slot_bytes, 64-byte aligned), which PE j reads only after
            // the flag below; src..src+nb is this PE's checked source.
            unsafe {
                (r as *mut u64).write(nb as u64);
                std::ptr::copy_nonoverlapping(src as *const u8, (r + 8) as *mut u8, inline);
            }
            self.store_at(fw, j, self.tag(c));
        }
        // msg lives until its puts no longer read it.
        self.release_sources();
        drop(msg);
        self.wait_all(team::PUSH_REDUCE, c);
        let sizes: Vec<usize> = (0..self.n)
            .map(|j| {
                if j == self.me {
                    nb
                } else {
                    // SAFETY: the first word of PE j's slot of count c, written before its flag
                    // (seen by wait_all).
                    unsafe { (self.slot_at(c, j) as *const u64).read() as usize }
                }
            })
            .collect();
        let (offs, total) = prefix_offsets(&sizes);
        check_dest(total);
        for k in 0..self.n {
            let j = (self.me + k) % self.n;
            if j == self.me {
                self.put_local(dst + offs[j], src as *const u8, nb);
            } else if sizes[j] <= cap {
                // The slot of count c holds PE j's block until this PE's next flag of the class.
                self.put_local(dst + offs[j], (self.slot_at(c, j) + 8) as *const u8, sizes[j]);
            } else {
                self.pull(dst + offs[j], src, j, sizes[j]);
            }
        }
        // Every PE computes the same `sizes`, so all or none sync here.
        if sizes.iter().any(|&s| s > cap) {
            self.sync();
        }
        total
    }

    /// Combines elements `[first, first+len)` of every team PE's `src`, in team order, into
    /// `acc` (`len` elements).
    fn combine_into<T: Copy + Default>(&self, acc: &mut [T], src: usize, first: usize, upto: usize, comb: fn(&mut [T], &[T])) {
        let es = size_of::<T>();
        let len = acc.len();
        let at = src + first * es;
        self.get(acc.as_mut_ptr().cast(), at, 0, std::mem::size_of_val(acc));
        let mut stage: Vec<T> = Vec::new();
        for j in 1..upto {
            let p = self.view(at, j, len, &mut stage);
            // SAFETY: p points to len elements of T (mapped symmetric memory that no PE writes
            // during this phase of the collective, or the staging copy), aligned (the caller
            // checked `src`'s alignment; heaps and staging buffers are 8-byte aligned).
            let other = unsafe { std::slice::from_raw_parts(p, len) };
            comb(acc, other);
        }
    }

    /// Reduction of `nelem` elements over the team into every PE's `dst` (`dst` may be `src`).
    /// Small: every PE combines all PEs' vectors into a host buffer, a sync, then writes its
    /// `dst`. Large (3+ PEs, at least ISHMEM_REDUCE_SCATTER_MIN bytes): PE r combines slice r
    /// into its `dst`, a sync, then each PE pulls the other slices from their owners' `dst`.
    /// Both combine in team order, so every PE gets the same bits (floating point included).
    pub fn reduce<T: Copy + Default>(&self, dst: usize, src: usize, nelem: usize, comb: fn(&mut [T], &[T])) {
        let es = size_of::<T>();
        let nb = nelem * es;
        self.enter(Kind::Reduce, nb as u64, 0);
        if self.reduce_push_ok(nb) {
            let c = self.reduce_push(nb, |_| src);
            return self.combine_pushed(dst, src, nelem, c, self.n, comb);
        }
        self.sync();
        self.check_neighbour();
        if self.n >= 3 && nb >= self.st.cfg.reduce_scatter_min && nelem >= self.n {
            let (s0, len) = slice(nelem, self.n, self.me);
            let chunk = (CHUNK_BYTES / es).max(1);
            let mut acc: Vec<T> = Vec::new();
            let mut c = 0;
            while c < len {
                let l = chunk.min(len - c);
                acc.resize(l, T::default());
                self.combine_into(&mut acc, src, s0 + c, self.n, comb);
                self.put_local(dst + (s0 + c) * es, acc.as_ptr().cast(), l * es);
                c += l;
            }
            self.sync();
            for k in 1..self.n {
                let j = (self.me + k) % self.n;
                let (s, l) = slice(nelem, self.n, j);
                self.pull(dst + s * es, dst + s * es, j, l * es);
            }
        } else {
            let mut acc: Vec<T> = buffer(nelem);
            let chunk = (CHUNK_BYTES / es).max(1);
            for (i, part) in acc.chunks_mut(chunk).enumerate() {
                self.combine_into(part, src, i * chunk, self.n, comb);
            }
            self.sync();
            self.put_local(dst, acc.as_ptr().cast(), nb);
            return;
        }
        self.sync();
    }

    /// Prefix sums over the team: PE i's `dst` = combination of PEs 0..=i (`inclusive`) or
    /// 0..i (PE 0: zeros) of `src`. Small: each PE reads the PEs below it into a host buffer,
    /// a sync, then writes its `dst`. Large (3+ PEs, at least ISHMEM_REDUCE_SCATTER_MIN bytes):
    /// PE r runs the scan of slice r over all PEs and writes each PE's result slice into that
    /// PE's `dst` (reading each source chunk before writing the same PE's result).
    pub fn scan<T: Copy + Default>(&self, dst: usize, src: usize, nelem: usize, inclusive: bool, comb: fn(&mut [T], &[T])) {
        let es = size_of::<T>();
        let nb = nelem * es;
        self.enter(Kind::Scan, nb as u64, 0);
        if self.reduce_push_ok(nb) {
            let c = self.reduce_push(nb, |_| src);
            let upto = if inclusive { self.me + 1 } else { self.me };
            return self.combine_pushed(dst, src, nelem, c, upto, comb);
        }
        self.sync();
        self.check_neighbour();
        if self.n >= 3 && nb >= self.st.cfg.reduce_scatter_min && nelem >= self.n {
            let (s0, len) = slice(nelem, self.n, self.me);
            let chunk = (CHUNK_BYTES / es).max(1);
            let (mut acc, mut cur): (Vec<T>, Vec<T>) = (Vec::new(), Vec::new());
            let mut c = 0;
            while c < len {
                let l = chunk.min(len - c);
                let at = (s0 + c) * es;
                acc.clear();
                acc.resize(l, T::default());
                cur.resize(l, T::default());
                for j in 0..self.n {
                    // PE j's source chunk is read before its result overwrites it (in place).
                    let need = inclusive || j + 1 < self.n;
                    if need {
                        self.get(cur.as_mut_ptr().cast(), src + at, j, l * es);
                    }
                    if !inclusive {
                        self.push(dst + at, acc.as_ptr().cast(), j, l * es);
                    }
                    if need {
                        if j == 0 {
                            acc.copy_from_slice(&cur);
                        } else {
                            comb(&mut acc, &cur);
                        }
                    }
                    if inclusive {
                        self.push(dst + at, acc.as_ptr().cast(), j, l * es);
                    }
                }
                c += l;
            }
        } else {
            let upto = if inclusive { self.me + 1 } else { self.me };
            let mut acc: Vec<T> = buffer(nelem);
            if upto > 0 {
                let chunk = (CHUNK_BYTES / es).max(1);
                for (i, part) in acc.chunks_mut(chunk).enumerate() {
                    self.combine_into(part, src, i * chunk, upto, comb);
                }
            }
            self.sync();
            self.put_local(dst, acc.as_ptr().cast(), nb);
            return;
        }
        self.sync();
    }

    // ---------------------------------------------------------------- team creation

    /// Every team PE's free-slot bitmap (`mine` is this PE's): published in the SPLIT words of
    /// this (parent) team's sync area, read after a sync, followed by a sync so that the words
    /// can be reused.
    pub fn gather_bitmaps(&self, mine: &[u64; team::SPLIT_WORDS], words: usize) -> Vec<[u64; team::SPLIT_WORDS]> {
        let at = self.word(team::W_SPLIT);
        self.put_local(at, mine.as_ptr().cast(), words * 8);
        self.sync();
        self.check_neighbour();
        let all = (0..self.n)
            .map(|i| {
                let mut b = [0u64; team::SPLIT_WORDS];
                self.get(b.as_mut_ptr().cast(), at, i, words * 8);
                b
            })
            .collect();
        self.sync();
        all
    }
}

/// Writes `bytes` at offset `off` of this PE's heap (based at `heap_base`; GPU memory when
/// `gpu` is given), complete at return.
fn write_heap(func: &str, heap_base: usize, gpu: Option<&Gpu>, off: usize, bytes: &[u8]) {
    let a = heap_base + off;
    match gpu {
        Some(g) => g.copy(func, a, bytes.as_ptr() as usize, bytes.len()),
        // SAFETY: the caller passes a range of the library's reserved part of this PE's mapped
        // heap (the sync area or a team area) that no other PE accesses at this time.
        None => unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a as *mut u8, bytes.len()) },
    }
}

/// Writes slot `d`'s descriptor into this PE's sync area of the slot (`ISHMEMI_TEAM_DESC_WORD`),
/// where device code looks teams up; a free slot's descriptor has size 0.
pub fn publish_desc(func: &str, heap_base: usize, gpu: Option<&Gpu>, d: &TeamDesc) {
    write_heap(func, heap_base, gpu, d.sync_offset as usize + 8 * team::W_DESC, d.as_bytes());
}

/// Init: records where the team areas are (GPU sync-area words `ISHMEMI_SYNC_TEAM_AREA` and
/// `ISHMEMI_SYNC_TEAMS_MAX`, CUDA backend only: the CPU heap has no sync area) and publishes
/// every slot's descriptor. The areas are zero (fresh heap file, or zeroed GPU memory).
pub fn publish_pool(func: &str, heap_base: usize, gpu: Option<&Gpu>, pool: &team::TeamPool) {
    if gpu.is_some() {
        let words = [pool.slot(0).sync_offset, pool.max() as u64];
        // SAFETY: two u64 are 16 plain bytes.
        let b = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), 16) };
        write_heap(func, heap_base, gpu, 8 * crate::transport::cuda::state::SYNC_TEAM_AREA, b);
    }
    for t in pool.table().iter().filter(|d| d.is_used()) {
        publish_desc(func, heap_base, gpu, t);
    }
}

/// Zeroes this PE's sync area of team slot `d` and publishes its descriptor (a new team, or
/// a free slot when `d` is not used).
pub fn reset_area(st: &State, func: &str, d: &TeamDesc) {
    let a = st.heap.base + d.sync_offset as usize;
    match st.gpu_heap(a) {
        Some(g) => g.memset(func, a, team::AREA_BYTES),
        // SAFETY: the area lies in this PE's mapped heap (reserved at init); no PE uses it
        // (its slot is free on every PE of the new team until the split's last sync).
        None => unsafe { std::ptr::write_bytes(a as *mut u8, 0, team::AREA_BYTES) },
    }
    publish_desc(func, st.heap.base, st.gpu_heap(a), d);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, kind: Kind, a: u64, b: u64, func: &str) -> Head {
        [seq << 8 | kind as u64, a, b, name_hash(func)]
    }

    #[test]
    fn call_agreement_compares_what_must_agree() {
        let bc = |n, root| head(3, Kind::Broadcast, n, root, "ishmem_broadcastmem");
        assert!(heads_agree(&bc(64, 0), &bc(64, 0)));
        assert!(!heads_agree(&bc(64, 0), &bc(32, 0)));
        assert!(!heads_agree(&bc(64, 0), &bc(64, 1)));
        // the typed and mem spellings of one broadcast agree; the count is not compared
        assert!(heads_agree(&bc(64, 0), &head(9, Kind::Broadcast, 64, 0, "ishmem_long_broadcast")));
        // reductions: the function (type and operator) too
        let int_sum = head(1, Kind::Reduce, 16, 0, "ishmem_int_sum_reduce");
        assert!(heads_agree(&int_sum, &head(1, Kind::Reduce, 16, 0, "ishmem_int_sum_reduce")));
        assert!(!heads_agree(&int_sum, &head(1, Kind::Reduce, 16, 0, "ishmem_float_sum_reduce")));
        assert!(!heads_agree(&int_sum, &head(1, Kind::Scan, 16, 0, "ishmem_int_sum_reduce")));
        // syncs of any spelling agree, collects whatever their sizes, but not with each other
        assert!(heads_agree(&head(1, Kind::Sync, 0, 0, "ishmem_barrier_all"), &head(1, Kind::Sync, 0, 0, "ishmem_team_sync")));
        assert!(heads_agree(&head(1, Kind::Collect, 5, 0, "a"), &head(1, Kind::Collect, 7, 0, "a")));
        assert!(!heads_agree(&head(1, Kind::Sync, 0, 0, "a"), &head(1, Kind::Collect, 0, 0, "a")));
    }

    #[test]
    fn signatures_follow_agreement_and_fit_their_bits() {
        let calls = [
            head(1, Kind::Broadcast, 64, 0, "f"),
            head(1, Kind::Broadcast, 65, 0, "f"),
            head(1, Kind::Broadcast, 64, 1, "f"),
            head(1, Kind::Fcollect, 64, 0, "f"),
            head(1, Kind::Alltoall, 64, 0, "f"),
            head(1, Kind::Reduce, 64, 0, "ishmem_int_sum_reduce"),
            head(1, Kind::Reduce, 64, 0, "ishmem_int_max_reduce"),
            head(1, Kind::Scan, 64, 0, "ishmem_int_sum_reduce"),
            head(1, Kind::Sync, 0, 0, "f"),
            head(1, Kind::Collect, 0, 0, "f"),
        ];
        for (i, x) in calls.iter().enumerate() {
            assert!(signature(x) <= SIG_MASK);
            for y in &calls[i + 1..] {
                assert_ne!(signature(x), signature(y), "{x:?} {y:?}");
            }
        }
        // agreeing heads have equal signatures (counts and unused words do not enter)
        assert_eq!(signature(&head(1, Kind::Fcollect, 8, 0, "a")), signature(&head(7, Kind::Fcollect, 8, 99, "b")));
    }

    #[test]
    fn calls_are_described_with_their_arguments() {
        assert_eq!(describe_call(&head(1, Kind::Broadcast, 64, 2, ""), "ishmem_broadcastmem"), "ishmem_broadcastmem (64 bytes from root 2)");
        assert_eq!(describe_call(&head(1, Kind::Fcollect, 8, 0, ""), "f"), "f (8 bytes per PE)");
        let split = head(1, Kind::Split, (-2i32 as u32 as u64) << 32 | 1, 3, "");
        assert_eq!(describe_call(&split, "s"), "s (start 1, stride -2, size 3)");
        assert_eq!(describe_call(&head(1, Kind::Sync, 0, 0, ""), "ishmem_barrier_all"), "ishmem_barrier_all");
    }

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
