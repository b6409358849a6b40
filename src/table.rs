//! THE type table: every TYPENAME of the API, its C and Rust spelling, and which operation
//! families accept it. Plain data with no dependencies: the library uses it for sizes and the
//! generator (`gen/`) includes this file by path to emit the headers, the Rust shims, the
//! symbol list and the test type lists. Adding a type is one line here.

/// One C type of the API.
#[derive(Debug, Clone, Copy)]
pub struct CType {
    /// TYPENAME as it appears in function names (`ishmem_TYPENAME_put`).
    pub name: &'static str,
    /// The C spelling.
    pub c: &'static str,
    /// The Rust spelling used in the shims.
    pub rust: &'static str,
    /// Size in bytes on LP64 Linux.
    pub size: usize,
    /// Bit set of the families (`RMA`, `AMO_STD`, ...) that accept this type.
    pub classes: u32,
}

/// Standard RMA types: put, get, p, g, iput, iget, ibput, ibget, nbi, put_signal.
pub const RMA: u32 = 1 << 0;
/// Standard AMO types: fetch, set, swap.
pub const AMO_STD: u32 = 1 << 1;
/// The nonblocking fetch and swap (the reference leaves `schar` out of these).
pub const AMO_STD_NBI: u32 = 1 << 2;
/// Extended AMO types: compare_swap, inc, fetch_inc, add, fetch_add.
pub const AMO_EXT: u32 = 1 << 3;
/// The nonblocking forms of the extended AMOs.
pub const AMO_EXT_NBI: u32 = 1 << 4;
/// Bitwise AMO types: and, or, xor and their fetching forms.
pub const AMO_BIT: u32 = 1 << 5;
/// The nonblocking fetching bitwise AMOs.
pub const AMO_BIT_NBI: u32 = 1 << 6;
/// Point-to-point synchronization types: wait_until and test families.
pub const P2P: u32 = 1 << 7;
/// A distinct fundamental C type: takes part in C11 `_Generic` and C++ overload sets (the
/// fixed-width and size typedefs alias these and would collide).
pub const GENERIC: u32 = 1 << 8;
/// Collective types: alltoall, broadcast, collect, fcollect, the sum/prod/min/max reductions and
/// the scans (every type).
pub const COLL: u32 = 1 << 9;
/// Bitwise reduction types: and_reduce, or_reduce, xor_reduce.
pub const REDUCE_BIT: u32 = 1 << 10;

const STD: u32 = RMA | AMO_STD | AMO_STD_NBI | AMO_EXT | AMO_EXT_NBI | P2P;
const BIT: u32 = AMO_BIT | AMO_BIT_NBI;
const RB: u32 = REDUCE_BIT;

