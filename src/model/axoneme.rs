//! The axonemal internal couple (docs/model.md (A1)–(A6)): the motor force density of a
//! wave travelling down each leg, its integral F, the signed curvature κ = X′Y″ − Y′X″,
//! and the generalised force Q_A = a∫F ∂κ/∂q ds, with the integral defined as 4-point
//! Gauss–Legendre on every element.
//!
//! Two statements of the same sums:
//! - [`couple_force`] and [`couple_energy`] follow the definition point by point (the
//!   reference's right-hand side, and the energy of the conservation test);
//! - [`CoupleMatrices`]: κ is bilinear in (X, Y), so Q_A is linear in q. With
//!   θ_i = ω_A t + (i−1)Δφ_A and F = −f_A A_i (cos θ_i C(s) + sin θ_i S(s)),
//!   Q_X = B Y and Q_Y = −B X for B = f_A A_i (cos θ_i B_c + sin θ_i B_s), where the
//!   antisymmetric band matrices B_c, B_s hold the quadrature of everything but time.
//!   The batch kernels use this form (two banded row products per leg and step).

use super::hermite::{element_dofs, shape_derivatives, Dense};
use crate::params::Params;

/// 4-point Gauss–Legendre on [0, 1]: (ξ, weight).
pub const GAUSS4: [(f64, f64); 4] = {
    const X1: f64 = 0.339_981_043_584_856_26;
    const X2: f64 = 0.861_136_311_594_052_6;
    const W1: f64 = 0.652_145_154_862_546_1;
    const W2: f64 = 0.347_854_845_137_453_9;
    [
        ((1.0 - X2) / 2.0, W2 / 2.0),
        ((1.0 - X1) / 2.0, W1 / 2.0),
        ((1.0 + X1) / 2.0, W1 / 2.0),
        ((1.0 + X2) / 2.0, W2 / 2.0),
    ]
};

/// Phase θ_i = ω_A t + (i−1)Δφ_A of leg `leg` (0-based) at time t.
pub fn phase(p: &Params, leg: usize, t: f64) -> f64 {
    p.axo_omega * t + leg as f64 * p.axo_dphi
}

/// Amplitude f_A·A_i of leg `leg` (0-based): 0 where its motors are off.
pub fn amplitude(p: &Params, leg: usize) -> f64 {
    if p.axo_acts(leg) {
        p.axo_f
    } else {
        0.0
    }
}

/// Whether a leg of the robot has the internal couple (f_A ≠ 0 on an actuated leg).
pub fn has_couple(p: &Params) -> bool {
    (0..p.n_legs).any(|i| amplitude(p, i) != 0.0)
}

/// F_i(s, t) = −∫_s^ℓ f_i dσ (A2), in its closed form; zero at the free tip.
pub fn motor_integral(p: &Params, leg: usize, s: f64, t: f64) -> f64 {
    let (f, k, l) = (amplitude(p, leg), p.axo_k, p.leg_length);
    let th = phase(p, leg, t);
    if k == 0.0 {
        -f * (l - s) * th.sin()
    } else {
        -f * ((th - k * l).cos() - (th - k * s).cos()) / k
    }
}

/// X′, X″, Y′, Y″ of one leg at a Gauss point of element `e`, with the shape
/// derivatives there and the element's component dofs.
struct PointFrame {
    s: f64,
    weight: f64,
    d1: [f64; 4],
    d2: [f64; 4],
    dofs: [usize; 4],
    x1: f64,
    x2: f64,
    y1: f64,
    y2: f64,
}

/// Every Gauss point of the leg `leg_q` (4n unknowns), in element order.
fn points(p: &Params, leg_q: &[f64]) -> impl Iterator<Item = PointFrame> {
    let n = p.n_nodes;
    let m = 2 * n;
    let h = p.leg_length / (n - 1) as f64;
    let leg_q = leg_q.to_vec();
    (0..n - 1).flat_map(move |e| {
        let leg_q = leg_q.clone();
        GAUSS4.into_iter().map(move |(xi, w)| {
            let (d1, d2) = shape_derivatives(xi, h);
            let dofs = element_dofs(n, e);
            let at = |d: &[f64; 4], off: usize| (0..4).map(|j| d[j] * leg_q[off + dofs[j]]).sum();
            PointFrame {
                s: (e as f64 + xi) * h,
                weight: w * h,
                x1: at(&d1, 0),
                x2: at(&d2, 0),
                y1: at(&d1, m),
                y2: at(&d2, m),
                d1,
                d2,
                dofs,
            }
        })
    })
}

/// The internal couple's generalised force Q_A,i = a∫F ∂κ/∂q ds (A4) on leg `leg`
/// (0-based, unknowns `leg_q`) at time t, added to `out` (4n entries).
pub fn couple_force(p: &Params, leg: usize, leg_q: &[f64], t: f64, out: &mut [f64]) {
    let m = 2 * p.n_nodes;
    for g in points(p, leg_q) {
        let w = p.filament_gap * motor_integral(p, leg, g.s, t) * g.weight;
        for j in 0..4 {
            // ∂κ/∂X_j = H_j′Y″ − Y′H_j″, ∂κ/∂Y_j = X′H_j″ − H_j′X″.
            out[g.dofs[j]] += w * (g.d1[j] * g.y2 - g.y1 * g.d2[j]);
            out[m + g.dofs[j]] += w * (g.x1 * g.d2[j] - g.d1[j] * g.x2);
        }
    }
}

