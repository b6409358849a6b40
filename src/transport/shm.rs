//! The node-local shared-memory transport of the CPU backend.
//!
//! Owns the job's control segment (one per job: a header and one slot per PE), each PE's heap
//! and data segments as mapped by every other PE, the cross-process barrier, and the
//! watchdog thread that ends the job when a peer dies.
//!
//! Ordering contract:
//! - A PE publishes its slot (pid, sizes, backend, GPU heap IPC handle) with plain atomic
//!   stores and then `state = JOINED` with Release; a peer that reads `state >= JOINED` with
//!   Acquire sees the slot and may open the PE's files (created before the store) or its GPU
//!   heap's IPC handle (allocated, sync area zeroed, before the store).
//! - Barrier: each arrival is a `fetch_add` (AcqRel) on `bar_count`; the last arrival resets the
//!   count and bumps `bar_gen` with Release; waiters read `bar_gen` with Acquire. So every
//!   store a PE made before it arrived (puts into any heap included) happens-before every
//!   load any PE makes after it leaves.
//! - `state = FINALIZED` (Release) is written after the finalize barrier; the watchdog reads it
//!   (Acquire) when a peer's process ends, to tell a clean exit from a death.

use crate::heap::segment::{self, Fd};
use crate::transport::cuda::GpuSlot;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAGIC: u64 = 0x6973_686d_656d_3032; // "ishmem02"
const HEADER_BYTES: usize = 4096;

/// Slot states.
const JOINED: u32 = 1;
const FINALIZED: u32 = 2;
/// In `ishmem_finalize` (called, or at exit with status 0), waiting for the others to finalize:
/// this PE will never again take part in a barrier or collective (`finalizing_peer`).
const FINALIZING: u32 = 3;

/// How often a PE waiting in a barrier or collective looks for a member in finalize.
pub const FINALIZING_CHECK_MS: u64 = 100;

#[repr(C)]
struct Header {
    magic: AtomicU64,
    npes: AtomicU64,
    bar_count: AtomicU64,
    bar_gen: AtomicU64,
    /// 0: running; pe+1: that PE reported a fatal error.
    abort_pe: AtomicI64,
    /// 0: running; 1 << 63 | pe << 32 | status as u32: that PE called ishmem_global_exit.
    global_exit: AtomicU64,
    /// PEs arrived at the finalize barrier (`finalize_barrier`; one use per job). Separate from
    /// `bar_count`, so that a PE in finalize never completes another PE's barrier_all.
    fin_count: AtomicU64,
    /// Jobs across nodes: PEs of other nodes in `ishmem_finalize`, as their node's leader told
    /// this node's (`core::live`): entries used, then per entry `1 << 63 | pe << 32 | pid` and
    /// the world collectives that PE made. Written by this node's leader only.
    remote_fin_n: AtomicU64,
    remote_fin: [[AtomicU64; 2]; REMOTE_FIN],
    /// Jobs across nodes: 1 once this node's leader told the other nodes of the global exit in
    /// `global_exit` and saw their leaders leave (`core::live::tell_global_exit`), or, on a node
    /// that was told, at once; the node's other PEs wait for it before they exit.
    global_exit_told: AtomicU64,
}

/// PEs of other nodes in finalize that a node records (`Header::remote_fin`); more are not
/// recorded (a wait for one of those is not found: it hangs as before).
const REMOTE_FIN: usize = 128;

/// Backends a slot can announce (every PE of a job must use the same one).
const BACKEND_CPU: u32 = 0;
const BACKEND_CUDA: u32 = 1;

/// One PE's slot.
#[repr(C)]
struct Slot {
    state: AtomicU32,
    pid: AtomicI32,
    heap_len: AtomicU64,
    data_len: AtomicU64,
    /// Arguments of the collective calls (allocation), double-buffered by call parity.
    coll: [[AtomicU64; 4]; 2],
    /// BACKEND_CPU or BACKEND_CUDA.
    backend: AtomicU32,
    /// CUDA: the device ordinal as the PE numbers it.
    gpu_ordinal: AtomicI32,
    /// CUDA: the device's PCI bus id, NUL-padded.
    gpu_bus: [AtomicU64; 4],
    /// CUDA: the GPU heap's `CUipcMemHandle`.
    gpu_ipc: [AtomicU64; 8],
    /// CUDA: the heap's offset in the allocation the handle maps (aligning it).
    gpu_heap_off: AtomicU64,
    /// The values of `JoinParams::agree` (settings every PE must share).
    agree: [AtomicU64; AGREE],
    /// Written when the PE enters finalize: the world team collectives and barriers it made
    /// (a waiter in world call c blames it only when this is below c).
    world_calls: AtomicU64,
    _pad: [u64; 6 - AGREE],
}

