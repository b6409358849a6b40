//! The collective `_on_queue` forms: team_sync, broadcast, collect, fcollect, alltoall,
//! reductions and scans enqueued on the caller's CUDA stream. Each is one kernel of one block
//! (large blocks of broadcast/fcollect/alltoall go to the copy engines, large reductions to
//! `reduce_split`)
//! (cuda/coll_kernels.cu, PTX in src/transport/cuda/coll_kernels.ptx, a module of its own loaded
//! at init: `queue::preload`) running the work-group form of the device collectives
//! (include/ishmem/cuda_coll.cuh), so a queue collective and a kernel collective of the same team
//! interoperate. Arguments are checked on the host before anything is enqueued; `ret`, when not
//! NULL, must be memory the GPU can write (device, managed or registered host memory) and
//! receives the return code when the stream reaches the collective.
//!
//! Teams with a member on another node (`team::F_REMOTE`): always the one-kernel path, whose
//! work-group form posts the collective to this PE's proxy (core::proxy), which runs the host
//! collective over the network; the copy-engine and whole-GPU paths copy between peer heaps
//! mapped here, which a PE of another node does not have.

use super::queue::stats::{count, Ev};
use super::queue::{args, copy_async, enter, gpu_of, launch, memory_type, Module, Queue};
use crate::core::team::{TeamDesc, F_REMOTE};
use crate::core::{bytes, State};
use crate::ffi::fatal;
use crate::transport::cuda::{driver, Gpu};
use cudarc::driver::sys::{self, CUfunction};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

const PTX: &str = concat!(include_str!("../transport/cuda/coll_kernels.ptx"), "\0");

/// Threads of the one block that runs a queue collective.
const BLOCK: u32 = 1024;

