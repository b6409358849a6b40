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
// The server.

/// A running rendezvous server; dropping it stops the server thread (the job's ranks must be
/// past their last allgather by then).
pub struct Server {
    id: UniqueId,
    wake: Option<UnixStream>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("id", &self.id).field("finished", &self.is_finished()).finish()
    }
}

impl Server {
    /// Listens where `ISHMEM_BOOTSTRAP_UID_ADDR` says (see `listen_addr`) and starts serving.
    pub fn start() -> Result<Server, String> {
        let spec = std::env::var(ADDR_ENV).ok().filter(|v| v.trim() != "auto");
        Server::start_at(listen_addr(spec.as_deref())?)
    }

    /// Listens on `addr` (port 0: any free port) and starts the server thread.
    pub fn start_at(addr: SocketAddr) -> Result<Server, String> {
        let listener = TcpListener::bind(addr).map_err(|e| format!("{PREFIX}: cannot listen on {addr}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("{PREFIX}: cannot read the listening address: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("{PREFIX}: cannot make the listener nonblocking: {e}"))?;
        let (wake, wake_rx) = UnixStream::pair().map_err(|e| format!("{PREFIX}: cannot create the server's wake-up socket: {e}"))?;
        let id = UniqueId { key: random_hex(KEY_LEN / 2).map_err(|e| format!("{PREFIX}: {e}"))?, addr };
        let state = Serve::new(listener, wake_rx, id.clone());
        let thread = std::thread::Builder::new()
            .name("ishmem-uid-server".into())
            .spawn(move || state.run())
            .map_err(|e| format!("{PREFIX}: cannot start the server thread: {e}"))?;
        Ok(Server { id, wake: Some(wake), thread: Some(thread) })
    }

    /// The 128-byte id that every PE passes to `Client::connect`.
    pub fn uid(&self) -> [u8; UID_BYTES] {
        self.id.to_bytes()
    }

    /// The job key (32 hex digits), the same as `Client::key`.
    pub fn key(&self) -> &str {
        &self.id.key
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.id.addr
    }

    /// Whether the server thread has ended (every rank left, the job failed, or stopped).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the server thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Closing our end wakes the thread (POLLHUP on its end); no write, so no SIGPIPE in
        // programs that do not ignore it.
        drop(self.wake.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The servers started by `get_uniqueid`, kept until `stop_servers`.
static SERVERS: Mutex<Vec<Server>> = Mutex::new(Vec::new());

/// What `ishmemx_get_uniqueid` does: starts a server (see `Server::start`) that lives until its
/// job's ranks have all left or `stop_servers` is called, and returns its id.
pub fn get_uniqueid() -> Result<[u8; UID_BYTES], String> {
    let server = Server::start()?;
    let uid = server.uid();
    let mut list = SERVERS.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|s| !s.is_finished());
    list.push(server);
    Ok(uid)
}

/// Stops every server `get_uniqueid` started (at finalize of the process that made ids).
pub fn stop_servers() {
    let list = std::mem::take(&mut *SERVERS.lock().unwrap_or_else(|e| e.into_inner()));
    drop(list);
}

/// One connection of the server.
struct Conn {
    sock: TcpStream,
    peer: SocketAddr,
    inbuf: Vec<u8>,
    out: VecDeque<(Arc<Vec<u8>>, usize)>,
    rank: Option<usize>,
    since: Instant,
    /// Refused: close once the error is sent, read nothing more.
    closing: bool,
}

/// The server thread's state.
struct Serve {
    listener: TcpListener,
    wake: UnixStream,
    id: UniqueId,
    conns: Vec<Option<Conn>>,
    /// (nranks, the rank that said it first).
    nranks: Option<(usize, usize)>,
    /// Per rank: its peer address once connected.
    present: Vec<Option<SocketAddr>>,
    timeouts: Vec<Duration>,
    connected: usize,
    running: bool,
    connect_deadline: Option<(Instant, Duration)>,
    round: u32,
    /// The key of the current round and the rank that gave it first.
    round_key: Option<(String, usize)>,
    contrib: Vec<Option<Vec<u8>>>,
    ncontrib: usize,
    round_deadline: Option<(Instant, Duration)>,
    /// Per rank: why it left (BYE or closed connection).
    left: Vec<Option<&'static str>>,
    nleft: usize,
    /// Set on failure: the time until which the error messages are flushed.
    failed: Option<Instant>,
}

enum Step {
    Go,
    Stop,
}

impl Serve {
    fn new(listener: TcpListener, wake: UnixStream, id: UniqueId) -> Serve {
        Serve {
            listener,
            wake,
            id,
            conns: Vec::new(),
            nranks: None,
            present: Vec::new(),
            timeouts: Vec::new(),
            connected: 0,
            running: false,
            connect_deadline: None,
            round: 0,
            round_key: None,
            contrib: Vec::new(),
            ncontrib: 0,
            round_deadline: None,
            left: Vec::new(),
            nleft: 0,
            failed: None,
        }
    }

    fn n(&self) -> usize {
        self.nranks.map_or(0, |(n, _)| n)
    }

    fn run(mut self) {
        loop {
            if let Step::Stop = self.check_time() {
                return;
            }
            let mut fds = vec![
                libc::pollfd { fd: self.wake.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd {
                    fd: self.listener.as_raw_fd(),
                    events: if self.failed.is_some() { 0 } else { libc::POLLIN },
                    revents: 0,
                },
            ];
            let mut slots = Vec::new();
            for (i, c) in self.conns.iter().enumerate() {
                let Some(c) = c else { continue };
                let mut events = if c.closing || self.failed.is_some() { 0 } else { libc::POLLIN };
                if !c.out.is_empty() {
                    events |= libc::POLLOUT;
                }
                fds.push(libc::pollfd { fd: c.sock.as_raw_fd(), events, revents: 0 });
                slots.push(i);
            }
            let wait = self.next_deadline().map_or(-1, |d| {
                let ms = d.saturating_duration_since(Instant::now()).as_millis() + 1;
                ms.min(60_000) as i32
            });
            // SAFETY: fds is a live array of fds.len() pollfd structs.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
            if rc < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if fds[0].revents != 0 {
                return; // stopped by the Server handle (or the handle is gone)
            }
            if fds[1].revents & libc::POLLIN != 0 {
                self.accept_all();
            }
            for (k, &i) in slots.iter().enumerate() {
                let rev = fds[k + 2].revents;
                if rev == 0 {
                    continue;
                }
                if rev & libc::POLLOUT != 0 {
                    self.flush(i);
                }
                if rev & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                    self.read(i);
                }
            }
            if self.running && self.nleft == self.n() && self.failed.is_none() {
                return; // every rank is done
            }
        }
    }

    /// Handles expired deadlines; `Stop` when the thread should end.
    fn check_time(&mut self) -> Step {
        let now = Instant::now();
        if let Some(end) = self.failed {
            let flushed = self.conns.iter().flatten().all(|c| c.out.is_empty());
            if now >= end || flushed {
                self.drain();
                return Step::Stop;
            }
            return Step::Go;
        }
        if let Some((d, t)) = self.connect_deadline {
            if now >= d {
                let missing: Vec<usize> = (0..self.n()).filter(|&r| self.present[r].is_none()).collect();
                let msg = format!(
                    "{PREFIX}: timed out after {} waiting for {} to connect to {}",
                    secs(t),
                    rank_list(&missing, self.n()),
                    self.id.addr
                );
                self.fail(&msg, None);
                return Step::Go;
            }
        }
        if let Some((d, t)) = self.round_deadline {
            if now >= d {
                let missing: Vec<usize> = (0..self.n()).filter(|&r| self.contrib[r].is_none()).collect();
                let key = self.round_key.as_ref().map_or("", |(k, _)| k.as_str());
                let msg = format!(
                    "{PREFIX}: timed out after {} waiting for {} to call allgather('{key}') (round {}) at {}",
                    secs(t),
                    rank_list(&missing, self.n()),
                    self.round,
                    self.id.addr
                );
                self.fail(&msg, None);
                return Step::Go;
            }
        }
        for slot in self.conns.iter_mut() {
            if slot.as_ref().is_some_and(|c| c.rank.is_none() && now.duration_since(c.since) > HELLO_TIMEOUT) {
                *slot = None; // a connection that never said hello
            }
        }
        Step::Go
    }

    /// Reads (and drops) what the peers sent and nobody read, so that closing sends FIN, not
    /// RST, and the clients read the error queued before it.
    fn drain(&mut self) {
        let mut chunk = [0u8; 4096];
        for c in self.conns.iter_mut().flatten() {
            while let Ok(n) = c.sock.read(&mut chunk) {
                if n == 0 {
                    break;
                }
            }
            let _ = c.sock.shutdown(std::net::Shutdown::Write);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut ds: Vec<Instant> = Vec::new();
        if let Some(f) = self.failed {
            ds.push(f);
        } else {
            ds.extend(self.connect_deadline.map(|d| d.0));
            ds.extend(self.round_deadline.map(|d| d.0));
        }
        ds.extend(self.conns.iter().flatten().filter(|c| c.rank.is_none()).map(|c| c.since + HELLO_TIMEOUT));
        ds.into_iter().min()
    }

    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    if sock.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = sock.set_nodelay(true);
                    let conn = Conn {
                        sock,
                        peer,
                        inbuf: Vec::new(),
                        out: VecDeque::new(),
                        rank: None,
                        since: Instant::now(),
                        closing: false,
                    };
                    let pending: Vec<usize> =
                        (0..self.conns.len()).filter(|&i| self.conns[i].as_ref().is_some_and(|c| c.rank.is_none())).collect();
                    if pending.len() >= MAX_PENDING {
                        // The oldest is pushed out: a rank says hello as it connects, so a
                        // connection that waits is most likely one that never will.
                        if let Some(&old) = pending.iter().min_by_key(|&&i| self.conns[i].as_ref().map(|c| c.since)) {
                            self.conns[old] = None;
                        }
                    }
                    let i = match self.conns.iter().position(Option::is_none) {
                        Some(i) => {
                            self.conns[i] = Some(conn);
                            i
                        }
                        None => {
                            self.conns.push(Some(conn));
                            self.conns.len() - 1
                        }
                    };
                    // A client sends its hello with the connection: handled now, it is no
                    // longer pending when the next connections come.
                    self.read(i);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // Out of descriptors or memory: the listener stays readable; let the
                    // pending connection wait a little instead of spinning on it.
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
            }
        }
    }

