//! Signaling: put-with-signal (data, then an atomic set or add on the remote signal word),
//! signal_fetch, signal_wait_until and the ishmemx signal set/add helpers. On the GPU heap the
//! data is a synchronous copy and the update an AMO kernel after it; fetch and wait read the
//! word with an 8-byte device-to-host copy per poll.

use crate::api::amo;
use crate::api::rma;
use crate::api::rma::check_align;
use crate::core::state;
use crate::ffi::{fatal, guard};
use std::ffi::c_int;

/// Checks that `sig_addr` is a symmetric, aligned word of this PE.
fn check_local_sig(func: &str, sig_addr: *const u64) {
    let st = state(func);
    st.check_sym(func, "sig_addr", sig_addr as usize, 8);
    check_align(func, "sig_addr", sig_addr as usize, 8);
}

/// Checks the PE and that `sig_addr` is a symmetric, aligned word (before any data moves, so
/// a bad signal word writes nothing and the error names it).
fn check_sig(func: &str, sig_addr: *const u64, pe: c_int) {
    let st = state(func);
    st.check_pe(func, pe);
    st.check_sym(func, "sig_addr", sig_addr as usize, 8);
    check_align(func, "sig_addr", sig_addr as usize, 8);
}

pub(crate) const SIGNAL_SET: c_int = 0;
pub(crate) const SIGNAL_ADD: c_int = 1;

fn check_sig_op(func: &str, sig_op: c_int) {
    if sig_op != SIGNAL_SET && sig_op != SIGNAL_ADD {
        fatal(func, &format!("invalid signal operator {sig_op} (use ISHMEM_SIGNAL_SET or ISHMEM_SIGNAL_ADD)"));
    }
}

/// Updates the signal word on `pe` atomically.
///
/// # Safety
/// `sig_addr` is checked against the symmetric regions.
pub(crate) unsafe fn update(func: &str, sig_addr: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
    check_sig_op(func, sig_op);
    check_sig(func, sig_addr, pe);
    // SAFETY: amo::* check the address (again).
    unsafe {
        if sig_op == SIGNAL_SET {
            amo::set(func, sig_addr, signal, pe)
        } else {
            amo::op(func, sig_addr, amo::Op::Add, signal, pe);
        }
    }
}

/// The data is delivered before the signal update is visible (a fence between them: a
/// release fence on mapped memory, the provider's fence on the network).
///
/// # Safety
/// As `rma::put` and `update`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal(
    func: &str,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    elem: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    check_sig_op(func, sig_op);
    check_sig(func, sig_addr, pe);
    // Across nodes, the data and the signal in one message where the provider's path allows
    // (the target writes the data, then updates the signal). The mutant signal_first takes the
    // three-step path below, with its steps swapped.
    #[cfg(not(ishmem_mutation = "signal_first"))]
    {
        let st = state(func);
        let n = crate::core::bytes(func, nelems, elem);
        if n > 0 && !src.is_null() {
            let (add, pe) = (sig_op == SIGNAL_ADD, st.check_pe(func, pe));
            // SAFETY: src is readable for n bytes per the caller; dest and sig_addr are
            // checked by the callee.
            if unsafe { crate::core::rma::put_signal(st, func, dest as usize, src, n, sig_addr as usize, signal, add, pe) } {
                return;
            }
        }
    }
    // SAFETY: forwarded contract; every address is checked by the callees.
    unsafe {
        #[cfg(ishmem_mutation = "signal_first")]
        update(func, sig_addr, signal, sig_op, pe);
        rma::put(func, dest, src, nelems, elem, pe);
        crate::core::fence(func);
        #[cfg(not(ishmem_mutation = "signal_first"))]
        update(func, sig_addr, signal, sig_op, pe);
    }
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_signal_fetch(sig_addr: *const u64) -> u64 {
    const F: &str = "ishmem_signal_fetch";
    guard(F, || {
        check_local_sig(F, sig_addr);
        // SAFETY: checked above: a symmetric, aligned word of this PE.
        unsafe { amo::read_local(F, sig_addr as *mut u64) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_signal_wait_until(sig_addr: *mut u64, cmp: c_int, cmp_value: u64) -> u64 {
    const F: &str = "ishmem_signal_wait_until";
    guard(F, || {
        let st = state(F);
        crate::wait::check_cmp(F, cmp);
        check_local_sig(F, sig_addr);
        let mut v = 0;
        crate::wait::until(st.cfg.wait_spin, st.cfg.wait_sleep_max_us, || {
            // SAFETY: checked above: a symmetric, aligned word of this PE.
            v = unsafe { amo::read_local(F, sig_addr) };
            crate::wait::compare(v, cmp, cmp_value)
        });
        v
    })
}

#[no_mangle]
pub unsafe extern "C" fn ishmemx_signal_add(sig_addr: *mut u64, signal: u64, pe: c_int) {
    const F: &str = "ishmemx_signal_add";
    // SAFETY: update checks the address.
    guard(F, || unsafe { update(F, sig_addr, signal, SIGNAL_ADD, pe) })
}

#[no_mangle]
pub unsafe extern "C" fn ishmemx_signal_set(sig_addr: *mut u64, signal: u64, pe: c_int) {
    const F: &str = "ishmemx_signal_set";
    // SAFETY: update checks the address.
    guard(F, || unsafe { update(F, sig_addr, signal, SIGNAL_SET, pe) })
}
