//! What a run will cost, known before it starts: the step a fixed-step engine will
//! really take, the steps and output samples that follow from it, and the wall time
//! they take at this machine's measured rates. Values derived from the run's settings
//! that no engine can use (a step below what f64 resolves next to t, more samples
//! than distinct f64 times) are refused here with the parameters to change.
//!
//! Everything is O(1) in t_final: counts are computed as f64, never enumerated.

use std::collections::HashMap;

use crate::error::{DerivedValue, ParamError};
use crate::integrate::dkd::{DkdSettings, Scheme};
use crate::model::axoneme::has_couple;
use crate::model::Robot;
use crate::simulate::{Backend, RunConfig};

/// Wall seconds per unit of work on the machine the defaults were measured on
/// (`metachron bench --engines reference,cpu --batch 1,256 --threads 1` and
/// `metachron simulate` on the paper's robot, 2026-12-04, 2 cores under load ~7;
/// docs/benchmarks.md). A robot of other size costs in proportion to legs x nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// One step of the paper's robot on the solo fixed-step path (`simulate --backend cpu`).
    pub solo_step: f64,
    /// One robot-step of the lane kernel in a batch, per thread (sweeps).
    pub batch_step: f64,
    /// One accepted step of the reference solver.
    pub reference_step: f64,
    /// Accepted reference steps per step of the fixed-step scheme over the same time:
    /// both follow the leg's fastest bending mode.
    pub reference_steps_per_fixed_step: f64,
}

/// The measured rates (see [`Rates`]).
pub const MEASURED: Rates = Rates {
    solo_step: 6.7e-6,
    batch_step: 1.7e-6,
    reference_step: 5.2e-4,
    // The paper's robot's first second: 14 251 reference steps, 4 200 fixed steps.
    reference_steps_per_fixed_step: 3.4,
};

/// Default limit on one point's estimated wall time (s): an hour at [`MEASURED`].
pub const DEFAULT_POINT_LIMIT: f64 = 3600.0;

/// Most steps a fixed-step run may take: at 2⁴⁰ steps, t + h keeps only 12 of the
/// 52 bits of h, and the step no longer advances t by h.
pub const MAX_RESOLVED_STEPS: f64 = 1_099_511_627_776.0;

/// Most output samples of a run (the same bound: sample times k·dt_out stay distinct).
pub const MAX_SAMPLES: f64 = MAX_RESOLVED_STEPS;

/// The gpu kernel counts steps and samples in 32 bits.
pub const GPU_MAX_STEPS: f64 = (u32::MAX - 1) as f64;

/// Legs x nodes of the robot the rates were measured on.
const MEASURED_SIZE: f64 = 45.0;

/// How one point runs: on its own (`simulate`) or in a batch (`sweep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Solo,
    Batch,
}

/// Wall seconds the reference solver is run for, before a solo run on it, to measure
/// its cost (see [`probe_reference`]).
pub const PROBE_SECONDS: f64 = 0.25;

/// A reference run without `--point-timeout` ends (`budget_exceeded`) after this many
/// times its estimate: the adaptive solver's cost is measured, never known, and a run
/// far past its estimate has met a stiffness its start did not show.
pub const BUDGET_FACTOR: f64 = 10.0;

/// The least default budget (s): short runs are never cut by a machine's momentary
/// load or a process's start.
pub const MIN_BUDGET: f64 = 10.0;

/// The wall-time budget a run of estimate `e` gets when none is asked for.
pub fn default_budget(e: &Estimate) -> f64 {
    (BUDGET_FACTOR * e.seconds).max(MIN_BUDGET)
}

/// What a point will cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The horizon it may reach (t_final, or the `until_settled` horizon).
    pub horizon: f64,
    /// Output samples up to the horizon.
    pub samples: f64,
    /// The fixed step (s); `None` on the adaptive reference.
    pub h: Option<f64>,
    /// Steps up to the horizon (the reference: at most its `max_steps`).
    pub steps: f64,
    /// Estimated wall seconds on one thread (after `max_steps`, if any, ends it).
    pub seconds: f64,
    /// The simulated time over which the reference's cost was measured on this
    /// machine ([`probe_reference`]); `None`: from the rates alone.
    pub probed: Option<f64>,
}

/// Check the values derived from `cfg` on `backend` and estimate its cost.
pub fn estimate(
    cfg: &RunConfig,
    backend: Backend,
    mode: Mode,
    rates: &Rates,
) -> Result<Estimate, ParamError> {
    let settings = costed_settings(cfg, backend);
    let h = settings.step_for(&Robot::new(&cfg.params), cfg.metrics.dt_out);
    estimate_with_step(cfg, backend, mode, rates, h)
}

