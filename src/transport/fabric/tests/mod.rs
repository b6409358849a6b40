//! Tests of the fabric transport: several [`Fabric`]s in this one process talk over loopback
//! (`FI_TCP_IFACE=lo`, `FI_SOCKETS_IFACE=lo`, set before libfabric is first used; every peer
//! name is checked to be a loopback address before anything is sent to it). A thread drives
//! progress on every endpoint, as the core's progress thread will (tcp;ofi_rxm is
//! manual-progress: a target that nobody progresses serves nothing). Where libfabric is
//! absent each test prints `skipped: libfabric.so.1 not found` and passes.
//!
//! `sockets` is slow on a 2-core machine (its progress threads compete for the cores), so its
//! tests use small sizes and counts. `cargo test -- --ignored fabric_bench` prints the numbers
//! of the measurement over tcp;ofi_rxm.

use super::*;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::thread;

const TCP: &str = "tcp;ofi_rxm";
const SOCKETS: &str = "sockets";
/// Node-local shared memory: no network at all, and the one provider here with
/// FI_MR_VIRT_ADDR (remote addresses are virtual addresses, not offsets).
const SHM: &str = "shm";

/// One test at a time (they share 2 cores and libfabric's provider threads), with the
/// loopback-only environment set before libfabric reads it. `None`: libfabric is absent.
fn setup() -> Option<MutexGuard<'static, ()>> {
    static ENV: Once = Once::new();
    static SERIAL: Mutex<()> = Mutex::new(());
    ENV.call_once(|| {
        std::env::set_var("FI_TCP_IFACE", "lo");
        std::env::set_var("FI_SOCKETS_IFACE", "lo");
    });
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    match sys::lib() {
        Ok(_) => Some(g),
        Err(e) if e.contains("could not be loaded") => {
            println!("skipped: libfabric.so.1 not found ({e})");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Aborts the test process if the guard lives longer than `secs` (a hang is a failure, and
/// must not stall the suite).
struct Watchdog(Arc<AtomicBool>);

fn watchdog(what: &'static str, secs: u64) -> Watchdog {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    thread::spawn(move || {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(secs) {
            if d.load(Ordering::Relaxed) {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        eprintln!("fabric test '{what}' hung for {secs} s: aborting");
        std::process::abort();
    });
    Watchdog(done)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Asserts that an endpoint name is a loopback socket address (sockaddr_in 127.x.x.x or
/// sockaddr_in6 ::1) or a shm provider name (`fi_shm://...`: node-local by construction):
/// tests never send anywhere else.
fn assert_loopback(name: &[u8]) {
    if name.starts_with(b"fi_shm://") {
        return;
    }
    assert!(name.len() >= 2, "endpoint name too short: {name:?}");
    let family = u16::from_ne_bytes([name[0], name[1]]) as i32;
    let ok = match family {
        libc::AF_INET => name.len() >= 8 && name[4] == 127,
        libc::AF_INET6 => name.len() >= 24 && name[8..23].iter().all(|&b| b == 0) && name[23] == 1,
        _ => false,
    };
    assert!(ok, "endpoint name is not a loopback address: {name:?}");
}

/// A heap buffer of `len` bytes (8-byte aligned).
struct Buf(Vec<u64>);

impl Buf {
    fn new(len: usize) -> Buf {
        Buf(vec![0; len.div_ceil(8)])
    }
    fn ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: a Vec<u64> is readable as its bytes.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.0.len() * 8) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold it mutably.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), self.0.len() * 8) }
    }
}

/// `n` endpoints of one provider, each with one registered region of `len` bytes (region 0)
/// known to all, and a thread driving progress on all of them.
struct Group {
    fabs: Vec<Arc<Fabric>>,
    heaps: Vec<Buf>,
    mrs: Vec<Mr>,
    stop: Arc<AtomicBool>,
    /// While set, the progress thread leaves endpoint 1 alone.
    pause_1: Arc<AtomicBool>,
    progress: Option<thread::JoinHandle<()>>,
}

/// `all`: the progress thread drives every endpoint; else all but endpoint 0 (whose own
/// thread drives it in its waits: the bench, where two threads in one endpoint only contend).
fn group_with(opts: &Options, n: usize, len: usize, all: bool) -> Group {
    let fabs: Vec<Arc<Fabric>> =
        (0..n).map(|_| Arc::new(Fabric::open_with(opts).unwrap_or_else(|e| panic!("open {:?}: {e}", opts.provider)))).collect();
    let names: Vec<Vec<u8>> = fabs.iter().map(|f| f.name().unwrap()).collect();
    for nm in &names {
        assert_loopback(nm);
    }
    let mut heaps: Vec<Buf> = (0..n).map(|_| Buf::new(len)).collect();
    let mut mrs = Vec::new();
    for (f, h) in fabs.iter().zip(&mut heaps) {
        f.insert_peers(&names).unwrap();
        // SAFETY: the heaps live in the Group, whose Fabrics (Arc'ed only by it and its
        // progress thread, joined at drop) go before them.
        let mr = unsafe { f.register(h.ptr(), len) }.unwrap();
        assert_eq!(mr.id, 0);
        mrs.push(mr);
    }
    for f in &fabs {
        for (pe, mr) in mrs.iter().enumerate() {
            f.set_remote(0, pe, mr.key, mr.addr).unwrap();
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let pause_1 = Arc::new(AtomicBool::new(false));
    let (s, p1, fs) = (stop.clone(), pause_1.clone(), fabs.clone());
    let progress = Some(thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            for (i, f) in fs.iter().enumerate() {
                if (i == 0 && !all) || (i == 1 && p1.load(Ordering::Relaxed)) {
                    continue;
                }
                {
                    f.progress();
                }
            }
            thread::yield_now();
        }
    }));
    Group { fabs, heaps, mrs, stop, pause_1, progress }
}

