//! Command-line parsing for `ishmrun`.
//!
//! Options must precede the program name; the first argument that is not an
//! option (or the argument following `--`) is the program, and everything after
//! it is passed to the program untouched. Parsing never panics: every problem
//! is reported as a [`UsageError`], which `main` turns into exit status 2.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

/// The help text printed by `-h` / `--help`.
pub const HELP: &str = "\
Usage: ishmrun [options] -n N prog [args...]

Launch N processes (PEs) of an ishmem / OpenSHMEM program.

Options:
  -n, -np, --np N      number of PEs (processes) to start, N >= 1
  -t, --tag-output     prefix every line of each PE's stdout/stderr with \"[PE i] \"
      --timeout SECS   kill the whole job after SECS seconds (exit status 124)
  -h, --help           print this help and exit
  -V, --version        print the version and exit

Options must come before prog; everything after prog is passed to it. prog is
looked up in PATH, then in the current directory (as mpirun does).

Without -n, when run under another launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK
or PMI_RANK set), prog is run once as that launcher's rank, e.g.
`mpirun -np 4 ishmrun -t ./prog`. Otherwise -n defaults to 1.

Each PE gets ISHMRUN_RANK, ISHMRUN_SIZE, ISHMRUN_LOCAL_RANK, ISHMRUN_LOCAL_SIZE,
ISHMRUN_JOBID and ISHMRUN_LAUNCHER_PID in its environment. Only PE 0 reads
ishmrun's standard input; the other PEs get /dev/null.
";

/// What a successful job launch needs from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Number of PEs (`-n`), if given.
    pub np: Option<usize>,
    /// Whether to prefix output lines with `[PE i] `.
    pub tag_output: bool,
    /// Kill the job after this long, if given.
    pub timeout: Option<Duration>,
    /// The program to run, as the user wrote it.
    pub program: OsString,
    /// Arguments for the program.
    pub args: Vec<OsString>,
}

/// The action selected by the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
    /// Launch a job.
    Run(Options),
}

/// A command-line mistake, with a message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Options gathered so far while scanning the command line.
#[derive(Debug, Default)]
struct Partial {
    np: Option<usize>,
    tag_output: bool,
    timeout: Option<Duration>,
}

impl Partial {
    fn finish(self, program: OsString, args: Vec<OsString>) -> Action {
        Action::Run(Options { np: self.np, tag_output: self.tag_output, timeout: self.timeout, program, args })
    }
}

/// Parses the arguments that follow `argv[0]`.
pub fn parse<I>(args: I) -> Result<Action, UsageError>
where
    I: IntoIterator<Item = OsString>,
{
    let mut it = args.into_iter();
    let mut opts = Partial::default();
    while let Some(arg) = it.next() {
        if arg.as_bytes() == b"--" {
            let program = it.next().ok_or_else(no_program)?;
            return Ok(opts.finish(program, it.collect()));
        }
        if !is_option(&arg) {
            return Ok(opts.finish(arg, it.collect()));
        }
        let text = arg.to_string_lossy().into_owned();
        if let Some(action) = apply_option(&text, &mut it, &mut opts)? {
            return Ok(action);
        }
    }
    Err(no_program())
}

fn no_program() -> UsageError {
    UsageError("no program given".to_string())
}

/// An argument is an option when it starts with `-` and is not `-` alone.
fn is_option(arg: &OsString) -> bool {
    let bytes = arg.as_bytes();
    bytes.len() > 1 && bytes[0] == b'-'
}

/// Splits `--name=value` into its two parts; other arguments are returned whole.
fn split_inline_value(text: &str) -> (&str, Option<&str>) {
    if text.starts_with("--") {
        if let Some((name, value)) = text.split_once('=') {
            return (name, Some(value));
        }
    }
    // mpirun's and oshrun's spelling: -np N (also -np=N)
    if text == "-np" {
        return ("-np", None);
    }
    if let Some(value) = text.strip_prefix("-np=") {
        return ("-np", Some(value));
    }
    if text.len() > 2 && text.starts_with("-n") {
        return ("-n", Some(&text[2..]));
    }
    (text, None)
}

