//! The fixed-step schemes' observed order against the reference (docs/integrators.md,
//! "The observed order"), on the paper's robot falling with the ground out of reach
//! (x_t = 100): there the drag taken at the new velocity alone is `dkd-dc`'s leading
//! error, first order, and `implicit-bending`'s centred kick takes it to second order.

use metachron::batch::{run_point, Engine};
use metachron::integrate::dkd::{DkdSettings, Scheme};
use metachron::simulate::RunConfig;

/// When the body's height is read (s).
const AT: f64 = 0.2;

/// 0.3 s of the fall, sampled every millisecond.
fn fall() -> RunConfig {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 0.3;
    cfg.params.apply_override("x_t=100").unwrap();
    cfg.metrics.dt_out = 1e-3;
    cfg.validate().unwrap();
    cfg
}

/// The body's X (along gravity) at [`AT`].
fn body_x(cfg: &RunConfig, engine: &Engine) -> f64 {
    let run = run_point(cfg, engine, true, |_| {}).unwrap();
    let s = run
        .samples
        .iter()
        .find(|s| (s.t - AT).abs() < 1e-9)
        .unwrap();
    s.body[0]
}

/// The error in the body's X at h = 5e-5 s, and the observed order log₂(e(2h)/e(h)).
fn error_and_order(scheme: Scheme, reference: f64) -> (f64, f64) {
    let error = |h: f64| {
        let mut c = fall();
        c.fixed_step = DkdSettings {
            scheme,
            h: Some(h),
            ..DkdSettings::default()
        };
        body_x(&c, &Engine::Cpu) - reference
    };
    let (coarse, fine) = (error(5e-5), error(2.5e-5));
    (coarse, (coarse / fine).abs().log2())
}

/// Measured 2026-12-08: `dkd-dc` −1.4e-5 m at order 1.00, `implicit-bending` +1.3e-8 m at
/// order 1.80 (1.00 and −1.3e-5 m before its drag and servo were centred).
#[test]
fn the_centred_kick_is_second_order_where_the_uncentred_one_is_first() {
    let reference = body_x(&fall(), &Engine::Reference);
    let (dkd_error, dkd_order) = error_and_order(Scheme::DkdDc, reference);
    let (error, order) = error_and_order(Scheme::ImplicitBending, reference);
    assert!(
        (0.8..1.2).contains(&dkd_order),
        "dkd-dc: order {dkd_order} (error {dkd_error:e} m)"
    );
    assert!(
        order > 1.6,
        "implicit-bending: order {order} (error {error:e} m)"
    );
    assert!(
        error.abs() * 100.0 < dkd_error.abs(),
        "implicit-bending's error {error:e} m against dkd-dc's {dkd_error:e} m"
    );
}
