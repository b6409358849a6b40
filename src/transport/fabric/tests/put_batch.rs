//! Puts inside batches (`Fabric::put_batched`, tcp;ofi_rxm): what lands, in which order, what
//! a get sees, how a fence behaves beside the provider's own writes, what a refused put
//! reports, and the order in which a target applies one PE's batches (`batch::InOrder`).
//! Helpers are the parent module's.

use super::batch::{Arrival, InOrder};
use super::*;

/// A group of `n` PEs over tcp;ofi_rxm whose lone puts go in batches too (so that every put
/// these tests make is batched).
fn group_b(n: usize, len: usize) -> Group {
    let o = Options { provider: Some(TCP.into()), npes_hint: n, batch_lone_puts: true, ..Options::default() };
    group_with(&o, n, len, true)
}

/// Sends `src` to `to` on `pe` inside a batch; panics where it was declined.
fn put_b(f: &Fabric, pe: usize, src: &[u8], to: Remote) {
    // SAFETY: src is readable for its length until return.
    assert!(unsafe { f.put_batched(pe, src.as_ptr(), src.len(), to) }.unwrap(), "a put of {} B was declined", src.len());
}

/// Every size from 1 byte to the largest lands intact after quiet though the source was
/// overwritten on return; a stream of 8-byte puts takes far fewer messages than puts; a get
/// right after a put (no quiet between) sees it; past the limit, and with the option 0, the
/// put is declined.
#[test]
fn put_batched_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_batched_tcp", 180);
    let g = group_b(3, 1 << 16);
    let b = g.fabs[1].clone();
    let heap0 = g.heaps[0].0.as_ptr() as usize;
    let mut off = 0;
    let sizes = [1usize, 7, 8, 33, 64, 100, 512, 1000, batch::PUT_BATCH_MAX];
    let mut want = Vec::new();
    for (k, &len) in sizes.iter().enumerate() {
        let mut src = pattern(len, k as u8 + 1);
        put_b(&b, 0, &src, at(off));
        want.push((off, src.clone()));
        src.fill(0xee); // free on return
        off += len.next_multiple_of(8);
    }
    b.quiet().unwrap();
    for (off, w) in &want {
        // SAFETY: [off, off + len) of PE 0's heap (64 KiB), complete after quiet.
        let got = unsafe { std::slice::from_raw_parts((heap0 + off) as *const u8, w.len()) };
        assert!(got == &w[..], "{} B at {off}: wrong data", w.len());
    }
    assert_eq!(b.puts_batched(), sizes.len() as u64, "puts sent inside batches");
    // A stream of 8-byte puts: a message carries many.
    let sent0 = b.amo_batches_sent();
    for i in 0..3000u64 {
        put_b(&b, 0, &(i * 3).to_ne_bytes(), at(32768 + 8 * (i as usize % 512)));
    }
    b.quiet().unwrap();
    let msgs = b.amo_batches_sent() - sent0;
    assert!(msgs >= 1 && msgs < 3000 / 4, "3000 puts of 8 B took {msgs} messages");
    for i in 2488..3000usize {
        assert_eq!(g.heaps[0].0[4096 + i % 512], i as u64 * 3, "stream word {i}");
    }
    // A get right after a put sees it (the put may still be collected, or unapplied).
    let mut r = [0u8; 8];
    for round in 1..=300u64 {
        put_b(&b, 0, &round.to_ne_bytes(), at(40960));
        get(&b, 0, &mut r, at(40960)).unwrap();
        assert_eq!(u64::from_ne_bytes(r), round, "a get after the put of round {round}");
        // And after a stream that fills several messages.
        if round % 50 == 0 {
            for i in 0..200u64 {
                put_b(&b, 0, &(round + i).to_ne_bytes(), at(40968));
            }
            get(&b, 0, &mut r, at(40968)).unwrap();
            assert_eq!(u64::from_ne_bytes(r), round + 199, "a get after a stream (round {round})");
        }
    }
    b.quiet().unwrap();
    // Declined: past the limit; 0 bytes; to itself.
    let big = vec![1u8; batch::PUT_BATCH_MAX + 1];
    // SAFETY: big is readable for its length.
    assert!(!unsafe { b.put_batched(0, big.as_ptr(), big.len(), at(0)) }.unwrap());
    // SAFETY: a zero-length put reads nothing.
    assert!(!unsafe { b.put_batched(0, big.as_ptr(), 0, at(0)) }.unwrap());
    // SAFETY: big is readable for 8 bytes.
    assert!(!unsafe { b.put_batched(1, big.as_ptr(), 8, at(0)) }.unwrap(), "a put to itself went in a batch");
    // With the option 0 nothing goes in a batch.
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, put_batch_max: 0, batch_lone_puts: true, ..Options::default() };
    let g2 = group_with(&o, 2, 4096, true);
    // SAFETY: big is readable for 8 bytes.
    assert!(!unsafe { g2.fabs[1].put_batched(0, big.as_ptr(), 8, at(0)) }.unwrap(), "batched with the option 0");
}

