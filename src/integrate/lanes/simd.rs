//! `L<W>`: W f64 lanes, one robot per lane. Plain arrays with element-wise operators:
//! compiled inside a `#[target_feature]` function (see `isa.rs`) they become single
//! vector instructions (W = 8: one zmm register), elsewhere ordinary scalar code.
//!
//! Fused multiply-adds are explicit (`mul_add::<F>`): Rust never contracts a·b + c by
//! itself, and `f64::mul_add` without the FMA unit is a slow library call, so the
//! kernels take `F` (FMA available) as a const parameter.

use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

#[derive(Debug, Clone, Copy, PartialEq)]
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
