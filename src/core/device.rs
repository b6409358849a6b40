//! The device side's view of the running library (CUDA today; a Level Zero backend would plug
//! in here): the binders that hand the device state to each CUDA translation unit, binding a
//! module loaded at run time, and which GPU a PE uses. The CUDA extension functions in `api`
//! and every call that retries pending binders (fence, quiet, barriers, malloc, free) come
//! through here, so `api` names no transport.

use super::State;
use crate::transport::cuda::binders;

/// A device-state binder: `int bind(const void *state, size_t bytes)`, registered by each CUDA
/// translation unit at static-init time.
pub use crate::transport::cuda::binders::Binder;

/// The bytes at the start of the GPU heap that hold the library's sync area (never a block).
pub const SYNC_BYTES: usize = crate::transport::cuda::state::SYNC_BYTES;

/// Records a binder; it runs at the end of init, or at once when the library is running.
pub fn register_binder(b: Binder) {
    binders::register(b)
}

/// Retries the binders that failed so far (CUDA backend; one load when none are pending).
#[inline(always)]
pub fn retry_binders(st: &State, func: &str) {
    if let Some(g) = &st.gpu {
        if binders::any_pending() {
            let _c = g.enter(func);
            binders::retry_pending();
        }
    }
}

/// Copies the device state into the module `module` (a `CUmodule` loaded with cuModuleLoad*).
/// Err says why (no GPU backend, a module without ishmem's state, a driver error).
///
/// # Safety
/// `module` must be a loaded `CUmodule` of this PE's context.
pub unsafe fn bind_module(st: &State, func: &str, module: *mut std::ffi::c_void) -> Result<(), String> {
    let Some(g) = &st.gpu else {
        return Err("the GPU backend is not in use (ISHMEM_GPU, ishmemx_attr_t.gpu, or no usable GPU)".into());
    };
    let ds = binders::published().unwrap_or_else(|| g.dev_state());
    // SAFETY: forwarded contract.
    unsafe { g.bind_module(func, module.cast(), &ds) }
}

/// The CUDA device ordinal this PE uses (None: CPU backend).
pub fn gpu_ordinal(st: &State) -> Option<i32> {
    st.gpu.as_ref().map(|g| g.ordinal)
}
