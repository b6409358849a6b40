//! The tree collectives of large teams across nodes (issue 29, docs/SCALING.md): broadcast,
//! reductions, scans, fcollect and collect in O(log n) steps, where the push forms cost the root (or
//! every PE) one message per member and the synchronized forms read every member.
//!
//! One binomial tree over the team's places: place `r`'s parent is `r` with its lowest set bit
//! cleared, its children are `r + 2^j` for every `2^j` below that bit (all `j` for place 0)
//! that is inside the team, and the subtree of child `r + 2^j` is the places
//! `[r + 2^j, r + 2^(j+1))` (clipped to the team): contiguous, in team order. Broadcasts put the
//! root at place 0 (place = team PE - root, modulo n); the others use team PE 0.
//!
//! - Down (broadcast; the second half of the others): a PE waits for its parent's flag in its
//!   `W_TREE_DOWN` word (`W_TREE_BCAST` in a broadcast), pulls the block from the parent's
//!   memory (the root's `src`, else the parent's `dst`), then flags its children, the largest
//!   subtree first.
//! - Up (reductions, fcollect, collect): a PE waits for the flag of each child in turn (child
//!   `r + 2^j` writes word `W_TREE_UP + j` of its parent), pulls what the child left in its
//!   `dst` (the combined vector of its subtree, or its subtree's blocks at their places), then
//!   leaves its own in its `dst` and flags its parent. A reduction combines its own source with
//!   its children's vectors in team order, and place 0's result goes down the tree, so every
//!   PE gets the same bits.
//! - The end: no PE leaves (and lets the program reuse its buffers) while another may still
//!   read them. On the fixed tree (team PE 0 at place 0) each PE acknowledges its pull to its
//!   parent (a later count in the same `W_TREE_UP` word) and waits for its children's
//!   acknowledgements (`tree_finish`): one step more, no sync. A broadcast's tree changes with
//!   its root, so who writes a PE's `W_TREE_BCAST` word changes too: it ends with a team sync,
//!   after which every flag of the call has been seen. No sync before either: a PE reads only
//!   what a flag of this call announced, and writes only its own `dst`.
//!
//! Flags are `tag(c)` (the count of tree phases this PE started on the team, the same
//! sequence on every member, above the call's signature), so values only grow. Each word has
//! one writer on the fixed tree (a PE's parent, or its child j), which writes it again only
//! after the reader saw the last value or with a larger one (its later flags); the broadcast
//! word's writer changes only across a sync. A flag of the same count with another signature
//! names a mismatched call (`check_tag`). Steps per call: ceil(log2 n) for a broadcast, then
//! the sync's; twice that plus one for the reductions and fcollect; four times plus one for
//! collect (its sizes and offsets first). Every write into a PE's team area in a call is one
//! that PE waits for in the call, so none is still on its way after it returns.

use super::*;

/// Rounds of the tree (`W_TREE_UP` words): teams up to 2^24 PEs.
const TREE_ROUNDS: usize = 24;
const _: () = assert!(team::W_TREE_UP + TREE_ROUNDS <= team::W_TREE_SIZE && team::W_TREE_SIZE + TREE_ROUNDS <= team::W_TREE_BCAST);

/// The lowest set bit of place `r` (`n` for place 0: the root's children span the team).
fn low_bit(r: usize, n: usize) -> usize {
    if r == 0 {
        n.next_power_of_two()
    } else {
        1 << r.trailing_zeros()
    }
}

/// Place `r`'s children in a team of `n`: `(j, r + 2^j)`, smallest subtree first.
fn children(r: usize, n: usize) -> impl DoubleEndedIterator<Item = (usize, usize)> {
    let lb = low_bit(r, n);
    let mut k = 0;
    while k < usize::BITS as usize - 1 && 1 << k < lb && r + (1 << k) < n {
        k += 1;
    }
    (0..k).map(move |j| (j, r + (1 << j)))
}

