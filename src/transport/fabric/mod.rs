//! The libfabric transport object: one [`Fabric`] owns a fabric, a domain, one RDM endpoint,
//! its address vector (FI_AV_TABLE: the fi_addr of PE `i` is the `i`-th inserted name), a CQ
//! and completion counters (gets and fetching AMOs on `FI_READ`; puts and non-fetching AMOs on
//! `FI_WRITE` except where [`Fabric::writes_in_cq`] counts them without one), the memory
//! registrations of the symmetric regions and the peers' keys
//! for them. It knows PE numbers only as indices into those tables; it knows nothing of the
//! heap, teams or bootstrap (the core publishes [`Fabric::name`] and each [`Mr`] and feeds
//! the peers' back through [`Fabric::insert_peers`] and [`Fabric::set_remote`]).
//!
//! Decisions (see also the report on the `ofi` branch):
//! - **Remote addressing**: RMA and AMO calls take `(pe, Remote { region, offset })`. A peer
//!   publishes `(key, addr)` of each region ([`Mr`]: `addr` is the region's virtual address);
//!   the address put on the wire is `addr + offset` where the provider has FI_MR_VIRT_ADDR,
//!   else `offset` (the registration's own offset 0 is the region start).
//! - **Keys**: the provider's (FI_MR_PROV_KEY) or ours: a fresh random key per registration,
//!   as wide as the provider's `mr_key_size` ([`keys`]), so that only holders of the keys the
//!   job exchanged reach its memory (docs/SECURITY.md); FI_MR_ENDPOINT registrations are bound
//!   to the endpoint and enabled.
//! - **Completion**: [`Fabric::quiet`] is OpenSHMEM's quiet: every put and AMO issued before it
//!   is visible at its target. AMOs ask FI_DELIVERY_COMPLETE; non-fetching AMOs to other PEs
//!   travel in batches where the provider has manual progress and libfabric applies its atomics
//!   in software (`batch.rs`:
//!   complete when the target acknowledges the batch). Puts, where the provider orders
//!   reads after writes (FI_ORDER_RMA_RAW: tcp;ofi_rxm, shm), complete locally and quiet
//!   then reads 8 bytes from each PE written since the last quiet ("flush"), except a lone
//!   put (nothing outstanding, its target not already to be flushed), which asks
//!   FI_DELIVERY_COMPLETE so that put + quiet is one round trip; elsewhere (or
//!   with `Options::delivery_per_put`) each put asks FI_DELIVERY_COMPLETE. Measured on
//!   tcp;ofi_rxm: a delivery-complete 8 B put costs an acknowledgement each and runs 2-5x
//!   slower than the flushed ones.
//!   An operation is complete when its counter counts it or the CQ reports it failed (the
//!   counters' error counts differ between providers and are not used). Where puts are
//!   flushed and AMOs batched (tcp;ofi_rxm) no write counter is bound: a bound one made rxm
//!   buffer every injected write and signal its completion through a wait fd (two system
//!   calls per put); there a put injected without delivery completion counts as complete
//!   when its post returns, and every other write asks a CQ entry, which counts it
//!   ([`Fabric::writes_in_cq`]).
//!   A counter says how many operations completed, not which, and operations to different
//!   peers complete in any order: a count that reaches the number issued before a quiet may
//!   include later operations (the quiet's own flush reads, another thread's puts or gets)
//!   while an earlier one is still in flight. So every wait for completion (quiet, the drain
//!   of local writes) waits until nothing is outstanding at all: at one instant, the
//!   completions read first equal the operations issued read after (an operation is counted
//!   as issued before it is posted, so no completion is ever counted before its issue). While
//!   such a wait runs, other threads hold new operations back (they drive progress meanwhile),
//!   so that a thread streaming operations cannot keep the wait from ever seeing that instant.
//!   Puts of up to `inject_size` bytes go out as fi_writemsg with FI_INJECT (the source is
//!   free on return); a blocking put ([`Fabric::put_blocking`]) longer than that and up to
//!   `Options::put_bounce_max` is copied into the registered put ring (the FI_MR_LOCAL bounce
//!   ring, allocated for this elsewhere too) and posted from there, so it returns at once
//!   (tcp;ofi_rxm completes a write locally only when the target acknowledges it);
//!   non-fetching AMOs not batched as fi_atomicmsg with FI_INJECT. The msg forms are
//!   used rather than fi_inject_write/fi_inject_atomic because only they carry a context
//!   (which names the operation and PE in an error completion) and per-operation flags
//!   (FI_FENCE, FI_DELIVERY_COMPLETE). At most `max_inflight` writes (and as many nbi reads)
//!   are outstanding; beyond that a call drives progress until completions arrive. A wait
//!   in which nothing completes for `stall_timeout` fails rather than hangs.
//! - **Blocking operations** (get, fetch and compare AMOs, flush reads) are posted with
//!   FI_COMPLETION and a context that points to a boxed waiter; whoever reads the CQ marks it
//!   done (a waiter that stalls is kept until the CQ is closed, since the provider may still complete it). The CQ is bound with FI_SELECTIVE_COMPLETION, so nbi operations produce no CQ
//!   entry unless they fail (then their context, an odd tagged integer, names kind and PE).
//! - **Fence**: where msg_order has FI_ORDER_WAW nothing is needed (FI_FENCE is then not
//!   used even where offered: sockets' FI_FENCE deadlocks two PEs that fence towards each
//!   other, see [`Fabric::fence`]). Otherwise, with FI_FENCE in the provider's caps,
//!   [`Fabric::fence`] marks the next put or AMO FI_FENCE (and FI_DELIVERY_COMPLETE where
//!   puts are flushed); without it the next put/AMO first makes the
//!   outstanding writes complete at their targets (as quiet does), unless every write since
//!   then is of its own class (RMA or atomic) and the provider orders that class WAW
//!   (tcp;ofi_rxm orders RMA after RMA and atomic after atomic, not across).
//! - **FI_MR_LOCAL** is supported (needed by verbs;ofi_rxm and others): a local buffer inside a
//!   registered region uses that region's descriptor; others go through registered bounce
//!   buffers: puts through a ring that is recycled after the outstanding puts complete, gets
//!   through a buffer (an nbi get into unregistered memory then completes before it returns).
//!   AMO operands and results always live in registered slots.
//! - **Progress**: every wait polls the CQ (which drives manual-progress providers);
//!   [`Fabric::progress`] is the cheap call for the core's progress thread, so that a PE that
//!   only computes still serves passive-target RMA and AMOs (tcp;ofi_rxm is FI_PROGRESS_MANUAL:
//!   without progress on the target even the connection is never made). It steps aside while
//!   another thread waits: two threads in one rxm endpoint doubled fetch_add latency.
//! - Not supported: providers that need FI_CONTEXT/FI_CONTEXT2/FI_ASYNC_IOV mode bits, or
//!   FI_MR_RAW/FI_MR_RMA_EVENT/FI_MR_MMU_NOTIFY (the hints leave them out, so fi_getinfo
//!   returns no such entry).