fn group(provider: &str, n: usize, len: usize) -> Group {
    group_with(&Options { provider: Some(provider.into()), npes_hint: n, ..Options::default() }, n, len, true)
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.progress.take() {
            let _ = t.join();
        }
    }
}

fn at(offset: usize) -> Remote {
    Remote { region: 0, offset }
}

/// Put from a slice; every caller keeps it alive and unchanged until its next quiet.
fn put(f: &Fabric, pe: usize, src: &[u8], to: Remote) -> Result<(), String> {
    // SAFETY: src is readable for its length, and callers keep it until their next quiet.
    unsafe { f.put(pe, src.as_ptr(), src.len(), to) }
}

/// Put of one word (injected: the value may go on return).
fn put_u64(f: &Fabric, pe: usize, v: u64, to: Remote) -> Result<(), String> {
    assert!(f.info().inject_size >= 8);
    // SAFETY: 8 bytes <= inject_size: the source is copied before the call returns.
    unsafe { f.put(pe, (&v as *const u64).cast(), 8, to) }
}

/// Blocking get into a slice.
fn get(f: &Fabric, pe: usize, dst: &mut [u8], from: Remote) -> Result<(), String> {
    // SAFETY: dst is writable for its length until the call returns; on a stall error the
    // tests end (watchdog or panic) before dst could be reused.
    unsafe { f.get(pe, dst.as_mut_ptr(), dst.len(), from) }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 12) as u8).collect()
}

/// put (blocking on quiet), get, nbi puts then quiet, get_nbi then quiet, for each size.
fn rma_round_trip(provider: &str, sizes: &[usize], opts: Option<Options>) {
    let max = *sizes.iter().max().unwrap();
    let heap_len = 2 * max + 64;
    let mut g = match opts {
        Some(o) => group_with(&o, 2, heap_len, true),
        None => group(provider, 2, heap_len),
    };
    let (a, b) = (g.fabs[0].clone(), g.fabs[1].clone());
    for (k, &n) in sizes.iter().enumerate() {
        // a puts from a private (unregistered) buffer into PE 1's heap at offset 0.
        let src = pattern(n, k as u8 + 1);
        put(&a, 1, &src, at(0)).unwrap();
        a.quiet().unwrap();
        assert!(g.heaps[1].bytes()[..n] == src[..], "{provider}: put of {n} B: data differs");

        // a gets it back into a private buffer.
        let mut back = vec![0u8; n];
        get(&a, 1, &mut back, at(0)).unwrap();
        assert!(back == src, "{provider}: get of {n} B: data differs");

        // nbi: b writes 8 pieces of n/8 (at least 1 B) into PE 0's heap at offset max.
        let piece = (n / 8).max(1);
        let src2 = pattern(piece * 8, k as u8 + 7);
        for i in 0..8 {
            put(&b, 0, &src2[i * piece..(i + 1) * piece], at(max + i * piece)).unwrap();
        }
        b.quiet().unwrap();
        assert!(g.heaps[0].bytes()[max..max + piece * 8] == src2[..], "{provider}: nbi puts of {piece} B differ");

        // get_nbi from PE 0 into b's own heap (registered) and into a private buffer.
        let mut priv_dst = vec![0u8; piece * 8];
        let own = g.heaps[1].ptr();
        // SAFETY: own has heap_len >= 2 * max + 64 bytes, [max, max + piece * 8) is inside and
        // untouched until the quiet; priv_dst likewise.
        unsafe {
            b.get_nbi(0, own.add(max), piece * 8, at(max)).unwrap();
            b.get_nbi(0, priv_dst.as_mut_ptr(), piece * 8, at(max)).unwrap();
        }
        b.quiet().unwrap();
        assert!(g.heaps[1].bytes()[max..max + piece * 8] == src2[..], "{provider}: get_nbi into heap differs");
        assert!(priv_dst == src2, "{provider}: get_nbi into private memory differs");
        g.heaps[1].bytes_mut()[..n].fill(0);
    }
}

#[test]
fn bad_provider_lists_offered() {
    let Some(_g) = setup() else { return };
    let e = Fabric::open(Some("no-such-provider"), 2).err().expect("a bad provider name must fail");
    println!("{e}");
    assert!(e.contains("'no-such-provider'"), "{e}");
    assert!(e.contains(TCP), "the error lists the offered providers: {e}");
    assert!(e.contains("ISHMEM_OFI_PROVIDER"), "{e}");
}

