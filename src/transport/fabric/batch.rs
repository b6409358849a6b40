//! Non-fetching AMOs in batches (issue 31).
//!
//! tcp;ofi_rxm has no remote atomics: rxm sends every AMO as a message of its own, applies it
//! in the target's progress and answers every one, also a non-fetching one, with a response
//! message. Each AMO then costs two messages and four system calls on the two PEs, which
//! capped `shmem_atomic_add` at ~0.07 Mops/s here. So where the provider sends messages,
//! non-fetching AMOs (add, and, or, xor, set) to another PE are collected per target and sent
//! as one message of up to [`BATCH_MAX`] entries (`fi_sendmsg`); the target applies them with
//! the CPU's atomics (as rxm's own atomics and the PEs of the node do) inside its CQ reading
//! and answers each message with one acknowledgement. A batch goes out at once when nothing
//! to its target is unacknowledged (an isolated AMO is not delayed), or when it holds a put
//! with a signal (someone waits for it) or is full, while fewer than [`UNACKED_MAX`] batches
//! to its target are in flight; else when an acknowledgement arrives
//! (sent from the next wait or progress step, never from inside the CQ reading). Quiet and
//! fence send what is collected and wait for every acknowledgement; a fetching AMO to a PE
//! first waits for the batches to that PE (so a fetch sees this thread's earlier adds, as rxm's
//! ordered atomics gave).
//!
//! An entry names the target by the region's key and the wire address, as an RMA does: the
//! target applies it only inside one of its own registered regions with that key, aligned, and
//! reports every rejected entry back (quiet's error). `ISHMEMI_OFI_AMO_BATCH=0` (or
//! `Options::amo_batch`) sends every AMO through the provider's atomics instead (an A/B aid).
//!
//! A target applies one PE's batches in the order they were sent ([`InOrder`]): two threads
//! reading its CQ may take two of them at once, and the later waits (copied) until the earlier
//! is applied. A fence between two batched operations to one PE then waits for nothing
//! (`Fabric::batch_fence`); one between a provider write and a batched operation still waits.
//!
//! More uses of the same messages (issue 31, third and ninth rounds):
//! - **A put** of up to [`PUT_BATCH_MAX`] bytes (`Fabric::put_batched`): a put entry (address,
//!   key, length) and the data in the entries after it, copied at the call. A stream of small
//!   puts then costs one message per batch instead of one provider write (and, on tcp;ofi_rxm,
//!   one acknowledgement message) each. It completes with the batch's acknowledgement; a get
//!   from the PE first waits for the batched puts to it (`Fabric::batch_puts_settle`).
//! - **A put with a signal** of up to [`PUT_INLINE_MAX`] bytes is one group of entries in a
//!   batch: a put entry (address, key, length), the data in the entries after it, then the
//!   signal's entry (a set or an add). The target copies the data, then applies the signal
//!   with a CPU atomic in the same pass, so a PE that sees the signal sees the data; a put the
//!   target rejects takes its signal with it (never a signal without its data). It completes
//!   with the batch's acknowledgement, at quiet, like the batch's AMOs.
//! - **Fetching AMOs** (fetch, swap, compare-swap, fetch-add/and/or/xor on integers) can go
//!   as one request message each (`fi_sendmsg` with `FI_INJECT`), applied by the target with
//!   the CPU's atomics in its CQ reading and answered by one reply message with the old value.
//!   Every AMO to another PE then takes the target's CPU atomics, and those to itself rxm's
//!   software atomics, which libfabric applies with the same instructions: atomic with each
//!   other. Off by default (`Options::amo_fetch_msg`, `ISHMEMI_OFI_AMO_FETCH_MSG=1`): it
//!   was no faster than rxm's own fetching atomics in the alternating runs of
//!   docs/PERFORMANCE.md (issue 31, third round).

use super::sys::*;
use super::*;

/// AMOs per message at most.
pub(super) const BATCH_MAX: usize = 64;
/// Batches to one PE sent and not yet acknowledged, at most.
pub(super) const UNACKED_MAX: u64 = 8;
const ENTRY_BYTES: usize = 32;
const HDR_BYTES: usize = 24;
pub(super) const MSG_BYTES: usize = HDR_BYTES + BATCH_MAX * ENTRY_BYTES;
const SEND_BUFS: usize = 64;
const RECV_BUFS: usize = 32;
const MAGIC_BATCH: u32 = 0x4953_4201;
const MAGIC_ACK: u32 = 0x4953_4202;
const MAGIC_FETCH: u32 = 0x4953_4203;
const MAGIC_FETCH_REPLY: u32 = 0x4953_4204;
/// An entry's `op` for the put of a put-with-signal: `operand` bytes of data follow in the
/// next entries, and the entry after the data is its signal.
pub(super) const OP_PUT: u8 = 0xf0;
/// The largest put of a put-with-signal that travels inside a batch (the put entry and the
/// signal entry take two of the message's entries).
pub(super) const PUT_INLINE_MAX: usize = (BATCH_MAX - 2) * ENTRY_BYTES;
/// An entry's `op` for a put without a signal: `operand` bytes of data follow in the next
/// entries.
pub(super) const OP_PUT_DATA: u8 = 0xf1;
/// The largest put that travels inside a batch (its entry takes one of the message's).
pub(super) const PUT_BATCH_MAX: usize = (BATCH_MAX - 1) * ENTRY_BYTES;
/// Batches from one PE kept because an earlier one was not applied yet, at most: the sender
/// has at most [`UNACKED_MAX`] unacknowledged, so while one waits at most `UNACKED_MAX - 1`
/// later ones can arrive; one more means the awaited one is lost (its send failed, which the
/// sender settled as failed), and the kept ones are applied from the first.
const STASH_MAX: usize = UNACKED_MAX as usize - 1;
/// Fetching AMOs waiting for their reply, at most (threads of one PE).
const FETCH_CELLS: usize = 64;
/// A fetch cell's state.
const CELL_IDLE: u8 = 0;
const CELL_PENDING: u8 = 1;
const CELL_DONE: u8 = 2;
const CELL_REJECTED: u8 = 3;
const CELL_FAILED: u8 = 4;

/// Why a target rejected an entry (the acknowledgement's code).
const REJ_KEY: u32 = 1;
const REJ_RANGE: u32 = 2;
const REJ_OP: u32 = 3;

fn reject_text(code: u32) -> &'static str {
    match code {
        REJ_KEY => "no registered region of the target has that key",
        REJ_RANGE => "the address is outside the region or misaligned",
        REJ_OP => "operation or datatype not supported by the target",
        _ => "unknown reason",
    }
}

