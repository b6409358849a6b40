//! The staging mailbox: how a PE reaches the symmetric heap of a PE on another node when the
//! provider cannot address that heap itself (the CUDA backend's GPU heap where the provider
//! has no FI_HMEM for CUDA; or any heap under `ISHMEM_OFI_STAGING=always`, which tests this
//! path on CPUs). The target's own progress thread applies every such operation to its heap,
//! with the same means its host calls use (GPU copies and GPU atomics on the GPU heap, CPU
//! copies and atomics on a host heap), so remote AMOs stay atomic with respect to the node's
//! own AMOs, host and device.
//!
//! Each PE registers one host region (region 0 of the provider in staged mode, in place of
//! the heap): a control page, then `slots` request slots per source PE (its inbox) and `slots`
//! slots per target PE (its outbox, where requests are built and replies land). A slot is a
//! 64-byte header and `pay` bytes of payload:
//!
//! | word | inbox (written by the source) | outbox (written by the target) |
//! |---|---|---|
//! | 0 | request sequence number, written last | reply sequence number, written last |
//! | 1 | op, width, AMO operator | |
//! | 2 | heap offset | |
//! | 3 | bytes | |
//! | 4, 5 | AMO operand, compare value | |
//! | 6 | | AMO result |
//!
//! Request `n` (from 1) of source `s` to target `t` uses slot `(n - 1) % slots` on both sides.
//! The source builds it in its outbox slot and writes header and payload into the target's
//! inbox slot, then the sequence number ordered after them (`Fabric::put_ordered`). The target
//! serves each source's requests in order, then answers in the source's outbox slot: a get's
//! bytes and an AMO's result, then the sequence number, ordered the same way. A slot is free
//! again once its reply is in, so at most `slots` requests per target are in flight; quiet
//! waits for every reply (a put's reply means the bytes are in the target's heap).
//!
//! Ordering: requests from one source are applied in order, so fence needs nothing among
//! staged operations; a direct operation (the symmetric data segment) after a fence first
//! waits for the replies of the staged operations issued before the fence (`wait_fenced`).

use super::amo::AtomInt;
use crate::ffi::fatal;
use crate::op::{AmoOp, Rmw};
use crate::transport::cuda::Gpu;
use crate::transport::fabric::{Fabric, Remote};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Mutex, OnceLock};

/// Bytes of the control page at the start of the region (word 0: read by liveness probes and
/// flush reads; word 1: the abort word).
pub const CTRL: usize = 4096;
/// The offset in the region of the abort word (`Net::tell`).
pub const ABORT_OFF: usize = 8;
const HDR: usize = 64;

/// What a request asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Put = 1,
    Get = 2,
    Amo = 3,
}

/// The AMOs a request may carry (the vocabulary's operators, by their byte code).
pub type Amo = AmoOp;

fn amo_of(code: u8) -> Option<Amo> {
    AmoOp::from_code(code)
}

/// How this PE's own heap is read and written by the server.
enum Mem {
    Host {
        base: usize,
    },
    /// The GPU of the (leaked, process-lifetime) state; `base` the heap's device address.
    Gpu {
        gpu: &'static Gpu,
        base: usize,
    },
}

/// The requests in flight to one target.
struct Out {
    /// Sequence number of the last request issued.
    next: u64,
    /// Every request up to this one has its reply.
    done: u64,
}

/// The server's position in each source's stream.
struct Serve {
    expect: Vec<u64>,
    closed: bool,
    /// Requests applied and nanoseconds spent applying them, per kind (`ISHMEMI_PROXY_PROFILE`).
    prof_n: [u64; 4],
    prof_ns: [u64; 4],
    profile: bool,
}

/// Sizes of the region for `npes` PEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub npes: usize,
    pub slots: usize,
    pub pay: usize,
}