/// Settings compared between the PEs at join (`JoinParams::agree`).
pub const AGREE: usize = 6;

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);
const _: () = assert!(std::mem::size_of::<Slot>() == 256);
const _: () = assert!(std::mem::offset_of!(Slot, backend) == 88);
const _: () = assert!(std::mem::offset_of!(Slot, gpu_bus) == 96);
const _: () = assert!(std::mem::offset_of!(Slot, gpu_ipc) == 128);
const _: () = assert!(std::mem::offset_of!(Slot, gpu_heap_off) == 192);

fn store_bytes(words: &[AtomicU64], bytes: &[u8]) {
    for (w, c) in words.iter().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        w.store(u64::from_ne_bytes(b), Relaxed);
    }
}

fn load_bytes<const N: usize>(words: &[AtomicU64]) -> [u8; N] {
    let mut out = [0u8; N];
    for (c, w) in out.chunks_mut(8).zip(words) {
        let b = w.load(Relaxed).to_ne_bytes();
        c.copy_from_slice(&b[..c.len()]);
    }
    out
}

/// The shared-memory side of a running PE: the PEs of its node. Slots, heap and data bases are
/// indexed by node-local rank (`world` gives each one's PE number); messages name PE numbers.
pub struct ShmJob {
    /// This PE's number in the job.
    pub me: usize,
    /// This PE's node-local rank (its slot).
    pub local: usize,
    /// PEs on this node.
    pub npes: usize,
    /// The PE number of each node-local rank.
    pub world: Vec<usize>,
    ctl: usize,
    /// Each PE's heap as mapped here (index: PE).
    pub heap_bases: Vec<usize>,
    /// Each PE's data segment as mapped here, when globals are symmetric.
    pub data_bases: Option<Vec<usize>>,
    /// CUDA backend: what each PE published about its GPU heap (index: PE).
    pub gpu_slots: Option<Vec<GpuSlot>>,
    spin: u64,
    sleep_max_us: u64,
    watchdog: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

/// What a PE brings to the job.
pub struct JoinParams<'a> {
    /// The names of this node's files (one-way from the node's secret).
    pub names: &'a crate::bootstrap::secret::ShmNames,
    /// The launcher's job key, for messages.
    pub key: &'a str,
    /// The PEs of this node (ascending); `me` and `npes` are this PE's index in it and its length.
    pub members: &'a [usize],
    pub me: usize,
    pub npes: usize,
    pub heap_len: usize,
    /// The executable's data segment `(start, len)` to share, if globals are symmetric.
    pub data: Option<(usize, usize)>,
    pub timeout: Duration,
    pub spin: u64,
    pub sleep_max_us: u64,
    pub debug: bool,
    /// CUDA backend: this PE's GPU heap. No host heap file is made then (`heap_bases` stay 0;
    /// the core takes the heaps from the IPC mappings).
    pub gpu: Option<GpuSlot>,
    /// Settings every PE must share, by name (environment variables): join fails naming the
    /// first that differs from a peer's.
    pub agree: [(&'a str, u64); AGREE],
}

/// Files this process created and must remove if it fails before they are unlinked.
static CREATED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
/// Every name of this node's files while the join runs: a PE whose init fails removes them all
/// (a peer that died during init cannot remove its own), so that a failed start leaves nothing.
static NAMES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Test hook (`ISHMEMI_TEST_INIT_CRASH=POINT:PE`): PE `PE` kills itself with SIGKILL at
/// `POINT` of the join (`ctl`, `heap`, `joined`, `mapped`), as a crash would, leaving its files
/// behind for the others and the launcher to clean.
fn test_crash(point: &str, pe: usize) {
    if let Ok(v) = std::env::var("ISHMEMI_TEST_INIT_CRASH") {
        if v == format!("{point}:{pe}") {
            // SAFETY: signalling ourselves.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    }
}
/// The control segment of the running job, for `abort` (0 when none).
static CTL: AtomicU64 = AtomicU64::new(0);
/// The PE number of each slot of this node's control segment (set at join).
static WORLD: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();

fn header_if_running() -> Option<&'static Header> {
    let ctl = CTL.load(Acquire) as usize;
    // SAFETY: CTL is set only while the control segment is mapped (it is never unmapped).
    (ctl != 0).then(|| unsafe { &*(ctl as *const Header) })
}

/// The PEs of this node in `ishmem_finalize`: (PE, pid, world collectives it made).
pub fn finalizing_here() -> Vec<(usize, i32, u64)> {
    let (Some(h), Some(world)) = (header_if_running(), WORLD.get()) else { return Vec::new() };
    let base = h as *const Header as usize + HEADER_BYTES;
    (0..world.len())
        .filter_map(|q| {
            // SAFETY: the segment holds one slot per PE of the node after the header.
            let s = unsafe { &*((base + q * std::mem::size_of::<Slot>()) as *const Slot) };
            (s.state.load(Acquire) == FINALIZING).then(|| (world[q], s.pid.load(Relaxed), s.world_calls.load(Relaxed)))
        })
        .collect()
}

/// Records that PE `pe` (pid `pid`) of another node is in finalize after `calls` world
/// collectives (`core::live`, on the node's leader).
pub fn record_remote_finalizing(pe: usize, pid: i32, calls: u64) {
    let Some(h) = header_if_running() else { return };
    let n = h.remote_fin_n.load(Relaxed) as usize;
    if n < REMOTE_FIN {
        h.remote_fin[n][1].store(calls, Relaxed);
        h.remote_fin[n][0].store(1 << 63 | (pe as u64 & 0x7fff_ffff) << 32 | pid as u32 as u64, Release);
        h.remote_fin_n.store(n as u64 + 1, Release);
    }
}

/// Ends this PE as `ishmem_global_exit` asks when a PE of this node called it.
pub fn check_global_exit_here(me: usize) {
    if let Some(h) = header_if_running() {
        crate::ffi::check_global_exit(h.global_exit.load(Acquire), me);
    }
}

fn created(path: String) {
    if let Ok(mut v) = CREATED.lock() {
        v.push(path);
    }
}

/// Removes the files this PE created and has not unlinked yet, and every other name of the
/// node's files while the join runs (on a failed start).
pub fn remove_created() {
    if let Ok(mut v) = CREATED.try_lock() {
        for p in v.drain(..) {
            segment::unlink(&p);
        }
    }
    // Only this user's files: what another user made under a name stays, so that the other
    // PEs find it too and end with the same message.
    if let Ok(mut v) = NAMES.try_lock() {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        for p in v.drain(..) {
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && m.uid() == me) {
                segment::unlink(&p);
            }
        }
    }
}

/// Marks the job as failed by PE `me` so that every watchdog ends its PE.
pub fn mark_abort(me: usize) {
    let ctl = CTL.load(Acquire) as usize;
    if ctl != 0 {
        // SAFETY: CTL is set only while the control segment is mapped (it is never unmapped).
        let h = unsafe { &*(ctl as *const Header) };
        let _ = h.abort_pe.compare_exchange(0, me as i64 + 1, AcqRel, Acquire);
    }
}

/// Records that PE `me` called `ishmem_global_exit(status)`: every watchdog ends its PE with
/// that status (the first call wins).
pub fn mark_global_exit(me: usize, status: i32) {
    let ctl = CTL.load(Acquire) as usize;
    if ctl != 0 {
        // SAFETY: as in `mark_abort`.
        let h = unsafe { &*(ctl as *const Header) };
        let v = 1 << 63 | (me as u64 & 0x7fff_ffff) << 32 | status as u32 as u64;
        let _ = h.global_exit.compare_exchange(0, v, AcqRel, Acquire);
    }
}

/// Records that this node's leader told the other nodes of the global exit.
pub fn mark_global_exit_told() {
    if let Some(h) = header_if_running() {
        h.global_exit_told.store(1, Release);
    }
}

/// Waits until this node's leader told the other nodes of the global exit, or `limit` passed;
/// whether it did.
pub fn wait_global_exit_told(limit: Duration) -> bool {
    let Some(h) = header_if_running() else { return false };
    let deadline = Instant::now() + limit;
    while h.global_exit_told.load(Acquire) == 0 {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

impl ShmJob {
    fn header(&self) -> &'static Header {
        // SAFETY: ctl maps at least HEADER_BYTES for the life of the process.
        unsafe { &*(self.ctl as *const Header) }
    }

    fn slot(&self, pe: usize) -> &'static Slot {
        debug_assert!(pe < self.npes);
        // SAFETY: the segment holds npes slots after the header.
        unsafe { &*((self.ctl + HEADER_BYTES + pe * std::mem::size_of::<Slot>()) as *const Slot) }
    }

    /// Joins the job: publishes this PE's segments, waits for every PE, maps theirs.
    pub fn join(p: &JoinParams) -> Result<ShmJob, String> {
        let ctl_path = p.names.path("ctl");
        let ctl_len = HEADER_BYTES + p.npes * std::mem::size_of::<Slot>();
        if let Ok(mut v) = NAMES.lock() {
            v.clear();
            v.push(ctl_path.clone());
            for q in 0..p.npes {
                v.push(p.names.path(&format!("heap-{q}")));
                v.push(p.names.path(&format!("data-{q}")));
            }
        }
        // Created by the first PE to come, opened (and checked: owner, mode, links) by the
        // others; a name another user made ends the job (`segment::create_or_open`).
        let (fd, made) = segment::create_or_open(&ctl_path, ctl_len, true)?;
        if made {
            created(ctl_path.clone());
        }
        // Its pages exist before anyone stores into them (a full tmpfs: an error, not SIGBUS).
        crate::heap::reserve::fallocate(fd.0, 0, ctl_len)
            .map_err(|e| crate::heap::reserve::advice("the node's control file", ctl_len, &p.names.dir, &e))?;
        let ctl = segment::map(&fd, ctl_len, None)?;
        drop(fd);
        let mut job = ShmJob {
            me: p.members[p.me],
            local: p.me,
            npes: p.npes,
            world: p.members.to_vec(),
            ctl,
            heap_bases: vec![0; p.npes],
            data_bases: None,
            gpu_slots: None,
            spin: p.spin,
            sleep_max_us: p.sleep_max_us,
            watchdog: None,
        };
        let h = job.header();
        let _ = h.magic.compare_exchange(0, MAGIC, AcqRel, Acquire);
        match h.npes.compare_exchange(0, p.npes as u64, AcqRel, Acquire) {
            Ok(_) => {}
            Err(n) if n == p.npes as u64 => {}
            Err(n) => return Err(format!("job key {} is in use by a job of {n} PEs (this one has {})", p.key, p.npes)),
        }
        CTL.store(ctl as u64, Release);
        let _ = WORLD.set(p.members.to_vec());
        let me_slot = job.slot(p.me);
        if me_slot.state.load(Acquire) != 0 || me_slot.pid.load(Acquire) != 0 {
            return Err(format!("two processes claim PE {} of job {} (check the launcher's rank variables)", p.members[p.me], p.key));
        }
        // The pid first: a peer that waits for this PE and finds it dead ends its wait.
        // SAFETY: getpid has no preconditions.
        me_slot.pid.store(unsafe { libc::getpid() }, Release);
        test_crash("ctl", job.me);

        // Our heap: a host file, or announce the GPU heap.
        if let Some(g) = &p.gpu {
            me_slot.backend.store(BACKEND_CUDA, Relaxed);
            me_slot.gpu_ordinal.store(g.ordinal, Relaxed);
            store_bytes(&me_slot.gpu_bus, &g.bus_id);
            store_bytes(&me_slot.gpu_ipc, &g.ipc);
            me_slot.gpu_heap_off.store(g.heap_off, Relaxed);
        } else {
            me_slot.backend.store(BACKEND_CPU, Relaxed);
            let heap_path = p.names.path(&format!("heap-{}", p.me));
            let hfd = segment::create(&heap_path, p.heap_len)?;
            created(heap_path);
            job.heap_bases[p.me] = segment::map_aligned(&hfd, p.heap_len, crate::heap::base_align(p.heap_len))?;
            // Kept open: the ranges handed out are reserved in it (`heap::reserve`).
            crate::heap::reserve::keep(hfd.0, &p.names.dir);
            std::mem::forget(hfd);
        }
        // Our data segment.
        let mut data_len = 0;
        if let Some((start, len)) = p.data {
            let data_path = p.names.path(&format!("data-{}", p.me));
            let dfd: Fd = segment::share_in_place(&data_path, start, len)?;
            created(data_path);
            drop(dfd);
            data_len = len;
        }
        test_crash("heap", job.me);
        me_slot.heap_len.store(p.heap_len as u64, Relaxed);
        me_slot.data_len.store(data_len as u64, Relaxed);
        for (a, (_, v)) in me_slot.agree.iter().zip(p.agree) {
            a.store(v, Relaxed);
        }
        me_slot.state.store(JOINED, Release);
        test_crash("joined", job.me);

        // Wait for everybody.
        let deadline = Instant::now().checked_add(p.timeout).unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 40));
        let mut b = crate::wait::Backoff::new(p.spin, 1000);
        let mut last_look = Instant::now();
        loop {
            let missing: Vec<usize> = (0..p.npes).filter(|&q| job.slot(q).state.load(Acquire) < JOINED).map(|q| p.members[q]).collect();
            if missing.is_empty() {
                break;
            }
            if last_look.elapsed() >= Duration::from_millis(50) {
                last_look = Instant::now();
                job.dead_peer("the start")?;
            }
            if Instant::now() > deadline {
                let list: Vec<String> = missing.iter().take(16).map(|q| q.to_string()).collect();
                return Err(format!(
                    "timed out after {} s waiting for PEs {} of this node ({} PEs) to start (ISHMEM_BOOTSTRAP_TIMEOUT)",
                    p.timeout.as_secs(),
                    list.join(", "),
                    p.npes
                ));
            }
            b.snooze();
        }

        // Map every peer's segments.
        let mut data_bases = p.data.map(|_| vec![0usize; p.npes]);
        let mine = if p.gpu.is_some() { BACKEND_CUDA } else { BACKEND_CPU };
        let mut gpu_slots = Vec::new();
        for q in 0..p.npes {
            let s = job.slot(q);
            let pq = p.members[q];
            let theirs = s.backend.load(Relaxed);
            if theirs != mine {
                let name = |b| if b == BACKEND_CUDA { "the GPU (CUDA) backend" } else { "the CPU backend" };
                return Err(format!(
                    "PE {pq} uses {} and this PE {}: every PE must use the same backend \
                     (set ISHMEM_GPU=0 or ISHMEM_GPU=1 on every PE, and make a GPU visible to each)",
                    name(theirs),
                    name(mine)
                ));
            }
            if mine == BACKEND_CUDA {
                gpu_slots.push(GpuSlot {
                    ordinal: s.gpu_ordinal.load(Relaxed),
                    bus_id: load_bytes(&s.gpu_bus),
                    ipc: load_bytes(&s.gpu_ipc),
                    heap_off: s.gpu_heap_off.load(Relaxed),
                });
            }
            let hl = s.heap_len.load(Relaxed) as usize;
            if hl != p.heap_len {
                return Err(format!(
                    "PE {pq} has a symmetric heap of {hl} bytes and this PE {} bytes: ISHMEM_SYMMETRIC_SIZE must be the same on every PE",
                    p.heap_len
                ));
            }
            for (a, (name, v)) in s.agree.iter().zip(p.agree) {
                let theirs = a.load(Relaxed);
                if theirs != v {
                    return Err(format!("PE {pq} has {name}={theirs} and this PE {v}: {name} must be the same on every PE"));
                }
            }
            let dl = s.data_len.load(Relaxed) as usize;
            if let (Some(bases), Some((start, len))) = (data_bases.as_mut(), p.data) {
                if dl != len {
                    return Err(format!(
                        "PE {pq} runs a different executable (data segment of {dl} bytes, here {len}); \
                         set ISHMEM_SYMMETRIC_GLOBALS=0 on every PE to run different programs"
                    ));
                }
                bases[q] = if q == p.me {
                    start
                } else {
                    let fd = segment::open_checked(&p.names.path(&format!("data-{q}")), len)?;
                    segment::map(&fd, len, None)?
                };
            }
            if q != p.me && mine == BACKEND_CPU {
                let fd = segment::open_checked(&p.names.path(&format!("heap-{q}")), hl)?;
                job.heap_bases[q] = segment::map(&fd, hl, None)?;
            }
            if p.debug && mine == BACKEND_CPU {
                crate::ffi::emit(&format!(
                    "[PE {}] DEBUG: PE {pq} pid {} heap mapped at {:#x}",
                    p.members[p.me],
                    s.pid.load(Relaxed),
                    job.heap_bases[q]
                ));
            }
        }
        job.data_bases = data_bases;
        job.gpu_slots = (mine == BACKEND_CUDA).then_some(gpu_slots);
        test_crash("mapped", job.me);
        job.join_barrier(deadline, p.timeout)?;
        // Every PE has mapped everything: the names are no longer needed.
        if let Ok(mut v) = CREATED.lock() {
            for path in v.drain(..) {
                segment::unlink(&path);
            }
        }
        if let Ok(mut v) = NAMES.lock() {
            v.clear();
        }
        Ok(job)
    }

