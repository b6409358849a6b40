//! The CUDA transport: this PE's symmetric heap in GPU memory, the node-local peers' heaps
//! mapped here with CUDA IPC, and the host API's operations on them (copies, AMO kernels,
//! reads for waits). Owns the device, its retained primary context (shared with the CUDA
//! runtime of the user's program), an internal stream, the host-kernel module and the
//! mappings. It knows nothing of the job's control segment: init passes the peers' IPC handles
//! in (see core::init) and the core decides which operations come here (State::gpu_*).
//!
//! Ordering contract:
//! - Every operation is enqueued on `stream` (created CU_STREAM_NON_BLOCKING, so it never waits
//!   for the user's kernels on the legacy default stream: a kernel spinning on a flag that
//!   this host call sets must not block it) and followed by `cuStreamSynchronize`: a put, get
//!   or AMO is complete, and visible at its target, when its call returns. So `quiet` and
//!   `fence` need nothing more than a host fence, and the shm barrier (whose release/acquire
//!   pairs order the host calls of different PEs) also orders their GPU-heap effects.
//! - AMOs are system-scope seq_cst atomics in a kernel (cuda/host_kernels.cu): atomic against
//!   the device API's atomics from any GPU of the node and against other host AMOs.
//! - Beside this PE's running kernels (the proxy and the staging server work while a kernel
//!   waits for them): copies and memsets on `stream` run (measured, bench/exp/spin_probe.cu);
//!   the AMO kernel needs one free thread slot on one SM (the stream has the highest priority,
//!   so it is the next block placed) and waits while kernels that do not end fill every SM.
//!   Never used while kernels may run: synchronous copies (cuMemcpyHtoD and the like wait for
//!   the legacy stream), module loads, cuMemFree and cuMemFreeHost (each waits for every kernel
//!   of the context while holding the driver's context lock, so the proxy's own copies queue
//!   behind it: a deadlock). The library's modules are therefore loaded at init
//!   (`core::queue::preload`), and frees happen at finalize only.
//! - The sync area (first `SYNC_BYTES` of the heap) is zeroed before the IPC handle is
//!   published (before `state = JOINED` in the control segment): no peer can touch it earlier.
//! - Finalize: after the final barrier every PE closes its mappings, a second barrier, then
//!   each frees its heap, so no heap is freed while a peer still maps it.
//!
//! Peer addresses (`peer(pe)`, what `ishmem_ptr` returns on this backend) are device
//! addresses of this process: kernels may use them, host code may not dereference them.

pub mod binders;
pub mod driver;
pub mod state;

use crate::ffi::{emit, fatal};
use crate::op::AmoOp;
use driver::{check, sys, CtxGuard};
use std::ffi::{c_void, CString};
use std::sync::Mutex;
use sys::{CUcontext, CUdevice, CUfunction, CUmodule, CUresult, CUstream};

/// The host-API kernels, made by scripts/gen-ptx.sh from cuda/host_kernels.cu.
static HOST_KERNELS_PTX: &str = concat!(include_str!("host_kernels.ptx"), "\0");

/// The operation code of `ishmemi_host_amo` (cuda/host_kernels.cu) for an AMO operator: the
/// vocabulary's byte code.
fn kernel_op(op: AmoOp) -> u32 {
    op.code() as u32
}

/// What a PE publishes about its GPU heap in its control-segment slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSlot {
    /// The device ordinal as the PE's process numbers it.
    pub ordinal: i32,
    /// The device's PCI bus id, NUL-padded (`0000:18:00.0`).
    pub bus_id: [u8; 32],
    /// `CUipcMemHandle` of the allocation holding the heap.
    pub ipc: [u8; 64],
    /// Offset of the heap in that allocation (it is aligned to `heap::gpu_base_align`).
    pub heap_off: u64,
}

impl GpuSlot {
    pub fn bus_text(&self) -> String {
        let end = self.bus_id.iter().position(|&b| b == 0).unwrap_or(self.bus_id.len());
        String::from_utf8_lossy(&self.bus_id[..end]).into_owned()
    }
}

