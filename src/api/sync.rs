//! Point-to-point synchronization: the test and wait_until families over symmetric variables
//! of this PE, which other PEs update with puts and AMOs. Waits back off (see core::wait).
//! Ivars in the GPU heap (CUDA backend) are read by one device-to-host copy of the whole set
//! per poll (`Ivars::refresh`), then compared on the host.

use crate::api::amo::Atom;
use crate::api::rma::check_align;
use crate::core::{bytes, state, wait, State};
use crate::ffi::fatal;
use crate::transport::cuda::Gpu;
use std::cell::RefCell;
use std::ffi::c_int;

/// The comparison value(s): one for all ivars, or one per ivar (`_vector` forms).
pub enum Values<T> {
    One(T),
    Many(*const T),
}

/// Validates a comparison operator (`ISHMEM_CMP_EQ` .. `ISHMEM_CMP_LE`).
pub fn check_cmp(func: &str, cmp: c_int) {
    if !(1..=6).contains(&cmp) {
        fatal(func, &format!("invalid comparison operator {cmp} (use ISHMEM_CMP_EQ .. ISHMEM_CMP_LE)"));
    }
}

/// `v cmp target`.
#[inline(always)]
pub fn compare<T: PartialOrd>(v: T, cmp: c_int, target: T) -> bool {
    match cmp {
        1 => v == target,
        2 => v != target,
        3 => v > target,
        4 => v >= target,
        5 => v < target,
        _ => v <= target,
    }
}

/// The checked view of a set of ivars.
struct Ivars<'a, T> {
    p: *mut T,
    n: usize,
    status: *const c_int,
    vals: Values<T>,
    cmp: c_int,
    func: &'a str,
    /// The GPU when the ivars lie in its heap; `snap` then holds their values of the last poll.
    gpu: Option<&'a Gpu>,
    snap: RefCell<Vec<T>>,
}

impl<'a, T: Atom> Ivars<'a, T> {
    fn new(func: &'a str, st: &'a State, p: *mut T, n: usize, status: *const c_int, cmp: c_int, vals: Values<T>) -> Self {
        check_cmp(func, cmp);
        if n > 0 {
            let len = bytes(func, n, size_of::<T>());
            st.remote(func, "ivars", p as usize, len, st.me);
            check_align(func, "ivars", p as usize, size_of::<T>());
            if let Values::Many(v) = vals {
                if v.is_null() {
                    fatal(func, "cmp_values is NULL");
                }
            }
        }
        let gpu = if n > 0 { st.gpu_heap(p as usize) } else { None };
        Ivars { p, n, status, vals, cmp, func, gpu, snap: RefCell::new(Vec::new()) }
    }

    /// Reads the ivars of the GPU heap (one copy for all of them); nothing on host memory,
    /// where `holds` loads each ivar atomically.
    fn refresh(&self) {
        if let Some(g) = self.gpu {
            let mut s = self.snap.borrow_mut();
            s.clear();
            s.reserve(self.n);
            g.copy(self.func, s.as_mut_ptr() as usize, self.p as usize, self.n * size_of::<T>());
            // SAFETY: the copy wrote n elements into the reserved capacity.
            unsafe { s.set_len(self.n) };
        }
    }

    #[inline]
    fn active(&self, i: usize) -> bool {
        // SAFETY: status, when non-NULL, has n entries (API contract).
        self.status.is_null() || unsafe { *self.status.add(i) } == 0
    }

    /// Whether ivar `i` satisfies the comparison (after `refresh` on the GPU heap).
    #[inline]
    fn holds(&self, i: usize) -> bool {
        // SAFETY: ivars has n symmetric, aligned entries (checked); values likewise by contract.
        let (v, t) = unsafe {
            let v = if self.gpu.is_some() { self.snap.borrow()[i] } else { T::load(self.p.add(i)) };
            (v, match self.vals { Values::One(t) => t, Values::Many(v) => *v.add(i) })
        };
        compare(v, self.cmp, t)
    }

    fn any_active(&self) -> bool {
        (0..self.n).any(|i| self.active(i))
    }

    fn all(&self) -> bool {
        self.refresh();
        (0..self.n).all(|i| !self.active(i) || self.holds(i))
    }

    /// A satisfying index, scanning from after the one returned last time (`api::fair`).
    fn first(&self) -> Option<usize> {
        self.refresh();
        crate::api::fair::scan(self.p as usize, self.n, |i| self.active(i) && self.holds(i))
    }