/// Data, fence, flag, all inside batches, from two threads of PE 1 and one of PE 2, while two
/// threads read PE 0's completion queue (so two of one PE's batches can be taken at once):
/// whoever sees a flag sees its data. The fence waits for nothing there (only batches are
/// outstanding: the target applies them in order), so the thread's messages keep several in
/// flight. Then the fence beside the provider's own writes: after a large put (an RMA write)
/// and a fence, a small put is declined (the provider's write order keeps it after the large
/// one), and it lands after it.
#[test]
fn put_batched_fence_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_batched_fence_tcp", 240);
    let g = group_b(3, 1 << 16);
    let heap0 = g.heaps[0].0.as_ptr() as usize;
    let stop = Arc::new(AtomicBool::new(false));
    // The readers stop however the test ends (a failed assertion too).
    struct Stop(Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _stop = Stop(stop.clone());
    // More readers of PE 0's CQ (beside its progress thread).
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (f, s) = (g.fabs[0].clone(), stop.clone());
            thread::spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    f.progress();
                }
            })
        })
        .collect();
    const ROUNDS: u64 = 1000;
    const DATA: usize = 1500;
    // Thread t: data words (u32) at 2048 * (t + 1), its flag word at 8 * t. The data (1.5 KB)
    // and the flag of a round mostly travel in two batches, several of them in flight.
    let writers: Vec<_> = (0..3usize)
        .map(|t| {
            let f = g.fabs[if t < 2 { 1 } else { 2 }].clone();
            thread::spawn(move || {
                for r in 1..=ROUNDS {
                    let data: Vec<u8> = (0..DATA / 4).flat_map(|_| (r as u32).to_ne_bytes()).collect();
                    put_b(&f, 0, &data, at(2048 * (t + 1)));
                    f.fence();
                    put_b(&f, 0, &r.to_ne_bytes(), at(8 * t));
                }
                f.quiet().unwrap();
            })
        })
        .collect();
    // Watch the flags: every data word of a thread is at least its flag's round.
    let t0 = Instant::now();
    loop {
        let mut done = 0;
        for t in 0..3usize {
            // SAFETY: word t of PE 0's heap, written by the batches.
            let flag = unsafe { (heap0 as *const u64).add(t).read_volatile() };
            // SAFETY: [2048 (t + 1), + DATA) of PE 0's heap (aligned), written by the batches.
            let data = unsafe { std::slice::from_raw_parts((heap0 + 2048 * (t + 1)) as *const u32, DATA / 4) };
            if let Some(i) = data.iter().position(|&d| (d as u64) < flag) {
                panic!("thread {t}: flag {flag} seen with data word {i} of round {}", data[i]);
            }
            done += (flag == ROUNDS) as usize;
        }
        if done == 3 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "the flags never reached {ROUNDS}");
        thread::yield_now();
    }
    for w in writers {
        w.join().unwrap();
    }
    let b = &g.fabs[1];
    assert!(b.puts_batched() >= 2 * 2 * ROUNDS, "PE 1's puts went in batches ({})", b.puts_batched());
    // A provider write, a fence, a small put: declined, so it goes after the large one through
    // the provider.
    for round in 1..=20u64 {
        let big = vec![round as u8; 32768];
        put(b, 0, &big, at(16384)).unwrap();
        b.fence();
        let v = [round as u8 + 100; 8];
        // SAFETY: v is readable for 8 bytes.
        let batched = unsafe { b.put_batched(0, v.as_ptr(), 8, at(8192)) }.unwrap();
        assert!(!batched, "round {round}: batched after a provider write and a fence");
        put(b, 0, &v, at(8192)).unwrap();
        let t0 = Instant::now();
        // SAFETY: byte 8192 of PE 0's heap.
        while unsafe { ((heap0 + 8192) as *const u8).read_volatile() } != round as u8 + 100 {
            assert!(t0.elapsed() < Duration::from_secs(30), "round {round}: the small put never came");
            thread::yield_now();
        }
        // SAFETY: [16384, +32768) of PE 0's heap, written before the small put.
        let got = unsafe { std::slice::from_raw_parts((heap0 + 16384) as *const u8, 32768) };
        assert!(got.iter().all(|&x| x == round as u8), "round {round}: the small put landed before the large one");
        b.quiet().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
}