/// One AMO on the wire (native byte order: the PEs of one job share one architecture).
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub(super) struct Entry {
    pub addr: u64,
    pub key: u64,
    pub operand: u64,
    pub op: u8,
    pub dt: u8,
    pub _pad: [u8; 6],
}

/// A message's header: a batch (n entries follow) or an acknowledgement of batch `seq`
/// (n entries applied, `errs` of them rejected for reason `code`).
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Hdr {
    magic: u32,
    src: u32,
    n: u32,
    errs: u16,
    code: u16,
    seq: u64,
}

/// A fetching AMO's request: `hdr.seq` names the requester's cell ((generation << 8) | cell).
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct FetchReq {
    hdr: Hdr,
    addr: u64,
    key: u64,
    operand: u64,
    compare: u64,
    op: u8,
    dt: u8,
    _pad: [u8; 6],
}

/// The reply: the old value, or (`hdr.errs` 1) the rejection's `hdr.code`.
#[derive(Clone, Copy, Default)]
#[repr(C)]
struct FetchReply {
    hdr: Hdr,
    value: u64,
}

/// The bytes of a small message owed to a peer (an acknowledgement or a reply whose post
/// found the provider busy).
#[derive(Clone, Copy)]
struct Owed {
    pe: usize,
    words: [u64; 4],
    len: usize,
}

/// What the requester of a fetching AMO waits on (one per cell, behind a mutex).
#[derive(Default)]
struct FetchCell {
    gen: u64,
    pe: usize,
    state: u8,
    code: u16,
    value: u64,
    err: Option<String>,
}

const _: () = assert!(std::mem::size_of::<Entry>() == ENTRY_BYTES && std::mem::size_of::<Hdr>() == HDR_BYTES);
const _: () = assert!(std::mem::size_of::<FetchReq>() == 64 && std::mem::size_of::<FetchReply>() == 32);
/// The smallest inject size with which fetching AMOs go as messages (their request).
pub(super) const FETCH_MSG_INJECT: usize = std::mem::size_of::<FetchReq>();

/// Whether this fetching AMO can go as a request message: integers, and the operations the
/// core uses (fetch, swap, compare-swap, fetch-add/and/or/xor).
pub(super) fn fetch_batchable(op: AtomicOp, dt: Dtype) -> bool {
    !matches!(dt, Dtype::F32 | Dtype::F64)
        && matches!(
            op,
            AtomicOp::Sum | AtomicOp::Band | AtomicOp::Bor | AtomicOp::Bxor | AtomicOp::Write | AtomicOp::Read | AtomicOp::Cswap
        )
}

/// Whether this AMO can go in a batch: the ops and types the target applies.
pub(super) fn batchable(op: AtomicOp, dt: Dtype) -> bool {
    let int = !matches!(dt, Dtype::F32 | Dtype::F64);
    match op {
        AtomicOp::Sum | AtomicOp::Band | AtomicOp::Bor | AtomicOp::Bxor => int,
        AtomicOp::Write => true,
        _ => false,
    }
}

/// A put's group of entries: its entry (`op`: [`OP_PUT`] or [`OP_PUT_DATA`]), the `len` bytes
/// of `src` in the entries after it, then `sig` if any; returns the entries and how many of
/// them the group uses.
///
/// # Safety
/// `src` is readable for `len` bytes.
unsafe fn put_group(src: *const u8, len: usize, addr: u64, key: u64, op: u8, sig: Option<Entry>) -> ([Entry; BATCH_MAX], usize) {
    let nd = len.div_ceil(ENTRY_BYTES);
    assert!(1 + nd + sig.is_some() as usize <= BATCH_MAX, "a batched put of {len} bytes does not fit a message");
    let mut group = [Entry::default(); BATCH_MAX];
    group[0] = Entry { addr, key, operand: len as u64, op, dt: 0, _pad: [0; 6] };
    // SAFETY: group[1..1+nd] holds nd * ENTRY_BYTES >= len bytes of plain data (1 + nd <=
    // BATCH_MAX, checked above); src is readable for len bytes (the caller's contract).
    unsafe { ptr::copy_nonoverlapping(src, group[1..].as_mut_ptr().cast::<u8>(), len) };
    let mut k = 1 + nd;
    if let Some(e) = sig {
        group[k] = e;
        k += 1;
    }
    (group, k)
}

#[derive(Default)]
struct PeState {
    entries: Vec<Entry>,
    /// A put is among `entries`.
    put_collected: bool,
    /// One past the sequence number of the last batch sent with a put in it.
    put_below: u64,
    next_seq: u64,
    /// Every batch below this sequence number is acknowledged; `ooo` bit i: `acked_below + 1
    /// + i` is (acknowledgements of one PE may come out of order when two threads read the
    /// target's CQ).
    acked_below: u64,
    ooo: u64,
}

impl PeState {
    fn unacked(&self) -> u64 {
        self.next_seq - self.acked_below
    }
    fn ack(&mut self, seq: u64) {
        if seq < self.acked_below || seq >= self.next_seq {
            return;
        }
        let i = seq - self.acked_below;
        self.ooo |= 1 << i;
        while self.ooo & 1 == 1 {
            self.ooo >>= 1;
            self.acked_below += 1;
        }
    }
}

struct Senders {
    pes: Vec<PeState>,
    /// PEs with collected entries.
    dirty: Vec<usize>,
}

/// What a send buffer carries, for its completion.
#[derive(Clone, Copy, Default)]
struct SendMeta {
    pe: usize,
    seq: u64,
    n: u32,
}

pub(super) struct Batches {
    mem: Box<[u64]>,
    pub(super) mr: *mut fid_mr,
    desc: *mut c_void,
    free_send: Mutex<Vec<u32>>,
    meta: Mutex<Vec<SendMeta>>,
    senders: Mutex<Senders>,
    /// AMOs collected and not yet acknowledged (or failed): 0 means nothing to wait for.
    unsettled: AtomicU64,
    /// This PE's index (its own name's place in the address vector).
    me: AtomicUsize,
    peers: RwLock<Vec<fi_addr_t>>,
    /// (key, base, len) of this PE's registered regions.
    local: RwLock<Vec<(u64, usize, usize)>>,
    /// Acknowledgements and replies, and receive buffers, whose post found the provider busy.
    owed_acks: Mutex<Vec<Owed>>,
    owed_recvs: Mutex<Vec<u32>>,
    pub(super) sent_batches: AtomicU64,
    /// Fetching AMOs as messages (`Options::amo_fetch_msg` and an inject size that holds the
    /// request); their reply cells and the free ones.
    fetch_on: bool,
    fetch: Box<[Mutex<FetchCell>]>,
    fetch_free: Mutex<Vec<u32>>,
    pub(super) fetch_msgs: AtomicU64,
    /// Puts with a signal sent inside batches.
    pub(super) put_signals: AtomicU64,
    /// Puts (without a signal) sent inside batches.
    pub(super) puts: AtomicU64,
    /// Per source PE, the order in which its batches are applied here.
    order: Mutex<Vec<InOrder>>,
}