    /// A peer of the node that published its pid during the join and is no longer alive:
    /// an error naming it (`what`: where this PE waits).
    fn dead_peer(&self, what: &str) -> Result<(), String> {
        for q in (0..self.npes).filter(|&q| q != self.local) {
            let pid = self.slot(q).pid.load(Acquire);
            if pid > 0 && !alive(pid) {
                return Err(format!(
                    "PE {} (pid {pid}) died during {what} of the job (before init completed); ending the job",
                    self.world[q]
                ));
            }
        }
        Ok(())
    }

    /// The join's closing barrier: as `barrier`, but a peer that dies, or a wait past the
    /// bootstrap timeout, ends it with an error instead of waiting for ever (the watchdog does
    /// not run yet).
    fn join_barrier(&self, deadline: Instant, timeout: Duration) -> Result<(), String> {
        let h = self.header();
        let gen = h.bar_gen.load(Acquire);
        if h.bar_count.fetch_add(1, AcqRel) + 1 == self.npes as u64 {
            h.bar_count.store(0, Relaxed);
            h.bar_gen.store(gen.wrapping_add(1), Release);
            return Ok(());
        }
        let mut b = crate::wait::Backoff::new(self.spin, 1000);
        let mut last_look = Instant::now();
        while h.bar_gen.load(Acquire) == gen {
            if last_look.elapsed() >= Duration::from_millis(50) {
                last_look = Instant::now();
                self.dead_peer("the start")?;
                if Instant::now() > deadline {
                    return Err(format!(
                        "timed out after {} s waiting for the PEs of this node to map each other's memory (ISHMEM_BOOTSTRAP_TIMEOUT)",
                        timeout.as_secs()
                    ));
                }
            }
            b.snooze();
        }
        Ok(())
    }

