//! The fabric transport's atomics: fetching and non-fetching AMOs over each provider, the
//! batched non-fetching AMOs of manual-progress providers, the answers an atomic may give, and
//! what a wrong or guessed memory key gets. Helpers are the parent module's.

use super::*;

/// Both endpoints do `n` fetch_adds of 1 on PE 0's word 0 from their own thread: the final
/// value is exact and every fetched value is seen once. Then compare_swap, swap, add, fetch,
/// 4-byte types and float where the provider has them.
fn amo(provider: &str, n: u64) {
    let mut g = group(provider, 2, 4096);
    let ths: Vec<_> = g
        .fabs
        .iter()
        .cloned()
        .map(|f| {
            thread::spawn(move || (0..n).map(|_| f.fetch_atomic(0, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap()).collect::<Vec<u64>>())
        })
        .collect();
    let mut seen: Vec<u64> = ths.into_iter().flat_map(|t| t.join().unwrap()).collect();
    seen.sort_unstable();
    assert_eq!(g.heaps[0].0[0], 2 * n, "{provider}: fetch_add total");
    assert!(seen.iter().copied().eq(0..2 * n), "{provider}: each fetched value once");

    let (a, b) = (&g.fabs[0], &g.fabs[1]);
    // compare_swap: only the one whose compare matches wins.
    let old = b.compare_atomic(0, AtomicOp::Cswap, Dtype::U64, at(8), 5, 9).unwrap();
    assert_eq!((old, g.heaps[0].0[1]), (0, 0), "{provider}: cswap with a wrong compare");
    let old = b.compare_atomic(0, AtomicOp::Cswap, Dtype::U64, at(8), 0, 9).unwrap();
    assert_eq!((old, g.heaps[0].0[1]), (0, 9), "{provider}: cswap");
    // swap and fetch.
    assert_eq!(b.fetch_atomic(0, AtomicOp::Write, Dtype::U64, at(8), 42).unwrap(), 9);
    assert_eq!(a.fetch_atomic(0, AtomicOp::Read, Dtype::U64, at(8), 0).unwrap(), 42, "{provider}: fetch (self)");
    // non-fetching adds, complete at quiet.
    for _ in 0..100 {
        b.atomic(0, AtomicOp::Sum, Dtype::I64, at(16), (-3i64) as u64).unwrap();
    }
    b.quiet().unwrap();
    assert_eq!(g.heaps[0].0[2] as i64, -300, "{provider}: add");
    // 4-byte: the neighbour word must not change.
    for dt in [Dtype::I32, Dtype::U32] {
        g.heaps[0].0[3] = 0xdead_beef_0000_0000;
        assert_eq!(b.fetch_atomic(0, AtomicOp::Sum, dt, at(24), 5).unwrap(), 0);
        assert_eq!(b.compare_atomic(0, AtomicOp::Cswap, dt, at(24), 5, 0xffff_fffe).unwrap(), 5);
        b.atomic(0, AtomicOp::Bxor, dt, at(24), 0x1).unwrap();
        b.quiet().unwrap();
        assert_eq!(g.heaps[0].0[3], 0xdead_beef_ffff_ffff, "{provider}: {dt:?} AMOs");
    }
    // double, where the provider has it.
    if b.atomic_valid(AtomicOp::Sum, Dtype::F64, AtomicKind::Fetch) {
        g.heaps[0].0[4] = 1.5f64.to_bits();
        let old = b.fetch_atomic(0, AtomicOp::Sum, Dtype::F64, at(32), 2.25f64.to_bits()).unwrap();
        assert_eq!(f64::from_bits(old), 1.5);
        assert_eq!(f64::from_bits(g.heaps[0].0[4]), 3.75);
    } else {
        println!("{provider}: no fetching FI_SUM on FI_DOUBLE");
    }
    if b.atomic_valid(AtomicOp::Min, Dtype::F32, AtomicKind::Write) {
        g.heaps[0].0[5] = 7.0f32.to_bits() as u64;
        b.atomic(0, AtomicOp::Min, Dtype::F32, at(40), (-1.0f32).to_bits() as u64).unwrap();
        b.quiet().unwrap();
        assert_eq!(f32::from_bits(g.heaps[0].0[5] as u32), -1.0);
    }
}

#[test]
fn amo_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("amo_tcp", 180);
    amo(TCP, 1000);
}

