//! The fixed-step scheme's observed order of convergence against the stiff reference,
//! coordinate by coordinate, for points given on the command line (docs/integrators.md,
//! "The observed order").
//!
//! `cargo run --release --example order_probe -- [--scheme NAME] POINT...`, each POINT a
//! comma-separated list of overrides (`k_m=5,zeta=0`; an empty string is the paper's
//! robot). Each point runs 0.3 s on the reference and on the cpu engine at
//! h = 1e-4, 5e-5 and 2.5e-5 s; at t = 0.2 s it prints each coordinate's error
//! at the middle step and log₂ of the ratio of the errors at successive steps (≈ 1 for
//! a first-order term, ≈ 2 for a second-order one). Overrides that switch a term off
//! (`zeta=0`, `omega=0`, `x_t=100` lifts the ground out of reach) show which term carries
//! the leading error.

#[path = "common/probe.rs"]
mod probe;

use metachron::batch::{run_point, Engine};
use metachron::integrate::dkd::DkdSettings;
use metachron::sample::Sample;
use metachron::simulate::RunConfig;

/// Steps per output interval (0.001 s): h = 1e-4, 5e-5, 2.5e-5 s.
const STEPS: [f64; 3] = [10.0, 20.0, 40.0];
/// Where the errors are read (a sample time, s).
const AT: f64 = 0.2;

/// A point over 0.3 s sampled every millisecond.
fn point(overrides: &str) -> RunConfig {
    let mut cfg = probe::point(overrides.split(','), 0.3);
    cfg.metrics.dt_out = 1e-3;
    cfg.validate().expect("a valid point");
    cfg
}

/// The coordinates compared: leg 1's basal angle and tip, the body's position and angle.
fn coordinates(s: &Sample) -> [(&'static str, f64); 6] {
    [
        ("psi_1", s.psi[0]),
        ("tip_x_1", s.tip[0][0]),
        ("tip_y_1", s.tip[0][1]),
        ("body_x", s.body[0]),
        ("body_y", s.body[1]),
        ("body_theta", s.body[2]),
    ]
}

fn at(cfg: &RunConfig, engine: &Engine) -> [(&'static str, f64); 6] {
    let run = run_point(cfg, engine, true, |_| {}).expect("the point runs");
    let s = run
        .samples
        .iter()
        .find(|s| (s.t - AT).abs() < 1e-9)
        .expect("a sample at t = 0.2 s");
    coordinates(s)
}

fn main() {
    let (scheme, args) = probe::scheme_and_args();
    println!(
        "{}: error at h = 5e-5 s, t = {AT} s (observed order: log2 e(2h)/e(h) at h = 5e-5, 2.5e-5 s)",
        scheme.name()
    );
    for name in &args {
        let cfg = point(name);
        let reference = at(&cfg, &Engine::Reference);
        let errors: Vec<[f64; 6]> = STEPS
            .iter()
            .map(|k| {
                let mut c = cfg.clone();
                c.fixed_step = DkdSettings {
                    scheme,
                    h: Some(1e-3 / k),
                    ..DkdSettings::default()
                };
                let fast = at(&c, &Engine::Cpu);
                std::array::from_fn(|i| fast[i].1 - reference[i].1)
            })
            .collect();
        let mut line = format!("{:<24}", if name.is_empty() { "paper" } else { name });
        for (i, (coordinate, _)) in reference.iter().enumerate() {
            let order = |a: f64, b: f64| (a / b).abs().log2();
            line += &format!(
                " {coordinate} {:+.1e} ({:.2}, {:.2})",
                errors[1][i],
                order(errors[0][i], errors[1][i]),
                order(errors[1][i], errors[2][i])
            );
        }
        println!("{line}");
    }
}
