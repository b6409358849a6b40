//! Integration tests: run the built `ishmrun` binary on small `/bin/sh`
//! programs and check output, exit status, messages and cleanup.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// A command for `ishmrun` with an environment free of foreign launchers
/// and of `ISHMRUN_*` variables from any enclosing job.
fn ishmrun() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ishmrun"));
    for var in [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "ISHMRUN_RANK",
        "ISHMRUN_SIZE",
        "ISHMRUN_LOCAL_RANK",
        "ISHMRUN_LOCAL_SIZE",
        "ISHMRUN_JOBID",
        "ISHMRUN_LAUNCHER_PID",
    ] {
        cmd.env_remove(var);
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn run(args: &[&str]) -> Output {
    ishmrun().args(args).output().expect("failed to run ishmrun")
}

fn stdout_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

fn sorted_lines(out: &Output) -> Vec<String> {
    let mut lines = stdout_lines(out);
    lines.sort();
    lines
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh, empty scratch directory for one test.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ishmrun-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Waits for `child` with a deadline; kills it and fails the test on expiry.
fn wait_with_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ishmrun did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the pids that the PEs wrote into `dir/pid.*`, waiting until `n`
/// complete files exist.
fn wait_for_pids(dir: &Path, n: usize) -> Vec<libc::pid_t> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids: Vec<libc::pid_t> = (0..n)
            .filter_map(|r| std::fs::read_to_string(dir.join(format!("pid.{r}"))).ok())
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        if pids.len() == n {
            return pids;
        }
        assert!(Instant::now() < deadline, "PEs did not write their pid files");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a running (non-zombie) process. Zombies count as gone:
/// orphans may wait a while for a container's init to reap them.
fn process_exists(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            !matches!(state.and_then(|s| s.chars().next()), Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}

#[test]
fn ranks_and_size() {
    let out = run(&["-n", "3", "sh", "-c", "echo $ISHMRUN_RANK/$ISHMRUN_SIZE"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sorted_lines(&out), vec!["0/3", "1/3", "2/3"]);
}

#[test]
fn local_rank_size_and_launcher_pid() {
    let child = ishmrun()
        .args(["-n", "2", "sh", "-c", "echo $ISHMRUN_RANK:$ISHMRUN_LOCAL_RANK:$ISHMRUN_LOCAL_SIZE:$ISHMRUN_LAUNCHER_PID"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(sorted_lines(&out), vec![format!("0:0:2:{pid}"), format!("1:1:2:{pid}")]);
}

#[test]
fn default_is_a_single_pe() {
    let out = run(&["sh", "-c", "echo $ISHMRUN_RANK/$ISHMRUN_SIZE"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_lines(&out), vec!["0/1"]);
}

#[test]
fn job_id_shared_and_well_formed() {
    let script = "echo $ISHMRUN_JOBID";
    let out = run(&["-n", "4", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0));
    let ids: HashSet<String> = stdout_lines(&out).into_iter().collect();
    assert_eq!(ids.len(), 1, "PEs disagree on the job id: {ids:?}");
    let id = ids.into_iter().next().unwrap_or_default();
    assert_eq!(id.len(), 32, "bad job id {id:?}");
    assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    let again = run(&["-n", "1", "sh", "-c", script]);
    assert_ne!(stdout_lines(&again), vec![id], "job ids must differ between runs");
}

#[test]
fn arguments_after_program_are_passed_through() {
    let out = run(&["-n", "1", "sh", "-c", "echo \"$0|$*\"", "zero", "-n", "5", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_lines(&out), vec!["zero|-n 5 --help"]);
}

#[test]
fn tag_output_prefixes_lines() {
    let out = run(&["-t", "-n", "2", "sh", "-c", "echo hi"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(sorted_lines(&out), vec!["[PE 0] hi", "[PE 1] hi"]);
}

#[test]
fn tag_output_stderr_and_partial_lines() {
    let out = run(&["--tag-output", "-n", "2", "sh", "-c", "echo err >&2; printf partial"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(sorted_lines(&out), vec!["[PE 0] partial", "[PE 1] partial"]);
    assert!(out.stdout.ends_with(b"\n"));
    let mut err: Vec<&str> = std::str::from_utf8(&out.stderr).unwrap_or("").lines().collect();
    err.sort();
    assert_eq!(err, vec!["[PE 0] err", "[PE 1] err"]);
}

#[test]
fn tag_output_lines_do_not_interleave() {
    let script = "i=0; while [ $i -lt 300 ]; do echo \"line $ISHMRUN_RANK $i of a reasonably long text\"; i=$((i+1)); done";
    let out = run(&["-t", "-n", "4", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0));
    let lines = stdout_lines(&out);
    assert_eq!(lines.len(), 4 * 300);
    for rank in 0..4 {
        let prefix = format!("[PE {rank}] line {rank} ");
        let mine: Vec<&String> = lines.iter().filter(|l| l.starts_with(&prefix)).collect();
        assert_eq!(mine.len(), 300, "PE {rank} lines garbled");
        for (i, line) in mine.iter().enumerate() {
            assert_eq!(**line, format!("{prefix}{i} of a reasonably long text"));
        }
    }
}

#[test]
fn stdin_goes_to_first_pe_only() {
    let mut child = ishmrun().args(["-n", "3", "sh", "-c", "cat"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(b"hello\n").expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_lines(&out), vec!["hello"]);
}

#[test]
fn killed_pe_terminates_job() {
    let script = "if [ $ISHMRUN_RANK = 1 ]; then kill -9 $$; else exec sleep 30; fi";
    for tag in [false, true] {
        let mut args = vec!["-n", "3", "sh", "-c", script];
        if tag {
            args.insert(0, "-t");
        }
        let start = Instant::now();
        let out = run(&args);
        // The other PEs sleep 30 s; finishing well before that means they
        // were terminated (a hang guard, not a speed check).
        assert!(start.elapsed() < Duration::from_secs(25), "took {:?}", start.elapsed());
        assert_eq!(out.status.code(), Some(137));
        let err = stderr(&out);
        assert!(err.contains("ishmrun: PE 1 (pid "), "stderr: {err}");
        assert!(err.contains("was killed by signal 9 (SIGKILL)"), "stderr: {err}");
        assert!(err.contains("ishmrun: terminating the remaining 2 PEs"), "stderr: {err}");
    }
}

#[test]
fn failing_pe_exit_status() {
    let script = "if [ $ISHMRUN_RANK = 1 ]; then exit 3; else exec sleep 30; fi";
    let start = Instant::now();
    let out = run(&["-n", "3", "sh", "-c", script]);
    // Hang guard: PEs 0 and 2 would sleep 30 s unless terminated.
    assert!(start.elapsed() < Duration::from_secs(25));
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(err.contains("ishmrun: PE 1 (pid "), "stderr: {err}");
    assert!(err.contains(") exited with status 3"), "stderr: {err}");
    // Only the first failure is reported, not the PEs we terminated.
    assert_eq!(err.matches("exited with status").count(), 1, "stderr: {err}");
    assert!(!err.contains("was killed"), "stderr: {err}");
}

#[test]
fn sigterm_resistant_pe_is_killed_after_grace() {
    // PE 1 ignores SIGTERM (it records that it got one) and would run for
    // ever; PE 0 fails only once PE 1's trap is in place, so the launcher's
    // SIGTERM is certain to be ignored and only the SIGKILL after the grace
    // period can end PE 1. Markers, not clocks, tell what happened.
    let dir = scratch_dir("sigterm-resistant");
    let d = dir.display();
    let script = format!(
        "if [ $ISHMRUN_RANK = 0 ]; then \
             while [ ! -e {d}/ready ]; do sleep 0.02; done; exit 4; \
         else \
             trap 'echo term > {d}/term' TERM; touch {d}/ready; \
             i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; \
             touch {d}/survived; \
         fi"
    );
    let out = run(&["-n", "2", "sh", "-c", &script]);
    let got_term = dir.join("term").exists();
    let survived = dir.join("survived").exists();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(4), "stderr: {}", stderr(&out));
    assert!(got_term, "PE 1 never received SIGTERM");
    assert!(!survived, "PE 1 was not killed after the grace period");
    assert!(stderr(&out).contains("terminating the remaining 1 PE\n"));
}

#[test]
fn timeout_kills_job() {
    let start = Instant::now();
    let out = run(&["--timeout", "1", "-n", "2", "sleep", "30"]);
    let elapsed = start.elapsed();
    assert_eq!(out.status.code(), Some(124));
    assert!(elapsed >= Duration::from_millis(900), "too early: {elapsed:?}");
    // Hang guard: the PEs would sleep 30 s unless killed.
    assert!(elapsed < Duration::from_secs(25), "too late: {elapsed:?}");
    assert!(stderr(&out).contains("ishmrun: job timed out after 1 s; killing the PEs"));
}

#[test]
fn successful_job_with_timeout_exits_zero() {
    let out = run(&["--timeout", "20", "-n", "2", "true"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    let cases: [(&[&str], &str); 7] = [
        (&[], "no program given"),
        (&["-n"], "option '-n' requires a value"),
        (&["-n", "0", "true"], "invalid number of PEs '0'"),
        (&["--frobnicate", "true"], "unknown option '--frobnicate'"),
        (&["--timeout", "soon", "true"], "invalid timeout 'soon'"),
        (&["-n", "2", "no-such-program-ishmrun-test"], "ishmrun: cannot execute 'no-such-program-ishmrun-test': No such file or directory"),
        (&["./does/not/exist"], "ishmrun: cannot execute './does/not/exist': No such file or directory"),
    ];
    for (args, message) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "args {args:?}");
        assert!(stderr(&out).contains(message), "args {args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn non_executable_program_is_rejected() {
    let dir = scratch_dir("noexec");
    let file = dir.join("script.sh");
    std::fs::write(&file, "#!/bin/sh\necho hi\n").expect("write");
    let path = file.to_string_lossy().into_owned();
    let out = run(&["-n", "2", &path]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2));
    // Running as root makes access(X_OK) fail only when no x bit is set.
    assert!(stderr(&out).contains(&format!("cannot execute '{path}': Permission denied")), "stderr: {}", stderr(&out));
}

#[test]
fn help_and_version() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: ishmrun"));
    let out = run(&["-V"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ishmrun "));
}

#[test]
fn sigterm_to_launcher_terminates_pes() {
    let dir = scratch_dir("sigterm");
    let script = format!("echo $$ > {}/pid.$ISHMRUN_RANK; exec sleep 30", dir.display());
    let mut child = ishmrun().args(["-n", "3", "sh", "-c", &script]).stderr(Stdio::piped()).spawn().expect("spawn");
    let pids = wait_for_pids(&dir, 3);
    assert!(pids.iter().all(|&p| process_exists(p)));
    let launcher = libc::pid_t::try_from(child.id()).expect("pid fits");
    // SAFETY: sending a signal to our own child process; no memory involved.
    unsafe { libc::kill(launcher, libc::SIGTERM) };
    let status = wait_with_deadline(&mut child, Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    for pid in pids {
        assert!(!process_exists(pid), "PE pid {pid} survived");
    }
}

#[test]
fn sigkill_to_launcher_kills_pes() {
    let dir = scratch_dir("sigkill");
    let script = format!("echo $$ > {}/pid.$ISHMRUN_RANK; exec sleep 30", dir.display());
    let mut child = ishmrun().args(["-n", "2", "sh", "-c", &script]).spawn().expect("spawn");
    let pids = wait_for_pids(&dir, 2);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    // Orphaned PEs are reaped by init; give the kernel a moment.
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| process_exists(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(!process_exists(pid), "PE pid {pid} outlived a killed launcher");
    }
}

#[test]
fn wrapper_mode_under_foreign_launcher() {
    let out = ishmrun()
        .args(["-t", "sh", "-c", "echo rank=$ISHMRUN_RANK size=$ISHMRUN_SIZE; exit 7"])
        .env("OMPI_COMM_WORLD_RANK", "5")
        .env("ISHMRUN_RANK", "9")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(stdout_lines(&out), vec!["[PE 5] rank= size="]);
}

#[test]
fn wrapper_mode_pmi_rank_and_explicit_np() {
    let out = ishmrun().args(["-t", "sh", "-c", "echo ok"]).env("PMI_RANK", "2").output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_lines(&out), vec!["[PE 2] ok"]);
    // An explicit -n launches a normal job even under another launcher.
    let out = ishmrun().args(["-n", "2", "sh", "-c", "echo $ISHMRUN_RANK"]).env("PMIX_RANK", "3").output().expect("run");
    assert_eq!(sorted_lines(&out), vec!["0", "1"]);
}

#[test]
fn np_as_mpirun_spells_it() {
    // issue 14: `ishmrun -np 4 prog` was rejected ("invalid number of PEs 'p'")
    let out = run(&["-np", "3", "sh", "-c", "echo $ISHMRUN_RANK/$ISHMRUN_SIZE"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sorted_lines(&out), vec!["0/3", "1/3", "2/3"]);
    let out = run(&["--np", "2", "sh", "-c", "echo $ISHMRUN_SIZE"]);
    assert_eq!(sorted_lines(&out), vec!["2", "2"]);
}

#[test]
fn program_in_current_directory_without_dot_slash() {
    // issue 14: found in the current directory when it is not on the PATH, as by mpirun
    let dir = scratch_dir("cwd-prog");
    let prog = dir.join("my-ishmem-prog");
    std::fs::write(&prog, "#!/bin/sh\necho ran $ISHMRUN_RANK\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = ishmrun().current_dir(&dir).args(["-n", "2", "my-ishmem-prog"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(sorted_lines(&out), vec!["ran 0", "ran 1"]);
    let out = ishmrun().current_dir(&dir).args(["-n", "2", "no-such-ishmem-prog"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot execute 'no-such-ishmem-prog': No such file or directory"), "stderr: {}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn summary_names_the_pe_that_failed_first() {
    // issue 14: PEs 0 and 2 end at once because PE 1 failed (as the library's watchdog does:
    // a `peer <rank> <cause>` line into ISHMRUN_REPORT first), while PE 1 itself takes a
    // while to exit. ishmrun reaps PE 0 or 2 first but must name PE 1 and exit with its
    // status.
    let script = r#"fd=${ISHMRUN_REPORT%%:*}
if [ "$ISHMRUN_RANK" = 1 ]; then sleep 0.5; exit 7; fi
eval "echo peer $ISHMRUN_RANK 1 >&$fd"
exit 1"#;
    let out = run(&["-n", "3", "sh", "-c", script]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(7), "stderr: {err}");
    assert!(err.contains("ishmrun: PE 1 (pid "), "stderr: {err}");
    assert!(err.contains(") exited with status 7"), "stderr: {err}");
    assert!(!err.contains("PE 0 (pid") && !err.contains("PE 2 (pid"), "stderr: {err}");
}

#[test]
fn summary_names_a_pe_that_ended_early_with_status_0() {
    // PE 1 exits 0 while the others still run; their library ends them with status 1
    // because of it: the summary names PE 1 and the job fails with the others' status.
    let script = r#"fd=${ISHMRUN_REPORT%%:*}
if [ "$ISHMRUN_RANK" = 1 ]; then exit 0; fi
sleep 0.3
eval "echo peer $ISHMRUN_RANK 1 >&$fd"
exit 1"#;
    let out = run(&["-n", "3", "sh", "-c", script]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains(") exited with status 0 while the other PEs were running; they ended because of it"), "stderr: {err}");
    assert!(err.contains("ishmrun: PE 1 (pid "), "stderr: {err}");
    assert!(!err.contains("PE 0 (pid") && !err.contains("PE 2 (pid"), "stderr: {err}");
}

#[test]
fn global_exit_lets_the_others_end_by_themselves() {
    // PE 1 says (as ishmem_global_exit does) that it called ishmem_global_exit(5) and exits;
    // PE 0 then takes a moment to leave by itself, as the library's watchdog makes it, and
    // records any SIGTERM. Before the `global` report the launcher terminated PE 0 at once
    // (its message about the exit was lost: the CI failure of live.global_exit).
    let dir = scratch_dir("global-exit");
    let d = dir.display();
    let script = format!(
        "if [ $ISHMRUN_RANK = 1 ]; then \
             echo 'global 1 5' > /proc/self/fd/${{ISHMRUN_REPORT%%:*}}; touch {d}/gone; exit 5; \
         else \
             trap 'echo term > {d}/term' TERM; \
             while [ ! -e {d}/gone ]; do sleep 0.02; done; sleep 0.5; \
             echo 'PE 0 leaves by itself'; exit 5; \
         fi"
    );
    let out = run(&["-n", "2", "sh", "-c", &script]);
    let got_term = dir.join("term").exists();
    let _ = std::fs::remove_dir_all(&dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "stderr: {err}");
    assert!(!got_term, "PE 0 was sent SIGTERM; stderr: {err}");
    assert_eq!(stdout_lines(&out), vec!["PE 0 leaves by itself"]);
    assert!(err.contains(") exited with status 5 (it called ishmem_global_exit(5): the other PEs end with it)\n"), "stderr: {err}");
    assert!(!err.contains("terminating"), "stderr: {err}");
}

#[test]
fn global_exit_terminates_the_pes_that_stay() {
    // The same, but PE 0 does not leave: after the grace period it gets SIGTERM.
    let script = "if [ $ISHMRUN_RANK = 1 ]; then \
                      echo 'global 1 7' > /proc/self/fd/${ISHMRUN_REPORT%%:*}; exit 7; \
                  else exec sleep 30; fi";
    let start = Instant::now();
    let out = run(&["-n", "2", "sh", "-c", script]);
    // Hang guard: PE 0 would sleep 30 s unless terminated.
    assert!(start.elapsed() < Duration::from_secs(25));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(7), "stderr: {err}");
    assert!(err.contains("(it called ishmem_global_exit(7): the other PEs end with it)"), "stderr: {err}");
    assert!(err.contains("ishmrun: terminating the remaining 1 PE\n"), "stderr: {err}");
}
