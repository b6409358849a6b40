//! The proxy: how a GPU kernel reaches a PE of another node. Kernels post requests into a ring
//! of slots in pinned host memory (the protocol is in include/ishmem/device_state.h, the
//! device side in include/ishmem/cuda_impl.cuh); this PE's proxy thread takes them in ticket
//! order and runs each through the core, as a host call would (so the other node's GPU heap is
//! reached through its staging mailbox), then marks the slot done, with the reply for the
//! requests that wait for one. It starts at init when the CUDA backend's job spans nodes and
//! stops at finalize. Its errors end the job, naming the kernel-side call.
//!
//! Collectives (`PROXY_COLL`): a kernel's collective or team sync on a team with a member on
//! another node arrives as one request per PE, which this thread runs as the host API's
//! collective of the same kind (`api::coll`, `api::team`: the same checks and algorithms, which
//! reach the other nodes' GPU heaps), replying with its return code. Each team's collectives
//! run on a thread of that team's own ([`Colls`], started at the team's first one), in ticket
//! order per team, so that the ring goes on draining while a collective waits for its team:
//! two blocks may call collectives on two teams in opposite orders on two PEs, and a proxy that
//! waited in the first would never reach the second (a deadlock between the PEs). The requests
//! before a collective are done or started when it is handed over (nbi puts complete in the
//! collective's first sync, whose quiet covers every operation this PE has issued).
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
#[derive(Clone, Copy)]
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
    threads: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// What the proxy thread is doing, for its monitor: the request it runs and since when.
#[derive(Default)]
struct Busy {
    /// Nanoseconds since `epoch` + 1 at the start of the request being run; 0: idle.
    since: AtomicU64,
    ticket: AtomicU64,
    /// kind | pe << 8.
    what: AtomicU64,
}

/// A fault the tests plant in the proxy thread (`ISHMEMI_TEST_PROXY_FAULT`): `panic@N` panics
/// when it takes request N (an internal error of the thread), `stall@N` never finishes request
/// N (a request stuck for good, behind which the ring fills).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Panic(u64),
    Stall(u64),
}

fn planted_fault() -> Option<Fault> {
    let v = std::env::var("ISHMEMI_TEST_PROXY_FAULT").ok().filter(|v| !v.is_empty())?;
    let bad = || -> ! { fatal("ishmem_init", &format!("ISHMEMI_TEST_PROXY_FAULT: '{v}' is not panic@N or stall@N")) };
    let (what, n) = v.split_once('@').unwrap_or_else(|| bad());
    let n = n.parse::<u64>().unwrap_or_else(|_| bad());
    match what {
        "panic" => Some(Fault::Panic(n)),
        "stall" => Some(Fault::Stall(n)),
        _ => bad(),
    }
}

impl Proxy {
    /// Starts the thread serving the ring at `ring` for the (process-lifetime) state `st`, and
    /// its monitor (ISHMEM_PROXY_STALL_S).
    pub fn start(st: &'static State, ring: usize) -> Proxy {
        let stop = Arc::new(AtomicBool::new(false));
        let busy = Arc::new(Busy::default());
        let epoch = std::time::Instant::now();
        let fault = planted_fault();
        let (s, b) = (stop.clone(), busy.clone());
        let thread = std::thread::Builder::new()
            .name("ishmem-proxy".into())
            .spawn(move || {
                crate::ffi::guard("the proxy thread (kernels' calls to other nodes)", || {
                    // SAFETY: the ring was allocated zeroed with RING_BYTES
                    // (Gpu::alloc_proxy_ring) and is freed only after this thread stops
                    // (finalize).
                    let ring = unsafe { Ring::new(ring) };
                    serve(st, ring, &s, &b, epoch, fault)
                })
            })
            .unwrap_or_else(|e| fatal("ishmem_init", &format!("cannot start the proxy thread (kernels reach other nodes through it): {e}")));
        let mut threads = vec![thread];
        let limit = st.cfg.proxy_stall_s;
        if limit > 0 {
            let (s, b) = (stop.clone(), busy.clone());
            let mon = std::thread::Builder::new()
                .name("ishmem-proxymon".into())
                .spawn(move || monitor(&s, &b, epoch, Duration::from_secs(limit)))
                .unwrap_or_else(|e| fatal("ishmem_init", &format!("cannot start the proxy's monitor thread: {e}")));
            threads.push(mon);
        }
        Proxy { stop, threads: std::sync::Mutex::new(threads) }
    }

