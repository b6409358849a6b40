//! ishmem-info: prints the library version, the backends built in, what this machine offers
//! (the CUDA driver and devices) and every `ISHMEM_*` variable with its value in this
//! environment and its default.
//!   ishmem-info              the report
//!   ishmem-info --version    one line: the release and the Intel SHMEM API version
//!   ishmem-info --env-doc    the Markdown reference of the variables (docs/ENV.md)
//!   ishmem-info --help       usage
//! Any other argument is an error (exit status 2).

const USAGE: &str = "\
Usage: ishmem-info [--version | --env-doc | --help]

Prints the ishmem library version, the backends built in, whether a CUDA driver and devices
are usable here, and every ISHMEM_* environment variable with its value and default.

Options:
  -V, --version   print the library version and the Intel SHMEM API version, one line
      --env-doc   print the reference of the ISHMEM_* variables (Markdown, docs/ENV.md)
  -h, --help      print this help
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => report(),
        ["-h" | "--help"] => print!("{USAGE}"),
        ["-V" | "--version"] => println!("{}", ishmem::api::setup::version_line()),
        ["--env-doc"] => print!("{}", ishmem::env::markdown()),
        [one] if one.starts_with('-') => usage_error(&format!("unknown option '{one}'")),
        [one] => usage_error(&format!("unexpected argument '{one}'")),
        _ => usage_error("at most one option"),
    }
}

fn usage_error(msg: &str) -> ! {
    eprintln!("ishmem-info: {msg}\nTry 'ishmem-info --help' for more information.");
    std::process::exit(2)
}

fn report() {
    print!("{}", ishmem::api::setup::info_text(None));
    match ishmem::env::Config::from_env() {
        Ok((_, warnings)) => {
            for w in warnings {
                println!("warning: {w}");
            }
        }
        Err(e) => {
            println!("error: {e}");
            std::process::exit(1);
        }
    }
}
