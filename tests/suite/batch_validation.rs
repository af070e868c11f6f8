//! The batch engines against the stiff reference on eight diverse points: the CPU
//! batch (DKD-dc, f64) always, the GPU engine where an adapter exists (lavapipe in CI).
//! The reference runs once and judges both.

use crate::common;

use common::validation::{disagreements, run_engines, validation_points};
use metachron::simulate::RunConfig;

#[test]
#[ignore = "long (the full suite runs it): eight 3-s points on the stiff reference and both batch engines, ~2 min of one core"]
fn batch_engines_match_the_reference_on_eight_diverse_points() {
    let points = validation_points();
    let cfgs: Vec<RunConfig> = points.iter().map(|(_, c)| c.clone()).collect();
    let runs = run_engines(&cfgs, "batch_engines_match_the_reference (gpu part)");
    let mut failures = Vec::new();
    for (k, ((name, _), r)) in points.iter().zip(&runs.reference).enumerate() {
        assert!(
            r.metrics.status.is_ok(),
            "{name}: reference {:?}",
            r.metrics.status
        );
        for (engine, results) in &runs.engines {
            let f = &results[k];
            eprintln!(
                "{engine} {name:>14}: disp {:.6} vs {:.6}, lag {:.6} vs {:.6}, work {:.4} vs {:.4}, inext {:.2e} vs {:.2e}",
                f.metrics.displacement,
                r.metrics.displacement,
                f.metrics.mean_lag,
                r.metrics.mean_lag,
                f.metrics.work,
                r.metrics.work,
                f.metrics.max_inextensibility,
                r.metrics.max_inextensibility
            );
            failures.extend(disagreements(
                &format!("{engine} {name}"),
                &f.metrics,
                &r.metrics,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