    /// Stops the threads once the proxy has run every request posted so far (finalize: every
    /// kernel has finished).
    pub fn stop(&self) {
        self.stop.store(true, Release);
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for h in threads {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// The proxy thread: takes the ring's requests in ticket order until `stop` and the ring is
/// drained.
fn serve(st: &'static State, ring: Ring, stop: &AtomicBool, busy: &Busy, epoch: std::time::Instant, fault: Option<Fault>) {
    // SAFETY: as in Net's progress thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut colls = Colls::new(st, ring);
    // Only a running monitor reads `busy`.
    let watched = st.cfg.proxy_stall_s > 0;
    let mut next = 0u64;
    let mut idle = 0u32;
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
                    // Non-blocking puts posted back to back that continue each other (the
                    // threads of a warp putting their consecutive shares) run as one.
                    // (Not with a planted fault, whose ticket must be run on its own.)
                    let (merged, upto) = if fault.is_none() { coalesce(&ring, r) } else { (r, r.ticket + 1) };
                    let v = run(st, &merged);
                    if let (Some(p), Some(t0)) = (prof.as_mut(), t0) {
                        p.add(r.kind, t0.elapsed());
                    }
                    if watched {
                        busy.since.store(0, Release);
                    }
                    for t in r.ticket..upto {
                        match ring.poll(t) {
                            Some(q) => ring.done(&q, v),
                            None => fatal(name(r.kind), &format!("internal error: request {t} of the proxy ring vanished")),
                        }
                    }
                    next = upto - 1;
                }
                next += 1;
                idle = 0;
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
/// ticket after the last one it covers (each covered one is marked done after it runs). Only
/// requests with no reply qualify: nothing waits on them but a later quiet, and non-blocking
/// puts may complete in any order until a fence, which is a request of its own and ends the
/// run, as does any other kind.
fn coalesce(ring: &Ring, r: Req) -> (Req, u64) {
    let mut m = r;
    let mut upto = r.ticket + 1;
    if r.kind != PROXY_PUT || r.reply {
        return (m, upto);
    }
    while m.bytes < COALESCE_MAX {
        let Some(q) = ring.poll(upto) else { break };
        let follows = q.kind == PROXY_PUT
            && !q.reply
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

/// The proxy's monitor: ends the job when one request has kept the proxy thread for `limit`.
fn monitor(stop: &AtomicBool, busy: &Busy, epoch: std::time::Instant, limit: Duration) {
    let period = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    while !stop.load(Acquire) {
        std::thread::park_timeout(period);
        let since = busy.since.load(Acquire);
        if since == 0 {
            continue;
        }
        let held = epoch.elapsed().saturating_sub(Duration::from_nanos(since - 1));
        if held < limit {
            continue;
        }
        let (ticket, what) = (busy.ticket.load(Relaxed), busy.what.load(Relaxed));
        if busy.since.load(Acquire) != since || stop.load(Acquire) {
            continue; // it finished meanwhile
        }
        fatal(
            name(what as u8),
            &format!(
                "request {ticket} of the proxy ring (to PE {}) has not finished after {} s; the kernels posting behind it cannot go on (limit: ISHMEM_PROXY_STALL_S={})",
                what >> 8,
                held.as_secs(),
                limit.as_secs()
            ),
        );
    }
}

/// The proxy's collective threads: one per team that has had a collective through the ring,
/// each running its team's requests in the order handed over and replying to each.
struct Colls {
    st: &'static State,
    ring: Ring,
    teams: std::collections::HashMap<i32, std::sync::mpsc::Sender<Req>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Colls {
    fn new(st: &'static State, ring: Ring) -> Colls {
        Colls { st, ring, teams: std::collections::HashMap::new(), threads: Vec::new() }
    }

    /// Hands collective request `r` to its team's thread (started at the team's first).
    fn hand_over(&mut self, r: Req) {
        let team = Coll::of(&r).team;
        let (st, ring) = (self.st, self.ring);
        let threads = &mut self.threads;
        let tx = self.teams.entry(team).or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Req>();
            let h = std::thread::Builder::new()
                .name(format!("ishmem-coll{team}"))
                .spawn(move || {
                    crate::ffi::guard("the proxy's collective thread (kernels' collectives across nodes)", || {
                        for r in rx {
                            let v = run(st, &r);
                            ring.done(&r, v);
                        }
                    })
                })
                .unwrap_or_else(|e| {
                    fatal(Coll::of(&r).name(), &format!("cannot start the proxy's thread for the collectives of team {team}: {e}"))
                });
            threads.push(h);
            tx
        });
        if tx.send(r).is_err() {
            // The thread ended: only a panic in it does that, and a panic aborts the process.
            fatal(Coll::of(&r).name(), &format!("the proxy's thread for the collectives of team {team} has ended"));
        }
    }

    /// Ends the threads once they have run every request handed over.
    fn join(&mut self) {
        self.teams.clear();
        for h in self.threads.drain(..) {
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
        PROXY_NOP => "ishmemx_nop (device, through the proxy)",
        PROXY_COLL => "a device collective (through the proxy)",
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
        // request is done (blocking: the put has read its source, and every earlier one has,
        // before the reply, since the kernel may reuse it then) or until its quiet (nbi).
        PROXY_PUT if r.reply => unsafe { super::rma::put(st, func, sym, local as *const u8, n, r.pe) },
        // SAFETY: as above.
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
        PROXY_FENCE => super::fence(func),
        PROXY_NOP => {}
        PROXY_COLL => return coll(st, r),
        #[cfg(not(ishmem_mutation = "proxy_quiet_noop"))]
        PROXY_QUIET => super::quiet(),
        #[cfg(ishmem_mutation = "proxy_quiet_noop")]
        PROXY_QUIET => {}
        PROXY_PUT_SIGNAL => {
            // SAFETY: as for a blocking PROXY_PUT (the kernel waits for the reply, then may
            // reuse the source: the put has read it; a source in a bounce buffer is n = 0).
            unsafe { super::rma::put(st, func, sym, local as *const u8, n, r.pe) };
            super::fence(func);
            let op = if r.op == 0 { AmoOp::Set } else { AmoOp::Add };
            amo(st, func, r, r.sig as usize, 8, op as u8, r.value2, 0);
        }
        k => fatal(func, &format!("malformed request {} of the proxy ring (kind {k})", r.ticket)),
    }
    0
}

/// A `PROXY_COLL` request's collective (device_state.h: ISHMEMI_PROXY_COLL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coll {
    pub team: i32,
    /// `COLL_*`.
    pub what: u8,
    /// `COLL_T_*` and the element size in bytes.
    pub class: u8,
    pub width: usize,
    /// `COLL_OP_*` (reductions).
    pub op: u8,
    /// The root's team PE (broadcast).
    pub root: i32,
    pub dest: usize,
    pub src: usize,
    /// Elements of `width` bytes.
    pub n: usize,
}

impl Coll {
    /// The collective of request `r` (fields as posted; checked when run).
    pub fn of(r: &Req) -> Coll {
        Coll {
            team: r.sig as u32 as i32,
            what: (r.sig >> 32) as u8,
            class: (r.sig >> 40) as u8,
            width: r.width,
            op: r.op,
            root: r.value2 as u32 as i32,
            dest: r.sym as usize,
            src: r.local as usize,
            n: r.bytes as usize,
        }
    }

    /// The element type's TYPENAME (reductions and scans), None for a class and width no
    /// device reduction has.
    fn type_name(&self) -> Option<&'static str> {
        Some(match (self.class, self.width) {
            (COLL_T_UNSIGNED, 1) => "uint8",
            (COLL_T_UNSIGNED, 2) => "uint16",
            (COLL_T_UNSIGNED, 4) => "uint32",
            (COLL_T_UNSIGNED, 8) => "uint64",
            (COLL_T_SIGNED, 1) => "int8",
            (COLL_T_SIGNED, 2) => "int16",
            (COLL_T_SIGNED, 4) => "int32",
            (COLL_T_SIGNED, 8) => "int64",
            (COLL_T_FLOAT, 4) => "float",
            (COLL_T_FLOAT, 8) => "double",
            _ => return None,
        })
    }

    /// The operator's name (reductions), None for an unknown one.
    fn op_name(&self) -> Option<&'static str> {
        ["and", "or", "xor", "max", "min", "sum", "prod"].get(self.op as usize).copied()
    }

    /// The device call this request stands for, in error messages and in the team's record of
    /// its collective calls (which compares the names of reductions between PEs: a PE's device
    /// call through the proxy is named alike on every PE). Reductions and scans name type and
    /// operator; those names are made once each (a few dozen at most) and kept.
    pub fn name(&self) -> &'static str {
        match self.what {
            COLL_SYNC => return "a device team sync (through the proxy)",
            COLL_BROADCAST => return "a device broadcast (through the proxy)",
            COLL_FCOLLECT => return "a device fcollect (through the proxy)",
            COLL_COLLECT => return "a device collect (through the proxy)",
            COLL_ALLTOALL => return "a device alltoall (through the proxy)",
            COLL_REDUCE | COLL_INSCAN | COLL_EXSCAN => {}
            _ => return "a device collective (through the proxy)",
        }
        let (Some(ty), Some(op)) = (self.type_name(), self.op_name()) else {
            return "a device reduction or scan (through the proxy)";
        };
        let form = match self.what {
            COLL_REDUCE => "reduce",
            COLL_INSCAN => "inscan",
            _ => "exscan",
        };
        static NAMES: std::sync::Mutex<Vec<(u32, &'static str)>> = std::sync::Mutex::new(Vec::new());
        let key = u32::from(self.what) << 24 | u32::from(self.class) << 16 | (self.width as u32) << 8 | u32::from(self.op);
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, n)) = names.iter().find(|(k, _)| *k == key) {
            return n;
        }
        let n: &'static str = Box::leak(format!("a device {ty} {op}_{form} (through the proxy)").into_boxed_str());
        names.push((key, n));
        n
    }
}

