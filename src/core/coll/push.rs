//! The push collectives (no team sync): counts and flags per push class, the scratch slots,
//! and the push forms of broadcast, fcollect, alltoall, collect and the reductions (the
//! contract is in the parent module's documentation).

use super::*;

impl<'a> Team<'a> {
    // ---------------------------------------------------------------- push collectives

    /// Whether a collective of `nb` bytes per PE takes the push path (see the contract): the
    /// CPU backend (peers' memory is mapped here, or reached by network puts), 2..=PUSH_PES
    /// PEs, at most ISHMEM_COLL_SMALL_MAX bytes (not 0). A team across nodes of at most
    /// `NET_PUSH_PES` PEs pushes blocks of any size: the alternative, two syncs around pulls,
    /// costs two network latencies and a round trip more, where a push costs the member's
    /// announcement. Every PE decides alike.
    pub(super) fn push_ok(&self, nb: usize) -> bool {
        let max = self.st.cfg.coll_small_max;
        self.gpu.is_none() && (2..=team::PUSH_PES).contains(&self.n) && max > 0 && (nb <= max || self.spans && self.n <= NET_PUSH_PES)
    }

    /// Stores `v` into this PE's own-use word `w` of the team area (read back by `load`).
    pub(super) fn set_own(&self, w: usize, v: u64) {
        // SAFETY: an aligned word of this PE's team area, written only by this PE.
        unsafe { AtomicU64::from_ptr(self.word(w) as *mut u64) }.store(v, Relaxed);
    }

    /// Starts a push collective of `class`: its count on this PE (1, 2, ...).
    pub(super) fn push_begin(&self, class: usize) -> u64 {
        let w = team::W_PUSH_COUNT + class;
        let c = self.load(w) + 1;
        // SAFETY: an aligned word of this PE's team area, written only by this PE.
        unsafe { AtomicU64::from_ptr(self.word(w) as *mut u64) }.store(c, Relaxed);
        c
    }

    /// The flag word of (`class`, sender `j`).
    pub(super) fn flag_word(class: usize, j: usize) -> usize {
        team::W_PUSH_FLAGS + class * team::PUSH_PES + j
    }

    /// The word of (`class`, member `j`) where `j` announces its entry into a push collective.
    fn ready_word(class: usize, j: usize) -> usize {
        team::W_PUSH_READY + class * team::PUSH_PES + j
    }

    /// The value of push flags and announcements of count `c`: the count above the call's
    /// signature (values still only grow).
    pub(super) fn tag(&self, c: u64) -> u64 {
        c << SIG_BITS | self.sig.get()
    }

    /// Waits until this PE's word `w`, written by team PE `j`, reaches count `c`, and checks
    /// its signature.
    pub(super) fn wait_tag(&self, w: usize, c: u64, j: usize) {
        self.wait_tag_from(w, c, c, j);
    }

    /// Waits until word `w` (written by team PE `j`) reaches count `need`; when it already
    /// shows count `c` (this call), checks its signature.
    pub(super) fn wait_tag_from(&self, w: usize, need: u64, c: u64, j: usize) {
        let mut got = 0;
        self.wait(|| {
            got = self.load(w);
            got >= need << SIG_BITS
        });
        self.check_tag(got, c, j);
    }

    /// Announces to team PE `j` that this PE entered collective `c` of `class` (its dest may be
    /// written now).
    pub(super) fn post_ready(&self, class: usize, j: usize, c: u64) {
        self.store_at(Self::ready_word(class, self.me), j, self.tag(c));
    }

    /// Waits until team PE `j` entered collective `c` of `class`.
    pub(super) fn wait_ready(&self, class: usize, j: usize, c: u64) {
        self.wait_tag(Self::ready_word(class, j), c, j);
    }

    /// Waits until the flag of every other member in `class` reaches count `c` (Acquire), and
    /// checks their signatures.
    pub(super) fn wait_all(&self, class: usize, c: u64) {
        let mut j = 0;
        self.wait(|| {
            while j < self.n {
                if j != self.me {
                    let got = self.load(Self::flag_word(class, j));
                    if got < c << SIG_BITS {
                        return false;
                    }
                    self.check_tag(got, c, j);
                }
                j += 1;
            }
            true
        });
    }

    /// With a ring (`self.ring` nonzero): the bytes of the all-send scratch after it, the same
    /// for every team slot's block (`BcastRings::scratch`).
    fn net_scratch(&self) -> usize {
        self.st.bcast_rings.map_or(0, |r| r.scratch)
    }

    /// Bytes of one scratch slot of the all-send class (`push_slot_bytes` of the team area's
    /// scratch or, where the team's slot has a block across nodes, of its larger scratch).
    pub(super) fn slot_bytes(&self) -> usize {
        if self.ring != 0 {
            #[cfg(not(ishmem_mutation = "net_scratch_fixed"))]
            let scratch = self.net_scratch();
            // The mutant: the largest scratch whatever the heap gave the block.
            #[cfg(ishmem_mutation = "net_scratch_fixed")]
            let scratch = team::NET_SCRATCH_MAX;
            push_slot_bytes_of(scratch, self.n)
        } else {
            push_slot_bytes(self.n)
        }
    }

    /// The address of scratch slot (parity of `c`, sender `j`): in the team area, or in the
    /// block across nodes after the broadcast ring (every PE of the team has one or none).
    pub(super) fn slot_at(&self, c: u64, j: usize) -> usize {
        let base = if self.ring != 0 { self.ring + team::NET_RING_BYTES } else { self.area + team::PUSH_SCRATCH };
        base + ((c as usize & 1) * self.n + j) * self.slot_bytes()
    }

