//! Collectives: the names the generated shims of alltoall, broadcast, collect, fcollect, the
//! reductions and the scans call. The checked entries are `core::coll_entry` (shared with the
//! GPU's door, `proxy`), the operators `op`.

pub use crate::core::coll_entry::{alltoall, alltoalls, broadcast, collect, fcollect, reduce, reduce_bits, scan};
pub use crate::op::{bit_combiner, combiner, BitOp, Bits, Num, RedOp};