pub mod sys;

mod atomic;
mod batch;
mod cq;
pub(crate) mod keys;
mod open;
mod rma;
#[cfg(test)]
mod tests;

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};
use sys::*;

/// What to open; [`Options::default`] is what [`Fabric::open`] uses.
#[derive(Clone, Debug)]
pub struct Options {
    /// Provider name filter, `ISHMEM_OFI_PROVIDER` semantics (`"tcp;ofi_rxm"`, `"sockets"`);
    /// `None`: the first provider fi_getinfo returns with RDM, RMA and ATOMIC.
    pub provider: Option<String>,
    /// The number of PEs expected in the address vector (a sizing hint).
    pub npes_hint: usize,
    /// Puts and non-fetching AMOs outstanding (and nbi gets outstanding) before a call waits.
    pub max_inflight: usize,
    /// Behave as if the provider required FI_MR_LOCAL (tests the bounce path anywhere).
    pub force_mr_local: bool,
    /// Bytes of the registered put bounce ring, used only under FI_MR_LOCAL.
    pub bounce_bytes: usize,
    /// Ask FI_DELIVERY_COMPLETE on every put instead of flushing at quiet (see the module
    /// comment); the flush is used only where the provider orders reads after writes.
    pub delivery_per_put: bool,
    /// A wait that sees no completion at all for this long fails instead of hanging (a dead
    /// peer, or a provider that drops an error: shm in 1.17 never completes an operation the
    /// target rejected). The operations then outstanding may still complete later, so the
    /// caller must treat such an error as fatal for the job.
    pub stall_timeout: Duration,
    /// Send non-fetching AMOs to other PEs in batches applied by the target (`batch.rs`)
    /// instead of one provider atomic each.
    pub amo_batch: bool,
    /// Where puts are flushed at quiet: a put posted while no write is outstanding and its
    /// target has no unflushed put asks FI_DELIVERY_COMPLETE instead (quiet then waits for its
    /// acknowledgement and reads nothing back from that PE: put + quiet in one round trip).
    pub delivery_lone: bool,
    /// Where non-fetching AMOs are batched: fetching AMOs to other PEs go as one request
    /// message each, applied by the target's CPU and answered with the old value (`batch.rs`),
    /// instead of the provider's atomics. Off by default: no gain measured on tcp;ofi_rxm
    /// (docs/PERFORMANCE.md, issue 31 third round).
    pub amo_fetch_msg: bool,
    /// A blocking put ([`Fabric::put_blocking`]) longer than the inject size and up to this
    /// many bytes is copied into a registered ring and returns at once, instead of waiting
    /// until the provider has read the source (0: never).
    pub put_bounce_max: usize,
    /// Where non-fetching AMOs are batched: a put with a signal of up to
    /// `batch::PUT_INLINE_MAX` bytes travels inside a batch ([`Fabric::put_signal`]).
    pub put_signal_inline: bool,
    /// Where non-fetching AMOs are batched: puts to other PEs of up to this many bytes (at
    /// most `batch::PUT_BATCH_MAX`) travel inside batches ([`Fabric::put_batched`]; 0: never).
    pub put_batch_max: usize,
    /// Lone puts (nothing of the PE's outstanding) in batches too ([`Fabric::put_batched`];
    /// default off: they go through the provider, whose lone write completes sooner).
    pub batch_lone_puts: bool,
    /// Manual-progress providers: open the CQ with a wait fd, so that the progress thread
    /// sleeps until something arrives ([`Fabric::progress_wait`]) and block-mode waits sleep
    /// in it. The fd costs every operation the provider's signal of it: on tcp;ofi_rxm a read
    /// round trip 0.75 us, a fetching atomic 1.2 us (`bench/fabric_floor.c` with
    /// `FLOOR_WAIT_FD=1`). Without it the thread polls on a timer (`progress_wait`).
    pub wait_fd: bool,
    /// Bind a completion counter for writes even where writes can be counted without one
    /// ([`Fabric::writes_in_cq`]: puts flushed at quiet, AMOs batched): the behaviour before
    /// issue 31's fifteenth round, kept for comparison (`ISHMEMI_OFI_WRITE_COUNTER=1`).
    pub write_counter: bool,
    /// The inject size to ask of libfabric's tcp provider (`tcp`, `tcp;ofi_rxm`) where its
    /// default is smaller (0, or no more than the default: the default). tcp takes up to 128
    /// bytes (64 by default) and rxm passes the size on; writes and flag-in-data messages of
    /// 65-128 bytes then go without a completion, whose CQ signal costs a `write` and a `read`
    /// call at each end (docs/PERFORMANCE.md, issue 31 seventeenth round). rxm reports a
    /// larger size too, but above tcp's 128 bytes it copies the write and waits for tcp's
    /// completion itself (the two calls again). Other providers are opened as offered.
    pub inject_ask: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            provider: None,
            npes_hint: 0,
            max_inflight: 256,
            force_mr_local: false,
            bounce_bytes: 4 << 20,
            delivery_per_put: false,
            stall_timeout: Duration::from_secs(30),
            amo_batch: true,
            delivery_lone: true,
            amo_fetch_msg: false,
            put_bounce_max: 64 << 10,
            put_signal_inline: true,
            put_batch_max: batch::PUT_BATCH_MAX,
            batch_lone_puts: false,
            wait_fd: true,
            write_counter: false,
            inject_ask: TCP_INJECT,
        }
    }
}

/// The inject size asked of tcp by default ([`Options::inject_ask`]): the most libfabric 1.17's
/// tcp provider takes (`XNET_MAX_INJECT`).
pub const TCP_INJECT: usize = 128;

/// Whether non-fetching AMOs to other PEs travel in batches (`batch.rs`) on this provider.
/// Batched AMOs need messages of a header's size injected (the acknowledgements), and a
/// provider whose own atomics the target's CPU applies with its atomic instructions
/// (libfabric's software atomics: rxm over any core provider, sockets, shm, rxd), so that the
/// target's CPU atomics on a batch's entries are atomic with them. Not NIC atomics (verbs,
/// efa): those are not atomic with the CPU's. And manual progress only: the target applies a
/// batch when it reads its CQ, which the core's progress thread does for a PE that computes
/// only under manual progress (with automatic progress, sockets, the provider's own thread
/// applies its atomics and nobody reads the CQ).
fn batches_amos(opts: &Options, provider: &str, manual: bool, inject_size: usize) -> bool {
    let sw_atomics = provider.ends_with(";ofi_rxm") || matches!(provider, "sockets" | "shm" | "udp;ofi_rxd");
    opts.amo_batch && sw_atomics && manual && inject_size >= 24
}