/// Applies one source's batches in their sequence order: two threads reading this PE's CQ
/// may take two batches of one PE at once, and the later one must not be applied first (a
/// fence between two batched operations to one PE waits for nothing: `Fabric::batch_fence`).
/// A batch that comes early is kept (copied) until the ones before it are applied; one whose
/// number was applied already is a copy (a provider that delivers a message twice) and is
/// dropped, neither applied nor acknowledged again.
#[derive(Default)]
pub(super) struct InOrder {
    next: u64,
    early: std::collections::BTreeMap<u64, Box<[u8]>>,
}

/// What to do with an arriving batch.
#[derive(Debug, PartialEq)]
pub(super) enum Arrival {
    /// Apply it now (then [`InOrder::applied`]), then the kept ones [`InOrder::ready`] gives.
    Apply,
    /// Kept (copied) until the batches before it are applied; apply what `ready` gives.
    Kept,
    /// A copy of one applied or kept already: drop it.
    Copy,
}

impl InOrder {
    /// Batch `seq` (its bytes `msg`, copied only when kept) arrived.
    pub(super) fn arrive(&mut self, seq: u64, msg: &[u8]) -> Arrival {
        if seq < self.next || self.early.contains_key(&seq) {
            return Arrival::Copy;
        }
        if seq == self.next {
            return Arrival::Apply;
        }
        self.early.insert(seq, msg.into());
        if self.early.len() > STASH_MAX {
            // The awaited one is lost: go on from the first kept.
            self.next = *self.early.keys().next().unwrap_or(&seq);
        }
        Arrival::Kept
    }

    /// The batch numbered `next` was applied.
    pub(super) fn applied(&mut self) {
        self.next += 1;
    }

    /// The kept batch that is next in order, if any (apply it, then `applied`).
    pub(super) fn ready(&mut self) -> Option<Box<[u8]>> {
        self.early.remove(&self.next)
    }
}

// SAFETY: the raw pointers are the registration of `mem` (owned) and its descriptor; the
// shared state is behind mutexes and atomics.
unsafe impl Send for Batches {}
// SAFETY: as for Send.
unsafe impl Sync for Batches {}

impl Batches {
    pub(super) fn new(fetch_on: bool) -> Batches {
        let mem = vec![0u64; (SEND_BUFS + RECV_BUFS) * MSG_BYTES / 8].into_boxed_slice();
        Batches {
            mem,
            mr: ptr::null_mut(),
            desc: ptr::null_mut(),
            free_send: Mutex::new((0..SEND_BUFS as u32).rev().collect()),
            meta: Mutex::new(vec![SendMeta::default(); SEND_BUFS]),
            senders: Mutex::new(Senders { pes: Vec::new(), dirty: Vec::new() }),
            unsettled: AtomicU64::new(0),
            me: AtomicUsize::new(usize::MAX),
            peers: RwLock::new(Vec::new()),
            local: RwLock::new(Vec::new()),
            owed_acks: Mutex::new(Vec::new()),
            owed_recvs: Mutex::new(Vec::new()),
            sent_batches: AtomicU64::new(0),
            fetch_on,
            fetch: (0..FETCH_CELLS).map(|_| Mutex::new(FetchCell::default())).collect(),
            fetch_free: Mutex::new((0..FETCH_CELLS as u32).rev().collect()),
            fetch_msgs: AtomicU64::new(0),
            put_signals: AtomicU64::new(0),
            puts: AtomicU64::new(0),
            order: Mutex::new(Vec::new()),
        }
    }

    /// Whether AMOs are collected or unacknowledged.
    pub(super) fn unsettled_now(&self) -> bool {
        self.unsettled.load(Ordering::Acquire) != 0
    }

    pub(super) fn bytes(&self) -> (usize, usize) {
        (self.mem.as_ptr() as usize, self.mem.len() * 8)
    }

    pub(super) fn set_mr(&mut self, mr: *mut fid_mr, desc: *mut c_void) {
        self.mr = mr;
        self.desc = desc;
    }

    fn buf(&self, i: usize) -> *mut u8 {
        // SAFETY: i < SEND_BUFS + RECV_BUFS, inside mem.
        unsafe { (self.mem.as_ptr() as *mut u8).add(i * MSG_BYTES) }
    }

    pub(super) fn add_local(&self, key: u64, base: usize, len: usize) {
        self.local.write().unwrap_or_else(|e| e.into_inner()).push((key, base, len));
    }

