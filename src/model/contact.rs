//! Terrain contact as a switched system: the switching surfaces (gaps) and the rule that
//! reads a contact mode off the state.
//!
//! docs/model.md switches the tip penalty and friction on while the tip's depth
//! d = x − X_t + h(y) is ≥ 0, and the body penalty at P₁, P₂ while theirs is (T3). A
//! solver that only reads the state applies that rule at every evaluation
//! ([`ContactMode::of_state`]); an event-locating solver holds a mode over a step
//! instead, so that the right-hand side it integrates is smooth, and switches it where a
//! gap crosses zero.

use super::robot::{ContactMode, Robot};

impl ContactMode {
    /// docs/model.md's rule read off the state: a contact acts where its gap is ≥ 0.
    pub fn of_state(robot: &Robot, q: &[f64]) -> ContactMode {
        let mut mode = ContactMode::none();
        for k in 0..surface_count(robot) {
            mode.set(robot, k, gap(robot, q, k) >= 0.0);
        }
        mode
    }
}

/// Number of switching surfaces: one tip per leg, then P₁ and P₂.
pub fn surface_count(robot: &Robot) -> usize {
    robot.n_legs + 2
}

/// Penetration of surface `k` into the terrain (m; ≥ 0 is contact): the depth
/// d = x − X_t + h(y) of the tip of leg k < N, of body point P_{k−N+1} otherwise.
pub fn gap(robot: &Robot, q: &[f64], k: usize) -> f64 {
    let [x, y] = robot.contact_point(q, k);
    robot.terrain.frame(x, y, robot.p.x_t).depth
}
