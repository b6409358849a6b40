//! Unit tests of `bootstrap::uid`.

use super::*;
use std::thread;

fn local() -> Server {
    Server::start_at("127.0.0.1:0".parse().unwrap()).unwrap()
}

fn value(rank: usize, round: usize) -> Vec<u8> {
    let len = match (rank + round) % 4 {
        0 => 0,
        1 => 4096,
        2 => 17,
        _ => 1000 + rank,
    };
    (0..len).map(|i| (i * 13 + rank * 5 + round * 71) as u8).collect()
}

/// Runs `f(rank)` on one thread per rank and returns their results by rank.
fn ranks<T: Send + 'static>(n: usize, f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let f = f.clone();
            thread::spawn(move || f(r))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

fn wait_finished(s: &Server) {
    let t0 = Instant::now();
    while !s.is_finished() {
        assert!(t0.elapsed() < Duration::from_secs(10), "server still running");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn id_round_trips() {
    let id = UniqueId { key: "0123456789abcdef0123456789abcdef".into(), addr: "127.0.0.1:4242".parse().unwrap() };
    let b = id.to_bytes();
    assert_eq!(&b[..8], b"ISHMUID2");
    assert_eq!(&b[8..40], id.key.as_bytes());
    assert_eq!(&b[40..56], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]);
    assert_eq!(&b[56..58], &4242u16.to_be_bytes());
    assert!(b[62..].iter().all(|&x| x == 0));
    assert_eq!(UniqueId::parse(&b).unwrap(), id);
    let v6 = UniqueId { key: id.key.clone(), addr: "[fd00::5]:7000".parse().unwrap() };
    assert_eq!(UniqueId::parse(&v6.to_bytes()).unwrap(), v6);
}

#[test]
fn bad_ids_are_refused_with_reasons() {
    let id = UniqueId { key: "0123456789abcdef0123456789abcdef".into(), addr: "127.0.0.1:4242".parse().unwrap() };
    let good = id.to_bytes();
    let e = UniqueId::parse(&[0u8; UID_BYTES]).unwrap_err();
    assert_eq!(
        e,
        "unique-id bootstrap: the unique id was not made by ishmemx_get_uniqueid (bad magic \"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\")"
    );
    let mut old = good;
    old[..8].copy_from_slice(b"ISHMUID1");
    assert!(UniqueId::parse(&old)
        .unwrap_err()
        .starts_with("unique-id bootstrap: the unique id has the format ISHMUID1 of an older libishmem"));
    let mut flipped = good;
    flipped[57] ^= 1;
    assert!(UniqueId::parse(&flipped).unwrap_err().contains("corrupt (checksum mismatch)"));
    let mut tail = good;
    tail[100] = 1;
    assert_eq!(UniqueId::parse(&tail).unwrap_err(), "unique-id bootstrap: the unique id is corrupt (bytes 62..128 are not zero)");
    let e = Client::connect(&[0u8; UID_BYTES], 0, 1, Duration::from_secs(1)).unwrap_err();
    assert!(e.contains("bad magic"), "{e}");
}

#[test]
fn listen_addresses() {
    assert_eq!(listen_addr(Some("127.0.0.1")).unwrap(), "127.0.0.1:0".parse().unwrap());
    assert_eq!(listen_addr(Some(" 127.0.0.1:7001 ")).unwrap(), "127.0.0.1:7001".parse().unwrap());
    assert_eq!(listen_addr(Some("[::1]:7001")).unwrap(), "[::1]:7001".parse().unwrap());
    assert_eq!(
        listen_addr(Some("node7:99")).unwrap_err(),
        "unique-id bootstrap: ISHMEM_BOOTSTRAP_UID_ADDR=\"node7:99\" is not ip[:port] (e.g. 10.0.0.5, 10.0.0.5:7000 or [fd00::5]:7000)"
    );
    assert!(listen_addr(Some("0.0.0.0")).unwrap_err().contains("not a wildcard"));
    // Unset: some IPv4 address of this host (not bound here: tests stay on loopback).
    let a = listen_addr(None).unwrap();
    assert!(a.is_ipv4() && a.port() == 0 && !a.ip().is_unspecified(), "{a}");
    assert_eq!(listen_addr(Some("")).unwrap(), a);
    assert_eq!(a.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST), first_ipv4().is_none());
}

#[test]
fn messages_format() {
    assert_eq!(rank_list(&[2, 3], 4), "ranks 2, 3 of 4");
    assert_eq!(rank_list(&[1], 2), "rank 1 of 2");
    assert_eq!(rank_list(&(0..20).collect::<Vec<_>>(), 40), "ranks 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 and 4 more of 40");
    assert_eq!(secs(Duration::from_millis(500)), "0.5 s");
}

