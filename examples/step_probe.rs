//! Signed errors against the stiff reference, metric by metric, as the step grows, for
//! points given on the command line: how one parameter changes what bounds the step
//! (docs/integrators.md, "The tip's friction and the body, one at a time").
//!
//! `cargo run --release --example step_probe -- [--scheme NAME] POINT...`, each POINT a
//! comma-separated list of overrides (`k_m=5,nu=20`; an empty string is the paper's
//! robot), 3 s each, under `implicit-bending` unless `--scheme` names another. A cell is a
//! metric's error in units of its tolerance (`integrate::accuracy`), signed as the fixed-step
//! run minus the reference; metrics within 0.1 of their tolerance are left out.

#[path = "common/probe.rs"]
mod probe;

use metachron::batch::{run_batch, Engine};
use metachron::integrate::accuracy::{deviations, Tolerances};
use metachron::integrate::dkd::DkdSettings;
use metachron::simulate::RunConfig;

/// Steps per output interval (0.01 s): 1.04e-4 s to 1.67e-3 s.
const STEPS: [f64; 7] = [96.0, 48.0, 24.0, 16.0, 12.0, 8.0, 6.0];

fn main() {
    let (scheme, args) = probe::scheme_and_args();
    let cfgs: Vec<RunConfig> = args
        .iter()
        .map(|a| probe::point(a.split(','), 3.0))
        .collect();
    let reference: Vec<_> = run_batch(&cfgs, &Engine::Reference)
        .into_iter()
        .map(|r| r.expect("the reference runs").metrics)
        .collect();
    println!("{}", scheme.name());
    for k in STEPS {
        let at: Vec<RunConfig> = cfgs
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c.fixed_step = DkdSettings {
                    scheme,
                    h: Some(0.01 / k),
                    ..DkdSettings::default()
                };
                c
            })
            .collect();
        let runs: Vec<_> = run_batch(&at, &Engine::Cpu)
            .into_iter()
            .map(|r| r.expect("the cpu engine runs").metrics)
            .collect();
        for (i, name) in args.iter().enumerate() {
            let mut line = format!("h = {:.3e} s  {:<32}", 0.01 / k, name);
            for d in deviations(&runs[i], &reference[i], Tolerances::default()) {
                if d.ratio > 0.1 {
                    let sign = if d.fast >= d.reference { '+' } else { '-' };
                    line += &format!(" {}:{sign}{:.2}", d.metric, d.ratio);
                }
            }
            println!("{line}");
        }
    }
}
