//! The one table of `ISHMEM_*` environment variables (name, kind, default, doc) and their
//! parsers. Plain std-only code: the generator includes this file by path to write
//! `docs/ENV.md`, `ishmem-info` prints it, and init parses it once into `Config`.
//! It must not touch the runtime state.

use std::collections::HashMap;

/// How a variable's value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `0/1`, `yes/no`, `true/false`, `on/off`.
    Bool,
    /// A byte count with an optional K, M, G or T suffix (powers of 1024).
    Bytes,
    /// A non-negative integer.
    Count,
    /// Free text from a fixed list or a path.
    Text,
}

/// One environment variable.
#[derive(Debug, Clone, Copy)]
pub struct Var {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub doc: &'static str,
}

/// The longest `ISHMEM_BOOTSTRAP_TIMEOUT` (seconds, about 11.5 days): deadlines stay far from
/// what `Instant` can hold.
pub const MAX_BOOTSTRAP_TIMEOUT: u64 = 1_000_000;

/// Every variable the library reads. Keep sorted by name.
pub const VARS: &[Var] = &[
    Var { name: "ISHMEM_BCAST_SCATTER_MIN", kind: Kind::Bytes, default: "1M",
          doc: "Host broadcasts of at least this many bytes in teams of 3 or more PEs scatter the root's data (each PE pulls one slice from the root) and then gather the slices from each other; smaller ones pull everything from the root. Every PE must use the same value." },
    Var { name: "ISHMEM_BOOTSTRAP", kind: Kind::Text, default: "auto",
          doc: "How PEs find each other: `auto` (from the environment: ishmrun, PMIx (OpenMPI's mpirun, `srun --mpi=pmix`), PMI-1 (MPICH's mpiexec, `srun --mpi=pmi2`), else a job of 1 PE), `ishmrun`, `pmix`, `pmi1` or `singleton`. The unique-id init of `ishmemx_init_attr` ignores it." },
    Var { name: "ISHMEM_BOOTSTRAP_TIMEOUT", kind: Kind::Count, default: "60",
          doc: "Seconds that `ishmem_init` waits for every PE of the job to arrive before it fails and names the missing PEs (1 to 1000000)." },
    Var { name: "ISHMEM_BOOTSTRAP_UID_ADDR", kind: Kind::Text, default: "auto",
          doc: "Unique-id init: the address (`ip` or `ip:port`) on which `ishmemx_get_uniqueid` listens for the job's rendezvous; it travels inside the id, so it must be reachable from every PE. `auto`: the host's first non-loopback IPv4 address (127.0.0.1 where there is none)." },
    Var { name: "ISHMEM_COLL_CHECK_MS", kind: Kind::Count, default: "100",
          doc: "A PE that has waited inside a host collective for a while (team syncs, barriers, broadcasts, reductions, splits...) reads, every this many milliseconds, which collective the other PEs of the team are in (in teams of more than 8 PEs: those of its own node and, of other nodes, those 1, 2, 4, 8... places before and after it, so that a check costs O(log n) network reads); when a PE is in the same call (by count on the team) with a different operation, size, root or split, twice in a row, the job ends with an error naming both calls, instead of hanging or mixing data. After 600 checks of one wait (60 s by default) it also prints, once, the call each team PE last recorded (a program whose PEs make different numbers of collective calls waits for ever: no count matches them up). 0: never." },
    Var { name: "ISHMEM_COLL_SMALL_MAX", kind: Kind::Bytes, default: "4K",
          doc: "Host collectives of teams of 2 to 64 PEs on the CPU backend with at most this many bytes per PE (broadcast: the block, fcollect and alltoall: each PE's block, reductions and scans: the vector, also at most 6 KiB / (2 x team size), in 64-byte units, or 16-byte units from 49 PEs (48 bytes at 64); fcollect and alltoall blocks up to that size and broadcasts up to 1 KiB go through scratch slots with no wait for the receiver; collect, whose sizes differ per PE, always takes the push path in teams of up to 48 PEs when this is not 0) push their data into the other PEs' memory followed by a flag, with no barrier before or after; larger ones synchronize the team before and after reading. 0: every collective synchronizes. Every PE must use the same value." },
    Var { name: "ISHMEM_COLL_TREE_MIN", kind: Kind::Count, default: "16",
          doc: "Host collectives of teams across nodes (CPU backend) with at least this many PEs take O(log n) tree algorithms (docs/SCALING.md): broadcasts below `ISHMEM_BCAST_SCATTER_MIN` bytes that do not take the push path of `ISHMEM_COLL_SMALL_MAX` (binomial tree from the root), reductions below `ISHMEM_REDUCE_SCATTER_MIN` bytes or of fewer elements than PEs (up a binomial tree, the result down it), scans under the same condition (subtree totals up the tree, each PE's prefix down it), fcollect of less than `ISHMEM_BCAST_SCATTER_MIN` bytes in all, and collect (broadcasts end with a team sync, scans with the flag down, the others with acknowledgements up one level of the tree). Smaller teams keep the push and synchronized forms, which cost one message per member. The default 16 is measured (docs/SCALING.md: on 2 cores with 16 to 64 PEs the tree reductions and fcollects took 2 to 10 times less than the push forms; at 8 PEs the result was mixed). 0: never. Every PE must use the same value." },
    Var { name: "ISHMEM_DEBUG", kind: Kind::Bool, default: "0",
          doc: "Extra checks and messages: a `WARNING` line saying why a call failed that reports it by its return value (`ishmem_malloc`/`ishmem_align` returning NULL, a team split returning nonzero, `ishmem_init_thread`, `ishmemx_cumodule_init`), prints each PE's mapping at init." },
    Var { name: "ISHMEM_GPU", kind: Kind::Text, default: "auto",
          doc: "Backend choice: `auto` (the symmetric heap is GPU memory when the CUDA driver loads and a device is visible, else host memory), `0` (CPU backend, CUDA is never touched), `1` (require a GPU: init fails when none can be used). `ishmemx_attr_t.gpu = false` also selects the CPU backend. Every PE of a job must end up on the same backend." },
    Var { name: "ISHMEM_GPU_DEVICE", kind: Kind::Text, default: "auto",
          doc: "CUDA device ordinal of this PE (as numbered after `CUDA_VISIBLE_DEVICES`). `auto`: the device of the CUDA context current on the thread calling init (after `cudaSetDevice`), else the node-local rank modulo the number of visible devices. Several PEs may share one GPU." },
    Var { name: "ISHMEM_INFO", kind: Kind::Bool, default: "0",
          doc: "PE 0 prints the version, backend, bootstrap and every variable with its value at init." },
    Var { name: "ISHMEM_NODE_SPLIT", kind: Kind::Count, default: "0",
          doc: "Testing: cut the PEs of each node into this many pretend nodes of consecutive ranks (0 or 1: off). PEs of different pretend nodes are treated as on different machines: they meet through the launcher's exchange only and reach each other through libfabric (`ishmem_ptr` to them is NULL). Every PE must use the same value." },
    Var { name: "ISHMEM_NT_COPY_MIN", kind: Kind::Bytes, default: "16M",
          doc: "CPU backend: puts, gets and collective copies of at least this many bytes, between buffers equally aligned modulo 16 bytes, use non-temporal stores (no read of the destination into the cache; about 1.7x faster than `memcpy` at 64 MiB on a 2-core VM, slower below about 16 MiB, where the buffers stay in cache). 0: never." },
    Var { name: "ISHMEM_OFI_PROGRESS_US", kind: Kind::Count, default: "20",
          doc: "Jobs across nodes on a provider with manual progress (`tcp;ofi_rxm`): the shortest period in microseconds of the progress thread that lets the provider serve other PEs' puts, gets and AMOs aimed at this PE while it computes, where it polls on a timer (`ISHMEM_OFI_PROGRESS_WAKE=timer`, the default with at most 2 PEs per CPU: the period grows to 1 ms while the polls find nothing); where it sleeps in the completion queue's wait fd (`arrival`) it wakes when something arrives, at the latest after 1 ms, or 50 us when the GPU heap is staged (requests arriving in the staging mailbox do not always wake it). While a thread of the PE drives the provider itself, the progress thread stays out of the provider and off its wait fd and looks again every 1 ms: while another thread waits for its own network operations (a quiet, a blocking get or AMO), and while a library wait (a barrier, `wait_until`, a collective's flag) polls, before it reaches its sleeping phase, and for 1 ms after either ended, since a PE that communicates and waits in a loop drives the provider again sooner than the thread would help (not where the machine runs more PEs than CPUs, whose waits yield at once, and not with a staged heap, whose mailbox only this thread serves). The `sockets` provider gets `FI_SOCKETS_PE_WAITTIME=1` unless it is set: its own progress thread would otherwise spin for 10 ms after every operation (and at 0 the provider of libfabric 1.17 sometimes applied an RMA write twice under load: docs/PERFORMANCE.md, \"Seventh round\")." },
    Var { name: "ISHMEM_OFI_PROGRESS_WAKE", kind: Kind::Text, default: "auto",
          doc: "Jobs across nodes on a provider with manual progress (`tcp;ofi_rxm`): how the progress thread learns that other PEs' operations arrived for this PE while it computes. `timer`: it polls the provider, every `ISHMEM_OFI_PROGRESS_US` while its polls find work, backing off to every 1 ms while they find none (a request to a PE that has computed for a while waits up to 1 ms, later ones `ISHMEM_OFI_PROGRESS_US`). `arrival`: the provider's completion queue gets a wait fd and the thread sleeps in it until something arrives (served at once); the provider then signals that fd on every operation, which on `tcp;ofi_rxm` adds about 0.75 us to a get's round trip and 1.2 us to a fetching AMO's (docs/PERFORMANCE.md, \"Twelfth round\"). `auto`: `arrival` where the machine runs more than 2 PEs per usable CPU (polling threads would take the cores from the PEs; in block mode the waits sleep in that fd too) or the heap is staged (GPU heap), else `timer`. Either way a PE waiting in the library drives the provider itself." },
    Var { name: "ISHMEM_OFI_PROVIDER", kind: Kind::Text, default: "auto",
          doc: "Jobs across nodes: the libfabric provider, as `fi_info -p` names it (`tcp;ofi_rxm`, `sockets`, `verbs;ofi_rxm`, `cxi`, `psm3`, ...). `auto`: the first provider offering reliable datagram endpoints (FI_EP_RDM) with RMA and atomics. libfabric (`libfabric.so.1`) is loaded at run time, only when the job spans nodes. Prefer `tcp;ofi_rxm` over `sockets` (deprecated upstream): under load the sockets provider of libfabric 1.17 was seen to apply an RMA write at its target a second time, which can turn a collective's result wrong; ishmem's collectives avoid their flag-in-data form there, which narrows but cannot close that window (docs/PERFORMANCE.md, \"Seventh round\")." },
    Var { name: "ISHMEM_OFI_STAGING", kind: Kind::Text, default: "auto",
          doc: "Jobs across nodes: how PEs of other nodes reach this PE's symmetric heap. `auto`: the provider reads and writes it directly when it can address it (host memory), else (the CUDA backend's GPU heap) through the staging mailbox: the request goes into a registered host buffer of the target, whose progress thread applies it to the heap with GPU copies and GPU atomics and answers. `always`: the mailbox for every heap (tests the staged path on CPUs). Every PE must use the same value." },
    Var { name: "ISHMEM_PEER_CHECK_MS", kind: Kind::Count, default: "100",
          doc: "Period in milliseconds of the watchdog that notices a PE that died or exited without `ishmem_finalize` and ends the job." },
    Var { name: "ISHMEM_PEER_TIMEOUT_S", kind: Kind::Count, default: "300",
          doc: "Jobs across nodes: seconds a PE of another node may stay silent (a read of its memory, or any network operation to it, completing nothing) before the job ends saying that it was silent, not that it died: a PE stopped by a debugger or SIGSTOP, or starved of CPU, is alive. Death is told apart for certain and at once: the first PEs of every two nodes keep a TCP connection to each other, whose end without a goodbye means the process is gone (the job then ends saying so, within about `ISHMEM_PEER_CHECK_MS`). At least 1." },
    Var { name: "ISHMEM_PROXY_STALL_S", kind: Kind::Count, default: "120",
          doc: "CUDA backend, jobs across nodes: seconds that the proxy thread (which runs kernels' calls to PEs of other nodes) may spend in one request (a put, get, AMO, quiet...) before the job ends with an error naming the device call, its PE and how long it has waited: kernels posting behind a stuck request would otherwise wait forever on a full ring. The network's own stall limits end most such waits sooner; this one catches the rest. Device collectives are not limited (they wait for their team's PEs). 0: no limit." },
    Var { name: "ISHMEM_QUEUE_KERNEL_MAX", kind: Kind::Bytes, default: "64K",
          doc: "Largest contiguous `_on_queue` put/get within this GPU's memory (to or from this PE, or a PE on the same GPU; puts and gets to or from another GPU always use the copy engines, which are faster there at every size), largest `_on_queue` put-with-signal, and largest block per PE of an `_on_queue` broadcast, fcollect or alltoall, done by SM kernels on the stream; larger puts and gets use the copy engines (`cuMemcpyAsync`), larger collective blocks move between two team-sync kernels, by a grid copy kernel up to 4 MiB per block and on the copy engines above. Collectives of a team with a PE on another node always run in one kernel (through the proxy). Every PE must use the same value." },
    Var { name: "ISHMEM_QUEUE_REDUCE_SPLIT_MIN", kind: Kind::Bytes, default: "256K",
          doc: "`_on_queue` reductions and scans of at least this many bytes (dest and source the same array or disjoint) run over the whole GPU instead of one block: a team-sync kernel, each PE combines its slice of the vector over the team with a full grid (scans: and stores the running sums into every PE's dest; reductions: and stores its slice of the result into every PE's dest), then a team sync. Smaller ones run in one block, and so do those of a team with a PE on another node (through the proxy). Every PE must use the same value." },
    Var { name: "ISHMEM_QUEUE_STATS", kind: Kind::Bool, default: "0",
          doc: "Profiling: each PE counts what its `_on_queue` calls hand the CUDA driver (kernel launches, copy-engine copies, memsets, pointer-type queries, context pushes) and prints the counts, in all and per call, at `ishmem_finalize` (a `[PE n] INFO:` line on stderr). Off: one predictable branch per counted event." },
    Var { name: "ISHMEM_REDUCE_SCATTER_MIN", kind: Kind::Bytes, default: "64K",
          doc: "Host reductions and scans of at least this many bytes in teams of 3 or more PEs split the vector into one slice per PE: each PE combines its slice over the team, then (reductions) the slices are gathered; smaller ones read every PE's whole vector. Every PE must use the same value." },
    Var { name: "ISHMEM_SHM_DIR", kind: Kind::Text, default: "/dev/shm",
          doc: "Directory holding the shared-memory files of the CPU backend while the job starts; they are unlinked once every PE mapped them. Checked at init: a directory on tmpfs (or hugetlbfs), owned by this user or root, writable by others only with the sticky bit (as `/dev/shm`, mode 1777). The files' names are one-way hashes of a secret of the node's PEs (docs/SECURITY.md)." },
    Var { name: "ISHMEM_SYMMETRIC_GLOBALS", kind: Kind::Bool, default: "1",
          doc: "Make the global and static variables of the executable symmetric (remotely accessible by host RMA and AMOs) by moving its data segment into shared memory at init. Every PE must use the same value." },
    Var { name: "ISHMEM_SYMMETRIC_SIZE", kind: Kind::Bytes, default: "1G",
          doc: "Bytes of symmetric heap per PE (suffixes K, M, G, T). Address space is reserved, memory is used only as it is touched. Every PE must use the same value." },
    Var { name: "ISHMEM_TEAMS_MAX", kind: Kind::Count, default: "64",
          doc: "Teams a PE can hold at once, the 3 predefined ones (world, shared, node) included; 3 to 4096. Each reserves 12 KiB of symmetric heap: its synchronization words and the scratch of the small (push) collectives; in a job across nodes the first 16 also reserve a block each, a 128 KiB broadcast ring, a scratch for the push collectives across nodes and relay flags: with a 2 MiB scratch (2.1 MiB a block, 34 MiB for 16) where the heap is at least 16 times their total (545 MiB; the default 1 GiB), else 1 MiB, 512 KiB or 256 KiB (388 KiB a block, 6.1 MiB for 16, from a 97 MiB heap), none below; `ISHMEM_INFO=1` prints the size in use. A split that finds no slot free on every PE of the parent team returns nonzero and gives ISHMEM_TEAM_INVALID. Every PE must use the same value." },
    Var { name: "ISHMEM_WAIT_SLEEP_MAX_US", kind: Kind::Count, default: "100",
          doc: "Longest sleep in microseconds of an idle `wait_until`/barrier after it stopped spinning; the sleep doubles from 1 us up to this." },
    Var { name: "ISHMEM_WAIT_SPIN", kind: Kind::Count, default: "20000",
          doc: "Polls an idle `wait_until`/barrier spins before it starts yielding (for 2 ms, and for as long as network traffic arrived for this PE within the last 5 ms) and then sleeping. When this machine runs more PEs of the job than this process has usable CPUs (`sched_getaffinity`; the pretend nodes of `ISHMEM_NODE_SPLIT` count together): at most 64, and 0 when the job spans nodes (the PEs' progress threads need the CPUs too). More than 4 PEs per usable CPU: block mode, where waits neither spin nor yield but sleep from 20 us doubling to 2 ms (or `ISHMEM_WAIT_SLEEP_MAX_US` if larger), across nodes in poll on the network's wait fd, so an arrival wakes them at once (issue 29: a yielding waiter stays runnable and takes the CPU from the PE it waits for). `ISHMEM_INFO=1` prints the mode and value in use." },
];