#[test]
fn amo_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("amo_sockets", 240);
    amo(SOCKETS, 100);
}

#[test]
fn amo_shm() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("amo_shm", 180);
    amo(SHM, 1000);
}

/// Non-fetching AMOs from 2 PEs, 2 threads each, to PE 0 (three widths, add, xor, set) are
/// exact after quiet; they travel in batches (far fewer messages than AMOs: before batching
/// every AMO was a provider atomic of its own, with `ISHMEMI_OFI_AMO_BATCH=0` still); a
/// fetching AMO sees the same PE's earlier adds without a quiet, and after a fence a put
/// lands only after them.
fn amo_batched(provider: &str, k: u64) {
    let g = group(provider, 3, 4096);
    let before: Vec<u64> = g.fabs.iter().map(|f| f.amo_batches_sent()).collect();
    let ths: Vec<_> = (0..4)
        .map(|t| {
            let f = g.fabs[1 + t / 2].clone();
            thread::spawn(move || {
                for j in 0..k {
                    f.atomic(0, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
                    f.atomic(0, AtomicOp::Sum, Dtype::I32, at(8), (-3i64) as u64).unwrap();
                    f.atomic(0, AtomicOp::Bxor, Dtype::U8, at(16 + t), j & 0xff).unwrap();
                }
                f.quiet().unwrap();
            })
        })
        .collect();
    for t in ths {
        t.join().unwrap();
    }
    let h = &g.heaps[0].0;
    assert_eq!(h[0], 4 * k, "{provider}: u64 adds");
    assert_eq!(h[1] as u32 as i32 as i64, -12 * k as i64, "{provider}: i32 adds");
    assert_eq!(h[1] >> 32, 0, "{provider}: the word beside the i32 adds");
    let x = (0..k).fold(0u8, |a, j| a ^ (j & 0xff) as u8);
    assert_eq!(&g.heaps[0].bytes()[16..24], &[x, x, x, x, 0, 0, 0, 0], "{provider}: u8 xors, one byte per thread");
    let sent: Vec<u64> = g.fabs.iter().zip(&before).map(|(f, b)| f.amo_batches_sent() - b).collect();
    // tcp;ofi_rxm batches (manual progress); sockets does not (automatic progress: nobody
    // would read a computing target's CQ).
    assert_eq!(g.fabs[1].amo_batching(), provider == TCP, "{provider}: batching on");
    for pe in [1, 2] {
        if provider == TCP {
            assert!(sent[pe] >= 1 && sent[pe] < 6 * k / 2, "{provider}: PE {pe} sent {} messages for {} AMOs", sent[pe], 6 * k);
        } else {
            assert_eq!(sent[pe], 0, "{provider}: PE {pe} sent batches");
        }
    }
    // A fetch after adds of the same PE (no quiet between) sees them.
    let b = &g.fabs[1];
    for _ in 0..10 {
        b.atomic(0, AtomicOp::Sum, Dtype::U64, at(32), 2).unwrap();
    }
    assert_eq!(b.fetch_atomic(0, AtomicOp::Read, Dtype::U64, at(32), 0).unwrap(), 20, "{provider}: fetch after adds");
    // Set, fence, put: whoever sees the put sees the set.
    for round in 1..=20u64 {
        b.atomic(0, AtomicOp::Write, Dtype::U64, at(40), round).unwrap();
        b.fence();
        put_u64(b, 0, round, at(48)).unwrap();
        let p = g.heaps[0].0.as_ptr();
        let t0 = Instant::now();
        // SAFETY: words 5 and 6 of PE 0's heap, written by the provider and our own atomics.
        while unsafe { p.add(6).read_volatile() } != round {
            assert!(t0.elapsed() < Duration::from_secs(30), "{provider}: the put of round {round} never landed");
            thread::yield_now();
        }
        // SAFETY: word 5 of PE 0's heap, inside the mapped heap this test owns.
        let set = unsafe { p.add(5).read_volatile() };
        assert_eq!(set, round, "{provider}: round {round}: the put overtook the set");
    }
    b.quiet().unwrap();
}

#[test]
fn amo_batched_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("amo_batched_tcp", 180);
    amo_batched(TCP, 3000);
}

