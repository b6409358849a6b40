//! Atomics: which operations the provider offers for a type, non-fetching AMOs (injected),
//! fetching and compare AMOs through the registered operand slots.

use super::sys::*;
use super::*;

impl Fabric {
    /// Whether the provider has the atomic `op` on `dt` for calls of `kind` (fi_atomicvalid,
    /// fi_fetch_atomicvalid, fi_compare_atomicvalid; asked once, then cached).
    pub fn atomic_valid(&self, op: AtomicOp, dt: Dtype, kind: AtomicKind) -> bool {
        let k = kind as usize * 190 + op as usize * 10 + dt as usize;
        match self.valid_cache[k].load(Ordering::Relaxed) {
            1 => return true,
            2 => return false,
            _ => {}
        }
        // SAFETY: ep is live; its atomic table (possibly NULL) is checked by has_op!.
        let ops = unsafe { (*self.objs.ep).atomic };
        let f = match kind {
            AtomicKind::Write => has_op!(ops, fi_ops_atomic, writevalid),
            AtomicKind::Fetch => has_op!(ops, fi_ops_atomic, readwritevalid),
            AtomicKind::Compare => has_op!(ops, fi_ops_atomic, compwritevalid),
        };
        let mut count = 0usize;
        // SAFETY: ep is live; count is writable.
        let ok = f.is_ok_and(|f| unsafe { f(self.objs.ep, dt as c_int, op as c_int, &mut count) } == 0 && count >= 1);
        self.valid_cache[k].store(if ok { 1 } else { 2 }, Ordering::Relaxed);
        ok
    }

    pub(super) fn check_atomic(&self, op: AtomicOp, dt: Dtype, kind: AtomicKind) -> Result<(), String> {
        if self.atomic_valid(op, dt, kind) {
            Ok(())
        } else {
            Err(format!("provider {} has no {kind:?} atomic {op:?} on {dt:?}", self.info.provider))
        }
    }