/// The settings every PE of a job must share (their docs end "Every PE must use the same
/// value."): they choose the heap layout, the collective algorithms or how PEs are grouped,
/// so PEs with different values would split their heaps or wait for each other for ever. Init
/// compares them job-wide (`Config::same`, through the launcher's exchange) and ends the job
/// naming the variable and the PEs.
pub const SAME_ON_EVERY_PE: &[&str] = &[
    "ISHMEM_BCAST_SCATTER_MIN",
    "ISHMEM_COLL_SMALL_MAX",
    "ISHMEM_COLL_TREE_MIN",
    "ISHMEM_NODE_SPLIT",
    "ISHMEM_OFI_STAGING",
    "ISHMEM_QUEUE_KERNEL_MAX",
    "ISHMEM_QUEUE_REDUCE_SPLIT_MIN",
    "ISHMEM_REDUCE_SCATTER_MIN",
    "ISHMEM_SYMMETRIC_GLOBALS",
    "ISHMEM_SYMMETRIC_SIZE",
    "ISHMEM_TEAMS_MAX",
];

/// `value` of variable `v` in a form equal for equal settings (`64K` and `65536`, `On` and
/// `1`); a malformed value as given (init has refused it already).
pub fn canonical(v: &Var, value: &str) -> String {
    let t = value.trim();
    let t = if t.is_empty() { v.default } else { t };
    match v.kind {
        Kind::Bool => parse_bool(t).map(|b| u8::from(b).to_string()).unwrap_or_else(|_| t.to_string()),
        Kind::Bytes => parse_bytes(t).map(|n| n.to_string()).unwrap_or_else(|_| t.to_string()),
        Kind::Count => parse_count(t).map(|n| n.to_string()).unwrap_or_else(|_| t.to_string()),
        Kind::Text => t.to_ascii_lowercase(),
    }
}

