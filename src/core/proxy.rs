//! The proxy: how a GPU kernel reaches a PE of another node. Kernels post requests into a ring
//! of slots in pinned host memory (the protocol is in include/ishmem/device_state.h, the
//! device side in include/ishmem/cuda_impl.cuh); this PE's proxy thread takes them in ticket
//! order and runs each through the core, as a host call would (so the other node's GPU heap is
//! reached through its staging mailbox), then marks the slot done, with the reply for the
//! requests that wait for one. It starts at init when the CUDA backend's job spans nodes and
//! stops at finalize. Its errors end the job, naming the kernel-side call.
//!
//! [`Ring`] is the host side of the protocol; the device's poster is mirrored by a test
//! poster here, so the protocol (tickets, back-pressure, wrap-around, replies) is exercised on
//! machines without a GPU.

use super::net::Rmw;
use super::{Reach, State};
use crate::ffi::fatal;
use crate::transport::cuda::state::*;
use crate::transport::cuda::AmoOp;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

/// Bytes of the ring.
pub const RING_BYTES: usize = PROXY_SLOTS * 64;

/// One request, as read from its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    pub ticket: u64,
    pub kind: u8,
    pub width: usize,
    pub op: u8,
    pub reply: bool,
    pub pe: usize,
    pub sym: u64,
    pub local: u64,
    pub bytes: u64,
    pub value2: u64,
    pub sig: u64,
}

/// The host side of a ring at `base` (PROXY_SLOTS slots of 8 words).
pub struct Ring {
    base: usize,
}

impl Ring {
    /// # Safety
    /// `base` must point to RING_BYTES of zeroed memory, 64-byte aligned, that outlives the Ring.
    pub unsafe fn new(base: usize) -> Ring {
        Ring { base }
    }

    fn word(&self, t: u64, w: usize) -> &AtomicU64 {
        let slot = (t % PROXY_SLOTS as u64) as usize;
        // SAFETY: slot < PROXY_SLOTS and w < 8 lie in the ring (contract of new); the words are
        // shared with the GPU and accessed atomically here.
        unsafe { AtomicU64::from_ptr((self.base + slot * 64 + 8 * w) as *mut u64) }
    }

    /// The request with ticket `t` when it has been posted.
    pub fn poll(&self, t: u64) -> Option<Req> {
        if self.word(t, 0).load(Acquire) != t + 1 {
            return None;
        }
        let w1 = self.word(t, 1).load(Relaxed);
        Some(Req {
            ticket: t,
            kind: w1 as u8,
            width: (w1 >> 8) as u8 as usize,
            op: (w1 >> 16) as u8,
            reply: w1 & PROXY_REPLY != 0,
            pe: (w1 >> 32) as usize,
            sym: self.word(t, 2).load(Relaxed),
            local: self.word(t, 3).load(Relaxed),
            bytes: self.word(t, 4).load(Relaxed),
            value2: self.word(t, 5).load(Relaxed),
            sig: self.word(t, 6).load(Relaxed),
        })
    }

    /// Marks request `r` done: with its reply `v` (held until the poster releases the slot)
    /// when it asked for one, else the slot is free at once.
    pub fn done(&self, r: &Req, v: u64) {
        if r.reply {
            self.word(r.ticket, 5).store(v, Relaxed);
            self.word(r.ticket, 7).store((r.ticket + 1) | PROXY_HELD, Release);
        } else {
            self.word(r.ticket, 7).store(r.ticket + 1, Release);
        }
    }
}

