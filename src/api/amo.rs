//! Atomic memory operations: real atomics on the target PE's mapped memory, so they are
//! atomic across processes and against every other AMO, signal and wait on the same object.
//! All AMOs are sequentially consistent.

use crate::api::rma::check_align;
use crate::core::state;
use crate::ffi::fatal;
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
        }
    )*};
}
atom_float!(f32 => AtomicU32, f64 => AtomicU64);

/// The target's mapped address, checked for range and alignment.
#[inline(always)]
fn target<T>(func: &str, dest: *const T, pe: c_int) -> *mut T {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let r = st.remote(func, "dest", dest as usize, size_of::<T>(), pe);
    check_align(func, "dest", r, size_of::<T>());
    r as *mut T
}

/// # Safety
/// `dest` is checked; nothing else is dereferenced.
#[inline]
pub unsafe fn fetch<T: Atom>(func: &str, dest: *const T, pe: c_int) -> T {
    // SAFETY: `target` returns a mapped, aligned address.
    unsafe { T::load(target(func, dest, pe)) }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn set<T: Atom>(func: &str, dest: *mut T, value: T, pe: c_int) {
    // SAFETY: as in `fetch`.
    unsafe { T::store(target(func, dest, pe), value) }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn swap<T: Atom>(func: &str, dest: *mut T, value: T, pe: c_int) -> T {
    // SAFETY: as in `fetch`.
    unsafe { T::swap(target(func, dest, pe), value) }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn compare_swap<T: AtomInt>(func: &str, dest: *mut T, cond: T, value: T, pe: c_int) -> T {
    // SAFETY: as in `fetch`.
    unsafe { T::cas(target(func, dest, pe), cond, value) }
}

/// # Safety
/// As `fetch`.
#[inline]
pub unsafe fn fetch_op<T: AtomInt>(func: &str, dest: *mut T, op: Op, value: T, pe: c_int) -> T {
    // SAFETY: as in `fetch`.
    unsafe { T::rmw(target(func, dest, pe), op, value) }
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
