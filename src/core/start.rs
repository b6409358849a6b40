//! The steps of `core::init`, in the order `init` runs them. Each step takes what the ones
//! before it made and hands on what the ones after it need; any failure is a fatal error
//! naming the C function that asked for init.

use super::{agree, coll, info, live, net, queue, team, InitRequest, Region, State, BOOT_RANK, PHASE, STARTING, STATE, UNINIT};
use crate::bootstrap::node::Nodes;
use crate::bootstrap::{Bootstrap, JobInfo};
use crate::env::Config;
use crate::ffi::fatal;
use crate::heap::alloc::SymAlloc;
use crate::transport::cuda::{self, Gpu};
use crate::transport::shm::{JoinParams, ShmJob};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;
use std::time::Duration;

/// Marks init as started; a second init, or one after finalize, is an error.
pub(super) fn claim(func: &str) {
    match PHASE.compare_exchange(UNINIT, STARTING, AcqRel, Acquire) {
        Ok(_) => {}
        Err(super::FINALIZED) => fatal(func, "the library was finalized; it cannot be initialized again"),
        Err(_) => fatal(func, "the library is already initialized (init may be called once per program)"),
    }
}

/// What the bootstrap found: the settings, the launcher, the job's nodes and this PE's place.
pub(super) struct Joined {
    pub cfg: Config,
    /// The launcher; its exchange stays open until the network is set up.
    pub boot: Bootstrap,
    pub info: JobInfo,
    pub nodes: Nodes,
    /// The node's secret: the names of its shared files derive from it.
    pub secret: String,
    pub my_node: usize,
    /// This PE's index among its node's members.
    pub local_rank: usize,
    /// The world PEs of this node, ascending.
    pub members: Vec<usize>,
    /// Whether the job spans more than one node.
    pub multi: bool,
}

/// Reads the settings, finds the launcher and, through its exchange, which PEs share this node
/// (never through shared memory); checks the settings every PE must share.
pub(super) fn bootstrap(func: &str, req: InitRequest) -> Joined {
    let (mut cfg, warnings) = Config::from_env().unwrap_or_else(|e| fatal(func, &e));
    let timeout = Duration::from_secs(cfg.bootstrap_timeout_s);
    let mut boot = match req {
        InitRequest::Env { mode } => Bootstrap::detect(mode.unwrap_or(&cfg.bootstrap), timeout),
        InitRequest::Uid { uid, rank, nranks } => Bootstrap::from_uid(&uid, rank, nranks, timeout),
    }
    .unwrap_or_else(|e| fatal(func, &format!("bootstrap: {e}")));
    let info = boot.info.clone();
    BOOT_RANK.store(info.rank as u64, Relaxed);
    let identity = crate::bootstrap::node::identity(&cfg.shm_dir);
    let (nodes, secret, same) = boot
        .nodes(&identity, cfg.node_split, &agree::settings_text(&cfg.same))
        .unwrap_or_else(|e| fatal(func, &format!("bootstrap ({}): node exchange: {e}", info.runtime.name())));
    // Settings every PE must share, job-wide (without an exchange the job is one node, whose
    // control segment compares them at join).
    if let Some(why) = same.as_deref().and_then(agree::settings_differ) {
        fatal(func, &why);
    }
    let my_node = nodes.node_of[info.rank];
    let multi = nodes.count() > 1;
    if multi {
        raise_fd_limit();
    }
    let local_rank = nodes.local_rank(info.rank);
    let members = nodes.members[my_node].clone();
    if multi && boot.exchange.is_none() {
        fatal(
            func,
            &format!(
                "the job spans {} but the launcher ({}) has no exchange to connect them; ISHMEM_NODE_SPLIT and \
                 several nodes need mpirun, srun, mpiexec or unique-id init",
                nodes.describe(),
                info.runtime.name()
            ),
        );
    }
    cfg.wait_spin = super::effective_spin(cfg.wait_spin, nodes.host_size[info.rank], multi, super::usable_cpus());
    // ISHMEMI_WAIT_BLOCK=0 or 1 overrides the choice (a measuring aid: docs/SCALING.md
    // compares both modes on one build).
    let block = match std::env::var("ISHMEMI_WAIT_BLOCK").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => crate::wait::block_mode_for(nodes.host_size[info.rank], super::usable_cpus()),
    };
    crate::wait::set_blocking(block);
    crate::wait::set_polling(!block);
    if info.rank == 0 {
        for w in &warnings {
            crate::ffi::warn(func, w);
        }
    }
    Joined { cfg, boot, info, nodes, secret, my_node, local_rank, members, multi }
}

