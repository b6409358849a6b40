//! Mirror of `ishmemi_dev_state_t` (include/ishmem/device_state.h): the state a GPU kernel
//! reads to reach the PEs of its node. The C header is the reference; the asserts below fail
//! the build when the two drift apart. Owns the layout only, nothing of the runtime.

/// `ISHMEMI_MAX_LOCAL_PES`: PEs a kernel can reach (entries of `peer_base`).
pub const MAX_LOCAL_PES: usize = 64;
/// `ISHMEMI_SYNC_BYTES`: bytes at the start of every GPU heap reserved for the library.
pub const SYNC_BYTES: usize = 4096;
/// `ISHMEMI_SYNC_BARRIER_ARRIVE` and `ISHMEMI_SYNC_BARRIER_EPOCH`: words of the sync area.
pub const SYNC_BARRIER_ARRIVE: usize = 0;
pub const SYNC_BARRIER_EPOCH: usize = 1;
/// `ISHMEMI_SYNC_TEAM_AREA` and `ISHMEMI_SYNC_TEAMS_MAX`: words of the sync area holding the heap
/// offset of team slot 0's area and the number of team slots (written at init).
pub const SYNC_TEAM_AREA: usize = 2;
pub const SYNC_TEAMS_MAX: usize = 3;
/// `ISHMEMI_SYNC_PROXY_TICKET` and `ISHMEMI_SYNC_PROXY_QUIET`: the proxy ring's ticket counter
/// and the tickets taken at the last proxy quiet (words of each PE's own sync area).
pub const SYNC_PROXY_TICKET: usize = 4;
pub const SYNC_PROXY_QUIET: usize = 5;
/// `ISHMEMI_SYNC_PROXY_BOUNCE`: heap offset of the proxy bounce buffers.
pub const SYNC_PROXY_BOUNCE: usize = 6;
/// `ISHMEMI_PROXY_BOUNCE_BYTES`: one bounce buffer per ring slot (gets into a kernel's stack).
pub const PROXY_BOUNCE_BYTES: usize = 256;
/// `ishmemi_proxy_slot_t` and the ring's constants (`ISHMEMI_PROXY_*`).
pub const PROXY_SLOTS: usize = 1024;
/// `ISHMEMI_PROXY_INLINE_BYTES`: the inline area of each slot (an inline put's bytes).
pub const PROXY_INLINE_BYTES: usize = 1024;
/// `ISHMEMI_PROXY_RING_BYTES`: bytes of the proxy ring: PROXY_SLOTS slots of 8 words, then
/// their inline areas.
pub const PROXY_RING_BYTES: usize = PROXY_SLOTS * (64 + PROXY_INLINE_BYTES);

/// Bytes of the proxy thread's staging buffer for puts from device memory: pinned host memory
/// allocated right after the ring, in one allocation with it (two halves used in turn).
pub const PROXY_STAGE_BYTES: usize = 1 << 20;
pub const PROXY_HELD: u64 = 1 << 63;

/// The tag of request `t`'s reply words (include/ishmem/device_state.h): PROXY_HELD and the low
/// 31 bits of `t + 1`, in the upper half of words 6 and 7.
pub const fn proxy_reply_tag(t: u64) -> u64 {
    PROXY_HELD | ((t + 1) & 0x7fff_ffff) << 32
}

/// Words 6 and 7 of request `t` replied with `v`: the tag beside each half of `v`. The proxy
/// stores word 6, then word 7.
pub const fn proxy_reply_words(t: u64, v: u64) -> (u64, u64) {
    let tag = proxy_reply_tag(t);
    (tag | (v & 0xffff_ffff), tag | v >> 32)
}

