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

/// The wire word of a group's 56 bits `v`: bits 7k..7k+6 into byte k's bits 0..6, every
/// byte's top bit set. Three shift-and-mask steps (28 | 28 bits to the two 32-bit halves, 14 |
/// 14 to each half's 16-bit quarters, 7 | 7 to each quarter's bytes) instead of a loop over
/// the 8 bytes: a 4 KiB block is 586 words (issue 31: broadcast 4 KiB across nodes).
#[inline(always)]
fn spread(v: u64) -> u64 {
    let x = (v & 0x0000_0000_0FFF_FFFF) | ((v & 0x00FF_FFFF_F000_0000) << 4);
    let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x0FFF_C000_0FFF_C000) << 2);
    let x = (x & 0x007F_007F_007F_007F) | ((x & 0x3F80_3F80_3F80_3F80) << 1);
    x | MARKS
}

/// The group's 56 bits of wire word `w` (the inverse of `spread`).
#[inline(always)]
fn gather(w: u64) -> u64 {
    let x = w & !MARKS;
    let x = (x & 0x007F_007F_007F_007F) | ((x & 0x7F00_7F00_7F00_7F00) >> 1);
    let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x3FFF_0000_3FFF_0000) >> 2);
    (x & 0x0000_0000_0FFF_FFFF) | ((x & 0x0FFF_FFFF_0000_0000) >> 4)
}

/// Group bytes of a word (the 56 low bits).
const GROUP_MASK: u64 = (1 << (8 * GROUP)) - 1;

/// The message of `tag` and `data` into `out` (cleared first; `wire_len(data.len())` bytes).
pub fn pack(tag: u64, data: &[u8], out: &mut Vec<u8>) {
    let tag = tag.to_le_bytes();
    // Byte i of the stream the groups are cut from: the tag, the data, then zeros.
    let byte = |i: usize| if i < 8 { tag[i] } else { data.get(i - 8).copied().unwrap_or(0) };
    out.clear();
    out.reserve(wire_len(data.len()));
    for q in 0..wire_len(data.len()) / 8 {
        // Group q is stream bytes s..s+7: one 8-byte read where the data holds stream bytes
        // s..s+8 (the 8th masked off), byte by byte at the tag and at the end.
        let s = GROUP * q;
        let v = match data.get(s.wrapping_sub(8)..s) {
            Some(w) if s >= 8 => u64::from_le_bytes(w.try_into().unwrap_or_default()),
            _ => (0..GROUP).fold(0, |v, k| v | (byte(s + k) as u64) << (8 * k)),
        };
        out.extend_from_slice(&spread(v & GROUP_MASK).to_le_bytes());
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
    let word = |q: usize| {
        // SAFETY: each q passed below is < words of the slot, aligned; complete (seen above).
        gather(u64::from_le(unsafe { (slot as *const u64).add(q).read() }))
    };
    // Words 0 and 1 (there are always 2) hold the tag and data bytes 0..5: decoded first.
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&word(0).to_le_bytes());
    head[GROUP..GROUP + 8].copy_from_slice(&word(1).to_le_bytes());
    let p = slot as *mut u8;
    // Group q >= 2 holds data bytes 7q-8.., decoded in place: they lie before word q (7q-1 <
    // 8q), which is read before they are written, and every later word is read later.
    for q in 2..words {
        let v = word(q);
        let at = GROUP * q - 8;
        if at + 8 <= nb {
            // (Its 8th byte, zero, is the next group's first: written again by that group.)
            // SAFETY: bytes at..at+8 < nb of the slot.
            unsafe { (p.add(at) as *mut u64).write_unaligned(v.to_le()) };
        } else {
            // SAFETY: bytes at..nb (fewer than 8) of the slot.
            unsafe { std::ptr::copy_nonoverlapping(v.to_le_bytes().as_ptr(), p.add(at), nb.saturating_sub(at)) };
        }
    }
    // SAFETY: the slot's first min(nb, 6) bytes (inside word 0, read above).
    unsafe { std::ptr::copy_nonoverlapping(head.as_ptr().add(8), p, nb.min(2 * GROUP - 8)) };
    Some(u64::from_le_bytes(head[..8].try_into().unwrap_or_default()))
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

    /// `spread` and `gather` against the definition, bit by bit.
    #[test]
    fn spread_puts_seven_bits_in_each_byte() {
        let mut v: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..2000 {
            v = v.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let g = if i < 56 { 1u64 << i } else { v & GROUP_MASK };
            let mut want = MARKS;
            for k in 0..8 {
                want |= ((g >> (BITS * k)) & 0x7f) << (8 * k);
            }
            assert_eq!(spread(g), want, "group {g:#x}");
            assert_eq!(gather(want), g, "word {want:#x}");
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