    /// Broadcast by the root's pushes; each member announces its entry to the root, waits for
    /// the root's flag of the count. Blocks up to `BCAST_SLOT` bytes go to the member's
    /// broadcast slot of the count's parity (not its dest), as soon as the member entered the
    /// previous broadcast (then it has read the slot's last contents, of count c-2), and the
    /// member copies the slot into its dest: in a run of broadcasts the root stays up to one
    /// call ahead, so a member waits for one transfer per call instead of a round trip.
    /// Larger blocks go straight into the member's `dst` once it entered this call.
    ///
    /// Across nodes, where the member's announcement takes a network latency, blocks of at
    /// most `RING_SLOT` bytes go to a ring of `RING` slots laid over the two parity slots
    /// instead (slot c mod RING): the root writes slot c once the member entered count
    /// c-RING+1 (so it has read the slot's last contents), and stays up to RING-1 calls ahead.
    /// A ring slot and a parity slot overlap, so each PE records the last count that used
    /// the ring and the last that used a parity slot (`W_BCAST_RING`, `W_BCAST_PAR`: every PE
    /// sees the same sequence of sizes), and the root also waits until the member entered the
    /// count after the last use of the other kind. Where the team's slot has a broadcast ring
    /// of its own (`State::bcast_rings`: jobs across nodes on the CPU heap, the first team
    /// slots), blocks up to 42 KiB go to that ring instead, in 3 to `RING` slots cut to the
    /// block's size (`ring_slot`), as a flag-in-data message up to `ll_max` (8 KiB).
    ///
    /// # Safety
    /// As `broadcast`.
    pub(super) unsafe fn broadcast_push(&self, dst: usize, src: usize, nb: usize, root: usize) {
        let c = self.push_begin(team::PUSH_BCAST);
        let fw = Self::flag_word(team::PUSH_BCAST, root);
        let base = self.area + team::BCAST_SCRATCH;
        let ring = self.spans && nb <= RING_SLOT;
        // The slot, the count each member must have entered before the root writes it, the
        // slot's bytes, and the window of counts in which a member announces at least twice.
        let (slot, need, slot_len, window) = if self.ring != 0 {
            self.ring_slot(c, nb)
        } else if ring {
            let need = c.saturating_sub(RING as u64 - 1).max(self.load(team::W_BCAST_PAR) + 1);
            self.set_own(team::W_BCAST_RING, c);
            (Some(base + (c as usize % RING) * RING_SLOT), need, RING_SLOT, RING)
        } else if nb <= team::BCAST_SLOT {
            let need = (c - 1).max(if self.spans { self.load(team::W_BCAST_RING) + 1 } else { 0 });
            if self.spans {
                self.set_own(team::W_BCAST_PAR, c);
            }
            (Some(base + (c as usize & 1) * team::BCAST_SLOT), need, team::BCAST_SLOT, RING)
        } else {
            (None, c, team::BCAST_SLOT, RING)
        };
        // Across nodes, a block whose flag-in-data message (`ll.rs`) fits its slot (ring or
        // parity) goes to a member of another node as that message, one write instead of data
        // and flag.
        let ll = slot.is_some() && self.ll_fits(nb, slot_len);
        let relay = self.node_relay();
        if self.me == root {
            let mut msg: Vec<u8> = Vec::new();
            for k in 1..self.n {
                let j = (self.me + k) % self.n;
                if relay.as_ref().is_some_and(|r| r.passes_on(j, root)) {
                    // A member of another node that is not its node's first: that one passes
                    // the block on.
                    continue;
                }
                let to = self.bcast_wait_member(j, slot, need, c, dst);
                if let (true, Some((net, pe))) = (ll, self.net_member(j)) {
                    if msg.is_empty() {
                        // SAFETY: src is the root's checked source of nb bytes.
                        ll::pack(self.tag(c), unsafe { std::slice::from_raw_parts(src as *const u8, nb) }, &mut msg);
                    }
                    // PE j's slot of this count (`ll` holds only with a slot), zeroed by PE j
                    // after it last read it (before its entry into count `need`, seen above).
                    // SAFETY: msg holds its bytes until release_sources below.
                    unsafe { self.send_ll(net, pe, &msg, "team broadcast slot", to) };
                    continue;
                }
                // PE j's slot of this count (in its team area or ring), which PE j last read for
                // an earlier count before it entered count `need`, or (no slot) its dest, the
                // collective's since PE j entered this call (both seen above); PE j reads it
                // only after the flag below.
                // SAFETY: as just said; src is the root's checked source of nb bytes, unchanged
                // until release_sources below.
                unsafe { self.push(to, src as *const u8, j, nb) };
                self.store_at(fw, j, self.tag(c));
            }
            if dst != src {
                // SAFETY: the root's checked dest and source, disjoint (not the same array).
                unsafe { self.put_local(dst, src as *const u8, nb) };
            }
            self.release_sources();
            drop(msg);
        } else {
            // Who writes this PE's block: the root, or the first member of this node, which
            // passes on what the root sent it.
            let writer = relay.as_ref().map_or(root, |r| r.writer(root));
            if self.must_announce(writer, c, need, window) {
                self.post_ready(team::PUSH_BCAST, writer, c);
            }
            let (ll, used) = match (ll, slot) {
                (true, Some(slot)) if self.net_member(writer).is_some() => {
                    let mut seen = ll::Seen::default();
                    self.wait(|| {
                        // SAFETY: the slot of count c (8-byte aligned, wire_len(nb) <=
                        // slot_len), zeroed since its last use, which only the root's message
                        // of this count (and late stores of its earlier ones: `ll.rs`) writes
                        // until this PE enters count c+1.
                        match unsafe { ll::take_for(slot, nb, &mut seen, self.tag(c)) } {
                            ll::Taken::Pending => false,
                            ll::Taken::Ours => true,
                            ll::Taken::Other(_) => self.mismatch(root),
                        }
                    });
                    (true, ll::wire_len(nb))
                }
                _ => (false, nb),
            };
            if !ll {
                self.wait_tag(fw, c, root);
            }
            if let Some(slot) = slot {
                // The slot holds the root's block of count c (its flag or whole message seen)
                // until this PE enters count c+1; a message is decoded from it (never in
                // place: `ll.rs`, rule 1).
                if ll {
                    // SAFETY: as just said; dst is this PE's checked dest of nb bytes, outside
                    // the team area.
                    unsafe { ll::decode(slot, nb, dst as *mut u8) };
                } else {
                    // SAFETY: as just said; dst is this PE's checked dest of nb bytes.
                    unsafe { self.put_local(dst, slot as *const u8, nb) };
                }
            }
            if let Some(r) = relay.as_ref().filter(|r| r.passes_to_mates(root)) {
                // This PE is its node's first member and the root is on another node: the
                // other members of this node get the block from here, as the root would give it
                // to a member of its own node.
                for &m in &r.mates {
                    #[cfg(not(ishmem_mutation = "bcast_relay_early"))]
                    let to = self.bcast_wait_member(m, slot, need, c, dst);
                    // The mutant: the slot is written without waiting for the member.
                    #[cfg(ishmem_mutation = "bcast_relay_early")]
                    let to = slot.unwrap_or(dst);
                    // SAFETY: PE m's slot or dest of this count, free for it (seen above, as the
                    // root sees it for its own node); dst is this PE's checked dest, holding the
                    // block.
                    unsafe { self.push(to, dst as *const u8, m, nb) };
                    self.store_at(fw, m, self.tag(c));
                }
            }
            if let Some(slot) = slot {
                if self.spans {
                    // Across nodes a slot must be zero before a flag-in-data message may land
                    // in it (`ll.rs`), whichever root wrote what here: zeroed before this PE
                    // announces a later entry, which every reuse of these bytes waits for.
                    // SAFETY: the bytes this count's block used in this PE's own team area,
                    // which no PE writes until this PE's next announcement.
                    unsafe { std::ptr::write_bytes(slot as *mut u8, 0, used) };
                }
            }
        }
    }