    fn send(&mut self, i: usize, f: Arc<Vec<u8>>) {
        if let Some(c) = self.conns[i].as_mut() {
            c.out.push_back((f, 0));
        }
        self.flush(i);
    }

    /// Writes what conn `i` has queued, as far as the socket takes it.
    fn flush(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else { return };
        let mut dead = false;
        while let Some((buf, pos)) = c.out.front_mut() {
            match c.sock.write(&buf[*pos..]) {
                Ok(0) => {
                    dead = true;
                    break;
                }
                Ok(n) => {
                    *pos += n;
                    if *pos == buf.len() {
                        c.out.pop_front();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    dead = true;
                    break;
                }
            }
        }
        if dead {
            c.out.clear();
            self.closed(i);
        } else if c.closing && c.out.is_empty() {
            self.conns[i] = None;
        }
    }

    /// Reads what conn `i` sent and handles each complete frame.
    fn read(&mut self, i: usize) {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let Some(c) = self.conns[i].as_mut() else { return };
            if c.closing || self.failed.is_some() {
                return;
            }
            match c.sock.read(&mut chunk) {
                Ok(0) => {
                    self.closed(i);
                    return;
                }
                Ok(n) => {
                    c.inbuf.extend_from_slice(&chunk[..n]);
                    if !self.frames(i) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.closed(i);
                    return;
                }
            }
        }
    }

