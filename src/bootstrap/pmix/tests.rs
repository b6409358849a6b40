//! Unit tests of `bootstrap::pmix`.

use super::*;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

fn env(list: &[(&str, &str)]) -> Env {
    Env { vars: list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
}

fn no_lib() -> Result<&'static Lib, String> {
    panic!("the library must not be loaded here")
}

#[test]
fn not_under_pmix_is_none() {
    let e = env(&[("OMPI_COMM_WORLD_SIZE", "2"), ("SLURM_JOB_ID", "7")]);
    assert!(Pmix::from_parts(&e, no_lib, Duration::from_secs(1)).unwrap().is_none());
}

#[test]
fn half_set_variables_name_launcher_and_what_is_missing() {
    let e = env(&[("PMIX_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2")]);
    let err = Pmix::from_parts(&e, no_lib, Duration::from_secs(1)).unwrap_err();
    assert_eq!(
        err,
        "PMIx: started by OpenMPI's mpirun (PMIX_NAMESPACE=?, PMIX_RANK=1), but PMIX_NAMESPACE and \
         PMIX_SERVER_URI* (the PMIx server's address) are not set, so no PMIx server can be reached"
    );
    let e = env(&[("PMIX_NAMESPACE", "slurm.pmix.5.0"), ("PMIX_RANK", "0"), ("SLURM_STEP_ID", "0")]);
    let err = Pmix::from_parts(&e, no_lib, Duration::from_secs(1)).unwrap_err();
    assert!(
        err.starts_with("PMIx: started by Slurm's srun --mpi=pmix (PMIX_NAMESPACE=slurm.pmix.5.0, PMIX_RANK=0), but PMIX_SERVER_URI*"),
        "{err}"
    );
}

#[test]
fn launcher_names() {
    assert!(env(&[("OMPI_COMM_WORLD_SIZE", "2"), ("SLURM_JOB_ID", "3")]).launcher().starts_with("OpenMPI's mpirun ("));
    assert!(env(&[("OMPI_COMM_WORLD_SIZE", "2"), ("PMIX_NAMESPACE", "prterun-vm-1@1")])
        .launcher()
        .starts_with("OpenMPI 5's mpirun (PRRTE)"));
    assert!(env(&[("SLURM_STEP_ID", "0")]).launcher().starts_with("Slurm's srun --mpi=pmix"));
    assert!(env(&[("PRTE_LAUNCHED", "1")]).launcher().starts_with("PRRTE's prterun"));
    assert_eq!(env(&[("PMIX_RANK", "3")]).launcher(), "a PMIx launcher (PMIX_NAMESPACE=?, PMIX_RANK=3)");
    let e = env(&[("PMIX_SERVER_URI2", "a"), ("PMIX_SERVER_URI41", "b"), ("PMIX_SERVER_URI4", "c")]);
    assert_eq!(e.server_uri(), Some(("PMIX_SERVER_URI41", "b")));
    assert_eq!(env(&[("PMIX_SERVER_URI5", "x")]).server_uri(), Some(("PMIX_SERVER_URI5", "x")));
}

#[test]
fn missing_library_is_one_line_naming_the_launcher() {
    let e = env(&[
        ("PMIX_NAMESPACE", "123"),
        ("PMIX_RANK", "0"),
        ("PMIX_SERVER_URI4", "123.0;tcp4://127.0.0.1:1"),
        ("OMPI_COMM_WORLD_SIZE", "1"),
    ]);
    let err = Pmix::from_parts(&e, || Lib::load("libpmix-ishmem-test-absent.so.2"), Duration::from_secs(1)).unwrap_err();
    assert!(
        err.starts_with(
            "PMIx: started by OpenMPI's mpirun (PMIX_NAMESPACE=123, PMIX_RANK=0), but the PMIx client library cannot be loaded: libpmix-ishmem-test-absent.so.2: cannot open shared object file"
        ),
        "{err}"
    );
    assert!(err.ends_with("(install libpmix2, PMIx 4.x)") && !err.contains('\n'), "{err}");
    // A library without the PMIx symbols is refused by name.
    let err = Lib::load("libc.so.6").err().unwrap();
    assert!(err.starts_with("libc.so.6 has no symbol PMIx_Init"), "{err}");
}

