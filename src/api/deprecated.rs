//! The deprecated OpenSHMEM names that programs still call and that the Intel SHMEM API has no
//! form of (shmem.h only, listed `native`): `start_pes`, `shrealloc`, the wait-while-equal
//! waits (`shmem_wait`, `shmem_TYPENAME_wait`), the cache routines, and the active-set
//! collectives (`shmem_barrier`, `shmem_broadcast32/64`, `shmem_collect32/64`,
//! `shmem_fcollect32/64`, `shmem_alltoall(s)32/64`, `shmem_TYPENAME_OP_to_all`).
//!
//! Active sets. An active set is the PEs `PE_start + k * 2^logPE_stride`, `k < PE_size`; only
//! those PEs call, with the same arguments and the same symmetric `pSync` (SHMEM_SYNC_VALUE, 0,
//! in every element before the first call; the calls leave it so). ishmem's teams are made
//! collectively by the whole parent team, which the other PEs never join here, so these
//! collectives run on the library's RMA and AMO routines alone, with `pSync` as their only
//! shared state:
//! - the set's barrier: every PE but the set's first adds 1 to `pSync[0]` on the first and waits
//!   for `pSync[1]` to become nonzero; the first waits until `pSync[0]` counts the others, takes
//!   them off again, and sets `pSync[1]` on each of them (each clears its own before it
//!   returns). No PE can arrive for the next call before the first has taken the count off, so
//!   the same pSync serves back-to-back calls;
//! - the data collectives pull: a barrier (every source is ready and no destination is in use),
//!   each PE gets what it needs from the others' sources, and a second barrier (no source is
//!   read any more when a PE returns). `collect` publishes each PE's count in its own
//!   `pSync[2]`, which the others read before pulling;
//! - the reductions get every member's source and combine them in set order (the same result
//!   on every PE) in private memory, then store into `dest` after the second barrier, so
//!   `dest` may be `source`. `pWrk` is not needed and not touched.
//!
//! A set that is not one (size < 1, a negative start or stride, a member beyond the last PE,
//! this PE outside it), a NULL pSync or a negative count is an error naming the routine.
//! The cache routines have no effect: the specification keeps them for old machines and lets an
//! implementation make them no-ops; the library's own operations make data visible as the
//! memory model says.

use crate::api::{amo, memory, rma, setup, sync};
use crate::core::amo::Atom;
use crate::ffi::{fatal, guard};
use crate::op::{bit_combiner, combiner, BitOp, ComplexD, ComplexF, LongDouble, RedOp};
use std::ffi::{c_int, c_long, c_void};

const CMP_NE: c_int = 2;
const CMP_GE: c_int = 4;

/// `void start_pes(int npes)`: `shmem_init` (the argument is unused, as the specification says).
#[no_mangle]
pub extern "C" fn start_pes(npes: c_int) {
    let _ = npes;
    setup::ishmem_init();
}

/// `void *shrealloc(void *ptr, size_t size)`: `shmem_realloc`.
#[no_mangle]
pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    memory::shmem_realloc(ptr, size)
}

/// Waits while `*ivar == value` (the deprecated wait: `wait_until` with SHMEM_CMP_NE).
unsafe fn wait_ne<T: Atom>(func: &'static str, ivar: *mut T, value: T) {
    // SAFETY: ivar per the C API (checked by the wait).
    guard(func, || unsafe { sync::wait_until::<T>(func, ivar, CMP_NE, value) })
}

