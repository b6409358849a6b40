//! Flag-in-data messages ("LL", after the low-latency protocol of GPU collective libraries)
//! of the all-send class across nodes (issue 31): a small block and its arrival flag in one
//! network write, where the data write and the flag write were two provider messages, each a
//! system call or two at both ends.
//!
//! Layout: the message is the 8-byte tag of the call (`Team::tag`: count and signature),
//! then the data; every byte `b` of both travels as two bytes `0x80 | (b & 15)` and
//! `0x80 | (b >> 4)`, and the message is padded with `0x80` to whole 8-byte words. Every byte
//! of a message has its top bit set, and the receiver's slot is all zero before the message
//! is written into it (`Team::reduce_begin` zeroes a slot before the call whose message tells
//! its sender that it may write it again). So the receiver knows the message is complete
//! when every byte of it shows the top bit, whatever order the provider stores the bytes
//! in, inside a word or across words: nothing depends on the byte order of one write, only on
//! a single byte's store being whole. The tag then says which call the message is of (a
//! mismatch of the call's kind, size or root shows in the signature, as a flag's would).

/// Bytes on the wire for `nb` bytes of data (the tag, the data, padding to whole words).
pub const fn wire_len(nb: usize) -> usize {
    (2 * (8 + nb)).next_multiple_of(8)
}

/// Every byte's top bit, per word.
const MARKS: u64 = 0x8080_8080_8080_8080;

/// The message of `tag` and `data` into `out` (cleared first; `wire_len(data.len())` bytes).
pub fn pack(tag: u64, data: &[u8], out: &mut Vec<u8>) {
    out.clear();
    for &b in tag.to_ne_bytes().iter().chain(data) {
        out.push(0x80 | (b & 15));
        out.push(0x80 | (b >> 4));
    }
    out.resize(wire_len(data.len()), 0x80);
}

/// The byte that the two wire bytes at `p` stand for.
///
/// # Safety
/// `p` is readable for 2 bytes.
unsafe fn unpack_at(p: *const u8) -> u8 {
    // SAFETY: the caller's contract.
    let (lo, hi) = unsafe { (p.read(), p.add(1).read()) };
    (lo & 15) | (hi & 15) << 4
}

/// Looks at the message of `nb` data bytes being written into `slot`: `None` while some byte
/// has not arrived; once all have, decodes the data into the slot's first `nb` bytes (where
/// a raw block of the class would be: the readers need not know which form came) and returns
/// the tag. `seen` counts the words already seen whole (start at 0): a byte, once set, stays
/// until the slot is zeroed, so each call looks only at the words not yet seen.
///
/// # Safety
/// `slot` is 8-byte aligned and readable and writable for `wire_len(nb)` bytes; only this
/// message's write (by another process or the provider) touches it meanwhile, and nothing
/// writes it after the message is complete until this PE zeroes it.
pub unsafe fn take(slot: usize, nb: usize, seen: &mut usize) -> Option<u64> {
    use std::sync::atomic::{fence, AtomicU64, Ordering::*};
    let words = wire_len(nb) / 8;
    while *seen < words {
        // SAFETY: word `seen` < words of the slot (the caller's contract), aligned, loaded
        // atomically while the network may be writing it.
        let w = unsafe { AtomicU64::from_ptr((slot + 8 * *seen) as *mut u64) }.load(Relaxed);
        if w & MARKS != MARKS {
            return None;
        }
        *seen += 1;
    }
    // Every byte arrived: what the loads saw is what the bytes hold.
    fence(Acquire);
    let p = slot as *mut u8;
    let mut tag = [0u8; 8];
    for (i, t) in tag.iter_mut().enumerate() {
        // SAFETY: wire bytes 2i, 2i+1 < 16 of the message.
        *t = unsafe { unpack_at(p.add(2 * i)) };
    }
    for i in 0..nb {
        // In place, front to back: byte i is written after its wire bytes 16+2i, 17+2i were
        // read, and every later read is at 18+2i > i.
        // SAFETY: wire bytes 16+2i, 17+2i < wire_len(nb); byte i < nb inside the slot.
        unsafe { p.add(i).write(unpack_at(p.add(16 + 2 * i))) };
    }
    Some(u64::from_ne_bytes(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot of `n` words (8-byte aligned).
    fn slot(n: usize) -> Vec<u64> {
        vec![0; n]
    }

    #[test]
    fn round_trip_in_any_byte_order() {
        for nb in [0usize, 1, 3, 7, 8, 13, 64, 500] {
            let data: Vec<u8> = (0..nb).map(|i| (i * 37 + 11) as u8).collect();
            let tag = 0x0123_4567_89ab_cdefu64 ^ nb as u64;
            let mut msg = Vec::new();
            pack(tag, &data, &mut msg);
            assert_eq!(msg.len(), wire_len(nb));
            assert!(msg.iter().all(|b| b & 0x80 != 0));
            // Bytes land in a scrambled order: pending until the last one, whichever it is.
            let mut s = slot(msg.len() / 8);
            let order: Vec<usize> = (0..msg.len()).map(|i| (i * 7919 + 13) % msg.len()).collect();
            let mut uniq = order.clone();
            uniq.sort_unstable();
            uniq.dedup();
            let order = if uniq.len() == msg.len() { order } else { (0..msg.len()).rev().collect() };
            let mut seen = 0;
            let base = s.as_mut_ptr() as usize;
            for (k, &i) in order.iter().enumerate() {
                // SAFETY: i < msg.len() = the slot's bytes.
                unsafe { (base as *mut u8).add(i).write(msg[i]) };
                // SAFETY: the slot holds wire_len(nb) aligned bytes, written only here.
                let got = unsafe { take(base, nb, &mut seen) };
                if k + 1 < order.len() {
                    assert_eq!(got, None, "nb {nb}: complete after {} of {} bytes", k + 1, msg.len());
                } else {
                    assert_eq!(got, Some(tag), "nb {nb}");
                }
            }
            // SAFETY: the slot's first nb bytes hold the decoded data.
            assert_eq!(unsafe { std::slice::from_raw_parts(base as *const u8, nb) }, &data[..]);
        }
    }

    #[test]
    fn a_zeroed_slot_is_pending_and_a_raw_block_is_not_taken_for_data() {
        let mut s = slot(wire_len(8) / 8);
        let mut seen = 0;
        // SAFETY: the slot holds wire_len(8) aligned bytes.
        assert_eq!(unsafe { take(s.as_mut_ptr() as usize, 8, &mut seen) }, None);
        // One byte missing its mark (0x7f: a raw byte) keeps it pending.
        let mut msg = Vec::new();
        pack(5, &[1, 2, 3, 4, 5, 6, 7, 8], &mut msg);
        msg[19] = 0x7f;
        // SAFETY: msg has as many bytes as the slot.
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), s.as_mut_ptr() as *mut u8, msg.len()) };
        let mut seen = 0;
        // SAFETY: as above.
        assert_eq!(unsafe { take(s.as_mut_ptr() as usize, 8, &mut seen) }, None);
        assert_eq!(seen, 2, "words before the unmarked byte are remembered");
    }
}
