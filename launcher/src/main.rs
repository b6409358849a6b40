//! `ishmrun`: the process launcher for ishmem programs.
//!
//! `ishmrun -n N prog args...` starts N processes (PEs) of `prog` on this node,
//! giving each the `ISHMRUN_*` environment variables from which the ishmem
//! library learns its rank, the job size and the job id. It then supervises
//! the PEs: the first failure terminates the whole job, signals are forwarded,
//! and `--timeout` bounds the run time. Under another launcher (mpirun, PMI)
//! without `-n` it acts as a per-rank wrapper, mainly to tag output.
//!
//! Exit status: 0 on success, the first failing PE's status (128+signal for a
//! signal), 124 on timeout, 2 for usage errors or a program that cannot run.

mod cli;
mod job;
mod output;
mod plan;
mod report;
mod resolve;
mod signals;

use std::io::Write;

use cli::{Action, Options};

/// Exit status for command-line mistakes.
const USAGE_STATUS: i32 = 2;

/// Prints `ishmrun: <msg>` to stderr in one write, ignoring write errors.
pub(crate) fn report(msg: &str) {
    let line = format!("ishmrun: {msg}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Writes `text` to stdout, ignoring write errors (e.g. a closed pipe).
fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn main() {
    let status = run(std::env::args_os().skip(1));
    let _ = std::io::stdout().flush();
    std::process::exit(status);
}

/// Parses the command line and performs the requested action.
fn run(args: impl Iterator<Item = std::ffi::OsString>) -> i32 {
    match cli::parse(args) {
        Err(e) => {
            report(&e.to_string());
            report("try 'ishmrun --help' for more information");
            USAGE_STATUS
        }
        Ok(Action::Help) => {
            print_stdout(cli::HELP);
            0
        }
        Ok(Action::Version) => {
            print_stdout(&format!("ishmrun {}\n", env!("CARGO_PKG_VERSION")));
            0
        }
        Ok(Action::Run(opts)) => launch(opts),
    }
}

/// Resolves the program, plans the job and runs it.
fn launch(opts: Options) -> i32 {
    let program = match resolve::find_in_env(&opts.program) {
        Ok(p) => p,
        Err(e) => {
            report(&format!("cannot execute '{}': {}", opts.program.to_string_lossy(), resolve::error_text(&e)));
            return USAGE_STATUS;
        }
    };
    let foreign = plan::foreign_rank(|name| std::env::var_os(name));
    let job_id = match plan::new_job_id() {
        Ok(id) => id,
        Err(e) => {
            report(&format!("cannot make a job id: {e}"));
            return USAGE_STATUS;
        }
    };
    // The PEs get ISHMRUN_* (and this job id) unless ishmrun wraps one rank of another launcher.
    let own_job = opts.np.is_some() || foreign.is_none();
    let mut plan = plan::make(opts.np, foreign, &job_id, std::process::id());
    // Launching PEs ourselves: serve their exchange (node identities, network addresses) on
    // loopback, as the unique-id rendezvous; the server lives as long as this process.
    let _server = if opts.np.is_some() {
        match ishmem::bootstrap::uid::Server::start_at(std::net::SocketAddr::from(([127, 0, 0, 1], 0))) {
            Ok(server) => {
                let hex: String = server.uid().iter().map(|b| format!("{b:02x}")).collect();
                for pe in &mut plan.pes {
                    pe.env.push((plan::ENV_UID.to_string(), hex.clone()));
                }
                Some(server)
            }
            Err(e) => {
                report(&format!("cannot start the PEs' rendezvous: {e}"));
                return USAGE_STATUS;
            }
        }
    } else {
        None
    };
    if let Err(e) = signals::install() {
        report(&format!("cannot install signal handlers: {e}"));
        return USAGE_STATUS;
    }
    let spec = job::JobSpec { program, argv0: opts.program, args: opts.args, plan, tag_output: opts.tag_output, timeout: opts.timeout };
    let status = job::run(&spec);
    if own_job {
        remove_left_files(&job_id);
    }
    status
}

/// Removes what PEs that died during init left in the shared-memory directory: the files of
/// this job (named `ishmem::bootstrap::secret::job_prefix` of its id) that belong to this user.
/// Every PE has ended by now.
fn remove_left_files(job_id: &str) {
    use std::os::unix::fs::MetadataExt;
    let dir = std::env::var("ISHMEM_SHM_DIR").unwrap_or_else(|_| "/dev/shm".to_string());
    let prefix = ishmem::bootstrap::secret::job_prefix(job_id);
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let path = e.path();
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.uid() == me) && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        report(&format!("removed {removed} file(s) that the job's PEs left in {dir} (a PE ended during init)"));
    }
}