/// The executable's data segment, moved into shared memory when `ISHMEM_SYMMETRIC_GLOBALS`
/// asks for it: its (base, length).
pub(super) fn data_segment(j: &Joined) -> Option<(usize, usize)> {
    if j.cfg.symmetric_globals {
        crate::heap::segment::main_data_segment()
    } else {
        None
    }
}

/// The CUDA backend's GPU and its heap (None: the CPU backend). `gpu_allowed` false keeps the
/// CPU backend whatever `ISHMEM_GPU` says. The GPU heap exists (and its sync area is zeroed)
/// before the node's control segment announces it.
pub(super) fn open_gpu(func: &str, j: &Joined, gpu_allowed: bool) -> Option<Gpu> {
    let params = cuda::OpenParams {
        mode: if gpu_allowed { j.cfg.gpu } else { crate::env::GpuMode::Off },
        device: j.cfg.gpu_device,
        local_rank: j.local_rank,
        npes: j.info.size,
        heap_len: j.cfg.symmetric_size,
        debug: j.cfg.debug,
    };
    Gpu::open(func, j.info.rank, &params)
}

/// Job control: joins the node's control segment (the host heaps, the data segments' mappings,
/// the GPU slots, the node's barrier) and starts the watchdog that ends this PE when a peer
/// fails. One control segment per node (pretend nodes of ISHMEM_NODE_SPLIT share a /dev/shm).
pub(super) fn join_node(func: &str, j: &Joined, data: Option<(usize, usize)>, gpu: Option<&Gpu>) -> ShmJob {
    let cfg = &j.cfg;
    let shm_key = if j.multi { format!("{}-n{}", j.info.key, j.my_node) } else { j.info.key.clone() };
    // The files' names: one-way from the node's secret (issue 30), in a directory checked first.
    crate::bootstrap::secret::check_shm_dir(&cfg.shm_dir).unwrap_or_else(|e| fatal(func, &e));
    let names = crate::bootstrap::secret::ShmNames::new(&cfg.shm_dir, &j.secret, j.my_node);
    let params = JoinParams {
        names: &names,
        key: &shm_key,
        members: &j.members,
        me: j.local_rank,
        npes: j.members.len(),
        heap_len: cfg.symmetric_size,
        data,
        timeout: Duration::from_secs(cfg.bootstrap_timeout_s),
        spin: cfg.wait_spin,
        sleep_max_us: cfg.wait_sleep_max_us,
        debug: cfg.debug,
        gpu: gpu.map(Gpu::slot),
        // Different values would give different heap layouts or collective algorithms.
        agree: [
            ("ISHMEM_TEAMS_MAX", cfg.teams_max as u64),
            ("ISHMEM_COLL_SMALL_MAX", cfg.coll_small_max as u64),
            ("ISHMEM_BCAST_SCATTER_MIN", cfg.bcast_scatter_min as u64),
            ("ISHMEM_REDUCE_SCATTER_MIN", cfg.reduce_scatter_min as u64),
            ("ISHMEM_QUEUE_KERNEL_MAX", cfg.queue_kernel_max as u64),
            ("ISHMEM_QUEUE_REDUCE_SPLIT_MIN", cfg.queue_reduce_split_min as u64),
        ],
    };
    let mut job = ShmJob::join(&params).unwrap_or_else(|e| fatal(func, &e));
    job.start_watchdog(Duration::from_millis(cfg.peer_check_ms));
    job
}

