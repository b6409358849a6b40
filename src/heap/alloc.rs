//! Symmetric heap allocator.
//!
//! This module owns the bookkeeping of which byte ranges of the symmetric heap
//! are in use. It only manages *offsets* in `[0, capacity)`; it never touches
//! memory, performs no I/O and contains no `unsafe` code.
//!
//! Every PE runs its own [`SymAlloc`] and feeds it the same sequence of
//! `alloc`/`free` calls (OpenSHMEM requires symmetric allocation calls to be
//! collective and identically ordered). The allocator is fully deterministic:
//! the same sequence of calls yields the same offsets on every PE, which is what
//! makes an offset valid on all PEs at once.
//!
//! Algorithm: an address-ordered free list (`BTreeMap<offset, size>`) searched
//! first-fit, with coalescing of neighbouring free ranges on `free`. Live blocks
//! are kept in a second `BTreeMap<offset, size>`. Alignment padding in front of
//! a block goes back to the free list. A size multiset of the free ranges gives
//! `largest_free` in O(log n) and lets hopeless requests fail fast. All
//! operations are O(log n) except the first-fit scan.

use std::collections::BTreeMap;
use std::fmt;

/// Why an allocation request could not be satisfied.
#[derive(Debug, PartialEq, Eq)]
pub enum AllocError {
    /// A size of zero was requested.
    ZeroSize,
    /// The requested alignment is not a power of two (zero included).
    BadAlignment(usize),
    /// `size + align` overflows the address space.
    Overflow,
    /// No free range can hold the request (by size, or by size plus
    /// alignment padding).
    Exhausted {
        /// The size the caller asked for, before rounding up to
        /// [`SymAlloc::MIN_ALIGN`].
        requested: usize,
        /// The largest free range at the time of the request.
        largest_free: usize,
    },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::ZeroSize => write!(f, "symmetric heap: zero-size allocation"),
            AllocError::BadAlignment(a) => {
                write!(f, "symmetric heap: alignment {a} is not a power of two")
            }
            AllocError::Overflow => write!(f, "symmetric heap: allocation size overflows"),
            AllocError::Exhausted { requested, largest_free } => {
                write!(f, "symmetric heap exhausted: requested {requested} bytes, largest free block is {largest_free} bytes")
            }
        }
    }
}

impl std::error::Error for AllocError {}

/// Why a `free` was rejected.
#[derive(Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The offset is not the start of a live block (never allocated, interior
    /// pointer, or already freed).
    NotAllocated(usize),
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeError::NotAllocated(off) => write!(f, "symmetric heap: offset {off:#x} is not the start of a live allocation"),
        }
    }
}

impl std::error::Error for FreeError {}

/// Deterministic first-fit allocator over the offsets `[0, capacity)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymAlloc {
    /// Managed size in bytes (the constructor's capacity rounded down to
    /// `MIN_ALIGN`).
    capacity: usize,
    /// Free ranges: start offset -> length. Address ordered, coalesced.
    free: BTreeMap<usize, usize>,
    /// Multiset of free range lengths: length -> count.
    free_sizes: BTreeMap<usize, usize>,
    /// Live blocks: start offset -> (rounded) length.
    live: BTreeMap<usize, usize>,
    /// Sum of the lengths of the live blocks.
    used: usize,
}

impl SymAlloc {
    /// Every block starts at a multiple of this, and every block size is a
    /// multiple of it.
    pub const MIN_ALIGN: usize = 64;

    /// An allocator managing `[0, capacity)`. A capacity that is not a multiple
    /// of [`Self::MIN_ALIGN`] is rounded down (the tail can never be handed
    /// out); [`Self::capacity`] reports the rounded value.
    pub fn new(capacity: usize) -> SymAlloc {
        let capacity = capacity & !(Self::MIN_ALIGN - 1);
        let mut a = SymAlloc { capacity, free: BTreeMap::new(), free_sizes: BTreeMap::new(), live: BTreeMap::new(), used: 0 };
        if capacity > 0 {
            a.insert_free(0, capacity);
        }
        a
    }