    /// Blocks until every PE of the job has called it (a full memory barrier for the puts and
    /// AMOs made before it, on every PE of the node).
    pub fn barrier(&self) {
        self.barrier_checked(0, || {})
    }

    /// `barrier`, calling `check` every `check_ms` milliseconds of a long wait
    /// (`wait::until_checked`).
    /// A long wait also looks every `FINALIZING_CHECK_MS` for a PE in finalize (which will never
    /// arrive): seen twice with the barrier still unfinished, the job ends naming it.
    pub fn barrier_checked(&self, check_ms: u64, mut check: impl FnMut()) {
        let h = self.header();
        let gen = h.bar_gen.load(Acquire);
        if h.bar_count.fetch_add(1, AcqRel) + 1 == self.npes as u64 {
            h.bar_count.store(0, Relaxed);
            h.bar_gen.store(gen.wrapping_add(1), Release);
        } else {
            let period = if check_ms == 0 { FINALIZING_CHECK_MS } else { check_ms.min(FINALIZING_CHECK_MS) };
            let (mut last_check, mut seen) = (Instant::now(), None);
            crate::wait::until_checked(
                self.spin,
                self.sleep_max_us,
                period,
                || h.bar_gen.load(Acquire) != gen,
                || {
                    if check_ms > 0 && last_check.elapsed() >= Duration::from_millis(check_ms) {
                        last_check = Instant::now();
                        check();
                    }
                    // (Any PE in finalize: one that arrived here left only after every PE did.)
                    let now = self.finalizing_peer(|_| true);
                    if now.is_some() && now == seen && h.bar_gen.load(Acquire) == gen {
                        let (pe, pid, _) = now.unwrap_or_default();
                        self.peer_finalizing("a barrier", pe, pid);
                    }
                    seen = now;
                },
            );
        }
    }

