//! RMA: puts (inject, ordered, flag, bounced through registered buffers), gets (blocking,
//! nbi, bounced), the flush reads that complete puts at their targets, and fence.

use super::sys::*;
use super::*;

impl Fabric {
    /// Waits until every write issued so far has completed locally (success or error): its
    /// source buffer is free; with `put_flush` a put may not be at the target yet.
    pub(super) fn drain_writes(&self) -> Result<(), String> {
        self.wait_idle(false).map(|_| ()).map_err(|t| self.stalled("waiting for puts", t))
    }

    /// Posts the flush reads of quiet (and of a fence across classes): 8 bytes from every PE
    /// with puts since its last flush, into the sink slot. The provider orders them after those
    /// puts (FI_ORDER_RMA_RAW), so their completion means the puts are at the target. A PE is
    /// marked after its put is posted, so a flush that misses a concurrent put leaves the mark
    /// for the next one.
    #[allow(clippy::vec_box)] // each waiter's address is a context: it must not move
    pub(super) fn post_flush(&self) -> Result<Vec<Box<Waiter>>, String> {
        if !self.info.put_flush {
            return Ok(Vec::new());
        }
        let t = self.tables();
        let mut todo = Vec::new();
        for (pe, d) in t.dirty.iter().enumerate() {
            if !d.swap(false, Ordering::AcqRel) {
                continue;
            }
            // Any region of pe will do (a put to pe needed one).
            if let Some((key, base)) = t.regions.iter().find_map(|r| r.remote[pe]) {
                todo.push((pe, t.peers[pe], if self.virt_addr { base } else { 0 }, key));
            }
        }
        drop(t);
        let desc = if self.mr_local { self.scratch.desc } else { ptr::null_mut() };
        let mut waiters = Vec::with_capacity(todo.len());
        for (pe, dest, addr, key) in todo {
            let w = Waiter::new(OpKind::Flush, pe, 1);
            // The sink (slot 0) is written by every flush read and never read.
            // SAFETY: the sink is 8 writable bytes of the registered scratch buffer (desc its
            // descriptor, or null when the provider needs none), which only flush reads write;
            // w is waited for (here or by wait_flush) before the Fabric may go.
            let posted = unsafe { self.post_reads(pe, dest, self.scratch.base, 8, desc, addr, key, Some(&w)) };
            match posted {
                Ok(()) => waiters.push(w),
                Err(e) => {
                    for w in waiters {
                        let _ = self.wait(w);
                    }
                    return Err(e);
                }
            }
        }
        Ok(waiters)
    }

    /// Waits for flush reads; every error is kept.
    #[allow(clippy::vec_box)]
    pub(super) fn wait_flush(&self, waiters: Vec<Box<Waiter>>, errors: &mut Vec<String>) {
        for w in waiters {
            if let Err((e, _)) = self.wait(w) {
                errors.push(e);
            }
        }
    }

    /// Every write issued so far is at its target: local completion, then a flush.
    pub(super) fn complete_writes(&self) -> Result<(), String> {
        let _hold = self.hold_posts();
        let flush = self.post_flush()?;
        let mut errors = Vec::new();
        let target = match self.wait_idle(false) {
            Ok(at) => at,
            Err(t) => {
                self.keep_stalled(flush); // a late completion must find them alive
                return Err(self.stalled("waiting for puts", t));
            }
        };
        self.wait_flush(flush, &mut errors);
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        self.clear_classes(target);
        Ok(())
    }

    /// After every write issued up to `target` was seen complete: forgets the classes posted,
    /// unless a write was issued since (it may still be in flight) or marked since the snapshot.
    /// A write is marked after it is counted as issued, so a mark missing from the snapshot
    /// changes the word before the compare-exchange, and one in it belongs to a write counted
    /// by `target` (complete).
    pub(super) fn clear_classes(&self, target: u64) {
        let seen = self.classes.load(Ordering::SeqCst);
        if seen & CLASS_BITS != 0 && self.issued_w.load(Ordering::SeqCst) == target {
            let _ = self.classes.compare_exchange(seen, seen & !CLASS_BITS, Ordering::SeqCst, Ordering::Relaxed);
        }
    }