/// Runs a `PROXY_COLL` request as the host collective of its kind; returns its status.
fn coll(st: &State, r: &Req) -> u64 {
    let c = Coll::of(r);
    let func = c.name();
    let malformed = |what: &str| -> ! { fatal(func, &format!("malformed request {} of the proxy ring ({what})", r.ticket)) };
    let (dest, src) = (c.dest as *mut u8, c.src as *const u8);
    let rc = match c.what {
        COLL_SYNC => {
            crate::api::team::team_of(st, func, c.team).team_sync();
            0
        }
        COLL_BROADCAST | COLL_FCOLLECT | COLL_COLLECT | COLL_ALLTOALL => {
            if c.width == 0 {
                malformed("element size 0");
            }
            use crate::api::coll as ac;
            // SAFETY: the kernel passes symmetric addresses of this PE's heap (checked by the
            // host collective, as for a host call) that it does not touch until the reply.
            unsafe {
                match c.what {
                    COLL_BROADCAST => ac::broadcast(func, c.team, dest, src, c.n, c.width, c.root),
                    COLL_FCOLLECT => ac::fcollect(func, c.team, dest, src, c.n, c.width),
                    COLL_COLLECT => ac::collect(func, c.team, dest, src, c.n, c.width),
                    _ => ac::alltoall(func, c.team, dest, src, c.n, c.width),
                }
            }
        }
        COLL_REDUCE | COLL_INSCAN | COLL_EXSCAN => {
            if c.type_name().is_none() {
                malformed(&format!("element class {} of {} bytes", c.class, c.width));
            }
            if c.op_name().is_none() || (c.what != COLL_REDUCE && c.op != COLL_OP_SUM) {
                malformed(&format!("operator {}", c.op));
            }
            // SAFETY: as above.
            unsafe {
                match (c.class, c.width) {
                    (COLL_T_UNSIGNED, 1) => reduce_int::<u8>(func, &c),
                    (COLL_T_UNSIGNED, 2) => reduce_int::<u16>(func, &c),
                    (COLL_T_UNSIGNED, 4) => reduce_int::<u32>(func, &c),
                    (COLL_T_UNSIGNED, 8) => reduce_int::<u64>(func, &c),
                    (COLL_T_SIGNED, 1) => reduce_int::<i8>(func, &c),
                    (COLL_T_SIGNED, 2) => reduce_int::<i16>(func, &c),
                    (COLL_T_SIGNED, 4) => reduce_int::<i32>(func, &c),
                    (COLL_T_SIGNED, 8) => reduce_int::<i64>(func, &c),
                    (_, 4) => reduce_num::<f32>(func, &c).unwrap_or_else(|| malformed("a bitwise operator on floats")),
                    _ => reduce_num::<f64>(func, &c).unwrap_or_else(|| malformed("a bitwise operator on floats")),
                }
            }
        }
        w => malformed(&format!("collective {w}")),
    };
    rc as u32 as u64
}