/// libfabric atomic operations (`enum fi_op`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Min = FI_MIN,
    Max = FI_MAX,
    Sum = FI_SUM,
    Prod = FI_PROD,
    Lor = FI_LOR,
    Land = FI_LAND,
    Bor = FI_BOR,
    Band = FI_BAND,
    Lxor = FI_LXOR,
    Bxor = FI_BXOR,
    Read = FI_ATOMIC_READ,
    Write = FI_ATOMIC_WRITE,
    Cswap = FI_CSWAP,
    CswapNe = FI_CSWAP_NE,
    CswapLe = FI_CSWAP_LE,
    CswapLt = FI_CSWAP_LT,
    CswapGe = FI_CSWAP_GE,
    CswapGt = FI_CSWAP_GT,
    Mswap = FI_MSWAP,
}

impl From<crate::op::Rmw> for AtomicOp {
    /// The provider's operator for a read-modify-write AMO.
    fn from(r: crate::op::Rmw) -> AtomicOp {
        use crate::op::Rmw;
        match r {
            Rmw::Add => AtomicOp::Sum,
            Rmw::And => AtomicOp::Band,
            Rmw::Or => AtomicOp::Bor,
            Rmw::Xor => AtomicOp::Bxor,
        }
    }
}

/// libfabric atomic datatypes (`enum fi_datatype`), the integer and real ones.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    I8 = FI_INT8,
    U8 = FI_UINT8,
    I16 = FI_INT16,
    U16 = FI_UINT16,
    I32 = FI_INT32,
    U32 = FI_UINT32,
    I64 = FI_INT64,
    U64 = FI_UINT64,
    F32 = FI_FLOAT,
    F64 = FI_DOUBLE,
}

impl Dtype {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::U64 | Dtype::F64 => 8,
        }
    }
}

/// Which family of atomic calls a validity question is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicKind {
    /// [`Fabric::atomic`] (fi_atomicvalid)
    Write,
    /// [`Fabric::fetch_atomic`] (fi_fetch_atomicvalid)
    Fetch,
    /// [`Fabric::compare_atomic`] (fi_compare_atomicvalid)
    Compare,
}

/// What was opened, for `ishmem-info` and `ISHMEM_INFO=1`.
#[derive(Clone, Debug)]
pub struct Info {
    pub provider: String,
    /// Provider version (major, minor).
    pub provider_version: (u32, u32),
    /// Version of the loaded libfabric (major, minor) and the API version asked for.
    pub library_version: (u32, u32),
    pub api_version: (u32, u32),
    pub fabric: String,
    pub domain: String,
    /// The mr_mode bits the provider requires (FI_MR_*), as returned by fi_getinfo.
    pub mr_mode: i32,
    /// FI_MR_LOCAL handling in use (required by the provider or forced by [`Options`]).
    pub mr_local: bool,
    pub data_progress_manual: bool,
    /// Whether fi_getinfo offers this provider with FI_HMEM (device memory registration).
    pub hmem: bool,
    /// Whether the provider has FI_FENCE.
    pub fence: bool,
    pub inject_size: usize,
    pub max_msg_size: usize,
    pub msg_order: u64,
    /// How quiet makes puts visible: true, puts complete locally (transmit completion) and
    /// quiet reads 8 bytes from every PE written since the last quiet (the provider orders
    /// reads after writes); false, every put asks FI_DELIVERY_COMPLETE.
    pub put_flush: bool,
    /// Whether a completion counter counts the writes (puts, non-fetching AMOs); false where
    /// they are counted from the CQ and at their posts ([`Fabric::writes_in_cq`]).
    pub write_counter: bool,
    /// Manual progress with a CQ wait fd: the progress thread sleeps until something arrives
    /// ([`Fabric::progress_wait`]) instead of waking on a timer.
    pub wait_fd: bool,
    /// Bits of the random memory keys we choose; 0 where the provider assigns them
    /// (FI_MR_PROV_KEY).
    pub key_bits: u32,
}

impl Info {
    /// The mr_mode bits as `FI_MR_VIRT_ADDR|FI_MR_PROV_KEY` (`0` when none).
    pub fn mr_mode_text(&self) -> String {
        let v: Vec<&str> = MR_MODE_NAMES.iter().filter(|(b, _)| self.mr_mode & b != 0).map(|(_, n)| *n).collect();
        if v.is_empty() {
            "0".into()
        } else {
            v.join("|")
        }
    }
}

impl std::fmt::Display for Info {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "provider {} {}.{} (libfabric {}.{}, api {}.{}), fabric {}, domain {}, mr_mode {}{}, data progress {}, \
             FI_HMEM {}, FI_FENCE {}, inject {} B, puts {}, writes counted {}{}, memory keys {}",
            self.provider,
            self.provider_version.0,
            self.provider_version.1,
            self.library_version.0,
            self.library_version.1,
            self.api_version.0,
            self.api_version.1,
            self.fabric,
            self.domain,
            self.mr_mode_text(),
            if self.mr_local && self.mr_mode & FI_MR_LOCAL == 0 { " (FI_MR_LOCAL forced)" } else { "" },
            if self.data_progress_manual { "manual" } else { "auto" },
            if self.hmem { "yes" } else { "no" },
            if self.fence { "yes" } else { "no" },
            self.inject_size,
            if self.put_flush { "flushed at quiet" } else { "FI_DELIVERY_COMPLETE" },
            if self.write_counter { "by a counter" } else { "from the CQ" },
            match (self.data_progress_manual, self.wait_fd) {
                (true, true) => ", progress thread wakes on arrival (CQ wait fd)",
                (true, false) => ", progress thread on a timer (no CQ wait fd)",
                _ => "",
            },
            if self.key_bits == 0 { "provider-assigned".to_string() } else { format!("random {}-bit", self.key_bits) }
        )
    }
}

/// A registered region as peers must learn it: publish `key` and `addr`, and give them to the
/// peers' [`Fabric::set_remote`] with the same `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mr {
    /// Index of the region in this Fabric (regions are numbered in registration order, so
    /// PEs that register the same regions in the same order agree on ids).
    pub id: usize,
    pub key: u64,
    /// The region's base virtual address.
    pub addr: u64,
}

/// Where on the target PE: `offset` bytes into region `region`. Regions are symmetric: an
/// access is checked against this PE's own region of that id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    pub region: usize,
    pub offset: usize,
}

struct Region {
    mr: *mut fid_mr,
    base: usize,
    len: usize,
    desc: *mut c_void,
    /// Per PE: (key, base address) as the peer published them.
    remote: Vec<Option<(u64, u64)>>,
}

struct Tables {
    peers: Vec<fi_addr_t>,
    regions: Vec<Region>,
    /// Per PE: puts posted since its last flush (only with `Info::put_flush`).
    dirty: Vec<AtomicBool>,
}

/// Registered scratch memory: AMO slots (operand, compare, result), and under FI_MR_LOCAL
/// the put bounce ring and the get bounce buffer.
struct Scratch {
    mem: Box<[u64]>,
    base: *mut u8,
    mr: *mut fid_mr,
    desc: *mut c_void,
    free_slots: Mutex<Vec<u32>>,
    /// Next free byte of the put ring (offsets from `put_off`).
    put_head: Mutex<usize>,
    put_off: usize,
    put_len: usize,
    get_lock: Mutex<()>,
    get_off: usize,
    get_len: usize,
}

