//! Starting the PEs and supervising them until the job ends.
//!
//! The monitor polls `waitpid(-1, WNOHANG)` every [`POLL`]. The first PE that
//! fails (nonzero exit or death by signal) starts the end of the job: the PE
//! named, and whose status is the job's, is the one that failed first, as the
//! PEs' reports say (`report`: a PE that the library ended because another PE
//! failed or died says which; when that PE has not ended yet, the monitor waits
//! up to [`GRACE`] for it). The remaining PEs then get SIGTERM and, after
//! [`GRACE`], SIGKILL. When the PE named said it called `ishmem_global_exit`, the
//! others are leaving by themselves (the library's watchdogs, and across nodes
//! the node leaders, see the request): they get [`GRACE`] to end before SIGTERM.
//! Signals caught by `ishmrun` are forwarded to live PEs, and `--timeout`
//! kills everything with exit status 124. Every path reaps every child, and
//! PEs get `PR_SET_PDEATHSIG` so they do not outlive a killed launcher.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::output::{Drain, Stream};
use crate::plan::{PeSpec, Plan};
use crate::report::{self as pipe, ReportPipe};
use crate::{report, signals};

/// How often the monitor polls for exited children and pending signals.
const POLL: Duration = Duration::from_millis(20);
/// How long PEs get between SIGTERM and SIGKILL after a failure.
const GRACE: Duration = Duration::from_secs(2);
/// How long to wait for tagged output to drain after the last PE exited.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// Exit status used when the job timed out (as timeout(1) does).
pub const TIMEOUT_STATUS: i32 = 124;
/// Exit status used when the job could not be started.
pub const START_FAILURE_STATUS: i32 = 2;

/// Everything needed to run a job.
#[derive(Debug)]
pub struct JobSpec {
    /// Resolved path of the program.
    pub program: PathBuf,
    /// `argv[0]` as the user wrote it.
    pub argv0: OsString,
    pub args: Vec<OsString>,
    pub plan: Plan,
    pub tag_output: bool,
    pub timeout: Option<Duration>,
}

/// A started PE.
#[derive(Debug)]
struct Pe {
    rank: usize,
    pid: libc::pid_t,
    /// False once reaped.
    alive: bool,
}

/// How a reaped child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    Code(i32),
    Signal { sig: i32, core: bool },
}

impl Exit {
    fn from_wait_status(status: libc::c_int) -> Self {
        if libc::WIFSIGNALED(status) {
            Exit::Signal { sig: libc::WTERMSIG(status), core: libc::WCOREDUMP(status) }
        } else {
            Exit::Code(libc::WEXITSTATUS(status))
        }
    }

    /// The launcher exit status this outcome maps to (0 for success).
    fn status(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal { sig, .. } => 128 + sig,
        }
    }
}

/// Runs the job to completion and returns `ishmrun`'s exit status.
pub fn run(spec: &JobSpec) -> i32 {
    let drain = Drain::new();
    // Without the pipe (no descriptors left?) the job runs the same; only the summary may then
    // name a PE that ended because of another.
    let mut reports = ReportPipe::new().ok();
    let mut pes = match spawn_all(spec, &drain, reports.as_ref()) {
        Ok(pes) => pes,
        Err(status) => {
            drain.wait(DRAIN_LIMIT);
            return status;
        }
    };
    if let Some(r) = reports.as_mut() {
        r.close_write();
    }
    let status = Monitor::new(spec.timeout, reports).run(&mut pes);
    drain.wait(DRAIN_LIMIT);
    status
}

/// Starts every PE. On failure, kills and reaps the ones already started and
/// returns the exit status to use.
fn spawn_all(spec: &JobSpec, drain: &Drain, reports: Option<&ReportPipe>) -> Result<Vec<Pe>, i32> {
    let mut pes = Vec::with_capacity(spec.plan.pes.len());
    for (index, pe) in spec.plan.pes.iter().enumerate() {
        match spawn_pe(spec, pe, index == 0, drain, reports) {
            Ok(pid) => pes.push(Pe { rank: pe.rank, pid, alive: true }),
            Err(e) => {
                report(&format!("cannot execute '{}': {}", spec.argv0.to_string_lossy(), crate::resolve::error_text(&e)));
                kill_and_reap(&mut pes);
                return Err(START_FAILURE_STATUS);
            }
        }
    }
    Ok(pes)
}

