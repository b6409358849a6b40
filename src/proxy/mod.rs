//! The proxy: how a GPU kernel reaches a PE of another node. Kernels post requests into a ring
//! of slots in pinned host memory (the protocol is in include/ishmem/device_state.h, the
//! device side in include/ishmem/cuda_impl.cuh); this PE's proxy thread takes them in ticket
//! order and runs each through the core, as a host call would (so the other node's GPU heap is
//! reached through its staging mailbox), then marks the slot done, with the reply for the
//! requests that wait for one. It is the GPU's door into the library beside `api` (the C symbols): `api::setup` starts it
//! after init when the CUDA backend's job spans nodes (`State::proxy_ring`) and stops it at
//! the start of finalize. Its errors end the job, naming the kernel-side call.
//!
//! Collectives (`PROXY_COLL`): a kernel's collective or team sync on a team with a member on
//! another node arrives as one request per PE, which this thread runs as the host API's
//! collective of the same kind (`core::coll_entry`: the host API's checks and algorithms, which
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

//!
//! Files: `ring` (the host side of the protocol), `serve` (the proxy thread and how each
//! request runs through the core), `coll` (the per-team collective threads and the decoding of
//! a collective request), `monitor` (the watch on a request that keeps the thread too long).

mod coll;
mod monitor;
mod ring;
mod serve;

pub use coll::Coll;
pub use ring::{Req, Ring, RING_BYTES};
pub use serve::STAGE_BYTES;

use crate::core::State;
use crate::ffi::fatal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The running proxy of this process (one PE per process).
static RUNNING: Mutex<Option<Proxy>> = Mutex::new(None);

/// Starts the proxy when this PE has a ring (`State::proxy_ring`: the CUDA backend in a job
/// across nodes); nothing otherwise. Called by `api::setup` once init has made the state and
/// before any kernel of the program runs.
pub fn start(st: &'static State) {
    if let Some(ring) = st.proxy_ring {
        *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = Some(Proxy::start(st, ring));
    }
}

/// Stops the proxy, if it runs, once it has run every request posted so far (finalize: every
/// kernel has finished).
pub fn stop() {
    let p = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(p) = p {
        p.stop();
    }
}

/// The running proxy of a PE.
struct Proxy {
    stop: Arc<AtomicBool>,
    threads: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// What the proxy thread is doing, for its monitor: the request it runs and since when.
#[derive(Default)]
pub(crate) struct Busy {
    /// Nanoseconds since `epoch` + 1 at the start of the request being run; 0: idle.
    pub(crate) since: AtomicU64,
    pub(crate) ticket: AtomicU64,
    /// kind | pe << 8.
    pub(crate) what: AtomicU64,
}

/// A fault the tests plant in the proxy thread (`ISHMEMI_TEST_PROXY_FAULT`): `panic@N` panics
/// when it takes request N (an internal error of the thread), `stall@N` never finishes request
/// N (a request stuck for good, behind which the ring fills).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
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
        // The ring's inline areas and the staging buffer are host memory: the mailbox copies
        // from and into them with the CPU, without asking the driver what they are.
        if let Some(stage) = st.net.as_ref().and_then(|n| n.stage.as_ref()) {
            stage.host_memory(ring, RING_BYTES + STAGE_BYTES);
        }
        let thread = std::thread::Builder::new()
            .name("ishmem-proxy".into())
            .spawn(move || {
                crate::ffi::guard("the proxy thread (kernels' calls to other nodes)", || {
                    // SAFETY: the ring was allocated zeroed with RING_BYTES + STAGE_BYTES
                    // (core::start::proxy_ring) and is freed only after this thread stops
                    // (finalize); this thread alone uses the staging buffer after the ring.
                    let (r, stage) = unsafe { (Ring::new(ring), serve::Stage::new(ring + RING_BYTES)) };
                    serve::serve(st, r, stage, &s, &b, epoch, fault)
                })
            })
            .unwrap_or_else(|e| {
                fatal("ishmem_init", &format!("cannot start the proxy thread (kernels reach other nodes through it): {e}"))
            });
        let mut threads = vec![thread];
        let limit = st.cfg.proxy_stall_s;
        if limit > 0 {
            let (s, b) = (stop.clone(), busy.clone());
            let mon = std::thread::Builder::new()
                .name("ishmem-proxymon".into())
                .spawn(move || monitor::monitor(&s, &b, epoch, Duration::from_secs(limit)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cuda::state::*;
    use serve::coalesce;
    use std::sync::atomic::AtomicUsize;

    /// The device's poster (include/ishmem/cuda_impl.cuh: proxy_post, proxy_wait), on the host,
    /// with the slots' release words (device memory there) in `released`.
    struct Poster<'a> {
        base: usize,
        ticket: &'a AtomicU64,
        released: &'a [AtomicU64],
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
                let rel = &self.released[(t % PROXY_SLOTS as u64) as usize];
                while self.word(t, 7).load(Acquire) != prev && rel.load(Acquire) != prev {
                    std::thread::yield_now();
                }
            }
            for (i, v) in w.iter().enumerate() {
                self.word(t, i + 1).store(*v, Relaxed);
            }
            self.word(t, 0).store(t + 1, Release);
            t
        }
        /// Reads word 6 before word 7, an order the device's 16-byte load does not exclude:
        /// a read of word 6 that precedes the proxy's store and a read of word 7 after it is a
        /// torn pair, which proxy_reply_of must refuse.
        fn wait(&self, t: u64) -> u64 {
            let v = loop {
                let w6 = self.word(t, 6).load(Relaxed);
                let w7 = self.word(t, 7).load(Acquire);
                if let Some(v) = proxy_reply_of(t, w6, w7) {
                    break v;
                }
                std::thread::yield_now();
            };
            self.released[(t % PROXY_SLOTS as u64) as usize].store(t + 1, Release);
            v
        }
    }

