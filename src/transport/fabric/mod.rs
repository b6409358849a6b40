//! The libfabric transport object: one [`Fabric`] owns a fabric, a domain, one RDM endpoint,
//! its address vector (FI_AV_TABLE: the fi_addr of PE `i` is the `i`-th inserted name), a CQ
//! and two completion counters (puts and non-fetching AMOs on `FI_WRITE`, gets and fetching
//! AMOs on `FI_READ`), the memory registrations of the symmetric regions and the peers' keys
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
//!   is visible at its target. AMOs ask FI_DELIVERY_COMPLETE. Puts, where the provider orders
//!   reads after writes (FI_ORDER_RMA_RAW: tcp;ofi_rxm, shm), complete locally and quiet
//!   then reads 8 bytes from each PE written since the last quiet ("flush"); elsewhere (or
//!   with `Options::delivery_per_put`) each put asks FI_DELIVERY_COMPLETE. Measured on
//!   tcp;ofi_rxm: a delivery-complete 8 B put costs an acknowledgement each and runs 2-5x
//!   slower than the flushed ones.
//!   An operation is complete when its counter counts it or the CQ reports it failed (the
//!   counters' error counts differ between providers and are not used).
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
//!   free on return); non-fetching AMOs as fi_atomicmsg with FI_INJECT. The msg forms are
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

pub(crate) mod keys;
mod open;
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
        }
    }
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
             FI_HMEM {}, FI_FENCE {}, inject {} B, puts {}{}, memory keys {}",
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
}