#[test]
fn amo_batched_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("amo_batched_sockets", 240);
    amo_batched(SOCKETS, 300);
}

#[test]
fn atomic_valid_answers() {
    let Some(_g) = setup() else { return };
    for p in [TCP, SOCKETS] {
        let f = Fabric::open(Some(p), 2).unwrap();
        let mut line = Vec::new();
        for (op, dt, kind) in [
            (AtomicOp::Sum, Dtype::U64, AtomicKind::Write),
            (AtomicOp::Sum, Dtype::U64, AtomicKind::Fetch),
            (AtomicOp::Cswap, Dtype::U64, AtomicKind::Compare),
            (AtomicOp::Write, Dtype::I32, AtomicKind::Fetch),
            (AtomicOp::Sum, Dtype::F64, AtomicKind::Fetch),
            (AtomicOp::Bxor, Dtype::F64, AtomicKind::Write),
            (AtomicOp::Cswap, Dtype::U64, AtomicKind::Write),
        ] {
            let v = f.atomic_valid(op, dt, kind);
            assert_eq!(v, f.atomic_valid(op, dt, kind), "cached answer");
            line.push(format!("{kind:?} {op:?} {dt:?}: {v}"));
        }
        println!("{p}: {}", line.join(", "));
        assert!(f.atomic_valid(AtomicOp::Sum, Dtype::U64, AtomicKind::Write));
        assert!(f.atomic_valid(AtomicOp::Sum, Dtype::U64, AtomicKind::Fetch));
        assert!(f.atomic_valid(AtomicOp::Cswap, Dtype::U64, AtomicKind::Compare));
        assert!(!f.atomic_valid(AtomicOp::Bxor, Dtype::F64, AtomicKind::Write), "no bitwise ops on reals");
        assert!(!f.atomic_valid(AtomicOp::Cswap, Dtype::U64, AtomicKind::Write), "cswap is a compare op");
        let e = f.atomic(0, AtomicOp::Bxor, Dtype::F64, at(0), 0).unwrap_err();
        assert!(e.contains("no Write atomic Bxor on F64"), "{e}");
    }
}

/// Operations with a wrong key fail with fi_strerror's text and the PE, and do not hang.
/// Each case gets fresh endpoints: tcp;ofi_rxm drops the connection on a protection error
/// (later operations to that PE then fail with "Transport endpoint is not connected").
/// `reported`: the provider reports every such error; shm (1.17) drops the rejected puts
/// and AMOs silently, and the stall timeout (3 s here) turns them into an error; it does not
/// check the key of a read at all.
pub(super) fn bad_key(provider: &str, reported: bool) {
    type Case = (&'static str, fn(&Fabric) -> Result<(), String>);
    let cases: [Case; 5] = [
        ("small put", |a| {
            put_u64(a, 1, 7, at(0))?;
            a.quiet()
        }),
        ("large put", |a| {
            let big = vec![1u8; 256 << 10];
            put(a, 1, &big, at(0))?;
            a.quiet()
        }),
        ("get", |a| get(a, 1, &mut [0u8; 64], at(0))),
        ("fetch_add", |a| a.fetch_atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1).map(drop)),
        ("add", |a| {
            a.atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1)?;
            a.quiet()
        }),
    ];
    for (what, case) in cases {
        let opts = Options { provider: Some(provider.into()), npes_hint: 2, stall_timeout: Duration::from_secs(3), ..Options::default() };
        let g = group_with(&opts, 2, 1 << 20, true);
        let a = &g.fabs[0];
        let mr = g.mrs[1];
        // Region 0 of PE 1 as `a` knows it, with a key no region of PE 1 has.
        a.set_remote(0, 1, mr.key.wrapping_add(0x5a5a_0000), mr.addr).unwrap();
        let e = match case(a) {
            Err(e) => e,
            Ok(()) if !reported => {
                println!("{provider}: {what}: the provider does not check the key");
                continue;
            }
            Ok(()) => panic!("{provider}: {what} with a bad key succeeded"),
        };
        println!("{provider}: {what}: {e}");
        if reported || !e.contains(": no completion for ") {
            assert!(e.contains("PE 1") && e.contains("failed: "), "{what}: {e}");
            let word = if what.contains("put") {
                "put"
            } else if what == "get" {
                "get"
            } else {
                "atomic"
            };
            assert!(e.contains(word), "{what}: {e}");
        }
        assert!(g.heaps[1].bytes().iter().all(|&x| x == 0), "{what}: the target was written");
        // Later quiets report nothing new (errors are reported once).
        if reported {
            let _ = a.quiet();
            assert_eq!(a.quiet(), Ok(()), "{what}: a second quiet");
        }
    }
}

