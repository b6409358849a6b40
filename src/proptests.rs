//! Property tests (issue 12, item 4) of the pure-Rust pieces that take input from outside:
//! the symmetric heap allocator (any sequence of alloc/free against a model), the range check
//! behind every RMA, AMO and collective argument (`core::Region::offset`), the PMI-1 client
//! against a process manager that answers with mutated or random replies, and the parsers of
//! the `ISHMEM_*` variables. Ordinary `cargo test` tests with a bounded, fixed number of cases
//! (proptest's default seed handling: a failure prints the shrunk input and is saved to
//! `proptest-regressions/`).

use crate::bootstrap::pmi1::Pmi1;
use crate::core::Region;
use crate::env::{self, Config};
use crate::heap::alloc::{AllocError, SymAlloc};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

// ------------------------------------------------------------------------- allocator

#[derive(Debug, Clone)]
enum Op {
    /// size, log2 of the alignment (0..=20), and whether to give an invalid alignment
    Alloc(usize, u32, bool),
    /// free the n-th live block (modulo their count)
    Free(usize),
    /// free an offset that may or may not be a live block
    FreeAny(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop_oneof![1usize..512, 1usize..70_000, Just(0usize), (usize::MAX - 200)..=usize::MAX],
              0u32..=20, prop::bool::weighted(0.05))
            .prop_map(|(s, a, bad)| Op::Alloc(s, a, bad)),
        3 => any::<usize>().prop_map(Op::Free),
        1 => prop_oneof![any::<usize>(), (0usize..4096).prop_map(|x| x * 8)].prop_map(Op::FreeAny),
    ]
}

/// The gaps between the model's live blocks in `[0, cap)`.
fn gaps(live: &BTreeMap<usize, usize>, cap: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut cur = 0;
    for (&o, &l) in live {
        if o > cur {
            out.push((cur, o - cur));
        }
        cur = o + l;
    }
    if cap > cur {
        out.push((cur, cap - cur));
    }
    out
}

