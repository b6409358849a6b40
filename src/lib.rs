//! libishmem: the Intel SHMEM programming interface as a C-ABI shared library.
//!
//! Module map (see docs/ARCHITECTURE.md): `api` holds the exported symbols, `ffi` the C
//! boundary (panic guard, errors), `core` the runtime state and untyped operations, `heap`
//! the allocator and shared segments, `transport` the ways of reaching a PE, `bootstrap` how
//! PEs find each other, `table` and `env` the two tables everything is generated from.

pub mod api;
pub mod bootstrap;
pub mod core;
pub mod env;
pub mod ffi;
pub mod heap;
pub mod table;
pub mod transport;

/// A mutant build (build.rs `mutation`, `make check-mutations`) carries its name in the
/// library's data, where scripts/mutation-check.sh checks that the mutation was compiled in.
#[cfg(ishmem_mutation)]
pub(crate) static MUTANT: [u8; 15 + env!("ISHMEM_MUTATION_NAME").len()] = {
    let (head, name) = (b"ishmem-mutant: ", env!("ISHMEM_MUTATION_NAME").as_bytes());
    let mut out = [0u8; 15 + env!("ISHMEM_MUTATION_NAME").len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = if i < 15 { head[i] } else { name[i - 15] };
        i += 1;
    }
    out
};

#[cfg(test)]
mod proptests;
