//! Library setup, exit and query: init (plain, threaded, with attributes, by unique id),
//! finalize, my_pe, n_pes, ptr, version and name, and the text `ishmem-info` and
//! `ISHMEM_INFO=1` print.

use crate::bootstrap::UID_BYTES;
use crate::core::{self, state, InitRequest, State};
use crate::ffi::{fatal, guard};
use std::ffi::{c_char, c_int, c_void};

pub const MAJOR: c_int = 1;
pub const MINOR: c_int = 5;
/// Must equal `ISHMEM_VENDOR_STRING` of ishmem.h (a C test compares them).
pub const VENDOR: &str = "ishmem 0.1.0 (Rust implementation of the Intel SHMEM API)";
pub const MAX_NAME_LEN: usize = 256;

const THREAD_SINGLE: c_int = 0;
const THREAD_MULTIPLE: c_int = 3;

/// `ishmemx_runtime_type_t` values of the header.
const RUNTIME_AUTO: c_int = 0;
const RUNTIME_MPI: c_int = 1;
const RUNTIME_OPENSHMEM: c_int = 2;
const RUNTIME_PMI: c_int = 3;
const RUNTIME_PMIX: c_int = 4;
const RUNTIME_ISHMRUN: c_int = 5;
const RUNTIME_UNIQUEID: c_int = 6;
const RUNTIME_SINGLETON: c_int = 7;
const RUNTIME_INVALID: c_int = -1;

/// Mirror of `ishmemx_attr_t` (ishmemx.h checks the same size there).
#[repr(C)]
pub struct Attr {
    pub runtime: c_int,
    pub initialize_runtime: bool,
    pub gpu: bool,
    pub mpi_comm: *mut c_void,
    pub use_uid: bool,
    pub rank: c_int,
    pub nranks: c_int,
    pub uid: *const [u8; UID_BYTES],
}
const _: () = assert!(size_of::<Attr>() == 40);
const _: () = assert!(std::mem::offset_of!(Attr, mpi_comm) == 8);
const _: () = assert!(std::mem::offset_of!(Attr, use_uid) == 16);
const _: () = assert!(std::mem::offset_of!(Attr, rank) == 20);
const _: () = assert!(std::mem::offset_of!(Attr, nranks) == 24);
const _: () = assert!(std::mem::offset_of!(Attr, uid) == 32);

/// `core::init`, then the exit hook (`api::exit`: a PE that exits with status 0 without
/// ishmem_finalize is finalized at exit).
fn init(func: &str, thread_level: i32, req: InitRequest, gpu_allowed: bool) {
    core::init(func, thread_level, req, gpu_allowed);
    crate::api::exit::register();
}

