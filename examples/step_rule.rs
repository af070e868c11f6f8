//! Stability and accuracy of the fixed-step scheme as functions of the step, on the
//! held-out kinds of points, against the stiff reference: the tables of
//! docs/integrators.md, "What bounds the step".
//!
//! `cargo run --release --example step_rule [-- SCHEME...]` (`dkd-dc` and
//! `implicit-bending` by default, `[fixed_step] scheme`; a scheme may carry another
//! bending implicitness, `implicit-bending:0.5`).
//!
//! Each cell is the worst validated metric's error in units of its tolerance
//! (`integrate::accuracy`; ≤ 1 keeps the batch engines' promise) and which metric, or
//! `div.` where the run diverged.

#[path = "common/probe.rs"]
mod probe;

use metachron::batch::{run_batch, Engine};
use metachron::integrate::accuracy::{worst, Tolerances};
use metachron::integrate::dkd::{DkdSettings, Scheme};
use metachron::metrics::Metrics;
use metachron::model::Robot;
use metachron::simulate::RunConfig;

/// A point over 3 s (window from 1.5 s).
fn point(overrides: &[&str]) -> RunConfig {
    probe::point(overrides.iter().copied(), 3.0)
}

/// The validation points, leg stiffness both ways, the grounds, the couple and the
/// coupling's dampers.
fn cases() -> Vec<(&'static str, RunConfig)> {
    vec![
        ("paper", point(&[])),
        ("passive legs", point(&["actuated=first"])),
        ("weak coupling", point(&["alpha=50", "beta=50"])),
        ("soft legs K_M = 5", point(&["k_m=5"])),
        ("stiff legs K_M = 500", point(&["k_m=500"])),
        ("N = 5", point(&["n_legs=5"])),
        ("n = 3", point(&["n_nodes=3"])),
        ("n = 8", point(&["n_nodes=8"])),
        ("reversed wave", point(&["dphi=-90deg"])),
        ("Coulomb tips", point(&["mu_c=0.4"])),
        (
            "rough ground",
            point(&[
                "terrain=rough",
                "terrain_height=0.03",
                "terrain_seed=7",
                "terrain_start=-8",
            ]),
        ),
        (
            "slope",
            point(&["terrain=slope", "terrain_angle=4deg", "terrain_start=3.5"]),
        ),
        ("servo + couple", point(&["axo_f=150", "axo_omega=2"])),
        (
            "dampers",
            point(&["alpha=50", "beta=50", "alpha_damping=5", "beta_damping=5"]),
        ),
    ]
}

/// Steps per output interval (0.01 s) of the columns: the paper's default step (42),
/// then coarser.
const STEPS: [f64; 10] = [42.0, 36.0, 30.0, 24.0, 16.0, 12.0, 10.0, 8.0, 6.0, 4.0];

/// `NAME` or `NAME:THETA`.
fn settings(arg: &str) -> DkdSettings {
    let (name, theta) = arg.split_once(':').unwrap_or((arg, ""));
    let scheme: Scheme = name.parse().expect("a scheme: dkd-dc or implicit-bending");
    DkdSettings {
        scheme,
        theta: (!theta.is_empty()).then(|| theta.parse().expect("θ is a number in [0, 1]")),
        ..DkdSettings::default()
    }
}

fn cell(run: &Metrics, reference: &Metrics) -> String {
    if !run.status.is_ok() {
        return "div.".into();
    }
    let w = worst(run, reference, Tolerances::default());
    format!("{:.2} {}", w.ratio, w.metric)
}

fn main() {
    let mut schemes: Vec<DkdSettings> = std::env::args().skip(1).map(|a| settings(&a)).collect();
    if schemes.is_empty() {
        schemes = vec![settings("dkd-dc"), settings("implicit-bending")];
    }
    let cases = cases();
    let cfgs: Vec<RunConfig> = cases.iter().map(|(_, c)| c.clone()).collect();
    let reference: Vec<Metrics> = run_batch(&cfgs, &Engine::Reference)
        .into_iter()
        .map(|r| r.expect("the reference runs").metrics)
        .collect();
    for scheme in schemes {
        let defaults: Vec<f64> = cfgs
            .iter()
            .map(|c| scheme.step_for(&Robot::new(&c.params), c.metrics.dt_out))
            .collect();
        let run_at = |h: Option<f64>| -> Vec<Metrics> {
            let at: Vec<RunConfig> = cfgs
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.fixed_step = DkdSettings { h, ..scheme };
                    c
                })
                .collect();
            run_batch(&at, &Engine::Cpu)
                .into_iter()
                .map(|r| r.expect("the cpu engine runs").metrics)
                .collect()
        };
        let at_default = run_at(None);
        let runs: Vec<Vec<Metrics>> = STEPS.iter().map(|&s| run_at(Some(0.01 / s))).collect();
        println!("\n{}, θ = {}\n", scheme.scheme.name(), scheme.theta());
        print!("| point | default step | at the default |");
        for s in STEPS {
            print!(" h = {:.3e} s |", 0.01 / s);
        }
        println!("\n|---|---|---|{}", "---|".repeat(STEPS.len()));
        for (k, (name, _)) in cases.iter().enumerate() {
            print!(
                "| {name} | {:.3e} s | {} |",
                defaults[k],
                cell(&at_default[k], &reference[k])
            );
            for run in &runs {
                print!(" {} |", cell(&run[k], &reference[k]));
            }
            println!();
        }
    }
}