/// The descriptor of a 2D copy between unified addresses: `height` rows of `width` bytes,
/// `dpitch`/`spitch` bytes apart. Every field is spelled out: the memory-type enums have no zero
/// value, so the descriptor cannot be zero-initialized.
pub fn copy_2d_desc(dst: usize, dpitch: usize, src: usize, spitch: usize, width: usize, height: usize) -> sys::CUDA_MEMCPY2D {
    let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED;
    sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: unified,
        srcHost: std::ptr::null(),
        srcDevice: src as u64,
        srcArray: std::ptr::null_mut(),
        srcPitch: spitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: unified,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst as u64,
        dstArray: std::ptr::null_mut(),
        dstPitch: dpitch,
        WidthInBytes: width,
        Height: height,
    }
}

/// A PE's GPU: device, context, heap, peers' heaps, stream and host kernels.
pub struct Gpu {
    pub ordinal: i32,
    pub name: String,
    pub bus_id: String,
    dev: CUdevice,
    ctx: CUcontext,
    stream: CUstream,
    /// This PE's heap (device address, a multiple of `heap::gpu_base_align`) and its length.
    pub heap: u64,
    pub heap_len: usize,
    /// The cuMemAlloc'd allocation holding the heap (`heap - alloc_base` is the alignment pad).
    alloc_base: u64,
    ipc: [u8; 64],
    /// Each PE's heap as mapped here (this PE's own heap at `me`); empty until `map_peers`.
    peers: Vec<u64>,
    /// The peers' allocations as opened here (what cuIpcCloseMemHandle takes; 0 at `me`).
    opened: Vec<u64>,
    /// Whether each PE's heap lies in this GPU's memory: this PE, and the PEs of this node on
    /// the same device (the same PCI bus id); empty until `map_peers`.
    on_this_gpu: Vec<bool>,
    me: usize,
    module: CUmodule,
    /// `ishmemi_host_amo`, or why the PTX could not be loaded (reported at the first AMO, so a
    /// driver too old to JIT it still runs everything else).
    amo_fn: Result<CUfunction, String>,
    /// Pinned host word the AMO kernel writes its result to (device-visible under UVA).
    result: Mutex<usize>,
    max_pitch: usize,
    debug: bool,
    /// The proxy ring (pinned host memory) when the job spans nodes, else 0.
    proxy_ring: u64,
}

// SAFETY: the CUDA handles (context, stream, module, function, device pointers) are
// process-wide and may be used from any thread once the context is current (CtxGuard); the
// pinned result word is used under its mutex only.
unsafe impl Send for Gpu {}
// SAFETY: as above; every method takes &self and enqueues on the thread-safe stream.
unsafe impl Sync for Gpu {}

/// What init asks for.
pub struct OpenParams {
    pub mode: crate::env::GpuMode,
    pub device: Option<u32>,
    pub local_rank: usize,
    pub npes: usize,
    pub heap_len: usize,
    pub debug: bool,
}