/// The end of place `r`'s subtree (exclusive).
fn subtree_end(r: usize, n: usize) -> usize {
    r.saturating_add(low_bit(r, n)).min(n)
}

/// Place `r`'s parent (r > 0) and the `W_TREE_UP` word it writes there.
fn parent(r: usize) -> (usize, usize) {
    (r & (r - 1), r.trailing_zeros() as usize)
}

impl<'a> Team<'a> {
    /// Whether a collective takes the tree form: the CPU backend, a team across nodes of at
    /// least `ISHMEM_COLL_TREE_MIN` PEs (0: never). Every PE decides alike (the size and the
    /// span are the team's; the caller adds only sizes every PE passes equally).
    pub(super) fn tree_ok(&self) -> bool {
        let min = self.st.cfg.coll_tree_min;
        self.gpu.is_none() && self.spans && min > 0 && self.n >= min.max(2) && self.n < 1 << TREE_ROUNDS
    }

    /// Starts a tree collective: its count on this PE (1, 2, ...).
    fn tree_begin(&self) -> u64 {
        let c = self.load(team::W_TREE_COUNT) + 1;
        self.set_own(team::W_TREE_COUNT, c);
        c
    }

    /// Flags the children of place `r` (team PE `abs(child)`), largest subtree first, in word
    /// `w`, that its data of count `c` is ready.
    fn flag_down(&self, w: usize, c: u64, r: usize, abs: impl Fn(usize) -> usize) {
        for (_, ch) in children(r, self.n).rev() {
            self.store_at(w, abs(ch), self.tag(c));
        }
    }

    /// The end of a call on the fixed tree (team PE 0 at place 0): this PE acknowledges to its
    /// parent that it has pulled (count `a` into the parent's `W_TREE_UP` word of this PE,
    /// after the count `c` flag up it wrote there), flags its children that its `dst` holds the
    /// data of count `c`, and waits until each child acknowledged: then no PE reads this PE's
    /// memory for the call any more, and no flag of the call is still to come to it.
    fn tree_finish(&self, c: u64, a: u64, r: usize) {
        if r > 0 {
            let (p, w) = parent(r);
            self.store_at(team::W_TREE_UP + w, p, self.tag(a));
        }
        self.flag_down(team::W_TREE_DOWN, c, r, |x| x);
        for (j, ch) in children(r, self.n) {
            self.wait_tag(team::W_TREE_UP + j, a, ch);
        }
    }

    /// Broadcast down the tree rooted at `root` (the root changes between calls, and with it
    /// who writes a PE's `W_TREE_DOWN` word: a team sync ends the call).
    ///
    /// # Safety
    /// As `broadcast`.
    pub(super) unsafe fn broadcast_tree(&self, dst: usize, src: usize, nb: usize, root: usize) {
        let c = self.tree_begin();
        let n = self.n;
        let abs = |r: usize| (r + root) % n;
        let r = (self.me + n - root) % n;
        if r == 0 {
            if dst != src {
                // SAFETY: the root's dest and source (the caller's contract: the same array or
                // disjoint); no PE reads the root's dest.
                unsafe { self.put_local(dst, src as *const u8, nb) };
            }
        } else {
            let (p, _) = parent(r);
            self.wait_tag(team::W_TREE_BCAST, c, abs(p));
            let from = if p == 0 { src } else { dst };
            // SAFETY: this PE's dest, which only this PE writes in the call and its children
            // read after the flags below; the parent's block is complete (its flag, seen) and
            // not written again before the closing sync.
            unsafe { self.pull(dst, from, abs(p), nb) };
        }
        self.flag_down(team::W_TREE_BCAST, c, r, abs);
        self.sync();
    }

