//! Contact events for the reference integrator: the contact mode is held over each step
//! (so that Newton and the error estimate see a smooth right-hand side) and switched
//! where a gap crosses its threshold, located on the step's dense output.
//!
//! **Thresholds (hysteresis).** A free surface enters contact where its gap reaches 0
//! (docs/model.md's X ≥ X_t); a surface in contact leaves where its gap falls to −δ, with δ
//! far below the solver's absolute tolerance (`RELEASE_BAND × atol`, 1e-10 m at the
//! default atol). While a tip slides along the terrain, the two vector fields can both
//! push it onto the surface (a Filippov sliding mode: contact friction lifts the tip,
//! the free field presses it down); switching exactly at 0 both ways would then chatter
//! with vanishing period. The band makes every switch cost a travel of at least δ, so
//! the chatter stays at amplitude δ and finite rate, and the solution differs from the
//! exact switching rule by O(δ) — it converges as the tolerance (and δ with it) tightens.

use crate::model::contact::{gap, surface_count};
use crate::model::{ContactMode, Robot};

/// δ / atol: the release threshold of a contact, far below the solver's tolerance.
pub const RELEASE_BAND: f64 = 1e-2;

/// Root bracket width (fraction of the step) at which the event locator stops.
const LOCATE_TOL: f64 = 1e-12;

/// One accepted step's cubic Hermite interpolant: q(s) for s ∈ [0, 1] from the states
/// and velocities at both ends (order 3, like the method).
#[derive(Debug, Clone, Copy)]
pub struct DenseStep<'a> {
    pub q0: &'a [f64],
    pub v0: &'a [f64],
    pub q1: &'a [f64],
    pub v1: &'a [f64],
    pub h: f64,
}

impl DenseStep<'_> {
    /// q at fraction s of the step.
    pub fn q(&self, s: f64, out: &mut [f64]) {
        let (h00, h10, h01, h11) = (
            (1.0 + 2.0 * s) * (1.0 - s) * (1.0 - s),
            s * (1.0 - s) * (1.0 - s),
            s * s * (3.0 - 2.0 * s),
            s * s * (s - 1.0),
        );
        let h = self.h;
        for (k, o) in out.iter_mut().enumerate() {
            *o = h00 * self.q0[k] + h10 * h * self.v0[k] + h01 * self.q1[k] + h11 * h * self.v1[k];
        }
    }

    /// The derivative of the same cubic: the velocities at fraction s.
    pub fn v(&self, s: f64, out: &mut [f64]) {
        let h = self.h;
        let (d00, d10, d01, d11) = (
            6.0 * s * (s - 1.0) / h,
            (1.0 - s) * (1.0 - 3.0 * s),
            6.0 * s * (1.0 - s) / h,
            s * (3.0 * s - 2.0),
        );
        for (k, o) in out.iter_mut().enumerate() {
            *o = d00 * self.q0[k] + d10 * self.v0[k] + d01 * self.q1[k] + d11 * self.v1[k];
        }
    }
}

/// The switching rule with its hysteresis band.
#[derive(Debug, Clone, Copy)]
pub struct Switching {
    /// δ (m): a contact is released where its gap falls to −δ.
    pub release: f64,
}

impl Switching {
    pub fn new(atol: f64) -> Switching {
        Switching {
            release: RELEASE_BAND * atol,
        }
    }

    /// How far surface `k` is past the threshold that ends its current mode (> 0 or,
    /// entering contact, ≥ 0: the mode must switch).
    fn beyond(&self, mode: &ContactMode, robot: &Robot, k: usize, gap: f64) -> f64 {
        if mode.get(robot, k) {
            -self.release - gap
        } else {
            gap
        }
    }

    fn crossed(&self, mode: &ContactMode, robot: &Robot, k: usize, gap: f64) -> bool {
        let b = self.beyond(mode, robot, k, gap);
        if mode.get(robot, k) {
            b > 0.0
        } else {
            b >= 0.0
        }
    }

