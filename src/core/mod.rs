//! The runtime state of a PE and the untyped core of every operation: address translation
//! (which PE, which mapped address), argument checks shared by all shims, init and finalize.
//! No FFI types live here; the shims in `api` call into this with Rust types.
//!
//! Backends: on the CPU backend the heap is host shared memory and every operation is a load,
//! store or atomic on a mapped address. On the CUDA backend (`gpu` is `Some`) the heap is GPU
//! memory: `translate`/`remote` still give the target's address as mapped here (a device
//! address), and `gpu_for`/`gpu_heap` tell the operations that must go through the GPU
//! (copies, AMO kernels) from those on host memory (the symmetric data segment, which stays
//! in host shared memory on both backends and keeps the CPU paths).

pub mod agree;
pub mod amo;
pub mod coll;
pub mod coll_entry;
pub mod ctx;
pub mod device;
pub mod info;
#[cfg(test)]
mod layout;
pub mod live;
pub mod net;
pub mod queue;
pub mod queue_coll;
pub mod rma;
pub mod stage;
mod start;
pub mod team;

use crate::bootstrap::Runtime;
use crate::env::Config;
use crate::ffi::fatal;
use crate::heap::alloc::SymAlloc;
use crate::transport::cuda::{self, Gpu};
use crate::transport::shm::{self, ShmJob};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering::*};
use std::sync::Mutex;
use std::time::Duration;

/// A symmetric region: its local range and its base as mapped for each PE.
pub struct Region {
    pub base: usize,
    pub len: usize,
    pub peers: Box<[usize]>,
}

impl Region {
    /// The offset of `[addr, addr+len)` inside the region, if it lies wholly inside.
    #[inline(always)]
    pub fn offset(&self, addr: usize, len: usize) -> Option<usize> {
        let off = addr.wrapping_sub(self.base);
        (off < self.len && len <= self.len - off).then_some(off)
    }
}

/// Everything a running PE knows.
pub struct State {
    pub me: usize,
    pub npes: usize,
    pub cfg: Config,
    pub runtime: Runtime,
    /// The nodes of the job (which PEs share memory with which).
    pub nodes: crate::bootstrap::node::Nodes,
    /// This PE's node index in `nodes`.
    pub my_node: usize,
    /// The network to the PEs of other nodes (None: the job is one node).
    pub net: Option<net::Net>,
    pub thread_level: i32,
    pub heap: Region,
    pub data: Option<Region>,
    pub alloc: Mutex<SymAlloc>,
    /// Number of symmetric memory calls so far (`agree::memory_call`).
    pub coll_seq: AtomicU64,
    /// The library's own blocks of the heap (offset, length, what), allocated at init and
    /// never freed: `ishmem_free` refuses them.
    pub lib_blocks: Vec<(usize, usize, &'static str)>,
    pub job: Mutex<ShmJob>,
    /// Raw view of the job for barriers without taking the mutex.
    job_ptr: *const ShmJob,
    /// The CUDA backend's GPU, whose memory holds `heap` (None: CPU backend).
    pub gpu: Option<Gpu>,
    /// This PE's teams (handles are slot indices; see core::team).
    pub teams: Mutex<team::TeamPool>,
    /// Per team slot: host collectives this PE entered on the team (`core::coll::Team::enter`).
    pub team_seq: Box<[AtomicU64]>,
    /// Per team slot: the address of the function name last written into this PE's entry
    /// record (0: none yet), and that name's hash.
    pub team_name: Box<[std::sync::atomic::AtomicUsize]>,
    pub team_name_hash: Box<[AtomicU64]>,
    /// The world team's descriptor (fixed for the life of the job).
    pub world: team::TeamDesc,
    /// Jobs across nodes: the heap offset of finalize's sync area (`final_barrier`).
    pub fin_area: usize,
    /// Jobs across nodes on the CPU heap: the team slots' broadcast rings and all-send scratch
    /// (`team::net_block_bytes`).
    pub bcast_rings: Option<BcastRings>,
    /// Held by a team split for its whole length, so that two threads of this PE splitting at
    /// once cannot both claim a slot they each saw free.
    pub split_lock: Mutex<()>,
    /// The two-level sync's plan of each team across nodes met so far (`coll::sync_nodes`),
    /// by (start, stride, size): computed once instead of on every sync (an O(team size)
    /// pass, more than the O(log nodes) network rounds at thousands of PEs; issue 29).
    pub sync_plans: Mutex<std::collections::HashMap<(i32, i32, usize), std::sync::Arc<SyncPlan>>>,
    /// The proxy thread serving kernels' requests for PEs of other nodes (CUDA backend, job
    /// across nodes).
    /// The proxy ring kernels post into (pinned host memory), when the CUDA backend's job spans
    /// nodes: `proxy` serves it.
    pub proxy_ring: Option<usize>,
}

// SAFETY: job_ptr points into the Mutex<ShmJob> owned by the same leaked State; it is used
// only for `barrier`, which touches shared atomics alone.
unsafe impl Sync for State {}
// SAFETY: as above; the State is leaked and never moved after init.
unsafe impl Send for State {}

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const RUNNING: u8 = 2;
const FINALIZED: u8 = 3;

static PHASE: AtomicU8 = AtomicU8::new(UNINIT);
/// This PE's rank once the bootstrap found it (for message tags during the rest of init).
static BOOT_RANK: AtomicU64 = AtomicU64::new(u64::MAX);

/// The rank the bootstrap gave this PE, once known.
pub fn boot_rank() -> Option<usize> {
    let r = BOOT_RANK.load(Relaxed);
    (r != u64::MAX).then_some(r as usize)
}
static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());

