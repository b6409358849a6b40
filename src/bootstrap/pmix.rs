//! PMIx client, loaded at run time (`dlopen("libpmix.so.2")`, no link-time dependency).
//!
//! Owns: the loaded libpmix (never unloaded: its threads may outlive us), this process's PMIx
//! session (init, the job facts, the `Exchange` through Put/Commit/Fence/Get, abort, finalize)
//! and the `#[repr(C)]` mirrors of the few PMIx structs it passes (checked against the C headers
//! by a test). Must not touch: the environment (it only reads it), shared memory, the transports.
//!
//! What the launchers do, found with OpenMPI 4.1.4's `mpirun` and libpmix 4.2.2 (Debian 12):
//! * PMIx_Init to a server that refuses the connection returns `PMIX_ERR_UNREACH` at once. To a
//!   server that accepts but never answers (a stopped `mpirun`, a stale URI) it blocks for ever
//!   in the handshake: neither `PMIX_TIMEOUT` nor the tool retry attributes bound it (only the
//!   MCA variable `PMIX_MCA_ptl_base_handshake_wait_time`, which a library must not set in a
//!   running process). So PMIx_Init runs on its own thread and `from_env` gives up after the
//!   bootstrap timeout, leaving that thread blocked in libpmix; the process is failing anyway.
//! * `PMIX_TIMEOUT` on PMIx_Fence and PMIx_Get is honoured (by the server library's fence
//!   tracker and the client's get), so a rank that never reaches a fence gives `TIMEOUT` on every
//!   other rank after that many seconds.
//! * A client that called PMIx_Init and exits (even with status 0) without PMIx_Finalize makes
//!   `mpirun` kill the rest of the job at once and exit 1 ("exiting improperly"). `Pmix` therefore
//!   finalizes on drop. After PMIx_Finalize an exit is an ordinary exit: status 0 leaves the
//!   others running; a nonzero status or a signal makes `mpirun` SIGTERM the others about 1 s
//!   later and exit with that status (128 + signal for a signal), exactly as for a process that
//!   never called PMIx_Init. So finalizing right after init (as the PMI-1 path does) is safe.
//! * PMIx_Abort after PMIx_Finalize returns `PMIX_ERR_INIT` and does nothing; a new PMIx_Init
//!   (allowed after finalize) followed by PMIx_Abort works: `abort_job` does that. `mpirun` 4.1
//!   prints nothing for PMIx_Abort and exits with its status, so `abort` prints the message.
//! * Slurm 22.05 (`srun --mpi=pmix`) runs a PMIx v4 server through the same server library;
//!   this client asks only for keys the PMIx v4 standard makes every host provide.
//!
//! All errors are one-line `String`s starting with `"PMIx: "`.

use super::Exchange;
use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// The C side (pmix_common.h of PMIx 4.x). Only what this client passes or reads.

pub const PMIX_MAX_NSLEN: usize = 255;
pub const PMIX_MAX_KEYLEN: usize = 511;

pub type PmixStatus = c_int;
pub type PmixRank = u32;
pub type PmixDataType = u16;
pub type PmixScope = u8;

pub const PMIX_SUCCESS: PmixStatus = 0;
pub const PMIX_ERR_TIMEOUT: PmixStatus = -24;
pub const PMIX_ERR_UNREACH: PmixStatus = -25;
pub const PMIX_ERR_INIT: PmixStatus = -31;
pub const PMIX_ERR_NOT_FOUND: PmixStatus = -46;

pub const PMIX_RANK_WILDCARD: PmixRank = u32::MAX - 1;
/// `pmix_scope_t`: share with every process of the job, on any node.
pub const PMIX_GLOBAL: PmixScope = 3;

pub const PMIX_BOOL: PmixDataType = 1;
pub const PMIX_BYTE: PmixDataType = 2;
pub const PMIX_STRING: PmixDataType = 3;
pub const PMIX_SIZE: PmixDataType = 4;
pub const PMIX_INT: PmixDataType = 6;
pub const PMIX_INT8: PmixDataType = 7;
pub const PMIX_INT16: PmixDataType = 8;
pub const PMIX_INT32: PmixDataType = 9;
pub const PMIX_INT64: PmixDataType = 10;
pub const PMIX_UINT: PmixDataType = 11;
pub const PMIX_UINT8: PmixDataType = 12;
pub const PMIX_UINT16: PmixDataType = 13;
pub const PMIX_UINT32: PmixDataType = 14;
pub const PMIX_UINT64: PmixDataType = 15;
pub const PMIX_BYTE_OBJECT: PmixDataType = 27;
pub const PMIX_PROC_RANK: PmixDataType = 40;

