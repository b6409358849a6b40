//! Point-to-point synchronization: the test and wait_until families over symmetric variables
//! of this PE, which other PEs update with puts and AMOs. Waits back off (see `wait`).
//! Ivars in the GPU heap (CUDA backend) are read by one device-to-host copy of the whole set
//! per poll (`Ivars::refresh`), then compared on the host.

use crate::api::amo::Atom;
use crate::api::rma::check_align;
use crate::core::{bytes, state, State};
use crate::ffi::fatal;
pub use crate::wait::Values;
use crate::wait::{self, check_cmp, compare};
use std::cell::RefCell;
use std::ffi::c_int;

/// The checked view of a set of ivars.
struct Ivars<'a, T> {
    p: *mut T,
    n: usize,
    status: *const c_int,
    vals: Values<T>,
    cmp: c_int,
    func: &'a str,
    st: &'a State,
    /// Whether the ivars lie in the GPU heap; `snap` then holds their values of the last poll.
    gpu: bool,
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
        let gpu = n > 0 && st.gpu_heap(p as usize).is_some();
        Ivars { p, n, status, vals, cmp, func, st, gpu, snap: RefCell::new(Vec::new()) }
    }

    /// Reads the ivars of the GPU heap (one copy for all of them); nothing on host memory,
    /// where `holds` loads each ivar atomically.
    fn refresh(&self) {
        if self.gpu {
            let mut s = self.snap.borrow_mut();
            s.clear();
            s.reserve(self.n);
            // SAFETY: the ivars were checked (symmetric, in the GPU heap); the destination is
            // the reserved capacity of n elements. The copy wrote them all.
            unsafe {
                self.st.read_gpu_heap(self.func, s.as_mut_ptr() as usize, self.p as usize, self.n * size_of::<T>());
                s.set_len(self.n)
            };
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
            let v = if self.gpu { self.snap.borrow()[i] } else { T::load(self.p.add(i)) };
            (
                v,
                match self.vals {
                    Values::One(t) => t,
                    Values::Many(v) => *v.add(i),
                },
            )
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
    func: &str,
    p: *mut T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    v: Values<T>,
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
    func: &str,
    p: *mut T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    v: Values<T>,
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
