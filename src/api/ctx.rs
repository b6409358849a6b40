//! OpenSHMEM contexts (shmem_ctx_*: Intel SHMEM has none, so only the shmem_ names exist):
//! create and destroy, team contexts, get_team, quiet, fence, pe_quiet, signal_add/set; the typed,
//! SIZE and mem forms of the rma, amo and signal families are generated
//! (`generated_ctx.rs`) and run their family's body through [`run`]. The contexts themselves
//! are core::ctx's.
//!
//! Errors: SHMEM_CTX_INVALID given to quiet, fence or destroy does nothing (as the
//! specification says); given to an operation, and any handle that is not a live context
//! (destroyed, made up), is a fatal PE-tagged error naming the routine, and so are a
//! SHMEM_CTX_PRIVATE context used by another thread than its creator, a PE outside a team
//! context's team, unknown option bits and NULL outputs. shmem_team_create_ctx on
//! SHMEM_TEAM_INVALID returns nonzero with SHMEM_CTX_INVALID. On the CUDA backend across
//! nodes (the GPU heap staged through the proxy mailbox, which has one quiet for all
//! operations) a context whose quiet waits for its own operations alone cannot be offered:
//! create returns nonzero with SHMEM_CTX_INVALID and a PE-tagged warning saying so.

use crate::core::ctx::{self as core_ctx, Use};
use crate::core::team::{self, TeamDesc};
use crate::core::{state, State};
use crate::ffi::{fatal, guard};
use std::ffi::{c_int, c_long, c_void};

/// `shmem_ctx_t`.
pub type Ctx = *mut c_void;

/// The object SHMEM_CTX_DEFAULT points to (never dereferenced: only its address counts).
static DEFAULT_OBJ: u64 = 0;

/// `SHMEM_CTX_DEFAULT` as shmem.h declares it: `extern shmem_ctx_t const`.
#[repr(transparent)]
pub struct Handle(*const c_void);
// SAFETY: a constant address, never written through.
unsafe impl Sync for Handle {}

#[no_mangle]
pub static SHMEM_CTX_DEFAULT: Handle = Handle(&DEFAULT_OBJ as *const u64 as *const c_void);

#[inline(always)]
fn is_default(ctx: Ctx) -> bool {
    std::ptr::eq(ctx as *const c_void, SHMEM_CTX_DEFAULT.0)
}

/// The live context behind `ctx` (not the default one), or a fatal error naming `func`.
fn resolve(func: &str, ctx: Ctx) -> &'static core_ctx::Ctx {
    if ctx.is_null() {
        fatal(func, "ctx is SHMEM_CTX_INVALID");
    }
    match core_ctx::lookup(ctx as usize) {
        Some(c) => c,
        None => {
            fatal(func, &format!("ctx {ctx:p} is not a live context (destroyed, or not made by shmem_ctx_create or shmem_team_create_ctx)"))
        }
    }
}

fn check_owner(func: &str, u: &Use) {
    if let Some(o) = u.owner {
        if o != std::thread::current().id() {
            fatal(func, "a SHMEM_CTX_PRIVATE context used by a thread other than the one that created it");
        }
    }
}

/// Runs one operation of a context form: `f` gets the world PE of `pe` (a team context takes
/// PE numbers of its team) and runs with its network writes counted as the context's.
#[inline]
pub fn run<R>(func: &str, ctx: Ctx, pe: c_int, f: impl FnOnce(c_int) -> R) -> R {
    if is_default(ctx) {
        return f(pe);
    }
    let c = resolve(func, ctx);
    let u = c.get();
    check_owner(func, &u);
    let wpe = if u.team == team::WORLD {
        pe
    } else if pe < 0 || pe >= u.desc.size {
        fatal(func, &format!("PE {pe} is not in the context's team (team {}, {} PEs)", u.team, u.desc.size))
    } else {
        u.desc.world(pe as usize) as c_int
    };
    c.run(|| f(wpe))
}

