//! The `_on_queue` forms: operations enqueued on the caller's CUDA stream (`ishmemx_queue_t`),
//! ordered with the rest of the stream's work and capturable in CUDA graphs.
//!
//! Contiguous copies within this GPU's memory (to or from this PE, or a PE sharing its GPU)
//! up to `ISHMEM_QUEUE_KERNEL_MAX` bytes run as an SM copy kernel (lower latency); larger ones,
//! and every contiguous copy to or from another GPU's heap, go to the copy engines
//! (`cuMemcpyAsync`), as do the strided forms (`cuMemcpy2DAsync`): see `kernel_copy`.
//! Signals, waits, quiet and barriers are kernels of the library's queue module
//! (cuda/queue_kernels.cu, PTX in src/transport/cuda/queue_kernels.ptx), which reads the same
//! device state as user kernels. Without the CUDA backend the forms are a
//! PE-tagged error: there is no stream to order them on.
//!
//! A PE of another node (a job across nodes: the proxy ring runs) is not mapped here: the RMA
//! forms (put, get, the strided forms, put_signal) to it enqueue a one-thread kernel
//! (`ishmemi_q_proxy_*` of cuda/queue_remote_kernels.cu, a module loaded at the first such call)
//! running the device call, which posts requests into the proxy ring and
//! waits as a device call does: a put until the proxy has read the source (the stream may then
//! reuse it), a get until the data is in dest, put_signal until the data is put and then the
//! signal updated. Never a copy-engine copy to a remote heap. The local buffer may be device
//! memory or host memory (pinned or not): the proxy thread reads or writes it on the host,
//! through a host buffer for device memory. The symmetric side must lie in the GPU heap. The
//! choice costs the mapped path nothing: it is taken where `State::translate` fails, which
//! `State::remote` did before. `quiet_on_queue` then completes them at the targets (the proxy's
//! quiet, after them in stream order).

use crate::core::amo::Atom;
use crate::core::{bytes, state, State};
use crate::ffi::fatal;
use crate::transport::cuda::{driver, Gpu};
use cudarc::driver::sys::{self, CUfunction, CUmodule, CUresult};
use std::ffi::{c_int, c_void, CString};
use std::sync::OnceLock;

pub use crate::wait::Values;

/// `ishmemx_queue_t`: a CUstream (NULL: the legacy default stream).
pub type Queue = *mut c_void;

const PTX: &str = concat!(include_str!("../transport/cuda/queue_kernels.ptx"), "\0");

/// The library's queue kernels, loaded and bound at init (`preload`; opaque outside this module).
pub struct Kernels {
    _module: Module,
    putmem: CUfunction,
    getmem: CUfunction,
    put_signal: CUfunction,
    signal: CUfunction,
    quiet: CUfunction,
    barrier: CUfunction,
    wait_i32: CUfunction,
    wait_u32: CUfunction,
    wait_i64: CUfunction,
    wait_u64: CUfunction,
}

// SAFETY: module and function handles are process-wide driver objects, usable from any thread
// with the context current.
unsafe impl Send for Kernels {}
// SAFETY: as above; they are never mutated after loading.
unsafe impl Sync for Kernels {}

static KERNELS: OnceLock<Result<Kernels, String>> = OnceLock::new();

/// A PTX module of the library, loaded in the library's context and bound to the device state.
pub(crate) struct Module(CUmodule);

