//! ishmem-gen: writes every generated file of the repository from the tables.
//!
//! `cargo run -p ishmem-gen` rewrites them in place; `cargo run -p ishmem-gen -- --check`
//! fails (exit 1) and names each file that differs from what the tables produce.
//! `--manifest FILE` checks the reference API manifest's plain names against ours.

mod emit;
#[path = "../../src/env.rs"]
#[allow(dead_code)]
mod env;
mod ops;
mod oshmem;
#[path = "../../src/table.rs"]
#[allow(dead_code)]
mod table;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("gen/ lives in the repository").to_path_buf()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = repo_root();
    if let Some(i) = args.iter().position(|a| a == "--manifest") {
        let Some(path) = args.get(i + 1) else {
            eprintln!("ishmem-gen: --manifest needs a file");
            return ExitCode::from(2);
        };
        return emit::check_manifest(Path::new(path));
    }
    let check = args.iter().any(|a| a == "--check");
    let mut bad = 0;
    for (rel, text) in emit::all_files() {
        let path = root.join(rel);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old == text {
            continue;
        }
        if check {
            eprintln!("ishmem-gen: {rel} is out of date (run `make generate`)");
            bad += 1;
        } else {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("create directory");
            }
            std::fs::write(&path, text).expect("write generated file");
            println!("ishmem-gen: wrote {rel}");
        }
    }
    if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
