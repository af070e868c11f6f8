//! sin and cos, and tanh, of every lane at once: the body angle needs one sincos per
//! step, the terrain's harmonics one per contact point and step and the Coulomb
//! friction one tanh per tip. A libm call per lane costs far more (the body angle's
//! alone took 2 % of a step), and each call from the kernel spills its vectors.
//!
//! The classic scheme of fdlibm, branch-free so that it vectorises: x = n·π/2 + r with
//! n the nearest integer (rounded by adding 1.5·2⁵²) and r reduced in three parts of π/2
//! (each product exact while |n| < 2²⁰), then fdlibm's polynomials of sin and cos on
//! |r| ≤ π/4 and the quadrant's swap and signs. Within 2⁻⁵¹ of libm for |x| ≤ 10⁶
//! (tested); a lane beyond that range takes libm's values.

// The constants are fdlibm's, written with the digits it publishes them with.
#![allow(clippy::excessive_precision)]

use super::simd::L;

/// Largest |x| reduced here (|n| stays below 2²⁰, so n·PIO2_1 is exact).
const REDUCED_MAX: f64 = 1.0e6;

const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// 1.5·2⁵²: adding it rounds a |value| < 2⁵¹ to the nearest integer.
const ROUNDER: f64 = 6_755_399_441_055_744.0;
const PIO2_1: f64 = 1.570_796_326_734_125_614_17;
const PIO2_2: f64 = 6.077_100_506_303_965_976_60e-11;
const PIO2_3: f64 = 2.022_266_248_711_166_455_80e-21;

const S1: f64 = -1.666_666_666_666_663_243_48e-01;
const S2: f64 = 8.333_333_333_322_489_461_24e-03;
const S3: f64 = -1.984_126_982_985_794_931_34e-04;
const S4: f64 = 2.755_731_370_707_006_767_89e-06;
const S5: f64 = -2.505_076_025_340_686_341_95e-08;
const S6: f64 = 1.589_690_995_211_550_102_21e-10;

const C1: f64 = 4.166_666_666_666_660_190_37e-02;
const C2: f64 = -1.388_888_888_887_410_957_49e-03;
const C3: f64 = 2.480_158_728_947_672_941_78e-05;
const C4: f64 = -2.755_731_435_139_066_330_35e-07;
const C5: f64 = 2.087_572_321_298_174_827_90e-09;
const C6: f64 = -1.135_964_755_778_819_482_65e-11;

/// (sin x, cos x) of every lane.
#[inline(always)]
pub fn sin_cos<const W: usize, const F: bool>(x: L<W>) -> (L<W>, L<W>) {
    let t = x.mul_add::<F>(L::splat(TWO_OVER_PI), L::splat(ROUNDER));
    let n = t - L::splat(ROUNDER);
    let r = (-n).mul_add::<F>(
        L::splat(PIO2_3),
        (-n).mul_add::<F>(L::splat(PIO2_2), (-n).mul_add::<F>(L::splat(PIO2_1), x)),
    );
    let z = r * r;
    let ps = L::splat(S6)
        .mul_add::<F>(z, L::splat(S5))
        .mul_add::<F>(z, L::splat(S4))
        .mul_add::<F>(z, L::splat(S3))
        .mul_add::<F>(z, L::splat(S2))
        .mul_add::<F>(z, L::splat(S1));
    let sin_r = (z * r).mul_add::<F>(ps, r);
    let pc = L::splat(C6)
        .mul_add::<F>(z, L::splat(C5))
        .mul_add::<F>(z, L::splat(C4))
        .mul_add::<F>(z, L::splat(C3))
        .mul_add::<F>(z, L::splat(C2))
        .mul_add::<F>(z, L::splat(C1));
    let cos_r = (z * z).mul_add::<F>(pc, (z * -0.5) + 1.0);
    // Quadrant n mod 4 from the rounded sum's low mantissa bits: 0 (s, c), 1 (c, −s),
    // 2 (−s, −c), 3 (−c, s).
    let (mut s, mut c) = (L::zero(), L::zero());
    for j in 0..W {
        let q = t.0[j].to_bits() & 3;
        let (a, b) = if q & 1 == 0 {
            (sin_r.0[j], cos_r.0[j])
        } else {
            (cos_r.0[j], -sin_r.0[j])
        };
        let sign = if q & 2 == 0 { 1.0 } else { -1.0 };
        s.0[j] = sign * a;
        c.0[j] = sign * b;
    }
    // A lane beyond the reduced range (or not finite) takes libm's values: each lane's
    // result depends on its own x alone.
    let beyond = |v: f64| v.is_nan() || v.abs() > REDUCED_MAX;
    if x.0.iter().any(|&v| beyond(v)) {
        for j in 0..W {
            if beyond(x.0[j]) {
                (s.0[j], c.0[j]) = x.0[j].sin_cos();
            }
        }
    }
    (s, c)
}

