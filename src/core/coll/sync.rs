//! Team synchronization: the dissemination sync on the team's sync words (two-level across
//! nodes: shared memory inside a node, dissemination among the nodes' leaders) and the wait
//! every collective's polls go through (backoff, agreement checks, diagnostics).

use super::*;

impl<'a> Team<'a> {
    /// Polls `done` with backoff; a long wait checks the team's call agreement.
    pub(super) fn wait(&self, done: impl FnMut() -> bool) {
        if !self.published.get() && self.entry.get()[0] != 0 {
            self.publish();
        }
        let mut watch = Watch::default();
        let mut done = done;
        let mut seen = None;
        let period = self.st.cfg.coll_check_ms.clamp(1, crate::transport::shm::FINALIZING_CHECK_MS);
        let mut last = std::time::Instant::now();
        wait::until_checked(self.st.cfg.wait_spin, self.st.cfg.wait_sleep_max_us, period, &mut done, || {
            // ISHMEM_COLL_CHECK_MS=0: never (the period above is at least 1 ms for the
            // finalize check below; before issue 29, 0 made every poll check every member).
            if self.st.cfg.coll_check_ms > 0 && last.elapsed() >= std::time::Duration::from_millis(self.st.cfg.coll_check_ms) {
                last = std::time::Instant::now();
                self.check_agreement(&mut watch);
            }
            // World team: a PE in finalize that never made this call (its world call count,
            // published at finalize, is below this call's) will never come: seen on two
            // checks, the job ends. (A member that made the call and then finalized is
            // fine: this PE may wait for a slower third. Split teams are not checked: a
            // team's count there can be zeroed by a later split.)
            let call = self.entry.get()[0] >> 8;
            let now = if self.handle == 0 && call > 0 {
                self.st.finalizing_peer(|pe| self.d.contains(pe)).filter(|&(_, _, made)| made < call)
            } else {
                None
            };
            if now.is_some() && now == seen {
                let (pe, pid, _) = now.unwrap_or_default();
                self.st.peer_finalizing(&format!("{} (collective call {call} on team {})", self.func, self.handle), pe, pid);
            }
            seen = now;
        });
    }

    /// Waits until this PE's word `w` is at least `v`.
    pub(super) fn wait_ge(&self, w: usize, v: u64) {
        self.wait(|| self.load(w) >= v);
    }

    /// The collective part of `ishmem_team_destroy`: a recorded sync, after which no member
    /// writes into this PE's area of the team any more, so the slot can be freed and reused.
    /// The sync is what makes it so: a push broadcast's root returns before every member has
    /// announced its entry (`broadcast_push`), and a late announcement would otherwise land in
    /// the area after a later split gave the slot to another team and zeroed it. Each member
    /// announces before it syncs; across nodes, where flags are not flushed by quiet, the
    /// sync's quiet is made to deliver this PE's flags to every member of another node first.
    pub fn destroy_sync(&self) {
        self.enter(Kind::Destroy, 0, 0);
        if let Some(n) = self.st.net.as_ref().filter(|_| self.spans) {
            for i in 0..self.n {
                if self.net_member(i).is_some() {
                    n.flush_flags_to(self.d.world(i));
                }
            }
        }
        self.sync();
    }

    /// `ishmem_team_sync`: a recorded sync.
    pub fn team_sync(&self) {
        self.enter(Kind::Sync, 0, 0);
        self.sync();
    }

    /// `sync` whose network flags are known to have arrived once the next quiet returns (the
    /// last barrier before a process leaves the job: a flag still on its way must not be lost).
    pub fn sync_delivered(&self) {
        self.flush_flags.set(true);
        self.sync();
        self.flush_flags.set(false);
    }

    /// The team sync (see the ordering contract above).
    pub fn sync(&self) {
        // Members read this PE's record once the sync is done (`check_neighbour`).
        if !self.published.get() && self.entry.get()[0] != 0 {
            self.publish();
        }
        if self.n <= 1 {
            fence(SeqCst);
            return;
        }
        if self.spans {
            // Network puts made before the sync (pushes of an algorithm) complete first.
            if let Some(n) = &self.st.net {
                n.quiet(self.func);
            }
        }
        let e = self.load(team::W_EPOCH) + 1;
        self.store_at(team::W_EPOCH, self.me, e);
        // The mutant: the team's last PE leaves at once and the others sync without it.
        #[cfg(ishmem_mutation = "team_sync_skip")]
        if self.me == self.n - 1 {
            return;
        }
        #[cfg(ishmem_mutation = "team_sync_skip")]
        if !(self.spans && self.gpu.is_none()) {
            return self.disseminate(e, self.n - 1, self.me, |i| i);
        }
        if self.spans && self.gpu.is_none() {
            // (Its node-local arrivals are CPU atomics on host memory: not the GPU heap, whose
            // teams take the dissemination below.)
            return self.sync_nodes(e);
        }
        self.disseminate(e, self.n, self.me, |i| i);
    }

