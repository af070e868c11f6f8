//! DKD-dc: the fixed-step scheme of the batch engines (docs/integrators.md): its
//! settings, step size and kick constants. The step itself is the lane kernel
//! (`integrate::lanes::kernel`), of which a solo run is the one-lane case.
//!
//! One step: half drift q += h/2·v; springs at the midpoint; one linearly implicit kick
//! per leg in which every velocity-proportional term (ζ damping, Bayo's penalty damping
//! with the drift-consistency term, the basal servo, tip friction) is implicit, solved by
//! Woodbury on the constant P = (ρ + s·hζ)M + θh²K_M·K (s = 1, or ½ with the velocity
//! terms centred, `record::KickForm`), then the touchdown correction (the
//! kick's vᵀGv made consistent with the drifts, and the leg's midpoint moved so that the
//! step end lies on the midpoints' constraint interpolant); the body kick with implicit
//! damping; half drift with the new velocities. Elastic, spring, gravity and contact forces stay
//! explicit, so the step is bounded by the top bending mode: h < 2/ω_max (θ = 0).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;
use crate::integrate::lanes::kernel::{BlockState, Scratch};
use crate::integrate::lanes::model::BlockModel;
use crate::integrate::lanes::simd::L;
use crate::integrate::lanes::{run_block, Isa, LaneJob, LaneSink};
use crate::integrate::record::{InstanceRecord, KickForm};
use crate::integrate::schedule::SampleSchedule;
use crate::metrics::MetricsSettings;
use crate::model::axoneme::{has_couple, CoupleMatrices};
use crate::model::Robot;
use crate::params::Params;
use crate::sample::{Deadline, Status};

/// The fixed-step scheme: DKD with the elastic bending explicit (its step bounded by
/// the top bending mode) or implicit (its step set by accuracy), docs/integrators.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// DKD-dc: bending explicit (θ = 0), the run starting from rest, the step
    /// `safety · 2/ω_max` capped at 2.5e-4 s.
    #[default]
    DkdDc,
    /// DKD-dc with the bending implicit in the kick (θ = ¼), its velocity terms centred
    /// on the step ([`DkdSettings::centres_velocity_terms`]) and the first step's opening
    /// drift resolved ([`DkdSettings::resolves_start`]); the step is the accuracy cap
    /// 1/1600 s measured on the held-out points. A robot with an internal couple runs
    /// DKD-dc ([`DkdSettings::for_point`]).
    ImplicitBending,
}

impl Scheme {
    /// The bending's implicitness θ when `[fixed_step] theta` does not set it.
    pub fn default_theta(self) -> f64 {
        match self {
            Scheme::DkdDc => 0.0,
            Scheme::ImplicitBending => 0.25,
        }
    }

    /// The cap on the automatic step (s) when `[fixed_step] max_step` does not set it.
    pub fn default_max_step(self) -> f64 {
        match self {
            Scheme::DkdDc => 2.5e-4,
            Scheme::ImplicitBending => 1.0 / 1600.0,
        }
    }

    /// The name a config file gives it.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::DkdDc => "dkd-dc",
            Scheme::ImplicitBending => "implicit-bending",
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = serde::de::value::Error;

    /// A scheme by the name a config file gives it (`dkd-dc`, `implicit-bending`).
    fn from_str(name: &str) -> Result<Scheme, Self::Err> {
        use serde::de::IntoDeserializer;
        Scheme::deserialize(name.into_deserializer())
    }
}

/// Fixed-step settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DkdSettings {
    /// The scheme; it sets the defaults of `theta` and `max_step` and how a run starts.
    pub scheme: Scheme,
    /// Step (s); `None` picks the automatic step: `safety · 2/ω̃_max` (the bending's
    /// stability limit at θ, none for θ ≥ ¼) capped at `max_step`, rounded so that the
    /// output interval is a whole number of steps.
    pub h: Option<f64>,
    /// Fraction of the bending's stability limit used by the automatic step.
    pub safety: f64,
    /// Cap on the automatic step (s), the scheme's unless set: soft legs have a low
    /// ω_max, and implicit bending has no bending limit; the walking metrics' accuracy
    /// bounds the step there.
    pub max_step: Option<f64>,
    /// Implicitness of the bending force in the kick (0 = explicit), the scheme's unless set.
    pub theta: Option<f64>,
    /// Step budget: steps allowed before the run ends as `budget_exceeded` (none: no limit).
    pub max_steps: Option<u64>,
}

