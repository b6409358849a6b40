//! Teams: the descriptor table every PE keeps (`ishmemi_team_desc_t` of
//! include/ishmem/device_state.h, mirrored here with the same asserts), the arithmetic of
//! splits and PE translation, and the pool of team slots. Pure bookkeeping: no memory of the
//! heap is touched here (the synchronization words live in `core::coll`).
//!
//! A team is an arithmetic progression of world PEs (`start + stride * i`, `i < size`); a split
//! of a team is again one, so every team needs only those three numbers. Handles are slot
//! indices: 0 world, 1 shared, 2 node, then split teams. A split chooses the lowest slot free on
//! every PE of its parent team, so all members of a team agree on its handle and on the heap
//! offset of its sync area (`sync_offset`, fixed per slot).

/// `ISHMEMI_TEAM_AREA_BYTES`: symmetric heap bytes owned by each team slot (the sync words of
/// the first KiB, the push collectives' counters and flags, their scratch).
pub const AREA_BYTES: usize = BCAST_SCRATCH + 2 * BCAST_SLOT;
/// Words of a team's sync area (`ISHMEMI_TEAM_SYNC_*`).
pub const W_EPOCH: usize = 0;
pub const W_VALUE: usize = 1;
/// World team (slot 0) only: this PE's heap base address, written at init
/// (`core::agree::common_align` reads every PE's).
pub const W_HEAP_BASE: usize = 2;
/// World team (slot 0) only, jobs across nodes: set by a PE of another node that fails, to its
/// PE number + 1 (the progress thread ends this PE when it sees it).
pub const W_ABORT: usize = 7;
pub const W_ROUND: usize = 8;
pub const ROUNDS: usize = 32;
/// Words 40..43: this PE's `ishmemi_team_desc_t` of the slot (size 0: no team of this PE), read
/// by device code (include/ishmem/cuda_coll.cuh reads start, stride, size, my_pe).
pub const W_DESC: usize = 40;
/// Words 44..55: this PE's record of the host collective it entered last on the team
/// (`core::coll::Team::enter`): `seq << 8 | kind`, two arguments, a spare word, then the
/// function's name (NUL-padded, 64 bytes). Read by peers that wait long, to name a mismatch.
pub const W_ENTRY: usize = 44;
pub const ENTRY_WORDS: usize = 12;
/// World team (slot 0) only, words 56..63: this PE's records of its last two symmetric memory
/// calls, by the parity of their count (`core::agree::memory_call`).
pub const W_MEMCALL: usize = 56;
pub const W_SPLIT: usize = 64;
pub const SPLIT_WORDS: usize = 64;
/// The push collectives of the CPU backend (`core::coll`; never touched by device code).
/// Words 128..130: collectives of each push class this PE started on the team (own use):
/// `PUSH_BCAST` broadcasts, `PUSH_MOVE` fcollects and alltoalls, `PUSH_REDUCE` reductions and
/// scans. Words `W_PUSH_FLAGS + 64 * class + j`: the count of that class that team PE j last
/// delivered to this PE (written only by j, Release, values only grow).
pub const W_PUSH_COUNT: usize = 128;
/// Teams across nodes (`core::coll::Team::sync_nodes`, CPU backend only): in the team area of
/// each node's leader (its lowest team PE), the count of arrivals of the node's other members
/// (each adds 1 per sync) and the epoch of the last sync the leader released them from.
pub const W_NODE_ARRIVE: usize = 131;
pub const W_NODE_RELEASE: usize = 132;
/// Teams across nodes (`core::coll::Team::broadcast_push`), own use: the last broadcast count
/// that went through the small-slot ring, and the last that went through a parity slot.
pub const W_BCAST_RING: usize = 133;
pub const W_BCAST_PAR: usize = 134;
/// Own use, teams across nodes: the root (+ 1) and count of this PE's last broadcast entry
/// announcement (`core::coll::Team::must_announce`).
pub const W_BCAST_ANN_ROOT: usize = 135;
pub const W_BCAST_ANN_COUNT: usize = 136;
/// The tree collectives of large teams across nodes (`core::coll::tree`): own use, the count of
/// tree collectives this PE started on the team; written by the parent: its flag down, and (for
/// collect) this PE's offset and the total; written by child `j` (the one at distance 2^j):
/// its flags up and (collect) its subtree's bytes; `W_TREE_BCAST`: the broadcast tree's flag
/// down (written by the parent of the call's root, which changes between calls).
pub const W_TREE_COUNT: usize = 137;
pub const W_TREE_DOWN: usize = 138;
pub const W_TREE_OFF: usize = 139;
pub const W_TREE_TOTAL: usize = 140;
pub const W_TREE_UP: usize = 141;
pub const W_TREE_SIZE: usize = 165;
pub const W_TREE_BCAST: usize = 189;
/// Own use, the all-send class (`core::coll::Team::reduce_begin`): the bytes of each scratch
/// slot that members of other nodes wrote at this PE's last call of the class, zeroed at the
/// next.
pub const W_RED_USED: usize = 190;
pub const W_PUSH_FLAGS: usize = 192;
/// Words `W_PUSH_READY + 64 * class + j` (classes `PUSH_BCAST`, `PUSH_MOVE`): the count of that
/// class team PE j has entered, so that this PE may store into j's dest (written only by j).
pub const W_PUSH_READY: usize = 384;
pub const PUSH_CLASSES: usize = 3;
pub const PUSH_BCAST: usize = 0;
pub const PUSH_MOVE: usize = 1;
pub const PUSH_REDUCE: usize = 2;
/// Largest team that takes the push paths (one flag word per member and class).
pub const PUSH_PES: usize = 64;
/// Byte offset and size of the reductions' scratch: 2 (parity of the count) x team size slots.
pub const PUSH_SCRATCH: usize = 4096;
pub const PUSH_SCRATCH_BYTES: usize = 6144;
/// Byte offset and size of the two slots (count parity) where a broadcast root stores blocks
/// of at most `BCAST_SLOT` bytes without waiting for the member to enter the call.
pub const BCAST_SCRATCH: usize = PUSH_SCRATCH + PUSH_SCRATCH_BYTES;
pub const BCAST_SLOT: usize = 1024;
/// Jobs across nodes (CPU heap): each of the first `NET_RING_TEAMS` team slots also owns a
/// block of its own (`State::bcast_rings`, outside the team area, whose layout the GPU code
/// shares; `net_block_bytes`): a broadcast ring of `NET_RING_BYTES`, where a broadcast root
/// stores blocks of up to 42 KiB for members of other nodes up to two or more calls ahead
/// (`core::coll::Team::ring_slot`), then a scratch of `NET_SCRATCH_MIN` to `NET_SCRATCH_MAX`
/// bytes for the slots of the all-send class in place of the team area's
/// `PUSH_SCRATCH_BYTES` (`core::coll::Team::slot_at`: reductions, scans, fcollect and alltoall
/// of up to a slot per PE by one push per member, a slot being the scratch / (2 * team PEs):
/// 512 KiB at 2 PEs and 256 KiB at 4 with the largest scratch, instead of two syncs around
/// network gets), the largest the heap affords (`net_scratch_for`). Reserved only where the
/// heap is at least `NET_RING_HEAP_MIN` times their total, so that a small heap keeps its room
/// for the program; placed at the heap's top (`SymAlloc::alloc_top`), away from the low offsets
/// where a program's large aligned allocations land. Then `NET_RELAY_BYTES`: one relay flag
/// word per team PE (`core::coll::Team::relay_flag`).
pub const NET_RING_BYTES: usize = 131072;
/// The smallest all-send scratch of a team slot's block across nodes (`net_scratch_for`).
pub const NET_SCRATCH_MIN: usize = 262144;
/// The largest (issue 31: at 4 PEs on 2 nodes a 1 MiB sum_reduce took 3074 us in push rounds
/// of 32 KiB slots and 1318 us in one round of 256 KiB slots; docs/PERFORMANCE.md, sixteenth
/// round).
pub const NET_SCRATCH_MAX: usize = 2 << 20;
/// After the scratch: one relay flag word per team PE (`core::coll::Team::relay_flag`).
pub const NET_RELAY_BYTES: usize = 4096;
/// The bytes of a team slot's block across nodes with a scratch of `scratch` bytes.
pub const fn net_block_bytes(scratch: usize) -> usize {
    NET_RING_BYTES + scratch + NET_RELAY_BYTES
}
/// The all-send scratch of each of `teams` blocks across nodes in a heap of `heap` bytes: the
/// largest power of two from `NET_SCRATCH_MAX` down to `NET_SCRATCH_MIN` whose blocks take at
/// most 1 / `NET_RING_HEAP_MIN` of the heap (at 16 blocks: 2 MiB from a 545 MiB heap on, the
/// default 1 GiB included; 256 KiB from 97 MiB); None below that (no blocks). Every PE has
/// the same heap size, so every PE lays the blocks out alike.
pub const fn net_scratch_for(heap: usize, teams: usize) -> Option<usize> {
    let mut s = NET_SCRATCH_MAX;
    while s >= NET_SCRATCH_MIN {
        if heap / NET_RING_HEAP_MIN >= teams * net_block_bytes(s) {
            return Some(s);
        }
        s /= 2;
    }
    None
}
const _: () = assert!(NET_RELAY_BYTES >= 8 * PUSH_PES);
pub const NET_RING_TEAMS: usize = 16;
pub const NET_RING_HEAP_MIN: usize = 16;
const _: () = assert!(W_ROUND + ROUNDS <= W_DESC && W_DESC + 4 <= W_ENTRY && W_ENTRY + ENTRY_WORDS <= W_MEMCALL);
const _: () = assert!(W_MEMCALL + 8 <= W_SPLIT && W_VALUE < W_HEAP_BASE && W_HEAP_BASE < W_ABORT);
const _: () = assert!(W_SPLIT + SPLIT_WORDS <= W_PUSH_COUNT);
const _: () = assert!(
    W_PUSH_COUNT + PUSH_CLASSES <= W_NODE_ARRIVE
        && W_NODE_RELEASE < W_BCAST_RING
        && W_BCAST_PAR < W_BCAST_ANN_ROOT
        && W_BCAST_ANN_COUNT < W_TREE_COUNT
        && W_TREE_TOTAL < W_TREE_UP
        && W_TREE_BCAST < W_RED_USED
        && W_RED_USED < W_PUSH_FLAGS
);
const _: () = assert!(W_PUSH_COUNT + PUSH_CLASSES <= W_PUSH_FLAGS && W_PUSH_FLAGS + PUSH_CLASSES * PUSH_PES <= W_PUSH_READY);
const _: () = assert!((W_PUSH_READY + 2 * PUSH_PES) * 8 <= PUSH_SCRATCH && PUSH_BCAST < 2 && PUSH_MOVE < 2);
const _: () = assert!(AREA_BYTES == 12288);
const _: () = assert!(SPLIT_WORDS * 64 >= crate::env::MAX_TEAMS as usize);

