//! The CUDA driver as this library uses it: loaded at run time through cudarc's dynamic
//! loader (dlopen of libcuda), with every error turned into text that names the driver call
//! and the CUDA error. Owns the soft probe (a machine without libcuda or without a device is
//! not an error under `ISHMEM_GPU=auto`) and the guard that makes the library's context
//! current on a thread for the length of one host call. Knows nothing of PEs or heaps.

pub use cudarc::driver::sys;
use sys::{CUcontext, CUresult};

/// `CUDA_ERROR_NAME (description)` of a driver result.
pub fn err_text(r: CUresult) -> String {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let mut desc: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: both calls only write a pointer to a static string (or leave it NULL when the
    // code is unknown); the library is loaded (we hold a result it returned).
    unsafe {
        sys::cuGetErrorName(r, &mut name);
        sys::cuGetErrorString(r, &mut desc);
    }
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: a non-NULL pointer from cuGetError* is a static NUL-terminated string.
        (!p.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    match (text(name), text(desc)) {
        (Some(n), Some(d)) => format!("{n} ({d})"),
        (Some(n), None) => n,
        _ => format!("CUDA error {}", r as i32),
    }
}

/// `Ok` on success, else `"<call> failed: <error>"`.
#[inline]
pub fn ok(call: &str, r: CUresult) -> Result<(), String> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(failed(call, r))
    }
}

#[cold]
fn failed(call: &str, r: CUresult) -> String {
    format!("{call} failed: {}", err_text(r))
}

/// A fatal error naming the API function `func`, the driver call and the CUDA error.
#[inline]
pub fn check(func: &str, call: &str, r: CUresult) {
    if r != CUresult::CUDA_SUCCESS {
        crate::ffi::fatal(func, &failed(call, r));
    }
}

/// Whether libcuda can be loaded. cudarc's loader panics on a missing library, so this asks
/// first, with the same candidate names in the same order; the handle that loads is kept open
/// for ever (never dlclose libcuda), so cudarc's own dlopen finds the same library loaded.
pub fn loadable() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| {
        cudarc::get_lib_name_candidates("cuda").iter().any(|name| {
            let Ok(c) = std::ffi::CString::new(name.as_str()) else { return false };
            // SAFETY: dlopen of a NUL-terminated name; the handle is deliberately leaked.
            !unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) }.is_null()
        })
    })
}

/// `cuInit` and the number of visible devices; `Err` says why CUDA cannot be used. A driver
/// that lacks one of the entry points (cudarc panics) counts as unusable.
pub fn probe() -> Result<i32, String> {
    if !loadable() {
        return Err("the CUDA driver library (libcuda.so.1) could not be loaded".into());
    }
    std::panic::catch_unwind(|| {
        // SAFETY: cuInit may be called any number of times; count is writable.
        ok("cuInit", unsafe { sys::cuInit(0) })?;
        let mut count = 0;
        // SAFETY: as above.
        ok("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut count) })?;
        if count <= 0 {
            return Err("no CUDA device is visible (check CUDA_VISIBLE_DEVICES)".to_string());
        }
        Ok(count)
    })
    .unwrap_or_else(|_| Err("the CUDA driver lacks an entry point this library needs (driver too old?)".into()))
}

/// Makes `ctx` current on this thread while it lives, when it is not already: pushes it and
/// pops it again on drop, so the caller's own current context is left as it was. The common
/// case (the context is current: the thread that called init, or any thread after its first
/// host call made through the CUDA runtime on this device) costs one `cuCtxGetCurrent`.
pub struct CtxGuard {
    pushed: bool,
}

impl CtxGuard {
    /// # Safety
    /// `ctx` must be a live context (the library's retained primary context).
    #[inline]
    pub unsafe fn enter(func: &str, ctx: CUcontext) -> CtxGuard {
        let mut cur: CUcontext = std::ptr::null_mut();
        // SAFETY: cuCtxGetCurrent writes the thread's current context (or NULL).
        let r = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        if r == CUresult::CUDA_SUCCESS && cur == ctx {
            return CtxGuard { pushed: false };
        }
        // SAFETY: ctx is live per the caller.
        check(func, "cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(ctx) });
        CtxGuard { pushed: true }
    }
}

impl CtxGuard {
    /// Whether `enter` had to push the context (it was not current on this thread).
    pub fn pushed(&self) -> bool {
        self.pushed
    }
}

impl Drop for CtxGuard {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped: CUcontext = std::ptr::null_mut();
            // SAFETY: pops the context pushed by `enter` on this same thread.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_a_machine_without_cuda_fails_softly() {
        // On CI (no libcuda) this must return an error, not panic; on a GPU machine it
        // returns the device count.
        match probe() {
            Ok(n) => assert!(n > 0),
            Err(e) => assert!(!e.is_empty()),
        }
    }
}
