//! Remote memory access: the argument checks of put, get, p, g, iput, iget, ibput, ibget and
//! their nbi forms; the transfers are `core::rma`'s (complete at return, which also satisfies
//! the nbi forms' contract: complete by the next quiet).

pub(crate) use crate::core::check_align;
use crate::core::{bytes, rma, rma::Strided, state};
use crate::ffi::fatal;
use std::ffi::c_int;

#[inline(always)]
fn check_ptr(func: &str, what: &str, p: *const u8) {
    if p.is_null() {
        fatal(func, &format!("{what} is NULL"));
    }
}

/// The checks every contiguous put and get makes: the state, PE `pe` in range, the byte count
/// (None when it is 0: nothing to do), the local buffer (`what`) not NULL.
#[inline(always)]
fn contiguous(
    func: &str,
    nelems: usize,
    elem: usize,
    pe: c_int,
    what: &str,
    local: *const u8,
) -> Option<(&'static crate::core::State, usize, usize)> {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    let n = bytes(func, nelems, elem);
    if n == 0 {
        return None;
    }
    check_ptr(func, what, local);
    Some((st, pe, n))
}

/// Copies `nelems * elem` bytes from local `src` to symmetric `dest` on `pe`.
///
/// # Safety
/// `src` must be readable for the length; `dest` is checked against the symmetric regions.
#[inline]
pub unsafe fn put(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int) {
    if let Some((st, pe, n)) = contiguous(func, nelems, elem, pe, "source", src) {
        // SAFETY: src is readable for n bytes per the caller.
        unsafe { rma::put(st, func, dest as usize, src, n, pe) }
    }
}

/// Copies `nelems * elem` bytes from symmetric `src` on `pe` to local `dest`.
///
/// # Safety
/// `dest` must be writable for the length; `src` is checked against the symmetric regions.
#[inline]
pub unsafe fn get(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int) {
    if let Some((st, pe, n)) = contiguous(func, nelems, elem, pe, "dest", dest) {
        // SAFETY: dest is writable for n bytes per the caller.
        unsafe { rma::get(st, func, dest, src as usize, n, pe) }
    }
}

/// `put` for the nbi forms: the network may read `src` until the next quiet.
///
/// # Safety
/// `src` must be readable, and unchanged, for the length until the next quiet.
#[inline]
pub unsafe fn put_nbi(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int) {
    if let Some((st, pe, n)) = contiguous(func, nelems, elem, pe, "source", src) {
        // SAFETY: forwarded contract.
        unsafe { rma::put_nbi(st, func, dest as usize, src, n, pe) }
    }
}

/// `get` for the nbi forms: the network may write `dest` until the next quiet.
///
/// # Safety
/// `dest` must be writable for the length, and not otherwise accessed, until the next quiet.
#[inline]
pub unsafe fn get_nbi(func: &str, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, pe: c_int) {
    if let Some((st, pe, n)) = contiguous(func, nelems, elem, pe, "dest", dest) {
        // SAFETY: forwarded contract.
        unsafe { rma::get_nbi(st, func, dest, src as usize, n, pe) }
    }
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
    func: &str,
    dir: Dir,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: c_int,
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
    let (sym, local) = match dir {
        Dir::Put => {
            check_ptr(func, "source", src);
            (
                Strided { addr: dest as usize, stride: dst * elem, span: dspan },
                Strided { addr: src as usize, stride: sst * elem, span: sspan },
            )
        }
        Dir::Get => {
            check_ptr(func, "dest", dest);
            (
                Strided { addr: src as usize, stride: sst * elem, span: sspan },
                Strided { addr: dest as usize, stride: dst * elem, span: dspan },
            )
        }
    };
    // SAFETY: the local side is valid over its span per the caller.
    unsafe { rma::strided(st, func, matches!(dir, Dir::Put), sym, local, block, nblocks, pe) }
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
    func: &str,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: c_int,
) {
    // SAFETY: forwarded contract.
    unsafe { strided(func, Dir::Put, dest, src, dst, sst, bsize, nblocks, elem, pe) }
}

/// # Safety
/// See `strided`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn ibget(
    func: &str,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    elem: usize,
    pe: c_int,
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
    // SAFETY: the symmetric side is checked by core::rma::store.
    unsafe { rma::store(st, func, dest as usize, value, pe) }
}

/// Loads one element from symmetric `src` on `pe`.
///
/// # Safety
/// `src` is checked against the symmetric regions and for alignment.
#[inline]
pub unsafe fn g<T: Copy>(func: &str, src: *const T, pe: c_int) -> T {
    let st = state(func);
    let pe = st.check_pe(func, pe);
    // SAFETY: T is a plain C element type (the shims instantiate g for those only).
    unsafe { rma::load(st, func, src as usize, pe) }
}