    /// Handles the complete frames in conn `i`'s buffer; false when the conn is done with.
    fn frames(&mut self, i: usize) -> bool {
        loop {
            let Some(c) = self.conns[i].as_mut() else { return false };
            if c.closing || self.failed.is_some() {
                return false;
            }
            if c.inbuf.len() < 4 {
                return true;
            }
            let len = be32(&c.inbuf) as usize;
            if c.rank.is_none() && len != 1 + HELLO_LEN {
                // Before its hello a connection is nobody: its first frame must be a hello,
                // whose size is known; nothing larger is ever buffered for it.
                let msg = format!(
                    "{PREFIX}: {} did not start with a hello of this protocol (a first frame of {len} bytes, a hello has {}); connection refused",
                    c.peer,
                    1 + HELLO_LEN
                );
                self.protocol_error(i, &msg);
                return false;
            }
            if len == 0 || len > MAX_CLIENT_FRAME {
                let msg = format!(
                    "{PREFIX}: a message of {len} bytes from {} is not a frame of this protocol (limit {MAX_CLIENT_FRAME})",
                    c.peer
                );
                self.protocol_error(i, &msg);
                return false;
            }
            if c.inbuf.len() < 4 + len {
                return true;
            }
            let f: Vec<u8> = c.inbuf.drain(..4 + len).skip(4).collect();
            self.handle(i, f[0], &f[1..]);
        }
    }

