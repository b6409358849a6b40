//! Teams: my_pe, n_pes, translate_pe, get_config, split_strided, split_2d, destroy, and
//! team_sync (also as OpenSHMEM 1.5's `ishmem_sync`). The bookkeeping is core::team (descriptor table, split arithmetic); the
//! synchronization is core::coll.
//!
//! Errors: a handle that names no team of this PE (other than ISHMEM_TEAM_INVALID, which the
//! specification defines for the query routines and splits) is a fatal, PE-tagged error naming
//! the routine, and so are misuses the specification leaves undefined (NULL outputs, config
//! masks, calls that differ between the PEs). Failures the specification defines end in a
//! nonzero status and ISHMEM_TEAM_INVALID, and the job goes on: split arguments that describe
//! no team of the parent (size 0, start or stride leading outside it, xrange < 1; the call then
//! returns at once on every PE, which all pass the same arguments), and no team slot free on
//! every PE of the parent. Those are reported by the return value alone; with ISHMEM_DEBUG=1 a
//! PE-tagged WARNING says why (`ERROR:` means the job is ending).

use crate::core::coll::{self, Kind, Team};
use crate::core::team::{self, Progression, TeamDesc, INVALID};
use crate::core::{state, State};
use crate::ffi::{fatal, guard};
use std::ffi::{c_int, c_long};

/// Status returned by a split that created no team.
const FAILED: c_int = -1;

/// `ishmem_team_config_t`.
#[repr(C)]
pub struct TeamConfig {
    pub num_contexts: c_int,
}

/// The team `team` of this PE, or a fatal error naming `func`.
pub fn desc(st: &State, func: &str, team: c_int) -> TeamDesc {
    st.team_desc(func, team)
}

pub use crate::core::coll_entry::team_of;

/// The descriptor of `team`, `None` for ISHMEM_TEAM_INVALID, fatal for any other non-team.
fn desc_or_invalid(st: &State, func: &str, team: c_int) -> Option<TeamDesc> {
    (team != INVALID).then(|| desc(st, func, team))
}

#[no_mangle]
pub extern "C" fn ishmem_team_my_pe(team: c_int) -> c_int {
    const F: &str = "ishmem_team_my_pe";
    guard(F, || desc_or_invalid(state(F), F, team).map_or(-1, |d| d.my_pe))
}

#[no_mangle]
pub extern "C" fn ishmem_team_n_pes(team: c_int) -> c_int {
    const F: &str = "ishmem_team_n_pes";
    guard(F, || desc_or_invalid(state(F), F, team).map_or(-1, |d| d.size))
}

#[no_mangle]
pub extern "C" fn ishmem_team_translate_pe(src_team: c_int, src_pe: c_int, dest_team: c_int) -> c_int {
    const F: &str = "ishmem_team_translate_pe";
    guard(F, || {
        let st = state(F);
        match (desc_or_invalid(st, F, src_team), desc_or_invalid(st, F, dest_team)) {
            (Some(s), Some(d)) => team::translate(&s, src_pe, &d),
            _ => -1,
        }
    })
}

