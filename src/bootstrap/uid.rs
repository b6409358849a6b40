//! Unique-id bootstrap: a small TCP rendezvous whose address travels inside the 128-byte
//! `ishmemx_uniqueid_t` (as NVSHMEM's UID bootstrap does), so that PEs started by any framework
//! (MPI, torch.distributed, ...) exchange their init data without a launcher and without
//! shared memory.
//!
//! Owns: the id's byte layout, the server thread started by `ishmemx_get_uniqueid` (in the
//! process that makes the id), the clients' connections to it, and the wire protocol between
//! them. Must not touch: the environment beyond `ISHMEM_BOOTSTRAP_UID_ADDR`, shared memory,
//! the transports.
//!
//! # The id (`ISHMUID2`, 128 bytes)
//!
//! | bytes    | what |
//! |----------|------|
//! | 0..8     | magic `ISHMUID2` (the one-node format of earlier releases was `ISHMUID1`) |
//! | 8..40    | job key: 32 lowercase hex digits (16 random bytes); names the job's files |
//! | 40..56   | server IP address as IPv6, network order (IPv4 as `::ffff:a.b.c.d`) |
//! | 56..58   | server TCP port, big-endian |
//! | 58..62   | FNV-1a (32 bits) of bytes 0..58, big-endian |
//! | 62..128  | zero |
//!
//! # The protocol
//!
//! Every message is a frame: `u32` big-endian length of what follows, a type byte, a payload.
//! A client connects (retrying until its timeout), sends HELLO (magic, protocol version, job
//! key, rank, nranks, its timeout in ms) and waits for WELCOME, which the server sends to every
//! rank once all `nranks` are connected. Then each `allgather` sends ROUND (round number, key,
//! value) and receives TABLE (every rank's value, by rank) once all ranks contributed to that
//! round; BYE ends a client's part. The server answers any failure with ERROR (one line of
//! text), which the clients return as their error:
//! * a connection whose key or magic is wrong is refused alone (a stray client), and so is a
//!   hello for a rank already connected or after every rank connected (issue 30);
//! * before its hello a connection may send one frame of a hello's size, within 5 s, and at
//!   most 64 such connections are kept (the oldest is pushed out; a client whose connection
//!   closes before it is welcomed connects again);
//! * ranks that disagree on nranks, a rank out of range, ranks calling
//!   different keys in one round, or a rank that leaves while others wait fail the whole job,
//!   and every connected rank gets the message;
//! * when the earliest waiting client's timeout expires, the server names the ranks missing
//!   (`timed out after 60 s waiting for ranks 2, 3 of 4 to connect to 10.0.0.5:41234`).
//!
//! Clients wait their timeout plus a grace of 2 s for the server's word, so the server's
//! message (which names the missing ranks) normally arrives first. Values are at most 1 MiB,
//! keys 255 bytes, jobs 2^20 ranks; a larger frame is refused before it is read. The server
//! is one thread polling nonblocking sockets; it never blocks on one peer, and ends when every
//! rank has left (BYE or closed), after a failure, or when its `Server` is dropped.
//!
//! All errors are one-line `String`s starting with `"unique-id bootstrap: "`.

use super::{random_hex, Exchange, UID_BYTES};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Magic at the start of an id of this format.
pub const MAGIC: &[u8; 8] = b"ISHMUID2";
const OLD_MAGIC: &[u8; 8] = b"ISHMUID1";
/// Where the server listens: `ip` or `ip:port` (IPv6 as `[addr]:port`).
pub const ADDR_ENV: &str = "ISHMEM_BOOTSTRAP_UID_ADDR";
/// Hex digits of the job key.
pub const KEY_LEN: usize = 32;
/// Longest allgather key, in bytes.
pub const MAX_KEY: usize = 255;
/// Largest allgather value, in bytes.
pub const MAX_VALUE: usize = 1 << 20;
/// Largest job.
pub const MAX_RANKS: usize = 1 << 20;

const VERSION: u32 = 2;
const OFF_KEY: usize = 8;
const OFF_IP: usize = 40;
const OFF_PORT: usize = 56;
const OFF_SUM: usize = 58;
const OFF_END: usize = 62;