/// Every TYPENAME, in the reference order.
pub const TYPES: &[CType] = &[
    CType { name: "float", c: "float", rust: "f32", size: 4, classes: RMA | AMO_STD | AMO_STD_NBI | GENERIC | COLL },
    CType { name: "double", c: "double", rust: "f64", size: 8, classes: RMA | AMO_STD | AMO_STD_NBI | GENERIC | COLL },
    CType { name: "char", c: "char", rust: "std::ffi::c_char", size: 1, classes: RMA | GENERIC | COLL },
    CType { name: "schar", c: "signed char", rust: "i8", size: 1, classes: RMA | AMO_STD | AMO_EXT | AMO_BIT | GENERIC | COLL | RB },
    CType { name: "short", c: "short", rust: "i16", size: 2, classes: RMA | GENERIC | COLL },
    CType { name: "int", c: "int", rust: "i32", size: 4, classes: STD | GENERIC | COLL },
    CType { name: "long", c: "long", rust: "i64", size: 8, classes: STD | GENERIC | COLL },
    CType { name: "longlong", c: "long long", rust: "i64", size: 8, classes: STD | GENERIC | COLL },
    CType { name: "uchar", c: "unsigned char", rust: "u8", size: 1, classes: RMA | GENERIC | COLL | RB },
    CType { name: "ushort", c: "unsigned short", rust: "u16", size: 2, classes: RMA | GENERIC | COLL | RB },
    CType { name: "uint", c: "unsigned int", rust: "u32", size: 4, classes: STD | BIT | GENERIC | COLL | RB },
    CType { name: "ulong", c: "unsigned long", rust: "u64", size: 8, classes: STD | BIT | GENERIC | COLL | RB },
    CType { name: "ulonglong", c: "unsigned long long", rust: "u64", size: 8, classes: STD | BIT | GENERIC | COLL | RB },
    CType { name: "int8", c: "int8_t", rust: "i8", size: 1, classes: RMA | COLL | RB },
    CType { name: "int16", c: "int16_t", rust: "i16", size: 2, classes: RMA | COLL | RB },
    CType { name: "int32", c: "int32_t", rust: "i32", size: 4, classes: STD | BIT | COLL | RB },
    CType { name: "int64", c: "int64_t", rust: "i64", size: 8, classes: STD | BIT | COLL | RB },
    CType { name: "uint8", c: "uint8_t", rust: "u8", size: 1, classes: RMA | COLL | RB },
    CType { name: "uint16", c: "uint16_t", rust: "u16", size: 2, classes: RMA | COLL | RB },
    CType { name: "uint32", c: "uint32_t", rust: "u32", size: 4, classes: STD | BIT | COLL | RB },
    CType { name: "uint64", c: "uint64_t", rust: "u64", size: 8, classes: STD | BIT | COLL | RB },
    CType { name: "size", c: "size_t", rust: "usize", size: 8, classes: STD | COLL | RB },
    CType { name: "ptrdiff", c: "ptrdiff_t", rust: "isize", size: 8, classes: STD | COLL },
];

/// The SIZE forms (`ishmem_put32`): element sizes in bits.
pub const SIZES: &[usize] = &[8, 16, 32, 64, 128];