/// 1, 2, 4 and 8 ranks as threads (the server in the same process, as when the creator
/// is rank 0): four rounds of values from 0 B to 4 KiB, then close; the server ends.
#[test]
fn jobs_of_1_2_4_8_ranks() {
    for n in [1usize, 2, 4, 8] {
        let server = local();
        let uid = server.uid();
        let key = server.key().to_string();
        let keys = ranks(n, move |r| {
            let mut c = Client::connect(&uid, r, n, Duration::from_secs(20)).unwrap();
            assert_eq!((c.rank(), c.nranks()), (r, n));
            for round in 0..4 {
                let got = c.allgather(&format!("round{round}"), &value(r, round)).unwrap();
                assert_eq!(got.len(), n);
                for (q, v) in got.iter().enumerate() {
                    assert_eq!(v, &value(q, round), "n={n} round {round} rank {q}");
                }
            }
            let k = c.key().to_string();
            c.close().unwrap();
            k
        });
        assert!(keys.iter().all(|k| *k == key) && key.len() == 32);
        wait_finished(&server);
    }
}

#[test]
fn missing_ranks_time_out_with_their_names() {
    let server = local();
    let uid = server.uid();
    let addr = server.addr();
    let t0 = Instant::now();
    let errs = ranks(2, move |r| Client::connect(&uid, r, 4, Duration::from_secs(1)).unwrap_err());
    let want = format!("unique-id bootstrap: timed out after 1 s waiting for ranks 2, 3 of 4 to connect to {addr}");
    assert_eq!(errs, vec![want.clone(), want]);
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    wait_finished(&server);
}

#[test]
fn disagreeing_nranks_fails_everyone() {
    let server = local();
    let uid = server.uid();
    let first = thread::spawn(move || Client::connect(&uid, 0, 2, Duration::from_secs(10)).unwrap_err());
    thread::sleep(Duration::from_millis(300));
    let e = Client::connect(&uid, 1, 3, Duration::from_secs(10)).unwrap_err();
    let want = "unique-id bootstrap: rank 1 says the job has 3 PEs, but rank 0 said 2: every PE must pass the same nranks";
    assert_eq!(e, want);
    assert_eq!(first.join().unwrap(), want);
    wait_finished(&server);
}

/// Issue 30: a second hello for a rank, or one after every rank connected, is refused
/// alone; the job goes on (before, both holders of the rank failed: "connected twice").
#[test]
fn duplicate_and_late_hellos_are_refused_alone() {
    let server = local();
    let uid = server.uid();
    let first = thread::spawn(move || {
        let mut c = Client::connect(&uid, 1, 2, Duration::from_secs(10)).unwrap();
        c.allgather("k", &[1]).unwrap()
    });
    thread::sleep(Duration::from_millis(300));
    let e = Client::connect(&uid, 1, 2, Duration::from_secs(10)).unwrap_err();
    assert!(e.starts_with("unique-id bootstrap: rank 1 is connected already (from 127.0.0.1:"), "{e}");
    assert!(e.ends_with("is refused: every PE must pass a different rank"), "{e}");
    let mut c0 = Client::connect(&uid, 0, 2, Duration::from_secs(10)).unwrap();
    // every rank is in: a late hello (any rank) is refused, the job goes on
    let e = Client::connect(&uid, 0, 2, Duration::from_secs(10)).unwrap_err();
    assert!(e.contains("after every rank connected; connection refused"), "{e}");
    assert_eq!(c0.allgather("k", &[0]).unwrap(), vec![vec![0u8], vec![1u8]]);
    assert_eq!(first.join().unwrap(), vec![vec![0u8], vec![1u8]]);
    drop(c0);
    wait_finished(&server);
}

/// Issue 30: connections that never say hello are bounded (MAX_PENDING, the oldest pushed
/// out) and so is what they may send (a first frame of a hello's size): 300 idle ones and
/// 100 announcing 1 MiB do not keep the ranks out.
#[test]
fn a_flood_of_strangers_does_not_keep_the_ranks_out() {
    let server = local();
    let uid = server.uid();
    let addr = server.addr();
    let mut idle: Vec<TcpStream> = (0..300).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut big: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            let _ = s.write_all(&((1u32 << 20) + 1).to_be_bytes());
            let _ = s.write_all(&[T_HELLO; 4096]);
            s
        })
        .collect();
    let got = ranks(2, move |r| {
        let mut c = Client::connect(&uid, r, 2, Duration::from_secs(20)).unwrap();
        c.allgather("k", &[r as u8]).unwrap()
    });
    assert_eq!(got, vec![vec![vec![0u8], vec![1u8]]; 2]);
    // All but the last MAX_PENDING idle ones were closed; every big one was refused.
    let closed = |s: &mut TcpStream| {
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut b = [0u8; 256];
        loop {
            match s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue, // the refusal's message
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return false,
                Err(_) => return true, // reset
            }
        }
    };
    let nidle = idle.iter_mut().map(closed).filter(|&c| c).count();
    assert!(nidle >= 300 - MAX_PENDING, "{nidle} of 300 idle connections closed");
    let nbig = big.iter_mut().map(closed).filter(|&c| c).count();
    assert_eq!(nbig, 100);
}

