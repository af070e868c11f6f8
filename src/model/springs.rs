//! The 2N+1 springs (13)-(15), (41): the only coupling between legs and body. Each is
//! linear by default (the paper); its law may add a cubic term k₃(L0 − γ)³ and a
//! Kelvin–Voigt damper −c·γ̇ (docs/model.md, "The coupling's law").

use super::body::{BodyGeometry, BodyLoad};

/// What a spring's far end is attached to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Anchor {
    Leg(usize),
    /// Body point B_{j+1} (0-based index j into `BodyGeometry::b_points`).
    Body(usize),
}

/// One spring from the base of `leg` to `other`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spring {
    pub leg: usize,
    pub other: Anchor,
    pub k: f64,
    /// Cubic term k₃ of the force k(L0 − γ) + k₃(L0 − γ)³ (N/m³).
    pub k3: f64,
    /// Kelvin–Voigt damping c: the force gains −c·γ̇ along the spring (N·s/m).
    pub c: f64,
    pub rest: f64,
}

/// One kind's law: stiffness k, cubic term k₃, damping c and rest length L0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Law {
    pub k: f64,
    pub k3: f64,
    pub c: f64,
    pub rest: f64,
}

/// The springs of an N-legged robot: α_1 (leg 1–B_1), α_2..α_N (leg–leg),
/// α_{N+1} (leg N–B_{N+2}) and β_i (leg i–B_{i+1}).
pub fn springs(n_legs: usize, alpha: Law, beta: Law) -> Vec<Spring> {
    let mut s = Vec::with_capacity(2 * n_legs + 1);
    let of = |leg, other, law: Law| Spring {
        leg,
        other,
        k: law.k,
        k3: law.k3,
        c: law.c,
        rest: law.rest,
    };
    let a = |leg, other| of(leg, other, alpha);
    s.push(a(0, Anchor::Body(0)));
    for i in 1..n_legs {
        s.push(a(i, Anchor::Leg(i - 1)));
    }
    s.push(a(n_legs - 1, Anchor::Body(n_legs + 1)));
    for i in 0..n_legs {
        s.push(of(i, Anchor::Body(i + 1), beta));
    }
    s
}

/// Force on the end `p` of a spring k, rest length L0, whose other end is `o`:
/// k (L0 − γ)/γ (p − o), γ = |p − o|.
#[inline]
pub fn spring_force(k: f64, rest: f64, p: [f64; 2], o: [f64; 2]) -> [f64; 2] {
    let d = [p[0] - o[0], p[1] - o[1]];
    let gamma = (d[0] * d[0] + d[1] * d[1]).sqrt();
    let f = k * (rest - gamma) / gamma;
    [f * d[0], f * d[1]]
}

/// Force of spring `s` on its end `p` (velocity `vp`) whose other end is `o` (velocity
/// `vo`): [k(L0 − γ) + k₃(L0 − γ)³ − c·γ̇]·e, e = (p − o)/γ, γ̇ = e·(vp − vo); and the
/// power c·γ̇² its damper dissipates. Without cubic term and damper this is
/// [`spring_force`] to the bit.
#[inline]
pub fn law_force(
    s: &Spring,
    p: [f64; 2],
    o: [f64; 2],
    vp: [f64; 2],
    vo: [f64; 2],
) -> ([f64; 2], f64) {
    if s.k3 == 0.0 && s.c == 0.0 {
        return (spring_force(s.k, s.rest, p, o), 0.0);
    }
    let d = [p[0] - o[0], p[1] - o[1]];
    let gamma = (d[0] * d[0] + d[1] * d[1]).sqrt();
    let stretch = s.rest - gamma;
    let rate = (d[0] * (vp[0] - vo[0]) + d[1] * (vp[1] - vo[1])) / gamma;
    let f = (s.k * stretch + s.k3 * stretch * stretch * stretch - s.c * rate) / gamma;
    ([f * d[0], f * d[1]], s.c * rate * rate)
}

/// Velocity of the body point at world position `b` of a body at (X_b, Y_b, θ) moving
/// with (Ẋ_b, Ẏ_b, θ̇): (Ẋ_b − θ̇·(b − r_C)_y, Ẏ_b + θ̇·(b − r_C)_x).
#[inline]
pub fn body_point_velocity(body: &[f64], body_v: &[f64], b: [f64; 2]) -> [f64; 2] {
    [
        body_v[0] - body_v[2] * (b[1] - body[1]),
        body_v[1] + body_v[2] * (b[0] - body[0]),
    ]
}

/// Where the springs' ends are and how they move: leg bases and the body's coordinates.
pub struct Ends<'a> {
    pub bases: &'a [[f64; 2]],
    pub bases_v: &'a [[f64; 2]],
    pub body: &'a [f64],
    pub body_v: &'a [f64],
}

