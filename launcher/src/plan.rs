//! Deciding what to launch: the job id, the per-PE environment, and whether
//! `ishmrun` runs as a per-rank wrapper under another launcher (mpirun,
//! PMIx/PMI based launchers).

use std::ffi::OsString;

/// Names of the variables `ishmrun` gives each PE (read by the library).
pub const ENV_RANK: &str = "ISHMRUN_RANK";
pub const ENV_SIZE: &str = "ISHMRUN_SIZE";
pub const ENV_LOCAL_RANK: &str = "ISHMRUN_LOCAL_RANK";
pub const ENV_LOCAL_SIZE: &str = "ISHMRUN_LOCAL_SIZE";
pub const ENV_JOBID: &str = "ISHMRUN_JOBID";
pub const ENV_LAUNCHER_PID: &str = "ISHMRUN_LAUNCHER_PID";
/// The rendezvous this ishmrun serves (a unique id in hex), for the PEs' exchange.
pub const ENV_UID: &str = "ISHMRUN_UID";

/// All `ISHMRUN_*` variables; removed from the environment in wrapper mode so
/// that stale values from an outer job cannot confuse the library.
pub const ALL_ENV: [&str; 7] = [ENV_UID, ENV_RANK, ENV_SIZE, ENV_LOCAL_RANK, ENV_LOCAL_SIZE, ENV_JOBID, ENV_LAUNCHER_PID];

/// Variables through which other launchers announce a process's rank, in
/// order of preference.
pub const FOREIGN_RANK_VARS: [&str; 4] = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"];

/// One process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeSpec {
    /// The rank shown in messages and output tags.
    pub rank: usize,
    /// Variables to add to the inherited environment.
    pub env: Vec<(String, String)>,
}

/// The set of processes to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub pes: Vec<PeSpec>,
    /// Variables to remove from the inherited environment.
    pub remove_env: Vec<&'static str>,
}

/// The rank assigned by another launcher, if we run under one.
pub fn foreign_rank<F>(lookup: F) -> Option<usize>
where
    F: Fn(&str) -> Option<OsString>,
{
    FOREIGN_RANK_VARS.iter().filter_map(|name| lookup(name)).find_map(|value| value.to_str().and_then(|v| v.trim().parse().ok()))
}

/// Builds the plan. With an explicit `np`, or without a foreign launcher,
/// `np` (default 1) PEs get the `ISHMRUN_*` variables. Otherwise a single
/// process runs as the foreign launcher's rank with no `ISHMRUN_*` variables.
pub fn make(np: Option<usize>, foreign: Option<usize>, job_id: &str, launcher_pid: u32) -> Plan {
    match (np, foreign) {
        (None, Some(rank)) => Plan { pes: vec![PeSpec { rank, env: Vec::new() }], remove_env: ALL_ENV.to_vec() },
        (np, _) => {
            let size = np.unwrap_or(1);
            let pes = (0..size).map(|rank| PeSpec { rank, env: pe_env(rank, size, job_id, launcher_pid) }).collect();
            Plan { pes, remove_env: Vec::new() }
        }
    }
}

/// The `ISHMRUN_*` variables of one PE (all PEs are on this node).
fn pe_env(rank: usize, size: usize, job_id: &str, launcher_pid: u32) -> Vec<(String, String)> {
    vec![
        (ENV_RANK.to_string(), rank.to_string()),
        (ENV_SIZE.to_string(), size.to_string()),
        (ENV_LOCAL_RANK.to_string(), rank.to_string()),
        (ENV_LOCAL_SIZE.to_string(), size.to_string()),
        (ENV_JOBID.to_string(), job_id.to_string()),
        (ENV_LAUNCHER_PID.to_string(), launcher_pid.to_string()),
    ]
}

/// A fresh job id: 32 lowercase hex digits (16 bytes) from the kernel's random source
/// (getrandom, else /dev/urandom; never a guessable fallback). It is the job's secret: the
/// PEs' file names are one-way from it (`ishmem::bootstrap::secret`), and it travels only in
/// the PEs' environment, which other users cannot read.
pub fn new_job_id() -> Result<String, String> {
    ishmem::bootstrap::random_hex(16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn job_id_is_32_lowercase_hex() {
        let a = new_job_id().unwrap();
        let b = new_job_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }

    #[test]
    fn foreign_rank_detection() {
        assert_eq!(foreign_rank(lookup(&[])), None);
        assert_eq!(foreign_rank(lookup(&[("PMI_RANK", "3")])), Some(3));
        assert_eq!(foreign_rank(lookup(&[("PMIX_RANK", "2"), ("PMI_RANK", "3")])), Some(2));
        assert_eq!(foreign_rank(lookup(&[("OMPI_COMM_WORLD_RANK", "7"), ("PMIX_RANK", "2")])), Some(7));
        assert_eq!(foreign_rank(lookup(&[("OMPI_COMM_WORLD_RANK", "x"), ("PMI_RANK", "4")])), Some(4));
        assert_eq!(foreign_rank(lookup(&[("PMI_RANK", "garbage")])), None);
        assert_eq!(foreign_rank(lookup(&[("SLURM_PROCID", "5")])), Some(5));
    }

    #[test]
    fn plan_for_np() {
        let p = make(Some(3), None, "00112233aabbccdd", 42);
        assert_eq!(p.pes.len(), 3);
        assert!(p.remove_env.is_empty());
        let env: HashMap<_, _> = p.pes[2].env.iter().cloned().collect();
        assert_eq!(env["ISHMRUN_RANK"], "2");
        assert_eq!(env["ISHMRUN_SIZE"], "3");
        assert_eq!(env["ISHMRUN_LOCAL_RANK"], "2");
        assert_eq!(env["ISHMRUN_LOCAL_SIZE"], "3");
        assert_eq!(env["ISHMRUN_JOBID"], "00112233aabbccdd");
        assert_eq!(env["ISHMRUN_LAUNCHER_PID"], "42");
    }

    #[test]
    fn explicit_np_wins_over_foreign_launcher() {
        let p = make(Some(2), Some(5), "id", 1);
        assert_eq!(p.pes.iter().map(|pe| pe.rank).collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn default_is_one_pe() {
        let p = make(None, None, "id", 1);
        assert_eq!(p.pes.len(), 1);
        assert_eq!(p.pes[0].rank, 0);
        assert_eq!(p.pes[0].env.len(), 6);
    }

    #[test]
    fn wrapper_mode() {
        let p = make(None, Some(5), "id", 1);
        assert_eq!(p.pes, vec![PeSpec { rank: 5, env: Vec::new() }]);
        assert_eq!(p.remove_env.len(), 7);
        assert!(p.remove_env.contains(&ENV_UID));
    }
}