    /// The barrier of `ishmem_finalize`: marks this PE FINALIZING, then waits until every PE
    /// of the node has arrived. While it waits, a PE that waits for this one in a barrier or a
    /// collective ends the job blaming it (`finalizing_peer`, then `abort_pe`): then this PE
    /// ends too, saying why.
    pub fn finalize_barrier(&self, world_calls: u64) {
        let h = self.header();
        self.mark_finalizing(world_calls);
        h.fin_count.fetch_add(1, AcqRel);
        let me = self.me;
        crate::wait::until_checked(
            self.spin,
            self.sleep_max_us,
            FINALIZING_CHECK_MS,
            || h.fin_count.load(Acquire) >= self.npes as u64,
            || {
                if h.abort_pe.load(Acquire) - 1 == me as i64 {
                    crate::ffi::emit(&format!(
                        "[PE {me}] ERROR: ishmem_finalize: the job ends: this PE called ishmem_finalize (or exited with \
                         status 0, which finalizes) while other PEs waited for it in a barrier or collective call"
                    ));
                    crate::ffi::exit_now(1);
                }
            },
        );
    }

    /// Marks this PE FINALIZING after `world_calls` world collectives: it will never take part
    /// in another barrier or collective (jobs across nodes: `core::live` tells the other nodes).
    pub fn mark_finalizing(&self, world_calls: u64) {
        self.slot(self.local).world_calls.store(world_calls, Relaxed);
        self.slot(self.local).state.store(FINALIZING, Release);
    }