/// Applies one option. Returns an action when the option ends parsing
/// (help, version).
fn apply_option<I>(text: &str, rest: &mut I, opts: &mut Partial) -> Result<Option<Action>, UsageError>
where
    I: Iterator<Item = OsString>,
{
    let (name, inline) = split_inline_value(text);
    match name {
        "-h" | "--help" => flag(name, inline).map(|()| Some(Action::Help)),
        "-V" | "--version" => flag(name, inline).map(|()| Some(Action::Version)),
        "-t" | "--tag-output" => {
            flag(name, inline)?;
            opts.tag_output = true;
            Ok(None)
        }
        "-n" | "-np" | "--np" => {
            let value = option_value(name, inline, rest)?;
            opts.np = Some(parse_np(&value)?);
            Ok(None)
        }
        "--timeout" => {
            let value = option_value(name, inline, rest)?;
            opts.timeout = Some(parse_timeout(&value)?);
            Ok(None)
        }
        "-H" | "--host" | "-host" | "-hosts" | "--hosts" | "--hostfile" | "-hostfile" | "-f" | "-N" | "--nodes" => {
            Err(UsageError(format!(
                "'{name}': ishmrun starts the PEs of this node only; to run across nodes use \
                 mpirun -H a,b, srun -N 2 --mpi=pmix or mpiexec.mpich -hosts a,b (README, 'Across nodes')"
            )))
        }
        _ => Err(UsageError(format!("unknown option '{text}'"))),
    }
}

/// Rejects `--flag=value` for options that take no value.
fn flag(name: &str, inline: Option<&str>) -> Result<(), UsageError> {
    match inline {
        None => Ok(()),
        Some(_) => Err(UsageError(format!("option '{name}' takes no value"))),
    }
}

/// Returns the value of an option, either inline or the next argument.
fn option_value<I>(name: &str, inline: Option<&str>, rest: &mut I) -> Result<String, UsageError>
where
    I: Iterator<Item = OsString>,
{
    if let Some(value) = inline {
        return Ok(value.to_string());
    }
    rest.next().map(|v| v.to_string_lossy().into_owned()).ok_or_else(|| UsageError(format!("option '{name}' requires a value")))
}

/// Parses the number of PEs: a decimal integer >= 1.
pub fn parse_np(value: &str) -> Result<usize, UsageError> {
    match value.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(UsageError(format!("invalid number of PEs '{value}': expected an integer >= 1"))),
    }
}