/// (uint32_t) processes in this job.
pub const PMIX_JOB_SIZE: &CStr = c"pmix.job.size";
/// (uint16_t) rank of the process on its node within its job.
pub const PMIX_LOCAL_RANK: &CStr = c"pmix.lrank";
/// (uint32_t) processes of the job on this node.
pub const PMIX_LOCAL_SIZE: &CStr = c"pmix.local.size";
/// (uint32_t) identifier of the node the process runs on.
pub const PMIX_NODEID: &CStr = c"pmix.nodeid";
/// (char*) name of the host the process runs on.
pub const PMIX_HOSTNAME: &CStr = c"pmix.hname";
/// (bool) a fence collects the data put so far and hands it to every participant.
pub const PMIX_COLLECT_DATA: &CStr = c"pmix.collect";
/// (int) seconds before an operation gives up with `PMIX_ERR_TIMEOUT` (0: never).
pub const PMIX_TIMEOUT: &CStr = c"pmix.timeout";

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PmixProc {
    pub nspace: [c_char; PMIX_MAX_NSLEN + 1],
    pub rank: PmixRank,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PmixByteObject {
    pub bytes: *mut c_char,
    pub size: usize,
}

/// `pmix_envar_t`: the largest member of the value union, mirrored for its size.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PmixEnvar {
    pub envar: *mut c_char,
    pub value: *mut c_char,
    pub separator: c_char,
}

/// The union of `pmix_value_t`, with the members this client reads plus those that set its
/// size and alignment (pointers, `struct timeval`, `pmix_envar_t`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union PmixValueData {
    pub flag: bool,
    pub byte: u8,
    pub string: *mut c_char,
    pub size: usize,
    pub integer: c_int,
    pub int8: i8,
    pub int16: i16,
    pub int32: i32,
    pub int64: i64,
    pub uint: c_uint,
    pub uint8: u8,
    pub uint16: u16,
    pub uint32: u32,
    pub uint64: u64,
    pub rank: PmixRank,
    pub tv: libc::timeval,
    pub bo: PmixByteObject,
    pub ptr: *mut c_void,
    pub envar: PmixEnvar,
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PmixValue {
    pub type_: PmixDataType,
    pub data: PmixValueData,
}

/// `pmix_info_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PmixInfo {
    pub key: [c_char; PMIX_MAX_KEYLEN + 1],
    pub flags: u32,
    pub value: PmixValue,
}

// The layouts of x86_64 and aarch64 Linux (LP64); the test `layouts_match_the_c_headers`
// compares them with what a C compiler makes of the installed headers.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<PmixProc>() == 260 && offset_of!(PmixProc, rank) == 256);
    assert!(size_of::<PmixByteObject>() == 16 && offset_of!(PmixByteObject, size) == 8);
    assert!(size_of::<PmixValueData>() == 24 && align_of::<PmixValueData>() == 8);
    assert!(size_of::<PmixValue>() == 32 && offset_of!(PmixValue, data) == 8);
    assert!(size_of::<PmixInfo>() == 552);
    assert!(offset_of!(PmixInfo, flags) == 512 && offset_of!(PmixInfo, value) == 520);
};

impl PmixProc {
    fn new(nspace: &[c_char; PMIX_MAX_NSLEN + 1], rank: PmixRank) -> PmixProc {
        PmixProc { nspace: *nspace, rank }
    }

    fn empty() -> PmixProc {
        PmixProc { nspace: [0; PMIX_MAX_NSLEN + 1], rank: 0 }
    }

