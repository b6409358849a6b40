//! The ways of reaching a PE. This release has one: `shm`, the PEs of a node mapping each
//! other's heaps and data segments, so every operation is a load, store or atomic on mapped
//! memory. A libfabric transport (other nodes) and CUDA peer memory slot in beside it: the
//! core asks `core::State::reach` for a target and today only gets mapped addresses.

pub mod shm;