/// Parses a timeout: a finite, positive number of seconds (fractions allowed).
pub fn parse_timeout(value: &str) -> Result<Duration, UsageError> {
    let bad = || UsageError(format!("invalid timeout '{value}': expected a positive number of seconds"));
    let secs: f64 = value.trim().parse().map_err(|_| bad())?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn run(list: &[&str]) -> Options {
        match parse(args(list)) {
            Ok(Action::Run(o)) => o,
            other => panic!("expected Run for {list:?}, got {other:?}"),
        }
    }

    fn err(list: &[&str]) -> String {
        match parse(args(list)) {
            Err(e) => e.0,
            other => panic!("expected error for {list:?}, got {other:?}"),
        }
    }

    #[test]
    fn basic_np_and_program() {
        let o = run(&["-n", "4", "./prog", "a", "b"]);
        assert_eq!(o.np, Some(4));
        assert!(!o.tag_output);
        assert_eq!(o.timeout, None);
        assert_eq!(o.program, OsString::from("./prog"));
        assert_eq!(o.args, args(&["a", "b"]));
    }

    #[test]
    fn long_forms_and_inline_values() {
        let o = run(&["--np=3", "--tag-output", "--timeout=2.5", "prog"]);
        assert_eq!(o.np, Some(3));
        assert!(o.tag_output);
        assert_eq!(o.timeout, Some(Duration::from_millis(2500)));
        let o = run(&["--np", "2", "--timeout", "7", "prog"]);
        assert_eq!(o.np, Some(2));
        assert_eq!(o.timeout, Some(Duration::from_secs(7)));
        let o = run(&["-n5", "prog"]);
        assert_eq!(o.np, Some(5));
    }

    #[test]
    fn mpirun_spelling_np() {
        // issue 14: `ishmrun -np 4` was "invalid number of PEs 'p'"
        let o = run(&["-np", "4", "./prog", "x"]);
        assert_eq!(o.np, Some(4));
        assert_eq!(o.program, OsString::from("./prog"));
        assert_eq!(o.args, args(&["x"]));
        assert_eq!(run(&["-np=3", "prog"]).np, Some(3));
        assert_eq!(run(&["--np", "2", "prog"]).np, Some(2));
        assert!(err(&["-np"]).contains("'-np' requires a value"));
        assert!(err(&["-np", "0", "p"]).contains("invalid number of PEs '0'"));
        assert!(err(&["-npx", "p"]).contains("invalid number of PEs 'px'"));
    }

    #[test]
    fn options_after_program_belong_to_program() {
        let o = run(&["-t", "prog", "-n", "3", "--help", "-t"]);
        assert_eq!(o.np, None);
        assert!(o.tag_output);
        assert_eq!(o.args, args(&["-n", "3", "--help", "-t"]));
    }

    #[test]
    fn double_dash_ends_options() {
        let o = run(&["-n", "2", "--", "-weird-prog", "-x"]);
        assert_eq!(o.program, OsString::from("-weird-prog"));
        assert_eq!(o.args, args(&["-x"]));
    }

    #[test]
    fn single_dash_is_a_program() {
        let o = run(&["-"]);
        assert_eq!(o.program, OsString::from("-"));
    }

    #[test]
    fn last_np_wins() {
        assert_eq!(run(&["-n", "2", "-n", "6", "p"]).np, Some(6));
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse(args(&["-h"])), Ok(Action::Help));
        assert_eq!(parse(args(&["--help", "-n"])), Ok(Action::Help));
        assert_eq!(parse(args(&["-V"])), Ok(Action::Version));
        assert_eq!(parse(args(&["--version"])), Ok(Action::Version));
    }

    #[test]
    fn usage_errors() {
        assert!(err(&[]).contains("no program"));
        assert!(err(&["-n", "2"]).contains("no program"));
        assert!(err(&["--"]).contains("no program"));
        assert!(err(&["-n"]).contains("'-n' requires a value"));
        assert!(err(&["--np"]).contains("'--np' requires a value"));
        assert!(err(&["--timeout"]).contains("requires a value"));
        assert!(err(&["-n", "0", "p"]).contains("invalid number of PEs '0'"));
        assert!(err(&["-n", "-3", "p"]).contains("invalid number of PEs"));
        assert!(err(&["-n", "x", "p"]).contains("invalid number of PEs 'x'"));
        assert!(err(&["--np=", "p"]).contains("invalid number of PEs"));
        assert!(err(&["--bogus", "p"]).contains("unknown option '--bogus'"));
        assert!(err(&["-x", "p"]).contains("unknown option '-x'"));
        for o in ["-H", "--host", "--hostfile", "-N"] {
            let e = err(&[o, "a,b", "-n", "2", "p"]);
            assert!(e.contains("starts the PEs of this node only") && e.contains("mpirun -H"), "{e}");
        }
        assert!(err(&["--tag-output=yes", "p"]).contains("takes no value"));
    }

    #[test]
    fn timeout_values() {
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("-1").is_err());
        assert!(parse_timeout("nan").is_err());
        assert!(parse_timeout("inf").is_err());
        assert!(parse_timeout("1e300").is_err());
        assert!(parse_timeout("soon").is_err());
        assert_eq!(parse_timeout("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_timeout(" 3 "), Ok(Duration::from_secs(3)));
    }

    #[test]
    fn np_values() {
        assert_eq!(parse_np("1"), Ok(1));
        assert_eq!(parse_np("128"), Ok(128));
        assert!(parse_np("").is_err());
        assert!(parse_np("99999999999999999999999999").is_err());
    }

    #[test]
    fn non_utf8_arguments_are_passed_through() {
        use std::os::unix::ffi::OsStringExt;
        let weird = OsString::from_vec(vec![b'a', 0xff, b'b']);
        let o = match parse(vec![OsString::from("prog"), weird.clone()]) {
            Ok(Action::Run(o)) => o,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(o.args, vec![weird]);
    }
}