/// Starts one PE and, with `--tag-output`, its output pumps.
fn spawn_pe(spec: &JobSpec, pe: &PeSpec, first: bool, drain: &Drain, reports: Option<&ReportPipe>) -> io::Result<libc::pid_t> {
    let mut cmd = Command::new(&spec.program);
    cmd.arg0(&spec.argv0).args(&spec.args);
    for name in &spec.plan.remove_env {
        cmd.env_remove(name);
    }
    cmd.env_remove(pipe::ENV_REPORT);
    cmd.envs(pe.env.iter().map(|(k, v)| (k, v)));
    // Only PEs with ISHMRUN_* variables (not wrapper mode) are ours to hear from.
    if let (Some(r), false) = (reports, pe.env.is_empty()) {
        if let (Some(fd), Some(value)) = (r.write_fd(), r.env_value()) {
            cmd.env(pipe::ENV_REPORT, value);
            let hook = move || {
                pipe::inherit_in_child(fd);
                Ok(())
            };
            // SAFETY: the hook makes one fcntl call (async-signal-safe) and touches no other
            // state, as `pre_exec` requires.
            unsafe {
                cmd.pre_exec(hook);
            }
        }
    }
    // Like mpirun: only the first PE reads our stdin.
    cmd.stdin(if first { Stdio::inherit() } else { Stdio::null() });
    if spec.tag_output {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    set_parent_death_signal(&mut cmd);
    let mut child = cmd.spawn()?;
    let prefix = format!("[PE {}] ", pe.rank);
    if let Some(out) = child.stdout.take() {
        start_pump(drain, out, prefix.clone(), Stream::Stdout);
    }
    if let Some(err) = child.stderr.take() {
        start_pump(drain, err, prefix, Stream::Stderr);
    }
    // Dropping `child` neither waits nor kills; the monitor reaps it by pid.
    libc::pid_t::try_from(child.id()).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))
}

/// Starts a pump, warning if no thread could be created (the PE then gets
/// SIGPIPE / EPIPE when it writes, instead of blocking forever).
fn start_pump<R: io::Read + Send + 'static>(drain: &Drain, r: R, prefix: String, s: Stream) {
    if let Err(e) = drain.start_pump(r, prefix, s) {
        report(&format!("cannot start output thread: {e}"));
    }
}

/// Makes the child receive SIGKILL if `ishmrun` dies, so PEs never outlive
/// their launcher (the monitor's own paths always reap them anyway).
#[cfg(target_os = "linux")]
fn set_parent_death_signal(cmd: &mut Command) {
    // SAFETY: getpid(2) has no preconditions.
    let parent = unsafe { libc::getpid() };
    let hook = move || {
        // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid(2) are async-signal-safe
        // and touch no memory of ours, as required between fork and exec.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                // The launcher died before the prctl took effect.
                libc::_exit(1);
            }
        }
        Ok(())
    };
    // SAFETY: the hook only makes async-signal-safe system calls and does not
    // allocate, lock, or access shared state, as `pre_exec` requires.
    unsafe {
        cmd.pre_exec(hook);
    }
}

#[cfg(not(target_os = "linux"))]
fn set_parent_death_signal(_cmd: &mut Command) {}

/// SIGKILLs every live PE and reaps them all (blocking).
fn kill_and_reap(pes: &mut [Pe]) {
    signal_live(pes, libc::SIGKILL);
    for pe in pes.iter_mut().filter(|pe| pe.alive) {
        wait_blocking(pe.pid);
        pe.alive = false;
    }
}

/// Sends `sig` to every PE that has not been reaped yet.
fn signal_live(pes: &[Pe], sig: libc::c_int) {
    for pe in pes.iter().filter(|pe| pe.alive) {
        signals::send(pe.pid, sig);
    }
}

fn live_count(pes: &[Pe]) -> usize {
    pes.iter().filter(|pe| pe.alive).count()
}

/// Waits for one specific child, retrying on EINTR.
fn wait_blocking(pid: libc::pid_t) {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid, writable c_int owned by this frame.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Result of one non-blocking wait.
enum Reaped {
    Child(libc::pid_t, Exit),
    /// Children exist but none has exited.
    Nothing,
    /// No children are left at all (ECHILD).
    NoChildren,
}

/// Reaps at most one exited child without blocking.
fn reap_one() -> Reaped {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid, writable c_int owned by this frame.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            return Reaped::Child(pid, Exit::from_wait_status(status));
        }
        if pid == 0 {
            return Reaped::Nothing;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            _ => return Reaped::NoChildren,
        }
    }
}