/// The bounds of `ISHMEM_TEAMS_MAX`: the predefined teams, and the bits of a split's free-slot
/// bitmap in a team's sync area (`ISHMEMI_TEAM_SPLIT_WORDS` words of 64).
pub const MIN_TEAMS: u64 = 3;
pub const MAX_TEAMS: u64 = 4096;

/// Looks a variable up by name.
pub fn var(name: &str) -> Option<&'static Var> {
    VARS.iter().find(|v| v.name == name)
}

/// A measuring aid (`ISHMEMI_*`: not in the table, not for users): `name=0` turns the
/// behaviour it names off; unset or any other value leaves it on.
pub fn aid_on(name: &str) -> bool {
    std::env::var(name).map_or(true, |v| v != "0")
}

/// Parses a boolean value.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Ok(true),
        "0" | "n" | "no" | "false" | "off" | "" => Ok(false),
        other => Err(format!("'{other}' is not a boolean (use 0 or 1)")),
    }
}

/// Parses a byte count: `1048576`, `64K`, `512M`, `2G`, `1T` (optionally with a trailing `B`).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let t = t.strip_suffix(['b', 'B']).unwrap_or(t);
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ if t[..i].trim().parse::<usize>().is_ok() => return Err(format!("'{s}' has an unknown suffix (use K, M, G or T)")),
                _ => return Err(format!("'{s}' is not a byte count")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: usize = num.trim().parse().map_err(|_| format!("'{s}' is not a byte count"))?;
    n.checked_mul(1usize << shift).ok_or_else(|| format!("'{s}' is too large"))
}

