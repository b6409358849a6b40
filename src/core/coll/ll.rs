//! Flag-in-data messages ("LL", after the low-latency protocol of GPU collective libraries)
//! of the all-send class and the broadcast slots across nodes (issue 31): a block and its
//! arrival flag in one network write, where the data write and the flag write were two
//! provider messages, each a system call or two at both ends.
//!
//! Layout: the message is the 8-byte tag of the call (`Team::tag`: count and signature),
//! then the data, cut into groups of 7 bytes (the last padded with zeros), then a check word;
//! each group's 56 bits travel as one 8-byte word of 8 bytes `0x80 | seven bits` (bits 0-6
//! of the group in the word's first byte in memory, and so on). Every byte of a message has
//! its top bit set, and the receiver's slot is all zero before the message is written into
//! it (`Team::reduce_begin` and the broadcast members zero a slot before the call whose
//! message tells its sender that it may write it again). So the receiver knows the message
//! is complete when every byte of it shows the top bit, whatever order the bytes are stored
//! in, inside a word or across words: nothing depends on the byte order of one write, only on
//! a single byte's store being whole. The tag then says which call the message is of (a
//! mismatch of the call's kind, size or root shows in the signature, as a flag's would). The
//! wire costs 8/7 of the bytes and a word.
//!
//! What writes the bytes into the slot is a copy of this process (the provider's receive
//! path, or the staged heap's server, `core/stage.rs`), and a copy may store some bytes a
//! second time after every byte was already stored once: glibc's memcpy of 129 B to 8 VEC
//! loads the whole block, then stores the head vectors and the tail vectors, overlapping, the
//! last of them over bytes stored before. Two rules follow. (1) The receiver never writes into
//! a slot holding a message (`decode` writes the data elsewhere): decoded in place, a block
//! of 244 B came out with a run of its bytes replaced by their wire bytes when such a second
//! store landed after the decoding (a sum_reduce of 61 ints across nodes returned
//! 0x80808086 in CI; a copier thread against a reader in `tests::a_copy_storing_twice...`:
//! 4,645 of 20,000 blocks). (2) A second store held back long enough (its thread preempted)
//! can land after the slot was zeroed for its next use, leaving marked bytes of the old
//! message among the next one's: the check word, a weighted sum of the message's words, tells
//! a whole message from such a mix (`take` keeps waiting until the sum holds). Where the late
//! store is the whole old message (memcpy stores a 32-byte message twice, whole), its tag's
//! earlier count tells it from this call's message (`take_for` keeps waiting until the
//! sender's message replaces it).

/// Bytes per group (one wire word).
const GROUP: usize = 7;

/// Bytes on the wire for `nb` bytes of data (the tag and the data in groups of 7 bytes, one
/// word each, then the check word).
pub const fn wire_len(nb: usize) -> usize {
    ((8 + nb).div_ceil(GROUP) + 1) * 8
}

/// Groups (data words, the tag's included) of a message of `nb` data bytes: every word but
/// the check word.
const fn groups(nb: usize) -> usize {
    wire_len(nb) / 8 - 1
}

/// The first group from 2 on that does not lie wholly in the data (groups 2.. below it hold
/// data bytes 7q-8..7q, 7q <= nb, moved as one 8-byte access each).
fn whole(nb: usize) -> usize {
    (nb / GROUP + 1).clamp(2, groups(nb))
}

/// The most data bytes whose message fits `slot` bytes.
pub const fn fits(slot: usize) -> usize {
    ((slot / 8).saturating_sub(1) * GROUP).saturating_sub(8)
}

/// Every byte's top bit, per word.
const MARKS: u64 = 0x8080_8080_8080_8080;

/// The wire word of a group's 56 bits `v`: bits 7k..7k+6 into byte k's bits 0..6, every
/// byte's top bit set. Three shift-and-mask steps (28 | 28 bits to the two 32-bit halves, 14 |
/// 14 to each half's 16-bit quarters, 7 | 7 to each quarter's bytes) instead of a loop over
/// the 8 bytes: a 4 KiB block is 587 words (issue 31: broadcast 4 KiB across nodes).
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

/// Word q's term of the check sum: the word times an odd weight, so that a change of any one
/// word changes the sum's low 56 bits (an odd factor is invertible modulo 2^56), and words
/// that trade places change it too. Independent products: no chain of multiplies.
#[inline(always)]
fn term(q: usize, w: u64) -> u64 {
    w.wrapping_mul(2 * q as u64 + 1)
}

