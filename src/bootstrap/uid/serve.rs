//! The rendezvous server of the unique id: a thread of the process that made the id (or of
//! ishmrun), which takes every rank's hello, runs the exchange's rounds and says goodbye.

use super::*;

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

    pub(super) fn shutdown(&mut self) {
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
pub(super) static SERVERS: Mutex<Vec<Server>> = Mutex::new(Vec::new());

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
pub(super) struct Conn {
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
pub(super) struct Serve {
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

pub(super) enum Step {
    Go,
    Stop,
}

impl Serve {
    pub(super) fn new(listener: TcpListener, wake: UnixStream, id: UniqueId) -> Serve {
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

    pub(super) fn n(&self) -> usize {
        self.nranks.map_or(0, |(n, _)| n)
    }

    pub(super) fn run(mut self) {
        loop {
            if let Step::Stop = self.check_time() {
                return;
            }
            let mut fds = vec![
                libc::pollfd { fd: self.wake.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: self.listener.as_raw_fd(), events: if self.failed.is_some() { 0 } else { libc::POLLIN }, revents: 0 },
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
    pub(super) fn check_time(&mut self) -> Step {
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
    pub(super) fn drain(&mut self) {
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

    pub(super) fn next_deadline(&self) -> Option<Instant> {
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

    pub(super) fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    if sock.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = sock.set_nodelay(true);
                    let conn =
                        Conn { sock, peer, inbuf: Vec::new(), out: VecDeque::new(), rank: None, since: Instant::now(), closing: false };
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

    pub(super) fn send(&mut self, i: usize, f: Arc<Vec<u8>>) {
        if let Some(c) = self.conns[i].as_mut() {
            c.out.push_back((f, 0));
        }
        self.flush(i);
    }

    /// Writes what conn `i` has queued, as far as the socket takes it.
    pub(super) fn flush(&mut self, i: usize) {
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
    pub(super) fn read(&mut self, i: usize) {
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
    pub(super) fn frames(&mut self, i: usize) -> bool {
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
    pub(super) fn protocol_error(&mut self, i: usize, msg: &str) {
        match self.conns[i].as_ref().and_then(|c| c.rank) {
            None => self.refuse(i, msg),
            Some(r) => self.fail(&format!("{msg} (rank {r})"), None),
        }
    }

    /// Sends `msg` to conn `i` alone and closes it.
    pub(super) fn refuse(&mut self, i: usize, msg: &str) {
        if let Some(c) = self.conns[i].as_mut() {
            c.closing = true;
            c.inbuf.clear();
        }
        self.send(i, Arc::new(error_frame(msg)));
    }

    /// Ends the job: every connected rank (and conn `extra`) gets `msg`.
    pub(super) fn fail(&mut self, msg: &str, extra: Option<usize>) {
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
    pub(super) fn closed(&mut self, i: usize) {
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
    pub(super) fn leave(&mut self, r: usize, why: &'static str) {
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

    pub(super) fn handle(&mut self, i: usize, ty: u8, p: &[u8]) {
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

    pub(super) fn handle_hello(&mut self, i: usize, ty: u8, p: &[u8]) {
        let peer = self.conns[i].as_ref().map_or(self.id.addr, |c| c.peer);
        if ty != T_HELLO || p.len() != HELLO_LEN || &p[..8] != MAGIC {
            let msg =
                format!("{PREFIX}: {peer} did not start with a hello of this protocol ({}); connection refused", MAGIC.escape_ascii());
            return self.refuse(i, &msg);
        }
        let version = be32(&p[8..12]);
        if version != VERSION {
            let msg = format!(
                "{PREFIX}: protocol version {version} from {peer}, this server speaks {VERSION}: every PE must use the same libishmem"
            );
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
                let msg = format!(
                    "{PREFIX}: rank {rank} says the job has {nranks} PEs, but rank {by} said {n}: every PE must pass the same nranks"
                );
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

    pub(super) fn send_to_ranks(&mut self, f: Arc<Vec<u8>>) {
        for i in 0..self.conns.len() {
            if self.conns[i].as_ref().is_some_and(|c| c.rank.is_some()) {
                self.send(i, f.clone());
            }
        }
    }

    pub(super) fn handle_round(&mut self, r: usize, p: &[u8]) {
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