/// Handles of the predefined teams.
pub const WORLD: i32 = 0;
pub const SHARED: i32 = 1;
pub const NODE: i32 = 2;
pub const INVALID: i32 = -1;
pub const PREDEFINED: usize = 3;

/// `ISHMEMI_TEAM_F_*`.
pub const F_USED: u32 = 1;
pub const F_PREDEFINED: u32 = 2;
/// A member is on another node: device collectives of the team go through the proxy ring, and
/// collectives on a queue take the one-kernel path (no peer mapping reaches that member).
pub const F_REMOTE: u32 = 4;

/// `ISHMEM_TEAM_NUM_CONTEXTS`: the one field of `ishmem_team_config_t`.
pub const CONFIG_NUM_CONTEXTS: i64 = 1;

/// `ishmemi_team_desc_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TeamDesc {
    /// World PE of team PE 0.
    pub start: i32,
    /// World PE distance between team PEs i and i+1 (nonzero).
    pub stride: i32,
    /// PEs in the team; 0 when the slot is free.
    pub size: i32,
    /// This PE's number in the team.
    pub my_pe: i32,
    /// Heap offset of the team's sync area (the same on every PE).
    pub sync_offset: u64,
    /// `num_contexts` of the split's configuration.
    pub num_contexts: i32,
    /// `F_USED`, `F_PREDEFINED`, `F_REMOTE`.
    pub flags: u32,
}

