//! Atomic memory operations: real atomics on the target PE's mapped memory, so they are
//! atomic across processes and against every other AMO, signal and wait on the same object.
//! All AMOs are sequentially consistent. On the GPU heap (CUDA backend) each AMO is one
//! system-scope atomic in a one-thread kernel (transport::cuda::Gpu::amo), by the bits of the
//! value: the kernel knows widths (1, 4, 8 bytes), not types.

use crate::api::rma::check_align;
use crate::core::state;
use crate::ffi::fatal;
use crate::transport::cuda::{AmoOp, Gpu};
use std::ffi::c_int;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::*;

/// The read-modify-write operators.
#[derive(Clone, Copy)]
pub enum Op {
    Add,
    And,
    Or,
    Xor,
}

/// Types with atomic load, store and swap (every AMO type, floats by their bits).
pub trait Atom: Copy + PartialOrd {
    /// # Safety
    /// `p` must be valid and aligned.
    unsafe fn load(p: *mut Self) -> Self;
    /// # Safety
    /// `p` must be valid and aligned.
    unsafe fn store(p: *mut Self, v: Self);
    /// # Safety
    /// `p` must be valid and aligned.
    unsafe fn swap(p: *mut Self, v: Self) -> Self;
    /// The value's bits in the low `size_of::<Self>()` bytes (what the GPU kernel takes).
    fn to_bits64(self) -> u64;
    /// The value of the low `size_of::<Self>()` bytes of `b`.
    fn from_bits64(b: u64) -> Self;
}

/// Integer types: compare-and-swap and arithmetic/bitwise read-modify-write.
pub trait AtomInt: Atom {
    /// # Safety
    /// `p` must be valid and aligned.
    unsafe fn cas(p: *mut Self, cond: Self, v: Self) -> Self;
    /// # Safety
    /// `p` must be valid and aligned.
    unsafe fn rmw(p: *mut Self, op: Op, v: Self) -> Self;
}

macro_rules! atom_int {
    ($($t:ty => $a:ty),*) => {$(
        impl Atom for $t {
            unsafe fn load(p: *mut Self) -> Self {
                // SAFETY: the caller guarantees p valid and aligned for the atomic type.
                unsafe { <$a>::from_ptr(p).load(SeqCst) }
            }
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).store(v, SeqCst) }
            }
            unsafe fn swap(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p).swap(v, SeqCst) }
            }
            fn to_bits64(self) -> u64 {
                self as u64
            }
            fn from_bits64(b: u64) -> Self {
                b as $t
            }
        }
        impl AtomInt for $t {
            unsafe fn cas(p: *mut Self, cond: Self, v: Self) -> Self {
                // SAFETY: as above.
                let a = unsafe { <$a>::from_ptr(p) };
                match a.compare_exchange(cond, v, SeqCst, SeqCst) { Ok(x) | Err(x) => x }
            }
            unsafe fn rmw(p: *mut Self, op: Op, v: Self) -> Self {
                // SAFETY: as above.
                let a = unsafe { <$a>::from_ptr(p) };
                match op {
                    Op::Add => a.fetch_add(v, SeqCst),
                    Op::And => a.fetch_and(v, SeqCst),
                    Op::Or => a.fetch_or(v, SeqCst),
                    Op::Xor => a.fetch_xor(v, SeqCst),
                }
            }
        }
    )*};
}
atom_int!(i8 => AtomicI8, i32 => AtomicI32, i64 => AtomicI64, u32 => AtomicU32, u64 => AtomicU64,
          isize => AtomicIsize, usize => AtomicUsize);

macro_rules! atom_float {
    ($($t:ty => $a:ty),*) => {$(
        impl Atom for $t {
            unsafe fn load(p: *mut Self) -> Self {
                // SAFETY: the float and its bits share size and alignment; p valid per caller.
                <$t>::from_bits(unsafe { <$a>::from_ptr(p.cast()).load(SeqCst) })
            }
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: as above.
                unsafe { <$a>::from_ptr(p.cast()).store(v.to_bits(), SeqCst) }
            }
            unsafe fn swap(p: *mut Self, v: Self) -> Self {
                // SAFETY: as above.
                <$t>::from_bits(unsafe { <$a>::from_ptr(p.cast()).swap(v.to_bits(), SeqCst) })
            }
            fn to_bits64(self) -> u64 {
                self.to_bits() as u64
            }
            fn from_bits64(b: u64) -> Self {
                <$t>::from_bits(b as _)
            }
        }
    )*};
}
atom_float!(f32 => AtomicU32, f64 => AtomicU64);

/// The target's address as mapped here, checked for range and alignment, and the GPU when
/// it lies in the GPU heap.
#[inline(always)]
fn target<T>(func: &str, dest: *const T, pe: c_int) -> (*mut T, Option<&'static Gpu>) {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let r = st.remote(func, "dest", dest as usize, size_of::<T>(), pe);
    check_align(func, "dest", r, size_of::<T>());
    (r as *mut T, st.gpu_heap(dest as usize))
}