#[test]
fn bad_key_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("bad_key_tcp", 120);
    bad_key(TCP, true);
}

#[test]
fn bad_key_sockets() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("bad_key_sockets", 240);
    bad_key(SOCKETS, true);
}

/// Keys are random per registration (issue 30): the keys of three endpoints' regions, and of
/// a second group opened after them, are all different and use the key's full width; a peer
/// that guesses the old fixed keys (1 to 4) is refused.
#[test]
fn keys_are_random_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("keys_are_random_tcp", 120);
    let g1 = group(TCP, 3, 1 << 16);
    let info = g1.fabs[0].info().clone();
    let mut keys: Vec<u64> = g1.mrs.iter().map(|m| m.key).collect();
    if info.key_bits == 0 {
        println!("{}: the provider assigns keys (FI_MR_PROV_KEY)", info.provider);
        return;
    }
    assert_eq!(info.key_bits, 64, "{info}");
    assert!(format!("{info}").contains("memory keys random 64-bit"), "{info}");
    keys.extend(group(TCP, 2, 1 << 16).mrs.iter().map(|m| m.key));
    let mut d = keys.clone();
    d.sort_unstable();
    d.dedup();
    assert_eq!(d.len(), keys.len(), "repeated keys {keys:x?}");
    assert!(keys.iter().all(|&k| k > 4), "{keys:x?}");
    assert!(keys.iter().any(|&k| k >> 32 != 0), "keys not 64-bit wide: {keys:x?}");
    let a = &g1.fabs[0];
    let mr = g1.mrs[1];
    for guess in 1..=4u64 {
        a.set_remote(0, 1, guess, mr.addr).unwrap();
        let r = a.with_stall_timeout(Duration::from_secs(5), |a| get(a, 1, &mut [0u8; 8], at(0)));
        assert!(r.is_err(), "a get with the guessed key {guess} succeeded");
    }
}