#[no_mangle]
pub unsafe extern "C" fn shmem_wait(ivar: *mut c_long, cmp_value: c_long) {
    // SAFETY: forwarded.
    unsafe { wait_ne::<i64>("shmem_wait", ivar, cmp_value) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_short_wait(ivar: *mut i16, cmp_value: i16) {
    // SAFETY: forwarded.
    unsafe { wait_ne::<i16>("shmem_short_wait", ivar, cmp_value) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_int_wait(ivar: *mut c_int, cmp_value: c_int) {
    // SAFETY: forwarded.
    unsafe { wait_ne::<i32>("shmem_int_wait", ivar, cmp_value) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_long_wait(ivar: *mut c_long, cmp_value: c_long) {
    // SAFETY: forwarded.
    unsafe { wait_ne::<i64>("shmem_long_wait", ivar, cmp_value) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_longlong_wait(ivar: *mut i64, cmp_value: i64) {
    // SAFETY: forwarded.
    unsafe { wait_ne::<i64>("shmem_longlong_wait", ivar, cmp_value) }
}

// The cache routines: no effect (see the module's notes).
#[no_mangle]
pub extern "C" fn shmem_clear_cache_inv() {}
#[no_mangle]
pub extern "C" fn shmem_set_cache_inv() {}
#[no_mangle]
pub extern "C" fn shmem_clear_cache_line_inv(dest: *mut c_void) {
    let _ = dest;
}
#[no_mangle]
pub extern "C" fn shmem_set_cache_line_inv(dest: *mut c_void) {
    let _ = dest;
}
#[no_mangle]
pub extern "C" fn shmem_udcflush() {}
#[no_mangle]
pub extern "C" fn shmem_udcflush_line(dest: *mut c_void) {
    let _ = dest;
}

/// One active set as this PE sees it.
struct Set {
    func: &'static str,
    start: c_int,
    stride: c_int,
    size: c_int,
    /// this PE's index in the set
    me: c_int,
    sync: *mut i64,
}

impl Set {
    /// Checks the set, this PE's membership and pSync.
    fn new(func: &'static str, start: c_int, log_stride: c_int, size: c_int, psync: *mut c_long) -> Set {
        let npes = setup::ishmem_n_pes();
        let me = setup::ishmem_my_pe();
        if size < 1 || start < 0 || !(0..31).contains(&log_stride) {
            fatal(func, &format!("PE_start {start}, logPE_stride {log_stride}, PE_size {size} is no active set"));
        }
        let stride = 1i64 << log_stride;
        let last = start as i64 + (size as i64 - 1) * stride;
        if last >= npes as i64 {
            fatal(
                func,
                &format!(
                    "the active set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}) reaches PE {last}; the job has {npes}"
                ),
            );
        }
        let off = me as i64 - start as i64;
        if off < 0 || off % stride != 0 || off / stride >= size as i64 {
            fatal(func, &format!("PE {me} is not in the active set (PE_start {start}, logPE_stride {log_stride}, PE_size {size})"));
        }
        if psync.is_null() {
            fatal(func, "pSync is NULL");
        }
        Set { func, start, stride: stride as c_int, size, me: (off / stride) as c_int, sync: psync }
    }

    fn pe(&self, k: c_int) -> c_int {
        self.start + k * self.stride
    }

    /// The set's barrier on pSync[0] (arrivals, on the set's first PE) and pSync[1] (release).
    /// Every step is a fetching AMO, complete when it returns (across nodes a non-fetching
    /// one may still be on its way), so each signal is delivered before the PE goes on.
    fn barrier(&self) {
        let f = self.func;
        let (count, release) = (self.sync, self.sync.wrapping_add(1));
        let others = (self.size - 1) as i64;
        // SAFETY: pSync is a symmetric long array of at least SHMEM_BARRIER_SYNC_SIZE
        // elements per the C API (the AMOs check it is symmetric).
        unsafe {
            if self.me == 0 {
                if others > 0 {
                    sync::wait_until::<i64>(f, count, CMP_GE, others);
                    amo::fetch_op::<i64>(f, count, amo::Op::Add, -others, self.pe(0));
                    for k in 1..self.size {
                        amo::swap::<i64>(f, release, 1, self.pe(k));
                    }
                }
            } else {
                amo::fetch_op::<i64>(f, count, amo::Op::Add, 1, self.pe(0));
                sync::wait_until::<i64>(f, release, CMP_NE, 0);
                amo::swap::<i64>(f, release, 0, self.pe(self.me));
            }
        }
    }
}

fn check_count(func: &str, what: &str, n: i64) -> usize {
    usize::try_from(n).unwrap_or_else(|_| fatal(func, &format!("{what} is {n}, negative")))
}

#[no_mangle]
pub extern "C" fn shmem_barrier(pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, psync: *mut c_long) {
    const F: &str = "shmem_barrier";
    guard(F, || {
        let s = Set::new(F, pe_start, log_pe_stride, pe_size, psync);
        crate::api::order::ishmem_quiet();
        s.barrier();
    })
}

/// The pull collectives on `elem`-byte elements.
#[derive(Clone, Copy)]
enum Pull {
    Broadcast { root: c_int },
    Collect,
    Fcollect,
    Alltoall { dst: isize, sst: isize },
}

/// # Safety
/// Buffers per the C API (each get checks its range and symmetry).
#[allow(clippy::too_many_arguments)]
unsafe fn pull(func: &'static str, kind: Pull, dest: *mut c_void, source: *const c_void, nelems: usize, elem: usize, s: Set) {
    let (d, src) = (dest as *mut u8, source as *const u8);
    let f = func;
    // SAFETY: dest and source are symmetric and large enough per the C API (all the gets and
    // AMOs below); rma::get checks range and symmetry and fails naming `func`.
    unsafe {
        match kind {
            Pull::Broadcast { root } => {
                if root < 0 || root >= s.size {
                    fatal(f, &format!("PE_root {root} is outside the active set of {} PEs", s.size));
                }
                s.barrier();
                if s.me != root {
                    rma::get(f, d, src, nelems, elem, s.pe(root));
                }
            }
            Pull::Collect => {
                let mine = s.sync.wrapping_add(2);
                // my count, for the others to read (pSync is symmetric: their copies hold theirs)
                amo::swap::<i64>(f, mine, nelems as i64, s.pe(s.me));
                s.barrier();
                let mut at = 0usize;
                for k in 0..s.size {
                    let n = amo::fetch::<i64>(f, mine, s.pe(k)) as usize;
                    rma::get(f, d.wrapping_add(at * elem), src, n, elem, s.pe(k));
                    at += n;
                }
            }
            Pull::Fcollect => {
                s.barrier();
                for k in 0..s.size {
                    rma::get(f, d.wrapping_add(k as usize * nelems * elem), src, nelems, elem, s.pe(k));
                }
            }
            Pull::Alltoall { dst, sst } => {
                if dst < 1 || sst < 1 {
                    fatal(f, &format!("the strides are {dst} and {sst}; both must be at least 1"));
                }
                s.barrier();
                let me = s.me as usize;
                for k in 0..s.size {
                    // PE k's block for me: element j at (me * nelems + j) * sst of its source,
                    // to (k * nelems + j) * dst of my dest
                    let from = src.wrapping_add(me * nelems * sst as usize * elem);
                    let to = d.wrapping_add(k as usize * nelems * dst as usize * elem);
                    rma::iget(f, to, from, dst, sst, nelems, elem, s.pe(k));
                }
            }
        }
        s.barrier();
        if let Pull::Collect = kind {
            amo::swap::<i64>(f, s.sync.wrapping_add(2), 0, s.pe(s.me));
        }
    }
}

macro_rules! pull_fn {
    ($name:ident, $elem:expr, $kind:expr, ($($arg:ident: $t:ty),*)) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(dest: *mut c_void, source: *const c_void, $($arg: $t,)* nelems: usize,
                                       pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, psync: *mut c_long) {
            const F: &str = stringify!($name);
            guard(F, || {
                let s = Set::new(F, pe_start, log_pe_stride, pe_size, psync);
                // SAFETY: forwarded C API contract.
                unsafe { pull(F, $kind, dest, source, nelems, $elem, s) }
            })
        }
    };
}
pull_fn!(shmem_collect32, 4, Pull::Collect, ());
pull_fn!(shmem_collect64, 8, Pull::Collect, ());
pull_fn!(shmem_fcollect32, 4, Pull::Fcollect, ());
pull_fn!(shmem_fcollect64, 8, Pull::Fcollect, ());
pull_fn!(shmem_alltoall32, 4, Pull::Alltoall { dst: 1, sst: 1 }, ());
pull_fn!(shmem_alltoall64, 8, Pull::Alltoall { dst: 1, sst: 1 }, ());
pull_fn!(shmem_alltoalls32, 4, Pull::Alltoall { dst, sst }, (dst: isize, sst: isize));
pull_fn!(shmem_alltoalls64, 8, Pull::Alltoall { dst, sst }, (dst: isize, sst: isize));

macro_rules! bcast_fn {
    ($name:ident, $elem:expr) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            nelems: usize,
            pe_root: c_int,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            psync: *mut c_long,
        ) {
            const F: &str = stringify!($name);
            guard(F, || {
                let s = Set::new(F, pe_start, log_pe_stride, pe_size, psync);
                // SAFETY: forwarded C API contract.
                unsafe { pull(F, Pull::Broadcast { root: pe_root }, dest, source, nelems, $elem, s) }
            })
        }
    };
}
bcast_fn!(shmem_broadcast32, 4);
bcast_fn!(shmem_broadcast64, 8);

/// An active-set reduction: every member's source combined in set order, stored after the
/// second barrier (dest may be source).
///
/// # Safety
/// Buffers per the C API.
unsafe fn to_all<T: Copy + Default>(func: &'static str, dest: *mut T, source: *const T, nreduce: c_int, s: Set, comb: fn(&mut [T], &[T])) {
    let n = check_count(func, "nreduce", nreduce as i64);
    let size = std::mem::size_of::<T>();
    let mut acc = vec![T::default(); n];
    let mut part = vec![T::default(); n];
    s.barrier();
    // SAFETY: the gets check range and symmetry of source; part and acc are n elements.
    unsafe {
        for k in 0..s.size {
            let buf = if k == 0 { &mut acc } else { &mut part };
            rma::get(func, buf.as_mut_ptr().cast(), source.cast(), n, size, s.pe(k));
            if k > 0 {
                comb(&mut acc, &part);
            }
        }
    }
    s.barrier();
    if n > 0 {
        // SAFETY: dest is n elements of this PE's symmetric memory per the C API (checked by
        // the local put).
        unsafe { rma::put(func, dest.cast(), acc.as_ptr().cast(), n, size, s.pe(s.me)) };
    }
}

macro_rules! to_all_fn {
    ($name:ident, $t:ty, $comb:expr) => {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            dest: *mut $t,
            source: *const $t,
            nreduce: c_int,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            pwrk: *mut $t,
            psync: *mut c_long,
        ) {
            const F: &str = stringify!($name);
            let _ = pwrk;
            guard(F, || {
                let s = Set::new(F, pe_start, log_pe_stride, pe_size, psync);
                // SAFETY: forwarded C API contract.
                unsafe { to_all::<$t>(F, dest, source, nreduce, s, $comb) }
            })
        }
    };
}
macro_rules! to_all_arith {
    ($t:ty, $sum:ident, $prod:ident) => {
        to_all_fn!($sum, $t, combiner::<$t>(RedOp::Sum));
        to_all_fn!($prod, $t, combiner::<$t>(RedOp::Prod));
    };
    ($t:ty, $sum:ident, $prod:ident, $min:ident, $max:ident) => {
        to_all_arith!($t, $sum, $prod);
        to_all_fn!($min, $t, combiner::<$t>(RedOp::Min));
        to_all_fn!($max, $t, combiner::<$t>(RedOp::Max));
    };
}
macro_rules! to_all_bits {
    ($t:ty, $and:ident, $or:ident, $xor:ident) => {
        to_all_fn!($and, $t, bit_combiner::<$t>(BitOp::And));
        to_all_fn!($or, $t, bit_combiner::<$t>(BitOp::Or));
        to_all_fn!($xor, $t, bit_combiner::<$t>(BitOp::Xor));
    };
}
to_all_arith!(i16, shmem_short_sum_to_all, shmem_short_prod_to_all, shmem_short_min_to_all, shmem_short_max_to_all);
to_all_arith!(i32, shmem_int_sum_to_all, shmem_int_prod_to_all, shmem_int_min_to_all, shmem_int_max_to_all);
to_all_arith!(i64, shmem_long_sum_to_all, shmem_long_prod_to_all, shmem_long_min_to_all, shmem_long_max_to_all);
to_all_arith!(i64, shmem_longlong_sum_to_all, shmem_longlong_prod_to_all, shmem_longlong_min_to_all, shmem_longlong_max_to_all);
to_all_arith!(f32, shmem_float_sum_to_all, shmem_float_prod_to_all, shmem_float_min_to_all, shmem_float_max_to_all);
to_all_arith!(f64, shmem_double_sum_to_all, shmem_double_prod_to_all, shmem_double_min_to_all, shmem_double_max_to_all);
to_all_arith!(
    LongDouble,
    shmem_longdouble_sum_to_all,
    shmem_longdouble_prod_to_all,
    shmem_longdouble_min_to_all,
    shmem_longdouble_max_to_all
);
to_all_arith!(ComplexD, shmem_complexd_sum_to_all, shmem_complexd_prod_to_all);
to_all_arith!(ComplexF, shmem_complexf_sum_to_all, shmem_complexf_prod_to_all);
to_all_bits!(i16, shmem_short_and_to_all, shmem_short_or_to_all, shmem_short_xor_to_all);
to_all_bits!(i32, shmem_int_and_to_all, shmem_int_or_to_all, shmem_int_xor_to_all);
to_all_bits!(i64, shmem_long_and_to_all, shmem_long_or_to_all, shmem_long_xor_to_all);
to_all_bits!(i64, shmem_longlong_and_to_all, shmem_longlong_or_to_all, shmem_longlong_xor_to_all);