#[test]
fn info_of_tcp_and_sockets() {
    let Some(_g) = setup() else { return };
    let f = Fabric::open(Some(TCP), 2).unwrap();
    let i = f.info();
    println!("{i}");
    assert_eq!(i.provider, TCP);
    assert!(i.data_progress_manual, "tcp;ofi_rxm is manual-progress (FABRIC-NOTES)");
    assert_eq!(i.domain, "lo");
    assert!(i.put_flush, "tcp;ofi_rxm orders RMA reads after writes: puts are flushed at quiet");
    assert!(i.inject_size > 0);
    assert!(!i.mr_mode_text().is_empty());
    let s = Fabric::open(Some(SOCKETS), 2).unwrap();
    println!("{}", s.info());
    assert_eq!(s.info().provider, SOCKETS);
    assert!(!s.info().data_progress_manual);
    assert!(s.info().fence, "sockets has FI_FENCE");
    assert!(i.wait_fd, "tcp;ofi_rxm's CQ has a wait fd: the progress thread sleeps on it");
    assert!(!s.info().wait_fd, "automatic progress: no wait fd asked");
    assert_eq!(std::env::var("FI_SOCKETS_PE_WAITTIME").as_deref(), Ok("1"), "set by the first load of libfabric (sys::PROVIDER_DEFAULTS)");
    println!("msg_order: tcp {:#x}, sockets {:#x}", i.msg_order, s.info().msg_order);
    // The default is the first provider with RDM+RMA+ATOMIC (tcp;ofi_rxm here).
    let d = Fabric::open(None, 2).unwrap();
    println!("default: {}", d.info());
}

/// tcp;ofi_rxm opens with the inject size asked (`Options::inject_ask`, by default the 128
/// bytes that are tcp's most) and with its own 64 where none is asked; other providers are
/// opened as offered whatever is asked.
#[test]
fn tcp_opens_with_the_inject_size_asked() {
    let Some(_g) = setup() else { return };
    let with = |provider: &str, inject_ask: usize| {
        let o = Options { provider: Some(provider.into()), npes_hint: 2, inject_ask, ..Options::default() };
        Fabric::open_with(&o).unwrap().info().inject_size
    };
    assert_eq!(Options::default().inject_ask, TCP_INJECT);
    assert_eq!(with(TCP, TCP_INJECT), 128, "tcp;ofi_rxm with 128 asked");
    assert_eq!(with(TCP, 0), 64, "tcp;ofi_rxm as offered");
    assert_eq!(with(TCP, 96), 96, "tcp;ofi_rxm with 96 asked");
    // rxm reports any size asked, and above tcp's 128 bytes copies the write into a buffer
    // of its own and asks tcp for a completion (bench/fabric_floor.c FLOOR_INJECT=4096
    // FLOOR_BYTES=512: a `write` and a `read` call per operation again): the default asks 128.
    assert_eq!(with(TCP, 4096), 4096, "rxm reports the size asked");
    assert_eq!(with(SOCKETS, TCP_INJECT), with(SOCKETS, 0), "sockets is opened as offered");
    for (name, tcp) in [("tcp;ofi_rxm", true), ("tcp", true), ("sockets", false), ("verbs;ofi_rxm", false), ("tcpx", false), ("", false)] {
        assert_eq!(super::open::tcp_based(name), tcp, "{name}");
    }
}

/// Runs `steps` while another thread is in a polling library wait (counted by
/// `wait::library_waiters`), and returns once that wait ended and is no longer counted.
fn beside_a_polling_library_wait<R>(steps: impl FnOnce() -> R) -> R {
    crate::wait::progress_on(true);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let waiter = thread::spawn(move || crate::wait::until_checked(u64::MAX, 100, 0, || s2.load(Ordering::Acquire), || {}));
    let t0 = Instant::now();
    while crate::wait::library_waiters() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "the polling waiter was never counted");
        thread::yield_now();
    }
    let r = steps();
    stop.store(true, Ordering::Release);
    waiter.join().unwrap();
    crate::wait::progress_on(false);
    // (A wait of another module's test that started meanwhile may still be counted.)
    while crate::wait::library_waiters() != 0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "the waiter stayed counted after it returned");
        thread::yield_now();
    }
    r
}

/// While a library wait polls (`wait::library_waiters`), the progress thread's step stays out
/// of the provider and off its wait fd; otherwise it waits on the fd (or for pending work).
#[test]
fn progress_thread_aside_while_a_library_wait_polls() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("progress_thread_aside_while_a_library_wait_polls", 60);
    let _one = crate::wait::PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let f = Fabric::open(Some(TCP), 2).unwrap();
    assert!(f.has_wait_fd());
    let (idle, max) = (Duration::from_micros(100), Duration::from_millis(2));
    let before = f.wait_stats();
    f.progress_wait(idle, max, true);
    let alone = f.wait_stats();
    assert_eq!(alone[3], before[3], "no waiter: the step waits on the fd ({before:?} -> {alone:?})");
    let aside = beside_a_polling_library_wait(|| {
        for _ in 0..3 {
            f.progress_wait(idle, max, true);
        }
        f.wait_stats()
    });
    assert_eq!(aside[3], alone[3] + 3, "a polling library waiter sends the step aside ({alone:?} -> {aside:?})");
    assert_eq!(aside[..3], alone[..3], "aside, the step neither waits on the fd nor for work ({alone:?} -> {aside:?})");
}