impl Module {
    /// Loads `ptx` (NUL-terminated PTX text) and binds its copy of the device state; `what`
    /// names it in errors.
    pub(crate) fn load(func: &str, gpu: &Gpu, ptx: &'static str, what: &str) -> Result<Module, String> {
        debug_assert!(ptx.ends_with('\0'));
        let _c = gpu.enter(func);
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: ptx is NUL-terminated PTX text (the callers' include_str! + "\0").
        driver::ok(&format!("cuModuleLoadData({what})"), unsafe { sys::cuModuleLoadData(&mut module, ptx.as_ptr().cast()) })?;
        // SAFETY: module is live (never unloaded while the library runs).
        unsafe { gpu.bind_module(func, module, &gpu.dev_state()) }?;
        Ok(Module(module))
    }

    /// The kernel `name` of the module.
    pub(crate) fn get(&self, name: &str) -> Result<CUfunction, String> {
        let c = CString::new(name).map_err(|_| "bad kernel name".to_string())?;
        let mut f: CUfunction = std::ptr::null_mut();
        // SAFETY: the module was loaded by `load`; c is a valid C string.
        driver::ok(&format!("cuModuleGetFunction({name})"), unsafe { sys::cuModuleGetFunction(&mut f, self.0, c.as_ptr()) })?;
        Ok(f)
    }
}

fn load(func: &str, gpu: &Gpu) -> Result<Kernels, String> {
    let m = Module::load(func, gpu, PTX, "queue kernels")?;
    Ok(Kernels {
        putmem: m.get("ishmemi_q_putmem")?,
        getmem: m.get("ishmemi_q_getmem")?,
        put_signal: m.get("ishmemi_q_put_signal")?,
        signal: m.get("ishmemi_q_signal")?,
        quiet: m.get("ishmemi_q_quiet")?,
        barrier: m.get("ishmemi_q_barrier_all")?,
        wait_i32: m.get("ishmemi_q_wait_i32")?,
        wait_u32: m.get("ishmemi_q_wait_u32")?,
        wait_i64: m.get("ishmemi_q_wait_i64")?,
        wait_u64: m.get("ishmemi_q_wait_u64")?,
        _module: m,
    })
}

const REMOTE_PTX: &str = concat!(include_str!("../transport/cuda/queue_remote_kernels.ptx"), "\0");

/// The kernels of the RMA forms to PEs of other nodes (cuda/queue_remote_kernels.cu): a module
/// of its own, loaded at init only where the job spans nodes, so a job of one node never
/// JIT-compiles it.
struct Remote {
    _module: Module,
    putmem: CUfunction,
    getmem: CUfunction,
    put_signal: CUfunction,
    strided: CUfunction,
}

// SAFETY: as for Kernels.
unsafe impl Send for Remote {}
// SAFETY: as for Kernels.
unsafe impl Sync for Remote {}

static REMOTE: OnceLock<Result<Remote, String>> = OnceLock::new();

/// The loaded kernels of the RMA forms to PEs of other nodes.
fn load_remote(func: &str, gpu: &Gpu) -> Result<Remote, String> {
    let m = Module::load(func, gpu, REMOTE_PTX, "queue kernels of other nodes")?;
    Ok(Remote {
        putmem: m.get("ishmemi_q_proxy_putmem")?,
        getmem: m.get("ishmemi_q_proxy_getmem")?,
        put_signal: m.get("ishmemi_q_proxy_put_signal")?,
        strided: m.get("ishmemi_q_proxy_strided")?,
        _module: m,
    })
}

/// The loaded kernels of the RMA forms to PEs of other nodes (loaded at init: `preload`).
fn remote_kernels(func: &str, gpu: &Gpu) -> &'static Remote {
    let r = REMOTE.get_or_init(|| load_remote(func, gpu));
    match r {
        Ok(k) => k,
        Err(e) => fatal(func, &format!("the queue kernels of other nodes did not load: {e}")),
    }
}

/// Loads every module of the library's kernels (init, before any kernel of the program can
/// wait for this PE's host side): cuModuleLoadData waits for every running kernel of the
/// context while holding the driver's context lock, so a module loaded at its first use, while
/// a kernel waits for the proxy, stopped the proxy's copies behind it (coll_ops across 2
/// pretend nodes hung in the first `sync_all_on_queue` after a `team_sync_on_queue`). The
/// kernels of the RMA forms to other nodes load only where the job spans nodes (`remote`).
/// A module that fails to load is reported at its first use, as before.
pub(crate) fn preload(func: &str, gpu: &'static Gpu, remote: bool) {
    let _ = KERNELS.get_or_init(|| load(func, gpu));
    if remote {
        let _ = REMOTE.get_or_init(|| load_remote(func, gpu));
    }
    super::queue_coll::preload(func, gpu);
}

