//! What the step studies share (examples/step_rule.rs, step_probe.rs, order_probe.rs): a
//! point built from parameter overrides, and a command line's optional leading
//! `--scheme NAME`.

use metachron::integrate::dkd::Scheme;
use metachron::simulate::RunConfig;

/// The paper's robot over `t_final` seconds with `overrides` (`k_m=5`, …) applied.
pub fn point<'a>(overrides: impl IntoIterator<Item = &'a str>, t_final: f64) -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = t_final;
    for o in overrides.into_iter().filter(|o| !o.is_empty()) {
        cfg.params.apply_override(o).expect("a known parameter");
    }
    cfg.validate().expect("a valid point");
    cfg
}

/// The scheme a leading `--scheme NAME` names (`implicit-bending` without one) and the
/// arguments after it.
#[allow(dead_code)] // step_rule.rs takes its schemes otherwise
pub fn scheme_and_args() -> (Scheme, Vec<String>) {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut scheme = Scheme::ImplicitBending;
    if args.first().map(String::as_str) == Some("--scheme") {
        scheme = args
            .get(1)
            .expect("a scheme name")
            .parse()
            .expect("dkd-dc or implicit-bending");
        args.drain(..2);
    }
    (scheme, args)
}