#[test]
fn rank_out_of_range_is_refused_before_connecting() {
    let server = local();
    let uid = server.uid();
    assert_eq!(Client::connect(&uid, 4, 4, Duration::from_secs(1)).unwrap_err(), "unique-id bootstrap: rank 4 is not in a job of 4 PEs");
    assert!(Client::connect(&uid, 0, 0, Duration::from_secs(1)).unwrap_err().contains("nranks 0 is not in 1..="));
    // A raw client that claims it anyway gets the server's word.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(&frame(T_HELLO, &hello(server.key(), 5, 4, Duration::from_secs(1)))).unwrap();
    let (ty, p) = read_frame(&mut s, 1 << 16, Instant::now() + Duration::from_secs(5)).ok().unwrap();
    assert_eq!((ty, String::from_utf8(p).unwrap().as_str()), (T_ERROR, "unique-id bootstrap: rank 5 is out of range for a job of 4 PEs"));
}

/// Strangers (wrong key, wrong magic, absurd lengths) are refused alone; the job goes on.
#[test]
fn strangers_are_refused_and_the_job_goes_on() {
    let server = local();
    let uid = server.uid();
    let addr = server.addr();
    let mut other = UniqueId::parse(&uid).unwrap();
    other.key = "f".repeat(32);
    let e = Client::connect(&other.to_bytes(), 0, 2, Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        e,
        format!("unique-id bootstrap: the server at {addr} serves another job (the unique id's key differs): every PE must pass the id of one ishmemx_get_uniqueid call")
    );
    let deadline = || Instant::now() + Duration::from_secs(5);
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&0xffff_fff0u32.to_be_bytes()).unwrap();
    let (ty, p) = read_frame(&mut s, 1 << 16, deadline()).ok().unwrap();
    let p = String::from_utf8(p).unwrap();
    assert_eq!(ty, T_ERROR);
    assert!(
        p.starts_with("unique-id bootstrap: 127.0.0.1:")
            && p.ends_with(
                "did not start with a hello of this protocol (a first frame of 4294967280 bytes, a hello has 61); connection refused"
            ),
        "{p}"
    );
    assert!(matches!(read_frame(&mut s, 1 << 16, deadline()), Err(ReadErr::Eof)));
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"\0\0\0\x05GET /").unwrap();
    let (_, p) = read_frame(&mut s, 1 << 16, deadline()).ok().unwrap();
    assert!(String::from_utf8(p)
        .unwrap()
        .ends_with("did not start with a hello of this protocol (a first frame of 5 bytes, a hello has 61); connection refused"));
    let mut hv = hello(server.key(), 0, 2, Duration::from_secs(1));
    hv[8..12].copy_from_slice(&3u32.to_be_bytes());
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&frame(T_HELLO, &hv)).unwrap();
    let (_, p) = read_frame(&mut s, 1 << 16, deadline()).ok().unwrap();
    assert!(String::from_utf8(p).unwrap().contains("protocol version 3 from 127.0.0.1:"));
    // The real ranks are unaffected.
    let got = ranks(2, move |r| {
        let mut c = Client::connect(&uid, r, 2, Duration::from_secs(10)).unwrap();
        c.allgather("k", &[r as u8]).unwrap()
    });
    assert_eq!(got, vec![vec![vec![0u8], vec![1u8]]; 2]);
    wait_finished(&server);
}

#[test]
fn a_rank_late_to_a_round_times_out_with_its_name() {
    let server = local();
    let uid = server.uid();
    let addr = server.addr();
    let errs = ranks(3, move |r| {
        let mut c = Client::connect(&uid, r, 3, Duration::from_secs(1)).unwrap();
        c.allgather("a", b"x").unwrap();
        if r == 2 {
            thread::sleep(Duration::from_millis(2500));
        }
        let e = c.allgather("b", b"y").unwrap_err();
        // Broken afterwards, with the reason.
        let again = c.allgather("c", b"z").unwrap_err();
        assert!(again.starts_with("unique-id bootstrap: allgather('c') after an earlier failure: "), "{again}");
        e
    });
    let want = format!("unique-id bootstrap: timed out after 1 s waiting for rank 2 of 3 to call allgather('b') (round 1) at {addr}");
    // Rank 2 too: the server's message waits in its socket.
    assert_eq!(errs, vec![want.clone(), want.clone(), want]);
    wait_finished(&server);
}