    /// The dissemination rounds of sync epoch `e` among `n` team PEs, of which this PE is the
    /// `me`-th and the `i`-th is team PE `pe(i)`.
    pub(super) fn disseminate(&self, e: u64, n: usize, me: usize, pe: impl Fn(usize) -> usize) {
        let (mut k, mut dist) = (0, 1);
        while dist < n {
            self.store_at(team::W_ROUND + k, pe((me + dist) % n), e);
            self.wait_ge(team::W_ROUND + k, e);
            k += 1;
            dist <<= 1;
        }
    }

    /// The sync of a team across nodes, in two levels: the members of each node arrive at
    /// their leader (the node's lowest team PE) through shared memory (an atomic add to its
    /// `W_NODE_ARRIVE` word, Release); the leaders run the dissemination rounds among
    /// themselves over the network (flags as puts); each leader then releases its node
    /// (epoch `e` into its `W_NODE_RELEASE`, Release, which the members poll with Acquire).
    /// Network latency is paid log2(nodes) times instead of log2(PEs), and no flag of a PE
    /// that is not a leader crosses the network. The happens-before chains of the flat sync
    /// hold: arrival (Release) -> leader (Acquire) -> leaders' rounds -> release (Release) ->
    /// member (Acquire). The arrival count cannot run ahead: a member arrives for epoch e+1
    /// only after its leader released epoch e, which it did after counting every arrival of e.
    pub(super) fn sync_nodes(&self, e: u64) {
        let n = self.n;
        #[cfg(ishmem_mutation = "team_sync_skip")]
        let n = n - 1;
        let plan = self.sync_plan(n);
        let (leaders, leader, members) = (&plan.leaders, plan.leader, plan.members);
        if leader != self.me {
            let a = self.remote("team sync word", self.word(team::W_NODE_ARRIVE), 8, leader);
            // SAFETY: a is the aligned arrival word of the leader's team area, mapped here (a
            // PE of this node).
            unsafe { AtomicU64::from_ptr(a as *mut u64) }.fetch_add(1, AcqRel);
            return self.wait(|| self.load_at(team::W_NODE_RELEASE, leader) >= e);
        }
        if members > 1 {
            self.wait_ge(team::W_NODE_ARRIVE, e * (members - 1));
        }
        let li = plan.place;
        self.disseminate(e, leaders.len(), li, |k| leaders[k]);
        if members > 1 {
            self.store_at(team::W_NODE_RELEASE, self.me, e);
        }
    }

    /// The plan of `sync_nodes` for the first `n` PEs of this team (cached in the state).
    pub(super) fn sync_plan(&self, n: usize) -> std::sync::Arc<crate::core::SyncPlan> {
        let key = (self.d.start, self.d.stride, n);
        let mut plans = self.st.sync_plans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = plans.get(&key) {
            return p.clone();
        }
        let node_of = |i: usize| self.st.nodes.node_of[self.d.world(i)];
        let mine = self.st.my_node;
        let mut leaders: Vec<usize> = Vec::new();
        let mut seen: std::collections::HashSet<usize> = std::collections::HashSet::new();
        let (mut leader, mut members) = (usize::MAX, 0u64);
        for i in 0..n {
            let node = node_of(i);
            if seen.insert(node) {
                leaders.push(i);
            }
            if node == mine {
                leader = leader.min(i);
                members += 1;
            }
        }
        // Teams come and go (splits); the plans of old ones are dropped now and then.
        if plans.len() >= 4 * self.st.cfg.teams_max {
            plans.clear();
        }
        let place = leaders.iter().position(|&l| l == self.me).unwrap_or(0);
        let p = std::sync::Arc::new(crate::core::SyncPlan { leaders, place, leader, members });
        plans.insert(key, p.clone());
        p
    }
}
