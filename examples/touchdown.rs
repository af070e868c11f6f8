//! The touchdown study of docs/integrators.md: with only leg 1 driven, the passive legs
//! strike the ground again and again for 20 s. The fixed-step cpu engine (DKD-dc with the
//! touchdown correction) against the stiff reference: the largest inextensibility error
//! max |V|/ℓ over the run and the body's displacement, with the paper's couplings and
//! with α = β = 50 N/m.
//!
//! `cargo run --release --example touchdown` (minutes: the two 20-s reference runs dominate)
//!
//! Printed on the 2-core machine of docs/integrators.md (2026-12-03):
//!
//! ```text
//! leg 1 driven                     reference   8.25e-8  0.765995 m | cpu   8.26e-8  0.766061 m
//! leg 1 driven, alpha = beta = 50  reference   5.97e-8  0.460856 m | cpu   4.55e-8  0.460826 m
//! ```

use metachron::batch::{run_point, Engine};
use metachron::simulate::RunConfig;

fn point(overrides: &[&str]) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 20.0;
    for o in overrides {
        cfg.params.apply_override(o).expect("a valid override");
    }
    cfg.validate().expect("a valid point");
    cfg
}

fn main() {
    for (name, cfg) in [
        ("leg 1 driven", point(&["actuated=first"])),
        (
            "leg 1 driven, alpha = beta = 50",
            point(&["actuated=first", "alpha=50", "beta=50"]),
        ),
    ] {
        let mut line = format!("{name:<32}");
        for backend in [Engine::Reference, Engine::Cpu] {
            let r = run_point(&cfg, &backend, false, |_| {}).expect("the run completes");
            let m = &r.metrics;
            line.push_str(&format!(
                " {} {:>9.2e} {:>9.6} m |",
                backend.backend().label(),
                m.max_inextensibility,
                m.displacement
            ));
        }
        println!("{}", line.trim_end_matches(" |"));
    }
}