/// The element types of the reduction kernels (`ishmemi_q_<op>_<SUFFIX>`).
pub trait QElem: Copy {
    const SUFFIX: &'static str;
}
macro_rules! qelem {
    ($($t:ty => $s:literal),*) => { $(impl QElem for $t { const SUFFIX: &'static str = $s; })* };
}
qelem!(i8 => "i8", u8 => "u8", i16 => "i16", u16 => "u16", i32 => "i32", u32 => "u32", i64 => "i64", u64 => "u64",
       f32 => "f32", f64 => "f64", usize => "u64", isize => "i64");

const INT_OPS: [&str; 3] = ["and", "or", "xor"];
const ALL_OPS: [&str; 4] = ["max", "min", "sum", "prod"];
const INT_TYPES: [&str; 8] = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"];

struct CollKernels {
    _module: Module,
    team_sync: CUfunction,
    broadcast: CUfunction,
    fcollect: CUfunction,
    collect: CUfunction,
    alltoall: CUfunction,
    /// The grid copy of the large data collectives (`grid_copies`).
    copy: CUfunction,
    /// `<op>_<type>` -> kernel, and its slice kernel (`reduce_split`).
    reduce: HashMap<String, (CUfunction, CUfunction)>,
    /// `<type>` -> the slice kernel of large sum scans (`scan_split`).
    scan: HashMap<&'static str, CUfunction>,
}

// SAFETY: module and function handles are process-wide driver objects, usable from any thread
// with the context current.
unsafe impl Send for CollKernels {}
// SAFETY: as above; they are never mutated after loading.
unsafe impl Sync for CollKernels {}

static KERNELS: OnceLock<Result<CollKernels, String>> = OnceLock::new();

fn load(func: &str, gpu: &Gpu) -> Result<CollKernels, String> {
    let m = Module::load(func, gpu, PTX, "collective queue kernels")?;
    let mut reduce = HashMap::new();
    for op in INT_OPS.iter().chain(ALL_OPS.iter()) {
        let float = ALL_OPS.contains(op);
        for ty in INT_TYPES.iter().chain(if float { ["f32", "f64"].iter() } else { [].iter() }) {
            let key = format!("{op}_{ty}");
            let f = (m.get(&format!("ishmemi_q_{key}"))?, m.get(&format!("ishmemi_qs_{key}"))?);
            reduce.insert(key, f);
        }
    }
    let mut scan = HashMap::new();
    for ty in INT_TYPES.iter().chain(["f32", "f64"].iter()) {
        scan.insert(*ty, m.get(&format!("ishmemi_qscan_{ty}"))?);
    }
    Ok(CollKernels {
        scan,
        team_sync: m.get("ishmemi_q_team_sync")?,
        broadcast: m.get("ishmemi_q_broadcast")?,
        fcollect: m.get("ishmemi_q_fcollect")?,
        collect: m.get("ishmemi_q_collect")?,
        alltoall: m.get("ishmemi_q_alltoall")?,
        copy: m.get("ishmemi_q_copy")?,
        reduce,
        _module: m,
    })
}

/// Loads the module at init (`queue::preload` says why); an error is reported at first use.
pub(crate) fn preload(func: &str, gpu: &Gpu) {
    let _ = KERNELS.get_or_init(|| load(func, gpu));
}

fn kernels(func: &str) -> (&'static State, &'static Gpu, &'static CollKernels) {
    let (st, gpu) = gpu_of(func);
    match KERNELS.get_or_init(|| load(func, gpu)) {
        Ok(k) => (st, gpu, k),
        Err(e) => fatal(func, &format!("the collective queue kernels did not load: {e}")),
    }
}

/// Checks that `[addr, addr + len)` lies in the symmetric heap (device code reaches the heap
/// only, not symmetric globals).
fn check_heap(st: &State, func: &str, what: &str, addr: usize, len: usize) {
    if len > 0 && st.heap.offset(addr, len).is_none() {
        fatal(func, &format!("{what} {addr:#x} (+{len} bytes) is not in the symmetric heap (collectives on a queue reach the heap only)"));
    }
}

/// Checks that `ret` is NULL or memory the GPU can write.
fn check_ret(func: &str, ret: *mut c_int) {
    if ret.is_null() {
        return;
    }
    if memory_type(ret as usize).is_none() {
        fatal(func, &format!("ret {ret:p} is not memory the GPU can write (use device, managed or registered host memory, or NULL)"));
    }
}

/// `ishmemx_team_sync_on_queue`.
pub fn team_sync(func: &str, team: c_int, ret: *mut c_int, q: Queue) {
    let (st, gpu, k) = kernels(func);
    let d = st.team_desc(func, team);
    check_ret(func, ret);
    if d.size == 1 {
        // Nobody to wait for; stream order completes the earlier work.
        return ret_ok(func, gpu, ret, q);
    }
    let (mut t, mut r) = (team, ret as u64);
    launch(func, gpu, k.team_sync, 1, BLOCK, &mut args!(t, r), q);
}

/// What a data-movement collective moves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Broadcast,
    Fcollect,
    Collect,
    Alltoall,
}

/// broadcast, fcollect, collect and alltoall on the queue: `nelems` elements of `elem` bytes per
/// PE (`root` for broadcast only).
///
/// # Safety
/// `dest` and `src` must be symmetric addresses valid for the lengths when the stream runs
/// the collective (checked against the heap; the caller keeps them alive).
#[allow(clippy::too_many_arguments)]
pub unsafe fn data(
    func: &str,
    what: Move,
    team: c_int,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    elem: usize,
    root: c_int,
    ret: *mut c_int,
    q: Queue,
) {
    let (st, gpu, k) = kernels(func);
    let d = st.team_desc(func, team);
    let nb = bytes(func, nelems, elem);
    let n = d.size as usize;
    let (dest_len, src_len) = match what {
        Move::Broadcast => (nb, nb),
        Move::Fcollect => (bytes(func, nb, n), nb),
        Move::Collect => (0, nb), // the total is known on the device only; it checks it there
        Move::Alltoall => (bytes(func, nb, n), bytes(func, nb, n)),
    };
    if what == Move::Broadcast && (root < 0 || root >= d.size) {
        fatal(func, &format!("PE_root {root} out of range for the team of {} PEs", d.size));
    }
    check_heap(st, func, "dest", dest as usize, if d.size == 1 { nb } else { dest_len });
    check_heap(st, func, "source", src as usize, src_len);
    check_ret(func, ret);
    if d.size == 1 {
        // A team of one: dest = source, a copy-engine copy (nothing to synchronize).
        // SAFETY: both ranges checked above; the caller keeps them alive until the stream runs.
        unsafe { solo_copy(func, gpu, dest as usize, src as usize, nb, q) };
        return ret_ok(func, gpu, ret, q);
    }
    if what != Move::Collect && nb > st.cfg.queue_kernel_max && d.flags & F_REMOTE == 0 {
        // SAFETY: ranges checked above; the caller keeps them alive until the stream runs.
        unsafe { grid_copies(st, gpu, k, func, what, team, &d, dest as usize, src as usize, nb, root, ret, q) };
        return;
    }
    let (mut t, mut de, mut s, mut b, mut rt, mut r) = (team, dest as u64, src as u64, nb, root, ret as u64);
    match what {
        Move::Broadcast => launch(func, gpu, k.broadcast, 1, BLOCK, &mut args!(t, de, s, b, rt, r), q),
        Move::Fcollect => launch(func, gpu, k.fcollect, 1, BLOCK, &mut args!(t, de, s, b, r), q),
        Move::Collect => launch(func, gpu, k.collect, 1, BLOCK, &mut args!(t, de, s, b, r), q),
        Move::Alltoall => launch(func, gpu, k.alltoall, 1, BLOCK, &mut args!(t, de, s, b, r), q),
    }
}

/// Blocks per PE above which the large data collectives move their blocks on the copy engines
/// rather than with a grid copy kernel (`ishmemi_q_copy`). Two H200s (issue 24): between two
/// team-sync kernels, a copy-engine copy of 256 KiB - 1 MiB made broadcast_on_queue take
/// 20.5-21.6 us where NVSHMEM's took 6.6-11.6 us (a stream switching from kernels to a copy
/// engine and back waits for each); the copy engines are kept for large blocks, where their
/// bandwidth (396 GB/s for 1 GiB) is above a kernel's (370 GB/s) and a switch costs nothing.
/// `ISHMEMI_QUEUE_GRID_COPY_MAX` (bytes, internal: the GPU suite's `coll_ops.copyengines` run
/// sets 0 to keep the copy-engine path tested at every size) overrides it. PEs need not agree:
/// either way the blocks move between the same two team syncs.
const GRID_COPY_MAX: usize = 4 << 20;

fn grid_copy_max() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| std::env::var("ISHMEMI_QUEUE_GRID_COPY_MAX").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(GRID_COPY_MAX))
}

