//! PMI-1 wire-protocol client, as spoken by MPICH's hydra (`mpiexec`).
//!
//! This module owns the connection to the process manager: it adopts the
//! socket hydra hands each process (`PMI_FD`, or a TCP connection to
//! `PMI_PORT`), runs the PMI-1 handshake, and offers the key-value-space
//! operations the bootstrap needs (`put`, `barrier`, `get`, `allgather`) plus
//! `abort` and `finalize`.
//!
//! The protocol is request/response over newline-terminated lines of
//! space-separated `key=value` pairs. Details confirmed against hydra 4.0.2:
//!
//! * `cmd=init pmi_version=1 pmi_subversion=1` ->
//!   `cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0`
//! * `cmd=get_maxes` -> `cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024`.
//!   The maxima include C's terminating NUL: hydra silently truncates values
//!   to `vallen_max - 1` bytes (and keys to `keylen_max - 1`), so this client
//!   rejects anything longer instead.
//! * `cmd=get_my_kvsname` -> `cmd=my_kvsname kvsname=kvs_<pid>_0_<n>_<host>`
//! * `cmd=put kvsname=K key=X value=V` -> `cmd=put_result rc=0 msg=success`.
//!   Empty values are accepted; a second put of the same key overwrites.
//! * `cmd=barrier_in` -> `cmd=barrier_out`. Puts only become visible to
//!   `get` -- even the putting process's own -- after the next barrier.
//! * `cmd=get kvsname=K key=X` -> `cmd=get_result rc=0 msg=success value=V`,
//!   or `cmd=get_result rc=-1 msg=key_X_not_found value=unknown`.
//! * `cmd=abort exitcode=N`: no reply; hydra kills the whole job and
//!   `mpiexec` exits with status N.
//! * `cmd=finalize` -> `cmd=finalize_ack`
//! * `PMI_PORT=host:port` + `PMI_ID=n` (hydra's `-pmi-port`): connect, send
//!   `cmd=initack pmiid=n`, receive `cmd=initack`, then `cmd=set size=N`,
//!   `cmd=set rank=R`, `cmd=set debug=D`; the rest is as above.
//!
//! An unknown command or a wrong kvsname makes hydra tear the job down, so the
//! client validates everything it sends. Replies may be split across reads or
//! several may arrive in one read; they are buffered line by line. Extra keys in
//! replies are ignored. All errors are `String`s starting with `"PMI-1: "`.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Longest reply line accepted before declaring the stream broken.
const MAX_LINE: usize = 1 << 20;
/// How long `abort` keeps trying to hand its line to the kernel.
const ABORT_SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// A connected, initialised PMI-1 client.
#[derive(Debug)]
pub struct Pmi1 {
    conn: File,
    /// Bytes read from the socket but not yet consumed as a line.
    buf: Vec<u8>,
    rank: usize,
    size: usize,
    kvsname: String,
    kvsname_max: usize,
    keylen_max: usize,
    vallen_max: usize,
    /// Set once the stream can no longer be trusted (I/O error, EOF, abort).
    broken: Option<String>,
    finalized: bool,
}

/// A parsed reply line: its `key=value` pairs in order.
struct Reply {
    line: String,
    pairs: Vec<(String, String)>,
}