fn cstr_buf(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl Gpu {
    /// Opens this PE's GPU and allocates its heap, or returns `None` when the CPU backend is
    /// to be used (`auto` with no usable GPU). With `ISHMEM_GPU=1` an unusable GPU is fatal.
    pub fn open(func: &str, me: usize, p: &OpenParams) -> Option<Gpu> {
        use crate::env::GpuMode;
        if p.mode == GpuMode::Off {
            return None;
        }
        let unusable = |why: String| -> Option<Gpu> {
            if p.mode == GpuMode::On {
                fatal(func, &format!("ISHMEM_GPU=1 but no GPU can be used: {why}"));
            }
            if p.debug {
                emit(&format!("[PE {me}] DEBUG: CPU backend: {why}"));
            }
            None
        };
        if p.npes > state::MAX_LOCAL_PES {
            return unusable(format!("the GPU backend reaches at most {} PEs and this job has {}", state::MAX_LOCAL_PES, p.npes));
        }
        let count = match driver::probe() {
            Ok(n) => n,
            Err(e) => return unusable(e),
        };
        if p.heap_len < 2 * state::SYNC_BYTES {
            fatal(
                func,
                &format!(
                    "ISHMEM_SYMMETRIC_SIZE is {} bytes; the GPU heap needs at least {} (its first {} are reserved)",
                    p.heap_len,
                    2 * state::SYNC_BYTES,
                    state::SYNC_BYTES
                ),
            );
        }
        let ordinal = Self::choose(func, p, count);
        Some(Self::open_device(func, me, ordinal, p))
    }

    /// ISHMEM_GPU_DEVICE, else the device of the context current on this thread (the
    /// program's cudaSetDevice), else the node-local rank modulo the device count.
    fn choose(func: &str, p: &OpenParams, count: i32) -> i32 {
        if let Some(d) = p.device {
            if d as i64 >= count as i64 {
                fatal(func, &format!("ISHMEM_GPU_DEVICE={d} but only {count} CUDA devices are visible"));
            }
            return d as i32;
        }
        let mut cur: CUcontext = std::ptr::null_mut();
        // SAFETY: writes the current context or NULL.
        if unsafe { sys::cuCtxGetCurrent(&mut cur) } == CUresult::CUDA_SUCCESS && !cur.is_null() {
            let mut dev: CUdevice = 0;
            // SAFETY: a context is current; writes its device.
            if unsafe { sys::cuCtxGetDevice(&mut dev) } == CUresult::CUDA_SUCCESS {
                return dev;
            }
        }
        (p.local_rank % count as usize) as i32
    }

    fn open_device(func: &str, me: usize, ordinal: i32, p: &OpenParams) -> Gpu {
        let mut dev: CUdevice = 0;
        // SAFETY: dev is writable; the ordinal is below the device count.
        check(func, "cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal) });
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: retains the device's primary context (released in `release`).
        check(func, "cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) });
        // SAFETY: ctx was just retained.
        check(func, "cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) });
        let attr = |a: sys::CUdevice_attribute, what: &str| -> i32 {
            let mut v = 0;
            // SAFETY: v is writable; dev is valid.
            check(func, what, unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) });
            v
        };
        if attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "cuDeviceGetAttribute(UNIFIED_ADDRESSING)") != 1 {
            fatal(func, &format!("CUDA device {ordinal} has no unified addressing; the GPU backend needs it"));
        }
        let max_pitch = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_PITCH, "cuDeviceGetAttribute(MAX_PITCH)").max(0) as usize;
        let mut name = [0u8; 256];
        // SAFETY: name is writable for its length.
        check(func, "cuDeviceGetName", unsafe { sys::cuDeviceGetName(name.as_mut_ptr().cast(), name.len() as i32, dev) });
        let mut bus = [0u8; 32];
        // SAFETY: bus is writable for its length (a bus id is at most 17 bytes with its NUL).
        check(func, "cuDeviceGetPCIBusId", unsafe { sys::cuDeviceGetPCIBusId(bus.as_mut_ptr().cast(), bus.len() as i32, dev) });
        // The library's stream: non-blocking (never ordered after the user's kernels on the
        // legacy default stream) and of the highest priority, so the AMO kernel takes the first
        // SM slot that frees up before any block of a user kernel still waiting for one.
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: both outputs are writable; a context is current.
        if unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) } != CUresult::CUDA_SUCCESS {
            greatest = 0;
        }
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: creates a stream in the current context.
        check(func, "cuStreamCreateWithPriority", unsafe {
            sys::cuStreamCreateWithPriority(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32, greatest)
        });
        // Rounded up so that the 32-bit word holding any heap byte lies inside (byte AMOs),
        // plus room to align the heap's start.
        let align = crate::heap::gpu_base_align(p.heap_len) as u64;
        let alloc_len = ((p.heap_len + 63) & !63) + align as usize;
        let mut alloc_base: u64 = 0;
        // SAFETY: alloc_base is writable.
        let r = unsafe { sys::cuMemAlloc_v2(&mut alloc_base, alloc_len) };
        if r != CUresult::CUDA_SUCCESS {
            fatal(
                func,
                &format!(
                    "cuMemAlloc of the symmetric heap ({} bytes, ISHMEM_SYMMETRIC_SIZE) on CUDA device {ordinal} failed: {}",
                    p.heap_len,
                    driver::err_text(r)
                ),
            );
        }
        let mut result: *mut c_void = std::ptr::null_mut();
        // SAFETY: result is writable; 64 bytes of pinned host memory.
        check(func, "cuMemAllocHost", unsafe { sys::cuMemAllocHost_v2(&mut result, 64) });
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: the PTX text is NUL-terminated; module is writable.
        let amo_fn = driver::ok("cuModuleLoadData(host_kernels.ptx)", unsafe {
            sys::cuModuleLoadData(&mut module, HOST_KERNELS_PTX.as_ptr().cast())
        })
        .and_then(|()| {
            let mut f: CUfunction = std::ptr::null_mut();
            // SAFETY: module was loaded; the name is NUL-terminated.
            driver::ok("cuModuleGetFunction(ishmemi_host_amo)", unsafe {
                sys::cuModuleGetFunction(&mut f, module, c"ishmemi_host_amo".as_ptr())
            })
            .map(|()| f)
        });
        if let (Err(e), true) = (&amo_fn, p.debug) {
            emit(&format!("[PE {me}] DEBUG: host AMOs on the GPU heap will fail: {e}"));
        }
        let heap = (alloc_base + align - 1) & !(align - 1);
        let mut ipc = sys::CUipcMemHandle { reserved: [0; 64] };
        // SAFETY: alloc_base is a cuMemAlloc'd base; ipc is writable.
        check(func, "cuIpcGetMemHandle", unsafe { sys::cuIpcGetMemHandle(&mut ipc, alloc_base) });
        let gpu = Gpu {
            ordinal,
            name: cstr_buf(&name),
            bus_id: cstr_buf(&bus),
            dev,
            ctx,
            stream,
            heap,
            heap_len: p.heap_len,
            alloc_base,
            ipc: ipc.reserved.map(|c| c as u8),
            peers: Vec::new(),
            opened: Vec::new(),
            on_this_gpu: Vec::new(),
            me,
            module,
            amo_fn,
            result: Mutex::new(result as usize),
            max_pitch,
            debug: p.debug,
            proxy_ring: 0,
        };
        // SAFETY: heap is this context's fresh allocation of at least SYNC_BYTES, used by nobody yet.
        unsafe { gpu.memset(func, heap as usize, state::SYNC_BYTES) };
        if p.debug {
            emit(&format!(
                "[PE {me}] DEBUG: GPU heap of {} bytes at {heap:#x} on CUDA device {ordinal} ({}, bus {})",
                p.heap_len, gpu.name, gpu.bus_id
            ));
        }
        gpu
    }

    /// What this PE publishes in its slot.
    pub fn slot(&self) -> GpuSlot {
        let mut bus_id = [0u8; 32];
        let b = self.bus_id.as_bytes();
        bus_id[..b.len().min(31)].copy_from_slice(&b[..b.len().min(31)]);
        GpuSlot { ordinal: self.ordinal, bus_id, ipc: self.ipc, heap_off: self.heap - self.alloc_base }
    }

    /// Maps the heap of every PE of this node (all have published their slots: after the join
    /// barrier); `slots[l]` is the slot of world PE `members[l]`, of `npes` in the job. The
    /// tables are by world PE, 0 for the PEs of other nodes.
    pub fn map_peers(&mut self, func: &str, slots: &[GpuSlot], members: &[usize], npes: usize) {
        let _c = self.enter(func);
        let mine = self.slot();
        let mut peers = vec![0u64; npes];
        let mut opened = vec![0u64; npes];
        let mut on_this_gpu = vec![false; npes];
        for (l, s) in slots.iter().enumerate() {
            let q = members[l];
            on_this_gpu[q] = s.bus_id == mine.bus_id;
            if q == self.me {
                peers[q] = self.heap;
                continue;
            }
            let h = sys::CUipcMemHandle { reserved: s.ipc.map(|b| b as std::ffi::c_char) };
            let mut p: u64 = 0;
            // SAFETY: h is the handle PE q published for its live heap (freed only after the
            // finalize barriers); p is writable.
            let r = unsafe { sys::cuIpcOpenMemHandle_v2(&mut p, h, sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32) };
            if r != CUresult::CUDA_SUCCESS {
                fatal(
                    func,
                    &format!(
                        "cuIpcOpenMemHandle of PE {q}'s GPU heap (GPU bus {}) on this PE's GPU (bus {}) failed: {}",
                        s.bus_text(),
                        mine.bus_text(),
                        driver::err_text(r)
                    ),
                );
            }
            opened[q] = p;
            peers[q] = p + s.heap_off;
            if self.debug {
                emit(&format!("[PE {}] DEBUG: PE {q}'s GPU heap (bus {}) mapped at {p:#x}", self.me, s.bus_text()));
            }
        }
        self.peers = peers;
        self.opened = opened;
        self.on_this_gpu = on_this_gpu;
    }

    /// Whether PE `pe`'s heap lies in this GPU's memory (this PE, or a PE of this node on the
    /// same device), as opposed to another GPU's (over NVLink or PCIe) or another node's.
    #[inline]
    pub fn on_this_gpu(&self, pe: usize) -> bool {
        pe == self.me || self.on_this_gpu.get(pe).copied().unwrap_or(false)
    }

    /// Each PE's heap as mapped here.
    pub fn peers(&self) -> &[u64] {
        &self.peers
    }

    /// The device state kernels read.
    pub fn dev_state(&self) -> state::DevState {
        let mut d = state::DevState::new(self.me, self.heap, self.heap_len, &self.peers);
        d.proxy_ring = self.proxy_ring;
        if crate::ffi::debug_on() {
            d.flags |= state::DEV_F_DEBUG;
        }
        d
    }

    /// Allocates the proxy ring (zeroed pinned host memory the GPU reaches under unified
    /// addressing) and publishes it in the device state; returns its address. Freed by
    /// `release`.
    pub fn alloc_proxy_ring(&mut self, func: &str, bytes: usize) -> usize {
        let _c = self.enter(func);
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: allocates `bytes` of pinned host memory into p.
        check(func, "cuMemAllocHost (proxy ring)", unsafe { sys::cuMemAllocHost_v2(&mut p, bytes) });
        // SAFETY: p holds `bytes` writable bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        self.proxy_ring = p as u64;
        p as usize
    }

    /// Page-locks `[addr, addr+len)` of host memory (already mapped, page-aligned) for this
    /// context, so that the copies between it and the GPU are direct DMA, not staged by the
    /// driver through its own pinned buffers (the staging mailbox). Runs beside kernels
    /// (bench/exp/spin_probe.cu: cuMemHostRegister "runs"). Never undone: the memory lives for
    /// the process.
    ///
    /// # Safety
    /// `[addr, addr+len)` must be host memory mapped by this process for the rest of its life.
    pub unsafe fn pin_host(&self, func: &str, addr: usize, len: usize) -> Result<(), String> {
        let _c = self.enter(func);
        // SAFETY: the caller passes a mapped range that outlives the context's use of it.
        driver::ok("cuMemHostRegister", unsafe { sys::cuMemHostRegister_v2(addr as *mut c_void, len, 0) })
    }

    /// Makes the library's context current for the length of a host call.
    #[inline]
    pub fn enter(&self, func: &str) -> CtxGuard {
        // SAFETY: the context is retained from open_device until release (finalize).
        unsafe { CtxGuard::enter(func, self.ctx) }
    }

    #[inline]
    fn sync(&self, func: &str) {
        // SAFETY: the stream lives until finalize.
        check(func, "cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(self.stream) });
    }

    /// Copies `n` bytes between any two addresses of the unified address space (host memory,
    /// this GPU's memory, a peer heap mapped here); complete at return.
    ///
    /// # Safety
    /// `[src, src+n)` must be readable and `[dst, dst+n)` writable memory of the unified
    /// address space (host memory of this process, or device memory mapped in this context),
    /// and nothing else may write `[dst, dst+n)` while the copy runs.
    pub unsafe fn copy(&self, func: &str, dst: usize, src: usize, n: usize) {
        if n == 0 {
            return;
        }
        let _c = self.enter(func);
        // SAFETY: the caller checked both ranges (symmetric side) or owns them (local side);
        // the copy completes before return (sync), so the memory outlives it.
        check(func, "cuMemcpyAsync", unsafe { sys::cuMemcpyAsync(dst as u64, src as u64, n, self.stream) });
        self.sync(func);
    }

    /// Enqueues a copy of `n` bytes on the library's stream, as [`Gpu::copy`] but not waited
    /// for: complete once [`Gpu::copies_wait`] (or any later synchronization of the stream)
    /// returns. Several copies then cost one synchronization (the proxy's staging buffer).
    ///
    /// # Safety
    /// As for [`Gpu::copy`], until the copies were waited for.
    pub unsafe fn copy_start(&self, func: &str, dst: usize, src: usize, n: usize) {
        if n == 0 {
            return;
        }
        let _c = self.enter(func);
        // SAFETY: forwarded contract; the caller waits (copies_wait) before it uses or frees
        // either range.
        check(func, "cuMemcpyAsync", unsafe { sys::cuMemcpyAsync(dst as u64, src as u64, n, self.stream) });
    }

    /// Waits for every copy enqueued on the library's stream ([`Gpu::copy_start`]).
    pub fn copies_wait(&self, func: &str) {
        let _c = self.enter(func);
        self.sync(func);
    }

    /// Copies `height` rows of `width` bytes, `dpitch`/`spitch` bytes apart; complete at return.
    ///
    /// # Safety
    /// As for [`Gpu::copy`], for each of the `height` rows of both sides.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy_2d(&self, func: &str, dst: usize, dpitch: usize, src: usize, spitch: usize, width: usize, height: usize) {
        if width == 0 || height == 0 {
            return;
        }
        let _c = self.enter(func);
        // SAFETY: forwarded contract (ranges checked by the caller); our stream lives until finalize.
        unsafe { self.copy_2d_async(func, dst, dpitch, src, spitch, width, height, self.stream) };
        self.sync(func);
    }

    /// Enqueues the copy of `height` rows of `width` bytes on `stream`: one cuMemcpy2DAsync
    /// where the pitches fit the device's limit (and the driver takes it), else one
    /// cuMemcpyAsync per row. The caller has made the context current.
    ///
    /// # Safety
    /// Both ranges must stay valid until the stream reaches the copy; `stream` must be a live
    /// stream of this context (or NULL).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy_2d_async(
        &self,
        func: &str,
        dst: usize,
        dpitch: usize,
        src: usize,
        spitch: usize,
        width: usize,
        height: usize,
        stream: CUstream,
    ) {
        if width == 0 || height == 0 {
            return;
        }
        let fits = dpitch <= self.max_pitch && spitch <= self.max_pitch;
        if height > 1 && fits {
            let c = copy_2d_desc(dst, dpitch, src, spitch, width, height);
            // SAFETY: the descriptor spans ranges checked by the caller.
            let r = unsafe { sys::cuMemcpy2DAsync_v2(&c, stream) };
            if r == CUresult::CUDA_SUCCESS {
                return;
            }
            if self.debug {
                emit(&format!("[PE {}] DEBUG: {func}: cuMemcpy2DAsync failed ({}); copying row by row", self.me, driver::err_text(r)));
            }
        }
        for i in 0..height {
            // SAFETY: row i lies inside both checked ranges.
            check(func, "cuMemcpyAsync", unsafe {
                sys::cuMemcpyAsync((dst + i * dpitch) as u64, (src + i * spitch) as u64, width, stream)
            });
        }
    }

    /// Zeroes `n` bytes of GPU memory; complete at return.
    ///
    /// # Safety
    /// `[addr, addr+n)` must be device memory of this context (this PE's heap, a buffer the
    /// library allocated) that nothing else uses while it is zeroed.
    pub unsafe fn memset(&self, func: &str, addr: usize, n: usize) {
        if n == 0 {
            return;
        }
        let _c = self.enter(func);
        // SAFETY: the caller passes a range of this PE's heap.
        check(func, "cuMemsetD8Async", unsafe { sys::cuMemsetD8Async(addr as u64, 0, n, self.stream) });
        self.sync(func);
    }

    /// One atomic operation of `width` bytes (1, 4 or 8) at `addr` (a heap address as mapped
    /// here, aligned); returns the fetched bits (zero-extended). Complete at return.
    ///
    /// # Safety
    /// `addr` must be a `width`-aligned location of a heap mapped in this context (this PE's
    /// or a peer's), whose other accesses are atomic.
    pub unsafe fn amo(&self, func: &str, addr: usize, width: u32, op: AmoOp, value: u64, cond: u64) -> u64 {
        let f = match &self.amo_fn {
            Ok(f) => *f,
            Err(e) => fatal(func, &format!("host AMOs on the GPU heap need the host kernels, which did not load: {e}")),
        };
        let _c = self.enter(func);
        let result = self.result.lock().unwrap_or_else(|e| e.into_inner());
        let (mut a, mut w, mut o, mut v, mut c, mut r) = (addr as u64, width, kernel_op(op), value, cond, *result as u64);
        let mut params: [*mut c_void; 6] = [
            (&mut a as *mut u64).cast(),
            (&mut w as *mut u32).cast(),
            (&mut o as *mut u32).cast(),
            (&mut v as *mut u64).cast(),
            (&mut c as *mut u64).cast(),
            (&mut r as *mut u64).cast(),
        ];
        // SAFETY: f is ishmemi_host_amo(u64, u32, u32, u64, u64, u64*); params point to
        // locals of those types that outlive the launch (synchronized below); the target was
        // checked by the caller; the result word is pinned host memory held under the lock.
        check(func, "cuLaunchKernel(ishmemi_host_amo)", unsafe {
            sys::cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, self.stream, params.as_mut_ptr(), std::ptr::null_mut())
        });
        self.sync(func);
        // SAFETY: the kernel wrote the word and finished (stream synchronized).
        unsafe { std::ptr::read_volatile(*result as *const u64) }
    }

    /// Closes the peers' mappings (finalize, after the final barrier).
    pub fn unmap_peers(&self, func: &str) {
        let _c = self.enter(func);
        for (q, &p) in self.opened.iter().enumerate() {
            if q != self.me && p != 0 {
                // SAFETY: p was opened by cuIpcOpenMemHandle and is closed once.
                let r = unsafe { sys::cuIpcCloseMemHandle(p) };
                warn_on(func, "cuIpcCloseMemHandle", r);
            }
        }
    }

    /// Frees the heap and the library's CUDA objects and releases the context (finalize, once
    /// no peer maps the heap any more). Errors are warnings here: the job's work is done.
    pub fn release(&self, func: &str) {
        {
            let _c = self.enter(func);
            let result = *self.result.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: each object was created in open_device and is freed once; nothing is
            // in flight (every operation synchronizes before returning).
            unsafe {
                warn_on(func, "cuMemFree", sys::cuMemFree_v2(self.alloc_base));
                warn_on(func, "cuMemFreeHost", sys::cuMemFreeHost(result as *mut c_void));
                if self.proxy_ring != 0 {
                    warn_on(func, "cuMemFreeHost (proxy ring)", sys::cuMemFreeHost(self.proxy_ring as *mut c_void));
                }
                if self.amo_fn.is_ok() {
                    warn_on(func, "cuModuleUnload", sys::cuModuleUnload(self.module));
                }
                warn_on(func, "cuStreamDestroy", sys::cuStreamDestroy_v2(self.stream));
            }
        }
        // SAFETY: releases the retain of open_device.
        warn_on(func, "cuDevicePrimaryCtxRelease", unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.dev) });
    }

    /// Copies the device state into a module's `ishmemi_dstate` (`ishmemx_cumodule_init`).
    ///
    /// # Safety
    /// `module` must be a module loaded with cuModuleLoad* and not unloaded.
    pub unsafe fn bind_module(&self, func: &str, module: CUmodule, st: &state::DevState) -> Result<(), String> {
        let _c = self.enter(func);
        let mut last = String::new();
        for name in ["ishmemi_dstate", "_ZL14ishmemi_dstate"] {
            let cname = CString::new(name).unwrap_or_default();
            let (mut dptr, mut bytes) = (0u64, 0usize);
            // SAFETY: module is a live CUmodule per the caller; outputs are writable.
            let r = unsafe { sys::cuModuleGetGlobal_v2(&mut dptr, &mut bytes, module, cname.as_ptr()) };
            if r != CUresult::CUDA_SUCCESS {
                last = format!("cuModuleGetGlobal({name}) failed: {}", driver::err_text(r));
                continue;
            }
            if bytes != size_of::<state::DevState>() {
                return Err(format!(
                    "the module's {name} has {bytes} bytes, this library's ishmemi_dev_state_t {} (headers and library of different versions?)",
                    size_of::<state::DevState>()
                ));
            }
            let b = st.as_bytes();
            // On the library's non-blocking stream, not with the synchronous cuMemcpyHtoD: that
            // one is ordered after every kernel of the legacy default stream, so binding while
            // a kernel spins waiting for this PE's host side would never return.
            // SAFETY: dptr is the module's global of `bytes` == b.len() bytes; b outlives the
            // copy (the stream is synchronized before return).
            driver::ok("cuMemcpyHtoDAsync(ishmemi_dstate)", unsafe {
                sys::cuMemcpyHtoDAsync_v2(dptr, b.as_ptr().cast(), b.len(), self.stream)
            })?;
            // SAFETY: the stream lives until finalize.
            return driver::ok("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(self.stream) });
        }
        Err(format!("the module has no ishmemi_dstate (was it compiled with ishmem.h?): {last}"))
    }
}

fn warn_on(func: &str, call: &str, r: CUresult) {
    if let Err(e) = driver::ok(call, r) {
        crate::ffi::warn(func, &e);
    }
}
