//! The C boundary: the panic guard every exported body runs in, and the PE-tagged fatal
//! error that ends the whole job. Owns nothing else; it must not hold locks while exiting.
//!
//! A leaf: what it needs of the running PE (its number for the tag, its debug setting, the
//! abort action that tells the other PEs) are hooks the core sets at init (`set_hooks`); before
//! that the tag is the launcher's rank and there is nothing to abort.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// What the C boundary asks of the running PE, set by the core at the start of init.
pub struct Hooks {
    /// This PE's number, once init has learned it (the running PE's, else the launcher's rank).
    pub pe: fn() -> Option<usize>,
    /// `ISHMEM_DEBUG` of the running PE (None: not running).
    pub debug: fn() -> Option<bool>,
    /// Tells the other PEs that this one failed (best effort, never blocks).
    pub abort: fn(),
    /// Tells the PEs of other nodes that PE `cause` failed.
    pub tell_other_nodes: fn(usize),
    /// Tells the other nodes that PE `pe` called `ishmem_global_exit(status)` (jobs across
    /// nodes: this node's leader does, before its connections close).
    pub tell_global_exit: fn(usize, i32),
    /// Removes what this process left behind that must not outlive it (the network
    /// provider's files), before `exit_now` ends the process.
    pub before_exit: fn(),
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

/// Registers the core's hooks (the first registration stays: there is one core).
pub fn set_hooks(h: Hooks) {
    let _ = HOOKS.set(h);
}

fn hooks() -> Option<&'static Hooks> {
    HOOKS.get()
}

/// This PE's number as far as init has learned it.
fn my_pe() -> Option<usize> {
    hooks().and_then(|h| (h.pe)())
}

/// Runs an exported function's body; a Rust panic becomes a PE-tagged fatal error instead
/// of unwinding into C.
#[inline(always)]
pub fn guard<R>(func: &'static str, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            fatal(func, &format!("internal error: {msg}"))
        }
    }
}

/// The PE number for message tags: the running PE, else the launcher's rank, else `?`.
pub fn pe_tag() -> String {
    if let Some(me) = my_pe() {
        return me.to_string();
    }
    crate::bootstrap::rank_hint().map_or_else(|| "?".into(), |r| r.to_string())
}

/// Writes one whole line to stderr with a single system call, so that the lines of several
/// PEs sharing a terminal or pipe never interleave.
pub fn emit(line: &str) {
    let mut s = String::with_capacity(line.len() + 1);
    s.push_str(line);
    if !s.ends_with('\n') {
        s.push('\n');
    }
    // SAFETY: s is a valid buffer of s.len() bytes; a short or failed write loses the message,
    // nothing else.
    unsafe { libc::write(2, s.as_ptr().cast(), s.len()) };
}

/// Prints `[PE n] WARNING: func: msg` on stderr.
pub fn warn(func: &str, msg: &str) {
    emit(&format!("[PE {}] WARNING: {func}: {msg}", pe_tag()));
}

/// Prints `[PE n] INFO: func: msg` on stderr (what the user asked to see, e.g. profiling counts).
pub fn info(func: &str, msg: &str) {
    emit(&format!("[PE {}] INFO: {func}: {msg}", pe_tag()));
}

/// Whether `ISHMEM_DEBUG` is on: the running PE's setting, else the environment's (before
/// init).
pub fn debug_on() -> bool {
    if let Some(on) = hooks().and_then(|h| (h.debug)()) {
        return on;
    }
    std::env::var("ISHMEM_DEBUG").ok().and_then(|v| crate::env::parse_bool(&v).ok()).unwrap_or(false)
}

/// Says why a call failed that reports the failure by its return value (a status, NULL,
/// ISHMEM_TEAM_INVALID): a `[PE n] WARNING: func: msg` line with ISHMEM_DEBUG=1, nothing
/// otherwise. `ERROR:` lines are for failures that end the job.
pub fn status_note(func: &str, msg: &str) {
    if debug_on() {
        warn(func, msg);
    }
}

