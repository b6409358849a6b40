//! Atomic memory operations: the shims' cores check the PE and hand the target to
//! `core::amo`, which reaches it (host atomics on mapped memory, GPU atomic kernels).

pub use crate::core::amo::{Atom, AtomInt};
use crate::core::{amo, state};
use crate::ffi::fatal;
pub use crate::op::Rmw as Op;
use std::ffi::c_int;

/// # Safety
/// `dest` is checked; nothing else is dereferenced.
#[inline]
pub unsafe fn fetch<T: Atom>(func: &str, dest: *const T, pe: c_int) -> T {
    let st = state(func);
    amo::fetch(st, func, dest as usize, st.check_pe(func, pe))
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn set<T: Atom>(func: &str, dest: *mut T, value: T, pe: c_int) {
    let st = state(func);
    amo::set(st, func, dest as usize, value, st.check_pe(func, pe))
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn swap<T: Atom>(func: &str, dest: *mut T, value: T, pe: c_int) -> T {
    let st = state(func);
    amo::swap(st, func, dest as usize, value, st.check_pe(func, pe))
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn compare_swap<T: AtomInt>(func: &str, dest: *mut T, cond: T, value: T, pe: c_int) -> T {
    let st = state(func);
    amo::compare_swap(st, func, dest as usize, cond, value, st.check_pe(func, pe))
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn fetch_op<T: AtomInt>(func: &str, dest: *mut T, op: Op, value: T, pe: c_int) -> T {
    let st = state(func);
    amo::fetch_op(st, func, dest as usize, op, value, st.check_pe(func, pe))
}

/// A non-fetching `op`: on the network it does not wait for the old value (complete at quiet).
///
/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn op<T: AtomInt>(func: &str, dest: *mut T, op: Op, value: T, pe: c_int) {
    let st = state(func);
    #[cfg(ishmem_mutation = "amo_drop")]
    return;
    #[allow(unreachable_code)]
    amo::op(st, func, dest as usize, op, value, st.check_pe(func, pe))
}

/// Reads this PE's symmetric `p` for a wait or a signal fetch (`core::amo::read_local`).
///
/// # Safety
/// `p` must be a checked symmetric address of this PE.
#[inline]
pub unsafe fn read_local<T: Atom>(func: &str, p: *mut T) -> T {
    // SAFETY: forwarded contract.
    unsafe { amo::read_local(state(func), func, p) }
}

/// A nonblocking fetching AMO: runs `op` (complete at return on mapped memory) and stores
/// the fetched value into the local `fetch`.
///
/// # Safety
/// `fetch` must be writable when non-NULL (NULL is a fatal error).
#[inline]
pub unsafe fn nbi<T: Copy>(func: &str, fetch: *mut T, op: impl FnOnce() -> T) {
    if fetch.is_null() {
        fatal(func, "fetch is NULL");
    }
    let v = op();
    // SAFETY: fetch is non-NULL and writable per the caller.
    unsafe { fetch.write_volatile(v) };
}