    fn nspace_str(&self) -> String {
        let bytes: Vec<u8> = self.nspace.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl PmixInfo {
    fn new(key: &CStr, value: PmixValue) -> PmixInfo {
        let mut k = [0 as c_char; PMIX_MAX_KEYLEN + 1];
        for (d, &s) in k.iter_mut().zip(key.to_bytes().iter().take(PMIX_MAX_KEYLEN)) {
            *d = s as c_char;
        }
        PmixInfo { key: k, flags: 0, value }
    }

    fn flag(key: &CStr, on: bool) -> PmixInfo {
        PmixInfo::new(key, PmixValue { type_: PMIX_BOOL, data: PmixValueData { flag: on } })
    }

    fn int(key: &CStr, v: c_int) -> PmixInfo {
        PmixInfo::new(key, PmixValue { type_: PMIX_INT, data: PmixValueData { integer: v } })
    }
}

// ---------------------------------------------------------------------------------------------
// The loaded library.

/// The soname of the PMIx client library (PMIx v2 to v5 all keep ABI 2).
pub const LIB_NAME: &str = "libpmix.so.2";

type InitFn = unsafe extern "C" fn(*mut PmixProc, *mut PmixInfo, usize) -> PmixStatus;
type FinalizeFn = unsafe extern "C" fn(*const PmixInfo, usize) -> PmixStatus;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut PmixProc, usize) -> PmixStatus;
type PutFn = unsafe extern "C" fn(PmixScope, *const c_char, *mut PmixValue) -> PmixStatus;
type CommitFn = unsafe extern "C" fn() -> PmixStatus;
type FenceFn = unsafe extern "C" fn(*const PmixProc, usize, *const PmixInfo, usize) -> PmixStatus;
type GetFn = unsafe extern "C" fn(*const PmixProc, *const c_char, *const PmixInfo, usize, *mut *mut PmixValue) -> PmixStatus;
type ErrorStringFn = unsafe extern "C" fn(PmixStatus) -> *const c_char;
type ValueDestructFn = unsafe extern "C" fn(*mut PmixValue);
type GetVersionFn = unsafe extern "C" fn() -> *const c_char;

/// The entry points used, resolved once; the handle is never closed.
struct Lib {
    init: InitFn,
    finalize: FinalizeFn,
    abort: AbortFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    error_string: ErrorStringFn,
    value_destruct: ValueDestructFn,
    get_version: GetVersionFn,
}

fn dlerror_text() -> String {
    // SAFETY: dlerror takes no arguments; it returns NULL or a NUL-terminated string owned by
    // libdl that stays valid until the next dl* call on this thread, and is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

/// Resolves `name` in `handle` as a function pointer of the type the caller's field has.
macro_rules! sym {
    ($handle:expr, $lib:expr, $name:literal, $ty:ty) => {{
        let cname = concat!($name, "\0");
        // SAFETY: handle is a live dlopen handle (never closed) and cname is NUL-terminated.
        let p = unsafe { libc::dlsym($handle, cname.as_ptr().cast()) };
        if p.is_null() {
            return Err(format!("{} has no symbol {}: {}", $lib, $name, dlerror_text()));
        }
        // SAFETY: p is the address of the libpmix function of that name; the field's type is
        // that function's C signature as declared in pmix.h of PMIx 4.x (checked by hand; the
        // C ABI of these calls is unchanged since PMIx 2), and function pointers have the size
        // of data pointers on every platform libpmix supports.
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

impl Lib {
    /// dlopens `name` and resolves every entry point; the handle is leaked on purpose.
    fn load(name: &str) -> Result<&'static Lib, String> {
        let cname = CString::new(name).map_err(|_| format!("library name {name:?} has a NUL byte"))?;
        // SAFETY: cname is NUL-terminated. Loading runs libpmix's constructors, which only set
        // up its own state.
        let handle = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dlerror_text());
        }
        let lib = Lib {
            init: sym!(handle, name, "PMIx_Init", InitFn),
            finalize: sym!(handle, name, "PMIx_Finalize", FinalizeFn),
            abort: sym!(handle, name, "PMIx_Abort", AbortFn),
            put: sym!(handle, name, "PMIx_Put", PutFn),
            commit: sym!(handle, name, "PMIx_Commit", CommitFn),
            fence: sym!(handle, name, "PMIx_Fence", FenceFn),
            get: sym!(handle, name, "PMIx_Get", GetFn),
            error_string: sym!(handle, name, "PMIx_Error_string", ErrorStringFn),
            value_destruct: sym!(handle, name, "PMIx_Value_destruct", ValueDestructFn),
            get_version: sym!(handle, name, "PMIx_Get_version", GetVersionFn),
        };
        Ok(Box::leak(Box::new(lib)))
    }

    /// The library under its usual name, loaded once per process.
    fn default() -> Result<&'static Lib, String> {
        static LIB: OnceLock<Result<&'static Lib, String>> = OnceLock::new();
        LIB.get_or_init(|| Lib::load(LIB_NAME)).clone()
    }

    /// `NAME (code)` of a status, e.g. `UNREACHABLE (-25)`.
    fn status(&self, rc: PmixStatus) -> String {
        // SAFETY: PMIx_Error_string accepts any status and returns a static string (or NULL).
        let s = unsafe { (self.error_string)(rc) };
        if s.is_null() {
            return format!("status {rc}");
        }
        // SAFETY: s is a NUL-terminated static string of libpmix.
        let name = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
        format!("{name} ({rc})")
    }

    fn version(&self) -> String {
        // SAFETY: PMIx_Get_version returns a static NUL-terminated string.
        let s = unsafe { (self.get_version)() };
        if s.is_null() {
            return "unknown".into();
        }
        // SAFETY: as above.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }
}

// SAFETY: Lib holds only function pointers into libpmix, whose API is thread-safe.
unsafe impl Sync for Lib {}
// SAFETY: as above.
unsafe impl Send for Lib {}

/// A `pmix_value_t` returned by PMIx_Get, released (contents and struct) when dropped.
struct Returned<'a> {
    lib: &'a Lib,
    v: *mut PmixValue,
}

impl Drop for Returned<'_> {
    fn drop(&mut self) {
        if !self.v.is_null() {
            // SAFETY: v came from PMIx_Get, which malloc'ed it (PMIX_VALUE_RELEASE in
            // pmix_common.h is PMIx_Value_destruct followed by free); it is released only here.
            unsafe {
                (self.lib.value_destruct)(self.v);
                libc::free(self.v.cast());
            }
        }
    }
}