    /// Waits until member `j` may be given broadcast block `c`: it entered count `need` (the
    /// block goes to `slot` of this count, whose earlier contents it has read by then) or, with
    /// no slot, this call (the block goes to its `dst`). Returns where the block goes, as
    /// addressed here.
    fn bcast_wait_member(&self, j: usize, slot: Option<usize>, need: u64, c: u64, dst: usize) -> usize {
        match slot {
            Some(s) => {
                self.wait_tag_from(Self::ready_word(team::PUSH_BCAST, j), need, c, j);
                s
            }
            None => {
                self.wait_ready(team::PUSH_BCAST, j, c);
                dst
            }
        }
    }

    /// The team's nodes as the relays across nodes see them (None: the team is on one node,
    /// or has one member per node): a block that goes from one PE to every member of another
    /// node goes over the network to the first member (in team order) of that node only, which
    /// passes it on to the other members of its node by node-local copies, so each node takes
    /// one network message instead of one per member. (4 PEs on 2 nodes: a broadcast's root
    /// sent two network messages per call, and the provider's work for each took the CPU that
    /// the other PEs needed.)
    pub(super) fn node_relay(&self) -> Option<NodeRelay> {
        if !self.spans || self.n <= 2 {
            return None;
        }
        let plan = self.sync_plan(self.n);
        if plan.leaders.len() == self.n {
            return None;
        }
        let node = |i: usize| self.st.nodes.node_of[self.d.world(i)];
        let mut first = 0u64;
        for &l in &plan.leaders {
            first |= 1 << l;
        }
        let mine = self.st.my_node;
        let mates = if plan.leader == self.me { (0..self.n).filter(|&i| i != self.me && node(i) == mine).collect() } else { Vec::new() };
        Some(NodeRelay { first, nodes: (0..self.n).map(node).collect(), me: self.me, leader: plan.leader, mates })
    }

    /// Whether the block of member `j` in the all-send class's slot here came from `j` itself
    /// (not passed on by this node's first member, `reduce_push`).
    pub(super) fn direct_from(&self, j: usize) -> bool {
        match self.relayed.get() {
            None => true,
            Some(first) => first || !self.st.off_node(self.d.world(j)),
        }
    }

    /// Whether member `j`'s slot of the all-send class holds a flag-in-data message (`ll`: the
    /// call's blocks go as messages) sent by `j` itself over the network, read with `ll::take_for`
    /// and `ll::decode`; otherwise the slot holds the block (a node-local push, or passed on by
    /// this node's first member).
    pub(super) fn message_from(&self, ll: bool, j: usize) -> bool {
        ll && self.net_member(j).is_some() && self.direct_from(j)
    }

    /// The slot of broadcast `c` of `nb` bytes in the team's broadcast ring across nodes
    /// (`State::bcast_rings`, `self.ring` nonzero): (its address here, None for a block too
    /// large for three slots; the count each member must have entered before the root writes
    /// it; the slot's bytes; the ring's depth). The ring is cut into `depth` slots of the
    /// block's flag-in-data message (`ll::wire_len`; past `ll_max` the block itself), rounded
    /// up to 64 bytes, at most `ring_depth()`;
    /// count c goes to slot c mod depth, which count c-depth used last, so the root may write
    /// it once the member entered count c-depth+1, and stays up to depth-1 calls ahead (a
    /// 512 B block took one of the team area's two 1 KiB parity slots, and the root waited
    /// for the member's entry into the previous call: about half a round trip per call). At
    /// least 3 slots: with 2 the root waits for the member's entry into the previous call, and
    /// a 24 KiB block took 18.2 us per call against 16.2 by the direct path (2 PEs on 2 nodes,
    /// `bench/results/fabric-2026-12-07/ab-ring64-np2.txt`); with 3 or more a 16 KiB block took
    /// 14.0 against 15.6 and a 4 KiB one 5.5 against 8.3 (its 16 KiB ring: 3 slots). A
    /// block of another size cuts the ring differently, over bytes that earlier counts used:
    /// the first count of such a run (recorded in the own-use words `W_BCAST_RING`: slot
    /// bytes, `W_BCAST_PAR`: the run's first count; every PE sees the same sizes) waits until
    /// the member entered it, that is, read every earlier slot.
    pub(super) fn ring_slot(&self, c: u64, nb: usize) -> (Option<usize>, u64, usize, usize) {
        // A block sent as a flag-in-data message takes its wire length, a larger one
        // (`ll_max`) its own.
        let len = if nb <= ll_max() { ll::wire_len(nb) } else { nb }.next_multiple_of(64);
        let depth = (team::NET_RING_BYTES / len).min(ring_depth());
        if depth < 3 {
            return (None, c, 0, RING);
        }
        let run = if self.load(team::W_BCAST_RING) == len as u64 {
            self.load(team::W_BCAST_PAR)
        } else {
            self.set_own(team::W_BCAST_RING, len as u64);
            self.set_own(team::W_BCAST_PAR, c);
            c
        };
        let need = (c + 1).saturating_sub(depth as u64).max(run);
        (Some(self.ring + (c as usize % depth) * len), need, len, depth)
    }

    /// Whether a member announces its entry into broadcast `c` to `root`, whose wait for it
    /// needs count `need` (computed alike on every PE). On one node: always. Across nodes,
    /// each announcement is a network message, so a member announces only when the root
    /// needs it (its last announcement to this root is below `need`) or when its last one
    /// is `window`/2 counts old: in a run of ring broadcasts from one root (need =
    /// c-window+1) every window/2 calls, which keeps the root from waiting, since every
    /// window of counts the root may wait in holds an announcement. No deadlock: the root of
    /// count c sent every earlier count, so the member reaches every count up to c and
    /// announces by then. The last announcement (root + 1, count) is in own-use words of the
    /// team area.
    pub(super) fn must_announce(&self, root: usize, c: u64, need: u64, window: usize) -> bool {
        if !self.spans {
            return true;
        }
        let last = if self.load(team::W_BCAST_ANN_ROOT) == root as u64 + 1 { self.load(team::W_BCAST_ANN_COUNT) } else { 0 };
        if last >= need && c - last < window as u64 / 2 {
            return false;
        }
        self.set_own(team::W_BCAST_ANN_ROOT, root as u64 + 1);
        self.set_own(team::W_BCAST_ANN_COUNT, c);
        true
    }

