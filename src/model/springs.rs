//! The 2N+1 linear springs (13)-(15), (41): the only coupling between legs and body.

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
    pub rest: f64,
}

/// The springs of an N-legged robot: α_1 (leg 1–B_1), α_2..α_N (leg–leg),
/// α_{N+1} (leg N–B_{N+2}) and β_i (leg i–B_{i+1}).
pub fn springs(n_legs: usize, alpha: f64, beta: f64, l_alpha: f64, l_beta: f64) -> Vec<Spring> {
    let mut s = Vec::with_capacity(2 * n_legs + 1);
    let a = |leg, other| Spring {
        leg,
        other,
        k: alpha,
        rest: l_alpha,
    };
    s.push(a(0, Anchor::Body(0)));
    for i in 1..n_legs {
        s.push(a(i, Anchor::Leg(i - 1)));
    }
    s.push(a(n_legs - 1, Anchor::Body(n_legs + 1)));
    for i in 0..n_legs {
        s.push(Spring {
            leg: i,
            other: Anchor::Body(i + 1),
            k: beta,
            rest: l_beta,
        });
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

/// Sum the spring forces on each leg base (written to `base_force`) and return the
/// generalised load the springs put on the body (reactions (41) at the B_j).
pub fn spring_pass(
    springs: &[Spring],
    geom: &BodyGeometry,
    bases: &[[f64; 2]],
    body: &[f64],
    base_force: &mut [[f64; 2]],
) -> BodyLoad {
    base_force.iter_mut().for_each(|f| *f = [0.0, 0.0]);
    let mut load = BodyLoad::default();
    for s in springs {
        let p = bases[s.leg];
        match s.other {
            Anchor::Leg(j) => {
                let f = spring_force(s.k, s.rest, p, bases[j]);
                base_force[s.leg][0] += f[0];
                base_force[s.leg][1] += f[1];
                base_force[j][0] -= f[0];
                base_force[j][1] -= f[1];
            }
            Anchor::Body(j) => {
                let b = BodyGeometry::world(body, geom.b_points[j]);
                let f = spring_force(s.k, s.rest, p, b);
                base_force[s.leg][0] += f[0];
                base_force[s.leg][1] += f[1];
                let (rx, ry) = (b[0] - body[0], b[1] - body[1]);
                load.fx -= f[0];
                load.fy -= f[1];
                load.torque -= rx * f[1] - ry * f[0];
            }
        }
    }
    load
}

/// Elastic energy stored in all springs.
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
            0.5 * s.k * (gamma - s.rest).powi(2)
        })
        .sum()
}