/// Where waits spin, a wait that ended within the progress thread's `max` keeps the thread
/// aside as a polling waiter does (`wait::drove_within`): a PE that communicates and waits in
/// a loop drives the provider itself between its waits. Once `max` has passed, or where waits
/// do not spin (more PEs than CPUs), the step waits on the fd again, so a PE that computes is
/// still served.
#[test]
fn progress_thread_aside_after_a_recent_wait() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("progress_thread_aside_after_a_recent_wait", 60);
    let _one = crate::wait::PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let f = Fabric::open(Some(TCP), 2).unwrap();
    assert!(f.has_wait_fd());
    let (idle, max) = (Duration::from_micros(100), Duration::from_millis(200));
    let step = |f: &Fabric| {
        let before = f.wait_stats();
        f.progress_wait(idle, max, true);
        let after = f.wait_stats();
        after[3] == before[3] + 1
    };
    crate::wait::set_polling(true);
    crate::wait::note_drove();
    let aside = step(&f);
    // (The network waits of tests running beside this one note drives too: wait until none
    // is recent, and try again if one came in between.)
    let t0 = Instant::now();
    let later = loop {
        while crate::wait::drove_within(max) {
            assert!(t0.elapsed() < Duration::from_secs(20), "a drive stayed recent");
            thread::sleep(Duration::from_millis(20));
        }
        let aside = step(&f);
        if !aside || t0.elapsed() > Duration::from_secs(20) {
            break aside;
        }
    };
    crate::wait::note_drove();
    crate::wait::set_polling(false);
    let not_polling = step(&f);
    assert!(aside, "a wait that just ended sends the step aside");
    assert!(!later, "after max without a wait the step waits on the fd again");
    assert!(!not_polling, "in block mode (waits do not poll), a recent wait does not send the step aside");
}

#[test]
fn rma_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("rma_tcp", 120);
    rma_round_trip(TCP, &[8, 4 << 10, 4 << 20], None);
}

/// Where puts are flushed at quiet and AMOs batched (tcp;ofi_rxm), no write counter is bound
/// (`Fabric::writes_in_cq`); elsewhere, and with `Options::write_counter`, one is. The
/// round trip with the counter bound keeps the old way working.
#[test]
fn writes_counted_without_a_counter_where_flushed_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("writes_counted_without_a_counter_where_flushed_tcp", 120);
    let o = |f: fn(&mut Options)| {
        let mut o = Options { provider: Some(TCP.into()), npes_hint: 2, ..Options::default() };
        f(&mut o);
        Fabric::open_with(&o).unwrap().info().write_counter
    };
    assert!(!o(|_| {}), "tcp;ofi_rxm: writes counted from the CQ");
    assert!(o(|o| o.write_counter = true), "asked for");
    assert!(o(|o| o.delivery_per_put = true), "puts not flushed: every put asks delivery");
    assert!(o(|o| o.amo_batch = false), "AMOs not batched: provider atomics need the counter");
    let s = Fabric::open_with(&Options { provider: Some(SOCKETS.into()), npes_hint: 2, ..Options::default() }).unwrap();
    assert!(s.info().write_counter, "sockets (automatic progress, no batches)");
    let c = Options { provider: Some(TCP.into()), npes_hint: 2, write_counter: true, ..Options::default() };
    rma_round_trip(TCP, &[8, 4 << 10, 4 << 20], Some(c));
}

#[test]
fn rma_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("rma_sockets", 240);
    rma_round_trip(SOCKETS, &[8, 4 << 10, 64 << 10], None);
}

#[test]
fn rma_tcp_delivery_per_put() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("rma_tcp_delivery_per_put", 120);
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, delivery_per_put: true, ..Options::default() };
    rma_round_trip(TCP, &[8, 4 << 10, 4 << 20], Some(o));
}

#[test]
fn rma_shm() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("rma_shm", 120);
    rma_round_trip(SHM, &[8, 4 << 10, 4 << 20], None);
}

#[test]
fn rma_tcp_forced_mr_local_bounces() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("rma_tcp_forced_mr_local_bounces", 120);
    // A 64 KiB put ring: the 1 MiB puts recycle it many times.
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, force_mr_local: true, bounce_bytes: 64 << 10, ..Options::default() };
    rma_round_trip(TCP, &[8, 4 << 10, 1 << 20, 3 << 20], Some(o));
}

#[test]
fn many_small_puts_with_bounded_inflight() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("many_small_puts_with_bounded_inflight", 120);
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, max_inflight: 4, ..Options::default() };
    let g = group_with(&o, 2, 8 * 1000, true);
    let a = &g.fabs[0];
    for i in 0..1000u64 {
        let v = i * 7 + 1;
        put_u64(a, 1, v, at(i as usize * 8)).unwrap();
    }
    a.quiet().unwrap();
    for i in 0..1000 {
        assert_eq!(g.heaps[1].0[i], i as u64 * 7 + 1);
    }
}

mod amo;
mod put_batch;
use amo::bad_key;

/// Quiet means the data is at the target: with a manual-progress provider, quiet cannot
/// return while the target makes no progress (FI_DELIVERY_COMPLETE), and returns once it does.
fn quiet_is_delivery(provider: &str) {
    quiet_is_delivery_with(&Options { provider: Some(provider.into()), npes_hint: 2, ..Options::default() });
}

fn quiet_is_delivery_with(opts: &Options) {
    let g = group_with(opts, 2, 2 << 20, true);
    let a = g.fabs[0].clone();
    let provider = format!("{}", a.info());
    // Connect first (rxm sets up connections through both sides' progress).
    put_u64(&a, 1, 1, at(0)).unwrap();
    a.quiet().unwrap();
    for n in [8usize, 4096, 1 << 20] {
        g.pause_1.store(true, Ordering::Relaxed);
        thread::sleep(Duration::from_millis(10)); // let a progress() call in flight finish
        let src = vec![n as u8 ^ 0x5a; n];
        put(&a, 1, &src, at(0)).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let (d, a2) = (done.clone(), a.clone());
        let t = thread::spawn(move || {
            a2.quiet().unwrap();
            d.store(true, Ordering::Release);
        });
        thread::sleep(Duration::from_millis(300));
        if a.info().data_progress_manual {
            assert!(!done.load(Ordering::Acquire), "{provider} {n} B: quiet returned while the target made no progress");
        }
        g.pause_1.store(false, Ordering::Relaxed);
        t.join().unwrap();
        assert!(g.heaps[1].bytes()[..n] == src[..], "{provider} {n} B: data not there after quiet");
    }
}