const _: () = assert!(size_of::<TeamDesc>() == 32);
const _: () = assert!(std::mem::offset_of!(TeamDesc, start) == 0);
const _: () = assert!(std::mem::offset_of!(TeamDesc, stride) == 4);
const _: () = assert!(std::mem::offset_of!(TeamDesc, size) == 8);
const _: () = assert!(std::mem::offset_of!(TeamDesc, my_pe) == 12);
const _: () = assert!(std::mem::offset_of!(TeamDesc, sync_offset) == 16);
const _: () = assert!(std::mem::offset_of!(TeamDesc, num_contexts) == 24);
const _: () = assert!(std::mem::offset_of!(TeamDesc, flags) == 28);
const _: () = assert!(align_of::<TeamDesc>() == 8);

impl TeamDesc {
    /// Whether world PE `pe` is a member of the team.
    pub fn contains(&self, pe: usize) -> bool {
        let (d, stride) = (pe as i64 - self.start as i64, self.stride as i64);
        stride != 0 && d % stride == 0 && (0..self.size as i64).contains(&(d / stride))
    }

    /// Number of members.
    #[inline]
    pub fn n(&self) -> usize {
        self.size as usize
    }

    /// World PE of team PE `i` (`i < size`).
    #[inline]
    pub fn world(&self, i: usize) -> usize {
        (self.start as i64 + self.stride as i64 * i as i64) as usize
    }