/// The running state, or a fatal error naming `func` before init / after finalize.
#[inline(always)]
pub fn state(func: &str) -> &'static State {
    let p = STATE.load(Acquire);
    if p.is_null() {
        not_running(func)
    }
    // SAFETY: a non-null STATE points to the leaked State, alive for the whole process.
    unsafe { &*p }
}

#[cold]
fn not_running(func: &str) -> ! {
    match PHASE.load(Acquire) {
        FINALIZED => fatal(func, "called after ishmem_finalize"),
        _ => fatal(func, "called before ishmem_init (or ishmem_init_thread / ishmemx_init_attr)"),
    }
}

/// The running state, if init has completed and finalize has not.
#[inline(always)]
fn running() -> Option<&'static State> {
    // SAFETY: as in `state`: a non-null STATE points to the leaked State.
    unsafe { STATE.load(Acquire).as_ref() }
}

/// This PE's number when the library runs.
pub fn my_pe_if_running() -> Option<usize> {
    running().map(|st| st.me)
}

/// Whether init has completed and finalize has not.
pub fn is_running() -> bool {
    !STATE.load(Acquire).is_null()
}

/// Records that this PE called `ishmem_global_exit(status)` (nothing before init): every PE's
/// watchdog ends its PE with that status.
pub fn mark_global_exit(status: i32) {
    if let Some(me) = my_pe_if_running() {
        shm::mark_global_exit(me, status);
        // Across nodes: a node leader tells the other nodes itself and waits until their
        // leaders left; another PE waits until its leader (whose watchdog sees the node's word)
        // did so, so that the other nodes say why they end before a launcher that ends the job
        // at the first process to exit (OpenMPI's mpirun) kills them.
        global_exit_told(me, status);
    }
}

