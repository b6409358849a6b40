//! The proxy's monitor (ISHMEM_PROXY_STALL_S): a thread that ends the job when one request
//! keeps the proxy thread too long, naming the request.

use super::serve::name;
use super::Busy;
use crate::ffi::fatal;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::Duration;

/// The proxy's monitor: ends the job when one request has kept the proxy thread for `limit`.
pub(crate) fn monitor(stop: &AtomicBool, busy: &Busy, epoch: std::time::Instant, limit: Duration) {
    let period = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    while !stop.load(Acquire) {
        std::thread::park_timeout(period);
        let since = busy.since.load(Acquire);
        if since == 0 {
            continue;
        }
        let held = epoch.elapsed().saturating_sub(Duration::from_nanos(since - 1));
        if held < limit {
            continue;
        }
        let (ticket, what) = (busy.ticket.load(Relaxed), busy.what.load(Relaxed));
        if busy.since.load(Acquire) != since || stop.load(Acquire) {
            continue; // it finished meanwhile
        }
        fatal(
            name(what as u8),
            &format!(
                "request {ticket} of the proxy ring (to PE {}) has not finished after {} s; the kernels posting behind it cannot go on (limit: ISHMEM_PROXY_STALL_S={})",
                what >> 8,
                held.as_secs(),
                limit.as_secs()
            ),
        );
    }
}
