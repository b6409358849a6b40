//! Gives libishmem.so its SONAME, `libishmem.so.<soversion>` (Cargo.toml,
//! [package.metadata.ishmem]), so programs record the ABI version, not a build path.
fn main() {
    let manifest = std::fs::read_to_string("Cargo.toml").expect("Cargo.toml");
    let soversion = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("soversion = \"").and_then(|v| v.strip_suffix('"')))
        .expect("Cargo.toml: [package.metadata.ishmem] soversion = \"N\"");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libishmem.so.{soversion}");
    println!("cargo:rustc-env=ISHMEM_SOVERSION={soversion}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
