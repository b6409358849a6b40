//! Backoff for every idle wait (wait_until, signal_wait_until, barriers): spin for a number of
//! polls, then yield the CPU for a while (`YIELD_PHASE`: on a node with more PEs than cores
//! this hands the core to the PE being waited for), then sleep with a doubling period capped
//! by `ISHMEM_WAIT_SLEEP_MAX_US`, so an idle PE does not burn a core for ever. Far more PEs
//! than CPUs (`block_mode_for`): block mode, sleeping from the first poll (`BLOCKING`). Also the
//! comparisons of the wait_until/test families (`compare`, `check_cmp`, `Values`).
//!
//! A leaf: it names nothing above it. The network's progress step, which a wait drives while
//! the job spans nodes, is a hook the core registers (`set_progress`).

use crate::ffi::fatal;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Set while the job spans nodes: every poll of a wait also runs the progress hook (the
/// network provider), so a PE that waits (in a barrier, a wait_until) serves the network
/// operations aimed at it at once instead of at the progress thread's next turn.
static NET_PROGRESS: AtomicBool = AtomicBool::new(false);

/// The progress step (`core::net_progress`), registered once by the core.
static PROGRESS: OnceLock<fn()> = OnceLock::new();

/// Whether network traffic arrived lately (`core::net_busy`): while it does, a wait that has
/// yielded for `YIELD_PHASE` keeps yielding and polling instead of sleeping, so that a PE
/// waiting in a barrier while others read and write its memory answers at once (issue 31:
/// the target of a g loop slept up to `ISHMEM_WAIT_SLEEP_MAX_US` between polls, and its
/// progress thread woke per arrival), and sleeps once the job has been quiet for a while.
static BUSY: OnceLock<fn() -> bool> = OnceLock::new();

/// Threads of this process in the polling phases (spinning, yielding) of a library wait that
/// drives the network's progress (`progress_on(true)`, not block mode). While there is
/// one, the PE's progress thread stays out of the provider and off its wait fd
/// (`Fabric::progress_wait`): the waiter reads the provider itself many times per microsecond
/// of network latency, and a progress thread woken by every arrival and every local send
/// completion (the provider signals its wait fd for each) only took the core and the
/// provider's locks from it (issue 31: barrier_all and the small collectives across nodes).
/// A waiter that reaches its sleeping phase is no longer counted, so an idle PE's progress
/// thread serves arrivals at once again; traffic that brings it back to polling counts it again.
static LIB_WAITERS: AtomicUsize = AtomicUsize::new(0);

/// Whether this process's waits poll (spin or yield) before they sleep: not in block mode
/// (`set_polling`). Only then does a recent wait keep the progress thread aside
/// (`drove_within`).
static POLLING: AtomicBool = AtomicBool::new(false);

/// When (microseconds since `epoch()`, 0: never) a thread of this process last drove the
/// network in a wait: a counted library wait that returned, or a network wait
/// (`Fabric::wait_until`: a quiet, a blocking get or AMO) that ended (`note_drove`).
static DROVE_US: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

/// Sets whether the waits of this process poll before they sleep (at init: all but block
/// mode).
pub fn set_polling(on: bool) {
    POLLING.store(on, Relaxed);
}

/// Notes that a thread drove the network in a wait just now (where waits poll).
pub fn note_drove() {
    if POLLING.load(Relaxed) {
        DROVE_US.store((epoch().elapsed().as_micros() as u64).max(1), Relaxed);
    }
}

/// Whether a thread of this process drove the network in a wait within `d` (and waits poll).
/// The PE is then most likely in a loop of communicating and waiting, and drives the
/// provider again sooner than a progress thread would help: `Fabric::progress_wait` keeps
/// the progress thread aside. Issue 31: between two waits of a barrier loop the progress
/// thread went into the provider's wait fd, was woken by the next arrival and took the core
/// from the waiter (1.15 context switches per barrier and PE; barrier_all 33-41 -> 17-24 us).
pub fn drove_within(d: Duration) -> bool {
    let t = DROVE_US.load(Relaxed);
    POLLING.load(Relaxed) && t != 0 && (epoch().elapsed().as_micros() as u64).saturating_sub(t) < d.as_micros() as u64
}

/// Held by the tests that turn the network progress on (it is one switch for the process).
#[cfg(test)]
pub static PROGRESS_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Threads in the polling phases of a library wait that drives the network (see `LIB_WAITERS`).
pub fn library_waiters() -> usize {
    LIB_WAITERS.load(Relaxed)
}

/// How a wait in block mode sleeps while the job spans nodes (`core::net_block`): until the
/// network has work for this PE (the provider's wait fd) or for at most the given time.
static BLOCK: OnceLock<fn(Duration)> = OnceLock::new();

/// Block mode (issue 29): set at init where this machine runs more than
/// `BLOCK_OVERSUBSCRIBED` times as many PEs of the job as this process has CPUs. Waits then
/// neither spin nor yield: a yielding waiter stays runnable and takes its share of the CPU
/// from the PE it waits for, which at 64 PEs on 2 cores is most of the machine. They sleep
/// (across nodes: in `poll` on the provider's wait fd, so an arriving flag wakes them at once)
/// from `BLOCK_NAP_MIN` doubling to `BLOCK_NAP_MAX` (or `ISHMEM_WAIT_SLEEP_MAX_US` if larger).
static BLOCKING: AtomicBool = AtomicBool::new(false);

/// More PEs per CPU than this puts the waits in block mode.
pub const BLOCK_OVERSUBSCRIBED: usize = 4;

/// The first and the longest sleep of a wait in block mode.
pub const BLOCK_NAP_MIN: Duration = Duration::from_micros(20);
pub const BLOCK_NAP_MAX: Duration = Duration::from_millis(2);

/// Whether `host_pes` PEs on a machine where this process may use `cpus` CPUs (0: unknown)
/// wait in block mode.
pub fn block_mode_for(host_pes: usize, cpus: usize) -> bool {
    cpus > 0 && host_pes > BLOCK_OVERSUBSCRIBED * cpus
}

/// Turns block mode on or off for every later wait of this process.
pub fn set_blocking(on: bool) {
    BLOCKING.store(on, Relaxed);
}

/// Whether waits are in block mode.
pub fn blocking() -> bool {
    BLOCKING.load(Relaxed)
}

/// Registers the progress step that waits run while `progress_on(true)`, the test of recent
/// traffic, and the blocking sleep of block mode (the first registration stays: there is one
/// core).
pub fn set_progress(step: fn(), busy: fn() -> bool, block: fn(Duration)) {
    let _ = PROGRESS.set(step);
    let _ = BUSY.set(busy);
    let _ = BLOCK.set(block);
}

/// Turns the progress step in every wait's poll on (the job spans nodes) or off (finalize).
pub fn progress_on(on: bool) {
    NET_PROGRESS.store(on, Relaxed);
}

/// The comparison value(s) of a wait_until/test call: one for all ivars, or one per ivar
/// (`_vector` forms).
pub enum Values<T> {
    One(T),
    Many(*const T),
}

/// Validates a comparison operator (`ISHMEM_CMP_EQ` .. `ISHMEM_CMP_LE`).
pub fn check_cmp(func: &str, cmp: c_int) {
    if !(1..=6).contains(&cmp) {
        fatal(func, &format!("invalid comparison operator {cmp} (use ISHMEM_CMP_EQ .. ISHMEM_CMP_LE)"));
    }
}

/// `v cmp target`.
#[inline(always)]
pub fn compare<T: PartialOrd>(v: T, cmp: c_int, target: T) -> bool {
    match cmp {
        1 => v == target,
        2 => v != target,
        3 => v > target,
        4 => v >= target,
        5 => v < target,
        _ => v <= target,
    }
}

/// How long a waiter yields before it starts sleeping.
const YIELD_PHASE: Duration = Duration::from_millis(2);

/// One waiter's backoff state.
pub struct Backoff {
    polls: u64,
    spin: u64,
    yield_until: Option<Instant>,
    sleep_us: u64,
    max_sleep_us: u64,
    block: bool,
}

impl Backoff {
    /// A waiter in the process's mode (`blocking`).
    pub fn new(spin: u64, max_sleep_us: u64) -> Backoff {
        Backoff::with_mode(spin, max_sleep_us, blocking())
    }

    /// A waiter in block mode (`block`) or not.
    pub fn with_mode(spin: u64, max_sleep_us: u64, block: bool) -> Backoff {
        if block {
            let (min, max) = (BLOCK_NAP_MIN.as_micros() as u64, BLOCK_NAP_MAX.as_micros() as u64);
            return Backoff { polls: 0, spin: 0, yield_until: None, sleep_us: min, max_sleep_us: max_sleep_us.max(max), block };
        }
        Backoff { polls: 0, spin, yield_until: None, sleep_us: 1, max_sleep_us: max_sleep_us.max(1), block }
    }

    /// Waits a little before the next poll.
    #[inline]
    pub fn snooze(&mut self) {
        let net = NET_PROGRESS.load(Relaxed);
        if net {
            if let Some(step) = PROGRESS.get() {
                step();
            }
        }
        self.polls += 1;
        if self.block {
            // Sleeping from the first snooze on (the agreement checks of `until_checked` may
            // start after their period).
            self.yield_until.get_or_insert_with(Instant::now);
            let nap = Duration::from_micros(self.sleep_us);
            match BLOCK.get() {
                Some(block) if net => block(nap),
                _ => std::thread::sleep(nap),
            }
            self.sleep_us = (self.sleep_us * 2).min(self.max_sleep_us);
            return;
        }
        if self.polls <= self.spin {
            std::hint::spin_loop();
            return;
        }
        let now = Instant::now();
        let until = *self.yield_until.get_or_insert(now + YIELD_PHASE);
        if now < until {
            std::thread::yield_now();
        } else if net && self.spin > 0 && BUSY.get().is_some_and(|busy| busy()) {
            // The job communicates: poll on (the sleep starts over from 1 us afterwards). Not
            // where the machine has more PEs than CPUs (spin 0): there a waiter that sleeps
            // leaves the CPU to the PEs and progress threads that move the traffic.
            self.yield_until = Some(now + YIELD_PHASE);
            self.sleep_us = 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(self.sleep_us));
            self.sleep_us = (self.sleep_us * 2).min(self.max_sleep_us);
        }
    }

    /// Whether the waiter has reached the sleeping phase.
    pub fn is_sleeping(&self) -> bool {
        self.yield_until.is_some_and(|u| Instant::now() >= u)
    }
}

