//! Liveness across nodes: telling a dead PE of another node from a silent one (issue 27,
//! item 7).
//!
//! Death is told by something certain: the first PE of every node (its *leader*) keeps one TCP
//! connection to the leader of every other node, opened at init. The kernel closes a process's
//! sockets when it ends, however it ends, so the end of the stream without a goodbye (`F`,
//! sent after the last barrier of `ishmem_finalize`) means the process is gone; the job then
//! ends at once, saying so. A leader learns of the other PEs of its own node through the
//! node's watchdog (pidfds, `transport::shm`): when one of them dies, the leader ends too (its
//! connections close), after telling the other leaders who failed (`A`), so the other nodes
//! name the right PE. Silence alone is not death: a PE stopped by a debugger or SIGSTOP, or
//! starved, answers late; every leader reads one word of the next node's leader every
//! `ISHMEM_PEER_CHECK_MS` (the probe thread, `core::start::probe_targets`), and only a read that completes nothing for
//! `ISHMEM_PEER_TIMEOUT_S` (300 s) ends the job, with a message that says it was silence.
//!
//! The connections also carry what a node must tell the others when one of its PEs leaves:
//! - `A pe`: PE `pe` failed (or died): the receiving leader marks its node's abort word and
//!   ends, so every PE of its node ends naming `pe`;
//! - `G pe status`: PE `pe` called `ishmem_global_exit(status)`: the receiver sets its node's
//!   global-exit word (every PE of the node exits with `status`), passes the record on to the
//!   other leaders and exits with it; the leader that sent it first waits until the others
//!   left, and the calling PE until that leader is done (`tell_global_exit`);
//! - `Z pe pid calls`: PE `pe` is in `ishmem_finalize` having made `calls` world collectives:
//!   recorded in the receiver's node control segment, where a PE that waits for `pe` in a
//!   world collective it never made finds it (`ShmJob::finalizing_peer`) and ends the job;
//! - `F`: the sender's node finalized: the end of the stream that follows is not a death.
//!
//! Connections are authenticated: each leader draws a random 64-bit token, published only
//! through the launcher's exchange; a connecting leader presents the acceptor's token and the
//! acceptor answers with the connector's. A connection that fails this is closed unread.
//! Records are 24 bytes: kind (u32), PE (u32), two u64 values, little endian.

use crate::bootstrap::Exchange;
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const MAGIC: u64 = 0x6576_696c_6d68_7369; // "ishmlive"
const REC: usize = 24;
const K_FAILED: u32 = b'A' as u32;
const K_GLOBAL_EXIT: u32 = b'G' as u32;
const K_FINALIZING: u32 = b'Z' as u32;
const K_FINALIZED: u32 = b'F' as u32;

/// The leader's connections, for the relays of other threads (`tell_*`).
struct Links {
    me: usize,
    /// Emptied (the sockets closed) once this PE finalized.
    conns: Mutex<Vec<(usize, Arc<TcpStream>)>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

static LINKS: OnceLock<Links> = OnceLock::new();
/// Set once this PE finalized: the ends of connections are no longer deaths.
static DONE: AtomicBool = AtomicBool::new(false);
/// Set once this leader told the other nodes of a global exit: the ends of their connections
/// that follow are their leaders exiting with it, not deaths, and their relays of it are
/// ignored (this PE exits once they have left, `tell_global_exit`).
static LEAVING: AtomicBool = AtomicBool::new(false);
/// The connections whose end the watch thread has seen.
static CLOSED: AtomicUsize = AtomicUsize::new(0);
/// How long a leader that told the other nodes of a global exit waits for their leaders to
/// leave (each prints why and exits on reading it), so that a launcher which kills the job as
/// soon as one process ends (OpenMPI's mpirun) does not kill them before they could say why.
const GLOBAL_EXIT_WAIT: Duration = Duration::from_secs(2);

thread_local! {
    /// Whether this thread is the watch thread (which must not wait for its own reads).
    static IN_WATCH: Cell<bool> = const { Cell::new(false) };
}

/// What `start` needs from init.
pub struct Params<'a> {
    pub me: usize,
    /// The PEs of each node (ascending; the first is the node's leader) and this PE's node.
    pub members: &'a [Vec<usize>],
    pub my_node: usize,
    /// How long to wait for the other leaders to connect (the bootstrap timeout).
    pub timeout: Duration,
    /// The period of the watch (`ISHMEM_PEER_CHECK_MS`).
    pub period: Duration,
}