    pub(super) fn set_peers(&self, peers: &[fi_addr_t], me: Option<usize>) {
        *self.peers.write().unwrap_or_else(|e| e.into_inner()) = peers.to_vec();
        let mut s = self.senders.lock().unwrap_or_else(|e| e.into_inner());
        s.pes.resize_with(peers.len(), PeState::default);
        if let Some(me) = me {
            self.me.store(me, Ordering::Relaxed);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Fabric {
    fn batches(&self) -> &Batches {
        self.batch.as_ref().expect("batched AMOs are on")
    }

    /// Whether non-fetching AMOs to other PEs go in batches here.
    pub fn amo_batching(&self) -> bool {
        self.batch.is_some()
    }

    /// Messages of batched AMOs this PE has sent (0 where batching is off).
    pub fn amo_batches_sent(&self) -> u64 {
        self.batch.as_ref().map_or(0, |b| b.sent_batches.load(Ordering::Relaxed))
    }

    /// Whether a non-fetching AMO of `op` on `dt` to PE `pe` goes through a batch.
    pub(super) fn batch_for(&self, pe: usize, op: AtomicOp, dt: Dtype) -> bool {
        match &self.batch {
            Some(b) => batchable(op, dt) && b.me.load(Ordering::Relaxed) != pe && b.me.load(Ordering::Relaxed) != usize::MAX,
            None => false,
        }
    }

    /// Posts the receive buffers (at open).
    pub(super) fn batch_post_recvs(&self) -> Result<(), String> {
        for i in 0..RECV_BUFS as u32 {
            self.repost_recv(i).map_err(|r| self.err_text("fi_recvmsg", 0, r))?;
        }
        Ok(())
    }

    fn repost_recv(&self, i: u32) -> Result<(), isize> {
        let b = self.batches();
        let iov = libc::iovec { iov_base: b.buf(SEND_BUFS + i as usize).cast(), iov_len: MSG_BYTES };
        let mut desc = if self.mr_local { b.desc } else { ptr::null_mut() };
        let msg = fi_msg {
            msg_iov: &iov,
            desc: &mut desc,
            iov_count: 1,
            addr: FI_ADDR_UNSPEC,
            context: tag(OpKind::BatchRecv, i as usize),
            data: 0,
        };
        // SAFETY: ep is live; msg and the iov live across the call; the buffer is registered
        // memory of ours that stays untouched until its completion.
        let r = unsafe {
            let Ok(recvmsg) = has_op!((*self.objs.ep).msg, fi_ops_msg, recvmsg) else { return Err(-(FI_ENOSYS as isize)) };
            recvmsg(self.objs.ep, &msg, FI_COMPLETION)
        };
        if r == 0 {
            Ok(())
        } else {
            Err(r)
        }
    }

    /// Adds a non-fetching AMO to PE `pe`'s batch (see the module comment).
    pub(super) fn batch_add(&self, pe: usize, e: Entry) -> Result<(), String> {
        self.batch_add_group(pe, &[e], false, false)
    }

    /// Adds `group` (at most [`BATCH_MAX`] entries) to PE `pe`'s batch, all in one message
    /// (`put`: the group writes data, which a later get from `pe` must see). `urgent` (a put
    /// with a signal, which the target waits for): the batch goes out at once while fewer
    /// than [`UNACKED_MAX`] are unacknowledged, not only when none is: in a ping-pong of
    /// signals each reply otherwise waited for the acknowledgement of the one before.
    pub(super) fn batch_add_group(&self, pe: usize, group: &[Entry], put: bool, urgent: bool) -> Result<(), String> {
        let k = group.len();
        debug_assert!((1..=BATCH_MAX).contains(&k));
        if self.quiescing.load(Ordering::SeqCst) > 0 && QUIESCING.with(|c| c.get()) == 0 {
            self.wait_until(|f| f.quiescing.load(Ordering::SeqCst) == 0)
                .map_err(|t| self.stalled("waiting for another thread's quiet", t))?;
        }
        let b = self.batches();
        loop {
            let mut s = lock(&b.senders);
            let p = s.pes.get_mut(pe).ok_or_else(|| format!("PE {pe} has no address"))?;
            if p.entries.len() + k <= BATCH_MAX {
                let was_empty = p.entries.is_empty();
                p.entries.extend_from_slice(group);
                p.put_collected |= put;
                let (len, unacked) = (p.entries.len(), p.unacked());
                if was_empty {
                    s.dirty.push(pe);
                }
                b.unsettled.fetch_add(k as u64, Ordering::AcqRel);
                if unacked == 0 || ((urgent || len == BATCH_MAX) && unacked < UNACKED_MAX) {
                    self.try_send(&mut s, pe)?;
                }
                return Ok(());
            }
            if p.unacked() < UNACKED_MAX && self.try_send(&mut s, pe)? {
                continue;
            }
            drop(s);
            self.wait_until(|f| {
                let mut s = lock(&b.senders);
                let p = &s.pes[pe];
                if p.entries.len() + k <= BATCH_MAX {
                    return true;
                }
                p.unacked() < UNACKED_MAX && f.try_send(&mut s, pe).unwrap_or(true)
            })
            .map_err(|t| self.stalled(&format!("batched AMOs to PE {pe}: waiting for an acknowledgement"), t))?;
        }
    }

    /// Whether a put of `len` bytes with a signal to PE `pe` travels inside a batch.
    pub(super) fn put_signal_fits(&self, pe: usize, len: usize) -> bool {
        len <= PUT_INLINE_MAX && self.batch_for(pe, AtomicOp::Write, Dtype::U64)
    }

    /// A put of `len` bytes from `src` to `addr`/`key` on PE `pe`, then the signal `sig` (a
    /// set or add entry), as one group of a batch (see the module comment): `src` is copied
    /// before return; complete at quiet.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes (at most [`PUT_INLINE_MAX`]).
    pub(super) unsafe fn batch_put_signal(
        &self,
        pe: usize,
        src: *const u8,
        len: usize,
        addr: u64,
        key: u64,
        sig: Entry,
    ) -> Result<(), String> {
        // SAFETY: src is readable for len bytes (the caller's contract), at most PUT_INLINE_MAX.
        let (group, k) = unsafe { put_group(src, len, addr, key, OP_PUT, Some(sig)) };
        self.batch_add_group(pe, &group[..k], true, true)?;
        self.batches().put_signals.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A put of `len` bytes from `src` to `addr`/`key` on PE `pe` as one group of a batch (see
    /// the module comment): `src` is copied before return; complete at quiet.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes (1 to [`PUT_BATCH_MAX`]).
    pub(super) unsafe fn batch_put(&self, pe: usize, src: *const u8, len: usize, addr: u64, key: u64) -> Result<(), String> {
        debug_assert!((1..=PUT_BATCH_MAX).contains(&len));
        // SAFETY: src is readable for len bytes (the contract), at most PUT_BATCH_MAX.
        let (group, k) = unsafe { put_group(src, len, addr, key, OP_PUT_DATA, None) };
        self.batch_add_group(pe, &group[..k], true, false)?;
        self.batches().puts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Whether nothing to PE `pe` is collected or unacknowledged in the batches (no batches:
    /// yes).
    pub(super) fn batch_idle(&self, pe: usize) -> bool {
        let Some(b) = &self.batch else { return true };
        if !b.unsettled_now() {
            return true;
        }
        lock(&b.senders).pes.get(pe).is_none_or(|p| p.entries.is_empty() && p.unacked() == 0)
    }

    /// Puts sent inside batches so far.
    pub fn puts_batched(&self) -> u64 {
        self.batch.as_ref().map_or(0, |b| b.puts.load(Ordering::Relaxed))
    }

    /// Before a get from PE `pe`: waits until this PE's batched puts to `pe` are applied (a
    /// read is not ordered after a message), so that the get sees them. Nothing to wait for
    /// (the common case) costs one lock.
    pub(super) fn batch_puts_settle(&self, pe: usize) -> Result<(), String> {
        let Some(b) = &self.batch else { return Ok(()) };
        if !b.unsettled_now() {
            return Ok(());
        }
        let pending = lock(&b.senders).pes.get(pe).is_some_and(|p| p.put_collected || p.put_below > p.acked_below);
        if pending {
            self.batch_settle(Some(pe))?;
        }
        Ok(())
    }

    /// Whether a fetching AMO of `op` on `dt` to PE `pe` goes as a request message.
    pub(super) fn fetch_msg_for(&self, pe: usize, op: AtomicOp, dt: Dtype) -> bool {
        match &self.batch {
            Some(b) => {
                b.fetch_on && fetch_batchable(op, dt) && b.me.load(Ordering::Relaxed) != pe && b.me.load(Ordering::Relaxed) != usize::MAX
            }
            None => false,
        }
    }

    /// Fetching AMOs sent as request messages so far (0 where that is off).
    pub fn amo_fetch_msgs(&self) -> u64 {
        self.batch.as_ref().map_or(0, |b| b.fetch_msgs.load(Ordering::Relaxed))
    }

    /// Puts with a signal sent inside batches so far.
    pub fn put_signals_inline(&self) -> u64 {
        self.batch.as_ref().map_or(0, |b| b.put_signals.load(Ordering::Relaxed))
    }

    /// A fetching AMO as a request message (see the module comment): returns the old value
    /// (the low `dt.size()` bytes); complete at the target when it returns.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fetch_msg(
        &self,
        pe: usize,
        op: AtomicOp,
        dt: Dtype,
        addr: u64,
        key: u64,
        operand: u64,
        compare: u64,
    ) -> Result<u64, String> {
        let b = self.batches();
        let mut got = None;
        self.wait_until(|_| {
            got = lock(&b.fetch_free).pop();
            got.is_some()
        })
        .map_err(|t| self.stalled("waiting for a free fetching AMO cell", t))?;
        let i = got.unwrap_or_default() as usize;
        let gen = {
            let mut c = lock(&b.fetch[i]);
            c.gen += 1;
            (c.pe, c.state, c.err) = (pe, CELL_PENDING, None);
            c.gen
        };
        let release = |b: &Batches| {
            let mut c = lock(&b.fetch[i]);
            c.gen += 1; // a late reply to this request no longer matches
            c.state = CELL_IDLE;
            drop(c);
            lock(&b.fetch_free).push(i as u32);
        };
        let req = FetchReq {
            hdr: Hdr { magic: MAGIC_FETCH, src: b.me.load(Ordering::Relaxed) as u32, n: 1, errs: 0, code: 0, seq: (gen << 8) | i as u64 },
            addr,
            key,
            operand,
            compare,
            op: op as u8,
            dt: dt as u8,
            _pad: [0; 6],
        };
        let Some(&dest) = b.peers.read().unwrap_or_else(|e| e.into_inner()).get(pe) else {
            release(b);
            return Err(format!("PE {pe} has no address"));
        };
        let iov = libc::iovec { iov_base: (&req as *const FetchReq as *mut FetchReq).cast(), iov_len: FETCH_MSG_INJECT };
        let msg = fi_msg { msg_iov: &iov, desc: ptr::null_mut(), iov_count: 1, addr: dest, context: tag(OpKind::FetchSend, i), data: 0 };
        let sendmsg = match has_op!(
            // SAFETY: ep is live.
            unsafe { (*self.objs.ep).msg },
            fi_ops_msg,
            sendmsg
        ) {
            Ok(f) => f,
            Err(e) => {
                release(b);
                return Err(e.to_string());
            }
        };
        // SAFETY: ep is live; msg, iov and req live across the call (FI_INJECT copies the 64
        // bytes, within the inject size, checked at open).
        if let Err(e) = self.post("fi_sendmsg (fetching AMO)", pe, || unsafe { sendmsg(self.objs.ep, &msg, FI_INJECT) }) {
            release(b);
            return Err(e);
        }
        b.fetch_msgs.fetch_add(1, Ordering::Relaxed);
        let waited = self.wait_until(|_| lock(&b.fetch[i]).state != CELL_PENDING);
        let mut c = lock(&b.fetch[i]);
        let what = if op == AtomicOp::Cswap { "compare atomic (message)" } else { "fetch atomic (message)" };
        let r = match (waited, c.state) {
            (Err(t), _) => Err(self.stalled(&format!("{what} from PE {pe}"), t)),
            (Ok(()), CELL_DONE) => Ok(c.value),
            (Ok(()), CELL_REJECTED) => Err(format!("{what} to PE {pe} failed: the target rejected it ({})", reject_text(c.code as u32))),
            (Ok(()), _) => Err(format!("{what} to PE {pe} failed: {}", c.err.take().unwrap_or_default())),
        };
        drop(c);
        release(b);
        let bits = dt.size() * 8;
        r.map(|v| if bits == 64 { v } else { v & ((1u64 << bits) - 1) })
    }

    /// Sends PE `pe`'s collected entries if a send buffer is free and the provider takes it;
    /// `Ok(false)`: nothing sent (nothing collected, no buffer, or -FI_EAGAIN). Called with the
    /// senders' lock held (so a PE's batches leave in sequence order), never from inside the
    /// CQ reading.
    fn try_send(&self, s: &mut Senders, pe: usize) -> Result<bool, String> {
        let b = self.batches();
        let p = &mut s.pes[pe];
        if p.entries.is_empty() {
            return Ok(false);
        }
        let Some(i) = lock(&b.free_send).pop() else { return Ok(false) };
        let n = p.entries.len();
        let hdr = Hdr { magic: MAGIC_BATCH, src: b.me.load(Ordering::Relaxed) as u32, n: n as u32, errs: 0, code: 0, seq: p.next_seq };
        let buf = b.buf(i as usize);
        // SAFETY: buf is a free send buffer of MSG_BYTES (ours until its completion); n <=
        // BATCH_MAX entries fit after the header; both are plain data.
        unsafe {
            ptr::write_unaligned(buf.cast::<Hdr>(), hdr);
            ptr::copy_nonoverlapping(p.entries.as_ptr().cast::<u8>(), buf.add(HDR_BYTES), n * ENTRY_BYTES);
        }
        let len = HDR_BYTES + n * ENTRY_BYTES;
        let dest = b.peers.read().unwrap_or_else(|e| e.into_inner())[pe];
        lock(&b.meta)[i as usize] = SendMeta { pe, seq: p.next_seq, n: n as u32 };
        let iov = libc::iovec { iov_base: buf.cast(), iov_len: len };
        let mut desc = if self.mr_local { b.desc } else { ptr::null_mut() };
        let msg = fi_msg { msg_iov: &iov, desc: &mut desc, iov_count: 1, addr: dest, context: tag(OpKind::BatchSend, i as usize), data: 0 };
        // SAFETY: ep is live; msg, iov and the buffer live across the call and the buffer until
        // the send's completion.
        let r = unsafe {
            let sendmsg = has_op!((*self.objs.ep).msg, fi_ops_msg, sendmsg)?;
            sendmsg(self.objs.ep, &msg, FI_COMPLETION)
        };
        if r == -(FI_EAGAIN as isize) {
            lock(&b.free_send).push(i);
            return Ok(false);
        }
        if r != 0 {
            lock(&b.free_send).push(i);
            // These AMOs will never arrive: settled, as failed.
            p.entries.clear();
            p.put_collected = false;
            b.unsettled.fetch_sub(n as u64, Ordering::AcqRel);
            return Err(self.err_text("fi_sendmsg (batched AMOs)", pe, r));
        }
        p.entries.clear();
        if std::mem::take(&mut p.put_collected) {
            p.put_below = p.next_seq + 1;
        }
        p.next_seq += 1;
        b.sent_batches.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Sends what is collected for PEs with nothing unacknowledged (or everything, `all`, up to
    /// [`UNACKED_MAX`] per PE), and what the CQ reading could not post; never waits.
    pub(super) fn batch_flush(&self, all: bool) {
        let Some(b) = &self.batch else { return };
        let owed = std::mem::take(&mut *lock(&b.owed_recvs));
        for i in owed {
            if self.repost_recv(i).is_err() {
                lock(&b.owed_recvs).push(i);
            }
        }
        let acks = std::mem::take(&mut *lock(&b.owed_acks));
        for o in acks {
            self.send_small(o);
        }
        if b.unsettled.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut s = lock(&b.senders);
        let dirty = std::mem::take(&mut s.dirty);
        for pe in dirty {
            let unacked = s.pes[pe].unacked();
            if unacked == 0 || (all && unacked < UNACKED_MAX) {
                if let Err(e) = self.try_send(&mut s, pe) {
                    lock(&self.nbi_errors).push(e);
                }
            }
            if !s.pes[pe].entries.is_empty() {
                s.dirty.push(pe);
            }
        }
    }

    /// Waits until every AMO collected so far is applied at its target (`pe`: those to one
    /// PE only). Errors the targets reported go to quiet's list.
    pub(super) fn batch_settle(&self, pe: Option<usize>) -> Result<(), String> {
        let Some(b) = &self.batch else { return Ok(()) };
        if b.unsettled.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.wait_until(|f| match pe {
            None => {
                f.batch_flush(true);
                b.unsettled.load(Ordering::Acquire) == 0
            }
            Some(pe) => {
                let mut s = lock(&b.senders);
                let Some(p) = s.pes.get(pe) else { return true };
                if p.entries.is_empty() && p.unacked() == 0 {
                    return true;
                }
                if p.unacked() < UNACKED_MAX {
                    if let Err(e) = f.try_send(&mut s, pe) {
                        lock(&f.nbi_errors).push(e);
                    }
                }
                false
            }
        })
        .map_err(|t| self.stalled("waiting for the acknowledgements of batched AMOs", t))
    }

    /// A completion of one of the batch contexts (`kind` BatchSend, BatchRecv or AckSend,
    /// index `i`): called from the CQ reading.
    pub(super) fn batch_complete(&self, kind: OpKind, i: usize, err: c_int, prov: &str) {
        let b = self.batches();
        match kind {
            OpKind::BatchSend => {
                let m = lock(&b.meta)[i];
                lock(&b.free_send).push(i as u32);
                if err != 0 {
                    lock(&self.nbi_errors).push(format!(
                        "{} AMOs to PE {} (batched, fi_sendmsg) failed: {} ({prov})",
                        m.n,
                        m.pe,
                        self.lib.strerror(err)
                    ));
                    self.settle(m.pe, m.seq, m.n);
                }
            }
            OpKind::AckSend => {
                if err != 0 {
                    lock(&self.nbi_errors)
                        .push(format!("acknowledging batched AMOs to PE {i} failed: {} ({prov})", self.lib.strerror(err)));
                }
            }
            // Only failures report (the request is injected): its requester is told.
            OpKind::FetchSend if err != 0 => {
                if let Some(c) = b.fetch.get(i) {
                    let mut c = lock(c);
                    if c.state == CELL_PENDING {
                        c.state = CELL_FAILED;
                        c.err = Some(format!("{} ({prov})", self.lib.strerror(err)));
                    }
                }
            }
            OpKind::BatchRecv => {
                if err == 0 {
                    self.on_message(i);
                } else if err == FI_ECANCELED {
                    return; // closing
                } else {
                    lock(&self.nbi_errors).push(format!("a receive of batched AMOs failed: {} ({prov})", self.lib.strerror(err)));
                }
                if self.repost_recv(i as u32).is_err() {
                    lock(&b.owed_recvs).push(i as u32);
                }
            }
            _ => {}
        }
    }

    fn settle(&self, pe: usize, seq: u64, n: u32) {
        let b = self.batches();
        if let Some(p) = lock(&b.senders).pes.get_mut(pe) {
            p.ack(seq);
        }
        b.unsettled.fetch_sub(n as u64, Ordering::AcqRel);
    }

    /// A message arrived in receive buffer `i`: a batch to apply and acknowledge, or an
    /// acknowledgement of ours.
    fn on_message(&self, i: usize) {
        let b = self.batches();
        let buf = b.buf(SEND_BUFS + i);
        // SAFETY: the receive completed into this buffer of MSG_BYTES; the header is plain data.
        let h = unsafe { ptr::read_unaligned(buf.cast::<Hdr>()) };
        let npes = b.peers.read().unwrap_or_else(|e| e.into_inner()).len();
        if h.src as usize >= npes {
            return; // not from a PE of this job
        }
        match h.magic {
            MAGIC_ACK => {
                if h.errs > 0 {
                    lock(&self.nbi_errors).push(format!(
                        "batched atomics or puts to PE {} failed: the target rejected {} of {} entries ({})",
                        h.src,
                        h.errs,
                        h.n,
                        reject_text(h.code as u32)
                    ));
                }
                self.settle(h.src as usize, h.seq, h.n);
            }
            MAGIC_BATCH if h.n as usize <= BATCH_MAX => {
                let len = HDR_BYTES + h.n as usize * ENTRY_BYTES;
                let mut ord = lock(&b.order);
                if ord.len() < npes {
                    ord.resize_with(npes, InOrder::default);
                }
                let o = &mut ord[h.src as usize];
                // SAFETY: the message's len bytes (n <= BATCH_MAX entries) lie in the buffer.
                let msg = unsafe { std::slice::from_raw_parts(buf.cast_const(), len) };
                match o.arrive(h.seq, msg) {
                    Arrival::Copy => return,
                    Arrival::Apply => {
                        self.apply_batch(msg, h);
                        o.applied();
                    }
                    Arrival::Kept => {}
                }
                while let Some(m) = o.ready() {
                    // SAFETY: a kept message starts with its header (plain data).
                    let hk = unsafe { ptr::read_unaligned(m.as_ptr().cast::<Hdr>()) };
                    self.apply_batch(&m, hk);
                    o.applied();
                }
            }
            MAGIC_FETCH => {
                // SAFETY: a request is FETCH_MSG_INJECT bytes, inside the buffer of MSG_BYTES.
                let q = unsafe { ptr::read_unaligned(buf.cast::<FetchReq>()) };
                let local = b.local.read().unwrap_or_else(|e| e.into_inner());
                let r = self.apply_fetch(&local, &q);
                drop(local);
                let (value, errs, code) = match r {
                    Ok(v) => (v, 0, 0),
                    Err(c) => (0, 1, c as u16),
                };
                let reply = FetchReply {
                    hdr: Hdr { magic: MAGIC_FETCH_REPLY, src: b.me.load(Ordering::Relaxed) as u32, n: 1, errs, code, seq: h.seq },
                    value,
                };
                // SAFETY: FetchReply is 32 bytes of plain data, 4 words.
                let words: [u64; 4] = unsafe { std::mem::transmute(reply) };
                self.send_small(Owed { pe: h.src as usize, words, len: 32 });
            }
            MAGIC_FETCH_REPLY => {
                // SAFETY: a reply is 32 bytes, inside the buffer.
                let r = unsafe { ptr::read_unaligned(buf.cast::<FetchReply>()) };
                let i = (r.hdr.seq & 0xff) as usize;
                if let Some(c) = b.fetch.get(i) {
                    let mut c = lock(c);
                    // Only the pending request of this generation, from the PE it went to.
                    if c.state == CELL_PENDING && c.gen == r.hdr.seq >> 8 && c.pe == h.src as usize {
                        if r.hdr.errs == 0 {
                            (c.value, c.state) = (r.value, CELL_DONE);
                        } else {
                            (c.code, c.state) = (r.hdr.code, CELL_REJECTED);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Applies batch `h` (its bytes `msg`, header first) in entry order and acknowledges it.
    fn apply_batch(&self, msg: &[u8], h: Hdr) {
        let b = self.batches();
        let buf = msg.as_ptr();
        let (mut errs, mut code) = (0u16, 0u16);
        let local = b.local.read().unwrap_or_else(|e| e.into_inner());
        let n = h.n as usize;
        let entry = |k: usize| {
            // SAFETY: k < n <= BATCH_MAX entries lie inside the buffer.
            unsafe { ptr::read_unaligned(buf.add(HDR_BYTES + k * ENTRY_BYTES).cast::<Entry>()) }
        };
        let mut k = 0;
        while k < n {
            let e = entry(k);
            if e.op == OP_PUT_DATA {
                // A put: its data in the entries after it.
                let len = e.operand as usize;
                let end = k + 1 + len.div_ceil(ENTRY_BYTES);
                if len == 0 || len > PUT_BATCH_MAX || end > n {
                    errs += (n - k) as u16;
                    code = REJ_RANGE as u16;
                    break;
                }
                // SAFETY: the data lies in entries k+1..end, inside the message.
                let data = unsafe { buf.add(HDR_BYTES + (k + 1) * ENTRY_BYTES) };
                if let Err(c) = self.put_local(&local, &e, data, len) {
                    errs += (end - k) as u16;
                    code = c as u16;
                }
                k = end;
                continue;
            }
            if e.op == OP_PUT {
                // A put with its signal: the data, then (only if it was written) the
                // signal entry after it.
                let len = e.operand as usize;
                let nd = len.div_ceil(ENTRY_BYTES);
                let sig = k + 1 + nd;
                if len > PUT_INLINE_MAX || sig >= n {
                    errs += (n - k) as u16;
                    code = REJ_RANGE as u16;
                    break;
                }
                // SAFETY: the data lies in entries k+1..sig, inside the buffer.
                let data = unsafe { buf.add(HDR_BYTES + (k + 1) * ENTRY_BYTES) };
                match self.put_local(&local, &e, data, len) {
                    Ok(()) => {
                        if let Err(c) = self.apply(&local, &entry(sig)) {
                            errs += 1;
                            code = c as u16;
                        }
                    }
                    Err(c) => {
                        errs += 2;
                        code = c as u16;
                    }
                }
                k = sig + 1;
                continue;
            }
            if let Err(c) = self.apply(&local, &e) {
                errs += 1;
                code = c as u16;
            }
            k += 1;
        }
        drop(local);
        let ack = Hdr { magic: MAGIC_ACK, src: b.me.load(Ordering::Relaxed) as u32, n: h.n, errs, code, seq: h.seq };
        self.send_ack(h.src as usize, ack);
    }

    fn send_ack(&self, pe: usize, h: Hdr) {
        // SAFETY: Hdr is 24 bytes of plain data.
        let b: [u8; HDR_BYTES] = unsafe { std::mem::transmute(h) };
        let mut words = [0u64; 4];
        // SAFETY: words has 32 bytes, b 24.
        unsafe { ptr::copy_nonoverlapping(b.as_ptr(), words.as_mut_ptr().cast::<u8>(), HDR_BYTES) };
        self.send_small(Owed { pe, words, len: HDR_BYTES });
    }

    /// Sends a small message (an acknowledgement or a fetch reply) with FI_INJECT; one the
    /// provider cannot take now is sent from the next wait or progress step.
    fn send_small(&self, o: Owed) {
        let b = self.batches();
        let pe = o.pe;
        let Some(&dest) = b.peers.read().unwrap_or_else(|e| e.into_inner()).get(pe) else { return };
        let iov = libc::iovec { iov_base: o.words.as_ptr() as *mut c_void, iov_len: o.len };
        let msg = fi_msg { msg_iov: &iov, desc: ptr::null_mut(), iov_count: 1, addr: dest, context: tag(OpKind::AckSend, pe), data: 0 };
        // SAFETY: ep is live; msg, iov and o live across the call (FI_INJECT copies the at
        // most 32 bytes, within the provider's inject size, checked at open).
        let r = unsafe {
            match has_op!((*self.objs.ep).msg, fi_ops_msg, sendmsg) {
                Ok(sendmsg) => sendmsg(self.objs.ep, &msg, FI_INJECT),
                Err(_) => -(FI_ENOSYS as isize),
            }
        };
        if r == -(FI_EAGAIN as isize) {
            lock(&b.owed_acks).push(o);
        } else if r != 0 {
            lock(&self.nbi_errors).push(self.err_text("fi_sendmsg (acknowledging batched AMOs)", pe, r));
        }
    }

    /// The local address of `w` bytes at wire address `addr` with `key`, inside one of this
    /// PE's registered regions (`align`: aligned to `w`); `Err` the rejection code.
    fn local_addr(&self, local: &[(u64, usize, usize)], key: u64, addr: u64, w: usize, align: bool) -> Result<usize, u32> {
        let &(_, base, len) = local.iter().find(|r| r.0 == key).ok_or(REJ_KEY)?;
        let off = if self.virt_addr { (addr as usize).checked_sub(base).ok_or(REJ_RANGE)? } else { addr as usize };
        if off.checked_add(w).is_none_or(|end| end > len) || (align && (base + off) % w.max(1) != 0) {
            return Err(REJ_RANGE);
        }
        Ok(base + off)
    }

    /// Copies the `len` bytes at `data` (a put entry's data) to where put entry `e` says.
    fn put_local(&self, local: &[(u64, usize, usize)], e: &Entry, data: *const u8, len: usize) -> Result<(), u32> {
        let p = self.local_addr(local, e.key, e.addr, len, false)?;
        // SAFETY: [p, p+len) lies inside a registered region of ours (checked above); data
        // holds len bytes of the received message; peers change this memory only through RMA
        // and atomics, and the signal that publishes it is applied after this copy.
        unsafe { ptr::copy_nonoverlapping(data, p as *mut u8, len) };
        Ok(())
    }

    /// Applies a fetching AMO's request to this PE's memory: the old value, or `Err` the
    /// rejection code.
    fn apply_fetch(&self, local: &[(u64, usize, usize)], q: &FetchReq) -> Result<u64, u32> {
        let dt = [Dtype::I8, Dtype::U8, Dtype::I16, Dtype::U16, Dtype::I32, Dtype::U32, Dtype::I64, Dtype::U64]
            .into_iter()
            .find(|d| *d as u8 == q.dt)
            .ok_or(REJ_OP)?;
        let op = [AtomicOp::Sum, AtomicOp::Band, AtomicOp::Bor, AtomicOp::Bxor, AtomicOp::Write, AtomicOp::Read, AtomicOp::Cswap]
            .into_iter()
            .find(|o| *o as u8 == q.op)
            .ok_or(REJ_OP)?;
        let w = dt.size();
        let p = self.local_addr(local, q.key, q.addr, w, true)?;
        let (v, c) = (q.operand, q.compare);
        macro_rules! amo {
            ($a:ty, $t:ty) => {{
                // SAFETY: p lies inside a registered region of ours (checked above), aligned
                // for the width; peers change this memory only through atomics or RMA.
                let a = unsafe { &*(p as *const $a) };
                let x = v as $t;
                (match op {
                    AtomicOp::Sum => a.fetch_add(x, Ordering::SeqCst),
                    AtomicOp::Band => a.fetch_and(x, Ordering::SeqCst),
                    AtomicOp::Bor => a.fetch_or(x, Ordering::SeqCst),
                    AtomicOp::Bxor => a.fetch_xor(x, Ordering::SeqCst),
                    AtomicOp::Write => a.swap(x, Ordering::SeqCst),
                    AtomicOp::Read => a.load(Ordering::SeqCst),
                    _ => a.compare_exchange(c as $t, x, Ordering::SeqCst, Ordering::SeqCst).unwrap_or_else(|old| old),
                }) as u64
            }};
        }
        Ok(match w {
            1 => amo!(std::sync::atomic::AtomicU8, u8),
            2 => amo!(std::sync::atomic::AtomicU16, u16),
            4 => amo!(std::sync::atomic::AtomicU32, u32),
            _ => amo!(AtomicU64, u64),
        })
    }
    /// Applies one entry to this PE's memory; `Err` the rejection code.
    fn apply(&self, local: &[(u64, usize, usize)], e: &Entry) -> Result<(), u32> {
        let dt = [Dtype::I8, Dtype::U8, Dtype::I16, Dtype::U16, Dtype::I32, Dtype::U32, Dtype::I64, Dtype::U64, Dtype::F32, Dtype::F64]
            .into_iter()
            .find(|d| *d as u8 == e.dt)
            .ok_or(REJ_OP)?;
        let op = [AtomicOp::Sum, AtomicOp::Band, AtomicOp::Bor, AtomicOp::Bxor, AtomicOp::Write]
            .into_iter()
            .find(|o| *o as u8 == e.op)
            .ok_or(REJ_OP)?;
        if !batchable(op, dt) {
            return Err(REJ_OP);
        }
        let p = self.local_addr(local, e.key, e.addr, dt.size(), true)?;
        let v = e.operand;
        macro_rules! amo {
            ($a:ty, $t:ty) => {{
                // SAFETY: p lies inside a registered region of ours (checked above), aligned
                // for the width; peers change this memory only through atomics or RMA.
                let a = unsafe { &*(p as *const $a) };
                let x = v as $t;
                match op {
                    AtomicOp::Sum => drop(a.fetch_add(x, Ordering::SeqCst)),
                    AtomicOp::Band => drop(a.fetch_and(x, Ordering::SeqCst)),
                    AtomicOp::Bor => drop(a.fetch_or(x, Ordering::SeqCst)),
                    AtomicOp::Bxor => drop(a.fetch_xor(x, Ordering::SeqCst)),
                    _ => a.store(x, Ordering::SeqCst),
                }
            }};
        }
        match dt.size() {
            1 => amo!(std::sync::atomic::AtomicU8, u8),
            2 => amo!(std::sync::atomic::AtomicU16, u16),
            4 => amo!(std::sync::atomic::AtomicU32, u32),
            _ => amo!(AtomicU64, u64),
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn acks_out_of_order_settle_in_order() {
        let mut p = PeState { next_seq: 4, ..Default::default() };
        p.ack(2);
        assert_eq!((p.acked_below, p.unacked()), (0, 4));
        p.ack(0);
        assert_eq!((p.acked_below, p.unacked()), (1, 3));
        p.ack(1);
        assert_eq!((p.acked_below, p.unacked()), (3, 1));
        p.ack(1); // a repeat changes nothing
        p.ack(9); // nor one never sent
        assert_eq!(p.acked_below, 3);
        p.ack(3);
        assert_eq!((p.acked_below, p.unacked()), (4, 0));
    }

    #[test]
    fn only_integer_updates_and_set_are_batched() {
        assert!(batchable(AtomicOp::Sum, Dtype::U64) && batchable(AtomicOp::Bxor, Dtype::I8));
        assert!(batchable(AtomicOp::Write, Dtype::F64));
        assert!(!batchable(AtomicOp::Sum, Dtype::F32) && !batchable(AtomicOp::Min, Dtype::U32));
    }
}
