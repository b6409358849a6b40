//! The operation table of the generated API: every family of typed / SIZE / mem names of the
//! sections rma, amo, signal, p2p_sync and collectives, with its C signature and the core call
//! behind it. A collective's first parameter is its team: the exported symbol takes it, and the
//! headers add the team-less spelling (world team) for C (argument counting) and C++.
//! Hand-written names (setup, memory, ordering, signal helpers) are listed in `FIXED`.

/// Which families of names an operation has.
pub struct Op {
    pub section: &'static str,
    /// `ishmem.h` or `ishmemx.h`.
    pub header: &'static str,
    /// The type family (`table::RMA`, ...) of the typed names, or 0 for none.
    pub class: u32,
    /// Name patterns: `{T}` is the TYPENAME, `{S}` the SIZE in bits.
    pub typed: Option<&'static str>,
    pub sized: Option<&'static str>,
    pub mem: Option<&'static str>,
    /// Generic name (C11 `_Generic` / C++ overloads), dispatched on the first argument.
    pub generic: Option<&'static str>,
    /// C return type: `void`, `T`, `int`, `size_t`.
    pub ret: &'static str,
    /// Parameters as (C type with `T`, name).
    pub params: &'static [(&'static str, &'static str)],
    /// The Rust body: `{F}` the function name literal, `{R}` the Rust type, `{E}` the element
    /// size in bytes.
    pub body: &'static str,
    /// The CUDA device body (ishmem/cuda_impl.cuh): `F` is the name literal, `{T}` the C type,
    /// `{E}` the element size.
    pub dev: &'static str,
}

const PUT: &[(&str, &str)] = &[("T *", "dest"), ("const T *", "source"), ("size_t", "nelems"), ("int", "pe")];
const STRIDED: &[(&str, &str)] =
    &[("T *", "dest"), ("const T *", "source"), ("ptrdiff_t", "dst"), ("ptrdiff_t", "sst"), ("size_t", "nelems"), ("int", "pe")];
const BLOCKED: &[(&str, &str)] = &[
    ("T *", "dest"),
    ("const T *", "source"),
    ("ptrdiff_t", "dst"),
    ("ptrdiff_t", "sst"),
    ("size_t", "bsize"),
    ("size_t", "nblocks"),
    ("int", "pe"),
];
const SIGNAL: &[(&str, &str)] = &[
    ("T *", "dest"),
    ("const T *", "source"),
    ("size_t", "nelems"),
    ("uint64_t *", "sig_addr"),
    ("uint64_t", "signal"),
    ("int", "sig_op"),
    ("int", "pe"),
];
const DEST_PE: &[(&str, &str)] = &[("T *", "dest"), ("int", "pe")];
const DEST_VAL_PE: &[(&str, &str)] = &[("T *", "dest"), ("T", "value"), ("int", "pe")];
const FETCH_DEST_PE: &[(&str, &str)] = &[("T *", "fetch"), ("T *", "dest"), ("int", "pe")];
const FETCH_DEST_VAL_PE: &[(&str, &str)] = &[("T *", "fetch"), ("T *", "dest"), ("T", "value"), ("int", "pe")];
const CSWAP: &[(&str, &str)] = &[("T *", "dest"), ("T", "cond"), ("T", "value"), ("int", "pe")];
const CSWAP_NBI: &[(&str, &str)] = &[("T *", "fetch"), ("T *", "dest"), ("T", "cond"), ("T", "value"), ("int", "pe")];
const TEST1: &[(&str, &str)] = &[("T *", "ivar"), ("int", "cmp"), ("T", "cmp_value")];
const TEST_N: &[(&str, &str)] = &[("T *", "ivars"), ("size_t", "nelems"), ("const int *", "status"), ("int", "cmp"), ("T", "cmp_value")];
const TEST_SOME: &[(&str, &str)] =
    &[("T *", "ivars"), ("size_t", "nelems"), ("size_t *", "indices"), ("const int *", "status"), ("int", "cmp"), ("T", "cmp_value")];
const TEST_V: &[(&str, &str)] =
    &[("T *", "ivars"), ("size_t", "nelems"), ("const int *", "status"), ("int", "cmp"), ("const T *", "cmp_values")];
const TEST_SOME_V: &[(&str, &str)] = &[
    ("T *", "ivars"),
    ("size_t", "nelems"),
    ("size_t *", "indices"),
    ("const int *", "status"),
    ("int", "cmp"),
    ("const T *", "cmp_values"),
];

const COLL_N: &[(&str, &str)] = &[("ishmem_team_t", "team"), ("T *", "dest"), ("const T *", "source"), ("size_t", "nelems")];
const COLL_BCAST: &[(&str, &str)] =
    &[("ishmem_team_t", "team"), ("T *", "dest"), ("const T *", "source"), ("size_t", "nelems"), ("int", "root")];
const COLL_RED: &[(&str, &str)] = &[("ishmem_team_t", "team"), ("T *", "dest"), ("const T *", "source"), ("size_t", "nreduce")];

use crate::table::{AMO_BIT, AMO_BIT_NBI, AMO_EXT, AMO_EXT_NBI, AMO_STD, AMO_STD_NBI, COLL, P2P, REDUCE_BIT, RMA};

macro_rules! op {
    ($sec:expr, $hdr:expr, $class:expr, $typed:expr, $sized:expr, $mem:expr, $generic:expr, $ret:expr, $params:expr, $body:expr, $dev:expr) => {
        Op {
            section: $sec,
            header: $hdr,
            class: $class,
            typed: $typed,
            sized: $sized,
            mem: $mem,
            generic: $generic,
            ret: $ret,
            params: $params,
            body: $body,
            dev: $dev,
        }
    };
}