/// The symmetric heap and data segment as this PE sees them, with the library's own blocks.
pub(super) struct Heap {
    pub region: Region,
    pub data: Option<Region>,
    pub alloc: SymAlloc,
    /// The library's blocks (offset, length, what): `ishmem_free` refuses them.
    pub lib_blocks: Vec<(usize, usize, &'static str)>,
    /// The heap offset of the teams' sync areas.
    pub area_base: usize,
    /// Jobs across nodes: the heap offset of finalize's sync area (0 on one node).
    pub fin_area: usize,
    /// Jobs across nodes on the CPU heap: the broadcast rings (`State::bcast_rings`).
    pub bcast_rings: Option<super::BcastRings>,
    pub teams: team::TeamPool,
}

/// The heap: maps the peers' heaps, reserves the library's blocks at the same offsets on every
/// PE (same allocator, same calls), zeroes them on the GPU heap (host heap files start zeroed)
/// and publishes the team pool. On the GPU heap a node barrier then lets the peers in.
pub(super) fn heap(func: &str, j: &Joined, job: &ShmJob, mut gpu: Option<&mut Gpu>, data: Option<(usize, usize)>) -> Heap {
    let cfg = &j.cfg;
    let mut alloc = SymAlloc::new(cfg.symmetric_size);
    let mut lib_blocks = Vec::new();
    let region = match (gpu.as_deref_mut(), &job.gpu_slots) {
        (Some(g), Some(slots)) => {
            g.map_peers(func, slots, &j.members, j.info.size);
            // The library's sync area: the first block, so user blocks start after it.
            if alloc.alloc(cuda::state::SYNC_BYTES, SymAlloc::MIN_ALIGN) != Ok(0) {
                fatal(func, "internal error: the GPU heap's sync area is not at offset 0");
            }
            lib_blocks.push((0, cuda::state::SYNC_BYTES, "the GPU heap's sync area"));
            let peers: Vec<usize> = g.peers().iter().map(|&p| p as usize).collect();
            Region { base: g.heap as usize, len: cfg.symmetric_size, peers: peers.into() }
        }
        _ => Region {
            base: job.heap_bases[j.local_rank],
            len: cfg.symmetric_size,
            peers: by_world(j.info.size, &j.members, &job.heap_bases),
        },
    };
    let gpu = gpu.as_deref();
    // The rings before the team areas, so that the areas stay right before the first user
    // block (as on one node).
    let rings = bcast_rings(j, gpu.is_some(), &mut alloc, &mut lib_blocks);
    let (area_base, fin_area) = sync_areas(func, j, &region, &mut alloc, &mut lib_blocks, gpu);
    let bcast_rings = rings.map(|(base, teams, scratch)| super::BcastRings { area_base, base, teams, scratch });
    let teams = team::TeamPool::with_node(cfg.teams_max, area_base, j.info.rank, j.info.size, &j.members);
    // SAFETY: region is this PE's heap (on gpu when given) with the team areas (and the GPU
    // heap's sync area) reserved and zeroed above; no team is in use yet, and on the GPU heap no
    // peer reads them before the barrier below.
    unsafe { coll::publish_pool(func, region.base, gpu, &teams) };
    if gpu.is_some() {
        job.barrier();
    }
    let data = match (data, &job.data_bases) {
        (Some((base, len)), Some(bases)) => Some(Region { base, len, peers: by_world(j.info.size, &j.members, bases) }),
        _ => None,
    };
    Heap { region, data, alloc, lib_blocks, area_base, fin_area, bcast_rings, teams }
}

/// `ISHMEM_OFI_PROGRESS_WAKE=auto`: whether the progress thread sleeps in the CQ's wait fd
/// (`arrival`) rather than polling on a timer: with a staged heap (its mailbox's requests are
/// served by that thread), in block mode (whose waits sleep in that fd), and where the host
/// runs more than 2 PEs per usable CPU (8 PEs on 2 CPUs: 8 progress threads polling every 20 us
/// took the cores from the PEs: two concurrent `coll quick` runs of 8 PEs on 2 pretend nodes
/// took 3.4-3.6 s against 2.0-2.1 with the fd; at 4 PEs on 2 CPUs the timer was still
/// faster: barrier_all 17.1 -> 15.1 us). Elsewhere the timer, since the fd costs every
/// operation the provider's signal of it (docs/PERFORMANCE.md, "Twelfth round").
pub(super) fn wake_on_arrival(staged: bool, block: bool, host_pes: usize, cpus: usize) -> bool {
    staged || block || (cpus > 0 && host_pes > 2 * cpus)
}

/// Reserves the blocks across nodes (broadcast ring, all-send scratch and relay flags,
/// `team::net_block_bytes`) of the first `team::NET_RING_TEAMS` team slots (jobs across nodes
/// on the CPU heap, where the heap is large enough: `team::net_scratch_for` picks the scratch).
/// The heap file starts zeroed, as they must (`ll.rs`); `coll::reset_area` zeroes a slot's
/// block again for each new team. Returns the heap offset of slot 0's block, the slots that
/// have one and the scratch of each.
fn bcast_rings(
    j: &Joined,
    gpu: bool,
    alloc: &mut SymAlloc,
    lib_blocks: &mut Vec<(usize, usize, &'static str)>,
) -> Option<(usize, usize, usize)> {
    let teams = j.cfg.teams_max.min(team::NET_RING_TEAMS);
    // ISHMEMI_BCAST_RING=0: none (a measuring aid: the team area's slots, as before).
    if !j.multi || gpu || !crate::env::aid_on("ISHMEMI_BCAST_RING") {
        return None;
    }
    let scratch = team::net_scratch_for(j.cfg.symmetric_size, teams)?;
    let len = teams * team::net_block_bytes(scratch);
    // Every PE makes the same calls in the same order, so the offset is the same everywhere;
    // a heap too full for it (impossible this early at the size checked above) does without.
    // At the heap's top: the low offsets stay as they were for the program's large aligned
    // allocations (`memory`'s 2^22..2^29 blocks all fit only while the library's blocks below
    // 4 MiB stay small).
    let base = alloc.alloc_top(len).ok()?;
    crate::heap::reserve::reserve("the broadcast rings and scratch across nodes", base, len).ok()?;
    lib_blocks.push((base, len, "broadcast rings and all-send scratch across nodes (ISHMEM_INFO=1 prints their size)"));
    Some((base, teams, scratch))
}

/// The teams' sync areas and, across nodes, finalize's (apart from the world team's, so that a
/// PE in finalize never completes another PE's barrier_all: `State::final_barrier`): reserved,
/// recorded as library blocks and zeroed on the GPU heap. Returns their offsets.
fn sync_areas(
    func: &str,
    j: &Joined,
    region: &Region,
    alloc: &mut SymAlloc,
    lib_blocks: &mut Vec<(usize, usize, &'static str)>,
    gpu: Option<&Gpu>,
) -> (usize, usize) {
    let (cfg, multi) = (&j.cfg, j.multi);
    let areas = cfg.teams_max * team::AREA_BYTES;
    let area_base = alloc.alloc(areas, SymAlloc::MIN_ALIGN).unwrap_or_else(|e| {
        fatal(
            func,
            &format!(
                "ISHMEM_SYMMETRIC_SIZE ({} bytes) cannot hold the sync areas of ISHMEM_TEAMS_MAX={} teams ({areas} bytes): {e}",
                cfg.symmetric_size, cfg.teams_max
            ),
        )
    });
    let fin_area = if multi {
        alloc.alloc(team::AREA_BYTES, SymAlloc::MIN_ALIGN).unwrap_or_else(|e| {
            fatal(func, &format!("ISHMEM_SYMMETRIC_SIZE ({} bytes) cannot hold finalize's sync area: {e}", cfg.symmetric_size))
        })
    } else {
        0
    };
    for (what, off, len) in
        [("the library's team areas", area_base, areas), ("finalize's sync area", fin_area, if multi { team::AREA_BYTES } else { 0 })]
    {
        crate::heap::reserve::reserve(what, off, len).unwrap_or_else(|e| fatal(func, &e));
    }
    lib_blocks.push((area_base, areas, "team sync areas (ISHMEM_TEAMS_MAX x 12 KiB)"));
    if multi {
        lib_blocks.push((fin_area, team::AREA_BYTES, "finalize's sync area"));
    }
    if let Some(g) = gpu {
        // SAFETY: both ranges were just reserved in this PE's GPU heap (region), which no peer
        // reads before the barrier that follows the team pool's publication.
        unsafe {
            g.memset(func, region.base + area_base, areas);
            if multi {
                g.memset(func, region.base + fin_area, team::AREA_BYTES);
            }
        }
    }
    (area_base, fin_area)
}

/// Jobs across nodes: the network to the PEs of other nodes and the node leaders' liveness
/// connections, set up through the launcher's exchange; then the exchange is closed. None on
/// one node. Across nodes, other nodes reach the GPU heap through the staging mailbox
/// (`core::stage`).
pub(super) fn network(func: &str, j: &mut Joined, heap: &Heap, gpu_heap: bool) -> Option<net::Net> {
    let net = if j.multi {
        let (cfg, nodes, my_node) = (&j.cfg, &j.nodes, j.my_node);
        let x = j.boot.exchange.as_deref_mut().unwrap_or_else(|| fatal(func, "internal error: no exchange"));
        let p = net::NetParams {
            staged: gpu_heap || cfg.ofi_staging_always,
            gpu_heap,
            others: (0..j.info.size).filter(|&q| nodes.node_of[q] != my_node).collect(),
            provider: cfg.ofi_provider.as_deref(),
            me: j.info.rank,
            npes: j.info.size,
            heap: (heap.region.base, heap.region.len),
            data: heap.data.as_ref().map(|d| (d.base, d.len)),
            progress_us: cfg.ofi_progress_us,
            wake_on_arrival: cfg.ofi_wake_on_arrival.unwrap_or_else(|| {
                let staged = gpu_heap || cfg.ofi_staging_always;
                wake_on_arrival(staged, crate::wait::blocking(), nodes.host_size[j.info.rank], super::usable_cpus())
            }),
            watch: probe_targets(j.info.rank, &nodes.members, my_node),
            check_ms: cfg.peer_check_ms.max(100),
            peer_timeout: Duration::from_secs(cfg.peer_timeout_s),
            abort_off: heap.area_base + 8 * team::W_ABORT,
        };
        let n = net::Net::start(x, &p).unwrap_or_else(|e| {
            fatal(func, &format!("the job spans {}; the network between them could not be set up: {e}", nodes.describe()))
        });
        let lp = live::Params {
            me: j.info.rank,
            members: &nodes.members,
            my_node,
            timeout: Duration::from_secs(cfg.bootstrap_timeout_s),
            period: Duration::from_millis(cfg.peer_check_ms),
        };
        live::start(x, &lp).unwrap_or_else(|e| fatal(func, &format!("the job spans {}: {e}", nodes.describe())));
        Some(n)
    } else {
        None
    };
    j.boot.finish();
    net
}

/// The CUDA backend across nodes: kernels reach the PEs of other nodes through the proxy ring
/// (`proxy`, started by api::setup), with bounce buffers in the heap for gets into kernel-stack
/// buffers and the slots' release words (same offset on every PE: same calls). Returns the
/// ring's address.
pub(super) fn proxy_ring(func: &str, gpu: Option<&mut Gpu>, across_nodes: bool, heap: &mut Heap) -> Option<usize> {
    let g = gpu.filter(|_| across_nodes)?;
    // The bounce buffers, then a release word per slot (zeroed: no ticket was released yet).
    let bytes = cuda::state::PROXY_SLOTS * (cuda::state::PROXY_BOUNCE_BYTES + 8);
    let off = heap.alloc.alloc(bytes, SymAlloc::MIN_ALIGN).unwrap_or_else(|e| {
        fatal(func, &format!("ISHMEM_SYMMETRIC_SIZE cannot hold the proxy's bounce buffers and release words ({bytes} bytes): {e}"))
    });
    heap.lib_blocks.push((off, bytes, "proxy bounce buffers and release words"));
    let w = (off as u64).to_ne_bytes();
    // SAFETY: the bounce-offset word of this PE's GPU heap's sync area (written by this PE
    // only, read by its kernels); w is a local of 8 bytes.
    unsafe { g.copy(func, heap.region.base + 8 * cuda::state::SYNC_PROXY_BOUNCE, w.as_ptr() as usize, 8) };
    // SAFETY: the block just allocated in this PE's heap.
    unsafe { g.memset(func, heap.region.base + off, bytes) };
    // The ring (slots and inline areas), then the proxy's staging buffer for device sources.
    Some(g.alloc_proxy_ring(func, cuda::state::PROXY_RING_BYTES + cuda::state::PROXY_STAGE_BYTES))
}

/// The running PE's state, made of what the steps before built.
pub(super) fn assemble(
    j: Joined,
    thread_level: i32,
    heap: Heap,
    job: ShmJob,
    gpu: Option<Gpu>,
    net: Option<net::Net>,
    ring: Option<usize>,
) -> State {
    let Heap { region, data, alloc, lib_blocks, area_base: _, fin_area, bcast_rings, teams } = heap;
    let slots = teams.max();
    State {
        me: j.info.rank,
        npes: j.info.size,
        cfg: j.cfg,
        runtime: j.info.runtime,
        nodes: j.nodes,
        my_node: j.my_node,
        net,
        thread_level,
        alloc: Mutex::new(alloc),
        heap: region,
        data,
        coll_seq: AtomicU64::new(0),
        lib_blocks,
        job: Mutex::new(job),
        job_ptr: std::ptr::null(),
        gpu,
        team_seq: (0..slots).map(|_| AtomicU64::new(0)).collect(),
        team_name: (0..slots).map(|_| AtomicUsize::new(0)).collect(),
        team_name_hash: (0..slots).map(|_| AtomicU64::new(0)).collect(),
        world: teams.slot(0),
        fin_area,
        bcast_rings,
        teams: Mutex::new(teams),
        split_lock: Mutex::new(()),
        sync_plans: Mutex::new(std::collections::HashMap::new()),
        proxy_ring: ring,
    }
}

/// State publication: leaks the state for the life of the process, publishes this PE's heap
/// base, prints the info report (PE 0, `ISHMEM_INFO`), starts serving the staging mailbox, and
/// makes the state visible to every call (`core::state`), with network progress in waits
/// when the job spans nodes.
pub(super) fn publish(func: &str, state: State) -> &'static State {
    let state = Box::leak(Box::new(state));
    state.job_ptr = match state.job.lock() {
        Ok(g) => &*g as *const ShmJob,
        Err(_) => fatal(func, "internal error: job lock poisoned"),
    };
    // Read by the other PEs' ishmem_align only after a memory call's barrier with this PE.
    agree::publish_heap_base(state, func);
    if state.cfg.info && state.me == 0 {
        eprint!("{}", info::info_text(Some(state)));
    }
    queue::stats::enable(state.cfg.queue_stats);
    let state: &'static State = state;
    if let Some(s) = state.net.as_ref().and_then(|n| n.stage.as_ref()) {
        // The mailbox's server applies requests to this heap from now on.
        match &state.gpu {
            Some(g) => {
                // SAFETY: state.heap is this PE's GPU heap of cfg.symmetric_size bytes (the length
                // the stage was made for: `net::NetParams::heap`), never freed before exit.
                if let Err(e) = unsafe { s.serve_gpu(g, state.heap.base) } {
                    if state.cfg.debug {
                        crate::ffi::emit(&format!(
                            "[PE {}] DEBUG: the staging mailbox is not page-locked ({e}): GPU copies to and from it are staged by the driver",
                            state.me
                        ));
                    }
                }
            }
            // SAFETY: state.heap is this PE's mapped host heap of the length the stage was made
            // for (`net::NetParams::heap`), mapped until the process ends.
            None => unsafe { s.serve_host(state.heap.base) },
        }
    }
    STATE.store(state as *const State as *mut State, Release);
    if state.net.is_some() {
        crate::wait::progress_on(true);
    }
    state
}

/// The CUDA backend: loads the library's own kernels before any kernel of the program can wait
/// for this PE (a module load waits for every running kernel: queue::preload), and gives
/// every kernel its view of the heaps before init returns.
pub(super) fn preload(func: &str, state: &'static State) {
    let Some(g) = &state.gpu else { return };
    let t = std::time::Instant::now();
    queue::preload(func, g, state.proxy_ring.is_some());
    if state.cfg.debug {
        crate::ffi::emit(&format!(
            "[PE {}] DEBUG: the library's kernel modules loaded in {:.1} ms",
            state.me,
            t.elapsed().as_secs_f64() * 1e3
        ));
    }
    let failed = cuda::binders::publish(g.dev_state());
    if failed > 0 && state.cfg.debug {
        crate::ffi::emit(&format!(
            "[PE {}] DEBUG: {failed} device-state binder(s) failed; retried at the next barrier, quiet, fence or malloc",
            state.me
        ));
    }
}

/// Jobs across nodes: raises this process's soft limit on open files to its hard limit. A node
/// leader holds one liveness connection per other node and the provider one socket per peer it
/// talks to (tcp: every PE it reads or writes), so the common soft limit of 1,024 is reached
/// near 1,000 nodes at init, and by any PE that reaches about 1,000 others (docs/SCALING.md,
/// issue 29). MPI libraries do the same. The hard limit stays as the administrator set it.
fn raise_fd_limit() {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: r is a writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 && r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: r is a valid rlimit whose soft value does not exceed its hard one.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) };
    }
}

/// The PEs whose silence this PE watches (`net::NetParams::watch`): a node leader probes the
/// leader of the next node (the last node's, the first's), so that every leader is watched by
/// one other and the probes cost each PE O(1) reads and connections whatever the job's size;
/// the other PEs probe nobody (their deaths reach the job through their leader, `live`).
/// Before issue 29 every PE read the leader of every other node every `ISHMEM_PEER_CHECK_MS`:
/// nodes - 1 connections on every PE and every PE of the job connected to each leader.
fn probe_targets(me: usize, members: &[Vec<usize>], my_node: usize) -> Vec<usize> {
    let n = members.len();
    if n < 2 || members[my_node].first() != Some(&me) {
        return Vec::new();
    }
    vec![members[(my_node + 1) % n][0]]
}

/// A table by world PE of the node members' bases (0 for PEs of other nodes).
fn by_world(npes: usize, members: &[usize], local: &[usize]) -> Box<[usize]> {
    let mut v = vec![0usize; npes];
    for (l, &pe) in members.iter().enumerate() {
        v[pe] = local[l];
    }
    v.into()
}
