//! DKD-dc: the fixed-step scheme of the batch engines (docs/integrators.md): its
//! settings, step size and kick constants. The step itself is the lane kernel
//! (`integrate::lanes::kernel`), of which a solo run is the one-lane case.
//!
//! One step: half drift q += h/2·v; springs at the midpoint; one linearly implicit kick
//! per leg in which every velocity-proportional term (ζ damping, Bayo's penalty damping
//! with the drift-consistency term, the basal servo, tip friction) is implicit, solved by
//! Woodbury on the constant P = (ρ + hζ)M + θh²K_M·K, then the touchdown correction (the
//! kick's vᵀGv made consistent with the drifts, and the leg's midpoint moved so that the
//! step end lies on the midpoints' constraint interpolant); the body kick with implicit
//! damping; half drift with the new velocities. Elastic, spring, gravity and contact forces stay
//! explicit, so the step is bounded by the top bending mode: h < 2/ω_max (θ = 0).

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;
use crate::integrate::lanes::kernel::{BlockState, Scratch};
use crate::integrate::lanes::model::BlockModel;
use crate::integrate::lanes::simd::L;
use crate::integrate::lanes::{run_block, Isa, LaneJob, LaneSink};
use crate::integrate::record::InstanceRecord;
use crate::integrate::schedule::SampleSchedule;
use crate::metrics::MetricsSettings;
use crate::model::Robot;
use crate::sample::{Deadline, Status};

/// Fixed-step settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DkdSettings {
    /// Step (s); `None` picks `safety · 2/ω_max` of the instance, rounded so that the
    /// output interval is a whole number of steps.
    pub h: Option<f64>,
    /// Fraction of the explicit stability limit 2/ω_max used by the automatic step.
    pub safety: f64,
    /// Cap on the automatic step (s): soft legs have a low ω_max, and their stability
    /// limit alone would give steps too coarse for the walking metrics.
    pub max_step: f64,
    /// Implicitness of the bending force in the kick (0 = explicit, the study's DKD-dc).
    pub theta: f64,
    /// Step budget: steps allowed before the run ends as `budget_exceeded` (none: no limit).
    pub max_steps: Option<u64>,
}

impl Default for DkdSettings {
    fn default() -> Self {
        DkdSettings {
            h: None,
            safety: 0.85,
            max_step: 2.5e-4,
            theta: 0.0,
            max_steps: None,
        }
    }
}

impl DkdSettings {
    pub fn validate(&self) -> Result<(), SettingsError> {
        let bad = |field: &str, value: f64, allowed: &str| {
            Err(SettingsError::OutOfRange {
                field: field.into(),
                value,
                allowed: allowed.into(),
            })
        };
        if let Some(h) = self.h {
            if !(h.is_finite() && h > 0.0) {
                return bad("h", h, "a finite step > 0 (s)");
            }
        }
        if !(self.max_step.is_finite() && self.max_step > 0.0) {
            return bad("max_step", self.max_step, "a finite step > 0 (s)");
        }
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return bad("safety", self.safety, "(0, 1]");
        }
        if !(0.0..=1.0).contains(&self.theta) {
            return bad("theta", self.theta, "[0, 1]");
        }
        if self.max_steps == Some(0) {
            return bad("max_steps", 0.0, "an integer >= 1");
        }
        Ok(())
    }

    /// The step for `robot` given the output interval.
    pub fn step_for(&self, robot: &Robot, dt_out: f64) -> f64 {
        let h_max = self.h.unwrap_or_else(|| {
            (self.safety * 2.0 / top_bending_frequency(robot)).min(self.max_step)
        });
        dt_out / (dt_out / h_max).ceil()
    }
}

/// Largest natural frequency ω_max of a free leg: K_M·K φ = ω² ρM φ (power iteration).
pub fn top_bending_frequency(robot: &Robot) -> f64 {
    let m = 2 * robot.n_nodes;
    let p = &robot.p;
    let mut x: Vec<f64> = (0..m).map(|i| 1.0 + 0.1 * i as f64).collect();
    let mut y = vec![0.0; m];
    let mut z = vec![0.0; m];
    let mut lambda = 0.0;
    for _ in 0..500 {
        robot.fe.bending.mul(&x, &mut y);
        robot.mass_inv.mul(&y, &mut z);
        let norm = z.iter().map(|a| a * a).sum::<f64>().sqrt();
        let next = p.k_m * norm / x.iter().map(|a| a * a).sum::<f64>().sqrt();
        x.iter_mut().zip(&z).for_each(|(a, b)| *a = b / norm);
        if (next - lambda).abs() <= 1e-12 * next {
            lambda = next;
            break;
        }
        lambda = next;
    }
    lambda.sqrt()
}

/// Statistics of a fixed-step run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DkdStats {
    pub steps: usize,
    pub h: f64,
}

/// One DKD-dc step of the whole robot of `record` (q, v advanced in place); returns the
/// actuation power summed over legs. The lane kernel with one lane: for tests and tools that
/// follow a single state step by step (runs use [`integrate`]).
pub fn step(record: &InstanceRecord, q: &mut [f64], v: &mut [f64]) -> f64 {
    let model = BlockModel::<1>::new(&[record]);
    let mut st = BlockState::<1> {
        q: q.iter().map(|&x| L([x])).collect(),
        v: v.iter().map(|&x| L([x])).collect(),
        work: L::zero(),
    };
    let mut scratch = Scratch::new(record.n_legs);
    Isa::detect().advance(&model, &mut st, &mut scratch, 1);
    for (x, y) in q.iter_mut().zip(&st.q) {
        *x = y.0[0];
    }
    for (x, y) in v.iter_mut().zip(&st.v) {
        *x = y.0[0];
    }
    st.work.0[0] / record.h()
}

/// Integrate with DKD-dc, emitting the samples of the run's [`SampleSchedule`] to
/// `sink` (which may continue the run at its end, `--until-settled`). The budget
/// (`settings.max_steps`, `deadline`) is checked between steps, so a point whose
/// single output interval never ends (h = 1e-12 s) still stops.
pub fn integrate(
    robot: &Robot,
    settings: &DkdSettings,
    metrics: &MetricsSettings,
    deadline: Deadline,
    sink: &mut dyn LaneSink,
) -> (Status, DkdStats) {
    let h = settings.step_for(robot, metrics.dt_out);
    let job = LaneJob {
        robot,
        schedule: SampleSchedule::new(metrics, robot.p.t_final, h),
        theta: settings.theta,
        max_steps: settings.max_steps,
        deadline,
    };
    let end = run_block::<1>(Isa::solo(), &[job], sink)[0];
    let stats = DkdStats {
        steps: end.steps,
        h,
    };
    (end.status, stats)
}