/// Waits under automatic progress: yield this long, then sleep from MIN doubling to MAX.
const AUTO_YIELD: Duration = Duration::from_micros(50);
const AUTO_NAP_MIN: Duration = Duration::from_micros(2);
const AUTO_NAP_MAX: Duration = Duration::from_micros(100);

const SLOTS: usize = 256;
const SLOT_BYTES: usize = 32;
const GET_BOUNCE: usize = 1 << 20;

/// The kind of an operation, carried in its context so an error completion can name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpKind {
    Put = 1,
    Get = 2,
    Atomic = 3,
    FetchAtomic = 4,
    CompareAtomic = 5,
    Flush = 6,
    /// A message of batched AMOs (`batch.rs`), its receive buffer, an acknowledgement.
    BatchSend = 7,
    BatchRecv = 8,
    AckSend = 9,
    /// A fetching AMO's request message (`batch.rs`).
    FetchSend = 10,
    /// A put counted as complete when its post returned (injected, no completion asked: see
    /// `Fabric::writes_in_cq`); only its failure produces a CQ entry.
    PutPosted = 11,
}

impl OpKind {
    fn what(self) -> &'static str {
        match self {
            OpKind::Put | OpKind::PutPosted => "put (fi_writemsg)",
            OpKind::Get => "get (fi_readmsg)",
            OpKind::Atomic => "atomic (fi_atomicmsg)",
            OpKind::FetchAtomic => "fetch atomic (fi_fetch_atomicmsg)",
            OpKind::CompareAtomic => "compare atomic (fi_compare_atomicmsg)",
            OpKind::Flush => "flush of puts (fi_readmsg)",
            OpKind::BatchSend => "batched AMOs (fi_sendmsg)",
            OpKind::BatchRecv => "receive of batched AMOs (fi_recvmsg)",
            OpKind::AckSend => "acknowledgement of batched AMOs (fi_sendmsg)",
            OpKind::FetchSend => "fetching AMO request (fi_sendmsg)",
        }
    }
    fn from_bits(b: usize) -> Option<OpKind> {
        [
            OpKind::Put,
            OpKind::Get,
            OpKind::Atomic,
            OpKind::FetchAtomic,
            OpKind::CompareAtomic,
            OpKind::Flush,
            OpKind::BatchSend,
            OpKind::BatchRecv,
            OpKind::AckSend,
            OpKind::FetchSend,
            OpKind::PutPosted,
        ]
        .into_iter()
        .find(|k| *k as usize == b)
    }
}

/// The context of an nbi operation: an odd integer (real pointers are aligned) with the kind
/// in bits 1..8 and the PE above.
fn tag(kind: OpKind, pe: usize) -> *mut c_void {
    ((pe << 8) | ((kind as usize) << 1) | 1) as *mut c_void
}

/// A blocking operation's completion (boxed; its address is the context).
#[repr(align(8))]
struct Waiter {
    /// Operations (chunks) not yet completed.
    pending: AtomicUsize,
    /// An error seen (fi errno, positive), and the first error's text.
    err: AtomicI32,
    msg: Mutex<Option<String>>,
    kind: OpKind,
    pe: usize,
}

impl Waiter {
    fn new(kind: OpKind, pe: usize, n: usize) -> Box<Waiter> {
        Box::new(Waiter { pending: AtomicUsize::new(n), err: AtomicI32::new(0), msg: Mutex::new(None), kind, pe })
    }
    fn ctx(&self) -> *mut c_void {
        self as *const Waiter as *mut c_void
    }
}

/// Write classes for the fence logic (the low byte of `Fabric::classes`).
const CLASS_RMA: u64 = 1;
const CLASS_ATOMIC: u64 = 2;
const CLASS_BITS: u64 = 0xff;
/// One mark in the count above the class bits of `Fabric::classes`.
const CLASS_MARK: u64 = 0x100;

/// Numbers of the Fabrics of the process (`Fabric::id`).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One libfabric endpoint and what hangs off it; see the module comment.
pub struct Fabric {
    lib: &'static Lib,
    objs: open::Objects,
    info: Info,
    mr_local: bool,
    virt_addr: bool,
    prov_key: bool,
    /// Width in bytes of the random keys we choose (unused with FI_MR_PROV_KEY).
    key_width: usize,
    mr_endpoint: bool,
    max_inflight: u64,
    stall_timeout: Duration,
    delivery_lone: bool,
    /// CQ entries read (successes and errors): with the counters, the measure of whether
    /// anything completes at all during a wait.
    events: AtomicU64,
    /// Threads inside a wait (they drive progress themselves, so `progress` need not).
    waiting: AtomicUsize,
    /// How the progress thread's waits ended (`progress_wait`): woken by the wait fd, at the
    /// timeout, slept a period because work was pending (-FI_EAGAIN), slept a period because
    /// another thread was waiting on the provider or there is no wait fd. Read by
    /// [`Fabric::wait_stats`] (`ISHMEMI_PROXY_PROFILE`).
    wait_ends: [AtomicU64; 4],
    /// Microseconds since `opened` at which traffic was last seen arriving (the wait fd
    /// readable, or without one a progress step that served something): see
    /// [`Fabric::recently_active`].
    last_arrival_us: AtomicU64,
    /// The progress thread's current period without a wait fd, in microseconds
    /// (`progress_wait`: from its `idle` up to `max` while its steps find nothing to do).
    timer_us: AtomicU64,
    /// A low running estimate of an idle progress step's duration on this machine and build,
    /// in nanoseconds (0 until the first step): `progress_served` counts a step as serving
    /// something when it took `SERVED_FLOOR_X` times this and at least `SERVED_NS`.
    step_floor_ns: AtomicU64,
    /// Tests: nanoseconds every `progress_served` step spins on top of its work (a machine
    /// whose idle step is slow).
    #[cfg(test)]
    step_spin_ns: AtomicU64,
    opened: Instant,
    tables: RwLock<Tables>,
    scratch: Scratch,
    valid_cache: Vec<AtomicU8>,
    issued_w: AtomicU64,
    issued_r: AtomicU64,
    /// Last observed completed writes/reads (successes + errors), to bound in-flight cheaply.
    done_w: AtomicU64,
    done_r: AtomicU64,
    /// Failed operations of ours (CQ error entries with our context), write and read class.
    /// An operation is complete when the counter counts its success or the CQ reports its
    /// failure: every failed operation gets a CQ error entry (fi_endpoint(3), selective
    /// completion), while the counters' error counts differ between providers (tcp;ofi_rxm
    /// counts no failed RMA, sockets counts a failed fetch AMO as a write, rxm counts a failed
    /// fetch AMO three times), so they are not used.
    cq_errs_w: AtomicU64,
    cq_errs_r: AtomicU64,
    /// Where no counter counts the writes ([`Fabric::writes_in_cq`]): successful writes,
    /// counted from their CQ entries, plus injected puts counted when their post returned.
    counted_w: AtomicU64,
    /// Operations counted as issued whose post failed (they will never complete): counted as
    /// completed, write and read class.
    lost_w: AtomicU64,
    lost_r: AtomicU64,
    /// Threads inside a wait for every outstanding operation ([`Fabric::wait_idle`]); while
    /// it is not 0, the posts of other threads wait.
    quiescing: AtomicUsize,
    /// nbi gets issued, and the value it had at the last point where every read was seen
    /// complete: while the two are equal, no nbi get is outstanding and quiet need not wait
    /// for the read class.
    nbi_gets: AtomicU64,
    nbi_gets_seen_done: AtomicU64,
    nbi_errors: Mutex<Vec<String>>,
    /// This Fabric's number (unique in the process): a thread's pending fence names it.
    id: u64,
    /// The write classes (`CLASS_*`, low byte) posted since every write was last seen complete,
    /// and above them a count of the marks: a mark after a snapshot changes the word, so
    /// clearing with a compare-exchange from the snapshot never drops the mark of an operation
    /// that was not yet complete (see [`Fabric::mark`]).
    classes: AtomicU64,
    /// Waiters of operations that stalled (the stall timeout gave up on them): a late
    /// completion may still name them, so they live until the CQ is closed (dropped after
    /// `Drop::drop`, which closes it; declared after `objs`). Boxed: the provider holds each
    /// waiter's address as the operation's context, so it must never move.
    #[allow(clippy::vec_box)]
    stalled: Mutex<Vec<Box<Waiter>>>,
    /// Batched non-fetching AMOs (`batch.rs`); None where they are off.
    batch: Option<batch::Batches>,
    /// `Options::put_bounce_max` where the ring exists (else 0).
    put_bounce_max: usize,
    /// `Options::put_signal_inline`.
    put_signal_inline: bool,
    /// `Options::put_batch_max` (at most `batch::PUT_BATCH_MAX`).
    put_batch_max: usize,
    /// `Options::batch_lone_puts`.
    batch_lone_puts: bool,
}

