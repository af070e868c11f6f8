//! `L<W>`: W f64 lanes, one robot per lane. Plain arrays with element-wise operators:
//! compiled inside a `#[target_feature]` function (see `isa.rs`) they become single
//! vector instructions (W = 8: one zmm register), elsewhere ordinary scalar code.
//!
//! Fused multiply-adds are explicit (`mul_add::<F>`): Rust never contracts a·b + c by
//! itself, and `f64::mul_add` without the FMA unit is a slow library call, so the
//! kernels take `F` (FMA available) as a const parameter.

use std::ops::{
    Add, AddAssign, Deref, DerefMut, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign,
};

#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(transparent)]
pub struct L<const W: usize>(pub [f64; W]);

impl<const W: usize> L<W> {
    #[inline(always)]
    pub fn splat(x: f64) -> Self {
        L([x; W])
    }

    #[inline(always)]
    pub fn zero() -> Self {
        L([0.0; W])
    }

    #[inline(always)]
    pub fn map(self, f: impl Fn(f64) -> f64) -> Self {
        let mut r = self.0;
        for x in r.iter_mut() {
            *x = f(*x);
        }
        L(r)
    }

    #[inline(always)]
    fn zip(self, o: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        let mut r = self.0;
        for (x, y) in r.iter_mut().zip(o.0) {
            *x = f(*x, y);
        }
        L(r)
    }

    /// self·b + c, fused when `F`.
    #[inline(always)]
    pub fn mul_add<const F: bool>(self, b: Self, c: Self) -> Self {
        let mut r = self.0;
        for i in 0..W {
            r[i] = if F {
                r[i].mul_add(b.0[i], c.0[i])
            } else {
                r[i] * b.0[i] + c.0[i]
            };
        }
        L(r)
    }

    #[inline(always)]
    pub fn sqrt(self) -> Self {
        self.map(f64::sqrt)
    }

    #[inline(always)]
    pub fn abs(self) -> Self {
        self.map(f64::abs)
    }

    /// 1.0 where self ≥ o, else 0.0 (a branch-free lane mask).
    #[inline(always)]
    pub fn ge_mask(self, o: Self) -> Self {
        self.zip(o, |a, b| if a >= b { 1.0 } else { 0.0 })
    }

    /// Sum over lanes is never needed in the kernel; lanes are independent robots.
    #[inline(always)]
    pub fn lane(self, j: usize) -> f64 {
        self.0[j]
    }
}

macro_rules! lane_op {
    ($tr:ident, $f:ident, $op:tt, $tra:ident, $fa:ident) => {
        impl<const W: usize> $tr for L<W> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                self.zip(o, |a, b| a $op b)
            }
        }
        impl<const W: usize> $tr<f64> for L<W> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: f64) -> Self {
                self.map(|a| a $op o)
            }
        }
        impl<const W: usize> $tra for L<W> {
            #[inline(always)]
            fn $fa(&mut self, o: Self) {
                *self = self.zip(o, |a, b| a $op b);
            }
        }
    };
}
lane_op!(Add, add, +, AddAssign, add_assign);
lane_op!(Sub, sub, -, SubAssign, sub_assign);
lane_op!(Mul, mul, *, MulAssign, mul_assign);
lane_op!(Div, div, /, DivAssign, div_assign);

impl<const W: usize> Neg for L<W> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.map(|a| -a)
    }
}

/// Σ a_k·b_k over slices of lanes (fused when `F`), in two interleaved partial sums
/// so that consecutive multiply-adds do not wait on each other.
#[inline(always)]
pub fn dot<const W: usize, const F: bool>(a: &[L<W>], b: &[L<W>]) -> L<W> {
    let mut s = [L::zero(); 2];
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        s[k % 2] = x.mul_add::<F>(*y, s[k % 2]);
    }
    s[0] + s[1]
}

/// A block's state vectors, stored from a cache-line boundary: at 8 lanes each `L` is
/// one 64-byte line, and a vector that straddled two lines would cost two loads (a
/// `Vec<L<W>>` is only 8-byte aligned). Reads and writes as a slice of `L<W>`.
#[derive(Debug, Clone)]
pub struct Lanes<const W: usize> {
    lines: Vec<Line<W>>,
    len: usize,
}

/// Eight lane vectors: 64·W bytes, a whole number of cache lines at every width.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line<const W: usize>([L<W>; 8]);

impl<const W: usize> Lanes<W> {
    /// `len` vectors, the k-th `f(k)`.
    pub fn from_fn(len: usize, mut f: impl FnMut(usize) -> L<W>) -> Self {
        let lines = (0..len.div_ceil(8))
            .map(|c| {
                Line(std::array::from_fn(|k| match 8 * c + k {
                    i if i < len => f(i),
                    _ => L::zero(),
                }))
            })
            .collect();
        Lanes { lines, len }
    }
}

impl<const W: usize> Deref for Lanes<W> {
    type Target = [L<W>];
    fn deref(&self) -> &[L<W>] {
        // SAFETY: `Line<W>` is `repr(C)` around `[L<W>; 8]` and its size, 64·W bytes, is
        // a multiple of its alignment, so the lines are one contiguous array of
        // 8·lines.len() ≥ len values of `L<W>` (`repr(transparent)` over `[f64; W]`).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast::<L<W>>(), self.len) }
    }
}

impl<const W: usize> DerefMut for Lanes<W> {
    fn deref_mut(&mut self) -> &mut [L<W>] {
        // SAFETY: as in `deref`, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast::<L<W>>(), self.len) }
    }
}

/// A value stored from a cache-line boundary (and padded to whole lines), for the
/// block's constants that live in a `Vec` of structs of lane vectors.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub struct Aligned<T>(pub T);

impl<T> Deref for Aligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'a, const W: usize> IntoIterator for &'a Lanes<W> {
    type Item = &'a L<W>;
    type IntoIter = std::slice::Iter<'a, L<W>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, const W: usize> IntoIterator for &'a mut Lanes<W> {
    type Item = &'a mut L<W>;
    type IntoIter = std::slice::IterMut<'a, L<W>>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Lanes` reads back what it was made of, at every length (whole lines or not),
    /// starts on a cache line, and writes through its slice view.
    #[test]
    fn lanes_are_an_aligned_slice_of_their_values() {
        for len in [0, 1, 7, 8, 9, 23, 48] {
            let value = |k: usize| L::<8>(std::array::from_fn(|j| (k * 8 + j) as f64));
            let mut x = Lanes::from_fn(len, value);
            assert_eq!(x.len(), len);
            assert_eq!(x.as_ptr() as usize % 64, 0, "len {len}");
            assert!((0..len).all(|k| x[k] == value(k)), "len {len}");
            if len > 0 {
                x[len - 1] = L::splat(-1.0);
                let copy = x.clone();
                assert_eq!(copy[len - 1], L::splat(-1.0));
                assert!((0..len - 1).all(|k| copy[k] == value(k)));
            }
        }
    }
}