    /// Team PE number of world PE `pe`, if it is a member.
    pub fn index_of(&self, pe: i64) -> Option<usize> {
        let d = pe - self.start as i64;
        let s = self.stride as i64;
        if self.size <= 0 || s == 0 || d % s != 0 {
            return None;
        }
        let i = d / s;
        (0..self.size as i64).contains(&i).then_some(i as usize)
    }

    pub fn is_used(&self) -> bool {
        self.flags & F_USED != 0
    }

    /// The descriptor's bytes, as the C struct holds them.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: TeamDesc is repr(C) plain data without padding (the asserts above pin every
        // field's offset and the size to their sum), so every byte is initialized.
        unsafe { std::slice::from_raw_parts((self as *const TeamDesc).cast::<u8>(), size_of::<TeamDesc>()) }
    }
}

/// A subset of a parent team given as world PEs: (start, stride, size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progression {
    pub start: i32,
    pub stride: i32,
    pub size: i32,
}

/// The team PEs `start + stride * i` (i < size) of `parent`, as world PEs; an error naming
/// the bad argument when the set is empty or leaves the parent team. A team of one PE may
/// have any stride (it is normalized to 1).
pub fn split_strided(parent: &TeamDesc, start: i32, stride: i32, size: i32) -> Result<Progression, String> {
    let n = parent.size as i64;
    if size < 1 || size as i64 > n {
        return Err(format!("size {size} is not in [1, {n}] (the parent team has {n} PEs)"));
    }
    if !(0..n).contains(&(start as i64)) {
        return Err(format!("start {start} is not a PE of the parent team [0, {n})"));
    }
    let stride = if size == 1 { 1 } else { stride };
    if stride == 0 {
        return Err(format!("stride 0 with size {size} names PE {start} {size} times"));
    }
    let last = start as i64 + stride as i64 * (size as i64 - 1);
    if !(0..n).contains(&last) {
        return Err(format!(
            "start {start}, stride {stride}, size {size}: team PE {} would be parent PE {last}, outside [0, {n})",
            size - 1
        ));
    }
    Ok(Progression {
        start: (parent.start as i64 + parent.stride as i64 * start as i64) as i32,
        stride: (parent.stride as i64 * stride as i64) as i32,
        size,
    })
}

/// A team and a PE's number in it.
pub type Member = (Progression, usize);

/// The x-axis and y-axis teams of parent PE `p` in `ishmem_team_split_2d` with `xrange`
/// columns (OpenSHMEM 1.5: rows of `xrange` consecutive parent PEs, the last row possibly
/// short; columns of stride `xrange`). An `xrange` above the parent's size means one row.
/// Returns ((x team, my number in it), (y team, my number in it)).
pub fn split_2d(parent: &TeamDesc, xrange: i32, p: usize) -> Result<(Member, Member), String> {
    if xrange < 1 {
        return Err(format!("xrange {xrange} must be at least 1"));
    }
    let n = parent.n();
    let xr = (xrange as usize).min(n);
    let (row, col) = (p / xr, p % xr);
    let xstart = row * xr;
    let xsize = xr.min(n - xstart);
    let ysize = (n - col).div_ceil(xr);
    let x = split_strided(parent, xstart as i32, 1, xsize as i32)?;
    let y = split_strided(parent, col as i32, xr as i32, ysize as i32)?;
    Ok(((x, col), (y, row)))
}

/// `ishmem_team_translate_pe`: the number in `dest` of team PE `pe` of `src`, or -1.
pub fn translate(src: &TeamDesc, pe: i32, dest: &TeamDesc) -> i32 {
    if pe < 0 || pe >= src.size || !src.is_used() || !dest.is_used() {
        return -1;
    }
    dest.index_of(src.world(pe as usize) as i64).map_or(-1, |i| i as i32)
}