/// Parses a non-negative integer.
pub fn parse_count(s: &str) -> Result<u64, String> {
    s.trim().parse().map_err(|_| format!("'{s}' is not a non-negative integer"))
}

/// `ISHMEM_GPU`: which backend a PE asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuMode {
    /// GPU heap when CUDA and a device are usable, else the CPU backend.
    Auto,
    /// The CPU backend; CUDA is never loaded.
    Off,
    /// A GPU heap or a fatal error.
    On,
}

/// Parses `ISHMEM_GPU`.
pub fn parse_gpu_mode(s: &str) -> Result<GpuMode, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "auto" | "" => Ok(GpuMode::Auto),
        "0" | "no" | "off" | "false" => Ok(GpuMode::Off),
        "1" | "yes" | "on" | "true" => Ok(GpuMode::On),
        other => Err(format!("'{other}' is not one of auto, 0, 1")),
    }
}

/// Parses `ISHMEM_GPU_DEVICE`: `None` for `auto`.
pub fn parse_gpu_device(s: &str) -> Result<Option<u32>, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "auto" | "" => Ok(None),
        t => t.parse().map(Some).map_err(|_| format!("'{t}' is not a device ordinal (a number, or auto)")),
    }
}

/// The parsed configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub bcast_scatter_min: usize,
    pub bootstrap: String,
    pub bootstrap_timeout_s: u64,
    pub coll_small_max: usize,
    pub coll_check_ms: u64,
    pub coll_tree_min: usize,
    pub debug: bool,
    pub gpu: GpuMode,
    pub gpu_device: Option<u32>,
    pub info: bool,
    pub node_split: usize,
    pub nt_copy_min: usize,
    pub ofi_progress_us: u64,
    /// `ISHMEM_OFI_PROGRESS_WAKE`: None for auto, Some(true) for arrival, Some(false) for timer.
    pub ofi_wake_on_arrival: Option<bool>,
    pub ofi_provider: Option<String>,
    /// `ISHMEM_OFI_STAGING=always`.
    pub ofi_staging_always: bool,
    pub peer_check_ms: u64,
    pub peer_timeout_s: u64,
    pub proxy_stall_s: u64,
    pub queue_kernel_max: usize,
    pub queue_reduce_split_min: usize,
    pub queue_stats: bool,
    pub reduce_scatter_min: usize,
    pub shm_dir: String,
    pub symmetric_globals: bool,
    pub symmetric_size: usize,
    pub teams_max: usize,
    pub wait_sleep_max_us: u64,
    pub wait_spin: u64,
    /// `SAME_ON_EVERY_PE` with this PE's values (`canonical`), in the list's order.
    pub same: Vec<(&'static str, String)>,
}