impl Layout {
    /// `slots` slots per peer, the payload per slot shrinking with the job so the region
    /// stays near `budget` bytes (between 4 KiB and 64 KiB of payload per slot).
    pub fn for_job(npes: usize, slots: usize, budget: usize) -> Layout {
        let per = budget / (2 * slots.max(1) * npes.max(1));
        let pay = per.saturating_sub(HDR).clamp(4096, 64 << 10) & !4095;
        Layout { npes, slots: slots.max(1), pay }
    }
    fn slot_bytes(&self) -> usize {
        HDR + self.pay
    }
    /// Bytes of the whole region (a multiple of the page size).
    pub fn bytes(&self) -> usize {
        (CTRL + 2 * self.npes * self.slots * self.slot_bytes()).next_multiple_of(4096)
    }
    fn inbox(&self, src: usize, i: usize) -> usize {
        CTRL + (src * self.slots + i) * self.slot_bytes()
    }
    fn outbox(&self, dst: usize, i: usize) -> usize {
        CTRL + ((self.npes + dst) * self.slots + i) * self.slot_bytes()
    }
}

/// A PE's mailbox.
pub struct Stage {
    lay: Layout,
    me: usize,
    /// The region (host memory, page-aligned, never freed: the provider may still touch it
    /// while a dead peer's operations drain).
    base: usize,
    heap_len: usize,
    /// The PEs of other nodes (the only ones that send requests here).
    sources: Vec<usize>,
    out: Vec<Mutex<Out>>,
    serve: Mutex<Serve>,
    mem: OnceLock<Mem>,
    /// Per target: the last request issued before the last fence.
    fenced: Vec<AtomicU64>,
    finishing: std::sync::atomic::AtomicBool,
    /// A range known to be host memory (`host_memory`).
    host: OnceLock<(usize, usize)>,
}

// SAFETY: the raw region is shared memory the provider and this PE's threads access through
// volatile/atomic reads and writes; every other field is Sync.
unsafe impl Sync for Stage {}
// SAFETY: as above.
unsafe impl Send for Stage {}

