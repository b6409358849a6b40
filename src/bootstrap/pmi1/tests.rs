//! Unit tests of `bootstrap::pmi1`.

use super::*;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::thread::{self, JoinHandle};

/// The server side of a fake hydra.
struct Fake {
    r: BufReader<Box<dyn Read + Send>>,
    w: Box<dyn Write + Send>,
}

impl Fake {
    fn expect(&mut self, want: &str) {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        assert_eq!(line, format!("{want}\n"));
    }
    fn send(&mut self, s: &str) {
        self.w.write_all(s.as_bytes()).unwrap();
        self.w.flush().unwrap();
    }
    fn expect_eof(&mut self) {
        let mut line = String::new();
        assert_eq!(self.r.read_line(&mut line).unwrap(), 0, "got {line:?}");
    }
    fn serve_init(&mut self) {
        self.expect("cmd=init pmi_version=1 pmi_subversion=1");
        self.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
        self.expect("cmd=get_maxes");
        self.send("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n");
        self.expect("cmd=get_my_kvsname");
        self.send("cmd=my_kvsname kvsname=kvs_123_0\n");
    }
}

/// Starts a fake server running `script` on one end of a socketpair and
/// returns the client end's raw fd.
fn fake(script: impl FnOnce(&mut Fake) + Send + 'static) -> (i32, JoinHandle<()>) {
    let (client, server) = UnixStream::pair().unwrap();
    let h = thread::spawn(move || {
        let mut f = Fake { r: BufReader::new(Box::new(server.try_clone().unwrap())), w: Box::new(server) };
        script(&mut f);
    });
    (client.into_raw_fd(), h)
}

fn connect(script: impl FnOnce(&mut Fake) + Send + 'static, rank: usize, size: usize) -> (Pmi1, JoinHandle<()>) {
    let (fd, h) = fake(script);
    (Pmi1::connect_fd(fd, rank, size).unwrap(), h)
}

/// A fake hydra KVS for one client: answers put, barrier and get from a map that starts
/// with `pre` (the other ranks' keys) until the client closes the connection.
fn kvs_server(pre: Vec<(String, String)>) -> impl FnOnce(&mut Fake) + Send + 'static {
    move |s| {
        s.serve_init();
        let mut kv: std::collections::HashMap<String, String> = pre.into_iter().collect();
        loop {
            let mut line = String::new();
            if s.r.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let f: std::collections::HashMap<&str, &str> = line.trim_end().split(' ').filter_map(|p| p.split_once('=')).collect();
            match f["cmd"] {
                "put" => {
                    kv.insert(f["key"].to_string(), f.get("value").unwrap_or(&"").to_string());
                    s.send("cmd=put_result rc=0 msg=success\n");
                }
                "barrier_in" => s.send("cmd=barrier_out\n"),
                "get" if f["key"].starts_with("huge-0-") => s.send("cmd=get_result rc=0 msg=success value=abab\n"),
                "get" => match kv.get(f["key"]) {
                    Some(v) => s.send(&format!("cmd=get_result rc=0 msg=success value={v}\n")),
                    None => s.send(&format!("cmd=get_result rc=-1 msg=key_{}_not_found value=unknown\n", f["key"])),
                },
                c => panic!("unexpected command {c}"),
            }
        }
    }
}

#[test]
fn exchange_carries_binary_values_of_any_length() {
    use crate::bootstrap::Exchange;
    let long: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
    let hex = |v: &[u8]| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let h0 = hex(&long);
    let pre = vec![
        ("x-0".to_string(), format!("3.{}", &h0[..1014])),
        ("x-0-1".to_string(), h0[1014..2028].to_string()),
        ("x-0-2".to_string(), h0[2028..].to_string()),
        ("e-0".to_string(), "1.".to_string()),
        ("bad-0".to_string(), "1.zz".to_string()),
        ("huge-0".to_string(), "100000.ab".to_string()),
    ];
    let (mut p, h) = connect(kvs_server(pre), 1, 2);
    let mine = vec![0u8, 255, 10, 32, b'='];
    let got = Exchange::allgather(&mut p, "x", &mine).unwrap();
    assert_eq!(got, vec![long.clone(), mine.clone()]);
    assert_eq!(Exchange::allgather(&mut p, "e", &[]).unwrap(), vec![Vec::<u8>::new(), Vec::new()]);
    let e = Exchange::allgather(&mut p, "bad", &long).unwrap_err();
    assert!(e.contains("rank 0's value of 'bad' is malformed"), "{e}");
    // issue 30: a process manager that answers every part kept a PE in init for ever
    let e = Exchange::allgather(&mut p, "huge", &mine).unwrap_err();
    assert_eq!(e, "PMI-1: rank 0's value of 'huge' claims 100000 parts; a value of at most 1048576 bytes has 1 to 2069");
    drop(p);
    h.join().unwrap();
}