/// Polls `done` with backoff until it returns true.
#[inline]
pub fn until(spin: u64, max_sleep_us: u64, done: impl FnMut() -> bool) {
    until_checked(spin, max_sleep_us, 0, done, || {});
}

/// As `until`, and once the waiter sleeps (it has waited for a while), calls `check` every
/// `check_ms` milliseconds (never when 0): a diagnosis of why the wait lasts, which may end the
/// process.
pub fn until_checked(spin: u64, max_sleep_us: u64, check_ms: u64, mut done: impl FnMut() -> bool, mut check: impl FnMut()) {
    if done() {
        return;
    }
    struct Counted(bool);
    impl Drop for Counted {
        fn drop(&mut self) {
            if self.0 {
                note_drove();
                LIB_WAITERS.fetch_sub(1, Relaxed);
            }
        }
    }
    // Counted also where the machine has more PEs than CPUs (spin 0: the waiter yields from
    // its first poll on). Issue 31: uncounted there, every arrival and send completion woke
    // the progress threads of 4 PEs on 2 cores, which took the cores from the PEs moving the
    // traffic (3.3 million context switches in a 9 s barrier run); counted, the 4-PE rows
    // across 2 pretend nodes went barrier_all 75 -> 15 us, broadcast 8 B 16-32 -> 6 us,
    // fcollect 8 B 132 -> 27 us. Not in block mode, whose waits sleep from the first poll on.
    let mut b = Backoff::new(spin, max_sleep_us);
    let countable = !b.block && NET_PROGRESS.load(Relaxed);
    let mut counted = Counted(countable);
    if counted.0 {
        LIB_WAITERS.fetch_add(1, Relaxed);
    }
    let period = Duration::from_millis(check_ms);
    let mut next: Option<Instant> = None;
    while !done() {
        b.snooze();
        let sleeping = b.is_sleeping();
        if counted.0 && sleeping {
            LIB_WAITERS.fetch_sub(1, Relaxed);
            counted.0 = false;
        } else if countable && !counted.0 && !sleeping {
            // Traffic woke the waiter from its sleeping phase back into polling (`snooze`,
            // `BUSY`): it drives the provider again, so the progress thread goes aside again
            // (issue 31: a target whose barrier wait had once slept stayed uncounted, and its
            // progress thread, woken by every arrival, served a g loop 8 us slower).
            LIB_WAITERS.fetch_add(1, Relaxed);
            counted.0 = true;
        }
        if check_ms > 0 && b.is_sleeping() {
            let now = Instant::now();
            let at = *next.get_or_insert(now + period);
            if now >= at {
                check();
                next = Some(now + period);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn only_a_polling_wait_on_the_network_is_counted() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = flag.clone();
        let t0 = Instant::now();
        // Block mode (far more PEs than CPUs: the wait sleeps from its first poll on): never
        // counted, though the network progress is on.
        progress_on(true);
        set_blocking(true);
        let t = std::thread::spawn(move || until(0, 50, || f2.load(Ordering::Acquire)));
        std::thread::sleep(Duration::from_millis(5));
        let in_block_mode = library_waiters();
        flag.store(true, Ordering::Release);
        t.join().unwrap();
        set_blocking(false);
        assert_eq!(in_block_mode, 0, "a wait in block mode is not counted");
        // Spin 0 (more PEs than CPUs: the wait yields from its first poll on): counted while it
        // yields (issue 31: uncounted, the PEs' progress threads were woken by every arrival
        // and took the cores from the PEs moving the traffic).
        // The waiter itself records the count at each poll: watched from this thread, the
        // yielding phase (YIELD_PHASE, then the wait sleeps uncounted) could pass unseen on a
        // loaded machine (the test failed so in a parallel `cargo test`).
        flag.store(false, Ordering::Release);
        let (f1, seen) = (flag.clone(), Arc::new(AtomicUsize::new(0)));
        let s1 = seen.clone();
        let t = std::thread::spawn(move || {
            until(0, 50, || {
                s1.fetch_max(library_waiters(), Ordering::Relaxed);
                f1.load(Ordering::Acquire)
            })
        });
        std::thread::sleep(Duration::from_millis(5));
        flag.store(true, Ordering::Release);
        t.join().unwrap();
        assert!(seen.load(Ordering::Relaxed) > 0, "a yielding network wait (spin 0) was never counted");
        // Spinning: counted while it polls, uncounted at return.
        flag.store(false, Ordering::Release);
        let f3 = flag.clone();
        let t = std::thread::spawn(move || until(u64::MAX, 50, || f3.load(Ordering::Acquire)));
        while library_waiters() == 0 {
            assert!(t0.elapsed() < Duration::from_secs(20), "a spinning network wait was never counted");
            std::thread::yield_now();
        }
        flag.store(true, Ordering::Release);
        t.join().unwrap();
        progress_on(false);
        // (A wait of another module's test that started meanwhile may still be counted.)
        while library_waiters() != 0 {
            assert!(t0.elapsed() < Duration::from_secs(20), "the waiter stayed counted after it returned");
            std::thread::yield_now();
        }
    }

    static TEST_BUSY: AtomicBool = AtomicBool::new(false);
    fn test_step() {}
    fn test_busy() -> bool {
        TEST_BUSY.load(Ordering::Acquire)
    }
    fn test_block(d: Duration) {
        std::thread::sleep(d)
    }

    /// A spinning network wait that reached its sleeping phase is uncounted (its PE's progress
    /// thread serves arrivals); when traffic brings it back to polling (`BUSY`) it is counted
    /// again, so the progress thread goes aside again.
    #[test]
    fn a_waiter_woken_back_to_polling_is_counted_again() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        set_progress(test_step, test_busy, test_block);
        if BUSY.get().map(|f| *f as usize) != Some(test_busy as fn() -> bool as usize) {
            eprintln!("a_waiter_woken_back_to_polling_is_counted_again: another busy test is registered; not run");
            return;
        }
        // Busy at first: the waiter keeps polling and stays counted (no window to miss).
        TEST_BUSY.store(true, Ordering::Release);
        progress_on(true);
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = flag.clone();
        let t0 = Instant::now();
        let t = std::thread::spawn(move || until(10, 50, || f2.load(Ordering::Acquire)));
        let wait_for = |want: usize, what: &str| {
            while library_waiters() != want {
                assert!(t0.elapsed() < Duration::from_secs(20), "{what}");
                std::thread::sleep(Duration::from_micros(200));
            }
        };
        wait_for(1, "the spinning waiter was never counted");
        TEST_BUSY.store(false, Ordering::Release);
        wait_for(0, "the waiter was not uncounted in its sleeping phase");
        TEST_BUSY.store(true, Ordering::Release);
        wait_for(1, "traffic brought the waiter back to polling, but it was not counted again");
        TEST_BUSY.store(false, Ordering::Release);
        flag.store(true, Ordering::Release);
        t.join().unwrap();
        progress_on(false);
        wait_for(0, "the waiter stayed counted after it returned");
    }

    #[test]
    fn comparisons() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        assert!(compare(3, 1, 3) && !compare(3, 1, 4));
        assert!(compare(3, 2, 4) && !compare(3, 2, 3));
        assert!(compare(5, 3, 4) && !compare(4, 3, 4));
        assert!(compare(4, 4, 4) && !compare(3, 4, 4));
        assert!(compare(3, 5, 4) && !compare(4, 5, 4));
        assert!(compare(4, 6, 4) && !compare(5, 6, 4));
        assert!(compare(-1i64, 5, 0));
        assert!(compare(u64::MAX, 3, 0));
    }

    #[test]
    fn backoff_spins_yields_then_sleeps_and_caps() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let mut b = Backoff::new(10, 8);
        for _ in 0..11 {
            b.snooze();
        }
        assert!(b.yield_until.is_some());
        // (Whether it sleeps yet depends on how long the snoozes took: not asserted.)
        std::thread::sleep(YIELD_PHASE);
        assert!(b.is_sleeping());
        for _ in 0..6 {
            b.snooze();
        }
        assert_eq!(b.sleep_us, 8);
    }

    #[test]
    fn block_mode_never_spins_or_yields() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // Chosen only well past one PE per CPU.
        assert!(!block_mode_for(8, 2) && !block_mode_for(4, 1) && !block_mode_for(64, 0));
        assert!(block_mode_for(9, 2) && block_mode_for(5, 1) && block_mode_for(64, 2));
        let mut b = Backoff::with_mode(20000, 100, true);
        assert_eq!(b.spin, 0);
        b.snooze();
        // Asleep from the first snooze, naps doubling from BLOCK_NAP_MIN to BLOCK_NAP_MAX.
        assert!(b.is_sleeping());
        assert_eq!(b.sleep_us, 2 * BLOCK_NAP_MIN.as_micros() as u64);
        for _ in 0..12 {
            b.snooze();
        }
        assert_eq!(b.sleep_us, BLOCK_NAP_MAX.as_micros() as u64);
        // A larger ISHMEM_WAIT_SLEEP_MAX_US stays the cap.
        assert_eq!(Backoff::with_mode(0, 5000, true).max_sleep_us, 5000);
    }

    #[test]
    fn until_sees_a_flag_set_by_another_thread() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = flag.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            f2.store(true, Ordering::Release);
        });
        let t0 = Instant::now();
        until(100, 50, || flag.load(Ordering::Acquire));
        assert!(t0.elapsed() >= Duration::from_millis(15));
        t.join().unwrap();
    }

    #[test]
    fn until_checked_checks_only_a_long_wait() {
        let _one = PROGRESS_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // A wait that ends at once never checks.
        let mut checks = 0;
        until_checked(10, 50, 1, || true, || checks += 1);
        assert_eq!(checks, 0);
        // A long wait checks repeatedly, and the check can end it.
        let n = std::cell::Cell::new(0);
        let mut polls = 0;
        until_checked(
            10,
            50,
            1,
            || {
                polls += 1;
                n.get() >= 3
            },
            || n.set(n.get() + 1),
        );
        assert_eq!(n.get(), 3);
        assert!(polls > 3);
        // check_ms 0: never.
        let mut c = 0;
        let t0 = Instant::now();
        until_checked(10, 50, 0, || t0.elapsed() >= YIELD_PHASE * 3, || c += 1);
        assert_eq!(c, 0);
    }
}
