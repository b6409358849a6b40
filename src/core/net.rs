//! The network reach of the core: PEs on other nodes, through the libfabric transport
//! (`transport::fabric`). Owns the job's `Fabric` once init found several nodes: opening it,
//! registering the symmetric regions, exchanging endpoint names and keys through the launcher's
//! exchange (never shared memory), the progress thread for manual-progress providers, and the
//! mapping of OpenSHMEM AMOs onto libfabric atomics. Errors from the provider end the job with
//! the function, the peer and libfabric's text.
//!
//! AMOs: while a job spans nodes, all AMOs on a word must be atomic with respect to each other.
//! Where the provider applies AMOs in software with the target CPU's atomic instructions
//! (RxM, RxD, sockets, shm; ishmem's own batches too), AMOs to this node's PEs are the CPU's
//! atomics on their mapped memory, as on one node ([`Net::node_amos_local`]); elsewhere (NIC
//! atomics, not atomic with the CPU's) every AMO, to a node peer and to this PE too, goes
//! through the provider, so that one agent, the target's provider, applies them all. Integer AMOs
//! travel as unsigned integers of their width (two's complement makes add, and, or, xor the
//! same bits); floats by their bits (fetch, set, swap only). Where `fi_query_atomic` says the
//! provider lacks an operation on a width, it is emulated by a compare-and-swap loop on the
//! same word (atomic with respect to every other AMO: the provider's, and the CPU's where those
//! are used, since a compare-and-swap fails when anything changed the word in between).
//!
//! Regions: 0 is the symmetric heap, 1 the symmetric data segment (when globals are
//! symmetric) from the program's own data on (`__data_start`: the loader's `.got.plt` that
//! shares its first page is not registered, see [`Net::data_offset`]); every PE registers them
//! in this order, so the ids agree. Each registration has its own random key (see
//! `transport::fabric`), exchanged with the names. When the heap is
//! staged (`core::stage`: the GPU heap, or `ISHMEM_OFI_STAGING=always`), region 0 is the
//! staging mailbox instead, and every operation on the heap of a PE of another node (AMOs
//! too) is a request in that PE's mailbox, applied by its progress thread; AMOs on the heap of
//! a PE of this node then stay on the node (GPU or CPU atomics, as the server's).

use super::stage::{self, Stage};
use crate::bootstrap::Exchange;
use crate::ffi::fatal;
use crate::op::{AmoOp, Rmw};
use crate::transport::fabric::{AtomicKind, AtomicOp, Dtype, Fabric, Options, Remote};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

/// A network operation failed: ends the job naming `func`, unless a PE called
/// `ishmem_global_exit` meanwhile (its PEs leave at once, so operations to them fail before
/// this node hears of it: the word is looked at for up to a second first).
#[cold]
fn net_fatal(func: &str, msg: &str) -> ! {
    let me = crate::core::my_pe_if_running().unwrap_or(0);
    for _ in 0..20 {
        crate::transport::shm::check_global_exit_here(me);
        std::thread::sleep(Duration::from_millis(50));
    }
    crate::transport::shm::check_global_exit_here(me);
    fatal(func, msg)
}

/// The shared-memory file of libfabric's shm provider for this PE's endpoint (`/dev/shm/<name>`,
/// the endpoint name after `fi_shm://`): the provider unlinks it when the endpoint is closed,
/// which never happens (the fabric stays open until the process ends), so the library unlinks
/// it when the process leaves (`remove_provider_files`).
static PROVIDER_FILE: std::sync::OnceLock<std::ffi::CString> = std::sync::OnceLock::new();

fn remember_provider_file(name: &[u8]) {
    if let Some(rest) = name.strip_prefix(b"fi_shm://") {
        let rest: Vec<u8> = rest.iter().copied().take_while(|&b| b != 0).collect();
        if !rest.is_empty() && !rest.contains(&b'/') {
            let mut path = b"/dev/shm/".to_vec();
            path.extend_from_slice(&rest);
            if let Ok(c) = std::ffi::CString::new(path) {
                let _ = PROVIDER_FILE.set(c);
            }
        }
    }
}

/// Unlinks the shm provider's file of this PE, if any (at exit: every path out of an initialized
/// process, clean or not). Peers that mapped it keep their mapping.
pub fn remove_provider_files() {
    if let Some(p) = PROVIDER_FILE.get() {
        // SAFETY: p is a NUL-terminated path; unlink of a missing file fails harmlessly.
        unsafe { libc::unlink(p.as_ptr()) };
    }
}

/// Region ids.
pub const HEAP: usize = 0;
pub const DATA: usize = 1;

/// The longest the progress thread of a manual-progress provider sleeps on the provider's
/// wait fd before it looks at the abort word and its own clock again.
const PROGRESS_WAIT_MAX: Duration = Duration::from_millis(1);

/// The same with a GPU heap, staged: while the PE's kernels run, only this thread serves its
/// mailbox, and requests arriving there do not always wake the wait fd (tcp;ofi_rxm, 2 x H100,
/// issue 23: a kernel's put_signal round trip to another node took 1355-1399 us with 1 ms,
/// 426-463 us with 200 us, 233-250 us with 50 us, against 213-240 us from the host;
/// bench/exp/progress_wait_probe.sh). A host heap staged for tests (`ISHMEM_OFI_STAGING=always`)
/// keeps 1 ms: its PEs serve their mailbox whenever they wait in the library, and the wakeups
/// would cost the CPU-only CI machine cores.
const PROGRESS_WAIT_MAX_GPU: Duration = Duration::from_micros(50);

/// The same in block mode (`wait::blocking`: far more PEs than CPUs), without staging: 64
/// idle progress threads waking every millisecond are 64,000 wakeups (each a provider
/// progress step) a second on the machine's few CPUs.
const PROGRESS_WAIT_MAX_BLOCK: Duration = Duration::from_millis(10);

