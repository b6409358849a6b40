//! Backoff for every idle wait (wait_until, signal_wait_until, barriers): spin for a number of
//! polls, then yield the CPU for a while (`YIELD_PHASE`: on a node with more PEs than cores
//! this hands the core to the PE being waited for), then sleep with a doubling period capped
//! by `ISHMEM_WAIT_SLEEP_MAX_US`, so an idle PE does not burn a core for ever.

use std::time::{Duration, Instant};

/// How long a waiter yields before it starts sleeping.
const YIELD_PHASE: Duration = Duration::from_millis(2);

/// One waiter's backoff state.
pub struct Backoff {
    polls: u64,
    spin: u64,
    yield_until: Option<Instant>,
    sleep_us: u64,
    max_sleep_us: u64,
}

impl Backoff {
    pub fn new(spin: u64, max_sleep_us: u64) -> Backoff {
        Backoff { polls: 0, spin, yield_until: None, sleep_us: 1, max_sleep_us: max_sleep_us.max(1) }
    }

    /// Waits a little before the next poll.
    #[inline]
    pub fn snooze(&mut self) {
        self.polls += 1;
        if self.polls <= self.spin {
            std::hint::spin_loop();
            return;
        }
        let now = Instant::now();
        let until = *self.yield_until.get_or_insert(now + YIELD_PHASE);
        if now < until {
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
pub fn until(spin: u64, max_sleep_us: u64, mut done: impl FnMut() -> bool) {
    let mut b = Backoff::new(spin, max_sleep_us);
    while !done() {
        b.snooze();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn backoff_spins_yields_then_sleeps_and_caps() {
        let mut b = Backoff::new(10, 8);
        for _ in 0..11 {
            b.snooze();
        }
        assert!(b.yield_until.is_some());
        assert!(!b.is_sleeping());
        std::thread::sleep(YIELD_PHASE);
        assert!(b.is_sleeping());
        for _ in 0..6 {
            b.snooze();
        }
        assert_eq!(b.sleep_us, 8);
    }

    #[test]
    fn until_sees_a_flag_set_by_another_thread() {
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
}