impl Returned<'_> {
    fn value(&self) -> &PmixValue {
        // SAFETY: v is non-NULL (PMIx_Get succeeded) and points to a pmix_value_t we own.
        unsafe { &*self.v }
    }

    /// The value as an unsigned integer, from any of the integer types a server may use.
    fn as_u64(&self) -> Option<u64> {
        let v = self.value();
        // SAFETY: each arm reads the union member that the type tag says is initialised.
        unsafe {
            match v.type_ {
                PMIX_UINT8 | PMIX_BYTE => Some(v.data.uint8.into()),
                PMIX_UINT16 => Some(v.data.uint16.into()),
                PMIX_UINT32 => Some(v.data.uint32.into()),
                PMIX_PROC_RANK => Some(v.data.rank.into()),
                PMIX_UINT => Some(v.data.uint.into()),
                PMIX_UINT64 => Some(v.data.uint64),
                PMIX_SIZE => Some(v.data.size as u64),
                PMIX_INT8 => u64::try_from(v.data.int8).ok(),
                PMIX_INT16 => u64::try_from(v.data.int16).ok(),
                PMIX_INT32 => u64::try_from(v.data.int32).ok(),
                PMIX_INT => u64::try_from(v.data.integer).ok(),
                PMIX_INT64 => u64::try_from(v.data.int64).ok(),
                _ => None,
            }
        }
    }

    fn as_string(&self) -> Option<String> {
        let v = self.value();
        if v.type_ != PMIX_STRING {
            return None;
        }
        // SAFETY: the tag says `string` is the member in use.
        let s = unsafe { v.data.string };
        if s.is_null() {
            return None;
        }
        // SAFETY: a PMIX_STRING value holds a NUL-terminated string owned by the value.
        Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    }

    fn as_bytes(&self) -> Option<Vec<u8>> {
        let v = self.value();
        if v.type_ != PMIX_BYTE_OBJECT {
            return None;
        }
        // SAFETY: the tag says `bo` is the member in use.
        let bo = unsafe { v.data.bo };
        if bo.size == 0 {
            return Some(Vec::new());
        }
        if bo.bytes.is_null() {
            return None;
        }
        // SAFETY: a byte object owns `size` readable bytes at `bytes` (non-NULL, checked).
        Some(unsafe { std::slice::from_raw_parts(bo.bytes as *const u8, bo.size) }.to_vec())
    }
}

/// Runs `f` on a thread of its own and waits at most `limit` for its result; `None` when it
/// did not finish in time (the thread is then left running).
fn bounded<T: Send + 'static>(name: &str, limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Result<Option<T>, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| format!("PMIx: cannot start a thread for {name}: {e}"))?;
    match rx.recv_timeout(limit) {
        Ok(v) => Ok(Some(v)),
        Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(format!("PMIx: the thread running {name} ended without a result")),
    }
}

/// `2 s`, `0.5 s`.
fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

// ---------------------------------------------------------------------------------------------
// The environment.

