//! Ordering and the whole-job synchronization of this release: fence, quiet, barrier_all,
//! sync_all. (Teams and the other collectives arrive with the collectives issue.)

use crate::core::{quiet, state};
use crate::ffi::guard;

#[no_mangle]
pub extern "C" fn ishmem_fence() {
    const F: &str = "ishmem_fence";
    guard(F, || {
        state(F);
        // Puts and AMOs to mapped memory are complete at return, so ordering them per PE is
        // a store fence; a full fence costs the same on x86 and is simpler to reason about.
        quiet();
    })
}

#[no_mangle]
pub extern "C" fn ishmem_quiet() {
    const F: &str = "ishmem_quiet";
    guard(F, || {
        state(F);
        quiet();
    })
}

#[no_mangle]
pub extern "C" fn ishmem_barrier_all() {
    const F: &str = "ishmem_barrier_all";
    guard(F, || {
        let st = state(F);
        quiet();
        st.barrier();
    })
}

#[no_mangle]
pub extern "C" fn ishmem_sync_all() {
    const F: &str = "ishmem_sync_all";
    guard(F, || state(F).barrier())
}