/// Before this PE exits for the global exit of PE `pe` (this one or another of its node), across
/// nodes: a node leader tells the other nodes and waits until their leaders left
/// (`live::tell_global_exit`); any other PE waits (bounded) until its leader did, or, on a node
/// that was told, until its leader marked it: a PE that exits first would let a launcher that
/// ends the job at the first process to exit (OpenMPI's mpirun) kill the leader before it told
/// the other nodes.
fn global_exit_told(pe: usize, status: i32) {
    live::tell_global_exit(pe, status);
    if let Some(st) = running().filter(|st| st.net.is_some() && !live::is_leader()) {
        let check = Duration::from_millis(st.cfg.peer_check_ms);
        shm::wait_global_exit_told(check.saturating_mul(2).saturating_add(Duration::from_secs(3)));
    }
    // A test aid: the calling PE lingers this long before it exits, as a preempted thread
    // would, so that its node-mates end first (tests/fabric.cmake, live.global_exit_linger).
    if Some(pe) == my_pe_if_running() {
        if let Some(ms) = std::env::var("ISHMEMI_GLOBAL_EXIT_LINGER_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

/// Tells the other PEs that this one failed (best effort, never blocks).
pub fn abort_job() {
    let me = my_pe_if_running().unwrap_or_else(|| crate::bootstrap::rank_hint().unwrap_or(0));
    shm::mark_abort(me);
    shm::remove_created();
    tell_other_nodes(me);
}

/// Hands the leaves below the core what they need of the running PE: the C boundary's PE tag,
/// debug setting and abort actions (`ffi::Hooks`) and the waits' progress step.
fn set_hooks() {
    crate::ffi::set_hooks(crate::ffi::Hooks {
        pe: || my_pe_if_running().or_else(boot_rank),
        debug: || running().map(|st| st.cfg.debug),
        abort: abort_job,
        tell_other_nodes,
        tell_global_exit: global_exit_told,
        before_exit: net::remove_provider_files,
    });
    crate::wait::set_progress(net_progress, net_busy, net_block);
}

/// One step of network progress (waits call it while the job spans nodes).
#[cold]
pub fn net_progress() {
    if let Some(n) = running().and_then(|st| st.net.as_ref()) {
        n.fab.poll_in_wait();
        // A PE waiting for a flag serves the requests that carry it.
        if let Some(s) = &n.stage {
            s.serve_some(&n.fab, "ishmem wait");
        }
    }
}

/// The sleep of a library wait in block mode (`wait::blocking`) while the job spans nodes:
/// in `poll` on the provider's wait fd for at most `d` (an arriving operation, the flag
/// awaited among them, ends it at once), or a plain sleep where the provider has no wait fd or
/// the heap is staged (its mailbox requests do not always wake the fd).
pub fn net_block(d: Duration) {
    match running().and_then(|st| st.net.as_ref()) {
        Some(n) if n.stage.is_none() && n.fab.has_wait_fd() => n.fab.block_in_wait(d),
        _ => std::thread::sleep(d),
    }
}

/// How long after the last traffic seen arriving a library wait still polls rather than
/// sleeps (`wait::Backoff`).
const NET_ACTIVE_WINDOW: Duration = Duration::from_millis(5);

/// Whether network traffic arrived for this PE within `NET_ACTIVE_WINDOW`.
pub fn net_busy() -> bool {
    running().and_then(|st| st.net.as_ref()).is_some_and(|n| n.fab.recently_active(NET_ACTIVE_WINDOW))
}

/// Tells the PEs of other nodes that PE `cause` failed (jobs across nodes; see `net::Net::tell`).
pub fn tell_other_nodes(cause: usize) {
    live::tell_failed(cause);
    if let Some((st, n)) = running().and_then(|st| Some((st, st.net.as_ref()?))) {
        n.tell((0..st.npes).filter(|&pe| st.off_node(pe)), cause);
    }
}

/// How init was asked for.
pub enum InitRequest {
    /// From the environment's launcher; `mode` overrides `ISHMEM_BOOTSTRAP`.
    Env { mode: Option<&'static str> },
    /// Unique-id init.
    Uid { uid: [u8; crate::bootstrap::UID_BYTES], rank: i32, nranks: i32 },
}

/// Initializes the library once; a second call is an error. `gpu_allowed` is
/// `ishmemx_attr_t.gpu` (false keeps the CPU backend whatever `ISHMEM_GPU` says). The steps
/// are in `start`, in this order.
pub fn init(func: &str, thread_level: i32, req: InitRequest, gpu_allowed: bool) {
    set_hooks();
    // A mutant's name stays in the library (read here, so the linker keeps it).
    #[cfg(ishmem_mutation)]
    std::hint::black_box(&crate::MUTANT);
    start::claim(func);
    let mut j = start::bootstrap(func, req);
    let data = start::data_segment(&j);
    let mut gpu = start::open_gpu(func, &j, gpu_allowed);
    let job = start::join_node(func, &j, data, gpu.as_ref());
    let mut heap = start::heap(func, &j, &job, gpu.as_mut(), data);
    let net = start::network(func, &mut j, &heap, gpu.is_some());
    let ring = start::proxy_ring(func, gpu.as_mut(), net.is_some(), &mut heap);
    let state = start::publish(func, start::assemble(j, thread_level, heap, job, gpu, net, ring));
    start::preload(func, state);
    PHASE.store(RUNNING, Release);
}

/// The CPUs this process may run on (`sched_getaffinity`); 0 when unknown.
pub(crate) fn usable_cpus() -> usize {
    // SAFETY: set is plain data filled in by sched_getaffinity.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is writable and its size is passed.
    let ok = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) } == 0;
    if ok {
        // SAFETY: CPU_COUNT reads the set filled above.
        (unsafe { libc::CPU_COUNT(&set) }) as usize
    } else {
        0
    }
}

/// Polls spent spinning before a wait yields. When this machine runs more PEs of the job
/// (`host_pes`: pretend nodes of one machine counted together) than this process has `cores`,
/// a spinning waiter keeps the PE it waits for off the CPU, so it yields almost at once (at
/// most 64 polls); across nodes (`net`) at once: every PE also has a progress thread, and the
/// network traffic a waiter waits for moves only when the provider's progress runs (4 PEs on
/// 2 pretend nodes on 2 cores: barrier_all 2,400-2,600 us spinning, 130-770 us yielding).
pub(crate) fn effective_spin(spin: u64, host_pes: usize, net: bool, cores: usize) -> u64 {
    match () {
        _ if cores == 0 || host_pes <= cores => spin,
        _ if net => 0,
        _ => spin.min(64),
    }
}

/// Finalizes: completes outstanding operations, synchronizes, leaves the job.
pub fn finalize(func: &str) {
    let st = state(func);
    if let Some(line) = queue::stats::report() {
        crate::ffi::info(func, &line);
    }
    quiet();
    ctx::forget_all();
    if st.net.is_some() {
        // SAFETY: as in `State::barrier`.
        unsafe { (*st.job_ptr).mark_finalizing(st.team_seq[0].load(Relaxed)) }
        st.final_barrier();
    } else {
        // SAFETY: as in `State::barrier`.
        unsafe { (*st.job_ptr).finalize_barrier(st.team_seq[0].load(Relaxed)) }
    }
    if let Some(n) = &st.net {
        // Every operation of this PE is complete at its target (no PE leaves the next barrier
        // before this one arrives, so all are alive).
        n.quiet(func);
        st.final_barrier();
        // Every PE has reached finalize's last barrier: this node's leader says goodbye (the end
        // of its connections is then no death) and closes them.
        live::finalized();
        // No PE has an operation outstanding but the flags of that barrier: this PE's are
        // delivered to the PEs still waiting for them (a PE that has left needs none; errors
        // from those are expected). The progress thread goes on serving the PEs still in the
        // barrier for a grace period, then stops.
        n.quiet_final();
        crate::wait::progress_on(false);
        n.retire(Duration::from_secs(2));
    }
    // How the progress thread's waits ended (`ISHMEMI_PROXY_PROFILE=1`, a measuring aid; issue
    // 31 counted its wake-ups in a barrier loop with it).
    if let Some(n) = st.net.as_ref().filter(|_| std::env::var("ISHMEMI_PROXY_PROFILE").is_ok_and(|v| v == "1")) {
        let [w, t, a, b] = n.fab.wait_stats();
        crate::ffi::emit(&format!(
            "[PE {}] progress thread profile (waits ended): woken {w}, timed out or timer {t}, pending work {a}, aside or busy {b}",
            st.me
        ));
    }
    if let Some(g) = &st.gpu {
        // Nobody uses a peer's heap after the barrier; nobody frees a heap a peer still maps
        // (only the PEs of this node map it: their barrier, not the world's, which would use
        // the heaps just unmapped).
        cuda::binders::withdraw();
        g.unmap_peers(func);
        if let Some(s) = st.net.as_ref().and_then(|n| n.stage.as_ref()) {
            s.close();
        }
        // SAFETY: as in `State::barrier`.
        unsafe { (*st.job_ptr).barrier() };
        g.release(func);
    }
    if let Ok(mut job) = st.job.lock() {
        job.finalize();
    }
    crate::heap::reserve::close();
    // The unique-id rendezvous this process served, if any, has no more rounds.
    crate::bootstrap::uid::stop_servers();
    STATE.store(std::ptr::null_mut(), Release);
    PHASE.store(FINALIZED, Release);
}

/// Completes every outstanding operation of this PE. On mapped memory every put and AMO is
/// complete when its call returns, so a full fence is all that is left; network operations
/// are waited for.
#[inline]
pub fn quiet() {
    #[cfg(ishmem_mutation = "quiet_noop")]
    return;
    #[allow(unreachable_code)]
    if let Some(n) = running().and_then(|st| st.net.as_ref()) {
        n.quiet("ishmem_quiet");
    }
    std::sync::atomic::fence(SeqCst);
}

/// Orders this PE's puts and AMOs per target: mapped ones are complete at return (a fence
/// orders them), network ones are ordered by the provider's fence, and network AMOs to PEs of
/// this node are waited for (`net::Net::fence`). `func` names the caller in errors.
#[inline]
pub fn fence(func: &str) {
    #[cfg(ishmem_mutation = "fence_noop")]
    return;
    #[allow(unreachable_code)]
    if let Some(n) = running().and_then(|st| st.net.as_ref()) {
        n.fence(func);
    }
    std::sync::atomic::fence(SeqCst);
}

/// Where the blocks of the team slots across nodes lie (`team::net_block_bytes`: the broadcast
/// ring, then the all-send scratch, then the relay flags): heap offsets.
#[derive(Clone, Copy, Debug)]
pub struct BcastRings {
    /// The heap offset of the team areas (slot t's at `area_base + t * team::AREA_BYTES`).
    pub area_base: usize,
    /// The heap offset of slot 0's block (slot t's at `base + t * self.block()`).
    pub base: usize,
    /// Slots that have a ring (the first ones).
    pub teams: usize,
    /// Each block's all-send scratch in bytes (`team::net_scratch_for`: the same on every PE).
    pub scratch: usize,
}

impl BcastRings {
    /// The heap offset of the block (its ring first) of the team whose sync area is at heap
    /// offset `sync_offset` (None: a slot without one, or an area that is no slot's, as
    /// finalize's).
    pub fn of(&self, sync_offset: usize) -> Option<usize> {
        let rel = sync_offset.checked_sub(self.area_base)?;
        let t = rel / team::AREA_BYTES;
        (rel % team::AREA_BYTES == 0 && t < self.teams).then(|| self.base + t * self.block())
    }

    /// The bytes of one slot's block.
    pub fn block(&self) -> usize {
        team::net_block_bytes(self.scratch)
    }
}

impl State {
    /// The cross-process barrier of the whole job.
    /// Across nodes, the barrier of `ishmem_finalize`: a sync of the world PEs on an area of its
    /// own (`fin_area`), so that it never completes another PE's `barrier_all` (a PE that exits
    /// with status 0 while the others wait in one: they find it in finalize and end the job).
    pub fn final_barrier(&self) {
        let mut d = self.world;
        d.sync_offset = self.fin_area as u64;
        coll::Team::new(self, "ishmem_finalize", 0, d).sync_delivered()
    }

    pub fn barrier(&self) {
        if self.net.is_some() {
            // Across nodes: the world team's sync, through the network; its flags are known
            // to have arrived at the next quiet (finalize leaves the job after it).
            return coll::Team::world(self, "ishmem_barrier_all").sync_delivered();
        }
        // SAFETY: job_ptr points to the ShmJob inside self.job (set at init, never moved);
        // barrier only touches shared atomics, so it may run beside a lock holder.
        unsafe { (*self.job_ptr).barrier() }
    }

    /// The job barrier as a call of the world team `w` (its record made): a long wait checks
    /// the world team's call agreement (`coll::Team::check_agreement`), so a PE in another
    /// world collective is named instead of waited for.
    pub fn barrier_as(&self, w: &coll::Team) {
        if self.net.is_some() {
            return w.sync_delivered();
        }
        let mut watch = coll::Watch::default();
        // SAFETY: as in `barrier`.
        unsafe { (*self.job_ptr).barrier_checked(self.cfg.coll_check_ms, || w.check_agreement(&mut watch)) }
    }

    /// `ishmem_barrier_all` and `ishmem_sync_all`'s barrier: recorded as a sync of the world
    /// team, whose call agreement a long wait checks (`coll::Team::enter`).
    /// The record is made and written only when the wait is long (the barrier itself costs
    /// tens of ns; peers skip a record of an older count meanwhile).
    pub fn barrier_recorded(&self, func: &str) {
        #[cfg(ishmem_mutation = "barrier_noop")]
        return;
        #[allow(unreachable_code)]
        let seq = self.next_team_seq(0);
        if self.net.is_some() {
            let w = coll::Team::world(self, func);
            w.record(seq, coll::Kind::Sync, 0, 0);
            return w.sync();
        }
        let mut watch = coll::Watch::default();
        let check = || {
            let w = coll::Team::world(self, func);
            w.record(seq, coll::Kind::Sync, 0, 0);
            w.check_agreement(&mut watch)
        };
        // SAFETY: as in `barrier`.
        unsafe { (*self.job_ptr).barrier_checked(self.cfg.coll_check_ms, check) }
    }

    /// A PE in `ishmem_finalize` while this PE is not, among the world PEs for which `member`
    /// holds: (world PE, pid, world team calls it made). PEs of this node from their slots,
    /// PEs of other nodes as their leaders told this node's (`live`).
    pub fn finalizing_peer(&self, member: impl Fn(usize) -> bool) -> Option<(usize, i32, u64)> {
        // SAFETY: as in `barrier`.
        unsafe { (*self.job_ptr).finalizing_peer(member) }
    }

    /// Ends the job: PE `pe` is in finalize while this PE waits for it in `what`.
    pub fn peer_finalizing(&self, what: &str, pe: usize, pid: i32) -> ! {
        // SAFETY: as in `barrier`.
        unsafe { (*self.job_ptr).peer_finalizing(what, pe, pid) }
    }

    /// The team `team` of this PE, or a fatal error naming `func`.
    pub fn team_desc(&self, func: &str, team: i32) -> team::TeamDesc {
        let pool = self.teams.lock().unwrap_or_else(|e| e.into_inner());
        match pool.get(team) {
            Ok(d) => d,
            Err(e) => {
                drop(pool);
                fatal(func, &e)
            }
        }
    }

    /// The number of this PE's next host collective call on team slot `t`.
    #[inline]
    pub fn next_team_seq(&self, t: usize) -> u64 {
        // Only this PE's threads touch it, and not two at once on one team (the spec forbids
        // concurrent collectives on a team).
        let seq = self.team_seq[t].load(Relaxed) + 1;
        self.team_seq[t].store(seq, Relaxed);
        seq
    }

    /// Checks a PE number.
    #[inline(always)]
    pub fn check_pe(&self, func: &str, pe: i32) -> usize {
        if pe < 0 || pe as usize >= self.npes {
            bad_pe(func, pe, self.npes)
        }
        pe as usize
    }

    /// Whether PE `pe` is reached through the network (another node).
    #[inline(always)]
    pub fn off_node(&self, pe: usize) -> bool {
        self.net.is_some() && self.nodes.node_of[pe] != self.my_node
    }

    /// Where the symmetric range `[addr, addr+len)` of this PE lies for the network (region
    /// and offset), or a fatal error naming `what` when it is not symmetric.
    pub fn remote_at(&self, func: &str, what: &str, addr: usize, len: usize) -> crate::transport::fabric::Remote {
        use crate::transport::fabric::Remote;
        if let Some(off) = self.heap.offset(addr, len) {
            return Remote { region: net::HEAP, offset: off };
        }
        match self.data.as_ref().and_then(|d| d.offset(addr, len)) {
            // Only the program's own data are registered (`Net::data_offset`).
            Some(off) => match self.net.as_ref().map(|n| n.data_offset(off, len)) {
                Some(Err(why)) => fatal(func, &format!("{what} {addr:#x} ({len} bytes) {why}")),
                Some(Ok(o)) => Remote { region: net::DATA, offset: o },
                None => Remote { region: net::DATA, offset: off },
            },
            None => not_symmetric(self, func, what, addr, len),
        }
    }

    /// A fatal error naming `what` unless `[addr, addr+len)` is symmetric on this PE.
    #[inline(always)]
    pub fn check_sym(&self, func: &str, what: &str, addr: usize, len: usize) {
        if self.translate(addr, len, self.me).is_none() {
            not_symmetric(self, func, what, addr, len)
        }
    }

    /// Translates the symmetric range `[addr, addr+len)` of this PE to PE `pe`'s copy as
    /// mapped here, or `None` when the range is not symmetric or PE `pe` is on another node
    /// (not mapped here).
    #[inline(always)]
    pub fn translate(&self, addr: usize, len: usize, pe: usize) -> Option<usize> {
        if self.off_node(pe) {
            return None;
        }
        if let Some(off) = self.heap.offset(addr, len) {
            return Some(self.heap.peers[pe] + off);
        }
        let d = self.data.as_ref()?;
        d.offset(addr, len).map(|off| d.peers[pe] + off)
    }

    /// Copies `n` bytes of this PE's GPU heap at `src` into host memory at `dst` (CUDA
    /// backend; nothing on the CPU backend).
    ///
    /// # Safety
    /// `[src, src+n)` must lie in this PE's GPU heap, `[dst, dst+n)` be writable host memory.
    pub unsafe fn read_gpu_heap(&self, func: &str, dst: usize, src: usize, n: usize) {
        if let Some(g) = &self.gpu {
            // SAFETY: forwarded contract.
            unsafe { g.copy(func, dst, src, n) };
        }
    }

    /// The GPU when this PE's address `addr` lies in its GPU heap (CUDA backend), else None.
    #[inline(always)]
    pub fn gpu_heap(&self, addr: usize) -> Option<&Gpu> {
        self.gpu.as_ref().filter(|_| addr.wrapping_sub(self.heap.base) < self.heap.len)
    }

    /// The GPU when an operation between this PE's symmetric address `sym` and the local
    /// buffer `local` must go through it: either lies in the GPU heap. Host memory on both
    /// sides (a symmetric global and a host buffer) keeps the CPU path; so a device buffer
    /// outside the heap may not be the local side of an operation on a symmetric global.
    #[inline(always)]
    pub fn gpu_for(&self, sym: usize, local: usize) -> Option<&Gpu> {
        self.gpu_heap(sym).or_else(|| self.gpu_heap(local))
    }

    /// How this PE reaches PE `pe`'s copy of its symmetric range `[sym, sym+len)`: the
    /// transport seam. `local` is the local buffer of an RMA (either side in the GPU heap sends
    /// the copy through the GPU); None for AMOs, waits and signals (the target decides).
    /// A range that is not symmetric is a fatal error naming `what`.
    #[inline(always)]
    pub fn reach(&self, func: &str, what: &str, sym: usize, len: usize, pe: usize, local: Option<usize>) -> Reach<'_> {
        if let Some(n) = &self.net {
            if self.nodes.node_of[pe] != self.my_node {
                return Reach::Net(n, pe, self.remote_at(func, what, sym, len));
            }
        }
        let r = self.remote(func, what, sym, len, pe);
        let gpu = match local {
            Some(l) => self.gpu_for(sym, l),
            None => self.gpu_heap(sym),
        };
        match gpu {
            Some(g) => Reach::Gpu(g, r),
            None => Reach::Host(r),
        }
    }

    /// `reach` for an AMO (and the signal of a put-with-signal): while the job spans nodes,
    /// every AMO goes through the network, to node peers and to this PE too, so that one
    /// agent (the target's provider) applies all AMOs on a word (see `core::net`).
    #[inline(always)]
    pub fn reach_atomic(&self, func: &str, what: &str, sym: usize, len: usize, pe: usize) -> Reach<'_> {
        if let Some(n) = &self.net {
            // A staged heap is served with the node's own atomics: AMOs on it to a PE of
            // this node stay on the node. So do all AMOs to the node where the provider's
            // atomics are the target CPU's (`Net::node_amos_local`).
            let stays = !self.off_node(pe) && (n.node_amos_local() || (n.stage.is_some() && self.heap.offset(sym, len).is_some()));
            if !stays {
                return Reach::Net(n, pe, self.remote_at(func, what, sym, len));
            }
        }
        self.reach(func, what, sym, len, pe, None)
    }

    /// Like `translate`, with a fatal error naming `what` when the range is not symmetric.
    #[inline(always)]
    pub fn remote(&self, func: &str, what: &str, addr: usize, len: usize, pe: usize) -> usize {
        match self.translate(addr, len, pe) {
            Some(a) => a,
            None if self.off_node(pe) => {
                self.check_sym(func, what, addr, len);
                fatal(func, &format!("PE {pe} is on another node: this operation cannot reach it yet (only the host RMA, AMO, signal, wait and collective calls go through the network)"))
            }
            None => not_symmetric(self, func, what, addr, len),
        }
    }
}