    /// fcollect or alltoall (as `move_push`) of at most one scratch slot per PE, in the
    /// all-send class: the blocks go to the members' scratch with no announcement (`reduce_push`),
    /// then each PE copies every member's block from its scratch into its own `dst`.
    ///
    /// # Safety
    /// As `fcollect` (`all` false) or `alltoall`.
    pub(super) unsafe fn move_scratch(&self, dst: usize, src: usize, nb: usize, all: bool) {
        let block = |j: usize| if all { src + j * nb } else { src };
        // SAFETY: block(j) lies in this PE's checked source (nb bytes each).
        let c = unsafe { self.reduce_push(nb, block, !all) };
        let ll = self.ll_ok(nb);
        for j in 0..self.n {
            if j == self.me {
                // SAFETY: block j of this PE's checked dest (n * nb bytes), from its checked
                // source (disjoint from dst, checked).
                unsafe { self.put_local(dst + j * nb, block(j) as *const u8, nb) };
            } else {
                // SAFETY: block j of this PE's checked dest (n * nb bytes, outside the team
                // area); c is the count reduce_push completed.
                unsafe { self.take_slot(c, j, ll, nb, dst + j * nb) };
            }
        }
    }

    /// Copies member `j`'s block of `nb` bytes from its scratch slot of count `c` (a push of
    /// the all-send class this PE just completed; `ll`: `ll_ok(nb)`) to `to`, decoding a
    /// flag-in-data message.
    ///
    /// # Safety
    /// `to` is this PE's memory, writable for `nb` bytes, outside the team area; `c` is the
    /// count of the `reduce_push` this PE just completed, and `j` not this PE.
    unsafe fn take_slot(&self, c: u64, j: usize, ll: bool, nb: usize, to: usize) {
        if self.message_from(ll, j) {
            // SAFETY: PE j's slot of count c holds its whole message (seen by reduce_push)
            // until this PE's next call of the class; `to` per the caller.
            unsafe { ll::decode(self.slot_at(c, j), nb, to as *mut u8) };
        } else {
            // SAFETY: PE j's slot of count c, filled before its flag (seen by reduce_push) and
            // not rewritten before this PE's next flag of the class; `to` per the caller.
            unsafe { self.put_local(to, self.slot_at(c, j) as *const u8, nb) };
        }
    }