/// The running state, its GPU, and the loaded queue kernels.
pub(crate) fn ctx(func: &str) -> (&'static State, &'static Gpu, &'static Kernels) {
    let (st, gpu) = gpu_of(func);
    match KERNELS.get_or_init(|| load(func, gpu)) {
        Ok(k) => (st, gpu, k),
        Err(e) => fatal(func, &format!("the queue kernels did not load: {e}")),
    }
}

/// `ISHMEM_QUEUE_STATS=1`: counts of what the `_on_queue` forms hand the CUDA driver, per PE,
/// printed at finalize, to see where an on-queue call's time goes (launches, copies, queries)
/// without a system profiler.
pub(crate) mod stats {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

    static ON: AtomicBool = AtomicBool::new(false);
    /// What is counted (index into COUNTS).
    #[derive(Clone, Copy)]
    pub(crate) enum Ev {
        Call,
        Launch,
        Copy,
        Memset,
        PtrQuery,
        CtxPush,
    }
    const NAMES: [&str; 6] =
        ["on_queue calls", "kernel launches", "copy-engine copies", "memsets", "pointer-type queries", "context pushes"];
    static COUNTS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

    /// Turns counting on or off (init, from the configuration).
    pub(crate) fn enable(on: bool) {
        for c in &COUNTS {
            c.store(0, Relaxed);
        }
        ON.store(on, Relaxed);
    }

    #[inline]
    pub(crate) fn count(e: Ev) {
        if ON.load(Relaxed) {
            COUNTS[e as usize].fetch_add(1, Relaxed);
        }
    }

    /// The counts as one line (None when counting is off).
    pub(crate) fn report() -> Option<String> {
        if !ON.load(Relaxed) {
            return None;
        }
        let calls = COUNTS[0].load(Relaxed);
        let mut s = format!("ISHMEM_QUEUE_STATS: {calls} {}", NAMES[0]);
        for (i, name) in NAMES.iter().enumerate().skip(1) {
            let n = COUNTS[i].load(Relaxed);
            let per = if calls > 0 { format!(" ({:.2} per call)", n as f64 / calls as f64) } else { String::new() };
            s.push_str(&format!(", {n} {name}{per}"));
        }
        Some(s)
    }
}
use stats::{count, Ev};

/// The running state and its GPU, or the error of an _on_queue form on the CPU backend.
pub(crate) fn gpu_of(func: &str) -> (&'static State, &'static Gpu) {
    let st = state(func);
    count(Ev::Call);
    let Some(gpu) = st.gpu.as_ref() else {
        fatal(func, "the _on_queue forms need the CUDA backend, and this PE runs the CPU backend (no GPU in use)")
    };
    (st, gpu)
}

/// Launches `f` on the queue with the given parameter pointers.
pub(crate) fn launch(func: &str, gpu: &Gpu, f: CUfunction, grid: u32, block: u32, params: &mut [*mut c_void], q: Queue) {
    let _c = enter(func, gpu);
    count(Ev::Launch);
    // SAFETY: params point to locals matching the kernel's parameter list, which the driver
    // copies at launch; the addresses inside were checked by the caller.
    driver::check(func, "cuLaunchKernel", unsafe {
        sys::cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, q.cast(), params.as_mut_ptr(), std::ptr::null_mut())
    });
}

/// Makes the library's context current for an on-queue call (counted when it had to be pushed).
pub(crate) fn enter(func: &str, gpu: &Gpu) -> crate::transport::cuda::driver::CtxGuard {
    let c = gpu.enter(func);
    if c.pushed() {
        count(Ev::CtxPush);
    }
    c
}

/// Enqueues a copy-engine copy of `n` bytes from `from` to `to` on the queue; the caller has
/// made the context current.
///
/// # Safety
/// Both ranges are device-accessible memory valid when the stream runs the copy.
pub(crate) unsafe fn copy_async(func: &str, to: usize, from: usize, n: usize, q: Queue) {
    count(Ev::Copy);
    // SAFETY: as the caller promises.
    driver::check(func, "cuMemcpyAsync", unsafe { sys::cuMemcpyAsync(to as u64, from as u64, n, q.cast()) });
}