/// Every generated family, in header order.
pub const OPS: &[Op] = &[
    // ---- RMA ----
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_put"),
        Some("ishmem_put{S}"),
        Some("ishmem_putmem"),
        Some("ishmem_put"),
        "void",
        PUT,
        "rma::put({F}, dest.cast(), source.cast(), nelems, {E}, pe)",
        "ishmemi::put(dest, source, nelems * {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_iput"),
        Some("ishmem_iput{S}"),
        None,
        Some("ishmem_iput"),
        "void",
        STRIDED,
        "rma::iput({F}, dest.cast(), source.cast(), dst, sst, nelems, {E}, pe)",
        "ishmemi::strided(true, dest, source, dst, sst, 1, nelems, {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_p"),
        None,
        None,
        Some("ishmem_p"),
        "void",
        DEST_VAL_PE,
        "rma::p::<{R}>({F}, dest, value, pe)",
        "ishmemi::p<{T}>(dest, value, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_get"),
        Some("ishmem_get{S}"),
        Some("ishmem_getmem"),
        Some("ishmem_get"),
        "void",
        PUT,
        "rma::get({F}, dest.cast(), source.cast(), nelems, {E}, pe)",
        "ishmemi::get(dest, source, nelems * {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_iget"),
        Some("ishmem_iget{S}"),
        None,
        Some("ishmem_iget"),
        "void",
        STRIDED,
        "rma::iget({F}, dest.cast(), source.cast(), dst, sst, nelems, {E}, pe)",
        "ishmemi::strided(false, dest, source, dst, sst, 1, nelems, {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_g"),
        None,
        None,
        Some("ishmem_g"),
        "T",
        &[("const T *", "source"), ("int", "pe")],
        "rma::g::<{R}>({F}, source, pe)",
        "return ishmemi::g<{T}>(source, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_put_nbi"),
        Some("ishmem_put{S}_nbi"),
        Some("ishmem_putmem_nbi"),
        Some("ishmem_put_nbi"),
        "void",
        PUT,
        "rma::put_nbi({F}, dest.cast(), source.cast(), nelems, {E}, pe)",
        "ishmemi::put(dest, source, nelems * {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_get_nbi"),
        Some("ishmem_get{S}_nbi"),
        Some("ishmem_getmem_nbi"),
        Some("ishmem_get_nbi"),
        "void",
        PUT,
        "rma::get_nbi({F}, dest.cast(), source.cast(), nelems, {E}, pe)",
        "ishmemi::get(dest, source, nelems * {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmemx.h",
        RMA,
        Some("ishmemx_{T}_ibput"),
        Some("ishmemx_ibput{S}"),
        None,
        Some("ishmemx_ibput"),
        "void",
        BLOCKED,
        "rma::ibput({F}, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {E}, pe)",
        "ishmemi::strided(true, dest, source, dst, sst, bsize, nblocks, {E}, pe, F)"
    ),
    op!(
        "rma",
        "ishmemx.h",
        RMA,
        Some("ishmemx_{T}_ibget"),
        Some("ishmemx_ibget{S}"),
        None,
        Some("ishmemx_ibget"),
        "void",
        BLOCKED,
        "rma::ibget({F}, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {E}, pe)",
        "ishmemi::strided(false, dest, source, dst, sst, bsize, nblocks, {E}, pe, F)"
    ),
    // ---- AMO ----
    op!(
        "amo",
        "ishmem.h",
        AMO_STD,
        Some("ishmem_{T}_atomic_fetch"),
        None,
        None,
        Some("ishmem_atomic_fetch"),
        "T",
        DEST_PE,
        "amo::fetch::<{R}>({F}, dest, pe)",
        "return ishmemi::fetch<{T}>(dest, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_STD,
        Some("ishmem_{T}_atomic_set"),
        None,
        None,
        Some("ishmem_atomic_set"),
        "void",
        DEST_VAL_PE,
        "amo::set::<{R}>({F}, dest, value, pe)",
        "ishmemi::set<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_STD,
        Some("ishmem_{T}_atomic_swap"),
        None,
        None,
        Some("ishmem_atomic_swap"),
        "T",
        DEST_VAL_PE,
        "amo::swap::<{R}>({F}, dest, value, pe)",
        "return ishmemi::swap<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT,
        Some("ishmem_{T}_atomic_compare_swap"),
        None,
        None,
        Some("ishmem_atomic_compare_swap"),
        "T",
        CSWAP,
        "amo::compare_swap::<{R}>({F}, dest, cond, value, pe)",
        "return ishmemi::cswap<{T}>(dest, cond, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT,
        Some("ishmem_{T}_atomic_fetch_inc"),
        None,
        None,
        Some("ishmem_atomic_fetch_inc"),
        "T",
        DEST_PE,
        "amo::fetch_op::<{R}>({F}, dest, amo::Op::Add, 1, pe)",
        "return ishmemi::fadd<{T}>(dest, ({T})1, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT,
        Some("ishmem_{T}_atomic_inc"),
        None,
        None,
        Some("ishmem_atomic_inc"),
        "void",
        DEST_PE,
        "amo::op::<{R}>({F}, dest, amo::Op::Add, 1, pe)",
        "ishmemi::fadd<{T}>(dest, ({T})1, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT,
        Some("ishmem_{T}_atomic_fetch_add"),
        None,
        None,
        Some("ishmem_atomic_fetch_add"),
        "T",
        DEST_VAL_PE,
        "amo::fetch_op::<{R}>({F}, dest, amo::Op::Add, value, pe)",
        "return ishmemi::fadd<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT,
        Some("ishmem_{T}_atomic_add"),
        None,
        None,
        Some("ishmem_atomic_add"),
        "void",
        DEST_VAL_PE,
        "amo::op::<{R}>({F}, dest, amo::Op::Add, value, pe)",
        "ishmemi::fadd<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT,
        Some("ishmem_{T}_atomic_fetch_and"),
        None,
        None,
        Some("ishmem_atomic_fetch_and"),
        "T",
        DEST_VAL_PE,
        "amo::fetch_op::<{R}>({F}, dest, amo::Op::And, value, pe)",
        "return ishmemi::fand<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT,
        Some("ishmem_{T}_atomic_and"),
        None,
        None,
        Some("ishmem_atomic_and"),
        "void",
        DEST_VAL_PE,
        "amo::op::<{R}>({F}, dest, amo::Op::And, value, pe)",
        "ishmemi::fand<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT,
        Some("ishmem_{T}_atomic_fetch_or"),
        None,
        None,
        Some("ishmem_atomic_fetch_or"),
        "T",
        DEST_VAL_PE,
        "amo::fetch_op::<{R}>({F}, dest, amo::Op::Or, value, pe)",
        "return ishmemi::f_or<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT,
        Some("ishmem_{T}_atomic_or"),
        None,
        None,
        Some("ishmem_atomic_or"),
        "void",
        DEST_VAL_PE,
        "amo::op::<{R}>({F}, dest, amo::Op::Or, value, pe)",
        "ishmemi::f_or<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT,
        Some("ishmem_{T}_atomic_fetch_xor"),
        None,
        None,
        Some("ishmem_atomic_fetch_xor"),
        "T",
        DEST_VAL_PE,
        "amo::fetch_op::<{R}>({F}, dest, amo::Op::Xor, value, pe)",
        "return ishmemi::fxor<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT,
        Some("ishmem_{T}_atomic_xor"),
        None,
        None,
        Some("ishmem_atomic_xor"),
        "void",
        DEST_VAL_PE,
        "amo::op::<{R}>({F}, dest, amo::Op::Xor, value, pe)",
        "ishmemi::fxor<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_STD_NBI,
        Some("ishmem_{T}_atomic_fetch_nbi"),
        None,
        None,
        Some("ishmem_atomic_fetch_nbi"),
        "void",
        FETCH_DEST_PE,
        "amo::nbi({F}, fetch, || amo::fetch::<{R}>({F}, dest, pe))",
        "*fetch = ishmemi::fetch<{T}>(dest, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT_NBI,
        Some("ishmem_{T}_atomic_compare_swap_nbi"),
        None,
        None,
        Some("ishmem_atomic_compare_swap_nbi"),
        "void",
        CSWAP_NBI,
        "amo::nbi({F}, fetch, || amo::compare_swap::<{R}>({F}, dest, cond, value, pe))",
        "*fetch = ishmemi::cswap<{T}>(dest, cond, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_STD_NBI,
        Some("ishmem_{T}_atomic_swap_nbi"),
        None,
        None,
        Some("ishmem_atomic_swap_nbi"),
        "void",
        FETCH_DEST_VAL_PE,
        "amo::nbi({F}, fetch, || amo::swap::<{R}>({F}, dest, value, pe))",
        "*fetch = ishmemi::swap<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT_NBI,
        Some("ishmem_{T}_atomic_fetch_inc_nbi"),
        None,
        None,
        Some("ishmem_atomic_fetch_inc_nbi"),
        "void",
        FETCH_DEST_PE,
        "amo::nbi({F}, fetch, || amo::fetch_op::<{R}>({F}, dest, amo::Op::Add, 1, pe))",
        "*fetch = ishmemi::fadd<{T}>(dest, ({T})1, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_EXT_NBI,
        Some("ishmem_{T}_atomic_fetch_add_nbi"),
        None,
        None,
        Some("ishmem_atomic_fetch_add_nbi"),
        "void",
        FETCH_DEST_VAL_PE,
        "amo::nbi({F}, fetch, || amo::fetch_op::<{R}>({F}, dest, amo::Op::Add, value, pe))",
        "*fetch = ishmemi::fadd<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT_NBI,
        Some("ishmem_{T}_atomic_fetch_and_nbi"),
        None,
        None,
        Some("ishmem_atomic_fetch_and_nbi"),
        "void",
        FETCH_DEST_VAL_PE,
        "amo::nbi({F}, fetch, || amo::fetch_op::<{R}>({F}, dest, amo::Op::And, value, pe))",
        "*fetch = ishmemi::fand<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT_NBI,
        Some("ishmem_{T}_atomic_fetch_or_nbi"),
        None,
        None,
        Some("ishmem_atomic_fetch_or_nbi"),
        "void",
        FETCH_DEST_VAL_PE,
        "amo::nbi({F}, fetch, || amo::fetch_op::<{R}>({F}, dest, amo::Op::Or, value, pe))",
        "*fetch = ishmemi::f_or<{T}>(dest, value, pe, F)"
    ),
    op!(
        "amo",
        "ishmem.h",
        AMO_BIT_NBI,
        Some("ishmem_{T}_atomic_fetch_xor_nbi"),
        None,
        None,
        Some("ishmem_atomic_fetch_xor_nbi"),
        "void",
        FETCH_DEST_VAL_PE,
        "amo::nbi({F}, fetch, || amo::fetch_op::<{R}>({F}, dest, amo::Op::Xor, value, pe))",
        "*fetch = ishmemi::fxor<{T}>(dest, value, pe, F)"
    ),
    // ---- signal ----
    op!(
        "signal",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_put_signal"),
        Some("ishmem_put{S}_signal"),
        Some("ishmem_putmem_signal"),
        Some("ishmem_put_signal"),
        "void",
        SIGNAL,
        "signal::put_signal({F}, dest.cast(), source.cast(), nelems, {E}, sig_addr, signal, sig_op, pe)",
        "ishmemi::put_signal(dest, source, nelems * {E}, sig_addr, signal, sig_op, pe, F)"
    ),
    op!(
        "signal",
        "ishmem.h",
        RMA,
        Some("ishmem_{T}_put_signal_nbi"),
        Some("ishmem_put{S}_signal_nbi"),
        Some("ishmem_putmem_signal_nbi"),
        Some("ishmem_put_signal_nbi"),
        "void",
        SIGNAL,
        "signal::put_signal({F}, dest.cast(), source.cast(), nelems, {E}, sig_addr, signal, sig_op, pe)",
        "ishmemi::put_signal(dest, source, nelems * {E}, sig_addr, signal, sig_op, pe, F)"
    ),
    // ---- point-to-point synchronization ----
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test"),
        None,
        None,
        Some("ishmem_test"),
        "int",
        TEST1,
        "sync::test::<{R}>({F}, ivar, cmp, cmp_value)",
        "return ishmemi::test_all<{T}>(ivar, 1, nullptr, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test_all"),
        None,
        None,
        Some("ishmem_test_all"),
        "int",
        TEST_N,
        "sync::test_all::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::One(cmp_value))",
        "return ishmemi::test_all<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test_any"),
        None,
        None,
        Some("ishmem_test_any"),
        "size_t",
        TEST_N,
        "sync::test_any::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::One(cmp_value))",
        "return ishmemi::test_any<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test_some"),
        None,
        None,
        Some("ishmem_test_some"),
        "size_t",
        TEST_SOME,
        "sync::test_some::<{R}>({F}, ivars, nelems, indices, status, cmp, sync::Values::One(cmp_value))",
        "return ishmemi::test_some<{T}>(ivars, nelems, indices, status, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test_all_vector"),
        None,
        None,
        Some("ishmem_test_all_vector"),
        "int",
        TEST_V,
        "sync::test_all::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::Many(cmp_values))",
        "return ishmemi::test_all<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{cmp_values, 0}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test_any_vector"),
        None,
        None,
        Some("ishmem_test_any_vector"),
        "size_t",
        TEST_V,
        "sync::test_any::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::Many(cmp_values))",
        "return ishmemi::test_any<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{cmp_values, 0}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_test_some_vector"),
        None,
        None,
        Some("ishmem_test_some_vector"),
        "size_t",
        TEST_SOME_V,
        "sync::test_some::<{R}>({F}, ivars, nelems, indices, status, cmp, sync::Values::Many(cmp_values))",
        "return ishmemi::test_some<{T}>(ivars, nelems, indices, status, cmp, ishmemi::values<{T}>{cmp_values, 0}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until"),
        None,
        None,
        Some("ishmem_wait_until"),
        "void",
        TEST1,
        "sync::wait_until::<{R}>({F}, ivar, cmp, cmp_value)",
        "ishmemi::wait_all<{T}>(ivar, 1, nullptr, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until_all"),
        None,
        None,
        Some("ishmem_wait_until_all"),
        "void",
        TEST_N,
        "sync::wait_until_all::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::One(cmp_value))",
        "ishmemi::wait_all<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until_any"),
        None,
        None,
        Some("ishmem_wait_until_any"),
        "size_t",
        TEST_N,
        "sync::wait_until_any::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::One(cmp_value))",
        "return ishmemi::wait_any<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until_some"),
        None,
        None,
        Some("ishmem_wait_until_some"),
        "size_t",
        TEST_SOME,
        "sync::wait_until_some::<{R}>({F}, ivars, nelems, indices, status, cmp, sync::Values::One(cmp_value))",
        "return ishmemi::wait_some<{T}>(ivars, nelems, indices, status, cmp, ishmemi::values<{T}>{nullptr, cmp_value}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until_all_vector"),
        None,
        None,
        Some("ishmem_wait_until_all_vector"),
        "void",
        TEST_V,
        "sync::wait_until_all::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::Many(cmp_values))",
        "ishmemi::wait_all<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{cmp_values, 0}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until_any_vector"),
        None,
        None,
        Some("ishmem_wait_until_any_vector"),
        "size_t",
        TEST_V,
        "sync::wait_until_any::<{R}>({F}, ivars, nelems, status, cmp, sync::Values::Many(cmp_values))",
        "return ishmemi::wait_any<{T}>(ivars, nelems, status, cmp, ishmemi::values<{T}>{cmp_values, 0}, F)"
    ),
    op!(
        "p2p_sync",
        "ishmem.h",
        P2P,
        Some("ishmem_{T}_wait_until_some_vector"),
        None,
        None,
        Some("ishmem_wait_until_some_vector"),
        "size_t",
        TEST_SOME_V,
        "sync::wait_until_some::<{R}>({F}, ivars, nelems, indices, status, cmp, sync::Values::Many(cmp_values))",
        "return ishmemi::wait_some<{T}>(ivars, nelems, indices, status, cmp, ishmemi::values<{T}>{cmp_values, 0}, F)"
    ),
    // ---- collectives (host, device, work_group and on_queue forms) ----
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_alltoall"),
        None,
        Some("ishmem_alltoallmem"),
        Some("ishmem_alltoall"),
        "int",
        COLL_N,
        "coll::alltoall({F}, team, dest.cast(), source.cast(), nelems, {E})",
        "return ishmemi::alltoall(ishmemi::solo{}, team, dest, source, nelems * {E}, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_broadcast"),
        None,
        Some("ishmem_broadcastmem"),
        Some("ishmem_broadcast"),
        "int",
        COLL_BCAST,
        "coll::broadcast({F}, team, dest.cast(), source.cast(), nelems, {E}, root)",
        "return ishmemi::broadcast(ishmemi::solo{}, team, dest, source, nelems * {E}, root, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_collect"),
        None,
        Some("ishmem_collectmem"),
        Some("ishmem_collect"),
        "int",
        COLL_N,
        "coll::collect({F}, team, dest.cast(), source.cast(), nelems, {E})",
        "return ishmemi::collect(ishmemi::solo{}, team, dest, source, nelems * {E}, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_fcollect"),
        None,
        Some("ishmem_fcollectmem"),
        Some("ishmem_fcollect"),
        "int",
        COLL_N,
        "coll::fcollect({F}, team, dest.cast(), source.cast(), nelems, {E})",
        "return ishmemi::fcollect(ishmemi::solo{}, team, dest, source, nelems * {E}, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        REDUCE_BIT,
        Some("ishmem_{T}_and_reduce"),
        None,
        None,
        Some("ishmem_and_reduce"),
        "int",
        COLL_RED,
        "coll::reduce_bits::<{R}>({F}, team, dest, source, nreduce, coll::BitOp::And)",
        "return ishmemi::reduce<ishmemi::R_AND>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        REDUCE_BIT,
        Some("ishmem_{T}_or_reduce"),
        None,
        None,
        Some("ishmem_or_reduce"),
        "int",
        COLL_RED,
        "coll::reduce_bits::<{R}>({F}, team, dest, source, nreduce, coll::BitOp::Or)",
        "return ishmemi::reduce<ishmemi::R_OR>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        REDUCE_BIT,
        Some("ishmem_{T}_xor_reduce"),
        None,
        None,
        Some("ishmem_xor_reduce"),
        "int",
        COLL_RED,
        "coll::reduce_bits::<{R}>({F}, team, dest, source, nreduce, coll::BitOp::Xor)",
        "return ishmemi::reduce<ishmemi::R_XOR>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_max_reduce"),
        None,
        None,
        Some("ishmem_max_reduce"),
        "int",
        COLL_RED,
        "coll::reduce::<{R}>({F}, team, dest, source, nreduce, coll::RedOp::Max)",
        "return ishmemi::reduce<ishmemi::R_MAX>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_min_reduce"),
        None,
        None,
        Some("ishmem_min_reduce"),
        "int",
        COLL_RED,
        "coll::reduce::<{R}>({F}, team, dest, source, nreduce, coll::RedOp::Min)",
        "return ishmemi::reduce<ishmemi::R_MIN>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_sum_reduce"),
        None,
        None,
        Some("ishmem_sum_reduce"),
        "int",
        COLL_RED,
        "coll::reduce::<{R}>({F}, team, dest, source, nreduce, coll::RedOp::Sum)",
        "return ishmemi::reduce<ishmemi::R_SUM>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_prod_reduce"),
        None,
        None,
        Some("ishmem_prod_reduce"),
        "int",
        COLL_RED,
        "coll::reduce::<{R}>({F}, team, dest, source, nreduce, coll::RedOp::Prod)",
        "return ishmemi::reduce<ishmemi::R_PROD>(ishmemi::solo{}, team, dest, source, nreduce, 0, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_sum_inscan"),
        None,
        None,
        Some("ishmem_sum_inscan"),
        "int",
        COLL_RED,
        "coll::scan::<{R}>({F}, team, dest, source, nreduce, true)",
        "return ishmemi::reduce<ishmemi::R_SUM>(ishmemi::solo{}, team, dest, source, nreduce, 1, F)"
    ),
    op!(
        "collectives",
        "ishmem.h",
        COLL,
        Some("ishmem_{T}_sum_exscan"),
        None,
        None,
        Some("ishmem_sum_exscan"),
        "int",
        COLL_RED,
        "coll::scan::<{R}>({F}, team, dest, source, nreduce, false)",
        "return ishmemi::reduce<ishmemi::R_SUM>(ishmemi::solo{}, team, dest, source, nreduce, 2, F)"
    ),
];