#[test]
fn quiet_is_delivery_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("quiet_is_delivery_tcp", 120);
    quiet_is_delivery(TCP);
}

#[test]
fn quiet_is_delivery_tcp_per_put() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("quiet_is_delivery_tcp_per_put", 120);
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, delivery_per_put: true, ..Options::default() };
    quiet_is_delivery_with(&o);
}

#[test]
fn quiet_is_delivery_shm() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("quiet_is_delivery_shm", 120);
    quiet_is_delivery(SHM);
}

#[test]
fn quiet_is_delivery_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("quiet_is_delivery_sockets", 120);
    quiet_is_delivery(SOCKETS);
}

/// A large put, fence, then a flag put (or add): whoever sees the flag sees all the data.
/// A collective's message (`Fabric::put_message`): its source is free on return up to the
/// put ring's bounce size (injected, or copied into the ring: on tcp;ofi_rxm waiting for a
/// longer write's local completion costs the target's acknowledgement, a round trip per
/// collective), lent until `complete_local` beyond it; it lands whole, after the sender's
/// earlier put to the same PE.
#[test]
fn message_puts_free_their_source_on_return_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("message_puts_free_their_source_on_return_tcp", 60);
    let opts = Options { provider: Some(TCP.into()), npes_hint: 2, put_bounce_max: 2048, ..Options::default() };
    let g = group_with(&opts, 2, 16 << 10, true);
    let a = &g.fabs[0];
    let inject = a.info().inject_size;
    let heap1 = g.heaps[1].0.as_ptr() as usize;
    for (k, &n) in [8usize, inject, inject + 1, 200, 2048, 2049, 6000].iter().enumerate() {
        let before = pattern(256, k as u8 + 40);
        put(a, 1, &before, at(8192)).unwrap();
        let want = pattern(n, k as u8 + 1);
        let mut src = want.clone();
        // SAFETY: src is readable for n bytes; kept unchanged until complete_local when lent.
        let lent = unsafe { a.put_message(1, src.as_ptr(), n, at(0)) }.unwrap();
        assert_eq!(lent, n > 2048, "{n} B: lent {lent} (inject {inject}, bounce max 2048)");
        if lent {
            a.complete_local().unwrap();
        }
        src.fill(0xee);
        drop(src);
        // SAFETY: byte i < n lies in PE 1's heap, which lives until the group drops; read
        // volatile while the provider may still be writing it (a mismatch is retried).
        let landed = || (0..n).all(|i| unsafe { (heap1 as *const u8).add(i).read_volatile() } == want[i]);
        let t0 = Instant::now();
        while !landed() {
            assert!(t0.elapsed() < Duration::from_secs(20), "{n} B: the message never landed whole");
            a.progress();
            thread::yield_now();
        }
        assert!(g.heaps[1].bytes()[8192..8192 + 256] == before[..], "{n} B: the message arrived before the earlier put");
        a.quiet().unwrap();
    }
}

fn fence(provider: &str, len: usize, rounds: usize) {
    let g = group(provider, 2, len + 64);
    let a = &g.fabs[0];
    let heap1 = g.heaps[1].0.as_ptr() as usize;
    for round in 1..=rounds as u64 {
        let data = vec![round as u8; len];
        let watcher = thread::spawn(move || {
            let flag = (heap1 + len) as *const AtomicU64;
            // SAFETY: the flag word is inside PE 1's heap, which lives until the group drops
            // (after the join below).
            while unsafe { &*flag }.load(Ordering::Acquire) < round {
                thread::yield_now();
            }
            // SAFETY: as above; the data is complete once the flag is seen (the fence).
            let d = unsafe { std::slice::from_raw_parts(heap1 as *const u8, len) };
            d.iter().all(|&x| x == round as u8)
        });
        put(a, 1, &data, at(0)).unwrap();
        a.fence();
        if round % 2 == 0 {
            put_u64(a, 1, round, at(len)).unwrap();
        } else {
            a.atomic(1, AtomicOp::Sum, Dtype::U64, at(len), 1).unwrap();
        }
        a.quiet().unwrap();
        assert!(watcher.join().unwrap(), "{provider}: round {round}: flag seen before the data");
    }
}

#[test]
fn fence_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("fence_tcp", 120);
    fence(TCP, 1 << 20, 6);
}

#[test]
fn fence_shm() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("fence_shm", 120);
    fence(SHM, 1 << 20, 6);
}

#[test]
fn bad_key_shm() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("bad_key_shm", 120);
    bad_key(SHM, false);
}