#[test]
fn library_version_or_why_not() {
    match library_version() {
        Ok(v) => {
            println!("libpmix: {v}");
            assert!(v.contains("PMIx"), "{v}");
        }
        Err(e) => {
            println!("skipped: {e}");
            assert!(e.starts_with("PMIx: cannot load libpmix.so.2: "), "{e}");
        }
    }
}

#[test]
fn secs_formats() {
    assert_eq!(secs(Duration::from_secs(60)), "60 s");
    assert_eq!(secs(Duration::from_millis(1500)), "1.5 s");
}

// -----------------------------------------------------------------------------------------
// The layouts against the installed headers.

fn pmix_include_dir() -> Option<String> {
    if let Ok(o) = Command::new("pkg-config").args(["--cflags-only-I", "pmix"]).output() {
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        for tok in s.split_whitespace() {
            if let Some(d) = tok.strip_prefix("-I") {
                if std::path::Path::new(d).join("pmix_common.h").exists() {
                    return Some(d.to_string());
                }
            }
        }
    }
    [
        "/usr/lib/x86_64-linux-gnu/pmix2/include",
        "/usr/lib/aarch64-linux-gnu/pmix2/include",
        "/usr/include/pmix",
        "/usr/include",
        "/usr/local/include",
    ]
    .iter()
    .find(|d| std::path::Path::new(d).join("pmix_common.h").exists())
    .map(|d| d.to_string())
}