/// The step settings whose step `backend`'s cost follows: a batch engine's own; for the
/// reference, DKD-dc's, whose step measures the stiffness its cost follows (the bending
/// limit) whatever scheme the batch engines are set to.
fn costed_settings(cfg: &RunConfig, backend: Backend) -> DkdSettings {
    match backend {
        Backend::Reference => DkdSettings {
            scheme: Scheme::DkdDc,
            theta: None,
            max_step: None,
            ..cfg.fixed_step
        },
        _ => cfg.fixed_step.for_point(&cfg.params),
    }
}

fn estimate_with_step(
    cfg: &RunConfig,
    backend: Backend,
    mode: Mode,
    rates: &Rates,
    h: f64,
) -> Result<Estimate, ParamError> {
    let p = &cfg.params;
    let horizon = cfg.until_settled.unwrap_or(0.0).max(p.t_final);
    let samples = horizon / cfg.metrics.dt_out;
    if !(samples.is_finite() && samples <= MAX_SAMPLES) {
        return Err(ParamError::Derived(Box::new(DerivedValue {
            field: "output samples t_final/dt_out".into(),
            value: samples,
            allowed: format!("<= {MAX_SAMPLES:e} (sample times k dt_out stay distinct in f64)"),
            breaks: "sample times collapse onto each other".into(),
            change: "raise dt_out or lower t_final".into(),
            inputs: vec!["t_final", "dt_out"],
        })));
    }
    let size = (p.n_legs * p.n_nodes) as f64 / MEASURED_SIZE;
    let steps = horizon / h;
    if backend == Backend::Reference {
        // Adaptive: no step of its own to check; its max_steps ends it.
        let steps = (steps * rates.reference_steps_per_fixed_step)
            .min(cfg.solver.max_steps as f64)
            .ceil();
        return Ok(Estimate {
            horizon,
            samples,
            h: None,
            steps,
            seconds: steps * rates.reference_step * size,
            probed: None,
        });
    }
    let change = "the step follows the leg's top bending frequency ~ sqrt(k_m/rho)/spacing^2: \
                  lower k_m or n_nodes, raise rho or leg_length, or set [fixed_step] h";
    if !(steps.is_finite() && steps <= MAX_RESOLVED_STEPS) {
        return Err(ParamError::Derived(Box::new(DerivedValue {
            field: "fixed step h".into(),
            value: h,
            allowed: format!(
                ">= {:e} s, the horizon {horizon} s / 2^40 (t + h must keep 12 bits of h)",
                horizon / MAX_RESOLVED_STEPS
            ),
            breaks: "the time t + h no longer advances by h".into(),
            change: change.into(),
            inputs: vec!["k_m", "rho", "leg_length", "n_nodes", "t_final"],
        })));
    }
    if backend == Backend::Gpu && steps > GPU_MAX_STEPS {
        return Err(ParamError::Derived(Box::new(DerivedValue {
            field: "steps of the run (horizon / fixed step h)".into(),
            value: steps,
            allowed: format!("<= {GPU_MAX_STEPS:e} on the gpu backend (32-bit step counters)"),
            breaks: "the gpu kernel's step count overflows".into(),
            change: format!("{change}; or lower t_final, or use --backend cpu"),
            inputs: vec!["k_m", "rho", "leg_length", "n_nodes", "t_final"],
        })));
    }
    let run_steps = match cfg.fixed_step.max_steps {
        Some(m) => steps.min(m as f64),
        None => steps,
    };
    let per_step = match mode {
        Mode::Solo => rates.solo_step,
        Mode::Batch => rates.batch_step,
    };
    Ok(Estimate {
        horizon,
        samples,
        h: Some(h),
        steps: steps.ceil(),
        seconds: run_steps * per_step * size,
        probed: None,
    })
}

/// [`estimate`] for a solo run, with the reference's cost measured: the reference
/// solver's steps follow not only the leg's bending but every stiffness of the model
/// (the inextensibility penalty, Coulomb friction with a small `v_c`, strong gravity or
/// contact), which no rate predicts. It is run for [`PROBE_SECONDS`] of wall time on
/// this machine, and the time it reached is extrapolated to the horizon; the probe's
/// own time is part of the estimate. The fixed-step engines take the step the estimate
/// names whatever the stiffness (a stiffness beyond it ends the run as `diverged`), so
/// their estimate is [`estimate`]'s.
pub fn estimate_solo(
    cfg: &RunConfig,
    backend: Backend,
    rates: &Rates,
) -> Result<Estimate, ParamError> {
    let e = estimate(cfg, backend, Mode::Solo, rates)?;
    if backend != Backend::Reference {
        return Ok(e);
    }
    Ok(match probe_reference(cfg) {
        Some(p) => measured(&e, &p, cfg.solver.max_steps as f64),
        None => e,
    })
}