/// Both endpoints put, fence, add to the other's flag and read it back, towards each other at
/// the same time, round after round; each waits for the other's flag and checks that the data
/// of that round is there. Over sockets with FI_FENCE this deadlocked: a fenced operation holds
/// its connection while it waits, so neither side could send the acknowledgement the other's
/// earlier operation waited for.
fn fence_both_ways(provider: &str, rounds: u64) {
    const LEN: usize = 1024;
    let g = group(provider, 2, 2 * LEN);
    let heaps = [g.heaps[0].0.as_ptr() as usize, g.heaps[1].0.as_ptr() as usize];
    thread::scope(|s| {
        for (me, &mine) in heaps.iter().enumerate() {
            let f = g.fabs[me].clone();
            s.spawn(move || {
                let other = 1 - me;
                for round in 1..=rounds {
                    let data = vec![round as u8; LEN];
                    put(&f, other, &data, at(0)).unwrap();
                    f.fence();
                    f.atomic(other, AtomicOp::Sum, Dtype::U64, at(LEN), 1).unwrap();
                    let seen = f.fetch_atomic(other, AtomicOp::Read, Dtype::U64, at(LEN), 0).unwrap();
                    assert!(seen >= round, "{provider}: PE {me} round {round}: flag read back as {seen}");
                    f.quiet().unwrap();
                    let flag = (mine + LEN) as *const AtomicU64;
                    // SAFETY: the flag word is inside this endpoint's heap, alive until the
                    // group drops (after the scope).
                    while unsafe { &*flag }.load(Ordering::Acquire) < round {
                        thread::yield_now();
                    }
                    // SAFETY: as above. The other side is at this round or the next one.
                    let d = unsafe { std::slice::from_raw_parts(mine as *const u8, LEN) };
                    assert!(
                        d.iter().all(|&x| x as u64 == round % 256 || x as u64 == (round + 1) % 256),
                        "{provider}: PE {me} round {round}: flag seen before the data"
                    );
                }
            });
        }
    });
}

#[test]
fn fence_both_ways_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("fence_both_ways_sockets", 240);
    fence_both_ways(SOCKETS, 200);
}

#[test]
fn fence_both_ways_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("fence_both_ways_tcp", 240);
    fence_both_ways(TCP, 200);
}

#[test]
fn fence_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("fence_sockets", 240);
    fence(SOCKETS, 64 << 10, 4);
}

/// A fence is the calling thread's (issue 27). Thread A adds to a word of PE 1 (whose progress
/// is paused, so the add is not applied yet) and fences; thread B then adds to PE 2, which must
/// neither take A's fence nor wait for it; A's next write, a put to PE 1, must not go out before
/// A's add is at PE 1 (tcp;ofi_rxm orders atomics after atomics and puts after puts, not across:
/// the put waits for the add). With one pending fence per Fabric, B's add took it and A's put
/// went out unordered, the add still in flight.
fn fence_per_thread(provider: &str) {
    let g = group(provider, 3, 4096);
    let a = g.fabs[0].clone();
    let info = a.info().clone();
    if info.msg_order & FI_ORDER_WAW != 0 || info.fence {
        println!("skipped: {provider} orders writes itself (FI_ORDER_WAW or FI_FENCE): fence posts nothing");
        return;
    }
    let x = g.heaps[1].0.as_ptr() as usize;
    // Connect to PE 1 and 2 first (rxm connects through the target's progress).
    for pe in [1, 2] {
        a.atomic(pe, AtomicOp::Sum, Dtype::U64, at(0), 0).unwrap();
    }
    a.quiet().unwrap();
    for round in 1..=3u64 {
        g.pause_1.store(true, Ordering::Relaxed);
        thread::sleep(Duration::from_millis(10)); // let a progress() call in flight finish
        a.atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
        a.fence();
        assert!(a.fence_pending(), "round {round}: fence left nothing pending");
        let b = a.clone();
        thread::spawn(move || {
            assert!(!b.fence_pending(), "another thread's fence is pending in this one");
            b.atomic(2, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
        })
        .join()
        .unwrap();
        assert!(a.fence_pending(), "{provider}: round {round}: another thread's write took this thread's fence");
        let p1 = g.pause_1.clone();
        let resume = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            p1.store(false, Ordering::Relaxed);
        });
        put_u64(&a, 1, round, at(8)).unwrap();
        // SAFETY: word 0 of PE 1's heap, alive until the group drops; only AMOs write it.
        let seen = unsafe { &*(x as *const AtomicU64) }.load(Ordering::SeqCst);
        resume.join().unwrap();
        a.quiet().unwrap();
        assert_eq!(seen, round, "{provider}: round {round}: the put after the fence went out before the add before it reached PE 1");
    }
}

#[test]
fn fence_per_thread_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("fence_per_thread_tcp", 120);
    fence_per_thread(TCP);
}

/// quiet returns only after an nbi get issued before it has completed, even where operations
/// issued after that get complete first: the quiet's own flush read to another PE (which the
/// counter of reads counts as well), or (`other_thread`, no flush) a second thread's stream
/// of fetch_adds to that PE. The get's target makes no progress for a while; the other PE does.
/// (A quiet that waited for "as many reads as were issued before it" returned here with the
/// get still in flight: seen as stale data after get_nbi + quiet on sockets in CI.)
fn quiet_waits_for_earlier_get(other_thread: bool) {
    let g = group(TCP, 3, 1 << 16);
    let a = g.fabs[0].clone();
    let pat = pattern(4096, 11);
    put(&a, 1, &pat, at(0)).unwrap();
    put_u64(&a, 2, 1, at(8192)).unwrap();
    a.quiet().unwrap();
    for round in 0..3u64 {
        if !other_thread {
            put_u64(&a, 2, round, at(8192)).unwrap(); // PE 2 is flushed by the next quiet
        }
        g.pause_1.store(true, Ordering::Relaxed);
        thread::sleep(Duration::from_millis(10)); // let a progress() call in flight finish
        let mut dst = vec![0u8; 4096];
        // SAFETY: dst lives, untouched, until after the quiet below has returned.
        unsafe { a.get_nbi(1, dst.as_mut_ptr(), dst.len(), at(0)) }.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let streamer = other_thread.then(|| {
            let (a, stop) = (a.clone(), stop.clone());
            thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    a.fetch_atomic(2, AtomicOp::Sum, Dtype::U64, at(8200), 1).unwrap();
                    n += 1;
                }
                n
            })
        });
        let done = Arc::new(AtomicBool::new(false));
        let (d, a2) = (done.clone(), a.clone());
        let q = thread::spawn(move || {
            a2.quiet().unwrap();
            d.store(true, Ordering::Release);
        });
        thread::sleep(Duration::from_millis(300));
        let early = done.load(Ordering::Acquire);
        g.pause_1.store(false, Ordering::Relaxed);
        q.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        assert!(!early, "round {round}: quiet returned while the get's target made no progress");
        assert!(dst == pat, "round {round}: get_nbi data not there after quiet");
        if let Some(t) = streamer {
            assert!(t.join().unwrap() > 0, "round {round}: the other thread's fetch_adds never ran");
        }
    }
}