/// The reply of request `t` from words 6 and 7 as the waiter read them, each whole but not
/// necessarily at one instant (the device's proxy_wait reads both in one 16-byte load, which
/// PTX does not promise to be one access): `None` unless both words carry the tag, so a word
/// read before the proxy wrote it (its own request's word 6, an earlier occupant's reply, word
/// 7 not yet done) is never combined with a new one.
pub const fn proxy_reply_of(t: u64, w6: u64, w7: u64) -> Option<u64> {
    let tag = proxy_reply_tag(t);
    if ((w6 ^ tag) | (w7 ^ tag)) >> 32 != 0 {
        return None;
    }
    Some((w6 & 0xffff_ffff) | w7 << 32)
}
pub const PROXY_REPLY: u64 = 1 << 24;
/// `ISHMEMI_PROXY_INLINE`: a put whose bytes are in its slot's inline area.
pub const PROXY_INLINE: u64 = 1 << 25;
pub const PROXY_PUT: u8 = 1;
pub const PROXY_GET: u8 = 2;
pub const PROXY_P: u8 = 3;
pub const PROXY_G: u8 = 4;
pub const PROXY_AMO: u8 = 5;
pub const PROXY_FENCE: u8 = 6;
pub const PROXY_QUIET: u8 = 7;
pub const PROXY_PUT_SIGNAL: u8 = 8;
pub const PROXY_NOP: u8 = 9;
/// `ISHMEMI_PROXY_COLL`: a device collective or team sync, run by the host (word 6: team
/// handle, `COLL_*` in bits 32..39, `COLL_T_*` in bits 40..47; word 5: root, then the reply).
pub const PROXY_COLL: u8 = 10;
/// `ISHMEMI_COLL_*`: which collective a `PROXY_COLL` request is.
pub const COLL_SYNC: u8 = 0;
pub const COLL_BROADCAST: u8 = 1;
pub const COLL_FCOLLECT: u8 = 2;
pub const COLL_COLLECT: u8 = 3;
pub const COLL_ALLTOALL: u8 = 4;
pub const COLL_REDUCE: u8 = 5;
pub const COLL_INSCAN: u8 = 6;
pub const COLL_EXSCAN: u8 = 7;
/// `ISHMEMI_COLL_T_*`: the element class of a reduction or scan (with the width of word 1).
pub const COLL_T_UNSIGNED: u8 = 0;
pub const COLL_T_SIGNED: u8 = 1;
pub const COLL_T_FLOAT: u8 = 2;
/// `ISHMEMI_COLL_OP_*`: the reduction operator (word 1's operator field).
pub const COLL_OP_AND: u8 = 0;
pub const COLL_OP_OR: u8 = 1;
pub const COLL_OP_XOR: u8 = 2;
pub const COLL_OP_MAX: u8 = 3;
pub const COLL_OP_MIN: u8 = 4;
pub const COLL_OP_SUM: u8 = 5;
pub const COLL_OP_PROD: u8 = 6;

/// `ishmemi_dev_state_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevState {
    pub my_pe: i32,
    pub n_pes: i32,
    /// This PE's heap (a device address).
    pub heap_base: u64,
    pub heap_size: u64,
    /// Offset of the sync area in every heap.
    pub sync_offset: u64,
    /// 1 once filled in by init.
    pub initialized: u32,
    /// `ISHMEMI_DEV_F_*` bits.
    pub flags: u32,
    /// Each PE's heap as mapped in this process, 0 where not reachable.
    pub peer_base: [u64; MAX_LOCAL_PES],
    /// The proxy ring (pinned host memory) when the job spans nodes, else 0.
    pub proxy_ring: u64,
}

const _: () = assert!(size_of::<DevState>() == 560);
const _: () = assert!(size_of::<DevState>() == 48 + 8 * MAX_LOCAL_PES);
const _: () = assert!(std::mem::offset_of!(DevState, my_pe) == 0);
const _: () = assert!(std::mem::offset_of!(DevState, n_pes) == 4);
const _: () = assert!(std::mem::offset_of!(DevState, heap_base) == 8);
const _: () = assert!(std::mem::offset_of!(DevState, heap_size) == 16);
const _: () = assert!(std::mem::offset_of!(DevState, sync_offset) == 24);
const _: () = assert!(std::mem::offset_of!(DevState, initialized) == 32);
const _: () = assert!(std::mem::offset_of!(DevState, flags) == 36);
const _: () = assert!(std::mem::offset_of!(DevState, peer_base) == 40);
const _: () = assert!(std::mem::offset_of!(DevState, proxy_ring) == 552);
const _: () = assert!(align_of::<DevState>() == 8);

/// `ISHMEMI_DEV_F_DEBUG`: ISHMEM_DEBUG=1 (kernels print ishmemx_print's DEBUG messages).
pub const DEV_F_DEBUG: u32 = 1;

impl DevState {
    /// The state of a running PE: its heap, the peers' heaps as mapped here.
    pub fn new(my_pe: usize, heap_base: u64, heap_size: usize, peers: &[u64]) -> DevState {
        let mut peer_base = [0u64; MAX_LOCAL_PES];
        for (d, s) in peer_base.iter_mut().zip(peers) {
            *d = *s;
        }
        DevState {
            my_pe: my_pe as i32,
            n_pes: peers.len() as i32,
            heap_base,
            heap_size: heap_size as u64,
            sync_offset: 0,
            initialized: 1,
            flags: 0,
            peer_base,
            proxy_ring: 0,
        }
    }

    /// The bytes handed to a binder or copied into a module's `ishmemi_dstate`.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: DevState is repr(C) plain data with no padding (the asserts above pin every
        // field's offset and the size to their sum), so every byte is initialized.
        unsafe { std::slice::from_raw_parts((self as *const DevState).cast::<u8>(), size_of::<DevState>()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_fills_peers_and_reads_back() {
        let s = DevState::new(1, 0x7000_0000_0000, 1 << 30, &[0x1000, 0x7000_0000_0000, 0x3000]);
        assert_eq!((s.my_pe, s.n_pes, s.initialized, s.sync_offset), (1, 3, 1, 0));
        assert_eq!(&s.peer_base[..4], &[0x1000, 0x7000_0000_0000, 0x3000, 0]);
        let b = s.as_bytes();
        assert_eq!(b.len(), 560);
        assert_eq!(&b[4..8], &3i32.to_ne_bytes());
        assert_eq!(&b[40..48], &0x1000u64.to_ne_bytes());
        assert_eq!(&b[32..36], &1u32.to_ne_bytes());
    }
}