/// What `coll::sync_nodes` needs of a team across nodes: its node leaders in team order (the
/// lowest team PE of each node), this PE's place among them (0 when it leads none), this PE's
/// leader and the number of team PEs on this PE's node.
pub struct SyncPlan {
    pub leaders: Vec<usize>,
    pub place: usize,
    pub leader: usize,
    pub members: u64,
}

/// How a symmetric range of a PE is reached from this one (`State::reach`).
pub enum Reach<'a> {
    /// Host memory mapped here (the CPU heap or the symmetric data segment of a PE of this
    /// node): loads, stores, copies and CPU atomics at this address.
    Host(usize),
    /// The CUDA backend's GPU heap (this PE's or a node peer's, mapped through CUDA IPC) at
    /// this device address: the GPU's copies and atomic kernels.
    Gpu(&'a Gpu, usize),
    /// A PE of another node (or, for AMOs, any PE of a job that spans nodes): the network, at
    /// this region and offset of PE `.1`.
    Net(&'a net::Net, usize, crate::transport::fabric::Remote),
}

#[cold]
fn bad_pe(func: &str, pe: i32, npes: usize) -> ! {
    fatal(func, &format!("pe {pe} out of range [0, {npes})"))
}

#[cold]
fn not_symmetric(st: &State, func: &str, what: &str, addr: usize, len: usize) -> ! {
    let heap_end = st.heap.base + st.heap.len;
    let where_ = if addr >= st.heap.base && addr < heap_end {
        format!("runs past the end of the symmetric heap [{:#x}, {heap_end:#x})", st.heap.base)
    } else {
        format!("is outside the symmetric heap [{:#x}, {heap_end:#x}) and the symmetric data segment", st.heap.base)
    };
    fatal(func, &format!("{what} {addr:#x} ({len} bytes) {where_}"))
}

/// A fatal error naming `what` unless `addr` is a multiple of `align` (a power of two).
#[inline(always)]
pub fn check_align(func: &str, what: &str, addr: usize, align: usize) {
    if addr & (align - 1) != 0 {
        misaligned(func, what, addr, align)
    }
}

#[cold]
fn misaligned(func: &str, what: &str, addr: usize, align: usize) -> ! {
    fatal(func, &format!("{what} {addr:#x} is not aligned to {align} bytes"))
}

/// `n * elem` bytes, or a fatal size-overflow error.
#[inline(always)]
pub fn bytes(func: &str, n: usize, elem: usize) -> usize {
    match n.checked_mul(elem) {
        Some(b) if b <= isize::MAX as usize => b,
        _ => fatal(func, &format!("size overflow: {n} elements of {elem} bytes")),
    }
}

#[cfg(test)]
mod spin_tests {
    use super::effective_spin;

    #[test]
    fn oversubscribed_waits_yield() {
        // Enough CPUs, or unknown: the setting as given.
        assert_eq!(effective_spin(20000, 2, true, 2), 20000);
        assert_eq!(effective_spin(20000, 8, true, 0), 20000);
        // More PEs on the machine than CPUs: one node caps the spin, across nodes none.
        assert_eq!(effective_spin(20000, 3, false, 2), 64);
        assert_eq!(effective_spin(10, 3, false, 2), 10);
        assert_eq!(effective_spin(20000, 4, true, 2), 0);
    }
}

#[cfg(test)]
mod wake_tests {
    /// `ISHMEM_OFI_PROGRESS_WAKE=auto`: the timer up to 2 PEs per CPU, the wait fd beyond it,
    /// in block mode and for a staged heap.
    #[test]
    fn auto_wake_takes_the_fd_when_crowded_or_staged() {
        use super::start::wake_on_arrival;
        assert!(!wake_on_arrival(false, false, 2, 2));
        assert!(!wake_on_arrival(false, false, 4, 2));
        assert!(wake_on_arrival(false, false, 5, 2));
        assert!(wake_on_arrival(false, false, 8, 2));
        assert!(wake_on_arrival(false, true, 2, 2));
        assert!(wake_on_arrival(true, false, 1, 16));
        assert!(!wake_on_arrival(false, false, 64, 0), "CPUs unknown: the timer");
    }
}