    /// The managed size in bytes (a multiple of [`Self::MIN_ALIGN`]).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Allocates `size` bytes (rounded up to a multiple of
    /// [`Self::MIN_ALIGN`]) at an offset aligned to `max(align, MIN_ALIGN)`.
    /// Returns the offset. On error the allocator is unchanged.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<usize, AllocError> {
        self.alloc_at(size, align, 0)
    }

    /// As [`Self::alloc`], with the alignment holding for `origin + offset` instead of the
    /// offset: `origin` is where offset 0 lies in the address space (the heap's base address),
    /// so the block's *address* is a multiple of `align`. Only `origin % align` matters, so
    /// PEs whose heap bases agree modulo `align` get the same offset.
    pub fn alloc_at(&mut self, size: usize, align: usize, origin: usize) -> Result<usize, AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlignment(align));
        }
        let align = align.max(Self::MIN_ALIGN);
        // `size + align - 1` bounds both the rounded size and any padding.
        if size.checked_add(align - 1).is_none() {
            return Err(AllocError::Overflow);
        }
        // The offsets that are aligned: (origin + off) % align == 0, i.e. off % align == skew.
        // `origin` is a multiple of MIN_ALIGN in use (heap bases are page aligned); a skew
        // that is not would make no offset a multiple of MIN_ALIGN, so it is rounded away.
        let skew = ((align - origin % align) % align) & !(Self::MIN_ALIGN - 1);
        // Cannot overflow: size + MIN_ALIGN - 1 <= size + align - 1.
        let rsize = (size + Self::MIN_ALIGN - 1) & !(Self::MIN_ALIGN - 1);
        let exhausted = AllocError::Exhausted { requested: size, largest_free: self.largest_free() };
        if rsize > self.largest_free() {
            return Err(exhausted);
        }

        let mut found = None;
        for (&off, &len) in &self.free {
            if len < rsize {
                continue;
            }
            let Some(start) = align_up_skewed(off, align, skew) else {
                continue;
            };
            let pad = start - off;
            if pad <= len - rsize {
                found = Some((off, len, start, pad));
                break;
            }
        }
        let Some((off, len, start, pad)) = found else {
            return Err(exhausted);
        };

        self.remove_free(off, len);
        if pad > 0 {
            self.insert_free(off, pad);
        }
        let tail = len - pad - rsize;
        if tail > 0 {
            self.insert_free(start + rsize, tail);
        }
        self.live.insert(start, rsize);
        self.used += rsize;
        Ok(start)
    }

    /// Allocates `size` bytes (rounded up to a multiple of [`Self::MIN_ALIGN`]) at the end of
    /// the highest free range that holds them: for the library's own blocks reserved at start,
    /// which then leave the low offsets (where a program's large aligned allocations land
    /// first) as they were. Returns the offset. On error the allocator is unchanged.
    pub fn alloc_top(&mut self, size: usize) -> Result<usize, AllocError> {
        if size == 0 {
            return Err(AllocError::ZeroSize);
        }
        let rsize = size.checked_add(Self::MIN_ALIGN - 1).ok_or(AllocError::Overflow)? & !(Self::MIN_ALIGN - 1);
        let Some((off, len)) = self.free.iter().rev().find(|&(_, &len)| len >= rsize).map(|(&o, &l)| (o, l)) else {
            return Err(AllocError::Exhausted { requested: size, largest_free: self.largest_free() });
        };
        self.remove_free(off, len);
        if len > rsize {
            self.insert_free(off, len - rsize);
        }
        let start = off + len - rsize;
        self.live.insert(start, rsize);
        self.used += rsize;
        Ok(start)
    }

    /// Frees the live block starting exactly at `offset` and returns its
    /// (rounded) size. The freed range is merged with free neighbours. On
    /// error the allocator is unchanged.
    pub fn free(&mut self, offset: usize) -> Result<usize, FreeError> {
        let size = self.live.remove(&offset).ok_or(FreeError::NotAllocated(offset))?;
        self.used -= size;

        let mut start = offset;
        let mut len = size;
        let prev = self.free.range(..offset).next_back().map(|(&o, &l)| (o, l));
        if let Some((p, plen)) = prev {
            if p + plen == offset {
                self.remove_free(p, plen);
                start = p;
                len += plen;
            }
        }
        let next = offset + size;
        if let Some(&nlen) = self.free.get(&next) {
            self.remove_free(next, nlen);
            len += nlen;
        }
        self.insert_free(start, len);
        Ok(size)
    }

    /// `(start, size)` of the live block containing `offset`, if any.
    pub fn block_at(&self, offset: usize) -> Option<(usize, usize)> {
        let (&start, &size) = self.live.range(..=offset).next_back()?;
        (offset - start < size).then_some((start, size))
    }

    /// Size of the live block starting exactly at `offset`.
    pub fn size_of(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).copied()
    }

    /// Bytes in live blocks (rounded sizes).
    pub fn used(&self) -> usize {
        self.used
    }

    /// Bytes not in live blocks (`capacity - used`).
    pub fn free_bytes(&self) -> usize {
        self.capacity - self.used
    }

    /// Length of the largest free range (0 when full).
    pub fn largest_free(&self) -> usize {
        self.free_sizes.keys().next_back().copied().unwrap_or(0)
    }

    /// Number of live blocks.
    pub fn live_blocks(&self) -> usize {
        self.live.len()
    }

    /// Checks the internal invariants: blocks and free ranges are aligned,
    /// non-empty, in bounds and do not overlap; the free list is fully
    /// coalesced; counters agree; used + free == capacity.
    pub fn check_invariants(&self) -> Result<(), String> {
        let m = Self::MIN_ALIGN;
        if !self.capacity.is_multiple_of(m) {
            return Err(format!("capacity {} not a multiple of {m}", self.capacity));
        }
        // Merge both maps in address order and walk them.
        let mut ranges: Vec<(usize, usize, bool)> =
            self.free.iter().map(|(&o, &l)| (o, l, true)).chain(self.live.iter().map(|(&o, &l)| (o, l, false))).collect();
        ranges.sort_unstable();
        let mut cursor = 0usize;
        let mut prev_free_end: Option<usize> = None;
        let (mut free_sum, mut live_sum) = (0usize, 0usize);
        for &(off, len, is_free) in &ranges {
            let kind = if is_free { "free range" } else { "live block" };
            if len == 0 {
                return Err(format!("{kind} at {off:#x} is empty"));
            }
            if !off.is_multiple_of(m) || !len.is_multiple_of(m) {
                return Err(format!("{kind} {off:#x}+{len:#x} not {m}-aligned"));
            }
            if off < cursor {
                return Err(format!("{kind} at {off:#x} overlaps range ending at {cursor:#x}"));
            }
            let end =
                off.checked_add(len).filter(|&e| e <= self.capacity).ok_or_else(|| format!("{kind} {off:#x}+{len:#x} exceeds capacity"))?;
            if is_free {
                if prev_free_end == Some(off) {
                    return Err(format!("free range at {off:#x} not coalesced with predecessor"));
                }
                prev_free_end = Some(end);
                free_sum += len;
            } else {
                live_sum += len;
            }
            cursor = end;
        }
        if live_sum != self.used {
            return Err(format!("used counter {} != sum of live blocks {live_sum}", self.used));
        }
        if free_sum + live_sum != self.capacity {
            return Err(format!("used {live_sum} + free {free_sum} != capacity {}", self.capacity));
        }
        let mut expect: BTreeMap<usize, usize> = BTreeMap::new();
        for &l in self.free.values() {
            *expect.entry(l).or_insert(0) += 1;
        }
        if expect != self.free_sizes {
            return Err("free size multiset out of sync with free list".to_string());
        }
        Ok(())
    }

    fn insert_free(&mut self, off: usize, len: usize) {
        self.free.insert(off, len);
        *self.free_sizes.entry(len).or_insert(0) += 1;
    }

    fn remove_free(&mut self, off: usize, len: usize) {
        self.free.remove(&off);
        if let Some(c) = self.free_sizes.get_mut(&len) {
            *c -= 1;
            if *c == 0 {
                self.free_sizes.remove(&len);
            }
        }
    }
}