impl Default for DkdSettings {
    fn default() -> Self {
        DkdSettings {
            scheme: Scheme::DkdDc,
            h: None,
            safety: 0.85,
            max_step: None,
            theta: None,
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
        if !(self.max_step().is_finite() && self.max_step() > 0.0) {
            return bad("max_step", self.max_step(), "a finite step > 0 (s)");
        }
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return bad("safety", self.safety, "(0, 1]");
        }
        if !(0.0..=1.0).contains(&self.theta()) {
            return bad("theta", self.theta(), "[0, 1]");
        }
        if self.max_steps == Some(0) {
            return bad("max_steps", 0.0, "an integer >= 1");
        }
        Ok(())
    }

    /// The bending's implicitness θ of the kick, as set or the scheme's.
    pub fn theta(&self) -> f64 {
        self.theta.unwrap_or(self.scheme.default_theta())
    }

    /// The settings a run of `p` takes: under implicit bending a robot with an internal
    /// couple runs DKD-dc (θ = 0 unless set, its step, the start at rest). The couple
    /// drives the bending modes themselves, the top ones included, whose frequencies an
    /// implicit bending lowers (ω/√(1 + θh²ω²), 24 % at θ = ¼ near the explicit limit):
    /// at the same step the couple's points left the tolerances (docs/integrators.md,
    /// "What bounds the step").
    pub fn for_point(&self, p: &Params) -> DkdSettings {
        if self.scheme == Scheme::ImplicitBending && has_couple(p) {
            DkdSettings {
                scheme: Scheme::DkdDc,
                ..*self
            }
        } else {
            *self
        }
    }

    /// Whether the kick centres its velocity terms on the step (`record::KickForm`):
    /// under implicit bending.
    pub fn centres_velocity_terms(&self) -> bool {
        self.scheme == Scheme::ImplicitBending
    }

    /// The kick's form: θ and the centring.
    pub fn kick_form(&self) -> KickForm {
        KickForm {
            theta: self.theta(),
            centred: self.centres_velocity_terms(),
        }
    }

    /// Whether a run drifts its first opening half step to where a probe step from rest
    /// ends (`integrate::lanes::driver::start_velocity`) rather than at its initial
    /// velocity: under implicit bending.
    pub fn resolves_start(&self) -> bool {
        self.scheme == Scheme::ImplicitBending
    }

    /// These settings with the scheme's defaults written out (`theta`, `max_step`), as a
    /// dataset records them.
    pub fn resolved(&self) -> DkdSettings {
        DkdSettings {
            theta: Some(self.theta()),
            max_step: Some(self.max_step()),
            ..*self
        }
    }

    /// The cap on the automatic step (s).
    pub fn max_step(&self) -> f64 {
        self.max_step.unwrap_or(self.scheme.default_max_step())
    }

    /// The step for `robot` given the output interval.
    pub fn step_for(&self, robot: &Robot, dt_out: f64) -> f64 {
        self.step_with(robot, dt_out, &mut TopFrequencies::default())
    }

    /// [`Self::step_for`] with ω_max looked up in `known` (for many robots at once).
    pub fn step_with(&self, robot: &Robot, dt_out: f64, known: &mut TopFrequencies) -> f64 {
        let own = self.for_point(&robot.p);
        own.step_as_set(robot, dt_out, known)
    }

    /// [`Self::step_with`] for these settings as they stand (not [`Self::for_point`]'s).
    fn step_as_set(&self, robot: &Robot, dt_out: f64, known: &mut TopFrequencies) -> f64 {
        let h_max = self.h.unwrap_or_else(|| {
            // The kick's bending frequency ω/√(1 + θh²ω²) stays below 2/h where
            // h²ω²(1 − 4θ) < 4: always for θ ≥ ¼.
            let explicit = 1.0 - 4.0 * self.theta();
            let limit = if explicit > 0.0 {
                self.safety * 2.0 / (known.get(robot) * explicit.sqrt())
            } else {
                f64::INFINITY
            };
            limit.min(self.max_step())
        });
        dt_out / (dt_out / h_max).ceil()
    }
}

/// ω_max of many robots, each distinct leg computed once (a batch's robots mostly share
/// their legs, and with an internal couple ω_max costs a power iteration per phase). The
/// key is every number [`top_frequency`] reads, bit for bit, so a hit is the same ω_max.
#[derive(Debug, Default)]
pub struct TopFrequencies(HashMap<Vec<u64>, f64>);

impl TopFrequencies {
    pub fn get(&mut self, robot: &Robot) -> f64 {
        let couple = has_couple(&robot.p).then(|| CoupleMatrices::new(&robot.p));
        let p = &robot.p;
        let mut key = vec![robot.n_nodes as u64, p.k_m.to_bits()];
        for m in [&robot.fe.bending, &robot.mass_inv]
            .into_iter()
            .chain(couple.iter().flat_map(|c| [&c.cos, &c.sin]))
        {
            key.extend(m.a.iter().map(|x| x.to_bits()));
        }
        if couple.is_some() {
            key.push(p.axo_f.abs().to_bits());
        }
        *self
            .0
            .entry(key)
            .or_insert_with(|| top_frequency_of(robot, couple.as_ref()))
    }
}

