//! OpenSHMEM routines that the Intel SHMEM API has no name for, exported under both prefixes
//! (`shmem_X` is an alias of `ishmem_X`, build.rs): the distributed locks, `pcontrol`,
//! `pe_quiet` and `team_ptr`.
//!
//! Locks: a lock is a symmetric `long` that starts at 0; its copy on PE 0 is the lock, a
//! ticket lock in one 64-bit word: the high 32 bits count the tickets handed out, the low 32
//! the ticket being served. `set_lock` takes a ticket with one fetch-add on PE 0 and waits
//! (polling with the library's backoff) until the low half reaches it, so waiters get the lock
//! in the order they asked (no PE starves). `test_lock` takes a ticket only when the lock is
//! free (both halves equal: a compare-and-swap), else returns 1 at once. `clear_lock` first
//! completes every operation of this PE (quiet), so the next holder sees the protected updates,
//! then advances the low half (a compare-and-swap loop: the carry never reaches the tickets).
//! Every step is one of the library's AMOs, so the lock works between PEs of one node (CPU
//! atomics on the mapped word; GPU atomics on the CUDA backend) and across nodes (network
//! AMOs). The PE remembers the locks it holds: clearing one it does not hold, or setting one
//! it already holds (which would wait for itself forever), is a fatal error naming the call.

