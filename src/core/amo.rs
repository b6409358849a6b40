//! Atomic memory operations, dispatched by how the target is reached (`State::reach`): real
//! atomics on host memory mapped from a node peer, so they are atomic across processes and
//! against every other AMO, signal and wait on the same object; on the GPU heap (CUDA backend)
//! one system-scope atomic in a one-thread kernel, by the bits of the value (the kernel knows
//! widths, 1, 4 or 8 bytes, not types). While the job spans nodes, AMOs to PEs of other nodes go
//! through the network (`State::reach_atomic`, `core::net`), and so do those to PEs of this node
//! where the provider's atomics are not the target CPU's (NIC atomics, `Net::node_amos_local`).
//! Host and GPU AMOs are sequentially consistent
//! atomics; network AMOs are applied by the target's provider, and the non-fetching ones
//! complete only at quiet: a later store to a PE of this node may overtake them unless a fence
//! (which waits for them, `net::Net::fence`) or a quiet comes between.

use super::{Reach, State};
use crate::op::{AmoOp, Rmw};
use crate::transport::cuda::Gpu;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::*;

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
    unsafe fn rmw(p: *mut Self, op: Rmw, v: Self) -> Self;
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
            unsafe fn rmw(p: *mut Self, op: Rmw, v: Self) -> Self {
                // SAFETY: as above.
                let a = unsafe { <$a>::from_ptr(p) };
                match op {
                    Rmw::Add => a.fetch_add(v, SeqCst),
                    Rmw::And => a.fetch_and(v, SeqCst),
                    Rmw::Or => a.fetch_or(v, SeqCst),
                    Rmw::Xor => a.fetch_xor(v, SeqCst),
                }
            }
        }
    )*};
}
atom_int!(i8 => AtomicI8, i16 => AtomicI16, i32 => AtomicI32, i64 => AtomicI64, u32 => AtomicU32, u64 => AtomicU64,
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

/// The target's reach, checked for range and for alignment to its size.
#[inline(always)]
fn target<'a, T>(st: &'a State, func: &str, dest: usize, pe: usize) -> Reach<'a> {
    let reach = st.reach_atomic(func, "dest", dest, size_of::<T>(), pe);
    let r = match reach {
        Reach::Host(r) | Reach::Gpu(_, r) => r,
        Reach::Net(..) => dest,
    };
    super::check_align(func, "dest", r, size_of::<T>());
    reach
}

/// The low `size_of::<T>()` bytes of a network AMO's result as a T.
#[inline]
fn from_net<T: Atom>(v: u64) -> T {
    T::from_bits64(v)
}

/// One AMO on the GPU heap, by the bits of the operands.
///
/// # Safety
/// `r` must be a GPU heap address given by `target` (mapped here, aligned for `T`).
#[inline]
unsafe fn on_gpu<T: Atom>(g: &Gpu, func: &str, r: usize, op: AmoOp, value: T, cond: T) -> T {
    // SAFETY: per the caller, r is a mapped heap location aligned for T (size_of::<T>()).
    T::from_bits64(unsafe { g.amo(func, r, size_of::<T>() as u32, op, value.to_bits64(), cond.to_bits64()) })
}

/// Atomically reads PE `pe`'s copy of the symmetric `dest`.
#[inline]
pub fn fetch<T: Atom>(st: &State, func: &str, dest: usize, pe: usize) -> T {
    match target::<T>(st, func, dest, pe) {
        // SAFETY: `target` returns a mapped heap address aligned for T.
        Reach::Gpu(g, r) => T::from_bits64(unsafe { g.amo(func, r, size_of::<T>() as u32, AmoOp::Fetch, 0, 0) }),
        // SAFETY: `target` returns a mapped, aligned address.
        Reach::Host(r) => unsafe { T::load(r as *mut T) },
        Reach::Net(n, pe, at) => from_net(n.fetch(func, pe, at, size_of::<T>())),
    }
}