/// The longest wait of the progress thread: `ISHMEMI_PROGRESS_WAIT_US` microseconds where set
/// (a measuring aid), else by whether the heap is a staged GPU heap.
fn progress_wait_max(gpu_staged: bool) -> Duration {
    let default = if gpu_staged { PROGRESS_WAIT_MAX_GPU } else { PROGRESS_WAIT_MAX };
    std::env::var("ISHMEMI_PROGRESS_WAIT_US")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&us| us > 0)
        .map_or(default, Duration::from_micros)
}

/// The running network side of a PE.
pub struct Net {
    pub fab: Arc<Fabric>,
    /// The region-0 offset of every PE's abort word.
    abort_off: usize,
    /// The staging mailbox, when the heap is staged.
    pub stage: Option<Arc<Stage>>,
    /// The registered part of the data segment region: its offset in the region and length
    /// (`(0, 0)` without symmetric globals), and its address.
    data_part: (usize, usize),
    data_at: usize,
    /// The loader's range left out of it (`.got.plt`), for the error message.
    data_loader: Option<(usize, usize)>,
    stop: Arc<AtomicBool>,
    /// Milliseconds since the thread started after which it stops (u64::MAX: never).
    deadline_ms: Arc<std::sync::atomic::AtomicU64>,
    progress: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    started: std::time::Instant,
    /// Per PE: whether it is on this node (its memory is mapped here, so a put to it is a
    /// store; an AMO to it too where [`Net::node_amos_local`] says so).
    on_node: Vec<bool>,
    /// See [`Net::node_amos_local`].
    node_amos_local: bool,
}

thread_local! {
    /// Whether this thread posted a non-blocking network AMO to a PE of this node since its
    /// last fence or quiet (see [`Net::fence`]).
    static NODE_AMOS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Whether this thread wrote to the provider directly (not through the staging mailbox)
    /// since its last fence: only then does a fence of a staged job need the provider's fence
    /// (which is per thread too).
    static DIRECT_WRITES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What `Net::start` needs from init.
pub struct NetParams<'a> {
    pub provider: Option<&'a str>,
    pub me: usize,
    pub npes: usize,
    /// The local heap and data segment `(base, len)`.
    pub heap: (usize, usize),
    pub data: Option<(usize, usize)>,
    pub progress_us: u64,
    /// Whether the CQ gets a wait fd (`Options::wait_fd`; `ISHMEM_OFI_PROGRESS_WAKE`, whose
    /// auto is decided by `core::start::wake_on_arrival`).
    pub wake_on_arrival: bool,
    /// The PEs this PE probes every `check_ms` (a node leader: the next node's leader, see
    /// `core::start::probe_targets`; others: none, and no probe thread): one whose read completes nothing
    /// for `peer_timeout` has been silent that long, and the job ends saying so (deaths are
    /// told at once by `core::live`'s connections).
    pub watch: Vec<usize>,
    pub check_ms: u64,
    /// `ISHMEM_PEER_TIMEOUT_S`: also the limit of any network operation that completes nothing.
    pub peer_timeout: Duration,
    /// The heap offset of every PE's abort word (`team::W_ABORT` of the world team area).
    pub abort_off: usize,
    /// Stage the heap through the mailbox (`core::stage`); `others` are the PEs of other nodes.
    pub staged: bool,
    /// The heap is GPU memory (staged, served by the progress thread while kernels run).
    pub gpu_heap: bool,
    pub others: Vec<usize>,
}

