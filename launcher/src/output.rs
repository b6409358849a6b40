//! `--tag-output` support: one thread per PE pipe copies complete lines to
//! `ishmrun`'s own stdout or stderr, each prefixed with `[PE i] `.
//!
//! Each prefixed line is emitted with a single locked `write_all`, so lines of
//! different PEs never interleave. A final line without a newline is flushed
//! at end of file with a newline added. Write errors (e.g. a closed stdout)
//! are ignored, but the pipe keeps being drained so that PEs never block.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Which of `ishmrun`'s output streams a pump writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Counts running pump threads, so that the launcher can wait for the output
/// to drain before exiting.
#[derive(Debug, Clone, Default)]
pub struct Drain {
    active: Arc<(Mutex<usize>, Condvar)>,
}

/// Decrements the active count when a pump finishes (or is never started).
struct ActiveGuard {
    active: Arc<(Mutex<usize>, Condvar)>,
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let (count, cv) = &*self.active;
        let mut n = count.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        cv.notify_all();
    }
}

impl Drain {
    pub fn new() -> Self {
        Self::default()
    }

    fn enter(&self) -> ActiveGuard {
        let (count, _) = &*self.active;
        *count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        ActiveGuard { active: Arc::clone(&self.active) }
    }

    /// Starts a thread copying `reader` to `stream`, prefixing each line.
    pub fn start_pump<R>(&self, reader: R, prefix: String, stream: Stream) -> io::Result<()>
    where
        R: Read + Send + 'static,
    {
        let guard = self.enter();
        std::thread::Builder::new()
            .name(format!("ishmrun-{stream:?}"))
            .spawn(move || {
                let _guard = guard;
                pump(reader, prefix.as_bytes(), stream);
            })
            .map(|_| ())
    }

    /// Waits until every pump has finished or `limit` has passed; returns
    /// whether all output was drained. A limit is needed because a PE's
    /// background descendants may keep its pipe open indefinitely.
    pub fn wait(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let (count, cv) = &*self.active;
        let mut n = count.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            n = match cv.wait_timeout(n, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }
}

/// Copies lines from `reader` until end of file or a read error.
fn pump<R: Read>(reader: R, prefix: &[u8], stream: Stream) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => emit(stream, &tag_line(prefix, &line)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}

/// Builds `prefix + line`, ending in exactly the line's own newline (or an
/// added one if the line had none).
pub fn tag_line(prefix: &[u8], line: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(prefix.len() + line.len() + 1);
    buf.extend_from_slice(prefix);
    buf.extend_from_slice(line);
    if buf.last() != Some(&b'\n') {
        buf.push(b'\n');
    }
    buf
}

/// Writes one complete tagged line while holding the stream's lock.
fn emit(stream: Stream, buf: &[u8]) {
    match stream {
        Stream::Stdout => {
            let mut out = io::stdout().lock();
            let _ = out.write_all(buf).and_then(|()| out.flush());
        }
        Stream::Stderr => {
            let mut err = io::stderr().lock();
            let _ = err.write_all(buf).and_then(|()| err.flush());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_line_adds_prefix_and_newline() {
        assert_eq!(tag_line(b"[PE 3] ", b"hi\n"), b"[PE 3] hi\n".to_vec());
        assert_eq!(tag_line(b"[PE 3] ", b"partial"), b"[PE 3] partial\n".to_vec());
        assert_eq!(tag_line(b"[PE 0] ", b"\n"), b"[PE 0] \n".to_vec());
    }

    #[test]
    fn drain_waits_for_pumps() {
        let drain = Drain::new();
        assert!(drain.wait(Duration::from_millis(1)));
        let guard = drain.enter();
        assert!(!drain.wait(Duration::from_millis(20)));
        drop(guard);
        assert!(drain.wait(Duration::from_millis(20)));
    }
}