/// Why a handle does not name a team of this PE.
pub fn bad_handle(team: i32, max: usize) -> String {
    if team == INVALID {
        "team is ISHMEM_TEAM_INVALID".to_string()
    } else if team < 0 || team as usize >= max {
        format!("team {team} is not a team handle (handles are 0 .. {} with ISHMEM_TEAMS_MAX={max})", max - 1)
    } else {
        format!("team {team} is not a team of this PE (destroyed, never created, or this PE is not a member)")
    }
}

/// The team slots of this PE.
pub struct TeamPool {
    descs: Vec<TeamDesc>,
    /// By world PE: whether it is on another node than this PE (`F_REMOTE`).
    far: Vec<bool>,
}

impl TeamPool {
    /// `max` slots whose sync areas start at heap offset `area_base`, with the predefined
    /// teams of a job of `npes` PEs in which this PE is `me` (one node: shared and node are
    /// the world).
    pub fn new(max: usize, area_base: usize, me: usize, npes: usize) -> TeamPool {
        let mut descs: Vec<TeamDesc> =
            (0..max).map(|t| TeamDesc { sync_offset: (area_base + t * AREA_BYTES) as u64, ..TeamDesc::default() }).collect();
        for d in descs.iter_mut().take(PREDEFINED) {
            d.start = 0;
            d.stride = 1;
            d.size = npes as i32;
            d.my_pe = me as i32;
            d.flags = F_USED | F_PREDEFINED;
        }
        TeamPool { descs, far: vec![false; npes] }
    }

    /// `new`, with the shared and node teams (slots 1 and 2) made of this PE's node:
    /// `members` (ascending world PEs) when they form an arithmetic progression (the usual
    /// block placement), else this PE alone (OpenSHMEM allows a subset for the shared team).
    /// The PEs that are not in `members` are on other nodes: the teams with one of them
    /// (the world team when the job spans nodes, splits) are marked `F_REMOTE`.
    pub fn with_node(max: usize, area_base: usize, me: usize, npes: usize, members: &[usize]) -> TeamPool {
        let mut pool = TeamPool::new(max, area_base, me, npes);
        pool.far.iter_mut().for_each(|f| *f = true);
        for &p in members {
            if let Some(f) = pool.far.get_mut(p) {
                *f = false;
            }
        }
        pool.descs[WORLD as usize].flags |= pool.remote_flag(0, 1, npes as i32);
        let stride = if members.len() > 1 { members[1] - members[0] } else { 1 };
        let regular = stride > 0 && members.windows(2).all(|w| w[1] - w[0] == stride);
        let (start, stride, size, my) = if regular {
            let my = members.iter().position(|&p| p == me).unwrap_or(0);
            (members[0], stride, members.len(), my)
        } else {
            (me, 1, 1, 0)
        };
        for d in pool.descs.iter_mut().take(PREDEFINED).skip(1) {
            d.start = start as i32;
            d.stride = stride as i32;
            d.size = size as i32;
            d.my_pe = my as i32;
        }
        pool
    }

    pub fn max(&self) -> usize {
        self.descs.len()
    }

    /// The team `team` of this PE, or why there is none.
    pub fn get(&self, team: i32) -> Result<TeamDesc, String> {
        match usize::try_from(team).ok().and_then(|t| self.descs.get(t)) {
            Some(d) if d.is_used() => Ok(*d),
            _ => Err(bad_handle(team, self.max())),
        }
    }

    /// The slot's descriptor whether used or not (its sync area is fixed).
    pub fn slot(&self, t: usize) -> TeamDesc {
        self.descs[t]
    }

    /// Bitmap of the free slots, `SPLIT_WORDS` words (bit t of word t/64).
    pub fn free_bitmap(&self) -> [u64; SPLIT_WORDS] {
        let mut b = [0u64; SPLIT_WORDS];
        for (t, d) in self.descs.iter().enumerate() {
            if !d.is_used() {
                b[t / 64] |= 1 << (t % 64);
            }
        }
        b
    }

    /// Takes slot `t` for a team of which this PE is member `my_pe`.
    pub fn claim(&mut self, t: usize, p: Progression, my_pe: usize, num_contexts: i32) -> TeamDesc {
        debug_assert!(!self.descs[t].is_used());
        let flags = F_USED | self.remote_flag(p.start, p.stride, p.size);
        let d = &mut self.descs[t];
        *d = TeamDesc {
            start: p.start,
            stride: p.stride,
            size: p.size,
            my_pe: my_pe as i32,
            sync_offset: d.sync_offset,
            num_contexts,
            flags,
        };
        *d
    }

