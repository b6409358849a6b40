//! The collectives' algorithms as the entries call them: broadcast, fcollect, alltoall,
//! collect, reductions, scans, and the split's bitmap gather; each picks its push form or the
//! synchronized one.

use super::*;
use crate::core::rma;

impl<'a> Team<'a> {
    // ---------------------------------------------------------------- algorithms

    /// Broadcast of `nb` bytes from team PE `root`'s `src` to every PE's `dst` (root's too).
    /// Small: every PE pulls the whole block from the root. Large (3+ PEs): each PE pulls one
    /// slice from the root, then the slices it lacks from their owners' `dst`.
    ///
    /// # Safety
    /// The buffer contract of every collective algorithm here: every team PE calls it with the
    /// same sizes and root (the entries' call agreement); `[dst, dst+nb)` and `[src, src+nb)`
    /// are symmetric ranges of this PE (in range, aligned for the element type where one
    /// applies), the same array or disjoint as the collective allows (the checked entries of
    /// `core::coll_entry` check all this), and the program does not access them, on any PE,
    /// until the call returns.
    pub unsafe fn broadcast(&self, dst: usize, src: usize, nb: usize, root: usize) {
        self.enter(Kind::Broadcast, nb as u64, root as u64);
        // The push broadcast (the root stays calls ahead of its members) beat the tree at 8
        // and 16 PEs across nodes (docs/SCALING.md): the tree takes the teams it cannot.
        if self.tree_ok() && !self.push_ok(nb) && nb < self.st.cfg.bcast_scatter_min {
            // SAFETY: forwarded contract.
            return unsafe { self.broadcast_tree(dst, src, nb, root) };
        }
        if self.push_ok(nb) {
            // SAFETY: forwarded contract.
            return unsafe { self.broadcast_push(dst, src, nb, root) };
        }
        self.sync();
        self.check_neighbour();
        // SAFETY (the pulls below): this PE's dest (the caller's contract) is written only by
        // this PE during the call; the root's source is not written during it, and a slice of
        // PE j's dest is read only after the sync that follows PE j's write of it, and written
        // by nobody after that.
        if self.n >= 3 && nb >= self.st.cfg.bcast_scatter_min && nb > 0 {
            if self.me == root {
                // SAFETY: as above (the root's dest may be its source: the copy allows it).
                unsafe { self.pull(dst, src, root, nb) };
            } else {
                let (s, l) = byte_slice(nb, self.n, self.me);
                // SAFETY: as above; slice s..s+l lies inside nb.
                unsafe { self.pull(dst + s, src + s, root, l) };
            }
            self.sync();
            if self.me != root {
                for k in 1..self.n {
                    let j = (self.me + k) % self.n;
                    let (s, l) = byte_slice(nb, self.n, j);
                    if j == root {
                        // SAFETY: as above.
                        unsafe { self.pull(dst + s, src + s, root, l) };
                    } else {
                        // SAFETY: as above: PE j wrote slice j of its dest before the sync.
                        unsafe { self.pull(dst + s, dst + s, j, l) };
                    }
                }
            }
        } else {
            // SAFETY: as above.
            unsafe { self.pull(dst, src, root, nb) };
        }
        self.sync();
    }

    /// fcollect: block j of `dst` (`nb` bytes each) is team PE j's `src`.
    ///
    /// # Safety
    /// As `broadcast`, with `dst` of `n * nb` bytes and `src` of `nb`, disjoint.
    pub unsafe fn fcollect(&self, dst: usize, src: usize, nb: usize) {
        self.enter(Kind::Fcollect, nb as u64, 0);
        if self.tree_ok() && nb.saturating_mul(self.n) < self.st.cfg.bcast_scatter_min {
            // SAFETY: forwarded contract.
            return unsafe { self.fcollect_tree(dst, src, nb) };
        }
        // SAFETY: forwarded contract.
        unsafe { self.exchange(dst, src, nb, false) };
    }

