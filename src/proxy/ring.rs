//! The host side of the ring protocol (include/ishmem/device_state.h): kernels post requests
//! into slots of pinned host memory; the proxy thread polls them in ticket order and marks
//! each done, with the reply for those that wait for one.

use crate::transport::cuda::state::*;
use std::sync::atomic::{AtomicU64, Ordering::*};

/// Bytes of the ring.
pub const RING_BYTES: usize = PROXY_RING_BYTES;

/// One request, as read from its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    pub ticket: u64,
    pub kind: u8,
    pub width: usize,
    pub op: u8,
    pub reply: bool,
    /// The bytes are in the slot's inline area (`local` is its address here).
    pub inline: bool,
    pub pe: usize,
    pub sym: u64,
    pub local: u64,
    pub bytes: u64,
    pub value2: u64,
    pub sig: u64,
}

/// The host side of a ring at `base` (PROXY_SLOTS slots of 8 words, then each slot's inline
/// area of PROXY_INLINE_BYTES).
#[derive(Clone, Copy)]
pub struct Ring {
    base: usize,
}

impl Ring {
    /// # Safety
    /// `base` must point to RING_BYTES of zeroed memory, 64-byte aligned, that outlives the Ring
    /// (the inline areas included).
    pub unsafe fn new(base: usize) -> Ring {
        Ring { base }
    }

    fn word(&self, t: u64, w: usize) -> &AtomicU64 {
        let slot = (t % PROXY_SLOTS as u64) as usize;
        // SAFETY: slot < PROXY_SLOTS and w < 8 lie in the ring (contract of new); the words are
        // shared with the GPU and accessed atomically here.
        unsafe { AtomicU64::from_ptr((self.base + slot * 64 + 8 * w) as *mut u64) }
    }

    /// The host address of ticket `t`'s inline area.
    pub fn inline_area(&self, t: u64) -> usize {
        self.base + PROXY_SLOTS * 64 + (t % PROXY_SLOTS as u64) as usize * PROXY_INLINE_BYTES
    }

    /// The request with ticket `t` when it has been posted.
    pub fn poll(&self, t: u64) -> Option<Req> {
        if self.word(t, 0).load(Acquire) != t + 1 {
            return None;
        }
        let w1 = self.word(t, 1).load(Relaxed);
        let inline = w1 & PROXY_INLINE != 0;
        Some(Req {
            ticket: t,
            kind: w1 as u8,
            width: (w1 >> 8) as u8 as usize,
            op: (w1 >> 16) as u8,
            reply: w1 & PROXY_REPLY != 0,
            inline,
            pe: (w1 >> 32) as usize,
            sym: self.word(t, 2).load(Relaxed),
            // An inline put's source is its slot's area, wherever word 3 points.
            local: if inline { self.inline_area(t) as u64 } else { self.word(t, 3).load(Relaxed) },
            bytes: self.word(t, 4).load(Relaxed),
            value2: self.word(t, 5).load(Relaxed),
            sig: self.word(t, 6).load(Relaxed),
        })
    }

    /// Marks request `r` done: when it asked for a reply, `v` in words 6 and 7, each half beside
    /// the request's tag (proxy_reply_words; the kernel reads both in one 16-byte load and
    /// takes them only when both carry the tag), word 7 last with release (what the request
    /// wrote is visible before it); the slot is held until the poster releases it, in device
    /// memory. Else the slot is free at once.
    pub fn done(&self, r: &Req, v: u64) {
        if r.reply {
            let (w6, w7) = proxy_reply_words(r.ticket, v);
            self.word(r.ticket, 6).store(w6, Relaxed);
            self.word(r.ticket, 7).store(w7, Release);
        } else {
            self.word(r.ticket, 7).store(r.ticket + 1, Release);
        }
    }
}
