//! The `_on_queue` forms of RMA, put-with-signal, waits, quiet and barrier: their exported
//! symbols. The stream-ordered engine (kernels and copies enqueued on the caller's queue) is
//! `core::queue`; the typed shims in `generated.rs` call it through the names re-exported here.

use crate::core::queue;
pub use crate::core::queue::{
    get, ibget, ibput, iget, iput, put, put_signal, wait_until, wait_until_all, wait_until_any, wait_until_some, Queue, Values, WaitType,
};
use crate::ffi::guard;
use std::ffi::c_int;

#[no_mangle]
pub unsafe extern "C" fn ishmemx_signal_wait_until_on_queue(sig_addr: *mut u64, cmp: c_int, cmp_value: u64, q: Queue) {
    const F: &str = "ishmemx_signal_wait_until_on_queue";
    // SAFETY: sig_addr is checked by the engine (symmetric, aligned) before any use.
    guard(F, || unsafe { queue::signal_wait_until(F, sig_addr, cmp, cmp_value, q) })
}

#[no_mangle]
pub extern "C" fn ishmemx_quiet_on_queue(q: Queue) {
    const F: &str = "ishmemx_quiet_on_queue";
    guard(F, || queue::quiet(F, q))
}

#[no_mangle]
pub extern "C" fn ishmemx_barrier_all_on_queue(q: Queue) {
    const F: &str = "ishmemx_barrier_all_on_queue";
    guard(F, || queue::barrier_all(F, q))
}

#[no_mangle]
pub extern "C" fn ishmemx_sync_all_on_queue(q: Queue) {
    const F: &str = "ishmemx_sync_all_on_queue";
    guard(F, || queue::barrier_all(F, q))
}