    /// Reduction up the tree to team PE 0, its result down the tree (same bits everywhere).
    ///
    /// # Safety
    /// As `reduce`.
    pub(super) unsafe fn reduce_tree<T: Copy + Default>(&self, dst: usize, src: usize, nelem: usize, comb: fn(&mut [T], &[T])) {
        let (c, a) = (self.tree_begin(), self.tree_begin());
        let nb = nelem * size_of::<T>();
        let (r, n) = (self.me, self.n);
        let mut acc: Vec<T> = buffer(nelem);
        // SAFETY: acc holds nelem T (nb bytes); this PE's source, which no PE writes in the
        // call (in place, this PE writes it below, after this read).
        unsafe { self.get(acc.as_mut_ptr().cast(), src, r, nb) };
        let mut part: Vec<T> = buffer(nelem);
        for (j, ch) in children(r, n) {
            // The mutant: every child but the first is left out (its subtree's vector lost).
            #[cfg(ishmem_mutation = "tree_skip_child")]
            if j > 0 {
                continue;
            }
            self.wait_tag(team::W_TREE_UP + j, c, ch);
            // SAFETY: part holds nb bytes; the child's dest holds its subtree's vector (its
            // flag, seen), which it rewrites only after this PE's flag down.
            unsafe { self.get(part.as_mut_ptr().cast(), dst, ch, nb) };
            comb(&mut acc, &part);
        }
        // SAFETY: acc holds nb bytes; this PE's dest, read by its parent after the flag
        // below (or, on place 0, by its children after theirs).
        unsafe { self.put_local(dst, acc.as_ptr().cast(), nb) };
        if r > 0 {
            let (p, w) = parent(r);
            self.store_at(team::W_TREE_UP + w, p, self.tag(c));
            self.wait_tag(team::W_TREE_DOWN, c, p);
            // SAFETY: this PE's dest (its parent read the partial vector before its flag down,
            // seen); the parent's dest holds the result.
            unsafe { self.pull(dst, dst, p, nb) };
        }
        self.tree_finish(c, a, r);
    }

    /// Prefix combination (inclusive or exclusive scan) on the fixed tree: up, each PE
    /// combines its source with its children's subtree totals in team order (keeping, for
    /// child k, the combination of its own source and children 0..k, the part of the prefix
    /// that lies in its subtree before that child), leaves the total in its `dst` and flags its
    /// parent; down, each PE waits for its parent to write the combination of every place
    /// before it (its exclusive prefix) into its `dst`, and writes into each child's `dst` that
    /// prefix combined with the part before the child, then flags it. 2L steps, no
    /// acknowledgement round: every access to a PE's memory in the call ends before the flag
    /// down it waits for. Operands are always combined in team order (left before right), so
    /// the bits depend on the inputs and the team size only, not on timing.
    ///
    /// # Safety
    /// As `reduce`.
    pub(super) unsafe fn scan_tree<T: Copy + Default>(
        &self,
        dst: usize,
        src: usize,
        nelem: usize,
        inclusive: bool,
        comb: fn(&mut [T], &[T]),
    ) {
        let c = self.tree_begin();
        let nb = nelem * size_of::<T>();
        let (r, n) = (self.me, self.n);
        let mut own: Vec<T> = buffer(nelem);
        // SAFETY: own holds nb bytes; this PE's source, which no PE writes in the call (in
        // place, this PE writes it below, after this read).
        unsafe { self.get(own.as_mut_ptr().cast(), src, r, nb) };
        // befores[k]: own source combined with the totals of children 0..k (team order).
        let mut befores: Vec<Vec<T>> = Vec::new();
        let mut total = own.clone();
        let mut part: Vec<T> = buffer(nelem);
        for (j, ch) in children(r, n) {
            befores.push(total.clone());
            self.wait_tag(team::W_TREE_UP + j, c, ch);
            // SAFETY: part holds nb bytes; the child's dest holds its subtree's total (its
            // flag, seen), which it rewrites only after this PE's flag down.
            unsafe { self.get(part.as_mut_ptr().cast(), dst, ch, nb) };
            comb(&mut total, &part);
        }
        // The combination of every place before this one (none on place 0).
        let prefix: Option<Vec<T>> = if r > 0 {
            // SAFETY: total holds nb bytes; this PE's dest, read by its parent after the flag
            // below and written by it (the prefix) before its flag down.
            unsafe { self.put_local(dst, total.as_ptr().cast(), nb) };
            let (p, w) = parent(r);
            self.store_at(team::W_TREE_UP + w, p, self.tag(c));
            self.wait_tag(team::W_TREE_DOWN, c, p);
            let mut e: Vec<T> = buffer(nelem);
            // SAFETY: e holds nb bytes; this PE's dest, which its parent wrote before its flag
            // (seen) and nobody else accesses in the call.
            unsafe { self.get(e.as_mut_ptr().cast(), dst, r, nb) };
            Some(e)
        } else {
            None
        };
        // Each child's prefix: this PE's prefix, then what of its subtree lies before the child.
        let mut sent: Vec<Vec<T>> = Vec::with_capacity(befores.len());
        for ((_, ch), before) in children(r, n).zip(befores) {
            // The mutant: each child gets this PE's own source as the part before it (its
            // left siblings' subtrees lost).
            #[cfg(ishmem_mutation = "tree_scan_prefix")]
            let before = {
                drop(before);
                own.clone()
            };
            let v = match &prefix {
                Some(e) => {
                    let mut v = e.clone();
                    comb(&mut v, &before);
                    v
                }
                None => before,
            };
            // SAFETY: v holds nb bytes, kept in `sent` until release_sources below; the
            // child's dest, which it left to this PE (its flag up, seen: its total pulled
            // above) and reads only after the flag below.
            unsafe { self.push(dst, v.as_ptr().cast(), ch, nb) };
            self.store_at(team::W_TREE_DOWN, ch, self.tag(c));
            sent.push(v);
        }
        let result = match (prefix, inclusive) {
            (Some(mut e), true) => {
                comb(&mut e, &own);
                e
            }
            (Some(e), false) => e,
            (None, true) => own,
            (None, false) => buffer(nelem),
        };
        // SAFETY: result holds nb bytes; this PE's dest, which no other PE accesses any more
        // in the call (its parent's pull and write ended before its flag down, seen).
        unsafe { self.put_local(dst, result.as_ptr().cast(), nb) };
        self.release_sources();
        drop(sent);
    }

