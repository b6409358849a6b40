//! Call agreement: every PE of a team must call the same collectives in the same order with
//! the same sizes and root. At entry a PE records its call in its team area (`enter`), and the
//! checks described in the parent module (push signatures, `check_neighbour`,
//! `check_agreement`) compare the records.

use super::*;

/// The head of a PE's entry record (`team::W_ENTRY`): `count << 8 | kind`, two arguments, and
/// a hash of the function's name (`name_hash`); the name itself follows in the team area.
pub type Head = [u64; HEAD_WORDS];
pub(super) const HEAD_WORDS: usize = 4;
/// Bytes of the name that follows the head (NUL-padded; longer names are cut).
pub(super) const NAME_BYTES: usize = 8 * (team::ENTRY_WORDS - HEAD_WORDS);

/// One round of a fast 64-bit mix (multiply and xor-shift), for hashes compared only
/// between PEs of one job.
pub(super) fn mix(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

/// A hash of a function's name (its bytes as little-endian words).
pub(super) fn name_hash(name: &str) -> u64 {
    name_words(name).iter().fold(0x243f_6a88_85a3_08d3, |h, &w| mix(h, w))
}

/// Words of an entry record after the head: a function name, NUL-padded, cut to
/// `NAME_BYTES - 1` bytes.
pub(super) type NameWords = [u64; team::ENTRY_WORDS - HEAD_WORDS];

/// `name` as the words of an entry record.
pub(super) fn name_words(name: &str) -> NameWords {
    let mut words: NameWords = [0; team::ENTRY_WORDS - HEAD_WORDS];
    let name = name.as_bytes();
    for (w, c) in words.iter_mut().zip(name[..name.len().min(NAME_BYTES - 1)].chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        *w = u64::from_ne_bytes(b);
    }
    words
}

/// The call a whole entry record (head and name words) describes, as `describe_call`.
pub(super) fn describe_record(e: &[u64; team::ENTRY_WORDS]) -> String {
    let bytes: Vec<u8> = e[HEAD_WORDS..].iter().flat_map(|w| w.to_ne_bytes()).take_while(|&b| b != 0).collect();
    let head: Head = e[..HEAD_WORDS].try_into().unwrap_or_default();
    describe_call(&head, &String::from_utf8_lossy(&bytes))
}

/// The words of a head that every PE of one correct call has alike: the kind, and by kind
/// the arguments (and for reductions and scans the function, which names type and operator).
pub(super) fn essential(e: &Head) -> &[u64] {
    match Kind::from_word(e[0]) {
        Some(Kind::Sync | Kind::Collect | Kind::Destroy) => &[],
        Some(Kind::Broadcast | Kind::Split | Kind::Alltoalls) => &e[1..3],
        Some(Kind::Fcollect | Kind::Alltoall | Kind::Split2d) => &e[1..2],
        Some(Kind::Reduce | Kind::Scan | Kind::Memory) => &e[1..4],
        None => &e[1..],
    }
}

/// Whether two PEs' heads of the same collective call can belong to one correct call.
pub(super) fn heads_agree(x: &Head, y: &Head) -> bool {
    x[0] & 0xff == y[0] & 0xff && essential(x) == essential(y)
}

/// What the checks of one long wait remember (`Team::check_agreement`): the first sighting of
/// a disagreement (`suspect`, reported when seen again), and how many checks ran.
#[derive(Default)]
pub struct Watch {
    suspect: Option<(usize, Head)>,
    checks: u64,
}

/// Checks of one wait after which it warns where the team's PEs are (60 s at the default
/// ISHMEM_COLL_CHECK_MS of 100).
pub(super) const HANG_WARN_CHECKS: u64 = 600;

/// Teams of up to this many PEs check every member in a long wait (`agreement_reads`).
const AGREE_ALL_PES: usize = 8;

/// Bits of a push flag that carry the call's signature (the count is above them).
pub(super) const SIG_BITS: u32 = 24;
pub(super) const SIG_MASK: u64 = (1 << SIG_BITS) - 1;

/// A 24-bit hash of the kind and `essential(e)`, carried in the push flags so that a receiver
/// notices a sender in a different call at no cost.
pub(super) fn signature(e: &Head) -> u64 {
    let h = essential(e).iter().fold(mix(0, e[0] & 0xff), |h, &w| mix(h, w));
    (h ^ (h >> 24) ^ (h >> 48)) & SIG_MASK
}

/// The call a record describes, e.g. `ishmem_broadcastmem (64 bytes from root 0)`.
pub(super) fn describe_call(e: &Head, name: &str) -> String {
    let args = match Kind::from_word(e[0]) {
        Some(Kind::Broadcast) => format!(" ({} bytes from root {})", e[1], e[2]),
        Some(Kind::Fcollect) => format!(" ({} bytes per PE)", e[1]),
        Some(Kind::Alltoall) => format!(" ({} bytes to each PE)", e[1]),
        Some(Kind::Alltoalls) => {
            format!(" ({} bytes to each PE, dest stride {}, source stride {})", e[1], e[2] as u32 as i32, (e[2] >> 32) as u32 as i32)
        }
        Some(Kind::Reduce | Kind::Scan) => format!(" ({} bytes)", e[1]),
        Some(Kind::Split) => format!(" (start {}, stride {}, size {})", e[1] as u32 as i32, (e[1] >> 32) as u32 as i32, e[2]),
        Some(Kind::Split2d) => format!(" (xrange {})", e[1]),
        Some(Kind::Memory) if e[2] == 0 => format!(" (heap offset {:#x})", e[1]),
        Some(Kind::Memory) if e[2] == 1 => format!(" (size {})", e[1]),
        Some(Kind::Memory) => format!(" (alignment {}, size {})", e[2], e[1]),
        Some(Kind::Sync | Kind::Collect | Kind::Destroy) => String::new(),
        None => format!(" (unknown record {:#x})", e[0]),
    };
    format!("{name}{args}")
}

impl<'a> Team<'a> {
    // ---------------------------------------------------------------- call agreement

    /// Records that this PE enters the next host collective of the team (`kind` with
    /// arguments `a`, `b`, and the function's name): `entry` and `sig` here at once; the team
    /// area copy, which peers read, is written before this PE first syncs or waits in the call
    /// (`publish`, off the path of its first stores).
    pub fn enter(&self, kind: Kind, a: u64, b: u64) {
        let seq = self.st.next_team_seq(self.handle);
        self.record(seq, kind, a, b);
    }

    /// Identifies the function name (a static string: address and length; never 0).
    pub(super) fn name_key(&self) -> usize {
        self.func.as_ptr() as usize ^ self.func.len().rotate_right(16)
    }

    /// Makes this PE's record of call `seq` (`entry`, with its `sig`).
    pub fn record(&self, seq: u64, kind: Kind, a: u64, b: u64) {
        // The name's hash, cached per team slot with the name it is of (set by `publish`: the
        // same function is usually called again).
        let h = if self.st.team_name[self.handle].load(Relaxed) == self.name_key() {
            self.st.team_name_hash[self.handle].load(Relaxed)
        } else {
            name_hash(self.func)
        };
        let e: Head = [seq << 8 | kind as u64, a, b, h];
        self.entry.set(e);
        self.sig.set(signature(&e));
        self.published.set(false);
    }

    /// Writes this PE's record into its team area: the head, and the name where it changed.
    pub(super) fn publish(&self) {
        let e = self.entry.get();
        let at = self.word(team::W_ENTRY);
        let (name_at, hash_of) = (&self.st.team_name[self.handle], &self.st.team_name_hash[self.handle]);
        let same_name = name_at.load(Relaxed) == self.name_key();
        let mut rec = [0u64; team::ENTRY_WORDS];
        rec[..HEAD_WORDS].copy_from_slice(&e);
        if !same_name || self.gpu.is_some() {
            rec[HEAD_WORDS..].copy_from_slice(&name_words(self.func));
        }
        match self.gpu {
            // SAFETY: at is this PE's entry record in its team area of the GPU heap (ENTRY_WORDS
            // words, written only by this PE); rec is a local of that size.
            Some(g) => unsafe { g.copy(self.func, at, rec.as_ptr() as usize, size_of_val(&rec)) },
            None => {
                let words = if same_name { HEAD_WORDS } else { team::ENTRY_WORDS };
                for (i, v) in rec.iter().enumerate().take(words).skip(1) {
                    // SAFETY: aligned words of this PE's team area, written only by this PE.
                    unsafe { AtomicU64::from_ptr((at + 8 * i) as *mut u64) }.store(*v, Relaxed);
                }
                // SAFETY: as above.
                unsafe { AtomicU64::from_ptr(at as *mut u64) }.store(e[0], Release);
            }
        }
        if !same_name {
            hash_of.store(e[3], Relaxed);
            name_at.store(self.name_key(), Relaxed);
        }
        self.published.set(true);
    }

    /// Copies `n` words of team PE `i`'s entry record into `out`.
    pub(super) fn read_entry(&self, i: usize, out: &mut [u64]) {
        self.read_words(i, team::W_ENTRY, out)
    }

    /// Writes `vals` into this PE's team area from word `w` (Release; peers read them after
    /// a sync, `read_words`).
    pub fn write_own(&self, w: usize, vals: &[u64]) {
        let at = self.word(w);
        match self.gpu {
            // SAFETY: words w.. of this PE's team area on the GPU heap, written only by this PE;
            // vals is readable for its length.
            Some(g) => unsafe { g.copy(self.func, at, vals.as_ptr() as usize, size_of_val(vals)) },
            None => {
                for (k, v) in vals.iter().enumerate() {
                    // SAFETY: aligned words of this PE's team area, written only by this PE.
                    unsafe { AtomicU64::from_ptr((at + 8 * k) as *mut u64) }.store(*v, Release);
                }
            }
        }
    }

    /// Copies words `w..w + out.len()` of team PE `i`'s team area into `out` (through the
    /// network for a PE of another node).
    pub fn read_words(&self, i: usize, w: usize, out: &mut [u64]) {
        if let Some((n, pe)) = self.net_member(i) {
            let at = self.st.remote_at(self.func, "team area", self.word(w), 8 * out.len());
            // SAFETY: out is writable for its length.
            unsafe { n.get(self.func, pe, out.as_mut_ptr().cast(), 8 * out.len(), at) };
            return;
        }
        let r = self.st.remote(self.func, "team area", self.word(w), 8 * out.len(), self.d.world(i));
        match self.gpu {
            // SAFETY: out is writable for its length; r..r + 8 * out.len() is PE i's team area
            // as mapped here (checked by `remote`).
            Some(g) => unsafe { g.copy(self.func, out.as_mut_ptr() as usize, r, 8 * out.len()) },
            None => {
                for (k, v) in out.iter_mut().enumerate() {
                    // SAFETY: aligned words of PE i's team area as mapped here.
                    *v = unsafe { AtomicU64::from_ptr((r + 8 * k) as *mut u64) }.load(Acquire);
                }
            }
        }
    }

    /// Team PE `i`'s record head.
    pub(super) fn head_of(&self, i: usize) -> Head {
        let mut e = [0; HEAD_WORDS];
        self.read_entry(i, &mut e);
        e
    }

    /// Called now and then while this PE waits long in a collective: ends the job with an
    /// error when a team PE is in the same collective call (by count) with arguments that
    /// cannot belong to it, seen twice in a row (`suspect` keeps the first sighting, so a
    /// record being rewritten, or a peer just past the call, is not taken for a mismatch).
    pub fn check_agreement(&self, watch: &mut Watch) {
        if !self.published.get() {
            self.publish();
        }
        let own = self.entry.get();
        let seq = own[0] >> 8;
        if seq == 0 {
            return;
        }
        watch.checks += 1;
        if watch.checks == HANG_WARN_CHECKS {
            self.report_wait();
        }
        let suspect = &mut watch.suspect;
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            if !self.agreement_reads(k, j) {
                continue;
            }
            let theirs = self.head_of(j);
            if theirs[0] >> 8 != seq || heads_agree(&own, &theirs) {
                continue;
            }
            if *suspect == Some((j, theirs)) {
                self.mismatch(j);
            }
            *suspect = Some((j, theirs));
            return;
        }
        *suspect = None;
    }

    /// Whether `check_agreement` reads team PE `j`, `k` places after this PE: every member in
    /// teams of up to `AGREE_ALL_PES` PEs, and the members of this node (shared memory); in
    /// larger teams, members of other nodes only at distances 2^i after or before this PE, so a
    /// long wait costs O(log n) network reads and connections per check instead of one per
    /// member (issue 29: at 16 PEs on 8 loaded nodes every waiting PE connected to every other).
    /// The PEs of a team so read each other in a connected graph (distance 1 alone is a ring),
    /// so two PEs in different calls of one count are still found by a PE between them.
    fn agreement_reads(&self, k: usize, j: usize) -> bool {
        self.n <= AGREE_ALL_PES || self.net_member(j).is_none() || k.is_power_of_two() || (self.n - k).is_power_of_two()
    }

    /// Team PE `i`'s last recorded call, described (`call 7, ishmem_team_sync`).
    pub(super) fn describe_member(&self, i: usize) -> String {
        if i == self.me {
            let own = self.entry.get();
            return format!("call {}, {}", own[0] >> 8, describe_call(&own, self.func));
        }
        let mut e = [0u64; team::ENTRY_WORDS];
        self.read_entry(i, &mut e);
        if e[0] >> 8 == 0 {
            return "no host collective on this team yet".into();
        }
        format!("call {}, {}", e[0] >> 8, describe_record(&e))
    }

    /// A warning, once per long wait (`HANG_WARN_CHECKS` checks): where every team PE is, so
    /// that a program whose PEs call different numbers of collectives (which no count can
    /// match up) shows why it waits.
    #[cold]
    pub(super) fn report_wait(&self) {
        const SHOW: usize = 16;
        let list: Vec<String> = (0..self.n.min(SHOW)).map(|i| format!("team PE {i}: {}", self.describe_member(i))).collect();
        let more = if self.n > SHOW { format!("; {} more PEs not shown", self.n - SHOW) } else { String::new() };
        crate::ffi::warn(
            self.func,
            &format!(
                "still waiting after {} ms in collective call {} on team {}; the team's PEs last recorded: {}{more} \
                 (a PE in a barrier records only once it waits long; every PE must call the same collectives in the same order)",
                HANG_WARN_CHECKS * self.st.cfg.coll_check_ms,
                self.entry.get()[0] >> 8,
                self.handle,
                list.join("; ")
            ),
        );
    }

    /// Ends the job naming this PE's call and team PE `j`'s (which cannot be one call).
    #[cold]
    pub(super) fn mismatch(&self, j: usize) -> ! {
        let own = self.entry.get();
        // A peer writes its record before its first wait in the call, which comes right
        // after the stores that revealed the mismatch: give it a moment to appear.
        let t0 = std::time::Instant::now();
        let mut theirs = [0u64; team::ENTRY_WORDS];
        loop {
            self.read_entry(j, &mut theirs);
            if theirs[0] >> 8 >= own[0] >> 8 || t0.elapsed() > std::time::Duration::from_secs(1) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        fatal(
            self.func,
            &format!(
                "collective call {} on team {} differs between PEs: this PE (team PE {}) is in {}, team PE {j} in {}; \
                 every PE of a team must call the same collectives in the same order with the same sizes, root and split arguments",
                own[0] >> 8,
                self.handle,
                self.me,
                describe_call(&own, self.func),
                describe_record(&theirs)
            ),
        )
    }

    /// After the first sync of a synchronized collective, when every member has entered its
    /// call: the next team PE's call must agree with this PE's (one remote read of a cache
    /// line; around the ring every pair of neighbours is compared, so any disagreement is
    /// found by one PE).
    pub(super) fn check_neighbour(&self) {
        if self.n < 2 {
            return;
        }
        let j = (self.me + 1) % self.n;
        if !heads_agree(&self.entry.get(), &self.head_of(j)) {
            self.mismatch(j);
        }
    }

    /// A push flag or announcement `got` from team PE `j` for push count `c`: when it is for
    /// call `c` (not yet a later one), its signature must be this PE's.
    #[inline]
    pub(super) fn check_tag(&self, got: u64, c: u64, j: usize) {
        if got >> SIG_BITS == c && got & SIG_MASK != self.sig.get() {
            self.mismatch(j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: u64, kind: Kind, a: u64, b: u64, func: &str) -> Head {
        [seq << 8 | kind as u64, a, b, name_hash(func)]
    }

    #[test]
    fn call_agreement_compares_what_must_agree() {
        let bc = |n, root| head(3, Kind::Broadcast, n, root, "ishmem_broadcastmem");
        assert!(heads_agree(&bc(64, 0), &bc(64, 0)));
        assert!(!heads_agree(&bc(64, 0), &bc(32, 0)));
        assert!(!heads_agree(&bc(64, 0), &bc(64, 1)));
        // the typed and mem spellings of one broadcast agree; the count is not compared
        assert!(heads_agree(&bc(64, 0), &head(9, Kind::Broadcast, 64, 0, "ishmem_long_broadcast")));
        // reductions: the function (type and operator) too
        let int_sum = head(1, Kind::Reduce, 16, 0, "ishmem_int_sum_reduce");
        assert!(heads_agree(&int_sum, &head(1, Kind::Reduce, 16, 0, "ishmem_int_sum_reduce")));
        assert!(!heads_agree(&int_sum, &head(1, Kind::Reduce, 16, 0, "ishmem_float_sum_reduce")));
        assert!(!heads_agree(&int_sum, &head(1, Kind::Scan, 16, 0, "ishmem_int_sum_reduce")));
        // syncs of any spelling agree, collects whatever their sizes, but not with each other
        assert!(heads_agree(&head(1, Kind::Sync, 0, 0, "ishmem_barrier_all"), &head(1, Kind::Sync, 0, 0, "ishmem_team_sync")));
        assert!(heads_agree(&head(1, Kind::Collect, 5, 0, "a"), &head(1, Kind::Collect, 7, 0, "a")));
        assert!(!heads_agree(&head(1, Kind::Sync, 0, 0, "a"), &head(1, Kind::Collect, 0, 0, "a")));
    }

    #[test]
    fn signatures_follow_agreement_and_fit_their_bits() {
        let calls = [
            head(1, Kind::Broadcast, 64, 0, "f"),
            head(1, Kind::Broadcast, 65, 0, "f"),
            head(1, Kind::Broadcast, 64, 1, "f"),
            head(1, Kind::Fcollect, 64, 0, "f"),
            head(1, Kind::Alltoall, 64, 0, "f"),
            head(1, Kind::Reduce, 64, 0, "ishmem_int_sum_reduce"),
            head(1, Kind::Reduce, 64, 0, "ishmem_int_max_reduce"),
            head(1, Kind::Scan, 64, 0, "ishmem_int_sum_reduce"),
            head(1, Kind::Sync, 0, 0, "f"),
            head(1, Kind::Collect, 0, 0, "f"),
        ];
        for (i, x) in calls.iter().enumerate() {
            assert!(signature(x) <= SIG_MASK);
            for y in &calls[i + 1..] {
                assert_ne!(signature(x), signature(y), "{x:?} {y:?}");
            }
        }
        // agreeing heads have equal signatures (counts and unused words do not enter)
        assert_eq!(signature(&head(1, Kind::Fcollect, 8, 0, "a")), signature(&head(7, Kind::Fcollect, 8, 99, "b")));
    }

    #[test]
    fn calls_are_described_with_their_arguments() {
        assert_eq!(
            describe_call(&head(1, Kind::Broadcast, 64, 2, ""), "ishmem_broadcastmem"),
            "ishmem_broadcastmem (64 bytes from root 2)"
        );
        assert_eq!(describe_call(&head(1, Kind::Fcollect, 8, 0, ""), "f"), "f (8 bytes per PE)");
        let split = head(1, Kind::Split, (-2i32 as u32 as u64) << 32 | 1, 3, "");
        assert_eq!(describe_call(&split, "s"), "s (start 1, stride -2, size 3)");
        assert_eq!(describe_call(&head(1, Kind::Sync, 0, 0, ""), "ishmem_barrier_all"), "ishmem_barrier_all");
    }
}