/// Whether this CPU's `pdep`/`pext` (BMI2) are fast: the spread and gather of a word in one
/// instruction each (pack of 4 KiB 650 -> 310 ns on this VM's Xeon). Not on AMD before Zen 3
/// (family 19h), where they are microcoded and take tens to hundreds of cycles with this
/// mask. Decided once per process.
#[cfg(target_arch = "x86_64")]
fn fast_bits() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
    static FAST: AtomicU8 = AtomicU8::new(0);
    match FAST.load(Relaxed) {
        1 => false,
        2 => true,
        _ => {
            // SAFETY: cpuid is available on every x86_64 CPU (a safe function in newer Rust).
            #[allow(unused_unsafe)]
            let (l0, l1) = unsafe { (std::arch::x86_64::__cpuid(0), std::arch::x86_64::__cpuid(1)) };
            let amd = (l0.ebx, l0.edx, l0.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163); // "AuthenticAMD"
            let family = ((l1.eax >> 8) & 0xF) + if (l1.eax >> 8) & 0xF == 0xF { (l1.eax >> 20) & 0xFF } else { 0 };
            let fast = std::arch::is_x86_feature_detected!("bmi2") && !(amd && family < 0x19);
            FAST.store(if fast { 2 } else { 1 }, Relaxed);
            fast
        }
    }
}

/// The byte lanes' low 7 bits of a wire word (`pdep`/`pext` mask).
#[cfg(target_arch = "x86_64")]
const LANES: u64 = !MARKS;

/// The message of `tag` and `data` into `out` (cleared first; `wire_len(data.len())` bytes).
pub fn pack(tag: u64, data: &[u8], out: &mut Vec<u8>) {
    #[cfg(target_arch = "x86_64")]
    if fast_bits() {
        /// `pack_with` compiled with BMI2, its spread one `pdep`.
        #[target_feature(enable = "bmi2")]
        unsafe fn pack_bmi2(tag: u64, data: &[u8], out: &mut Vec<u8>) {
            // SAFETY: the caller checked BMI2 (a safe call inside this function in newer Rust).
            #[allow(unused_unsafe)]
            pack_with(tag, data, out, |v| unsafe { std::arch::x86_64::_pdep_u64(v, LANES) } | MARKS)
        }
        // SAFETY: fast_bits() saw BMI2.
        return unsafe { pack_bmi2(tag, data, out) };
    }
    pack_with(tag, data, out, spread)
}

/// `pack`, with `spread` the word's spread (the portable one or `pdep`).
#[inline(always)]
fn pack_with(tag: u64, data: &[u8], out: &mut Vec<u8>, spread: impl Fn(u64) -> u64) {
    let nb = data.len();
    let (groups, len) = (groups(nb), wire_len(nb));
    out.clear();
    out.reserve(len);
    let dst = out.as_mut_ptr();
    let mut sum = 0u64;
    // Each word is stored once through a pointer into the reserved capacity: no zero fill
    // first and no length update per word.
    let mut put = |q: usize, v: u64| {
        let x = spread(v & GROUP_MASK);
        sum = sum.wrapping_add(term(q, x));
        // SAFETY: word q < groups of the `len` bytes reserved above.
        unsafe { dst.add(8 * q).cast::<u64>().write_unaligned(x.to_le()) };
    };
    // Group q holds stream bytes 7q..7q+7 of the tag, the data, then zeros.
    // Groups 0 and 1: the tag and data bytes 0..6.
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&tag.to_le_bytes());
    head[8..8 + nb.min(8)].copy_from_slice(&data[..nb.min(8)]);
    put(0, u64::from_le_bytes(head[..8].try_into().unwrap_or_default()));
    put(1, u64::from_le_bytes(head[GROUP..GROUP + 8].try_into().unwrap_or_default()));
    // Groups 2.. where the data holds the 8 bytes from 7q-8 on (7q <= nb): one 8-byte read
    // each (the 8th masked off).
    let whole = whole(nb);
    for q in 2..whole {
        // SAFETY: bytes 7q-8..7q of data (7q <= nb).
        put(q, unsafe { data.as_ptr().add(GROUP * q - 8).cast::<u64>().read_unaligned() }.to_le());
    }
    // The rest (the last group, and any group past the data: zeros), byte by byte.
    for q in whole..groups {
        let at = GROUP * q - 8;
        put(q, (at..nb.min(at + GROUP)).fold(0, |v, i| v | (data[i] as u64) << (8 * (i - at))));
    }
    // SAFETY: the check word, the last of the `len` bytes reserved; words 0..groups are stored
    // above, so all `len` bytes are initialized.
    unsafe {
        dst.add(8 * groups).cast::<u64>().write_unaligned(spread(sum & GROUP_MASK).to_le());
        out.set_len(len);
    }
}