    /// fcollect: the blocks up the tree to team PE 0 (each PE's subtree at its places in
    /// `dst`), then the whole array down the tree.
    ///
    /// # Safety
    /// As `fcollect`.
    pub(super) unsafe fn fcollect_tree(&self, dst: usize, src: usize, nb: usize) {
        let (c, a) = (self.tree_begin(), self.tree_begin());
        let (r, n) = (self.me, self.n);
        // SAFETY: block r of this PE's dest (n blocks), from its source (disjoint).
        unsafe { self.put_local(dst + r * nb, src as *const u8, nb) };
        for (j, ch) in children(r, n) {
            #[cfg(ishmem_mutation = "tree_skip_child")]
            if j > 0 {
                continue;
            }
            self.wait_tag(team::W_TREE_UP + j, c, ch);
            let end = subtree_end(ch, n);
            // SAFETY: the child's subtree's blocks, at the same places of both dests; the
            // child wrote them before its flag (seen) and rewrites nothing in the call.
            unsafe { self.pull(dst + ch * nb, dst + ch * nb, ch, (end - ch) * nb) };
        }
        if r > 0 {
            let (p, w) = parent(r);
            self.store_at(team::W_TREE_UP + w, p, self.tag(c));
            self.wait_tag(team::W_TREE_DOWN, c, p);
            let end = subtree_end(r, n);
            // SAFETY: the blocks outside this PE's subtree, from the parent's dest, complete
            // (its flag down, seen); this PE's children read its dest only after its flags.
            unsafe {
                self.pull(dst, dst, p, r * nb);
                self.pull(dst + end * nb, dst + end * nb, p, (n - end) * nb);
            }
        }
        self.tree_finish(c, a, r);
    }