/// The couple's energy E_A,i = −a∫F κ ds of leg `leg` at time t (A3).
pub fn couple_energy(p: &Params, leg: usize, leg_q: &[f64], t: f64) -> f64 {
    -points(p, leg_q)
        .map(|g| {
            p.filament_gap * motor_integral(p, leg, g.s, t) * (g.x1 * g.y2 - g.y1 * g.x2) * g.weight
        })
        .sum::<f64>()
}

/// sin(kx)/k, and its limit x at k = 0.
fn sin_over(k: f64, x: f64) -> f64 {
    if k == 0.0 {
        x
    } else {
        (k * x).sin() / k
    }
}

/// The time-free quadrature of the couple (see the module comment): one component
/// block's B_c and B_s (2n × 2n, antisymmetric, Hermite band). Depends on n, ℓ, a, k_A.
#[derive(Debug, Clone, PartialEq)]
pub struct CoupleMatrices {
    pub cos: Dense,
    pub sin: Dense,
}

impl CoupleMatrices {
    pub fn new(p: &Params) -> CoupleMatrices {
        let n = p.n_nodes;
        let m = 2 * n;
        let (l, k) = (p.leg_length, p.axo_k);
        let h = l / (n - 1) as f64;
        let (mut bc, mut bs) = (Dense::zeros(m), Dense::zeros(m));
        for e in 0..n - 1 {
            let dofs = element_dofs(n, e);
            for (xi, w) in GAUSS4 {
                let s = (e as f64 + xi) * h;
                // F = −f_A A_i (cos θ·C + sin θ·S) with C = (cos kℓ − cos ks)/k and
                // S = (sin kℓ − sin ks)/k, written without cancellation for small k.
                let half = sin_over(k, (l - s) / 2.0);
                let c = -2.0 * (k * (l + s) / 2.0).sin() * half;
                let sn = 2.0 * (k * (l + s) / 2.0).cos() * half;
                let (d1, d2) = shape_derivatives(xi, h);
                let scale = -p.filament_gap * w * h;
                for a in 0..4 {
                    for b in 0..4 {
                        let d = d1[a] * d2[b] - d1[b] * d2[a];
                        bc.a[dofs[a] * m + dofs[b]] += scale * c * d;
                        bs.a[dofs[a] * m + dofs[b]] += scale * sn * d;
                    }
                }
            }
        }
        bc.nodes = Some(n);
        bs.nodes = Some(n);
        CoupleMatrices { cos: bc, sin: bs }
    }

    /// Q_A of one leg from the matrices: B = amp·(cos θ B_c + sin θ B_s), Q_X = B Y,
    /// Q_Y = −B X, added to `out`; returns nothing else (the kernels' form, here for
    /// the tests that hold it to [`couple_force`]).
    pub fn add_force(&self, amp: f64, theta: f64, leg_q: &[f64], out: &mut [f64]) {
        let m = self.cos.n;
        let (cc, cs) = (amp * theta.cos(), amp * theta.sin());
        for r in 0..m {
            for c in 0..m {
                let b = cc * self.cos.get(r, c) + cs * self.sin.get(r, c);
                out[r] += b * leg_q[m + c];
                out[m + r] -= b * leg_q[c];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_points_integrate_cubics_exactly_and_weights_sum_to_one() {
        let sum: f64 = GAUSS4.iter().map(|(_, w)| w).sum();
        assert!((sum - 1.0).abs() < 1e-15);
        // 4 points integrate polynomials up to degree 7 exactly: ∫₀¹ ξ⁷ = 1/8.
        let i7: f64 = GAUSS4.iter().map(|(x, w)| w * x.powi(7)).sum();
        assert!((i7 - 0.125).abs() < 1e-15);
    }

    #[test]
    fn motor_integral_vanishes_at_the_tip_and_its_slope_is_the_density() {
        let p = Params {
            axo_f: 3.0,
            axo_k: 2.0,
            axo_dphi: 0.4,
            ..Params::default()
        };
        for (leg, t) in [(0, 0.3), (2, 1.7)] {
            assert!(motor_integral(&p, leg, p.leg_length, t).abs() < 1e-15);
            // ∂F/∂s = f (F = −∫_s^ℓ f dσ), f = f_A sin(θ − k s).
            let (s, d) = (0.37, 1e-6);
            let slope =
                (motor_integral(&p, leg, s + d, t) - motor_integral(&p, leg, s - d, t)) / (2.0 * d);
            let f = 3.0 * (phase(&p, leg, t) - 2.0 * s).sin();
            assert!((slope - f).abs() < 1e-8, "{slope} vs {f}");
        }
    }
}
