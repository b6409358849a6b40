//! Binders: how the `__constant__ ishmemi_dstate` of each CUDA translation unit of the user's
//! program gets the library's device state. The device header registers one binder per
//! translation unit at static-init time (`ishmemx_cuda_register_binder`), usually before
//! `ishmem_init`; init calls every recorded binder once the GPU heap and the IPC mappings
//! exist. A binder registered later (a library loaded with dlopen) runs at once. A binder that
//! fails (its module may not be registered with the CUDA runtime yet) stays pending and is
//! retried at the start of the next `ishmem_barrier_all`, `ishmem_sync_all`, `ishmem_quiet`,
//! `ishmem_fence`, `ishmem_malloc`/`calloc`/`align`/`free` or `ishmemx_gpu_in_use` (see
//! `retry_pending`), which cost one relaxed load when nothing is pending.
//!
//! Binders are user code: no lock of this module is held while one runs.

use super::state::DevState;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Mutex;

/// `int (*bind)(const void *state, size_t bytes)`: returns 0 on success.
pub type Binder = unsafe extern "C" fn(state: *const c_void, bytes: usize) -> c_int;

struct Registry {
    /// The state of the running PE; `None` before init and after finalize (or on the CPU
    /// backend, where there is nothing to bind).
    state: Option<DevState>,
    /// Binders not yet run successfully.
    pending: Vec<Binder>,
    /// Binders run successfully (rebound if the state is published again).
    bound: Vec<Binder>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { state: None, pending: Vec::new(), bound: Vec::new() });
/// Set while binders are pending and a state exists to give them.
static PENDING: AtomicBool = AtomicBool::new(false);

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn call(b: Binder, st: &DevState) -> bool {
    let bytes = st.as_bytes();
    // SAFETY: the binder contract: it reads `bytes` bytes from the pointer during the call.
    unsafe { b(bytes.as_ptr().cast(), bytes.len()) == 0 }
}

/// Runs `todo` with `st`; the ones that fail go back to pending.
fn run(todo: Vec<Binder>, st: &DevState) {
    let (ok, failed): (Vec<Binder>, Vec<Binder>) = todo.into_iter().partition(|&b| call(b, st));
    let mut r = registry();
    r.bound.extend(ok);
    if !failed.is_empty() {
        r.pending.extend(failed);
        if r.state.is_some() {
            PENDING.store(true, Release);
        }
    }
}

/// Records a binder; runs it at once when a state is published.
pub fn register(b: Binder) {
    let st = {
        let mut r = registry();
        match r.state {
            Some(st) => st,
            None => {
                r.pending.push(b);
                return;
            }
        }
    };
    run(vec![b], &st);
}

/// Publishes the state of a running PE and runs every pending binder with it (init). Returns
/// how many binders failed (they stay pending).
pub fn publish(st: DevState) -> usize {
    let todo = {
        let mut r = registry();
        r.state = Some(st);
        PENDING.store(false, Relaxed);
        let mut all = std::mem::take(&mut r.bound);
        all.append(&mut r.pending);
        all
    };
    run(todo, &st);
    registry().pending.len()
}

/// Whether binders wait for a retry (one relaxed load).
#[inline(always)]
pub fn any_pending() -> bool {
    PENDING.load(Relaxed)
}

/// Retries the pending binders, if any (a relaxed load when none are).
#[inline]
pub fn retry_pending() {
    if PENDING.load(Relaxed) {
        retry_slow();
    }
}

#[cold]
fn retry_slow() {
    let (todo, st) = {
        let mut r = registry();
        let Some(st) = r.state else { return };
        PENDING.store(false, Relaxed);
        (std::mem::take(&mut r.pending), st)
    };
    run(todo, &st);
}

/// Forgets the state at finalize (binders stay recorded for a later init... which the
/// library does not allow, but the list costs nothing).
pub fn withdraw() {
    let mut r = registry();
    r.state = None;
    PENDING.store(false, Relaxed);
}

/// A copy of the published state (for `ishmemx_cumodule_init`).
pub fn published() -> Option<DevState> {
    registry().state
}

/// Number of binders still pending (tests, debug output).
pub fn pending_count() -> usize {
    registry().pending.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI32;

    static SEEN_PE: AtomicI32 = AtomicI32::new(-1);
    static FAILS_LEFT: AtomicI32 = AtomicI32::new(1);
    static CALLS: AtomicI32 = AtomicI32::new(0);

    unsafe extern "C" fn good(state: *const c_void, bytes: usize) -> c_int {
        assert_eq!(bytes, size_of::<DevState>());
        // SAFETY: the registry passes a DevState of `bytes` bytes.
        let st = unsafe { &*(state as *const DevState) };
        SEEN_PE.store(st.my_pe, SeqCst);
        0
    }

    unsafe extern "C" fn flaky(_state: *const c_void, _bytes: usize) -> c_int {
        CALLS.fetch_add(1, SeqCst);
        (FAILS_LEFT.fetch_sub(1, SeqCst) > 0) as c_int
    }

    // One test drives the whole life cycle: the registry is process-wide.
    #[test]
    fn binders_run_at_publish_later_and_retry() {
        register(good);
        register(flaky);
        assert_eq!(SEEN_PE.load(SeqCst), -1);
        assert!(!PENDING.load(SeqCst));
        retry_pending(); // nothing published: nothing runs
        assert_eq!(CALLS.load(SeqCst), 0);
        let st = DevState::new(3, 0x1000, 1 << 20, &[1, 2, 3, 0x1000]);
        assert_eq!(publish(st), 1, "flaky fails once and stays pending");
        assert_eq!(SEEN_PE.load(SeqCst), 3);
        assert!(PENDING.load(SeqCst));
        retry_pending();
        assert_eq!(CALLS.load(SeqCst), 2);
        assert_eq!(pending_count(), 0);
        assert!(!PENDING.load(SeqCst));
        SEEN_PE.store(-1, SeqCst);
        register(good); // after init: runs at once
        assert_eq!(SEEN_PE.load(SeqCst), 3);
        assert_eq!(published().map(|s| s.my_pe), Some(3));
        withdraw();
        assert!(published().is_none());
    }
}
