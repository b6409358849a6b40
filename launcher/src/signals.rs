//! Signal handling: catching the signals `ishmrun` forwards to its PEs,
//! sending signals, and naming them in messages.
//!
//! The handler only sets a bit in an atomic mask (async-signal-safe); the
//! monitoring loop polls the mask and forwards the signals to live PEs.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

/// Signals that `ishmrun` catches and forwards to every live PE.
pub const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Bit `s` is set when signal `s` (< 32) arrived and is not yet forwarded.
static PENDING: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if (1..32).contains(&sig) {
        PENDING.fetch_or(1u32 << sig, Ordering::SeqCst);
    }
}

/// Installs the forwarding handler for [`FORWARDED`] and makes sure `SIGCHLD`
/// has its default disposition (an inherited `SIG_IGN` would make the kernel
/// reap the PEs behind our back).
///
/// A forwarded signal that was ignored when `ishmrun` started (e.g. SIGHUP
/// under `nohup`) stays ignored, and the PEs inherit that.
pub fn install() -> io::Result<()> {
    set_disposition(libc::SIGCHLD, libc::SIG_DFL)?;
    for &sig in &FORWARDED {
        if current_disposition(sig)? != libc::SIG_IGN {
            set_disposition(sig, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t)?;
        }
    }
    Ok(())
}

/// Returns the handler currently installed for `sig`.
fn current_disposition(sig: libc::c_int) -> io::Result<libc::sighandler_t> {
    // SAFETY: an all-zero `sigaction` is a valid value of this plain C struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null `act` only queries; `old` is a valid, writable sigaction.
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(old.sa_sigaction)
}

/// Installs `handler` (a function pointer, `SIG_DFL` or `SIG_IGN`) for `sig`.
fn set_disposition(sig: libc::c_int, handler: libc::sighandler_t) -> io::Result<()> {
    // SAFETY: an all-zero `sigaction` is a valid value of this plain C struct.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: `act.sa_mask` is a valid sigset_t owned by this frame.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // SAFETY: `act` is fully initialised; the handler, if any, is an
    // async-signal-safe `extern "C"` function that lives for the whole program.
    let rc = unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Takes (and clears) the set of signals received since the last call.
pub fn take_pending() -> Vec<libc::c_int> {
    let mask = PENDING.swap(0, Ordering::SeqCst);
    (1..32).filter(|s| mask & (1u32 << s) != 0).collect()
}

/// Sends `sig` to `pid`. Errors (typically ESRCH for a process that is
/// exiting) are ignored: the caller only signals PEs it has not yet reaped.
pub fn send(pid: libc::pid_t, sig: libc::c_int) {
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` > 0 names a
    // single process (one of our unreaped children, so it cannot be recycled).
    unsafe {
        libc::kill(pid, sig);
    }
}

/// The conventional name of a signal, e.g. "SIGKILL", if it has one.
pub fn name(sig: libc::c_int) -> Option<String> {
    let fixed = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        _ => return realtime_name(sig),
    };
    Some(fixed.to_string())
}

#[cfg(target_os = "linux")]
fn realtime_name(sig: libc::c_int) -> Option<String> {
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    if sig == min {
        Some("SIGRTMIN".to_string())
    } else if sig > min && sig <= max {
        Some(format!("SIGRTMIN+{}", sig - min))
    } else {
        None
    }
}

#[cfg(not(target_os = "linux"))]
fn realtime_name(_sig: libc::c_int) -> Option<String> {
    None
}

/// "9 (SIGKILL)" or just "77" for a signal without a known name.
pub fn describe(sig: libc::c_int) -> String {
    match name(sig) {
        Some(n) => format!("{sig} ({n})"),
        None => sig.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(describe(libc::SIGKILL), "9 (SIGKILL)");
        assert_eq!(describe(libc::SIGTERM), "15 (SIGTERM)");
        assert_eq!(describe(libc::SIGSEGV), "11 (SIGSEGV)");
        assert_eq!(describe(0), "0");
        assert_eq!(describe(1000), "1000");
    }

    #[test]
    fn pending_mask_round_trip() {
        on_signal(libc::SIGHUP);
        on_signal(libc::SIGTERM);
        on_signal(99); // out of range: ignored, no panic
        let got = take_pending();
        assert_eq!(got, vec![libc::SIGHUP, libc::SIGTERM]);
        assert!(take_pending().is_empty());
    }
}