/// The launcher-set variables this module looks at.
#[derive(Debug, Clone, Default)]
struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    fn from_process() -> Env {
        let keep = |k: &str| ["PMIX_", "OMPI_", "SLURM_", "PRTE_"].iter().any(|p| k.starts_with(p));
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| {
                    let k = k.to_string_lossy().into_owned();
                    keep(&k).then(|| (k, v.to_string_lossy().into_owned()))
                })
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The server's address as the launcher handed it over: the newest `PMIX_SERVER_URI*`.
    fn server_uri(&self) -> Option<(&str, &str)> {
        ["PMIX_SERVER_URI41", "PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21", "PMIX_SERVER_URI2"]
            .iter()
            .find_map(|n| self.get(n).map(|v| (*n, v)))
            .or_else(|| self.vars.iter().find(|(k, _)| k.starts_with("PMIX_SERVER_URI")).map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Names the launcher for messages, e.g. `OpenMPI's mpirun (PMIX_NAMESPACE=..., rank 2)`.
    fn launcher(&self) -> String {
        let who = if self.get("OMPI_COMM_WORLD_SIZE").is_some() || self.get("OMPI_MCA_orte_hnp_uri").is_some() {
            if self.get("PRTE_LAUNCHED").is_some() || self.get("PMIX_NAMESPACE").is_some_and(|n| n.starts_with("prterun")) {
                "OpenMPI 5's mpirun (PRRTE)"
            } else {
                "OpenMPI's mpirun"
            }
        } else if self.get("SLURM_STEP_ID").is_some() || self.get("SLURM_JOB_ID").is_some() {
            "Slurm's srun --mpi=pmix"
        } else if self.get("PRTE_LAUNCHED").is_some() {
            "PRRTE's prterun"
        } else {
            "a PMIx launcher"
        };
        let ns = self.get("PMIX_NAMESPACE").unwrap_or("?");
        let rank = self.get("PMIX_RANK").unwrap_or("?");
        format!("{who} (PMIX_NAMESPACE={ns}, PMIX_RANK={rank})")
    }
}

// ---------------------------------------------------------------------------------------------
// The client.

/// An initialised PMIx client: this process's place in the job, and the job-wide exchange.
/// Dropping it finalizes PMIx (a process that exits without PMIx_Finalize is an "improper"
/// exit to OpenMPI's mpirun, which then kills the whole job).
pub struct Pmix {
    lib: &'static Lib,
    me: PmixProc,
    size: usize,
    local_rank: usize,
    local_size: usize,
    node_id: u32,
    hostname: String,
    launcher: String,
    timeout: Duration,
    used_keys: HashSet<String>,
    /// Set once PMIx_Abort succeeded or PMIx_Finalize ran: nothing more to finalize.
    done: bool,
}

impl std::fmt::Debug for Pmix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmix")
            .field("nspace", &self.nspace())
            .field("rank", &self.rank())
            .field("size", &self.size)
            .field("local_rank", &self.local_rank)
            .field("local_size", &self.local_size)
            .field("node_id", &self.node_id)
            .field("hostname", &self.hostname)
            .finish()
    }
}

/// Prefix of every key this client puts, so that ishmem's keys never meet an MPI library's.
const KEY_PREFIX: &str = "ishmem.";

impl Pmix {
    /// Connects to the PMIx server that launched this process.
    ///
    /// `Ok(None)`: not started by a PMIx launcher (none of `PMIX_NAMESPACE`, `PMIX_RANK`,
    /// `PMIX_SERVER_URI*` is set). `Err`: started by one, but its variables are incomplete,
    /// libpmix cannot be loaded, PMIx_Init fails or does not return within `timeout`, or the job
    /// facts are missing. `timeout` also bounds every later fence and get.
    pub fn from_env(timeout: Duration) -> Result<Option<Pmix>, String> {
        Self::from_parts(&Env::from_process(), Lib::default, timeout)
    }