#[test]
fn layouts_match_the_c_headers() {
    use std::mem::{offset_of, size_of};
    let Some(inc) = pmix_include_dir() else {
        println!("skipped: pmix_common.h not found (pkg-config pmix, /usr/lib/*/pmix2/include, /usr/include)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("ishmem-pmix-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include <stddef.h>
#include <pmix_common.h>
#define N(x) printf("%s %lld\n", #x, (long long)(x))
#define S(x) printf("%s %s\n", #x, x)
int main(void) {
  N(sizeof(pmix_proc_t)); N(offsetof(pmix_proc_t, rank));
  N(sizeof(pmix_byte_object_t)); N(offsetof(pmix_byte_object_t, size));
  N(sizeof(((pmix_value_t*)0)->data)); N(sizeof(pmix_value_t)); N(offsetof(pmix_value_t, data));
  N(sizeof(pmix_info_t)); N(offsetof(pmix_info_t, flags)); N(offsetof(pmix_info_t, value));
  N(sizeof(pmix_status_t)); N(sizeof(pmix_rank_t)); N(sizeof(pmix_data_type_t)); N(sizeof(pmix_scope_t));
  N(PMIX_MAX_NSLEN); N(PMIX_MAX_KEYLEN); N(PMIX_RANK_WILDCARD); N(PMIX_GLOBAL);
  N(PMIX_SUCCESS); N(PMIX_ERR_TIMEOUT); N(PMIX_ERR_UNREACH); N(PMIX_ERR_INIT); N(PMIX_ERR_NOT_FOUND);
  N(PMIX_BOOL); N(PMIX_BYTE); N(PMIX_STRING); N(PMIX_SIZE); N(PMIX_INT); N(PMIX_INT8); N(PMIX_INT16);
  N(PMIX_INT32); N(PMIX_INT64); N(PMIX_UINT); N(PMIX_UINT8); N(PMIX_UINT16); N(PMIX_UINT32);
  N(PMIX_UINT64); N(PMIX_BYTE_OBJECT); N(PMIX_PROC_RANK);
  S(PMIX_JOB_SIZE); S(PMIX_LOCAL_RANK); S(PMIX_LOCAL_SIZE); S(PMIX_NODEID); S(PMIX_HOSTNAME);
  S(PMIX_COLLECT_DATA); S(PMIX_TIMEOUT);
  return 0;
}
"#,
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = match Command::new(&cc).arg(format!("-I{inc}")).arg(&src).arg("-o").arg(&exe).output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: no C compiler ({cc}: {e})");
            return;
        }
    };
    assert!(out.status.success(), "compiling against {inc} failed: {}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(run.stdout).unwrap();
    let c: std::collections::HashMap<&str, &str> = text.lines().filter_map(|l| l.rsplit_once(' ')).collect();
    let num = |k: &str| -> i64 { c.get(k).unwrap_or_else(|| panic!("{k} missing in {text}")).parse().unwrap() };
    let nums: &[(&str, i64)] = &[
        ("sizeof(pmix_proc_t)", size_of::<PmixProc>() as i64),
        ("offsetof(pmix_proc_t, rank)", offset_of!(PmixProc, rank) as i64),
        ("sizeof(pmix_byte_object_t)", size_of::<PmixByteObject>() as i64),
        ("offsetof(pmix_byte_object_t, size)", offset_of!(PmixByteObject, size) as i64),
        ("sizeof(((pmix_value_t*)0)->data)", size_of::<PmixValueData>() as i64),
        ("sizeof(pmix_value_t)", size_of::<PmixValue>() as i64),
        ("offsetof(pmix_value_t, data)", offset_of!(PmixValue, data) as i64),
        ("sizeof(pmix_info_t)", size_of::<PmixInfo>() as i64),
        ("offsetof(pmix_info_t, flags)", offset_of!(PmixInfo, flags) as i64),
        ("offsetof(pmix_info_t, value)", offset_of!(PmixInfo, value) as i64),
        ("sizeof(pmix_status_t)", size_of::<PmixStatus>() as i64),
        ("sizeof(pmix_rank_t)", size_of::<PmixRank>() as i64),
        ("sizeof(pmix_data_type_t)", size_of::<PmixDataType>() as i64),
        ("sizeof(pmix_scope_t)", size_of::<PmixScope>() as i64),
        ("PMIX_MAX_NSLEN", PMIX_MAX_NSLEN as i64),
        ("PMIX_MAX_KEYLEN", PMIX_MAX_KEYLEN as i64),
        ("PMIX_RANK_WILDCARD", PMIX_RANK_WILDCARD as i64),
        ("PMIX_GLOBAL", PMIX_GLOBAL as i64),
        ("PMIX_SUCCESS", PMIX_SUCCESS as i64),
        ("PMIX_ERR_TIMEOUT", PMIX_ERR_TIMEOUT as i64),
        ("PMIX_ERR_UNREACH", PMIX_ERR_UNREACH as i64),
        ("PMIX_ERR_INIT", PMIX_ERR_INIT as i64),
        ("PMIX_ERR_NOT_FOUND", PMIX_ERR_NOT_FOUND as i64),
        ("PMIX_BOOL", PMIX_BOOL as i64),
        ("PMIX_BYTE", PMIX_BYTE as i64),
        ("PMIX_STRING", PMIX_STRING as i64),
        ("PMIX_SIZE", PMIX_SIZE as i64),
        ("PMIX_INT", PMIX_INT as i64),
        ("PMIX_INT8", PMIX_INT8 as i64),
        ("PMIX_INT16", PMIX_INT16 as i64),
        ("PMIX_INT32", PMIX_INT32 as i64),
        ("PMIX_INT64", PMIX_INT64 as i64),
        ("PMIX_UINT", PMIX_UINT as i64),
        ("PMIX_UINT8", PMIX_UINT8 as i64),
        ("PMIX_UINT16", PMIX_UINT16 as i64),
        ("PMIX_UINT32", PMIX_UINT32 as i64),
        ("PMIX_UINT64", PMIX_UINT64 as i64),
        ("PMIX_BYTE_OBJECT", PMIX_BYTE_OBJECT as i64),
        ("PMIX_PROC_RANK", PMIX_PROC_RANK as i64),
    ];
    for (k, rust) in nums {
        assert_eq!(num(k), *rust, "{k}: C says {}, Rust {rust}", num(k));
    }
    let keys: &[(&str, &CStr)] = &[
        ("PMIX_JOB_SIZE", PMIX_JOB_SIZE),
        ("PMIX_LOCAL_RANK", PMIX_LOCAL_RANK),
        ("PMIX_LOCAL_SIZE", PMIX_LOCAL_SIZE),
        ("PMIX_NODEID", PMIX_NODEID),
        ("PMIX_HOSTNAME", PMIX_HOSTNAME),
        ("PMIX_COLLECT_DATA", PMIX_COLLECT_DATA),
        ("PMIX_TIMEOUT", PMIX_TIMEOUT),
    ];
    for (k, rust) in keys {
        assert_eq!(c.get(k).copied(), Some(rust.to_str().unwrap()), "{k}");
    }
    println!("pmix layouts match {inc}/pmix_common.h ({} checks)", nums.len() + keys.len());
}

// -----------------------------------------------------------------------------------------
// Real PMIx servers: OpenMPI's mpirun, and fake dead ones. Each runs this test binary again
// as a child process (the `child` test below), so that PMIx state never mixes between tests.

fn child_test_name() -> String {
    let path = module_path!();
    let path = path.split_once("::").map_or(path, |(_, rest)| rest);
    format!("{path}::child")
}

fn child_args() -> Vec<String> {
    vec![child_test_name(), "--exact".into(), "--ignored".into(), "--nocapture".into(), "--test-threads=1".into()]
}

/// Runs `cmd`, killing it (SIGTERM, then SIGKILL) if it runs past `limit`; returns its exit
/// code (None when killed by a signal), its stdout+stderr and how long it ran.
fn run_bounded(cmd: &mut Command, limit: Duration) -> (Option<i32>, String, Duration) {
    let t0 = Instant::now();
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let ho = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let he = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let mut killed = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > limit && !killed {
            // SAFETY: kill(2) of our own child's pid; no memory is involved.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(3));
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!("{}{}", ho.join().unwrap(), he.join().unwrap());
    assert!(!killed, "command ran past {limit:?} and was killed; output:\n{text}");
    (status.code(), text, t0.elapsed())
}

/// OpenMPI's `mpirun`, or why the mpirun tests are skipped.
fn openmpi_mpirun() -> Result<String, String> {
    for cand in ["mpirun.openmpi", "mpirun"] {
        if let Ok(o) = Command::new(cand).arg("--version").output() {
            let v = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
            if v.contains("Open MPI") {
                return Ok(cand.to_string());
            }
        }
    }
    Err("skipped: no OpenMPI mpirun found (mpirun.openmpi, mpirun)".into())
}

fn mpirun(np: usize, mode: &str) -> Option<(Option<i32>, String, Duration)> {
    let m = match openmpi_mpirun() {
        Ok(m) => m,
        Err(why) => {
            println!("{why}");
            return None;
        }
    };
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(m);
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &np.to_string(), "-x", "ISHMEM_PMIX_TEST_MODE"])
        .arg(exe)
        .args(child_args())
        .env("ISHMEM_PMIX_TEST_MODE", mode);
    let r = run_bounded(&mut cmd, Duration::from_secs(60));
    println!("mpirun -np {np} ({mode}) exited {:?} after {:?}:\n{}", r.0, r.2, r.1);
    Some(r)
}