#[test]
fn different_keys_in_a_round_fail_the_job() {
    let server = local();
    let uid = server.uid();
    let errs = ranks(2, move |r| {
        let mut c = Client::connect(&uid, r, 2, Duration::from_secs(10)).unwrap();
        if r == 1 {
            thread::sleep(Duration::from_millis(200));
        }
        c.allgather(if r == 0 { "a" } else { "b" }, b"v").unwrap_err()
    });
    let want = "unique-id bootstrap: rank 1 called allgather('b') while rank 0 called allgather('a') (round 0): every PE must make the same sequence of calls";
    assert_eq!(errs, vec![want.to_string(), want.to_string()]);
}

#[test]
fn a_rank_that_left_fails_the_next_round() {
    let server = local();
    let uid = server.uid();
    let errs = ranks(2, move |r| {
        let mut c = Client::connect(&uid, r, 2, Duration::from_secs(10)).unwrap();
        c.allgather("a", b"").unwrap();
        if r == 1 {
            drop(c); // as a PE that exits: its Drop says goodbye
            return String::new();
        }
        thread::sleep(Duration::from_millis(300));
        c.allgather("b", b"").unwrap_err()
    });
    assert_eq!(
        errs[0],
        "unique-id bootstrap: rank 1 closed the bootstrap before round 1 (allgather('b')), which rank 0 has reached: every PE must make the same sequence of calls"
    );
}

#[test]
fn oversized_values_are_refused_locally() {
    let server = local();
    let uid = server.uid();
    let mut c = Client::connect(&uid, 0, 1, Duration::from_secs(5)).unwrap();
    let e = c.allgather("big", &vec![0u8; MAX_VALUE + 1]).unwrap_err();
    assert_eq!(e, "unique-id bootstrap: allgather('big') value of 1048577 bytes is larger than 1048576");
    assert!(c.allgather(&"k".repeat(256), b"").unwrap_err().contains("key of 256 bytes is longer than 255"));
    // Refused before sending: the connection still works, up to the largest value.
    let got = c.allgather("max", &vec![7u8; MAX_VALUE]).unwrap();
    assert_eq!(got, vec![vec![7u8; MAX_VALUE]]);
    c.close().unwrap();
    wait_finished(&server);
}

#[test]
fn unreachable_server_fails_within_the_timeout() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let id = UniqueId { key: "a".repeat(32), addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port) };
    let t0 = Instant::now();
    let e = Client::connect(&id.to_bytes(), 0, 2, Duration::from_millis(500)).unwrap_err();
    assert!(e.starts_with(&format!("unique-id bootstrap: cannot connect to 127.0.0.1:{port} within 0.5 s: Connection refused")), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}

#[test]
fn stopping_the_server_ends_waiting_clients() {
    let server = local();
    let uid = server.uid();
    let addr = server.addr();
    let h = thread::spawn(move || Client::connect(&uid, 0, 2, Duration::from_secs(30)).unwrap_err());
    thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    server.stop();
    let e = h.join().unwrap();
    assert_eq!(e, format!("unique-id bootstrap: the server at {addr} closed the connection before all 2 ranks connected"));
    assert!(t0.elapsed() < Duration::from_secs(2));
}

/// `get_uniqueid` and `Server::start` with ISHMEM_BOOTSTRAP_UID_ADDR, in a child process
/// (the variable is set there only, to 127.0.0.1).
#[test]
fn get_uniqueid_listens_where_the_variable_says() {
    let path = module_path!();
    let name = format!("{}::env_child", path.split_once("::").map_or(path, |(_, r)| r));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ADDR_ENV, "127.0.0.1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("env child ok: 127.0.0.1:"), "{text}");
}

#[test]
#[ignore = "run as a child process by get_uniqueid_listens_where_the_variable_says"]
fn env_child() {
    assert_eq!(std::env::var(ADDR_ENV).unwrap(), "127.0.0.1");
    let uid = get_uniqueid().unwrap();
    let id = UniqueId::parse(&uid).unwrap();
    assert_eq!(id.addr.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    let got = ranks(2, move |r| {
        let mut c = Client::connect(&uid, r, 2, Duration::from_secs(10)).unwrap();
        c.allgather("host", format!("pe{r}").as_bytes()).unwrap()
    });
    assert_eq!(got[0], vec![b"pe0".to_vec(), b"pe1".to_vec()]);
    // A second id while the first server is done: the finished one is pruned.
    let uid2 = get_uniqueid().unwrap();
    assert_ne!(UniqueId::parse(&uid2).unwrap().key, id.key);
    let s = Server::start().unwrap();
    assert_eq!(s.addr().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    stop_servers();
    assert!(SERVERS.lock().unwrap().is_empty());
    println!("env child ok: {}", id.addr);
}
