//! The exported C symbols, one file per section of the specification. `generated.rs` holds
//! the typed/SIZE/mem shims written by ishmem-gen (`generated_ctx.rs` their OpenSHMEM context
//! forms); the other files hold the hand-written
//! exports and the typed cores those shims call. The safety contract of every exported
//! `unsafe extern "C" fn` is the C API's: pointers valid as the specification defines them.
#![allow(clippy::missing_safety_doc)]

pub mod amo;
pub mod coll;
pub mod ctx;
pub mod cuda;
pub mod deprecated;
pub mod exit;
pub mod ext;
pub mod fair;
#[cfg(target_arch = "x86_64")]
pub mod longdouble;
#[rustfmt::skip]
pub mod generated;
#[rustfmt::skip]
pub mod generated_ctx;
pub mod memory;
pub mod order;
pub mod osh;
pub mod queue;
pub mod queue_coll;
pub mod rma;
pub mod setup;
pub mod signal;
pub mod sync;
pub mod team;