proptest! {
    #![proptest_config(config(1024))]

    /// Any sequence of allocations and frees: the invariants hold after each call; blocks are
    /// aligned (for the address `origin + offset`), in bounds, disjoint and as large as asked;
    /// a failed call leaves the allocator unchanged; "exhausted" is only said when no gap of
    /// the model fits the aligned request; a free of anything but a live block's start fails.
    #[test]
    fn allocator_matches_a_model(cap_units in 1usize..4096, origin_units in 0usize..1024,
                                 ops in prop::collection::vec(op(), 1..120)) {
        let cap = cap_units * SymAlloc::MIN_ALIGN;
        let origin = origin_units * SymAlloc::MIN_ALIGN;
        let mut a = SymAlloc::new(cap);
        let mut live: BTreeMap<usize, usize> = BTreeMap::new();
        for op in ops {
            let before = a.clone();
            match op {
                Op::Alloc(size, lg, bad) => {
                    let align = if bad { (1usize << lg) | 3 } else { 1usize << lg };
                    let align = if bad && align.is_power_of_two() { 0 } else { align };
                    match a.alloc_at(size, align, origin) {
                        Ok(off) => {
                            let eff = align.max(SymAlloc::MIN_ALIGN);
                            prop_assert_eq!((origin + off) % eff, 0, "alignment {} at {:#x}", eff, off);
                            let rsize = a.size_of(off).unwrap();
                            prop_assert!(rsize >= size && rsize - size < SymAlloc::MIN_ALIGN);
                            prop_assert!(off + rsize <= cap);
                            if let Some((&o, &l)) = live.range(..off + rsize).next_back() {
                                prop_assert!(o + l <= off, "{:#x}+{} overlaps {:#x}+{}", off, rsize, o, l);
                            }
                            live.insert(off, rsize);
                        }
                        Err(e) => {
                            prop_assert_eq!(&a, &before);
                            match e {
                                AllocError::ZeroSize => prop_assert_eq!(size, 0),
                                AllocError::BadAlignment(x) => {
                                    prop_assert_eq!(x, align);
                                    prop_assert!(!align.is_power_of_two());
                                }
                                AllocError::Overflow => prop_assert!(size.checked_add(align.max(64) - 1).is_none()),
                                AllocError::Exhausted { requested, largest_free } => {
                                    prop_assert_eq!(requested, size);
                                    prop_assert_eq!(largest_free, before.largest_free());
                                    // (in u128: the model must not overflow where the allocator must not)
                                    let eff = align.max(SymAlloc::MIN_ALIGN) as u128;
                                    let m = SymAlloc::MIN_ALIGN as u128;
                                    let rsize = (size as u128).div_ceil(m) * m;
                                    for (g, glen) in gaps(&live, cap) {
                                        let (g, glen, o) = (g as u128, glen as u128, origin as u128);
                                        // the first aligned address at or after the gap's start
                                        let start = (o + g).div_ceil(eff) * eff - o;
                                        prop_assert!(start + rsize > g + glen,
                                            "exhausted although the gap {:#x}+{} holds {} bytes at {:#x}", g, glen, rsize, start);
                                    }
                                }
                            }
                        }
                    }
                }
                Op::Free(n) => {
                    if live.is_empty() {
                        continue;
                    }
                    let (&off, &len) = live.iter().nth(n % live.len()).unwrap();
                    prop_assert_eq!(a.free(off), Ok(len));
                    live.remove(&off);
                }
                Op::FreeAny(off) => {
                    let r = a.free(off);
                    match live.remove(&off) {
                        Some(len) => prop_assert_eq!(r, Ok(len)),
                        None => {
                            prop_assert!(r.is_err());
                            prop_assert_eq!(&a, &before);
                        }
                    }
                }
            }
            a.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert_eq!(a.used(), live.values().sum::<usize>());
            prop_assert_eq!(a.live_blocks(), live.len());
            let largest = gaps(&live, cap).iter().map(|g| g.1).max().unwrap_or(0);
            prop_assert_eq!(a.largest_free(), largest);
        }
        // everything freed: one free range again
        for (&off, _) in live.iter() {
            prop_assert!(a.free(off).is_ok());
        }
        prop_assert_eq!(a.largest_free(), cap);
        prop_assert_eq!(a, SymAlloc::new(cap));
    }

    /// Two PEs whose heap bases agree modulo the alignment get the same offsets for the same
    /// calls (what makes an allocation symmetric).
    #[test]
    fn allocator_is_deterministic(sizes in prop::collection::vec((1usize..100_000, 0u32..16), 1..60),
                                  base in 0usize..(1 << 20), k in 1usize..8) {
        let base = base * 4096;
        let other = base + k * (1 << 16);
        let mut a = SymAlloc::new(64 << 20);
        let mut b = SymAlloc::new(64 << 20);
        for (s, lg) in sizes {
            prop_assert_eq!(a.alloc_at(s, 1 << lg, base), b.alloc_at(s, 1 << lg, other));
        }
    }
}

// ------------------------------------------------------------------------- range checks

proptest! {
    #![proptest_config(config(4096))]

    /// The check every symmetric argument goes through: `[addr, addr+len)` is accepted exactly
    /// when it lies wholly inside the region (no wrap-around, straddling either end refused).
    #[test]
    fn region_offset_accepts_exactly_the_inside(base in any::<usize>(), rlen in any::<usize>(),
                                                addr_sel in 0u8..4, delta in any::<usize>(),
                                                len_sel in 0u8..4, len_any in any::<usize>()) {
        let rlen = rlen.min(usize::MAX - base);
        let r = Region { base, len: rlen, peers: Box::new([]) };
        let addr = match addr_sel {
            0 => delta,
            1 => base.wrapping_add(delta % (rlen.max(1))),
            2 => base.wrapping_add(rlen).wrapping_sub(delta % 64),
            _ => base.wrapping_sub(delta % 64),
        };
        let len = match len_sel {
            0 => len_any,
            1 => len_any % 256,
            2 => (base as u128 + rlen as u128).saturating_sub(addr as u128).min(usize::MAX as u128) as usize,
            _ => usize::MAX - (len_any % 4),
        };
        let inside = addr >= base
            && (addr as u128) < base as u128 + rlen as u128
            && addr as u128 + len as u128 <= base as u128 + rlen as u128;
        match r.offset(addr, len) {
            Some(off) => {
                prop_assert!(inside, "accepted {:#x}+{} in {:#x}+{}", addr, len, base, rlen);
                prop_assert_eq!(off, addr - base);
            }
            None => prop_assert!(!inside, "refused {:#x}+{} in {:#x}+{}", addr, len, base, rlen),
        }
    }
}

