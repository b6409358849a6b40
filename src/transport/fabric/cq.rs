//! Completion: counting operations issued and completed (the counters), waiting for them with
//! progress and a stall limit, holding new operations back while a wait needs a quiet instant,
//! reading the completion queue (errors, blocking waiters), the progress calls and quiet (see
//! the completion notes in the parent module).

use super::sys::*;
use super::*;

impl Fabric {
    /// Posts with `f`, retrying on -FI_EAGAIN while driving progress.
    pub(super) fn post(&self, call: &str, pe: usize, mut f: impl FnMut() -> isize) -> Result<(), String> {
        let mut r = 0;
        self.wait_until(|_| {
            r = f();
            r != -(FI_EAGAIN as isize)
        })
        .map_err(|t| self.stalled(&format!("{call} to PE {pe} (-FI_EAGAIN)"), t))?;
        if r == 0 {
            Ok(())
        } else {
            Err(self.err_text(call, pe, r))
        }
    }

    /// fi_cntr_read (which also drives progress where it is manual).
    pub(super) fn cntr(&self, c: *mut fid_cntr) -> u64 {
        // SAFETY: c is one of our live counters; its table is checked (cheap).
        unsafe { has_op!((*c).ops, fi_ops_cntr, read).map(|f| f(c)).unwrap_or(0) }
    }

    /// Writes completed: counted successes (by the write counter, or `counted_w` where there
    /// is none) plus failures reported in the CQ.
    pub(super) fn completed_w(&self) -> u64 {
        let ok = if self.writes_in_cq() { self.counted_w.load(Ordering::Acquire) } else { self.cntr(self.objs.put_cntr) };
        let d = ok + self.cq_errs_w.load(Ordering::Acquire) + self.lost_w.load(Ordering::Acquire);
        self.done_w.fetch_max(d, Ordering::Relaxed);
        d
    }

    /// Reads (gets, fetch and compare AMOs) completed, likewise.
    pub(super) fn completed_r(&self) -> u64 {
        let d = self.cntr(self.objs.get_cntr) + self.cq_errs_r.load(Ordering::Acquire) + self.lost_r.load(Ordering::Acquire);
        self.done_r.fetch_max(d, Ordering::Relaxed);
        d
    }

