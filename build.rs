//! Gives libishmem.so its SONAME so programs record `libishmem.so`, not a build path.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libishmem.so");
    println!("cargo:rerun-if-changed=build.rs");
}
