//! How the PEs of a job learn their rank, the job size and a job key shared by all of them:
//! from ishmrun's variables, OpenMPI's PMIx environment, MPICH's PMI-1 server, a unique id
//! handed over by a framework, or alone (a job of 1 PE). Everything after that (shared memory,
//! barriers) is the transport's.

pub mod node;
pub mod pmi1;
pub mod pmix;
pub mod secret;
pub mod uid;

use pmi1::Pmi1;
use std::env::var;

/// Which launcher started the job; the values are `ishmemx_runtime_type_t`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    Pmi1 = 3,
    Pmix = 4,
    Ishmrun = 5,
    UniqueId = 6,
    Singleton = 7,
}

impl Runtime {
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Pmi1 => pmi1_launcher(var("SLURM_MPI_TYPE").ok().as_deref(), var("MPI_LOCALNRANKS").is_ok()),
            Runtime::Pmix => "pmix (OpenMPI mpirun, Slurm srun --mpi=pmix, ...)",
            Runtime::Ishmrun => "ishmrun",
            Runtime::UniqueId => "unique id",
            Runtime::Singleton => "singleton",
        }
    }
}

/// Which launcher serves the PMI-1 wire protocol: Slurm's srun sets `SLURM_MPI_TYPE` (pmi2) for
/// its tasks, MPICH's hydra sets `MPI_LOCALNRANKS` (and no `SLURM_MPI_TYPE`).
fn pmi1_launcher(slurm_mpi_type: Option<&str>, hydra_vars: bool) -> &'static str {
    match slurm_mpi_type {
        Some(t) if !hydra_vars && t.starts_with("pmi2") => "pmi1 (Slurm srun --mpi=pmi2)",
        Some(_) if !hydra_vars => "pmi1 (Slurm srun)",
        _ => "pmi1 (MPICH hydra)",
    }
}

/// What the bootstrap found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub rank: usize,
    pub size: usize,
    /// PEs of the job on this node (all of them: one node is what the CPU backend reaches).
    pub local_size: usize,
    /// A key unique to this job, made of `[A-Za-z0-9_.-]`, naming its shared-memory files.
    pub key: String,
    pub runtime: Runtime,
}

/// A job-wide key-value exchange, usable during init only: every PE of the job makes the same
/// sequence of calls. Implemented by each launcher's protocol (PMIx, PMI-1, the unique id's TCP
/// rendezvous), never through shared memory, so that it works between nodes.
pub trait Exchange {
    /// Every PE contributes `value`; returns every PE's value, indexed by rank. `key` names the
    /// round and differs between rounds of one job (some protocols keep every key).
    fn allgather(&mut self, key: &str, value: &[u8]) -> Result<Vec<Vec<u8>>, String>;
}

/// What the launcher told a PE, and its exchange while init runs (closed by `finish`).
pub struct Bootstrap {
    pub info: JobInfo,
    /// The launcher's key-value exchange; None where the launcher has none (a 1-PE job,
    /// ishmrun: one node by construction, or OpenMPI's environment without libpmix).
    pub exchange: Option<Box<dyn Exchange + Send>>,
    /// A secret the launcher gave every PE privately (ishmrun's job id in the environment), or
    /// one of this PE alone (a 1-PE job); None where the node's lowest PE makes it and the
    /// exchange spreads it (`nodes`).
    pub secret: Option<String>,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrap").field("info", &self.info).field("exchange", &self.exchange.is_some()).finish()
    }
}

/// Size of `ishmemx_uniqueid_t`.
pub const UID_BYTES: usize = 128;

fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' }).collect()
}

/// What a peer or a process manager sent, for an error message: escaped (no control
/// characters reach the terminal) and clipped to 160 characters, with its length when longer.
pub fn clip(s: &str) -> String {
    const MAX: usize = 160;
    let esc: String = s.chars().flat_map(char::escape_debug).take(MAX + 1).collect();
    if esc.chars().count() > MAX {
        format!("{}... ({} bytes in all)", esc.chars().take(MAX).collect::<String>(), s.len())
    } else {
        esc
    }
}

fn num(name: &str) -> Result<Option<usize>, String> {
    match var(name) {
        Ok(v) => v.trim().parse().map(Some).map_err(|_| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(None),
    }
}

fn need(name: &str, what: &str) -> Result<usize, String> {
    num(name)?.ok_or_else(|| format!("{name} is not set ({what})"))
}

/// Random hex digits from the kernel (getrandom, else /dev/urandom); never a guessable
/// fallback: they make secrets (the node's, the unique id's key).
pub fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    // SAFETY: buf is writable for its length.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), bytes, 0) };
    if n != bytes as isize {
        let e = std::io::Error::last_os_error();
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut buf))
            .map_err(|u| format!("no random numbers: getrandom failed ({e}) and /dev/urandom too ({u})"))?;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The rank the launcher gave this process, for tagging messages before init.
