//! The symmetric memory of a PE: the deterministic allocator (`alloc`) and the shared
//! segments that back the heap and the executable's data (`segment`).

pub mod alloc;
pub mod segment;