    /// fcollect (`all` false: block `me` of `src` to each PE) or alltoall (`all`: block j of
    /// `src` to PE j) by pushes: entry announced to every member; block `me` of each member's
    /// `dst` once it entered, then the flag; wait for every member's.
    ///
    /// # Safety
    /// As `fcollect` (`all` false) or `alltoall`.
    pub(super) unsafe fn move_push(&self, dst: usize, src: usize, nb: usize, all: bool) {
        let c = self.push_begin(team::PUSH_MOVE);
        let fw = Self::flag_word(team::PUSH_MOVE, self.me);
        let block = |j: usize| if all { src + j * nb } else { src };
        for k in 1..self.n {
            self.post_ready(team::PUSH_MOVE, (self.me + k) % self.n, c);
        }
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            self.wait_ready(team::PUSH_MOVE, j, c);
            // SAFETY: PE j entered this call (seen above), so block `me` of its dest is this
            // PE's to write until the flag; block(j) is in this PE's checked source, unchanged
            // until release_sources below.
            unsafe { self.push(dst + self.me * nb, block(j) as *const u8, j, nb) };
            self.store_at(fw, j, self.tag(c));
        }
        // SAFETY: block `me` of this PE's checked dest, from its checked source (disjoint).
        unsafe { self.put_local(dst + self.me * nb, block(self.me) as *const u8, nb) };
        self.release_sources();
        self.wait_all(team::PUSH_MOVE, c);
    }

    /// The all-send class (reductions, scans, and fcollect and alltoall of at most one slot)
    /// by pushes: `nb` bytes at `block(j)` (this PE's checked source) into its slot of every
    /// other member j's scratch, then the flag; wait for every member's. Returns the count,
    /// which names the slots to read (`slot_at`).
    ///
    /// Where every member gets the same block (`same`) and some node of the team has several
    /// members (`node_relay`), a block goes over the network only to the first member of each
    /// other node, which, once it has every member's block, passes those of other nodes on to
    /// its node-mates (their slots and flags, as their senders would have written them; a
    /// flag-in-data message is decoded into the slot) and then returns (`direct_from` tells
    /// the readers which slots hold messages). The slot rules hold through the relay: the
    /// first member writes a mate's slot of count c for sender j only after j's block of c
    /// arrived, which j sent after it saw the mate's block of c-1, which the mate sent after
    /// it was done with its slots of c-2.
    ///
    /// # Safety
    /// `block(j)` is readable for `nb` bytes (this PE's checked source), unchanged until return.
    pub(super) unsafe fn reduce_push(&self, nb: usize, block: impl Fn(usize) -> usize, same: bool) -> u64 {
        let ll = self.ll_ok(nb);
        let c = self.reduce_begin(if ll { ll::wire_len(nb) } else { nb });
        let fw = Self::flag_word(team::PUSH_REDUCE, self.me);
        // (Relayed blocks' flags need their own words: teams with a block across nodes.)
        let relay = if same && self.ring != 0 { self.node_relay() } else { None };
        self.relayed.set(relay.as_ref().map(|r| r.leader == self.me));
        // The flag-in-data messages to members on other nodes (one per distinct block), alive
        // until release_sources below.
        let mut msgs: Vec<(usize, Vec<u8>)> = Vec::new();
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            if relay.as_ref().is_some_and(|r| r.passes_on(j, self.me)) {
                // The first member of j's node passes this PE's block on to j.
                continue;
            }
            if let (true, Some((net, pe))) = (ll, self.net_member(j)) {
                if msgs.last().is_none_or(|m| m.0 != block(j)) {
                    let mut m = Vec::new();
                    // SAFETY: block(j) is readable for nb bytes (the caller's contract).
                    ll::pack(self.tag(c), unsafe { std::slice::from_raw_parts(block(j) as *const u8, nb) }, &mut m);
                    msgs.push((block(j), m));
                }
                let m = &msgs[msgs.len() - 1].1;
                // PE j's scratch slot for this PE and parity, zeroed by PE j before it sent
                // the message of count c-1 that this PE saw, and read by PE j only once the
                // whole message is there (`ll.rs`).
                // SAFETY: m holds its bytes until release_sources below.
                unsafe { self.send_ll(net, pe, m, "team scratch", self.slot_at(c, self.me)) };
                continue;
            }
            // PE j's scratch slot for this PE and parity (in its team area; nb <= slot_bytes),
            // which PE j does not read until it sees the flag below.
            // SAFETY: as just said; block(j) per the caller, read until release_sources below.
            unsafe { self.push(self.slot_at(c, self.me), block(j) as *const u8, j, nb) };
            self.store_at(fw, j, self.tag(c));
        }
        self.release_sources();
        drop(msgs);
        if !ll && relay.is_none() {
            self.wait_all(team::PUSH_REDUCE, c);
            return c;
        }
        // As wait_all, with the members of other nodes' blocks seen whole in their slots, and
        // the flags of blocks passed on here by this node's first member in their own words.
        let (mut j, mut seen) = (0, Vec::new());
        seen.resize_with(self.n, ll::Seen::default);
        self.wait(|| {
            while j < self.n {
                if j != self.me {
                    if !self.direct_from(j) {
                        let got = self.load_relay_flag(j);
                        if got < c << SIG_BITS {
                            return false;
                        }
                        self.check_tag(got, c, j);
                    } else if self.message_from(ll, j) {
                        // SAFETY: PE j's slot of count c (16-byte aligned, wire_len(nb) <=
                        // slot_bytes), which only PE j's message (and late stores of its
                        // earlier ones: `ll.rs`) writes until this PE zeroes it at its next
                        // call of the class (`reduce_begin`). Read with ll::decode.
                        match unsafe { ll::take_for(self.slot_at(c, j), nb, &mut seen[j], self.tag(c)) } {
                            ll::Taken::Pending => return false,
                            ll::Taken::Other(_) => self.mismatch(j),
                            ll::Taken::Ours => {}
                        }
                    } else {
                        let got = self.load(Self::flag_word(team::PUSH_REDUCE, j));
                        if got < c << SIG_BITS {
                            return false;
                        }
                        self.check_tag(got, c, j);
                    }
                }
                j += 1;
            }
            true
        });
        self.pass_on(relay.as_ref(), c, nb, ll);
        c
    }

    /// The address here of this PE's relay flag word of sender `j` (`team::NET_RELAY_BYTES`,
    /// in the team slot's block across nodes): the count of `j`'s last block that this node's
    /// first member passed on here (`reduce_push`). A word of its own: `j` itself writes its
    /// flag word of the class (collect, alltoall, calls not relayed), and a relayed flag of
    /// count c stored there after `j`'s own of c+1 would let this PE read the slot of c
    /// before its block was there (and then wait forever for c+1).
    #[cfg_attr(ishmem_mutation = "relay_class_flag", allow(dead_code))]
    fn relay_flag(&self, j: usize) -> usize {
        self.ring + team::NET_RING_BYTES + self.net_scratch() + 8 * j
    }

    /// `reduce_push`'s relay on a node's first member: every block of count `c` from a member
    /// of another node (here whole: a flag-in-data message where `ll`, else data seen by its
    /// flag) goes into the same slot of each other member of this node, then its flag.
    fn pass_on(&self, relay: Option<&NodeRelay>, c: u64, nb: usize, ll: bool) {
        let Some(r) = relay.filter(|r| !r.mates.is_empty()) else { return };
        for j in (0..self.n).filter(|&j| !r.same_node(j, self.me)) {
            let from = self.slot_at(c, j);
            for &m in &r.mates {
                if ll {
                    let to = self.remote("team scratch", from, nb, m);
                    // SAFETY: from is PE j's slot of count c here, holding its whole message
                    // (seen by the wait); to is PE m's slot for PE j and count c (mapped: a PE
                    // of this node), which PE m reads only after the flag below and was done
                    // with (count c-2) before PE j could send count c (`reduce_push`).
                    unsafe { ll::decode(from, nb, to as *mut u8) };
                } else {
                    // SAFETY: as above; from holds PE j's block (its flag seen).
                    unsafe { self.push(from, from as *const u8, m, nb) };
                }
                self.store_relay_flag(j, m, self.tag(c));
            }
        }
    }

    /// This PE's relay flag of sender `j` (Acquire).
    fn load_relay_flag(&self, j: usize) -> u64 {
        // The mutant: relayed flags share the class's flag word with `j`'s own.
        #[cfg(ishmem_mutation = "relay_class_flag")]
        return self.load(Self::flag_word(team::PUSH_REDUCE, j));
        // SAFETY: this PE's relay flag word of PE j (aligned, in its team slot's block),
        // written by its node's first member.
        #[cfg(not(ishmem_mutation = "relay_class_flag"))]
        unsafe { AtomicU64::from_ptr(self.relay_flag(j) as *mut u64) }.load(Acquire)
    }

    /// Stores `v` into node-mate `m`'s relay flag of sender `j` (Release).
    fn store_relay_flag(&self, j: usize, m: usize, v: u64) {
        #[cfg(ishmem_mutation = "relay_class_flag")]
        return self.store_at(Self::flag_word(team::PUSH_REDUCE, j), m, v);
        #[cfg(not(ishmem_mutation = "relay_class_flag"))]
        {
            let f = self.remote("team relay flag", self.relay_flag(j), 8, m);
            // SAFETY: PE m's relay flag word of PE j (aligned, mapped: a PE of this node),
            // written only by this PE, its node's first member.
            unsafe { AtomicU64::from_ptr(f as *mut u64) }.store(v, Release)
        }
    }

    /// Sends the flag-in-data message `msg` (`ll.rs`) to `pe`, a member on another node
    /// reached through `net`, into `slot` of its team area (`what` names the slot in errors).
    ///
    /// # Safety
    /// `msg` stays alive and unchanged until `release_sources` returns (a put longer than the
    /// inject size reads it until then).
    unsafe fn send_ll(&self, net: &crate::core::net::Net, pe: usize, msg: &[u8], what: &str, slot: usize) {
        let at = self.st.remote_at(self.func, what, slot, msg.len());
        // SAFETY: msg is readable for its length until release_sources (the caller's contract).
        if unsafe { net.flag_bytes(self.func, pe, msg.as_ptr(), msg.len(), at) } {
            self.lent.set(true);
        }
    }

    /// Whether the all-send class sends `nb` bytes to members of other nodes as flag-in-data
    /// messages (`ll.rs`): `ll_fits` in a scratch slot. Every PE decides alike.
    pub(super) fn ll_ok(&self, nb: usize) -> bool {
        self.ll_fits(nb, self.slot_bytes())
    }

    /// Whether a block of `nb` bytes goes to members of other nodes as a flag-in-data message
    /// in slots of `slot` bytes: a team across nodes, at most `ll_max`, the message fitting
    /// the slot (`ISHMEMI_COLL_LL=0`, a measuring aid: never).
    pub(super) fn ll_fits(&self, nb: usize, slot: usize) -> bool {
        self.spans && nb <= ll_max() && nb <= ll::fits(slot) && self.ll_on()
    }

    /// Whether flag-in-data messages are on: where the provider applies each write once
    /// (`Net::flag_in_data_ok`: not sockets), unless `ISHMEMI_COLL_LL=0` (a measuring aid).
    pub(super) fn ll_on(&self) -> bool {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *ON.get_or_init(|| crate::env::aid_on("ISHMEMI_COLL_LL")) && self.st.net.as_ref().is_some_and(|n| n.flag_in_data_ok())
    }

    /// Starts a collective of the all-send class in which members of other nodes write `used`
    /// bytes of their scratch slots here (a message, a block, or a size and block): its count.
    /// Across nodes it first zeroes what they wrote into the slots of count c-1
    /// (`W_RED_USED`; `ll.rs`: a flag-in-data message needs a zeroed slot): this PE is done
    /// reading them (its call of count c-1 returned), and their senders write them again
    /// (count c+1) only after seeing this PE's message or flag of count c, sent after this.
    pub(super) fn reduce_begin(&self, used: usize) -> u64 {
        let c = self.push_begin(team::PUSH_REDUCE);
        if self.spans {
            let last = (self.load(team::W_RED_USED) as usize).min(self.slot_bytes());
            for j in 0..self.n {
                if last > 0 && j != self.me && self.net_member(j).is_some() {
                    // SAFETY: the first `last` bytes of PE j's scratch slot of count c-1, here
                    // (as just said, nobody reads or writes it now).
                    unsafe { std::ptr::write_bytes(self.slot_at(c - 1, j) as *mut u8, 0, last) };
                }
            }
            self.set_own(team::W_RED_USED, used as u64);
        }
        c
    }

    /// Combines team PEs `0..upto`'s vectors of push count `c` (own: `src`, others: scratch) in
    /// team order and writes the result (zeros when `upto` is 0) to `dst`.
    ///
    /// # Safety
    /// As `reduce` for `dst` and `src` (`nelem` elements of `T`); `c` is the count of the
    /// `reduce_push` this PE just completed, whose slots hold the members' vectors.
    pub(super) unsafe fn combine_pushed<T: Copy + Default>(
        &self,
        dst: usize,
        src: usize,
        nelem: usize,
        c: u64,
        upto: usize,
        comb: fn(&mut [T], &[T]),
    ) {
        let nb = nelem * size_of::<T>();
        // Up to two buffers of nb bytes, 16-byte aligned (long double's alignment: a misaligned
        // vector of it faulted in osh_types): `buf`, where an in-place call combines, and
        // `msg`, where a member's flag-in-data message is decoded (`ll.rs`: never in its slot).
        // On the stack up to a team area slot's size (every call of a team without a block
        // across nodes); larger blocks (a team across nodes: up to a scratch slot, 64 KiB at 2
        // PEs) in a heap block holding only the buffers this call uses, left uninitialized
        // (each byte is written before it is read).
        let ll = self.ll_ok(nb);
        const UNITS: usize = team::PUSH_SCRATCH_BYTES / 4 / 16;
        let mut small = std::mem::MaybeUninit::<[u128; 2 * UNITS]>::uninit();
        let mut large: Vec<u128> = Vec::new();
        let units = nb.div_ceil(16);
        let (buf, msg): (*mut u128, *mut u128) = if units <= UNITS {
            let p: *mut u128 = small.as_mut_ptr().cast();
            (p, p.wrapping_add(UNITS))
        } else {
            let (nbuf, nmsg) = (if dst == src { units } else { 0 }, if ll { units } else { 0 });
            large.reserve_exact(nbuf + nmsg);
            let p = large.as_mut_ptr();
            (p, p.wrapping_add(nbuf))
        };
        debug_assert!(align_of::<T>() <= align_of::<u128>());
        // In place (dst = src), this PE's own vector is read after the first writes: combine in
        // a buffer. Otherwise straight into dst (this PE's memory, which no PE reads here).
        let at: *mut T = if dst == src { buf.cast() } else { dst as *mut T };
        // SAFETY: at is dst (this PE's checked, aligned dest of nelem T) or buf (in place:
        // 16-byte aligned, room for nb bytes, above); T is a plain C number type, valid for any
        // bits, and every element is written below before it is read (fill, or the copy of PE
        // 0's vector).
        let acc = unsafe { std::slice::from_raw_parts_mut(at, nelem) };
        if upto == 0 {
            acc.fill(T::default());
        }
        for j in 0..upto {
            let p = if j == self.me {
                src
            } else if self.message_from(ll, j) {
                // SAFETY: PE j's slot of count c holds its whole message (seen by reduce_push);
                // msg has room for nb bytes (above, as ll holds).
                unsafe { ll::decode(self.slot_at(c, j), nb, msg.cast()) };
                msg as usize
            } else {
                self.slot_at(c, j)
            } as *const T;
            // SAFETY: p is this PE's checked, aligned source, the scratch slot PE j filled
            // with nelem T before its flag (seen by wait_all; slots are 16-byte aligned), or
            // msg, where PE j's message was just decoded (nelem T, 16-byte aligned). No PE
            // writes any of them until this PE's next push of the class; none overlaps acc
            // (in place, acc is buf).
            let v = unsafe { std::slice::from_raw_parts(p, nelem) };
            if j == 0 {
                acc.copy_from_slice(v);
            } else {
                comb(acc, v);
            }
        }
        if dst == src {
            // SAFETY: acc (buf) holds nelem T; dst is this PE's checked dest, which no PE
            // reads (the push path writes only into scratch).
            unsafe { self.put_local(dst, acc.as_ptr().cast(), nb) };
        }
    }

    /// Whether a reduction or scan of `nb` bytes takes the push path.
    pub(super) fn reduce_push_ok(&self, nb: usize) -> bool {
        self.push_ok(nb) && nb <= self.slot_bytes()
    }

    /// Elements of `es` bytes per chunk where a reduction of `nb` bytes, too large for one
    /// scratch slot, goes chunk by chunk through the push path (None: it syncs and reads the
    /// members' sources instead): a team across nodes on the push path whose slots hold at
    /// least a few elements, at 2 PEs any size; at 3 or more PEs up to `REDUCE_PUSH_CHUNKS`
    /// slots, and up to `REDUCE_SCATTER_PUSH_SLOTS` where the push reduce-scatter is on
    /// (`reduce_scatter_rounds`: its rounds take `n` chunks at a time, the chunks left over go
    /// one by one). Every PE decides alike.
    pub(super) fn reduce_push_chunk(&self, nb: usize, es: usize) -> Option<usize> {
        let slot = self.slot_bytes();
        let fits = self.spans && self.ring != 0 && self.push_ok(nb) && slot >= 64 * es;
        let most = if reduce_scatter_push_on() { REDUCE_SCATTER_PUSH_SLOTS } else { REDUCE_PUSH_CHUNKS };
        (fits && nb > slot && (self.n == 2 || nb <= most * slot)).then_some(slot / es)
    }

    /// Whether a reduction cut into chunks of `chunk` elements (`reduce_push_chunk`) takes
    /// push reduce-scatter rounds (`reduce_scatter_round`) of `n` chunks: 3 or more PEs.
    pub(super) fn reduce_scatter_rounds(&self) -> bool {
        self.n >= 3 && reduce_scatter_push_on()
    }

    /// One round of a reduction too large for a scratch slot, 3 or more PEs across nodes:
    /// elements `off..off + n * per` of the vectors, as `n` slices of `per` elements (one
    /// scratch slot each). A push reduce-scatter: slice j of this PE's source goes to member
    /// j's slot (`reduce_push` with a block per member), and each PE combines its own slice of
    /// every member's, in team order, into its `dst`; then a push all-gather: each PE's
    /// combined slice to every member (`reduce_push`, one block for all, passed on inside a
    /// node by its first member), copied from the slots into `dst`. Each byte of a vector
    /// leaves a PE twice instead of once per member (the all-send chunks), in two steps per
    /// `n` slots instead of `n`; every PE gets the same bits (each slice is combined once).
    ///
    /// # Safety
    /// As `reduce` for `dst` and `src` (the same array or disjoint), which hold elements
    /// `off..off + n * per`; `per` elements of `T` fit a scratch slot.
    pub(super) unsafe fn reduce_scatter_round<T: Copy + Default>(
        &self,
        dst: usize,
        src: usize,
        off: usize,
        per: usize,
        comb: fn(&mut [T], &[T]),
    ) {
        let es = size_of::<T>();
        let pb = per * es;
        let at = |j: usize| (off + j * per) * es;
        #[cfg(not(ishmem_mutation = "reduce_scatter_slice"))]
        let slice = |j: usize| src + at(j);
        // The mutant: every member gets this PE's own slice.
        #[cfg(ishmem_mutation = "reduce_scatter_slice")]
        let slice = |_: usize| src + at(self.me);
        // SAFETY: slice j of this round lies in this PE's checked source (the caller's
        // contract), unchanged until reduce_push returns (its sources are released).
        let c = unsafe { self.reduce_push(pb, slice, false) };
        let mine = dst + at(self.me);
        // SAFETY: slice `me` of this round of dst and src (the caller's contract); c is the
        // count reduce_push completed, whose slots hold every member's slice `me`. In place,
        // this PE's slices went out above before this writes its own.
        unsafe { self.combine_pushed(mine, src + at(self.me), per, c, self.n, comb) };
        // SAFETY: this PE's combined slice, in its checked dest, unchanged until return.
        let c = unsafe { self.reduce_push(pb, |_| mine, true) };
        let ll = self.ll_ok(pb);
        for j in (0..self.n).filter(|&j| j != self.me) {
            // SAFETY: slice j of this round of this PE's checked dest (already sent above, in
            // place); c is the count reduce_push completed.
            unsafe { self.take_slot(c, j, ll, pb, dst + at(j)) };
        }
    }

    /// collect on the push path, in the all-send class: each PE stores its size, and its block
    /// when it fits (at most slot_bytes - 8), into its scratch slot of every other member, then
    /// the flag; after every member's flag each PE knows all sizes, checks its dest, and copies
    /// the blocks that came inline. Blocks that did not fit are pulled from their owners'
    /// sources, and then (every PE sees the same sizes, so all do it) a team sync keeps each
    /// source alive until nobody reads it.
    ///
    /// # Safety
    /// As `collect`.
    pub(super) unsafe fn collect_push(&self, dst: usize, src: usize, nb: usize, check_dest: impl Fn(usize)) -> usize {
        let cap = self.slot_bytes() - 8;
        // (Members of other nodes write a size and at most `cap` bytes.)
        let c = self.reduce_begin(self.slot_bytes());
        let fw = Self::flag_word(team::PUSH_REDUCE, self.me);
        let inline = if nb <= cap { nb } else { 0 };
        // What goes to members on other nodes: the size, then the inline block, in one put.
        let mut msg: Vec<u8> = Vec::new();
        for k in 1..self.n {
            let j = (self.me + k) % self.n;
            if self.net_member(j).is_some() {
                if msg.is_empty() {
                    msg.extend_from_slice(&(nb as u64).to_ne_bytes());
                    // SAFETY: src..src+nb is this PE's checked source (inline <= nb).
                    msg.extend_from_slice(unsafe { std::slice::from_raw_parts(src as *const u8, inline) });
                }
                // PE j's scratch slot for this PE and parity, read only after the flag below.
                // SAFETY: as just said; msg lives until release_sources below.
                unsafe { self.push(self.slot_at(c, self.me), msg.as_ptr(), j, msg.len()) };
                self.store_at(fw, j, self.tag(c));
                continue;
            }
            let r = self.st.remote(self.func, "team scratch", self.slot_at(c, self.me), 8 + inline, self.d.world(j));
            // SAFETY: r..r+8+inline is PE j's scratch slot for this PE and parity (mapped, in its
            // team area, 8 + inline <= slot_bytes, 64-byte aligned), which PE j reads only after
            // the flag below; src..src+nb is this PE's checked source.
            unsafe {
                (r as *mut u64).write(nb as u64);
                std::ptr::copy_nonoverlapping(src as *const u8, (r + 8) as *mut u8, inline);
            }
            self.store_at(fw, j, self.tag(c));
        }
        // msg lives until its puts no longer read it.
        self.release_sources();
        drop(msg);
        self.wait_all(team::PUSH_REDUCE, c);
        let sizes: Vec<usize> = (0..self.n)
            .map(|j| {
                if j == self.me {
                    nb
                } else {
                    // SAFETY: the first word of PE j's slot of count c, written before its flag
                    // (seen by wait_all).
                    unsafe { (self.slot_at(c, j) as *const u64).read() as usize }
                }
            })
            .collect();
        if self.spans {
            // What members wrote into the slots here (a size, and a block up to cap): zeroed
            // at the next call of the class.
            let most = sizes.iter().map(|&s| if s <= cap { s } else { 0 }).max().unwrap_or(0);
            self.set_own(team::W_RED_USED, 8 + most as u64);
        }
        let (offs, total) = prefix_offsets(&sizes);
        check_dest(total);
        for k in 0..self.n {
            let j = (self.me + k) % self.n;
            // SAFETY (all three): block j lies inside dst..dst+total, which check_dest
            // accepted (disjoint from src).
            if j == self.me {
                // SAFETY: as above; src is this PE's checked source of nb bytes.
                unsafe { self.put_local(dst + offs[j], src as *const u8, nb) };
            } else if sizes[j] <= cap {
                // The slot of count c holds PE j's block until this PE's next flag of the class.
                // SAFETY: as above and just said.
                unsafe { self.put_local(dst + offs[j], (self.slot_at(c, j) + 8) as *const u8, sizes[j]) };
            } else {
                // SAFETY: as above; PE j's source is not written until the sync below.
                unsafe { self.pull(dst + offs[j], src, j, sizes[j]) };
            }
        }
        // Every PE computes the same `sizes`, so all or none sync here.
        if sizes.iter().any(|&s| s > cap) {
            self.sync();
        }
        total
    }
}