#[test]
fn quiet_waits_for_earlier_get_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("quiet_waits_for_earlier_get_tcp", 120);
    quiet_waits_for_earlier_get(false);
}

#[test]
fn quiet_waits_for_earlier_get_other_thread_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("quiet_waits_for_earlier_get_other_thread_tcp", 120);
    quiet_waits_for_earlier_get(true);
}

/// Threads sharing one Fabric: blocking gets and fetch_adds complete on whichever thread
/// reads the CQ.
#[test]
fn shared_fabric_threads_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("shared_fabric_threads_tcp", 120);
    let g = group(TCP, 2, 1 << 16);
    let a = g.fabs[0].clone();
    let ths: Vec<_> = (0..4)
        .map(|t| {
            let a = a.clone();
            thread::spawn(move || {
                for i in 0..200u64 {
                    let v = t * 1000 + i;
                    let off = 64 + (t as usize) * 8;
                    put_u64(&a, 1, v, at(off)).unwrap();
                    a.quiet().unwrap();
                    let mut back = [0u8; 8];
                    get(&a, 1, &mut back, at(off)).unwrap();
                    assert_eq!(u64::from_ne_bytes(back), v);
                    a.fetch_atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
                }
            })
        })
        .collect();
    for t in ths {
        t.join().unwrap();
    }
    assert_eq!(g.heaps[1].0[0], 800);
}

fn rate(what: &str, n: usize, t: Duration) {
    println!("{what}: {:.2} us per op, {:.3} Mops/s", t.as_secs_f64() * 1e6 / n as f64, n as f64 / t.as_secs_f64() / 1e6);
}

fn gbps(what: &str, bytes: usize, t: Duration) {
    println!("{what}: {:.2} GB/s", bytes as f64 / t.as_secs_f64() / 1e9);
}

/// The measurement (tcp;ofi_rxm on loopback, two endpoints in this process, one progress
/// thread): 8 B put rate, 1 MiB put and get bandwidth, fetch_add latency.
#[test]
#[ignore]
fn fabric_bench() {
    let Some(_g) = setup() else { return };
    for per_put in [false, true] {
        let opts = Options { provider: Some(TCP.into()), npes_hint: 2, delivery_per_put: per_put, ..Options::default() };
        let g = group_with(&opts, 2, 64 << 20, false);
        let a = &g.fabs[0];
        println!("{}", a.info());
        let v = 1u64;
        for (label, n) in [("warm-up", 1000), ("put 8 B (nbi, one quiet)", 100_000)] {
            let t0 = Instant::now();
            for i in 0..n {
                put_u64(a, 1, v, at((i % 1024) * 8)).unwrap();
            }
            a.quiet().unwrap();
            if label != "warm-up" {
                rate(label, n, t0.elapsed());
            }
        }
        let n = 20_000;
        let t0 = Instant::now();
        for i in 0..n {
            put_u64(a, 1, v, at((i % 1024) * 8)).unwrap();
            a.quiet().unwrap();
        }
        rate("put 8 B + quiet", n, t0.elapsed());
        let mut w = [0u8; 8];
        let t0 = Instant::now();
        for i in 0..n {
            get(a, 1, &mut w, at((i % 1024) * 8)).unwrap();
        }
        rate("get 8 B (blocking)", n, t0.elapsed());
        let src = vec![3u8; 1 << 20];
        for (label, n) in [("warm-up", 20), ("put 1 MiB (nbi, one quiet)", 500)] {
            let t0 = Instant::now();
            for i in 0..n {
                put(a, 1, &src, at((i % 64) << 20)).unwrap();
            }
            a.quiet().unwrap();
            if label != "warm-up" {
                gbps(label, n << 20, t0.elapsed());
            }
        }
        if per_put {
            continue; // the rest does not depend on how puts complete
        }
        let mut dst = vec![0u8; 1 << 20];
        let n = 500;
        let t0 = Instant::now();
        for i in 0..n {
            get(a, 1, &mut dst, at((i % 64) << 20)).unwrap();
        }
        gbps("get 1 MiB (blocking)", n << 20, t0.elapsed());
        let mut dsts: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 1 << 20]).collect();
        let t0 = Instant::now();
        for i in 0..n {
            // SAFETY: dsts[i % 8] is 1 MiB and untouched until the quiet after every 8th get.
            unsafe { a.get_nbi(1, dsts[i % 8].as_mut_ptr(), 1 << 20, at((i % 64) << 20)) }.unwrap();
            if i % 8 == 7 {
                a.quiet().unwrap();
            }
        }
        a.quiet().unwrap();
        gbps("get 1 MiB (nbi, 8 per quiet)", n << 20, t0.elapsed());
        let n = 20_000;
        let t0 = Instant::now();
        for _ in 0..n {
            a.fetch_atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
        }
        rate("fetch_add 8 B latency", n, t0.elapsed());
        let t0 = Instant::now();
        for _ in 0..n {
            a.atomic(1, AtomicOp::Sum, Dtype::U64, at(8), 1).unwrap();
        }
        a.quiet().unwrap();
        rate("add 8 B (nbi, one quiet)", n, t0.elapsed());
    }
}