impl Config {
    /// Reads the configuration from a map of variables (the process environment in use).
    /// Returns the config and the warnings (unknown `ISHMEM_*` names); a malformed value is an
    /// error naming the variable.
    pub fn from_map(env: &HashMap<String, String>) -> Result<(Config, Vec<String>), String> {
        let get = |name: &str| -> &str { env.get(name).map(String::as_str).unwrap_or_else(|| var(name).map_or("", |v| v.default)) };
        let wrap = |name: &str, r: Result<u64, String>| r.map_err(|e| format!("{name}: {e}"));
        let bool_of = |name: &str| parse_bool(get(name)).map_err(|e| format!("{name}: {e}"));
        let bootstrap = get("ISHMEM_BOOTSTRAP").trim().to_ascii_lowercase();
        if !["auto", "ishmrun", "pmix", "pmi1", "singleton"].contains(&bootstrap.as_str()) {
            return Err(format!("ISHMEM_BOOTSTRAP: '{bootstrap}' is not one of auto, ishmrun, pmix, pmi1, singleton"));
        }
        let symmetric_size = parse_bytes(get("ISHMEM_SYMMETRIC_SIZE")).map_err(|e| format!("ISHMEM_SYMMETRIC_SIZE: {e}"))?;
        if symmetric_size == 0 {
            return Err("ISHMEM_SYMMETRIC_SIZE: must be greater than 0".into());
        }
        let teams_max = wrap("ISHMEM_TEAMS_MAX", parse_count(get("ISHMEM_TEAMS_MAX")))?;
        if !(MIN_TEAMS..=MAX_TEAMS).contains(&teams_max) {
            return Err(format!("ISHMEM_TEAMS_MAX: {teams_max} is not in [{MIN_TEAMS}, {MAX_TEAMS}]"));
        }
        let bytes_of = |name: &str| parse_bytes(get(name)).map_err(|e| format!("{name}: {e}"));
        let cfg = Config {
            bcast_scatter_min: bytes_of("ISHMEM_BCAST_SCATTER_MIN")?,
            bootstrap,
            bootstrap_timeout_s: match wrap("ISHMEM_BOOTSTRAP_TIMEOUT", parse_count(get("ISHMEM_BOOTSTRAP_TIMEOUT")))? {
                t @ 1..=MAX_BOOTSTRAP_TIMEOUT => t,
                t => return Err(format!("ISHMEM_BOOTSTRAP_TIMEOUT: {t} is not in [1, {MAX_BOOTSTRAP_TIMEOUT}] seconds")),
            },
            coll_small_max: bytes_of("ISHMEM_COLL_SMALL_MAX")?,
            coll_check_ms: wrap("ISHMEM_COLL_CHECK_MS", parse_count(get("ISHMEM_COLL_CHECK_MS")))?,
            coll_tree_min: wrap("ISHMEM_COLL_TREE_MIN", parse_count(get("ISHMEM_COLL_TREE_MIN")))?.min(1 << 30) as usize,
            debug: bool_of("ISHMEM_DEBUG")?,
            gpu: parse_gpu_mode(get("ISHMEM_GPU")).map_err(|e| format!("ISHMEM_GPU: {e}"))?,
            gpu_device: parse_gpu_device(get("ISHMEM_GPU_DEVICE")).map_err(|e| format!("ISHMEM_GPU_DEVICE: {e}"))?,
            info: bool_of("ISHMEM_INFO")?,
            node_split: wrap("ISHMEM_NODE_SPLIT", parse_count(get("ISHMEM_NODE_SPLIT")))? as usize,
            nt_copy_min: bytes_of("ISHMEM_NT_COPY_MIN")?,
            ofi_progress_us: wrap("ISHMEM_OFI_PROGRESS_US", parse_count(get("ISHMEM_OFI_PROGRESS_US")))?,
            ofi_wake_on_arrival: match get("ISHMEM_OFI_PROGRESS_WAKE").trim() {
                "" | "auto" => None,
                "arrival" => Some(true),
                "timer" => Some(false),
                v => return Err(format!("ISHMEM_OFI_PROGRESS_WAKE: '{v}' is not auto, arrival or timer")),
            },
            ofi_staging_always: match get("ISHMEM_OFI_STAGING").trim() {
                "" | "auto" => false,
                "always" => true,
                v => return Err(format!("ISHMEM_OFI_STAGING: '{v}' is not auto or always")),
            },
            ofi_provider: Some(get("ISHMEM_OFI_PROVIDER").trim().to_string()).filter(|p| !p.is_empty() && p != "auto"),
            peer_check_ms: wrap("ISHMEM_PEER_CHECK_MS", parse_count(get("ISHMEM_PEER_CHECK_MS")))?.max(1),
            peer_timeout_s: wrap("ISHMEM_PEER_TIMEOUT_S", parse_count(get("ISHMEM_PEER_TIMEOUT_S")))?.max(1),
            proxy_stall_s: wrap("ISHMEM_PROXY_STALL_S", parse_count(get("ISHMEM_PROXY_STALL_S")))?,
            queue_kernel_max: parse_bytes(get("ISHMEM_QUEUE_KERNEL_MAX")).map_err(|e| format!("ISHMEM_QUEUE_KERNEL_MAX: {e}"))?,
            queue_reduce_split_min: bytes_of("ISHMEM_QUEUE_REDUCE_SPLIT_MIN")?,
            queue_stats: bool_of("ISHMEM_QUEUE_STATS")?,
            reduce_scatter_min: bytes_of("ISHMEM_REDUCE_SCATTER_MIN")?,
            shm_dir: get("ISHMEM_SHM_DIR").to_string(),
            symmetric_globals: bool_of("ISHMEM_SYMMETRIC_GLOBALS")?,
            symmetric_size,
            teams_max: teams_max as usize,
            wait_sleep_max_us: wrap("ISHMEM_WAIT_SLEEP_MAX_US", parse_count(get("ISHMEM_WAIT_SLEEP_MAX_US")))?,
            wait_spin: wrap("ISHMEM_WAIT_SPIN", parse_count(get("ISHMEM_WAIT_SPIN")))?,
            same: SAME_ON_EVERY_PE.iter().filter_map(|n| var(n)).map(|v| (v.name, canonical(v, get(v.name)))).collect(),
        };
        let mut warnings: Vec<String> = env
            .keys()
            .filter(|k| k.starts_with("ISHMEM_") && var(k).is_none())
            .map(|k| format!("unknown variable {k} ignored (see ishmem-info for the list)"))
            .collect();
        warnings.sort();
        Ok((cfg, warnings))
    }

