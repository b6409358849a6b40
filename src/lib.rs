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
pub mod op;
pub mod proxy;
pub mod table;
pub mod transport;
pub mod wait;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod floors;