/// A reduction or sum scan of an integer type, as the host API's.
///
/// # Safety
/// As `coll`: `c.dest` and `c.src` are the kernel's symmetric arrays of `c.n` elements.
unsafe fn reduce_int<T: crate::api::coll::Bits>(func: &str, c: &Coll) -> std::ffi::c_int {
    use crate::api::coll::{reduce_bits, BitOp};
    let (dest, src) = (c.dest as *mut T, c.src as *const T);
    let bit = match c.op {
        COLL_OP_AND => Some(BitOp::And),
        COLL_OP_OR => Some(BitOp::Or),
        COLL_OP_XOR => Some(BitOp::Xor),
        _ => None,
    };
    match bit {
        // SAFETY: forwarded.
        Some(b) if c.what == COLL_REDUCE => unsafe { reduce_bits::<T>(func, c.team, dest, src, c.n, b) },
        // SAFETY: forwarded.
        _ => unsafe { reduce_num::<T>(func, c) }.unwrap_or(-1),
    }
}

/// A max, min, sum or prod reduction or a sum scan, as the host API's; None for a bitwise
/// operator.
///
/// # Safety
/// As `reduce_int`.
unsafe fn reduce_num<T: crate::api::coll::Num>(func: &str, c: &Coll) -> Option<std::ffi::c_int> {
    use crate::api::coll::{reduce, scan, RedOp};
    let (dest, src) = (c.dest as *mut T, c.src as *const T);
    let op = match c.op {
        COLL_OP_MAX => RedOp::Max,
        COLL_OP_MIN => RedOp::Min,
        COLL_OP_SUM => RedOp::Sum,
        COLL_OP_PROD => RedOp::Prod,
        _ => return None,
    };
    // SAFETY: forwarded.
    Some(unsafe {
        match c.what {
            COLL_INSCAN => scan::<T>(func, c.team, dest, src, c.n, true),
            COLL_EXSCAN => scan::<T>(func, c.team, dest, src, c.n, false),
            _ => reduce::<T>(func, c.team, dest, src, c.n, op),
        }
    })
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

    /// A collective request as the device posts it (cuda_coll.cuh: coll_post) reads back as
    /// the collective it stands for, and is named by type and operator.
    #[test]
    fn coll_requests_decode_as_posted() {
        let mem = Box::new(Mem([0; PROXY_SLOTS * 8]));
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        let p = Poster { base, ticket: &ticket };
        // SAFETY: mem is zeroed, aligned, RING_BYTES long, alive for the test.
        let ring = unsafe { Ring::new(base) };
        // coll_post: w1 = kind | width << 8 | op << 16 | REPLY | my_pe << 32; w2 dest; w3 source;
        // w4 elements; w5 root; w6 = team | what << 32 | class << 40.
        let w1 = |width: u64, op: u64, pe: u64| PROXY_COLL as u64 | width << 8 | op << 16 | PROXY_REPLY | pe << 32;
        let w6 = |team: u32, what: u8, class: u8| team as u64 | (what as u64) << 32 | (class as u64) << 40;
        let cases = [
            ([w1(4, COLL_OP_SUM as u64, 3), 0x7000_1000, 0x7000_2000, 17, 0, w6(5, COLL_REDUCE, COLL_T_SIGNED)],
             Coll { team: 5, what: COLL_REDUCE, class: COLL_T_SIGNED, width: 4, op: COLL_OP_SUM, root: 0, dest: 0x7000_1000, src: 0x7000_2000, n: 17 },
             "a device int32 sum_reduce (through the proxy)"),
            ([w1(1, 0, 0), 0x10, 0x20, 4096, 3, w6(0, COLL_BROADCAST, 0)],
             Coll { team: 0, what: COLL_BROADCAST, class: 0, width: 1, op: 0, root: 3, dest: 0x10, src: 0x20, n: 4096 },
             "a device broadcast (through the proxy)"),
            ([w1(8, COLL_OP_SUM as u64, 1), 8, 8, 2, 0, w6(63, COLL_EXSCAN, COLL_T_FLOAT)],
             Coll { team: 63, what: COLL_EXSCAN, class: COLL_T_FLOAT, width: 8, op: COLL_OP_SUM, root: 0, dest: 8, src: 8, n: 2 },
             "a device double sum_exscan (through the proxy)"),
            ([w1(1, COLL_OP_XOR as u64, 0), 1, 2, 3, 0, w6(2, COLL_REDUCE, COLL_T_UNSIGNED)],
             Coll { team: 2, what: COLL_REDUCE, class: COLL_T_UNSIGNED, width: 1, op: COLL_OP_XOR, root: 0, dest: 1, src: 2, n: 3 },
             "a device uint8 xor_reduce (through the proxy)"),
            ([w1(1, 0, 0), 0, 0, 0, 0, w6(1, COLL_SYNC, 0)],
             Coll { team: 1, what: COLL_SYNC, class: 0, width: 1, op: 0, root: 0, dest: 0, src: 0, n: 0 },
             "a device team sync (through the proxy)"),
            ([w1(2, COLL_OP_MIN as u64, 0), 0, 0, 1, 0, w6(0, COLL_INSCAN, COLL_T_SIGNED)],
             Coll { team: 0, what: COLL_INSCAN, class: COLL_T_SIGNED, width: 2, op: COLL_OP_MIN, root: 0, dest: 0, src: 0, n: 1 },
             "a device int16 min_inscan (through the proxy)"),
            ([w1(3, 0, 0), 0, 0, 1, 0, w6(0, COLL_REDUCE, COLL_T_FLOAT)],
             Coll { team: 0, what: COLL_REDUCE, class: COLL_T_FLOAT, width: 3, op: 0, root: 0, dest: 0, src: 0, n: 1 },
             "a device reduction or scan (through the proxy)"),
        ];
        for (words, want, name) in cases {
            let t = p.post(words);
            let r = ring.poll(t).expect("posted");
            assert!(r.reply && r.kind == PROXY_COLL);
            let c = Coll::of(&r);
            assert_eq!(c, want);
            assert_eq!(c.name(), name);
            // made once: the same string (the team record's name key is its address)
            assert_eq!(c.name().as_ptr(), name_of(&c));
            ring.done(&r, 0);
            assert_eq!(p.wait(t), 0);
        }
        assert_eq!(Coll::of(&ring_req(u32::MAX)).team, -1);
    }

    fn name_of(c: &Coll) -> *const u8 {
        c.name().as_ptr()
    }

    fn ring_req(team: u32) -> Req {
        Req { ticket: 0, kind: PROXY_COLL, width: 1, op: 0, reply: true, pe: 0, sym: 0, local: 0, bytes: 0, value2: 0, sig: team as u64 }
    }

    /// Back-to-back non-blocking puts that continue each other run as one request; a gap, a
    /// different PE, a blocking put, a fence or the first unposted ticket ends the run.
    #[test]
    fn contiguous_nbi_puts_coalesce() {
        let mem = Box::new(Mem([0; PROXY_SLOTS * 8]));
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        let p = Poster { base, ticket: &ticket };
        // SAFETY: mem is zeroed, aligned, RING_BYTES long, alive for the test.
        let ring = unsafe { Ring::new(base) };
        let put = |pe: u64, reply: bool| PROXY_PUT as u64 | if reply { PROXY_REPLY } else { 0 } | pe << 32;
        // tickets 0-2: 3 x 1 KiB following on; 3: a gap in the destination; 4: follows 3 but
        // to PE 2; 5: blocking; 6: fence; 7: a put after the fence
        p.post([put(1, false), 0x1000, 0x9000, 1024, 0, 0]);
        p.post([put(1, false), 0x1400, 0x9400, 1024, 0, 0]);
        p.post([put(1, false), 0x1800, 0x9800, 1024, 0, 0]);
        p.post([put(1, false), 0x2000, 0xa000, 64, 0, 0]);
        p.post([put(2, false), 0x2040, 0xa040, 64, 0, 0]);
        p.post([put(2, true), 0x2080, 0xa080, 64, 0, 0]);
        p.post([PROXY_FENCE as u64 | 2 << 32, 0, 0, 0, 0, 0]);
        p.post([put(2, false), 0x20c0, 0xa0c0, 64, 0, 0]);
        let (m, upto) = coalesce(&ring, ring.poll(0).expect("posted"));
        assert_eq!((m.sym, m.local, m.bytes, m.pe, upto), (0x1000, 0x9000, 3072, 1, 3));
        let (m, upto) = coalesce(&ring, ring.poll(3).expect("posted"));
        assert_eq!((m.bytes, upto), (64, 4));
        let (m, upto) = coalesce(&ring, ring.poll(4).expect("posted"));
        assert_eq!((m.bytes, upto), (64, 5));
        let (m, upto) = coalesce(&ring, ring.poll(5).expect("posted"));
        assert_eq!((m.bytes, upto, m.reply), (64, 6, true));
        let (_, upto) = coalesce(&ring, ring.poll(7).expect("posted"));
        assert_eq!(upto, 8, "ticket 8 is not posted");
    }

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