// SAFETY: every libfabric object is opened from an FI_THREAD_SAFE domain, so its calls may be
// made from any thread at once; the raw pointers are only handles to those objects and to the
// registered scratch memory, whose shared parts are guarded by the mutexes above; all other
// mutable state is atomics or behind the RwLock.
unsafe impl Send for Fabric {}
// SAFETY: as for Send.
unsafe impl Sync for Fabric {}

/// What `ishmem-info` shows: the loaded libfabric's version and the providers that offer
/// what the transport needs (FI_EP_RDM with FI_RMA and FI_ATOMIC), in fi_getinfo's order (the
/// first is the default choice). `Err`: libfabric could not be loaded, or fi_getinfo failed.
pub fn usable_providers() -> Result<((u32, u32), Vec<String>), String> {
    let lib = sys::lib()?;
    let list = open::getinfo(lib, None, true, 0)?;
    Ok((lib.loaded_version(), open::names(&list)))
}

thread_local! {
    /// A shorter stall timeout for the calls of one thread (`Fabric::with_stall_timeout`).
    static STALL: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
    /// Depth of this thread's waits for every outstanding operation: its own posts inside
    /// one (the flush reads of quiet) pass the hold that such a wait puts on other threads.
    static QUIESCING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// The Fabrics (by `Fabric::id`) on which this thread has called [`Fabric::fence`] and
    /// posted no write since: a fence orders the calling thread's operations, so another
    /// thread's next write must neither take it nor be delayed by it.
    static FENCED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The [`Tracker`] whose operations this thread posts now (null: none, the default
    /// context's), set by [`Tracker::run`].
    static TRACKING: std::cell::Cell<*const Waiter> = const { std::cell::Cell::new(ptr::null()) };
}

/// The outstanding writes of one OpenSHMEM context (core::ctx): while a thread runs inside
/// [`Tracker::run`], its puts are posted with FI_COMPLETION and FI_DELIVERY_COMPLETE and this
/// tracker (a waiter that lives as long as the context) as their context, counted in `pending`
/// until the CQ reports them; they take no part in the thread's shared fence and its flush
/// marks, and [`Fabric::quiet_tracked`] waits for them alone. They are also counted as every
/// write is, so [`Fabric::quiet`] still completes them. Its non-fetching AMOs are fetching ones
/// (complete when they return: see [`Fabric::atomic`]).
pub struct Tracker(Box<Waiter>);

impl Default for Tracker {
    fn default() -> Self {
        Tracker(Waiter::new(OpKind::Put, usize::MAX, 0))
    }
}

impl Tracker {
    /// Runs `f` with the calling thread's operations tracked here (nests: the outer tracker
    /// is back on return).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(*const Waiter);
        impl Drop for Restore {
            fn drop(&mut self) {
                let _ = TRACKING.try_with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(TRACKING.with(|c| c.replace(&*self.0 as *const Waiter)));
        f()
    }

    /// Operations posted under this tracker and not completed yet.
    pub fn pending(&self) -> usize {
        self.0.pending.load(Ordering::Acquire)
    }
}

/// The calling thread's tracker, if it runs inside [`Tracker::run`].
#[inline]
fn tracking() -> Option<&'static Waiter> {
    let p = TRACKING.try_with(|c| c.get()).unwrap_or(ptr::null());
    // SAFETY: a non-null pointer is the Waiter of a Tracker that Tracker::run borrows for as
    // long as it is set (restored before run returns).
    (!p.is_null()).then(|| unsafe { &*p })
}

/// Whether the calling thread's operations are tracked by a context now.
pub fn tracked() -> bool {
    tracking().is_some()
}

/// A thread's wait for every outstanding operation, from creation to drop (see
/// [`Fabric::hold_posts`]).
struct Quiescing<'a>(&'a AtomicUsize);