impl Reply {
    fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl Pmi1 {
    /// Connects using the environment hydra sets up.
    ///
    /// `PMI_FD` (with `PMI_RANK` and `PMI_SIZE`) is preferred; otherwise
    /// `PMI_PORT` (with `PMI_ID`) is used. Returns `Ok(None)` when neither
    /// `PMI_FD` nor `PMI_PORT` is set, and an error when they are set but
    /// unusable (missing companions, bad numbers, failed handshake).
    pub fn from_env() -> Result<Option<Pmi1>, String> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    fn from_vars(get: impl Fn(&str) -> Option<OsString>) -> Result<Option<Pmi1>, String> {
        let var = |name: &str| -> Result<Option<String>, String> {
            match get(name) {
                None => Ok(None),
                Some(v) => v.into_string().map(Some).map_err(|v| format!("PMI-1: {name}={v:?} is not valid UTF-8")),
            }
        };
        if let Some(fd) = var("PMI_FD")? {
            let fd: i32 = parse_env_num("PMI_FD", &fd)?;
            let rank = var("PMI_RANK")?.ok_or("PMI-1: PMI_FD is set but PMI_RANK is missing")?;
            let size = var("PMI_SIZE")?.ok_or("PMI-1: PMI_FD is set but PMI_SIZE is missing")?;
            let rank = parse_env_num("PMI_RANK", &rank)?;
            let size = parse_env_num("PMI_SIZE", &size)?;
            return Self::connect_fd(fd, rank, size).map(Some);
        }
        if let Some(port) = var("PMI_PORT")? {
            let id = var("PMI_ID")?.ok_or("PMI-1: PMI_PORT is set without PMI_ID (singleton init is not supported)")?;
            let id: u64 = parse_env_num("PMI_ID", &id)?;
            return Self::connect_port(&port, id).map(Some);
        }
        Ok(None)
    }

    /// Adopts `fd`, a connected stream socket to the process manager, and runs
    /// `init`, `get_maxes` and `get_my_kvsname`.
    ///
    /// If the arguments are rejected (`rank >= size`, `fd` not an open socket)
    /// the descriptor is left untouched. Otherwise the client takes ownership
    /// of it: it is marked close-on-exec and closed when the `Pmi1` (or the
    /// error path) drops it; the caller must not use or close it afterwards.
    pub fn connect_fd(fd: i32, rank: usize, size: usize) -> Result<Pmi1, String> {
        check_rank_size(rank, size)?;
        if fd < 0 {
            return Err(format!("PMI-1: PMI_FD {fd} is not a valid file descriptor"));
        }
        check_is_socket(fd)?;
        set_cloexec(fd)?;
        // SAFETY: `fd` is open (fstat succeeded) and refers to a socket. This
        // function's documented contract is that the caller hands over
        // ownership of the descriptor (hydra passes it to this process alone
        // for exactly this purpose), so nothing else closes or uses it.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::handshake(File::from(owned), Vec::new(), rank, size)
    }

    /// Connects to `host:port` (hydra's `-pmi-port` mode), performs the
    /// `initack` exchange for PMI id `id` (which yields rank and size), then
    /// the regular handshake.
    fn connect_port(addr: &str, id: u64) -> Result<Pmi1, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("PMI-1: cannot connect to PMI_PORT {addr}: {e}"))?;
        // Best effort: the protocol is strictly request/response anyway.
        let _ = stream.set_nodelay(true);
        // std creates sockets close-on-exec already.
        let conn = File::from(OwnedFd::from(stream));
        let mut tmp = Pmi1 {
            conn,
            buf: Vec::new(),
            rank: 0,
            size: 1,
            kvsname: String::new(),
            kvsname_max: 256,
            keylen_max: 64,
            vallen_max: 1024,
            broken: None,
            finalized: false,
        };
        tmp.send(&format!("cmd=initack pmiid={id}\n"), "initack")?;
        tmp.expect_reply("initack", "initack")?;
        let (mut rank, mut size) = (None, None);
        // hydra (and MPICH's client) send exactly three `cmd=set` lines:
        // size, rank, debug.
        for _ in 0..3 {
            let r = tmp.expect_reply("initack", "set")?;
            if let Some(v) = r.get("size") {
                size = Some(parse_reply_num(&r, "size", v)?);
            }
            if let Some(v) = r.get("rank") {
                rank = Some(parse_reply_num(&r, "rank", v)?);
            }
        }
        let rank = rank.ok_or("PMI-1: PMI_PORT handshake did not provide a rank")?;
        let size = size.ok_or("PMI-1: PMI_PORT handshake did not provide a size")?;
        check_rank_size(rank, size)?;
        Self::handshake(tmp.conn, std::mem::take(&mut tmp.buf), rank, size)
    }

    fn handshake(conn: File, buf: Vec<u8>, rank: usize, size: usize) -> Result<Pmi1, String> {
        let mut p = Pmi1 {
            conn,
            buf,
            rank,
            size,
            kvsname: String::new(),
            kvsname_max: 256,
            keylen_max: 64,
            vallen_max: 1024,
            broken: None,
            finalized: false,
        };
        let r = p.request("init", "cmd=init pmi_version=1 pmi_subversion=1\n", "response_to_init")?;
        check_rc(&r, "init")?;
        if let Some(v) = r.get("pmi_version") {
            if v != "1" {
                return Err(format!("PMI-1: init: process manager speaks PMI version {v}, not 1 (reply '{}')", r.line));
            }
        }

        let r = p.request("get_maxes", "cmd=get_maxes\n", "maxes")?;
        for (key, slot) in [("kvsname_max", &mut p.kvsname_max), ("keylen_max", &mut p.keylen_max), ("vallen_max", &mut p.vallen_max)] {
            if let Some(v) = r.get(key) {
                let n: usize = parse_reply_num(&r, key, v)?;
                if n < 2 {
                    return Err(format!("PMI-1: get_maxes: {key}={n} is unusable"));
                }
                *slot = n;
            }
        }

        let r = p.request("get_my_kvsname", "cmd=get_my_kvsname\n", "my_kvsname")?;
        let name = r.get("kvsname").unwrap_or("");
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(format!("PMI-1: get_my_kvsname: missing or unusable kvsname in reply '{}'", r.line));
        }
        p.kvsname = name.to_string();
        Ok(p)
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of processes in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The job's key-value-space name.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Longest key accepted by `put`/`get`, in bytes.
    pub fn max_key_len(&self) -> usize {
        self.keylen_max - 1
    }

    /// Longest value accepted by `put`, in bytes.
    pub fn max_value_len(&self) -> usize {
        self.vallen_max - 1
    }

    /// Stores `key=value` in the job's KVS. The value becomes visible to
    /// `get` (on every rank, this one included) after the next `barrier`.
    /// Keys and values must be printable ASCII without spaces or `=`
    /// (values may be empty) and fit the server's maxima.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), String> {
        self.check_key("put", key)?;
        self.check_value(key, value)?;
        let line = format!("cmd=put kvsname={} key={key} value={value}\n", self.kvsname);
        let r = self.request("put", &line, "put_result")?;
        check_rc(&r, &format!("put of key '{key}'"))
    }

    /// Waits until every rank has entered the barrier; also commits all
    /// earlier puts so that they are visible to `get`.
    pub fn barrier(&mut self) -> Result<(), String> {
        let r = self.request("barrier", "cmd=barrier_in\n", "barrier_out")?;
        check_rc(&r, "barrier")
    }

    /// Fetches the value stored under `key` (committed by a barrier).
    pub fn get(&mut self, key: &str) -> Result<String, String> {
        self.check_key("get", key)?;
        let line = format!("cmd=get kvsname={} key={key}\n", self.kvsname);
        let r = self.request("get", &line, "get_result")?;
        check_rc(&r, &format!("get of key '{key}'"))?;
        r.get("value").map(str::to_string).ok_or_else(|| format!("PMI-1: malformed reply to get of key '{key}': no value in '{}'", r.line))
    }

    /// Puts `value` under `"<key_prefix>-<rank>"`, runs a barrier, and returns
    /// every rank's value indexed by rank. All ranks must call it with the same
    /// prefix.
    pub fn allgather(&mut self, key_prefix: &str, value: &str) -> Result<Vec<String>, String> {
        // Validate the longest key any rank will use before touching the KVS.
        let last = self.size.saturating_sub(1);
        self.check_key("allgather", &format!("{key_prefix}-{last}"))?;
        let my_key = format!("{key_prefix}-{}", self.rank);
        self.check_value(&my_key, value)?;
        self.put(&my_key, value)?;
        self.barrier()?;
        let mut out = Vec::with_capacity(self.size);
        for r in 0..self.size {
            if r == self.rank {
                out.push(value.to_string());
            } else {
                out.push(self.get(&format!("{key_prefix}-{r}"))?);
            }
        }
        Ok(out)
    }

    /// Asks the process manager to kill the job with exit code `code`,
    /// printing `msg` to stderr first. Best effort: never waits for a reply
    /// and never blocks for more than about a second. The client is unusable
    /// afterwards.
    pub fn abort(&mut self, code: i32, msg: &str) {
        let _ = writeln!(io::stderr(), "PMI-1: rank {} aborting job: {msg}", self.rank);
        let line = format!("cmd=abort exitcode={code}\n");
        let _ = send_nonblocking(&self.conn, line.as_bytes(), ABORT_SEND_TIMEOUT);
        self.broken = Some("the job was aborted".to_string());
    }

    /// Tells the process manager this process is done with PMI. Further
    /// calls to `finalize` are no-ops; other operations fail.
    pub fn finalize(&mut self) -> Result<(), String> {
        if self.finalized {
            return Ok(());
        }
        let r = self.request("finalize", "cmd=finalize\n", "finalize_ack");
        self.finalized = true;
        check_rc(&r?, "finalize")
    }

    // ---------------------------------------------------------------------
    // Validation

    fn check_key(&self, what: &str, key: &str) -> Result<(), String> {
        if key.is_empty() {
            return Err(format!("PMI-1: {what}: empty key"));
        }
        if let Some(c) = key.bytes().find(|&b| !is_token_byte(b)) {
            return Err(format!("PMI-1: {what}: key {key:?} contains byte {c:#04x}; keys must be printable ASCII without spaces or '='"));
        }
        if key.len() > self.max_key_len() {
            return Err(format!(
                "PMI-1: {what}: key '{key}' is {} bytes, longer than the process manager's limit of {} (keylen_max={})",
                key.len(),
                self.max_key_len(),
                self.keylen_max
            ));
        }
        Ok(())
    }

    fn check_value(&self, key: &str, value: &str) -> Result<(), String> {
        if let Some(c) = value.bytes().find(|&b| !is_token_byte(b)) {
            return Err(format!(
                "PMI-1: put of key '{key}': value contains byte {c:#04x}; values must be printable ASCII without spaces or '='"
            ));
        }
        if value.len() > self.max_value_len() {
            return Err(format!(
                "PMI-1: put of key '{key}': value is {} bytes, longer than the process manager's limit of {} (vallen_max={})",
                value.len(),
                self.max_value_len(),
                self.vallen_max
            ));
        }
        Ok(())
    }

    // ---------------------------------------------------------------------
    // Wire I/O

    /// Sends `line` (newline-terminated) and reads the reply, which must have
    /// `cmd=<expect>`.
    fn request(&mut self, what: &str, line: &str, expect: &str) -> Result<Reply, String> {
        if self.finalized {
            return Err(format!("PMI-1: {what} called after finalize"));
        }
        if let Some(why) = &self.broken {
            return Err(format!("PMI-1: {what}: connection unusable ({why})"));
        }
        self.send(line, what)?;
        self.expect_reply(what, expect)
    }

    fn send(&mut self, line: &str, what: &str) -> Result<(), String> {
        send_all(&self.conn, line.as_bytes()).map_err(|e| {
            let msg = format!("PMI-1: {what}: sending to the process manager failed: {e}");
            self.broken = Some(msg.clone());
            msg
        })
    }

    fn expect_reply(&mut self, what: &str, expect: &str) -> Result<Reply, String> {
        let line = self.read_line(what)?;
        let r = parse_reply(&line, what)?;
        match r.get("cmd") {
            Some(c) if c == expect => Ok(r),
            Some(c) => Err(format!("PMI-1: unexpected reply to {what}: expected cmd={expect}, got cmd={c} in '{}'", r.line)),
            None => Err(format!("PMI-1: malformed reply to {what}: no cmd key in '{}'", r.line)),
        }
    }

    /// Returns the next non-empty line (without the newline), reading from the
    /// socket as needed.
    fn read_line(&mut self, what: &str) -> Result<String, String> {
        let mut scanned = 0;
        loop {
            if let Some(pos) = self.buf[scanned..].iter().position(|&b| b == b'\n') {
                let end = scanned + pos;
                let raw: Vec<u8> = self.buf.drain(..=end).collect();
                scanned = 0;
                let mut text = &raw[..end];
                if let Some(t) = text.strip_suffix(b"\r") {
                    text = t;
                }
                if text.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return String::from_utf8(text.to_vec()).map_err(|_| {
                    format!("PMI-1: malformed reply to {what}: not valid UTF-8: {}", super::clip(&String::from_utf8_lossy(text)))
                });
            }
            scanned = self.buf.len();
            if self.buf.len() > MAX_LINE {
                let msg = format!("PMI-1: malformed reply to {what}: no newline within {MAX_LINE} bytes");
                self.broken = Some(msg.clone());
                return Err(msg);
            }
            let mut chunk = [0u8; 4096];
            match self.conn.read(&mut chunk) {
                Ok(0) => {
                    let msg = format!("PMI-1: {what}: connection closed by the process manager while waiting for a reply");
                    self.broken = Some(msg.clone());
                    return Err(msg);
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let msg = format!("PMI-1: {what}: reading from the process manager failed: {e}");
                    self.broken = Some(msg.clone());
                    return Err(msg);
                }
            }
        }
    }
}