    /// Checks the launcher's variables, loads libpmix and runs PMIx_Init on a thread of its
    /// own, giving up after `timeout`.
    fn init(
        env: &Env,
        load: impl FnOnce() -> Result<&'static Lib, String>,
        timeout: Duration,
    ) -> Result<Option<(&'static Lib, PmixProc, String)>, String> {
        let ns = env.get("PMIX_NAMESPACE");
        let rank = env.get("PMIX_RANK");
        let uri = env.server_uri();
        if ns.is_none() && rank.is_none() && uri.is_none() {
            return Ok(None);
        }
        let who = env.launcher();
        let missing: Vec<&str> = [
            (ns.is_none(), "PMIX_NAMESPACE"),
            (rank.is_none(), "PMIX_RANK"),
            (uri.is_none(), "PMIX_SERVER_URI* (the PMIx server's address)"),
        ]
        .iter()
        .filter(|(m, _)| *m)
        .map(|(_, n)| *n)
        .collect();
        if !missing.is_empty() {
            let verb = if missing.len() == 1 { "is" } else { "are" };
            return Err(format!("PMIx: started by {who}, but {} {verb} not set, so no PMIx server can be reached", missing.join(" and ")));
        }
        let (uri_name, uri) = uri.unwrap_or_default();
        let server = format!("{uri_name}={uri}");
        let lib = load().map_err(|e| {
            format!("PMIx: started by {who}, but the PMIx client library cannot be loaded: {e} (install libpmix2, PMIx 4.x)")
        })?;
        let rc_me = bounded("PMIx_Init", timeout, move || {
            let mut me = PmixProc::empty();
            // SAFETY: me is a writable pmix_proc_t; no info array (NULL, 0).
            let rc = unsafe { (lib.init)(&mut me, std::ptr::null_mut(), 0) };
            (rc, me)
        })?;
        let me = match rc_me {
            None => {
                return Err(format!(
                    "PMIx: PMIx_Init did not return within {} under {who}: the PMIx server at {server} does not answer",
                    secs(timeout)
                ))
            }
            Some((PMIX_SUCCESS, me)) => me,
            Some((rc, _)) => {
                return Err(format!("PMIx: PMIx_Init failed under {who}: {} (server {server})", lib.status(rc)));
            }
        };
        Ok(Some((lib, me, who)))
    }

    /// A session whose job facts are not read yet.
    fn bare(lib: &'static Lib, me: PmixProc, who: String, timeout: Duration) -> Pmix {
        Pmix {
            lib,
            me,
            size: 0,
            local_rank: 0,
            local_size: 0,
            node_id: 0,
            hostname: String::new(),
            launcher: who,
            timeout,
            used_keys: HashSet::new(),
            done: false,
        }
    }

    fn from_parts(env: &Env, load: impl FnOnce() -> Result<&'static Lib, String>, timeout: Duration) -> Result<Option<Pmix>, String> {
        let Some((lib, me, who)) = Self::init(env, load, timeout)? else { return Ok(None) };
        let mut p = Pmix::bare(lib, me, who, timeout);
        // From here on an error drops `p`, which finalizes PMIx.
        let wild = PmixProc::new(&me.nspace, PMIX_RANK_WILDCARD);
        // Each key where the standard puts it first, then at the other level: servers differ
        // (a reserved key that is absent gives NOT-FOUND at once, without asking the server).
        let job_first = [wild, me];
        let proc_first = [me, wild];
        p.size = p.get_uint(&job_first, PMIX_JOB_SIZE)? as usize;
        p.local_size = p.get_uint(&job_first, PMIX_LOCAL_SIZE)? as usize;
        p.local_rank = p.get_uint(&proc_first, PMIX_LOCAL_RANK)? as usize;
        p.node_id =
            u32::try_from(p.get_uint(&proc_first, PMIX_NODEID)?).map_err(|_| "PMIx: the node id does not fit 32 bits".to_string())?;
        p.hostname = p.get_string(&proc_first, PMIX_HOSTNAME)?;
        if p.size == 0 || p.rank() >= p.size || p.local_size == 0 || p.local_rank >= p.local_size || p.local_size > p.size {
            return Err(format!(
                "PMIx: inconsistent job facts from {}: rank {} of {}, local rank {} of {}",
                p.launcher,
                p.rank(),
                p.size,
                p.local_rank,
                p.local_size
            ));
        }
        Ok(Some(p))
    }

    /// This process's rank in the job (its namespace).
    pub fn rank(&self) -> usize {
        self.me.rank as usize
    }

    /// Processes in the job (`PMIX_JOB_SIZE`).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Rank among the job's processes on this node (`PMIX_LOCAL_RANK`).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// The job's processes on this node (`PMIX_LOCAL_SIZE`), as the launcher counts nodes.
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// The launcher's number for this node (`PMIX_NODEID`).
    pub fn node_id(&self) -> u32 {
        self.node_id
    }

    /// The node's name as the launcher knows it (`PMIX_HOSTNAME`).
    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// The job's namespace (unique per job on the launcher's side).
    pub fn nspace(&self) -> String {
        self.me.nspace_str()
    }

    /// The launcher, for messages: e.g. `OpenMPI's mpirun (PMIX_NAMESPACE=123, PMIX_RANK=0)`.
    pub fn launcher(&self) -> &str {
        &self.launcher
    }