/// Strided all-to-all: team, dest, source, dest stride, source stride, elements per PE.
const COLL_STRIDED: &[(&str, &str)] = &[
    ("ishmem_team_t", "team"),
    ("T *", "dest"),
    ("const T *", "source"),
    ("ptrdiff_t", "dst"),
    ("ptrdiff_t", "sst"),
    ("size_t", "nelems"),
];

/// Host-only families beyond the Intel SHMEM API (OpenSHMEM 1.5 names it has not): declared in
/// ishmem.h and exported like `OPS`, with no device, work-group or `_on_queue` forms and no
/// generic ishmem name (shmem.h has OpenSHMEM's generic); each name is an addition
/// (`abi/additions.txt`, the reason from `HOST_OPS_WHY`).
pub const HOST_OPS: &[Op] = &[op!(
    "collectives",
    "ishmem.h",
    COLL,
    Some("ishmem_{T}_alltoalls"),
    None,
    Some("ishmem_alltoallsmem"),
    Some("ishmem_alltoalls"),
    "int",
    COLL_STRIDED,
    "coll::alltoalls({F}, team, dest.cast(), source.cast(), dst, sst, nelems, {E})",
    ""
)];

/// Why each `HOST_OPS` family exists, by family (typed pattern or mem name).
pub const HOST_OPS_WHY: &[(&str, &str)] = &[
    ("ishmem_{T}_alltoalls", "OpenSHMEM 1.5: strided all-to-all of a team (host only)"),
    ("ishmem_alltoallsmem", "OpenSHMEM 1.5: strided all-to-all of bytes of a team (host only)"),
];

