//! The checked entries of the collectives, shared by both doors (the C symbols of `api::coll`
//! and `api::team`, and the GPU's collectives through `proxy`): each checks its arguments
//! (team, sizes, symmetric and non-overlapping buffers, root, alignment) with PE-tagged fatal
//! errors naming the routine, then runs the algorithm of `core::coll`. They return 0: every
//! failure is fatal.

use super::coll::Team;
use super::{bytes, check_align, State};
use crate::ffi::fatal;
use crate::op::{bit_combiner, combiner, BitOp, Bits, Num, RedOp};
use std::ffi::c_int;

/// The team `team` of this PE ready for a collective, or a fatal error naming `func`.
pub fn team_of<'a>(st: &'a State, func: &'a str, team: c_int) -> Team<'a> {
    Team::new(st, func, team as usize, st.team_desc(func, team))
}

/// The state, or a fatal error naming `func` before init.
fn state(func: &str) -> &'static State {
    super::state(func)
}

/// Checks that `[addr, addr+len)` is symmetric on this PE (nothing for an empty range).
fn sym(st: &State, func: &str, what: &str, addr: usize, len: usize) {
    if len > 0 {
        st.remote(func, what, addr, len, st.me);
    }
}

fn overlap(a: usize, alen: usize, b: usize, blen: usize) -> bool {
    alen > 0 && blen > 0 && a < b.saturating_add(blen) && b < a.saturating_add(alen)
}

/// Fatal when the ranges overlap (`same_ok`: except when they are the very same range).
fn check_overlap(func: &str, dest: usize, dlen: usize, src: usize, slen: usize, same_ok: bool) {
    if overlap(dest, dlen, src, slen) && !(same_ok && dest == src && dlen == slen) {
        let rule = if same_ok { " (they may be the same array, not partly overlap)" } else { "" };
        fatal(func, &format!("dest {dest:#x} ({dlen} bytes) and source {src:#x} ({slen} bytes) overlap{rule}"));
    }
}

/// # Safety
/// Checked here: the buffers are symmetric, in range, and the same array or disjoint as the
/// routine allows. The caller's part (the specification's): the program does not access
/// `dest` or `src`, on any PE, until the call returns, and every PE of the team makes the
/// same call (the entries' call agreement ends the job on the mismatches it sees).
pub unsafe fn broadcast(func: &str, team: c_int, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, root: c_int) -> c_int {
    let st = state(func);
    let t = team_of(st, func, team);
    if root < 0 || root as usize >= t.n {
        fatal(func, &format!("root {root} out of range [0, {}) of team {team}", t.n));
    }
    let nb = bytes(func, nelems, elem);
    let (d, s) = (dest as usize, src as usize);
    sym(st, func, "dest", d, nb);
    sym(st, func, "source", s, nb);
    check_overlap(func, d, nb, s, nb, true);
    // SAFETY: both ranges checked above (symmetric, the same array or disjoint); the rest
    // is this function's contract.
    unsafe { t.broadcast(d, s, nb, root as usize) };
    0
}

/// # Safety
/// As `broadcast`.
pub unsafe fn fcollect(func: &str, team: c_int, dest: *mut u8, src: *const u8, nelems: usize, elem: usize) -> c_int {
    // SAFETY: forwarded.
    unsafe { exchange(func, team, dest, src, nelems, elem, false) }
}

/// # Safety
/// As `broadcast`.
pub unsafe fn alltoall(func: &str, team: c_int, dest: *mut u8, src: *const u8, nelems: usize, elem: usize) -> c_int {
    // SAFETY: forwarded.
    unsafe { exchange(func, team, dest, src, nelems, elem, true) }
}

/// alltoalls: `nelems` elements of `elem` bytes to each PE, `dst` and `sst` elements apart in
/// dest and source (both at least 1, alike on every PE); each side spans `n * nelems` strided
/// elements, symmetric, and the two are disjoint.
///
/// # Safety
/// As `broadcast`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn alltoalls(
    func: &str,
    team: c_int,
    dest: *mut u8,
    src: *const u8,
    dst: isize,
    sst: isize,
    nelems: usize,
    elem: usize,
) -> c_int {
    let st = state(func);
    let t = team_of(st, func, team);
    for (what, s) in [("dst", dst), ("sst", sst)] {
        if s < 1 || s > u32::MAX as isize {
            fatal(func, &format!("{what} {s}: strides must be at least 1 (and below 2^32)"));
        }
    }
    let span = |stride: isize| -> usize {
        if nelems == 0 {
            return 0;
        }
        let last = bytes(func, t.n, nelems) - 1;
        bytes(func, bytes(func, last, stride as usize) + 1, elem)
    };
    let (dspan, sspan) = (span(dst), span(sst));
    let (d, s) = (dest as usize, src as usize);
    sym(st, func, "dest", d, dspan);
    sym(st, func, "source", s, sspan);
    check_overlap(func, d, dspan, s, sspan, false);
    // SAFETY: both strided spans checked above (symmetric, disjoint); the rest is this
    // function's contract.
    unsafe { t.alltoalls(d, s, dst as usize * elem, sst as usize * elem, elem, nelems) };
    0
}