    /// `F_REMOTE` when a member of the progression is on another node, else 0.
    fn remote_flag(&self, start: i32, stride: i32, size: i32) -> u32 {
        let far = (0..size as i64).any(|i| {
            let pe = start as i64 + stride as i64 * i;
            usize::try_from(pe).ok().and_then(|p| self.far.get(p)).copied().unwrap_or(false)
        });
        if far {
            F_REMOTE
        } else {
            0
        }
    }

    /// Frees a split team's slot and returns the free slot's descriptor; an error for a
    /// predefined or unknown team.
    pub fn release(&mut self, team: i32) -> Result<TeamDesc, String> {
        let d = self.get(team)?;
        if d.flags & F_PREDEFINED != 0 {
            return Err(format!("team {team} is a predefined team (world, shared or node); only split teams can be destroyed"));
        }
        let free = TeamDesc { sync_offset: d.sync_offset, ..TeamDesc::default() };
        self.descs[team as usize] = free;
        Ok(free)
    }

    /// The descriptor table as the device would read it.
    pub fn table(&self) -> &[TeamDesc] {
        &self.descs
    }
}

/// The lowest `k` slots set in every bitmap of `maps` (AND over the PEs of the parent team).
pub fn common_free(maps: &[[u64; SPLIT_WORDS]], k: usize) -> Option<Vec<usize>> {
    let mut and = [u64::MAX; SPLIT_WORDS];
    for m in maps {
        for (a, w) in and.iter_mut().zip(m) {
            *a &= w;
        }
    }
    let found: Vec<usize> = (0..SPLIT_WORDS * 64).filter(|&t| and[t / 64] >> (t % 64) & 1 == 1).take(k).collect();
    (found.len() == k).then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(n: i32) -> TeamDesc {
        TeamDesc { start: 0, stride: 1, size: n, my_pe: 0, sync_offset: 0, num_contexts: 0, flags: F_USED }
    }

    fn members(p: Progression) -> Vec<i32> {
        (0..p.size).map(|i| p.start + p.stride * i).collect()
    }

    #[test]
    fn net_scratch_is_the_largest_the_heap_affords() {
        const MIB: usize = 1 << 20;
        // 16 blocks of 2 MiB scratch (2,232,320 B each) need 16 times their 35,717,120 B.
        assert_eq!(net_scratch_for(1024 * MIB, 16), Some(2 * MIB));
        assert_eq!(net_scratch_for(16 * 16 * net_block_bytes(2 * MIB), 16), Some(2 * MIB));
        assert_eq!(net_scratch_for(16 * 16 * net_block_bytes(2 * MIB) - 1, 16), Some(MIB));
        assert_eq!(net_scratch_for(300 * MIB, 16), Some(MIB));
        assert_eq!(net_scratch_for(200 * MIB, 16), Some(MIB / 2));
        assert_eq!(net_scratch_for(128 * MIB, 16), Some(MIB / 4));
        assert_eq!(net_scratch_for(16 * 16 * net_block_bytes(MIB / 4), 16), Some(MIB / 4));
        assert_eq!(net_scratch_for(16 * 16 * net_block_bytes(MIB / 4) - 1, 16), None);
        assert_eq!(net_scratch_for(64 * MIB, 16), None);
        // Fewer team slots (ISHMEM_TEAMS_MAX=4) afford more from the same heap.
        assert_eq!(net_scratch_for(200 * MIB, 4), Some(2 * MIB));
        assert_eq!(net_block_bytes(NET_SCRATCH_MIN), 397_312);
    }

    #[test]
    fn node_teams_follow_the_node() {
        let p = TeamPool::with_node(8, 0, 5, 8, &[4, 5, 6, 7]);
        let d = p.get(1).unwrap();
        assert_eq!((d.start, d.stride, d.size, d.my_pe), (4, 1, 4, 1));
        let n = p.get(2).unwrap();
        assert_eq!((n.start, n.stride, n.size, n.my_pe), (4, 1, 4, 1));
        assert_ne!(n.sync_offset, d.sync_offset);
        assert_eq!(p.get(0).unwrap().size, 8);
        let p = TeamPool::with_node(8, 0, 3, 8, &[1, 3, 5, 7]);
        let d = p.get(1).unwrap();
        assert_eq!((d.start, d.stride, d.size, d.my_pe), (1, 2, 4, 1));
        // Irregular members: this PE alone.
        let p = TeamPool::with_node(8, 0, 2, 8, &[0, 2, 3]);
        let d = p.get(2).unwrap();
        assert_eq!((d.start, d.stride, d.size, d.my_pe), (2, 1, 1, 0));
    }

    #[test]
    fn teams_with_a_member_on_another_node_are_remote() {
        // 8 PEs, this PE (5) on the node of 4..8: the world spans nodes, shared and node do not.
        let mut p = TeamPool::with_node(8, 0, 5, 8, &[4, 5, 6, 7]);
        assert_eq!(p.get(WORLD).unwrap().flags, F_USED | F_PREDEFINED | F_REMOTE);
        assert_eq!(p.get(SHARED).unwrap().flags, F_USED | F_PREDEFINED);
        assert_eq!(p.get(NODE).unwrap().flags, F_USED | F_PREDEFINED);
        // splits: odd PEs (1 is on the other node), PEs 4..8, PEs 7, 6, 5 (negative stride), PE 3 alone
        let d = p.claim(3, Progression { start: 1, stride: 2, size: 4 }, 2, 0);
        assert_eq!(d.flags, F_USED | F_REMOTE);
        let d = p.claim(4, Progression { start: 4, stride: 1, size: 4 }, 1, 0);
        assert_eq!(d.flags, F_USED);
        let d = p.claim(5, Progression { start: 7, stride: -1, size: 3 }, 2, 0);
        assert_eq!(d.flags, F_USED);
        let d = p.claim(6, Progression { start: 3, stride: 1, size: 1 }, 0, 0);
        assert_eq!(d.flags, F_USED | F_REMOTE);
        // a freed slot loses the flag with the rest of the descriptor
        assert_eq!(p.release(3).unwrap().flags, 0);
        // One node (every PE a member): nothing is remote.
        let p = TeamPool::with_node(8, 0, 1, 4, &[0, 1, 2, 3]);
        assert!(p.table().iter().all(|d| d.flags & F_REMOTE == 0));
        let mut p = TeamPool::new(8, 0, 1, 4);
        assert_eq!(p.claim(3, Progression { start: 0, stride: 1, size: 4 }, 1, 0).flags, F_USED);
    }

    #[test]
    fn desc_layout_bytes() {
        let d = TeamDesc { start: 1, stride: 2, size: 3, my_pe: 4, sync_offset: 0x1000, num_contexts: 5, flags: 3 };
        let b = d.as_bytes();
        assert_eq!(&b[8..12], &3i32.to_ne_bytes());
        assert_eq!(&b[16..24], &0x1000u64.to_ne_bytes());
        assert_eq!(&b[28..32], &3u32.to_ne_bytes());
    }

    #[test]
    fn strided_splits_compose() {
        let w = world(8);
        let even = split_strided(&w, 0, 2, 4).unwrap();
        assert_eq!(members(even), vec![0, 2, 4, 6]);
        let ed = TeamDesc { start: even.start, stride: even.stride, size: even.size, flags: F_USED, ..Default::default() };
        let sub = split_strided(&ed, 1, 2, 2).unwrap();
        assert_eq!(members(sub), vec![2, 6]);
        let down = split_strided(&w, 7, -3, 3).unwrap();
        assert_eq!(members(down), vec![7, 4, 1]);
        let one = split_strided(&w, 5, 0, 1).unwrap();
        assert_eq!(members(one), vec![5]);
        assert_eq!(one.stride, 1);
        assert!(split_strided(&w, 0, 2, 5).unwrap_err().contains("outside [0, 8)"));
        assert!(split_strided(&w, 8, 1, 1).unwrap_err().contains("start 8"));
        assert!(split_strided(&w, 0, 1, 0).unwrap_err().contains("size 0"));
        assert!(split_strided(&w, 0, 1, 9).unwrap_err().contains("size 9"));
        assert!(split_strided(&w, 0, 0, 2).unwrap_err().contains("stride 0"));
        assert!(split_strided(&w, 1, -2, 2).unwrap_err().contains("outside"));
    }

    #[test]
    fn index_and_translate() {
        let w = world(8);
        let odd = split_strided(&w, 1, 2, 4).unwrap();
        let od = TeamDesc { start: odd.start, stride: odd.stride, size: odd.size, my_pe: 0, flags: F_USED, ..Default::default() };
        assert_eq!(od.index_of(5), Some(2));
        assert_eq!(od.index_of(4), None);
        assert_eq!(od.index_of(9), None);
        assert_eq!(od.index_of(-1), None);
        assert_eq!(od.world(3), 7);
        assert_eq!(translate(&od, 2, &w), 5);
        assert_eq!(translate(&w, 5, &od), 2);
        assert_eq!(translate(&w, 4, &od), -1);
        assert_eq!(translate(&w, 8, &od), -1);
        assert_eq!(translate(&w, -1, &od), -1);
        assert_eq!(translate(&w, 1, &TeamDesc::default()), -1);
        let down = TeamDesc { start: 6, stride: -2, size: 3, flags: F_USED, ..Default::default() };
        assert_eq!(down.index_of(2), Some(2));
        assert_eq!(translate(&down, 1, &od), -1);
        assert_eq!(translate(&down, 0, &w), 6);
    }

    #[test]
    fn two_d_rows_and_short_last_row() {
        // 7 PEs, xrange 3: rows {0,1,2} {3,4,5} {6}; columns {0,3,6} {1,4} {2,5}.
        let w = world(7);
        let ((x, xi), (y, yi)) = split_2d(&w, 3, 4).unwrap();
        assert_eq!((members(x), xi), (vec![3, 4, 5], 1));
        assert_eq!((members(y), yi), (vec![1, 4], 1));
        let ((x, xi), (y, yi)) = split_2d(&w, 3, 6).unwrap();
        assert_eq!((members(x), xi), (vec![6], 0));
        assert_eq!((members(y), yi), (vec![0, 3, 6], 2));
        let ((x, _), (y, yi)) = split_2d(&w, 3, 5).unwrap();
        assert_eq!(members(x), vec![3, 4, 5]);
        assert_eq!((members(y), yi), (vec![2, 5], 1));
        // xrange above the size: one row, columns of one PE.
        let ((x, xi), (y, yi)) = split_2d(&w, 10, 2).unwrap();
        assert_eq!((members(x), xi), ((0..7).collect::<Vec<_>>(), 2));
        assert_eq!((members(y), yi), (vec![2], 0));
        // xrange 1: rows of one PE, one column of everybody.
        let ((x, _), (y, yi)) = split_2d(&w, 1, 4).unwrap();
        assert_eq!(members(x), vec![4]);
        assert_eq!((members(y).len(), yi), (7, 4));
        assert!(split_2d(&w, 0, 0).unwrap_err().contains("xrange 0"));
        // every PE is in exactly one x team and one y team, at its own position
        for n in 1..=9 {
            for xr in 1..=n + 1 {
                let w = world(n);
                for p in 0..n as usize {
                    let ((x, xi), (y, yi)) = split_2d(&w, xr, p).unwrap();
                    assert_eq!(members(x)[xi], p as i32);
                    assert_eq!(members(y)[yi], p as i32);
                }
            }
        }
    }

    #[test]
    fn pool_claims_releases_and_agrees() {
        let mut p = TeamPool::new(5, 4096, 1, 4);
        assert_eq!(p.get(WORLD).unwrap().size, 4);
        assert_eq!(p.get(NODE).unwrap().my_pe, 1);
        assert!(p.get(3).unwrap_err().contains("not a team of this PE"));
        assert!(p.get(INVALID).unwrap_err().contains("ISHMEM_TEAM_INVALID"));
        assert!(p.get(5).unwrap_err().contains("not a team handle"));
        assert_eq!(p.free_bitmap()[0], 0b11000);
        let d = p.claim(3, Progression { start: 1, stride: 2, size: 2 }, 0, 7);
        assert_eq!(d.sync_offset, 4096 + 3 * AREA_BYTES as u64);
        assert_eq!(p.free_bitmap()[0], 0b10000);
        assert!(p.release(WORLD).unwrap_err().contains("predefined"));
        p.release(3).unwrap();
        assert!(p.get(3).is_err());
        assert_eq!(p.slot(3).sync_offset, 4096 + 3 * AREA_BYTES as u64);
        let mut a = [0u64; SPLIT_WORDS];
        let mut b = [0u64; SPLIT_WORDS];
        a[0] = 0b11000;
        b[0] = 0b10100;
        b[1] = 1;
        a[1] = 3;
        assert_eq!(common_free(&[a, b], 1), Some(vec![4]));
        assert_eq!(common_free(&[a, b], 2), Some(vec![4, 64]));
        assert_eq!(common_free(&[a, b], 3), None);
        assert_eq!(common_free(&[], 1), Some(vec![0]));
    }
}