/// Hand-written exported functions: (header, section, name, C declaration). Their Rust
/// bodies live in `src/api/*.rs`; the symbol check ties both together.
pub const FIXED: &[(&str, &str, &str, &str)] = &[
    ("ishmem.h", "setup", "ishmem_init", "void ishmem_init(void)"),
    ("ishmem.h", "setup", "ishmem_finalize", "void ishmem_finalize(void)"),
    ("ishmem.h", "setup", "ishmem_init_thread", "int ishmem_init_thread(int requested, int *provided)"),
    ("ishmem.h", "setup", "ishmem_query_thread", "void ishmem_query_thread(int *provided)"),
    ("ishmem.h", "setup", "ishmem_my_pe", "int ishmem_my_pe(void)"),
    ("ishmem.h", "setup", "ishmem_n_pes", "int ishmem_n_pes(void)"),
    ("ishmem.h", "setup", "ishmem_ptr", "void *ishmem_ptr(const void *dest, int pe)"),
    ("ishmem.h", "setup", "ishmem_info_get_version", "void ishmem_info_get_version(int *major, int *minor)"),
    ("ishmem.h", "setup", "ishmem_info_get_name", "void ishmem_info_get_name(char *name)"),
    ("ishmem.h", "setup", "ishmem_global_exit", "void ishmem_global_exit(int status)"),
    ("ishmem.h", "setup", "ishmem_pe_accessible", "int ishmem_pe_accessible(int pe)"),
    ("ishmem.h", "setup", "ishmem_addr_accessible", "int ishmem_addr_accessible(const void *addr, int pe)"),
    ("ishmem.h", "teams", "ishmem_team_my_pe", "int ishmem_team_my_pe(ishmem_team_t team)"),
    ("ishmem.h", "teams", "ishmem_team_n_pes", "int ishmem_team_n_pes(ishmem_team_t team)"),
    ("ishmem.h", "teams", "ishmem_team_translate_pe", "int ishmem_team_translate_pe(ishmem_team_t src_team, int src_pe, ishmem_team_t dest_team)"),
    ("ishmem.h", "teams", "ishmem_team_get_config", "int ishmem_team_get_config(ishmem_team_t team, long config_mask, ishmem_team_config_t *config)"),
    ("ishmem.h", "teams", "ishmem_team_split_strided",
     "int ishmem_team_split_strided(ishmem_team_t parent_team, int start, int stride, int size, const ishmem_team_config_t *config, long config_mask, ishmem_team_t *new_team)"),
    ("ishmem.h", "teams", "ishmem_team_split_2d",
     "int ishmem_team_split_2d(ishmem_team_t parent_team, int xrange, const ishmem_team_config_t *xaxis_config, long xaxis_mask, ishmem_team_t *xaxis_team, const ishmem_team_config_t *yaxis_config, long yaxis_mask, ishmem_team_t *yaxis_team)"),
    ("ishmem.h", "teams", "ishmem_team_destroy", "void ishmem_team_destroy(ishmem_team_t team)"),
    ("ishmem.h", "memory", "ishmem_malloc", "void *ishmem_malloc(size_t size)"),
    ("ishmem.h", "memory", "ishmem_align", "void *ishmem_align(size_t alignment, size_t size)"),
    ("ishmem.h", "memory", "ishmem_calloc", "void *ishmem_calloc(size_t count, size_t size)"),
    ("ishmem.h", "memory", "ishmem_free", "void ishmem_free(void *ptr)"),
    ("ishmem.h", "signal", "ishmem_signal_fetch", "uint64_t ishmem_signal_fetch(const uint64_t *sig_addr)"),
    ("ishmem.h", "signal", "ishmem_signal_wait_until", "uint64_t ishmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)"),
    ("ishmem.h", "ordering", "ishmem_fence", "void ishmem_fence(void)"),
    ("ishmem.h", "ordering", "ishmem_quiet", "void ishmem_quiet(void)"),
    ("ishmem.h", "collectives", "ishmem_barrier_all", "void ishmem_barrier_all(void)"),
    ("ishmem.h", "collectives", "ishmem_sync_all", "void ishmem_sync_all(void)"),
    ("ishmem.h", "collectives", "ishmem_team_sync", "int ishmem_team_sync(ishmem_team_t team)"),
    ("ishmem.h", "collectives", "ishmem_sync", "int ishmem_sync(ishmem_team_t team)"),
    ("ishmem.h", "setup", "ishmem_team_ptr", "void *ishmem_team_ptr(ishmem_team_t team, const void *dest, int pe)"),
    ("ishmem.h", "ordering", "ishmem_pe_quiet", "void ishmem_pe_quiet(const int *target_pes, size_t npes)"),
    ("ishmem.h", "locks", "ishmem_set_lock", "void ishmem_set_lock(long *lock)"),
    ("ishmem.h", "locks", "ishmem_test_lock", "int ishmem_test_lock(long *lock)"),
    ("ishmem.h", "locks", "ishmem_clear_lock", "void ishmem_clear_lock(long *lock)"),
    // Variadic in C, as OpenSHMEM declares it; the library reads `level` only (x86-64 SysV: a
    // variadic call passes the named arguments as a plain call does).
    ("ishmem.h", "profiling", "ishmem_pcontrol", "void ishmem_pcontrol(int level, ...)"),
    ("ishmemx.h", "setup", "ishmemx_init_attr", "void ishmemx_init_attr(ishmemx_attr_t *attr)"),
    ("ishmemx.h", "setup", "ishmemx_query_initialized", "void ishmemx_query_initialized(int *initialized)"),
    ("ishmemx.h", "setup", "ishmemx_runtime_get_type", "ishmemx_runtime_type_t ishmemx_runtime_get_type(void)"),
    ("ishmemx.h", "setup", "ishmemx_get_uniqueid", "int ishmemx_get_uniqueid(ishmemx_uniqueid_t *uid)"),
    ("ishmemx.h", "gpu", "ishmemx_gpu_in_use", "int ishmemx_gpu_in_use(void)"),
    ("ishmemx.h", "gpu", "ishmemx_gpu_device", "int ishmemx_gpu_device(void)"),
    ("ishmemx.h", "gpu", "ishmemx_cumodule_init", "int ishmemx_cumodule_init(void *cumodule)"),
    ("ishmemx.h", "gpu", "ishmemx_cuda_register_binder", "void ishmemx_cuda_register_binder(int (*bind)(const void *state, size_t bytes))"),
    ("ishmemx.h", "on_queue", "ishmemx_signal_wait_until_on_queue", "void ishmemx_signal_wait_until_on_queue(uint64_t *sig_addr, int cmp, uint64_t cmp_value, ishmemx_queue_t q)"),
    ("ishmemx.h", "on_queue", "ishmemx_quiet_on_queue", "void ishmemx_quiet_on_queue(ishmemx_queue_t q)"),
    ("ishmemx.h", "on_queue", "ishmemx_barrier_all_on_queue", "void ishmemx_barrier_all_on_queue(ishmemx_queue_t q)"),
    ("ishmemx.h", "on_queue", "ishmemx_sync_all_on_queue", "void ishmemx_sync_all_on_queue(ishmemx_queue_t q)"),
    ("ishmemx.h", "on_queue", "ishmemx_team_sync_on_queue", "void ishmemx_team_sync_on_queue(ishmem_team_t team, int *ret, ishmemx_queue_t q)"),
    ("ishmemx.h", "signal", "ishmemx_signal_add", "void ishmemx_signal_add(uint64_t *sig_addr, uint64_t signal, int pe)"),
    ("ishmemx.h", "signal", "ishmemx_signal_set", "void ishmemx_signal_set(uint64_t *sig_addr, uint64_t signal, int pe)"),
    // The full form of ishmemx_print; the one- and two-argument forms are header overloads
    // (PRINT_CXX, PRINT_C). The name is parenthesized so that the C macro does not expand it.
    ("ishmemx.h", "extension", "ishmemx_print",
     "void (ishmemx_print)(const char *file, long int line, const char *func, const char *out, ishmemx_print_msg_type_t msg_type)"),
    ("ishmemx.h", "extension", "ishmemx_timestamp", "void ishmemx_timestamp(ishmemx_ts_handle_t dst)"),
    ("ishmemx.h", "extension", "ishmemx_timestamp_nbi", "void ishmemx_timestamp_nbi(ishmemx_ts_handle_t dst)"),
    ("ishmemx.h", "extension", "ishmemx_nop", "void ishmemx_nop(void)"),
    ("ishmemx.h", "extension", "ishmemx_nop_no_r", "void ishmemx_nop_no_r(void)"),
];

