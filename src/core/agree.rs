//! Agreement between every PE of the job (across nodes too) on what they must do alike:
//! - **settings** (`env::SAME_ON_EVERY_PE`): compared at init through the launcher's exchange
//!   (they travel with the node identities, so no extra round), `settings_differ`;
//! - **symmetric memory calls** (malloc, calloc, align, free, shmem_realloc,
//!   shmem_malloc_with_hints): every PE makes the same calls
//!   in the same order with the same arguments, or the heaps split. Each call is a call of the
//!   world team (it takes the next world count, as barrier_all and the world collectives do),
//!   and its record goes into this PE's world team area, words `team::W_MEMCALL..` by the
//!   parity of the memory call count: `[memory count << 8 | kind, world count, a, b]`. After
//!   the call's barrier each PE reads the next PE's record of this parity (one remote read,
//!   through the network for a PE of another node) and it must equal its own: around the ring
//!   any disagreement is seen by some PE. A PE that is in another call of the world team
//!   (barrier_all, which shares the job barrier) wrote no record of this count, so its record
//!   is two memory calls old. A correct peer cannot have overwritten it yet: its next memory
//!   call of the same parity needs this PE in the barrier between. The call is also recorded
//!   as the world team's entry (`coll::Kind::Memory`), so that a PE in a world collective
//!   that waits long names it (`coll::Team::check_agreement`);
//! - **heap bases** (`common_align`): each PE writes its heap's base address into its world
//!   team area (`team::W_HEAP_BASE`) at init; `ishmem_align` reads every PE's.

use crate::core::coll::{self, Team};
use crate::core::{team, State};
use crate::ffi::fatal;
use std::sync::atomic::Ordering::Relaxed;

/// Which symmetric memory call (the record's kind byte).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u64)]
pub enum MemKind {
    Malloc = 1,
    Calloc = 2,
    Align = 3,
    Free = 4,
    /// shmem_realloc: `a` the old block's heap offset (u64::MAX: NULL), `b` the new size.
    Realloc = 5,
    /// shmem_malloc_with_hints: `a` the size, `b` the hints.
    MallocHints = 6,
}

/// A memory call as its record shows it: `kind` (the low byte of a record's first word), `a`
/// (size; for free the heap offset), `b` (alignment).
pub fn describe(kind: u64, a: u64, b: u64) -> String {
    match kind & 0xff {
        1 => format!("ishmem_malloc(size {a})"),
        2 => format!("ishmem_calloc(total {a} bytes)"),
        3 => format!("ishmem_align(alignment {b}, size {a})"),
        4 if a == u64::MAX => "ishmem_free(NULL)".into(),
        4 => format!("ishmem_free(heap offset {a:#x})"),
        5 if a == u64::MAX => format!("shmem_realloc(NULL, size {b})"),
        5 => format!("shmem_realloc(heap offset {a:#x}, size {b})"),
        6 => format!("shmem_malloc_with_hints(size {a}, hints {b:#x})"),
        _ => "no symmetric memory call".into(),
    }
}

/// Record words of one memory call.
const WORDS: usize = 4;
const _: () = assert!(team::W_MEMCALL + 2 * WORDS <= team::W_SPLIT && team::W_ENTRY + team::ENTRY_WORDS <= team::W_MEMCALL);

/// Records this PE's memory call (`kind`; `a` the size, for free the heap offset; `b` the
/// alignment, 0 for free), waits for every PE (the job barrier) and
/// checks the next PE's record; a difference ends the job naming both calls.
pub fn memory_call(st: &State, func: &str, kind: MemKind, a: u64, b: u64) {
    let mem = st.coll_seq.fetch_add(1, Relaxed) + 1;
    let call = st.next_team_seq(0);
    let w = Team::world(st, func);
    // The world team's entry, for a peer in another world collective that waits long.
    w.record(call, coll::Kind::Memory, a, b);
    let mine = [mem << 8 | kind as u64, call, a, b];
    let at = team::W_MEMCALL + WORDS * (mem & 1) as usize;
    w.write_own(at, &mine);
    st.barrier_as(&w);
    if st.npes < 2 {
        return;
    }
    let j = (st.me + 1) % st.npes;
    let mut theirs = [0u64; WORDS];
    w.read_words(j, at, &mut theirs);
    if theirs != mine {
        mismatch(func, &mine, j, &theirs);
    }
}

#[cold]
fn mismatch(func: &str, mine: &[u64; WORDS], j: usize, theirs: &[u64; WORDS]) -> ! {
    let this = describe(mine[0], mine[2], mine[3]);
    let other = if theirs[0] >> 8 != mine[0] >> 8 {
        format!(
            "PE {j} made another collective call of the world team as call {} (ishmem_barrier_all, ishmem_sync_all or a \
             collective on ISHMEM_TEAM_WORLD), not a symmetric memory call",
            mine[1]
        )
    } else if theirs[1] != mine[1] {
        format!(
            "PE {j} called {} as world team call {}: the PEs made different numbers of world team calls before it",
            describe(theirs[0], theirs[2], theirs[3]),
            theirs[1]
        )
    } else {
        format!("PE {j} called {}", describe(theirs[0], theirs[2], theirs[3]))
    };
    fatal(
        func,
        &format!(
            "collective call mismatch: this PE called {this} as world team call {}, but {other} (symmetric memory calls \
             must be made by every PE in the same order with the same arguments)",
            mine[1]
        ),
    )
}