/// At 3 or more PEs, reductions of up to this many scratch slots go chunk by chunk through the
/// push path (`Team::reduce_push_chunk`) where the push reduce-scatter rounds are off
/// (`ISHMEMI_REDUCE_SCATTER_PUSH=0`); larger ones take the reduce-scatter by reads.
pub(super) const REDUCE_PUSH_CHUNKS: usize = 4;

/// At 3 or more PEs, reductions of up to this many scratch slots take the push reduce-scatter
/// rounds (`Team::reduce_scatter_round`); larger ones the sync and reads. At 4 PEs that is 4 MiB
/// with the largest scratch (slots of 256 KiB), 512 KiB with the smallest (32 KiB). A/B at 4 PEs
/// on 2 pretend nodes with the smallest, 5 rounds (docs/PERFORMANCE.md, fifteenth round): 128
/// KiB 308 us against 590 by chunks, 256 KiB 440 against 680 by reads, 512 KiB 1302 against
/// 1473, 1 MiB 2690 against 2473 (32 rounds' steps then cost more than the reads' two syncs);
/// with the largest, 1 MiB in one round: 1240 us against 2832 (sixteenth round).
pub(super) const REDUCE_SCATTER_PUSH_SLOTS: usize = 16;

/// Whether reductions across nodes too large for `REDUCE_PUSH_CHUNKS` slots at 3 or more PEs
/// take the push reduce-scatter rounds (`ISHMEMI_REDUCE_SCATTER_PUSH`, a measuring aid,
/// default on; every PE must see the same value) rather than the sync and reads.
fn reduce_scatter_push_on() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| crate::env::aid_on("ISHMEMI_REDUCE_SCATTER_PUSH"))
}