/// Blocks of the grid copy kernel for `n` bytes: one per 16 KiB, at most 132 (an H100/H200's SMs).
fn copy_grid(n: usize) -> u32 {
    n.div_ceil(16 << 10).clamp(1, 132) as u32
}

/// Blocks above `ISHMEM_QUEUE_KERNEL_MAX` bytes per PE: a team sync kernel (every member has
/// entered, so sources are ready), one copy per block (broadcast: pull the root's block;
/// fcollect and alltoall: push this PE's blocks to every member, in rotated order) by a grid
/// copy kernel up to `GRID_COPY_MAX` bytes, on the copy engines above, then a second team sync
/// kernel (every member's copies are complete: stream order puts them before it on each PE)
/// and the status.
///
/// # Safety
/// As for `data`.
#[allow(clippy::too_many_arguments)]
unsafe fn grid_copies(
    st: &State,
    gpu: &Gpu,
    k: &CollKernels,
    func: &str,
    what: Move,
    team: c_int,
    d: &TeamDesc,
    dest: usize,
    src: usize,
    nb: usize,
    root: c_int,
    ret: *mut c_int,
    q: Queue,
) {
    let sync = || sync_kernel(func, gpu, k, team, q);
    sync();
    let n = d.n();
    let me = d.my_pe as usize;
    let _c = enter(func, gpu);
    let copy = |to: usize, from: usize| {
        if to == from {
            return;
        }
        if nb <= grid_copy_max() {
            let (mut t, mut f, mut b) = (to as u64, from as u64, nb);
            launch(func, gpu, k.copy, copy_grid(nb), 512, &mut args!(t, f, b), q);
        } else {
            // SAFETY: both ranges lie in symmetric heaps mapped here (checked by the caller).
            unsafe { copy_async(func, to, from, nb, q) };
        }
    };
    match what {
        Move::Broadcast => copy(dest, st.remote(func, "source", src, nb, d.world(root as usize))),
        Move::Fcollect => {
            for j in 1..=n {
                let p = (me + j) % n;
                copy(st.remote(func, "dest", dest + me * nb, nb, d.world(p)), src);
            }
        }
        Move::Alltoall => {
            for j in 1..=n {
                let p = (me + j) % n;
                copy(st.remote(func, "dest", dest + me * nb, nb, d.world(p)), src + p * nb);
            }
        }
        Move::Collect => unreachable!("collect sizes are known on the device only"),
    }
    sync();
    ret_ok(func, gpu, ret, q);
}