    /// The libpmix version string, e.g. `OpenPMIx 4.2.2rc2 (...)`.
    pub fn library_version(&self) -> String {
        self.lib.version()
    }

    fn timeout_info(&self) -> PmixInfo {
        let s = self.timeout.as_secs_f64().ceil().clamp(1.0, c_int::MAX as f64) as c_int;
        PmixInfo::int(PMIX_TIMEOUT, s)
    }

    fn get_raw(&self, proc_: &PmixProc, key: &CStr, what: &str) -> Result<Returned<'static>, String> {
        let info = [self.timeout_info()];
        let mut v: *mut PmixValue = std::ptr::null_mut();
        // SAFETY: proc_, key and info are valid for the call; v receives a value we own.
        let rc = unsafe { (self.lib.get)(proc_, key.as_ptr(), info.as_ptr(), info.len(), &mut v) };
        let out = Returned { lib: self.lib, v };
        if rc != PMIX_SUCCESS || v.is_null() {
            let who = if proc_.rank == PMIX_RANK_WILDCARD { "the job".to_string() } else { format!("rank {}", proc_.rank) };
            return Err(format!("PMIx: PMIx_Get of {what} for {who} failed under {}: {}", self.launcher, self.lib.status(rc)));
        }
        Ok(out)
    }

    /// `key` from the first of `procs` that has it (the first one's error if none has).
    fn get_first(&self, procs: &[PmixProc], key: &CStr) -> Result<Returned<'static>, String> {
        let name = key.to_string_lossy();
        let mut first_err = None;
        for pr in procs {
            match self.get_raw(pr, key, &name) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| format!("PMIx: no process to ask for {name}")))
    }

    fn get_uint(&self, procs: &[PmixProc], key: &CStr) -> Result<u64, String> {
        let v = self.get_first(procs, key)?;
        v.as_u64().ok_or_else(|| format!("PMIx: {} has type {}, not an unsigned integer", key.to_string_lossy(), v.value().type_))
    }

    fn get_string(&self, procs: &[PmixProc], key: &CStr) -> Result<String, String> {
        let v = self.get_first(procs, key)?;
        v.as_string().ok_or_else(|| format!("PMIx: {} has type {}, not a string", key.to_string_lossy(), v.value().type_))
    }

    /// Prints `msg` and asks the launcher to kill the whole job with `status` (PMIx_Abort of
    /// every process of the namespace). The launcher may take a second to act: the caller
    /// should exit with `status` right after. Fails when the server refuses or does not
    /// answer within the timeout.
    pub fn abort(&mut self, status: i32, msg: &str) -> Result<(), String> {
        eprintln!("PMIx: rank {} aborting the job (status {status}): {msg}", self.rank());
        let lib = self.lib;
        let cmsg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        let rc = bounded("PMIx_Abort", self.timeout, move || {
            // SAFETY: cmsg is NUL-terminated; NULL procs (0 of them) means the whole namespace.
            unsafe { (lib.abort)(status, cmsg.as_ptr(), std::ptr::null_mut(), 0) }
        })?;
        match rc {
            Some(PMIX_SUCCESS) => {
                self.done = true;
                Ok(())
            }
            Some(rc) => Err(format!("PMIx: PMIx_Abort failed under {}: {}", self.launcher, self.lib.status(rc))),
            None => Err(format!("PMIx: PMIx_Abort did not return within {} under {}", secs(self.timeout), self.launcher)),
        }
    }

    /// Leaves PMIx (PMIx_Finalize, no barrier). Afterwards this process's exit is an ordinary
    /// exit to the launcher (see the module comment).
    pub fn finalize(mut self) -> Result<(), String> {
        self.done = true;
        // SAFETY: PMIx was initialised by this object and is finalized once (done is set).
        let rc = unsafe { (self.lib.finalize)(std::ptr::null(), 0) };
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx: PMIx_Finalize failed under {}: {}", self.launcher, self.lib.status(rc)));
        }
        Ok(())
    }
}

impl Drop for Pmix {
    fn drop(&mut self) {
        if !self.done {
            // SAFETY: PMIx was initialised by this object and not finalized yet.
            unsafe { (self.lib.finalize)(std::ptr::null(), 0) };
        }
    }
}

