//! Remote memory access: the cores of put, get, p, g, iput, iget, ibput, ibget and their nbi
//! forms. On mapped memory a put or get completes before it returns, which also satisfies the
//! nbi forms' contract (complete by the next quiet). On the GPU heap (CUDA backend) they are
//! synchronous cuMemcpy calls on unified addresses (`State::gpu_for`), complete at return too.

use crate::core::{bytes, state};
use crate::ffi::fatal;
use std::ffi::c_int;
use crate::transport::copy;
use std::ptr;

#[inline(always)]
fn check_ptr(func: &str, what: &str, p: *const u8) {
    if p.is_null() {
        fatal(func, &format!("{what} is NULL"));
    }
}

#[inline(always)]
pub(crate) fn check_align(func: &str, what: &str, addr: usize, align: usize) {
    if addr & (align - 1) != 0 {
        fatal(func, &format!("{what} {addr:#x} is not aligned to {align} bytes"));
    }
}

/// Copies `nelems * elem` bytes from local `src` to symmetric `dest` on `pe`.
///
/// # Safety
/// `src` must be readable for the length; `dest` is checked against the symmetric regions.
#[inline]
pub unsafe fn put(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int) {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let n = bytes(func, nelems, elem);
    if n == 0 {
        return;
    }
    check_ptr(func, "source", src);
    let r = st.remote(func, "dest", dest as usize, n, pe);
    if let Some(g) = st.gpu_for(dest as usize, src as usize) {
        return g.copy(func, r, src as usize, n);
    }
    // SAFETY: r..r+n lies in a mapped symmetric region (checked); src is readable per the
    // caller; the copy allows the ranges to overlap (a put to oneself).
    unsafe { copy::copy(r as *mut u8, src, n, st.cfg.nt_copy_min) };
}

/// Copies `nelems * elem` bytes from symmetric `src` on `pe` to local `dest`.
///
/// # Safety
/// `dest` must be writable for the length; `src` is checked against the symmetric regions.
#[inline]
pub unsafe fn get(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int) {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let n = bytes(func, nelems, elem);
    if n == 0 {
        return;
    }
    check_ptr(func, "dest", dest);
    let r = st.remote(func, "source", src as usize, n, pe);
    if let Some(g) = st.gpu_for(src as usize, dest as usize) {
        return g.copy(func, dest as usize, r, n);
    }
    // SAFETY: as in `put`, with the roles of the ranges swapped.
    unsafe { copy::copy(dest, r as *const u8, n, st.cfg.nt_copy_min) };
}

/// Bytes spanned by `nblocks` blocks of `bsize` elements spaced `stride` elements apart.
fn span(func: &str, stride: usize, bsize: usize, nblocks: usize, elem: usize) -> usize {
    let last = (nblocks - 1).checked_mul(stride).and_then(|x| x.checked_add(bsize));
    match last {
        Some(e) => bytes(func, e, elem),
        None => fatal(func, &format!("size overflow: {nblocks} blocks with stride {stride}")),
    }
}

fn check_strides(func: &str, dst: isize, sst: isize, bsize: usize) {
    for (name, s) in [("dst", dst), ("sst", sst)] {
        if s < 1 || (s as usize) < bsize {
            let min = bsize.max(1);
            fatal(func, &format!("stride {name} = {s} must be at least {min}"));
        }
    }
}

enum Dir {
    Put,
    Get,
}

/// Strided block copy, shared by the four strided families.
///
/// # Safety
/// The local side must be valid for the strided range; the symmetric side is checked.
#[allow(clippy::too_many_arguments)]
unsafe fn strided(
    func: &str, dir: Dir, dest: *mut u8, src: *const u8, dst: isize, sst: isize, bsize: usize, nblocks: usize,
    elem: usize, pe: c_int,
) {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    check_strides(func, dst, sst, bsize);
    if bsize == 0 || nblocks == 0 {
        return;
    }
    let (dst, sst) = (dst as usize, sst as usize);
    let dspan = span(func, dst, bsize, nblocks, elem);
    let sspan = span(func, sst, bsize, nblocks, elem);
    let block = bytes(func, bsize, elem);
    let (d, s, gpu) = match dir {
        Dir::Put => {
            check_ptr(func, "source", src);
            (st.remote(func, "dest", dest as usize, dspan, pe), src as usize, st.gpu_for(dest as usize, src as usize))
        }
        Dir::Get => {
            check_ptr(func, "dest", dest);
            (dest as usize, st.remote(func, "source", src as usize, sspan, pe), st.gpu_for(src as usize, dest as usize))
        }
    };
    if let Some(g) = gpu {
        return g.copy_2d(func, d, dst * elem, s, sst * elem, block, nblocks);
    }
    for b in 0..nblocks {
        // SAFETY: block b lies inside [d, d+dspan) and [s, s+sspan), both valid (checked
        // symmetric side, caller-guaranteed local side).
        unsafe { ptr::copy((s + b * sst * elem) as *const u8, (d + b * dst * elem) as *mut u8, block) };
    }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iput(func: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, nelems: usize, elem: usize, pe: c_int) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, Dir::Put, dest, src, dst, sst, 1, nelems, elem, pe) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iget(func: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, nelems: usize, elem: usize, pe: c_int) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, Dir::Get, dest, src, dst, sst, 1, nelems, elem, pe) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibput(
    func: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, bsize: usize, nblocks: usize, elem: usize, pe: c_int,
) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, Dir::Put, dest, src, dst, sst, bsize, nblocks, elem, pe) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibget(
    func: &str, dest: *mut u8, src: *const u8, dst: isize, sst: isize, bsize: usize, nblocks: usize, elem: usize, pe: c_int,
) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, Dir::Get, dest, src, dst, sst, bsize, nblocks, elem, pe) }
}

/// Stores one element into symmetric `dest` on `pe`.
///
/// # Safety
/// `dest` is checked against the symmetric regions and for alignment.
#[inline]
pub unsafe fn p<T: Copy>(func: &str, dest: *mut T, value: T, pe: c_int) {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let r = st.remote(func, "dest", dest as usize, size_of::<T>(), pe);
    check_align(func, "dest", r, align_of::<T>());
    if let Some(g) = st.gpu_heap(dest as usize) {
        return g.copy(func, r, &value as *const T as usize, size_of::<T>());
    }
    // SAFETY: r is a mapped, aligned symmetric location of size_of::<T>() bytes.
    unsafe { ptr::write_volatile(r as *mut T, value) };
}

/// Loads one element from symmetric `src` on `pe`.
///
/// # Safety
/// `src` is checked against the symmetric regions and for alignment.
#[inline]
pub unsafe fn g<T: Copy>(func: &str, src: *const T, pe: c_int) -> T {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let r = st.remote(func, "source", src as usize, size_of::<T>(), pe);
    check_align(func, "source", r, align_of::<T>());
    if let Some(g) = st.gpu_heap(src as usize) {
        let mut v = std::mem::MaybeUninit::<T>::uninit();
        g.copy(func, v.as_mut_ptr() as usize, r, size_of::<T>());
        // SAFETY: the copy wrote all size_of::<T>() bytes; T is a plain C element type.
        return unsafe { v.assume_init() };
    }
    // SAFETY: r is a mapped, aligned symmetric location of size_of::<T>() bytes.
    unsafe { ptr::read_volatile(r as *const T) }
}