    /// Whether surface `k`, at `gap`, is on the far side of the band's middle from its
    /// current mode: switching it there cannot re-trigger at once (the opposite
    /// threshold is at least δ/2 away).
    pub fn may_switch(&self, mode: &ContactMode, robot: &Robot, k: usize, gap: f64) -> bool {
        let mid = -0.5 * self.release;
        if mode.get(robot, k) {
            gap < mid
        } else {
            gap > mid
        }
    }

    /// The earliest threshold crossing in the step, as (surface, fraction s of the
    /// step), skipping surface `skip`. Gaps are checked at s = 0, ⅓, ⅔, 1 (so a tip
    /// that dips in and out within one step is still seen in most cases) and the first
    /// bracket is refined by the Illinois method. s = 0 means a surface is already past
    /// its threshold at the start.
    pub fn first_crossing(
        &self,
        robot: &Robot,
        mode: &ContactMode,
        step: &DenseStep,
        skip: Option<usize>,
        scratch: &mut [f64],
    ) -> Option<(usize, f64)> {
        const PROBES: [f64; 4] = [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0];
        let n = surface_count(robot);
        let mut gaps = [[0.0; 4]; crate::params::MAX_LEGS + 2];
        for (j, &s) in PROBES.iter().enumerate() {
            step.q(s, scratch);
            for (k, g) in gaps.iter_mut().enumerate().take(n) {
                g[j] = gap(robot, scratch, k);
            }
        }
        let mut best: Option<(usize, f64)> = None;
        for (k, g) in gaps.iter().enumerate().take(n) {
            if Some(k) == skip {
                continue;
            }
            let Some(j) = (0..4).find(|&j| self.crossed(mode, robot, k, g[j])) else {
                continue;
            };
            let s = if j == 0 {
                0.0
            } else {
                let f = |s: f64, scratch: &mut [f64]| {
                    step.q(s, scratch);
                    self.beyond(mode, robot, k, gap(robot, scratch, k))
                };
                let (a, b) = (PROBES[j - 1], PROBES[j]);
                let (fa, fb) = (
                    self.beyond(mode, robot, k, g[j - 1]),
                    self.beyond(mode, robot, k, g[j]),
                );
                locate(f, a, fa, b, fb, scratch)
            };
            if best.is_none_or(|(_, sb)| s < sb) {
                best = Some((k, s));
            }
        }
        best
    }
}

/// Illinois (modified regula falsi) on f with f(a) < 0 ≤ f(b); returns a point at or
/// just past the root (f ≥ 0 side), to `LOCATE_TOL`.
fn locate(
    f: impl Fn(f64, &mut [f64]) -> f64,
    mut a: f64,
    mut fa: f64,
    mut b: f64,
    mut fb: f64,
    scratch: &mut [f64],
) -> f64 {
    let mut side = 0i8;
    for _ in 0..200 {
        if b - a <= LOCATE_TOL {
            break;
        }
        let mut c = (a * fb - b * fa) / (fb - fa);
        if !(c > a && c < b) {
            c = 0.5 * (a + b);
        }
        let fc = f(c, scratch);
        if fc >= 0.0 {
            b = c;
            fb = fc;
            if side == 1 {
                fa *= 0.5;
            }
            side = 1;
        } else {
            a = c;
            fa = fc;
            if side == -1 {
                fb *= 0.5;
            }
            side = -1;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn illinois_finds_a_cubic_root() {
        // (s − 0.3)(s + 2)(s + 5): root 0.3 in [0, 1].
        let f = |s: f64, _: &mut [f64]| (s - 0.3) * (s + 2.0) * (s + 5.0);
        let mut scratch = [0.0; 1];
        let r = locate(f, 0.0, f(0.0, &mut []), 1.0, f(1.0, &mut []), &mut scratch);
        assert!((r - 0.3).abs() < 1e-11 && f(r, &mut []) >= 0.0, "{r}");
    }
}