    /// alltoall: block j of this PE's `dst` is block `me` of team PE j's `src`.
    ///
    /// # Safety
    /// As `broadcast`, with `dst` and `src` of `n * nb` bytes each, disjoint.
    pub unsafe fn alltoall(&self, dst: usize, src: usize, nb: usize) {
        self.enter(Kind::Alltoall, nb as u64, 0);
        // SAFETY: forwarded contract.
        unsafe { self.exchange(dst, src, nb, true) };
    }

    /// alltoalls: `nelems` elements of `elem` bytes to and from each PE, `dstride` and `sstride`
    /// bytes apart in dest and source (block `j` starts `j * nelems` strides in). Each PE pulls
    /// its blocks, one strided get per PE in an order rotated by its number, between two syncs
    /// (so every source is ready before the first get and no dest is written after the call).
    ///
    /// # Safety
    /// As `broadcast`, with dest and source each spanning `n * nelems` elements at their
    /// strides, disjoint.
    pub unsafe fn alltoalls(&self, dst: usize, src: usize, dstride: usize, sstride: usize, elem: usize, nelems: usize) {
        let strides = (dstride / elem) as u32 as u64 | ((sstride / elem) as u32 as u64) << 32;
        self.enter(Kind::Alltoalls, (nelems * elem) as u64, strides);
        self.sync();
        self.check_neighbour();
        if nelems > 0 {
            let (dspan, sspan) = ((nelems - 1) * dstride + elem, (nelems - 1) * sstride + elem);
            let from = src + self.me * nelems * sstride;
            for k in 0..self.n {
                let j = (self.me + k) % self.n;
                let sym = rma::Strided { addr: from, stride: sstride, span: sspan };
                let local = rma::Strided { addr: dst + j * nelems * dstride, stride: dstride, span: dspan };
                // SAFETY: the local side is this PE's dest block j, inside the dest span of the
                // caller's contract (symmetric, disjoint from source, untouched by the program
                // until return); reach checks PE j's side.
                unsafe { rma::strided(self.st, self.func, false, sym, local, elem, nelems, self.d.world(j)) };
            }
        }
        self.sync();
    }

    /// fcollect (`all` false) or alltoall (`all`): the push paths for small blocks, else each
    /// PE pulls its blocks, in an order rotated by its number so that no PE is read by all at
    /// once, between two syncs.
    ///
    /// # Safety
    /// As `fcollect` (`all` false) or `alltoall`.
    pub(super) unsafe fn exchange(&self, dst: usize, src: usize, nb: usize, all: bool) {
        if self.reduce_push_ok(nb) {
            // SAFETY: forwarded contract.
            return unsafe { self.move_scratch(dst, src, nb, all) };
        }
        if self.push_ok(nb) {
            // SAFETY: forwarded contract.
            return unsafe { self.move_push(dst, src, nb, all) };
        }
        self.sync();
        self.check_neighbour();
        let from = if all { src + self.me * nb } else { src };
        for k in 0..self.n {
            let j = (self.me + k) % self.n;
            // SAFETY: block j of this PE's dest (inside its n * nb bytes, written only here);
            // PE j's source is not written until the sync below.
            unsafe { self.pull(dst + j * nb, from, j, nb) };
        }
        self.sync();
    }

    /// collect: the PEs' `src` blocks (`nb` bytes here, each PE its own size) concatenated in
    /// team order. Each PE publishes its size in its VALUE word; `check_dest(total)` validates
    /// the destination once the total is known. Returns the total bytes.
    ///
    /// # Safety
    /// As `broadcast` for `src` (`nb` bytes, this PE's own size); `check_dest(total)` must end
    /// the job unless `[dst, dst+total)` is a symmetric range of this PE disjoint from `src`
    /// (then the rest of `broadcast`'s contract holds for it).
    pub unsafe fn collect(&self, dst: usize, src: usize, nb: usize, check_dest: impl Fn(usize)) -> usize {
        self.enter(Kind::Collect, 0, 0);
        // Sizes differ per PE, so the choice depends on the team alone.
        if self.tree_ok() {
            // SAFETY: forwarded contract.
            return unsafe { self.collect_tree(dst, src, nb, check_dest) };
        }
        if self.push_ok(0) && self.slot_bytes() >= 64 {
            // SAFETY: forwarded contract.
            return unsafe { self.collect_push(dst, src, nb, check_dest) };
        }
        self.store_at(team::W_VALUE, self.me, nb as u64);
        self.sync();
        self.check_neighbour();
        let sizes: Vec<usize> = (0..self.n).map(|i| self.load_at(team::W_VALUE, i) as usize).collect();
        let (offs, total) = prefix_offsets(&sizes);
        check_dest(total);
        for k in 0..self.n {
            let j = (self.me + k) % self.n;
            // SAFETY: block j lies inside dst..dst+total, which check_dest accepted; PE j's
            // source is not written until the sync below.
            unsafe { self.pull(dst + offs[j], src, j, sizes[j]) };
        }
        self.sync();
        total
    }

