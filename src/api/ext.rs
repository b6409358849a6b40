//! The debugging extensions of ishmemx.h, host side: `ishmemx_print` (the exported full form;
//! the headers add the one- and two-argument forms), `ishmemx_timestamp(_nbi)` and
//! `ishmemx_nop(_no_r)`. The device side is ishmem/cuda_impl.cuh (`ishmemi::print`,
//! `timestamp`, `nop`). Callable before init (print, timestamp into host memory, nop).
//!
//! What they mean (Intel SHMEM's names, our definitions):
//! - print: DEBUG (only with ISHMEM_DEBUG=1), WARNING and ERROR lines go to stderr tagged like
//!   the library's own (`[PE n] WARNING: [file:line: func: ]text`); ERROR then ends the job
//!   (status 1, the peers told, as a fatal library error); STDOUT and STDERR write the text
//!   alone to the C streams (flushed), as `printf` would.
//! - timestamp: writes a clock reading into an 8-byte cell: on the host CLOCK_REALTIME in
//!   nanoseconds, in kernels the GPU's %globaltimer (also nanoseconds, set from the host's
//!   real-time clock by the driver), so that stamps of both sides share a scale. The blocking
//!   form's store is visible to others at return, the nbi form's by the next quiet (on the
//!   host both are complete at return). The reference stamps with the host's TSC read by its
//!   proxy thread; no proxy serves kernels here.
//! - nop: the reference's do-nothing proxy request (with or without a reply), for measuring the
//!   proxy path; nothing on this backend goes through a proxy, so both return at once.

use crate::core::{is_running, rma, state};
use crate::ffi::{debug_on, emit, exit_now, fatal, guard, pe_tag};
use std::ffi::{c_char, c_int, c_long, CStr};

extern "C" {
    // glibc's C streams: STDOUT/STDERR messages go through them, in order with the program's
    // own stdio output.
    static mut stdout: *mut libc::FILE;
    static mut stderr: *mut libc::FILE;
}

/// `ishmemx_print_msg_type_t`.
const DEBUG: c_int = 0;
const WARNING: c_int = 1;
const ERROR: c_int = 2;
const STDOUT: c_int = 3;
const STDERR: c_int = 4;

/// The text of a C string that may be NULL (`None`).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    // SAFETY: per the caller.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// One tagged message line: `[PE n] KIND: [file:line: func: ]text` (a trailing newline of the
/// text dropped: one line per message).
pub fn print_line(kind: &str, pe: &str, loc: Option<(&str, c_long, &str)>, out: &str) -> String {
    let out = out.strip_suffix('\n').unwrap_or(out);
    match loc {
        Some((file, line, func)) => format!("[PE {pe}] {kind}: {file}:{line}: {func}: {out}"),
        None => format!("[PE {pe}] {kind}: {out}"),
    }
}

/// `void ishmemx_print(const char *file, long int line, const char *func, const char *out,
/// ishmemx_print_msg_type_t msg_type)`: file NULL leaves the location out (the short forms).
#[no_mangle]
pub unsafe extern "C" fn ishmemx_print(file: *const c_char, line: c_long, func: *const c_char, out: *const c_char, msg_type: c_int) {
    const F: &str = "ishmemx_print";
    guard(F, || {
        if out.is_null() {
            fatal(F, "out is NULL");
        }
        if !(DEBUG..=STDERR).contains(&msg_type) {
            fatal(F, &format!("invalid message type {msg_type} (ISHMEMX_PRINT_DEBUG .. ISHMEMX_PRINT_STDERR are 0 .. 4)"));
        }
        if msg_type == STDOUT || msg_type == STDERR {
            // SAFETY: out is a NUL-terminated string (the API contract); the streams are glibc's,
            // valid for the whole process.
            unsafe {
                let s = if msg_type == STDOUT { stdout } else { stderr };
                libc::fputs(out, s);
                libc::fflush(s);
            }
            return;
        }
        if msg_type == DEBUG && !debug_on() {
            return;
        }
        // SAFETY: the arguments are NULL or NUL-terminated strings (the API contract).
        let (out_s, file_s, func_s) = unsafe { (text(out).unwrap_or_default(), text(file), text(func)) };
        let loc = file_s.as_deref().map(|f| (f, line, func_s.as_deref().unwrap_or("?")));
        let kind = match msg_type {
            DEBUG => "DEBUG",
            WARNING => "WARNING",
            _ => "ERROR",
        };
        emit(&print_line(kind, &pe_tag(), loc, &out_s));
        if msg_type == ERROR {
            crate::core::abort_job();
            exit_now(1);
        }
    })
}

/// A clock reading in nanoseconds (CLOCK_REALTIME, the scale of the GPU's %globaltimer).
pub fn now_ns() -> u64 {
    // SAFETY: ts is plain data written by clock_gettime.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Writes `now_ns()` into the cell `dst`: through the GPU when it lies in this PE's GPU heap,
/// else a store (host memory).
///
/// # Safety
/// `dst` is an 8-byte cell writable from the host, or in this PE's symmetric heap.
unsafe fn stamp(func: &str, dst: usize) {
    if dst == 0 {
        fatal(func, "dst is NULL");
    }
    if !dst.is_multiple_of(8) {
        fatal(func, &format!("dst {dst:#x} is not aligned to 8 bytes"));
    }
    let v = now_ns();
    if is_running() {
        let st = state(func);
        if st.gpu_heap(dst).is_some() {
            // SAFETY: v is readable for 8 bytes; dst is checked by the core against the heap.
            unsafe { rma::put(st, func, dst, (&v as *const u64).cast(), 8, st.me) };
            return;
        }
    }
    // SAFETY: dst is an aligned, writable 8-byte cell (the API contract).
    unsafe { std::ptr::write_volatile(dst as *mut u64, v) };
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
}

/// `void ishmemx_timestamp(ishmemx_ts_handle_t dst)`.
#[no_mangle]
pub unsafe extern "C" fn ishmemx_timestamp(dst: usize) {
    const F: &str = "ishmemx_timestamp";
    // SAFETY: the API contract on dst.
    guard(F, || unsafe { stamp(F, dst) })
}

/// `void ishmemx_timestamp_nbi(ishmemx_ts_handle_t dst)`: on the host the same as the blocking
/// form (the store is complete at return, which satisfies "by the next quiet").
#[no_mangle]
pub unsafe extern "C" fn ishmemx_timestamp_nbi(dst: usize) {
    const F: &str = "ishmemx_timestamp_nbi";
    // SAFETY: the API contract on dst.
    guard(F, || unsafe { stamp(F, dst) })
}

/// `void ishmemx_nop(void)`: returns at once (no proxy path to exercise on the host).
#[no_mangle]
pub extern "C" fn ishmemx_nop() {}

/// `void ishmemx_nop_no_r(void)`: returns at once.
#[no_mangle]
pub extern "C" fn ishmemx_nop_no_r() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tagged() {
        assert_eq!(print_line("WARNING", "3", None, "low on fuel\n"), "[PE 3] WARNING: low on fuel");
        assert_eq!(print_line("DEBUG", "?", Some(("a.c", 12, "main")), "x"), "[PE ?] DEBUG: a.c:12: main: x");
    }

    #[test]
    fn clock_moves_forward() {
        let a = now_ns();
        let b = now_ns();
        assert!(a > 1_600_000_000 * 1_000_000_000 && b >= a);
    }
}
