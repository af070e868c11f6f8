//! Terrain contact as a switched system: the switching surfaces (gaps) and the contact
//! mode that says which contact forces act.
//!
//! docs/model.md switches the tip penalty and friction (17) on while X_i(ℓ) ≥ X_t, and the
//! body penalty at P₁, P₂ while x_P ≥ X_t. A solver that only reads the state applies
//! that rule at every evaluation ([`ContactMode::of_state`]); an event-locating solver
//! holds a mode over a step instead, so that the right-hand side it integrates is smooth,
//! and switches it where a gap crosses zero.

use super::robot::Robot;
use crate::params::MAX_LEGS;

/// Which contact forces act: tip contact per leg, then the body points P₁, P₂.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContactMode {
    pub tip: [bool; MAX_LEGS],
    pub body: [bool; 2],
}

impl ContactMode {
    /// docs/model.md's rule read off the state: a contact acts where its gap is ≥ 0.
    pub fn of_state(robot: &Robot, q: &[f64]) -> ContactMode {
        let mut mode = ContactMode {
            tip: [false; MAX_LEGS],
            body: [false; 2],
        };
        for k in 0..surface_count(robot) {
            mode.set(robot, k, gap(robot, q, k) >= 0.0);
        }
        mode
    }

    /// Whether switching surface `k` (numbered as in [`gap`]) is in contact.
    pub fn get(&self, robot: &Robot, k: usize) -> bool {
        if k < robot.n_legs {
            self.tip[k]
        } else {
            self.body[k - robot.n_legs]
        }
    }

    pub fn set(&mut self, robot: &Robot, k: usize, on: bool) {
        if k < robot.n_legs {
            self.tip[k] = on;
        } else {
            self.body[k - robot.n_legs] = on;
        }
    }
}

/// Number of switching surfaces: one tip per leg, then P₁ and P₂.
pub fn surface_count(robot: &Robot) -> usize {
    robot.n_legs + 2
}

/// Penetration of surface `k` into the terrain (m; ≥ 0 is contact): X_k(ℓ) − X_t for
/// the tip of leg k < N, x_P − X_t for body point P_{k−N+1}.
pub fn gap(robot: &Robot, q: &[f64], k: usize) -> f64 {
    if k < robot.n_legs {
        robot.tip(q, k)[0] - robot.p.x_t
    } else {
        let off = robot.body.p_points[k - robot.n_legs];
        super::BodyGeometry::world(robot.body_of(q), off)[0] - robot.p.x_t
    }
}