    /// Combines elements `[first, first+len)` of every team PE's `src`, in team order, into
    /// `acc` (`len` elements).
    ///
    /// # Safety
    /// `src` is the team's checked source of a reduction or scan (as `reduce`), holding
    /// elements `[first, first+len)`, which no PE writes during the call.
    pub(super) unsafe fn combine_into<T: Copy + Default>(
        &self,
        acc: &mut [T],
        src: usize,
        first: usize,
        upto: usize,
        comb: fn(&mut [T], &[T]),
    ) {
        let es = size_of::<T>();
        let len = acc.len();
        let at = src + first * es;
        // SAFETY: acc is a slice of this thread's, its bytes the length given; PE 0's source
        // is not written during the call (the caller's contract).
        unsafe { self.get(acc.as_mut_ptr().cast(), at, 0, std::mem::size_of_val(acc)) };
        let mut stage: Vec<T> = Vec::new();
        for j in 1..upto {
            let p = self.view(at, j, len, &mut stage);
            // SAFETY: p points to len elements of T (mapped symmetric memory that no PE writes
            // during this phase of the collective, or the staging copy), aligned (the caller
            // checked `src`'s alignment; heaps and staging buffers are 8-byte aligned).
            let other = unsafe { std::slice::from_raw_parts(p, len) };
            comb(acc, other);
        }
    }

