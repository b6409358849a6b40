//! Untyped remote memory access, dispatched by how the target is reached (`State::reach`):
//! copies into or out of host memory mapped from a node peer, GPU copies on the CUDA
//! backend's heap, or the network for a PE of another node. Mapped and GPU operations complete
//! before they return (so the nbi forms' contract holds with nothing left to drain); network
//! puts complete at quiet (a bounded number in flight), network gets before they return. Arguments are checked by the callers in
//! `api` (PE range, sizes, NULL); the symmetric side's range is checked here by `reach`.

use super::{Reach, State};
use crate::transport::copy;
use std::ptr;

/// Copies `n` bytes from local `src` to PE `pe`'s copy of the symmetric `dest`.
///
/// # Safety
/// `src` must be readable for `n` bytes.
#[inline]
pub unsafe fn put(st: &State, func: &str, dest: usize, src: *const u8, n: usize, pe: usize) {
    match st.reach(func, "dest", dest, n, pe, Some(src as usize)) {
        // SAFETY: r..r+n lies in a heap mapped here (checked by reach); src is readable per the
        // caller.
        Reach::Gpu(g, r) => unsafe { g.copy(func, r, src as usize, n) },
        // SAFETY: r..r+n lies in a mapped symmetric region (checked by reach); src is readable
        // per the caller; the copy allows the ranges to overlap (a put to oneself).
        Reach::Host(r) => unsafe { copy::copy(r as *mut u8, src, n, st.cfg.nt_copy_min) },
        // SAFETY: src is readable for n bytes per the caller.
        Reach::Net(net, pe, at) => unsafe { net.put(func, pe, src, n, at) },
    }
}

/// Copies `n` bytes from PE `pe`'s copy of the symmetric `src` to local `dest`.
///
/// # Safety
/// `dest` must be writable for `n` bytes.
#[inline]
pub unsafe fn get(st: &State, func: &str, dest: *mut u8, src: usize, n: usize, pe: usize) {
    match st.reach(func, "source", src, n, pe, Some(dest as usize)) {
        // SAFETY: as in `put`, with the roles of the ranges swapped.
        Reach::Gpu(g, r) => unsafe { g.copy(func, dest as usize, r, n) },
        // SAFETY: as in `put`, with the roles of the ranges swapped.
        Reach::Host(r) => unsafe { copy::copy(dest, r as *const u8, n, st.cfg.nt_copy_min) },
        // SAFETY: dest is writable for n bytes per the caller.
        Reach::Net(net, pe, at) => unsafe { net.get(func, pe, dest, n, at) },
    }
}

/// A put of `n` bytes to PE `pe`'s `dest` and the update of its signal word `sig` (`add`:
/// SIGNAL_ADD, else SIGNAL_SET) as one network operation (`net::Net::put_signal`), where `pe`
/// is on another node and the provider's path allows it; `false`: nothing was done (the
/// caller puts, fences and updates the signal).
///
/// # Safety
/// `src` must be readable for `n` bytes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal(
    st: &State,
    func: &str,
    dest: usize,
    src: *const u8,
    n: usize,
    sig: usize,
    signal: u64,
    add: bool,
    pe: usize,
) -> bool {
    if st.net.is_none() || n == 0 {
        return false;
    }
    let Reach::Net(net, pe, at) = st.reach(func, "dest", dest, n, pe, Some(src as usize)) else { return false };
    let Reach::Net(_, _, sig_at) = st.reach_atomic(func, "sig_addr", sig, 8, pe) else { return false };
    // SAFETY: src is readable for n bytes per the caller.
    unsafe { net.put_signal(func, pe, src, n, at, sig_at, signal, add) }
}

/// `put` whose network form may read `src` until the next quiet (the nbi forms: complete at
/// quiet, with a bounded number in flight).
///
/// # Safety
/// `src` must be readable, and unchanged, for `n` bytes until the next quiet.
#[inline]
pub unsafe fn put_nbi(st: &State, func: &str, dest: usize, src: *const u8, n: usize, pe: usize) {
    match st.reach(func, "dest", dest, n, pe, Some(src as usize)) {
        // SAFETY: forwarded contract.
        Reach::Net(net, pe, at) => unsafe { net.put_nbi(func, pe, src, n, at) },
        // SAFETY: forwarded contract (mapped and GPU copies complete at return).
        _ => unsafe { put(st, func, dest, src, n, pe) },
    }
}

/// `get` whose network form completes by the next quiet.
///
/// # Safety
/// `dest` must be writable for `n` bytes, and not otherwise accessed, until the next quiet.
#[inline]
pub unsafe fn get_nbi(st: &State, func: &str, dest: *mut u8, src: usize, n: usize, pe: usize) {
    match st.reach(func, "source", src, n, pe, Some(dest as usize)) {
        // SAFETY: forwarded contract.
        Reach::Net(net, pe, at) => unsafe { net.get_nbi(func, pe, dest, n, at) },
        // SAFETY: forwarded contract.
        _ => unsafe { get(st, func, dest, src, n, pe) },
    }
}

