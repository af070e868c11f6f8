//! Rigid U-shaped body: geometry docs/model.md (13)-(17) (the paper's (1a), (2)-(3), (37),
//! (43)), equations (18) and terrain contact (19).

use super::terrain::Profile;
use crate::params::Params;

/// Generalised load on the body: forces along x, y and the torque about its centre of mass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BodyLoad {
    pub fx: f64,
    pub fy: f64,
    pub torque: f64,
}

impl BodyLoad {
    pub fn add(&mut self, o: BodyLoad) {
        self.fx += o.fx;
        self.fy += o.fy;
        self.torque += o.torque;
    }
}

/// Body geometry derived from the parameters.
#[derive(Debug, Clone)]
pub struct BodyGeometry {
    /// Length tau_L = 2 tau_T + (N+1) L_alpha.
    pub tau_l: f64,
    /// Breadth tau_B = tau_T + L_beta + tau_C.
    pub tau_b: f64,
    /// Area Pi_A.
    pub area: f64,
    /// X_b(0) from (1a).
    pub xb0: f64,
    /// Moment of inertia (37).
    pub inertia: f64,
    /// Body-frame offsets of B_1..B_{N+2} from the centre of mass (3).
    pub b_points: Vec<[f64; 2]>,
    /// Body-frame offsets of the contact points P_1, P_2 (43), taken literally.
    pub p_points: [[f64; 2]; 2],
}

impl BodyGeometry {
    pub fn new(p: &Params) -> Self {
        let n = p.n_legs as f64;
        let tau_l = 2.0 * p.tau_t + (n + 1.0) * p.l_alpha;
        let tau_b = p.tau_t + p.l_beta + p.tau_c;
        let area = tau_l * p.tau_t + 2.0 * (tau_b - p.tau_t) * p.tau_t;
        let xb0 = p.tau_t / (2.0 * area)
            * (2.0 * (p.tau_c - p.l_beta) * (tau_b - p.tau_t) - tau_l * (2.0 * p.l_beta + p.tau_t));
        let inertia = p.body_mass / 12.0
            * ((tau_l * tau_l + tau_b * tau_b)
                - ((tau_l - 2.0 * p.tau_t).powi(2) + (tau_b - p.tau_t).powi(2)));
        let half = (n + 1.0) / 2.0 * p.l_alpha;
        let mut b_points = Vec::with_capacity(p.n_legs + 2);
        b_points.push([-xb0, -half]);
        for j in 2..=p.n_legs + 1 {
            b_points.push([
                -xb0 - p.l_beta,
                -((n + 1.0) / 2.0 - (j as f64 - 1.0)) * p.l_alpha,
            ]);
        }
        b_points.push([-xb0, half]);
        let p_points = [
            [-xb0 + p.tau_c, half + tau_b],
            [-xb0 + p.tau_c, -half - tau_b],
        ];
        BodyGeometry {
            tau_l,
            tau_b,
            area,
            xb0,
            inertia,
            b_points,
            p_points,
        }
    }

    /// World position of a body-frame offset for body coordinates (X_b, Y_b, theta).
    #[inline]
    pub fn world(body: &[f64], off: [f64; 2]) -> [f64; 2] {
        let (s, c) = body[2].sin_cos();
        [
            body[0] + c * off[0] - s * off[1],
            body[1] + s * off[0] + c * off[1],
        ]
    }

    /// The terrain penalty ε·c·d·n (T3) at the points that `on` switches on (a contact
    /// mode held by an event-locating solver), whichever side of the terrain they are;
    /// no friction on the body.
    pub fn contact_in(
        &self,
        body: &[f64],
        terrain: &Profile,
        x_t: f64,
        epsilon: f64,
        on: [bool; 2],
    ) -> BodyLoad {
        let mut load = BodyLoad::default();
        for (off, on) in self.p_points.into_iter().zip(on) {
            if on {
                let w = Self::world(body, off);
                let f = terrain.frame(w[0], w[1], x_t).normal_force(epsilon);
                load.fx += f[0];
                load.fy += f[1];
                // (r_P − r_C) × f
                load.torque += (w[0] - body[0]) * f[1] - (w[1] - body[1]) * f[0];
            }
        }
        load
    }

    /// Energy stored in the body's terrain penalty (½ε c² d² at each point in contact).
    pub fn contact_energy(&self, body: &[f64], terrain: &Profile, x_t: f64, epsilon: f64) -> f64 {
        self.p_points
            .iter()
            .map(|&off| {
                let w = Self::world(body, off);
                terrain.frame(w[0], w[1], x_t).energy(epsilon)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn papers_geometry() {
        let g = BodyGeometry::new(&Params::default());
        assert!((g.tau_l - 12.0).abs() < 1e-12);
        assert!((g.tau_b - 1.7).abs() < 1e-12);
        assert!((g.area - 13.4).abs() < 1e-12);
        // (1a): 1/(2*13.4) * (2(-0.3)(0.7) - 12*2)
        assert!((g.xb0 - (-0.42 - 24.0) / 26.8).abs() < 1e-12);
        // B_{i+1} lies L_beta above leg i's base at (0, y_i).
        let p = Params::default();
        for i in 0..9 {
            let b = BodyGeometry::world(&[g.xb0, 0.0, 0.0], g.b_points[i + 1]);
            let yi = -((10.0) / 2.0 - (i as f64 + 1.0)) * p.l_alpha;
            assert!((b[0] + p.l_beta).abs() < 1e-12 && (b[1] - yi).abs() < 1e-12);
        }
    }
}