/// What `take` has seen of a message so far (start from `Seen::default()` for each message).
#[derive(Default)]
pub struct Seen {
    /// Words seen with every byte marked, from the first.
    words: usize,
    /// Their check-sum terms.
    sum: u64,
}

/// Looks at the message of `nb` data bytes being written into `slot`: `None` while some byte
/// has not arrived, or the words do not add up to the check word (bytes of an older message
/// among them: the module's rule 2); once all have, returns the tag. Writes nothing: the data
/// is read with `decode`. A byte, once set, normally stays until the slot is zeroed, so each
/// call looks only at the words not yet seen; after a failed check it looks at all again.
///
/// # Safety
/// `slot` is 8-byte aligned and readable for `wire_len(nb)` bytes; only this message's write
/// (by another process or the provider, storing any byte any number of times) and late
/// stores of the slot's earlier messages touch it meanwhile.
unsafe fn take(slot: usize, nb: usize, seen: &mut Seen) -> Option<u64> {
    use std::sync::atomic::{fence, AtomicU64, Ordering::*};
    let groups = groups(nb);
    // SAFETY: word q <= groups of the slot (the caller's contract), aligned, loaded atomically
    // while the network may be writing it.
    let load = |q: usize| unsafe { AtomicU64::from_ptr((slot + 8 * q) as *mut u64) }.load(Relaxed);
    while seen.words < groups {
        let w = load(seen.words);
        if w & MARKS != MARKS {
            return None;
        }
        seen.sum = seen.sum.wrapping_add(term(seen.words, u64::from_le(w)));
        seen.words += 1;
    }
    let check = load(groups);
    if check & MARKS != MARKS {
        return None;
    }
    if gather(u64::from_le(check)) != seen.sum & GROUP_MASK {
        // Some word changed after it was seen: all again.
        *seen = Seen::default();
        return None;
    }
    // Every byte arrived: what the loads saw is what the bytes hold.
    fence(Acquire);
    // The tag: stream bytes 0..8, in groups 0 and 1 (there are always 2).
    Some(gather(u64::from_le(load(0))) | (gather(u64::from_le(load(1))) & 0xFF) << (8 * GROUP))
}

/// What a slot holds for the call whose tag is `want` (`take_for`).
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Not (yet) this call's whole message.
    Pending,
    /// This call's message, whole: read it with `decode`.
    Ours,
    /// A whole message of this call's count or a later one with another signature (the
    /// sender is in another collective call): its tag.
    Other(u64),
}

/// `take` for the call of tag `want` (its count above `SIG_BITS`, as `Team::tag`). A whole
/// message of an earlier count is that of the slot's last use stored a second time after the
/// slot was zeroed (the module's rule 2, when the late store holds the whole message: glibc's
/// memcpy of 32 B, an 8-byte block's message, stores all 32 bytes twice, so a copier preempted
/// between its two stores writes the old message back whole): not taken, and the look goes on
/// until this call's message replaces it. Before, the collectives took it for a message of
/// another call and ended the job ("collective call ... differs between PEs", both PEs in a
/// broadcast of 8 bytes from root 0).
///
/// # Safety
/// As `take`.
pub unsafe fn take_for(slot: usize, nb: usize, seen: &mut Seen, want: u64) -> Taken {
    // SAFETY: the caller's contract is take's.
    match unsafe { take(slot, nb, seen) } {
        None => Taken::Pending,
        Some(t) if t == want => Taken::Ours,
        Some(t) if t >> super::SIG_BITS < want >> super::SIG_BITS => {
            *seen = Seen::default();
            Taken::Pending
        }
        Some(t) => Taken::Other(t),
    }
}

