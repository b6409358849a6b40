//! The operator vocabulary, one for the whole library: the AMO operators (`AmoOp`, with the
//! read-modify-write ones as `Rmw`), the reduction operators (`RedOp`, `BitOp`), the numeric
//! classes of the reductions (`Num`, `Bits`) and their combiners. A leaf: every room above
//! speaks these, and each transport maps them to its own codes privately (the network's
//! atomic operators in `transport::fabric`, the host kernel's operation codes in
//! `transport::cuda`); the byte codes below are the ones the device ring, the staging mailbox
//! and the host kernel share (include/ishmem/device_state.h, cuda/host_kernels.cu).

/// An atomic memory operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AmoOp {
    Fetch = 0,
    Set = 1,
    Swap = 2,
    Cas = 3,
    Add = 4,
    And = 5,
    Or = 6,
    Xor = 7,
}

impl AmoOp {
    /// Every operator, in code order.
    pub const ALL: [AmoOp; 8] = [AmoOp::Fetch, AmoOp::Set, AmoOp::Swap, AmoOp::Cas, AmoOp::Add, AmoOp::And, AmoOp::Or, AmoOp::Xor];

    /// The byte code of the operator (the device ring's `op`, the staging mailbox's, the host
    /// kernel's).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The operator of a byte code, None for a code that names none.
    pub fn from_code(code: u8) -> Option<AmoOp> {
        Self::ALL.get(code as usize).copied()
    }

    /// The read-modify-write operator, for Add/And/Or/Xor.
    pub fn rmw(self) -> Option<Rmw> {
        Some(match self {
            AmoOp::Add => Rmw::Add,
            AmoOp::And => Rmw::And,
            AmoOp::Or => Rmw::Or,
            AmoOp::Xor => Rmw::Xor,
            _ => return None,
        })
    }
}

/// The read-modify-write operators of an AMO (`ishmem_atomic_{fetch_,}{add,and,or,xor}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rmw {
    Add,
    And,
    Or,
    Xor,
}

impl Rmw {
    /// The AMO operator that applies it.
    pub fn amo(self) -> AmoOp {
        match self {
            Rmw::Add => AmoOp::Add,
            Rmw::And => AmoOp::And,
            Rmw::Or => AmoOp::Or,
            Rmw::Xor => AmoOp::Xor,
        }
    }

    /// `old op v` on the low bits of a word (integers wrap; width-independent for the bits a
    /// width holds).
    pub fn apply(self, old: u64, v: u64) -> u64 {
        match self {
            Rmw::Add => old.wrapping_add(v),
            Rmw::And => old & v,
            Rmw::Or => old | v,
            Rmw::Xor => old ^ v,
        }
    }
}

/// The element operators of the arithmetic reductions.
#[derive(Clone, Copy, Debug)]
pub enum RedOp {
    Sum,
    Prod,
    Min,
    Max,
}

/// The element operators of the bitwise reductions.
#[derive(Clone, Copy, Debug)]
pub enum BitOp {
    And,
    Or,
    Xor,
}

/// A C number type of the reductions: integers wrap (C's unsigned arithmetic; signed overflow
/// is undefined in C and wraps here), floats follow IEEE.
pub trait Num: Copy + Default + PartialOrd + 'static {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

/// The integer types of the bitwise reductions.
pub trait Bits: Num {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! num_int {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
        impl Bits for $t {
            #[inline(always)]
            fn and(self, o: Self) -> Self { self & o }
            #[inline(always)]
            fn or(self, o: Self) -> Self { self | o }
            #[inline(always)]
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
num_int!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! num_float {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self * o }
        }
    )*};
}
num_float!(f32, f64);

/// C's `long double` on x86-64: the x87 80-bit extended type, stored in 16 bytes (the last six
/// are padding). Rust has no such type, so the reductions compute with the x87 unit itself
/// (inline assembly); `Default` is +0.0. OpenSHMEM's `shmem_longdouble_*` names only (ishmem.h
/// has no long double).
#[repr(C, align(16))]
#[derive(Clone, Copy, Default, Debug)]
pub struct LongDouble(pub [u8; 16]);

#[cfg(target_arch = "x86_64")]
impl LongDouble {
    /// `a op b` computed by the x87 unit (`op`: "faddp" or "fmulp"), rounded as C would.
    #[inline(always)]
    fn x87(self, o: Self, mul: bool) -> Self {
        let mut r = self;
        // SAFETY: both operands are 16-byte values in memory; the asm pushes two x87 registers
        // and pops both (the stack is empty again on exit, as Rust requires).
        unsafe {
            if mul {
                std::arch::asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fmulp", "fstp tbyte ptr [{a}]",
                    a = in(reg) r.0.as_mut_ptr(), b = in(reg) o.0.as_ptr(),
                    out("st(0)") _, out("st(1)") _, options(nostack));
            } else {
                std::arch::asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "faddp", "fstp tbyte ptr [{a}]",
                    a = in(reg) r.0.as_mut_ptr(), b = in(reg) o.0.as_ptr(),
                    out("st(0)") _, out("st(1)") _, options(nostack));
            }
        }
        r
    }

    /// The x87 comparison of `self` and `o`: None when either is a NaN.
    fn cmp87(&self, o: &Self) -> Option<std::cmp::Ordering> {
        let (c, z, p): (u8, u8, u8);
        // SAFETY: as above; fucomip pops one register and fstp the other.
        unsafe {
            std::arch::asm!("fld tbyte ptr [{b}]", "fld tbyte ptr [{a}]", "fucomip st, st(1)", "fstp st(0)",
                "setc {c}", "setz {z}", "setp {p}",
                a = in(reg) self.0.as_ptr(), b = in(reg) o.0.as_ptr(),
                c = out(reg_byte) c, z = out(reg_byte) z, p = out(reg_byte) p,
                out("st(0)") _, out("st(1)") _, options(nostack));
        }
        use std::cmp::Ordering::*;
        match (c, z, p) {
            (_, _, 1) => None,
            (1, _, _) => Some(Less),
            (_, 1, _) => Some(Equal),
            _ => Some(Greater),
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl LongDouble {
    fn x87(self, _o: Self, _mul: bool) -> Self {
        crate::ffi::fatal("shmem_longdouble reduction", "long double arithmetic is implemented for x86-64 only")
    }
    fn cmp87(&self, _o: &Self) -> Option<std::cmp::Ordering> {
        crate::ffi::fatal("shmem_longdouble reduction", "long double arithmetic is implemented for x86-64 only")
    }
}

impl PartialEq for LongDouble {
    fn eq(&self, o: &Self) -> bool {
        self.cmp87(o) == Some(std::cmp::Ordering::Equal)
    }
}
impl PartialOrd for LongDouble {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        self.cmp87(o)
    }
}
impl Num for LongDouble {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.x87(o, false)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.x87(o, true)
    }
}