    /// A bad frame: a new connection is refused alone; a rank's fails the job.
    fn protocol_error(&mut self, i: usize, msg: &str) {
        match self.conns[i].as_ref().and_then(|c| c.rank) {
            None => self.refuse(i, msg),
            Some(r) => self.fail(&format!("{msg} (rank {r})"), None),
        }
    }

    /// Sends `msg` to conn `i` alone and closes it.
    fn refuse(&mut self, i: usize, msg: &str) {
        if let Some(c) = self.conns[i].as_mut() {
            c.closing = true;
            c.inbuf.clear();
        }
        self.send(i, Arc::new(error_frame(msg)));
    }

    /// Ends the job: every connected rank (and conn `extra`) gets `msg`.
    fn fail(&mut self, msg: &str, extra: Option<usize>) {
        if self.failed.is_some() {
            return;
        }
        self.failed = Some(Instant::now() + FLUSH_TIMEOUT);
        self.connect_deadline = None;
        self.round_deadline = None;
        let f = Arc::new(error_frame(msg));
        for i in 0..self.conns.len() {
            let to = self.conns[i].as_ref().is_some_and(|c| c.rank.is_some() || Some(i) == extra);
            if to {
                self.send(i, f.clone());
            }
        }
    }

    /// Conn `i` is closed by its peer (or broken).
    fn closed(&mut self, i: usize) {
        let Some(c) = self.conns[i].take() else { return };
        let Some(r) = c.rank else { return };
        if self.failed.is_some() || self.left[r].is_some() {
            return;
        }
        if !self.running {
            let msg = format!(
                "{PREFIX}: rank {r} closed its connection to {} before all {} ranks connected (did it exit?)",
                self.id.addr,
                self.n()
            );
            self.fail(&msg, None);
            return;
        }
        self.leave(r, "closed its connection (did it exit?)");
    }

    /// Rank `r` is done with the bootstrap; fails the job if others wait for it.
    fn leave(&mut self, r: usize, why: &'static str) {
        self.left[r] = Some(why);
        self.nleft += 1;
        if self.ncontrib > 0 {
            let key = self.round_key.as_ref().map_or("", |(k, _)| k.as_str());
            let msg = format!(
                "{PREFIX}: rank {r} {why} during round {} (allgather('{key}')), which other ranks have reached: every PE must make the same sequence of calls",
                self.round
            );
            self.fail(&msg, None);
        }
    }

    fn handle(&mut self, i: usize, ty: u8, p: &[u8]) {
        let Some(c) = self.conns[i].as_ref() else { return };
        match c.rank {
            None => self.handle_hello(i, ty, p),
            Some(r) => match ty {
                T_ROUND => self.handle_round(r, p),
                T_BYE => {
                    if self.left[r].is_none() {
                        self.leave(r, "closed the bootstrap");
                    }
                }
                _ => self.fail(&format!("{PREFIX}: rank {r} sent a message of unknown type {ty}"), None),
            },
        }
    }