/// Two rounds of binary values of different sizes (0 B and 4 KiB included), then early
/// finalize and staggered ordinary exits, which mpirun must accept (exit 0).
#[test]
fn exchange_under_mpirun() {
    let Some((code, out, _)) = mpirun(3, "exchange") else { return };
    assert_eq!(code, Some(0), "{out}");
    for r in 0..3 {
        assert!(out.contains(&format!("pmix child {r}/3 exchanged ok")), "rank {r} missing:\n{out}");
    }
}

/// PMIx_Abort from one rank ends the job with its status, and prints the message.
#[test]
fn abort_under_mpirun() {
    let Some((code, out, took)) = mpirun(3, "abort") else { return };
    assert_eq!(code, Some(7), "{out}");
    assert!(out.contains("PMIx: rank 1 aborting the job (status 7): test abort from rank 1"), "{out}");
    assert!(!out.contains("not killed"), "{out}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// After PMIx_Finalize, abort_job (a new PMIx_Init + PMIx_Abort) still ends the job.
#[test]
fn abort_after_finalize_under_mpirun() {
    let Some((code, out, took)) = mpirun(3, "abort_after_finalize") else { return };
    assert_eq!(code, Some(5), "{out}");
    assert!(out.contains("PMIx: rank 2 aborting the job (status 5): late abort"), "{out}");
    assert!(!out.contains("not killed"), "{out}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// Pins the mpirun behaviour the design relies on: after an early finalize a nonzero exit of
/// one rank ends the others (mpirun exits with that status); without finalize an exit 0 is
/// an "improper" exit that fails the job.
#[test]
fn exits_after_early_finalize_and_without_finalize() {
    let Some((code, out, took)) = mpirun(3, "finalized_exit3") else { return };
    assert_eq!(code, Some(3), "{out}");
    assert!(out.contains("mpirun detected that one or more processes exited with non-zero status"), "{out}");
    assert!(!out.contains("not killed"), "{out}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let Some((code, out, _)) = mpirun(2, "no_finalize") else { return };
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("exiting improperly"), "{out}");
}

/// A rank that reaches the fence too late: every rank's allgather fails after the timeout
/// instead of waiting for ever.
#[test]
fn late_rank_times_the_fence_out() {
    let Some((code, out, _)) = mpirun(3, "fence_timeout") else { return };
    assert_eq!(code, Some(0), "{out}");
    for r in 0..3 {
        let want = format!(
            "rank {r} got: PMIx: timed out after 2 s in PMIx_Fence of allgather('late'): not every rank of the 3 ranks of OpenMPI's mpirun"
        );
        assert!(out.contains(&want), "{want}\n{out}");
    }
}

fn child_alone(mode: &str, vars: &[(&str, String)]) -> (Option<i32>, String, Duration) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(child_args()).env("ISHMEM_PMIX_TEST_MODE", mode);
    for (k, _) in std::env::vars() {
        if ["PMIX_", "OMPI_", "SLURM_", "PRTE_"].iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(k);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let r = run_bounded(&mut cmd, Duration::from_secs(30));
    println!("child ({mode}) exited {:?} after {:?}:\n{}", r.0, r.2, r.1);
    r
}

fn fake_server_env(port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("PMIX_NAMESPACE", "ishmem-test".into()),
        ("PMIX_RANK", "0".into()),
        ("PMIX_SERVER_URI4", format!("ishmem-test.0;tcp4://127.0.0.1:{port}")),
        ("PMIX_SERVER_URI41", format!("ishmem-test.0;tcp4://127.0.0.1:{port}")),
    ]
}

/// A server that accepts the connection and never answers: PMIx_Init would block for ever;
/// from_env gives up after its timeout with one line.
#[test]
fn silent_server_times_out() {
    if Lib::default().is_err() {
        println!("skipped: {LIB_NAME} cannot be loaded");
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (code, out, took) = child_alone("silent_server", &fake_server_env(port));
    drop(l);
    assert_eq!(code, Some(0), "{out}");
    let want = format!(
        "child got: PMIx: PMIx_Init did not return within 2 s under a PMIx launcher (PMIX_NAMESPACE=ishmem-test, PMIX_RANK=0): \
         the PMIx server at PMIX_SERVER_URI41=ishmem-test.0;tcp4://127.0.0.1:{port} does not answer"
    );
    assert!(out.contains(&want), "{out}");
    assert!(took < Duration::from_secs(15), "{took:?}");
}

/// A server that is gone (connection refused): PMIx_Init fails at once.
#[test]
fn refused_server_fails_fast() {
    if Lib::default().is_err() {
        println!("skipped: {LIB_NAME} cannot be loaded");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (code, out, _) = child_alone("refused_server", &fake_server_env(port));
    assert_eq!(code, Some(0), "{out}");
    let want = format!(
        "child got: PMIx: PMIx_Init failed under a PMIx launcher (PMIX_NAMESPACE=ishmem-test, PMIX_RANK=0): \
         UNREACHABLE (-25) (server PMIX_SERVER_URI41=ishmem-test.0;tcp4://127.0.0.1:{port})"
    );
    assert!(out.contains(&want), "{out}");
}

fn pattern(rank: usize, round: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + rank * 7 + round * 101) as u8).collect()
}

fn env_num(name: &str) -> usize {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} unset")).parse().unwrap()
}

/// What each process of the tests above does (ignored unless run by them).
#[test]
#[ignore = "run under mpirun or as a child process by the other pmix tests"]
fn child() {
    let mode = std::env::var("ISHMEM_PMIX_TEST_MODE").expect("ISHMEM_PMIX_TEST_MODE");
    let t = Duration::from_secs(2);
    if mode == "silent_server" || mode == "refused_server" {
        let t0 = Instant::now();
        let e = Pmix::from_env(t).unwrap_err();
        println!("child got: {e}");
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        return;
    }
    let t = if mode == "fence_timeout" { Duration::from_secs(2) } else { Duration::from_secs(20) };
    let mut p = Pmix::from_env(t).unwrap().expect("not under PMIx");
    let (r, n) = (p.rank(), p.size());
    if mode == "fence_timeout" {
        if r == 1 {
            std::thread::sleep(Duration::from_secs(4));
        }
        let t0 = Instant::now();
        let e = p.allgather("late", b"x").unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
        println!("rank {r} got: {e}");
        p.finalize().unwrap();
        return;
    }
    assert_eq!(r, env_num("PMIX_RANK"));
    assert_eq!(n, env_num("OMPI_COMM_WORLD_SIZE"));
    assert_eq!(p.local_rank(), env_num("OMPI_COMM_WORLD_LOCAL_RANK"));
    assert_eq!(p.local_size(), env_num("OMPI_COMM_WORLD_LOCAL_SIZE"));
    assert_eq!(p.node_id(), 0);
    assert_eq!(p.hostname(), super::super::hostname());
    assert_eq!(p.nspace(), std::env::var("PMIX_NAMESPACE").unwrap());
    assert!(p.launcher().starts_with("OpenMPI's mpirun (PMIX_NAMESPACE="), "{}", p.launcher());
    assert!(p.library_version().contains('4') || p.library_version().contains('5'), "{}", p.library_version());
    // Round 1: 0 B, 4 KiB, 17 B...; round 2: the other way round.
    let len1 = |q: usize| [0, 4096, 17, 1][q % 4];
    let len2 = |q: usize| [4096, 0, 1, 300][q % 4];
    let got = p.allgather("round1", &pattern(r, 1, len1(r))).unwrap();
    assert_eq!(got.len(), n);
    for (q, v) in got.iter().enumerate() {
        assert_eq!(v, &pattern(q, 1, len1(q)), "round 1, rank {q}");
    }
    let got = p.allgather("round2", &pattern(r, 2, len2(r))).unwrap();
    for (q, v) in got.iter().enumerate() {
        assert_eq!(v, &pattern(q, 2, len2(q)), "round 2, rank {q}");
    }
    match mode.as_str() {
        "exchange" => {
            let e = p.allgather("round1", b"again").unwrap_err();
            assert!(e.starts_with("PMIx: allgather key 'round1' was already used by an earlier round"), "{e}");
            let e = p.allgather("", b"").unwrap_err();
            assert!(e.starts_with("PMIx: allgather key \"\" is unusable"), "{e}");
            p.finalize().unwrap();
            // Ordinary exits at different times after the early finalize.
            std::thread::sleep(Duration::from_millis(300 * r as u64));
            println!("pmix child {r}/{n} exchanged ok");
        }
        "abort" => {
            if r == 1 {
                p.abort(7, "test abort from rank 1").unwrap();
                std::thread::sleep(Duration::from_secs(30));
                panic!("rank 1 not killed after its abort");
            }
            std::thread::sleep(Duration::from_secs(30));
            panic!("rank {r} not killed after rank 1's abort");
        }
        "abort_after_finalize" => {
            p.finalize().unwrap();
            if r == 2 {
                abort_job(5, "late abort", Duration::from_secs(10)).unwrap();
            }
            std::thread::sleep(Duration::from_secs(30));
            panic!("rank {r} not killed after rank 2's abort");
        }
        "finalized_exit3" => {
            p.finalize().unwrap();
            if r == 1 {
                std::process::exit(3);
            }
            std::thread::sleep(Duration::from_secs(30));
            panic!("rank {r} not killed after rank 1 exited 3");
        }
        "no_finalize" => {
            // Exit 0 without PMIx_Finalize (what a forgotten finalize would do).
            std::mem::forget(p);
            std::process::exit(0);
        }
        m => panic!("unknown mode {m}"),
    }
}
