//! Collectives through the ring: a `PROXY_COLL` request decoded (`Coll`), run as the host
//! API's collective of its kind through the checked entries of `core::coll_entry`, on a thread
//! of its team's own (`Colls`) so that the ring goes on draining while it waits for the team.

use super::ring::{Req, Ring};
use super::serve::run;
use crate::core::{coll_entry, State};
use crate::ffi::fatal;
use crate::op::{BitOp, Bits, Num, RedOp};
use crate::transport::cuda::state::*;

/// The proxy's collective threads: one per team that has had a collective through the ring,
/// each running its team's requests in the order handed over and replying to each.
pub(crate) struct Colls {
    st: &'static State,
    ring: Ring,
    teams: std::collections::HashMap<i32, std::sync::mpsc::Sender<Req>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Colls {
    pub(crate) fn new(st: &'static State, ring: Ring) -> Colls {
        Colls { st, ring, teams: std::collections::HashMap::new(), threads: Vec::new() }
    }

    /// Hands collective request `r` to its team's thread (started at the team's first).
    pub(crate) fn hand_over(&mut self, r: Req) {
        let team = Coll::of(&r).team;
        let (st, ring) = (self.st, self.ring);
        let threads = &mut self.threads;
        let tx = self.teams.entry(team).or_insert_with(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Req>();
            let h = std::thread::Builder::new()
                .name(format!("ishmem-coll{team}"))
                .spawn(move || {
                    crate::ffi::guard("the proxy's collective thread (kernels' collectives across nodes)", || {
                        for r in rx {
                            let v = run(st, &r, None);
                            ring.done(&r, v);
                        }
                    })
                })
                .unwrap_or_else(|e| {
                    fatal(Coll::of(&r).name(), &format!("cannot start the proxy's thread for the collectives of team {team}: {e}"))
                });
            threads.push(h);
            tx
        });
        if tx.send(r).is_err() {
            // The thread ended: only a panic in it does that, and a panic aborts the process.
            fatal(Coll::of(&r).name(), &format!("the proxy's thread for the collectives of team {team} has ended"));
        }
    }

    /// Ends the threads once they have run every request handed over.
    pub(crate) fn join(&mut self) {
        self.teams.clear();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

/// A `PROXY_COLL` request's collective (device_state.h: ISHMEMI_PROXY_COLL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coll {
    pub team: i32,
    /// `COLL_*`.
    pub what: u8,
    /// `COLL_T_*` and the element size in bytes.
    pub class: u8,
    pub width: usize,
    /// `COLL_OP_*` (reductions).
    pub op: u8,
    /// The root's team PE (broadcast).
    pub root: i32,
    pub dest: usize,
    pub src: usize,
    /// Elements of `width` bytes.
    pub n: usize,
}

impl Coll {
    /// The collective of request `r` (fields as posted; checked when run).
    pub fn of(r: &Req) -> Coll {
        Coll {
            team: r.sig as u32 as i32,
            what: (r.sig >> 32) as u8,
            class: (r.sig >> 40) as u8,
            width: r.width,
            op: r.op,
            root: r.value2 as u32 as i32,
            dest: r.sym as usize,
            src: r.local as usize,
            n: r.bytes as usize,
        }
    }

    /// The element type's TYPENAME (reductions and scans), None for a class and width no
    /// device reduction has.
    fn type_name(&self) -> Option<&'static str> {
        Some(match (self.class, self.width) {
            (COLL_T_UNSIGNED, 1) => "uint8",
            (COLL_T_UNSIGNED, 2) => "uint16",
            (COLL_T_UNSIGNED, 4) => "uint32",
            (COLL_T_UNSIGNED, 8) => "uint64",
            (COLL_T_SIGNED, 1) => "int8",
            (COLL_T_SIGNED, 2) => "int16",
            (COLL_T_SIGNED, 4) => "int32",
            (COLL_T_SIGNED, 8) => "int64",
            (COLL_T_FLOAT, 4) => "float",
            (COLL_T_FLOAT, 8) => "double",
            _ => return None,
        })
    }

    /// The operator's name (reductions), None for an unknown one.
    fn op_name(&self) -> Option<&'static str> {
        ["and", "or", "xor", "max", "min", "sum", "prod"].get(self.op as usize).copied()
    }

    /// The device call this request stands for, in error messages and in the team's record of
    /// its collective calls (which compares the names of reductions between PEs: a PE's device
    /// call through the proxy is named alike on every PE). Reductions and scans name type and
    /// operator; those names are made once each (a few dozen at most) and kept.
    pub fn name(&self) -> &'static str {
        match self.what {
            COLL_SYNC => return "a device team sync (through the proxy)",
            COLL_BROADCAST => return "a device broadcast (through the proxy)",
            COLL_FCOLLECT => return "a device fcollect (through the proxy)",
            COLL_COLLECT => return "a device collect (through the proxy)",
            COLL_ALLTOALL => return "a device alltoall (through the proxy)",
            COLL_REDUCE | COLL_INSCAN | COLL_EXSCAN => {}
            _ => return "a device collective (through the proxy)",
        }
        let (Some(ty), Some(op)) = (self.type_name(), self.op_name()) else {
            return "a device reduction or scan (through the proxy)";
        };
        let form = match self.what {
            COLL_REDUCE => "reduce",
            COLL_INSCAN => "inscan",
            _ => "exscan",
        };
        static NAMES: std::sync::Mutex<Vec<(u32, &'static str)>> = std::sync::Mutex::new(Vec::new());
        let key = u32::from(self.what) << 24 | u32::from(self.class) << 16 | (self.width as u32) << 8 | u32::from(self.op);
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, n)) = names.iter().find(|(k, _)| *k == key) {
            return n;
        }
        let n: &'static str = Box::leak(format!("a device {ty} {op}_{form} (through the proxy)").into_boxed_str());
        names.push((key, n));
        n
    }
}