/// ishmemx_print's one- and two-argument forms in C++ (overloads of the exported full form;
/// under CUDA `__host__ __device__`, running ishmem/cuda_impl.cuh's printf-based print in
/// kernels). The short forms carry no file, line or function.
pub const PRINT_CXX: &str = "/* ishmemx_print: (out), (out, msg_type), (file, line, func, out, msg_type) */
#if defined(__CUDACC__)
__host__ __device__ __forceinline__ void ishmemi_hd_print(const char *file, long int line, const char *func, const char *out, ishmemx_print_msg_type_t msg_type) {
#ifdef __CUDA_ARCH__
    ishmemi::print(file, line, func, out, (int)msg_type);
#else
    (ishmemx_print)(file, line, func, out, msg_type);
#endif
}
__host__ __device__ __forceinline__ void ishmemi_hd_print(const char *out, ishmemx_print_msg_type_t msg_type) { ishmemi_hd_print(NULL, 0L, NULL, out, msg_type); }
__host__ __device__ __forceinline__ void ishmemi_hd_print(const char *out) { ishmemi_hd_print(NULL, 0L, NULL, out, ISHMEMX_PRINT_DEBUG); }
#define ishmemx_print ishmemi_hd_print
#else
inline void ishmemx_print(const char *out, ishmemx_print_msg_type_t msg_type) { (ishmemx_print)(NULL, 0L, NULL, out, msg_type); }
inline void ishmemx_print(const char *out) { (ishmemx_print)(NULL, 0L, NULL, out, ISHMEMX_PRINT_DEBUG); }
#endif
";