/// Sum the spring forces on each leg base (written to `base_force`) and return the
/// generalised load the springs put on the body (reactions (41) at the B_j) and the
/// power their dampers dissipate, Σ c·γ̇².
pub fn spring_pass(
    springs: &[Spring],
    geom: &BodyGeometry,
    ends: &Ends,
    base_force: &mut [[f64; 2]],
) -> (BodyLoad, f64) {
    base_force.iter_mut().for_each(|f| *f = [0.0, 0.0]);
    let mut load = BodyLoad::default();
    let mut dissipation = 0.0;
    let (bases, body) = (ends.bases, ends.body);
    for s in springs {
        let (p, vp) = (bases[s.leg], ends.bases_v[s.leg]);
        match s.other {
            Anchor::Leg(j) => {
                let (f, w) = law_force(s, p, bases[j], vp, ends.bases_v[j]);
                dissipation += w;
                base_force[s.leg][0] += f[0];
                base_force[s.leg][1] += f[1];
                base_force[j][0] -= f[0];
                base_force[j][1] -= f[1];
            }
            Anchor::Body(j) => {
                let b = BodyGeometry::world(body, geom.b_points[j]);
                let vb = body_point_velocity(body, ends.body_v, b);
                let (f, w) = law_force(s, p, b, vp, vb);
                dissipation += w;
                base_force[s.leg][0] += f[0];
                base_force[s.leg][1] += f[1];
                let (rx, ry) = (b[0] - body[0], b[1] - body[1]);
                load.fx -= f[0];
                load.fy -= f[1];
                load.torque -= rx * f[1] - ry * f[0];
            }
        }
    }
    (load, dissipation)
}

/// Elastic energy stored in all springs: ½k(γ − L0)² + ¼k₃(γ − L0)⁴ each.
pub fn spring_energy(
    springs: &[Spring],
    geom: &BodyGeometry,
    bases: &[[f64; 2]],
    body: &[f64],
) -> f64 {
    springs
        .iter()
        .map(|s| {
            let p = bases[s.leg];
            let o = match s.other {
                Anchor::Leg(j) => bases[j],
                Anchor::Body(j) => BodyGeometry::world(body, geom.b_points[j]),
            };
            let gamma = ((p[0] - o[0]).powi(2) + (p[1] - o[1]).powi(2)).sqrt();
            let x2 = (gamma - s.rest).powi(2);
            0.5 * s.k * x2 + 0.25 * s.k3 * x2 * x2
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cubic law's force is minus the gradient of its potential ½k(γ − L0)² +
    /// ¼k₃(γ − L0)⁴ with respect to the end p (central differences).
    #[test]
    fn the_cubic_force_is_minus_the_potentials_gradient() {
        for k3 in [0.0, 4.0e3, -2.5e3] {
            let s = Spring {
                leg: 0,
                other: Anchor::Leg(1),
                k: 500.0,
                k3,
                c: 0.0,
                rest: 1.0,
            };
            let o = [0.1, -0.3];
            let energy = |p: [f64; 2]| {
                let g = ((p[0] - o[0]).powi(2) + (p[1] - o[1]).powi(2)).sqrt();
                let x2 = (g - s.rest).powi(2);
                0.5 * s.k * x2 + 0.25 * s.k3 * x2 * x2
            };
            for p in [[0.9, 0.8], [0.2, 1.1], [-0.5, -0.2]] {
                let (f, w) = law_force(&s, p, o, [0.3, -0.2], [0.0, 0.1]);
                assert_eq!(w, 0.0);
                let e = 1e-6;
                for a in 0..2 {
                    let (mut hi, mut lo) = (p, p);
                    hi[a] += e;
                    lo[a] -= e;
                    let grad = (energy(hi) - energy(lo)) / (2.0 * e);
                    assert!(
                        (f[a] + grad).abs() <= 1e-6 * (1.0 + grad.abs()),
                        "k3 {k3} at {p:?}: force {} vs −∂E/∂p {}",
                        f[a],
                        -grad
                    );
                }
            }
        }
    }

    /// The damper's force is −c·γ̇ along the spring, and it dissipates c·γ̇²: a pure
    /// stretching motion checked by hand.
    #[test]
    fn the_damper_opposes_the_stretch_rate() {
        let s = Spring {
            leg: 0,
            other: Anchor::Leg(1),
            k: 0.0,
            k3: 0.0,
            c: 2.0,
            rest: 1.0,
        };
        // Ends 3-4-5 apart, separating at 0.5 m/s along their line and sliding sideways.
        let (p, o) = ([3.0, 4.0], [0.0, 0.0]);
        let e = [0.6, 0.8];
        let side = [-0.8, 0.6];
        let vp = [0.5 * e[0] + side[0], 0.5 * e[1] + side[1]];
        let (f, w) = law_force(&s, p, o, vp, [0.0, 0.0]);
        assert!((f[0] + 2.0 * 0.5 * e[0]).abs() < 1e-14 && (f[1] + 2.0 * 0.5 * e[1]).abs() < 1e-14);
        assert!((w - 2.0 * 0.25).abs() < 1e-14);
    }
}