    /// Reduction of `nelem` elements over the team into every PE's `dst` (`dst` may be `src`).
    /// Small: every PE combines all PEs' vectors into a host buffer, a sync, then writes its
    /// `dst`. Large (3+ PEs, at least ISHMEM_REDUCE_SCATTER_MIN bytes): PE r combines slice r
    /// into its `dst`, a sync, then each PE pulls the other slices from their owners' `dst`.
    /// Both combine in team order, so every PE gets the same bits (floating point included).
    /// Across nodes on the push path (`push.rs`): up to a scratch slot in one push; larger
    /// ones chunk by chunk (2 PEs any size; 3+ PEs up to `REDUCE_SCATTER_PUSH_SLOTS` slots, in
    /// push reduce-scatter rounds of `n` slots and a tail of chunks), also in team order.
    ///
    /// # Safety
    /// As `broadcast`, with `dst` and `src` of `nelem` elements of `T` each, aligned for `T`,
    /// the same array or disjoint.
    pub unsafe fn reduce<T: Copy + Default>(&self, dst: usize, src: usize, nelem: usize, comb: fn(&mut [T], &[T])) {
        let es = size_of::<T>();
        let nb = nelem * es;
        self.enter(Kind::Reduce, nb as u64, 0);
        if self.tree_ok() && (nb < self.st.cfg.reduce_scatter_min || nelem < self.n) {
            // SAFETY: forwarded contract.
            return unsafe { self.reduce_tree(dst, src, nelem, comb) };
        }
        if self.reduce_push_ok(nb) {
            // SAFETY: src is this PE's checked source of nb bytes (the caller's contract).
            let c = unsafe { self.reduce_push(nb, |_| src, true) };
            // SAFETY: forwarded contract; c is the count reduce_push completed.
            return unsafe { self.combine_pushed(dst, src, nelem, c, self.n, comb) };
        }
        if let Some(chunk) = self.reduce_push_chunk(nb, es) {
            let mut off = 0;
            if self.reduce_scatter_rounds() {
                // 3+ PEs: rounds of n chunks, each a push reduce-scatter and all-gather.
                while nelem - off >= self.n * chunk {
                    // SAFETY: elements off..off + n * chunk of this PE's checked dest and
                    // source (the caller's contract); a chunk fits a slot.
                    unsafe { self.reduce_scatter_round(dst, src, off, chunk, comb) };
                    off += self.n * chunk;
                }
            }
            // Chunk by chunk through the scratch slots, each chunk a push reduction of its own
            // (a count of the all-send class; every PE cuts alike).
            while off < nelem {
                let l = chunk.min(nelem - off);
                #[cfg(not(ishmem_mutation = "reduce_chunk_src"))]
                let from = src + off * es;
                // The mutant: every chunk sends the first chunk's elements.
                #[cfg(ishmem_mutation = "reduce_chunk_src")]
                let from = src;
                // SAFETY: elements off..off+l of this PE's checked source; in place, this PE's
                // chunks of dst = src before off were written after they were sent (each push
                // completed locally before it returned), the rest not yet.
                let c = unsafe { self.reduce_push(l * es, |_| from, true) };
                // SAFETY: forwarded contract for the chunk; c is the count reduce_push completed.
                unsafe { self.combine_pushed(dst + off * es, src + off * es, l, c, self.n, comb) };
                off += l;
            }
            return;
        }
        self.sync();
        self.check_neighbour();
        if self.n >= 3 && nb >= self.st.cfg.reduce_scatter_min && nelem >= self.n {
            let (s0, len) = slice(nelem, self.n, self.me);
            let chunk = (CHUNK_BYTES / es).max(1);
            let mut acc: Vec<T> = Vec::new();
            let mut c = 0;
            while c < len {
                let l = chunk.min(len - c);
                acc.resize(l, T::default());
                // SAFETY: no PE writes a source before the sync below (slices of dst are
                // written by their owners only, and in place each owner writes its slice after
                // reading it, here, before any other PE reads it: the sync below).
                unsafe { self.combine_into(&mut acc, src, s0 + c, self.n, comb) };
                // SAFETY: acc holds l elements; elements s0+c.. of this PE's dest lie inside
                // it, read by other PEs only after the sync below.
                unsafe { self.put_local(dst + (s0 + c) * es, acc.as_ptr().cast(), l * es) };
                c += l;
            }
            self.sync();
            for k in 1..self.n {
                let j = (self.me + k) % self.n;
                let (s, l) = slice(nelem, self.n, j);
                // SAFETY: slice j of this PE's dest (written only here, after the sync) from
                // PE j's dest, final since the sync above.
                unsafe { self.pull(dst + s * es, dst + s * es, j, l * es) };
            }
        } else {
            let mut acc: Vec<T> = buffer(nelem);
            let chunk = (CHUNK_BYTES / es).max(1);
            for (i, part) in acc.chunks_mut(chunk).enumerate() {
                // SAFETY: no PE writes its source before the sync below.
                unsafe { self.combine_into(part, src, i * chunk, self.n, comb) };
            }
            self.sync();
            // SAFETY: acc holds nb bytes; this PE's dest, which no PE reads after the sync.
            unsafe { self.put_local(dst, acc.as_ptr().cast(), nb) };
            return;
        }
        self.sync();
    }