impl Stage {
    /// Allocates the region (zeroed) for a PE `me` of `npes`, whose heap has `heap_len` bytes.
    pub fn new(me: usize, npes: usize, heap_len: usize, sources: Vec<usize>, lay: Layout) -> Result<Stage, String> {
        let bytes = lay.bytes();
        // SAFETY: an anonymous private mapping; checked below.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(format!("cannot map the staging mailbox ({bytes} bytes): {}", std::io::Error::last_os_error()));
        }
        Ok(Stage {
            lay,
            me,
            base: p as usize,
            heap_len,
            sources,
            out: (0..npes).map(|_| Mutex::new(Out { next: 0, done: 0 })).collect(),
            serve: Mutex::new(Serve {
                expect: vec![1; npes],
                closed: false,
                prof_n: [0; 4],
                prof_ns: [0; 4],
                profile: std::env::var("ISHMEMI_PROXY_PROFILE").is_ok_and(|v| v == "1"),
            }),
            mem: OnceLock::new(),
            fenced: (0..npes).map(|_| AtomicU64::new(0)).collect(),
            finishing: std::sync::atomic::AtomicBool::new(false),
            host: OnceLock::new(),
        })
    }

    /// The region `(base, bytes)` to register with the provider.
    pub fn region(&self) -> (usize, usize) {
        (self.base, self.lay.bytes())
    }

    /// The region's host address of the abort word.
    pub fn abort_word(&self) -> usize {
        self.base + ABORT_OFF
    }

    pub fn layout(&self) -> Layout {
        self.lay
    }

    /// The heap is host memory at `base` (the CPU backend under `ISHMEM_OFI_STAGING=always`).
    ///
    /// # Safety
    /// `base` must be this PE's mapped heap, `heap_len` bytes (`Stage::new`), alive for the
    /// rest of the process: the server writes into it at the peers' requests.
    pub unsafe fn serve_host(&self, base: usize) {
        let _ = self.mem.set(Mem::Host { base });
    }

    /// The heap is `gpu`'s at `base`. Requests that arrive before this wait in the inbox.
    /// The region is page-locked for the GPU first, so that the server's and the requesters'
    /// copies between it and GPU memory are direct (a pageable region costs a driver-staged
    /// copy each way); where that fails the copies stay correct, only slower: returns why.
    ///
    /// # Safety
    /// `base` must be this PE's GPU heap on `gpu`, `heap_len` bytes (`Stage::new`), alive for
    /// the rest of the process: the server writes into it at the peers' requests.
    pub unsafe fn serve_gpu(&self, gpu: &'static Gpu, base: usize) -> Result<(), String> {
        let (at, len) = self.region();
        // SAFETY: the region is this Stage's mapping, which lives for the process.
        let pinned = unsafe { gpu.pin_host("ishmem_init", at, len) };
        let _ = self.mem.set(Mem::Gpu { gpu, base });
        pinned
    }

    #[inline]
    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: off is an 8-byte-aligned offset inside the mapped region (callers compute
        // it from the layout), which lives for the process.
        unsafe { AtomicU64::from_ptr((self.base + off) as *mut u64) }
    }

    fn at(off: usize) -> Remote {
        Remote { region: super::net::HEAP, offset: off }
    }

    /// Advances `o.done` over the replies that are in (from target `t`).
    fn reap(&self, t: usize, o: &mut Out) {
        while o.done < o.next {
            let i = (o.done % self.lay.slots as u64) as usize;
            if self.word(self.lay.outbox(t, i)).load(Acquire) < o.done + 1 {
                break;
            }
            o.done += 1;
        }
    }

    /// Drives the provider and this PE's own server once (a waiting thread's step).
    fn step(&self, fab: &Fabric, func: &str) {
        fab.progress();
        self.serve_some(fab, func);
        std::hint::spin_loop();
    }

    /// Waits until request `upto` to target `t` has its reply.
    fn wait_done(&self, fab: &Fabric, func: &str, t: usize, o: &mut Out, upto: u64) {
        let started = std::time::Instant::now();
        let mut spins = 0u32;
        loop {
            self.reap(t, o);
            if o.done >= upto {
                return;
            }
            self.step(fab, func);
            spins += 1;
            if spins > 1000 {
                std::thread::yield_now();
                if started.elapsed() > fab.stall_limit() {
                    fatal(
                        func,
                        &format!(
                            "network (staged heap): PE {t} has not answered for {:?} (request {upto}, {} in flight)",
                            started.elapsed(),
                            o.next - o.done
                        ),
                    );
                }
            }
        }
    }

    /// Takes the next slot to target `t` (waiting for one to be free); returns its index and
    /// the request's sequence number.
    fn take(&self, fab: &Fabric, func: &str, t: usize, o: &mut Out) -> (usize, u64) {
        let k = self.lay.slots as u64;
        if o.next - o.done >= k {
            self.wait_done(fab, func, t, o, o.next + 1 - k);
        }
        o.next += 1;
        (((o.next - 1) % k) as usize, o.next)
    }

    /// Writes the header of outbox slot `i` to `t` and posts header and `len` payload bytes,
    /// then the sequence number, to `t`'s inbox slot.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        fab: &Fabric,
        func: &str,
        t: usize,
        i: usize,
        seq: u64,
        kind: Kind,
        width: usize,
        amo: u8,
        off: usize,
        len: usize,
        a: u64,
        b: u64,
    ) {
        let o = self.lay.outbox(t, i);
        self.word(o + 8).store(kind as u64 | (width as u64) << 8 | (amo as u64) << 16, Relaxed);
        self.word(o + 16).store(off as u64, Relaxed);
        self.word(o + 24).store(len as u64, Relaxed);
        self.word(o + 32).store(a, Relaxed);
        self.word(o + 40).store(b, Relaxed);
        let body_len = HDR - 8 + if kind == Kind::Put { len } else { 0 };
        let dst = self.lay.inbox(self.me, i);
        // SAFETY: the body lies in the registered region and is not written again until this
        // slot's reply is in (which comes after the target has read it).
        // A request is the program's operation: it honours a fence pending from a direct write
        // (the data segment's) before it.
        let r = unsafe { fab.put_ordered(t, (self.base + o + 8) as *const u8, body_len, Self::at(dst + 8), seq, Self::at(dst), true) };
        if let Err(e) = r {
            fatal(func, &format!("network (staged heap): request to PE {t}: {e}"));
        }
    }

    /// The GPU when `[addr, addr+n)` is device memory (this PE's GPU heap, or memory CUDA
    /// reports as device memory) that the provider cannot read or write: such a local buffer
    /// of a direct operation goes through a host buffer.
    /// Marks `[base, base+len)` as host memory for [`Stage::device_local`], which then answers
    /// for it without asking the driver (the proxy's ring and staging buffer: the sources and
    /// destinations of its requests' host copies). Once per process; later calls are ignored.
    pub fn host_memory(&self, base: usize, len: usize) {
        let _ = self.host.set((base, len));
    }

    pub fn device_local(&self, addr: usize, n: usize) -> Option<&'static Gpu> {
        match self.mem.get() {
            Some(Mem::Gpu { gpu, base }) => {
                if let Some(&(hb, hl)) = self.host.get() {
                    if addr.wrapping_sub(hb) < hl && n <= hl - (addr - hb) {
                        return None; // known host memory: no driver call
                    }
                }
                let in_heap = addr.wrapping_sub(*base) < self.heap_len || (addr + n).wrapping_sub(*base + 1) < self.heap_len;
                let dev = in_heap || {
                    let _c = gpu.enter("ishmem network");
                    super::queue::device_accessible(addr)
                };
                dev.then_some(*gpu)
            }
            _ => None,
        }
    }

    /// Copies `n` bytes between the region and `other`, local memory of any kind (host, or
    /// device memory under the CUDA backend: this PE's heap, a caller's buffer), never
    /// overlapping; `to_region` says which way. Device memory is copied by the GPU; host
    /// memory by the CPU (a GPU copy between two host buffers costs a stream round trip).
    ///
    /// # Safety
    /// `[region, region+n)` must lie in the region, `[other, other+n)` be local memory readable
    /// (`to_region`) or writable (not `to_region`) for n bytes.
    unsafe fn local_copy(&self, func: &str, to_region: bool, region: usize, other: usize, n: usize) {
        let (dst, src) = if to_region { (region, other) } else { (other, region) };
        match self.device_local(other, n) {
            // SAFETY: per the caller, as below.
            Some(gpu) => unsafe { gpu.copy(func, dst, src, n) },
            // SAFETY: the caller passes a readable src and a writable dst of n bytes.
            None => unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) },
        }
    }

    /// A put of `n` bytes from local `src` to heap offset `off` of PE `t`: the bytes are
    /// copied into the outbox before it returns (complete at quiet).
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes.
    pub unsafe fn put(&self, fab: &Fabric, func: &str, t: usize, src: *const u8, n: usize, off: usize) {
        let mut o = self.lock(t);
        let mut done = 0;
        while done < n {
            let c = (n - done).min(self.lay.pay);
            let (i, seq) = self.take(fab, func, t, &mut o);
            // SAFETY: slot i's payload (c <= pay bytes) lies in the region; src is readable for n
            // bytes per the caller.
            unsafe { self.local_copy(func, true, self.base + self.lay.outbox(t, i) + HDR, src as usize + done, c) };
            self.send(fab, func, t, i, seq, Kind::Put, 0, 0, off + done, c, 0, 0);
            done += c;
        }
    }

    /// A get of `n` bytes from heap offset `off` of PE `t` into local `dst`; complete at return.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes.
    pub unsafe fn get(&self, fab: &Fabric, func: &str, t: usize, dst: *mut u8, n: usize, off: usize) {
        let mut o = self.lock(t);
        let mut done = 0;
        while done < n {
            // A batch of up to `slots` chunks; their replies are copied out before any of
            // their slots is taken again (this thread holds the target's lock throughout).
            let upto = o.next;
            self.wait_done(fab, func, t, &mut o, upto);
            let mut batch = Vec::with_capacity(self.lay.slots);
            while done < n && batch.len() < self.lay.slots {
                let c = (n - done).min(self.lay.pay);
                let (i, seq) = self.take(fab, func, t, &mut o);
                self.send(fab, func, t, i, seq, Kind::Get, 0, 0, off + done, c, 0, 0);
                batch.push((i, done, c));
                done += c;
            }
            let upto = o.next;
            self.wait_done(fab, func, t, &mut o, upto);
            for (i, at, c) in batch {
                // SAFETY: slot i's payload (c <= pay bytes) lies in the region; dst is writable
                // for n bytes per the caller.
                unsafe { self.local_copy(func, false, self.base + self.lay.outbox(t, i) + HDR, dst as usize + at, c) };
            }
        }
    }

    /// An AMO of `width` bytes on heap offset `off` of PE `t`; `fetch`: waits for and returns
    /// the old value, else returns 0 at once (complete at quiet).
    #[allow(clippy::too_many_arguments)]
    pub fn amo(&self, fab: &Fabric, func: &str, t: usize, off: usize, width: usize, op: Amo, value: u64, cond: u64, fetch: bool) -> u64 {
        let mut o = self.lock(t);
        let (i, seq) = self.take(fab, func, t, &mut o);
        self.send(fab, func, t, i, seq, Kind::Amo, width, op.code(), off, width, value, cond);
        if !fetch {
            return 0;
        }
        self.wait_done(fab, func, t, &mut o, seq);
        self.word(self.lay.outbox(t, i) + 48).load(Acquire)
    }

    fn lock(&self, t: usize) -> std::sync::MutexGuard<'_, Out> {
        self.out[t].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the reply to every request issued so far (quiet).
    pub fn quiet(&self, fab: &Fabric, func: &str) {
        for t in 0..self.out.len() {
            let mut o = self.lock(t);
            if o.done < o.next {
                let upto = o.next;
                self.wait_done(fab, func, t, &mut o, upto);
            }
        }
    }

    /// Remembers, per target, the requests issued before this fence.
    pub fn fence(&self) {
        for (t, f) in self.fenced.iter().enumerate() {
            let o = self.lock(t);
            f.store(o.next, Release);
        }
    }

    /// Before a direct operation to `t`: waits for the replies of the staged requests issued
    /// before the last fence.
    pub fn wait_fenced(&self, fab: &Fabric, func: &str, t: usize) {
        let f = self.fenced[t].load(Acquire);
        if f == 0 {
            return;
        }
        let mut o = self.lock(t);
        if o.done < f {
            self.wait_done(fab, func, t, &mut o, f);
        }
    }

    /// Finalize, after the last barrier: replies to PEs that may have ended are no longer
    /// checked.
    pub fn finishing(&self) {
        self.finishing.store(true, Release);
    }

    /// Stops serving (finalize, before the heap is freed): requests still arriving are left
    /// unanswered; every PE has left the final barrier, so none of them is waited for.
    pub fn close(&self) {
        let mut s = self.serve.lock().unwrap_or_else(|e| e.into_inner());
        s.closed = true;
        if std::env::var("ISHMEMI_PROXY_PROFILE").is_ok_and(|v| v == "1") {
            let mut line = format!("[PE {}] mailbox server profile (requests, mean us applying):", self.me);
            for (k, what) in [(1, "put"), (2, "get"), (3, "amo")] {
                let n = s.prof_n[k];
                if n > 0 {
                    line += &format!(" {what}={n}/{:.2}", s.prof_ns[k] as f64 / n as f64 / 1e3);
                }
            }
            crate::ffi::emit(&line);
        }
    }

    /// Serves the requests that are in, in order per source (one thread at a time; a call
    /// that finds another serving returns at once). Returns how many it served.
    pub fn serve_some(&self, fab: &Fabric, func: &str) -> usize {
        let Some(mem) = self.mem.get() else { return 0 };
        let Ok(mut s) = self.serve.try_lock() else { return 0 };
        if s.closed {
            return 0;
        }
        let mut n = 0;
        for &src in &self.sources {
            loop {
                let seq = s.expect[src];
                let i = ((seq - 1) % self.lay.slots as u64) as usize;
                let slot = self.lay.inbox(src, i);
                if self.word(slot).load(Acquire) != seq {
                    break;
                }
                if s.profile {
                    let kind = (self.word(slot + 8).load(Relaxed) as u8 as usize).min(3);
                    let t0 = std::time::Instant::now();
                    self.apply(fab, func, mem, src, i, slot, seq);
                    s.prof_n[kind] += 1;
                    s.prof_ns[kind] += t0.elapsed().as_nanos() as u64;
                } else {
                    self.apply(fab, func, mem, src, i, slot, seq);
                }
                s.expect[src] = seq + 1;
                n += 1;
            }
        }
        n
    }

    #[allow(clippy::too_many_arguments)]
    fn apply(&self, fab: &Fabric, func: &str, mem: &Mem, src: usize, i: usize, slot: usize, seq: u64) {
        let w1 = self.word(slot + 8).load(Relaxed);
        let (kind, width, amo) = (w1 as u8, (w1 >> 8) as u8 as usize, (w1 >> 16) as u8);
        let off = self.word(slot + 16).load(Relaxed) as usize;
        let len = self.word(slot + 24).load(Relaxed) as usize;
        let (a, b) = (self.word(slot + 32).load(Relaxed), self.word(slot + 40).load(Relaxed));
        let bad = |why: &str| -> ! {
            fatal(
                func,
                &format!("network (staged heap): malformed request {seq} from PE {src} ({why}: op {kind}, offset {off:#x}, {len} bytes)"),
            )
        };
        if off.checked_add(len).is_none_or(|e| e > self.heap_len) {
            bad("outside the heap");
        }
        let reply = self.lay.outbox(self.me, i);
        let pay = self.base + slot + HDR;
        let (heap, gpu) = match mem {
            Mem::Host { base } => (*base, None),
            Mem::Gpu { gpu, base } => (*base, Some(*gpu)),
        };
        let (body, body_len, body_at) = match kind {
            k if k == Kind::Put as u8 => {
                if len > self.lay.pay {
                    bad("payload too long");
                }
                // SAFETY: [off, off+len) is inside this PE's heap (checked above; its base is the
                // one `serve_host`/`serve_gpu` were given); the payload is in the region.
                unsafe { self.heap_copy(func, gpu, heap + off, pay, len) };
                (0, 0, 0)
            }
            k if k == Kind::Get as u8 => {
                if len > self.lay.pay {
                    bad("payload too long");
                }
                // SAFETY: as for a put, the other way round.
                unsafe { self.heap_copy(func, gpu, pay, heap + off, len) };
                (pay, len, reply + HDR)
            }
            k if k == Kind::Amo as u8 => {
                let Some(op) = amo_of(amo) else { bad("unknown AMO") };
                if !matches!(width, 1 | 2 | 4 | 8) || !off.is_multiple_of(width) {
                    bad("AMO width or alignment");
                }
                let r = match gpu {
                    // SAFETY: aligned (checked) and inside this PE's GPU heap.
                    Some(g) => unsafe { g.amo(func, heap + off, width as u32, op, a, b) },
                    // SAFETY: aligned (checked) and inside the heap.
                    None => unsafe { host_amo(heap + off, width, op, a, b) }.unwrap_or_else(|| bad("AMO width")),
                };
                self.word(slot + 48).store(r, Relaxed);
                (slot + 48 + self.base, 8, reply + 48)
            }
            _ => bad("unknown operation"),
        };
        // SAFETY: the body (a payload or result word of this inbox slot) is not written again
        // until the source reuses the slot, after this reply.
        let r = unsafe {
            if body_len > 0 {
                fab.put_ordered(src, body as *const u8, body_len, Self::at(body_at), seq, Self::at(reply), false)
            } else {
                fab.put_word_unflushed(src, seq, Self::at(reply))
            }
        };
        if let Err(e) = r {
            if !self.finishing.load(Acquire) {
                fatal(func, &format!("network (staged heap): reply to PE {src}: {e}"));
            }
        }
    }
}