    /// Records a write of `class` (after [`Fabric::issue`] counted it).
    #[inline]
    pub(super) fn mark(&self, class: u64) {
        let _ = self.classes.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |c| Some(c.wrapping_add(CLASS_MARK) | class));
    }

    /// Takes the calling thread's pending fence on this Fabric, if any.
    #[inline]
    pub(super) fn take_fence(&self) -> bool {
        // After this thread's thread-locals were destroyed (finalize run by the exit hook: glibc
        // destroys the main thread's before it runs the hooks) the pending fence is unknown:
        // every write is then taken as fenced (ordered after all earlier ones: safe, slower).
        FENCED
            .try_with(|f| {
                let mut f = f.borrow_mut();
                match f.iter().position(|&id| id == self.id) {
                    Some(i) => {
                        f.swap_remove(i);
                        true
                    }
                    None => false,
                }
            })
            .unwrap_or(true)
    }

    /// Whether the calling thread has a fence pending on this Fabric (thread-locals
    /// destroyed: yes, as `take_fence`).
    pub(super) fn fence_pending(&self) -> bool {
        FENCED.try_with(|f| f.borrow().contains(&self.id)).unwrap_or(true)
    }

    /// Whether a write of the provider's (an RMA write or a provider atomic) may be in flight
    /// since the last quiet or fence wait.
    fn provider_writes_out(&self) -> bool {
        self.classes.load(Ordering::SeqCst) & CLASS_BITS != 0
    }

    /// Before a batched operation (AMO, put, put with signal): the calling thread's pending
    /// fence. Where only batches can be outstanding, nothing to wait for: each target applies
    /// one PE's batches in their order (`batch::InOrder`), so the operation lands after the
    /// batched ones before the fence, to whichever PE, and the fence stays pending for the
    /// next provider write (which waits for the batches). Else the earlier writes and batches
    /// must be at their targets first (a message is ordered after no RMA write).
    pub(super) fn batch_fence(&self) -> Result<(), String> {
        if !self.fence_pending() || !self.provider_writes_out() {
            return Ok(());
        }
        self.take_fence();
        self.batch_settle(None)?;
        self.complete_writes()
    }

    /// Orders the puts and AMOs the calling thread issued before it before those it issues
    /// after it (to every PE); see the module comment for how. The fence is the calling
    /// thread's: other threads' writes neither take it nor wait for it.
    pub fn fence(&self) {
        // Where the provider orders every write after earlier writes (FI_ORDER_WAW), a fence
        // needs nothing, and FI_FENCE is not used even where offered: the sockets provider
        // (1.17) lets a fenced operation take its connection while it waits for the earlier
        // ones, which blocks the acknowledgements this PE owes the peer on that connection;
        // two PEs fencing towards each other then wait for each other for ever.
        // Batched AMOs are messages, applied when the target reads them: whatever the provider
        // orders, a later put or AMO could overtake them, so the next write waits until they
        // are applied (`fence_flags`).
        // Provider writes before the fence and batched operations after it: those wait too.
        let batched = self.batch.as_ref().is_some_and(|b| b.unsettled_now() || self.provider_writes_out());
        if self.info.msg_order & FI_ORDER_WAW == 0 || batched {
            // (Thread-locals destroyed: `take_fence` fences every write then.)
            let _ = FENCED.try_with(|f| {
                let mut f = f.borrow_mut();
                if !f.contains(&self.id) {
                    f.push(self.id);
                }
            });
        }
    }

    /// The flags a write-class operation of `class` needs for the calling thread's pending
    /// fence (FI_FENCE or 0, after waiting for the outstanding writes where that is the way to
    /// order). The operation is marked with its class once counted as issued ([`Fabric::mark`]).
    pub(super) fn fence_flags(&self, class: u64) -> Result<u64, String> {
        if !self.take_fence() {
            return Ok(0);
        }
        self.batch_settle(None)?;
        if self.info.msg_order & FI_ORDER_WAW != 0 {
            return Ok(0); // the fence was for batched AMOs only
        }
        if self.info.fence {
            // With put_flush the earlier puts may only be complete locally: the fenced
            // operation asks delivery, which makes them delivered first (fi_cq(3)).
            return Ok(FI_FENCE | if self.info.put_flush { FI_DELIVERY_COMPLETE } else { 0 });
        }
        let ordered = match class {
            CLASS_RMA => self.info.msg_order & FI_ORDER_RMA_WAW != 0,
            _ => self.info.msg_order & FI_ORDER_ATOMIC_WAW != 0,
        };
        if !(ordered && self.classes.load(Ordering::SeqCst) & CLASS_BITS & !class == 0) {
            self.complete_writes()?;
        }
        Ok(0)
    }

    /// Posts one write of `len` bytes (at most `max_msg_size`) from `src` to `addr`/`key` on
    /// `dest` (PE `pe`), with the shared fence.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes and stays so, unchanged, until the write completes
    /// locally (for `len <= inject_size`: until return); `desc` is `src`'s registration
    /// descriptor where the provider needs one (FI_MR_LOCAL), else null.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn post_write(
        &self,
        pe: usize,
        dest: fi_addr_t,
        src: *const u8,
        len: usize,
        desc: *mut c_void,
        addr: u64,
        key: u64,
    ) -> Result<(), String> {
        // A context's writes neither take nor need the thread's shared fence (see Tracker).
        let fence = if tracked() { 0 } else { self.fence_flags(CLASS_RMA)? };
        // SAFETY: forwarded contract.
        unsafe { self.post_write_flags(pe, dest, src, len, desc, addr, key, fence, true) }
    }

    /// `post_write` with `fence` (FI_FENCE and the like, or 0) instead of the shared fence;
    /// `flush` false leaves the target unmarked, so that quiet does not flush it for this
    /// write (see [`Fabric::put_flag`]).
    ///
    /// # Safety
    /// As [`Fabric::post_write`].
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn post_write_flags(
        &self,
        pe: usize,
        dest: fi_addr_t,
        src: *const u8,
        len: usize,
        desc: *mut c_void,
        addr: u64,
        key: u64,
        fence: u64,
        flush: bool,
    ) -> Result<(), String> {
        let writemsg = has_op!(
            // SAFETY: ep is live.
            unsafe { (*self.objs.ep).rma },
            fi_ops_rma,
            writemsg
        )?;
        let track = tracking();
        // A lone put (nothing outstanding, its target not waiting for a flush): delivery
        // completion, so that quiet needs no flush read for it (see Options::delivery_lone).
        let lone = self.info.put_flush
            && self.delivery_lone
            && flush
            && track.is_none()
            && self.issued_w.load(Ordering::Relaxed) == self.done_w.load(Ordering::Relaxed)
            && !self.tables().dirty.get(pe).is_some_and(|d| d.load(Ordering::Acquire));
        let mut flags = fence
            | if self.info.put_flush && track.is_none() && !lone { 0 } else { FI_DELIVERY_COMPLETE }
            | if len <= self.info.inject_size { FI_INJECT } else { 0 }
            | if track.is_some() { FI_COMPLETION } else { 0 };
        // Without a write counter (`writes_in_cq`): a put injected without delivery completion
        // is complete for this PE when its post returns (quiet's flush read makes it complete
        // at its target); every other write asks an entry, which counts it.
        let at_post = self.writes_in_cq() && track.is_none() && flags & FI_INJECT != 0 && flags & FI_DELIVERY_COMPLETE == 0;
        #[cfg(ishmem_mutation = "dc_put_counted_at_post")]
        let at_post = self.writes_in_cq() && track.is_none() && flags & FI_INJECT != 0;
        if self.writes_in_cq() && !at_post {
            flags |= FI_COMPLETION;
        }
        self.issue(false, true)?;
        if track.is_none() {
            self.mark(CLASS_RMA);
        }
        let iov = libc::iovec { iov_base: src as *mut c_void, iov_len: len };
        let rma = fi_rma_iov { addr, len, key };
        let mut d = desc;
        let msg = fi_msg_rma {
            msg_iov: &iov,
            desc: &mut d,
            iov_count: 1,
            addr: dest,
            rma_iov: &rma,
            rma_iov_count: 1,
            context: track.map_or(tag(if at_post { OpKind::PutPosted } else { OpKind::Put }, pe), |w| w.ctx()),
            data: 0,
        };
        if let Some(w) = track {
            w.pending.fetch_add(1, Ordering::AcqRel);
        }
        // SAFETY: ep is live; msg and what it points to live across the call; src stays
        // readable until completion (FI_INJECT: until return) by the caller's contract.
        let r = self.post("fi_writemsg", pe, || unsafe { writemsg(self.objs.ep, &msg, flags) });
        if let (Some(w), Err(_)) = (track, &r) {
            w.pending.fetch_sub(1, Ordering::AcqRel);
        }
        self.posted(false, r)?;
        if at_post {
            self.counted_w.fetch_add(1, Ordering::AcqRel);
        }
        if self.info.put_flush && flush && track.is_none() && !lone {
            if let Some(d) = self.tables().dirty.get(pe) {
                d.store(true, Ordering::Release);
            }
        }
        Ok(())
    }

    /// Non-blocking put of `len` bytes from `src` to `at` on PE `pe`: completes at
    /// [`Fabric::quiet`] (puts up to `inject_size` bytes, and puts bounced under FI_MR_LOCAL,
    /// leave `src` free on return; larger ones read `src` until quiet).
    ///
    /// # Safety
    /// `src` is readable for `len` bytes, and stays so, unchanged, until the next quiet
    /// returns (unless `len <= info().inject_size`).
    pub unsafe fn put(&self, pe: usize, src: *const u8, len: usize, at: Remote) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = if len <= self.info.inject_size { Some(ptr::null_mut()) } else { self.local_desc(&t, src, len) };
        drop(t);
        let Some(desc) = desc else {
            // SAFETY: src is readable for len bytes (put's contract); it is copied into the ring.
            return unsafe { self.put_bounced(pe, dest, src, len, addr, key, false) };
        };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.info.max_msg_size);
            // SAFETY: off < len, so src+off..src+off+n lies in the caller's buffer, readable
            // until quiet (put's contract) or injected; desc is its descriptor (or null when
            // injected, which needs none).
            unsafe { self.post_write(pe, dest, src.add(off), n, desc, addr + off as u64, key)? };
            off += n;
        }
        Ok(())
    }

    /// A blocking put: as [`Fabric::put`], and `src` is free again on return. Up to
    /// `inject_size` bytes are injected; up to `Options::put_bounce_max` bytes are copied into
    /// the registered ring and posted from there (the call returns without waiting; the ring
    /// is recycled after the writes then outstanding complete); longer ones wait until the
    /// provider has read `src` (on tcp;ofi_rxm a write's local completion came only with the
    /// target's acknowledgement: 512 B - 4 KiB blocking puts ran 2.8-4x behind OSHMEM).
    ///
    /// # Safety
    /// `src` is readable for `len` bytes until return.
    pub unsafe fn put_blocking(&self, pe: usize, src: *const u8, len: usize, at: Remote) -> Result<(), String> {
        if len > self.info.inject_size && len <= self.put_bounce_max && tracking().is_none() {
            let t = self.tables();
            let (dest, addr, key) = self.target(&t, pe, at, len)?;
            drop(t);
            // SAFETY: src is readable for len bytes until return; it is copied into the ring.
            return unsafe { self.put_bounced(pe, dest, src, len, addr, key, false) };
        }
        // SAFETY: src is readable until return, and the wait below keeps it so until the
        // provider has read it (injected ones are copied by the call).
        unsafe { self.put(pe, src, len, at)? };
        if len > self.info.inject_size {
            self.wait_local_writes()?;
        }
        Ok(())
    }

    /// A put of `len` bytes from `src` to `at` on PE `pe` followed by an update of the 8-byte
    /// signal word at `sig_at` on the same PE (`add`: SIGNAL_ADD, else SIGNAL_SET), in one
    /// message where non-fetching AMOs are batched and the data fits a batch (`batch.rs`):
    /// the target copies the data, then applies the signal with a CPU atomic, so the signal
    /// is never seen before the data, and it is atomic with every other AMO on that word.
    /// `src` is free on return; both complete at quiet. `Ok(false)`: not sent (not possible
    /// here: the caller puts, fences and updates the signal itself).
    ///
    /// # Safety
    /// `src` is readable for `len` bytes until return.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_signal(
        &self,
        pe: usize,
        src: *const u8,
        len: usize,
        at: Remote,
        sig_at: Remote,
        signal: u64,
        add: bool,
    ) -> Result<bool, String> {
        if !self.put_signal_inline || len == 0 || tracking().is_some() || !self.put_signal_fits(pe, len) {
            return Ok(false);
        }
        let t = self.tables();
        let (_, addr, key) = self.target(&t, pe, at, len)?;
        let (_, saddr, skey) = self.target(&t, pe, sig_at, 8)?;
        drop(t);
        self.batch_fence()?;
        let op = if add { AtomicOp::Sum } else { AtomicOp::Write };
        let sig = batch::Entry { addr: saddr, key: skey, operand: signal, op: op as u8, dt: Dtype::U64 as u8, _pad: [0; 6] };
        // SAFETY: src is readable for len bytes (at most PUT_INLINE_MAX, checked above).
        unsafe { self.batch_put_signal(pe, src, len, addr, key, sig)? };
        Ok(true)
    }

    /// A put of `len` bytes from `src` to `at` on PE `pe` inside a batch, where non-fetching
    /// AMOs are batched and `len` is at most `Options::put_batch_max` (`batch.rs`): the data
    /// travels in the batch's message with the AMOs and puts collected for `pe`, and a stream
    /// of small puts costs one message per batch instead of one provider write each. `src` is
    /// free on return; complete at quiet (the batch's acknowledgement); a later get from `pe`
    /// waits for it. `Ok(false)`: not sent (the caller puts through the provider): too long,
    /// inside a context, a fence pending with provider writes outstanding (the provider's
    /// write-after-write order then keeps the fence for free), or a lone put (nothing of this
    /// PE's outstanding, to `pe` or through the provider: its quiet is one round trip either
    /// way, and the provider's lone write with delivery completion is the shorter one, 10.5 vs
    /// 14.5 us for `p` + quiet in docs/PERFORMANCE.md's ninth round). A stream's first put
    /// then goes through the provider and the ones after it, while it is outstanding, in
    /// batches.
    ///
    /// # Safety
    /// `src` is readable for `len` bytes until return.
    pub unsafe fn put_batched(&self, pe: usize, src: *const u8, len: usize, at: Remote) -> Result<bool, String> {
        if len == 0
            || len > self.put_batch_max
            || tracking().is_some()
            || !self.batch_for(pe, AtomicOp::Write, Dtype::U64)
            || (self.fence_pending() && self.provider_writes_out())
            || (!self.batch_lone_puts
                && self.issued_w.load(Ordering::Acquire) == self.done_w.load(Ordering::Acquire)
                && self.batch_idle(pe))
        {
            return Ok(false);
        }
        let t = self.tables();
        let (_, addr, key) = self.target(&t, pe, at, len)?;
        drop(t);
        // SAFETY: src is readable for len bytes (1..=put_batch_max <= PUT_BATCH_MAX).
        unsafe { self.batch_put(pe, src, len, addr, key)? };
        Ok(true)
    }

    /// An 8-byte put of `value` for the staging mailbox (a reply's sequence number), as
    /// [`Fabric::put_unflushed`] unfenced; its source is free on return.
    pub fn put_word_unflushed(&self, pe: usize, value: u64, at: Remote) -> Result<(), String> {
        let v = value;
        // SAFETY: v lives until the write has read it: injected (copied by the call), or
        // drained below.
        unsafe { self.put_unflushed(pe, &v as *const u64 as *const u8, 8, at, false)? };
        if self.info.inject_size < 8 {
            return self.drain_writes();
        }
        Ok(())
    }

    /// A put of `len` bytes from `body` to `body_at`, then of the 8-byte `flag` to `flag_at`
    /// on the same PE, such that a target that sees the flag sees the whole body: the flag is
    /// FI_FENCE'd where the provider has it, needs nothing where it orders RMA writes
    /// (FI_ORDER_RMA_WAW), else waits for the body to be at the target. The staging
    /// mailbox's writes: unflushed, the body `fenced` as in [`Fabric::put_unflushed`] (the
    /// flag itself does not use the shared fence of [`Fabric::fence`]); both complete at quiet.
    ///
    /// # Safety
    /// As [`Fabric::put`] for `body`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put_ordered(
        &self,
        pe: usize,
        body: *const u8,
        len: usize,
        body_at: Remote,
        flag: u64,
        flag_at: Remote,
        fenced: bool,
    ) -> Result<(), String> {
        // SAFETY: forwarded contract.
        unsafe { self.put_unflushed(pe, body, len, body_at, fenced)? };
        // Ordered writes first: FI_FENCE can deadlock the sockets provider (see `fence`).
        let fence = if self.info.msg_order & FI_ORDER_RMA_WAW != 0 && self.info.inject_size >= 8 {
            0
        } else if self.info.fence && self.info.inject_size >= 8 {
            FI_FENCE | if self.info.put_flush { FI_DELIVERY_COMPLETE } else { 0 }
        } else {
            self.complete_writes()?;
            0
        };
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, flag_at, 8)?;
        drop(t);
        let v = flag;
        if self.info.inject_size >= 8 {
            // SAFETY: v is 8 readable bytes, injected (copied before the call returns), so
            // no descriptor is needed.
            unsafe { self.post_write_flags(pe, dest, &v as *const u64 as *const u8, 8, ptr::null_mut(), addr, key, fence, false) }
        } else {
            // SAFETY: v lives until the write completes (drained before return).
            unsafe { self.put_unflushed(pe, &v as *const u64 as *const u8, 8, flag_at, false)? };
            self.drain_writes()
        }
    }

    /// Waits until every put issued so far has read its source (local completion): after it,
    /// the source buffers of earlier puts may be reused. Inside [`Tracker::run`], every put of
    /// that context only (they ask delivery completion, which comes after the source is read).
    pub fn wait_local_writes(&self) -> Result<(), String> {
        if let Some(w) = tracking() {
            return self
                .wait_until(|_| w.pending.load(Ordering::Acquire) == 0)
                .map_err(|t| self.stalled("waiting for the context's puts", t));
        }
        self.drain_writes()
    }

    /// An 8-byte put of `value` (a flag of the core's collectives), ordered after this PE's
    /// earlier puts to `pe` as any put is (write-after-write order, or a [`Fabric::fence`]
    /// before it). [`Fabric::quiet`] waits only for its local completion and reads nothing back
    /// from `pe` for it: the target sees its arrival by waiting for the value, and a loop of
    /// barriers then costs no flush read. (A caller that must know it arrived uses an atomic
    /// write, which asks delivery completion.)
    pub fn put_flag(&self, pe: usize, value: u64, at: Remote) -> Result<(), String> {
        let bytes = value.to_ne_bytes();
        if self.info.inject_size < bytes.len() {
            // Not injectable: an ordinary put, whose source must live until it completes.
            // SAFETY: bytes lives until drain_writes returns (the put completed locally).
            unsafe { self.put(pe, bytes.as_ptr(), bytes.len(), at) }?;
            return self.drain_writes();
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, bytes.len())?;
        drop(t);
        // Injected (len <= inject_size): the source is copied before the call returns.
        let fence = if tracked() { 0 } else { self.fence_flags(CLASS_RMA)? };
        // SAFETY: bytes is readable for its length and injected (copied before the call
        // returns), so no descriptor is needed.
        unsafe { self.post_write_flags(pe, dest, bytes.as_ptr(), bytes.len(), ptr::null_mut(), addr, key, fence, false) }
    }

    /// Makes the next quiet flush the writes to `pe`, flags included (`put_flag` does not
    /// mark its target, so quiet does not wait for flags to arrive): after that quiet every
    /// earlier write to `pe` is at `pe`. Without `put_flush` every write asks delivery
    /// completion, which quiet waits for anyway.
    pub fn flush_at_next_quiet(&self, pe: usize) {
        if self.info.put_flush {
            if let Some(d) = self.tables().dirty.get(pe) {
                d.store(true, Ordering::Release);
            }
        }
    }

    /// Waits until every put and AMO issued so far has completed locally: the sources of puts
    /// are free again (puts longer than `inject_size` read theirs until then). Unlike
    /// [`Fabric::quiet`] it reads nothing back from the targets.
    pub fn complete_local(&self) -> Result<(), String> {
        self.drain_writes()
    }

    /// Waits until every batched non-fetching AMO issued so far is applied at its target (they
    /// complete when acknowledged, not locally: see `batch.rs`).
    pub fn settle_amos(&self) -> Result<(), String> {
        self.batch_settle(None)
    }

    /// A put through the registered ring (FI_MR_LOCAL, unregistered source; or a source that
    /// must be free on return). `unflushed`: posted as [`Fabric::put_unflushed`] fenced (the
    /// target not marked for quiet's flush read), else as [`Fabric::put`].
    ///
    /// # Safety
    /// `src` is readable for `len` bytes until return (it is copied into the ring).
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn put_bounced(
        &self,
        pe: usize,
        dest: fi_addr_t,
        src: *const u8,
        len: usize,
        addr: u64,
        key: u64,
        unflushed: bool,
    ) -> Result<(), String> {
        let s = &self.scratch;
        let chunk_max = (s.put_len / 4).min(self.info.max_msg_size).max(1);
        let mut head = s.put_head.lock().unwrap_or_else(|e| e.into_inner());
        let mut off = 0;
        while off < len {
            let n = (len - off).min(chunk_max);
            if *head + n > s.put_len {
                // Recycle the ring: every put issued so far (ours included) must be complete.
                self.drain_writes()?;
                *head = 0;
            }
            // SAFETY: [put_off + head, + n) lies in the scratch buffer (checked above) and no
            // outstanding operation uses it (ring space is reused only after a drain); src has
            // len readable bytes.
            let b = unsafe {
                let b = s.base.add(s.put_off + *head);
                ptr::copy_nonoverlapping(src.add(off), b, n);
                b
            };
            *head = (*head + n).next_multiple_of(64);
            // SAFETY: b..b+n is ring space of the registered scratch buffer (descriptor
            // s.desc), not reused before a drain of every write issued so far.
            unsafe {
                if unflushed {
                    let fence = self.fence_flags(CLASS_RMA)?;
                    self.post_write_flags(pe, dest, b, n, s.desc, addr + off as u64, key, fence, false)?
                } else {
                    self.post_write(pe, dest, b, n, s.desc, addr + off as u64, key)?
                }
            };
            off += n;
        }
        Ok(())
    }

    /// Posts reads of `len` bytes into `dst` (chunked at max_msg_size); `waiter` given: with
    /// FI_COMPLETION and its context (the waiter counts the chunks), else nbi.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes, and not otherwise accessed, until the reads complete
    /// (with `waiter`: until it has been waited for; nbi: until the next quiet returns);
    /// `desc` is `dst`'s registration descriptor where the provider needs one, else null.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn post_reads(
        &self,
        pe: usize,
        dest: fi_addr_t,
        dst: *mut u8,
        len: usize,
        desc: *mut c_void,
        addr: u64,
        key: u64,
        waiter: Option<&Waiter>,
    ) -> Result<(), String> {
        let readmsg = has_op!(
            // SAFETY: ep is live.
            unsafe { (*self.objs.ep).rma },
            fi_ops_rma,
            readmsg
        )?;
        // One chunk: counted as issued, posted, a failed post counted as completed.
        let chunk = |off: usize, n: usize| -> Result<(), String> {
            self.issue(true, waiter.is_none())?;
            if waiter.is_none() {
                self.nbi_gets.fetch_add(1, Ordering::SeqCst);
            }
            // SAFETY: off < len, inside the caller's buffer.
            let iov = libc::iovec { iov_base: unsafe { dst.add(off) }.cast(), iov_len: n };
            let rma = fi_rma_iov { addr: addr + off as u64, len: n, key };
            let mut d = desc;
            let msg = fi_msg_rma {
                msg_iov: &iov,
                desc: &mut d,
                iov_count: 1,
                addr: dest,
                rma_iov: &rma,
                rma_iov_count: 1,
                context: waiter.map_or(tag(OpKind::Get, pe), Waiter::ctx),
                data: 0,
            };
            let flags = if waiter.is_some() { FI_COMPLETION } else { 0 };
            // SAFETY: ep is live; msg lives across the call; dst stays writable until the
            // read completes (blocking: we wait; nbi: the caller's contract, until quiet).
            let r = self.post("fi_readmsg", pe, || unsafe { readmsg(self.objs.ep, &msg, flags) });
            self.posted(true, r)
        };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(self.info.max_msg_size);
            if let Err(e) = chunk(off, n) {
                if let Some(w) = waiter {
                    // The chunks not posted will never complete: take them off, then wait
                    // for the posted ones before the waiter may go.
                    let unposted = len.div_ceil(self.info.max_msg_size.max(1)) - off / self.info.max_msg_size.max(1);
                    w.pending.fetch_sub(unposted, Ordering::AcqRel);
                }
                return Err(e);
            }
            off += n;
        }
        Ok(())
    }

    /// Blocking get: `len` bytes from `at` on PE `pe` into `dst`, complete on return.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes until the call returns (after a stall error: for as
    /// long as the provider may still complete the read).
    pub unsafe fn get(&self, pe: usize, dst: *mut u8, len: usize, at: Remote) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        self.batch_puts_settle(pe)?;
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = self.local_desc(&t, dst, len);
        drop(t);
        let Some(desc) = desc else {
            // SAFETY: dst is writable for len bytes until return (get's contract); the
            // bounced get completes before it returns.
            return unsafe { self.get_bounced(pe, dest, dst, len, addr, key) };
        };
        let w = Waiter::new(OpKind::Get, pe, len.div_ceil(self.info.max_msg_size.max(1)));
        // SAFETY: dst is writable for len bytes until return (get's contract), which comes
        // after the reads completed (waited for below); desc is its descriptor.
        let posted = unsafe { self.post_reads(pe, dest, dst, len, desc, addr, key, Some(&w)) };
        let done = self.wait(w).map_err(|e| e.0);
        posted.and(done)
    }

    /// Non-blocking get: completes at [`Fabric::quiet`] (under FI_MR_LOCAL into unregistered
    /// memory: before it returns, through the bounce buffer).
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes, and not otherwise accessed, until the next quiet
    /// returns.
    pub unsafe fn get_nbi(&self, pe: usize, dst: *mut u8, len: usize, at: Remote) -> Result<(), String> {
        if len == 0 {
            return Ok(());
        }
        self.batch_puts_settle(pe)?;
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, len)?;
        let desc = self.local_desc(&t, dst, len);
        drop(t);
        match desc {
            // SAFETY: dst is writable and otherwise untouched until the next quiet (get_nbi's
            // contract), which completes the nbi reads; desc is its descriptor.
            Some(desc) => unsafe { self.post_reads(pe, dest, dst, len, desc, addr, key, None) },
            // SAFETY: dst is writable for len bytes; the bounced get completes before return.
            None => unsafe { self.get_bounced(pe, dest, dst, len, addr, key) },
        }
    }

    /// A blocking get through the registered bounce buffer (FI_MR_LOCAL, unregistered
    /// destination), complete on return.
    ///
    /// # Safety
    /// `dst` is writable for `len` bytes until return.
    pub(super) unsafe fn get_bounced(
        &self,
        pe: usize,
        dest: fi_addr_t,
        dst: *mut u8,
        len: usize,
        addr: u64,
        key: u64,
    ) -> Result<(), String> {
        let s = &self.scratch;
        let _g = s.get_lock.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: get_off lies in the scratch buffer; only the holder of get_lock uses it.
        let b = unsafe { s.base.add(s.get_off) };
        let mut off = 0;
        while off < len {
            let n = (len - off).min(s.get_len);
            let w = Waiter::new(OpKind::Get, pe, n.div_ceil(self.info.max_msg_size.max(1)));
            // SAFETY: b..b+n (n <= get_len) is the registered bounce buffer (descriptor
            // s.desc), used only by the holder of get_lock; w is waited for just below.
            let posted = unsafe { self.post_reads(pe, dest, b, n, s.desc, addr + off as u64, key, Some(&w)) };
            self.wait(w).map_err(|e| e.0)?;
            posted?;
            // SAFETY: the read into b completed; dst has len writable bytes.
            unsafe { ptr::copy_nonoverlapping(b, dst.add(off), n) };
            off += n;
        }
        Ok(())
    }
}