fn rec(kind: u32, pe: usize, a: u64, b: u64) -> [u8; REC] {
    let mut r = [0u8; REC];
    r[..4].copy_from_slice(&kind.to_le_bytes());
    r[4..8].copy_from_slice(&(pe as u32).to_le_bytes());
    r[8..16].copy_from_slice(&a.to_le_bytes());
    r[16..].copy_from_slice(&b.to_le_bytes());
    r
}

fn parse(r: &[u8]) -> (u32, usize, u64, u64) {
    let w = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap_or([0; 8]));
    (
        u32::from_le_bytes(r[..4].try_into().unwrap_or([0; 4])),
        u32::from_le_bytes(r[4..8].try_into().unwrap_or([0; 4])) as usize,
        w(8),
        w(16),
    )
}

/// This host's IPv4 addresses, those of loopback last (a leader of another host tries them in
/// this order; pretend nodes on one host reach any of them).
fn addresses() -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut lo = Vec::new();
    let mut ifa: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills ifa with a list freed below.
    if unsafe { libc::getifaddrs(&mut ifa) } == 0 {
        let mut p = ifa;
        while !p.is_null() {
            // SAFETY: p is an element of the list getifaddrs returned.
            let e = unsafe { &*p };
            // SAFETY: ifa_addr, when not null, points to a sockaddr of its family.
            if !e.ifa_addr.is_null() && unsafe { (*e.ifa_addr).sa_family } as i32 == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let a = unsafe { &*(e.ifa_addr as *const libc::sockaddr_in) };
                let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
                if ip.is_loopback() {
                    lo.push(ip)
                } else {
                    out.push(ip)
                }
            }
            p = e.ifa_next;
        }
        // SAFETY: ifa came from getifaddrs.
        unsafe { libc::freeifaddrs(ifa) };
    }
    out.extend(lo);
    if out.is_empty() {
        out.push(Ipv4Addr::LOCALHOST);
    }
    out
}

fn write_all(s: &TcpStream, b: &[u8]) -> std::io::Result<()> {
    let mut s = s;
    s.write_all(b)
}

/// Opens the connections between the node leaders (collective: every PE takes part in the
/// exchange; only leaders connect) and starts the leader's watch thread.
pub fn start(x: &mut dyn Exchange, p: &Params) -> Result<(), String> {
    let leader = p.members[p.my_node].first() == Some(&p.me);
    let mut listener = None;
    let mut token = 0u64;
    let mut mine = Vec::new();
    if leader {
        let l = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
            .map_err(|e| format!("liveness connections: cannot listen on a TCP port: {e}"))?;
        let port = l.local_addr().map_err(|e| format!("liveness connections: {e}"))?.port();
        token = crate::transport::fabric::keys::random(8)?;
        mine.extend_from_slice(&token.to_le_bytes());
        mine.extend_from_slice(&port.to_le_bytes());
        for a in addresses() {
            mine.extend_from_slice(&a.octets());
        }
        listener = Some(l);
    }
    let all = x.allgather("ishmem-live", &mine)?;
    if let Some(listener) = listener {
        connect_and_watch(p, listener, token, &all)?;
    }
    // No PE leaves init before every leader holds its connections: a PE that ends right after
    // init (a failure, an exit without finalize) must find its leader able to tell the other
    // nodes who failed, else they would blame the leader whose connection closed.
    x.allgather("ishmem-live-ready", &[])?;
    Ok(())
}