/// Largest natural frequency ω_max of a free leg, the bound of the explicit step: the
/// bending's, or with an internal couple that of the bending and the couple together.
/// The couple's force is linear in q (docs/model.md (A5)), Q_A = −S(θ)q with
/// S = f_A [[0, −B(θ)], [B(θ), 0]] symmetric; its phase θ sweeps every value during a run,
/// so ω_max is the largest over a grid of phases. θ and θ + π have the same spectrum
/// (Y → −Y turns S(θ) into S(θ + π) and leaves the rest), so the grid covers half the circle.
pub fn top_frequency(robot: &Robot) -> f64 {
    let couple = has_couple(&robot.p).then(|| CoupleMatrices::new(&robot.p));
    top_frequency_of(robot, couple.as_ref())
}

/// [`top_frequency`] given the couple's matrices (`None`: no couple).
fn top_frequency_of(robot: &Robot, couple: Option<&CoupleMatrices>) -> f64 {
    let Some(couple) = couple else {
        return top_bending_frequency(robot);
    };
    let m = 2 * robot.n_nodes;
    let (p, amp) = (&robot.p, robot.p.axo_f.abs());
    let mass_inv = |r: usize, j: usize| robot.mass_inv.get(r, j);
    // (ρM)⁻¹K_M·K, dense, once for every phase.
    let stiff: Vec<f64> = (0..m * m)
        .map(|e| {
            let (r, col) = (e / m, e % m);
            p.k_m
                * (0..m)
                    .map(|j| mass_inv(r, j) * robot.fe.bending.get(j, col))
                    .sum::<f64>()
        })
        .collect();
    (0..8)
        .map(|k| {
            let th = k as f64 * std::f64::consts::PI / 8.0;
            let (c, s) = (amp * th.cos(), amp * th.sin());
            let b = |j: usize, col: usize| c * couple.cos.get(j, col) + s * couple.sin.get(j, col);
            // (ρM)⁻¹B(θ); the operator is [[(ρM)⁻¹K_M K, −(ρM)⁻¹B], [(ρM)⁻¹B, (ρM)⁻¹K_M K]].
            let mb: Vec<f64> = (0..m * m)
                .map(|e| (0..m).map(|j| mass_inv(e / m, j) * b(j, e % m)).sum())
                .collect();
            let apply = |x: &[f64], z: &mut [f64]| {
                let (xx, xy) = x.split_at(m);
                for r in 0..m {
                    let (rk, rb) = (&stiff[r * m..(r + 1) * m], &mb[r * m..(r + 1) * m]);
                    let (mut zx, mut zy) = (0.0, 0.0);
                    for col in 0..m {
                        zx += rk[col] * xx[col] - rb[col] * xy[col];
                        zy += rk[col] * xy[col] + rb[col] * xx[col];
                    }
                    z[r] = zx;
                    z[m + r] = zy;
                }
            };
            power_iteration(2 * m, apply).sqrt()
        })
        .fold(0.0, f64::max)
}

/// The largest |eigenvalue| of `apply` (dimension `dim`) by power iteration.
fn power_iteration(dim: usize, apply: impl Fn(&[f64], &mut [f64])) -> f64 {
    let mut x: Vec<f64> = (0..dim).map(|i| 1.0 + 0.1 * i as f64).collect();
    let mut z = vec![0.0; dim];
    let mut lambda = 0.0;
    for _ in 0..2000 {
        apply(&x, &mut z);
        let norm = z.iter().map(|a| a * a).sum::<f64>().sqrt();
        let next = norm / x.iter().map(|a| a * a).sum::<f64>().sqrt();
        x.iter_mut().zip(&z).for_each(|(a, b)| *a = b / norm);
        if (next - lambda).abs() <= 1e-12 * next {
            return next;
        }
        lambda = next;
    }
    lambda
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
    let mut st = BlockState::<1>::at_rest(q.len(), |_, k| q[k]);
    for (x, y) in st.v.iter_mut().zip(v.iter()) {
        *x = L([*y]);
    }
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
    let settings = settings.for_point(&robot.p);
    let h = settings.step_for(robot, metrics.dt_out);
    let job = LaneJob {
        robot,
        schedule: SampleSchedule::new(metrics, robot.p.t_final, h),
        kick: settings.kick_form(),
        resolve_start: settings.resolves_start(),
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