impl Drop for Quiescing<'_> {
    fn drop(&mut self) {
        QUIESCING.with(|c| c.set(c.get() - 1));
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Fabric {
    /// How long a wait in which nothing completes may last before it fails (this thread's
    /// `with_stall_timeout` limit, else the one the Fabric was opened with).
    pub fn stall_limit(&self) -> Duration {
        STALL.with(|c| c.get()).unwrap_or(self.stall_timeout)
    }

    /// Runs `f` with waits of this thread failing after `limit` without any completion instead
    /// of `Options::stall_timeout` (a liveness probe: a dead peer's operations never complete,
    /// rxm keeps answering -FI_EAGAIN while it retries the connection).
    pub fn with_stall_timeout<R>(&self, limit: Duration, f: impl FnOnce(&Fabric) -> R) -> R {
        let old = STALL.with(|c| c.replace(Some(limit)));
        let r = f(self);
        STALL.with(|c| c.set(old));
        r
    }

    /// Opens a provider (see [`Options::provider`]) with an RDM endpoint; `npes_hint` sizes
    /// the address vector.
    pub fn open(provider: Option<&str>, npes_hint: usize) -> Result<Fabric, String> {
        Fabric::open_with(&Options { provider: provider.map(str::to_owned), npes_hint, ..Options::default() })
    }

    /// [`Fabric::open`] with every option.
    pub fn open_with(opts: &Options) -> Result<Fabric, String> {
        let lib = sys::lib()?;
        let chosen = open::choose(lib, opts.provider.as_deref(), opts.inject_ask)?;
        // Whether writes are counted without a counter (`writes_in_cq`), decided from the
        // chosen entry before the endpoint is bound: puts flushed at quiet, AMOs batched.
        let (put_flush, writes_in_cq) = {
            // SAFETY: the chosen list holds one live entry; its attrs live as long as it.
            let h = unsafe { &*chosen.head };
            // SAFETY: as above.
            let (tx, dom, fab) = unsafe { (&*h.tx_attr, &*h.domain_attr, &*h.fabric_attr) };
            let put_flush = !opts.delivery_per_put && tx.msg_order & (FI_ORDER_RAW | FI_ORDER_RMA_RAW) != 0;
            let manual = dom.data_progress == FI_PROGRESS_MANUAL;
            (put_flush, !opts.write_counter && put_flush && batches_amos(opts, &open::text(fab.prov_name), manual, tx.inject_size))
        };
        let objs = open::Objects::open(lib, chosen, opts.npes_hint.max(1), opts.wait_fd, !writes_in_cq)?;
        let i = objs.info();
        // SAFETY: the attrs of a returned entry are allocated by the library and live as long
        // as the entry (owned by objs).
        let (tx, ep_attr, dom, fab) = unsafe { (&*i.tx_attr, &*i.ep_attr, &*i.domain_attr, &*i.fabric_attr) };
        let provider = open::text(fab.prov_name);
        let hmem = open::getinfo(lib, Some(&provider), true, FI_HMEM).map(|l| !l.head.is_null()).unwrap_or(false);
        let api = open::api_version(lib);
        let info = Info {
            provider,
            provider_version: (fab.prov_version >> 16, fab.prov_version & 0xffff),
            library_version: lib.loaded_version(),
            api_version: (api >> 16, api & 0xffff),
            fabric: open::text(fab.name),
            domain: open::text(dom.name),
            mr_mode: dom.mr_mode,
            mr_local: dom.mr_mode & FI_MR_LOCAL != 0 || opts.force_mr_local,
            data_progress_manual: dom.data_progress == FI_PROGRESS_MANUAL,
            hmem,
            fence: i.caps & FI_FENCE != 0 || tx.caps & FI_FENCE != 0,
            inject_size: tx.inject_size,
            max_msg_size: if ep_attr.max_msg_size == 0 { usize::MAX } else { ep_attr.max_msg_size },
            msg_order: tx.msg_order,
            put_flush,
            write_counter: !writes_in_cq,
            wait_fd: objs.wait_fd >= 0,
            key_bits: if dom.mr_mode & FI_MR_PROV_KEY != 0 { 0 } else { 8 * keys::width(dom.mr_key_size) as u32 },
        };
        let mr_mode = dom.mr_mode;
        // Slots, then the put ring (under FI_MR_LOCAL, or for blocking puts) and under
        // FI_MR_LOCAL the get buffer.
        let (put_len, get_len) = if info.mr_local {
            (opts.bounce_bytes.max(64 << 10).next_multiple_of(64), GET_BOUNCE)
        } else if opts.put_bounce_max > info.inject_size {
            ((4 * opts.put_bounce_max).max(1 << 20).next_multiple_of(64), 0)
        } else {
            (0, 0)
        };
        let (put_off, get_off) = (SLOTS * SLOT_BYTES, SLOTS * SLOT_BYTES + put_len);
        let mut scratch_mem = vec![0u64; (get_off + get_len) / 8].into_boxed_slice();
        let base = scratch_mem.as_mut_ptr().cast::<u8>();
        let scratch = Scratch {
            mem: scratch_mem,
            base,
            mr: ptr::null_mut(),
            desc: ptr::null_mut(),
            free_slots: Mutex::new((1..SLOTS as u32).rev().collect()), // slot 0: the flush sink
            put_head: Mutex::new(0),
            put_off,
            put_len,
            get_lock: Mutex::new(()),
            get_off,
            get_len,
        };
        let mut f = Fabric {
            lib,
            objs,
            mr_local: info.mr_local,
            virt_addr: mr_mode & FI_MR_VIRT_ADDR != 0,
            prov_key: mr_mode & FI_MR_PROV_KEY != 0,
            key_width: keys::width(dom.mr_key_size),
            mr_endpoint: mr_mode & FI_MR_ENDPOINT != 0,
            info,
            max_inflight: opts.max_inflight.max(1) as u64,
            delivery_lone: opts.delivery_lone,
            stall_timeout: opts.stall_timeout,
            events: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            wait_ends: Default::default(),
            last_arrival_us: AtomicU64::new(0),
            timer_us: AtomicU64::new(0),
            step_floor_ns: AtomicU64::new(0),
            #[cfg(test)]
            step_spin_ns: AtomicU64::new(0),
            opened: Instant::now(),
            tables: RwLock::new(Tables { peers: Vec::new(), regions: Vec::new(), dirty: Vec::new() }),
            scratch,
            valid_cache: (0..3 * 19 * 10).map(|_| AtomicU8::new(0)).collect(),
            issued_w: AtomicU64::new(0),
            issued_r: AtomicU64::new(0),
            done_w: AtomicU64::new(0),
            done_r: AtomicU64::new(0),
            cq_errs_w: AtomicU64::new(0),
            cq_errs_r: AtomicU64::new(0),
            counted_w: AtomicU64::new(0),
            lost_w: AtomicU64::new(0),
            lost_r: AtomicU64::new(0),
            quiescing: AtomicUsize::new(0),
            nbi_gets: AtomicU64::new(0),
            nbi_gets_seen_done: AtomicU64::new(0),
            nbi_errors: Mutex::new(Vec::new()),
            stalled: Mutex::new(Vec::new()),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            classes: AtomicU64::new(0),
            batch: None,
            put_bounce_max: if put_len > 0 { opts.put_bounce_max.min(put_len / 4) } else { 0 },
            put_signal_inline: opts.put_signal_inline,
            put_batch_max: opts.put_batch_max.min(batch::PUT_BATCH_MAX),
            batch_lone_puts: opts.batch_lone_puts,
        };
        // The scratch area is local memory only (operands, results, bounce data).
        let len = f.scratch.mem.len() * 8;
        // SAFETY: the scratch area is owned by f and lives as long as it; local access only.
        let (mr, desc) = unsafe { f.reg_mr(f.scratch.base as usize, len, FI_READ | FI_WRITE)? };
        f.scratch.mr = mr;
        f.scratch.desc = desc;
        if batches_amos(opts, &f.info.provider, f.info.data_progress_manual, f.info.inject_size) {
            let mut b = batch::Batches::new(opts.amo_fetch_msg && f.info.inject_size >= batch::FETCH_MSG_INJECT);
            let (base, len) = b.bytes();
            // SAFETY: the message buffers are owned by the Batches that f keeps until drop,
            // after the endpoint is closed; local access only (sends and receives).
            let (mr, desc) = unsafe { f.reg_mr(base, len, FI_SEND | FI_RECV)? };
            b.set_mr(mr, desc);
            f.batch = Some(b);
            f.batch_post_recvs()?;
        }
        Ok(f)
    }

    /// What this PE holds with the provider, for `ISHMEM_INFO=1` (docs/SCALING.md): registered
    /// regions (the scratch area included) and their bytes, address vector entries, and the
    /// per-PE key table entries of the regions.
    pub fn footprint(&self) -> (usize, usize, usize, usize) {
        let t = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let bytes = t.regions.iter().map(|r| r.len).sum::<usize>() + self.scratch.mem.len() * 8;
        let keys = t.regions.iter().map(|r| r.remote.len()).sum();
        (t.regions.len() + 1, bytes, t.peers.len(), keys)
    }

    /// What was opened.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// Whether writes are counted without a counter (`counted_w`; `Info::write_counter`
    /// false): where puts are flushed at quiet and non-fetching AMOs travel in batches
    /// (tcp;ofi_rxm), no write counter is bound to the endpoint, a put injected without
    /// delivery completion is complete for this PE when its post returns (quiet's flush read
    /// makes it complete at its target), every other write asks a CQ entry, and a non-batched
    /// non-fetching AMO goes as a fetching one. A bound write counter makes ofi_rxm turn every
    /// injected write into a buffered one whose completion it signals through its internal
    /// CQ's wait fd (a `write` and a `read` system call per put): a 2-PE exchange of 8-byte
    /// flags took 1.8-3.2 us longer with the counter bound (`bench/fabric_floor.c`
    /// `FLOOR_WRITE_COUNTER=1`; issue 31, docs/PERFORMANCE.md).
    #[inline]
    pub(super) fn writes_in_cq(&self) -> bool {
        !self.info.write_counter
    }

    /// The endpoint's address (fi_getname), to publish to every PE.
    pub fn name(&self) -> Result<Vec<u8>, String> {
        self.objs.name(self.lib)
    }

    /// Inserts every PE's name (index = PE, this PE's own included) into the address vector;
    /// may be called again to append PEs.
    pub fn insert_peers(&self, names: &[Vec<u8>]) -> Result<(), String> {
        let Some(len) = names.first().map(Vec::len) else { return Ok(()) };
        if names.iter().any(|n| n.len() != len) {
            return Err("fi_av_insert: the peers' names differ in length".into());
        }
        let flat: Vec<u8> = names.concat();
        let mut addrs = vec![u64::MAX; names.len()];
        // SAFETY: av is live; its ops table is checked; flat holds names.len() names of len
        // bytes each and addrs has room for names.len() addresses.
        let r = unsafe {
            let insert = has_op!((*self.objs.av).ops, fi_ops_av, insert)?;
            insert(self.objs.av, flat.as_ptr().cast(), names.len(), addrs.as_mut_ptr(), 0, ptr::null_mut())
        };
        if r < 0 {
            return Err(format!("fi_av_insert failed: {}", self.lib.strerror(r)));
        }
        if r as usize != names.len() || addrs.contains(&u64::MAX) {
            return Err(format!("fi_av_insert inserted {r} of {} addresses", names.len()));
        }
        let mut t = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let first = t.peers.len();
        t.peers.extend_from_slice(&addrs);
        let n = t.peers.len();
        if let Some(b) = &self.batch {
            let own = self.name().ok();
            let me = names.iter().position(|x| Some(x) == own.as_ref()).map(|i| first + i);
            b.set_peers(&t.peers, me);
        }
        t.dirty.resize_with(n, || AtomicBool::new(false));
        for r in &mut t.regions {
            r.remote.resize(n, None);
        }
        Ok(())
    }

    /// Registers `[base, base+len)` with `access`: the region and its descriptor.
    ///
    /// # Safety
    /// `[base, base+len)` is memory that stays allocated until the region is closed (while
    /// this Fabric lives); with remote access, peers may read or write it at any time.
    unsafe fn reg_mr(&self, base: usize, len: usize, access: u64) -> Result<(*mut fid_mr, *mut c_void), String> {
        let dom = self.objs.domain;
        let mut mr: *mut fid_mr = ptr::null_mut();
        // A fresh random key each time (see `keys`); a key already in use in this domain
        // (-FI_ENOKEY: a collision, 2^-64 per pair of 64-bit keys) is drawn again.
        let mut tries = 0;
        loop {
            let key = if self.prov_key { 0 } else { keys::random(self.key_width)? };
            // SAFETY: domain is live and its mr table checked; [base, base+len) is memory the
            // caller keeps allocated while this Fabric lives (register's contract).
            let r = unsafe {
                let reg = has_op!((*dom).mr, fi_ops_mr, reg)?;
                reg(&mut (*dom).fid, base as *const c_void, len, access, 0, key, 0, &mut mr, ptr::null_mut())
            };
            tries += 1;
            if r == -FI_ENOKEY && !self.prov_key && tries < 16 {
                continue;
            }
            open::check(self.lib, "fi_mr_reg", r)?;
            break;
        }
        if self.mr_endpoint {
            // SAFETY: mr was just opened and ep is live.
            let bound = unsafe {
                open::bind(self.lib, "fi_mr_bind", &mut (*mr).fid, &mut (*self.objs.ep).fid, 0)
                    .and_then(|()| open::enable(self.lib, "fi_mr_enable", &mut (*mr).fid))
            };
            if let Err(e) = bound {
                // SAFETY: mr is live and closed once here.
                let _ = unsafe { open::close(self.lib, "mr", &mut (*mr).fid) };
                return Err(e);
            }
        }
        // SAFETY: mr is live; mem_desc is what fi_mr_desc returns.
        Ok((mr, unsafe { (*mr).mem_desc }))
    }

    /// Registers `[base, base + len)` for remote read and write (and local use); it stays
    /// registered until drop.
    ///
    /// # Safety
    /// The memory stays allocated while this Fabric lives, and peers may write it at any time
    /// (it is shared memory as far as Rust is concerned).
    pub unsafe fn register(&self, base: *mut u8, len: usize) -> Result<Mr, String> {
        if base.is_null() || len == 0 {
            return Err("register: empty region".into());
        }
        // SAFETY: register's contract: the memory stays allocated while this Fabric lives,
        // and may be written by peers at any time.
        let (mr, desc) = unsafe { self.reg_mr(base as usize, len, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE)? };
        // SAFETY: mr is live; key is what fi_mr_key returns.
        let key = unsafe { (*mr).key };
        let mut t = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let n = t.peers.len();
        t.regions.push(Region { mr, base: base as usize, len, desc, remote: vec![None; n] });
        if let Some(b) = &self.batch {
            b.add_local(key, base as usize, len);
        }
        Ok(Mr { id: t.regions.len() - 1, key, addr: base as u64 })
    }

    /// Records what PE `pe` published for region `region` (its [`Mr`]'s key and addr).
    pub fn set_remote(&self, region: usize, pe: usize, key: u64, addr: u64) -> Result<(), String> {
        let mut t = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let npes = t.peers.len();
        let r = t.regions.get_mut(region).ok_or_else(|| format!("set_remote: no region {region}"))?;
        if pe >= npes {
            return Err(format!("set_remote: PE {pe} not inserted ({npes} PEs)"));
        }
        r.remote[pe] = Some((key, addr));
        Ok(())
    }

    /// (fi_addr, wire address, key) of `len` bytes at `at` on PE `pe`.
    fn target(&self, t: &Tables, pe: usize, at: Remote, len: usize) -> Result<(fi_addr_t, u64, u64), String> {
        let dest = *t.peers.get(pe).ok_or_else(|| format!("PE {pe} has no address ({} inserted)", t.peers.len()))?;
        let r = t.regions.get(at.region).ok_or_else(|| format!("no region {}", at.region))?;
        if at.offset.checked_add(len).is_none_or(|end| end > r.len) {
            return Err(format!("[{}, +{len}) is outside region {} ({} bytes)", at.offset, at.region, r.len));
        }
        let (key, base) = r.remote[pe].ok_or_else(|| format!("region {} of PE {pe} is not known", at.region))?;
        let addr = if self.virt_addr { base + at.offset as u64 } else { at.offset as u64 };
        Ok((dest, addr, key))
    }

    /// The descriptor for a local buffer: NULL when FI_MR_LOCAL is off; the region's when the
    /// buffer lies in a registered region; `None` when it must be bounced.
    fn local_desc(&self, t: &Tables, p: *const u8, len: usize) -> Option<*mut c_void> {
        if !self.mr_local {
            return Some(ptr::null_mut());
        }
        let (a, s) = (p as usize, &self.scratch);
        if a >= s.base as usize && a + len <= s.base as usize + s.mem.len() * 8 {
            return Some(s.desc);
        }
        t.regions.iter().find(|r| a >= r.base && a + len <= r.base + r.len).map(|r| r.desc)
    }

    fn tables(&self) -> std::sync::RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    fn err_text(&self, call: &str, pe: usize, r: isize) -> String {
        format!("{call} to PE {pe} failed: {} ({r})", self.lib.strerror(r as c_int))
    }

    /// A put of the staging mailbox (`core::stage`): as [`Fabric::put`], but the target is not
    /// marked for quiet's flush read (the mailbox's reply tells the sender that the write
    /// arrived, and a reply is the library's own, not a put of the program that quiet must
    /// make visible), and, unless `fenced`, the write neither waits for nor consumes a pending
    /// [`Fabric::fence`] (the server's replies, sent by the progress thread, have no part in
    /// the program's ordering).
    ///
    /// # Safety
    /// As [`Fabric::put`].
    pub unsafe fn put_unflushed(&self, pe: usize, src: *const u8, len: usize, at: Remote, fenced: bool) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = if len <= self.info.inject_size { Some(ptr::null_mut()) } else { self.local_desc(&t, src, len) };
        drop(t);
        // The mailbox is registered (region 0), so its sources always have a descriptor; any
        // other source takes the bounced path of a plain put.
        let Some(desc) = desc else {
            // SAFETY: src is readable for len bytes (put_unflushed's contract); it is copied.
            return unsafe { self.put_bounced(pe, dest, src, len, addr, key, false) };
        };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.info.max_msg_size);
            let fence = if fenced {
                self.fence_flags(CLASS_RMA)?
            } else {
                self.classes.fetch_or(CLASS_RMA, Ordering::Relaxed);
                0
            };
            // SAFETY: off < len, so src+off..src+off+n lies in the caller's buffer, readable
            // until quiet (put_unflushed's contract) or injected; desc is its descriptor (null
            // when injected).
            unsafe { self.post_write_flags(pe, dest, src.add(off), n, desc, addr + off as u64, key, fence, false)? };
            off += n;
        }
        Ok(())
    }
}