/// Writes the `nb` data bytes of the complete message in `slot` (`take` returned its tag) to
/// `out`.
///
/// # Safety
/// `slot` is 8-byte aligned and readable for `wire_len(nb)` bytes and holds a message `take`
/// saw complete (the bytes stored again meanwhile are the same bytes); `out` is writable for
/// `nb` bytes and does not overlap the slot.
pub unsafe fn decode(slot: usize, nb: usize, out: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    if fast_bits() {
        /// `decode_with` compiled with BMI2, its gather one `pext`.
        ///
        /// # Safety
        /// As `decode`; BMI2 present.
        #[target_feature(enable = "bmi2")]
        unsafe fn decode_bmi2(slot: usize, nb: usize, out: *mut u8) {
            // SAFETY: the caller's contract (decode's) and BMI2.
            unsafe { decode_with(slot, nb, out, |w| std::arch::x86_64::_pext_u64(w, LANES)) }
        }
        // SAFETY: decode's contract; fast_bits() saw BMI2.
        return unsafe { decode_bmi2(slot, nb, out) };
    }
    // SAFETY: decode's contract.
    unsafe { decode_with(slot, nb, out, gather) }
}

/// `decode`, with `gather` the word's gather (the portable one or `pext`).
///
/// # Safety
/// As `decode`.
#[inline(always)]
unsafe fn decode_with(slot: usize, nb: usize, out: *mut u8, gather: impl Fn(u64) -> u64) {
    let groups = groups(nb);
    let words = slot as *const u64;
    // Word q of the slot. Plain loads, which the compiler may widen to vector loads (a 4 KiB
    // block is 587 words): a late second store of a copy (the module's rule 1) writes the
    // same bytes, so any load sees the message's value.
    let word = |q: usize| {
        // SAFETY: every q passed below is < groups of the slot (the caller's contract); aligned.
        gather(u64::from_le(unsafe { words.add(q).read() }))
    };
    // Group 1 holds the tag's last byte and data bytes 0..6.
    let head = (word(1) >> 8).to_le_bytes();
    // SAFETY: the first min(nb, 6) bytes of out.
    unsafe { std::ptr::copy_nonoverlapping(head.as_ptr(), out, nb.min(GROUP - 1)) };
    // Group q >= 2 holds data bytes 7q-8 .. 7q-1, written as 8 bytes where 7q <= nb (the 8th,
    // zero, is the next group's first, written again by that group), else the bytes up to nb.
    let whole = whole(nb);
    for q in 2..whole {
        // SAFETY: bytes 7q-8..7q of out, 7q <= nb.
        unsafe { (out.add(GROUP * q - 8) as *mut u64).write_unaligned(word(q).to_le()) };
    }
    for q in whole..groups {
        let at = GROUP * q - 8;
        // SAFETY: bytes at..nb (fewer than 8) of out.
        unsafe { std::ptr::copy_nonoverlapping(word(q).to_le_bytes().as_ptr(), out.add(at), nb.saturating_sub(at)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
    use std::sync::Arc;

    /// A slot of `n` words (8-byte aligned).
    fn slot(n: usize) -> Vec<u64> {
        vec![0; n]
    }

    /// Data of `nb` bytes, different per `seed`.
    fn data(nb: usize, seed: usize) -> Vec<u8> {
        (0..nb).map(|i| (i * 37 + 11 + seed * 101) as u8).collect()
    }

    /// The data of the complete message in `s`.
    fn decoded(s: &[u64], nb: usize) -> Vec<u8> {
        let mut out = vec![0u8; nb];
        // SAFETY: s holds wire_len(nb) bytes of a complete message; out has nb bytes.
        unsafe { decode(s.as_ptr() as usize, nb, out.as_mut_ptr()) };
        out
    }

    /// Where this CPU takes the BMI2 path, it must give the portable path's bytes (both
    /// directions, every length class: head only, whole groups, a partial last group).
    #[test]
    fn the_bmi2_path_matches_the_portable_one() {
        for nb in [0usize, 1, 6, 7, 8, 13, 14, 15, 64, 244, 881, 4096, 4097, 19081] {
            let data = data(nb, 3);
            let tag = 0xfedc_ba98_7654_3210u64 ^ nb as u64;
            let (mut fast, mut portable) = (Vec::new(), Vec::new());
            pack(tag, &data, &mut fast);
            pack_with(tag, &data, &mut portable, spread);
            assert_eq!(fast, portable, "pack of {nb} B");
            let s: Vec<u64> = portable.chunks(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
            let mut out = vec![0u8; nb];
            // SAFETY: s holds the complete message of nb bytes; out has nb bytes.
            unsafe { decode_with(s.as_ptr() as usize, nb, out.as_mut_ptr(), gather) };
            assert_eq!(out, data, "portable decode of {nb} B");
            assert_eq!(decoded(&s, nb), data, "decode of {nb} B");
        }
        #[cfg(target_arch = "x86_64")]
        if fast_bits() {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..10_000 {
                x = x.rotate_left(17).wrapping_mul(0x2545_f491_4f6c_dd1d);
                let v = x & GROUP_MASK;
                // SAFETY: fast_bits() saw BMI2.
                let (d, e) = unsafe { (std::arch::x86_64::_pdep_u64(v, LANES), std::arch::x86_64::_pext_u64(spread(v), LANES)) };
                assert_eq!(d | MARKS, spread(v));
                assert_eq!(e, v);
            }
        }
    }

    #[test]
    fn round_trip_in_any_byte_order() {
        for nb in [0usize, 1, 3, 6, 7, 8, 13, 64, 104, 244, 500, 881, 1329, 4096] {
            let data = data(nb, 0);
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
            let mut seen = Seen::default();
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
            assert_eq!(decoded(&s, nb), data, "nb {nb}");
            // take wrote nothing: the slot still holds the message.
            // SAFETY: the slot's bytes.
            assert_eq!(unsafe { std::slice::from_raw_parts(base as *const u8, msg.len()) }, &msg[..]);
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
                want |= ((g >> (7 * k)) & 0x7f) << (8 * k);
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
        assert_eq!((fits(128), fits(1024), fits(1536)), (97, 881, 1329));
        // 8/7 of the data plus the tag, in whole words, and the check word.
        assert_eq!((wire_len(0), wire_len(6), wire_len(7), wire_len(4096)), (24, 24, 32, 4704));
    }

    #[test]
    fn a_zeroed_slot_is_pending_and_a_raw_block_is_not_taken_for_data() {
        let mut s = slot(wire_len(8) / 8);
        let mut seen = Seen::default();
        // SAFETY: the slot holds wire_len(8) aligned bytes.
        assert_eq!(unsafe { take(s.as_mut_ptr() as usize, 8, &mut seen) }, None);
        // One byte missing its mark (0x7f: a raw byte) keeps it pending.
        let mut msg = Vec::new();
        pack(5, &[1, 2, 3, 4, 5, 6, 7, 8], &mut msg);
        msg[19] = 0x7f;
        // SAFETY: msg has as many bytes as the slot.
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), s.as_mut_ptr() as *mut u8, msg.len()) };
        let mut seen = Seen::default();
        // SAFETY: as above.
        assert_eq!(unsafe { take(s.as_mut_ptr() as usize, 8, &mut seen) }, None);
        assert_eq!(seen.words, 2, "words before the unmarked byte are remembered");
    }

    /// Rule 2 of the module: bytes of the slot's last message, stored again after the slot
    /// was zeroed, sit among the next message's bytes, every byte marked: not taken until the
    /// next message's own bytes replace them. Before the check word, `take` returned the new
    /// tag here and the data held the old message's bytes 32..96.
    #[test]
    fn an_old_message_s_late_bytes_among_a_new_one_are_not_taken() {
        for nb in [61 * 4, 100, 600] {
            let (old, new) = (data(nb, 1), data(nb, 2));
            let (mut mo, mut mn) = (Vec::new(), Vec::new());
            pack(3 << 20, &old, &mut mo);
            pack(5 << 20, &new, &mut mn);
            let mut s = slot(mn.len() / 8);
            let p = s.as_mut_ptr() as *mut u8;
            let late = 32..96;
            // SAFETY: every range written lies inside the slot's wire_len(nb) bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(mo[late.clone()].as_ptr(), p.add(late.start), late.len());
                std::ptr::copy_nonoverlapping(mn.as_ptr(), p, late.start);
                std::ptr::copy_nonoverlapping(mn[late.end..].as_ptr(), p.add(late.end), mn.len() - late.end);
            }
            let mut seen = Seen::default();
            // SAFETY: the slot holds wire_len(nb) aligned bytes.
            assert_eq!(unsafe { take(s.as_ptr() as usize, nb, &mut seen) }, None, "nb {nb}: a mix taken for a message");
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(mn[late.clone()].as_ptr(), p.add(late.start), late.len()) };
            // SAFETY: as above.
            assert_eq!(unsafe { take(s.as_ptr() as usize, nb, &mut seen) }, Some(5 << 20), "nb {nb}");
            assert_eq!(decoded(&s, nb), new);
        }
    }

    /// Rule 2 where the late store is the whole old message (a 32-byte message, copied by
    /// two full 32-byte stores): a whole message of an earlier count in the slot is not this
    /// call's, nor another call's; this call's message replaces it and is taken. A message of
    /// this count with another signature, or of a later count, is another call's.
    #[test]
    fn an_earlier_message_stored_again_whole_is_not_taken() {
        let sig = 0x00ab_cdef;
        let tag = |c: u64| c << crate::core::coll::SIG_BITS | sig;
        let (old, new) = (data(8, 1), data(8, 2));
        let (mut mo, mut mn) = (Vec::new(), Vec::new());
        pack(tag(62305), &old, &mut mo);
        pack(tag(62321), &new, &mut mn);
        assert_eq!(mo.len(), 32);
        let mut s = slot(mn.len() / 8);
        let p = s.as_mut_ptr() as *mut u8;
        // SAFETY: 32 bytes into the slot's 32.
        unsafe { std::ptr::copy_nonoverlapping(mo.as_ptr(), p, mo.len()) };
        let mut seen = Seen::default();
        for _ in 0..3 {
            // SAFETY: the slot holds wire_len(8) aligned bytes.
            assert_eq!(unsafe { take_for(s.as_ptr() as usize, 8, &mut seen, tag(62321)) }, Taken::Pending, "the old message taken");
        }
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(mn.as_ptr(), p, mn.len()) };
        // SAFETY: as above.
        assert_eq!(unsafe { take_for(s.as_ptr() as usize, 8, &mut seen, tag(62321)) }, Taken::Ours);
        assert_eq!(decoded(&s, 8), new);
        for want in [tag(62321) ^ 1, tag(62320)] {
            let mut seen = Seen::default();
            // SAFETY: as above.
            assert_eq!(unsafe { take_for(s.as_ptr() as usize, 8, &mut seen, want) }, Taken::Other(tag(62321)), "want {want:#x}");
        }
    }

    /// Rule 1 of the module, against a real copy: a thread copies each message into the
    /// zeroed slot with the C library's memcpy (which, at these sizes, stores some bytes twice)
    /// while this one waits with `take` and decodes as soon as it returns; once the copy has
    /// returned, the decoded block must be the data. Decoded in place (the old `take`), 4,645
    /// of 20,000 blocks of 244 B and 19 of 20,000 of 150 B came out with wire bytes in them on
    /// the 2-core VM (AVX-512 glibc 2.36).
    #[test]
    fn a_copy_storing_twice_does_not_change_the_decoded_block() {
        for nb in [244usize, 150, 600, 1329] {
            let data = data(nb, 3);
            let mut msg = Vec::new();
            pack(9, &data, &mut msg);
            let words = msg.len() / 8;
            let s: Arc<Vec<AtomicU64>> = Arc::new((0..words).map(|_| AtomicU64::new(0)).collect());
            let (go, done) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let rounds = 5000;
            let copier = {
                let (s, go, done, msg) = (s.clone(), go.clone(), done.clone(), msg.clone());
                std::thread::spawn(move || {
                    for i in 1..=rounds {
                        while go.load(Acquire) < i {
                            std::thread::yield_now();
                        }
                        // SAFETY: the slot holds msg.len() bytes; the other thread only loads
                        // them atomically meanwhile (a byte race with atomics, as with the
                        // network writing a slot).
                        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), s.as_ptr() as *mut u8, std::hint::black_box(msg.len())) };
                        done.store(i, Release);
                    }
                })
            };
            let mut bad = 0;
            let mut out = vec![0u8; nb];
            for i in 1..=rounds {
                for w in s.iter() {
                    w.store(0, Relaxed);
                }
                go.store(i, Release);
                let mut seen = Seen::default();
                // SAFETY: the slot holds wire_len(nb) aligned bytes, written only by the copy.
                while unsafe { take(s.as_ptr() as usize, nb, &mut seen) }.is_none() {
                    std::hint::spin_loop();
                }
                // SAFETY: a complete message; out holds nb bytes.
                unsafe { decode(s.as_ptr() as usize, nb, out.as_mut_ptr()) };
                while done.load(Acquire) < i {
                    std::thread::yield_now();
                }
                bad += usize::from(out != data);
            }
            copier.join().unwrap();
            assert_eq!(bad, 0, "{nb} B: {bad} of {rounds} decoded blocks differ from the data");
        }
    }
}