/// Bytes allowed in keys, values and kvsnames: printable ASCII except space
/// and `=`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_graphic() && b != b'='
}

fn parse_reply(line: &str, what: &str) -> Result<Reply, String> {
    let mut pairs = Vec::new();
    for tok in line.split_ascii_whitespace() {
        match tok.split_once('=') {
            Some((k, v)) if !k.is_empty() => pairs.push((k.to_string(), v.to_string())),
            _ => {
                return Err(format!("PMI-1: malformed reply to {what}: '{}' is not key=value in '{}'", super::clip(tok), super::clip(line)))
            }
        }
    }
    Ok(Reply { line: line.to_string(), pairs })
}

/// Fails when the reply carries `rc` other than 0 (a missing `rc` is fine).
fn check_rc(r: &Reply, what: &str) -> Result<(), String> {
    match r.get("rc") {
        None | Some("0") => Ok(()),
        Some(rc) => {
            let msg = r.get("msg").unwrap_or("(no message)");
            Err(format!("PMI-1: {what} failed: rc={} msg={}", super::clip(rc), super::clip(msg)))
        }
    }
}

fn parse_reply_num<T: std::str::FromStr>(r: &Reply, key: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("PMI-1: malformed reply: {key}={v} is not a valid number in '{}'", r.line))
}