macro_rules! args {
    ($($v:expr),*) => { [$( (&mut $v as *mut _) as *mut c_void ),*] };
}
pub(crate) use args;

/// The CUDA memory type of `addr` (`CUmemorytype`), or None for memory CUDA does not know.
pub(crate) fn memory_type(addr: usize) -> Option<u32> {
    let mut t: u32 = 0;
    count(Ev::PtrQuery);
    // SAFETY: the attribute query writes one u32; an unknown pointer returns an error.
    let r = unsafe {
        sys::cuPointerGetAttribute((&mut t as *mut u32).cast(), sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr as u64)
    };
    (r == CUresult::CUDA_SUCCESS).then_some(t)
}

/// Whether the address is GPU memory the SM copy kernel can read.
pub(crate) fn device_accessible(addr: usize) -> bool {
    memory_type(addr) == Some(sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32)
}

/// Whether `[addr, addr + len)` is GPU memory the SM copy kernel can read: this PE's symmetric
/// heap is (the CUDA backend's heap lives in its GPU's memory) without asking the driver, which
/// cost each small on-queue put a pointer-attribute query (issue 24: putmem_on_queue 4-64 KiB
/// and the 8-byte on-queue latency trailed NVSHMEM by 1.5-2x on two GPUs); other memory is
/// looked up.
fn kernel_reaches(st: &State, addr: usize, len: usize) -> bool {
    st.heap.offset(addr, len).is_some() || device_accessible(addr)
}

/// Whether a contiguous on-queue put or get of `n` bytes between PE `pe`'s symmetric range and
/// the local buffer `local` runs as the SM copy kernel (else on the copy engines): only when
/// PE `pe`'s heap lies in this GPU's memory, `n` is at most `ISHMEM_QUEUE_KERNEL_MAX` and the
/// kernel can reach `local`. Across GPUs the copy engines win at every size (two H100s over
/// NVLink, issue 24, one A/B: back-to-back 8-byte puts 3.80 us each as kernels, 2.98 us as
/// copies, NVSHMEM's `cuMemcpyDtoDAsync` on the stream 2.92 us; 4-64 KiB puts 1.45-1.96x the
/// kernels' rate). Within one GPU the kernel is the faster (one H100: 3.11 us per 8-byte put,
/// NVSHMEM's copy 4.02 us).
#[inline(always)]
fn kernel_copy(st: &State, gpu: &Gpu, pe: usize, local: usize, n: usize) -> bool {
    n <= st.cfg.queue_kernel_max && gpu.on_this_gpu(pe) && kernel_reaches(st, local, n)
}

fn grid_for(n: usize) -> u32 {
    // One block of 256 threads moves 64 KiB per pass of 16-byte words; cap at 132 blocks.
    (n.div_ceil(64 << 10)).clamp(1, 132) as u32
}

/// The symmetric range `[addr, addr+len)` of PE `pe` translated as `State::remote` does, or
/// None when PE `pe` is on another node and the proxy ring runs: the caller then enqueues a
/// one-thread kernel that reaches it through the proxy (the range was checked against this
/// PE's GPU heap, which device calls need). Anything else is `remote`'s fatal error. The mapped
/// path costs what `remote` costs.
#[inline(always)]
fn mapped(func: &str, st: &State, what: &str, addr: usize, len: usize, pe: usize) -> Option<usize> {
    match st.translate(addr, len, pe) {
        Some(r) => Some(r),
        None => via_proxy(func, st, what, addr, len, pe),
    }
}

#[cold]
fn via_proxy(func: &str, st: &State, what: &str, addr: usize, len: usize, pe: usize) -> Option<usize> {
    if !st.off_node(pe) || st.proxy_ring.is_none() {
        return Some(st.remote(func, what, addr, len, pe));
    }
    if st.heap.offset(addr, len).is_none() {
        st.check_sym(func, what, addr, len);
        fatal(func, &format!("{what} {addr:#x} ({len} bytes) is in the symmetric data segment: an on-queue operation to PE {pe} of another node needs the symmetric heap"))
    }
    None
}