/// What the reference solver did in a probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// Wall seconds it ran.
    pub wall: f64,
    /// The simulated time it reached.
    pub reached: f64,
    /// Accepted steps it took.
    pub steps: f64,
    /// Wall seconds per simulated second over the probe's second half: the reference's
    /// steps shorten as a stiff run goes on, and its latest rate says more of what is
    /// left than its average.
    pub late_rate: f64,
    /// True when the run ended within the probe (done, failed or diverged): the run
    /// itself ends the same way, at the same cost.
    pub ended: bool,
}

/// Run the reference on `cfg` for at most [`PROBE_SECONDS`]; `None` when it could not
/// start (the run itself reports why).
pub fn probe_reference(cfg: &RunConfig) -> Option<Probe> {
    use crate::sample::Status;
    let mut c = cfg.clone();
    c.point_timeout = Some(PROBE_SECONDS);
    let mut reached = 0.0f64;
    // The time reached when half the probe's wall time had passed, and that time.
    let (start, mut half) = (std::time::Instant::now(), (0.0, 0.0));
    let r = crate::simulate::run_serial(
        &c,
        crate::simulate::SerialEngine::Reference,
        &mut |_| {},
        &mut |t| {
            reached = reached.max(t);
            let w = start.elapsed().as_secs_f64();
            if w <= PROBE_SECONDS / 2.0 {
                half = (reached, w);
            }
        },
    )
    .ok()?;
    let wall = start.elapsed().as_secs_f64();
    let late_rate = if reached > half.0 {
        (wall - half.1) / (reached - half.0)
    } else {
        f64::INFINITY
    };
    let steps = r.stats.steps as f64;
    let stopped = matches!(r.metrics.status, Status::BudgetExceeded { .. })
        && steps < cfg.solver.max_steps as f64;
    if !stopped {
        reached = c.params.t_final;
    }
    Some(Probe {
        wall,
        reached,
        steps,
        late_rate,
        ended: !stopped,
    })
}

/// `e` (from the rates) with the reference's cost from `p`: the probe's own time plus
/// the run's, extrapolated to the horizon at the probe's average or late rate,
/// whichever is slower (at most `max_steps` steps). A probe that reached no time leaves
/// the rates' estimate.
fn measured(e: &Estimate, p: &Probe, max_steps: f64) -> Estimate {
    if p.ended {
        return Estimate {
            steps: p.steps,
            seconds: 2.0 * p.wall,
            probed: Some(p.reached),
            ..*e
        };
    }
    if !(p.reached > 0.0 && p.steps > 0.0) {
        return *e;
    }
    let rate = (p.wall / p.reached).max(p.late_rate);
    // The run's seconds, and as many times the probe's steps.
    let run = (rate * e.horizon).min(p.wall * max_steps / p.steps);
    Estimate {
        steps: (p.steps * run / p.wall).min(max_steps).ceil(),
        seconds: p.wall + run,
        probed: Some(p.reached),
        ..*e
    }
}

/// The step a fixed-step engine takes for `cfg` (`DkdSettings::step_for`), without
/// building more than the leg's matrices once.
pub fn fixed_step(cfg: &RunConfig) -> f64 {
    let robot = Robot::new(&cfg.params);
    cfg.fixed_step.step_for(&robot, cfg.metrics.dt_out)
}

/// Estimates of many points (a sweep's): the step is computed once per distinct leg
/// and step setting, not once per point.
#[derive(Debug, Default)]
pub struct Estimator {
    steps: HashMap<[u64; 13], f64>,
}

impl Estimator {
    pub fn estimate(
        &mut self,
        cfg: &RunConfig,
        backend: Backend,
        mode: Mode,
        rates: &Rates,
    ) -> Result<Estimate, ParamError> {
        let (p, f) = (&cfg.params, &costed_settings(cfg, backend));
        let couple = has_couple(p);
        let key = [
            p.n_nodes as u64,
            p.leg_length.to_bits(),
            p.rho.to_bits(),
            p.k_m.to_bits(),
            f.h.unwrap_or(f64::NAN).to_bits(),
            f.safety.to_bits(),
            f.max_step().to_bits(),
            f.theta().to_bits(),
            cfg.metrics.dt_out.to_bits(),
            // The couple's stiffness bounds the step too (`dkd::top_frequency`); without
            // a couple its parameters do not matter.
            u64::from(couple),
            if couple { p.axo_f.abs().to_bits() } else { 0 },
            if couple { p.axo_k.to_bits() } else { 0 },
            if couple { p.filament_gap.to_bits() } else { 0 },
        ];
        let h = *self
            .steps
            .entry(key)
            .or_insert_with(|| f.step_for(&Robot::new(p), cfg.metrics.dt_out));
        estimate_with_step(cfg, backend, mode, rates, h)
    }
}

