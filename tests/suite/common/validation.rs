//! The eight validation points of the batch engines and the tolerances that judge a
//! fixed-step backend against the stiff reference (shared by the batch tests).

use metachron::batch::{run_batch, Engine};
use metachron::gpu::{run_gpu_batch, GpuEngine};
use metachron::integrate::accuracy::{deviations, Tolerances};
use metachron::integrate::dkd::Scheme;
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

/// Disagreements of the fixed-step metrics with the reference (empty when they agree),
/// judged by the batch engines' promise (`integrate::accuracy`). The 3-s points measure
/// the inextensibility error at 0.98–1.0× the reference's with the touchdown correction
/// (docs/integrators.md); without it a passive leg striking the ground takes the batch
/// engines to 38×.
pub fn disagreements(name: &str, fast: &Metrics, reference: &Metrics) -> Vec<String> {
    disagreements_within(name, fast, reference, Tolerances::default())
}

/// [`disagreements`] with other tolerances on the walking and phase-like metrics: for
/// points whose metrics are sensitive beyond the scheme's error (measured across step
/// sizes).
pub fn disagreements_within(
    name: &str,
    fast: &Metrics,
    reference: &Metrics,
    tol: Tolerances,
) -> Vec<String> {
    deviations(fast, reference, tol)
        .into_iter()
        .filter(|d| !d.within())
        .map(|d| {
            format!(
                "{name}: {} {} vs reference {} ({:.2} of its tolerance)",
                d.metric, d.fast, d.reference, d.ratio
            )
        })
        .collect()
}

/// The points run on the reference and on each batch engine: the cpu always, under its
/// default scheme and under implicit bending (`[fixed_step] scheme`, each at its own
/// default step), the gpu where an adapter exists (`test` names the caller in the skip
/// message; tests/suite/gpu_vs_cpu.rs holds it to the cpu under both schemes).
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
    let implicit: Vec<RunConfig> = cfgs
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.fixed_step.scheme = Scheme::ImplicitBending;
            c
        })
        .collect();
    let mut engines = vec![
        ("cpu", ran(run_batch(cfgs, &Engine::Cpu), "cpu")),
        (
            "cpu implicit-bending",
            ran(run_batch(&implicit, &Engine::Cpu), "cpu implicit-bending"),
        ),
    ];
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
