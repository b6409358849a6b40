//! Fair scanning for `test_any` and `wait_until_any` (and their `_vector` forms): each scan
//! of an ivar array starts after the index the previous call on the same array returned, so a
//! program that calls them repeatedly while several ivars satisfy the condition sees every
//! one of them in turn (as Sandia OpenSHMEM does; the OpenSHMEM specification's example
//! relies on it) instead of the first one for ever.
//!
//! The memory is per thread, keyed by the array's address: a small table of the last
//! `SLOTS` arrays used, replaced round robin. An array pushed out starts again at index 0,
//! which is still a correct answer (any satisfying index is); only the rotation restarts.
//! Owns nothing else; it never touches the ivars.

use std::cell::RefCell;

/// How many arrays per thread keep their position.
const SLOTS: usize = 16;

struct Table {
    /// (array address, index to start the next scan at); address 0: empty.
    entries: [(usize, usize); SLOTS],
    victim: usize,
}

thread_local! {
    static TABLE: RefCell<Table> = const { RefCell::new(Table { entries: [(0, 0); SLOTS], victim: 0 }) };
}

/// Where the next scan of the `n` ivars at `addr` starts (in `0..n`; 0 for `n == 0`).
pub fn start(addr: usize, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    TABLE.with(|t| t.borrow().entries.iter().find(|e| e.0 == addr).map_or(0, |e| e.1 % n))
}

/// Records that a scan of the ivars at `addr` returned index `i`: the next scan starts at
/// `i + 1`.
pub fn returned(addr: usize, i: usize) {
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(e) = t.entries.iter_mut().find(|e| e.0 == addr) {
            e.1 = i.wrapping_add(1);
            return;
        }
        let v = t.victim;
        t.entries[v] = (addr, i.wrapping_add(1));
        t.victim = (v + 1) % SLOTS;
    })
}

/// The first index of `0..n`, in rotated order from `start(addr, n)`, for which `hit` holds;
/// recorded with `returned`.
pub fn scan(addr: usize, n: usize, mut hit: impl FnMut(usize) -> bool) -> Option<usize> {
    let s = start(addr, n);
    let found = (s..n).chain(0..s).find(|&i| hit(i))?;
    returned(addr, found);
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_satisfying_index_in_turn() {
        let a = 0x1000;
        let got: Vec<usize> = (0..10).map(|_| scan(a, 4, |_| true).unwrap()).collect();
        assert_eq!(got, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]);
        // Only some hold: they alternate.
        let b = 0x2000;
        let got: Vec<usize> = (0..6).map(|_| scan(b, 8, |i| i == 2 || i == 5).unwrap()).collect();
        assert_eq!(got, [2, 5, 2, 5, 2, 5]);
        // None holds: nothing recorded, the position stays.
        assert_eq!(scan(b, 8, |_| false), None);
        assert_eq!(start(b, 8), 6);
        assert_eq!(scan(0x3000, 0, |_| true), None);
    }

    #[test]
    fn arrays_are_independent_and_old_ones_restart() {
        let (a, b) = (0x10_000, 0x20_000);
        assert_eq!(scan(a, 3, |_| true), Some(0));
        assert_eq!(scan(b, 3, |_| true), Some(0));
        assert_eq!(scan(a, 3, |_| true), Some(1));
        assert_eq!(scan(b, 3, |_| true), Some(1));
        // A shorter count for the same array wraps the position.
        returned(a, 6);
        assert_eq!(start(a, 4), 3);
        // SLOTS other arrays push a out: it restarts at 0.
        for k in 1..=SLOTS {
            scan(a + k * 64, 2, |_| true);
        }
        assert_eq!(start(a, 3), 0);
    }
}