/// Prints `[PE n] ERROR: func: msg`, tells the other PEs of the node, and ends this process
/// with status 1. The launcher (ishmrun, mpirun, mpiexec) and the other PEs' watchdogs then
/// end the rest of the job.
#[cold]
#[inline(never)]
pub fn fatal(func: &str, msg: &str) -> ! {
    emit(&format!("[PE {}] ERROR: {func}: {msg}", pe_tag()));
    if let Some(h) = hooks() {
        (h.abort)();
    }
    exit_now(1)
}

/// Ends this PE because PE `cause` failed: tells ishmrun so (its summary then names `cause`,
/// whichever PE it reaps first), and waits a moment first, so that other launchers see the PE
/// that failed first exit first.
pub fn exit_after_peer(msg: &str, cause: usize) -> ! {
    // One report per PE: a second thread that finds a reason to end (the watchdog and the
    // network's progress thread both may) waits for the first to end the process.
    static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if EXITING.swap(true, std::sync::atomic::Ordering::AcqRel) {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    emit(msg);
    tell_launcher(cause);
    if let Some(h) = hooks() {
        (h.tell_other_nodes)(cause);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    exit_now(1)
}

/// Writes `peer <me> <cause>` into ishmrun's report pipe, when this PE was started by ishmrun
/// (`ISHMRUN_REPORT=<fd>:<inode>`, checked against the descriptor so that a program that closed
/// it and opened something else there is never written into). One write of a few bytes into a
/// pipe: atomic, never interleaved with another PE's.
pub fn tell_launcher(cause: usize) {
    if let Some(me) = my_pe() {
        report_line(&format!("peer {me} {cause}\n"));
    }
}

/// Tells `ishmrun` (when it launched this PE) that this PE called `ishmem_global_exit(status)`:
/// a line `global <rank> <status>`, so that the launcher lets the other PEs end by themselves
/// (each within `ISHMEM_PEER_CHECK_MS`, those of other nodes once their node's leader heard)
/// instead of terminating them at once, and says why the job ended.
pub fn tell_launcher_global_exit(status: i32) {
    if let Some(me) = my_pe() {
        report_line(&format!("global {me} {status}\n"));
    }
}

/// Writes one line into ishmrun's report pipe, when this PE has one.
fn report_line(line: &str) {
    let Some(fd) = std::env::var("ISHMRUN_REPORT").ok().and_then(|v| report_fd(&v)) else { return };
    // SAFETY: fd is open (fstat checked it just now); a failed or short write loses the record.
    unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
}

/// The descriptor of `ISHMRUN_REPORT` when it is still the pipe ishmrun made.
fn report_fd(value: &str) -> Option<i32> {
    let (fd, ino) = value.split_once(':')?;
    let (fd, ino): (i32, u64) = (fd.parse().ok()?, ino.parse().ok()?);
    // SAFETY: st is plain data written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on any integer is safe; it fails for a closed descriptor.
    let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    (ok && st.st_mode & libc::S_IFMT == libc::S_IFIFO && st.st_ino == ino).then_some(fd)
}

/// Ends this PE quietly when `flag` (the job's global-exit word, `transport::shm`) says that a
/// PE called `ishmem_global_exit(status)`: with that status, as the specification asks of
/// every PE. Returns when no PE did.
pub fn check_global_exit(flag: u64, me: usize) {
    if flag == 0 {
        return;
    }
    let (pe, status) = ((flag >> 32) & 0x7fff_ffff, flag as u32 as i32);
    if pe as usize == me {
        // This PE called it: the calling thread exits once the other nodes were told.
        return;
    }
    if debug_on() {
        emit(&format!("[PE {me}] DEBUG: PE {pe} called ishmem_global_exit({status}); exiting with status {status}"));
    }
    // Jobs across nodes: this node's leader tells the other nodes' before its connections
    // close, and the node's other PEs wait until it did (the core's `global_exit_told`, a
    // hook).
    if let Some(h) = hooks() {
        (h.tell_global_exit)(pe as usize, status);
    }
    tell_launcher(pe as usize);
    exit_now(status)
}

/// Flushes C stdio (the program's own buffered output) and exits without running atexit
/// handlers, which may call back into the library.
pub fn exit_now(code: i32) -> ! {
    if let Some(h) = hooks() {
        (h.before_exit)();
    }
    // SAFETY: fflush(NULL) flushes every open C stream; _exit never returns.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}
