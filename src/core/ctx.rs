//! OpenSHMEM contexts (`shmem_ctx_t`): a context is a separate stream of puts and AMOs whose
//! quiet and fence complete and order its own operations only. On mapped memory (a PE of this
//! node, the CPU or the CUDA backend's heap) every operation is complete when its call returns,
//! so a context has nothing outstanding there; across nodes its network writes are tracked
//! apart (`transport::fabric::Tracker`: they ask delivery completion and carry the context's
//! tracker), so its quiet waits for them and nothing else. A context made from a team takes
//! PE numbers of that team.
//!
//! Handles are the addresses of `Ctx` objects that live until the process ends (a destroyed
//! one is reused by a later create); a handle is checked against the set of live ones before
//! use, so a destroyed or made-up handle is an error naming the routine, not a crash.

use super::team::TeamDesc;
use super::State;
use crate::transport::fabric::Tracker;
use std::collections::HashSet;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Mutex, RwLock};
use std::thread::ThreadId;

/// `SHMEM_CTX_SERIALIZED`, `SHMEM_CTX_PRIVATE`, `SHMEM_CTX_NOSTORE`.
pub const SERIALIZED: i64 = 1;
pub const PRIVATE: i64 = 2;
pub const NOSTORE: i64 = 4;
pub const OPTIONS: i64 = SERIALIZED | PRIVATE | NOSTORE;

/// A context's state behind its handle.
pub struct Ctx {
    inner: Mutex<Inner>,
    /// Its network operations (used only while the job spans nodes).
    track: Tracker,
}

#[derive(Clone, Copy)]
struct Inner {
    options: i64,
    /// The team handle it was made from and that team as it was then.
    team: i32,
    desc: TeamDesc,
    /// The creating thread of a SHMEM_CTX_PRIVATE context.
    owner: Option<ThreadId>,
}

/// What a shim needs of a context for one call.
#[derive(Clone, Copy)]
pub struct Use {
    pub options: i64,
    pub team: i32,
    pub desc: TeamDesc,
    pub owner: Option<ThreadId>,
}

/// Live handles (addresses of `Ctx`).
static LIVE: RwLock<Option<HashSet<usize>>> = RwLock::new(None);
/// Destroyed contexts, for reuse.
static FREE: Mutex<Vec<&'static Ctx>> = Mutex::new(Vec::new());

/// A new context with `options` on team `team` (described by `desc`).
pub fn create(options: i64, team: i32, desc: TeamDesc) -> &'static Ctx {
    let owner = (options & PRIVATE != 0).then(|| std::thread::current().id());
    let inner = Inner { options, team, desc, owner };
    let c: &'static Ctx = match FREE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
        Some(c) => {
            *c.inner.lock().unwrap_or_else(|e| e.into_inner()) = inner;
            c
        }
        None => Box::leak(Box::new(Ctx { inner: Mutex::new(inner), track: Tracker::default() })),
    };
    LIVE.write().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashSet::new).insert(c as *const Ctx as usize);
    c
}

/// The live context of handle `h`, if it is one.
pub fn lookup(h: usize) -> Option<&'static Ctx> {
    let live = LIVE.read().unwrap_or_else(|e| e.into_inner());
    // SAFETY: every address in LIVE is a leaked Ctx (never freed).
    live.as_ref()?.contains(&h).then(|| unsafe { &*(h as *const Ctx) })
}

impl Ctx {
    pub fn handle(&'static self) -> usize {
        self as *const Ctx as usize
    }

    pub fn get(&self) -> Use {
        let i = *self.inner.lock().unwrap_or_else(|e| e.into_inner());
        Use { options: i.options, team: i.team, desc: i.desc, owner: i.owner }
    }

    /// Runs `f` with this thread's network operations counted as this context's.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        self.track.run(f)
    }

    /// Completes every put and AMO of this context (network ones waited for; mapped ones are
    /// complete already, a memory fence orders them).
    pub fn quiet(&self, st: &State, func: &str) {
        if let Some(n) = st.net.as_ref() {
            n.quiet_ctx(func, &self.track);
        }
        std::sync::atomic::fence(SeqCst);
    }

    /// Quiets the context and makes the handle dead (the object is kept for reuse).
    pub fn destroy(&'static self, st: &State, func: &str) {
        self.quiet(st, func);
        LIVE.write().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashSet::new).remove(&self.handle());
        FREE.lock().unwrap_or_else(|e| e.into_inner()).push(self);
    }
}

/// At finalize: every context handle is dead. The objects are not reused: a completion of
/// the finalized network may not have been read into their trackers.
pub fn forget_all() {
    LIVE.write().unwrap_or_else(|e| e.into_inner()).take();
}