/// A collective of a team of one PE: `n` bytes from `src` to `dest` on the copy engines, unless
/// they are the same (in place) or empty. `dest` and `src` are equal or disjoint.
///
/// # Safety
/// Both ranges are this PE's heap, valid when the stream runs the copy.
unsafe fn solo_copy(func: &str, gpu: &Gpu, dest: usize, src: usize, n: usize, q: Queue) {
    if n > 0 && dest != src {
        let _c = enter(func, gpu);
        // SAFETY: as the caller promises.
        unsafe { copy_async(func, dest, src, n, q) };
    }
}

/// Enqueues a team-sync kernel of `team` (no status).
fn sync_kernel(func: &str, gpu: &Gpu, k: &CollKernels, team: c_int, q: Queue) {
    let (mut t, mut r) = (team, 0u64);
    launch(func, gpu, k.team_sync, 1, BLOCK, &mut args!(t, r), q);
}

/// Enqueues the store of status 0 into `ret` (when not NULL).
fn ret_ok(func: &str, gpu: &Gpu, ret: *mut c_int, q: Queue) {
    if !ret.is_null() {
        let _c = enter(func, gpu);
        count(Ev::Memset);
        // SAFETY: check_ret found ret to be memory the GPU can write.
        driver::check(func, "cuMemsetD32Async", unsafe { sys::cuMemsetD32Async(ret as u64, 0, 1, q.cast()) });
    }
}

/// Threads per block of the slice kernels, and the most blocks one gets.
const SLICE_BLOCK: u32 = 512;
const SLICE_GRID_MAX: usize = 2048;

/// Blocks of a slice kernel over `len` elements (one per SLICE_BLOCK, at most SLICE_GRID_MAX).
fn slice_grid(len: usize) -> u32 {
    len.div_ceil(SLICE_BLOCK as usize).min(SLICE_GRID_MAX) as u32
}

/// A reduction of `n` elements above ISHMEM_QUEUE_REDUCE_SPLIT_MIN bytes over the whole GPU:
/// a team sync (sources ready); team PE r combines slice r of every member's source with a full
/// grid and stores it into every member's dest (`slice`; dest equal to or disjoint from
/// source, so in place no PE writes what another still reads: slice r of a source is read by
/// PE r alone); a team sync (every slice is in every dest). Until issue 24 the slice went to
/// this PE's dest only, and copy-engine copies of the other slices plus a third team sync
/// followed: 31-37 us for 256 KiB - 1 MiB on two H200s, where NVSHMEM took 10-14 us.
///
/// # Safety
/// As for `reduce`.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_split<T: QElem>(
    gpu: &Gpu,
    k: &CollKernels,
    func: &str,
    slice: CUfunction,
    team: c_int,
    d: &TeamDesc,
    dest: *mut T,
    src: *const T,
    n: usize,
    ret: *mut c_int,
    q: Queue,
) {
    let (np, me) = (d.n(), d.my_pe as usize);
    sync_kernel(func, gpu, k, team, q);
    let (lo, len) = crate::core::coll::slice(n, np, me);
    if len > 0 {
        let grid = slice_grid(len);
        let (mut t, mut de, mut s, mut l0, mut l) = (team, dest as u64, src as u64, lo, len);
        launch(func, gpu, slice, grid, SLICE_BLOCK, &mut args!(t, de, s, l0, l), q);
    }
    sync_kernel(func, gpu, k, team, q);
    ret_ok(func, gpu, ret, q);
}

