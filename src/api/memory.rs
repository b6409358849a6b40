//! Symmetric heap management: malloc, calloc, align, free, and OpenSHMEM's shmem_realloc and
//! shmem_malloc_with_hints. Every call is collective: all PEs
//! run the same deterministic allocator on the same sequence of calls, so a block has the
//! same offset everywhere. Each call is a call of the world team whose arguments every PE
//! compares with the next PE's after a barrier, across nodes too (`core::agree`); a mismatch,
//! or another world team call (barrier_all) on some PE, is a fatal error instead of silent
//! corruption. Free refuses anything but a live block the program allocated.
//! On the GPU heap the first `ISHMEMI_SYNC_BYTES` are the library's (allocated at init), calloc
//! zeroes with cuMemsetD8, and each call first retries pending device-state binders.

use crate::core::agree::{memory_call, MemKind as Kind};
use crate::core::{state, State};
use crate::ffi::{fatal, guard};
use crate::heap::alloc::{AllocError, SymAlloc};
use std::ffi::{c_long, c_void};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

/// The largest power of two modulo which every PE's heap base address is the same (0: not
/// asked yet). `ishmem_align` alignments up to it hold for the address of one heap offset on
/// every PE. Host heaps are mapped at a multiple of `heap::base_align(len)`, so on the CPU
/// backend it covers every alignment a block can have; GPU heaps are 2 MiB aligned, and
/// larger alignments hold where the PEs' heaps happen to agree (asked once, collectively).
static COMMON_ALIGN: AtomicUsize = AtomicUsize::new(0);

/// `COMMON_ALIGN`, asking every PE for its heap base the first time (`core::agree`).
fn common_align(func: &str, st: &State) -> usize {
    let known = COMMON_ALIGN.load(Relaxed);
    if known != 0 {
        return known;
    }
    let common = crate::core::agree::common_align(st, func);
    COMMON_ALIGN.store(common, Relaxed);
    common
}

/// Retries the device-state binders that failed so far (CUDA backend; one load otherwise).
fn retry_binders(func: &str, st: &State) {
    crate::core::device::retry_binders(st, func);
}

fn allocate(func: &str, kind: Kind, size: usize, align: usize, zero: bool) -> *mut c_void {
    allocate_with(func, kind, size, align, zero, align as u64)
}

/// `allocate` whose memory call record carries `b` as its second argument (the alignment, or
/// shmem_malloc_with_hints' hints).
fn allocate_with(func: &str, kind: Kind, size: usize, align: usize, zero: bool, b: u64) -> *mut c_void {
    let st = state(func);
    retry_binders(func, st);
    if !align.is_power_of_two() {
        fatal(func, &format!("alignment {align} is not a power of two"));
    }
    let mut heap = st.alloc.lock().unwrap_or_else(|e| e.into_inner());
    memory_call(st, func, kind, size as u64, b);
    let p = place(func, st, &mut heap, size, align);
    if zero && !p.is_null() {
        match &st.gpu {
            // SAFETY: as below, on the GPU heap.
            Some(g) => unsafe { g.memset(func, p as usize, size) },
            // SAFETY: the block [p, p+size) is inside the mapped local heap, and no PE may write
            // it before its owner zeroed it (the barrier below).
            None => unsafe { std::ptr::write_bytes(p, 0, size) },
        }
        // No PE may write into the block before its owner zeroed it.
        st.barrier();
    }
    p.cast()
}

/// A block of `size` bytes aligned to `align` from the allocator (every PE makes the same
/// calls, so it is at the same offset everywhere), reserved in the heap file; NULL for size 0,
/// an alignment the PEs' heaps do not share, or a heap too full (ISHMEM_DEBUG=1 says why).
fn place(func: &str, st: &State, heap: &mut SymAlloc, size: usize, align: usize) -> *mut u8 {
    if size == 0 {
        return std::ptr::null_mut();
    }
    if align > crate::heap::HEAP_ALIGN {
        let common = common_align(func, st);
        if align > common {
            if st.cfg.debug {
                crate::ffi::warn(
                    func,
                    &format!(
                        "returning NULL: alignment {align} cannot hold at one heap offset on every PE (the PEs' heaps are aligned alike only modulo {common} bytes)"
                    ),
                );
            }
            return std::ptr::null_mut();
        }
    }
    // The alignment holds for the address (base + offset), not only for the offset.
    let off = match heap.alloc_at(size, align, st.heap.base) {
        Ok(off) => off,
        Err(e) => {
            if st.cfg.debug {
                let why = match e {
                    AllocError::Exhausted { requested, largest_free } => format!(
                        "symmetric heap exhausted: {requested} bytes requested, largest free block {largest_free} of {} bytes (raise ISHMEM_SYMMETRIC_SIZE)",
                        st.heap.len
                    ),
                    other => other.to_string(),
                };
                crate::ffi::warn(func, &format!("returning NULL: {why}"));
            }
            return std::ptr::null_mut();
        }
    };
    // Host heap: the block's pages are allocated in the heap file now, so that a full tmpfs
    // is an error naming its directory here, not SIGBUS at the first store.
    if let Err(e) = crate::heap::reserve::reserve("a block of the symmetric heap", off, size) {
        fatal(func, &e);
    }
    (st.heap.base + off) as *mut u8
}