/// Fetching AMOs to another PE go as request messages answered by the target's CPU (where
/// non-fetching ones are batched and `Options::amo_fetch_msg` asks for it): every kind returns the old value and changes the word as
/// the provider's atomics did, with `Options::amo_fetch_msg` off they are provider atomics
/// again (no request sent), and a bad address is refused by the target with a PE-tagged error.
fn amo_fetch_msg(opts: &Options) {
    let g = group_with(opts, 2, 4096, true);
    let b = &g.fabs[1];
    let before = b.amo_fetch_msgs();
    let w = |i: usize| {
        // SAFETY: word i of PE 0's heap (4096 bytes), changed only by the AMOs of this test.
        unsafe { g.heaps[0].0.as_ptr().add(i).read_volatile() }
    };
    assert_eq!(b.fetch_atomic(0, AtomicOp::Sum, Dtype::U64, at(0), 5).unwrap(), 0);
    assert_eq!(b.fetch_atomic(0, AtomicOp::Sum, Dtype::U64, at(0), 5).unwrap(), 5);
    assert_eq!(b.fetch_atomic(0, AtomicOp::Read, Dtype::U64, at(0), 0).unwrap(), 10);
    assert_eq!(b.fetch_atomic(0, AtomicOp::Write, Dtype::U64, at(0), 77).unwrap(), 10);
    assert_eq!(b.compare_atomic(0, AtomicOp::Cswap, Dtype::U64, at(0), 1, 2).unwrap(), 77, "cswap, no match");
    assert_eq!(w(0), 77);
    assert_eq!(b.compare_atomic(0, AtomicOp::Cswap, Dtype::U64, at(0), 77, 2).unwrap(), 77, "cswap, match");
    assert_eq!(w(0), 2);
    assert_eq!(b.fetch_atomic(0, AtomicOp::Bor, Dtype::U64, at(0), 0xf0).unwrap(), 2);
    assert_eq!(b.fetch_atomic(0, AtomicOp::Band, Dtype::U64, at(0), 0x32).unwrap(), 0xf2);
    assert_eq!(b.fetch_atomic(0, AtomicOp::Bxor, Dtype::U64, at(0), 0xff).unwrap(), 0x32);
    assert_eq!(w(0), 0xcd);
    // 4 and 1 bytes: the neighbours do not change, the old value is zero-extended.
    // SAFETY: word 1 of PE 0's heap, not in use by an operation now.
    unsafe { g.heaps[0].0.as_ptr().add(1).cast_mut().write_volatile(0xdead_beef_ffff_fff0) };
    assert_eq!(b.fetch_atomic(0, AtomicOp::Sum, Dtype::U32, at(8), 0x20).unwrap(), 0xffff_fff0);
    assert_eq!(b.compare_atomic(0, AtomicOp::Cswap, Dtype::U8, at(15), 0xde, 0x11).unwrap(), 0xde);
    assert_eq!(w(1), 0x11ad_beef_0000_0010);
    let sent = b.amo_fetch_msgs() - before;
    if opts.amo_fetch_msg {
        assert_eq!(sent, 11, "fetching AMOs sent as messages");
        // A word outside the region: refused by the target, named in the error.
        let t = b.tables();
        let (_, addr, key) = b.target(&t, 0, at(4088), 8).unwrap();
        drop(t);
        let e = b.fetch_msg(0, AtomicOp::Sum, Dtype::U64, addr + 8, key, 1, 0).unwrap_err();
        assert!(e.contains("PE 0") && e.contains("atomic") && e.contains("failed: the target rejected it"), "{e}");
        let e = b.fetch_msg(0, AtomicOp::Sum, Dtype::U64, addr, key ^ 1, 1, 0).unwrap_err();
        assert!(e.contains("no registered region of the target has that key"), "{e}");
    } else {
        assert_eq!(sent, 0, "fetching AMOs sent as messages with the option off");
    }
    b.quiet().unwrap();
}

#[test]
fn amo_fetch_msg_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("amo_fetch_msg_tcp", 120);
    let mut o = Options { provider: Some(TCP.into()), npes_hint: 2, amo_fetch_msg: true, ..Options::default() };
    amo_fetch_msg(&o);
    o.amo_fetch_msg = false;
    amo_fetch_msg(&o);
}