/// A sum scan of `n` elements above ISHMEM_QUEUE_REDUCE_SPLIT_MIN bytes over the whole GPU: a
/// team sync (sources ready); team PE r's grid computes, for slice r of the elements, the
/// running sum over the team PEs' sources and stores it into every PE's dest (each element of
/// every PE is read, then written, by one PE's grid alone: in place is safe); a team sync
/// (every PE's dest complete).
#[allow(clippy::too_many_arguments)]
fn scan_split<T: QElem>(
    gpu: &Gpu,
    k: &CollKernels,
    func: &str,
    f: CUfunction,
    team: c_int,
    d: &TeamDesc,
    dest: *mut T,
    src: *const T,
    n: usize,
    inclusive: bool,
    ret: *mut c_int,
    q: Queue,
) {
    sync_kernel(func, gpu, k, team, q);
    let (lo, len) = crate::core::coll::slice(n, d.n(), d.my_pe as usize);
    if len > 0 {
        let grid = slice_grid(len);
        let (mut t, mut de, mut s, mut l0, mut l, mut inc) = (team, dest as u64, src as u64, lo, len, c_int::from(inclusive));
        launch(func, gpu, f, grid, SLICE_BLOCK, &mut args!(t, de, s, l0, l, inc), q);
    }
    sync_kernel(func, gpu, k, team, q);
    ret_ok(func, gpu, ret, q);
}

/// Reductions (`mode` 0) and sum scans (1 inclusive, 2 exclusive) of `n` elements on the queue;
/// `op` is and, or, xor, max, min, sum or prod.
///
/// # Safety
/// As for `data`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn reduce<T: QElem>(
    func: &str,
    op: &str,
    team: c_int,
    dest: *mut T,
    src: *const T,
    n: usize,
    mode: c_int,
    ret: *mut c_int,
    q: Queue,
) {
    let (st, gpu, k) = kernels(func);
    let d = st.team_desc(func, team);
    let len = bytes(func, n, size_of::<T>());
    check_heap(st, func, "dest", dest as usize, len);
    check_heap(st, func, "source", src as usize, len);
    check_ret(func, ret);
    let Some(&(f, slice)) = k.reduce.get(&format!("{op}_{}", T::SUFFIX)) else {
        fatal(func, &format!("no queue kernel for {op} over {}", T::SUFFIX))
    };
    // Every PE decides alike: same n, same setting (compared at init), symmetric dest and
    // source have the same relation on every PE, and F_REMOTE is the team's (node placement).
    let (de, s) = (dest as usize, src as usize);
    let same_or_disjoint = de == s || de + len <= s || s + len <= de;
    if d.size == 1 && same_or_disjoint {
        // A team of one: a reduction or inclusive scan is the source itself, an exclusive scan
        // zeros (copy engines, nothing to synchronize).
        if mode == 2 {
            if len > 0 {
                let _c = enter(func, gpu);
                count(Ev::Memset);
                // SAFETY: dest was checked against the heap; the caller keeps it alive.
                driver::check(func, "cuMemsetD8Async", unsafe { sys::cuMemsetD8Async(de as u64, 0, len, q.cast()) });
            }
        } else {
            // SAFETY: ranges checked above (equal or disjoint).
            unsafe { solo_copy(func, gpu, de, s, len, q) };
        }
        return ret_ok(func, gpu, ret, q);
    }
    if len > 0 && len >= st.cfg.queue_reduce_split_min && same_or_disjoint && d.flags & F_REMOTE == 0 {
        if mode == 0 {
            // SAFETY: ranges checked above; the caller keeps them alive until the stream runs.
            unsafe { reduce_split(gpu, k, func, slice, team, &d, dest, src, n, ret, q) };
            return;
        }
        if let Some(&f) = k.scan.get(T::SUFFIX) {
            scan_split(gpu, k, func, f, team, &d, dest, src, n, mode == 1, ret, q);
            return;
        }
    }
    let (mut t, mut de, mut s, mut nn, mut m, mut r) = (team, dest as u64, src as u64, n, mode, ret as u64);
    launch(func, gpu, f, 1, BLOCK, &mut args!(t, de, s, nn, m, r), q);
}