#[test]
fn long_replies_are_clipped_in_errors() {
    let line = format!("cmd=get_result {}", "y".repeat(200_000));
    let e = parse_reply(&line, "get").err().unwrap();
    assert!(e.len() < 500, "{} bytes", e.len());
    assert!(e.ends_with("... (200015 bytes in all)'"), "{e}");
}

#[test]
fn happy_path() {
    let (mut p, h) = connect(
        |s| {
            s.serve_init();
            s.expect("cmd=put kvsname=kvs_123_0 key=addr-1 value=tcp://x:1");
            s.send("cmd=put_result rc=0 msg=success\n");
            s.expect("cmd=barrier_in");
            s.send("cmd=barrier_out\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=addr-0");
            s.send("cmd=get_result rc=0 msg=success value=a0\n");
            s.expect("cmd=put kvsname=kvs_123_0 key=ag-1 value=");
            s.send("cmd=put_result rc=0 msg=success\n");
            s.expect("cmd=barrier_in");
            s.send("cmd=barrier_out\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=ag-0");
            s.send("cmd=get_result rc=0 msg=success value=zero\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=ag-2");
            s.send("cmd=get_result rc=0 msg=success value=two\n");
            s.expect("cmd=finalize");
            s.send("cmd=finalize_ack\n");
            s.expect_eof();
        },
        1,
        3,
    );
    assert_eq!((p.rank(), p.size(), p.kvsname()), (1, 3, "kvs_123_0"));
    assert_eq!((p.max_key_len(), p.max_value_len()), (63, 1023));
    p.put("addr-1", "tcp://x:1").unwrap();
    p.barrier().unwrap();
    assert_eq!(p.get("addr-0").unwrap(), "a0");
    assert_eq!(p.allgather("ag", "").unwrap(), vec!["zero", "", "two"]);
    p.finalize().unwrap();
    p.finalize().unwrap();
    let e = p.put("k", "v").unwrap_err();
    assert!(e.starts_with("PMI-1: ") && e.contains("after finalize"), "{e}");
    drop(p);
    h.join().unwrap();
}

#[test]
fn reply_split_across_writes() {
    let (mut p, h) = connect(
        |s| {
            s.serve_init();
            s.expect("cmd=get kvsname=kvs_123_0 key=k");
            s.send("cmd=get_result rc=0 ms");
            thread::sleep(Duration::from_millis(50));
            s.send("g=success val");
            thread::sleep(Duration::from_millis(50));
            s.send("ue=hello\n");
            s.expect_eof();
        },
        0,
        1,
    );
    assert_eq!(p.get("k").unwrap(), "hello");
    drop(p);
    h.join().unwrap();
}

#[test]
fn two_replies_in_one_write() {
    let (mut p, h) = connect(
        |s| {
            s.expect("cmd=init pmi_version=1 pmi_subversion=1");
            s.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\ncmd=maxes kvsname_max=256 keylen_max=16 vallen_max=32\n");
            s.expect("cmd=get_maxes");
            s.expect("cmd=get_my_kvsname");
            // Extra keys, CRLF, a blank line and key order are tolerated.
            s.send("\ncmd=my_kvsname extra=1 kvsname=kvs_9\r\n");
            s.expect("cmd=barrier_in");
            s.send("cmd=barrier_out\ncmd=get_result rc=0 msg=success value=a=b x=y\n");
            s.expect("cmd=get kvsname=kvs_9 key=k");
            s.expect_eof();
        },
        0,
        2,
    );
    assert_eq!(p.kvsname(), "kvs_9");
    assert_eq!((p.max_key_len(), p.max_value_len()), (15, 31));
    p.barrier().unwrap();
    assert_eq!(p.get("k").unwrap(), "a=b");
    drop(p);
    h.join().unwrap();
}