/// `off` rounded up to a multiple of the power of two `align`, or `None` on
/// overflow.
fn align_up(off: usize, align: usize) -> Option<usize> {
    Some(off.checked_add(align - 1)? & !(align - 1))
}

/// The smallest `x >= off` with `x % align == skew` (`skew < align`, `align` a power of two).
fn align_up_skewed(off: usize, align: usize, skew: usize) -> Option<usize> {
    align_up(off.saturating_sub(skew), align)?.checked_add(skew)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: usize = SymAlloc::MIN_ALIGN;

    #[test]
    fn basic_rounding_and_accounting() {
        let mut a = SymAlloc::new(1 << 20);
        let o = a.alloc(1, 1).unwrap();
        assert_eq!(o, 0);
        assert_eq!(a.size_of(o), Some(M));
        let o2 = a.alloc(65, 8).unwrap();
        assert_eq!(o2, 64);
        assert_eq!(a.size_of(o2), Some(128));
        assert_eq!(a.used(), 192);
        assert_eq!(a.free_bytes(), (1 << 20) - 192);
        assert_eq!(a.live_blocks(), 2);
        assert_eq!(a.largest_free(), (1 << 20) - 192);
        a.check_invariants().unwrap();
        assert_eq!(a.free(o), Ok(64));
        assert_eq!(a.free(o2), Ok(128));
        assert_eq!(a.used(), 0);
        assert_eq!(a.largest_free(), 1 << 20);
        a.check_invariants().unwrap();
    }

    #[test]
    fn alloc_top_takes_the_end_of_the_highest_free_range() {
        let mut a = SymAlloc::new(1 << 20);
        let low = a.alloc(100, 1).unwrap();
        let top = a.alloc_top(1000).unwrap();
        assert_eq!(top, (1 << 20) - 1024, "the block ends at the heap's end");
        assert_eq!(a.size_of(top), Some(1024));
        // A large aligned block still lands at the lowest aligned offset.
        assert_eq!(a.alloc(64, 1 << 18), Ok(1 << 18));
        // The next top block sits just below the first; one too large for any range fails
        // and leaves the allocator as it was.
        assert_eq!(a.alloc_top(64), Ok((1 << 20) - 1088));
        let used = a.used();
        assert!(matches!(a.alloc_top(1 << 20), Err(AllocError::Exhausted { .. })));
        assert_eq!(a.alloc_top(0), Err(AllocError::ZeroSize));
        assert_eq!(a.used(), used);
        a.check_invariants().unwrap();
        for o in [low, top, 1 << 18, (1 << 20) - 1088] {
            a.free(o).unwrap();
        }
        assert_eq!(a.largest_free(), 1 << 20);
        a.check_invariants().unwrap();
    }

    #[test]
    fn capacity_rounded_down() {
        let mut a = SymAlloc::new(1000);
        assert_eq!(a.capacity(), 960);
        a.check_invariants().unwrap();
        assert_eq!(a.alloc(960, 1), Ok(0));
        assert_eq!(a.largest_free(), 0);
        let z = SymAlloc::new(10);
        assert_eq!(z.capacity(), 0);
        assert_eq!(z.largest_free(), 0);
        z.check_invariants().unwrap();
    }

    #[test]
    fn argument_errors() {
        let mut a = SymAlloc::new(1 << 20);
        let before = a.clone();
        assert_eq!(a.alloc(0, 64), Err(AllocError::ZeroSize));
        assert_eq!(a.alloc(8, 0), Err(AllocError::BadAlignment(0)));
        assert_eq!(a.alloc(8, 96), Err(AllocError::BadAlignment(96)));
        assert_eq!(a.alloc(usize::MAX, 1), Err(AllocError::Overflow));
        assert_eq!(a.alloc(usize::MAX - 10, 64), Err(AllocError::Overflow));
        assert!(matches!(a.alloc(usize::MAX - 100, 64), Err(AllocError::Exhausted { .. })));
        assert_eq!(a.alloc(8, 1usize << 63), Ok(0));
        assert_eq!(a.free(0), Ok(64));
        assert_eq!(a.alloc(2, 1usize << 63), Ok(0));
        assert_eq!(a.free(0), Ok(64));
        assert_eq!(a, before);
    }

    #[test]
    fn alignment_of_addresses_with_an_origin() {
        // A heap whose base is only 2 MiB aligned: 4 MiB .. 64 MiB alignments must hold for
        // base + offset (issue 14: ishmem_align above 2 MiB).
        let base = 0x7f00_0020_0000usize; // 2 MiB aligned, not 4 MiB
        let mut a = SymAlloc::new(256 << 20);
        assert_eq!(a.alloc(100, 1), Ok(0));
        for k in 22..=26 {
            let align = 1usize << k;
            let off = a.alloc_at(24, align, base).unwrap();
            assert_eq!((base + off) % align, 0, "align 2^{k}: offset {off:#x}");
            a.check_invariants().unwrap();
        }
        // Two PEs whose bases agree modulo the alignment get the same offset.
        let mut b = SymAlloc::new(256 << 20);
        let mut c = SymAlloc::new(256 << 20);
        let (b0, c0) = (0x1000_0020_0000usize, 0x2000_0020_0000usize);
        for k in [12usize, 22, 25] {
            let (ob, oc) = (b.alloc_at(4096, 1 << k, b0).unwrap(), c.alloc_at(4096, 1 << k, c0).unwrap());
            assert_eq!(ob, oc);
            assert_eq!((b0 + ob) % (1 << k), 0);
        }
        // An origin of 0 is the plain alloc.
        let mut d = SymAlloc::new(64 << 20);
        let mut e = SymAlloc::new(64 << 20);
        for k in [6usize, 13, 21, 23] {
            assert_eq!(d.alloc(10, 1 << k), e.alloc_at(10, 1 << k, 0));
        }
        // Too large an alignment for what is left: exhausted, nothing changes.
        let mut f = SymAlloc::new(8 << 20);
        let before = f.clone();
        assert!(matches!(f.alloc_at(8, 16 << 20, base), Err(AllocError::Exhausted { .. })));
        assert_eq!(f, before);
    }

    #[test]
    fn skewed_rounding() {
        assert_eq!(align_up_skewed(0, 64, 0), Some(0));
        assert_eq!(align_up_skewed(0, 4096, 64), Some(64));
        assert_eq!(align_up_skewed(64, 4096, 64), Some(64));
        assert_eq!(align_up_skewed(65, 4096, 64), Some(4096 + 64));
        assert_eq!(align_up_skewed(5000, 4096, 128), Some(8192 + 128));
        assert_eq!(align_up_skewed(usize::MAX - 10, 4096, 64), None);
    }

    #[test]
    fn alignment_honoured() {
        let mut a = SymAlloc::new(64 << 20);
        let small = a.alloc(100, 1).unwrap();
        assert_eq!(small, 0);
        for &align in &[1usize, 2, 8, 64, 128, 4096, 1 << 21] {
            let o = a.alloc(64 * 3, align).unwrap();
            assert_eq!(o % align.max(M), 0, "align {align}");
            assert_eq!(o % M, 0);
            a.check_invariants().unwrap();
        }
        // Padding went back to the free list: a small block fits in front of
        // the 2 MiB aligned one.
        let o4k = a.alloc(1, 4096).unwrap();
        assert_eq!(o4k % 4096, 0);
        assert!(o4k < 1 << 21);
        let big = a.alloc(1, 1 << 21).unwrap();
        assert_eq!(big % (1 << 21), 0);
        a.check_invariants().unwrap();
    }

    #[test]
    fn padding_returned_to_free_list() {
        let mut a = SymAlloc::new(1 << 16);
        assert_eq!(a.alloc(64, 64), Ok(0));
        assert_eq!(a.alloc(64, 4096), Ok(4096));
        // [64, 4096) is free padding and is reused first-fit.
        assert_eq!(a.alloc(64, 64), Ok(64));
        assert_eq!(a.used(), 192);
        a.check_invariants().unwrap();
    }

    #[test]
    fn exhaustion_reports_and_leaves_state_unchanged() {
        let mut a = SymAlloc::new(4096);
        let _x = a.alloc(1024, 64).unwrap();
        let y = a.alloc(1024, 64).unwrap();
        let _z = a.alloc(1024, 64).unwrap();
        a.free(y).unwrap();
        // Free: [1024,2048) and [3072,4096): 2048 bytes free, largest 1024.
        assert_eq!(a.free_bytes(), 2048);
        let before = a.clone();
        assert_eq!(a.alloc(1500, 64), Err(AllocError::Exhausted { requested: 1500, largest_free: 1024 }));
        assert_eq!(a, before);
        // Fits by size but not by alignment.
        assert_eq!(a.alloc(1024, 2048), Err(AllocError::Exhausted { requested: 1024, largest_free: 1024 }));
        assert_eq!(a, before);
        assert_eq!(a.alloc(1024, 1024), Ok(1024));
        assert_eq!(a.alloc(1024, 1024), Ok(3072));
        assert_eq!(a.alloc(1, 1), Err(AllocError::Exhausted { requested: 1, largest_free: 0 }));
        a.check_invariants().unwrap();
    }

    #[test]
    fn bad_frees_leave_state_unchanged() {
        let mut a = SymAlloc::new(1 << 20);
        let o = a.alloc(256, 64).unwrap();
        let p = a.alloc(256, 64).unwrap();
        let before = a.clone();
        assert_eq!(a.free(12345), Err(FreeError::NotAllocated(12345)));
        assert_eq!(a.free(o + 64), Err(FreeError::NotAllocated(o + 64)));
        assert_eq!(a.free(1 << 30), Err(FreeError::NotAllocated(1 << 30)));
        assert_eq!(a.free(usize::MAX), Err(FreeError::NotAllocated(usize::MAX)));
        assert_eq!(a, before);
        assert_eq!(a.free(o), Ok(256));
        let after_free = a.clone();
        assert_eq!(a.free(o), Err(FreeError::NotAllocated(o)));
        assert_eq!(a, after_free);
        assert_eq!(a.free(p), Ok(256));
        a.check_invariants().unwrap();
    }

    #[test]
    fn coalescing() {
        let cap = 1 << 20;
        let mut a = SymAlloc::new(cap);
        let x = a.alloc(4096, 64).unwrap();
        let y = a.alloc(8192, 64).unwrap();
        let z = a.alloc(4096, 64).unwrap();
        assert_eq!((x, y, z), (0, 4096, 12288));
        let tail = cap - 16384;
        assert_eq!(a.largest_free(), tail);
        a.free(y).unwrap();
        assert_eq!(a.largest_free(), tail);
        a.free(x).unwrap();
        // x and y merged into one 12 KiB range.
        assert_eq!(a.alloc(12288, 64), Ok(0));
        a.free(0).unwrap();
        a.check_invariants().unwrap();
        // Freeing z merges everything into one range.
        a.free(z).unwrap();
        assert_eq!(a.largest_free(), cap);
        assert_eq!(a.free_bytes(), cap);
        a.check_invariants().unwrap();

        // Make the middle range the largest: free y, then x grows it.
        let mut b = SymAlloc::new(1 << 16);
        let x = b.alloc(8192, 64).unwrap();
        let y = b.alloc(16384, 64).unwrap();
        let _z = b.alloc((1 << 16) - 24576 - 4096, 64).unwrap();
        assert_eq!(b.largest_free(), 4096);
        b.free(y).unwrap();
        assert_eq!(b.largest_free(), 16384);
        b.free(x).unwrap();
        assert_eq!(b.largest_free(), 24576);
        b.check_invariants().unwrap();
    }

    #[test]
    fn block_at_finds_interior_offsets() {
        let mut a = SymAlloc::new(1 << 20);
        let o = a.alloc(1000, 64).unwrap(); // rounded to 1024
        let p = a.alloc(64, 4096).unwrap();
        assert_eq!(a.block_at(o), Some((o, 1024)));
        assert_eq!(a.block_at(o + 1), Some((o, 1024)));
        assert_eq!(a.block_at(o + 1023), Some((o, 1024)));
        assert_eq!(a.block_at(o + 1024), None);
        assert_eq!(a.block_at(p + 63), Some((p, 64)));
        assert_eq!(a.block_at(p + 64), None);
        assert_eq!(a.block_at(usize::MAX), None);
        assert_eq!(a.size_of(o + 1), None);
        assert_eq!(a.size_of(p), Some(64));
        a.free(o).unwrap();
        assert_eq!(a.block_at(o + 5), None);
    }

    #[test]
    fn huge_capacity_without_touching_memory() {
        let cap = 64usize << 30;
        let mut a = SymAlloc::new(cap);
        let big = a.alloc(32usize << 30, 1 << 21).unwrap();
        assert_eq!(big, 0);
        let o = a.alloc(1, 1 << 30).unwrap();
        assert_eq!(o, 32usize << 30);
        assert_eq!(
            a.alloc(40usize << 30, 64),
            Err(AllocError::Exhausted { requested: 40usize << 30, largest_free: cap - (32usize << 30) - 64 })
        );
        a.free(big).unwrap();
        a.free(o).unwrap();
        assert_eq!(a.largest_free(), cap);
        let mut t = SymAlloc::new(1usize << 41);
        assert_eq!(t.alloc(1usize << 40, 1usize << 40), Ok(0));
        assert_eq!(t.alloc(1usize << 40, 1usize << 40), Ok(1usize << 40));
        t.check_invariants().unwrap();
        a.check_invariants().unwrap();
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// Runs a pseudo-random alloc/free sequence and returns every result.
    fn run_sequence(a: &mut SymAlloc, seed: u64, ops: usize) -> Vec<String> {
        let mut rng = Lcg(seed);
        let mut live: Vec<usize> = Vec::new();
        let mut log = Vec::with_capacity(ops);
        for i in 0..ops {
            let r = rng.next();
            if live.is_empty() || r % 5 < 3 {
                let size = match rng.next() % 4 {
                    0 => (rng.next() % 128) as usize,
                    1 => (rng.next() % 4096) as usize,
                    2 => (rng.next() % 65536) as usize,
                    _ => (rng.next() % (1 << 20)) as usize,
                };
                let align = 1usize << (rng.next() % 22);
                let res = a.alloc(size, align);
                if let Ok(o) = res {
                    assert_eq!(o % align.max(M), 0);
                    live.push(o);
                }
                log.push(format!("alloc({size},{align})={res:?}"));
            } else {
                let idx = (rng.next() as usize) % live.len();
                let o = live.swap_remove(idx);
                let res = a.free(o);
                assert!(res.is_ok());
                log.push(format!("free({o})={res:?}"));
            }
            if i % 97 == 0 {
                a.check_invariants().unwrap();
            }
        }
        a.check_invariants().unwrap();
        for o in live {
            a.free(o).unwrap();
        }
        a.check_invariants().unwrap();
        assert_eq!(a.used(), 0);
        assert_eq!(a.largest_free(), a.capacity());
        log
    }

    #[test]
    fn random_sequence_is_consistent_and_deterministic() {
        let mut a = SymAlloc::new(256 << 20);
        let mut b = SymAlloc::new(256 << 20);
        let la = run_sequence(&mut a, 42, 10_000);
        let lb = run_sequence(&mut b, 42, 10_000);
        assert_eq!(la, lb);
        assert_eq!(la.len(), 10_000);
        // A small heap exercises exhaustion heavily.
        let mut c = SymAlloc::new(4 << 20);
        let mut d = SymAlloc::new(4 << 20);
        let lc = run_sequence(&mut c, 7, 10_000);
        assert_eq!(lc, run_sequence(&mut d, 7, 10_000));
        assert!(lc.iter().any(|l| l.contains("Exhausted")));
    }
}
