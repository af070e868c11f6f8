//! The eight validation points of the batch engines and the tolerances that judge a
//! fixed-step backend against the stiff reference (shared by the batch tests).

use metachron::batch::{run_batch, Engine};
use metachron::gpu::{run_gpu_batch, GpuEngine};
use metachron::metrics::Metrics;
use metachron::simulate::{PointResult, RunConfig};

/// A point over a short horizon (3 s, window from 1.5 s).
pub fn point(overrides: &[&str]) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 3.0;
    for o in overrides {
        cfg.params.apply_override(o).unwrap();
    }
    cfg.validate().unwrap();
    cfg
}

/// The eight validation points: the paper's robot and seven variations of it.
pub fn validation_points() -> Vec<(&'static str, RunConfig)> {
    vec![
        ("paper", point(&[])),
        ("passive legs", point(&["actuated=first"])),
        ("weak coupling", point(&["alpha=50", "beta=50"])),
        ("soft legs", point(&["k_m=5"])),
        ("N = 5", point(&["n_legs=5"])),
        ("n = 3", point(&["n_nodes=3"])),
        ("n = 8", point(&["n_nodes=8"])),
        ("reversed wave", point(&["dphi=-90deg"])),
    ]
}

/// Disagreements of the fixed-step metrics with the reference (empty when they agree).
///
/// Tolerances: DKD-dc is second order at h ≈ 0.85·2/ω_max; the integrator study measured
/// ~1e-5 relative on the walking metrics of the paper's run. We allow 1e-3 on phase-like
/// metrics (rad or unitless), 2e-3 relative on displacement, speed and work with a floor
/// at robot scale (0.3 m, 0.1 m/s, 1 J: a passive robot that barely moves must not be
/// judged relative to zero), and 0.01 on the duty factor (contact flags switch on output
/// samples). The inextensibility error: within 5x of the reference (the 3-s points measure
/// 0.98–1.0x with the touchdown correction, docs/integrators.md; without it a passive leg
/// striking the ground takes the batch engines to 38x).
pub fn disagreements(name: &str, fast: &Metrics, reference: &Metrics) -> Vec<String> {
    disagreements_within(name, fast, reference, 2e-3, 1e-3)
}

/// [`disagreements`] with `walk_rel` (instead of 2e-3) relative on displacement, speed and
/// work and `phase_abs` (instead of 1e-3) on the phase-like metrics: for points whose
/// metrics are sensitive beyond the scheme's error (measured across step sizes).
pub fn disagreements_within(
    name: &str,
    fast: &Metrics,
    reference: &Metrics,
    walk_rel: f64,
    phase_abs: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |ok: bool, what: &str, a: f64, b: f64| {
        if !ok {
            out.push(format!("{name}: {what} {a} vs reference {b}"));
        }
    };
    let abs = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol;
    let rel = |a: f64, b: f64, tol: f64, floor: f64| (a - b).abs() <= tol * b.abs().max(floor);
    check(fast.status == reference.status, "status", 0.0, 0.0);
    check(fast.class == reference.class, "class", 0.0, 0.0);
    check(
        abs(fast.lag_order, reference.lag_order, phase_abs),
        "lag_order",
        fast.lag_order,
        reference.lag_order,
    );
    check(
        abs(fast.mean_lag, reference.mean_lag, phase_abs),
        "mean_lag",
        fast.mean_lag,
        reference.mean_lag,
    );
    check(
        abs(fast.min_plv, reference.min_plv, phase_abs),
        "min_plv",
        fast.min_plv,
        reference.min_plv,
    );
    check(
        abs(fast.kuramoto_r, reference.kuramoto_r, phase_abs),
        "kuramoto_r",
        fast.kuramoto_r,
        reference.kuramoto_r,
    );
    check(
        abs(fast.mean_frequency, reference.mean_frequency, phase_abs),
        "mean_frequency",
        fast.mean_frequency,
        reference.mean_frequency,
    );
    check(
        rel(fast.displacement, reference.displacement, walk_rel, 0.3),
        "displacement",
        fast.displacement,
        reference.displacement,
    );
    check(
        rel(fast.mean_speed, reference.mean_speed, walk_rel, 0.1),
        "mean_speed",
        fast.mean_speed,
        reference.mean_speed,
    );
    check(
        rel(fast.work, reference.work, walk_rel, 1.0),
        "work",
        fast.work,
        reference.work,
    );
    check(
        abs(fast.duty_factor, reference.duty_factor, 0.01),
        "duty_factor",
        fast.duty_factor,
        reference.duty_factor,
    );
    let (fi, ri) = (fast.max_inextensibility, reference.max_inextensibility);
    let inext_ok = (0.2..=5.0).contains(&(fi / ri));
    check(inext_ok, "max_inextensibility", fi, ri);
    out
}

/// The points run on the reference and on each batch engine: the cpu always, the gpu
/// where an adapter exists (`test` names the caller in the skip message).
pub struct EngineRuns {
    pub reference: Vec<PointResult>,
    /// (engine label, its results in the points' order).
    pub engines: Vec<(&'static str, Vec<PointResult>)>,
}

pub fn run_engines(cfgs: &[RunConfig], test: &str) -> EngineRuns {
    let ran = |rs: Vec<Result<PointResult, _>>, what: &str| -> Vec<PointResult> {
        rs.into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("{what} did not run: {e}")))
            .collect()
    };
    let reference = ran(run_batch(cfgs, &Engine::Reference), "reference");
    let mut engines = vec![("cpu", ran(run_batch(cfgs, &Engine::Cpu), "cpu"))];
    if let Some(ctx) = super::gpu::gpu_context(test) {
        engines.push((
            "gpu",
            ran(run_gpu_batch(&GpuEngine::new(&ctx), cfgs), "gpu"),
        ));
    }
    EngineRuns { reference, engines }
}

/// A lane's result does not depend on its neighbours in a SIMD block: each point of
/// `cfgs`, run together on the cpu engine (over 1 s), gives the bits it gives alone.
pub fn assert_lanes_independent(mut cfgs: Vec<RunConfig>) {
    for c in &mut cfgs {
        c.params.t_final = 1.0;
        c.validate().unwrap();
    }
    let together = run_batch(&cfgs, &Engine::Cpu);
    for (k, cfg) in cfgs.iter().enumerate() {
        let alone = run_batch(std::slice::from_ref(cfg), &Engine::Cpu);
        let (a, b) = (
            &alone[0].as_ref().unwrap().metrics,
            &together[k].as_ref().unwrap().metrics,
        );
        assert_eq!(a.scalars(), b.scalars(), "point {k}");
        assert_eq!(a.pair_lag, b.pair_lag, "point {k}");
    }
}
