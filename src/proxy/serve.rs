//! The proxy thread: takes the ring's requests in ticket order and runs each through the core
//! as a host call would (RMA, AMOs, fence, quiet), handing collectives to their team's thread
//! (`coll`).

use super::coll::{coll, Colls};
use super::ring::{Req, Ring};
use super::{Busy, Fault};
use crate::core::{self, Reach, State};
use crate::ffi::fatal;
use crate::op::{AmoOp, Rmw};
use crate::transport::cuda::state::*;
use crate::transport::cuda::Gpu;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::{Duration, Instant};

/// The proxy thread: takes the ring's requests in ticket order until `stop` and the ring is
/// drained.
pub(crate) fn serve(
    st: &'static State,
    ring: Ring,
    stage: Stage,
    stop: &AtomicBool,
    busy: &Busy,
    epoch: std::time::Instant,
    fault: Option<Fault>,
) {
    // SAFETY: as in Net's progress thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut colls = Colls::new(st, ring);
    // Only a running monitor reads `busy`.
    let watched = st.cfg.proxy_stall_s > 0;
    let mut next = 0u64;
    let mut idle: Option<Instant> = None;
    let spin_for = if st.cfg.wait_spin > 0 { IDLE_SPIN } else { IDLE_SPIN_SHARED };
    let mut prof = Profile::from_env();
    loop {
        match ring.poll(next) {
            Some(r) => {
                if r.kind == PROXY_COLL {
                    colls.hand_over(r);
                } else {
                    if watched {
                        busy.ticket.store(r.ticket, Relaxed);
                        busy.what.store(u64::from(r.kind) | (r.pe as u64) << 8, Relaxed);
                        busy.since.store(epoch.elapsed().as_nanos() as u64 + 1, Release);
                    }
                    match fault {
                        Some(Fault::Panic(n)) if n == r.ticket => panic!("planted fault at request {n} (ISHMEMI_TEST_PROXY_FAULT)"),
                        Some(Fault::Stall(n)) if n == r.ticket => loop {
                            std::thread::park();
                        },
                        _ => {}
                    }
                    let t0 = prof.as_ref().map(|_| std::time::Instant::now());
                    check_inline(&r);
                    // Non-blocking puts posted back to back that continue each other (the
                    // threads of a warp putting their consecutive shares) run as one.
                    // (Not with a planted fault, whose ticket must be run on its own.)
                    let (merged, upto) = if fault.is_none() { coalesce(&ring, r) } else { (r, r.ticket + 1) };
                    let upto = match device_put(st, &merged).filter(|_| fault.is_none()) {
                        // Puts from device memory: copied into the staging buffer by the GPU
                        // first, several with one synchronization.
                        Some(g) => stage.run_device_puts(st, &ring, g, merged, upto),
                        None => {
                            let v = run(st, &merged, Some(ring.inline_area(r.ticket)));
                            mark_done(&ring, r.ticket, upto, v);
                            upto
                        }
                    };
                    if let (Some(p), Some(t0)) = (prof.as_mut(), t0) {
                        p.add(r.kind, t0.elapsed());
                    }
                    if watched {
                        busy.since.store(0, Release);
                    }
                    next = upto - 1;
                }
                next += 1;
                idle = None;
            }
            None => {
                // Stop once the ring is drained (finalize: every kernel has finished, so every
                // collective handed over has replied).
                if stop.load(Acquire) {
                    colls.join();
                    if let Some(p) = prof {
                        p.report(st.me);
                    }
                    break;
                }
                let waited = idle.get_or_insert_with(Instant::now).elapsed();
                // While its kernels post nothing, they may be waiting for another node (a
                // signal, a flag, a barrier): this thread serves this PE's mailbox and drives
                // the provider meanwhile, as a host thread waiting in the library does, so a
                // request from another node is applied at once rather than when the progress
                // thread wakes (issue 23: the put_signal round trip between two kernels).
                #[cfg(not(ishmem_mutation = "proxy_serve_off"))]
                if waited >= SERVE_AFTER {
                    serve_net(st);
                }
                if waited < spin_for {
                    std::hint::spin_loop();
                } else if waited < spin_for + IDLE_YIELD {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(if waited < IDLE_SLEEP_LONG { 2 } else { 20 }));
                }
            }
        }
    }
}