    /// Drives progress until `done`; `Err` (the time waited) when nothing at all completes
    /// for `stall_timeout`. Spins briefly, then yields: the progress of a manual-progress
    /// peer may need this core. With automatic progress the provider's own thread does the
    /// work, so after a short yielding phase the waiter sleeps (doubling from 2 us to
    /// 100 us): a waiter that only yields stays runnable and competes with that thread for
    /// the cores (the sockets provider on 2 cores under load).
    pub(super) fn wait_until(&self, mut done: impl FnMut(&Fabric) -> bool) -> Result<(), Duration> {
        let stall_timeout = STALL.with(|c| c.get()).unwrap_or(self.stall_timeout);
        if done(self) {
            return Ok(());
        }
        struct Waiting<'a>(&'a Fabric);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                crate::wait::note_drove();
                self.0.waiting.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let _waiting = Waiting(self);
        let (mut spins, mut mark, mut since) = (0u32, u64::MAX, Instant::now());
        let (start, mut nap) = (since, AUTO_NAP_MIN);
        let manual = self.info.data_progress_manual;
        // Block mode (far more PEs than CPUs): after the spins, sleep in the wait fd from the
        // first nap on; yielding in a loop would take the CPU from the PE that answers.
        let block = crate::wait::blocking() && self.objs.wait_fd >= 0;
        let mut block_nap = crate::wait::BLOCK_NAP_MIN;
        loop {
            if done(self) {
                return Ok(());
            }
            self.poll_cq();
            self.batch_flush(false);
            spins = spins.wrapping_add(1);
            if spins < 32 {
                std::hint::spin_loop();
                continue;
            }
            if block {
                self.block_in_wait(block_nap);
                block_nap = (block_nap * 2).min(crate::wait::BLOCK_NAP_MAX);
            } else if manual || start.elapsed() < AUTO_YIELD {
                std::thread::yield_now();
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(AUTO_NAP_MAX);
            }
            if spins % 64 == 0 {
                let now = self.events.load(Ordering::Acquire) + self.completed_w() + self.cntr(self.objs.get_cntr);
                if now != mark {
                    (mark, since) = (now, Instant::now());
                } else if since.elapsed() > stall_timeout {
                    return Err(since.elapsed());
                }
            }
        }
    }

    pub(super) fn stalled(&self, what: &str, waited: Duration) -> String {
        format!(
            "{what}: no completion for {:.1} s ({} puts/AMOs and {} gets outstanding, provider {})",
            waited.as_secs_f64(),
            self.issued_w.load(Ordering::Relaxed).saturating_sub(self.done_w.load(Ordering::Relaxed)),
            self.issued_r.load(Ordering::Relaxed).saturating_sub(self.done_r.load(Ordering::Relaxed)),
            self.info.provider
        )
    }

    /// Holds the posts of other threads until the returned guard is dropped (see the module
    /// comment); nests.
    pub(super) fn hold_posts(&self) -> Quiescing<'_> {
        QUIESCING.with(|c| c.set(c.get() + 1));
        self.quiescing.fetch_add(1, Ordering::SeqCst);
        Quiescing(&self.quiescing)
    }

    /// Counts one operation of the write (or read) class as issued, before its post: first
    /// waits while another thread waits for every outstanding operation, then (`bound`) while
    /// `max_inflight` of the class are outstanding. A failed post must be reported to
    /// [`Fabric::posted`].
    pub(super) fn issue(&self, read: bool, bound: bool) -> Result<(), String> {
        if self.quiescing.load(Ordering::SeqCst) > 0 && QUIESCING.with(|c| c.get()) == 0 {
            self.wait_until(|f| f.quiescing.load(Ordering::SeqCst) == 0)
                .map_err(|t| self.stalled("waiting for another thread's quiet", t))?;
        }
        if bound {
            self.reserve(read)?;
        }
        (if read { &self.issued_r } else { &self.issued_w }).fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// The result of a post counted by [`Fabric::issue`]: a failed one will never complete,
    /// so it counts as completed.
    pub(super) fn posted(&self, read: bool, r: Result<(), String>) -> Result<(), String> {
        if r.is_err() {
            (if read { &self.lost_r } else { &self.lost_w }).fetch_add(1, Ordering::SeqCst);
        }
        r
    }

    /// Waits until no operation of the write (or read) class is outstanding, holding other
    /// threads' posts meanwhile (see the module comment). `Ok`: the operations of the class
    /// issued at the instant that held; `Err`: the time waited without any completion.
    pub(super) fn wait_idle(&self, read: bool) -> Result<u64, Duration> {
        let _hold = self.hold_posts();
        let mut at = 0;
        self.wait_until(|f| {
            // Completions first, then issues: every completion read was of an operation
            // issued by then, so equality means nothing of the class was in flight then.
            let gets = if read { f.nbi_gets.load(Ordering::SeqCst) } else { 0 };
            let done = if read { f.completed_r() } else { f.completed_w() };
            at = (if read { &f.issued_r } else { &f.issued_w }).load(Ordering::SeqCst);
            if done < at {
                return false;
            }
            if read {
                // Every nbi get counted in `gets` was issued before the completions were read.
                f.nbi_gets_seen_done.fetch_max(gets, Ordering::SeqCst);
            }
            true
        })
        .map(|()| at)
    }

    /// Waits while `max_inflight` writes (or reads) are outstanding.
    pub(super) fn reserve(&self, read: bool) -> Result<(), String> {
        let (issued, done) = if read { (&self.issued_r, &self.done_r) } else { (&self.issued_w, &self.done_w) };
        let i = issued.load(Ordering::Relaxed);
        if i.saturating_sub(done.load(Ordering::Relaxed)) < self.max_inflight {
            return Ok(());
        }
        self.wait_until(|f| i.saturating_sub(if read { f.completed_r() } else { f.completed_w() }) < f.max_inflight)
            .map_err(|t| self.stalled("waiting for a free slot", t))
    }

    /// Keeps the waiters of stalled operations until the Fabric (and its CQ) is closed.
    #[allow(clippy::vec_box)] // the boxes are the waiters' fixed addresses (see `stalled`)
    pub(super) fn keep_stalled(&self, ws: Vec<Box<Waiter>>) {
        self.stalled.lock().unwrap_or_else(|e| e.into_inner()).extend(ws);
    }

    /// Waits for a waiter's operations; `Err` names the operation, the PE and the error. On a
    /// stall the waiter is kept until the CQ is closed (a late completion must find it alive)
    /// and `Err` says so. The flag in `Err` is true for a stall.
    pub(super) fn wait(&self, w: Box<Waiter>) -> Result<(), (String, bool)> {
        if let Err(t) = self.wait_until(|_| w.pending.load(Ordering::Acquire) == 0) {
            let text = self.stalled(&format!("{} from PE {}", w.kind.what(), w.pe), t);
            self.keep_stalled(vec![w]);
            return Err((text, true));
        }
        match w.err.load(Ordering::Acquire) {
            0 => Ok(()),
            _ => {
                let m = w.msg.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
                Err((format!("{} from PE {} failed: {m}", w.kind.what(), w.pe), false))
            }
        }
    }

    /// Reads up to 16 CQ entries (driving progress) and dispatches them: waiters are marked
    /// done, nbi errors are kept for quiet.
    pub(super) fn poll_cq(&self) {
        // SAFETY: cq is live; its table was checked at open (read and readerr are required).
        let ops = unsafe { (*self.objs.cq).ops };
        let Ok(read) = has_op!(ops, fi_ops_cq, read) else { return };
        let mut buf = [ptr::null_mut::<c_void>(); 16];
        loop {
            // SAFETY: buf holds 16 fi_cq_entry (one context pointer each).
            let r = unsafe { read(self.objs.cq, buf.as_mut_ptr().cast(), buf.len()) };
            if r > 0 {
                self.events.fetch_add(r as u64, Ordering::AcqRel);
                for &ctx in &buf[..r as usize] {
                    self.complete(ctx, 0, "");
                }
                if (r as usize) < buf.len() {
                    return;
                }
            } else if r == -(FI_EAVAIL as isize) {
                self.read_cq_error();
            } else {
                return;
            }
        }
    }

    pub(super) fn read_cq_error(&self) {
        // SAFETY: cq is live and its ops table checked; e is a zeroed entry (err_data_size 0:
        // the provider points err_data at its own buffer).
        let (r, e) = unsafe {
            let Ok(readerr) = has_op!((*self.objs.cq).ops, fi_ops_cq, readerr) else { return };
            let mut e: fi_cq_err_entry = std::mem::zeroed();
            (readerr(self.objs.cq, &mut e, 0), e)
        };
        if r != 1 {
            return;
        }
        self.events.fetch_add(1, Ordering::AcqRel);
        let err = if e.err == 0 { FI_EOTHER } else { e.err.abs() };
        let prov = self.prov_text(&e);
        self.complete(e.op_context, err, &prov);
    }

    /// The provider's words for an error entry (fi_cq_strerror), with its errno.
    pub(super) fn prov_text(&self, e: &fi_cq_err_entry) -> String {
        let mut buf = [0 as std::ffi::c_char; 128];
        // SAFETY: cq is live; buf has the length given; the result is NULL or a NUL-terminated
        // string (ours or the provider's) valid until the next CQ call on this thread.
        let text = unsafe {
            match has_op!((*self.objs.cq).ops, fi_ops_cq, strerror) {
                Ok(f) => {
                    let p = f(self.objs.cq, e.prov_errno, e.err_data, buf.as_mut_ptr(), buf.len());
                    (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
                }
                Err(_) => None,
            }
        };
        match text {
            Some(t) if !t.is_empty() => format!("provider errno {}: {t}", e.prov_errno),
            _ => format!("provider errno {}", e.prov_errno),
        }
    }

    /// One completion (err 0: success; `prov` the provider's words on an error) for `ctx`.
    pub(super) fn complete(&self, ctx: *mut c_void, err: c_int, prov: &str) {
        let v = ctx as usize;
        if v & 1 == 1 {
            if let Some(k @ (OpKind::BatchSend | OpKind::BatchRecv | OpKind::AckSend | OpKind::FetchSend)) =
                OpKind::from_bits((v >> 1) & 0x7f)
            {
                self.batch_complete(k, v >> 8, err, prov);
                return;
            }
        }
        if v == 0 || v & 1 == 1 {
            if err == 0 {
                // Without a write counter, a write's success is counted from its entry (the
                // only odd contexts with FI_COMPLETION are then puts and AMOs).
                if self.writes_in_cq() && v != 0 && matches!(OpKind::from_bits((v >> 1) & 0x7f), Some(OpKind::Put | OpKind::Atomic)) {
                    self.counted_w.fetch_add(1, Ordering::AcqRel);
                }
                return;
            }
            let kind = OpKind::from_bits((v >> 1) & 0x7f).filter(|_| v != 0);
            let what = match kind {
                Some(k) => format!("{} to PE {}", k.what(), v >> 8),
                None => "a provider-internal transfer".to_string(),
            };
            let text = format!("{what} failed: {} ({prov})", self.lib.strerror(err));
            self.nbi_errors.lock().unwrap_or_else(|e| e.into_inner()).push(text);
            // Counted as complete only now that its error is recorded: a quiet that sees
            // the count (on another thread: the progress thread read this entry) must
            // find the error too, not return Ok with it.
            match kind {
                Some(OpKind::Get) => self.cq_errs_r.fetch_add(1, Ordering::AcqRel),
                // Counted when its post returned (`writes_in_cq`).
                Some(OpKind::PutPosted) => 0,
                Some(_) => self.cq_errs_w.fetch_add(1, Ordering::AcqRel),
                None => 0, // not one of ours: a provider-internal transfer
            };
            return;
        }
        // SAFETY: an even non-NULL context is a Waiter whose thread waits until pending is 0,
        // so it is alive here; this is the last access before that thread may go.
        let w = unsafe { &*(ctx as *const Waiter) };
        if err != 0 {
            // A context's tracker counts writes (puts, non-fetching AMOs); other waiters reads.
            match w.kind {
                OpKind::Put | OpKind::Atomic => self.cq_errs_w.fetch_add(1, Ordering::AcqRel),
                _ => self.cq_errs_r.fetch_add(1, Ordering::AcqRel),
            };
            let mut m = w.msg.lock().unwrap_or_else(|e| e.into_inner());
            if m.is_none() {
                *m = Some(format!("{} ({prov})", self.lib.strerror(err)));
            }
            drop(m);
            w.err.store(err, Ordering::Release);
        } else if self.writes_in_cq() && matches!(w.kind, OpKind::Put | OpKind::Atomic) {
            self.counted_w.fetch_add(1, Ordering::AcqRel);
        }
        w.pending.fetch_sub(1, Ordering::AcqRel);
    }

    /// One cheap step of progress for manual-progress providers: reads a counter and drains
    /// the CQ; returns at once while another thread of this Fabric is in a wait (that thread
    /// drives progress, and two threads in the provider only contend for its locks). Call
    /// it from a progress thread.
    pub fn progress(&self) {
        if self.waiting.load(Ordering::Relaxed) > 0 {
            return; // a thread in a wait drives progress already
        }
        self.completed_w();
        self.poll_cq();
        self.batch_flush(false);
    }

    /// Microseconds since the Fabric was opened.
    #[inline]
    pub(super) fn now_us(&self) -> u64 {
        self.opened.elapsed().as_micros() as u64
    }

    /// The progress step of a library wait (a barrier, a wait_until, a collective's flag): as
    /// [`Fabric::progress`], and it notes whether traffic is arriving (the wait fd readable:
    /// [`Fabric::recently_active`]).
    pub fn poll_in_wait(&self) {
        // Every poll reads the CQ (which drives the provider); the counter read and the look
        // at the wait fd (both system calls on tcp;ofi_rxm) every `LEAN_EVERY` polls only, so
        // that a waiter sees an arriving flag sooner (`ISHMEMI_WAIT_LEAN=0`: every poll).
        if wait_lean() {
            let n = POLLS.with(|c| {
                let v = c.get().wrapping_add(1);
                c.set(v);
                v
            });
            if n % LEAN_EVERY != 0 {
                if self.waiting.load(Ordering::Relaxed) == 0 {
                    self.poll_cq();
                    self.batch_flush(false);
                }
                return;
            }
        }
        let now = self.now_us();
        let fd = self.objs.wait_fd;
        if fd >= 0 {
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: p is one valid pollfd; a zero timeout only looks.
            if unsafe { libc::poll(&mut p, 1, 0) } > 0 {
                self.last_arrival_us.store(now, Ordering::Relaxed);
            }
            self.progress();
        } else if self.progress_served() {
            self.last_arrival_us.store(now, Ordering::Relaxed);
        }
    }

    /// [`Fabric::progress`], and whether the step looks as if it served something: without a
    /// wait fd nothing tells an arrival (a read or an AMO served at this target leaves no
    /// completion here), so a step that saw completions counts as one, and so does a step that
    /// took at least `SERVED_FLOOR_X` times an idle step (`step_floor_ns`) and at least
    /// `SERVED_NS`: a receive and an answer are system calls of a few microseconds, an idle step
    /// on tcp;ofi_rxm is one `epoll_wait`, measured at 0.5-1.9 us in release builds on
    /// different days and 1.3-5 us under AddressSanitizer, where served steps took 5-7 and
    /// 5-10 us (a fixed 2 us took every sanitized step for a served one, so the period never
    /// backed off). A wrong guess only changes how soon the progress thread or a waiter looks
    /// again.
    fn progress_served(&self) -> bool {
        let events = self.events.load(Ordering::Relaxed);
        let t = Instant::now();
        self.progress();
        #[cfg(test)]
        while t.elapsed().as_nanos() < u128::from(self.step_spin_ns.load(Ordering::Relaxed)) {
            std::hint::spin_loop();
        }
        let took = t.elapsed().as_nanos() as u64;
        if self.events.load(Ordering::Relaxed) != events {
            return true;
        }
        let floor = self.step_floor_ns.load(Ordering::Relaxed);
        let served = took >= SERVED_NS.max(floor.saturating_mul(SERVED_FLOOR_X));
        // The floor follows a low quantile of idle steps: down to any shorter step at once
        // (the first step sets it), up by 1/64 per longer idle one (a machine that became
        // slower), never up from a served step.
        if floor == 0 || took < floor {
            self.step_floor_ns.store(took.max(1), Ordering::Relaxed);
        } else if !served {
            self.step_floor_ns.store(floor + floor / 64 + 1, Ordering::Relaxed);
        }
        served
    }

    /// Whether traffic arrived for this PE within `window` (seen by the progress thread's
    /// wait or by [`Fabric::poll_in_wait`]): the job communicates, so a library wait keeps
    /// polling instead of sleeping (`wait::Backoff`).
    pub fn recently_active(&self, window: Duration) -> bool {
        let last = self.last_arrival_us.load(Ordering::Relaxed);
        last != 0 && self.now_us().saturating_sub(last) < window.as_micros() as u64
    }

    /// Whether [`Fabric::progress_wait`] can sleep until the provider has work (a
    /// manual-progress provider whose CQ has a wait fd).
    pub fn has_wait_fd(&self) -> bool {
        self.objs.wait_fd >= 0
    }

    /// The progress thread's step for a manual-progress provider: [`Fabric::progress`], then
    /// a sleep until the provider has work (the CQ's wait fd, after fi_trywait says nothing
    /// is pending) or for at most `max`, so that a passive target serves an arriving
    /// operation at once rather than at the thread's next turn. Without a wait fd a plain
    /// sleep of `idle` after the step.
    ///
    /// With `aside`, while another thread of this PE is in a Fabric wait (it drives progress),
    /// the thread stays out of the provider and sleeps `max` instead of `idle` (issue 31: waking every
    /// 20 us beside a waiter cost a quarter of a core, and `ISHMEM_OFI_PROGRESS_US=1000`, which
    /// had the same effect, took g from 31-44 to 22-28 us). A PE whose wait ended picks its
    /// progress thread back up within `max`. So does a library wait in its polling phases (a
    /// barrier, a collective's flag: `wait::library_waiters`; issue 31: woken by every
    /// arrival and by the provider's signal of every local send completion, the thread took
    /// the core and the provider's locks from the waiter), also where the machine has more PEs
    /// than CPUs and the waits yield from their first poll on (there the woken threads of
    /// every PE took the cores from the PEs moving the traffic: 4 PEs on 2 cores, barrier_all
    /// 75 -> 15 us); not in block mode, nor once the waiter sleeps.
    ///
    /// Without a wait fd (`Options::wait_fd` off: `ISHMEM_OFI_PROGRESS_WAKE=timer`, the default
    /// with at most 2 PEs per CPU and no staged heap, since the fd's signal costs every
    /// operation), the same rule sends the thread aside; otherwise it
    /// takes a progress step and sleeps its period, which starts at `idle` and doubles up to
    /// `max` while its steps serve nothing (`progress_served`), back to `idle` once one does:
    /// a PE that computes while others read or update it is served every `idle`, an idle PE
    /// costs a wakeup per `max`.
    pub fn progress_wait(&self, idle: Duration, max: Duration, aside: bool) {
        let fd = self.objs.wait_fd;
        // A library wait that polls drives the provider itself (`wait::library_waiters`).
        let lib = wait_aside() && crate::wait::library_waiters() > 0;
        // A thread of this PE drove the provider in a wait within the last `max`: it most
        // likely communicates and waits in a loop and drives it again sooner than this
        // thread would help (`wait::drove_within`).
        let recent = wait_aside() && crate::wait::drove_within(max);
        if aside && (self.waiting.load(Ordering::Relaxed) > 0 || lib || recent) {
            self.wait_ends[3].fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(max);
            return;
        }
        if fd < 0 {
            self.wait_ends[1].fetch_add(1, Ordering::Relaxed);
            let (lo, hi) = (idle.as_micros() as u64, (max.as_micros() as u64).max(idle.as_micros() as u64));
            let served = self.progress_served();
            if served {
                self.last_arrival_us.store(self.now_us(), Ordering::Relaxed);
            }
            // Not `aside` (a staged heap, whose mailbox this thread serves after each step and
            // whose requests the step does not see): the shortest period always.
            let period = if served || !aside { lo } else { (self.timer_us.load(Ordering::Relaxed).max(lo / 2) * 2).min(hi) };
            self.timer_us.store(period, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(period));
            return;
        }
        if self.waiting.load(Ordering::Relaxed) > 0 {
            self.wait_ends[3].fetch_add(1, Ordering::Relaxed);
            self.progress();
            std::thread::sleep(idle);
            return;
        }
        match self.sleep_on_wait_fd(fd, max) {
            FdSleep::NoTrywait => std::thread::sleep(idle),
            // -FI_EAGAIN: work is pending; the caller's next step progresses it (after the
            // timer's sleep, so that a provider that keeps answering -FI_EAGAIN costs no
            // more than the timer did).
            FdSleep::Pending => {
                self.wait_ends[2].fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(idle);
            }
            FdSleep::Woke => {
                self.wait_ends[0].fetch_add(1, Ordering::Relaxed);
            }
            FdSleep::TimedOut => {
                self.wait_ends[1].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A sleep of a waiter in block mode (`wait::blocking`, far more PEs than CPUs): a
    /// progress step, then `poll` on the CQ's wait fd for at most `max` once fi_trywait says
    /// nothing is pending (an arrival wakes it at once and is applied here), else a sleep of at
    /// most `BLOCK_NAP_MIN` (the caller's next step progresses the pending work). Without a
    /// wait fd a plain sleep of `max`.
    pub fn block_in_wait(&self, max: Duration) {
        let fd = self.objs.wait_fd;
        if fd < 0 {
            std::thread::sleep(max);
            return;
        }
        match self.sleep_on_wait_fd(fd, max) {
            FdSleep::NoTrywait => std::thread::sleep(max),
            FdSleep::Pending => std::thread::sleep(max.min(crate::wait::BLOCK_NAP_MIN)),
            FdSleep::Woke | FdSleep::TimedOut => {}
        }
    }

    /// One progress step, then `fi_trywait` on the CQ and, when nothing is pending, `ppoll`
    /// on the CQ's wait fd `fd` for at most `max`; what arrived is applied before returning
    /// (so that the caller's checks after it see it). The callers choose what to sleep when
    /// trywait is missing or work is pending.
    fn sleep_on_wait_fd(&self, fd: i32, max: Duration) -> FdSleep {
        self.completed_w();
        self.poll_cq();
        // SAFETY: fabric and cq are live; trywait is the fabric's own (checked by has_op!).
        let r = unsafe {
            let Ok(trywait) = has_op!((*self.objs.fabric).ops, fi_ops_fabric, trywait) else {
                return FdSleep::NoTrywait;
            };
            let mut f = &mut (*self.objs.cq).fid as *mut fid;
            trywait(self.objs.fabric, &mut f, 1)
        };
        if r != 0 {
            return FdSleep::Pending;
        }
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let ts = libc::timespec { tv_sec: max.as_secs() as libc::time_t, tv_nsec: max.subsec_nanos() as libc::c_long };
        // SAFETY: p is one valid pollfd; ts a valid timeout; no signal mask change.
        if unsafe { libc::ppoll(&mut p, 1, &ts, ptr::null()) } <= 0 {
            return FdSleep::TimedOut;
        }
        self.last_arrival_us.store(self.now_us(), Ordering::Relaxed);
        self.completed_w();
        self.poll_cq();
        self.batch_flush(false);
        FdSleep::Woke
    }

    /// How the progress thread's waits have ended so far: (woken by the wait fd, timed out or
    /// a timer step without a wait fd, slept for pending work, slept aside while another
    /// thread waited).
    pub fn wait_stats(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.wait_ends[i].load(Ordering::Relaxed))
    }

    /// Waits until every operation posted under `t` (a context's, see [`Tracker`]) is complete
    /// at its target; operations of other contexts, other threads and the default context are
    /// not waited for. `Err`: the errors of its operations since the last such call, or a stall.
    pub fn quiet_tracked(&self, t: &Tracker) -> Result<(), String> {
        let w = &*t.0;
        #[cfg(ishmem_mutation = "ctx_quiet_noop")]
        return Ok(());
        #[cfg(ishmem_mutation = "ctx_quiet_global")]
        return self.quiet();
        #[allow(unreachable_code)]
        if let Err(t) = self.wait_until(|_| w.pending.load(Ordering::Acquire) == 0) {
            return Err(self.stalled(&format!("context quiet ({} of its operations outstanding)", w.pending.load(Ordering::Acquire)), t));
        }
        if w.err.swap(0, Ordering::AcqRel) != 0 {
            let m = w.msg.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
            return Err(format!("a put or AMO of the context failed: {m}"));
        }
        Ok(())
    }

    /// Waits until every put, AMO and nbi get issued before the call has completed; `Err`
    /// lists the operations that failed since the last quiet (operation, PE, error text).
    pub fn quiet(&self) -> Result<(), String> {
        let _hold = self.hold_posts();
        // Batched AMOs first: their acknowledgements say they are applied.
        if let Err(e) = self.batch_settle(None) {
            lock_push(&self.nbi_errors, e);
        }
        let gets = self.nbi_gets.load(Ordering::SeqCst) != self.nbi_gets_seen_done.load(Ordering::SeqCst);
        #[cfg(ishmem_mutation = "get_nbi_early")]
        let gets = gets && false;
        let flush = self.post_flush()?;
        // Nothing outstanding, not just as many completions as issued before the call (see
        // the module comment: the flush reads posted just now may complete before an nbi get
        // issued earlier, to another PE). Writes, then the flush reads (their own CQ entries),
        // then, where an nbi get may be outstanding, the reads: polling the read counter as
        // well cost put + quiet ~15% on tcp;ofi_rxm.
        let mut list = Vec::new();
        let mut w = u64::MAX;
        match self.wait_idle(false) {
            Ok(at) => {
                w = at;
                self.wait_flush(flush, &mut list);
                if let Err(t) = if gets { self.wait_idle(true).map(|_| ()) } else { Ok(()) } {
                    list.push(self.stalled("quiet", t));
                }
            }
            Err(t) => {
                self.keep_stalled(flush); // a late completion must find them alive
                list.push(self.stalled("quiet", t));
            }
        }
        if list.is_empty() {
            self.clear_classes(w);
        }
        // Everything this thread issued is complete: its pending fence has nothing to order.
        self.take_fence();
        let mut errs = std::mem::take(&mut *self.nbi_errors.lock().unwrap_or_else(|e| e.into_inner()));
        errs.append(&mut list);
        let list = errs;
        if list.is_empty() {
            Ok(())
        } else {
            Err(list.join("; "))
        }
    }
}

fn lock_push(m: &Mutex<Vec<String>>, e: String) {
    m.lock().unwrap_or_else(|e| e.into_inner()).push(e);
}

/// `poll_in_wait` reads the counter and looks at the wait fd once in this many polls.
const LEAN_EVERY: u32 = 16;

/// A progress step shorter than this served nothing (`Fabric::progress_served`).
const SERVED_NS: u64 = 2_000;

/// A progress step at least this many times as long as an idle one (`step_floor_ns`) and at
/// least `SERVED_NS` served something (`Fabric::progress_served`).
const SERVED_FLOOR_X: u64 = 3;

thread_local! {
    /// This thread's `poll_in_wait` calls.
    static POLLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether `poll_in_wait` is lean (`ISHMEMI_WAIT_LEAN`, default on).
fn wait_lean() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| crate::env::aid_on("ISHMEMI_WAIT_LEAN"))
}

/// Whether a library wait sends the progress thread aside (`ISHMEMI_WAIT_ASIDE`, default on).
fn wait_aside() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| crate::env::aid_on("ISHMEMI_WAIT_ASIDE"))
}

/// How [`Fabric`]'s sleep on the CQ's wait fd ended.
enum FdSleep {
    /// The fabric has no `fi_trywait`: nothing was slept.
    NoTrywait,
    /// `fi_trywait` said work is pending: nothing was slept.
    Pending,
    /// An arrival woke the poll (and was applied).
    Woke,
    /// The poll slept its whole time.
    TimedOut,
}