    /// Reads the process environment.
    pub fn from_env() -> Result<(Config, Vec<String>), String> {
        Config::from_map(&std::env::vars().collect())
    }
}

/// The Markdown reference of every variable (written to `docs/ENV.md` by the generator).
pub fn markdown() -> String {
    let mut s = String::from(
        "# Environment variables\n\n<!-- Generated from src/env.rs by `make generate`; do not edit. -->\n\n\
         Every knob of libishmem is an `ISHMEM_*` variable read once by `ishmem_init`. \
         `ishmem-info` prints them with their current values; `ISHMEM_INFO=1` makes PE 0 print \
         them at init. An unknown `ISHMEM_*` name gives a warning.\n\n\
         | variable | kind | default | meaning |\n|---|---|---|---|\n",
    );
    for v in VARS {
        let kind = match v.kind {
            Kind::Bool => "bool",
            Kind::Bytes => "bytes",
            Kind::Count => "integer",
            Kind::Text => "text",
        };
        s.push_str(&format!("| `{}` | {} | `{}` | {} |\n", v.name, kind, v.default, v.doc));
    }
    s.push_str(LAUNCH_NOTES);
    s
}

/// The launch section of docs/ENV.md: what each launcher needs from the environment.
const LAUNCH_NOTES: &str = "
## Launchers, Slurm and containers