/// How long the idle proxy thread polls the ring without pause (a kernel's next request
/// usually follows its last within microseconds), where the node has a CPU per waiting thread
/// (`ISHMEM_WAIT_SPIN` > 0), and where it has not; then it yields for `IDLE_YIELD`, then sleeps
/// 2 us, and 20 us once idle for `IDLE_SLEEP_LONG`.
const IDLE_SPIN: Duration = Duration::from_millis(2);
const IDLE_SPIN_SHARED: Duration = Duration::from_micros(100);
const IDLE_YIELD: Duration = Duration::from_millis(2);
const IDLE_SLEEP_LONG: Duration = Duration::from_millis(20);
/// Idle this long, the proxy thread also serves this PE's mailbox (`serve_net`): not sooner,
/// so the poll of the ring right after a request (the next one of a latency chain) is not
/// delayed by a pass through the provider.
const SERVE_AFTER: Duration = Duration::from_micros(10);

/// One pass of the network's progress and of this PE's staging mailbox (what a host thread
/// waiting in the library runs: `core::net_progress`).
fn serve_net(st: &State) {
    if let Some(n) = st.net.as_ref() {
        n.fab.poll_in_wait();
        if let Some(s) = &n.stage {
            s.serve_some(&n.fab, "ishmem proxy thread");
        }
    }
}

/// The kernel-side call a request stands for (error messages).
pub(crate) fn name(kind: u8) -> &'static str {
    match kind {
        PROXY_PUT => "a device put (through the proxy)",
        PROXY_GET => "a device get (through the proxy)",
        PROXY_P => "a device p (through the proxy)",
        PROXY_G => "a device g (through the proxy)",
        PROXY_AMO => "a device AMO (through the proxy)",
        PROXY_FENCE => "a device fence (through the proxy)",
        PROXY_QUIET => "a device quiet (through the proxy)",
        PROXY_PUT_SIGNAL => "a device put_signal (through the proxy)",
        PROXY_NOP => "ishmemx_nop (device, through the proxy)",
        PROXY_COLL => "a device collective (through the proxy)",
        _ => "a device call (through the proxy)",
    }
}

