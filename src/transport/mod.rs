//! The ways of reaching a PE. `shm`: the PEs of a node share a control segment (slots,
//! barrier, watchdog) and, on the CPU backend, map each other's heaps and data segments, so
//! every operation is a load, store or atomic on mapped memory. `cuda`: on the GPU backend the
//! heaps are GPU memory mapped between the node's PEs with CUDA IPC, and host operations on
//! them are copies and AMO kernels (the data segment stays in `shm`). The core picks one per
//! operation (`core::State::gpu_for`); a libfabric transport for other nodes slots in beside.

pub mod copy;
pub mod cuda;
pub mod fabric;
pub mod shm;
