//! The OpenSHMEM `long double` forms that pass or return the value itself: `shmem_longdouble_p`,
//! `shmem_longdouble_g` and their context forms. x86-64's C calling convention passes a `long
//! double` argument in memory on the stack and returns one in the x87 register st(0), neither of
//! which a Rust function can do; each name is a few instructions of assembly that hand the
//! value's address (p) or an output slot (g) to a Rust function running the family's body. The
//! other long double names (put, get, collectives, reductions, ...) pass pointers only and are
//! generated shims (generated_ctx.rs). x86-64 only (the only target whose long double this
//! library implements: op::LongDouble).

use crate::api::{ctx, rma};
use crate::ffi::guard;
use crate::op::LongDouble;
use std::ffi::c_int;

unsafe extern "C" fn p(dest: *mut LongDouble, value: *const LongDouble, pe: c_int) {
    const F: &str = "shmem_longdouble_p";
    // SAFETY: value is the caller's argument slot (the thunk passes its address); dest per the C API.
    guard(F, || unsafe { rma::p::<LongDouble>(F, dest, *value, pe) })
}

unsafe extern "C" fn g(out: *mut LongDouble, source: *const LongDouble, pe: c_int) {
    const F: &str = "shmem_longdouble_g";
    // SAFETY: out is the thunk's own 16-byte slot; source per the C API.
    unsafe { *out = guard(F, || rma::g::<LongDouble>(F, source, pe)) }
}

unsafe extern "C" fn ctx_p(c: ctx::Ctx, dest: *mut LongDouble, value: *const LongDouble, pe: c_int) {
    const F: &str = "shmem_ctx_longdouble_p";
    // SAFETY: as p.
    guard(F, || unsafe { ctx::run(F, c, pe, |pe| rma::p::<LongDouble>(F, dest, *value, pe)) })
}

unsafe extern "C" fn ctx_g(out: *mut LongDouble, c: ctx::Ctx, source: *const LongDouble, pe: c_int) {
    const F: &str = "shmem_ctx_longdouble_g";
    // SAFETY: as g.
    unsafe { *out = guard(F, || ctx::run(F, c, pe, |pe| rma::g::<LongDouble>(F, source, pe))) }
}

// At entry the return address is at [rsp] and a stack-passed argument at [rsp + 8]; rsp + 8 is
// 16-byte aligned. p: (dest rdi, value [rsp+8], pe esi) -> p(dest, &value, pe), a tail call.
// ctx_p: (ctx rdi, dest rsi, value [rsp+8], pe edx) -> ctx_p(ctx, dest, &value, pe).
// g: (source rdi, pe esi) -> g(&slot, source, pe), then st(0) = slot; 24 bytes of frame keep the
// call 16-byte aligned. ctx_g: (ctx rdi, source rsi, pe edx) -> ctx_g(&slot, ctx, source, pe).
std::arch::global_asm!(
    ".text",
    ".globl shmem_longdouble_p",
    ".type shmem_longdouble_p, @function",
    "shmem_longdouble_p:",
    "    mov edx, esi",
    "    lea rsi, [rsp + 8]",
    "    jmp {p}",
    ".size shmem_longdouble_p, . - shmem_longdouble_p",
    ".globl shmem_ctx_longdouble_p",
    ".type shmem_ctx_longdouble_p, @function",
    "shmem_ctx_longdouble_p:",
    "    mov ecx, edx",
    "    lea rdx, [rsp + 8]",
    "    jmp {ctx_p}",
    ".size shmem_ctx_longdouble_p, . - shmem_ctx_longdouble_p",
    ".globl shmem_longdouble_g",
    ".type shmem_longdouble_g, @function",
    "shmem_longdouble_g:",
    "    sub rsp, 24",
    "    mov edx, esi",
    "    mov rsi, rdi",
    "    mov rdi, rsp",
    "    call {g}",
    "    fld tbyte ptr [rsp]",
    "    add rsp, 24",
    "    ret",
    ".size shmem_longdouble_g, . - shmem_longdouble_g",
    ".globl shmem_ctx_longdouble_g",
    ".type shmem_ctx_longdouble_g, @function",
    "shmem_ctx_longdouble_g:",
    "    sub rsp, 24",
    "    mov ecx, edx",
    "    mov rdx, rsi",
    "    mov rsi, rdi",
    "    mov rdi, rsp",
    "    call {ctx_g}",
    "    fld tbyte ptr [rsp]",
    "    add rsp, 24",
    "    ret",
    ".size shmem_ctx_longdouble_g, . - shmem_ctx_longdouble_g",
    p = sym p,
    g = sym g,
    ctx_p = sym ctx_p,
    ctx_g = sym ctx_g,
);