#[test]
fn missing_key_is_an_error_and_connection_survives() {
    let (mut p, h) = connect(
        |s| {
            s.serve_init();
            s.expect("cmd=get kvsname=kvs_123_0 key=nope");
            s.send("cmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=yes");
            s.send("cmd=get_result rc=0 msg=success value=1\n");
            s.expect("cmd=put kvsname=kvs_123_0 key=x value=y");
            s.send("cmd=put_result rc=-1 msg=full\n");
            s.expect_eof();
        },
        0,
        1,
    );
    let e = p.get("nope").unwrap_err();
    assert!(e.starts_with("PMI-1: get of key 'nope' failed: rc=-1"), "{e}");
    assert!(e.contains("key_nope_not_found"), "{e}");
    assert_eq!(p.get("yes").unwrap(), "1");
    let e = p.put("x", "y").unwrap_err();
    assert_eq!(e, "PMI-1: put of key 'x' failed: rc=-1 msg=full");
    drop(p);
    h.join().unwrap();
}

#[test]
fn malformed_replies_give_clear_errors() {
    let (mut p, h) = connect(
        |s| {
            s.serve_init();
            s.expect("cmd=get kvsname=kvs_123_0 key=a");
            s.send("garbage here\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=b");
            s.send("cmd=put_result rc=0\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=c");
            s.send("cmd=get_result rc=0 msg=success\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=d");
            s.send("rc=0 value=1\n");
            s.expect("cmd=get kvsname=kvs_123_0 key=e");
            s.w.write_all(b"cmd=get_result rc=0 \xffvalue=1\n").unwrap();
            s.expect_eof();
        },
        0,
        1,
    );
    let e = p.get("a").unwrap_err();
    assert_eq!(e, "PMI-1: malformed reply to get: 'garbage' is not key=value in 'garbage here'");
    let e = p.get("b").unwrap_err();
    assert!(e.starts_with("PMI-1: unexpected reply to get: expected cmd=get_result, got cmd=put_result"), "{e}");
    let e = p.get("c").unwrap_err();
    assert!(e.starts_with("PMI-1: malformed reply to get of key 'c': no value"), "{e}");
    let e = p.get("d").unwrap_err();
    assert!(e.starts_with("PMI-1: malformed reply to get: no cmd key"), "{e}");
    let e = p.get("e").unwrap_err();
    assert!(e.starts_with("PMI-1: malformed reply to get: not valid UTF-8"), "{e}");
    drop(p);
    h.join().unwrap();
}

#[test]
fn bad_keys_and_values_are_rejected_without_sending() {
    let (mut p, h) = connect(
        |s| {
            s.serve_init();
            // Nothing may reach the server before this.
            s.expect("cmd=finalize");
            s.send("cmd=finalize_ack\n");
            s.expect_eof();
        },
        0,
        11,
    );
    let long_key = "k".repeat(64);
    let ok_key = "k".repeat(63);
    let long_val = "v".repeat(1024);
    let cases: Vec<(&str, &str, &str)> = vec![
        ("", "v", "empty key"),
        ("a b", "v", "contains byte 0x20"),
        ("a=b", "v", "contains byte 0x3d"),
        ("a\nb", "v", "contains byte 0x0a"),
        ("é", "v", "contains byte 0xc3"),
        (&long_key, "v", "is 64 bytes, longer than the process manager's limit of 63 (keylen_max=64)"),
        ("k", "a b", "value contains byte 0x20"),
        ("k", "a=b", "value contains byte 0x3d"),
        ("k", "x\n", "value contains byte 0x0a"),
        ("k", &long_val, "value is 1024 bytes, longer than the process manager's limit of 1023 (vallen_max=1024)"),
    ];
    for (k, v, want) in cases {
        let e = p.put(k, v).unwrap_err();
        assert!(e.starts_with("PMI-1: put") && e.contains(want), "{k:?} {v:?}: {e}");
    }
    assert!(p.get(&long_key).unwrap_err().contains("keylen_max"));
    assert!(p.get("a b").unwrap_err().starts_with("PMI-1: get: key"));
    // allgather checks the longest key of any rank ("<prefix>-10").
    let e = p.allgather(&ok_key[..61], "v").unwrap_err();
    assert!(e.starts_with("PMI-1: allgather: key") && e.contains("is 64 bytes"), "{e}");
    assert!(p.allgather("x", "bad value").unwrap_err().contains("value contains"));
    p.finalize().unwrap();
    drop(p);
    h.join().unwrap();
}