fn parse_env_num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.trim().parse().map_err(|_| format!("PMI-1: {name}={v:?} is not a valid non-negative number"))
}

fn check_rank_size(rank: usize, size: usize) -> Result<(), String> {
    if size == 0 {
        return Err("PMI-1: job size is 0".to_string());
    }
    if rank >= size {
        return Err(format!("PMI-1: rank {rank} is out of range for job size {size}"));
    }
    Ok(())
}

fn check_is_socket(fd: i32) -> Result<(), String> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is valid for writes of a whole `struct stat`, which is all
    // fstat writes; fstat has no other preconditions (a bad fd gives EBADF).
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if rc != 0 {
        return Err(format!("PMI-1: PMI_FD {fd} is not an open file descriptor: {}", io::Error::last_os_error()));
    }
    // SAFETY: fstat returned 0, so it fully initialised `st`.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(format!("PMI-1: PMI_FD {fd} is not a socket"));
    }
    Ok(())
}

fn set_cloexec(fd: i32) -> Result<(), String> {
    // SAFETY: F_GETFD/F_SETFD only read and write the descriptor flags of
    // `fd`; they take no pointers and have no memory-safety preconditions.
    let rc = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags < 0 {
            flags
        } else {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC)
        }
    };
    if rc < 0 {
        return Err(format!("PMI-1: cannot mark PMI_FD {fd} close-on-exec: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// One `send(2)` call with `MSG_NOSIGNAL` (so a closed peer yields EPIPE
/// rather than killing a host program that does not ignore SIGPIPE).
fn send_once(conn: &File, data: &[u8], extra_flags: i32) -> io::Result<usize> {
    // SAFETY: `data` is a live, initialised slice of `data.len()` bytes for the
    // duration of the call, and `conn` keeps the descriptor open.
    let n = unsafe { libc::send(conn.as_raw_fd(), data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL | extra_flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        // n >= 0 and at most data.len(), so it fits in usize.
        Ok(n as usize)
    }
}

fn send_all(conn: &File, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        match send_once(conn, data, 0) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Like `send_all` but never blocks in the kernel, giving up after `limit`.
fn send_nonblocking(conn: &File, mut data: &[u8], limit: Duration) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    while !data.is_empty() {
        match send_once(conn, data, libc::MSG_DONTWAIT) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The job-wide exchange over the KVS: binary values travel as hex, split over several keys when
/// longer than the server's value limit (`<key>-<rank>` holds `<parts>.<first part>`, then
/// `<key>-<rank>-<i>` the others); one barrier per round.
impl super::Exchange for Pmi1 {
    fn allgather(&mut self, key: &str, value: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        if value.len() > super::uid::MAX_VALUE {
            return Err(format!("PMI-1: allgather('{key}') value of {} bytes is larger than {}", value.len(), super::uid::MAX_VALUE));
        }
        let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
        // Room for "<parts>." in the first value; an even number of hex digits per part.
        let chunk = (self.max_value_len().saturating_sub(8) & !1).max(2);
        let parts: Vec<&str> = hex.as_bytes().chunks(chunk).map(|c| std::str::from_utf8(c).unwrap_or("")).collect();
        let nparts = parts.len().max(1);
        self.put(&format!("{key}-{}", self.rank), &format!("{nparts}.{}", parts.first().copied().unwrap_or("")))?;
        for (i, p) in parts.iter().enumerate().skip(1) {
            self.put(&format!("{key}-{}-{i}", self.rank), p)?;
        }
        self.barrier()?;
        let mut out = Vec::with_capacity(self.size);
        for r in 0..self.size {
            if r == self.rank {
                out.push(value.to_vec());
                continue;
            }
            let first = self.get(&format!("{key}-{r}"))?;
            let bad = || format!("PMI-1: rank {r}'s value of '{key}' is malformed");
            let (n, head) = first.split_once('.').ok_or_else(bad)?;
            let n: usize = n.parse().map_err(|_| bad())?;
            // Bounded (issue 30): a value is at most 1 MiB, so at most this many parts; a
            // process manager that claims more is not followed for ever.
            let max_parts = 2 * super::uid::MAX_VALUE / chunk + 1;
            if n == 0 || n > max_parts {
                return Err(format!(
                    "PMI-1: rank {r}'s value of '{key}' claims {n} parts; a value of at most {} bytes has 1 to {max_parts}",
                    super::uid::MAX_VALUE
                ));
            }
            let mut text = head.to_string();
            for i in 1..n {
                text.push_str(&self.get(&format!("{key}-{r}-{i}"))?);
            }
            out.push(unhex(&text).ok_or_else(bad)?);
        }
        Ok(out)
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests;