/// A put with a signal inside a batch (tcp;ofi_rxm): whoever sees the signal sees the data,
/// for sizes from 1 byte to the largest inline one; the source is free on return; SIGNAL_ADD
/// from two PEs and two threads is exact beside fetching adds; a size past the inline limit is
/// declined (the caller's three-step path); a put the target refuses takes its signal with it.
#[test]
fn put_signal_inline_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_signal_inline_tcp", 180);
    let g = group(TCP, 3, 1 << 16);
    let b = g.fabs[1].clone();
    let heap0 = g.heaps[0].0.as_ptr() as usize;
    let word = move |i: usize| {
        // SAFETY: word i of PE 0's heap (64 KiB), written by the provider and the batches.
        unsafe { (heap0 as *const u64).add(i).read_volatile() }
    };
    let mut round = 0u64;
    for len in [1usize, 8, 100, 1000, batch::PUT_INLINE_MAX] {
        for _ in 0..30 {
            round += 1;
            let mut src = pattern(len, round as u8);
            let want = src.clone();
            // SAFETY: src is readable for len bytes until return.
            let sent = unsafe { b.put_signal(0, src.as_ptr(), len, at(4096), at(0), round, false) }.unwrap();
            assert!(sent, "a put with signal of {len} B not sent inline");
            src.fill(0xee); // free on return
            let t0 = Instant::now();
            while word(0) != round {
                assert!(t0.elapsed() < Duration::from_secs(30), "the signal of round {round} never came");
                thread::yield_now();
            }
            // SAFETY: [4096, 4096 + len) of PE 0's heap, written before the signal.
            let got = unsafe { std::slice::from_raw_parts((heap0 + 4096) as *const u8, len) };
            assert!(got == &want[..], "{len} B: the signal of round {round} came before its data");
        }
    }
    assert_eq!(b.put_signals_inline(), round, "puts with signal sent inline");
    // Past the inline limit: declined, nothing sent.
    let big = vec![1u8; batch::PUT_INLINE_MAX + 1];
    // SAFETY: big is readable for its length.
    assert!(!unsafe { b.put_signal(0, big.as_ptr(), big.len(), at(4096), at(0), 1, false) }.unwrap());
    // SIGNAL_ADD from PEs 1 and 2 (two threads each), beside fetching adds on the same word.
    let ths: Vec<_> = (0..4)
        .map(|t| {
            let f = g.fabs[1 + t / 2].clone();
            thread::spawn(move || {
                let d = [t as u8; 24];
                for _ in 0..500 {
                    // SAFETY: d is readable for 24 bytes.
                    assert!(unsafe { f.put_signal(0, d.as_ptr(), 24, at(8192 + 64 * t), at(8), 1, true) }.unwrap());
                    f.fetch_atomic(0, AtomicOp::Sum, Dtype::U64, at(8), 2).unwrap();
                }
                f.quiet().unwrap();
            })
        })
        .collect();
    for t in ths {
        t.join().unwrap();
    }
    assert_eq!(word(1), 4 * 500 * 3, "SIGNAL_ADD with fetching adds");
    // A put the target refuses (past the region's end, addressed by hand): its signal is not
    // applied, and quiet reports both entries.
    let t = b.tables();
    let (_, addr, key) = b.target(&t, 0, at((1 << 16) - 8), 8).unwrap();
    let (_, saddr, skey) = b.target(&t, 0, at(16), 8).unwrap();
    drop(t);
    let sig = batch::Entry { addr: saddr, key: skey, operand: 99, op: AtomicOp::Write as u8, dt: Dtype::U64 as u8, _pad: [0; 6] };
    let d = [7u8; 64];
    // SAFETY: d is readable for 64 bytes.
    unsafe { b.batch_put_signal(0, d.as_ptr(), 64, addr, key, sig) }.unwrap();
    let e = b.quiet().unwrap_err();
    assert!(e.contains("PE 0") && e.contains("rejected 2 of"), "{e}");
    assert_eq!(word(2), 0, "the signal of a refused put was applied");
    assert_eq!(b.quiet(), Ok(()));
    // With the option off (the old path) nothing goes inline: the first assertion above fails.
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, put_signal_inline: false, ..Options::default() };
    let g = group_with(&o, 2, 1 << 16, true);
    // SAFETY: d is readable for 64 bytes.
    assert!(!unsafe { g.fabs[1].put_signal(0, d.as_ptr(), 8, at(4096), at(0), 1, false) }.unwrap(), "sent inline with the option off");
}