#[test]
fn eof_and_broken_connection() {
    let (mut p, h) = connect(
        |s| {
            s.serve_init();
            s.expect("cmd=barrier_in");
            s.send("cmd=barr");
        },
        0,
        1,
    );
    let e = p.barrier().unwrap_err();
    assert_eq!(e, "PMI-1: barrier: connection closed by the process manager while waiting for a reply");
    h.join().unwrap();
    let e = p.get("k").unwrap_err();
    assert!(e.starts_with("PMI-1: get: connection unusable"), "{e}");
    // Writing to the closed peer must give EPIPE, not SIGPIPE.
    p.broken = None;
    let e = p.put("k", "v").unwrap_err();
    assert!(e.starts_with("PMI-1: put: sending to the process manager failed"), "{e}");
    p.abort(1, "test abort on a dead connection");
    assert!(p.finalize().is_err());
}

#[test]
fn abort_sends_line_and_does_not_wait() {
    // The fake server keeps the connection open and silent until the
    // test says abort() has returned: an abort that waited for a reply
    // would leave the server's wait to expire, which the flag reports.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let returned_first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = returned_first.clone();
    let (mut p, h) = connect(
        move |s| {
            s.serve_init();
            s.expect("cmd=abort exitcode=3");
            let ok = done_rx.recv_timeout(Duration::from_secs(30)).is_ok();
            flag.store(ok, std::sync::atomic::Ordering::SeqCst);
        },
        0,
        1,
    );
    p.abort(3, "unit test abort");
    let _ = done_tx.send(());
    h.join().unwrap();
    assert!(returned_first.load(std::sync::atomic::Ordering::SeqCst), "abort() waited for the PMI server");
    assert!(p.barrier().unwrap_err().contains("aborted"));
}

#[test]
fn init_failures() {
    let (fd, h) = fake(|s| {
        s.expect("cmd=init pmi_version=1 pmi_subversion=1");
        s.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=go_away\n");
        s.expect_eof();
    });
    let e = Pmi1::connect_fd(fd, 0, 1).unwrap_err();
    assert_eq!(e, "PMI-1: init failed: rc=-1 msg=go_away");
    h.join().unwrap();

    let (fd, h) = fake(|s| {
        s.expect("cmd=init pmi_version=1 pmi_subversion=1");
        s.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
        s.expect("cmd=get_maxes");
        s.send("cmd=maxes kvsname_max=256 keylen_max=lots vallen_max=1024\n");
        s.expect_eof();
    });
    let e = Pmi1::connect_fd(fd, 0, 1).unwrap_err();
    assert!(e.contains("keylen_max=lots is not a valid number"), "{e}");
    h.join().unwrap();

    let (fd, h) = fake(|s| {
        s.expect("cmd=init pmi_version=1 pmi_subversion=1");
    });
    let e = Pmi1::connect_fd(fd, 0, 1).unwrap_err();
    assert!(e.starts_with("PMI-1: init: connection closed"), "{e}");
    h.join().unwrap();
}