    fn release_words() -> Vec<AtomicU64> {
        (0..PROXY_SLOTS).map(|_| AtomicU64::new(0)).collect()
    }

    #[repr(align(64))]
    struct Mem([u64; PROXY_RING_BYTES / 8]);

    fn ring_mem() -> Box<Mem> {
        // SAFETY: all-zero bits are a valid Mem (an array of integers).
        unsafe { Box::<Mem>::new_zeroed().assume_init() }
    }

    /// A collective request as the device posts it (cuda_coll.cuh: coll_post) reads back as
    /// the collective it stands for, and is named by type and operator.
    #[test]
    fn coll_requests_decode_as_posted() {
        let mem = ring_mem();
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        let rel = release_words();
        let p = Poster { base, ticket: &ticket, released: &rel };
        // SAFETY: mem is zeroed, aligned, RING_BYTES long, alive for the test.
        let ring = unsafe { Ring::new(base) };
        // coll_post: w1 = kind | width << 8 | op << 16 | REPLY | my_pe << 32; w2 dest; w3 source;
        // w4 elements; w5 root; w6 = team | what << 32 | class << 40.
        let w1 = |width: u64, op: u64, pe: u64| PROXY_COLL as u64 | width << 8 | op << 16 | PROXY_REPLY | pe << 32;
        let w6 = |team: u32, what: u8, class: u8| team as u64 | (what as u64) << 32 | (class as u64) << 40;
        let cases = [
            (
                [w1(4, COLL_OP_SUM as u64, 3), 0x7000_1000, 0x7000_2000, 17, 0, w6(5, COLL_REDUCE, COLL_T_SIGNED)],
                Coll {
                    team: 5,
                    what: COLL_REDUCE,
                    class: COLL_T_SIGNED,
                    width: 4,
                    op: COLL_OP_SUM,
                    root: 0,
                    dest: 0x7000_1000,
                    src: 0x7000_2000,
                    n: 17,
                },
                "a device int32 sum_reduce (through the proxy)",
            ),
            (
                [w1(1, 0, 0), 0x10, 0x20, 4096, 3, w6(0, COLL_BROADCAST, 0)],
                Coll { team: 0, what: COLL_BROADCAST, class: 0, width: 1, op: 0, root: 3, dest: 0x10, src: 0x20, n: 4096 },
                "a device broadcast (through the proxy)",
            ),
            (
                [w1(8, COLL_OP_SUM as u64, 1), 8, 8, 2, 0, w6(63, COLL_EXSCAN, COLL_T_FLOAT)],
                Coll { team: 63, what: COLL_EXSCAN, class: COLL_T_FLOAT, width: 8, op: COLL_OP_SUM, root: 0, dest: 8, src: 8, n: 2 },
                "a device double sum_exscan (through the proxy)",
            ),
            (
                [w1(1, COLL_OP_XOR as u64, 0), 1, 2, 3, 0, w6(2, COLL_REDUCE, COLL_T_UNSIGNED)],
                Coll { team: 2, what: COLL_REDUCE, class: COLL_T_UNSIGNED, width: 1, op: COLL_OP_XOR, root: 0, dest: 1, src: 2, n: 3 },
                "a device uint8 xor_reduce (through the proxy)",
            ),
            (
                [w1(1, 0, 0), 0, 0, 0, 0, w6(1, COLL_SYNC, 0)],
                Coll { team: 1, what: COLL_SYNC, class: 0, width: 1, op: 0, root: 0, dest: 0, src: 0, n: 0 },
                "a device team sync (through the proxy)",
            ),
            (
                [w1(2, COLL_OP_MIN as u64, 0), 0, 0, 1, 0, w6(0, COLL_INSCAN, COLL_T_SIGNED)],
                Coll { team: 0, what: COLL_INSCAN, class: COLL_T_SIGNED, width: 2, op: COLL_OP_MIN, root: 0, dest: 0, src: 0, n: 1 },
                "a device int16 min_inscan (through the proxy)",
            ),
            (
                [w1(3, 0, 0), 0, 0, 1, 0, w6(0, COLL_REDUCE, COLL_T_FLOAT)],
                Coll { team: 0, what: COLL_REDUCE, class: COLL_T_FLOAT, width: 3, op: 0, root: 0, dest: 0, src: 0, n: 1 },
                "a device reduction or scan (through the proxy)",
            ),
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
        Req {
            ticket: 0,
            kind: PROXY_COLL,
            width: 1,
            op: 0,
            reply: true,
            inline: false,
            pe: 0,
            sym: 0,
            local: 0,
            bytes: 0,
            value2: 0,
            sig: team as u64,
        }
    }

    /// Many posting threads, a consumer that checks every request in ticket order and replies
    /// with a function of it; more requests than slots (wrap-around, back-pressure), a slow
    /// consumer phase, replies held until read.
    /// A reply of 64 bits (both halves vary) for request number `i`.
    fn reply_value(i: u64) -> u64 {
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// The reply words of a request read torn (one word before the proxy's store, the other
    /// after it, in either order) never decode as a reply; read after both stores they decode
    /// to the reply, whatever its bits. The waiter's own word 6 (an address, or 0) and the
    /// previous occupant's reply words are what a stale read returns.
    #[test]
    fn torn_reply_reads_are_refused() {
        let mem = ring_mem();
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        let rel = release_words();
        let p = Poster { base, ticket: &ticket, released: &rel };
        // SAFETY: mem is zeroed, aligned, RING_BYTES long, alive for the test.
        let ring = unsafe { Ring::new(base) };
        let word = |t: u64, w: usize| p.word(t, w).load(Relaxed);
        let w1 = PROXY_G as u64 | 8 << 8 | PROXY_REPLY | 1 << 32;
        for (i, v) in [0u64, 1, u64::MAX, 0x0000_0001_0000_0000, 0x7fff_ffff_ffff_ffff, 0xdead_beef_0000_0042].into_iter().enumerate() {
            // Several laps of the ring: the slot's previous occupant left its own reply.
            for lap in 0..3u64 {
                let own_w6 = 0x7f00_1234_5678 + i as u64 * 8;
                let t = p.post([w1, 0x1000, 0, 8, 0, own_w6]);
                let r = ring.poll(t).unwrap();
                let (old6, old7) = (word(t, 6), word(t, 7));
                assert_eq!(old6, own_w6);
                ring.done(&r, v ^ lap);
                let (new6, new7) = (word(t, 6), word(t, 7));
                assert_eq!(proxy_reply_of(t, old6, new7), None, "stale word 6 with the new word 7 (t {t})");
                assert_eq!(proxy_reply_of(t, new6, old7), None, "the new word 6 with a stale word 7 (t {t})");
                assert_eq!(proxy_reply_of(t, old6, old7), None, "both stale (t {t})");
                assert_eq!(proxy_reply_of(t, new6, new7), Some(v ^ lap));
                assert_eq!(p.wait(t), v ^ lap);
                // Skip to the same slot on the next lap.
                ticket.fetch_add(PROXY_SLOTS as u64 - 1, Relaxed);
            }
        }
    }

    #[test]
    fn ring_carries_every_request_in_order_with_replies() {
        let mem = ring_mem();
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        const THREADS: u64 = 4;
        const PER: u64 = 1500;
        let total = THREADS * PER;
        let seen = AtomicUsize::new(0);
        let rel = release_words();
        let rel = &rel;
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
                    ring.done(&r, reply_value(r.sym));
                    seen.fetch_add(1, Relaxed);
                }
            });
            for th in 0..THREADS {
                let ticket = &ticket;
                sc.spawn(move || {
                    let p = Poster { base, ticket, released: &rel };
                    for i in 0..PER {
                        let reply = i % 2 == 0;
                        let w1 = PROXY_AMO as u64 | 8 << 8 | if reply { PROXY_REPLY } else { 0 } | th << 32;
                        let t = p.post([w1, i, i * 3 + 1, 8, i ^ 0x5a5a, th << 40 | i]);
                        if reply {
                            assert_eq!(p.wait(t), reply_value(i));
                        }
                    }
                });
            }
        });
        assert_eq!(seen.load(Relaxed) as u64, total);
        assert_eq!(ticket.load(Relaxed), total);
    }

    /// An inline put reads as its slot's inline area, whatever word 3 says; inline puts merge
    /// while each area before was full (consecutive slots, destinations following on), never
    /// with a put of device memory, and not across the ring's wrap (the areas do not follow on).
    #[test]
    fn inline_puts_read_their_areas_and_coalesce_when_full() {
        let mem = ring_mem();
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        let rel = release_words();
        let p = Poster { base, ticket: &ticket, released: &rel };
        // SAFETY: mem is zeroed, aligned, RING_BYTES long, alive for the test.
        let ring = unsafe { Ring::new(base) };
        let inl = PROXY_INLINE_BYTES as u64;
        let put = |pe: u64| PROXY_PUT as u64 | PROXY_INLINE | pe << 32;
        // 0-2: three full areas following on; 3: a partial one following on; 4: follows 3's
        // destination, but 3's area was not full; 5: a device-memory put following 4
        p.post([put(1), 0x10000, 0xdead, inl, 0, 0]);
        p.post([put(1), 0x10000 + inl, 0, inl, 0, 0]);
        p.post([put(1), 0x10000 + 2 * inl, 0, inl, 0, 0]);
        p.post([put(1), 0x10000 + 3 * inl, 0, 100, 0, 0]);
        p.post([put(1), 0x10000 + 3 * inl + 100, 0, 8, 0, 0]);
        p.post([PROXY_PUT as u64 | 1 << 32, 0x10000 + 3 * inl + 108, ring.inline_area(4) as u64 + 8, 8, 0, 0]);
        let r0 = ring.poll(0).expect("posted");
        assert!(r0.inline && !r0.reply);
        assert_eq!(r0.local as usize, base + RING_BYTES - PROXY_SLOTS * PROXY_INLINE_BYTES);
        assert_eq!(ring.poll(3).expect("posted").local as usize, ring.inline_area(3));
        let (m, upto) = coalesce(&ring, r0);
        assert_eq!((m.sym, m.local as usize, m.bytes, m.inline, upto), (0x10000, ring.inline_area(0), 3 * inl + 100, true, 4));
        let (m, upto) = coalesce(&ring, ring.poll(4).expect("posted"));
        assert_eq!((m.bytes, upto), (8, 5));
        // the wrap: the last slot's area and the first's do not follow on
        while ticket.load(Relaxed) < PROXY_SLOTS as u64 - 1 {
            p.post([PROXY_NOP as u64, 0, 0, 0, 0, 0]);
        }
        for t in 0..PROXY_SLOTS as u64 - 1 {
            let r = ring.poll(t).expect("posted");
            ring.done(&r, 0);
        }
        let last = p.post([put(1), 0x20000, 0, inl, 0, 0]);
        p.post([put(1), 0x20000 + inl, 0, inl, 0, 0]);
        let (m, upto) = coalesce(&ring, ring.poll(last).expect("posted"));
        assert_eq!((m.bytes, upto), (inl, last + 1));
    }

    /// Back-to-back non-blocking puts that continue each other run as one request; a gap, a
    /// different PE, a blocking put, a fence or the first unposted ticket ends the run.
    #[test]
    fn contiguous_nbi_puts_coalesce() {
        let mem = ring_mem();
        let base = mem.0.as_ptr() as usize;
        let ticket = AtomicU64::new(0);
        let rel = release_words();
        let p = Poster { base, ticket: &ticket, released: &rel };
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
}