impl OpKind {
    fn what(self) -> &'static str {
        match self {
            OpKind::Put => "put (fi_writemsg)",
            OpKind::Get => "get (fi_readmsg)",
            OpKind::Atomic => "atomic (fi_atomicmsg)",
            OpKind::FetchAtomic => "fetch atomic (fi_fetch_atomicmsg)",
            OpKind::CompareAtomic => "compare atomic (fi_compare_atomicmsg)",
            OpKind::Flush => "flush of puts (fi_readmsg)",
        }
    }
    fn from_bits(b: usize) -> Option<OpKind> {
        [OpKind::Put, OpKind::Get, OpKind::Atomic, OpKind::FetchAtomic, OpKind::CompareAtomic, OpKind::Flush]
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
        let chosen = open::choose(lib, opts.provider.as_deref())?;
        let objs = open::Objects::open(lib, chosen, opts.npes_hint.max(1))?;
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
            put_flush: !opts.delivery_per_put && tx.msg_order & (FI_ORDER_RAW | FI_ORDER_RMA_RAW) != 0,
            wait_fd: objs.wait_fd >= 0,
            key_bits: if dom.mr_mode & FI_MR_PROV_KEY != 0 { 0 } else { 8 * keys::width(dom.mr_key_size) as u32 },
        };
        let mr_mode = dom.mr_mode;
        // Slots, then under FI_MR_LOCAL the put ring and the get buffer.
        let (put_len, get_len) =
            if info.mr_local { (opts.bounce_bytes.max(64 << 10).next_multiple_of(64), GET_BOUNCE) } else { (0, 0) };
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
            stall_timeout: opts.stall_timeout,
            events: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            wait_ends: Default::default(),
            tables: RwLock::new(Tables { peers: Vec::new(), regions: Vec::new(), dirty: Vec::new() }),
            scratch,
            valid_cache: (0..3 * 19 * 10).map(|_| AtomicU8::new(0)).collect(),
            issued_w: AtomicU64::new(0),
            issued_r: AtomicU64::new(0),
            done_w: AtomicU64::new(0),
            done_r: AtomicU64::new(0),
            cq_errs_w: AtomicU64::new(0),
            cq_errs_r: AtomicU64::new(0),
            lost_w: AtomicU64::new(0),
            lost_r: AtomicU64::new(0),
            quiescing: AtomicUsize::new(0),
            nbi_gets: AtomicU64::new(0),
            nbi_gets_seen_done: AtomicU64::new(0),
            nbi_errors: Mutex::new(Vec::new()),
            stalled: Mutex::new(Vec::new()),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            classes: AtomicU64::new(0),
        };
        // The scratch area is local memory only (operands, results, bounce data).
        let len = f.scratch.mem.len() * 8;
        let (mr, desc) = f.reg_mr(f.scratch.base as usize, len, FI_READ | FI_WRITE)?;
        f.scratch.mr = mr;
        f.scratch.desc = desc;
        Ok(f)
    }

    /// What was opened.
    pub fn info(&self) -> &Info {
        &self.info
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
        t.peers.extend_from_slice(&addrs);
        let n = t.peers.len();
        t.dirty.resize_with(n, || AtomicBool::new(false));
        for r in &mut t.regions {
            r.remote.resize(n, None);
        }
        Ok(())
    }

    fn reg_mr(&self, base: usize, len: usize, access: u64) -> Result<(*mut fid_mr, *mut c_void), String> {
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
        let (mr, desc) = self.reg_mr(base as usize, len, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE)?;
        // SAFETY: mr is live; key is what fi_mr_key returns.
        let key = unsafe { (*mr).key };
        let mut t = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let n = t.peers.len();
        t.regions.push(Region { mr, base: base as usize, len, desc, remote: vec![None; n] });
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

    /// Posts with `f`, retrying on -FI_EAGAIN while driving progress.
    fn post(&self, call: &str, pe: usize, mut f: impl FnMut() -> isize) -> Result<(), String> {
        let mut r = 0;
        self.wait_until(|_| {
            r = f();
            r != -(FI_EAGAIN as isize)
        })
        .map_err(|t| self.stalled(&format!("{call} to PE {pe} (-FI_EAGAIN)"), t))?;
        if r == 0 {
            Ok(())
        } else {
            Err(self.err_text(call, pe, r))
        }
    }

    /// fi_cntr_read (which also drives progress where it is manual).
    fn cntr(&self, c: *mut fid_cntr) -> u64 {
        // SAFETY: c is one of our live counters; its table is checked (cheap).
        unsafe { has_op!((*c).ops, fi_ops_cntr, read).map(|f| f(c)).unwrap_or(0) }
    }

    /// Writes completed: counted successes plus failures reported in the CQ.
    fn completed_w(&self) -> u64 {
        let d = self.cntr(self.objs.put_cntr) + self.cq_errs_w.load(Ordering::Acquire) + self.lost_w.load(Ordering::Acquire);
        self.done_w.fetch_max(d, Ordering::Relaxed);
        d
    }

    /// Reads (gets, fetch and compare AMOs) completed, likewise.
    fn completed_r(&self) -> u64 {
        let d = self.cntr(self.objs.get_cntr) + self.cq_errs_r.load(Ordering::Acquire) + self.lost_r.load(Ordering::Acquire);
        self.done_r.fetch_max(d, Ordering::Relaxed);
        d
    }

    /// Drives progress until `done`; `Err` (the time waited) when nothing at all completes
    /// for `stall_timeout`. Spins briefly, then yields: the progress of a manual-progress
    /// peer may need this core. With automatic progress the provider's own thread does the
    /// work, so after a short yielding phase the waiter sleeps (doubling from 2 us to
    /// 100 us): a waiter that only yields stays runnable and competes with that thread for
    /// the cores (the sockets provider on 2 cores under load).
    fn wait_until(&self, mut done: impl FnMut(&Fabric) -> bool) -> Result<(), Duration> {
        let stall_timeout = STALL.with(|c| c.get()).unwrap_or(self.stall_timeout);
        if done(self) {
            return Ok(());
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(&self.waiting);
        let (mut spins, mut mark, mut since) = (0u32, u64::MAX, Instant::now());
        let (start, mut nap) = (since, AUTO_NAP_MIN);
        let manual = self.info.data_progress_manual;
        loop {
            if done(self) {
                return Ok(());
            }
            self.poll_cq();
            spins = spins.wrapping_add(1);
            if spins < 32 {
                std::hint::spin_loop();
                continue;
            }
            if manual || start.elapsed() < AUTO_YIELD {
                std::thread::yield_now();
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(AUTO_NAP_MAX);
            }
            if spins % 64 == 0 {
                let now =
                    self.events.load(Ordering::Acquire) + self.cntr(self.objs.put_cntr) + self.cntr(self.objs.get_cntr);
                if now != mark {
                    (mark, since) = (now, Instant::now());
                } else if since.elapsed() > stall_timeout {
                    return Err(since.elapsed());
                }
            }
        }
    }

    fn stalled(&self, what: &str, waited: Duration) -> String {
        format!(
            "{what}: no completion for {:.1} s ({} puts/AMOs and {} gets outstanding, provider {})",
            waited.as_secs_f64(),
            self.issued_w.load(Ordering::Relaxed).saturating_sub(self.done_w.load(Ordering::Relaxed)),
            self.issued_r.load(Ordering::Relaxed).saturating_sub(self.done_r.load(Ordering::Relaxed)),
            self.info.provider
        )
    }

    /// Holds the posts of other threads until the returned guard is dropped (see the module
    /// comment); nests.
    fn hold_posts(&self) -> Quiescing<'_> {
        QUIESCING.with(|c| c.set(c.get() + 1));
        self.quiescing.fetch_add(1, Ordering::SeqCst);
        Quiescing(&self.quiescing)
    }

    /// Counts one operation of the write (or read) class as issued, before its post: first
    /// waits while another thread waits for every outstanding operation, then (`bound`) while
    /// `max_inflight` of the class are outstanding. A failed post must be reported to
    /// [`Fabric::posted`].
    fn issue(&self, read: bool, bound: bool) -> Result<(), String> {
        if self.quiescing.load(Ordering::SeqCst) > 0 && QUIESCING.with(|c| c.get()) == 0 {
            self.wait_until(|f| f.quiescing.load(Ordering::SeqCst) == 0)
                .map_err(|t| self.stalled("waiting for another thread's quiet", t))?;
        }
        if bound {
            self.reserve(read)?;
        }
        (if read { &self.issued_r } else { &self.issued_w }).fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// The result of a post counted by [`Fabric::issue`]: a failed one will never complete,
    /// so it counts as completed.
    fn posted(&self, read: bool, r: Result<(), String>) -> Result<(), String> {
        if r.is_err() {
            (if read { &self.lost_r } else { &self.lost_w }).fetch_add(1, Ordering::SeqCst);
        }
        r
    }

    /// Waits until no operation of the write (or read) class is outstanding, holding other
    /// threads' posts meanwhile (see the module comment). `Ok`: the operations of the class
    /// issued at the instant that held; `Err`: the time waited without any completion.
    fn wait_idle(&self, read: bool) -> Result<u64, Duration> {
        let _hold = self.hold_posts();
        let mut at = 0;
        self.wait_until(|f| {
            // Completions first, then issues: every completion read was of an operation
            // issued by then, so equality means nothing of the class was in flight then.
            let gets = if read { f.nbi_gets.load(Ordering::SeqCst) } else { 0 };
            let done = if read { f.completed_r() } else { f.completed_w() };
            at = (if read { &f.issued_r } else { &f.issued_w }).load(Ordering::SeqCst);
            if done < at {
                return false;
            }
            if read {
                // Every nbi get counted in `gets` was issued before the completions were read.
                f.nbi_gets_seen_done.fetch_max(gets, Ordering::SeqCst);
            }
            true
        })
        .map(|()| at)
    }

    /// Waits while `max_inflight` writes (or reads) are outstanding.
    fn reserve(&self, read: bool) -> Result<(), String> {
        let (issued, done) = if read { (&self.issued_r, &self.done_r) } else { (&self.issued_w, &self.done_w) };
        let i = issued.load(Ordering::Relaxed);
        if i.saturating_sub(done.load(Ordering::Relaxed)) < self.max_inflight {
            return Ok(());
        }
        self.wait_until(|f| i.saturating_sub(if read { f.completed_r() } else { f.completed_w() }) < f.max_inflight)
            .map_err(|t| self.stalled("waiting for a free slot", t))
    }

    /// Waits until every write issued so far has completed locally (success or error): its
    /// source buffer is free; with `put_flush` a put may not be at the target yet.
    fn drain_writes(&self) -> Result<(), String> {
        self.wait_idle(false).map(|_| ()).map_err(|t| self.stalled("waiting for puts", t))
    }

    /// Posts the flush reads of quiet (and of a fence across classes): 8 bytes from every PE
    /// with puts since its last flush, into the sink slot. The provider orders them after those
    /// puts (FI_ORDER_RMA_RAW), so their completion means the puts are at the target. A PE is
    /// marked after its put is posted, so a flush that misses a concurrent put leaves the mark
    /// for the next one.
    #[allow(clippy::vec_box)] // each waiter's address is a context: it must not move
    fn post_flush(&self) -> Result<Vec<Box<Waiter>>, String> {
        if !self.info.put_flush {
            return Ok(Vec::new());
        }
        let t = self.tables();
        let mut todo = Vec::new();
        for (pe, d) in t.dirty.iter().enumerate() {
            if !d.swap(false, Ordering::AcqRel) {
                continue;
            }
            // Any region of pe will do (a put to pe needed one).
            if let Some((key, base)) = t.regions.iter().find_map(|r| r.remote[pe]) {
                todo.push((pe, t.peers[pe], if self.virt_addr { base } else { 0 }, key));
            }
        }
        drop(t);
        let desc = if self.mr_local { self.scratch.desc } else { ptr::null_mut() };
        let mut waiters = Vec::with_capacity(todo.len());
        for (pe, dest, addr, key) in todo {
            let w = Waiter::new(OpKind::Flush, pe, 1);
            // The sink (slot 0) is written by every flush read and never read.
            let posted = self.post_reads(pe, dest, self.scratch.base, 8, desc, addr, key, Some(&w));
            match posted {
                Ok(()) => waiters.push(w),
                Err(e) => {
                    for w in waiters {
                        let _ = self.wait(w);
                    }
                    return Err(e);
                }
            }
        }
        Ok(waiters)
    }

    /// Waits for flush reads; every error is kept.
    #[allow(clippy::vec_box)]
    fn wait_flush(&self, waiters: Vec<Box<Waiter>>, errors: &mut Vec<String>) {
        for w in waiters {
            if let Err((e, _)) = self.wait(w) {
                errors.push(e);
            }
        }
    }

    /// Every write issued so far is at its target: local completion, then a flush.
    fn complete_writes(&self) -> Result<(), String> {
        let _hold = self.hold_posts();
        let flush = self.post_flush()?;
        let mut errors = Vec::new();
        let target = match self.wait_idle(false) {
            Ok(at) => at,
            Err(t) => {
                self.keep_stalled(flush); // a late completion must find them alive
                return Err(self.stalled("waiting for puts", t));
            }
        };
        self.wait_flush(flush, &mut errors);
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        self.clear_classes(target);
        Ok(())
    }

    /// After every write issued up to `target` was seen complete: forgets the classes posted,
    /// unless a write was issued since (it may still be in flight) or marked since the snapshot.
    /// A write is marked after it is counted as issued, so a mark missing from the snapshot
    /// changes the word before the compare-exchange, and one in it belongs to a write counted
    /// by `target` (complete).
    fn clear_classes(&self, target: u64) {
        let seen = self.classes.load(Ordering::SeqCst);
        if seen & CLASS_BITS != 0 && self.issued_w.load(Ordering::SeqCst) == target {
            let _ = self.classes.compare_exchange(seen, seen & !CLASS_BITS, Ordering::SeqCst, Ordering::Relaxed);
        }
    }

    /// Records a write of `class` (after [`Fabric::issue`] counted it).
    #[inline]
    fn mark(&self, class: u64) {
        let _ = self.classes.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |c| Some(c.wrapping_add(CLASS_MARK) | class));
    }

    /// Takes the calling thread's pending fence on this Fabric, if any.
    #[inline]
    fn take_fence(&self) -> bool {
        // After this thread's thread-locals were destroyed (finalize run by the exit hook: glibc
        // destroys the main thread's before it runs the hooks) the pending fence is unknown:
        // every write is then taken as fenced (ordered after all earlier ones: safe, slower).
        FENCED
            .try_with(|f| {
                let mut f = f.borrow_mut();
                match f.iter().position(|&id| id == self.id) {
                    Some(i) => {
                        f.swap_remove(i);
                        true
                    }
                    None => false,
                }
            })
            .unwrap_or(true)
    }

    /// Whether the calling thread has a fence pending on this Fabric (tests).
    #[cfg(test)]
    fn fence_pending(&self) -> bool {
        FENCED.with(|f| f.borrow().contains(&self.id))
    }

    /// Orders the puts and AMOs the calling thread issued before it before those it issues
    /// after it (to every PE); see the module comment for how. The fence is the calling
    /// thread's: other threads' writes neither take it nor wait for it.
    pub fn fence(&self) {
        // Where the provider orders every write after earlier writes (FI_ORDER_WAW), a fence
        // needs nothing, and FI_FENCE is not used even where offered: the sockets provider
        // (1.17) lets a fenced operation take its connection while it waits for the earlier
        // ones, which blocks the acknowledgements this PE owes the peer on that connection;
        // two PEs fencing towards each other then wait for each other for ever.
        if self.info.msg_order & FI_ORDER_WAW == 0 {
            // (Thread-locals destroyed: `take_fence` fences every write then.)
            let _ = FENCED.try_with(|f| {
                let mut f = f.borrow_mut();
                if !f.contains(&self.id) {
                    f.push(self.id);
                }
            });
        }
    }

    /// The flags a write-class operation of `class` needs for the calling thread's pending
    /// fence (FI_FENCE or 0, after waiting for the outstanding writes where that is the way to
    /// order). The operation is marked with its class once counted as issued ([`Fabric::mark`]).
    fn fence_flags(&self, class: u64) -> Result<u64, String> {
        if !self.take_fence() {
            return Ok(0);
        }
        if self.info.fence {
            // With put_flush the earlier puts may only be complete locally: the fenced
            // operation asks delivery, which makes them delivered first (fi_cq(3)).
            return Ok(FI_FENCE | if self.info.put_flush { FI_DELIVERY_COMPLETE } else { 0 });
        }
        let ordered = match class {
            CLASS_RMA => self.info.msg_order & FI_ORDER_RMA_WAW != 0,
            _ => self.info.msg_order & FI_ORDER_ATOMIC_WAW != 0,
        };
        if !(ordered && self.classes.load(Ordering::SeqCst) & CLASS_BITS & !class == 0) {
            self.complete_writes()?;
        }
        Ok(0)
    }

    #[allow(clippy::too_many_arguments)]
    fn post_write(
        &self,
        pe: usize,
        dest: fi_addr_t,
        src: *const u8,
        len: usize,
        desc: *mut c_void,
        addr: u64,
        key: u64,
    ) -> Result<(), String> {
        let fence = self.fence_flags(CLASS_RMA)?;
        self.post_write_flags(pe, dest, src, len, desc, addr, key, fence, true)
    }

    /// `post_write` with `fence` (FI_FENCE and the like, or 0) instead of the shared fence;
    /// `flush` false leaves the target unmarked, so that quiet does not flush it for this
    /// write (see [`Fabric::put_flag`]).
    #[allow(clippy::too_many_arguments)]
    fn post_write_flags(
        &self,
        pe: usize,
        dest: fi_addr_t,
        src: *const u8,
        len: usize,
        desc: *mut c_void,
        addr: u64,
        key: u64,
        fence: u64,
        flush: bool,
    ) -> Result<(), String> {
        let writemsg = has_op!(
            // SAFETY: ep is live.
            unsafe { (*self.objs.ep).rma },
            fi_ops_rma,
            writemsg
        )?;
        let flags = fence
            | if self.info.put_flush { 0 } else { FI_DELIVERY_COMPLETE }
            | if len <= self.info.inject_size { FI_INJECT } else { 0 };
        self.issue(false, true)?;
        self.mark(CLASS_RMA);
        let iov = libc::iovec { iov_base: src as *mut c_void, iov_len: len };
        let rma = fi_rma_iov { addr, len, key };
        let mut d = desc;
        let msg = fi_msg_rma {
            msg_iov: &iov,
            desc: &mut d,
            iov_count: 1,
            addr: dest,
            rma_iov: &rma,
            rma_iov_count: 1,
            context: tag(OpKind::Put, pe),
            data: 0,
        };
        // SAFETY: ep is live; msg and what it points to live across the call; src stays
        // readable until completion (FI_INJECT: until return) by the caller's contract.
        let r = self.post("fi_writemsg", pe, || unsafe { writemsg(self.objs.ep, &msg, flags) });
        self.posted(false, r)?;
        if self.info.put_flush && flush {
            if let Some(d) = self.tables().dirty.get(pe) {
                d.store(true, Ordering::Release);
            }
        }
        Ok(())
    }

    /// Non-blocking put of `len` bytes from `src` to `at` on PE `pe`: completes at
    /// [`Fabric::quiet`] (puts up to `inject_size` bytes, and puts bounced under FI_MR_LOCAL,
    /// leave `src` free on return; larger ones read `src` until quiet).
    ///
    /// # Safety
    /// `src` is readable for `len` bytes, and stays so, unchanged, until the next quiet
    /// returns (unless `len <= info().inject_size`).
    pub unsafe fn put(&self, pe: usize, src: *const u8, len: usize, at: Remote) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = if len <= self.info.inject_size { Some(ptr::null_mut()) } else { self.local_desc(&t, src, len) };
        drop(t);
        let Some(desc) = desc else { return self.put_bounced(pe, dest, src, len, addr, key) };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.info.max_msg_size);
            // SAFETY: off < len, within the caller's buffer.
            self.post_write(pe, dest, unsafe { src.add(off) }, n, desc, addr + off as u64, key)?;
            off += n;
        }
        Ok(())
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
        let Some(desc) = desc else { return self.put_bounced(pe, dest, src, len, addr, key) };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.info.max_msg_size);
            let fence = if fenced {
                self.fence_flags(CLASS_RMA)?
            } else {
                self.classes.fetch_or(CLASS_RMA, Ordering::Relaxed);
                0
            };
            // SAFETY: off < len, within the caller's buffer.
            self.post_write_flags(pe, dest, unsafe { src.add(off) }, n, desc, addr + off as u64, key, fence, false)?;
            off += n;
        }
        Ok(())
    }

    /// An 8-byte put of `value` for the staging mailbox (a reply's sequence number), as
    /// [`Fabric::put_unflushed`] unfenced; its source is free on return.
    pub fn put_word_unflushed(&self, pe: usize, value: u64, at: Remote) -> Result<(), String> {
        let v = value;
        // SAFETY: v lives until the write has read it: injected (copied by the call), or
        // drained below.
        unsafe { self.put_unflushed(pe, &v as *const u64 as *const u8, 8, at, false)? };
        if self.info.inject_size < 8 {
            return self.drain_writes();
        }
        Ok(())
    }

    /// A put of `len` bytes from `body` to `body_at`, then of the 8-byte `flag` to `flag_at`
    /// on the same PE, such that a target that sees the flag sees the whole body: the flag is
    /// FI_FENCE'd where the provider has it, needs nothing where it orders RMA writes
    /// (FI_ORDER_RMA_WAW), else waits for the body to be at the target. The staging
    /// mailbox's writes: unflushed, the body `fenced` as in [`Fabric::put_unflushed`] (the
    /// flag itself does not use the shared fence of [`Fabric::fence`]); both complete at quiet.
    ///
    /// # Safety
    /// As [`Fabric::put`] for `body`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_ordered(
        &self, pe: usize, body: *const u8, len: usize, body_at: Remote, flag: u64, flag_at: Remote, fenced: bool,
    ) -> Result<(), String> {
        // SAFETY: forwarded contract.
        unsafe { self.put_unflushed(pe, body, len, body_at, fenced)? };
        // Ordered writes first: FI_FENCE can deadlock the sockets provider (see `fence`).
        let fence = if self.info.msg_order & FI_ORDER_RMA_WAW != 0 && self.info.inject_size >= 8 {
            0
        } else if self.info.fence && self.info.inject_size >= 8 {
            FI_FENCE | if self.info.put_flush { FI_DELIVERY_COMPLETE } else { 0 }
        } else {
            self.complete_writes()?;
            0
        };
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, flag_at, 8)?;
        drop(t);
        let v = flag;
        if self.info.inject_size >= 8 {
            self.post_write_flags(pe, dest, &v as *const u64 as *const u8, 8, ptr::null_mut(), addr, key, fence, false)
        } else {
            // SAFETY: v lives until the write completes (drained before return).
            unsafe { self.put_unflushed(pe, &v as *const u64 as *const u8, 8, flag_at, false)? };
            self.drain_writes()
        }
    }

    /// Waits until every put issued so far has read its source (local completion): after it,
    /// the source buffers of earlier puts may be reused.
    pub fn wait_local_writes(&self) -> Result<(), String> {
        self.drain_writes()
    }

    /// An 8-byte put of `value` (a flag of the core's collectives), ordered after this PE's
    /// earlier puts to `pe` as any put is (write-after-write order, or a [`Fabric::fence`]
    /// before it). [`Fabric::quiet`] waits only for its local completion and reads nothing back
    /// from `pe` for it: the target sees its arrival by waiting for the value, and a loop of
    /// barriers then costs no flush read. (A caller that must know it arrived uses an atomic
    /// write, which asks delivery completion.)
    pub fn put_flag(&self, pe: usize, value: u64, at: Remote) -> Result<(), String> {
        let bytes = value.to_ne_bytes();
        if self.info.inject_size < bytes.len() {
            // Not injectable: an ordinary put, whose source must live until it completes.
            // SAFETY: bytes lives until drain_writes returns (the put completed locally).
            unsafe { self.put(pe, bytes.as_ptr(), bytes.len(), at) }?;
            return self.drain_writes();
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, bytes.len())?;
        drop(t);
        // Injected (len <= inject_size): the source is copied before the call returns.
        let fence = self.fence_flags(CLASS_RMA)?;
        self.post_write_flags(pe, dest, bytes.as_ptr(), bytes.len(), ptr::null_mut(), addr, key, fence, false)
    }

    /// Makes the next quiet flush the writes to `pe`, flags included (`put_flag` does not
    /// mark its target, so quiet does not wait for flags to arrive): after that quiet every
    /// earlier write to `pe` is at `pe`. Without `put_flush` every write asks delivery
    /// completion, which quiet waits for anyway.
    pub fn flush_at_next_quiet(&self, pe: usize) {
        if self.info.put_flush {
            if let Some(d) = self.tables().dirty.get(pe) {
                d.store(true, Ordering::Release);
            }
        }
    }

    /// Waits until every put and AMO issued so far has completed locally: the sources of puts
    /// are free again (puts longer than `inject_size` read theirs until then). Unlike
    /// [`Fabric::quiet`] it reads nothing back from the targets.
    pub fn complete_local(&self) -> Result<(), String> {
        self.drain_writes()
    }

    /// A put through the registered ring (FI_MR_LOCAL, unregistered source).
    fn put_bounced(
        &self,
        pe: usize,
        dest: fi_addr_t,
        src: *const u8,
        len: usize,
        addr: u64,
        key: u64,
    ) -> Result<(), String> {
        let s = &self.scratch;
        let chunk_max = (s.put_len / 4).min(self.info.max_msg_size).max(1);
        let mut head = s.put_head.lock().unwrap_or_else(|e| e.into_inner());
        let mut off = 0;
        while off < len {
            let n = (len - off).min(chunk_max);
            if *head + n > s.put_len {
                // Recycle the ring: every put issued so far (ours included) must be complete.
                self.drain_writes()?;
                *head = 0;
            }
            // SAFETY: [put_off + head, + n) lies in the scratch buffer (checked above) and no
            // outstanding operation uses it (ring space is reused only after a drain); src has
            // len readable bytes.
            let b = unsafe {
                let b = s.base.add(s.put_off + *head);
                ptr::copy_nonoverlapping(src.add(off), b, n);
                b
            };
            *head = (*head + n).next_multiple_of(64);
            self.post_write(pe, dest, b, n, s.desc, addr + off as u64, key)?;
            off += n;
        }
        Ok(())
    }

    /// Posts reads of `len` bytes into `dst` (chunked at max_msg_size); `waiter` given: with
    /// FI_COMPLETION and its context (the waiter counts the chunks), else nbi.
    #[allow(clippy::too_many_arguments)]
    fn post_reads(
        &self,
        pe: usize,
        dest: fi_addr_t,
        dst: *mut u8,
        len: usize,
        desc: *mut c_void,
        addr: u64,
        key: u64,
        waiter: Option<&Waiter>,
    ) -> Result<(), String> {
        let readmsg = has_op!(
            // SAFETY: ep is live.
            unsafe { (*self.objs.ep).rma },
            fi_ops_rma,
            readmsg
        )?;
        // One chunk: counted as issued, posted, a failed post counted as completed.
        let chunk = |off: usize, n: usize| -> Result<(), String> {
            self.issue(true, waiter.is_none())?;
            if waiter.is_none() {
                self.nbi_gets.fetch_add(1, Ordering::SeqCst);
            }
            // SAFETY: off < len, inside the caller's buffer.
            let iov = libc::iovec { iov_base: unsafe { dst.add(off) }.cast(), iov_len: n };
            let rma = fi_rma_iov { addr: addr + off as u64, len: n, key };
            let mut d = desc;
            let msg = fi_msg_rma {
                msg_iov: &iov,
                desc: &mut d,
                iov_count: 1,
                addr: dest,
                rma_iov: &rma,
                rma_iov_count: 1,
                context: waiter.map_or(tag(OpKind::Get, pe), Waiter::ctx),
                data: 0,
            };
            let flags = if waiter.is_some() { FI_COMPLETION } else { 0 };
            // SAFETY: ep is live; msg lives across the call; dst stays writable until the
            // read completes (blocking: we wait; nbi: the caller's contract, until quiet).
            let r = self.post("fi_readmsg", pe, || unsafe { readmsg(self.objs.ep, &msg, flags) });
            self.posted(true, r)
        };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.info.max_msg_size);
            if let Err(e) = chunk(off, n) {
                if let Some(w) = waiter {
                    // The chunks not posted will never complete: take them off, then wait
                    // for the posted ones before the waiter may go.
                    let unposted = len.div_ceil(self.info.max_msg_size.max(1)) - off / self.info.max_msg_size.max(1);
                    w.pending.fetch_sub(unposted, Ordering::AcqRel);
                }
                return Err(e);
            }
            off += n;
        }
        Ok(())
    }

    /// Blocking get: `len` bytes from `at` on PE `pe` into `dst`, complete on return.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes until the call returns (after a stall error: for as
    /// long as the provider may still complete the read).
    pub unsafe fn get(&self, pe: usize, dst: *mut u8, len: usize, at: Remote) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = self.local_desc(&t, dst, len);
        drop(t);
        let Some(desc) = desc else { return self.get_bounced(pe, dest, dst, len, addr, key) };
        let w = Waiter::new(OpKind::Get, pe, len.div_ceil(self.info.max_msg_size.max(1)));
        let posted = self.post_reads(pe, dest, dst, len, desc, addr, key, Some(&w));
        let done = self.wait(w).map_err(|e| e.0);
        posted.and(done)
    }

    /// Non-blocking get: completes at [`Fabric::quiet`] (under FI_MR_LOCAL into unregistered
    /// memory: before it returns, through the bounce buffer).
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes, and not otherwise accessed, until the next quiet
    /// returns.
    pub unsafe fn get_nbi(&self, pe: usize, dst: *mut u8, len: usize, at: Remote) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = self.local_desc(&t, dst, len);
        drop(t);
        match desc {
            Some(desc) => self.post_reads(pe, dest, dst, len, desc, addr, key, None),
            None => self.get_bounced(pe, dest, dst, len, addr, key),
        }
    }

    fn get_bounced(
        &self,
        pe: usize,
        dest: fi_addr_t,
        dst: *mut u8,
        len: usize,
        addr: u64,
        key: u64,
    ) -> Result<(), String> {
        let s = &self.scratch;
        let _g = s.get_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: get_off lies in the scratch buffer; only the holder of get_lock uses it.
        let b = unsafe { s.base.add(s.get_off) };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(s.get_len);
            let w = Waiter::new(OpKind::Get, pe, n.div_ceil(self.info.max_msg_size.max(1)));
            let posted = self.post_reads(pe, dest, b, n, s.desc, addr + off as u64, key, Some(&w));
            self.wait(w).map_err(|e| e.0)?;
            posted?;
            // SAFETY: the read into b completed; dst has len writable bytes.
            unsafe { ptr::copy_nonoverlapping(b, dst.add(off), n) };
            off += n;
        }
        Ok(())
    }

    /// Keeps the waiters of stalled operations until the Fabric (and its CQ) is closed.
    #[allow(clippy::vec_box)] // the boxes are the waiters' fixed addresses (see `stalled`)
    fn keep_stalled(&self, ws: Vec<Box<Waiter>>) {
        self.stalled.lock().unwrap_or_else(|e| e.into_inner()).extend(ws);
    }

    /// Waits for a waiter's operations; `Err` names the operation, the PE and the error. On a
    /// stall the waiter is kept until the CQ is closed (a late completion must find it alive)
    /// and `Err` says so. The flag in `Err` is true for a stall.
    fn wait(&self, w: Box<Waiter>) -> Result<(), (String, bool)> {
        if let Err(t) = self.wait_until(|_| w.pending.load(Ordering::Acquire) == 0) {
            let text = self.stalled(&format!("{} from PE {}", w.kind.what(), w.pe), t);
            self.keep_stalled(vec![w]);
            return Err((text, true));
        }
        match w.err.load(Ordering::Acquire) {
            0 => Ok(()),
            _ => {
                let m = w.msg.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
                Err((format!("{} from PE {} failed: {m}", w.kind.what(), w.pe), false))
            }
        }
    }

    /// Whether the provider has the atomic `op` on `dt` for calls of `kind` (fi_atomicvalid,
    /// fi_fetch_atomicvalid, fi_compare_atomicvalid; asked once, then cached).
    pub fn atomic_valid(&self, op: AtomicOp, dt: Dtype, kind: AtomicKind) -> bool {
        let k = kind as usize * 190 + op as usize * 10 + dt as usize;
        match self.valid_cache[k].load(Ordering::Relaxed) {
            1 => return true,
            2 => return false,
            _ => {}
        }
        // SAFETY: ep is live; its atomic table (possibly NULL) is checked by has_op!.
        let ops = unsafe { (*self.objs.ep).atomic };
        let f = match kind {
            AtomicKind::Write => has_op!(ops, fi_ops_atomic, writevalid),
            AtomicKind::Fetch => has_op!(ops, fi_ops_atomic, readwritevalid),
            AtomicKind::Compare => has_op!(ops, fi_ops_atomic, compwritevalid),
        };
        let mut count = 0usize;
        // SAFETY: ep is live; count is writable.
        let ok = f.is_ok_and(|f| unsafe { f(self.objs.ep, dt as c_int, op as c_int, &mut count) } == 0 && count >= 1);
        self.valid_cache[k].store(if ok { 1 } else { 2 }, Ordering::Relaxed);
        ok
    }

    fn check_atomic(&self, op: AtomicOp, dt: Dtype, kind: AtomicKind) -> Result<(), String> {
        if self.atomic_valid(op, dt, kind) {
            Ok(())
        } else {
            Err(format!("provider {} has no {kind:?} atomic {op:?} on {dt:?}", self.info.provider))
        }
    }

    /// Non-fetching AMO `op` with `operand` (the low `dt.size()` bytes, native order) on the
    /// element at `at` on PE `pe`; non-blocking, completes at [`Fabric::quiet`].
    pub fn atomic(&self, pe: usize, op: AtomicOp, dt: Dtype, at: Remote, operand: u64) -> Result<(), String> {
        self.check_atomic(op, dt, AtomicKind::Write)?;
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, dt.size())?;
        drop(t);
        // SAFETY: ep is live.
        let writemsg = has_op!(unsafe { (*self.objs.ep).atomic }, fi_ops_atomic, writemsg)?;
        let flags = FI_INJECT | FI_DELIVERY_COMPLETE | self.fence_flags(CLASS_ATOMIC)?;
        self.issue(false, true)?;
        self.mark(CLASS_ATOMIC);
        let mut val = operand;
        let ioc = fi_ioc { addr: (&mut val as *mut u64).cast(), count: 1 };
        let rma = fi_rma_ioc { addr, count: 1, key };
        let msg = fi_msg_atomic {
            msg_iov: &ioc,
            desc: ptr::null_mut(),
            iov_count: 1,
            addr: dest,
            rma_iov: &rma,
            rma_iov_count: 1,
            datatype: dt as c_int,
            op: op as c_int,
            context: tag(OpKind::Atomic, pe),
            data: 0,
        };
        // SAFETY: ep is live; msg and the operand live across the call (FI_INJECT copies it;
        // on little-endian the low bytes of val come first, which is what dt.size() reads).
        let r = self.post("fi_atomicmsg", pe, || unsafe { writemsg(self.objs.ep, &msg, flags) });
        self.posted(false, r)
    }

    /// A free AMO slot (operand, compare, result: 3 of its 4 words) and its address.
    fn slot(&self) -> Result<(u32, *mut u64), String> {
        let mut got = None;
        self.wait_until(|f| {
            got = f.scratch.free_slots.lock().unwrap_or_else(|e| e.into_inner()).pop();
            got.is_some()
        })
        .map_err(|t| self.stalled("waiting for an AMO slot", t))?;
        let i = got.unwrap_or_default();
        // SAFETY: slot i lies in the scratch buffer and is ours until released.
        Ok((i, unsafe { self.scratch.base.add(i as usize * SLOT_BYTES) }.cast::<u64>()))
    }

    fn release(&self, i: u32) {
        self.scratch.free_slots.lock().unwrap_or_else(|e| e.into_inner()).push(i);
    }

    /// Fetching AMO (fetch_add, swap = Write, fetch = Read, ...): returns the old value
    /// (low `dt.size()` bytes, zero-extended); blocking.
    pub fn fetch_atomic(&self, pe: usize, op: AtomicOp, dt: Dtype, at: Remote, operand: u64) -> Result<u64, String> {
        self.amo_fetching(pe, op, dt, at, operand, None)
    }

    /// Compare AMO (`op` one of the Cswap*/Mswap): returns the old value; blocking.
    pub fn compare_atomic(
        &self,
        pe: usize,
        op: AtomicOp,
        dt: Dtype,
        at: Remote,
        compare: u64,
        operand: u64,
    ) -> Result<u64, String> {
        self.amo_fetching(pe, op, dt, at, operand, Some(compare))
    }

    fn amo_fetching(
        &self,
        pe: usize,
        op: AtomicOp,
        dt: Dtype,
        at: Remote,
        operand: u64,
        compare: Option<u64>,
    ) -> Result<u64, String> {
        let kind = if compare.is_some() { AtomicKind::Compare } else { AtomicKind::Fetch };
        self.check_atomic(op, dt, kind)?;
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, dt.size())?;
        drop(t);
        // SAFETY: ep is live.
        let ops = unsafe { (*self.objs.ep).atomic };
        let (fetch, comp) = match compare {
            None => (Some(has_op!(ops, fi_ops_atomic, readwritemsg)?), None),
            Some(_) => (None, Some(has_op!(ops, fi_ops_atomic, compwritemsg)?)),
        };
        let flags = FI_COMPLETION | self.fence_flags(CLASS_ATOMIC)?;
        let (slot, p) = self.slot()?;
        let wk = if compare.is_some() { OpKind::CompareAtomic } else { OpKind::FetchAtomic };
        let w = Waiter::new(wk, pe, 1);
        // SAFETY: p points to the slot's 4 u64 words: operand, compare, result.
        let (pv, pc, pr) = unsafe {
            p.write(operand);
            p.add(1).write(compare.unwrap_or(0));
            p.add(2).write(0);
            (p, p.add(1), p.add(2))
        };
        let desc = if self.mr_local { self.scratch.desc } else { ptr::null_mut() };
        let mut d = [desc, desc, desc];
        let ioc = fi_ioc { addr: pv.cast(), count: 1 };
        let cioc = fi_ioc { addr: pc.cast(), count: 1 };
        let mut rioc = fi_ioc { addr: pr.cast(), count: 1 };
        let rma = fi_rma_ioc { addr, count: 1, key };
        let msg = fi_msg_atomic {
            msg_iov: &ioc,
            desc: &mut d[0],
            iov_count: 1,
            addr: dest,
            rma_iov: &rma,
            rma_iov_count: 1,
            datatype: dt as c_int,
            op: op as c_int,
            context: w.ctx(),
            data: 0,
        };
        let d1: *mut *mut c_void = &mut d[1];
        let d2: *mut *mut c_void = &mut d[2];
        if let Err(e) = self.issue(true, false) {
            self.release(slot);
            return Err(e);
        }
        // Not marked: it is complete when the call returns (fetched means applied), before
        // anything this thread issues later.
        // SAFETY: ep is live; msg, the iocs and the slot live until the waiter is done (we
        // wait below before releasing the slot).
        let posted =
            self.post(if compare.is_some() { "fi_compare_atomicmsg" } else { "fi_fetch_atomicmsg" }, pe, || unsafe {
                match (fetch, comp) {
                    (Some(f), _) => f(self.objs.ep, &msg, &mut rioc, d2, 1, flags),
                    (_, Some(c)) => c(self.objs.ep, &msg, &cioc, d1, 1, &mut rioc, d2, 1, flags),
                    _ => unreachable!(),
                }
            });
        match self.posted(true, posted) {
            Ok(()) => {
                if let Err((e, stalled)) = self.wait(w) {
                    // A stalled operation keeps its slot (it may still complete into it).
                    if !stalled {
                        self.release(slot);
                    }
                    return Err(e);
                }
            }
            Err(e) => {
                self.release(slot);
                return Err(e);
            }
        }
        // SAFETY: the operation is complete; the slot is still ours.
        let old = unsafe { pr.read() };
        self.release(slot);
        let bits = dt.size() * 8;
        Ok(if bits == 64 { old } else { old & ((1u64 << bits) - 1) })
    }

    /// Reads up to 16 CQ entries (driving progress) and dispatches them: waiters are marked
    /// done, nbi errors are kept for quiet.
    fn poll_cq(&self) {
        // SAFETY: cq is live; its table was checked at open (read and readerr are required).
        let ops = unsafe { (*self.objs.cq).ops };
        let Ok(read) = has_op!(ops, fi_ops_cq, read) else { return };
        let mut buf = [ptr::null_mut::<c_void>(); 16];
        loop {
            // SAFETY: buf holds 16 fi_cq_entry (one context pointer each).
            let r = unsafe { read(self.objs.cq, buf.as_mut_ptr().cast(), buf.len()) };
            if r > 0 {
                self.events.fetch_add(r as u64, Ordering::AcqRel);
                for &ctx in &buf[..r as usize] {
                    self.complete(ctx, 0, "");
                }
                if (r as usize) < buf.len() {
                    return;
                }
            } else if r == -(FI_EAVAIL as isize) {
                self.read_cq_error();
            } else {
                return;
            }
        }
    }

    fn read_cq_error(&self) {
        // SAFETY: cq is live and its ops table checked; e is a zeroed entry (err_data_size 0:
        // the provider points err_data at its own buffer).
        let (r, e) = unsafe {
            let Ok(readerr) = has_op!((*self.objs.cq).ops, fi_ops_cq, readerr) else { return };
            let mut e: fi_cq_err_entry = std::mem::zeroed();
            (readerr(self.objs.cq, &mut e, 0), e)
        };
        if r != 1 {
            return;
        }
        self.events.fetch_add(1, Ordering::AcqRel);
        let err = if e.err == 0 { FI_EOTHER } else { e.err.abs() };
        let prov = self.prov_text(&e);
        self.complete(e.op_context, err, &prov);
    }

    /// The provider's words for an error entry (fi_cq_strerror), with its errno.
    fn prov_text(&self, e: &fi_cq_err_entry) -> String {
        let mut buf = [0 as std::ffi::c_char; 128];
        // SAFETY: cq is live; buf has the length given; the result is NULL or a NUL-terminated
        // string (ours or the provider's) valid until the next CQ call on this thread.
        let text = unsafe {
            match has_op!((*self.objs.cq).ops, fi_ops_cq, strerror) {
                Ok(f) => {
                    let p = f(self.objs.cq, e.prov_errno, e.err_data, buf.as_mut_ptr(), buf.len());
                    (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
                }
                Err(_) => None,
            }
        };
        match text {
            Some(t) if !t.is_empty() => format!("provider errno {}: {t}", e.prov_errno),
            _ => format!("provider errno {}", e.prov_errno),
        }
    }

    /// One completion (err 0: success; `prov` the provider's words on an error) for `ctx`.
    fn complete(&self, ctx: *mut c_void, err: c_int, prov: &str) {
        let v = ctx as usize;
        if v == 0 || v & 1 == 1 {
            if err != 0 {
                let kind = OpKind::from_bits((v >> 1) & 0x7f).filter(|_| v != 0);
                let what = match kind {
                    Some(k) => format!("{} to PE {}", k.what(), v >> 8),
                    None => "a provider-internal transfer".to_string(),
                };
                let text = format!("{what} failed: {} ({prov})", self.lib.strerror(err));
                self.nbi_errors.lock().unwrap_or_else(|e| e.into_inner()).push(text);
                // Counted as complete only now that its error is recorded: a quiet that sees
                // the count (on another thread: the progress thread read this entry) must
                // find the error too, not return Ok with it.
                match kind {
                    Some(OpKind::Get) => self.cq_errs_r.fetch_add(1, Ordering::AcqRel),
                    Some(_) => self.cq_errs_w.fetch_add(1, Ordering::AcqRel),
                    None => 0, // not one of ours: a provider-internal transfer
                };
            }
            return;
        }
        // SAFETY: an even non-NULL context is a Waiter whose thread waits until pending is 0,
        // so it is alive here; this is the last access before that thread may go.
        let w = unsafe { &*(ctx as *const Waiter) };
        if err != 0 {
            self.cq_errs_r.fetch_add(1, Ordering::AcqRel);
            let mut m = w.msg.lock().unwrap_or_else(|e| e.into_inner());
            if m.is_none() {
                *m = Some(format!("{} ({prov})", self.lib.strerror(err)));
            }
            drop(m);
            w.err.store(err, Ordering::Release);
        }
        w.pending.fetch_sub(1, Ordering::AcqRel);
    }

    /// One cheap step of progress for manual-progress providers: reads a counter and drains
    /// the CQ; returns at once while another thread of this Fabric is in a wait (that thread
    /// drives progress, and two threads in the provider only contend for its locks). Call
    /// it from a progress thread.
    pub fn progress(&self) {
        if self.waiting.load(Ordering::Relaxed) > 0 {
            return; // a thread in a wait drives progress already
        }
        self.completed_w();
        self.poll_cq();
    }

    /// Whether [`Fabric::progress_wait`] can sleep until the provider has work (a
    /// manual-progress provider whose CQ has a wait fd).
    pub fn has_wait_fd(&self) -> bool {
        self.objs.wait_fd >= 0
    }

    /// The progress thread's step for a manual-progress provider: [`Fabric::progress`], then
    /// a sleep until the provider has work (the CQ's wait fd, after fi_trywait says nothing
    /// is pending) or for at most `max`, so that a passive target serves an arriving
    /// operation at once rather than at the thread's next turn. Without a wait fd, or while
    /// another thread of this Fabric waits (it drives progress), a plain sleep of `idle`.
    pub fn progress_wait(&self, idle: Duration, max: Duration) {
        let fd = self.objs.wait_fd;
        if fd < 0 || self.waiting.load(Ordering::Relaxed) > 0 {
            self.wait_ends[3].fetch_add(1, Ordering::Relaxed);
            self.progress();
            std::thread::sleep(idle);
            return;
        }
        self.completed_w();
        self.poll_cq();
        // SAFETY: fabric and cq are live; trywait is the fabric's own (checked by has_op!).
        let r = unsafe {
            let Ok(trywait) = has_op!((*self.objs.fabric).ops, fi_ops_fabric, trywait) else {
                std::thread::sleep(idle);
                return;
            };
            let mut f = &mut (*self.objs.cq).fid as *mut fid;
            trywait(self.objs.fabric, &mut f, 1)
        };
        if r != 0 {
            // -FI_EAGAIN: work is pending; the caller's next step progresses it (after the
            // timer's sleep, so that a provider that keeps answering -FI_EAGAIN costs no
            // more than the timer did).
            self.wait_ends[2].fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(idle);
            return;
        }
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ts = libc::timespec { tv_sec: max.as_secs() as libc::time_t, tv_nsec: max.subsec_nanos() as libc::c_long };
        // SAFETY: p is one valid pollfd; ts a valid timeout; no signal mask change.
        let woke = unsafe { libc::ppoll(&mut p, 1, &ts, ptr::null()) } > 0;
        self.wait_ends[usize::from(!woke)].fetch_add(1, Ordering::Relaxed);
        if woke {
            // Apply what arrived now, so that the caller's checks after this step (abort
            // word, staging mailbox) see it.
            self.completed_w();
            self.poll_cq();
        }
    }

    /// How the progress thread's waits have ended so far: (woken by the wait fd, timed out,
    /// slept for pending work, slept while another thread waited or without a wait fd).
    pub fn wait_stats(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.wait_ends[i].load(Ordering::Relaxed))
    }

    /// Waits until every put, AMO and nbi get issued before the call has completed; `Err`
    /// lists the operations that failed since the last quiet (operation, PE, error text).
    pub fn quiet(&self) -> Result<(), String> {
        let _hold = self.hold_posts();
        let gets = self.nbi_gets.load(Ordering::SeqCst) != self.nbi_gets_seen_done.load(Ordering::SeqCst);
        #[cfg(ishmem_mutation = "get_nbi_early")]
        let gets = gets && false;
        let flush = self.post_flush()?;
        // Nothing outstanding, not just as many completions as issued before the call (see
        // the module comment: the flush reads posted just now may complete before an nbi get
        // issued earlier, to another PE). Writes, then the flush reads (their own CQ entries),
        // then, where an nbi get may be outstanding, the reads: polling the read counter as
        // well cost put + quiet ~15% on tcp;ofi_rxm.
        let mut list = Vec::new();
        let mut w = u64::MAX;
        match self.wait_idle(false) {
            Ok(at) => {
                w = at;
                self.wait_flush(flush, &mut list);
                if let Err(t) = if gets { self.wait_idle(true).map(|_| ()) } else { Ok(()) } {
                    list.push(self.stalled("quiet", t));
                }
            }
            Err(t) => {
                self.keep_stalled(flush); // a late completion must find them alive
                list.push(self.stalled("quiet", t));
            }
        }
        if list.is_empty() {
            self.clear_classes(w);
        }
        // Everything this thread issued is complete: its pending fence has nothing to order.
        self.take_fence();
        let mut errs = std::mem::take(&mut *self.nbi_errors.lock().unwrap_or_else(|e| e.into_inner()));
        errs.append(&mut list);
        let list = errs;
        if list.is_empty() {
            Ok(())
        } else {
            Err(list.join("; "))
        }
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