#[test]
fn bad_arguments_leave_fd_alone() {
    let f = File::open("/proc/self/exe").unwrap();
    let e = Pmi1::connect_fd(f.as_raw_fd(), 0, 1).unwrap_err();
    assert!(e.ends_with("is not a socket"), "{e}");
    assert!(f.metadata().is_ok());
    let (a, _b) = UnixStream::pair().unwrap();
    let e = Pmi1::connect_fd(a.as_raw_fd(), 2, 2).unwrap_err();
    assert_eq!(e, "PMI-1: rank 2 is out of range for job size 2");
    assert!(Pmi1::connect_fd(a.as_raw_fd(), 0, 0).is_err());
    assert!(a.peer_addr().is_ok());
    let e = Pmi1::connect_fd(-1, 0, 1).unwrap_err();
    assert!(e.starts_with("PMI-1: PMI_FD -1"), "{e}");
    let e = Pmi1::connect_fd(1_000_000, 0, 1).unwrap_err();
    assert!(e.contains("not an open file descriptor"), "{e}");
}

fn vars(list: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let list: Vec<(String, String)> = list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| list.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v))
}

#[test]
fn environment_parsing() {
    assert!(Pmi1::from_vars(vars(&[])).unwrap().is_none());
    assert!(Pmi1::from_vars(vars(&[("PMI_RANK", "0"), ("PMI_SIZE", "1")])).unwrap().is_none());
    let e = Pmi1::from_vars(vars(&[("PMI_FD", "5"), ("PMI_SIZE", "1")])).unwrap_err();
    assert_eq!(e, "PMI-1: PMI_FD is set but PMI_RANK is missing");
    let e = Pmi1::from_vars(vars(&[("PMI_FD", "x"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")])).unwrap_err();
    assert_eq!(e, "PMI-1: PMI_FD=\"x\" is not a valid non-negative number");
    let e = Pmi1::from_vars(vars(&[("PMI_FD", "5"), ("PMI_RANK", "-1"), ("PMI_SIZE", "1")])).unwrap_err();
    assert!(e.starts_with("PMI-1: PMI_RANK=\"-1\""), "{e}");
    let e = Pmi1::from_vars(vars(&[("PMI_PORT", "localhost:1")])).unwrap_err();
    assert!(e.contains("without PMI_ID"), "{e}");

    let (fd, h) = fake(|s| {
        s.serve_init();
        s.expect_eof();
    });
    let fd = fd.to_string();
    let p = Pmi1::from_vars(vars(&[("PMI_FD", &fd), ("PMI_RANK", "2"), ("PMI_SIZE", "4")])).unwrap().unwrap();
    assert_eq!((p.rank(), p.size(), p.kvsname()), (2, 4, "kvs_123_0"));
    drop(p);
    h.join().unwrap();
}

#[test]
fn pmi_port_handshake() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let h = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut s = Fake { r: BufReader::new(Box::new(sock.try_clone().unwrap())), w: Box::new(sock) };
        s.expect("cmd=initack pmiid=7");
        s.send("cmd=initack\ncmd=set size=8\n");
        s.send("cmd=set rank=7\ncmd=set debug=0\n");
        s.serve_init();
        s.expect("cmd=finalize");
        s.send("cmd=finalize_ack\n");
        s.expect_eof();
    });
    let mut p = Pmi1::from_vars(vars(&[("PMI_PORT", &addr), ("PMI_ID", "7")])).unwrap().unwrap();
    assert_eq!((p.rank(), p.size(), p.kvsname()), (7, 8, "kvs_123_0"));
    p.finalize().unwrap();
    drop(p);
    h.join().unwrap();

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let h = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut s = Fake { r: BufReader::new(Box::new(sock.try_clone().unwrap())), w: Box::new(sock) };
        s.expect("cmd=initack pmiid=0");
        s.send("cmd=initack\ncmd=set size=2\ncmd=set rank=5\ncmd=set debug=0\n");
        s.expect_eof();
    });
    let e = Pmi1::from_vars(vars(&[("PMI_PORT", &addr), ("PMI_ID", "0")])).unwrap_err();
    assert_eq!(e, "PMI-1: rank 5 is out of range for job size 2");
    h.join().unwrap();
}