/// # Safety
/// `src` must be readable for the length, as the stream reaches it.
pub unsafe fn put(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int, q: Queue) {
    let (st, gpu, k) = ctx(func);
    let pe = st.check_pe(func, pe);
    let n = bytes(func, nelems, elem);
    if n == 0 {
        return;
    }
    let Some(r) = mapped(func, st, "dest", dest as usize, n, pe) else {
        // Another node: the device put, which returns once the proxy has read the source.
        let (mut d, mut s, mut b, mut p) = (dest as u64, src as u64, n, pe as c_int);
        return launch(func, gpu, remote_kernels(func, gpu).putmem, 1, 1, &mut args!(d, s, b, p), q);
    };
    if kernel_copy(st, gpu, pe, src as usize, n) {
        let (mut d, mut s, mut b, mut p) = (dest as u64, src as u64, n, pe as c_int);
        launch(func, gpu, k.putmem, grid_for(n), 256, &mut args!(d, s, b, p), q);
    } else {
        let _c = enter(func, gpu);
        // SAFETY: the destination range was checked; the source is the caller's.
        unsafe { copy_async(func, r, src as usize, n, q) };
    }
}

/// # Safety
/// `dest` must be writable for the length, as the stream reaches it.
pub unsafe fn get(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int, q: Queue) {
    let (st, gpu, k) = ctx(func);
    let pe = st.check_pe(func, pe);
    let n = bytes(func, nelems, elem);
    if n == 0 {
        return;
    }
    let Some(r) = mapped(func, st, "source", src as usize, n, pe) else {
        // Another node: the device get, which returns once the data is in dest.
        let (mut d, mut s, mut b, mut p) = (dest as u64, src as u64, n, pe as c_int);
        return launch(func, gpu, remote_kernels(func, gpu).getmem, 1, 1, &mut args!(d, s, b, p), q);
    };
    if kernel_copy(st, gpu, pe, dest as usize, n) {
        let (mut d, mut s, mut b, mut p) = (dest as u64, src as u64, n, pe as c_int);
        launch(func, gpu, k.getmem, grid_for(n), 256, &mut args!(d, s, b, p), q);
    } else {
        let _c = enter(func, gpu);
        // SAFETY: the source range was checked; the destination is the caller's.
        unsafe { copy_async(func, dest as usize, r, n, q) };
    }
}

/// Strided blocks on the copy engines: `nblocks` rows of `bsize` elements.
#[allow(clippy::too_many_arguments)]
unsafe fn strided(
    func: &str,
    is_put: bool,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: c_int,
    q: Queue,
) {
    let (st, gpu, _) = ctx(func);
    let pe = st.check_pe(func, pe);
    for (name, s) in [("dst", dst), ("sst", sst)] {
        if s < 1 || (s as usize) < bsize {
            fatal(func, &format!("stride {name} = {s} must be at least {}", bsize.max(1)));
        }
    }
    if bsize == 0 || nblocks == 0 {
        return;
    }
    let (dst, sst) = (dst as usize, sst as usize);
    let stride = if is_put { dst } else { sst };
    let span = bytes(func, (nblocks - 1).saturating_mul(stride).saturating_add(bsize), elem);
    let (what, sym) = if is_put { ("dest", dest as usize) } else { ("source", src as usize) };
    let Some(r) = mapped(func, st, what, sym, span, pe) else {
        // Another node: the device strided form, one proxy request per block.
        let (mut ip, mut d, mut s, mut ds, mut ss) = (c_int::from(is_put), dest as u64, src as u64, dst as isize, sst as isize);
        let (mut b, mut nb, mut e, mut p) = (bsize, nblocks, elem, pe as c_int);
        return launch(func, gpu, remote_kernels(func, gpu).strided, 1, 1, &mut args!(ip, d, s, ds, ss, b, nb, e, p), q);
    };
    let (d, s) = if is_put { (r, src as usize) } else { (dest as usize, r) };
    let _c = enter(func, gpu);
    count(Ev::Copy);
    // SAFETY: the rows span the checked symmetric range and the caller's local one; pitches
    // beyond the device's 2D limit are copied row by row on the same stream.
    unsafe { gpu.copy_2d_async(func, d, dst * elem, s, sst * elem, bsize * elem, nblocks, q.cast()) };
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iput(func: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, nelems: usize, elem: usize, pe: c_int, q: Queue) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, true, dest, src, dst, sst, 1, nelems, elem, pe, q) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iget(func: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, nelems: usize, elem: usize, pe: c_int, q: Queue) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, false, dest, src, dst, sst, 1, nelems, elem, pe, q) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibput(
    func: &str,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: c_int,
    q: Queue,
) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, true, dest, src, dst, sst, bsize, nblocks, elem, pe, q) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibget(
    func: &str,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: c_int,
    q: Queue,
) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, false, dest, src, dst, sst, bsize, nblocks, elem, pe, q) }
}