/// The largest block sent as a flag-in-data message (`ll.rs`); larger ones go as the data
/// then its flag: past 8 KiB the message's pack and decode and its eighth more bytes cost more
/// than the flag's message they save (A/B, 2 PEs on 2 nodes: sum_reduce 16 KiB 18.8 -> 15.0 us,
/// 48 KiB 41.2 -> 22.8, fcollect 16 KiB 18.2 -> 15.4; 4 PEs: sum_reduce 16 KiB 83 -> 62;
/// `bench/results/fabric-2026-12-07/ab-llmax-*.txt`). `ISHMEMI_COLL_LL_MAX=<bytes>` (a measuring
/// aid) sets another bound.
pub(super) fn ll_max() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| std::env::var("ISHMEMI_COLL_LL_MAX").ok().and_then(|v| v.parse().ok()).unwrap_or(LL_MAX))
}

/// See `ll_max`.
const LL_MAX: usize = 8192;

/// The most slots of a team's broadcast ring across nodes (`Team::ring_slot`): a member
/// announces its entry to the root every depth/2 calls (`must_announce`), each a network
/// message that both ends pay in system calls, so small blocks get a deep ring (64 slots:
/// a member of a run of 8-byte broadcasts announces every 32 calls, where 16 slots made it
/// every 8). `ISHMEMI_BCAST_RING_DEPTH=<slots>` (a measuring aid, at least 3) sets another.
pub(super) fn ring_depth() -> usize {
    static DEPTH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *DEPTH.get_or_init(|| {
        std::env::var("ISHMEMI_BCAST_RING_DEPTH").ok().and_then(|v| v.parse().ok()).filter(|&d: &usize| d >= 3).unwrap_or(RING_DEPTH)
    })
}