/// One AMO on the GPU heap, by the bits of the operands.
#[inline]
fn on_gpu<T: Atom>(g: &Gpu, func: &str, r: *mut T, op: AmoOp, value: T, cond: T) -> T {
    T::from_bits64(g.amo(func, r as usize, size_of::<T>() as u32, op, value.to_bits64(), cond.to_bits64()))
}

/// # Safety
/// `dest` is checked; nothing else is dereferenced.
#[inline]
pub unsafe fn fetch<T: Atom>(func: &str, dest: *const T, pe: c_int) -> T {
    match target(func, dest, pe) {
        (r, Some(g)) => T::from_bits64(g.amo(func, r as usize, size_of::<T>() as u32, AmoOp::Fetch, 0, 0)),
        // SAFETY: `target` returns a mapped, aligned address.
        (r, None) => unsafe { T::load(r) },
    }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn set<T: Atom>(func: &str, dest: *mut T, value: T, pe: c_int) {
    match target(func, dest, pe) {
        (r, Some(g)) => {
            on_gpu(g, func, r, AmoOp::Set, value, value);
        }
        // SAFETY: as in `fetch`.
        (r, None) => unsafe { T::store(r, value) },
    }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn swap<T: Atom>(func: &str, dest: *mut T, value: T, pe: c_int) -> T {
    match target(func, dest, pe) {
        (r, Some(g)) => on_gpu(g, func, r, AmoOp::Swap, value, value),
        // SAFETY: as in `fetch`.
        (r, None) => unsafe { T::swap(r, value) },
    }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn compare_swap<T: AtomInt>(func: &str, dest: *mut T, cond: T, value: T, pe: c_int) -> T {
    match target(func, dest, pe) {
        (r, Some(g)) => on_gpu(g, func, r, AmoOp::Cas, value, cond),
        // SAFETY: as in `fetch`.
        (r, None) => unsafe { T::cas(r, cond, value) },
    }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn fetch_op<T: AtomInt>(func: &str, dest: *mut T, op: Op, value: T, pe: c_int) -> T {
    match target(func, dest, pe) {
        (r, Some(g)) => {
            let code = match op {
                Op::Add => AmoOp::Add,
                Op::And => AmoOp::And,
                Op::Or => AmoOp::Or,
                Op::Xor => AmoOp::Xor,
            };
            on_gpu(g, func, r, code, value, value)
        }
        // SAFETY: as in `fetch`.
        (r, None) => unsafe { T::rmw(r, op, value) },
    }
}

/// Reads this PE's symmetric `p` (checked by the caller: symmetric, aligned) for a wait or
/// a signal fetch: an atomic load on host memory, an 8-byte-or-less copy from the GPU heap.
///
/// # Safety
/// `p` must be a checked symmetric address of this PE.
#[inline]
pub unsafe fn read_local<T: Atom>(func: &str, p: *mut T) -> T {
    match state(func).gpu_heap(p as usize) {
        Some(g) => {
            let mut v = std::mem::MaybeUninit::<T>::uninit();
            g.copy(func, v.as_mut_ptr() as usize, p as usize, size_of::<T>());
            // SAFETY: the copy wrote every byte of v.
            unsafe { v.assume_init() }
        }
        // SAFETY: per the caller, p is valid and aligned.
        None => unsafe { T::load(p) },
    }
}

/// A nonblocking fetching AMO: runs `op` (complete at return on mapped memory) and stores
/// the fetched value into the local `fetch`.
///
/// # Safety
/// `fetch` must be writable when non-NULL (NULL is a fatal error).
#[inline]
pub unsafe fn nbi<T: Copy>(func: &str, fetch: *mut T, op: impl FnOnce() -> T) {
    if fetch.is_null() {
        fatal(func, "fetch is NULL");
    }
    let v = op();
    // SAFETY: fetch is non-NULL and writable per the caller.
    unsafe { fetch.write_volatile(v) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_through_the_kernel_width() {
        assert_eq!((-1i8).to_bits64() as u8, 0xff);
        assert_eq!(i8::from_bits64(0xff), -1);
        assert_eq!(i32::from_bits64((-5i32).to_bits64() & 0xffff_ffff), -5);
        assert_eq!(u64::from_bits64(u64::MAX.to_bits64()), u64::MAX);
        assert_eq!(f32::from_bits64(1.5f32.to_bits64()), 1.5);
        assert_eq!(1.5f32.to_bits64() >> 32, 0);
        assert_eq!(f64::from_bits64((-2.25f64).to_bits64()), -2.25);
        assert_eq!(isize::from_bits64((-7isize).to_bits64()), -7);
    }
}