    fn handle_hello(&mut self, i: usize, ty: u8, p: &[u8]) {
        let peer = self.conns[i].as_ref().map_or(self.id.addr, |c| c.peer);
        if ty != T_HELLO || p.len() != HELLO_LEN || &p[..8] != MAGIC {
            let msg = format!("{PREFIX}: {peer} did not start with a hello of this protocol ({}); connection refused", MAGIC.escape_ascii());
            return self.refuse(i, &msg);
        }
        let version = be32(&p[8..12]);
        if version != VERSION {
            let msg = format!("{PREFIX}: protocol version {version} from {peer}, this server speaks {VERSION}: every PE must use the same libishmem");
            return self.refuse(i, &msg);
        }
        if &p[12..12 + KEY_LEN] != self.id.key.as_bytes() {
            let msg = format!(
                "{PREFIX}: the server at {} serves another job (the unique id's key differs): every PE must pass the id of one ishmemx_get_uniqueid call",
                self.id.addr
            );
            return self.refuse(i, &msg);
        }
        let o = 12 + KEY_LEN;
        let rank = be32(&p[o..o + 4]) as usize;
        let nranks = be32(&p[o + 4..o + 8]) as usize;
        let ms = u64::from_be_bytes(p[o + 8..o + 16].try_into().unwrap_or([0; 8]));
        let timeout = Duration::from_millis(ms);
        if nranks == 0 || nranks > MAX_RANKS {
            return self.refuse(i, &format!("{PREFIX}: nranks {nranks} is not in 1..={MAX_RANKS}"));
        }
        if self.running {
            let msg = format!("{PREFIX}: a hello from {peer} (rank {rank}) after every rank connected; connection refused");
            return self.refuse(i, &msg);
        }
        match self.nranks {
            Some((n, by)) if n != nranks => {
                let msg = format!("{PREFIX}: rank {rank} says the job has {nranks} PEs, but rank {by} said {n}: every PE must pass the same nranks");
                return self.fail(&msg, Some(i));
            }
            Some(_) => {}
            None => {
                self.nranks = Some((nranks, rank));
                self.present = vec![None; nranks];
                self.timeouts = vec![Duration::ZERO; nranks];
                self.contrib = vec![None; nranks];
                self.left = vec![None; nranks];
            }
        }
        if rank >= nranks {
            return self.fail(&format!("{PREFIX}: rank {rank} is out of range for a job of {nranks} PEs"), Some(i));
        }
        if let Some(first) = self.present[rank] {
            // Refused alone (issue 30): a late or repeated hello, whoever sends it, never ends
            // the job of the ranks already connected. Two PEs given one rank: the second gets
            // this message and the job's timeout names the rank nobody took.
            let msg = if self.running {
                format!("{PREFIX}: rank {rank} says hello from {peer}, but every rank has connected already (rank {rank} from {first}); connection refused")
            } else {
                format!(
                    "{PREFIX}: rank {rank} is connected already (from {first}); this connection from {peer} is refused: every PE must pass a different rank"
                )
            };
            return self.refuse(i, &msg);
        }
        if let Some(c) = self.conns[i].as_mut() {
            c.rank = Some(rank);
        }
        self.present[rank] = Some(peer);
        self.timeouts[rank] = timeout;
        self.connected += 1;
        let d = Instant::now() + timeout;
        if self.connect_deadline.is_none_or(|(old, _)| d < old) {
            self.connect_deadline = Some((d, timeout));
        }
        if self.connected == nranks {
            self.running = true;
            self.connect_deadline = None;
            let f = Arc::new(frame(T_WELCOME, &(nranks as u32).to_be_bytes()));
            self.send_to_ranks(f);
        }
    }

    fn send_to_ranks(&mut self, f: Arc<Vec<u8>>) {
        for i in 0..self.conns.len() {
            if self.conns[i].as_ref().is_some_and(|c| c.rank.is_some()) {
                self.send(i, f.clone());
            }
        }
    }

