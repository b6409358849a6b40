//! The symmetric memory of a PE: the deterministic allocator (`alloc`) and the shared
//! segments that back the heap and the executable's data (`segment`).

pub mod alloc;
pub mod segment;

/// Every PE's own heap starts at a multiple of this (host and GPU heaps), so `ishmem_align`
/// alignments up to it hold for the addresses, not only for the offsets in the heap.
pub const HEAP_ALIGN: usize = 2 << 20;