    /// Non-fetching AMO `op` with `operand` (the low `dt.size()` bytes, native order) on the
    /// element at `at` on PE `pe`; non-blocking, completes at [`Fabric::quiet`]. Inside
    /// [`Tracker::run`] (a context's AMO) it is the fetching AMO, complete at its target when it
    /// returns: injected atomics report no completion entry of their own (tcp;ofi_rxm counts
    /// them but writes no CQ entry even with FI_COMPLETION), so a context could not tell when
    /// one of its own is done.
    pub fn atomic(&self, pe: usize, op: AtomicOp, dt: Dtype, at: Remote, operand: u64) -> Result<(), String> {
        if tracked() {
            return self.amo_fetching(pe, op, dt, at, operand, None).map(|_| ());
        }
        if self.batch_for(pe, op, dt) {
            let t = self.tables();
            let (_, addr, key) = self.target(&t, pe, at, dt.size())?;
            drop(t);
            self.batch_fence()?;
            let e = batch::Entry { addr, key, operand, op: op as u8, dt: dt as u8, _pad: [0; 6] };
            return self.batch_add(pe, e);
        }
        self.check_atomic(op, dt, AtomicKind::Write)?;
        if self.writes_in_cq() {
            // No write counter to count an injected atomic, and tcp;ofi_rxm writes no CQ
            // entry for one even with FI_COMPLETION: the fetching form, complete at its target
            // on return (only operations the batches do not carry come here).
            return self.amo_fetching(pe, op, dt, at, operand, None).map(|_| ());
        }
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, dt.size())?;
        drop(t);
        // SAFETY: ep is live.
        let writemsg = has_op!(unsafe { (*self.objs.ep).atomic }, fi_ops_atomic, writemsg)?;
        let flags = FI_INJECT | FI_DELIVERY_COMPLETE | self.fence_flags(CLASS_ATOMIC)?;
        self.issue(false, true)?;
        self.mark(CLASS_ATOMIC);
        let mut val = operand;
        let ioc = fi_ioc { addr: (&mut val as *mut u64).cast(), count: 1 };
        let rma = fi_rma_ioc { addr, count: 1, key };
        let msg = fi_msg_atomic {
            msg_iov: &ioc,
            desc: ptr::null_mut(),
            iov_count: 1,
            addr: dest,
            rma_iov: &rma,
            rma_iov_count: 1,
            datatype: dt as c_int,
            op: op as c_int,
            context: tag(OpKind::Atomic, pe),
            data: 0,
        };
        // SAFETY: ep is live; msg and the operand live across the call (FI_INJECT copies it;
        // on little-endian the low bytes of val come first, which is what dt.size() reads).
        let r = self.post("fi_atomicmsg", pe, || unsafe { writemsg(self.objs.ep, &msg, flags) });
        self.posted(false, r)
    }

    /// A free AMO slot (operand, compare, result: 3 of its 4 words) and its address.
    pub(super) fn slot(&self) -> Result<(u32, *mut u64), String> {
        let mut got = None;
        self.wait_until(|f| {
            got = f.scratch.free_slots.lock().unwrap_or_else(|e| e.into_inner()).pop();
            got.is_some()
        })
        .map_err(|t| self.stalled("waiting for an AMO slot", t))?;
        let i = got.unwrap_or_default();
        // SAFETY: slot i lies in the scratch buffer and is ours until released.
        Ok((i, unsafe { self.scratch.base.add(i as usize * SLOT_BYTES) }.cast::<u64>()))
    }

    pub(super) fn release(&self, i: u32) {
        self.scratch.free_slots.lock().unwrap_or_else(|e| e.into_inner()).push(i);
    }

    /// Fetching AMO (fetch_add, swap = Write, fetch = Read, ...): returns the old value
    /// (low `dt.size()` bytes, zero-extended); blocking.
    pub fn fetch_atomic(&self, pe: usize, op: AtomicOp, dt: Dtype, at: Remote, operand: u64) -> Result<u64, String> {
        self.amo_fetching(pe, op, dt, at, operand, None)
    }

    /// Compare AMO (`op` one of the Cswap*/Mswap): returns the old value; blocking.
    pub fn compare_atomic(&self, pe: usize, op: AtomicOp, dt: Dtype, at: Remote, compare: u64, operand: u64) -> Result<u64, String> {
        self.amo_fetching(pe, op, dt, at, operand, Some(compare))
    }

    pub(super) fn amo_fetching(
        &self,
        pe: usize,
        op: AtomicOp,
        dt: Dtype,
        at: Remote,
        operand: u64,
        compare: Option<u64>,
    ) -> Result<u64, String> {
        let kind = if compare.is_some() { AtomicKind::Compare } else { AtomicKind::Fetch };
        self.check_atomic(op, dt, kind)?;
        // After this PE's batched AMOs to the same PE (a fetch sees them, as with the
        // provider's ordered atomics).
        self.batch_settle(Some(pe))?;
        let t = self.tables();
        let (dest, addr, key) = self.target(&t, pe, at, dt.size())?;
        drop(t);
        if self.fetch_msg_for(pe, op, dt) {
            // A message is ordered after nothing the provider does: a pending fence makes
            // every earlier write complete at its target first (as for a batched AMO).
            if !tracked() && self.take_fence() {
                self.batch_settle(None)?;
                self.complete_writes()?;
            }
            return self.fetch_msg(pe, op, dt, addr, key, operand, compare.unwrap_or(0));
        }
        // SAFETY: ep is live.
        let ops = unsafe { (*self.objs.ep).atomic };
        let (fetch, comp) = match compare {
            None => (Some(has_op!(ops, fi_ops_atomic, readwritemsg)?), None),
            Some(_) => (None, Some(has_op!(ops, fi_ops_atomic, compwritemsg)?)),
        };
        let flags = FI_COMPLETION | if tracked() { 0 } else { self.fence_flags(CLASS_ATOMIC)? };
        let (slot, p) = self.slot()?;
        let wk = if compare.is_some() { OpKind::CompareAtomic } else { OpKind::FetchAtomic };
        let w = Waiter::new(wk, pe, 1);
        // SAFETY: p points to the slot's 4 u64 words: operand, compare, result.
        let (pv, pc, pr) = unsafe {
            p.write(operand);
            p.add(1).write(compare.unwrap_or(0));
            p.add(2).write(0);
            (p, p.add(1), p.add(2))
        };
        let desc = if self.mr_local { self.scratch.desc } else { ptr::null_mut() };
        let mut d = [desc, desc, desc];
        let ioc = fi_ioc { addr: pv.cast(), count: 1 };
        let cioc = fi_ioc { addr: pc.cast(), count: 1 };
        let mut rioc = fi_ioc { addr: pr.cast(), count: 1 };
        let rma = fi_rma_ioc { addr, count: 1, key };
        let msg = fi_msg_atomic {
            msg_iov: &ioc,
            desc: &mut d[0],
            iov_count: 1,
            addr: dest,
            rma_iov: &rma,
            rma_iov_count: 1,
            datatype: dt as c_int,
            op: op as c_int,
            context: w.ctx(),
            data: 0,
        };
        let d1: *mut *mut c_void = &mut d[1];
        let d2: *mut *mut c_void = &mut d[2];
        if let Err(e) = self.issue(true, false) {
            self.release(slot);
            return Err(e);
        }
        // Not marked: it is complete when the call returns (fetched means applied), before
        // anything this thread issues later.
        // SAFETY: ep is live; msg, the iocs and the slot live until the waiter is done (we
        // wait below before releasing the slot).
        let posted = self.post(if compare.is_some() { "fi_compare_atomicmsg" } else { "fi_fetch_atomicmsg" }, pe, || unsafe {
            match (fetch, comp) {
                (Some(f), _) => f(self.objs.ep, &msg, &mut rioc, d2, 1, flags),
                (_, Some(c)) => c(self.objs.ep, &msg, &cioc, d1, 1, &mut rioc, d2, 1, flags),
                _ => unreachable!(),
            }
        });
        match self.posted(true, posted) {
            Ok(()) => {
                if let Err((e, stalled)) = self.wait(w) {
                    // A stalled operation keeps its slot (it may still complete into it).
                    if !stalled {
                        self.release(slot);
                    }
                    return Err(e);
                }
            }
            Err(e) => {
                self.release(slot);
                return Err(e);
            }
        }
        // SAFETY: the operation is complete; the slot is still ours.
        let old = unsafe { pr.read() };
        self.release(slot);
        let bits = dt.size() * 8;
        Ok(if bits == 64 { old } else { old & ((1u64 << bits) - 1) })
    }
}