/// fcollect (`all` false: a source of one block) or alltoall (`all`: a block per PE): dest
/// holds a block per PE; both symmetric and disjoint.
///
/// # Safety
/// As `broadcast`.
unsafe fn exchange(func: &str, team: c_int, dest: *mut u8, src: *const u8, nelems: usize, elem: usize, all: bool) -> c_int {
    let st = state(func);
    let t = team_of(st, func, team);
    let nb = bytes(func, nelems, elem);
    let total = bytes(func, nb, t.n);
    let src_len = if all { total } else { nb };
    let (d, s) = (dest as usize, src as usize);
    sym(st, func, "dest", d, total);
    sym(st, func, "source", s, src_len);
    check_overlap(func, d, total, s, src_len, false);
    // SAFETY: dest (n blocks) and source (n blocks or one) checked above (symmetric,
    // disjoint); the rest is this function's contract.
    unsafe {
        if all {
            t.alltoall(d, s, nb);
        } else {
            t.fcollect(d, s, nb);
        }
    }
    0
}

/// # Safety
/// As `broadcast`; the destination is checked once the PEs' sizes are known.
pub unsafe fn collect(func: &str, team: c_int, dest: *mut u8, src: *const u8, nelems: usize, elem: usize) -> c_int {
    let st = state(func);
    let t = team_of(st, func, team);
    let nb = bytes(func, nelems, elem);
    let (d, s) = (dest as usize, src as usize);
    sym(st, func, "source", s, nb);
    // SAFETY: the source checked above; the closure ends the job unless the dest of the
    // total is symmetric and disjoint from it; the rest is this function's contract.
    unsafe {
        t.collect(d, s, nb, |total| {
            if total == usize::MAX || total > isize::MAX as usize {
                fatal(func, "size overflow: the PEs' blocks add up to more than the address space");
            }
            sym(st, func, "dest", d, total);
            check_overlap(func, d, total, s, nb, false);
        })
    };
    0
}

/// The checks shared by reductions and scans: team, size, symmetric and aligned buffers that
/// are the same array or disjoint.
fn reduce_args<'a, T>(func: &'a str, st: &'a State, team: c_int, dest: *mut T, src: *const T, n: usize) -> Team<'a> {
    let t = team_of(st, func, team);
    let nb = bytes(func, n, size_of::<T>());
    let (d, s) = (dest as usize, src as usize);
    sym(st, func, "dest", d, nb);
    sym(st, func, "source", s, nb);
    if nb > 0 {
        check_align(func, "dest", d, align_of::<T>());
        check_align(func, "source", s, align_of::<T>());
    }
    check_overlap(func, d, nb, s, nb, true);
    t
}

/// # Safety
/// As `broadcast`; the alignment for `T` is checked here too.
pub unsafe fn reduce<T: Num>(func: &str, team: c_int, dest: *mut T, src: *const T, nreduce: usize, op: RedOp) -> c_int {
    let st = state(func);
    let t = reduce_args(func, st, team, dest, src, nreduce);
    // SAFETY: reduce_args checked both ranges (symmetric, aligned, the same array or
    // disjoint); the rest is this function's contract.
    unsafe { t.reduce::<T>(dest as usize, src as usize, nreduce, combiner::<T>(op)) };
    0
}

/// # Safety
/// As `reduce`.
pub unsafe fn reduce_bits<T: Bits>(func: &str, team: c_int, dest: *mut T, src: *const T, nreduce: usize, op: BitOp) -> c_int {
    let st = state(func);
    let t = reduce_args(func, st, team, dest, src, nreduce);
    // SAFETY: as in `reduce`.
    unsafe { t.reduce::<T>(dest as usize, src as usize, nreduce, bit_combiner::<T>(op)) };
    0
}

/// `sum_inscan` (`inclusive`) and `sum_exscan`.
///
/// # Safety
/// As `reduce`.
pub unsafe fn scan<T: Num>(func: &str, team: c_int, dest: *mut T, src: *const T, nreduce: usize, inclusive: bool) -> c_int {
    let st = state(func);
    let t = reduce_args(func, st, team, dest, src, nreduce);
    // SAFETY: as in `reduce`.
    unsafe { t.scan::<T>(dest as usize, src as usize, nreduce, inclusive, combiner::<T>(RedOp::Sum)) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps() {
        assert!(overlap(0, 10, 9, 1));
        assert!(!overlap(0, 10, 10, 5));
        assert!(!overlap(0, 0, 0, 5));
        assert!(overlap(100, 8, 96, 8));
        assert!(!overlap(100, 8, 92, 8));
    }
}