const T_HELLO: u8 = 1;
const T_ROUND: u8 = 2;
const T_BYE: u8 = 3;
const T_WELCOME: u8 = 0x81;
const T_TABLE: u8 = 0x82;
const T_ERROR: u8 = 0x83;
/// magic, version, key, rank, nranks, timeout in ms.
const HELLO_LEN: usize = 8 + 4 + KEY_LEN + 4 + 4 + 8;
/// Largest frame a client may send (type byte included): a ROUND with the largest key and value.
const MAX_CLIENT_FRAME: usize = 1 + 4 + 2 + MAX_KEY + MAX_VALUE;
const MAX_ERROR: usize = 4096;

/// How long a new connection may take to say HELLO.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections that have not said hello yet, at most: a new one beyond it pushes out the oldest
/// (issue 30: a flood of idle connections must not lock the ranks out nor fill the memory).
const MAX_PENDING: usize = 64;
/// How much longer than its timeout a client waits for the server's word.
const GRACE: Duration = Duration::from_secs(2);
/// How long a failed server tries to hand its message to the clients.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a closing client tries to send BYE.
const BYE_TIMEOUT: Duration = Duration::from_secs(1);

const PREFIX: &str = "unique-id bootstrap";

/// `2 s`, `0.5 s`.
fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `rank 1 of 2`, `ranks 2, 3 of 4`.
fn rank_list(ranks: &[usize], n: usize) -> String {
    let shown: Vec<String> = ranks.iter().take(16).map(|r| r.to_string()).collect();
    let more = if ranks.len() > 16 { format!(" and {} more", ranks.len() - 16) } else { String::new() };
    let word = if ranks.len() == 1 { "rank" } else { "ranks" };
    format!("{word} {}{more} of {n}", shown.join(", "))
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

// ---------------------------------------------------------------------------------------------
// The id.

/// What an id holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueId {
    /// The job key, 32 lowercase hex digits.
    pub key: String,
    /// The server's address.
    pub addr: SocketAddr,
}

impl UniqueId {
    /// The 128 bytes of `ishmemx_uniqueid_t` (layout in the module comment).
    pub fn to_bytes(&self) -> [u8; UID_BYTES] {
        let mut b = [0u8; UID_BYTES];
        b[..OFF_KEY].copy_from_slice(MAGIC);
        let key = self.key.as_bytes();
        let n = key.len().min(KEY_LEN);
        b[OFF_KEY..OFF_KEY + n].copy_from_slice(&key[..n]);
        let ip = match self.addr.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        b[OFF_IP..OFF_PORT].copy_from_slice(&ip.octets());
        b[OFF_PORT..OFF_SUM].copy_from_slice(&self.addr.port().to_be_bytes());
        let sum = fnv1a(&b[..OFF_SUM]);
        b[OFF_SUM..OFF_END].copy_from_slice(&sum.to_be_bytes());
        b
    }

    /// Reads an id, refusing anything `to_bytes` did not make.
    pub fn parse(uid: &[u8; UID_BYTES]) -> Result<UniqueId, String> {
        if &uid[..8] == OLD_MAGIC {
            return Err(format!(
                "{PREFIX}: the unique id has the format ISHMUID1 of an older libishmem; every PE and the process that called ishmemx_get_uniqueid must use the same library"
            ));
        }
        if &uid[..8] != MAGIC {
            return Err(format!(
                "{PREFIX}: the unique id was not made by ishmemx_get_uniqueid (bad magic \"{}\")",
                uid[..8].escape_ascii()
            ));
        }
        let sum = u32::from_be_bytes([uid[OFF_SUM], uid[OFF_SUM + 1], uid[OFF_SUM + 2], uid[OFF_SUM + 3]]);
        if sum != fnv1a(&uid[..OFF_SUM]) {
            return Err(format!(
                "{PREFIX}: the unique id is corrupt (checksum mismatch): pass all {UID_BYTES} bytes of ishmemx_uniqueid_t unchanged"
            ));
        }
        if uid[OFF_END..].iter().any(|&b| b != 0) {
            return Err(format!("{PREFIX}: the unique id is corrupt (bytes {OFF_END}..{UID_BYTES} are not zero)"));
        }
        let key = &uid[OFF_KEY..OFF_IP];
        if !key.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
            return Err(format!("{PREFIX}: the unique id is corrupt (its job key is not hex)"));
        }
        let mut ip = [0u8; 16];
        ip.copy_from_slice(&uid[OFF_IP..OFF_PORT]);
        let ip = Ipv6Addr::from(ip);
        let ip = ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4);
        let port = u16::from_be_bytes([uid[OFF_PORT], uid[OFF_PORT + 1]]);
        if port == 0 || ip.is_unspecified() {
            return Err(format!("{PREFIX}: the unique id is corrupt (server address {ip}:{port})"));
        }
        Ok(UniqueId { key: String::from_utf8_lossy(key).into_owned(), addr: SocketAddr::new(ip, port) })
    }
}