/// Runs one request through the core; returns the reply value (0 when none). `area`: the
/// request's inline area (host memory the proxy owns until the request is done), where p and g
/// keep their value on its way (a range the mailbox knows as host memory).
pub(crate) fn run(st: &State, r: &Req, area: Option<usize>) -> u64 {
    let func = name(r.kind);
    if r.pe >= st.npes {
        fatal(func, &format!("pe {} out of range [0, {}) (request {} of the ring)", r.pe, st.npes, r.ticket));
    }
    let (sym, local, n) = (r.sym as usize, r.local as usize, r.bytes as usize);
    match r.kind {
        // SAFETY: the kernel passes a device (or host) buffer of n bytes valid until the
        // request is done (blocking: the put has read its source, and every earlier one has,
        // before the reply, since the kernel may reuse it then) or until its quiet (nbi). An
        // inline put's source is its slot's area (checked: at most PROXY_INLINE_BYTES, or a
        // run of full areas of consecutive slots, see coalesce), reused once the request is
        // done, so it is put as a blocking put (the source read at return).
        PROXY_PUT if r.reply || r.inline => unsafe { core::rma::put(st, func, sym, local as *const u8, n, r.pe) },
        // SAFETY: as above.
        PROXY_PUT => unsafe { core::rma::put_nbi(st, func, sym, local as *const u8, n, r.pe) },
        // SAFETY: as above, writable.
        PROXY_GET => unsafe { core::rma::get(st, func, local as *mut u8, sym, n, r.pe) },
        PROXY_P => {
            check_width(func, r);
            let mut v = r.local.to_le_bytes();
            let src = match area {
                Some(a) => {
                    // SAFETY: the area is PROXY_INLINE_BYTES (>= 8) of the ring's host memory,
                    // this request's until it is done (a p request carries no inline bytes).
                    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), a as *mut u8, 8) };
                    a as *const u8
                }
                None => v.as_mut_ptr().cast_const(),
            };
            // SAFETY: src holds the value's width bytes (checked), copied before return.
            unsafe { core::rma::put(st, func, sym, src, r.width, r.pe) }
        }
        PROXY_G => {
            check_width(func, r);
            let mut v = [0u8; 8];
            let dst = area.unwrap_or(v.as_mut_ptr() as usize);
            // SAFETY: dst is writable for width <= 8 bytes (v, or the request's area as for p).
            unsafe { core::rma::get(st, func, dst as *mut u8, sym, r.width, r.pe) };
            if area.is_some() {
                // SAFETY: the get wrote width bytes there; 8 are readable.
                unsafe { std::ptr::copy_nonoverlapping(dst as *const u8, v.as_mut_ptr(), r.width) };
            }
            return u64::from_le_bytes(v);
        }
        PROXY_AMO => {
            check_width(func, r);
            return amo(st, func, r, sym, r.width, r.op, r.local, r.value2);
        }
        PROXY_FENCE => core::fence(func),
        PROXY_NOP => {}
        PROXY_COLL => return coll(st, r),
        #[cfg(not(ishmem_mutation = "proxy_quiet_noop"))]
        PROXY_QUIET => core::quiet(),
        #[cfg(ishmem_mutation = "proxy_quiet_noop")]
        PROXY_QUIET => {}
        PROXY_PUT_SIGNAL => {
            // SAFETY: as for a blocking PROXY_PUT (the kernel waits for the reply, then may
            // reuse the source: the put has read it; a source in a bounce buffer is n = 0).
            unsafe { core::rma::put(st, func, sym, local as *const u8, n, r.pe) };
            core::fence(func);
            let op = if r.op == 0 { AmoOp::Set } else { AmoOp::Add };
            amo(st, func, r, r.sig as usize, 8, op as u8, r.value2, 0);
        }
        k => fatal(func, &format!("malformed request {} of the proxy ring (kind {k})", r.ticket)),
    }
    0
}

/// Marks tickets `from..upto` done with the reply `v` (a request and those merged into it).
fn mark_done(ring: &Ring, from: u64, upto: u64, v: u64) {
    for t in from..upto {
        match ring.poll(t) {
            Some(q) => ring.done(&q, v),
            None => fatal(name(PROXY_PUT), &format!("internal error: request {t} of the proxy ring vanished")),
        }
    }
}

/// An inline request must be a put of at most PROXY_INLINE_BYTES (its slot's area).
fn check_inline(r: &Req) {
    if r.inline && (r.kind != PROXY_PUT || r.bytes > PROXY_INLINE_BYTES as u64) {
        fatal(
            name(r.kind),
            &format!(
                "malformed request {} of the proxy ring (inline, kind {}, {} bytes; inline puts carry at most {PROXY_INLINE_BYTES})",
                r.ticket, r.kind, r.bytes
            ),
        );
    }
}

/// The GPU when `r` is a put (not inline) from device memory to a PE of the job, through the
/// staging mailbox (whose own copy of a device source costs a GPU copy and a synchronization
/// per chunk, beside the running kernel).
fn device_put(st: &State, r: &Req) -> Option<&'static Gpu> {
    if r.kind != PROXY_PUT || r.inline || r.bytes == 0 || r.pe >= st.npes {
        return None;
    }
    st.net.as_ref()?.stage.as_ref()?.device_local(r.local as usize, r.bytes as usize)
}

/// Bytes of the proxy's staging buffer: pinned host memory after the ring (allocated with it),
/// two halves of [`HALF`]. The size is the CUDA transport's, which allocates ring and buffer.
pub const STAGE_BYTES: usize = crate::transport::cuda::state::PROXY_STAGE_BYTES;
const HALF: usize = STAGE_BYTES / 2;