    /// Whether this PE is in finalize.
    pub fn finalizing(&self) -> bool {
        self.slot(self.local).state.load(Acquire) == FINALIZING
    }

    /// A peer of the node (world PE, pid, world team calls it made) that is in
    /// `ishmem_finalize` while this PE is not, among the PEs for which `member` holds. Such a
    /// peer will not join this PE's barrier, nor a world collective it has not made; the caller
    /// confirms on a second look (its wait still unfinished).
    pub fn finalizing_peer(&self, member: impl Fn(usize) -> bool) -> Option<(usize, i32, u64)> {
        if self.slot(self.local).state.load(Acquire) == FINALIZING {
            return None;
        }
        let here = (0..self.npes).filter(|&q| q != self.local && member(self.world[q])).find_map(|q| {
            let s = self.slot(q);
            (s.state.load(Acquire) == FINALIZING).then(|| (self.world[q], s.pid.load(Relaxed), s.world_calls.load(Relaxed)))
        });
        // PEs of other nodes, as their leaders told this node's.
        let h = self.header();
        here.or_else(|| {
            (0..(h.remote_fin_n.load(Acquire) as usize).min(REMOTE_FIN)).find_map(|i| {
                let w = h.remote_fin[i][0].load(Acquire);
                let pe = ((w >> 32) & 0x7fff_ffff) as usize;
                (w >> 63 == 1 && member(pe)).then(|| (pe, w as u32 as i32, h.remote_fin[i][1].load(Relaxed)))
            })
        })
    }

