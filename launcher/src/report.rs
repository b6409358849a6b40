//! The report pipe: how the PEs tell `ishmrun` which PE made them end, so that the summary
//! names the PE that failed first even when one that ended because of it is reaped first.
//!
//! `ishmrun` makes a pipe before starting the PEs; each PE inherits its write end (the
//! descriptor number and the pipe's inode are in `ISHMRUN_REPORT=<fd>:<inode>`). A PE whose
//! library ends it because another PE failed or died writes one line `peer <rank> <cause>`
//! first. The monitor reads the lines without blocking and follows `rank -> cause` to the PE
//! that started it all. A PE that calls `ishmem_global_exit(status)` writes `global <rank>
//! <status>` before it exits: the others end by themselves with that status, and the monitor
//! gives them the time to.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The variable that hands the write end to the PEs.
pub const ENV_REPORT: &str = "ISHMRUN_REPORT";

/// The pipe and what was read from it so far.
#[derive(Debug)]
pub struct ReportPipe {
    read: OwnedFd,
    write: Option<OwnedFd>,
    ino: u64,
    pending: Vec<u8>,
    /// rank -> the PE it said made it end.
    causes: HashMap<usize, usize>,
    /// rank -> the status it passed to `ishmem_global_exit`.
    global: HashMap<usize, i32>,
}

impl ReportPipe {
    /// A new pipe: both ends close-on-exec (the PEs' copy of the write end is made
    /// inheritable in the child only, by `inherit_in_child`); the read end non-blocking.
    pub fn new() -> io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: fds is a writable array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 returned two new descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // Writes by the PEs must not fail with EAGAIN: the write end blocks (the pipe never
        // holds more than a line per PE).
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, 0) };
        // SAFETY: st is plain data written by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat on a descriptor we own into a writable stat.
        if unsafe { libc::fstat(read.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ReportPipe { read, write: Some(write), ino: st.st_ino, pending: Vec::new(), causes: HashMap::new(), global: HashMap::new() })
    }

    /// The write end's descriptor (while it is open).
    pub fn write_fd(&self) -> Option<RawFd> {
        self.write.as_ref().map(|w| w.as_raw_fd())
    }

    /// The value of `ISHMRUN_REPORT` for the PEs.
    pub fn env_value(&self) -> Option<String> {
        self.write_fd().map(|fd| format!("{fd}:{}", self.ino))
    }

    /// Closes this process's write end once every PE has been started.
    pub fn close_write(&mut self) {
        self.write = None;
    }

    /// Reads what the PEs wrote so far (never blocks).
    pub fn poll(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reading into a writable buffer of its length from a descriptor we own.
            let n = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            self.pending.extend_from_slice(&buf[..n as usize]);
        }
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            match parse(&String::from_utf8_lossy(&line)) {
                Some(Line::Peer(rank, cause)) => {
                    self.causes.entry(rank).or_insert(cause);
                }
                Some(Line::Global(rank, status)) => {
                    self.global.entry(rank).or_insert(status);
                }
                None => {}
            }
        }
    }

    /// The PE that made `rank` end, following the reports (itself when it reported nothing).
    pub fn root(&self, rank: usize) -> usize {
        root(&self.causes, rank)
    }

    /// The status PE `rank` passed to `ishmem_global_exit`, when it said it called it.
    pub fn global_exit(&self, rank: usize) -> Option<i32> {
        self.global.get(&rank).copied()
    }
}

/// One line of the pipe.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// `peer <rank> <cause>`: PE `rank` ends because PE `cause` failed or died.
    Peer(usize, usize),
    /// `global <rank> <status>`: PE `rank` called `ishmem_global_exit(status)`.
    Global(usize, i32),
}

fn parse(line: &str) -> Option<Line> {
    let mut w = line.split_whitespace();
    let kind = w.next()?;
    let rank = w.next()?.parse().ok()?;
    match kind {
        "peer" => Some(Line::Peer(rank, w.next()?.parse().ok()?)),
        "global" => Some(Line::Global(rank, w.next()?.parse().ok()?)),
        _ => None,
    }
}

/// Follows `rank -> cause` while there is a report, stopping at a cycle.
fn root(causes: &HashMap<usize, usize>, rank: usize) -> usize {
    let mut r = rank;
    for _ in 0..=causes.len() {
        match causes.get(&r) {
            Some(&c) if c != r => r = c,
            _ => return r,
        }
    }
    r
}

/// Makes `fd` survive exec in the child about to exec (run between fork and exec: fcntl is
/// async-signal-safe).
pub fn inherit_in_child(fd: RawFd) {
    // SAFETY: fcntl(F_SETFD) only changes a descriptor flag.
    unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_lines() {
        assert_eq!(parse("peer 2 1\n"), Some(Line::Peer(2, 1)));
        assert_eq!(parse("peer 2"), None);
        assert_eq!(parse("other 2 1"), None);
        assert_eq!(parse("peer x 1"), None);
        assert_eq!(parse("global 1 5\n"), Some(Line::Global(1, 5)));
        assert_eq!(parse("global 1 -3"), Some(Line::Global(1, -3)));
        assert_eq!(parse("global 1"), None);
    }

    #[test]
    fn roots() {
        let m: HashMap<usize, usize> = [(0, 1), (2, 1), (3, 0)].into_iter().collect();
        assert_eq!(root(&m, 0), 1);
        assert_eq!(root(&m, 3), 1);
        assert_eq!(root(&m, 1), 1);
        assert_eq!(root(&m, 7), 7);
        let cycle: HashMap<usize, usize> = [(0, 1), (1, 0)].into_iter().collect();
        assert!(root(&cycle, 0) <= 1);
    }

    #[test]
    fn pipe_round_trip() {
        let mut p = ReportPipe::new().unwrap();
        let fd = p.write_fd().unwrap();
        assert!(p.env_value().unwrap().starts_with(&format!("{fd}:")));
        let msg = b"peer 0 2\npeer 1 2\npe";
        // SAFETY: writing a buffer of its length to our own pipe.
        unsafe { libc::write(fd, msg.as_ptr().cast(), msg.len()) };
        p.poll();
        assert_eq!(p.root(0), 2);
        assert_eq!(p.root(1), 2);
        // SAFETY: as above.
        unsafe { libc::write(fd, b"er 3 0\n".as_ptr().cast(), 7) };
        p.poll();
        assert_eq!(p.root(3), 2);
        assert_eq!(p.global_exit(4), None);
        // SAFETY: as above.
        unsafe { libc::write(fd, b"global 4 5\n".as_ptr().cast(), 11) };
        p.poll();
        assert_eq!(p.global_exit(4), Some(5));
        assert_eq!(p.root(4), 4);
        p.close_write();
        assert_eq!(p.write_fd(), None);
        p.poll();
    }
}