/// The proxy thread's staging buffer for puts from device memory.
pub(crate) struct Stage {
    buf: usize,
}

impl Stage {
    /// # Safety
    /// `buf` must be STAGE_BYTES of pinned host memory that outlives the Stage, used by
    /// nothing else.
    pub(crate) unsafe fn new(buf: usize) -> Stage {
        Stage { buf }
    }

    /// Runs the put `first` (tickets `first.ticket..upto`, from device memory of `g`) and the
    /// device-sourced puts posted right after it that fit the buffer's half with it: the GPU
    /// copies every source into the buffer, one synchronization for all, then each runs from
    /// there as a blocking put (its bytes in the mailbox at return) and is marked done. A put
    /// larger than a half goes through the halves in turn, the copy of the next chunk running
    /// while the current one is sent. Returns the ticket after the last request run.
    fn run_device_puts(&self, st: &State, ring: &Ring, g: &Gpu, first: Req, upto: u64) -> u64 {
        let func = name(PROXY_PUT);
        let n = first.bytes as usize;
        if n > HALF {
            let chunks = n.div_ceil(HALF);
            let part = |k: usize| (k * HALF, HALF.min(n - k * HALF));
            let half = |k: usize| self.buf + (k % 2) * HALF;
            // SAFETY: (the whole loop) each chunk's source lies in the kernel's buffer of n bytes
            // (valid until the request is done); its half of the buffer is not read until the
            // copy was waited for, and not copied into again before its put returned.
            unsafe {
                g.copy_start(func, half(0), first.local as usize, part(0).1);
                g.copies_wait(func);
                for k in 0..chunks {
                    let (off, len) = part(k);
                    if k + 1 < chunks {
                        let (o2, l2) = part(k + 1);
                        g.copy_start(func, half(k + 1), first.local as usize + o2, l2);
                    }
                    core::rma::put(st, func, first.sym as usize + off, half(k) as *const u8, len, first.pe);
                    if k + 1 < chunks {
                        g.copies_wait(func);
                    }
                }
            }
            mark_done(ring, first.ticket, upto, 0);
            return upto;
        }
        let mut batch = vec![(first, first.ticket, upto)];
        let (mut total, mut upto) = (n, upto);
        while let Some(q) = ring.poll(upto) {
            if q.kind != PROXY_PUT || q.inline {
                break;
            }
            let (m, u) = coalesce(ring, q);
            if total + m.bytes as usize > HALF || device_put(st, &m).is_none() {
                break;
            }
            total += m.bytes as usize;
            batch.push((m, q.ticket, u));
            upto = u;
        }
        let mut at = self.buf;
        for (m, _, _) in &batch {
            // SAFETY: the source is the kernel's (valid until the request is done); the buffer's
            // first half holds every source of the batch side by side (total <= HALF).
            unsafe { g.copy_start(func, at, m.local as usize, m.bytes as usize) };
            at += m.bytes as usize;
        }
        g.copies_wait(func);
        let mut at = self.buf;
        for (m, from, u) in &batch {
            // SAFETY: the bytes of m are in the buffer at `at` (copied, waited for above).
            unsafe { core::rma::put(st, func, m.sym as usize, at as *const u8, m.bytes as usize, m.pe) };
            at += m.bytes as usize;
            mark_done(ring, *from, *u, 0);
        }
        upto
    }
}

fn check_width(func: &str, r: &Req) {
    if !matches!(r.width, 1 | 2 | 4 | 8) {
        fatal(func, &format!("malformed request {} of the proxy ring (width {})", r.ticket, r.width));
    }
}