/// Runs a `PROXY_COLL` request as the host collective of its kind; returns its status.
pub(crate) fn coll(st: &State, r: &Req) -> u64 {
    let c = Coll::of(r);
    let func = c.name();
    let malformed = |what: &str| -> ! { fatal(func, &format!("malformed request {} of the proxy ring ({what})", r.ticket)) };
    let (dest, src) = (c.dest as *mut u8, c.src as *const u8);
    let rc = match c.what {
        COLL_SYNC => {
            coll_entry::team_of(st, func, c.team).team_sync();
            0
        }
        COLL_BROADCAST | COLL_FCOLLECT | COLL_COLLECT | COLL_ALLTOALL => {
            if c.width == 0 {
                malformed("element size 0");
            }
            // SAFETY: the kernel passes symmetric addresses of this PE's heap (checked by the
            // host collective, as for a host call) that it does not touch until the reply.
            unsafe {
                match c.what {
                    COLL_BROADCAST => coll_entry::broadcast(func, c.team, dest, src, c.n, c.width, c.root),
                    COLL_FCOLLECT => coll_entry::fcollect(func, c.team, dest, src, c.n, c.width),
                    COLL_COLLECT => coll_entry::collect(func, c.team, dest, src, c.n, c.width),
                    _ => coll_entry::alltoall(func, c.team, dest, src, c.n, c.width),
                }
            }
        }
        COLL_REDUCE | COLL_INSCAN | COLL_EXSCAN => {
            if c.type_name().is_none() {
                malformed(&format!("element class {} of {} bytes", c.class, c.width));
            }
            if c.op_name().is_none() || (c.what != COLL_REDUCE && c.op != COLL_OP_SUM) {
                malformed(&format!("operator {}", c.op));
            }
            // SAFETY: as above.
            unsafe {
                match (c.class, c.width) {
                    (COLL_T_UNSIGNED, 1) => reduce_int::<u8>(func, &c),
                    (COLL_T_UNSIGNED, 2) => reduce_int::<u16>(func, &c),
                    (COLL_T_UNSIGNED, 4) => reduce_int::<u32>(func, &c),
                    (COLL_T_UNSIGNED, 8) => reduce_int::<u64>(func, &c),
                    (COLL_T_SIGNED, 1) => reduce_int::<i8>(func, &c),
                    (COLL_T_SIGNED, 2) => reduce_int::<i16>(func, &c),
                    (COLL_T_SIGNED, 4) => reduce_int::<i32>(func, &c),
                    (COLL_T_SIGNED, 8) => reduce_int::<i64>(func, &c),
                    (_, 4) => reduce_num::<f32>(func, &c).unwrap_or_else(|| malformed("a bitwise operator on floats")),
                    _ => reduce_num::<f64>(func, &c).unwrap_or_else(|| malformed("a bitwise operator on floats")),
                }
            }
        }
        w => malformed(&format!("collective {w}")),
    };
    rc as u32 as u64
}

/// A reduction or sum scan of an integer type, as the host API's.
///
/// # Safety
/// As `coll`: `c.dest` and `c.src` are the kernel's symmetric arrays of `c.n` elements.
unsafe fn reduce_int<T: Bits>(func: &str, c: &Coll) -> std::ffi::c_int {
    let (dest, src) = (c.dest as *mut T, c.src as *const T);
    let bit = match c.op {
        COLL_OP_AND => Some(BitOp::And),
        COLL_OP_OR => Some(BitOp::Or),
        COLL_OP_XOR => Some(BitOp::Xor),
        _ => None,
    };
    match bit {
        // SAFETY: forwarded.
        Some(b) if c.what == COLL_REDUCE => unsafe { coll_entry::reduce_bits::<T>(func, c.team, dest, src, c.n, b) },
        // SAFETY: forwarded.
        _ => unsafe { reduce_num::<T>(func, c) }.unwrap_or(-1),
    }
}

/// A max, min, sum or prod reduction or a sum scan, as the host API's; None for a bitwise
/// operator.
///
/// # Safety
/// As `reduce_int`.
unsafe fn reduce_num<T: Num>(func: &str, c: &Coll) -> Option<std::ffi::c_int> {
    let (dest, src) = (c.dest as *mut T, c.src as *const T);
    let op = match c.op {
        COLL_OP_MAX => RedOp::Max,
        COLL_OP_MIN => RedOp::Min,
        COLL_OP_SUM => RedOp::Sum,
        COLL_OP_PROD => RedOp::Prod,
        _ => return None,
    };
    // SAFETY: forwarded.
    Some(unsafe {
        match c.what {
            COLL_INSCAN => coll_entry::scan::<T>(func, c.team, dest, src, c.n, true),
            COLL_EXSCAN => coll_entry::scan::<T>(func, c.team, dest, src, c.n, false),
            _ => coll_entry::reduce::<T>(func, c.team, dest, src, c.n, op),
        }
    })
}