const INV_LN2: f64 = std::f64::consts::LOG2_E;
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
const P1: f64 = 1.666_666_666_666_660_190_37e-01;
const P2: f64 = -2.777_777_777_701_559_338_42e-03;
const P3: f64 = 6.613_756_321_437_934_361_17e-05;
const P4: f64 = -1.653_390_220_546_525_153_90e-06;
const P5: f64 = 4.138_136_797_057_238_460_39e-08;
/// tanh(x) = 1 in f64 beyond this |x|.
const TANH_ONE: f64 = 20.0;

/// tanh x of every lane: −e/(2 + e) with e = exp(−2|x|) − 1 from fdlibm's exp (x·log₂e
/// rounded to k, the remainder r in two parts of ln 2, e^r − 1 = r + r·c/(2 − c)), then
/// e = 2ᵏ(e^r − 1) + (2ᵏ − 1), exact in its last step. No cancellation near 0.
#[inline(always)]
pub fn tanh<const W: usize, const F: bool>(x: L<W>) -> L<W> {
    let y = x.map(|v| v.abs().min(TANH_ONE)) * -2.0;
    let t = y.mul_add::<F>(L::splat(INV_LN2), L::splat(ROUNDER));
    let k = t - L::splat(ROUNDER);
    let hi = (-k).mul_add::<F>(L::splat(LN2_HI), y);
    let lo = k * LN2_LO;
    let r = hi - lo;
    let z = r * r;
    let p = L::splat(P5)
        .mul_add::<F>(z, L::splat(P4))
        .mul_add::<F>(z, L::splat(P3))
        .mul_add::<F>(z, L::splat(P2))
        .mul_add::<F>(z, L::splat(P1));
    let c = (-z).mul_add::<F>(p, r);
    let em1_r = (r * c / (L::splat(2.0) - c)) + r;
    let mut out = L::zero();
    for j in 0..W {
        // k ∈ [−58, 0]: 2ᵏ from its exponent bits.
        let scale = f64::from_bits(((k.0[j] as i64 + 1023) as u64) << 52);
        let em1 = scale.mul_add(em1_r.0[j], scale - 1.0);
        let th = -em1 / (2.0 + em1);
        out.0[j] = if x.0[j].is_nan() {
            x.0[j]
        } else {
            th.copysign(x.0[j])
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against libm over the reduced range, including quadrant edges and large |x|.
    #[test]
    fn sin_cos_is_within_two_ulp_of_one_of_libm() {
        let mut xs: Vec<f64> = (-4000..=4000).map(|k| k as f64 * 0.001_234_567).collect();
        xs.extend((0..2000).map(|k| (k as f64 - 1000.0) * 997.3 + 0.123));
        for k in -8..=8 {
            let q = k as f64 * std::f64::consts::FRAC_PI_2;
            xs.extend([q, q + 1e-12, q - 1e-12]);
        }
        xs.extend([0.0, -0.0, 1e-300, REDUCED_MAX, -REDUCED_MAX, 3e7]);
        for chunk in xs.chunks(8) {
            let mut lanes = [0.0; 8];
            lanes[..chunk.len()].copy_from_slice(chunk);
            for fused in [false, true] {
                let (s, c) = if fused {
                    sin_cos::<8, true>(L(lanes))
                } else {
                    sin_cos::<8, false>(L(lanes))
                };
                for (j, &x) in lanes.iter().enumerate() {
                    let ulp = 2.0 * f64::EPSILON;
                    assert!(
                        (s.0[j] - x.sin()).abs() <= ulp,
                        "sin {x}: {} vs {}",
                        s.0[j],
                        x.sin()
                    );
                    assert!(
                        (c.0[j] - x.cos()).abs() <= ulp,
                        "cos {x}: {} vs {}",
                        c.0[j],
                        x.cos()
                    );
                }
            }
        }
    }

    #[test]
    fn tanh_is_within_four_ulp_of_libm() {
        let mut xs: Vec<f64> = (-3000..=3000).map(|k| k as f64 * 0.0071).collect();
        xs.extend((1..400).map(|k| 1e-9 * 1.1f64.powi(k)));
        xs.extend([0.0, -0.0, 1e-300, 19.9, 20.0, 25.0, -700.0, 1e300]);
        for chunk in xs.chunks(8) {
            let mut lanes = [0.0; 8];
            lanes[..chunk.len()].copy_from_slice(chunk);
            for fused in [false, true] {
                let t = if fused {
                    tanh::<8, true>(L(lanes))
                } else {
                    tanh::<8, false>(L(lanes))
                };
                for (j, &x) in lanes.iter().enumerate() {
                    let want = x.tanh();
                    assert!(
                        (t.0[j] - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                        "tanh {x}: {} vs {want}",
                        t.0[j]
                    );
                }
            }
        }
        assert!(tanh::<1, false>(L([f64::NAN])).0[0].is_nan());
    }
}