// ------------------------------------------------------------------------- PMI-1 wire

/// A fake process manager: answers each request line with the next reply of `replies`
/// (written as given: a reply may lack its newline or hold several lines), then closes.
/// After a reply without a final newline it closes at once (the client waits for the rest).
fn fake_pm(replies: Vec<Vec<u8>>) -> (i32, std::thread::JoinHandle<()>) {
    let (client, server) = UnixStream::pair().unwrap();
    let h = std::thread::spawn(move || {
        let mut r = BufReader::new(server.try_clone().unwrap());
        let mut w = server;
        for rep in replies {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if w.write_all(&rep).is_err() {
                return;
            }
            // A reply without a newline, or of blank lines only (which the client skips: no
            // reply yet), leaves the client waiting for more: close, as a process manager that
            // went away (staying would deadlock the two ends).
            if !rep.ends_with(b"\n") || rep.iter().all(u8::is_ascii_whitespace) {
                return;
            }
        }
        // the client is done with the script: wait for it to close its end
        let mut rest = String::new();
        while r.read_line(&mut rest).unwrap_or(0) > 0 {
            rest.clear();
        }
    });
    (client.into_raw_fd(), h)
}

/// A get answered by a blank line and then nothing: the client keeps waiting for the reply
/// (a blank line is none) until the process manager goes away, then reports that, naming
/// PMI-1. (The proptest below can draw such a reply; its fake process manager once stayed
/// open and both ends waited for ever.)
#[test]
fn pmi1_get_blank_reply_then_close_is_an_error() {
    for blank in ["\n", " \r\n", "\n\n"] {
        let mut replies: Vec<Vec<u8>> = GOOD_INIT.iter().map(|l| l.as_bytes().to_vec()).collect();
        replies.push(blank.as_bytes().to_vec());
        let (fd, h) = fake_pm(replies);
        let mut p = Pmi1::connect_fd(fd, 0, 1).unwrap();
        let e = p.get("k").unwrap_err();
        assert!(e.starts_with("PMI-1: ") && e.contains("connection closed"), "{blank:?}: {e}");
        drop(p);
        h.join().unwrap();
    }
}

const GOOD_INIT: [&str; 3] = [
    "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
    "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
    "cmd=my_kvsname kvsname=kvs_7_0\n",
];

/// One mutation of a reply line.
#[derive(Debug, Clone)]
enum Mutation {
    Keep,
    Random(Vec<u8>),
    Truncate(usize),
    DropNewline,
    FlipByte(usize, u8),
    Insert(usize, Vec<u8>),
    Replace(&'static str, String),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop_oneof![
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("2".to_string()),
        Just("=".to_string()),
        "[ -~]{0,12}".prop_map(|s| s),
        "\\PC{0,6}",
    ];
    prop_oneof![
        3 => Just(Mutation::Keep),
        1 => prop::collection::vec(any::<u8>(), 0..80).prop_map(Mutation::Random),
        1 => (0usize..80).prop_map(Mutation::Truncate),
        1 => Just(Mutation::DropNewline),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
        1 => (any::<usize>(), prop::collection::vec(prop_oneof![Just(b' '), Just(b'='), Just(b'\n'), Just(b'\r'), any::<u8>()], 1..6))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        2 => (prop_oneof![Just("rc"), Just("pmi_version"), Just("kvsname_max"), Just("keylen_max"),
                          Just("vallen_max"), Just("kvsname"), Just("cmd")], token)
            .prop_map(|(k, v)| Mutation::Replace(k, v)),
    ]
}