    /// Ends the job because PE `pe` (pid `pid`) is in finalize while this PE waits for it in
    /// `what`: blames it (`abort_pe`, so its own finalize wait ends and the other watchdogs name
    /// it) and exits.
    pub fn peer_finalizing(&self, what: &str, pe: usize, pid: i32) -> ! {
        let _ = self.header().abort_pe.compare_exchange(0, pe as i64 + 1, AcqRel, Acquire);
        crate::ffi::exit_after_peer(
            &format!(
                "[PE {}] ERROR: PE {pe} (pid {pid}) called ishmem_finalize (or exited with status 0, which \
                 finalizes) while this PE waits for it in {what}; it will never take part: ending the job",
                self.me
            ),
            pe,
        )
    }

    /// Publishes this PE's arguments of collective call number `seq`.
    pub fn post_args(&self, seq: u64, args: [u64; 4]) {
        let s = &self.slot(self.local).coll[(seq & 1) as usize];
        for (a, v) in s.iter().zip(args) {
            a.store(v, Relaxed);
        }
    }

    /// Reads PE `pe`'s arguments of collective call `seq` (after a barrier).
    pub fn args_of(&self, pe: usize, seq: u64) -> [u64; 4] {
        let s = &self.slot(pe).coll[(seq & 1) as usize];
        [0, 1, 2, 3].map(|i| s[i].load(Relaxed))
    }

    /// Starts the thread that ends this PE when a peer dies or fails.
    pub fn start_watchdog(&mut self, period: Duration) {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let ctl = self.ctl;
        let (me, local, npes, world) = (self.me, self.local, self.npes, self.world.clone());
        let pids: Vec<(usize, i32)> = (0..npes).filter(|&q| q != local).map(|q| (q, self.slot(q).pid.load(Relaxed))).collect();
        let spawn = std::thread::Builder::new().name("ishmem-watchdog".into()).spawn(move || {
            let view = ShmJob {
                me,
                local,
                npes,
                world,
                ctl,
                heap_bases: Vec::new(),
                data_bases: None,
                gpu_slots: None,
                spin: 0,
                sleep_max_us: 0,
                watchdog: None,
            };
            watch(&view, &pids, &stop2, period);
            // (the view owns only its vectors: dropping it frees them and unmaps nothing)
            drop(view);
        });
        if let Ok(handle) = spawn {
            self.watchdog = Some((stop, handle));
        }
    }