/// OpenSHMEM 1.5's type tables, for `shmem.h` and `abi/shmem-symbols.txt` (ishmem-gen): the
/// TYPENAMEs of each OpenSHMEM family, in the specification's order. A TYPENAME that `TYPES`
/// lacks (`OSH_ONLY`) makes an OpenSHMEM name that libishmem does not export (listed missing).
pub mod osh {
    /// Standard RMA types: put, get, p, g, iput, iget, nbi, put_signal, ibput, ibget (1.6),
    /// broadcast, collect, fcollect, alltoall, alltoalls.
    pub const RMA: &[&str] = &[
        "float",
        "double",
        "longdouble",
        "char",
        "schar",
        "short",
        "int",
        "long",
        "longlong",
        "uchar",
        "ushort",
        "uint",
        "ulong",
        "ulonglong",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "size",
        "ptrdiff",
    ];
    /// Standard AMO types: compare_swap, fetch_inc, inc, fetch_add, add (and their nbi forms).
    pub const AMO_STD: &[&str] =
        &["int", "long", "longlong", "uint", "ulong", "ulonglong", "int32", "int64", "uint32", "uint64", "size", "ptrdiff"];
    /// Extended AMO types: fetch, set, swap (and their nbi forms).
    pub const AMO_EXT: &[&str] = &[
        "float",
        "double",
        "int",
        "long",
        "longlong",
        "uint",
        "ulong",
        "ulonglong",
        "int32",
        "int64",
        "uint32",
        "uint64",
        "size",
        "ptrdiff",
    ];
    /// Bitwise AMO types: and, or, xor and their fetching (and nbi) forms.
    pub const AMO_BIT: &[&str] = &["uint", "ulong", "ulonglong", "int32", "int64", "uint32", "uint64"];
    /// Point-to-point synchronization types: wait_until and test families.
    pub const P2P: &[&str] = AMO_STD;
    /// Team reductions AND, OR, XOR.
    pub const REDUCE_BIT: &[&str] = &[
        "uchar",
        "ushort",
        "uint",
        "ulong",
        "ulonglong",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "size",
    ];
    /// Team reductions MAX, MIN.
    pub const REDUCE_MINMAX: &[&str] = &[
        "char",
        "schar",
        "short",
        "int",
        "long",
        "longlong",
        "ptrdiff",
        "uchar",
        "ushort",
        "uint",
        "ulong",
        "ulonglong",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "size",
        "float",
        "double",
        "longdouble",
    ];
    /// Team reductions SUM, PROD and the scans (1.6): MAX/MIN's types and the complex ones.
    pub const REDUCE_SUM: &[&str] = &[
        "char",
        "schar",
        "short",
        "int",
        "long",
        "longlong",
        "ptrdiff",
        "uchar",
        "ushort",
        "uint",
        "ulong",
        "ulonglong",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "size",
        "float",
        "double",
        "longdouble",
        "complexd",
        "complexf",
    ];
    /// Deprecated (1.4) AMO names: fetch, set, swap take these; cswap, finc, inc, fadd, add
    /// the last three.
    pub const AMO_DEPRECATED: &[&str] = &["float", "double", "int", "long", "longlong"];
    /// OpenSHMEM TYPENAMEs with no row in `TYPES` (ishmem.h, and so the device API, has no such
    /// type): libishmem implements their shmem_* names itself (listed `native`), with these
    /// Rust spellings (`op::LongDouble`: x86-64's 80-bit extended type in 16 bytes; the complex
    /// types: a real and an imaginary part). `classes` is unused (the lists above say which
    /// families take them).
    pub const OSH_ONLY: &[super::CType] = &[
        super::CType { name: "longdouble", c: "long double", rust: "crate::op::LongDouble", size: 16, classes: 0 },
        super::CType { name: "complexd", c: "double _Complex", rust: "crate::op::ComplexD", size: 16, classes: 0 },
        super::CType { name: "complexf", c: "float _Complex", rust: "crate::op::ComplexF", size: 8, classes: 0 },
    ];
}

/// The types of one family, in table order.
pub fn of_class(class: u32) -> impl Iterator<Item = &'static CType> {
    TYPES.iter().filter(move |t| t.classes & class != 0)
}

/// Looks a TYPENAME up.
pub fn by_name(name: &str) -> Option<&'static CType> {
    TYPES.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_sizes_match_the_reference() {
        assert_eq!(of_class(RMA).count(), 23);
        assert_eq!(of_class(AMO_STD).count(), 15);
        assert_eq!(of_class(AMO_STD_NBI).count(), 14);
        assert_eq!(of_class(AMO_EXT).count(), 13);
        assert_eq!(of_class(AMO_EXT_NBI).count(), 12);
        assert_eq!(of_class(AMO_BIT).count(), 8);
        assert_eq!(of_class(AMO_BIT_NBI).count(), 7);
        assert_eq!(of_class(P2P).count(), 12);
        assert_eq!(of_class(GENERIC).count(), 13);
        assert_eq!(of_class(COLL).count(), 23);
        assert_eq!(of_class(REDUCE_BIT).count(), 15);
    }

    #[test]
    fn sizes_are_consistent() {
        for t in TYPES {
            assert!([1, 2, 4, 8].contains(&t.size), "{}", t.name);
            // Every AMO type is a size the hardware has atomics for.
            if t.classes & (AMO_STD | AMO_EXT | AMO_BIT) != 0 {
                assert!(t.size == 1 || t.size == 4 || t.size == 8, "{}", t.name);
            }
        }
        assert_eq!(by_name("ptrdiff").map(|t| t.c), Some("ptrdiff_t"));
        assert!(by_name("longdouble").is_none());
        // Names are unique.
        for (i, a) in TYPES.iter().enumerate() {
            assert!(TYPES[i + 1..].iter().all(|b| b.name != a.name));
        }
    }
}