    /// Prefix sums over the team: PE i's `dst` = combination of PEs 0..=i (`inclusive`) or
    /// 0..i (PE 0: zeros) of `src`. Small: each PE reads the PEs below it into a host buffer,
    /// a sync, then writes its `dst`. Large (3+ PEs, at least ISHMEM_REDUCE_SCATTER_MIN bytes):
    /// PE r runs the scan of slice r over all PEs and writes each PE's result slice into that
    /// PE's `dst` (reading each source chunk before writing the same PE's result).
    ///
    /// # Safety
    /// As `reduce`.
    pub unsafe fn scan<T: Copy + Default>(&self, dst: usize, src: usize, nelem: usize, inclusive: bool, comb: fn(&mut [T], &[T])) {
        let es = size_of::<T>();
        let nb = nelem * es;
        self.enter(Kind::Scan, nb as u64, 0);
        if self.tree_ok() && (nb < self.st.cfg.reduce_scatter_min || nelem < self.n) {
            // SAFETY: forwarded contract.
            return unsafe { self.scan_tree(dst, src, nelem, inclusive, comb) };
        }
        if self.reduce_push_ok(nb) {
            // SAFETY: src is this PE's checked source of nb bytes (the caller's contract).
            let c = unsafe { self.reduce_push(nb, |_| src, true) };
            let upto = if inclusive { self.me + 1 } else { self.me };
            // SAFETY: forwarded contract; c is the count reduce_push completed.
            return unsafe { self.combine_pushed(dst, src, nelem, c, upto, comb) };
        }
        self.sync();
        self.check_neighbour();
        if self.n >= 3 && nb >= self.st.cfg.reduce_scatter_min && nelem >= self.n {
            let (s0, len) = slice(nelem, self.n, self.me);
            let chunk = (CHUNK_BYTES / es).max(1);
            let (mut acc, mut cur): (Vec<T>, Vec<T>) = (Vec::new(), Vec::new());
            let mut c = 0;
            while c < len {
                let l = chunk.min(len - c);
                let at = (s0 + c) * es;
                acc.clear();
                acc.resize(l, T::default());
                cur.resize(l, T::default());
                for j in 0..self.n {
                    // PE j's source chunk is read before its result overwrites it (in place).
                    let need = inclusive || j + 1 < self.n;
                    if need {
                        // SAFETY: cur holds l elements of this thread's; slice r of PE j's
                        // source is written (in place) only by this PE, below, after this read.
                        unsafe { self.get(cur.as_mut_ptr().cast(), src + at, j, l * es) };
                    }
                    if !inclusive {
                        // SAFETY: acc holds l elements, kept until the sync below (which
                        // completes the puts); slice r of PE j's dest is written only by this
                        // PE and read by PE j after the sync.
                        unsafe { self.push(dst + at, acc.as_ptr().cast(), j, l * es) };
                    }
                    if need {
                        if j == 0 {
                            acc.copy_from_slice(&cur);
                        } else {
                            comb(&mut acc, &cur);
                        }
                    }
                    if inclusive {
                        // SAFETY: as the exclusive push above.
                        unsafe { self.push(dst + at, acc.as_ptr().cast(), j, l * es) };
                    }
                }
                c += l;
            }
        } else {
            let upto = if inclusive { self.me + 1 } else { self.me };
            let mut acc: Vec<T> = buffer(nelem);
            if upto > 0 {
                let chunk = (CHUNK_BYTES / es).max(1);
                for (i, part) in acc.chunks_mut(chunk).enumerate() {
                    // SAFETY: no PE writes its source before the sync below.
                    unsafe { self.combine_into(part, src, i * chunk, upto, comb) };
                }
            }
            self.sync();
            // SAFETY: acc holds nb bytes; this PE's dest, which no PE reads after the sync.
            unsafe { self.put_local(dst, acc.as_ptr().cast(), nb) };
            return;
        }
        self.sync();
    }

    // ---------------------------------------------------------------- team creation

    /// Every team PE's free-slot bitmap (`mine` is this PE's): published in the SPLIT words of
    /// this (parent) team's sync area, read after a sync, followed by a sync so that the words
    /// can be reused.
    pub fn gather_bitmaps(&self, mine: &[u64; team::SPLIT_WORDS], words: usize) -> Vec<[u64; team::SPLIT_WORDS]> {
        let at = self.word(team::W_SPLIT);
        let words = words.min(team::SPLIT_WORDS);
        // SAFETY: mine holds SPLIT_WORDS >= words words; the SPLIT words of this PE's team
        // area, which other PEs read only after the sync below.
        unsafe { self.put_local(at, mine.as_ptr().cast(), words * 8) };
        self.sync();
        self.check_neighbour();
        let all = (0..self.n)
            .map(|i| {
                let mut b = [0u64; team::SPLIT_WORDS];
                // SAFETY: b holds SPLIT_WORDS >= words words; PE i's SPLIT words are not
                // written until the sync below.
                unsafe { self.get(b.as_mut_ptr().cast(), at, i, words * 8) };
                b
            })
            .collect();
        self.sync();
        all
    }
}