/// A leader's part of `start`: connects to the later nodes' leaders, accepts the earlier ones,
/// and starts the watch thread.
fn connect_and_watch(p: &Params, listener: TcpListener, token: u64, all: &[Vec<u8>]) -> Result<(), String> {
    let deadline = Instant::now() + p.timeout;
    let mut conns: Vec<(usize, Arc<TcpStream>)> = Vec::new();
    // Connect to the leaders of later nodes (their listeners queue the connection), then accept
    // those of earlier nodes.
    for (n, m) in p.members.iter().enumerate().skip(p.my_node + 1) {
        let l = m[0];
        let v = &all[l];
        if v.len() < 14 || (v.len() - 10) % 4 != 0 {
            return Err(format!("liveness connections: the address of PE {l} is malformed ({} bytes)", v.len()));
        }
        let their = u64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8]));
        let port = u16::from_le_bytes([v[8], v[9]]);
        let mut errs = Vec::new();
        let mut got = None;
        for a in v[10..].chunks(4) {
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            let sa = SocketAddrV4::new(ip, port).into();
            match TcpStream::connect_timeout(&sa, Duration::from_secs(2)) {
                Ok(s) => {
                    got = Some(s);
                    break;
                }
                Err(e) => errs.push(format!("{ip}:{port}: {e}")),
            }
        }
        let s =
            got.ok_or_else(|| format!("liveness connections: cannot connect to PE {l} (the first PE of node {n}): {}", errs.join("; ")))?;
        let _ = s.set_nodelay(true);
        let mut hello = rec(0, p.me, their, token).to_vec();
        hello.extend_from_slice(&MAGIC.to_le_bytes());
        write_all(&s, &hello).map_err(|e| format!("liveness connections: PE {l}: {e}"))?;
        let _ = s.set_read_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1))));
        let mut reply = [0u8; REC + 8];
        (&s).read_exact(&mut reply).map_err(|e| format!("liveness connections: no answer from PE {l}: {e}"))?;
        let (_, pe, tok, _) = parse(&reply[..REC]);
        if pe != l || tok != token || reply[REC..] != MAGIC.to_le_bytes() {
            return Err(format!("liveness connections: the answer of PE {l} does not carry this job's token"));
        }
        let _ = s.set_read_timeout(None);
        conns.push((l, Arc::new(s)));
    }
    let earlier: Vec<usize> = p.members[..p.my_node].iter().map(|m| m[0]).collect();
    listener.set_nonblocking(true).map_err(|e| format!("liveness connections: {e}"))?;
    while conns.len() < p.members.len() - 1 {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut hello = [0u8; REC + 8];
                if (&s).read_exact(&mut hello).is_err() {
                    continue;
                }
                let (_, pe, tok, theirs) = parse(&hello[..REC]);
                // A stranger, or a leader presenting the wrong token: closed unanswered.
                if tok != token || hello[REC..] != MAGIC.to_le_bytes() || !earlier.contains(&pe) || conns.iter().any(|c| c.0 == pe) {
                    continue;
                }
                let mut reply = rec(0, p.me, theirs, 0).to_vec();
                reply.extend_from_slice(&MAGIC.to_le_bytes());
                if write_all(&s, &reply).is_err() {
                    continue;
                }
                let _ = s.set_read_timeout(None);
                let _ = s.set_nodelay(true);
                conns.push((pe, Arc::new(s)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    let missing: Vec<String> =
                        earlier.iter().filter(|l| !conns.iter().any(|c| c.0 == **l)).map(|l| l.to_string()).collect();
                    return Err(format!(
                        "liveness connections: timed out after {} s waiting for the first PEs of other nodes to connect: PEs {} \
                         (ISHMEM_BOOTSTRAP_TIMEOUT; a firewall between the nodes?)",
                        p.timeout.as_secs(),
                        missing.join(", ")
                    ));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(format!("liveness connections: accept: {e}")),
        }
    }
    drop(listener);
    for (_, s) in &conns {
        s.set_nonblocking(true).map_err(|e| format!("liveness connections: {e}"))?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (me, period) = (p.me, p.period.clamp(Duration::from_millis(1), Duration::from_millis(100)));
    let watched: Vec<(usize, Arc<TcpStream>)> = conns.clone();
    let s2 = stop.clone();
    let node = p.members[p.my_node].clone();
    let thread = std::thread::Builder::new()
        .name("ishmem-live".into())
        .spawn(move || watch(me, &node, watched, &s2, period))
        .map_err(|e| format!("liveness connections: cannot start the thread: {e}"))?;
    let _ = LINKS.set(Links { me, conns: Mutex::new(conns), stop, thread: Mutex::new(Some(thread)) });
    Ok(())
}

/// Sends `r` to every other leader (best effort: this runs on the way out).
fn send_all(r: [u8; REC]) {
    if let Some(l) = LINKS.get() {
        for (_, s) in l.conns.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            // The stream is non-blocking: a record either fits the socket buffer or is lost
            // (only when the peer has stopped reading for megabytes of records).
            let _ = write_all(s, &r);
        }
    }
}