pub fn rank_hint() -> Option<usize> {
    ["ISHMRUN_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|n| var(n).ok().and_then(|v| v.trim().parse().ok()))
}

fn single_node(info: JobInfo) -> Result<JobInfo, String> {
    if info.local_size != info.size {
        return Err(format!(
            "ishmrun starts the PEs of one node, but ISHMRUN_LOCAL_SIZE={} of ISHMRUN_SIZE={}; \
             launch across nodes with mpirun, srun or mpiexec (see the README)",
            info.local_size, info.size
        ));
    }
    Ok(info)
}

fn check_rank(info: &JobInfo) -> Result<(), String> {
    if info.size == 0 || info.rank >= info.size {
        return Err(format!("rank {} is not in a job of {} PEs", info.rank, info.size));
    }
    Ok(())
}

/// A unique id written as 256 hex digits.
fn unhex_uid(hex: &str) -> Option<[u8; UID_BYTES]> {
    let hex = hex.trim();
    if hex.len() != 2 * UID_BYTES {
        return None;
    }
    let mut out = [0u8; UID_BYTES];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// PMI-1 as the job's exchange; leaving PMI (`finish`) finalizes it.
struct Pmi1Exchange(Pmi1);

impl Exchange for Pmi1Exchange {
    fn allgather(&mut self, key: &str, value: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        Exchange::allgather(&mut self.0, key, value)
    }
}

impl Drop for Pmi1Exchange {
    fn drop(&mut self) {
        // Nothing more is needed from hydra after init: leaving PMI makes a PE's exit an
        // ordinary exit, so a PE that ends without ishmem_finalize is reported by the others'
        // watchdogs (and the job fails) instead of hydra killing them silently; and a fatal
        // error is reported by a nonzero exit, after its message got out.
        let _ = self.0.finalize();
    }
}

impl Bootstrap {
    /// Finds the launcher from the environment (`mode` is `ISHMEM_BOOTSTRAP`).
    pub fn detect(mode: &str, timeout: std::time::Duration) -> Result<Bootstrap, String> {
        let has = |n: &str| var(n).is_ok();
        let mode = match mode {
            "auto" if has("ISHMRUN_JOBID") => "ishmrun",
            "auto" if has("PMIX_RANK") || has("OMPI_COMM_WORLD_RANK") => "pmix",
            "auto" if has("PMI_FD") || has("PMI_PORT") => "pmi1",
            "auto" if num("SLURM_STEP_NUM_TASKS").ok().flatten().is_some_and(|n| n > 1) => {
                return Err(format!(
                    "started by srun as one of {} tasks, but srun gave no PMI service (PMIX_*, PMI_FD are not set): \
                     run srun --mpi=pmix (or --mpi=pmi2), or set MpiDefault in slurm.conf",
                    var("SLURM_STEP_NUM_TASKS").unwrap_or_default()
                ))
            }
            "auto" => "singleton",
            m => m,
        };
        match mode {
            "ishmrun" => {
                let size = need("ISHMRUN_SIZE", "ishmrun sets it")?;
                let info = JobInfo {
                    rank: need("ISHMRUN_RANK", "ishmrun sets it")?,
                    size,
                    local_size: num("ISHMRUN_LOCAL_SIZE")?.unwrap_or(size),
                    key: format!("r{}", sanitize(&var("ISHMRUN_JOBID").unwrap_or_default())),
                    runtime: Runtime::Ishmrun,
                };
                check_rank(&info)?;
                let info = single_node(info)?;
                // ishmrun serves a rendezvous on loopback (its unique id in ISHMRUN_UID): the
                // exchange of node identities and network addresses (ISHMEM_NODE_SPLIT).
                let exchange: Option<Box<dyn Exchange + Send>> = match var("ISHMRUN_UID") {
                    Ok(hex) => {
                        let bytes = unhex_uid(&hex).ok_or("ISHMRUN_UID is malformed (not the 256 hex digits ishmrun sets)")?;
                        Some(Box::new(uid::Client::connect(&bytes, info.rank, info.size, timeout)?))
                    }
                    Err(_) => None,
                };
                // ishmrun's job id: random (32 hex digits), in the PEs' environment only (which
                // other users cannot read); ishmrun derives the file names from it to clean up.
                let secret = var("ISHMRUN_JOBID").ok().filter(|s| s.len() >= 16);
                Ok(Bootstrap { info, exchange, secret })
            }
            "pmix" => {
                // A real PMIx client (OpenMPI's mpirun, Slurm's srun --mpi=pmix, PRRTE, ...);
                // OpenMPI's environment alone where libpmix is not installed.
                let lib = pmix::library_version();
                match pmix::Pmix::from_env(timeout)? {
                    Some(p) => {
                        let info = JobInfo {
                            rank: p.rank(),
                            size: p.size(),
                            local_size: p.local_size(),
                            key: format!("x{}", sanitize(&p.nspace())),
                            runtime: Runtime::Pmix,
                        };
                        check_rank(&info)?;
                        Ok(Bootstrap { info, exchange: Some(Box::new(p)), secret: None })
                    }
                    None if lib.is_err() || has("OMPI_COMM_WORLD_SIZE") => Self::pmix_env(lib.err()),
                    None => Err("PMIx: no PMIx server in the environment (PMIX_NAMESPACE, PMIX_RANK and PMIX_SERVER_URI* are not set); ISHMEM_BOOTSTRAP=pmix needs a PMIx launcher (mpirun, srun --mpi=pmix)".into()),
                }
            }
            "pmi1" => {
                let p = Pmi1::from_env()?.ok_or("PMI_FD/PMI_PORT, PMI_RANK and PMI_SIZE are not set")?;
                let info = JobInfo {
                    rank: p.rank(),
                    size: p.size(),
                    // Found by the node exchange (core::init), which every launcher with an
                    // exchange takes.
                    local_size: p.size(),
                    key: format!("h{}", sanitize(p.kvsname())),
                    runtime: Runtime::Pmi1,
                };
                check_rank(&info)?;
                Ok(Bootstrap { info, exchange: Some(Box::new(Pmi1Exchange(p))), secret: None })
            }
            "singleton" => Ok(Bootstrap {
                exchange: None,
                info: JobInfo { rank: 0, size: 1, local_size: 1, key: format!("s{}", std::process::id()), runtime: Runtime::Singleton },
                secret: Some(random_hex(16)?),
            }),
            other => Err(format!("unknown bootstrap '{other}'")),
        }
    }

    /// OpenMPI's environment without a PMIx client (libpmix absent): rank and size from
    /// `OMPI_COMM_WORLD_*`, one node only (there is no exchange to find the others).
    fn pmix_env(why: Option<String>) -> Result<Bootstrap, String> {
        let why = why.map_or(String::new(), |w| format!(" ({w})"));
        let rank = match num("PMIX_RANK")? {
            Some(r) => r,
            None => need("OMPI_COMM_WORLD_RANK", "set by OpenMPI's mpirun")?,
        };
        let size = need("OMPI_COMM_WORLD_SIZE", &format!("set by OpenMPI's mpirun; other PMIx launchers need libpmix.so.2{why}"))?;
        let ns = var("PMIX_NAMESPACE")
            .or_else(|_| var("OMPI_MCA_ess_base_jobid"))
            .map_err(|_| "PMIX_NAMESPACE is not set (needed as the job key)".to_string())?;
        let info = JobInfo {
            rank,
            size,
            local_size: num("OMPI_COMM_WORLD_LOCAL_SIZE")?.unwrap_or(size),
            key: format!("x{}", sanitize(&ns)),
            runtime: Runtime::Pmix,
        };
        check_rank(&info)?;
        if info.local_size != info.size {
            return Err(format!(
                "the job spans several nodes ({} PEs, {} on this node) and libpmix.so.2 could not be loaded{why}: \
                 install the PMIx library (Debian: libpmix2) so that the PEs can exchange their addresses",
                info.size, info.local_size
            ));
        }
        // No exchange to spread a secret: OpenMPI's per-job random transport key where mpirun
        // set one (in the environment, private to the job's user), else the names follow the
        // namespace, which others may guess: the checks of `segment::create_or_open` then
        // end the job when another user made a name first.
        let secret = ["OMPI_MCA_orte_precondition_transports", "OMPI_MCA_opal_precondition_transports"]
            .iter()
            .find_map(|n| var(n).ok())
            .filter(|s| s.len() >= 16);
        Ok(Bootstrap { info, exchange: None, secret })
    }

    /// Ends the launcher exchange (init no longer needs it).
    pub fn finish(&mut self) {
        self.exchange = None;
    }

    /// Every PE's node identity, through the launcher's exchange; without one, every PE is
    /// taken to be on this node (the launchers without an exchange start one node only).
    /// Returns the nodes, the secret of this PE's node (the launcher's, `secret`, else the
    /// random one that the node's lowest PE sent with its identity) and every PE's `same`
    /// (the settings every PE must share, `env::Config::same`, sent with the identity; `None`
    /// without an exchange).
    pub fn nodes(&mut self, identity: &str, split: usize, same: &str) -> Result<(node::Nodes, String, Option<Vec<String>>), String> {
        match self.exchange.as_mut() {
            Some(x) => {
                let mine = random_hex(16)?;
                let all = x.allgather("ishmem-node", format!("{identity}\n{mine}\n{same}").as_bytes())?;
                let mut ids = Vec::with_capacity(all.len());
                let mut nonces = Vec::with_capacity(all.len());
                let mut sames = Vec::with_capacity(all.len());
                for (pe, v) in all.iter().enumerate() {
                    let s = String::from_utf8_lossy(v);
                    let mut parts = s.splitn(3, '\n');
                    let (Some(id), Some(nonce), Some(settings)) = (parts.next(), parts.next(), parts.next()) else {
                        return Err(format!(
                            "PE {pe} sent a node identity without its secret and settings parts ({} bytes): every PE must use the same libishmem",
                            v.len()
                        ));
                    };
                    ids.push(id.to_string());
                    nonces.push(nonce.to_string());
                    sames.push(settings.to_string());
                }
                let nodes = node::Nodes::group(&ids, split);
                let lowest = nodes.members[nodes.node_of[self.info.rank]][0];
                #[cfg(not(ishmem_mutation = "shm_names_from_key"))]
                let secret = self.secret.clone().unwrap_or_else(|| nonces[lowest].clone());
                // The mutant (issue 30's one-way names removed): the files' names follow the
                // launcher's key, which other users can learn.
                #[cfg(ishmem_mutation = "shm_names_from_key")]
                let secret = {
                    let _ = lowest;
                    format!("launcher key {}", self.info.key)
                };
                Ok((nodes, secret, Some(sames)))
            }
            // Peers unknown but on this node: a split still applies.
            None => {
                let secret = self.secret.clone().unwrap_or_else(|| format!("launcher key {}", self.info.key));
                Ok((node::Nodes::group(&vec![identity.to_string(); self.info.size], split), secret, None))
            }
        }
    }

    /// Unique-id init: the framework gives rank, size and the id made by `ishmemx_get_uniqueid`
    /// (`uid::get_uniqueid`), whose TCP rendezvous carries the exchange.
    pub fn from_uid(uid: &[u8; UID_BYTES], rank: i32, nranks: i32, timeout: std::time::Duration) -> Result<Bootstrap, String> {
        if nranks <= 0 || rank < 0 || rank >= nranks {
            return Err(format!("rank {rank} is not in a job of {nranks} PEs (ishmemx_attr_t.rank/.nranks)"));
        }
        let c = uid::Client::connect(uid, rank as usize, nranks as usize, timeout)?;
        let info = JobInfo {
            rank: rank as usize,
            size: nranks as usize,
            local_size: nranks as usize,
            // Public (messages): one-way from the id's key, which is the job's password.
            key: format!("u{}", secret::derive_hex(&[b"ishmem uid job", c.key().as_bytes()], 16)),
            runtime: Runtime::UniqueId,
        };
        Ok(Bootstrap { info, exchange: Some(Box::new(c)), secret: None })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn pmi1_launcher_names_slurm_and_hydra() {
        assert_eq!(super::pmi1_launcher(Some("pmi2"), false), "pmi1 (Slurm srun --mpi=pmi2)");
        assert_eq!(super::pmi1_launcher(None, true), "pmi1 (MPICH hydra)");
        assert_eq!(super::pmi1_launcher(None, false), "pmi1 (MPICH hydra)");
        // hydra started inside a Slurm step: its own variables decide
        assert_eq!(super::pmi1_launcher(Some("pmi2"), true), "pmi1 (MPICH hydra)");
    }

    use super::*;

    #[test]
    fn keys_are_sanitized() {
        assert_eq!(sanitize("prterun-host-123@1"), "prterun-host-123_1");
        assert_eq!(sanitize("kvs_12/x y"), "kvs_12_x_y");
    }

    #[test]
    fn peer_strings_are_clipped() {
        assert_eq!(clip("host-1"), "host-1");
        assert_eq!(clip("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\n");
        let long = "x".repeat(200_000);
        assert_eq!(clip(&long), format!("{}... (200000 bytes in all)", "x".repeat(160)));
    }

    #[test]
    fn random_hex_is_hex() {
        let h = random_hex(8).unwrap();
        assert_eq!(h.len(), 16);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