impl Fabric {
    /// A collective's message (a flag-in-data block, `core::coll::ll`): as
    /// [`Fabric::put_unflushed`] fenced, with `src` free on return where possible: injected up
    /// to `inject_size` bytes, copied into the registered put ring up to
    /// `Options::put_bounce_max` (on tcp;ofi_rxm a longer write's local completion waits for
    /// the target's acknowledgement, a round trip the sender would wait for before reusing
    /// `src`). Returns whether the provider still reads `src` (until [`Fabric::complete_local`]).
    ///
    /// # Safety
    /// `src` is readable for `len` bytes, and stays so, unchanged, until return when this
    /// returns `Ok(false)`, else until [`Fabric::complete_local`] returns.
    pub unsafe fn put_message(&self, pe: usize, src: *const u8, len: usize, at: Remote) -> Result<bool, String> {
        if len > self.info.inject_size && len <= self.put_bounce_max && tracking().is_none() {
            let t = self.tables();
            let (dest, addr, key) = self.target(&t, pe, at, len)?;
            drop(t);
            // SAFETY: src is readable for len bytes until return; it is copied into the ring.
            unsafe { self.put_bounced(pe, dest, src, len, addr, key, true)? };
            return Ok(false);
        }
        // SAFETY: forwarded contract (a source longer than inject_size is kept until
        // complete_local, as the caller is told).
        unsafe { self.put_unflushed(pe, src, len, at, true)? };
        Ok(len > self.info.inject_size)
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        // Let outstanding operations finish (bounded: a dead peer must not hang teardown).
        let (w, r) = (self.issued_w.load(Ordering::Acquire), self.issued_r.load(Ordering::Acquire));
        let t0 = Instant::now();
        while (self.completed_w() < w || self.completed_r() < r) && t0.elapsed() < Duration::from_secs(2) {
            self.poll_cq();
            std::thread::yield_now();
        }
        let t = self.tables.get_mut().unwrap_or_else(|e| e.into_inner());
        for r in t.regions.drain(..) {
            // SAFETY: each region's mr is live and closed once.
            let _ = unsafe { open::close(self.lib, "mr", &mut (*r.mr).fid) };
        }
        if let Some(b) = &mut self.batch {
            if !b.mr.is_null() {
                // SAFETY: the batch buffers' mr is live and closed once.
                let _ = unsafe { open::close(self.lib, "mr", &mut (*b.mr).fid) };
                b.mr = ptr::null_mut();
            }
        }
        if !self.scratch.mr.is_null() {
            // SAFETY: the scratch mr is live and closed once.
            let _ = unsafe { open::close(self.lib, "mr", &mut (*self.scratch.mr).fid) };
            self.scratch.mr = ptr::null_mut();
        }
        self.objs.close_all(self.lib);
    }
}

/// The core shares one Fabric between its threads (API calls, progress thread, proxy).
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Fabric>();
};
