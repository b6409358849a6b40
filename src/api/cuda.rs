//! The CUDA extension functions: binder registration (the device header's per-translation-unit
//! `__constant__ ishmemi_dstate` gets the device state through it), binding a module loaded
//! with cuModuleLoad*, and two queries. Declared in ishmemx.h; they work on any backend
//! (queries say "no GPU", binders are recorded and never run on the CPU backend).

use crate::core::device::{self, Binder};
use crate::core::{is_running, my_pe_if_running, state};
use crate::ffi::{emit, guard, pe_tag};
use std::ffi::{c_int, c_void};

/// `void ishmemx_cuda_register_binder(int (*bind)(const void *state, size_t bytes))`: called
/// by ishmem/cuda_impl.cuh at static-init time in every CUDA translation unit. Safe to call
/// before `ishmem_init` (the usual case) and after it (the binder runs at once).
#[no_mangle]
pub extern "C" fn ishmemx_cuda_register_binder(bind: Option<Binder>) {
    const F: &str = "ishmemx_cuda_register_binder";
    guard(F, || match bind {
        Some(b) => device::register_binder(b),
        None => emit(&format!("[PE {}] WARNING: {F}: bind is NULL (ignored)", pe_tag())),
    })
}

/// `int ishmemx_cumodule_init(void *cumodule)`: copies the device state into the
/// `ishmemi_dstate` of a module loaded with cuModuleLoad* (a cubin or PTX compiled with
/// ishmem.h). Call it after `ishmem_init`, once per module. Returns 0, or nonzero (with
/// ISHMEM_DEBUG=1 after a warning saying why).
#[no_mangle]
pub unsafe extern "C" fn ishmemx_cumodule_init(cumodule: *mut c_void) -> c_int {
    const F: &str = "ishmemx_cumodule_init";
    guard(F, || {
        let fail = |why: &str| {
            crate::ffi::status_note(F, &format!("returning 1: {why}"));
            1
        };
        if cumodule.is_null() {
            return fail("cumodule is NULL");
        }
        if !is_running() {
            return fail("called before ishmem_init (or after ishmem_finalize)");
        }
        // SAFETY: the API contract: cumodule is a CUmodule loaded with cuModuleLoad*.
        match unsafe { device::bind_module(state(F), F, cumodule) } {
            Ok(()) => 0,
            Err(e) => fail(&e),
        }
    })
}

/// `int ishmemx_gpu_in_use(void)`: 1 when this PE's symmetric heap is GPU memory, 0 when it
/// is host memory or the library is not initialized. Also retries pending binders.
#[no_mangle]
pub extern "C" fn ishmemx_gpu_in_use() -> c_int {
    const F: &str = "ishmemx_gpu_in_use";
    guard(F, || {
        if my_pe_if_running().is_none() {
            return 0;
        }
        let st = state(F);
        device::retry_binders(st, F);
        st.gpu.is_some() as c_int
    })
}

/// `int ishmemx_gpu_device(void)`: the CUDA device ordinal this PE uses, or -1 (CPU backend,
/// or not initialized).
#[no_mangle]
pub extern "C" fn ishmemx_gpu_device() -> c_int {
    const F: &str = "ishmemx_gpu_device";
    guard(F, || {
        if !is_running() {
            return -1;
        }
        device::gpu_ordinal(state(F)).unwrap_or(-1)
    })
}