use crate::core::{amo, check_align, quiet, state};
use crate::ffi::{debug_on, fatal, guard, info};
use crate::op::Rmw;
use std::collections::HashMap;
use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{fence, AtomicI32, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Mutex;

/// The PE whose copy of a lock word is the lock.
const LOCK_PE: usize = 0;
const TICKET: u64 = 1 << 32;

/// The locks this PE holds: lock address -> its ticket.
static HELD: Mutex<Option<HashMap<usize, u32>>> = Mutex::new(None);

fn held<R>(f: impl FnOnce(&mut HashMap<usize, u32>) -> R) -> R {
    let mut g = HELD.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// The lock's address, checked: 8-byte aligned (symmetry and range are checked by each AMO).
fn lock_addr(func: &str, lock: *mut c_long) -> usize {
    let a = lock as usize;
    if a == 0 {
        fatal(func, "lock is NULL (it must be a symmetric long set to 0 before first use)");
    }
    check_align(func, "lock", a, 8);
    a
}

fn not_recursive(func: &str, a: usize) {
    if held(|h| h.contains_key(&a)) {
        fatal(func, &format!("this PE already holds the lock at {a:#x} (locks are not recursive: it would wait for itself)"));
    }
}

/// Called after the lock is taken with `ticket`: later loads see what the previous holder
/// wrote before its clear_lock (its quiet completed those writes before the release).
fn taken(a: usize, ticket: u32) {
    fence(SeqCst);
    held(|h| h.insert(a, ticket));
}

/// `void ishmem_set_lock(long *lock)` (OpenSHMEM 1.5 `shmem_set_lock`).
#[no_mangle]
pub extern "C" fn ishmem_set_lock(lock: *mut c_long) {
    const F: &str = "ishmem_set_lock";
    guard(F, || {
        let st = state(F);
        let a = lock_addr(F, lock);
        not_recursive(F, a);
        let old: u64 = amo::fetch_op(st, F, a, Rmw::Add, TICKET, LOCK_PE);
        let ticket = (old >> 32) as u32;
        if old as u32 != ticket {
            crate::wait::until(st.cfg.wait_spin, st.cfg.wait_sleep_max_us, || amo::fetch::<u64>(st, F, a, LOCK_PE) as u32 == ticket);
        }
        taken(a, ticket);
    })
}

/// `int ishmem_test_lock(long *lock)` (OpenSHMEM 1.5 `shmem_test_lock`): 0 when this call
/// took the lock, 1 when another PE holds it or waits for it.
#[no_mangle]
pub extern "C" fn ishmem_test_lock(lock: *mut c_long) -> c_int {
    const F: &str = "ishmem_test_lock";
    guard(F, || {
        let st = state(F);
        let a = lock_addr(F, lock);
        not_recursive(F, a);
        let v: u64 = amo::fetch(st, F, a, LOCK_PE);
        let ticket = (v >> 32) as u32;
        if v as u32 != ticket || amo::compare_swap(st, F, a, v, v.wrapping_add(TICKET), LOCK_PE) != v {
            return 1;
        }
        taken(a, ticket);
        0
    })
}

/// `void ishmem_clear_lock(long *lock)` (OpenSHMEM 1.5 `shmem_clear_lock`).
#[no_mangle]
pub extern "C" fn ishmem_clear_lock(lock: *mut c_long) {
    const F: &str = "ishmem_clear_lock";
    guard(F, || {
        let st = state(F);
        let a = lock_addr(F, lock);
        let Some(ticket) = held(|h| h.remove(&a)) else {
            fatal(F, &format!("this PE does not hold the lock at {a:#x} (set_lock or a test_lock that returned 0 comes first)"))
        };
        quiet();
        let mut v: u64 = amo::fetch(st, F, a, LOCK_PE);
        loop {
            if v as u32 != ticket {
                fatal(
                    F,
                    &format!(
                        "the lock at {a:#x} serves ticket {} while this PE holds {ticket}: was the lock word written by the program?",
                        v as u32
                    ),
                );
            }
            let next = (v & !(TICKET - 1)) | u64::from(ticket.wrapping_add(1));
            let seen = amo::compare_swap(st, F, a, v, next, LOCK_PE);
            if seen == v {
                break;
            }
            v = seen;
        }
    })
}

/// The level of the last `pcontrol` call (1, profiling on, until one is made).
static PCONTROL_LEVEL: AtomicI32 = AtomicI32::new(1);

/// `void ishmem_pcontrol(int level, ...)` (OpenSHMEM 1.5 `shmem_pcontrol`): the hook by which
/// a program tells a profiling tool what to record (0 off, 1 on at the default detail, 2 flush
/// its buffers, other levels the tool's own). ishmem has no profiler of its own: the call
/// records the level and, with ISHMEM_DEBUG=1, says so on stderr (`[PE n] INFO:` line); a tool
/// interposes the exported symbol. Any level is accepted, and the extra arguments are not read.
/// Declared variadic in C; on x86-64 a variadic call passes `level` as a plain call does.
#[no_mangle]
pub extern "C" fn ishmem_pcontrol(level: c_int) {
    const F: &str = "ishmem_pcontrol";
    guard(F, || {
        let before = PCONTROL_LEVEL.swap(level, Relaxed);
        if debug_on() {
            let what = match level {
                0 => "profiling off",
                1 => "profiling on (default detail)",
                2 => "flush profile buffers",
                _ => "a profiling tool's own level",
            };
            info(
                F,
                &format!(
                    "level {level} ({what}), was {before}; ishmem has no built-in profiler, a tool interposing shmem_pcontrol acts on it"
                ),
            );
        }
    })
}

/// `void ishmem_pe_quiet(const int *target_pes, size_t npes)` (OpenSHMEM 1.6
/// `shmem_pe_quiet`): completes this PE's operations to the listed PEs (world numbers). It
/// completes all of them: ishmem keeps no per-target queues, and completing more is allowed.
#[no_mangle]
pub unsafe extern "C" fn ishmem_pe_quiet(target_pes: *const c_int, npes: usize) {
    const F: &str = "ishmem_pe_quiet";
    guard(F, || {
        let st = state(F);
        if npes > 0 && target_pes.is_null() {
            fatal(F, &format!("target_pes is NULL with npes {npes}"));
        }
        for k in 0..npes {
            // SAFETY: the caller passes npes readable ints (the API's contract).
            st.check_pe(F, unsafe { *target_pes.add(k) });
        }
        quiet();
    })
}

/// `void *ishmem_team_ptr(ishmem_team_t team, const void *dest, int pe)` (OpenSHMEM 1.6
/// `shmem_team_ptr`): `ishmem_ptr` with `pe` numbered in `team`; NULL where `ishmem_ptr` is
/// NULL, and for ISHMEM_TEAM_INVALID or a `pe` outside the team.
#[no_mangle]
pub extern "C" fn ishmem_team_ptr(team: c_int, dest: *const c_void, pe: c_int) -> *mut c_void {
    const F: &str = "ishmem_team_ptr";
    guard(F, || {
        let st = state(F);
        if team == crate::core::team::INVALID {
            return std::ptr::null_mut();
        }
        let d = st.team_desc(F, team);
        if pe < 0 || pe >= d.size {
            return std::ptr::null_mut();
        }
        st.translate(dest as usize, 1, d.world(pe as usize)).map_or(std::ptr::null_mut(), |a| a as *mut c_void)
    })
}
