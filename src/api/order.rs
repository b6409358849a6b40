//! Ordering and the whole-job synchronization of this release: fence, quiet, barrier_all,
//! sync_all. (Teams and the other collectives arrive with the collectives issue.) Every host
//! operation on the GPU heap completes before it returns, so these need no GPU work; each
//! retries pending device-state binders first (core::device).

use crate::core::{quiet, state, State};
use crate::ffi::guard;

#[inline(always)]
fn retry_binders(func: &str, st: &State) {
    crate::core::device::retry_binders(st, func)
}

#[no_mangle]
pub extern "C" fn ishmem_fence() {
    const F: &str = "ishmem_fence";
    guard(F, || {
        retry_binders(F, state(F));
        // Puts and AMOs to mapped memory are complete at return, so ordering them per PE is
        // a store fence (a full fence costs the same on x86); network ones take the provider's.
        crate::core::fence(F);
    })
}

#[no_mangle]
pub extern "C" fn ishmem_quiet() {
    const F: &str = "ishmem_quiet";
    guard(F, || {
        retry_binders(F, state(F));
        quiet();
    })
}

#[no_mangle]
pub extern "C" fn ishmem_barrier_all() {
    const F: &str = "ishmem_barrier_all";
    guard(F, || {
        let st = state(F);
        retry_binders(F, st);
        if st.net.is_some() {
            // Across nodes the world team's sync starts with the network quiet (`Team::sync`:
            // a job with a network spans nodes, so its world team does): a second one here
            // cost a completion-queue and counter read per barrier (issue 31). Mapped
            // operations are complete at return; the fence orders them.
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        } else {
            quiet();
        }
        st.barrier_recorded(F);
    })
}

#[no_mangle]
pub extern "C" fn ishmem_sync_all() {
    const F: &str = "ishmem_sync_all";
    guard(F, || {
        let st = state(F);
        retry_binders(F, st);
        st.barrier_recorded(F)
    })
}