/// See `ring_depth`.
const RING_DEPTH: usize = 64;

/// Bytes of one scratch slot of the push reductions in a team of `n` PEs (2 x n slots share
/// `PUSH_SCRATCH_BYTES`): whole cache lines where one fits (up to 48 PEs), else a multiple of
/// 16 (49 to 64 PEs: 48 bytes). Rounding down to 64 there gave 0-byte slots, so that from 49
/// PEs every reduction and scan left the push path for the synchronized one (every PE reading
/// every member: the 31x jump of sum_reduce from 32 to 64 PEs in docs/SCALING.md).
pub(super) fn push_slot_bytes(n: usize) -> usize {
    push_slot_bytes_of(team::PUSH_SCRATCH_BYTES, n)
}

/// As `push_slot_bytes`, for a scratch of `bytes`.
fn push_slot_bytes_of(bytes: usize, n: usize) -> usize {
    let raw = bytes / (2 * n);
    if raw >= 64 {
        raw / 64 * 64
    } else {
        raw / 16 * 16
    }
}

/// A team's nodes for the relays across nodes (`Team::node_relay`).
pub(super) struct NodeRelay {
    /// Team PEs that are the first of their node (bit i: team PE i; push teams have at most 64).
    first: u64,
    /// Each team PE's node.
    nodes: Vec<usize>,
    /// This PE and the first member of its node.
    me: usize,
    leader: usize,
    /// Where this PE is its node's first member: the other members of its node (else empty).
    mates: Vec<usize>,
}

impl NodeRelay {
    fn same_node(&self, a: usize, b: usize) -> bool {
        self.nodes[a] == self.nodes[b]
    }

    /// Whether a block from `from` to every member reaches member `j` through `j`'s node's
    /// first member (not straight from `from`).
    fn passes_on(&self, j: usize, from: usize) -> bool {
        !self.same_node(j, from) && self.first & (1 << j) == 0
    }

    /// Who writes this PE's copy of a block that `from` sends to every member.
    fn writer(&self, from: usize) -> usize {
        if self.passes_on(self.me, from) {
            self.leader
        } else {
            from
        }
    }

    /// Whether this PE passes `from`'s block on to the other members of its node.
    fn passes_to_mates(&self, from: usize) -> bool {
        !self.mates.is_empty() && !self.same_node(self.me, from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every team size that takes the push paths (2..=PUSH_PES) has slots for a one-element
    /// reduction of every type (up to 16 bytes, aligned to 16), inside the scratch.
    #[test]
    fn push_slots_fit_every_push_team() {
        for n in 2..=team::PUSH_PES {
            let s = push_slot_bytes(n);
            assert!(s >= 16 && s % 16 == 0, "team of {n} PEs: push slot of {s} bytes, want a multiple of 16 of at least 16");
            assert!(2 * n * s <= team::PUSH_SCRATCH_BYTES, "team of {n} PEs: 2 x {n} slots of {s} bytes overflow the scratch");
            assert!(s <= team::PUSH_SCRATCH_BYTES / 4, "team of {n} PEs: slot of {s} bytes beyond combine_pushed's buffer");
        }
    }
}