impl Stage {
    /// A copy between the heap (GPU memory when `gpu`) and the region, by the server.
    ///
    /// # Safety
    /// One of `[dst, dst+n)` and `[src, src+n)` must lie in this PE's heap (the one served),
    /// the other in the region, never overlapping.
    unsafe fn heap_copy(&self, func: &str, gpu: Option<&Gpu>, dst: usize, src: usize, n: usize) {
        match gpu {
            // SAFETY: as below.
            Some(g) => unsafe { g.copy(func, dst, src, n) },
            // SAFETY: both ranges were checked by the caller (heap and region), never overlapping.
            None => unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) },
        }
    }
}

/// One AMO on host memory at `p` (aligned to `width`); None for a width with no atomics.
///
/// # Safety
/// `p` must be valid and aligned for `width` bytes.
unsafe fn host_amo(p: usize, width: usize, op: Amo, a: u64, b: u64) -> Option<u64> {
    // SAFETY: forwarded contract.
    unsafe {
        Some(match width {
            1 => one::<i8>(p, op, a, b) as u8 as u64,
            4 => one::<u32>(p, op, a, b) as u64,
            8 => one::<u64>(p, op, a, b),
            _ => return None,
        })
    }
}

/// # Safety
/// As `host_amo`.
unsafe fn one<T: AtomInt>(p: usize, op: Amo, a: u64, b: u64) -> T {
    let p = p as *mut T;
    let (a, b) = (T::from_bits64(a), T::from_bits64(b));
    // SAFETY: forwarded contract.
    unsafe {
        match op {
            AmoOp::Fetch => T::load(p),
            AmoOp::Set => {
                let old = T::load(p);
                T::store(p, a);
                old
            }
            AmoOp::Swap => T::swap(p, a),
            AmoOp::Cas => T::cas(p, b, a),
            AmoOp::Add => T::rmw(p, Rmw::Add, a),
            AmoOp::And => T::rmw(p, Rmw::And, a),
            AmoOp::Or => T::rmw(p, Rmw::Or, a),
            AmoOp::Xor => T::rmw(p, Rmw::Xor, a),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_keeps_slots_apart_and_page_sized() {
        let l = Layout::for_job(4, 4, 8 << 20);
        assert_eq!(l.pay, 64 << 10);
        assert_eq!(l.bytes() % 4096, 0);
        assert_eq!(l.inbox(0, 0), CTRL);
        assert_eq!(l.inbox(3, 3) + l.slot_bytes(), l.outbox(0, 0));
        assert!(l.outbox(3, 3) + l.slot_bytes() <= l.bytes());
        let big = Layout::for_job(4096, 4, 8 << 20);
        assert_eq!(big.pay, 4096);
    }

    #[test]
    fn host_amos_apply_each_operator() {
        let mut w = 5u64;
        let p = &mut w as *mut u64 as usize;
        // SAFETY: p is an aligned local word.
        unsafe {
            assert_eq!(host_amo(p, 8, AmoOp::Add, 3, 0), Some(5));
            assert_eq!(host_amo(p, 8, AmoOp::Cas, 1, 8), Some(8));
            assert_eq!(host_amo(p, 8, AmoOp::Fetch, 0, 0), Some(1));
            assert_eq!(host_amo(p, 8, AmoOp::Xor, 3, 0), Some(1));
            assert_eq!(host_amo(p, 8, AmoOp::Set, 9, 0), Some(2));
            assert_eq!(host_amo(p, 2, AmoOp::Set, 9, 0), None);
        }
        assert_eq!(w, 9);
    }
}
