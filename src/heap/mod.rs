//! The symmetric memory of a PE: the deterministic allocator (`alloc`) and the shared
//! segments that back the heap and the executable's data (`segment`).

pub mod alloc;
pub mod reserve;
pub mod segment;

/// Every PE's own heap starts at a multiple of this (host and GPU heaps), so `ishmem_align`
/// alignments up to it hold for the addresses, not only for the offsets in the heap.
pub const HEAP_ALIGN: usize = 2 << 20;

/// The alignment of a PE's own host heap of `len` bytes: the largest power of two not above
/// `len` (at least `HEAP_ALIGN`). Every PE's base is then a multiple of any alignment a block
/// of the heap can have, so `ishmem_align` holds for the address on every PE with one offset.
/// Costs address space only (`len + base_align(len)` reserved while mapping, the rest given
/// back at once).
pub fn base_align(len: usize) -> usize {
    let below = if len.is_power_of_two() { len } else { (len.max(1).next_power_of_two()) >> 1 };
    below.max(HEAP_ALIGN)
}

/// The most a GPU heap's start is aligned to: its pad is device memory that one cuMemAlloc
/// holds besides the heap, so it is capped (32 MiB, 3% of the default 1 GiB heap).
pub const GPU_ALIGN_MAX: usize = 32 << 20;

/// The alignment of a PE's own GPU heap of `len` bytes: `base_align(len)` up to
/// `GPU_ALIGN_MAX`. `ishmem_align` alignments up to it hold on the GPU heap on every PE; larger
/// ones where the PEs' heaps happen to agree modulo the alignment (else NULL).
pub fn gpu_base_align(len: usize) -> usize {
    base_align(len).min(GPU_ALIGN_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_alignment() {
        assert_eq!(base_align(0), HEAP_ALIGN);
        assert_eq!(base_align(1 << 20), HEAP_ALIGN);
        assert_eq!(base_align(1 << 30), 1 << 30);
        assert_eq!(base_align(3 << 30), 2 << 30);
        assert_eq!(base_align((1 << 30) + 1), 1 << 30);
        assert_eq!(base_align(8 << 30), 8 << 30);
        assert_eq!(gpu_base_align(1 << 20), HEAP_ALIGN);
        assert_eq!(gpu_base_align(16 << 20), 16 << 20);
        assert_eq!(gpu_base_align(1 << 30), GPU_ALIGN_MAX);
    }
}