/// Atomically writes `value`.
#[inline]
pub fn set<T: Atom>(st: &State, func: &str, dest: usize, value: T, pe: usize) {
    match target::<T>(st, func, dest, pe) {
        Reach::Gpu(g, r) => {
            // SAFETY: r comes from `target`.
            unsafe { on_gpu(g, func, r, AmoOp::Set, value, value) };
        }
        // SAFETY: as in `fetch`.
        Reach::Host(r) => unsafe { T::store(r as *mut T, value) },
        Reach::Net(n, pe, at) => n.set(func, pe, at, size_of::<T>(), value.to_bits64()),
    }
}

/// Atomically swaps in `value`, returning the old value.
#[inline]
pub fn swap<T: Atom>(st: &State, func: &str, dest: usize, value: T, pe: usize) -> T {
    match target::<T>(st, func, dest, pe) {
        // SAFETY: r comes from `target`.
        Reach::Gpu(g, r) => unsafe { on_gpu(g, func, r, AmoOp::Swap, value, value) },
        // SAFETY: as in `fetch`.
        Reach::Host(r) => unsafe { T::swap(r as *mut T, value) },
        Reach::Net(n, pe, at) => from_net(n.swap(func, pe, at, size_of::<T>(), value.to_bits64())),
    }
}

/// Stores `value` where the target equals `cond`; returns the old value.
#[inline]
pub fn compare_swap<T: AtomInt>(st: &State, func: &str, dest: usize, cond: T, value: T, pe: usize) -> T {
    match target::<T>(st, func, dest, pe) {
        // SAFETY: r comes from `target`.
        Reach::Gpu(g, r) => unsafe { on_gpu(g, func, r, AmoOp::Cas, value, cond) },
        // SAFETY: as in `fetch`.
        Reach::Host(r) => unsafe { T::cas(r as *mut T, cond, value) },
        Reach::Net(n, pe, at) => from_net(n.cas(func, pe, at, size_of::<T>(), cond.to_bits64(), value.to_bits64())),
    }
}

/// Applies `op` with `value`; returns the old value.
#[inline]
pub fn fetch_op<T: AtomInt>(st: &State, func: &str, dest: usize, op: Rmw, value: T, pe: usize) -> T {
    match target::<T>(st, func, dest, pe) {
        // SAFETY: r comes from `target`.
        Reach::Gpu(g, r) => unsafe { on_gpu(g, func, r, op.amo(), value, value) },
        // SAFETY: as in `fetch`.
        Reach::Host(r) => unsafe { T::rmw(r as *mut T, op, value) },
        Reach::Net(n, pe, at) => from_net(n.fetch_rmw(func, pe, at, size_of::<T>(), op, value.to_bits64())),
    }
}

/// Applies `op` with `value`, no result wanted: on the network a non-fetching atomic
/// (complete at quiet), elsewhere as `fetch_op`.
#[inline]
pub fn op<T: AtomInt>(st: &State, func: &str, dest: usize, op: Rmw, value: T, pe: usize) {
    match target::<T>(st, func, dest, pe) {
        Reach::Net(n, pe, at) => n.rmw(func, pe, at, size_of::<T>(), op, value.to_bits64()),
        _ => {
            fetch_op(st, func, dest, op, value, pe);
        }
    }
}

/// Reads this PE's symmetric `p` (checked by the caller: symmetric, aligned) for a wait or
/// a signal fetch: an atomic load on host memory, an 8-byte-or-less copy from the GPU heap.
///
/// # Safety
/// `p` must be a checked symmetric address of this PE.
#[inline]
pub unsafe fn read_local<T: Atom>(st: &State, func: &str, p: *mut T) -> T {
    match st.gpu_heap(p as usize) {
        Some(g) => {
            let mut v = std::mem::MaybeUninit::<T>::uninit();
            // SAFETY: v is writable for size_of::<T>() bytes; p is this PE's checked heap
            // address, readable for as many (per the caller).
            unsafe { g.copy(func, v.as_mut_ptr() as usize, p as usize, size_of::<T>()) };
            // SAFETY: the copy wrote every byte of v.
            unsafe { v.assume_init() }
        }
        // SAFETY: per the caller, p is valid and aligned.
        None => unsafe { T::load(p) },
    }
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
