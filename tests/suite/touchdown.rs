//! Two 20-s runs with only leg 1 driven, so passive legs strike the ground again and
//! again (with the paper's couplings, and with α = β = 50). The batch engines against the
//! stiff reference, with the validation tolerances and two tighter checks that the
//! touchdown corrections allow (docs/integrators.md, "Touchdown").
//!
//! Opt-in, because the two reference runs take about a minute each:
//! `cargo test --release --test suite touchdown::study -- --ignored --nocapture`

use crate::common;

use common::validation::{disagreements, run_engines};
use metachron::simulate::RunConfig;

fn run(overrides: &[&str]) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 20.0;
    for o in overrides {
        cfg.params.apply_override(o).expect("valid override");
    }
    cfg.validate().expect("valid point");
    cfg
}

/// Studies and probes: run by hand (`--ignored`), not by the suite.
mod study {
    use super::*;

    #[test]
    #[ignore = "two 20-s reference runs (~2 min); run with --ignored"]
    fn passive_legs_striking_the_ground_for_20_s() {
        let points = [
            ("leg 1 driven", run(&["actuated=first"])),
            (
                "leg 1 driven, alpha = beta = 50",
                run(&["actuated=first", "alpha=50", "beta=50"]),
            ),
        ];
        let cfgs: Vec<RunConfig> = points.iter().map(|(_, c)| c.clone()).collect();
        let runs = run_engines(&cfgs, "passive_legs_striking_the_ground (gpu part)");
        let mut failures = Vec::new();
        for (k, (name, _)) in points.iter().enumerate() {
            let r = &runs.reference[k].metrics;
            assert!(r.status.is_ok(), "{name}: reference {:?}", r.status);
            for (engine, results) in &runs.engines {
                let f = &results[k].metrics;
                if *engine == "cpu implicit-bending" {
                    // Over 20 s of strikes the metrics scatter with the step by more than
                    // the tolerances on either scheme (DKD-dc at h = 2e-4 s: work 1.65 of
                    // its tolerance, displacement 1.6e-3; docs/integrators.md): this
                    // study holds DKD-dc at its default step and shows the other.
                    eprintln!(
                        "{engine} {name}: displacement {:.6} vs {:.6}, work {:.4} vs {:.4} (not checked)",
                        f.displacement, r.displacement, f.work, r.work
                    );
                    continue;
                }
                let ratio = f.max_inextensibility / r.max_inextensibility;
                let disp = (f.displacement - r.displacement).abs() / r.displacement.abs();
                eprintln!(
                    "{engine} {name}: inext {:.3e} vs {:.3e} ({ratio:.1}x), displacement {:.6} vs {:.6} ({disp:.1e} rel)",
                    f.max_inextensibility, r.max_inextensibility, f.displacement, r.displacement
                );
                failures.extend(disagreements(&format!("{engine} {name}"), f, r));
                // Within 5x of the reference. Measured 1.0x and 0.76x (43x and 38x with vᵀGv at the old
                // velocity, 11.3x and 10.6x with the consistent vᵀGv alone).
                if ratio > 5.0 {
                    failures.push(format!(
                        "{engine} {name}: max |V|/l {ratio:.1}x the reference"
                    ));
                }
                // Measured 8.6e-5 and 6.5e-5 (1.7e-3 and 7.9e-5 before the consistent vᵀGv; 7.9e-6
                // and 7.9e-5 with it alone). Over 20 s of strikes the displacement scatters by
                // ~1e-3 with the step size on either scheme (docs/integrators.md), so this bound
                // is about the scheme at its default step, not a convergence statement.
                if disp > 1e-4 {
                    failures.push(format!("{engine} {name}: displacement off by {disp:.1e}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