#[no_mangle]
pub extern "C" fn ishmem_init() {
    const F: &str = "ishmem_init";
    guard(F, || init(F, THREAD_MULTIPLE, InitRequest::Env { mode: None }, true))
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    const F: &str = "ishmem_init_thread";
    guard(F, || {
        if !(THREAD_SINGLE..=THREAD_MULTIPLE).contains(&requested) {
            crate::ffi::status_note(
                F,
                &format!("returning 1: invalid thread level {requested} (use ISHMEM_THREAD_SINGLE .. ISHMEM_THREAD_MULTIPLE)"),
            );
            return 1;
        }
        init(F, requested, InitRequest::Env { mode: None }, true);
        if !provided.is_null() {
            // SAFETY: provided is a writable int per the API.
            unsafe { *provided = requested };
        }
        0
    })
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_query_thread(provided: *mut c_int) {
    const F: &str = "ishmem_query_thread";
    guard(F, || {
        let st = state(F);
        if provided.is_null() {
            fatal(F, "provided is NULL");
        }
        // SAFETY: provided is non-NULL and writable per the API.
        unsafe { *provided = st.thread_level };
    })
}

#[no_mangle]
pub unsafe extern "C" fn ishmemx_init_attr(attr: *mut Attr) {
    const F: &str = "ishmemx_init_attr";
    guard(F, || {
        // SAFETY: a non-NULL attr points to an ishmemx_attr_t per the API.
        let Some(a) = (unsafe { attr.as_ref() }) else {
            return init(F, THREAD_MULTIPLE, InitRequest::Env { mode: None }, true);
        };
        // No MPI library is linked: the fields about MPI are refused rather than ignored.
        if !a.mpi_comm.is_null() {
            fatal(
                F,
                "ishmemx_attr_t.mpi_comm is set, but this library takes its PEs from the launcher (every process of the \
                 job, numbered as the launcher numbers them), never from an MPI communicator: leave mpi_comm NULL",
            );
        }
        if a.runtime == RUNTIME_MPI && a.initialize_runtime {
            fatal(
                F,
                "ishmemx_attr_t.initialize_runtime is true with ISHMEMX_RUNTIME_MPI, but this library does not start MPI \
                 (it meets the other PEs through the launcher): call MPI_Init first and set initialize_runtime = false, \
                 or use ISHMEMX_RUNTIME_AUTO",
            );
        }
        if a.use_uid || a.runtime == RUNTIME_UNIQUEID {
            // SAFETY: a non-NULL uid points to an ishmemx_uniqueid_t per the API.
            let Some(uid) = (unsafe { a.uid.as_ref() }) else {
                fatal(F, "unique-id init (use_uid) needs attr->uid from ishmemx_get_uniqueid");
            };
            let req = InitRequest::Uid { uid: *uid, rank: a.rank, nranks: a.nranks };
            return init(F, THREAD_MULTIPLE, req, a.gpu);
        }
        let mode = match a.runtime {
            RUNTIME_AUTO | RUNTIME_MPI => None,
            RUNTIME_PMI => Some("pmi1"),
            RUNTIME_PMIX => Some("pmix"),
            RUNTIME_ISHMRUN => Some("ishmrun"),
            RUNTIME_SINGLETON => Some("singleton"),
            RUNTIME_OPENSHMEM => fatal(F, "ISHMEMX_RUNTIME_OPENSHMEM is not supported (use ISHMEMX_RUNTIME_AUTO)"),
            other => fatal(F, &format!("invalid runtime {other} in ishmemx_attr_t")),
        };
        init(F, THREAD_MULTIPLE, InitRequest::Env { mode }, a.gpu)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ishmemx_get_uniqueid(uid: *mut [u8; UID_BYTES]) -> c_int {
    const F: &str = "ishmemx_get_uniqueid";
    guard(F, || {
        if uid.is_null() {
            crate::ffi::status_note(F, "returning 1: uid is NULL");
            return 1;
        }
        match crate::bootstrap::uid::get_uniqueid() {
            Ok(id) => {
                // SAFETY: uid is non-NULL and points to an ishmemx_uniqueid_t per the API.
                unsafe { *uid = id };
                0
            }
            Err(e) => {
                crate::ffi::emit(&format!("[PE {}] ERROR: {F}: {e}", crate::ffi::pe_tag()));
                1
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn ishmem_finalize() {
    const F: &str = "ishmem_finalize";
    guard(F, || core::finalize(F))
}

#[no_mangle]
pub unsafe extern "C" fn ishmemx_query_initialized(initialized: *mut c_int) {
    const F: &str = "ishmemx_query_initialized";
    guard(F, || {
        if initialized.is_null() {
            fatal(F, "initialized is NULL");
        }
        // SAFETY: non-NULL and writable per the API.
        unsafe { *initialized = core::is_running() as c_int };
    })
}

#[no_mangle]
pub extern "C" fn ishmemx_runtime_get_type() -> c_int {
    const F: &str = "ishmemx_runtime_get_type";
    guard(F, || {
        if !core::is_running() {
            return RUNTIME_INVALID;
        }
        state(F).runtime as c_int
    })
}

#[no_mangle]
pub extern "C" fn ishmem_my_pe() -> c_int {
    const F: &str = "ishmem_my_pe";
    guard(F, || state(F).me as c_int)
}

#[no_mangle]
pub extern "C" fn ishmem_n_pes() -> c_int {
    const F: &str = "ishmem_n_pes";
    guard(F, || state(F).npes as c_int)
}

/// PE `pe`'s copy of the symmetric `dest` as addressable by this process, or NULL. On the CPU
/// backend a host address; on the CUDA backend, for the heap, the peer heap as mapped here by
/// CUDA IPC: a device address that kernels (and cudaMemcpy) may use, host code may not
/// dereference. Symmetric globals stay host addresses on both backends.
#[no_mangle]
pub extern "C" fn ishmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    const F: &str = "ishmem_ptr";
    guard(F, || {
        let st = state(F);
        let pe = st.check_pe(F, pe);
        st.translate(dest as usize, 1, pe).map_or(std::ptr::null_mut(), |a| a as *mut c_void)
    })
}

/// `int ishmem_pe_accessible(int pe)` (OpenSHMEM 1.5): 1 when PE `pe` of the world team can
/// be reached from this PE with the library's operations, else 0 (a PE number out of range
/// included: not an error here). Every PE of a job is reachable (one node; on the CUDA
/// backend every peer heap is mapped at init).
#[no_mangle]
pub extern "C" fn ishmem_pe_accessible(pe: c_int) -> c_int {
    const F: &str = "ishmem_pe_accessible";
    guard(F, || accessible_pe(state(F), pe).is_some() as c_int)
}

/// `int ishmem_addr_accessible(const void *addr, int pe)` (OpenSHMEM 1.5): 1 when `addr` is a
/// symmetric address of this PE (symmetric heap or, with ISHMEM_SYMMETRIC_GLOBALS, a global or
/// static variable) and PE `pe` is accessible, so that operations on `addr` may target `pe`;
/// else 0.
#[no_mangle]
pub extern "C" fn ishmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    const F: &str = "ishmem_addr_accessible";
    guard(F, || {
        let st = state(F);
        // Symmetric here means reachable on every PE of the job (mapped on this node, through
        // the network on others).
        (accessible_pe(st, pe).is_some() && st.translate(addr as usize, 1, st.me).is_some()) as c_int
    })
}

/// PE `pe` when it is a PE of the job this PE reaches.
fn accessible_pe(st: &State, pe: c_int) -> Option<usize> {
    (pe >= 0 && (pe as usize) < st.npes).then_some(pe as usize)
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    const F: &str = "ishmem_info_get_version";
    guard(F, || {
        if major.is_null() || minor.is_null() {
            fatal(F, "major and minor must not be NULL");
        }
        // SAFETY: both are non-NULL and writable per the API.
        unsafe {
            *major = MAJOR;
            *minor = MINOR;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_info_get_name(name: *mut c_char) {
    const F: &str = "ishmem_info_get_name";
    guard(F, || {
        if name.is_null() {
            fatal(F, "name is NULL");
        }
        let bytes = VENDOR.as_bytes();
        let n = bytes.len().min(MAX_NAME_LEN - 1);
        // SAFETY: the API gives name room for ISHMEM_MAX_NAME_LEN bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), name.cast::<u8>(), n);
            *name.add(n) = 0;
        }
    })
}

/// The library's release (Cargo.toml) and the Intel SHMEM API version it implements, one line:
/// `ishmem 0.1.0 (Intel SHMEM API 1.5)` (what `ishmem-info --version` prints).
pub fn version_line() -> String {
    format!("ishmem {} (Intel SHMEM API {MAJOR}.{MINOR})", env!("CARGO_PKG_VERSION"))
}

/// One calm line on the CUDA driver as this process finds it, for `ishmem-info`.
fn cuda_line() -> String {
    if !crate::transport::cuda::driver::loadable() {
        return "CUDA: no driver; CPU backend".into();
    }
    match crate::transport::cuda::driver::probe() {
        Ok(n) => format!("CUDA: {n} device(s) visible; GPU backend (ISHMEM_GPU=0 keeps the CPU backend)"),
        Err(e) => format!("CUDA: driver loaded, but not usable ({e}); CPU backend"),
    }
}

/// The report of `ishmem-info` and `ISHMEM_INFO=1`: version, backend, job, and each variable
/// with its value here and its default, in aligned columns.
pub fn info_text(st: Option<&State>) -> String {
    let mut s = format!("{}: a Rust implementation, as a C library\n", version_line());
    s.push_str("backends built in: cpu (node-local shared memory), cuda (driver loaded at run time)\n");
    if st.is_none() {
        s.push_str(&cuda_line());
        s.push('\n');
        s.push_str(&match crate::transport::fabric::usable_providers() {
            Ok(((ma, mi), p)) if p.is_empty() => format!("network: libfabric {ma}.{mi}, no provider with FI_EP_RDM+FI_RMA+FI_ATOMIC (jobs of one node only)\n"),
            Ok(((ma, mi), p)) => format!("network: libfabric {ma}.{mi}; providers with FI_EP_RDM+FI_RMA+FI_ATOMIC (the first is the default): {}\n", p.join(", ")),
            Err(e) => format!("network: {e} (jobs of one node only)\n"),
        });
    }
    if let Some(st) = st {
        let backend = match &st.gpu {
            Some(g) => format!("cuda (device {}: {}, bus {})", g.ordinal, g.name, g.bus_id),
            None => "cpu".to_string(),
        };
        s.push_str(&format!(
            "backend in use: {backend}; bootstrap: {}; PEs: {}; symmetric heap: {} bytes per PE; symmetric globals: {}\n",
            st.runtime.name(),
            st.npes,
            st.heap.len,
            st.data.as_ref().map_or("off".to_string(), |d| format!("{} bytes", d.len))
        ));
        s.push_str(&format!("nodes: {}\n", st.nodes.describe()));
        if let Some(n) = &st.net {
            s.push_str(&format!("network: {}\n", n.fab.info()));
            s.push_str(&format!("network AMOs: {}\n", n.amo_paths()));
            s.push_str(&format!("network heap access: {}\n", n.heap_path()));
        }
    }
    s.push_str("environment variables:\n");
    let rows: Vec<[String; 3]> = crate::env::VARS
        .iter()
        .map(|v| [v.name.to_string(), std::env::var(v.name).unwrap_or_else(|_| "(unset)".into()), v.default.to_string()])
        .collect();
    s.push_str(&columns(&["variable", "value", "default"], &rows));
    s
}

/// Rows under a header, each column as wide as its widest cell, indented by two spaces.
fn columns(header: &[&str; 3], rows: &[[String; 3]]) -> String {
    let mut w = header.map(str::len);
    for r in rows {
        for (wi, c) in w.iter_mut().zip(r) {
            *wi = (*wi).max(c.chars().count());
        }
    }
    let line = |c: [&str; 3]| format!("  {:<w0$}  {:<w1$}  {}\n", c[0], c[1], c[2], w0 = w[0], w1 = w[1]);
    let mut s = line(*header);
    for r in rows {
        s.push_str(&line([&r[0], &r[1], &r[2]]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_line_names_release_and_api() {
        assert_eq!(version_line(), format!("ishmem {} (Intel SHMEM API 1.5)", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn columns_are_aligned() {
        let rows = [
            ["ISHMEM_QUEUE_REDUCE_SPLIT_MIN".to_string(), "(unset)".to_string(), "256K".to_string()],
            ["ISHMEM_GPU".to_string(), "a-much-longer-value".to_string(), "auto".to_string()],
        ];
        let text = columns(&["variable", "value", "default"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].find("value"), lines[1].find("(unset)"));
        assert_eq!(lines[1].find("(unset)"), lines[2].find("a-much"));
        assert_eq!(lines[0].find("default"), lines[1].find("256K"));
        assert_eq!(lines[1].find("256K"), lines[2].find("auto"));
    }
}
