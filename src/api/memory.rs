//! Symmetric heap management: malloc, calloc, align, free. Every call is collective: all PEs
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
use crate::heap::alloc::AllocError;
use std::ffi::c_void;
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
    let st = state(func);
    retry_binders(func, st);
    if !align.is_power_of_two() {
        fatal(func, &format!("alignment {align} is not a power of two"));
    }
    let mut heap = st.alloc.lock().unwrap_or_else(|e| e.into_inner());
    memory_call(st, func, kind, size as u64, align as u64);
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
    let p = (st.heap.base + off) as *mut u8;
    if zero {
        match &st.gpu {
            // SAFETY: as below, on the GPU heap.
            Some(g) => unsafe { g.memset(func, p as usize, size) },
            // SAFETY: the block [off, off+size) is inside the mapped local heap, and no PE may
            // write it before its owner zeroed it (the barrier below).
            None => unsafe { std::ptr::write_bytes(p, 0, size) },
        }
        // No PE may write into the block before its owner zeroed it.
        st.barrier();
    }
    p.cast()
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
        let addr = ptr as usize;
        let off = if ptr.is_null() { u64::MAX } else { addr.wrapping_sub(st.heap.base) as u64 };
        if st.gpu.is_some() && (off as usize) < crate::core::device::SYNC_BYTES {
            fatal(F, &format!("{addr:#x} was not returned by ishmem_malloc/calloc/align (it is the library's reserved sync area)"));
        }
        if let Some(&(start, _, what)) = st.lib_blocks.iter().find(|&&(b, l, _)| (off as usize).wrapping_sub(b) < l) {
            let at = if off as usize == start { String::from("is") } else { format!("points inside (at {:#x})", st.heap.base + start) };
            fatal(F, &format!("{addr:#x} {at} the library's block of {what}, not one returned by ishmem_malloc/calloc/align"));
        }
        if !ptr.is_null() && heap.size_of(off as usize).is_none() {
            let what = match heap.block_at(off as usize) {
                Some((start, _)) if (off as usize) < st.heap.len => {
                    format!("{addr:#x} points inside the block at {:#x}, not at its start", st.heap.base + start)
                }
                _ if (off as usize) < st.heap.len => format!("{addr:#x} is not an allocated block (already freed?)"),
                _ => format!("{addr:#x} was not returned by ishmem_malloc/calloc/align"),
            };
            fatal(F, &what);
        }
        // Everybody must be done with the block before it can be reused.
        memory_call(st, F, Kind::Free, off, 0);
        if !ptr.is_null() {
            let _ = heap.free(off as usize);
        }
    })
}