/// Checks the signal operator and word; whether PE `pe` is reached through the proxy.
fn check_signal(func: &str, st: &State, sig: *mut u64, sig_op: c_int, pe: usize) -> bool {
    if sig_op != 0 && sig_op != 1 {
        fatal(func, &format!("invalid signal operator {sig_op} (use ISHMEM_SIGNAL_SET or ISHMEM_SIGNAL_ADD)"));
    }
    let r = mapped(func, st, "sig_addr", sig as usize, 8, pe);
    super::check_align(func, "sig_addr", r.unwrap_or(sig as usize), 8);
    r.is_none()
}

/// # Safety
/// `src` must be readable for the length, as the stream reaches it.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal(
    func: &str,
    dest: *mut u8,
    src: *const u8,
    nelems: usize,
    elem: usize,
    sig: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
    q: Queue,
) {
    let (st, gpu, k) = ctx(func);
    let p = st.check_pe(func, pe);
    let n = bytes(func, nelems, elem);
    let proxied = check_signal(func, st, sig, sig_op, p);
    if n > 0 {
        mapped(func, st, "dest", dest as usize, n, p);
    }
    let (mut d, mut s, mut b, mut g, mut v, mut o, mut pp) = (dest as u64, src as u64, n, sig as u64, signal, sig_op, pe);
    if proxied {
        // Another node: the device put_signal (the proxy puts, orders, then signals). With no
        // data, dest may be any address: the kernel is given the (checked) signal's.
        if n == 0 {
            d = g;
        }
        return launch(func, gpu, remote_kernels(func, gpu).put_signal, 1, 1, &mut args!(d, s, b, g, v, o, pp), q);
    }
    if n <= st.cfg.queue_kernel_max && (n == 0 || kernel_reaches(st, src as usize, n)) {
        launch(func, gpu, k.put_signal, 1, 256, &mut args!(d, s, b, g, v, o, pp), q);
    } else {
        // SAFETY: put checks and enqueues the copy; the signal kernel follows it on the stream.
        unsafe { put(func, dest, src, nelems, elem, pe, q) };
        launch(func, gpu, k.signal, 1, 1, &mut args!(g, v, o, pp), q);
    }
}

/// Which wait kernel serves a type: by size and signedness.
pub trait WaitType: Atom {
    fn kernel(k: &Kernels) -> CUfunction;
}
macro_rules! wait_type {
    ($($t:ty => $f:ident),*) => {$(
        impl WaitType for $t {
            fn kernel(k: &Kernels) -> CUfunction { k.$f }
        }
    )*};
}
wait_type!(i32 => wait_i32, u32 => wait_u32, i64 => wait_i64, u64 => wait_u64, isize => wait_i64, usize => wait_u64);