/// Tells the other nodes that PE `cause` failed (its message names why). Leaders only; others
/// reach their leader through the node's abort word.
pub fn tell_failed(cause: usize) {
    if !DONE.load(Acquire) {
        send_all(rec(K_FAILED, cause, 0, 0));
    }
}

/// Tells the other nodes that PE `pe` called `ishmem_global_exit(status)` (a leader; nothing
/// on other PEs), waits (at most [`GLOBAL_EXIT_WAIT`]) until their leaders have left, then
/// marks the node's word `global_exit_told`, for which the calling PE waits before it exits.
pub fn tell_global_exit(pe: usize, status: i32) {
    let Some(l) = LINKS.get() else { return };
    if DONE.load(Acquire) {
        return;
    }
    leave_telling(pe, status);
    if !IN_WATCH.get() {
        let n = l.conns.lock().map_or(0, |c| c.len());
        let deadline = Instant::now() + GLOBAL_EXIT_WAIT;
        while CLOSED.load(Acquire) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    crate::transport::shm::mark_global_exit_told();
}

/// Marks this leader as leaving (the ends of the other leaders' connections are no deaths, their
/// `G` records are ignored) and sends `G pe status` to every other leader.
fn leave_telling(pe: usize, status: i32) {
    LEAVING.store(true, Release);
    send_all(rec(K_GLOBAL_EXIT, pe, status as u32 as u64, 0));
}

/// Whether this PE is a node leader of a job across nodes (it holds the liveness connections).
pub fn is_leader() -> bool {
    LINKS.get().is_some()
}

/// The liveness connections this PE holds (a node leader: one per other node; others: none).
pub fn connections() -> usize {
    LINKS.get().map_or(0, |l| l.conns.lock().map_or(0, |c| c.len()))
}

/// After the last barrier of finalize: says goodbye (the end of the connections that follows is
/// no death) and stops the thread.
pub fn finalized() {
    DONE.store(true, Release);
    if let Some(l) = LINKS.get() {
        send_all(rec(K_FINALIZED, l.me, 0, 0));
        l.stop.store(true, Release);
        let h = l.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = h {
            let _ = h.join();
        }
        l.conns.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// The leader's thread: reads the connections, relays this node's PEs in finalize.
fn watch(me: usize, node: &[usize], conns: Vec<(usize, Arc<TcpStream>)>, stop: &AtomicBool, period: Duration) {
    struct C {
        pe: usize,
        s: Arc<TcpStream>,
        buf: Vec<u8>,
        clean: bool,
        open: bool,
    }
    let mut cs: Vec<C> = conns.into_iter().map(|(pe, s)| C { pe, s, buf: Vec::new(), clean: false, open: true }).collect();
    let mut told: Vec<usize> = Vec::new();
    IN_WATCH.set(true);
    while !stop.load(Acquire) {
        let mut polls: Vec<libc::pollfd> =
            cs.iter().filter(|c| c.open).map(|c| libc::pollfd { fd: c.s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: polls is a valid array of pollfd of its length.
        unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, period.as_millis() as i32) };
        if stop.load(Acquire) || DONE.load(Acquire) {
            return;
        }
        for c in cs.iter_mut().filter(|c| c.open) {
            let mut b = [0u8; 4096];
            let eof = loop {
                match (&*c.s).read(&mut b) {
                    Ok(0) => break true,
                    Ok(n) => c.buf.extend_from_slice(&b[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break true,
                }
            };
            while c.buf.len() >= REC {
                let r: Vec<u8> = c.buf.drain(..REC).collect();
                let (kind, pe, a, b) = parse(&r);
                match kind {
                    K_FINALIZED => c.clean = true,
                    K_GLOBAL_EXIT if !LEAVING.load(Acquire) => global_exit(me, pe, a as u32 as i32),
                    K_FAILED => failed(me, pe, node.contains(&pe)),
                    K_FINALIZING => crate::transport::shm::record_remote_finalizing(pe, a as i32, b),
                    _ => {}
                }
            }
            if eof {
                c.open = false;
                CLOSED.fetch_add(1, AcqRel);
                if !c.clean && !DONE.load(Acquire) && !LEAVING.load(Acquire) {
                    gone(me, c.pe);
                }
            }
        }
        // This node's PEs in finalize, for the other nodes' waits.
        for (pe, pid, calls) in crate::transport::shm::finalizing_here() {
            if !told.contains(&pe) {
                told.push(pe);
                send_all(rec(K_FINALIZING, pe, pid as u32 as u64, calls));
            }
        }
    }
}

/// `G`: every PE of this node exits with `status`. The record is passed on to the other
/// leaders first, so that a third node reads it before the end of this leader's connection
/// (which would otherwise look like a death).
fn global_exit(me: usize, pe: usize, status: i32) {
    crate::transport::shm::mark_global_exit(pe, status);
    crate::ffi::info(
        "ishmem_global_exit",
        &format!("PE {pe} (another node) called ishmem_global_exit({status}): PE {me} and its node exit with status {status}"),
    );
    leave_telling(pe, status);
    // This node's other PEs wait for this before they exit (`core::global_exit_told`).
    crate::transport::shm::mark_global_exit_told();
    crate::ffi::tell_launcher(pe);
    crate::ffi::exit_now(status)
}

/// `A`: PE `pe` failed; this node ends naming it.
fn failed(me: usize, pe: usize, here: bool) {
    crate::transport::shm::mark_abort(pe);
    if pe == me {
        // This PE was blamed (it is in finalize while others wait for it): its own watchdog says
        // why; leave that to it.
        return;
    }
    let where_ = if here { "" } else { "on another node; " };
    crate::ffi::exit_after_peer(&format!("[PE {me}] ERROR: ending the job because PE {pe} failed ({where_}see its message)"), pe)
}

/// The connection to leader `pe` ended without a goodbye: its process is gone.
fn gone(me: usize, pe: usize) {
    // A global exit of that node reaches this node as `G` before the end of the stream; its
    // node-mates may have set this node's word already.
    crate::transport::shm::check_global_exit_here(me);
    crate::transport::shm::mark_abort(pe);
    crate::ffi::exit_after_peer(
        &format!(
            "[PE {me}] ERROR: PE {pe} (another node) ended without calling ishmem_finalize: the connection the library keeps \
             to its process closed, so the process ended (it died, was killed, or exited); ending the job"
        ),
        pe,
    )
}