/// Writes this PE's heap base where `common_align` reads it (init, before the PEs meet).
pub fn publish_heap_base(st: &State, func: &str) {
    Team::world(st, func).write_own(team::W_HEAP_BASE, &[st.heap.base as u64]);
}

/// The largest power of two modulo which every PE's heap base address is the same: an
/// alignment up to it holds at one heap offset on every PE. Reads every PE's base (once per
/// job; the caller caches it).
pub fn common_align(st: &State, func: &str) -> usize {
    let w = Team::world(st, func);
    let mut diff = 0u64;
    for pe in 0..st.npes {
        let mut b = [0u64];
        w.read_words(pe, team::W_HEAP_BASE, &mut b);
        diff |= b[0] ^ st.heap.base as u64;
    }
    // Bases agree modulo 2^k exactly when their lowest differing bit is bit k or above.
    if diff == 0 {
        1usize << (usize::BITS - 1)
    } else {
        1usize << diff.trailing_zeros()
    }
}

/// The settings every PE must share, as this PE sends them (`NAME=value` lines).
pub fn settings_text(same: &[(&'static str, String)]) -> String {
    same.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("\n")
}

/// PE numbers as ranges: `0-1, 4, 6-7`.
fn ranges(pes: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < pes.len() {
        let mut k = i;
        while k + 1 < pes.len() && pes[k + 1] == pes[k] + 1 {
            k += 1;
        }
        out.push(if k == i { pes[i].to_string() } else { format!("{}-{}", pes[i], pes[k]) });
        i = k + 1;
    }
    out.join(", ")
}

/// The first setting whose value differs between PEs (`all`: every PE's `settings_text`),
/// described with the PEs of each value, or `None` when they agree.
pub fn settings_differ(all: &[String]) -> Option<String> {
    let parsed: Vec<Vec<(&str, &str)>> = all.iter().map(|t| t.lines().filter_map(|l| l.split_once('=')).collect()).collect();
    let names: Vec<&str> = parsed.first()?.iter().map(|(n, _)| *n).collect();
    for name in names {
        // Values in the order their lowest PE has them, each with its PEs.
        let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
        for (pe, p) in parsed.iter().enumerate() {
            let v = p.iter().find(|(n, _)| *n == name).map_or("(not sent: another version of libishmem?)", |(_, v)| *v);
            match groups.iter_mut().find(|(g, _)| *g == v) {
                Some((_, pes)) => pes.push(pe),
                None => groups.push((v, vec![pe])),
            }
        }
        if groups.len() > 1 {
            let list: Vec<String> =
                groups.iter().map(|(v, pes)| format!("{v} on PE{} {}", if pes.len() > 1 { "s" } else { "" }, ranges(pes))).collect();
            return Some(format!("{name} differs between PEs: {}; every PE must use the same value", list.join(", ")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_differ_are_named_with_their_pes() {
        let a = "ISHMEM_TEAMS_MAX=64\nISHMEM_COLL_SMALL_MAX=4096".to_string();
        let b = "ISHMEM_TEAMS_MAX=32\nISHMEM_COLL_SMALL_MAX=4096".to_string();
        assert_eq!(settings_differ(&[a.clone(), a.clone(), a.clone()]), None);
        assert_eq!(
            settings_differ(&[a.clone(), a.clone(), b.clone(), b.clone()]).unwrap(),
            "ISHMEM_TEAMS_MAX differs between PEs: 64 on PEs 0-1, 32 on PEs 2-3; every PE must use the same value"
        );
        assert_eq!(
            settings_differ(&[a.clone(), b.clone(), a.clone(), a.clone(), b.clone()]).unwrap(),
            "ISHMEM_TEAMS_MAX differs between PEs: 64 on PEs 0, 2-3, 32 on PEs 1, 4; every PE must use the same value"
        );
        let c = "ISHMEM_TEAMS_MAX=64\nISHMEM_COLL_SMALL_MAX=0".to_string();
        assert_eq!(
            settings_differ(&[a.clone(), c]).unwrap(),
            "ISHMEM_COLL_SMALL_MAX differs between PEs: 4096 on PE 0, 0 on PE 1; every PE must use the same value"
        );
        assert!(settings_differ(&[a, String::new()]).unwrap().contains("not sent"));
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2, 5, 7-8");
    }

    #[test]
    fn memory_calls_are_described() {
        assert_eq!(describe(MemKind::Malloc as u64, 64, 1), "ishmem_malloc(size 64)");
        assert_eq!(describe(5 << 8 | MemKind::Align as u64, 64, 4096), "ishmem_align(alignment 4096, size 64)");
        assert_eq!(describe(MemKind::Free as u64, u64::MAX, 0), "ishmem_free(NULL)");
        assert_eq!(describe(MemKind::Realloc as u64, 0x40, 128), "shmem_realloc(heap offset 0x40, size 128)");
        assert_eq!(describe(MemKind::MallocHints as u64, 64, 3), "shmem_malloc_with_hints(size 64, hints 0x3)");
        assert_eq!(describe(0, 0, 0), "no symmetric memory call");
    }
}