/// A put with a signal goes out at once while earlier batches to its target wait for their
/// acknowledgements (fewer than `UNACKED_MAX`), where plain AMOs are collected into the next
/// batch: with the target's progress stopped, three puts with signals are three batches sent,
/// three adds none (collected); all land once it runs again.
#[test]
fn put_signal_goes_out_while_acknowledgements_are_pending_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_signal_goes_out_while_acknowledgements_are_pending_tcp", 120);
    let g = group(TCP, 2, 1 << 16);
    let a = g.fabs[0].clone();
    // Connect first (rxm sets up connections through both sides' progress).
    a.atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
    a.quiet().unwrap();
    g.pause_1.store(true, Ordering::Relaxed);
    thread::sleep(Duration::from_millis(10)); // let a progress() call in flight finish
    let before = a.amo_batches_sent();
    for i in 0..3u64 {
        let d = [i as u8 + 1; 8];
        // SAFETY: d is readable for 8 bytes.
        assert!(unsafe { a.put_signal(1, d.as_ptr(), 8, at(4096 + 64 * i as usize), at(8 + 8 * i as usize), i + 1, false) }.unwrap());
    }
    let signals = a.amo_batches_sent() - before;
    for _ in 0..3 {
        a.atomic(1, AtomicOp::Sum, Dtype::U64, at(0), 1).unwrap();
    }
    let adds = a.amo_batches_sent() - before - signals;
    g.pause_1.store(false, Ordering::Relaxed);
    a.quiet().unwrap();
    assert_eq!(signals, 3, "puts with signals sent while acknowledgements were pending");
    assert_eq!(adds, 0, "adds are collected while batches are unacknowledged");
    let w = &g.heaps[1].0;
    assert_eq!((w[0], w[1], w[2], w[3]), (4, 1, 2, 3), "adds and signals after quiet");
    assert_eq!((w[512] & 0xff, w[520] & 0xff, w[528] & 0xff), (1, 2, 3), "the puts' data");
}

/// Blocking puts longer than the inject size return without waiting for the target: with
/// the target's progress stopped they still return (copied into the ring), then land intact
/// once it runs again, though the source was overwritten at once; through several turns of
/// the ring. With `Options::put_bounce_max` 0 (the old path) the same puts wait for the
/// stopped target and fail at the stall limit.
#[test]
fn put_blocking_bounced_tcp() {
    let Some(_g) = setup() else { return };
    let _w = watchdog("put_blocking_bounced_tcp", 180);
    put_blocking_bounced(true);
    put_blocking_bounced(false);
}

fn put_blocking_bounced(bounce: bool) {
    let o = Options { provider: Some(TCP.into()), npes_hint: 2, put_bounce_max: if bounce { 64 << 10 } else { 0 }, ..Options::default() };
    let g = group_with(&o, 2, 1 << 20, true);
    let a = g.fabs[0].clone();
    let sizes = [100usize, 512, 4096, 65536];
    let mut last = [0usize; 16];
    // Connected first (rxm connects in the target's progress too).
    put_u64(&a, 1, 1, at(8)).unwrap();
    a.quiet().unwrap();
    g.pause_1.store(true, Ordering::Relaxed);
    let r = a.with_stall_timeout(Duration::from_secs(3), |a| {
        for k in 0..8 {
            let mut src = pattern(sizes[k % 4], k as u8);
            // SAFETY: src is readable for its length until return.
            unsafe { a.put_blocking(1, src.as_ptr(), src.len(), at((k % 16) << 16)) }?;
            src.fill(0xee);
            last[k % 16] = k;
        }
        Ok::<(), String>(())
    });
    g.pause_1.store(false, Ordering::Relaxed);
    if !bounce {
        let e = r.expect_err("blocking puts without the ring returned while the target made no progress");
        assert!(e.contains("no completion for"), "{e}");
        return;
    }
    r.expect("blocking puts waited for a target that makes no progress");
    for k in 8..600 {
        let mut src = pattern(sizes[k % 4], k as u8);
        // SAFETY: src is readable for its length until return.
        unsafe { a.put_blocking(1, src.as_ptr(), src.len(), at((k % 16) << 16)) }.unwrap();
        src.fill(0xee);
        last[k % 16] = k;
    }
    a.quiet().unwrap();
    for (slot, &k) in last.iter().enumerate() {
        let n = sizes[k % 4];
        assert!(g.heaps[1].bytes()[slot << 16..(slot << 16) + n] == pattern(n, k as u8)[..], "slot {slot}: put {k} of {n} B differs");
    }
}