fn mutate(line: &str, m: &Mutation) -> Vec<u8> {
    let b = line.as_bytes().to_vec();
    match m {
        Mutation::Keep => b,
        Mutation::Random(v) => v.clone(),
        Mutation::Truncate(n) => b[..(*n).min(b.len())].to_vec(),
        Mutation::DropNewline => b[..b.len() - 1].to_vec(),
        Mutation::FlipByte(i, x) => {
            let mut b = b;
            let i = i % b.len();
            b[i] = *x;
            b
        }
        Mutation::Insert(i, v) => {
            let mut b = b;
            let i = i % b.len();
            b.splice(i..i, v.iter().copied());
            b
        }
        Mutation::Replace(k, v) => {
            let t = line.trim_end();
            let mut found = false;
            let mut parts: Vec<String> = t
                .split(' ')
                .map(|p| match p.split_once('=') {
                    Some((pk, _)) if pk == *k => {
                        found = true;
                        format!("{k}={v}")
                    }
                    _ => p.to_string(),
                })
                .collect();
            if !found {
                parts.push(format!("{k}={v}"));
            }
            format!("{}\n", parts.join(" ")).into_bytes()
        }
    }
}

proptest! {
    #![proptest_config(config(1024))]

    /// The client's handshake (init, get_maxes, get_my_kvsname) against replies with one or
    /// more mutations: it returns (never panics, never hangs: the fake closes after its
    /// script); unchanged replies connect; every error is a "PMI-1: ..." message.
    #[test]
    fn pmi1_handshake_survives_mutated_replies(ms in prop::collection::vec(mutation(), 3)) {
        let replies: Vec<Vec<u8>> = GOOD_INIT.iter().zip(&ms).map(|(l, m)| mutate(l, m)).collect();
        let unchanged = replies.iter().zip(GOOD_INIT).all(|(r, g)| r == g.as_bytes());
        let (fd, h) = fake_pm(replies);
        let res = Pmi1::connect_fd(fd, 0, 1);
        match &res {
            Ok(p) => prop_assert!(!p.kvsname().is_empty() && p.max_key_len() >= 1 && p.max_value_len() >= 1),
            Err(e) => {
                prop_assert!(!unchanged, "the unchanged handshake failed: {}", e);
                prop_assert!(e.starts_with("PMI-1: "), "error without the PMI-1 prefix: {}", e);
            }
        }
        drop(res);
        h.join().unwrap();
    }

    /// After a good handshake, a get whose reply is mutated: a well-formed `value=` comes back
    /// as is; anything else is Ok or a "PMI-1: ..." error, never a panic or a hang.
    #[test]
    fn pmi1_get_survives_mutated_replies(value in "[!-<>-~]{0,40}", m in mutation(), key in "[!-<>-~]{1,20}") {
        let good = format!("cmd=get_result rc=0 msg=success value={value}\n");
        let rep = mutate(&good, &m);
        let unchanged = rep == good.as_bytes();
        let mut replies: Vec<Vec<u8>> = GOOD_INIT.iter().map(|l| l.as_bytes().to_vec()).collect();
        replies.push(rep);
        let (fd, h) = fake_pm(replies);
        let mut p = Pmi1::connect_fd(fd, 0, 1).unwrap();
        let r = p.get(&key);
        if unchanged {
            prop_assert_eq!(r.as_deref(), Ok(value.as_str()));
        } else if let Err(e) = &r {
            prop_assert!(e.starts_with("PMI-1: "), "error without the PMI-1 prefix: {}", e);
        }
        drop(p);
        h.join().unwrap();
    }

    /// put with arbitrary keys and values: a key or value the wire cannot carry (space, '=',
    /// control or non-ASCII bytes, too long, empty key) is refused before anything is sent,
    /// naming the problem; a valid one goes out as one line.
    #[test]
    fn pmi1_put_checks_keys_and_values(key in "\\PC{0,70}|[!-<>-~]{1,70}", value in "\\PC{0,30}|[!-<>-~]{0,30}") {
        let mut replies: Vec<Vec<u8>> = GOOD_INIT.iter().map(|l| l.as_bytes().to_vec()).collect();
        replies.push(b"cmd=put_result rc=0 msg=success\n".to_vec());
        let (fd, h) = fake_pm(replies);
        let mut p = Pmi1::connect_fd(fd, 0, 1).unwrap();
        let tok = |s: &str| s.bytes().all(|b| b.is_ascii_graphic() && b != b'=');
        let valid = !key.is_empty() && tok(&key) && key.len() <= p.max_key_len()
            && tok(&value) && value.len() <= p.max_value_len();
        let r = p.put(&key, &value);
        if valid {
            prop_assert_eq!(r, Ok(()));
        } else {
            let e = r.unwrap_err();
            prop_assert!(e.starts_with("PMI-1: put"), "{}", e);
        }
        drop(p);
        h.join().unwrap();
    }
}