/// The supervision state machine.
struct Monitor {
    started: Instant,
    timeout: Option<Duration>,
    /// The PEs' reports of which PE made them end.
    reports: Option<ReportPipe>,
    /// How each reaped PE ended: rank -> (pid, exit).
    exits: std::collections::HashMap<usize, (libc::pid_t, Exit)>,
    /// The first failure reaped: (rank, status).
    first: Option<(usize, i32)>,
    /// The PE the first failure blames, still running: (rank, since when we wait for it).
    waiting: Option<(usize, Instant)>,
    /// Exit status of the job once the failure is reported.
    failure: Option<i32>,
    /// When the remaining PEs were sent SIGTERM after a failure.
    terminating_since: Option<Instant>,
    /// Whether the post-grace SIGKILL was sent.
    killed: bool,
    /// When the PE named called `ishmem_global_exit` and the others were left to end by
    /// themselves (SIGTERM follows after [`GRACE`]).
    global_since: Option<Instant>,
}

impl Monitor {
    fn new(timeout: Option<Duration>, reports: Option<ReportPipe>) -> Self {
        Monitor {
            started: Instant::now(),
            timeout,
            reports,
            exits: std::collections::HashMap::new(),
            first: None,
            waiting: None,
            failure: None,
            terminating_since: None,
            killed: false,
            global_since: None,
        }
    }

    /// Supervises until every PE is reaped; returns the exit status.
    fn run(mut self, pes: &mut [Pe]) -> i32 {
        loop {
            self.reap_exited(pes);
            if live_count(pes) == 0 {
                if self.failure.is_none() {
                    if let Some((rank, _)) = self.first {
                        self.report_failure(pes, rank);
                    }
                }
                return self.failure.unwrap_or(0);
            }
            for sig in signals::take_pending() {
                signal_live(pes, sig);
            }
            if self.timed_out() {
                return self.kill_for_timeout(pes);
            }
            if let (Some((_, since)), Some((rank, _))) = (self.waiting, self.first) {
                if since.elapsed() >= GRACE {
                    // The blamed PE does not end: name the first failure reaped.
                    self.waiting = None;
                    self.report_failure(pes, rank);
                }
            }
            self.terminate_after_global_exit(pes);
            self.escalate_if_due(pes);
            std::thread::sleep(POLL);
        }
    }

    /// Reaps every child that has exited so far.
    fn reap_exited(&mut self, pes: &mut [Pe]) {
        loop {
            match reap_one() {
                Reaped::Child(pid, exit) => self.on_exit(pes, pid, exit),
                Reaped::Nothing => return,
                Reaped::NoChildren => {
                    // Cannot happen with SIGCHLD at its default; never spin.
                    pes.iter_mut().for_each(|pe| pe.alive = false);
                    return;
                }
            }
        }
    }

    /// Records a reaped PE; the first failure starts the job's termination, naming the PE
    /// that failed first.
    fn on_exit(&mut self, pes: &mut [Pe], pid: libc::pid_t, exit: Exit) {
        let Some(pe) = pes.iter_mut().find(|pe| pe.alive && pe.pid == pid) else {
            return;
        };
        pe.alive = false;
        let (rank, status) = (pe.rank, exit.status());
        self.exits.insert(rank, (pid, exit));
        if self.failure.is_some() {
            return;
        }
        if let Some((blamed, _)) = self.waiting {
            if rank == blamed {
                self.waiting = None;
                self.report_failure(pes, blamed);
            }
            return;
        }
        if status == 0 || self.first.is_some() {
            return;
        }
        self.first = Some((rank, status));
        let root = match self.reports.as_mut() {
            Some(r) => {
                r.poll();
                r.root(rank)
            }
            None => rank,
        };
        let root_running = pes.iter().any(|pe| pe.rank == root && pe.alive);
        if root != rank && root_running {
            self.waiting = Some((root, Instant::now()));
        } else if root != rank && self.exits.contains_key(&root) {
            self.report_failure(pes, root);
        } else {
            self.report_failure(pes, rank);
        }
    }