/// Creates a context on `team` for create and team_create_ctx.
unsafe fn create(func: &str, st: &State, team: i32, desc: TeamDesc, options: c_long, ctx: *mut Ctx) -> c_int {
    if ctx.is_null() {
        fatal(func, "ctx is NULL");
    }
    if options as i64 & !core_ctx::OPTIONS != 0 {
        fatal(
            func,
            &format!(
                "options {options:#x} has bits other than SHMEM_CTX_SERIALIZED (0x1), SHMEM_CTX_PRIVATE (0x2) and SHMEM_CTX_NOSTORE (0x4)"
            ),
        );
    }
    if st.net.as_ref().is_some_and(|n| n.stage.is_some()) {
        crate::ffi::warn(
            func,
            "no context made: on the CUDA backend across nodes the GPU heap is reached through the proxy's mailbox, \
             which has one quiet for every operation, so a context whose quiet waits for its own operations alone \
             cannot be offered (use SHMEM_CTX_DEFAULT)",
        );
        // SAFETY: ctx is a non-NULL output per the C API.
        unsafe { *ctx = std::ptr::null_mut() };
        return -1;
    }
    let c = core_ctx::create(options as i64, team, desc);
    // SAFETY: as above.
    unsafe { *ctx = c.handle() as Ctx };
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut Ctx) -> c_int {
    const F: &str = "shmem_ctx_create";
    guard(F, || {
        let st = state(F);
        let desc = st.team_desc(F, team::WORLD);
        // SAFETY: ctx is checked by create.
        unsafe { create(F, st, team::WORLD, desc, options, ctx) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(team: crate::api::team::Handle, options: c_long, ctx: *mut Ctx) -> c_int {
    const F: &str = "shmem_team_create_ctx";
    let team = crate::api::team::index(team);
    guard(F, || {
        let st = state(F);
        if team == team::INVALID {
            if ctx.is_null() {
                fatal(F, "ctx is NULL");
            }
            // SAFETY: ctx is a non-NULL output per the C API.
            unsafe { *ctx = std::ptr::null_mut() };
            return -1;
        }
        let desc = st.team_desc(F, team);
        // SAFETY: ctx is checked by create.
        unsafe { create(F, st, team, desc, options, ctx) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_destroy(ctx: Ctx) {
    const F: &str = "shmem_ctx_destroy";
    guard(F, || {
        if ctx.is_null() {
            return;
        }
        let st = state(F);
        if is_default(ctx) {
            fatal(F, "SHMEM_CTX_DEFAULT cannot be destroyed");
        }
        let c = resolve(F, ctx);
        check_owner(F, &c.get());
        c.destroy(st, F);
    })
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: Ctx, team: *mut crate::api::team::Handle) -> c_int {
    const F: &str = "shmem_ctx_get_team";
    guard(F, || {
        state(F);
        if team.is_null() {
            fatal(F, "team is NULL");
        }
        let (t, rc) = if ctx.is_null() {
            (team::INVALID, -1)
        } else if is_default(ctx) {
            (team::WORLD, 0)
        } else {
            (resolve(F, ctx).get().team, 0)
        };
        // SAFETY: team is a non-NULL output per the C API.
        unsafe { *team = crate::api::team::handle(t) };
        rc
    })
}

/// `shmem_ctx_quiet` and `shmem_ctx_fence`: the invalid context does nothing, the default one
/// runs `default` (the job-wide quiet or fence), any other completes its own operations (a
/// context's fence is its quiet: complete is ordered).
fn ctx_complete(func: &'static str, ctx: Ctx, default: fn(&str)) {
    guard(func, || {
        let st = state(func);
        if ctx.is_null() {
            return;
        }
        if is_default(ctx) {
            crate::core::device::retry_binders(st, func);
            return default(func);
        }
        let c = resolve(func, ctx);
        check_owner(func, &c.get());
        c.quiet(st, func);
    })
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_quiet(ctx: Ctx) {
    ctx_complete("shmem_ctx_quiet", ctx, |_| crate::core::quiet())
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_fence(ctx: Ctx) {
    ctx_complete("shmem_ctx_fence", ctx, crate::core::fence)
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_signal_add(ctx: Ctx, sig_addr: *mut u64, signal: u64, pe: c_int) {
    const F: &str = "shmem_ctx_signal_add";
    // SAFETY: update checks the address.
    guard(F, || run(F, ctx, pe, |pe| unsafe { crate::api::signal::update(F, sig_addr, signal, crate::api::signal::SIGNAL_ADD, pe) }))
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_signal_set(ctx: Ctx, sig_addr: *mut u64, signal: u64, pe: c_int) {
    const F: &str = "shmem_ctx_signal_set";
    // SAFETY: update checks the address.
    guard(F, || run(F, ctx, pe, |pe| unsafe { crate::api::signal::update(F, sig_addr, signal, crate::api::signal::SIGNAL_SET, pe) }))
}

/// OpenSHMEM 1.6's per-PE quiet of a context: completes the context's operations to the listed
/// PEs (numbers of the context's team) by completing all of them (completing more is allowed).
#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_pe_quiet(ctx: Ctx, target_pes: *const c_int, npes: usize) {
    const F: &str = "shmem_ctx_pe_quiet";
    guard(F, || {
        let st = state(F);
        if ctx.is_null() {
            return;
        }
        if npes > 0 && target_pes.is_null() {
            fatal(F, &format!("target_pes is NULL with npes {npes}"));
        }
        for k in 0..npes {
            // SAFETY: the caller passes npes readable ints (the API's contract).
            let pe = unsafe { *target_pes.add(k) };
            // checks the context and the PE (a team context's number), as an operation would
            let _ = run(F, ctx, pe, |wpe| st.check_pe(F, wpe));
        }
        if is_default(ctx) {
            crate::core::device::retry_binders(st, F);
            return crate::core::quiet();
        }
        let c = resolve(F, ctx);
        check_owner(F, &c.get());
        c.quiet(st, F);
    })
}