/// The heap offset of `ptr` (u64::MAX for NULL), which must be the start of a live block the
/// program allocated: anything else is a fatal error naming `func`.
fn block_offset(func: &str, st: &State, heap: &SymAlloc, ptr: *mut c_void) -> u64 {
    let addr = ptr as usize;
    let off = if ptr.is_null() { u64::MAX } else { addr.wrapping_sub(st.heap.base) as u64 };
    if st.gpu.is_some() && (off as usize) < crate::core::device::SYNC_BYTES {
        fatal(func, &format!("{addr:#x} was not returned by ishmem_malloc/calloc/align (it is the library's reserved sync area)"));
    }
    if let Some(&(start, _, what)) = st.lib_blocks.iter().find(|&&(b, l, _)| (off as usize).wrapping_sub(b) < l) {
        let at = if off as usize == start { String::from("is") } else { format!("points inside (at {:#x})", st.heap.base + start) };
        fatal(func, &format!("{addr:#x} {at} the library's block of {what}, not one returned by ishmem_malloc/calloc/align"));
    }
    if !ptr.is_null() && heap.size_of(off as usize).is_none() {
        let what = match heap.block_at(off as usize) {
            Some((start, _)) if (off as usize) < st.heap.len => {
                format!("{addr:#x} points inside the block at {:#x}, not at its start", st.heap.base + start)
            }
            _ if (off as usize) < st.heap.len => format!("{addr:#x} is not an allocated block (already freed?)"),
            _ => format!("{addr:#x} was not returned by ishmem_malloc/calloc/align"),
        };
        fatal(func, &what);
    }
    off
}

#[no_mangle]
pub extern "C" fn ishmem_malloc(size: usize) -> *mut c_void {
    const F: &str = "ishmem_malloc";
    guard(F, || allocate(F, Kind::Malloc, size, 1, false))
}

#[no_mangle]
pub extern "C" fn ishmem_align(alignment: usize, size: usize) -> *mut c_void {
    const F: &str = "ishmem_align";
    guard(F, || allocate(F, Kind::Align, size, alignment, false))
}

#[no_mangle]
pub extern "C" fn ishmem_calloc(count: usize, size: usize) -> *mut c_void {
    const F: &str = "ishmem_calloc";
    guard(F, || {
        // count x size beyond the address space cannot be allocated: NULL (as from a heap too
        // small), through the same collective path, so that every PE agrees on the call.
        let total = count.saturating_mul(size);
        allocate(F, Kind::Calloc, total, 1, true)
    })
}

#[no_mangle]
pub extern "C" fn ishmem_free(ptr: *mut c_void) {
    const F: &str = "ishmem_free";
    guard(F, || {
        let st = state(F);
        retry_binders(F, st);
        let mut heap = st.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let off = block_offset(F, st, &heap, ptr);
        // Everybody must be done with the block before it can be reused.
        memory_call(st, F, Kind::Free, off, 0);
        if !ptr.is_null() {
            let _ = heap.free(off as usize);
        }
    })
}

/// OpenSHMEM's shmem_realloc (Intel SHMEM has none): collective, like malloc and free. The
/// block of `ptr` (which must be a live block, or NULL: then it is a malloc) is replaced by one
/// of `size` bytes at the same offset on every PE, holding the old contents up to the smaller
/// size; size 0 frees it and returns NULL. Where no block of `size` is free, NULL, and `ptr` is
/// left as it was. The new block is allocated before the old one is freed (the allocator is
/// deterministic, so every PE picks the same offset); the copy is each PE's own, and a
/// barrier follows it, so that no PE writes into a peer's new block before the peer copied.
#[no_mangle]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    const F: &str = "shmem_realloc";
    guard(F, || {
        let st = state(F);
        retry_binders(F, st);
        let mut heap = st.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let off = block_offset(F, st, &heap, ptr);
        memory_call(st, F, Kind::Realloc, off, size as u64);
        if ptr.is_null() {
            return place(F, st, &mut heap, size, 1).cast();
        }
        if size == 0 {
            let _ = heap.free(off as usize);
            return std::ptr::null_mut();
        }
        let old = heap.size_of(off as usize).unwrap_or(0);
        let p = place(F, st, &mut heap, size, 1);
        if p.is_null() {
            return p.cast(); // the old block stays
        }
        let n = old.min(size);
        match &st.gpu {
            // SAFETY: as below, on the GPU heap.
            Some(g) => unsafe { g.copy(F, p as usize, ptr as usize, n) },
            // SAFETY: both blocks are live, distinct blocks of the mapped local heap, at least
            // n bytes long.
            None => unsafe { std::ptr::copy_nonoverlapping(ptr as *const u8, p, n) },
        }
        let _ = heap.free(off as usize);
        st.barrier();
        p.cast()
    })
}

/// The hints shmem_malloc_with_hints knows: SHMEM_MALLOC_ATOMICS_REMOTE (0x1) and
/// SHMEM_MALLOC_SIGNAL_REMOTE (0x2).
const HINTS: c_long = 0x3;

/// OpenSHMEM's shmem_malloc_with_hints: shmem_malloc with hints about the block's use. Every
/// block is served alike here (remote AMOs and signals work on any block), so the known hints
/// change nothing; the hints are part of the call that every PE must make alike (checked as
/// malloc's size is). Unknown hint bits are a fatal error.
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void {
    const F: &str = "shmem_malloc_with_hints";
    guard(F, || {
        if hints & !HINTS != 0 {
            fatal(
                F,
                &format!("hints {hints:#x} has bits other than SHMEM_MALLOC_ATOMICS_REMOTE (0x1) and SHMEM_MALLOC_SIGNAL_REMOTE (0x2)"),
            );
        }
        allocate_with(F, Kind::MallocHints, size, 1, false, hints as u64)
    })
}
