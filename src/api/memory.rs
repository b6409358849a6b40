//! Symmetric heap management: malloc, calloc, align, free. Every call is collective: all PEs
//! run the same deterministic allocator on the same sequence of calls, so a block has the
//! same offset everywhere. Each call publishes its arguments and checks, after a barrier,
//! that PE 0 passed the same ones; a mismatch is a fatal error instead of silent corruption.
//! On the GPU heap the first `ISHMEMI_SYNC_BYTES` are the library's (allocated at init), calloc
//! zeroes with cuMemsetD8, and each call first retries pending device-state binders.

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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Malloc = 1,
    Calloc = 2,
    Align = 3,
    Free = 4,
}

fn describe(kind: u64, a: u64, b: u64) -> String {
    match kind {
        1 => format!("ishmem_malloc(size {a})"),
        2 => format!("ishmem_calloc(total {a} bytes)"),
        3 => format!("ishmem_align(alignment {b}, size {a})"),
        4 => format!("ishmem_free(heap offset {a:#x})"),
        _ => "no call".into(),
    }
}

/// Publishes this PE's arguments, waits for every PE and checks them against PE 0's.
fn agree(func: &str, st: &State, kind: Kind, a: u64, b: u64) {
    let seq = st.coll_seq.fetch_add(1, Relaxed);
    let job = st.job.lock().unwrap_or_else(|e| e.into_inner());
    let mine = [kind as u64, a, b, seq];
    job.post_args(seq, mine);
    st.barrier();
    let root = job.args_of(0, seq);
    if root != mine {
        fatal(
            func,
            &format!(
                "collective call mismatch: this PE called {} but PE 0 called {} (symmetric memory calls must be made by every PE in the same order with the same arguments)",
                describe(mine[0], mine[1], mine[2]),
                describe(root[0], root[1], root[2])
            ),
        );
    }
}

/// `COMMON_ALIGN`, asking every PE for its heap base the first time (collective: called by
/// every PE at the same allocation call, with the allocation lock held).
fn common_align(st: &State) -> usize {
    let known = COMMON_ALIGN.load(Relaxed);
    if known != 0 {
        return known;
    }
    let seq = st.coll_seq.fetch_add(1, Relaxed);
    let job = st.job.lock().unwrap_or_else(|e| e.into_inner());
    job.post_args(seq, [0, st.heap.base as u64, 0, seq]);
    st.barrier();
    // Bases agree modulo 2^k exactly when their lowest differing bit is bit k or above.
    let diff = (0..st.npes).fold(0u64, |d, pe| d | (job.args_of(pe, seq)[1] ^ st.heap.base as u64));
    let common = if diff == 0 { 1usize << (usize::BITS - 1) } else { 1usize << diff.trailing_zeros() };
    COMMON_ALIGN.store(common, Relaxed);
    common
}

/// Retries the device-state binders that failed so far (CUDA backend; one load otherwise).
fn retry_binders(func: &str, st: &State) {
    if let Some(g) = &st.gpu {
        if crate::transport::cuda::binders::any_pending() {
            let _c = g.enter(func);
            crate::transport::cuda::binders::retry_pending();
        }
    }
}

fn allocate(func: &str, kind: Kind, size: usize, align: usize, zero: bool) -> *mut c_void {
    let st = state(func);
    retry_binders(func, st);
    if !align.is_power_of_two() {
        fatal(func, &format!("alignment {align} is not a power of two"));
    }
    let mut heap = st.alloc.lock().unwrap_or_else(|e| e.into_inner());
    agree(func, st, kind, size as u64, align as u64);
    if size == 0 {
        return std::ptr::null_mut();
    }
    if align > crate::heap::HEAP_ALIGN {
        let common = common_align(st);
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
            Some(g) => g.memset(func, p as usize, size),
            // SAFETY: the block [off, off+size) is inside the mapped local heap.
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
        if st.gpu.is_some() && (off as usize) < crate::transport::cuda::state::SYNC_BYTES {
            fatal(F, &format!("{addr:#x} was not returned by ishmem_malloc/calloc/align (it is the library's reserved sync area)"));
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
        agree(F, st, Kind::Free, off, 0);
        if !ptr.is_null() {
            let _ = heap.free(off as usize);
        }
    })
}
