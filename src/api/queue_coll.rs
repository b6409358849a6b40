//! The exported symbols of the `_on_queue` collectives; the engine is `core::queue_coll`, which
//! the typed shims in `generated.rs` call through the names re-exported here.

use crate::core::queue::Queue;
pub use crate::core::queue_coll::{data, reduce, Move, QElem};
use std::ffi::c_int;

#[no_mangle]
pub extern "C" fn ishmemx_team_sync_on_queue(team: c_int, ret: *mut c_int, q: Queue) {
    const F: &str = "ishmemx_team_sync_on_queue";
    crate::ffi::guard(F, || crate::core::queue_coll::team_sync(F, team, ret, q))
}

/// shmemx.h's form: the team is OpenSHMEM's handle (api::team::index).
#[no_mangle]
pub extern "C" fn shmemx_team_sync_on_queue(team: crate::api::team::Handle, ret: *mut c_int, q: Queue) {
    const F: &str = "shmemx_team_sync_on_queue";
    let team = crate::api::team::index(team);
    crate::ffi::guard(F, || crate::core::queue_coll::team_sync(F, team, ret, q))
}