/// Loads libpmix (once per process) and returns its version string, e.g. `OpenPMIx 4.2.2rc2
/// (...)`, or why it cannot be loaded: for `ishmem-info`, and to decide on a fallback before
/// `Pmix::from_env` when a launcher's environment is also readable without PMIx.
pub fn library_version() -> Result<String, String> {
    Lib::default().map(|l| l.version()).map_err(|e| format!("PMIx: cannot load {LIB_NAME}: {e}"))
}

/// Kills the job through the launcher from a process that has already left PMIx (or never
/// joined it): a new PMIx_Init (allowed after PMIx_Finalize) and PMIx_Abort. Under OpenMPI 4.1
/// `mpirun` then exits with `status` about a second later.
pub fn abort_job(status: i32, msg: &str, timeout: Duration) -> Result<(), String> {
    // Only PMIx_Init: after a finalize the job facts are no longer readable (PMIx_Get of
    // pmix.lrank gives NOT-FOUND), and PMIx_Abort needs none of them.
    let Some((lib, me, who)) = Pmix::init(&Env::from_process(), Lib::default, timeout)? else {
        return Err("PMIx: cannot abort the job: this process was not started by a PMIx launcher".into());
    };
    Pmix::bare(lib, me, who, timeout).abort(status, msg)
}

impl Exchange for Pmix {
    /// PMIx_Put(PMIX_GLOBAL, "ishmem.<key>", bytes), PMIx_Commit, PMIx_Fence over the whole
    /// namespace with PMIX_COLLECT_DATA, then PMIx_Get of that key from every rank. PMIx keeps
    /// every key for the job's lifetime, so a key may serve one round only.
    fn allgather(&mut self, key: &str, value: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let full = format!("{KEY_PREFIX}{key}");
        if key.is_empty() || key.contains('\0') || full.len() > PMIX_MAX_KEYLEN {
            return Err(format!("PMIx: allgather key {key:?} is unusable (1 to {} bytes, no NUL)", PMIX_MAX_KEYLEN - KEY_PREFIX.len()));
        }
        if self.used_keys.contains(&full) {
            return Err(format!(
                "PMIx: allgather key '{key}' was already used by an earlier round; PMIx keeps every key, so each round needs its own"
            ));
        }
        let ckey = CString::new(full.clone()).map_err(|_| "PMIx: key has a NUL byte".to_string())?;
        let mut v = PmixValue {
            type_: PMIX_BYTE_OBJECT,
            data: PmixValueData {
                bo: PmixByteObject {
                    bytes: if value.is_empty() { std::ptr::null_mut() } else { value.as_ptr() as *mut c_char },
                    size: value.len(),
                },
            },
        };
        // SAFETY: ckey is NUL-terminated; v describes `value`, which PMIx_Put copies and never
        // writes to (the pointer is only mutable because of the C prototype).
        let rc = unsafe { (self.lib.put)(PMIX_GLOBAL, ckey.as_ptr(), &mut v) };
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx: PMIx_Put of '{key}' ({} bytes) failed: {}", value.len(), self.lib.status(rc)));
        }
        self.used_keys.insert(full);
        // SAFETY: no arguments; pushes this process's puts to its server.
        let rc = unsafe { (self.lib.commit)() };
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx: PMIx_Commit for '{key}' failed: {}", self.lib.status(rc)));
        }
        let all = PmixProc::new(&self.me.nspace, PMIX_RANK_WILDCARD);
        let info = [PmixInfo::flag(PMIX_COLLECT_DATA, true), self.timeout_info()];
        // SAFETY: one proc and two infos, all valid for the call.
        let rc = unsafe { (self.lib.fence)(&all, 1, info.as_ptr(), info.len()) };
        if rc == PMIX_ERR_TIMEOUT {
            return Err(format!(
                "PMIx: timed out after {} in PMIx_Fence of allgather('{key}'): not every rank of the {} ranks of {} reached it",
                secs(self.timeout),
                self.size,
                self.launcher
            ));
        }
        if rc != PMIX_SUCCESS {
            return Err(format!("PMIx: PMIx_Fence of allgather('{key}') failed under {}: {}", self.launcher, self.lib.status(rc)));
        }
        let mut out = Vec::with_capacity(self.size);
        for r in 0..self.size {
            let peer = PmixProc::new(&self.me.nspace, r as PmixRank);
            let got = self.get_raw(&peer, &ckey, &format!("'{key}'"))?;
            let bytes =
                got.as_bytes().ok_or_else(|| format!("PMIx: rank {r}'s '{key}' has type {}, not a byte object", got.value().type_))?;
            out.push(bytes);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