    fn handle_round(&mut self, r: usize, p: &[u8]) {
        if !self.running {
            return self.fail(&format!("{PREFIX}: rank {r} called allgather before all ranks connected"), None);
        }
        if p.len() < 6 || p.len() < 6 + usize::from(u16::from_be_bytes([p[4], p[5]])) {
            return self.fail(&format!("{PREFIX}: rank {r} sent a malformed allgather message"), None);
        }
        let round = be32(&p[..4]);
        let klen = usize::from(u16::from_be_bytes([p[4], p[5]]));
        let key = String::from_utf8_lossy(&p[6..6 + klen]).into_owned();
        let value = &p[6 + klen..];
        if round != self.round {
            return self.fail(&format!("{PREFIX}: rank {r} is in round {round} but the job is in round {}", self.round), None);
        }
        if self.contrib[r].is_some() {
            return self.fail(&format!("{PREFIX}: rank {r} contributed twice to round {round}"), None);
        }
        if let Some((k, by)) = &self.round_key {
            if *k != key {
                let msg = format!(
                    "{PREFIX}: rank {r} called allgather('{key}') while rank {by} called allgather('{k}') (round {round}): every PE must make the same sequence of calls"
                );
                return self.fail(&msg, None);
            }
        } else {
            self.round_key = Some((key.clone(), r));
        }
        if let Some(l) = (0..self.n()).find(|&q| self.left[q].is_some()) {
            let why = self.left[l].unwrap_or("left");
            let msg = format!(
                "{PREFIX}: rank {l} {why} before round {round} (allgather('{key}')), which rank {r} has reached: every PE must make the same sequence of calls"
            );
            return self.fail(&msg, None);
        }
        self.contrib[r] = Some(value.to_vec());
        self.ncontrib += 1;
        let d = Instant::now() + self.timeouts[r];
        if self.round_deadline.is_none_or(|(old, _)| d < old) {
            self.round_deadline = Some((d, self.timeouts[r]));
        }
        if self.ncontrib == self.n() {
            let n = self.n();
            let total: usize = self.contrib.iter().flatten().map(|v| 4 + v.len()).sum();
            let mut payload = Vec::with_capacity(8 + total);
            payload.extend_from_slice(&round.to_be_bytes());
            payload.extend_from_slice(&(n as u32).to_be_bytes());
            for v in self.contrib.iter_mut() {
                let v = v.take().unwrap_or_default();
                payload.extend_from_slice(&(v.len() as u32).to_be_bytes());
                payload.extend_from_slice(&v);
            }
            self.ncontrib = 0;
            self.round_key = None;
            self.round_deadline = None;
            self.round += 1;
            self.send_to_ranks(Arc::new(frame(T_TABLE, &payload)));
        }
    }
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
        write_by(&mut self.sock, &frame(T_ROUND, &p), deadline).map_err(|e| format!("{PREFIX}: sending allgather('{key}') to the server at {addr} failed: {e}"))?;
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

#[cfg(test)]
mod tests {
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
        assert_eq!(e, "unique-id bootstrap: the unique id was not made by ishmemx_get_uniqueid (bad magic \"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\")");
        let mut old = good;
        old[..8].copy_from_slice(b"ISHMUID1");
        assert!(UniqueId::parse(&old).unwrap_err().starts_with("unique-id bootstrap: the unique id has the format ISHMUID1 of an older libishmem"));
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
        assert!(p.starts_with("unique-id bootstrap: 127.0.0.1:") && p.ends_with("did not start with a hello of this protocol (a first frame of 4294967280 bytes, a hello has 61); connection refused"), "{p}");
        assert!(matches!(read_frame(&mut s, 1 << 16, deadline()), Err(ReadErr::Eof)));
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"\0\0\0\x05GET /").unwrap();
        let (_, p) = read_frame(&mut s, 1 << 16, deadline()).ok().unwrap();
        assert!(String::from_utf8(p).unwrap().ends_with("did not start with a hello of this protocol (a first frame of 5 bytes, a hello has 61); connection refused"));
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
        assert!(
            e.starts_with(&format!("unique-id bootstrap: cannot connect to 127.0.0.1:{port} within 0.5 s: Connection refused")),
            "{e}"
        );
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
}