    /// collect: the subtree sizes up the tree, each PE's offset and the total down it (then
    /// `check_dest`), the blocks up at their offsets, the whole array down. Returns the total.
    ///
    /// # Safety
    /// As `collect`.
    pub(super) unsafe fn collect_tree(&self, dst: usize, src: usize, nb: usize, check_dest: impl Fn(usize)) -> usize {
        let (c1, c2, a) = (self.tree_begin(), self.tree_begin(), self.tree_begin());
        let (r, n) = (self.me, self.n);
        // Sizes up: this PE's subtree, and each child's (in team order after its own).
        let mut subs: Vec<(usize, usize, usize)> = Vec::new();
        let mut sub = nb;
        for (j, ch) in children(r, n) {
            self.wait_tag(team::W_TREE_UP + j, c1, ch);
            let s = self.load(team::W_TREE_SIZE + j) as usize;
            subs.push((j, ch, s));
            sub = sub.saturating_add(s);
        }
        let (off, total) = if r == 0 {
            (0, sub)
        } else {
            let (p, w) = parent(r);
            self.store_at(team::W_TREE_SIZE + w, p, sub as u64);
            self.store_at(team::W_TREE_UP + w, p, self.tag(c1));
            self.wait_tag(team::W_TREE_DOWN, c1, p);
            (self.load(team::W_TREE_OFF) as usize, self.load(team::W_TREE_TOTAL) as usize)
        };
        // Offsets down.
        let mut at = off.saturating_add(nb);
        let mut offs = Vec::with_capacity(subs.len());
        for &(_, ch, s) in &subs {
            offs.push(at);
            self.store_at(team::W_TREE_OFF, ch, at as u64);
            self.store_at(team::W_TREE_TOTAL, ch, total as u64);
            at = at.saturating_add(s);
        }
        self.flag_down(team::W_TREE_DOWN, c1, r, |x| x);
        check_dest(total);
        // Blocks up.
        // SAFETY: this PE's block of the dest check_dest accepted, from its source (disjoint).
        unsafe { self.put_local(dst + off, src as *const u8, nb) };
        for (&(j, ch, s), &o) in subs.iter().zip(&offs) {
            self.wait_tag(team::W_TREE_UP + j, c2, ch);
            // SAFETY: the child's subtree's blocks at the same offsets of both dests (inside
            // the total), written before its flag (seen), not rewritten in the call.
            unsafe { self.pull(dst + o, dst + o, ch, s) };
        }
        if r > 0 {
            let (p, w) = parent(r);
            self.store_at(team::W_TREE_UP + w, p, self.tag(c2));
            self.wait_tag(team::W_TREE_DOWN, c2, p);
            let end = off + sub;
            // SAFETY: the bytes outside this PE's subtree, from the parent's dest, complete (its
            // flag down, seen); this PE's children read its dest only after its flags.
            unsafe {
                self.pull(dst, dst, p, off);
                self.pull(dst + end, dst + end, p, total - end);
            }
        }
        self.tree_finish(c2, a, r);
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every place but 0 has one parent whose children list it, and the subtrees of a place's
    /// children tile the places after it up to its subtree's end, in order.
    #[test]
    fn tree_covers_every_place_once() {
        for n in 1..70 {
            let mut seen = vec![0; n];
            for r in 0..n {
                let mut next = r + 1;
                for (j, ch) in children(r, n) {
                    assert_eq!(ch, next, "n {n} r {r}");
                    assert_eq!(parent(ch), (r, j));
                    seen[ch] += 1;
                    next = subtree_end(ch, n);
                }
                assert_eq!(next, subtree_end(r, n), "n {n} r {r}");
            }
            assert!(seen[0] == 0 && seen[1..].iter().all(|&s| s == 1), "n {n}");
            // A place's depth is its number of set bits: at most ceil(log2 n) steps.
            let depth = (0..n).map(|r| r.count_ones()).max().unwrap_or(0);
            assert!(depth <= n.next_power_of_two().trailing_zeros(), "n {n}");
        }
    }
}