/// ishmemx_print's three forms in C: a macro counting its arguments.
pub const PRINT_C: &str = "/* ishmemx_print: (out), (out, msg_type), (file, line, func, out, msg_type) */
#define ISHMEMI_PRINT_1(out) (ishmemx_print)(NULL, 0L, NULL, out, ISHMEMX_PRINT_DEBUG)
#define ISHMEMI_PRINT_2(out, msg_type) (ishmemx_print)(NULL, 0L, NULL, out, msg_type)
#define ISHMEMI_PRINT_5(file, line, func, out, msg_type) (ishmemx_print)(file, line, func, out, msg_type)
#define ishmemx_print(...) ISHMEMI_CAT(ISHMEMI_PRINT_, ISHMEMI_NARG(__VA_ARGS__))(__VA_ARGS__)
";

/// Exported names beyond the Intel SHMEM API (the reference manifest lists none of them), with
/// why they exist: written to `abi/additions.txt` (installed with the docs; the ABI test
/// accepts exactly these beyond the manifest) and listed in the README.
pub const ADDITIONS: &[(&str, &str)] = &[
    ("ishmem_addr_accessible", "OpenSHMEM 1.5: whether addr is symmetric and reachable on PE pe"),
    ("ishmem_global_exit", "OpenSHMEM 1.5: ends every PE of the job with a status"),
    ("ishmem_pe_accessible", "OpenSHMEM 1.5: whether PE pe is reachable from this PE"),
    ("ishmem_sync", "OpenSHMEM 1.5: shmem_sync(team), the same as ishmem_team_sync"),
    ("ishmem_team_ptr", "OpenSHMEM 1.6: ishmem_ptr with a PE number of a team"),
    ("ishmem_pe_quiet", "OpenSHMEM 1.6: completes this PE's operations to the listed PEs"),
    ("ishmem_set_lock", "OpenSHMEM 1.5: takes a distributed lock (a symmetric long), waiting for it"),
    ("ishmem_test_lock", "OpenSHMEM 1.5: takes a distributed lock if it is free (0), else returns 1"),
    ("ishmem_clear_lock", "OpenSHMEM 1.5: completes this PE's operations (quiet) and releases a distributed lock"),
    ("ishmem_pcontrol", "OpenSHMEM 1.5: the profiling hook (level 0 off, 1 on, 2 flush; no built-in profiler)"),
    ("ishmemx_cuda_register_binder", "CUDA: called by the device header at static init (device-state binding)"),
    ("ishmemx_cumodule_init", "CUDA: binds the device state into a module loaded with cuModuleLoad*"),
    ("ishmemx_get_uniqueid", "unique-id init without a launcher (ishmemx_attr_t.use_uid)"),
    ("ishmemx_gpu_device", "CUDA: the device ordinal this PE uses"),
    ("ishmemx_gpu_in_use", "CUDA: whether this PE's heap is GPU memory"),
];