/// Enqueues a wait: mode 0 all, 1 any, 2 some.
#[allow(clippy::too_many_arguments)]
fn wait<T: WaitType + Default>(
    func: &str,
    ivars: *mut T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    v: Values<T>,
    mode: c_int,
    ret: *mut usize,
    q: Queue,
) {
    let (st, gpu, k) = ctx(func);
    crate::wait::check_cmp(func, cmp);
    if n > 0 {
        st.remote(func, "ivars", ivars as usize, bytes(func, n, size_of::<T>()), st.me);
    }
    if mode == 2 && n > 0 && indices.is_null() {
        fatal(func, "indices is NULL");
    }
    let (mut value, mut values) = match v {
        Values::One(x) => (x, 0u64),
        Values::Many(p) => {
            if p.is_null() && n > 0 {
                fatal(func, "cmp_values is NULL");
            }
            (T::default(), p as u64)
        }
    };
    let (mut iv, mut nn, mut idx, mut stt, mut c, mut m, mut r) = (ivars as u64, n, indices as u64, status as u64, cmp, mode, ret as u64);
    launch(func, gpu, T::kernel(k), 1, 1, &mut args!(iv, nn, idx, stt, c, value, values, m, r), q);
}

/// # Safety
/// `ivar` is checked; the stream reaches it as device memory.
pub unsafe fn wait_until<T: WaitType + Default>(func: &str, ivar: *mut T, cmp: c_int, value: T, q: Queue) {
    wait(func, ivar, 1, std::ptr::null_mut(), std::ptr::null(), cmp, Values::One(value), 0, std::ptr::null_mut(), q)
}

/// # Safety
/// Pointers device-accessible as the stream reaches them; ivars are checked.
pub unsafe fn wait_until_all<T: WaitType + Default>(
    func: &str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    v: Values<T>,
    q: Queue,
) {
    wait(func, ivars, n, std::ptr::null_mut(), status, cmp, v, 0, std::ptr::null_mut(), q)
}

/// # Safety
/// Pointers device-accessible as the stream reaches them; ivars are checked.
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait_until_any<T: WaitType + Default>(
    func: &str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    v: Values<T>,
    ret: *mut usize,
    q: Queue,
) {
    wait(func, ivars, n, std::ptr::null_mut(), status, cmp, v, 1, ret, q)
}

/// # Safety
/// Pointers device-accessible as the stream reaches them; ivars are checked.
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait_until_some<T: WaitType + Default>(
    func: &str,
    ivars: *mut T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    v: Values<T>,
    ret: *mut usize,
    q: Queue,
) {
    wait(func, ivars, n, indices, status, cmp, v, 2, ret, q)
}

/// `ishmemx_signal_wait_until_on_queue`: a wait on one 64-bit signal word.
///
/// # Safety
/// As `wait_until`.
pub unsafe fn signal_wait_until(func: &str, sig_addr: *mut u64, cmp: c_int, cmp_value: u64, q: Queue) {
    wait(func, sig_addr, 1, std::ptr::null_mut(), std::ptr::null(), cmp, Values::One(cmp_value), 0, std::ptr::null_mut(), q)
}

/// `ishmemx_quiet_on_queue`: completes this PE's earlier operations on the queue before the
/// queue's later work. In a job of one node every on-queue operation is a kernel or a copy of
/// the stream, whose stores (local or to NVLink/PCIe peers) are performed when it completes, and
/// the stream starts later work only after that: stream order already is the quiet, and nothing
/// is enqueued (a kernel would cost a launch). With the proxy ring (a job across nodes) a
/// one-thread kernel waits until the proxy has completed every request of this PE.
pub fn quiet(func: &str, q: Queue) {
    let (st, gpu, k) = ctx(func);
    if st.proxy_ring.is_none() {
        return;
    }
    launch(func, gpu, k.quiet, 1, 1, &mut [], q);
}

/// `ishmemx_barrier_all_on_queue` and `ishmemx_sync_all_on_queue`: a one-thread barrier
/// kernel. A job of one PE on one node has nobody to wait for, and stream order completes its
/// earlier work (see `quiet`): nothing is enqueued.
pub fn barrier_all(func: &str, q: Queue) {
    let (st, gpu, k) = ctx(func);
    if st.npes == 1 && st.proxy_ring.is_none() {
        return;
    }
    launch(func, gpu, k.barrier, 1, 1, &mut [], q);
}
