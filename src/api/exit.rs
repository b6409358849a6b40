//! Leaving the job: `ishmem_global_exit`, and what happens to a PE that ends without
//! `ishmem_finalize` (as OpenMPI's OSHMEM and Sandia OpenSHMEM do):
//! - exit status 0 (main returned, or `exit(0)`): the library finalizes at exit, quietly. This
//!   is `ishmem_finalize`, collective like it: the PE waits there for the others to finalize
//!   (explicitly or at their own exit), and the job ends with status 0.
//! - a nonzero exit status: a failure; the PE leaves without finalizing, and the other PEs end
//!   with `PE n (pid p) died or exited without calling ishmem_finalize` (their watchdogs).
//! - `ishmem_global_exit(status)`: every PE of the job ends with `status`, at once.
//!
//! The exit hook (glibc `on_exit`, which passes the status) is registered once, after the first
//! successful init. Owns only that hook and the global-exit entry point; the teardown itself
//! is `core::finalize`, the signalling `core::mark_global_exit` (the node's control segment).

use crate::core;
use crate::ffi::guard;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering::*};

extern "C" {
    /// glibc: runs `f(status, arg)` at `exit` (and return from main), in reverse order of
    /// registration, with the others registered by `atexit`.
    fn on_exit(f: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

static REGISTERED: AtomicBool = AtomicBool::new(false);
/// Set by `ishmem_global_exit`: the exit hook must not finalize (the others are leaving).
static GLOBAL_EXIT: AtomicBool = AtomicBool::new(false);

/// Registers the exit hook (once per process). Called after init succeeded.
pub fn register() {
    if REGISTERED.swap(true, AcqRel) {
        return;
    }
    // SAFETY: on_exit stores a function pointer with static lifetime and a null argument.
    if unsafe { on_exit(at_exit, std::ptr::null_mut()) } != 0 {
        crate::ffi::warn(
            "ishmem_init",
            "cannot register the exit hook: a PE that ends without ishmem_finalize will end the job as a failure",
        );
    }
}

/// The exit hook: finalizes a PE that exits with status 0 while still initialized.
extern "C" fn at_exit(status: c_int, _arg: *mut c_void) {
    const F: &str = "ishmem_finalize";
    guard(F, || {
        // libfabric's shm provider leaves its region file behind otherwise (its endpoint is
        // never closed); after finalize below, or now where the PE leaves without it.
        struct Files;
        impl Drop for Files {
            fn drop(&mut self) {
                core::net::remove_provider_files();
            }
        }
        let _files = Files;
        if status != 0 || GLOBAL_EXIT.load(Acquire) || !core::is_running() {
            return;
        }
        if crate::ffi::debug_on() {
            crate::ffi::emit(&format!(
                "[PE {}] DEBUG: exiting with status 0 without ishmem_finalize: finalizing at exit",
                crate::ffi::pe_tag()
            ));
        }
        crate::api::setup::finalize(F);
    })
}

/// `void ishmem_global_exit(int status)` (OpenSHMEM 1.5): ends every PE of the job with
/// `status`. This PE's C stdio is flushed and it exits at once (no exit handlers run); every
/// other PE's watchdog sees the request within `ISHMEM_PEER_CHECK_MS` and exits likewise,
/// whatever it is doing. Before init (or after finalize) only this process exits.
#[no_mangle]
pub extern "C" fn ishmem_global_exit(status: c_int) {
    const F: &str = "ishmem_global_exit";
    guard(F, || {
        GLOBAL_EXIT.store(true, Release);
        if core::is_running() {
            // Before init only this process exits: nothing for the launcher to wait for. Told
            // first: across nodes the other nodes' PEs may end before this one (below).
            crate::ffi::tell_launcher_global_exit(status);
        }
        core::mark_global_exit(status);
        crate::ffi::exit_now(status)
    })
}