/// A put the target refuses (past its region, addressed by hand) is reported by quiet and
/// writes nothing; the puts beside it in the same batch land.
#[test]
fn put_batched_refused_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_batched_refused_tcp", 60);
    let g = group_b(2, 8192);
    let b = &g.fabs[1];
    let t = b.tables();
    let (_, addr, key) = b.target(&t, 0, at(8192 - 64), 64).unwrap();
    drop(t);
    put_b(b, 0, &[5u8; 16], at(0));
    let d = [7u8; 100];
    // SAFETY: d is readable for 100 bytes; the range runs 36 bytes past PE 0's region.
    unsafe { b.batch_put(0, d.as_ptr(), 100, addr, key) }.unwrap();
    put_b(b, 0, &[6u8; 16], at(16));
    let e = b.quiet().unwrap_err();
    assert!(e.contains("PE 0") && e.contains("rejected 5 of") && e.contains("outside the region"), "{e}");
    assert_eq!(&g.heaps[0].bytes()[..32], &[[5u8; 16], [6u8; 16]].concat()[..], "the puts beside the refused one");
    assert!(g.heaps[0].bytes()[8192 - 64..].iter().all(|&x| x == 0), "the refused put wrote");
    assert_eq!(b.quiet(), Ok(()));
}

/// With the default options a lone put (nothing outstanding) goes through the provider, and
/// the puts after it, while something is outstanding, in batches: put through the provider
/// what was declined, then quiet; every value lands.
#[test]
fn put_lone_declined_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_lone_declined_tcp", 60);
    let g = group(TCP, 2, 8192);
    let b = &g.fabs[1];
    for round in 1..=50u64 {
        let v = round.to_ne_bytes();
        // SAFETY: v is readable for 8 bytes.
        let batched = unsafe { b.put_batched(0, v.as_ptr(), 8, at(0)) }.unwrap();
        assert!(!batched, "round {round}: a lone put went in a batch");
        put(b, 0, &v, at(0)).unwrap();
        // A 64-byte put, its provider write (a round trip) not complete: batched. (A
        // completion read before this call makes it lone again: count, do not require.)
        let w = [round as u8; 64];
        // SAFETY: w is readable for 64 bytes.
        if !unsafe { b.put_batched(0, w.as_ptr(), 64, at(64)) }.unwrap() {
            put(b, 0, &w, at(64)).unwrap();
        }
        b.quiet().unwrap();
        assert_eq!(&g.heaps[0].bytes()[..8], &v[..], "round {round}: the lone put");
        assert!(g.heaps[0].bytes()[64..128].iter().all(|&x| x == round as u8), "round {round}: the put after it");
    }
    assert!(b.puts_batched() > 0, "no put after a lone one went in a batch");
}

/// `InOrder`: batches of one PE applied in sequence order whatever order they arrive in;
/// copies dropped; a lost one skipped once the sender could not have sent more.
#[test]
fn batches_applied_in_order() {
    /// Batch `seq` arrives at `o`; what is applied goes to `applied`; false: a copy.
    fn arrive(o: &mut InOrder, applied: &mut Vec<u64>, seq: u64) -> bool {
        let msg = seq.to_ne_bytes();
        match o.arrive(seq, &msg) {
            Arrival::Apply => {
                applied.push(seq);
                o.applied();
            }
            Arrival::Kept => {}
            Arrival::Copy => return false,
        }
        while let Some(m) = o.ready() {
            applied.push(u64::from_ne_bytes(m[..8].try_into().unwrap()));
            o.applied();
        }
        true
    }
    let mut o = InOrder::default();
    let mut applied = Vec::new();
    for seq in [0, 2, 1, 3, 6, 5, 4] {
        assert!(arrive(&mut o, &mut applied, seq));
    }
    assert_eq!(applied, (0..7).collect::<Vec<_>>());
    assert!(!arrive(&mut o, &mut applied, 3), "a copy of an applied batch");
    assert!(arrive(&mut o, &mut applied, 8));
    assert!(!arrive(&mut o, &mut applied, 8), "a copy of a kept batch");
    assert_eq!(applied.len(), 7, "8 applied before 7");
    // 7 is lost: 8..=14 kept (7 of them, as many as could come while 7 waits), then 15.
    for seq in 9..=14 {
        assert!(arrive(&mut o, &mut applied, seq));
    }
    assert_eq!(applied.len(), 7, "applied past the lost batch too soon");
    assert!(arrive(&mut o, &mut applied, 15));
    assert_eq!(applied, (0..7).chain(8..=15).collect::<Vec<_>>());
    assert!(arrive(&mut o, &mut applied, 16));
    assert_eq!(applied.last(), Some(&16));
}