/// Device definitions of the hand-written host+device names: (header, name, C return type,
/// C parameters, argument list, device body). The body may use `F`, the name literal.
pub const DEVICE_FIXED: &[(&str, &str, &str, &str, &str, &str)] = &[
    ("ishmem.h", "ishmem_my_pe", "int", "void", "", "return ishmemi_dstate.my_pe;"),
    ("ishmem.h", "ishmem_n_pes", "int", "void", "", "return ishmemi_dstate.n_pes;"),
    ("ishmem.h", "ishmem_ptr", "void *", "const void *dest, int pe", "dest, pe",
     "uint64_t off = (uint64_t)(uintptr_t)dest - ishmemi_dstate.heap_base; \
      if (pe < 0 || pe >= ishmemi_dstate.n_pes || off >= ishmemi_dstate.heap_size || !ishmemi_dstate.peer_base[pe]) return NULL; \
      return (void *)(uintptr_t)(ishmemi_dstate.peer_base[pe] + off);"),
    ("ishmem.h", "ishmem_info_get_version", "void", "int *major, int *minor", "major, minor",
     "*major = ISHMEM_MAJOR_VERSION; *minor = ISHMEM_MINOR_VERSION;"),
    ("ishmem.h", "ishmem_info_get_name", "void", "char *name", "name",
     "const char *v = ISHMEM_VENDOR_STRING; int i = 0; for (; v[i] && i < ISHMEM_MAX_NAME_LEN - 1; i++) name[i] = v[i]; name[i] = 0;"),
    ("ishmem.h", "ishmem_signal_fetch", "uint64_t", "const uint64_t *sig_addr", "sig_addr",
     "return ishmemi::fetch<uint64_t>((uint64_t *)sig_addr, ishmemi_dstate.my_pe, F);"),
    ("ishmem.h", "ishmem_signal_wait_until", "uint64_t", "uint64_t *sig_addr, int cmp, uint64_t cmp_value", "sig_addr, cmp, cmp_value",
     "ishmemi::check_cmp(cmp, F); ishmemi::ptr(sig_addr, 8, ishmemi_dstate.my_pe, F); uint64_t v; \
      while (!ishmemi::cmp(v = ishmemi::load_acquire(sig_addr), cmp, cmp_value)) { } return v;"),
    ("ishmem.h", "ishmem_fence", "void", "void", "", "ishmemi::quiet();"),
    ("ishmem.h", "ishmem_quiet", "void", "void", "", "ishmemi::quiet();"),
    ("ishmem.h", "ishmem_barrier_all", "void", "void", "", "ishmemi::barrier_all(F);"),
    ("ishmem.h", "ishmem_sync_all", "void", "void", "", "ishmemi::barrier_all(F);"),
    ("ishmem.h", "ishmem_team_sync", "int", "ishmem_team_t team", "team", "return ishmemi::team_sync(ishmemi::solo{}, team, F);"),
    ("ishmem.h", "ishmem_sync", "int", "ishmem_team_t team", "team", "return ishmemi::team_sync(ishmemi::solo{}, team, F);"),
    ("ishmem.h", "ishmem_pe_accessible", "int", "int pe", "pe",
     "return (unsigned)pe < (unsigned)ishmemi_dstate.n_pes && (unsigned)pe < ISHMEMI_MAX_LOCAL_PES && ishmemi_dstate.peer_base[pe] != 0;"),
    ("ishmem.h", "ishmem_addr_accessible", "int", "const void *addr, int pe", "addr, pe",
     "uint64_t off = (uint64_t)(uintptr_t)addr - ishmemi_dstate.heap_base; \
      return (unsigned)pe < (unsigned)ishmemi_dstate.n_pes && (unsigned)pe < ISHMEMI_MAX_LOCAL_PES && ishmemi_dstate.peer_base[pe] != 0 && off < ishmemi_dstate.heap_size;"),
    ("ishmem.h", "ishmem_team_my_pe", "int", "ishmem_team_t team", "team", "return ishmemi::team_my_pe(team);"),
    ("ishmem.h", "ishmem_team_n_pes", "int", "ishmem_team_t team", "team", "return ishmemi::team_n_pes(team);"),
    ("ishmem.h", "ishmem_team_translate_pe", "int", "ishmem_team_t src_team, int src_pe, ishmem_team_t dest_team",
     "src_team, src_pe, dest_team", "return ishmemi::team_translate_pe(src_team, src_pe, dest_team);"),
    ("ishmemx.h", "ishmemx_signal_add", "void", "uint64_t *sig_addr, uint64_t signal, int pe", "sig_addr, signal, pe",
     "ishmemi::signal_update(sig_addr, signal, 1, pe, F);"),
    ("ishmemx.h", "ishmemx_signal_set", "void", "uint64_t *sig_addr, uint64_t signal, int pe", "sig_addr, signal, pe",
     "ishmemi::signal_update(sig_addr, signal, 0, pe, F);"),
    ("ishmemx.h", "ishmemx_timestamp", "void", "ishmemx_ts_handle_t dst", "dst", "ishmemi::timestamp(dst, true, F);"),
    ("ishmemx.h", "ishmemx_timestamp_nbi", "void", "ishmemx_ts_handle_t dst", "dst", "ishmemi::timestamp(dst, false, F);"),
    ("ishmemx.h", "ishmemx_nop", "void", "void", "", "ishmemi::nop(true);"),
    ("ishmemx.h", "ishmemx_nop_no_r", "void", "void", "", "ishmemi::nop(false);"),
];