/// One AMO of `width` bytes at the symmetric `sym` of PE `r.pe` (operator codes of the host
/// AMO kernel); returns the old value (0 for set).
#[allow(clippy::too_many_arguments)]
fn amo(st: &State, func: &str, r: &Req, sym: usize, width: usize, op: u8, v: u64, cond: u64) -> u64 {
    let Some(code) = AmoOp::from_code(op) else {
        fatal(func, &format!("malformed request {} of the proxy ring (AMO operator {op})", r.ticket))
    };
    match st.reach_atomic(func, "dest", sym, width, r.pe) {
        Reach::Net(n, pe, at) => {
            core::check_align(func, "dest", sym, width);
            match code {
                AmoOp::Fetch => n.fetch(func, pe, at, width),
                AmoOp::Set => {
                    n.set(func, pe, at, width, v);
                    0
                }
                AmoOp::Swap => n.swap(func, pe, at, width, v),
                AmoOp::Cas => n.cas(func, pe, at, width, cond, v),
                x if !r.reply => {
                    n.rmw(func, pe, at, width, x.rmw().unwrap_or(Rmw::Add), v);
                    0
                }
                x => n.fetch_rmw(func, pe, at, width, x.rmw().unwrap_or(Rmw::Add), v),
            }
        }
        Reach::Gpu(g, a) => {
            core::check_align(func, "dest", a, width);
            // SAFETY: a is a heap address as mapped here (checked by reach_atomic), aligned for
            // width (checked above).
            unsafe { g.amo(func, a, width as u32, code, v, cond) }
        }
        Reach::Host(_) => fatal(func, "internal error: a proxy AMO on host memory"),
    }
}
/// Where the proxy thread's time goes (`ISHMEMI_PROXY_PROFILE=1`, a measuring aid): per
/// request kind, how many were run and how long `run` took, printed at finalize. The part of
/// a kernel's latency not spent in `run` is the ring's (post, pick-up, reply).
struct Profile {
    n: [u64; 16],
    ns: [u64; 16],
}

impl Profile {
    fn from_env() -> Option<Profile> {
        std::env::var("ISHMEMI_PROXY_PROFILE").ok().filter(|v| v == "1").map(|_| Profile { n: [0; 16], ns: [0; 16] })
    }
    fn add(&mut self, kind: u8, d: Duration) {
        let k = (kind as usize).min(15);
        self.n[k] += 1;
        self.ns[k] += d.as_nanos() as u64;
    }
    fn report(&self, me: usize) {
        let mut line = format!("[PE {me}] proxy profile (requests, mean us in the proxy thread):");
        for k in 0..16 {
            if self.n[k] > 0 {
                line += &format!(
                    " {}={}/{:.2}",
                    name(k as u8).trim_end_matches(" (through the proxy)"),
                    self.n[k],
                    self.ns[k] as f64 / self.n[k] as f64 / 1e3
                );
            }
        }
        crate::ffi::emit(&line);
    }
}

/// Most bytes that [`coalesce`] puts into one request.
const COALESCE_MAX: u64 = 1 << 20;

/// Request `r` extended by the non-blocking puts already posted right after it (tickets
/// `r.ticket + 1 ..`) that continue it: same target PE, destination and source each following
/// on from the previous one, up to [`COALESCE_MAX`] bytes. Returns the request to run and the
/// ticket after the last one it covers (each covered one is marked done after it runs). Inline
/// puts merge only with inline puts, so only where each area before was full (their areas
/// follow on: consecutive slots, no wrap). Only requests with no reply qualify: nothing waits on them but a later quiet, and non-blocking
/// puts may complete in any order until a fence, which is a request of its own and ends the
/// run, as does any other kind.
pub(crate) fn coalesce(ring: &Ring, r: Req) -> (Req, u64) {
    let mut m = r;
    let mut upto = r.ticket + 1;
    if r.kind != PROXY_PUT || r.reply {
        return (m, upto);
    }
    while m.bytes < COALESCE_MAX {
        let Some(q) = ring.poll(upto) else { break };
        let follows = q.kind == PROXY_PUT
            && !q.reply
            && q.inline == m.inline
            && (!q.inline || q.bytes <= PROXY_INLINE_BYTES as u64)
            && q.pe == m.pe
            && q.sym == m.sym.wrapping_add(m.bytes)
            && q.local == m.local.wrapping_add(m.bytes)
            && m.bytes + q.bytes <= COALESCE_MAX;
        if !follows {
            break;
        }
        m.bytes += q.bytes;
        upto += 1;
    }
    (m, upto)
}