/// One side of a strided transfer: an address, the distance between block starts and the
/// bytes it spans (`(nblocks - 1) * stride + block`), all in bytes.
pub struct Strided {
    pub addr: usize,
    pub stride: usize,
    pub span: usize,
}

/// `nblocks` blocks of `block` bytes between the symmetric side `sym` (on PE `pe`) and the
/// local side `local`; `put` says which way.
///
/// # Safety
/// The local side must be valid (readable for a put, writable for a get) over its span.
#[allow(clippy::too_many_arguments)]
pub unsafe fn strided(st: &State, func: &str, put: bool, sym: Strided, local: Strided, block: usize, nblocks: usize, pe: usize) {
    let what = if put { "dest" } else { "source" };
    let (r, gpu) = match st.reach(func, what, sym.addr, sym.span, pe, Some(local.addr)) {
        Reach::Gpu(g, r) => (r, Some(g)),
        Reach::Host(r) => (r, None),
        Reach::Net(net, pe, at) => {
            for b in 0..nblocks {
                let at = crate::transport::fabric::Remote { region: at.region, offset: at.offset + b * sym.stride };
                let l = local.addr + b * local.stride;
                // SAFETY: block b of the local side is valid per the caller; the symmetric
                // side's span was checked by reach.
                unsafe {
                    if put {
                        net.put(func, pe, l as *const u8, block, at)
                    } else {
                        net.get(func, pe, l as *mut u8, block, at)
                    }
                }
            }
            return;
        }
    };
    let (d, dst, s, sst) = if put { (r, sym.stride, local.addr, local.stride) } else { (local.addr, local.stride, r, sym.stride) };
    if let Some(g) = gpu {
        // SAFETY: every block lies inside both spans: the symmetric one checked by reach, the
        // local one valid per the caller.
        return unsafe { g.copy_2d(func, d, dst, s, sst, block, nblocks) };
    }
    for b in 0..nblocks {
        // SAFETY: block b lies inside both spans: the symmetric one checked by reach, the
        // local one valid per the caller.
        unsafe { ptr::copy((s + b * sst) as *const u8, (d + b * dst) as *mut u8, block) };
    }
}

/// Stores one element into PE `pe`'s copy of the symmetric `dest` (aligned for `T`).
///
/// # Safety
/// None beyond the checks made here (range and alignment of the symmetric side).
#[inline]
pub unsafe fn store<T: Copy>(st: &State, func: &str, dest: usize, value: T, pe: usize) {
    match st.reach(func, "dest", dest, size_of::<T>(), pe, None) {
        Reach::Gpu(g, r) => {
            super::check_align(func, "dest", r, align_of::<T>());
            // SAFETY: r is a mapped, aligned heap location of size_of::<T>() bytes (checked);
            // value is a local of that size.
            unsafe { g.copy(func, r, &value as *const T as usize, size_of::<T>()) }
        }
        Reach::Host(r) => {
            super::check_align(func, "dest", r, align_of::<T>());
            // SAFETY: r is a mapped, aligned symmetric location of size_of::<T>() bytes.
            unsafe { ptr::write_volatile(r as *mut T, value) }
        }
        Reach::Net(net, pe, at) => {
            super::check_align(func, "dest", dest, align_of::<T>());
            // SAFETY: value is a local of size_of::<T>() bytes, alive for the call (small puts
            // are injected: the source is free on return).
            unsafe { net.put(func, pe, &value as *const T as *const u8, size_of::<T>(), at) }
        }
    }
}

/// Loads one element from PE `pe`'s copy of the symmetric `src` (aligned for `T`).
///
/// # Safety
/// `T` must be a plain C element type (any bit pattern is a value).
#[inline]
pub unsafe fn load<T: Copy>(st: &State, func: &str, src: usize, pe: usize) -> T {
    match st.reach(func, "source", src, size_of::<T>(), pe, None) {
        Reach::Gpu(g, r) => {
            super::check_align(func, "source", r, align_of::<T>());
            let mut v = std::mem::MaybeUninit::<T>::uninit();
            // SAFETY: v is writable for size_of::<T>() bytes; r is a mapped, aligned heap
            // location of as many (checked).
            unsafe { g.copy(func, v.as_mut_ptr() as usize, r, size_of::<T>()) };
            // SAFETY: the copy wrote all size_of::<T>() bytes; any bit pattern is a T.
            unsafe { v.assume_init() }
        }
        Reach::Host(r) => {
            super::check_align(func, "source", r, align_of::<T>());
            // SAFETY: r is a mapped, aligned symmetric location of size_of::<T>() bytes.
            unsafe { ptr::read_volatile(r as *const T) }
        }
        Reach::Net(net, pe, at) => {
            super::check_align(func, "source", src, align_of::<T>());
            let mut v = std::mem::MaybeUninit::<T>::uninit();
            // SAFETY: v is writable for size_of::<T>() bytes; the get fills all of them, and
            // any bit pattern is a T.
            unsafe {
                net.get(func, pe, v.as_mut_ptr().cast(), size_of::<T>(), at);
                v.assume_init()
            }
        }
    }
}