macro_rules! complex {
    ($name:ident, $f:ty, $c:literal) => {
        #[doc = concat!("C's `", $c, "`: the real part, then the imaginary part (OpenSHMEM's sum and prod")]
        /// reductions and sum scans; complex numbers have no order, so `partial_cmp` is None).
        #[repr(C)]
        #[derive(Clone, Copy, Default, Debug, PartialEq)]
        pub struct $name {
            pub re: $f,
            pub im: $f,
        }
        impl PartialOrd for $name {
            fn partial_cmp(&self, _o: &Self) -> Option<std::cmp::Ordering> {
                None
            }
        }
        impl Num for $name {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                $name { re: self.re + o.re, im: self.im + o.im }
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                $name { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
            }
        }
    };
}
complex!(ComplexF, f32, "float _Complex");
complex!(ComplexD, f64, "double _Complex");

fn sum<T: Num>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x = x.add(*y));
}
fn prod<T: Num>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x = x.mul(*y));
}
fn min<T: Num>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| {
        if *y < *x {
            *x = *y
        }
    });
}
fn max<T: Num>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| {
        if *y > *x {
            *x = *y
        }
    });
}
fn and<T: Bits>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x = x.and(*y));
}
fn or<T: Bits>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x = x.or(*y));
}
fn xor<T: Bits>(a: &mut [T], b: &[T]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x = x.xor(*y));
}

/// The combining function of an arithmetic operator.
pub fn combiner<T: Num>(op: RedOp) -> fn(&mut [T], &[T]) {
    match op {
        RedOp::Sum => sum::<T>,
        RedOp::Prod => prod::<T>,
        RedOp::Min => min::<T>,
        RedOp::Max => max::<T>,
    }
}

/// The combining function of a bitwise operator.
pub fn bit_combiner<T: Bits>(op: BitOp) -> fn(&mut [T], &[T]) {
    match op {
        BitOp::And => and::<T>,
        BitOp::Or => or::<T>,
        BitOp::Xor => xor::<T>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amo_codes_round_trip() {
        for (i, op) in AmoOp::ALL.iter().enumerate() {
            assert_eq!(op.code() as usize, i);
            assert_eq!(AmoOp::from_code(i as u8), Some(*op));
            if let Some(r) = op.rmw() {
                assert_eq!(r.amo(), *op);
            }
        }
        assert_eq!(AmoOp::from_code(8), None);
        assert_eq!(AmoOp::Cas.rmw(), None);
        assert_eq!(Rmw::Add.apply(u64::MAX, 2), 1);
        assert_eq!(Rmw::Xor.apply(0b1100, 0b1010), 0b0110);
    }

    #[test]
    fn combiners() {
        let mut a = [1i32, -5, 7, i32::MAX];
        combiner::<i32>(RedOp::Sum)(&mut a, &[2, 5, -8, 1]);
        assert_eq!(a, [3, 0, -1, i32::MIN]);
        combiner::<i32>(RedOp::Max)(&mut a, &[4, -1, -2, 0]);
        assert_eq!(a, [4, 0, -1, 0]);
        combiner::<i32>(RedOp::Min)(&mut a, &[5, -3, -1, 9]);
        assert_eq!(a, [4, -3, -1, 0]);
        combiner::<i32>(RedOp::Prod)(&mut a, &[2, 2, 3, 1]);
        assert_eq!(a, [8, -6, -3, 0]);
        let mut u = [0xF0u8, 0x0F, 0xFF];
        bit_combiner::<u8>(BitOp::And)(&mut u, &[0x3C, 0x3C, 0x3C]);
        assert_eq!(u, [0x30, 0x0C, 0x3C]);
        bit_combiner::<u8>(BitOp::Or)(&mut u, &[0x01, 0x01, 0x01]);
        assert_eq!(u, [0x31, 0x0D, 0x3D]);
        bit_combiner::<u8>(BitOp::Xor)(&mut u, &[0xFF, 0x0D, 0]);
        assert_eq!(u, [0xCE, 0, 0x3D]);
        let mut f = [1.5f64, -2.0];
        combiner::<f64>(RedOp::Prod)(&mut f, &[2.0, 0.25]);
        assert_eq!(f, [3.0, -0.5]);
        combiner::<f64>(RedOp::Max)(&mut f, &[2.0, -1.0]);
        assert_eq!(f, [3.0, -0.5]);
        let mut w = [250u8];
        combiner::<u8>(RedOp::Sum)(&mut w, &[10]);
        assert_eq!(w, [4]);
    }
}