    fn some(&self, out: *mut usize) -> usize {
        self.refresh();
        let mut k = 0;
        for i in 0..self.n {
            if self.active(i) && self.holds(i) {
                // SAFETY: indices has room for n entries (API contract, NULL checked).
                unsafe { *out.add(k) = i };
                k += 1;
            }
        }
        k
    }
}

fn idle(st: &State, done: impl FnMut() -> bool) {
    #[cfg(ishmem_mutation = "wait_early")]
    return;
    #[allow(unreachable_code)]
    wait::until(st.cfg.wait_spin, st.cfg.wait_sleep_max_us, done);
}

fn check_indices(func: &str, indices: *mut usize, n: usize) {
    if n > 0 && indices.is_null() {
        fatal(func, "indices is NULL");
    }
}

/// # Safety
/// `ivar` is checked; see the spec for the rest.
pub unsafe fn test<T: Atom>(func: &str, ivar: *mut T, cmp: c_int, value: T) -> c_int {
    let st = state(func);
    Ivars::new(func, st, ivar, 1, std::ptr::null(), cmp, Values::One(value)).all() as c_int
}

/// # Safety
/// Pointers per the API; ivars are checked.
pub unsafe fn test_all<T: Atom>(func: &str, p: *mut T, n: usize, status: *const c_int, cmp: c_int, v: Values<T>) -> c_int {
    let st = state(func);
    Ivars::new(func, st, p, n, status, cmp, v).all() as c_int
}

/// # Safety
/// Pointers per the API; ivars are checked.
pub unsafe fn test_any<T: Atom>(func: &str, p: *mut T, n: usize, status: *const c_int, cmp: c_int, v: Values<T>) -> usize {
    let st = state(func);
    Ivars::new(func, st, p, n, status, cmp, v).first().unwrap_or(usize::MAX)
}

/// # Safety
/// Pointers per the API; ivars are checked.
#[allow(clippy::too_many_arguments)]
pub unsafe fn test_some<T: Atom>(
    func: &str, p: *mut T, n: usize, indices: *mut usize, status: *const c_int, cmp: c_int, v: Values<T>,
) -> usize {
    let st = state(func);
    check_indices(func, indices, n);
    Ivars::new(func, st, p, n, status, cmp, v).some(indices)
}

/// # Safety
/// Pointers per the API; ivars are checked.
pub unsafe fn wait_until<T: Atom>(func: &str, ivar: *mut T, cmp: c_int, value: T) {
    let st = state(func);
    let iv = Ivars::new(func, st, ivar, 1, std::ptr::null(), cmp, Values::One(value));
    idle(st, || iv.all());
}

/// # Safety
/// Pointers per the API; ivars are checked.
pub unsafe fn wait_until_all<T: Atom>(func: &str, p: *mut T, n: usize, status: *const c_int, cmp: c_int, v: Values<T>) {
    let st = state(func);
    let iv = Ivars::new(func, st, p, n, status, cmp, v);
    idle(st, || iv.all());
}

/// # Safety
/// Pointers per the API; ivars are checked.
pub unsafe fn wait_until_any<T: Atom>(func: &str, p: *mut T, n: usize, status: *const c_int, cmp: c_int, v: Values<T>) -> usize {
    let st = state(func);
    let iv = Ivars::new(func, st, p, n, status, cmp, v);
    if !iv.any_active() {
        return usize::MAX;
    }
    let mut found = None;
    idle(st, || {
        found = iv.first();
        found.is_some()
    });
    found.unwrap_or(usize::MAX)
}

/// # Safety
/// Pointers per the API; ivars are checked.
#[allow(clippy::too_many_arguments)]
pub unsafe fn wait_until_some<T: Atom>(
    func: &str, p: *mut T, n: usize, indices: *mut usize, status: *const c_int, cmp: c_int, v: Values<T>,
) -> usize {
    let st = state(func);
    check_indices(func, indices, n);
    let iv = Ivars::new(func, st, p, n, status, cmp, v);
    if !iv.any_active() {
        return 0;
    }
    let mut k = 0;
    idle(st, || {
        k = iv.some(indices);
        k > 0
    });
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons() {
        assert!(compare(3, 1, 3) && !compare(3, 1, 4));
        assert!(compare(3, 2, 4) && !compare(3, 2, 3));
        assert!(compare(5, 3, 4) && !compare(4, 3, 4));
        assert!(compare(4, 4, 4) && !compare(3, 4, 4));
        assert!(compare(3, 5, 4) && !compare(4, 5, 4));
        assert!(compare(4, 6, 4) && !compare(5, 6, 4));
        assert!(compare(-1i64, 5, 0));
        assert!(compare(u64::MAX, 3, 0));
    }
}