// ------------------------------------------------------------------------- environment

fn suffix() -> impl Strategy<Value = (&'static str, u32)> {
    prop_oneof![
        Just(("", 0)),
        Just(("K", 10)),
        Just(("k", 10)),
        Just(("M", 20)),
        Just(("m", 20)),
        Just(("G", 30)),
        Just(("g", 30)),
        Just(("T", 40)),
        Just(("t", 40))
    ]
}

proptest! {
    #![proptest_config(config(1024))]

    /// Byte counts: `<n><suffix>[B]` with spaces around is n << shift, or "too large" when that
    /// overflows; arbitrary text never panics and an error quotes the text.
    #[test]
    fn parse_bytes_round_trips(n in prop_oneof![0u64..10_000, any::<u64>()], (suf, shift) in suffix(),
                               b in prop::bool::ANY, sp in "[ \t]{0,2}", junk in "\\PC{0,12}") {
        let s = format!("{sp}{n}{suf}{}{sp}", if b { "B" } else { "" });
        let want = (n as u128) << shift;
        match env::parse_bytes(&s) {
            Ok(v) => prop_assert_eq!(v as u128, want),
            Err(e) => {
                prop_assert!(want > usize::MAX as u128, "'{}' refused: {}", s, e);
                prop_assert!(e.contains("too large"), "{}", e);
            }
        }
        if let Err(e) = env::parse_bytes(&junk) {
            prop_assert!(e.contains(&format!("'{junk}'")), "{}", e);
        }
        let _ = env::parse_count(&junk);
        let _ = env::parse_bool(&junk);
        let _ = env::parse_gpu_mode(&junk);
        let _ = env::parse_gpu_device(&junk);
    }

    /// Counts and booleans: exactly the documented spellings are accepted.
    #[test]
    fn parse_count_and_bool(n in any::<u64>(), s in "[ -~]{0,8}") {
        prop_assert_eq!(env::parse_count(&format!(" {n} ")), Ok(n));
        let t = s.trim().to_ascii_lowercase();
        let yes = ["1", "y", "yes", "true", "on"].contains(&t.as_str());
        let no = ["0", "n", "no", "false", "off", ""].contains(&t.as_str());
        match env::parse_bool(&s) {
            Ok(v) => prop_assert!((v && yes) || (!v && no), "'{}' -> {}", s, v),
            Err(_) => prop_assert!(!yes && !no, "'{}' refused", s),
        }
    }

    /// The whole configuration from an environment where some variables (and unknown
    /// ISHMEM_ names) hold arbitrary text: never a panic; an error names a variable that was
    /// set; unknown names give one warning each.
    #[test]
    fn config_from_arbitrary_environment(set in prop::collection::vec(
            (0usize..env::VARS.len() + 2, prop_oneof!["\\PC{0,10}", "[0-9]{1,25}[kKmMgGtT]?", Just(String::new())]), 0..8)) {
        let mut map = HashMap::new();
        for (i, v) in &set {
            let name = match env::VARS.get(*i) {
                Some(var) => var.name.to_string(),
                None => format!("ISHMEM_NO_SUCH_{i}"),
            };
            map.insert(name, v.clone());
        }
        match Config::from_map(&map) {
            Ok((cfg, warnings)) => {
                let unknown = map.keys().filter(|k| env::var(k).is_none()).count();
                prop_assert_eq!(warnings.len(), unknown);
                prop_assert!(cfg.symmetric_size > 0);
                prop_assert!((env::MIN_TEAMS..=env::MAX_TEAMS).contains(&(cfg.teams_max as u64)));
            }
            Err(e) => {
                let named = e.split(':').next().unwrap_or("");
                prop_assert!(map.contains_key(named), "error names no variable that was set: {}", e);
            }
        }
    }
}
