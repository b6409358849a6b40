//! ishmem-info: prints the library version, the backends built in and every `ISHMEM_*`
//! variable with its value in this environment and its default. `--env-doc` prints the
//! Markdown reference (docs/ENV.md).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("usage: ishmem-info [--env-doc]\n  prints version, backends and ISHMEM_* variables");
        return;
    }
    if args.iter().any(|a| a == "--env-doc") {
        print!("{}", ishmem::env::markdown());
        return;
    }
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