| launcher | how the PEs meet | notes |
|---|---|---|
| `ishmrun -n N ./prog` | `ISHMRUN_*` variables; one node | under another launcher, `ishmrun` is a per-rank prefix (output tags) |
| `mpirun -np N ./prog` (OpenMPI) | PMIx client (`libpmix.so.2`, loaded at run time) | without libpmix, OpenMPI's `OMPI_COMM_WORLD_*` variables, one node only |
| `srun --mpi=pmix -n N ./prog` (Slurm) | PMIx client | `srun --mpi=list` shows the plugins; plain `srun` with `MpiDefault=none` gives no PMI and init fails saying so |
| `srun --mpi=pmi2 -n N ./prog` (Slurm) | PMI-1 wire protocol on `PMI_FD` | |
| `mpiexec -n N ./prog` (MPICH hydra) | PMI-1 wire protocol | `mpiexec.mpich` where OpenMPI's `mpiexec` is installed too |
| `ishmemx_init_attr` with a unique id | TCP rendezvous served by the process that made the id (`ISHMEM_BOOTSTRAP_UID_ADDR`) | that process must stay alive until every PE returned from init |

Every exchange is bounded by `ISHMEM_BOOTSTRAP_TIMEOUT`; a PE that never arrives is named.
Which PEs share a node is decided by what they can share, not by the launcher's local ranks:
same host name, boot id, IPC and mount namespaces, and the same `ISHMEM_SHM_DIR`. Containers on
one host that each mount a private `/dev/shm` are separate nodes. PEs of one node map each
other's heaps; PEs of other nodes are reached through libfabric (`ISHMEM_OFI_PROVIDER`), with
the endpoint addresses exchanged through the launcher.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn bytes_parse_with_suffixes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("512m"), Ok(512 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("3GB"), Ok(3 << 30));
        assert_eq!(parse_bytes("1T"), Ok(1 << 40));
        assert!(parse_bytes("12Q").unwrap_err().contains("suffix"));
        assert!(parse_bytes("abc").unwrap_err().contains("not a byte count"));
        assert!(parse_bytes("99999999999999999999T").is_err());
        assert!(parse_bytes("20000000000T").unwrap_err().contains("too large"));
    }

    #[test]
    fn bools_parse() {
        assert_eq!(parse_bool("1"), Ok(true));
        assert_eq!(parse_bool("Yes"), Ok(true));
        assert_eq!(parse_bool("off"), Ok(false));
        assert!(parse_bool("maybe").is_err());
    }

    #[test]
    fn defaults_apply_and_unknown_names_warn() {
        let (cfg, warn) = Config::from_map(&map(&[("ISHMEM_FOO", "1"), ("PATH", "/bin")])).unwrap();
        assert_eq!(cfg.symmetric_size, 1 << 30);
        assert_eq!(cfg.bootstrap, "auto");
        assert!(!cfg.debug);
        assert!(cfg.symmetric_globals);
        assert_eq!(warn.len(), 1);
        assert!(warn[0].contains("ISHMEM_FOO"));
    }

    #[test]
    fn values_are_read_and_errors_name_the_variable() {
        let (cfg, _) = Config::from_map(&map(&[("ISHMEM_SYMMETRIC_SIZE", "8G"), ("ISHMEM_DEBUG", "1")])).unwrap();
        assert_eq!(cfg.symmetric_size, 8 << 30);
        assert!(cfg.debug);
        let e = Config::from_map(&map(&[("ISHMEM_SYMMETRIC_SIZE", "lots")])).unwrap_err();
        assert!(e.starts_with("ISHMEM_SYMMETRIC_SIZE:"), "{e}");
        let e = Config::from_map(&map(&[("ISHMEM_BOOTSTRAP", "slurm")])).unwrap_err();
        assert!(e.contains("ISHMEM_BOOTSTRAP"), "{e}");
        // issue 30: u64::MAX seconds panicked in Instant arithmetic
        let e = Config::from_map(&map(&[("ISHMEM_BOOTSTRAP_TIMEOUT", "18446744073709551615")])).unwrap_err();
        assert_eq!(e, "ISHMEM_BOOTSTRAP_TIMEOUT: 18446744073709551615 is not in [1, 1000000] seconds");
        assert!(Config::from_map(&map(&[("ISHMEM_BOOTSTRAP_TIMEOUT", "0")])).is_err());
        assert_eq!(Config::from_map(&map(&[("ISHMEM_BOOTSTRAP_TIMEOUT", "1000000")])).unwrap().0.bootstrap_timeout_s, 1_000_000);
        let e = Config::from_map(&map(&[("ISHMEM_SYMMETRIC_SIZE", "0")])).unwrap_err();
        assert!(e.contains("greater than 0"), "{e}");
        let (cfg, _) = Config::from_map(&map(&[])).unwrap();
        assert_eq!((cfg.teams_max, cfg.reduce_scatter_min, cfg.bcast_scatter_min), (64, 64 << 10, 1 << 20));
        assert_eq!(cfg.coll_small_max, 4 << 10);
        let (cfg, _) =
            Config::from_map(&map(&[("ISHMEM_TEAMS_MAX", "3"), ("ISHMEM_REDUCE_SCATTER_MIN", "0"), ("ISHMEM_COLL_SMALL_MAX", "0")]))
                .unwrap();
        assert_eq!((cfg.teams_max, cfg.reduce_scatter_min, cfg.coll_small_max), (3, 0, 0));
        for bad in ["2", "4097", "x"] {
            let e = Config::from_map(&map(&[("ISHMEM_TEAMS_MAX", bad)])).unwrap_err();
            assert!(e.starts_with("ISHMEM_TEAMS_MAX:"), "{e}");
        }
    }

    #[test]
    fn gpu_choice_parses() {
        let (cfg, _) = Config::from_map(&map(&[])).unwrap();
        assert_eq!((cfg.gpu, cfg.gpu_device), (GpuMode::Auto, None));
        let (cfg, _) = Config::from_map(&map(&[("ISHMEM_GPU", "0"), ("ISHMEM_GPU_DEVICE", "3")])).unwrap();
        assert_eq!((cfg.gpu, cfg.gpu_device), (GpuMode::Off, Some(3)));
        let (cfg, _) = Config::from_map(&map(&[("ISHMEM_GPU", "1"), ("ISHMEM_GPU_DEVICE", "auto")])).unwrap();
        assert_eq!((cfg.gpu, cfg.gpu_device), (GpuMode::On, None));
        let e = Config::from_map(&map(&[("ISHMEM_GPU", "cuda")])).unwrap_err();
        assert!(e.starts_with("ISHMEM_GPU:"), "{e}");
        let e = Config::from_map(&map(&[("ISHMEM_GPU_DEVICE", "-1")])).unwrap_err();
        assert!(e.starts_with("ISHMEM_GPU_DEVICE:"), "{e}");
    }

    #[test]
    fn table_is_sorted_and_documented() {
        for w in VARS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        for v in VARS {
            assert!(!v.doc.is_empty());
            let ok = match v.kind {
                Kind::Bool => parse_bool(v.default).is_ok(),
                Kind::Bytes => parse_bytes(v.default).is_ok(),
                Kind::Count => parse_count(v.default).is_ok(),
                Kind::Text => true,
            };
            assert!(ok, "default of {} does not parse", v.name);
        }
        assert!(markdown().contains("| `ISHMEM_SYMMETRIC_SIZE` | bytes | `1G` |"));
    }

    #[test]
    fn same_on_every_pe_is_what_the_docs_say() {
        for v in VARS {
            let said = v.doc.contains("Every PE must use the same value.");
            assert_eq!(said, SAME_ON_EVERY_PE.contains(&v.name), "{}: doc and SAME_ON_EVERY_PE disagree", v.name);
        }
        assert!(SAME_ON_EVERY_PE.iter().all(|n| var(n).is_some()));
        let (cfg, _) = Config::from_map(&map(&[("ISHMEM_COLL_SMALL_MAX", "4K"), ("ISHMEM_OFI_STAGING", " always")])).unwrap();
        let (dflt, _) = Config::from_map(&map(&[("ISHMEM_COLL_SMALL_MAX", "4096"), ("ISHMEM_SYMMETRIC_GLOBALS", "on")])).unwrap();
        let get = |c: &Config, n: &str| c.same.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get(&cfg, "ISHMEM_COLL_SMALL_MAX"), "4096");
        assert_eq!(get(&cfg, "ISHMEM_OFI_STAGING"), "always");
        assert_eq!(get(&dflt, "ISHMEM_OFI_STAGING"), "auto");
        assert_eq!(get(&dflt, "ISHMEM_SYMMETRIC_GLOBALS"), get(&cfg, "ISHMEM_SYMMETRIC_GLOBALS"));
        assert_eq!(cfg.same.len(), SAME_ON_EVERY_PE.len());
    }
}