    /// Leaves the job cleanly: marks this PE finalized and stops the watchdog.
    pub fn finalize(&mut self) {
        self.slot(self.local).state.store(FINALIZED, Release);
        if let Some((stop, handle)) = self.watchdog.take() {
            stop.store(true, Release);
            let _ = handle.join();
        }
        CTL.store(0, Release);
    }
}

fn pidfd_open(pid: i32) -> i32 {
    // SAFETY: pidfd_open takes a pid and flags and returns a descriptor or -1.
    unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) as i32 }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

/// Whether this PE leaves the job by its own `ishmem_global_exit` (the node's word names it);
/// another PE's call ends the process here (`ffi::check_global_exit`). The caller's thread
/// exits once its node leader told the other nodes (bounded), and its node-mates, told at the
/// same moment, may exit first: their ends are the global exit, not failures (6 PEs on 2
/// nodes under ctest -j2: the caller's watchdog saw its mate PE 2 end first and printed
/// `PE 2 ... died or exited without calling ishmem_finalize`; `live.global_exit_linger`).
fn leaving_globally(job: &ShmJob) -> bool {
    let flag = job.header().global_exit.load(Acquire);
    crate::ffi::check_global_exit(flag, job.me);
    flag != 0
}

/// The watchdog loop: polls the peers' pidfds (or their pids where pidfds are unavailable) and
/// the job's abort flag every `period`.
fn watch(job: &ShmJob, pids: &[(usize, i32)], stop: &AtomicBool, period: Duration) {
    let mut fds: Vec<(usize, i32, i32)> = pids.iter().map(|&(q, pid)| (q, pid, pidfd_open(pid))).collect();
    let ms = period.as_millis().clamp(1, 10_000) as i32;
    while !stop.load(Acquire) {
        let mut polls: Vec<libc::pollfd> =
            fds.iter().filter(|f| f.2 >= 0).map(|f| libc::pollfd { fd: f.2, events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: polls is a valid array of pollfd of the given length.
        unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
        if stop.load(Acquire) || leaving_globally(job) {
            break;
        }
        let failed = job.header().abort_pe.load(Acquire);
        if failed - 1 == job.me as i64 {
            // (Across nodes only: there finalize does not use this node's `fin_count`; on one
            // node `finalize_barrier` reports it.)
            if job.finalizing() && job.header().fin_count.load(Acquire) == 0 {
                // Blamed: this PE is in finalize while others wait for it.
                crate::ffi::emit(&format!(
                    "[PE {}] ERROR: ishmem_finalize: the job ends: this PE called ishmem_finalize (or exited with \
                     status 0, which finalizes) while other PEs waited for it in a barrier or collective call",
                    job.me
                ));
                crate::ffi::exit_now(1);
            }
            // This PE failed and is exiting: it must not blame a peer that ends because of it.
            break;
        }
        if failed != 0 {
            let pe = (failed - 1) as usize;
            let where_ = if job.world.contains(&pe) { "" } else { "on another node; " };
            crate::ffi::exit_after_peer(
                &format!("[PE {}] ERROR: ending the job because PE {pe} failed ({where_}see its message)", job.me),
                pe,
            );
        }
        let mut gone = Vec::new();
        for (i, &(q, pid, fd)) in fds.iter().enumerate() {
            let dead = if fd >= 0 { polls.iter().any(|p| p.fd == fd && p.revents != 0) } else { !alive(pid) };
            if !dead {
                continue;
            }
            if job.slot(q).state.load(Acquire) == FINALIZED {
                gone.push(i);
                continue;
            }
            if stop.load(Acquire) || leaving_globally(job) {
                return;
            }
            crate::ffi::exit_after_peer(
                &format!(
                    "[PE {}] ERROR: PE {} (pid {pid}) died or exited without calling ishmem_finalize; ending the job",
                    job.me, job.world[q]
                ),
                job.world[q],
            );
        }
        for i in gone.into_iter().rev() {
            let (_, _, fd) = fds.remove(i);
            if fd >= 0 {
                // SAFETY: we opened this pidfd.
                unsafe { libc::close(fd) };
            }
        }
    }
    for (_, _, fd) in fds {
        if fd >= 0 {
            // SAFETY: we opened this pidfd.
            unsafe { libc::close(fd) };
        }
    }
}
