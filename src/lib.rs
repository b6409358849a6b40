//! libishmem: the Intel SHMEM programming interface as a C-ABI shared library.
//!
//! Module map by floor, arrows pointing down only (docs/ARCHITECTURE.md "The floors", checked
//! by the `floors` unit test): the doors `api` (the exported C symbols) and `proxy` (the GPU's
//! ring and threads); the engine room `core` (state, init, reach, operations, teams,
//! collectives); `transport` (shm, copy, cuda, fabric); the leaves `heap`, `wait` (backoff,
//! comparisons), `ffi` (the C boundary), `op` (the operator vocabulary), `bootstrap`, and the
//! two tables everything is generated from, `env` and `table`.

pub mod api;
pub mod bootstrap;
pub mod core;
pub mod env;
pub mod ffi;
pub mod heap;
pub mod op;
pub mod proxy;
pub mod table;
pub mod transport;
pub mod wait;

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
mod floors;
#[cfg(test)]
mod proptests;