/// The running proxy of a PE.
pub struct Proxy {
    stop: Arc<AtomicBool>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Proxy {
    /// Starts the thread serving the ring at `ring` for the (process-lifetime) state `st`.
    pub fn start(st: &'static State, ring: usize) -> Proxy {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ishmem-proxy".into())
            .spawn(move || {
                // SAFETY: the ring was allocated zeroed with RING_BYTES (Gpu::alloc_proxy_ring)
                // and is freed only after this thread stops (finalize).
                let ring = unsafe { Ring::new(ring) };
                // SAFETY: as in Net's progress thread.
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
                let mut next = 0u64;
                let mut idle = 0u32;
                loop {
                    match ring.poll(next) {
                        Some(r) => {
                            let v = run(st, &r);
                            ring.done(&r, v);
                            next += 1;
                            idle = 0;
                        }
                        None => {
                            // Stop once the ring is drained (finalize).
                            if s.load(Acquire) {
                                break;
                            }
                            idle = idle.saturating_add(1);
                            if idle < 2000 {
                                std::hint::spin_loop();
                            } else if idle < 4000 {
                                std::thread::yield_now();
                            } else {
                                std::thread::sleep(Duration::from_micros(if idle < 20000 { 2 } else { 20 }));
                            }
                        }
                    }
                }
            })
            .ok();
        Proxy { stop, thread: std::sync::Mutex::new(thread) }
    }

    /// Stops the thread once it has run every request posted so far (finalize: every kernel
    /// has finished).
    pub fn stop(&self) {
        self.stop.store(true, Release);
        if let Some(h) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

/// The kernel-side call a request stands for (error messages).
fn name(kind: u8) -> &'static str {
    match kind {
        PROXY_PUT => "a device put (through the proxy)",
        PROXY_GET => "a device get (through the proxy)",
        PROXY_P => "a device p (through the proxy)",
        PROXY_G => "a device g (through the proxy)",
        PROXY_AMO => "a device AMO (through the proxy)",
        PROXY_FENCE => "a device fence (through the proxy)",
        PROXY_QUIET => "a device quiet (through the proxy)",
        PROXY_PUT_SIGNAL => "a device put_signal (through the proxy)",
        _ => "a device call (through the proxy)",
    }
}

/// Runs one request through the core; returns the reply value (0 when none).
fn run(st: &State, r: &Req) -> u64 {
    let func = name(r.kind);
    if r.pe >= st.npes {
        fatal(func, &format!("pe {} out of range [0, {}) (request {} of the ring)", r.pe, st.npes, r.ticket));
    }
    let (sym, local, n) = (r.sym as usize, r.local as usize, r.bytes as usize);
    match r.kind {
        // SAFETY: the kernel passes a device (or host) buffer of n bytes valid until the
        // request is done (blocking) or until its quiet (nbi).
        PROXY_PUT => unsafe { super::rma::put_nbi(st, func, sym, local as *const u8, n, r.pe) },
        // SAFETY: as above, writable.
        PROXY_GET => unsafe { super::rma::get(st, func, local as *mut u8, sym, n, r.pe) },
        PROXY_P => {
            check_width(func, r);
            let v = r.local.to_le_bytes();
            // SAFETY: v holds the value's width bytes (checked), copied before return.
            unsafe { super::rma::put(st, func, sym, v.as_ptr(), r.width, r.pe) }
        }
        PROXY_G => {
            check_width(func, r);
            let mut v = [0u8; 8];
            // SAFETY: v is writable for width <= 8 bytes.
            unsafe { super::rma::get(st, func, v.as_mut_ptr(), sym, r.width, r.pe) };
            return u64::from_le_bytes(v);
        }
        PROXY_AMO => {
            check_width(func, r);
            return amo(st, func, r, sym, r.width, r.op, r.local, r.value2);
        }
        PROXY_FENCE => super::fence(),
        PROXY_QUIET => super::quiet(),
        PROXY_PUT_SIGNAL => {
            // SAFETY: as for PROXY_PUT.
            unsafe { super::rma::put_nbi(st, func, sym, local as *const u8, n, r.pe) };
            super::fence();
            let op = if r.op == 0 { AmoOp::Set } else { AmoOp::Add };
            amo(st, func, r, r.sig as usize, 8, op as u8, r.value2, 0);
        }
        k => fatal(func, &format!("malformed request {} of the proxy ring (kind {k})", r.ticket)),
    }
    0
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
    let ops = [AmoOp::Fetch, AmoOp::Set, AmoOp::Swap, AmoOp::Cas, AmoOp::Add, AmoOp::And, AmoOp::Or, AmoOp::Xor];
    let Some(&code) = ops.get(op as usize) else {
        fatal(func, &format!("malformed request {} of the proxy ring (AMO operator {op})", r.ticket))
    };
    match st.reach_atomic(func, "dest", sym, width, r.pe) {
        Reach::Net(n, pe, at) => {
            super::check_align(func, "dest", sym, width);
            let rmw = |x| match x {
                AmoOp::Add => Some(Rmw::Add),
                AmoOp::And => Some(Rmw::And),
                AmoOp::Or => Some(Rmw::Or),
                AmoOp::Xor => Some(Rmw::Xor),
                _ => None,
            };
            match code {
                AmoOp::Fetch => n.fetch(func, pe, at, width),
                AmoOp::Set => {
                    n.set(func, pe, at, width, v);
                    0
                }
                AmoOp::Swap => n.swap(func, pe, at, width, v),
                AmoOp::Cas => n.cas(func, pe, at, width, cond, v),
                x if !r.reply => {
                    n.rmw(func, pe, at, width, rmw(x).unwrap_or(Rmw::Add), v);
                    0
                }
                x => n.fetch_rmw(func, pe, at, width, rmw(x).unwrap_or(Rmw::Add), v),
            }
        }
        Reach::Gpu(g, a) => {
            super::check_align(func, "dest", a, width);
            g.amo(func, a, width as u32, code, v, cond)
        }
        Reach::Host(_) => fatal(func, "internal error: a proxy AMO on host memory"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// The device's poster (include/ishmem/cuda_impl.cuh: proxy_post, proxy_wait), on the host.
    struct Poster<'a> {
        base: usize,
        ticket: &'a AtomicU64,
    }

    impl Poster<'_> {
        fn word(&self, t: u64, w: usize) -> &AtomicU64 {
            let slot = (t % PROXY_SLOTS as u64) as usize;
            // SAFETY: inside the test's ring.
            unsafe { AtomicU64::from_ptr((self.base + slot * 64 + 8 * w) as *mut u64) }
        }
        fn post(&self, w: [u64; 6]) -> u64 {
            let t = self.ticket.fetch_add(1, Relaxed);
            if t >= PROXY_SLOTS as u64 {
                let prev = t - PROXY_SLOTS as u64 + 1;
                while self.word(t, 7).load(Acquire) != prev {
                    std::thread::yield_now();
                }
            }
            for (i, v) in w.iter().enumerate() {
                self.word(t, i + 1).store(*v, Relaxed);
            }
            self.word(t, 0).store(t + 1, Release);
            t
        }
        fn wait(&self, t: u64) -> u64 {
            while self.word(t, 7).load(Acquire) != (t + 1) | PROXY_HELD {
                std::thread::yield_now();
            }
            let v = self.word(t, 5).load(Relaxed);
            self.word(t, 7).store(t + 1, Release);
            v
        }
    }

    #[repr(align(64))]
    struct Mem([u64; PROXY_SLOTS * 8]);

    /// Many posting threads, a consumer that checks every request in ticket order and replies
    /// with a function of it; more requests than slots (wrap-around, back-pressure), a slow
    /// consumer phase, replies held until read.
    #[test]
    fn ring_carries_every_request_in_order_with_replies() {
        let mem = Box::new(Mem([0; PROXY_SLOTS * 8]));
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        const THREADS: u64 = 4;
        const PER: u64 = 1500;
        let total = THREADS * PER;
        let seen = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            sc.spawn(|| {
                // SAFETY: mem is zeroed, aligned, RING_BYTES long, alive for the scope.
                let ring = unsafe { Ring::new(base) };
                let mut sum_per_thread = [0u64; THREADS as usize];
                for t in 0..total {
                    let r = loop {
                        if let Some(r) = ring.poll(t) {
                            break r;
                        }
                        std::thread::yield_now();
                    };
                    // Every field arrives as written.
                    assert_eq!(r.ticket, t);
                    assert_eq!(r.kind, PROXY_AMO);
                    let th = r.pe as u64;
                    assert!(th < THREADS);
                    assert_eq!(r.local, r.sym * 3 + 1);
                    assert_eq!(r.bytes, 8);
                    assert_eq!(r.value2, r.sym ^ 0x5a5a);
                    assert_eq!(r.sig, th << 40 | r.sym);
                    assert_eq!(r.reply, r.sym % 2 == 0);
                    // Each thread's requests come in its own order.
                    assert_eq!(r.sym, sum_per_thread[th as usize]);
                    sum_per_thread[th as usize] += 1;
                    if t > 2 * PROXY_SLOTS as u64 && t < 3 * PROXY_SLOTS as u64 {
                        std::thread::yield_now(); // a slow phase: posters wait for free slots
                    }
                    ring.done(&r, r.sym.wrapping_mul(7));
                    seen.fetch_add(1, Relaxed);
                }
            });
            for th in 0..THREADS {
                let ticket = &ticket;
                sc.spawn(move || {
                    let p = Poster { base, ticket };
                    for i in 0..PER {
                        let reply = i % 2 == 0;
                        let w1 = PROXY_AMO as u64 | 8 << 8 | if reply { PROXY_REPLY } else { 0 } | th << 32;
                        let t = p.post([w1, i, i * 3 + 1, 8, i ^ 0x5a5a, th << 40 | i]);
                        if reply {
                            assert_eq!(p.wait(t), i * 7);
                        }
                    }
                });
            }
        });
        assert_eq!(seen.load(Relaxed) as u64, total);
        assert_eq!(ticket.load(Relaxed), total);
    }
}