    /// Names PE `rank`'s end as the job's failure and terminates the remaining PEs. The job's
    /// status is that PE's, or the first failure's when that PE exited with 0.
    fn report_failure(&mut self, pes: &[Pe], rank: usize) {
        let first_status = self.first.map_or(1, |(_, s)| s);
        let Some(&(pid, exit)) = self.exits.get(&rank) else {
            return;
        };
        let status = if exit.status() != 0 { exit.status() } else { first_status };
        self.failure = Some(status);
        let mut msg = failure_message(rank, pid, exit);
        if exit.status() == 0 {
            msg.push_str(" while the other PEs were running; they ended because of it");
        }
        let global = self.reports.as_ref().and_then(|r| r.global_exit(rank));
        if let Some(g) = global {
            msg.push_str(&format!(" (it called ishmem_global_exit({g}): the other PEs end with it)"));
        }
        report(&msg);
        if live_count(pes) == 0 {
            return;
        }
        if global.is_some() {
            // Every other PE is on its way out with the same status (within the library's
            // watchdog period; PEs of other nodes once their node heard): terminating them now
            // would cut short what they say about it.
            self.global_since = Some(Instant::now());
        } else {
            self.terminate(pes);
        }
    }

    /// SIGTERM to the remaining PEs, saying so.
    fn terminate(&mut self, pes: &[Pe]) {
        report(&terminating_message(live_count(pes)));
        signal_live(pes, libc::SIGTERM);
        self.terminating_since = Some(Instant::now());
    }

    /// Terminates the PEs still running [`GRACE`] after a PE called `ishmem_global_exit`.
    fn terminate_after_global_exit(&mut self, pes: &[Pe]) {
        if self.terminating_since.is_none() && self.global_since.is_some_and(|t| t.elapsed() >= GRACE) {
            self.terminate(pes);
        }
    }

    fn timed_out(&self) -> bool {
        self.timeout.is_some_and(|t| self.started.elapsed() >= t)
    }

    fn kill_for_timeout(&self, pes: &mut [Pe]) -> i32 {
        let secs = self.timeout.map_or(0.0, |t| t.as_secs_f64());
        report(&format!("job timed out after {secs} s; killing the PEs"));
        kill_and_reap(pes);
        TIMEOUT_STATUS
    }

    /// Sends SIGKILL once the grace period after a failure has passed.
    fn escalate_if_due(&mut self, pes: &[Pe]) {
        if self.killed {
            return;
        }
        if let Some(since) = self.terminating_since {
            if since.elapsed() >= GRACE {
                signal_live(pes, libc::SIGKILL);
                self.killed = true;
            }
        }
    }
}

/// "PE 2 (pid 1234) was killed by signal 9 (SIGKILL)" and the like.
fn failure_message(rank: usize, pid: libc::pid_t, exit: Exit) -> String {
    match exit {
        Exit::Code(c) => format!("PE {rank} (pid {pid}) exited with status {c}"),
        Exit::Signal { sig, core } => {
            format!("PE {rank} (pid {pid}) was killed by signal {}{}", signals::describe(sig), if core { " (core dumped)" } else { "" })
        }
    }
}

fn terminating_message(remaining: usize) -> String {
    let noun = if remaining == 1 { "PE" } else { "PEs" };
    format!("terminating the remaining {remaining} {noun}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_mapping() {
        assert_eq!(Exit::Code(0).status(), 0);
        assert_eq!(Exit::Code(3).status(), 3);
        assert_eq!(Exit::Signal { sig: 9, core: false }.status(), 137);
    }

    #[test]
    fn decode_wait_status() {
        // Linux encoding: exit code in bits 8..16, signal in the low 7 bits.
        assert_eq!(Exit::from_wait_status(3 << 8), Exit::Code(3));
        assert_eq!(Exit::from_wait_status(9), Exit::Signal { sig: 9, core: false });
        assert_eq!(Exit::from_wait_status(11 | 0x80), Exit::Signal { sig: 11, core: true });
    }

    #[test]
    fn messages() {
        assert_eq!(failure_message(2, 1234, Exit::Signal { sig: 9, core: false }), "PE 2 (pid 1234) was killed by signal 9 (SIGKILL)");
        assert_eq!(failure_message(1, 1233, Exit::Code(3)), "PE 1 (pid 1233) exited with status 3");
        assert_eq!(
            failure_message(0, 7, Exit::Signal { sig: 11, core: true }),
            "PE 0 (pid 7) was killed by signal 11 (SIGSEGV) (core dumped)"
        );
        assert_eq!(terminating_message(3), "terminating the remaining 3 PEs");
        assert_eq!(terminating_message(1), "terminating the remaining 1 PE");
    }
}