// ---------------------------------------------------------------------------------------------
// Where to listen.

/// The first IPv4 address of an interface that is up and not loopback.
fn first_ipv4() -> Option<Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head into `list`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned, valid until freeifaddrs.
        let ifa = unsafe { &*cur };
        let up = ifa.ifa_flags & libc::IFF_UP as libc::c_uint != 0;
        let lo = ifa.ifa_flags & libc::IFF_LOOPBACK as libc::c_uint != 0;
        // SAFETY: ifa_addr, when not NULL, points to a sockaddr of the node.
        if up && !lo && !ifa.ifa_addr.is_null() && i32::from(unsafe { (*ifa.ifa_addr).sa_family }) == libc::AF_INET {
            // SAFETY: an AF_INET address is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            if !ip.is_loopback() && !ip.is_unspecified() {
                found = Some(ip);
                break;
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: list came from getifaddrs and is freed once; no reference into it survives.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// Where the server listens: `spec` (the value of `ISHMEM_BOOTSTRAP_UID_ADDR`: `ip` or
/// `ip:port`) when set, else the host's first non-loopback IPv4 address, else 127.0.0.1;
/// port 0 means any free port.
pub fn listen_addr(spec: Option<&str>) -> Result<SocketAddr, String> {
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let Some(s) = spec else {
        return Ok(SocketAddr::new(IpAddr::V4(first_ipv4().unwrap_or(Ipv4Addr::LOCALHOST)), 0));
    };
    let addr = s
        .parse::<SocketAddr>()
        .or_else(|_| s.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("{PREFIX}: {ADDR_ENV}={s:?} is not ip[:port] (e.g. 10.0.0.5, 10.0.0.5:7000 or [fd00::5]:7000)"))?;
    if addr.ip().is_unspecified() {
        return Err(format!("{PREFIX}: {ADDR_ENV}={s:?} must be an address the other PEs can connect to, not a wildcard"));
    }
    Ok(addr)
}

// ---------------------------------------------------------------------------------------------
// Frames.

fn frame(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(5 + payload.len());
    f.extend_from_slice(&((payload.len() + 1) as u32).to_be_bytes());
    f.push(ty);
    f.extend_from_slice(payload);
    f
}

fn error_frame(msg: &str) -> Vec<u8> {
    let mut end = msg.len().min(MAX_ERROR);
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    frame(T_ERROR, &msg.as_bytes()[..end])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// HELLO's payload.
fn hello(key: &str, rank: usize, nranks: usize, timeout: Duration) -> Vec<u8> {
    let mut p = Vec::with_capacity(HELLO_LEN);
    p.extend_from_slice(MAGIC);
    p.extend_from_slice(&VERSION.to_be_bytes());
    let mut k = [b'0'; KEY_LEN];
    let n = key.len().min(KEY_LEN);
    k[..n].copy_from_slice(&key.as_bytes()[..n]);
    p.extend_from_slice(&k);
    p.extend_from_slice(&(rank as u32).to_be_bytes());
    p.extend_from_slice(&(nranks as u32).to_be_bytes());
    p.extend_from_slice(&(timeout.as_millis().min(u64::MAX as u128) as u64).to_be_bytes());
    p
}

// ---------------------------------------------------------------------------------------------
// The client.

/// A PE's connection to the job's server, ready for `allgather` once `connect` returned.
#[derive(Debug)]
pub struct Client {
    sock: TcpStream,
    id: UniqueId,
    rank: usize,
    nranks: usize,
    timeout: Duration,
    round: u32,
    broken: Option<String>,
    closed: bool,
}

enum ReadErr {
    Eof,
    Timeout,
    Io(io::Error),
    TooLong(usize),
}

/// Reads exactly `buf.len()` bytes by `deadline`.
fn read_full(sock: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), ReadErr> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadErr::Timeout);
        }
        sock.set_read_timeout(Some(left)).map_err(ReadErr::Io)?;
        match sock.read(&mut buf[got..]) {
            Ok(0) => return Err(ReadErr::Eof),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Err(ReadErr::Timeout),
            Err(e) => return Err(ReadErr::Io(e)),
        }
    }
    Ok(())
}

