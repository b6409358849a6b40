//! The C boundary: the panic guard every exported body runs in, and the PE-tagged fatal
//! error that ends the whole job. Owns nothing else; it must not hold locks while exiting.

use std::panic::{catch_unwind, AssertUnwindSafe};

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
    if let Some(me) = crate::core::my_pe_if_running().or_else(crate::core::boot_rank) {
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

/// Whether `ISHMEM_DEBUG` is on: the running PE's setting, else the environment's (before
/// init).
pub fn debug_on() -> bool {
    if crate::core::is_running() {
        return crate::core::state("").cfg.debug;
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
    crate::core::abort_job();
    exit_now(1)
}

/// Ends this PE because another one failed: waits a moment first, so that the launcher sees
/// the PE that failed first exit first and names it.
pub fn exit_after_peer(msg: &str) -> ! {
    emit(msg);
    std::thread::sleep(std::time::Duration::from_millis(300));
    exit_now(1)
}

/// Flushes C stdio (the program's own buffered output) and exits without running atexit
/// handlers, which may call back into the library.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: fflush(NULL) flushes every open C stream; _exit never returns.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::_exit(code)
    }
}