/// Checks a config mask: only ISHMEM_TEAM_NUM_CONTEXTS is defined.
fn check_mask(func: &str, what: &str, mask: c_long) {
    if mask & !(team::CONFIG_NUM_CONTEXTS as c_long) != 0 {
        fatal(func, &format!("{what} {mask:#x} has bits other than ISHMEM_TEAM_NUM_CONTEXTS"));
    }
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_team_get_config(team: c_int, config_mask: c_long, config: *mut TeamConfig) -> c_int {
    const F: &str = "ishmem_team_get_config";
    guard(F, || {
        let st = state(F);
        check_mask(F, "config_mask", config_mask);
        let Some(d) = desc_or_invalid(st, F, team) else { return FAILED };
        if config_mask != 0 {
            if config.is_null() {
                fatal(F, "config is NULL");
            }
            // SAFETY: config is non-NULL and points to an ishmem_team_config_t (API contract).
            unsafe { (*config).num_contexts = d.num_contexts };
        }
        0
    })
}

/// `num_contexts` of a split's configuration (0 when the mask does not name it).
///
/// # Safety
/// `config`, when the mask names a field, must point to an `ishmem_team_config_t`.
unsafe fn num_contexts(func: &str, what: &str, config: *const TeamConfig, mask: c_long) -> c_int {
    check_mask(func, &format!("{what} mask"), mask);
    if mask & team::CONFIG_NUM_CONTEXTS as c_long == 0 {
        return 0;
    }
    if config.is_null() {
        fatal(func, &format!("{what} is NULL but its mask names ISHMEM_TEAM_NUM_CONTEXTS"));
    }
    // SAFETY: non-NULL, an ishmem_team_config_t per the caller.
    let n = unsafe { (*config).num_contexts };
    if n < 0 {
        fatal(func, &format!("{what}->num_contexts = {n} is negative"));
    }
    n
}

fn check_out(func: &str, what: &str, p: *mut c_int) {
    if p.is_null() {
        fatal(func, &format!("{what} is NULL"));
    }
}

/// The lowest `k` team slots free on every PE of `parent` (collective over the parent), or
/// `None` (with ISHMEM_DEBUG=1 after a warning on every PE of the parent).
fn agree_on_slots(st: &State, parent: &Team, k: usize) -> Option<Vec<usize>> {
    let (mine, max) = {
        let pool = st.teams.lock().unwrap_or_else(|e| e.into_inner());
        (pool.free_bitmap(), pool.max())
    };
    let maps = parent.gather_bitmaps(&mine, max.div_ceil(64));
    let found = team::common_free(&maps, k);
    if found.is_none() && st.cfg.debug {
        let here = mine.iter().map(|w| w.count_ones()).sum::<u32>();
        crate::ffi::warn(
            parent.func,
            &format!(
                "no free team slot{} on every PE of the parent team: ISHMEM_TEAMS_MAX={max}, {here} free on this PE \
                 (destroy teams or raise ISHMEM_TEAMS_MAX); {}",
                if k > 1 { format!("s ({k} needed)") } else { String::new() },
                if k > 1 { "the new teams are ISHMEM_TEAM_INVALID" } else { "the new team is ISHMEM_TEAM_INVALID" }
            ),
        );
    }
    found
}

/// A split whose arguments describe no team: `FAILED` (the outputs are already
/// ISHMEM_TEAM_INVALID), with a warning under ISHMEM_DEBUG=1.
fn no_team(st: &State, func: &str, why: &str, outputs: &str) -> c_int {
    if st.cfg.debug {
        crate::ffi::warn(func, &format!("{why}; {outputs} ISHMEM_TEAM_INVALID"));
    }
    FAILED
}

/// Takes slot `slot` for the team `p` when this PE is a member: zeroes the slot's sync area
/// and records the team. Returns the handle, or INVALID for a non-member.
fn join(st: &State, func: &str, slot: usize, p: Progression, num_contexts: c_int) -> c_int {
    let probe = TeamDesc { start: p.start, stride: p.stride, size: p.size, flags: team::F_USED, ..TeamDesc::default() };
    let Some(me) = probe.index_of(st.me as i64) else { return INVALID };
    let mut pool = st.teams.lock().unwrap_or_else(|e| e.into_inner());
    let d = pool.claim(slot, p, me, num_contexts);
    coll::reset_area(st, func, &d);
    st.team_seq[slot].store(0, std::sync::atomic::Ordering::Relaxed);
    st.team_name[slot].store(0, std::sync::atomic::Ordering::Relaxed);
    slot as c_int
}

#[no_mangle]
pub unsafe extern "C" fn ishmem_team_split_strided(
    parent_team: c_int,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const TeamConfig,
    config_mask: c_long,
    new_team: *mut c_int,
) -> c_int {
    const F: &str = "ishmem_team_split_strided";
    guard(F, || {
        let st = state(F);
        check_out(F, "new_team", new_team);
        // SAFETY: config per the API contract (checked for NULL when used).
        let nctx = unsafe { num_contexts(F, "config", config, config_mask) };
        // SAFETY: new_team is non-NULL and writable (API contract).
        unsafe { *new_team = INVALID };
        if parent_team == INVALID {
            return FAILED;
        }
        let _one_split = st.split_lock.lock().unwrap_or_else(|e| e.into_inner());
        let parent = team_of(st, F, parent_team);
        let p = match team::split_strided(&parent.d, start, stride, size) {
            Ok(p) => p,
            Err(e) => return no_team(st, F, &e, "the new team is"),
        };
        parent.enter(Kind::Split, (start as u32 as u64) | (stride as u32 as u64) << 32, size as u32 as u64);
        let Some(slots) = agree_on_slots(st, &parent, 1) else { return FAILED };
        let t = join(st, F, slots[0], p, nctx);
        // Every new member zeroed its sync area before anybody uses the team.
        parent.sync();
        // SAFETY: as above.
        unsafe { *new_team = t };
        0
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ishmem_team_split_2d(
    parent_team: c_int,
    xrange: c_int,
    xaxis_config: *const TeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut c_int,
    yaxis_config: *const TeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut c_int,
) -> c_int {
    const F: &str = "ishmem_team_split_2d";
    guard(F, || {
        let st = state(F);
        check_out(F, "xaxis_team", xaxis_team);
        check_out(F, "yaxis_team", yaxis_team);
        // SAFETY: configs per the API contract (checked for NULL when used).
        let (xctx, yctx) = unsafe {
            (num_contexts(F, "xaxis_config", xaxis_config, xaxis_mask), num_contexts(F, "yaxis_config", yaxis_config, yaxis_mask))
        };
        // SAFETY: both are non-NULL and writable (API contract).
        unsafe {
            *xaxis_team = INVALID;
            *yaxis_team = INVALID;
        }
        if parent_team == INVALID {
            return FAILED;
        }
        let _one_split = st.split_lock.lock().unwrap_or_else(|e| e.into_inner());
        let parent = team_of(st, F, parent_team);
        let ((x, _), (y, _)) = match team::split_2d(&parent.d, xrange, parent.me) {
            Ok(teams) => teams,
            Err(e) => return no_team(st, F, &e, "the new teams are"),
        };
        parent.enter(Kind::Split2d, xrange as u32 as u64, 0);
        let Some(slots) = agree_on_slots(st, &parent, 2) else { return FAILED };
        let tx = join(st, F, slots[0], x, xctx);
        let ty = join(st, F, slots[1], y, yctx);
        parent.sync();
        // SAFETY: as above.
        unsafe {
            *xaxis_team = tx;
            *yaxis_team = ty;
        }
        0
    })
}

#[no_mangle]
pub extern "C" fn ishmem_team_destroy(team: c_int) {
    const F: &str = "ishmem_team_destroy";
    guard(F, || {
        let st = state(F);
        // OpenSHMEM: destroying ISHMEM_TEAM_INVALID has no effect.
        if team == INVALID {
            return;
        }
        // Collective: after the sync no member reads or writes this PE's sync area of the
        // team any more (`Team::destroy_sync`), so the next split may reuse the slot.
        let t = team_of(st, F, team);
        if t.d.flags & team::F_PREDEFINED != 0 {
            fatal(F, &format!("team {team} is a predefined team (world, shared or node); only split teams can be destroyed"));
        }
        t.destroy_sync();
        let mut pool = st.teams.lock().unwrap_or_else(|e| e.into_inner());
        match pool.release(team) {
            // Device code must no longer find the team (only this PE reads these words).
            Ok(free) => coll::publish_slot(st, F, &free),
            Err(e) => {
                drop(pool);
                fatal(F, &e);
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn ishmem_team_sync(team: c_int) -> c_int {
    const F: &str = "ishmem_team_sync";
    guard(F, || {
        team_of(state(F), F, team).team_sync();
        0
    })
}

/// `int ishmem_sync(ishmem_team_t team)`: the OpenSHMEM 1.5 spelling of `ishmem_team_sync`.
#[no_mangle]
pub extern "C" fn ishmem_sync(team: c_int) -> c_int {
    const F: &str = "ishmem_sync";
    guard(F, || {
        team_of(state(F), F, team).team_sync();
        0
    })
}

// ---- OpenSHMEM's team handles (shmem.h) ----
//
// shmem.h's `shmem_team_t` is an opaque pointer-sized handle, as OpenSHMEM implementations define
// it; ishmem.h's `ishmem_team_t` is an int (the team's slot). The handle of team N is N + 1 as a
// pointer, so SHMEM_TEAM_INVALID (team -1) is NULL. The shmem_* functions that take or return a
// team are their own entry points (below, in api/ctx.rs and api/queue_coll.rs, and the
// generated ones of api/generated_ctx.rs): they convert the handle and call the ishmem code;
// an alias of the int-based symbol would read a pointer as an int and write an int into a
// pointer-sized output.

/// shmem.h's `shmem_team_t`.
pub type Handle = *mut std::ffi::c_void;

/// The ishmem team index of an OpenSHMEM handle: NULL is ISHMEM_TEAM_INVALID; a handle too large
/// to be any team's becomes an index no team has (the callee's error names it).
pub fn index(h: Handle) -> c_int {
    match h as usize {
        0 => INVALID,
        v => c_int::try_from(v - 1).unwrap_or(c_int::MAX),
    }
}

/// The OpenSHMEM handle of an ishmem team index (ISHMEM_TEAM_INVALID: NULL).
pub fn handle(t: c_int) -> Handle {
    if t < 0 {
        std::ptr::null_mut()
    } else {
        (t as usize + 1) as Handle
    }
}

#[no_mangle]
pub extern "C" fn shmem_team_my_pe(team: Handle) -> c_int {
    ishmem_team_my_pe(index(team))
}

#[no_mangle]
pub extern "C" fn shmem_team_n_pes(team: Handle) -> c_int {
    ishmem_team_n_pes(index(team))
}

#[no_mangle]
pub extern "C" fn shmem_team_translate_pe(src_team: Handle, src_pe: c_int, dest_team: Handle) -> c_int {
    ishmem_team_translate_pe(index(src_team), src_pe, index(dest_team))
}

/// # Safety
/// As `ishmem_team_get_config`.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(team: Handle, config_mask: c_long, config: *mut TeamConfig) -> c_int {
    // SAFETY: the caller's pointers, passed on.
    unsafe { ishmem_team_get_config(index(team), config_mask, config) }
}

/// Runs an int-based split with a local int output for each non-NULL handle output (a NULL one
/// stays NULL, for the callee to report), then stores the handles.
unsafe fn with_int_outs(outs: [*mut Handle; 2], f: impl FnOnce([*mut c_int; 2]) -> c_int) -> c_int {
    let mut ints = [INVALID; 2];
    let ptrs: [*mut c_int; 2] = [0, 1].map(|k| if outs[k].is_null() { std::ptr::null_mut() } else { &mut ints[k] as *mut c_int });
    let rc = f(ptrs);
    for k in 0..2 {
        if !outs[k].is_null() {
            // SAFETY: a non-NULL output handle per the C API.
            unsafe { *outs[k] = handle(ints[k]) };
        }
    }
    rc
}

/// # Safety
/// As `ishmem_team_split_strided`.
#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent_team: Handle,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const TeamConfig,
    config_mask: c_long,
    new_team: *mut Handle,
) -> c_int {
    // SAFETY: the caller's pointers, passed on; outputs through with_int_outs.
    unsafe {
        with_int_outs([new_team, std::ptr::null_mut()], |o| {
            ishmem_team_split_strided(index(parent_team), start, stride, size, config, config_mask, o[0])
        })
    }
}

/// # Safety
/// As `ishmem_team_split_2d`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shmem_team_split_2d(
    parent_team: Handle,
    xrange: c_int,
    xaxis_config: *const TeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut Handle,
    yaxis_config: *const TeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut Handle,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        with_int_outs([xaxis_team, yaxis_team], |o| {
            ishmem_team_split_2d(index(parent_team), xrange, xaxis_config, xaxis_mask, o[0], yaxis_config, yaxis_mask, o[1])
        })
    }
}

#[no_mangle]
pub extern "C" fn shmem_team_destroy(team: Handle) {
    ishmem_team_destroy(index(team))
}

#[no_mangle]
pub extern "C" fn shmem_team_sync(team: Handle) -> c_int {
    ishmem_team_sync(index(team))
}

#[no_mangle]
pub extern "C" fn shmem_sync(team: Handle) -> c_int {
    ishmem_sync(index(team))
}

#[no_mangle]
pub extern "C" fn shmem_team_ptr(team: Handle, dest: *const std::ffi::c_void, pe: c_int) -> *mut std::ffi::c_void {
    crate::api::osh::ishmem_team_ptr(index(team), dest, pe)
}