/// Reads one frame (type, payload) of at most `max` bytes by `deadline`.
fn read_frame(sock: &mut TcpStream, max: usize, deadline: Instant) -> Result<(u8, Vec<u8>), ReadErr> {
    let mut len = [0u8; 4];
    read_full(sock, &mut len, deadline)?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > max {
        return Err(ReadErr::TooLong(len));
    }
    let mut body = vec![0u8; len];
    read_full(sock, &mut body, deadline)?;
    let ty = body[0];
    body.remove(0);
    Ok((ty, body))
}

fn write_by(sock: &mut TcpStream, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    sock.set_write_timeout(Some(left))?;
    sock.write_all(bytes)
}

impl Client {
    /// Connects rank `rank` of a job of `nranks` to the server named in `uid` (retrying until
    /// `timeout`), and returns once every rank is connected. Fails with the server's message
    /// when the job is inconsistent (nranks differ, rank twice, ...) or ranks are missing when
    /// the timeout expires.
    pub fn connect(uid: &[u8; UID_BYTES], rank: usize, nranks: usize, timeout: Duration) -> Result<Client, String> {
        let id = UniqueId::parse(uid)?;
        if nranks == 0 || nranks > MAX_RANKS {
            return Err(format!("{PREFIX}: nranks {nranks} is not in 1..={MAX_RANKS}"));
        }
        if rank >= nranks {
            return Err(format!("{PREFIX}: rank {rank} is not in a job of {nranks} PEs"));
        }
        let t0 = Instant::now();
        let deadline = t0.checked_add(timeout).ok_or_else(|| format!("{PREFIX}: timeout {} is too long", secs(timeout)))?;
        let server_deadline = deadline + GRACE;
        // A connection the server closed before it read the hello (pushed out by a flood of
        // idle connections, issue 30) is made again, until the timeout.
        let mut closed: Option<String> = None;
        let sock = loop {
            let mut sock = loop {
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(10));
                match TcpStream::connect_timeout(&id.addr, left) {
                    Ok(s) => break s,
                    Err(e) => {
                        if let Some(why) = closed {
                            // It closed our connection and listens no more: it has ended.
                            return Err(why);
                        }
                        if Instant::now() >= deadline {
                            return Err(format!(
                                "{PREFIX}: cannot connect to {} within {}: {e} (the server lives in the process that called ishmemx_get_uniqueid until its job ends: is it running, and is {} reachable from here?)",
                                id.addr,
                                secs(timeout),
                                id.addr
                            ));
                        }
                        std::thread::sleep(Duration::from_millis(50).min(deadline.saturating_duration_since(Instant::now())));
                    }
                }
            };
            let _ = sock.set_nodelay(true);
            let mut again = |e: &str| -> Result<(), String> {
                if Instant::now() >= deadline {
                    return Err(e.to_string());
                }
                closed = Some(e.to_string());
                std::thread::sleep(Duration::from_millis(20));
                Ok(())
            };
            if let Err(e) = write_by(&mut sock, &frame(T_HELLO, &hello(&id.key, rank, nranks, timeout)), server_deadline) {
                again(&format!("{PREFIX}: cannot send to the server at {}: {e}", id.addr))?;
                continue;
            }
            match read_frame(&mut sock, 1 + MAX_ERROR, server_deadline) {
                Ok((T_WELCOME, p)) if p.len() == 4 && be32(&p) as usize == nranks => break sock,
                Ok((T_ERROR, p)) => return Err(String::from_utf8_lossy(&p).into_owned()),
                Ok((ty, _)) => return Err(format!("{PREFIX}: unexpected message type {ty} from the server at {}", id.addr)),
                Err(ReadErr::Timeout) => {
                    return Err(format!(
                        "{PREFIX}: timed out after {} waiting for all {nranks} ranks to connect to {} (no word from the server)",
                        secs(timeout),
                        id.addr
                    ))
                }
                Err(ReadErr::Eof) => {
                    again(&format!("{PREFIX}: the server at {} closed the connection before all {nranks} ranks connected", id.addr))?
                }
                Err(ReadErr::Io(e)) => again(&format!("{PREFIX}: reading from the server at {} failed: {e}", id.addr))?,
                Err(ReadErr::TooLong(n)) => {
                    return Err(format!("{PREFIX}: the server at {} sent a {n}-byte message while connecting", id.addr))
                }
            }
        };
        Ok(Client { sock, id, rank, nranks, timeout, round: 0, broken: None, closed: false })
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// The job key (32 hex digits), the same on every rank and in the server.
    pub fn key(&self) -> &str {
        &self.id.key
    }