impl Net {
    /// Opens the provider, registers the regions and exchanges names and keys with every PE
    /// through `x`; returns once every PE can reach every other.
    pub fn start(x: &mut dyn Exchange, p: &NetParams) -> Result<Net, String> {
        // ISHMEMI_OFI_DELIVERY=1 (a measuring aid): every put asks delivery completion instead
        // of quiet's flush read.
        let delivery_per_put = std::env::var("ISHMEMI_OFI_DELIVERY").is_ok_and(|v| v == "1");
        // ISHMEMI_OFI_AMO_BATCH=0 (a measuring aid): every non-fetching AMO is one provider
        // atomic instead of a batch entry (transport/fabric/batch.rs).
        let amo_batch = crate::env::aid_on("ISHMEMI_OFI_AMO_BATCH");
        // ISHMEMI_OFI_DELIVERY_LONE=0 (a measuring aid): a lone put is flushed at quiet too.
        let delivery_lone = crate::env::aid_on("ISHMEMI_OFI_DELIVERY_LONE");
        // ISHMEMI_OFI_AMO_FETCH_MSG=1 (a measuring aid): fetching AMOs as request messages
        // (transport/fabric/batch.rs) instead of the provider's atomics (no gain measured).
        let amo_fetch_msg = std::env::var("ISHMEMI_OFI_AMO_FETCH_MSG").is_ok_and(|v| v == "1");
        // ISHMEMI_OFI_PUT_BOUNCE=<bytes> (a measuring aid): blocking puts up to this size are
        // copied into a registered ring instead of waited for (0: never; default 64 KiB).
        let put_bounce_max = std::env::var("ISHMEMI_OFI_PUT_BOUNCE").ok().and_then(|v| v.parse().ok()).unwrap_or(64 << 10);
        // ISHMEMI_OFI_PUT_SIGNAL_INLINE=0 (a measuring aid): a put with signal is a put, a
        // fence and the signal's AMO, never one batch group.
        let put_signal_inline = crate::env::aid_on("ISHMEMI_OFI_PUT_SIGNAL_INLINE");
        // ISHMEMI_OFI_PUT_BATCH=<bytes> (a measuring aid): puts to other nodes up to this size
        // travel inside the batches of AMOs (transport/fabric/batch.rs; 0: never; default and
        // most 2,016 B).
        let put_batch_max =
            std::env::var("ISHMEMI_OFI_PUT_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(Options::default().put_batch_max);
        // ISHMEMI_OFI_PUT_LONE_PROVIDER=0 (a measuring aid): a lone put goes in a batch too.
        let batch_lone_puts = !crate::env::aid_on("ISHMEMI_OFI_PUT_LONE_PROVIDER");
        // ISHMEMI_OFI_WRITE_COUNTER=1 (a measuring aid): a completion counter counts the
        // writes also where they can be counted without one (transport/fabric `writes_in_cq`).
        let write_counter = std::env::var("ISHMEMI_OFI_WRITE_COUNTER").is_ok_and(|v| v == "1");
        // ISHMEMI_OFI_INJECT=<bytes> (a measuring aid): the inject size asked of the tcp
        // provider (default 128, its most; 0: its default, 64).
        let inject_ask = std::env::var("ISHMEMI_OFI_INJECT").ok().and_then(|v| v.parse().ok()).unwrap_or(Options::default().inject_ask);
        let opts = Options {
            write_counter,
            inject_ask,
            amo_batch,
            batch_lone_puts,
            delivery_lone,
            amo_fetch_msg,
            put_bounce_max,
            put_signal_inline,
            put_batch_max,
            provider: p.provider.map(str::to_owned),
            npes_hint: p.npes,
            stall_timeout: p.peer_timeout,
            delivery_per_put,
            wait_fd: p.wake_on_arrival,
            ..Options::default()
        };
        let fab = Fabric::open_with(&opts)?;
        let stage = if p.staged {
            let lay = stage::Layout::for_job(p.npes, 4, 16 << 20);
            Some(Arc::new(Stage::new(p.me, p.npes, p.heap.1, p.others.clone(), lay)?))
        } else {
            None
        };
        // Region 0: the heap, or the mailbox in its place.
        let (r0, abort_word, abort_off) = match &stage {
            Some(s) => (s.region(), s.abort_word(), stage::ABORT_OFF),
            None => (p.heap, p.heap.0 + p.abort_off, p.abort_off),
        };
        // SAFETY: the heap, the mailbox and the data segment are mapped for the life of the
        // process (never unmapped before the Fabric is dropped at finalize).
        let heap = unsafe { fab.register(r0.0 as *mut u8, r0.1) }?;
        // Region 1: the program's own globals only. The data segment's pages start with the
        // loader's .got.plt (library function addresses, written by the loader): registered,
        // it let anyone holding the key redirect the program's calls.
        let data_loader = crate::heap::segment::main_loader_data();
        let data_part = p.data.map_or((0, 0), |(b, l)| {
            let (s, n) = crate::heap::segment::own_part(b, l, data_loader);
            (s - b, n)
        });
        let data = match p.data {
            // SAFETY: as above (a part of the mapped data segment).
            Some((b, _)) if data_part.1 > 0 => Some(unsafe { fab.register((b + data_part.0) as *mut u8, data_part.1) }?),
            Some(_) => return Err("the program's data segment holds nothing but the loader's .got.plt".into()),
            None => None,
        };
        debug_assert!(heap.id == HEAP && data.is_none_or(|d| d.id == DATA));
        let mut mine = fab.name()?;
        remember_provider_file(&mine);
        let name_len = mine.len() as u64;
        for w in [name_len, heap.key, heap.addr, data.map_or(0, |d| d.key), data.map_or(0, |d| d.addr)] {
            mine.extend_from_slice(&w.to_le_bytes());
        }
        let all = x.allgather("ishmem-ofi", &mine)?;
        let mut names = Vec::with_capacity(p.npes);
        let mut keys = Vec::with_capacity(p.npes);
        for (pe, v) in all.iter().enumerate() {
            let bad = || format!("the network address of PE {pe} is malformed ({} bytes)", v.len());
            if v.len() < 40 {
                return Err(bad());
            }
            let tail = &v[v.len() - 40..];
            let w = |i: usize| u64::from_le_bytes(tail[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
            if w(0) as usize != v.len() - 40 {
                return Err(bad());
            }
            names.push(v[..v.len() - 40].to_vec());
            keys.push([w(1), w(2), w(3), w(4)]);
        }
        fab.insert_peers(&names)?;
        for (pe, k) in keys.iter().enumerate() {
            fab.set_remote(HEAP, pe, k[0], k[1])?;
            if data.is_some() {
                fab.set_remote(DATA, pe, k[2], k[3])?;
            }
        }
        // Nobody sends before every PE has inserted every address and key.
        x.allgather("ishmem-ofi-ready", &[])?;
        let fab = Arc::new(fab);
        let stop = Arc::new(AtomicBool::new(false));
        let deadline_ms = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
        let started = std::time::Instant::now();
        // The thread drives manual-progress providers and probes the other nodes; with
        // automatic progress it only probes.
        let manual = fab.info().data_progress_manual;
        let wait_max = match progress_wait_max(stage.is_some() && p.gpu_heap) {
            // Block mode (far more PEs than CPUs, `wait::blocking`): an arrival wakes the
            // thread through the wait fd; the timeout only bounds the abort word's check.
            d if crate::wait::blocking() && stage.is_none() => d.max(PROGRESS_WAIT_MAX_BLOCK),
            d => d,
        };
        let progress = {
            let (f, s, d) = (fab.clone(), stop.clone(), deadline_ms.clone());
            let st = stage.clone();
            // The mailbox is served by this thread whatever the provider's progress.
            let period = if manual || stage.is_some() {
                Duration::from_micros(p.progress_us.max(1))
            } else {
                Duration::from_millis(p.check_ms.max(1))
            };
            let me = p.me;
            // A test knob (tests/gpu/mock_proxy_serve.c): this thread neither drives the
            // provider nor serves the mailbox, so a PE whose host thread is outside the library
            // is served by its proxy thread alone.
            let serves = std::env::var("ISHMEMI_TEST_PROGRESS_NO_SERVE").as_deref() != Ok("1");
            std::thread::Builder::new()
                .name("ishmem-progress".into())
                .spawn(move || {
                    // Sleeps of a few microseconds, not the default 50 us of timer slack.
                    // SAFETY: PR_SET_TIMERSLACK takes a value and affects this thread only.
                    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
                    while !s.load(Acquire) && (started.elapsed().as_millis() as u64) < d.load(Acquire) {
                        // Manual progress: progress, then sleep until something arrives (or
                        // PROGRESS_WAIT_MAX / period without a wait fd); automatic: sleep.
                        if manual && serves {
                            // A staged heap's mailbox is served by this thread only: it
                            // keeps its period while another thread waits.
                            f.progress_wait(period, wait_max, st.is_none());
                        } else {
                            std::thread::sleep(period);
                        }
                        if let Some(st) = st.as_ref().filter(|_| serves) {
                            st.serve_some(&f, "ishmem progress thread");
                        }
                        // SAFETY: the abort word is an aligned word of this PE's heap, mapped
                        // for the life of the process.
                        let failed = unsafe { std::sync::atomic::AtomicU64::from_ptr(abort_word as *mut u64) }.load(Acquire);
                        if failed != 0 && failed as usize - 1 != me && d.load(Acquire) == u64::MAX {
                            let pe = failed as usize - 1;
                            crate::ffi::exit_after_peer(
                                &format!("[PE {me}] ERROR: ending the job because PE {pe} failed (on another node; see its message)"),
                                pe,
                            );
                        }
                    }
                })
                .ok()
        };
        Self::start_probe(&fab, p, stop.clone(), deadline_ms.clone());
        // ISHMEMI_OFI_NODE_AMO_NET=1 (a measuring aid): AMOs to PEs of this node and to this PE
        // go through the provider even where it applies AMOs with the target CPU's atomics. A
        // GPU heap the provider addressed directly (not staged) would take other nodes' AMOs
        // through the provider's copies, not the CPU's atomics: there everything stays on the
        // provider (a staged heap's AMOs are the node's own, `State::reach_atomic`).
        let node_amos_local = cpu_applies_atomics(&fab.info().provider)
            && !(p.gpu_heap && stage.is_none())
            && !std::env::var("ISHMEMI_OFI_NODE_AMO_NET").is_ok_and(|v| v == "1");
        Ok(Net {
            fab,
            abort_off,
            stage,
            data_part,
            data_at: p.data.map_or(0, |(b, _)| b + data_part.0),
            data_loader,
            stop,
            deadline_ms,
            progress: std::sync::Mutex::new(progress),
            started,
            on_node: {
                let mut v = vec![true; p.npes];
                for &pe in &p.others {
                    if let Some(b) = v.get_mut(pe) {
                        *b = false;
                    }
                }
                v
            },
            node_amos_local,
        })
    }

    /// Whether AMOs to a PE of this node (and to this PE) are the CPU's atomics on its mapped
    /// memory, as on one node, instead of going through the provider. That is atomic with the
    /// AMOs other nodes send only where every one of those is applied by the target's CPU with
    /// its atomic instructions: the providers of [`cpu_applies_atomics`], whose atomics
    /// libfabric runs in software at the target, and ishmem's own batches and fetch requests
    /// (`transport/fabric/batch.rs`), applied with the CPU's atomics too. With NIC atomics (not
    /// atomic with the CPU's) every AMO goes through the provider while the job spans nodes.
    pub fn node_amos_local(&self) -> bool {
        self.node_amos_local
    }

    /// The probe thread: reads one word of each PE of `watch` every `check_ms`. A read
    /// that completes nothing for `peer_timeout` means that PE has been silent that long (it may
    /// be stopped, starved or cut off: its process is not known to be dead, which `core::live`'s
    /// connection tells at once), and the job ends saying so. A read that fails at once (the
    /// provider's error for a peer that went away) is not reported here: the connection of
    /// `core::live` says whether the process ended. The thread is not joined at finalize (a
    /// read may be waiting); it stops reporting then.
    fn start_probe(fab: &Arc<Fabric>, p: &NetParams, stop: Arc<AtomicBool>, deadline_ms: Arc<std::sync::atomic::AtomicU64>) {
        let (f, watch, me, limit) = (fab.clone(), p.watch.clone(), p.me, p.peer_timeout);
        let check = Duration::from_millis(p.check_ms.max(1));
        // (`retire` sets the deadline at finalize.)
        let running = move || !stop.load(Acquire) && deadline_ms.load(Acquire) == u64::MAX;
        if watch.is_empty() {
            return;
        }
        let word = Box::leak(Box::new(0u64)) as *mut u64 as usize;
        let _ = std::thread::Builder::new().name("ishmem-probe".into()).spawn(move || {
            while running() {
                std::thread::sleep(check);
                for &pe in &watch {
                    let t = std::time::Instant::now();
                    // SAFETY: word is 8 bytes that live for the process (a read that failed by
                    // the stall limit may still land later); offset 0 of the heap (or mailbox) is
                    // registered on every PE.
                    let r = f.with_stall_timeout(limit, |f| unsafe { f.get(pe, word as *mut u8, 8, Remote { region: HEAP, offset: 0 }) });
                    if let Err(e) = r {
                        if t.elapsed() >= limit && running() {
                            let secs = limit.as_secs();
                            crate::ffi::exit_after_peer(
                                &format!(
                                    "[PE {me}] ERROR: PE {pe} (another node) has been silent for {secs} s or more (ISHMEM_PEER_TIMEOUT_S={secs}): \
                                     a read of its memory completed nothing ({e}); its process has not ended as far as this PE knows \
                                     (it may be stopped, starved of CPU or cut off from the network); ending the job"
                                ),
                                pe,
                            );
                        }
                    }
                }
            }
        });
    }

    /// The offset in the registered data region (region 1) of `len` bytes at offset `off` of
    /// the data segment region, or why the network cannot reach them: they lie in the loader's
    /// part before the program's own data (`.got.plt`), which is not registered.
    pub fn data_offset(&self, off: usize, len: usize) -> Result<usize, String> {
        let (skip, n) = self.data_part;
        match off.checked_sub(skip) {
            Some(o) if o.checked_add(len).is_some_and(|e| e <= n) => Ok(o),
            _ => Err(format!(
                "is outside the program's own data [{:#x}, {:#x}) (from __data_start), the only part of the \
                 executable's data segment that other nodes can reach{}",
                self.data_at,
                self.data_at + n,
                match self.data_loader {
                    Some((g, l)) => format!(": the loader's .got.plt [{g:#x}, {:#x}) is not registered with the network", g + l),
                    None => String::new(),
                }
            )),
        }
    }

    /// Lets the progress thread run for `grace` more, then stop (finalize: peers may still be
    /// leaving the last barrier and need this PE's provider to answer them).
    pub fn retire(&self, grace: Duration) {
        let at = self.started.elapsed() + grace;
        self.deadline_ms.store(at.as_millis() as u64, Release);
    }

    /// Tells `pes` (the PEs of other nodes) that PE `cause` failed: sets their abort word and
    /// drives the provider for a moment so that the sets leave before this process ends. Best
    /// effort, never fatal, bounded (this runs on the way out).
    pub fn tell(&self, pes: impl Iterator<Item = usize>, cause: usize) {
        let at = Remote { region: HEAP, offset: self.abort_off };
        // A dead peer's posts fail at once here instead of after the stall timeout.
        self.fab.with_stall_timeout(Duration::from_millis(200), |f| {
            for pe in pes {
                let _ = f.atomic(pe, AtomicOp::Write, Dtype::U64, at, cause as u64 + 1);
            }
        });
        for _ in 0..50 {
            self.fab.progress();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops the progress thread now.
    pub fn stop(&mut self) {
        self.stop.store(true, Release);
        let h = self.progress.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }

    /// Completes every outstanding network operation of this PE.
    pub fn quiet(&self, func: &str) {
        if let Some(s) = &self.stage {
            s.quiet(&self.fab, func);
        }
        if let Err(e) = self.fab.quiet() {
            net_fatal(func, &format!("network: {e}"))
        }
        NODE_AMOS.with(|c| c.set(false));
    }

    /// A context's quiet: every put and AMO posted under `t` is complete at its target (with
    /// a staged heap, the mailbox's requests too: they are not told apart by context).
    pub fn quiet_ctx(&self, func: &str, t: &crate::transport::fabric::Tracker) {
        if let Some(s) = &self.stage {
            s.quiet(&self.fab, func);
        }
        if let Err(e) = self.fab.quiet_tracked(t) {
            net_fatal(func, &format!("network: {e}"))
        }
    }

    /// The quiet of finalize after the last barrier: this PE's last writes reach the PEs
    /// still waiting for them; PEs that have left may be gone, so errors are not reported and
    /// the wait is short. The mailbox stops reporting errors of its replies.
    pub fn quiet_final(&self) {
        if let Some(s) = &self.stage {
            s.finishing();
        }
        self.fab.with_stall_timeout(Duration::from_secs(1), |f| {
            let _ = f.quiet();
        });
    }

    /// Orders the calling thread's earlier puts and AMOs before its later ones, per target.
    /// Network operations are ordered by the provider's fence (and the mailbox's). A
    /// non-blocking AMO to a PE of this node is the one case the provider cannot order: the
    /// next put to that PE is a store into mapped memory, which the provider never sees. So
    /// when this thread has posted such an AMO since its last fence or quiet, the fence waits
    /// until every write outstanding is complete (non-fetching AMOs ask delivery completion:
    /// complete means applied at the target). With the staging mailbox, staged requests are
    /// applied in order and a direct operation after the fence waits for the staged ones
    /// before it (`wait_fenced`); the provider's fence (a wait for every outstanding write
    /// where the provider neither orders writes nor has FI_FENCE) is needed only when a direct
    /// write was issued since the last fence.
    pub fn fence(&self, func: &str) {
        let provider = match &self.stage {
            Some(s) => {
                s.fence();
                DIRECT_WRITES.with(|c| c.replace(false))
            }
            None => true,
        };
        if provider {
            self.fab.fence();
        }
        if NODE_AMOS.with(|c| c.replace(false)) {
            if let Err(e) = self.fab.settle_amos().and_then(|()| self.fab.complete_local()) {
                fatal(func, &format!("network: waiting for AMOs to PEs of this node: {e}"))
            }
        }
    }

    /// After a non-blocking AMO to `pe` was posted: remembers it for [`Net::fence`] when `pe`
    /// is on this node.
    #[inline]
    fn posted_amo(&self, pe: usize) {
        // (A context's AMO asks delivery completion, which its own quiet and fence wait for.)
        if self.on_node.get(pe).copied().unwrap_or(false) && !crate::transport::fabric::tracked() {
            NODE_AMOS.with(|c| c.set(true));
        }
    }

    /// Notes a write to the provider that bypasses the mailbox (see `fence`).
    #[inline]
    fn direct(&self) {
        if self.stage.is_some() {
            DIRECT_WRITES.with(|c| c.set(true));
        }
    }

    /// The mailbox when `at` is on the staged heap; before a direct operation on another
    /// region, the staged requests before the last fence are waited for.
    #[inline]
    fn staged(&self, func: &str, pe: usize, at: Remote) -> Option<&Stage> {
        let s = self.stage.as_deref()?;
        if at.region == HEAP {
            return Some(s);
        }
        s.wait_fenced(&self.fab, func, pe);
        None
    }

    /// A put of `n` bytes from local `src` (complete at quiet).
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes until the call returns.
    pub unsafe fn put(&self, func: &str, pe: usize, src: *const u8, n: usize, at: Remote) {
        // The source is free on return: small puts are injected, staged ones copied, others
        // copied into the provider's ring or waited for (`Fabric::put_blocking`).
        // SAFETY: forwarded contract.
        unsafe { self.put_with(func, pe, src, n, at, true, true) };
    }

    /// A blocking put that a collective's `flag` (or flag-in-data message) to `pe` follows:
    /// never inside a batch (`Fabric::put_batched`), so that the provider's write order keeps
    /// it before the flag without a wait.
    ///
    /// # Safety
    /// As `put`.
    pub unsafe fn put_before_flag(&self, func: &str, pe: usize, src: *const u8, n: usize, at: Remote) {
        // SAFETY: forwarded contract.
        unsafe { self.put_with(func, pe, src, n, at, true, false) };
    }

    /// A put of `n` bytes from local `src` that may still read `src` until the next quiet.
    ///
    /// # Safety
    /// `src` must be readable, and unchanged, for `n` bytes until the next quiet.
    pub unsafe fn put_nbi(&self, func: &str, pe: usize, src: *const u8, n: usize, at: Remote) {
        // SAFETY: forwarded contract.
        unsafe { self.put_with(func, pe, src, n, at, false, true) };
    }

    /// A put and its signal update in one network operation where the provider's path allows
    /// it (`Fabric::put_signal`): `false` when not (the caller puts, fences and updates).
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes until the call returns.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_signal(
        &self,
        func: &str,
        pe: usize,
        src: *const u8,
        n: usize,
        at: Remote,
        sig_at: Remote,
        signal: u64,
        add: bool,
    ) -> bool {
        if self.stage.is_some() {
            return false; // the mailbox's requests carry no signal
        }
        // SAFETY: forwarded contract.
        match unsafe { self.fab.put_signal(pe, src, n, at, sig_at, signal, add) } {
            Ok(sent) => sent,
            Err(e) => net_fatal(func, &format!("network put with signal of {n} bytes to PE {pe}: {e}")),
        }
    }

    /// `put` (`blocking`: `src` free on return) or `put_nbi`; `batch`: small ones may travel
    /// inside a batch of the provider's messages (`Fabric::put_batched`).
    ///
    /// # Safety
    /// As `put` or `put_nbi`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn put_with(&self, func: &str, pe: usize, src: *const u8, n: usize, at: Remote, blocking: bool, batch: bool) {
        if let Some(s) = self.staged(func, pe, at) {
            // SAFETY: forwarded contract (the mailbox copies the source before it returns).
            return unsafe { s.put(&self.fab, func, pe, src, n, at.offset) };
        }
        self.direct();
        if let Some(g) = self.stage.as_ref().and_then(|s| s.device_local(src as usize, n)) {
            // A device source: through a host buffer, read by the provider before return.
            let mut b = vec![0u8; n];
            // SAFETY: b is writable for n bytes; src is readable for n bytes per the caller.
            unsafe { g.copy(func, b.as_mut_ptr() as usize, src as usize, n) };
            // SAFETY: b is readable for n bytes until the wait below returns.
            let r = unsafe { self.fab.put(pe, b.as_ptr(), n, at) }.and_then(|_| self.fab.wait_local_writes());
            if let Err(e) = r {
                net_fatal(func, &format!("network put of {n} bytes to PE {pe}: {e}"))
            }
            return;
        }
        // SAFETY: forwarded contract (the binding injects small sources or copies them into a
        // batch, registers or bounces the others for the life of the operation; a blocking one
        // is free on return).
        let r = unsafe {
            if batch
                && self
                    .fab
                    .put_batched(pe, src, n, at)
                    .unwrap_or_else(|e| net_fatal(func, &format!("network put of {n} bytes to PE {pe}: {e}")))
            {
                Ok(())
            } else if blocking {
                self.fab.put_blocking(pe, src, n, at)
            } else {
                self.fab.put(pe, src, n, at)
            }
        };
        if let Err(e) = r {
            net_fatal(func, &format!("network put of {n} bytes to PE {pe}: {e}"))
        }
    }

    /// A blocking get into a device buffer, through a host buffer.
    ///
    /// # Safety
    /// `dst` must be device memory of `g`'s context, writable for `n` bytes.
    unsafe fn get_to_device(&self, func: &str, g: &crate::transport::cuda::Gpu, pe: usize, dst: *mut u8, n: usize, at: Remote) {
        let mut b = vec![0u8; n];
        // SAFETY: b is writable for n bytes.
        if let Err(e) = unsafe { self.fab.get(pe, b.as_mut_ptr(), n, at) } {
            net_fatal(func, &format!("network get of {n} bytes from PE {pe}: {e}"))
        }
        // SAFETY: dst is writable for n bytes per the caller; b holds n bytes.
        unsafe { g.copy(func, dst as usize, b.as_ptr() as usize, n) };
    }

    /// A collective's flag: an 8-byte put of `v`, ordered after this PE's earlier puts to
    /// `pe` (behind a fence where the provider does not order writes), which quiet does not
    /// flush (see `Fabric::put_flag`).
    pub fn flag(&self, func: &str, pe: usize, at: Remote, v: u64) {
        if let Some(s) = self.staged(func, pe, at) {
            // A staged heap: a request, served in order after the earlier ones.
            // SAFETY: v is a local of 8 bytes, copied into the outbox before return.
            return unsafe { s.put(&self.fab, func, pe, &v as *const u64 as *const u8, 8, at.offset) };
        }
        self.direct();
        if let Err(e) = self.fab.put_flag(pe, v, at) {
            net_fatal(func, &format!("network put of a collective's flag to PE {pe}: {e}"))
        }
    }

    /// A collective's flag-in-data message (`core::coll::ll`): a put of `n` bytes that quiet
    /// does not flush, ordered after this PE's earlier puts to `pe` as `flag` is. Returns
    /// whether the network still reads `src` (`Fabric::put_message`: only past the put ring's
    /// bounce size), until `complete_local` returns.
    ///
    /// # Safety
    /// `src` must be readable for `n` bytes until the call returns, and, when it returns true,
    /// unchanged until `complete_local` returns.
    pub unsafe fn flag_bytes(&self, func: &str, pe: usize, src: *const u8, n: usize, at: Remote) -> bool {
        if let Some(s) = self.staged(func, pe, at) {
            // SAFETY: forwarded contract (the mailbox copies the source before it returns).
            unsafe { s.put(&self.fab, func, pe, src, n, at.offset) };
            return false;
        }
        self.direct();
        // SAFETY: forwarded contract.
        match unsafe { self.fab.put_message(pe, src, n, at) } {
            Ok(lent) => lent,
            Err(e) => net_fatal(func, &format!("network put of a collective's message to PE {pe}: {e}")),
        }
    }

    /// Makes the next quiet also deliver this PE's earlier flags to `pe` (see
    /// `Fabric::flush_at_next_quiet`; staged flags are requests, which quiet waits for).
    pub fn flush_flags_to(&self, pe: usize) {
        self.fab.flush_at_next_quiet(pe);
    }

    /// Waits until every put issued so far completed locally (their sources are free).
    pub fn complete_local(&self, func: &str) {
        if let Err(e) = self.fab.complete_local() {
            net_fatal(func, &format!("network: {e}"))
        }
    }

    /// Puts longer than this read their source until they complete locally.
    pub fn inject_size(&self) -> usize {
        self.fab.info().inject_size
    }

    /// Whether collectives may send flag-in-data messages (`core::coll::ll`) through this
    /// provider: a message lands in a slot that is zeroed and reused, so it needs each write
    /// applied at its target exactly once. Not on the sockets provider (libfabric 1.17): under
    /// load it applied an RMA write's data at the target a second time, after the reader had
    /// taken the message and zeroed the slot (a whole message of count c-2 reappeared there; a
    /// decoded block was overwritten by its own wire bytes: docs/PERFORMANCE.md, "Seventh
    /// round"), which turned into wrong reduction results; tcp;ofi_rxm showed none under the
    /// same stress. There the data-and-flag form is used, whose slot is not decided by marks.
    pub fn flag_in_data_ok(&self) -> bool {
        self.fab.info().provider != "sockets"
    }

    /// A blocking get of `n` bytes into local `dst`.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes.
    pub unsafe fn get(&self, func: &str, pe: usize, dst: *mut u8, n: usize, at: Remote) {
        if let Some(s) = self.staged(func, pe, at) {
            // SAFETY: forwarded contract.
            return unsafe { s.get(&self.fab, func, pe, dst, n, at.offset) };
        }
        if let Some(g) = self.stage.as_ref().and_then(|s| s.device_local(dst as usize, n)) {
            // SAFETY: dst is writable for n bytes (forwarded contract) and device memory of g
            // (device_local).
            return unsafe { self.get_to_device(func, g, pe, dst, n, at) };
        }
        // SAFETY: forwarded contract.
        if let Err(e) = unsafe { self.fab.get(pe, dst, n, at) } {
            net_fatal(func, &format!("network get of {n} bytes from PE {pe}: {e}"))
        }
    }

    /// A get of `n` bytes into local `dst` that completes by the next quiet.
    ///
    /// # Safety
    /// `dst` must be writable for `n` bytes, and not otherwise accessed, until the next quiet.
    pub unsafe fn get_nbi(&self, func: &str, pe: usize, dst: *mut u8, n: usize, at: Remote) {
        if crate::transport::fabric::tracked() {
            // A context's nbi get completes before it returns (its quiet then has none to wait
            // for; the shared nbi-get accounting is the default context's).
            // SAFETY: forwarded contract.
            return unsafe { self.get(func, pe, dst, n, at) };
        }
        if let Some(s) = self.staged(func, pe, at) {
            // SAFETY: forwarded contract (complete at return).
            return unsafe { s.get(&self.fab, func, pe, dst, n, at.offset) };
        }
        if let Some(g) = self.stage.as_ref().and_then(|s| s.device_local(dst as usize, n)) {
            // SAFETY: dst is writable for n bytes (forwarded contract) and device memory of g
            // (device_local).
            return unsafe { self.get_to_device(func, g, pe, dst, n, at) };
        }
        // SAFETY: forwarded contract.
        if let Err(e) = unsafe { self.fab.get_nbi(pe, dst, n, at) } {
            net_fatal(func, &format!("network get of {n} bytes from PE {pe}: {e}"))
        }
    }

    fn dtype(func: &str, width: usize) -> Dtype {
        match width {
            1 => Dtype::U8,
            2 => Dtype::U16,
            4 => Dtype::U32,
            8 => Dtype::U64,
            w => fatal(func, &format!("internal error: no network atomic of {w} bytes")),
        }
    }

    fn failed(func: &str, what: &str, pe: usize, e: String) -> ! {
        net_fatal(func, &format!("network atomic {what} on PE {pe}: {e}"))
    }

    /// Compare-and-swap: stores `value` where the word equals `cond`; returns the old value.
    pub fn cas(&self, func: &str, pe: usize, at: Remote, width: usize, cond: u64, value: u64) -> u64 {
        if let Some(s) = self.staged(func, pe, at) {
            return s.amo(&self.fab, func, pe, at.offset, width, AmoOp::Cas, value, cond, true);
        }
        let dt = Self::dtype(func, width);
        self.fab.compare_atomic(pe, AtomicOp::Cswap, dt, at, cond, value).unwrap_or_else(|e| Self::failed(func, "compare-swap", pe, e))
    }

    /// Applies `f` to the word by a compare-and-swap loop (the emulation of an operation the
    /// provider lacks); returns the old value.
    fn emulate(&self, func: &str, pe: usize, at: Remote, width: usize, f: impl Fn(u64) -> u64) -> u64 {
        let dt = Self::dtype(func, width);
        if !self.fab.atomic_valid(AtomicOp::Cswap, dt, AtomicKind::Compare) {
            fatal(
                func,
                &format!("provider {} has no compare-swap on {width}-byte words to emulate this AMO with", self.fab.info().provider),
            );
        }
        let mask = if width == 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
        let mut old = self.fetch(func, pe, at, width);
        loop {
            let seen = self.cas(func, pe, at, width, old, f(old) & mask);
            if seen == old {
                return old;
            }
            old = seen;
        }
    }

    /// Atomic read.
    pub fn fetch(&self, func: &str, pe: usize, at: Remote, width: usize) -> u64 {
        if let Some(s) = self.staged(func, pe, at) {
            return s.amo(&self.fab, func, pe, at.offset, width, AmoOp::Fetch, 0, 0, true);
        }
        let dt = Self::dtype(func, width);
        if self.fab.atomic_valid(AtomicOp::Read, dt, AtomicKind::Fetch) {
            return self.fab.fetch_atomic(pe, AtomicOp::Read, dt, at, 0).unwrap_or_else(|e| Self::failed(func, "fetch", pe, e));
        }
        // A compare-swap that never matches (or matches with the same value) returns the word.
        self.cas(func, pe, at, width, 0, 0)
    }

    /// Atomic write (non-blocking: complete at quiet, ordered by fence).
    pub fn set(&self, func: &str, pe: usize, at: Remote, width: usize, value: u64) {
        if let Some(s) = self.staged(func, pe, at) {
            s.amo(&self.fab, func, pe, at.offset, width, AmoOp::Set, value, 0, false);
            return;
        }
        self.direct();
        let dt = Self::dtype(func, width);
        if self.fab.atomic_valid(AtomicOp::Write, dt, AtomicKind::Write) {
            if let Err(e) = self.fab.atomic(pe, AtomicOp::Write, dt, at, value) {
                Self::failed(func, "set", pe, e)
            }
            self.posted_amo(pe);
            return;
        }
        self.emulate(func, pe, at, width, |_| value);
    }

    /// Atomic swap: returns the old value.
    pub fn swap(&self, func: &str, pe: usize, at: Remote, width: usize, value: u64) -> u64 {
        if let Some(s) = self.staged(func, pe, at) {
            return s.amo(&self.fab, func, pe, at.offset, width, AmoOp::Swap, value, 0, true);
        }
        let dt = Self::dtype(func, width);
        if self.fab.atomic_valid(AtomicOp::Write, dt, AtomicKind::Fetch) {
            return self.fab.fetch_atomic(pe, AtomicOp::Write, dt, at, value).unwrap_or_else(|e| Self::failed(func, "swap", pe, e));
        }
        self.emulate(func, pe, at, width, |_| value)
    }

    pub fn fetch_rmw(&self, func: &str, pe: usize, at: Remote, width: usize, r: Rmw, v: u64) -> u64 {
        if let Some(s) = self.staged(func, pe, at) {
            return s.amo(&self.fab, func, pe, at.offset, width, r.amo(), v, 0, true);
        }
        let dt = Self::dtype(func, width);
        let op = AtomicOp::from(r);
        if self.fab.atomic_valid(op, dt, AtomicKind::Fetch) {
            return self.fab.fetch_atomic(pe, op, dt, at, v).unwrap_or_else(|e| Self::failed(func, "fetch-op", pe, e));
        }
        self.emulate(func, pe, at, width, |old| r.apply(old, v))
    }

    /// Non-fetching read-modify-write (non-blocking where the provider has it).
    pub fn rmw(&self, func: &str, pe: usize, at: Remote, width: usize, r: Rmw, v: u64) {
        if let Some(s) = self.staged(func, pe, at) {
            s.amo(&self.fab, func, pe, at.offset, width, r.amo(), v, 0, false);
            return;
        }
        self.direct();
        let dt = Self::dtype(func, width);
        let op = AtomicOp::from(r);
        if self.fab.atomic_valid(op, dt, AtomicKind::Write) {
            if let Err(e) = self.fab.atomic(pe, op, dt, at, v) {
                Self::failed(func, "op", pe, e)
            }
            self.posted_amo(pe);
            return;
        }
        self.fetch_rmw(func, pe, at, width, r, v);
    }

    /// How other nodes reach the heap, for `ISHMEM_INFO`.
    pub fn heap_path(&self) -> String {
        match &self.stage {
            None => "direct (the provider reads and writes the registered heap)".into(),
            Some(s) => {
                let l = s.layout();
                format!(
                    "staged (requests in the target's mailbox, applied by its progress thread; heap AMOs to PEs of this node stay on the node; {} slots of {} KiB per peer, {} KiB mailbox)",
                    l.slots,
                    l.pay >> 10,
                    l.bytes() >> 10
                )
            }
        }
    }

    /// Which path each AMO takes on this provider, for `ISHMEM_INFO` and the docs.
    pub fn amo_paths(&self) -> String {
        let mut native = Vec::new();
        let mut emulated = Vec::new();
        for (name, op, kind) in [
            ("fetch", AtomicOp::Read, AtomicKind::Fetch),
            ("set", AtomicOp::Write, AtomicKind::Write),
            ("swap", AtomicOp::Write, AtomicKind::Fetch),
            ("compare_swap", AtomicOp::Cswap, AtomicKind::Compare),
            ("fetch_add", AtomicOp::Sum, AtomicKind::Fetch),
            ("add", AtomicOp::Sum, AtomicKind::Write),
            ("fetch_and/or/xor", AtomicOp::Band, AtomicKind::Fetch),
        ] {
            for (w, dt) in [(4, Dtype::U32), (8, Dtype::U64)] {
                let s = format!("{name}/{}", 8 * w);
                if self.fab.atomic_valid(op, dt, kind) {
                    native.push(s)
                } else {
                    emulated.push(s)
                }
            }
        }
        format!(
            "native: {}; emulated by compare-swap: {}",
            if native.is_empty() { "none".into() } else { native.join(" ") },
            if emulated.is_empty() { "none".into() } else { emulated.join(" ") }
        )
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether `provider` (as `fi_info` names it) applies remote atomics in software at the
/// target, with the target CPU's atomic instructions (libfabric's `ofi_atomic` handlers, built
/// on the compiler's atomic builtins): the RxM utility provider over any core provider (it sends
/// every AMO as a message and applies it in the target's progress), RxD, sockets and shm.
/// Providers with NIC atomics (cxi, verbs without RxM, psm3, efa, ...) are not listed.
pub fn cpu_applies_atomics(provider: &str) -> bool {
    provider == "sockets" || provider == "shm" || provider.split(';').any(|layer| layer == "ofi_rxm" || layer == "ofi_rxd")
}

#[cfg(test)]
mod tests {
    use super::cpu_applies_atomics;

    #[test]
    fn providers_whose_atomics_are_the_target_cpus() {
        for p in ["tcp;ofi_rxm", "verbs;ofi_rxm", "udp;ofi_rxd", "sockets", "shm"] {
            assert!(cpu_applies_atomics(p), "{p}");
        }
        for p in ["cxi", "verbs", "psm3", "efa", "tcp", "opx", "ofi_rxmx", "shm;x"] {
            assert!(!cpu_applies_atomics(p), "{p}");
        }
    }
}