/// Seconds as people read them: 4.2 s, 42 s, 3.5 min, 2.1 h, 3.0 d.
pub fn human(seconds: f64) -> String {
    if seconds < 9.95 {
        format!("{seconds:.1} s")
    } else if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.1} min", seconds / 60.0)
    } else if seconds < 3.0 * 86400.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else if seconds < 1e6 * 86400.0 {
        format!("{:.1} d", seconds / 86400.0)
    } else {
        format!("{:.1e} years", seconds / (365.25 * 86400.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrate::schedule::SampleSchedule;

    fn small(t_final: f64) -> RunConfig {
        let mut c = RunConfig::default();
        c.params.apply_override("n_legs=3").unwrap();
        c.params.n_nodes = 3;
        c.params.t_final = t_final;
        c
    }

    #[test]
    fn the_step_count_is_the_schedules_and_scales_with_size() {
        let c = small(0.105);
        let e = estimate(&c, Backend::Cpu, Mode::Batch, &MEASURED).unwrap();
        let h = e.h.unwrap();
        let sched = SampleSchedule::new(&c.metrics, c.params.t_final, h);
        assert_eq!(e.steps, sched.total_steps() as f64);
        assert_eq!(
            e.seconds,
            e.steps * MEASURED.batch_step * 9.0 / MEASURED_SIZE
        );
        // A step budget bounds the cost, not the count.
        let mut capped = c.clone();
        capped.fixed_step.max_steps = Some(10);
        let ec = estimate(&capped, Backend::Cpu, Mode::Batch, &MEASURED).unwrap();
        assert_eq!(
            (ec.steps, ec.seconds),
            (e.steps, 10.0 * MEASURED.batch_step * 0.2)
        );
    }

    #[test]
    fn horizons_beyond_f64_resolution_are_refused_in_constant_time() {
        // 1e11 s at dt_out 0.01: 1e13 samples, more than distinct f64 sample times.
        let e = estimate(&small(1e11), Backend::Cpu, Mode::Solo, &MEASURED).unwrap_err();
        assert!(e.to_string().contains("dt_out"), "{e}");
        // 1e9 s at the paper's step: 4e12 steps, past 2^40.
        let mut c = small(1e9);
        c.metrics.dt_out = 1e3;
        let e = estimate(&c, Backend::Cpu, Mode::Solo, &MEASURED).unwrap_err();
        assert!(e.to_string().starts_with("fixed step h"), "{e}");
        // The adaptive reference has no fixed step to check: its max_steps bounds it.
        let r = estimate(&c, Backend::Reference, Mode::Solo, &MEASURED).unwrap();
        assert_eq!(r.steps, c.solver.max_steps as f64);
        // The gpu kernel's 32-bit step counter.
        let mut g = small(1.5e6);
        g.metrics.dt_out = 1.0;
        let e = estimate(&g, Backend::Gpu, Mode::Batch, &MEASURED).unwrap_err();
        assert!(e.to_string().contains("32-bit"), "{e}");
        assert!(estimate(&g, Backend::Cpu, Mode::Batch, &MEASURED).is_ok());
    }

    /// The reference's measured estimate: its probe's time plus the run's at the slower
    /// of the probe's average and late rates, bounded by max_steps; an ended probe is
    /// the run itself.
    #[test]
    fn a_probe_extrapolates_at_its_slower_rate_within_max_steps() {
        let rates = estimate(&small(1.0), Backend::Reference, Mode::Solo, &MEASURED).unwrap();
        let p = Probe {
            wall: 0.25,
            reached: 0.0078125,
            steps: 100.0,
            late_rate: 64.0,
            ended: false,
        };
        // Average 32 s per simulated second, late 64: the late one, over 1 s.
        let e = measured(&rates, &p, 1e9);
        assert_eq!(
            (e.seconds, e.steps, e.probed),
            (0.25 + 64.0, 25_600.0, Some(0.0078125))
        );
        // A faster late rate leaves the average.
        let e = measured(
            &rates,
            &Probe {
                late_rate: 16.0,
                ..p
            },
            1e9,
        );
        assert_eq!((e.seconds, e.steps), (0.25 + 32.0, 12_800.0));
        // 1000 steps end it: 10 times the probe's.
        let e = measured(&rates, &p, 1000.0);
        assert_eq!((e.seconds, e.steps), (0.25 + 2.5, 1000.0));
        // A probe that ended: the run repeats it.
        let e = measured(&rates, &Probe { ended: true, ..p }, 1e9);
        assert_eq!((e.seconds, e.steps), (0.5, 100.0));
        // One that reached nothing leaves the rates' estimate.
        let e = measured(&rates, &Probe { reached: 0.0, ..p }, 1e9);
        assert_eq!(e, rates);
    }

    /// `est`'s estimate of `c`, checked against a fresh one.
    fn cached_as_fresh(est: &mut Estimator, c: &RunConfig) -> Estimate {
        let a = est
            .estimate(c, Backend::Cpu, Mode::Batch, &MEASURED)
            .unwrap();
        assert_eq!(
            a,
            estimate(c, Backend::Cpu, Mode::Batch, &MEASURED).unwrap()
        );
        a
    }

    #[test]
    fn the_cached_estimator_agrees_with_a_fresh_estimate() {
        let mut est = Estimator::default();
        for k_m in [50.0, 5e3, 50.0] {
            let mut c = small(0.2);
            c.params.k_m = k_m;
            cached_as_fresh(&mut est, &c);
        }
        assert_eq!(est.steps.len(), 2);
    }

    /// The internal couple shortens the step: points that differ only in it must not
    /// share a cached step.
    #[test]
    fn the_cached_estimator_tells_couple_points_apart() {
        let mut est = Estimator::default();
        let mut steps = Vec::new();
        for (axo_f, axo_k) in [(0.0, 0.0), (1e6, 0.0), (1e6, 10.0), (0.0, 10.0)] {
            let mut c = small(0.2);
            c.params.axo_f = axo_f;
            c.params.axo_k = axo_k;
            steps.push(cached_as_fresh(&mut est, &c).steps);
        }
        assert!(
            steps[1] > steps[0],
            "a strong couple takes more steps: {steps:?}"
        );
        assert_eq!(steps[3], steps[0], "axo_k alone is no couple");
        assert_eq!(est.steps.len(), 3);
    }
}

/// What one point will do, in words: "~2.1 h (3.0e10 steps of 1.2e-10 s to t = 3 s)".
pub fn describe(e: &Estimate) -> String {
    match e.h {
        Some(h) => format!(
            "~{} ({:.3e} steps of {h:.3e} s to t = {} s)",
            human(e.seconds),
            e.steps,
            e.horizon
        ),
        None => format!(
            "~{} (the reference to t = {} s, ~{:.3e} steps, at most its max_steps{})",
            human(e.seconds),
            e.horizon,
            e.steps,
            match e.probed {
                Some(t) => format!("; its rate measured over t = 0..{t:.3e} s"),
                None => String::new(),
            }
        ),
    }
}

/// Refuse `e` when it is over `limit` and no `point_timeout` at most `limit` bounds it.
/// `what` names the point ("the run", "point 17 (k_m = 1e12)").
pub fn enforce(
    what: &str,
    e: &Estimate,
    limit: f64,
    point_timeout: Option<f64>,
) -> Result<(), OverLimit> {
    if e.seconds <= limit || point_timeout.is_some_and(|t| t <= limit) {
        return Ok(());
    }
    Err(OverLimit {
        what: what.to_string(),
        cost: describe(e),
        limit,
        raise: (e.seconds * 1.5).ceil(),
        hint: step_hint(e),
    })
}

/// A point whose estimate is above the limit, and what to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{what} would take {cost} on one thread at this machine's measured rate, above the \
     limit of {} (--max-estimate {limit}): raise it (--max-estimate {raise:.0}, or inf) to run \
     it anyway, bound it with --point-timeout SECONDS, or shorten it (t_final, the step's \
     parameters){hint}",
    human(*limit)
)]
pub struct OverLimit {
    /// The point ("the run", "point 17 (k_m = 1e12)").
    pub what: String,
    /// Its estimate, in words.
    pub cost: String,
    pub limit: f64,
    /// A limit that would let it run.
    pub raise: f64,
    /// Why its fixed step is small, when it is.
    pub hint: String,
}

/// Why a fixed step is small, when it is.
fn step_hint(e: &Estimate) -> String {
    match e.h {
        Some(h) if h < 1e-6 => format!(
            "; the step {h:.3e} s follows the leg's top bending frequency (k_m, rho, \
             leg_length, n_nodes) or [fixed_step] h"
        ),
        _ => String::new(),
    }
}
