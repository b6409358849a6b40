//! Flag-in-data messages ("LL", after the low-latency protocol of GPU collective libraries)
//! of the all-send class and the broadcast slots across nodes (issue 31): a block and its
//! arrival flag in one network write, where the data write and the flag write were two
//! provider messages, each a system call or two at both ends.
//!
//! Layout: the message is the 8-byte tag of the call (`Team::tag`: count and signature),
//! then the data, cut into groups of 7 bytes (the last padded with zeros); each group's 56
//! bits travel as one 8-byte word of 8 bytes `0x80 | seven bits` (bits 0-6 of the group in
//! the word's first byte in memory, and so on). Every byte of a message has its top bit set,
//! and the receiver's slot is all zero before the message is written into it (`Team::reduce_begin`
//! and the broadcast members zero a slot before the call whose message tells its sender
//! that it may write it again). So the receiver knows the message is complete when every
//! byte of it shows the top bit, whatever order the provider stores the bytes in, inside a
//! word or across words: nothing depends on the byte order of one write, only on a single
//! byte's store being whole. The tag then says which call the message is of (a mismatch of
//! the call's kind, size or root shows in the signature, as a flag's would). The wire costs
//! 8/7 of the bytes (the first form, two bytes per byte, cost 2x and fit half the data in a
//! slot).

/// Data bits per wire byte, and bytes per group (one wire word).
const BITS: u32 = 7;
const GROUP: usize = 7;

/// Bytes on the wire for `nb` bytes of data (the tag and the data in groups of 7 bytes, one
/// word each).
pub const fn wire_len(nb: usize) -> usize {
    (8 + nb).div_ceil(GROUP) * 8
}

/// The most data bytes whose message fits `slot` bytes.
pub const fn fits(slot: usize) -> usize {
    (slot / 8 * GROUP).saturating_sub(8)
}

/// Every byte's top bit, per word.
const MARKS: u64 = 0x8080_8080_8080_8080;

/// The wire word of a group's 56 bits `v`.
fn spread(v: u64) -> u64 {
    let mut w = MARKS;
    for k in 0..8 {
        w |= ((v >> (BITS * k)) & 0x7f) << (8 * k);
    }
    w
}

/// The group's 56 bits of wire word `w`.
fn gather(w: u64) -> u64 {
    let mut v = 0;
    for k in 0..8 {
        v |= ((w >> (8 * k)) & 0x7f) << (BITS * k);
    }
    v
}

/// The message of `tag` and `data` into `out` (cleared first; `wire_len(data.len())` bytes).
pub fn pack(tag: u64, data: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(wire_len(data.len()));
    let tag = tag.to_le_bytes();
    let byte = |i: usize| if i < 8 { tag[i] } else { data.get(i - 8).copied().unwrap_or(0) };
    for q in 0..wire_len(data.len()) / 8 {
        let mut v = 0u64;
        for k in 0..GROUP {
            v |= (byte(GROUP * q + k) as u64) << (8 * k);
        }
        out.extend_from_slice(&spread(v).to_le_bytes());
    }
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
    for q in 0..words {
        // SAFETY: word q < words of the slot, aligned; complete (seen above).
        let v = gather(u64::from_le(unsafe { (slot as *const u64).add(q).read() }));
        for (k, b) in v.to_le_bytes()[..GROUP].iter().enumerate() {
            let i = GROUP * q + k;
            if i < 8 {
                tag[i] = *b;
            } else if i - 8 < nb {
                // In place, word by word: byte i-8 <= 7q-2 lies before word q, which was
                // read whole above, and every later word (from byte 8q+8) is read later.
                // SAFETY: byte i-8 < nb inside the slot.
                unsafe { p.add(i - 8).write(*b) };
            }
        }
    }
    Some(u64::from_le_bytes(tag))
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
        for nb in [0usize, 1, 3, 6, 7, 8, 13, 64, 104, 500, 888, 1336, 4096] {
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
    fn fits_is_the_largest_block_a_slot_holds() {
        for slot in [128usize, 256, 768, 1024, 1536] {
            let nb = fits(slot);
            assert!(wire_len(nb) <= slot && wire_len(nb + 1) > slot, "slot {slot}: fits {nb}");
        }
        assert_eq!((fits(128), fits(1024), fits(1536)), (104, 888, 1336));
        // 8/7 of the data plus the tag, in whole words.
        assert_eq!((wire_len(0), wire_len(6), wire_len(7), wire_len(4096)), (16, 16, 24, 4696));
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