/// Where an idle progress step itself takes longer than `SERVED_NS` (a slow machine, a
/// sanitizer build: 1.3-5 us under AddressSanitizer), the timer still backs off: the step
/// counts as serving something only against this machine's idle step (`step_floor_ns`). With a
/// fixed 2 us every such step looked served and the period stayed at `idle` (this test, and the
/// one below under `make check-asan`: "the period never backed off to max: 20 us").
#[test]
fn progress_timer_backs_off_where_idle_steps_are_slow() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("progress_timer_backs_off_where_idle_steps_are_slow", 60);
    let _one = crate::wait::PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    crate::wait::set_polling(false);
    let opts = Options { provider: Some(TCP.into()), npes_hint: 2, wait_fd: false, ..Options::default() };
    let g = group_with(&opts, 2, 4096, true);
    g.pause_1.store(true, Ordering::Relaxed);
    let t = g.fabs[1].clone();
    t.step_spin_ns.store(2_500, Ordering::Relaxed);
    let (idle, max) = (Duration::from_micros(20), Duration::from_micros(640));
    let mut steps = 0;
    while t.timer_us.load(Ordering::Relaxed) != 640 {
        t.progress_wait(idle, max, true);
        steps += 1;
        assert!(steps < 200, "the period never backed off to max with 2.5 us idle steps: {} us", t.timer_us.load(Ordering::Relaxed));
    }
    let floor = t.step_floor_ns.load(Ordering::Relaxed);
    assert!(floor >= 2_500, "the idle step's floor {floor} ns is below the step's own spin");
}

/// Without a wait fd (`Options::wait_fd` off: `ISHMEM_OFI_PROGRESS_WAKE=timer`, the default
/// with at most 2 PEs per CPU), the progress thread's step polls on a timer that backs off from `idle`
/// to `max` while nothing arrives and returns to `idle` once a step serves a request (another
/// endpoint's get, which only these steps serve here); while a library wait polls, the step
/// stays aside as it does with a wait fd.
#[test]
fn progress_thread_on_a_timer_backs_off_serves_and_stays_aside() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("progress_thread_on_a_timer_backs_off_serves_and_stays_aside", 60);
    let _one = crate::wait::PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    crate::wait::set_polling(false);
    let opts = Options { provider: Some(TCP.into()), npes_hint: 2, wait_fd: false, ..Options::default() };
    let mut g = group_with(&opts, 2, 4096, true);
    g.pause_1.store(true, Ordering::Relaxed);
    let t = g.fabs[1].clone();
    assert!(!t.has_wait_fd(), "wait_fd: false opened a CQ with a wait fd");
    let (idle, max) = (Duration::from_micros(20), Duration::from_micros(640));
    // Nothing arrives: the period doubles up to max (a step slowed by the machine may count as
    // served and start it again, hence up to 200 steps), each step counted as a timer step.
    let mut steps = 0;
    while t.timer_us.load(Ordering::Relaxed) != 640 {
        let before = t.wait_stats();
        t.progress_wait(idle, max, true);
        let after = t.wait_stats();
        assert_eq!((after[1], after[3]), (before[1] + 1, before[3]), "a timer step ({before:?} -> {after:?})");
        steps += 1;
        assert!(steps < 200, "the period never backed off to max: {} us", t.timer_us.load(Ordering::Relaxed));
    }
    // A get from endpoint 0: only t's steps serve it; the step that does goes back to idle.
    let want = pattern(64, 7);
    g.heaps[1].bytes_mut()[..64].copy_from_slice(&want);
    let (f0, done) = (g.fabs[0].clone(), Arc::new(AtomicBool::new(false)));
    let d2 = done.clone();
    let reader = thread::spawn(move || {
        let mut got = vec![0u8; 64];
        let r = get(&f0, 1, &mut got, at(0));
        d2.store(true, Ordering::Release);
        r.map(|()| got)
    });
    let mut least = u64::MAX;
    while !done.load(Ordering::Acquire) {
        t.progress_wait(idle, max, true);
        least = least.min(t.timer_us.load(Ordering::Relaxed));
    }
    assert_eq!(reader.join().unwrap().unwrap(), want, "the get served by the timer steps");
    assert_eq!(least, 20, "the step that served the get did not take the period back to idle");
    // A polling library wait sends the step aside (no timer step, no progress).
    let (before, after) = beside_a_polling_library_wait(|| {
        let before = t.wait_stats();
        t.progress_wait(idle, max, true);
        (before, t.wait_stats())
    });
    assert_eq!((after[1], after[3]), (before[1], before[3] + 1), "a polling library waiter sends the step aside ({before:?} -> {after:?})");
}