    /// The server's address.
    pub fn server_addr(&self) -> SocketAddr {
        self.id.addr
    }

    /// Ends this rank's part (BYE); the server ends when every rank has closed.
    pub fn close(mut self) -> Result<(), String> {
        self.bye()
    }

    fn bye(&mut self) -> Result<(), String> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let r = write_by(&mut self.sock, &frame(T_BYE, &[]), Instant::now() + BYE_TIMEOUT);
        let _ = self.sock.shutdown(std::net::Shutdown::Write);
        r.map_err(|e| format!("{PREFIX}: cannot say goodbye to the server at {}: {e}", self.id.addr))
    }

    fn exchange(&mut self, key: &str, value: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let addr = self.id.addr;
        let round = self.round;
        let mut p = Vec::with_capacity(6 + key.len() + value.len());
        p.extend_from_slice(&round.to_be_bytes());
        p.extend_from_slice(&(key.len() as u16).to_be_bytes());
        p.extend_from_slice(key.as_bytes());
        p.extend_from_slice(value);
        let deadline = Instant::now() + self.timeout + GRACE;
        write_by(&mut self.sock, &frame(T_ROUND, &p), deadline)
            .map_err(|e| format!("{PREFIX}: sending allgather('{key}') to the server at {addr} failed: {e}"))?;
        let max = (9 + self.nranks as u64 * (4 + MAX_VALUE as u64)).min(u32::MAX as u64) as usize;
        let (ty, t) = match read_frame(&mut self.sock, max, deadline) {
            Ok(f) => f,
            Err(ReadErr::Timeout) => {
                return Err(format!(
                    "{PREFIX}: timed out after {} waiting for the server at {addr} to answer allgather('{key}') (round {round})",
                    secs(self.timeout)
                ))
            }
            Err(ReadErr::Eof) => {
                return Err(format!(
                    "{PREFIX}: the server at {addr} closed the connection during allgather('{key}') (round {round}): did the process that called ishmemx_get_uniqueid exit?"
                ))
            }
            Err(ReadErr::Io(e)) => return Err(format!("{PREFIX}: reading allgather('{key}') from the server at {addr} failed: {e}")),
            Err(ReadErr::TooLong(n)) => return Err(format!("{PREFIX}: the server at {addr} sent a {n}-byte message, more than a table of {} ranks can be", self.nranks)),
        };
        match ty {
            T_TABLE => {}
            T_ERROR => return Err(String::from_utf8_lossy(&t).into_owned()),
            _ => return Err(format!("{PREFIX}: unexpected message type {ty} from the server at {addr}")),
        }
        let bad = || format!("{PREFIX}: malformed table for allgather('{key}') (round {round}) from the server at {addr}");
        if t.len() < 8 || be32(&t[..4]) != round || be32(&t[4..8]) as usize != self.nranks {
            return Err(bad());
        }
        let mut out = Vec::with_capacity(self.nranks);
        let mut pos = 8;
        for _ in 0..self.nranks {
            if t.len() < pos + 4 {
                return Err(bad());
            }
            let n = be32(&t[pos..pos + 4]) as usize;
            pos += 4;
            if t.len() < pos + n {
                return Err(bad());
            }
            out.push(t[pos..pos + n].to_vec());
            pos += n;
        }
        if pos != t.len() {
            return Err(bad());
        }
        self.round += 1;
        Ok(out)
    }
}

impl Exchange for Client {
    fn allgather(&mut self, key: &str, value: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        if let Some(why) = &self.broken {
            return Err(format!("{PREFIX}: allgather('{key}') after an earlier failure: {why}"));
        }
        if self.closed {
            return Err(format!("{PREFIX}: allgather('{key}') after close"));
        }
        if key.len() > MAX_KEY {
            return Err(format!("{PREFIX}: allgather key of {} bytes is longer than {MAX_KEY}", key.len()));
        }
        if value.len() > MAX_VALUE {
            return Err(format!("{PREFIX}: allgather('{key}') value of {} bytes is larger than {MAX_VALUE}", value.len()));
        }
        let r = self.exchange(key, value);
        if let Err(e) = &r {
            self.broken = Some(e.clone());
        }
        r
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.bye();
    }
}

mod serve;
#[cfg(test)]
use serve::*;
pub use serve::{get_uniqueid, stop_servers, Server};

#[cfg(test)]
mod tests;
