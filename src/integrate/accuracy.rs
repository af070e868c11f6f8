//! How closely a fixed-step run must follow the stiff reference: the batch engines'
//! promise on the validated metrics (docs/integrators.md), judged in one place for the
//! validation tests and for the step-rule study (`examples/step_rule.rs`).
//!
//! DKD-dc is first order in h (docs/integrators.md, "The observed order"); at its default
//! step the walking metrics of the paper's run are within ~1e-5 of the reference. The
//! promise: [`Tolerances::phase_abs`] on phase-like metrics (rad or unitless),
//! [`Tolerances::walk_rel`] relative on displacement, speed and work with a floor at robot
//! scale (0.3 m, 0.1 m/s, 1 J: a passive robot that barely moves must not be judged
//! relative to zero), 0.01 on the duty factor (contact flags switch on output samples),
//! and the inextensibility error within 5× of the reference's either way; status and
//! class the same.

use crate::metrics::Metrics;
use crate::vocabulary::{metric, CLASS, STATUS};

/// The tolerances that vary between kinds of points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    /// Relative error allowed on displacement, mean speed and work.
    pub walk_rel: f64,
    /// Absolute error allowed on the phase-like metrics.
    pub phase_abs: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            walk_rel: 2e-3,
            phase_abs: 1e-3,
        }
    }
}

/// Absolute error allowed on the duty factor.
pub const DUTY_ABS: f64 = 0.01;
/// The inextensibility error may differ from the reference's by this factor either way.
pub const INEXT_FACTOR: f64 = 5.0;

/// One validated metric of a fixed-step run against the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deviation {
    pub metric: &'static str,
    pub fast: f64,
    pub reference: f64,
    /// The error in units of its tolerance: within the promise at ≤ 1 (infinite when
    /// status or class differ, NaN when a value is NaN).
    pub ratio: f64,
}

impl Deviation {
    pub fn within(&self) -> bool {
        self.ratio <= 1.0
    }
}

/// Every validated metric of `fast` against `reference`, status and class first.
pub fn deviations(fast: &Metrics, reference: &Metrics, tol: Tolerances) -> Vec<Deviation> {
    let same = |a: bool| if a { 0.0 } else { f64::INFINITY };
    let mut out = vec![
        Deviation {
            metric: STATUS,
            fast: 0.0,
            reference: 0.0,
            ratio: same(fast.status == reference.status),
        },
        Deviation {
            metric: CLASS,
            fast: 0.0,
            reference: 0.0,
            ratio: same(fast.class == reference.class),
        },
    ];
    let mut judge = |name: &'static str, a: f64, b: f64, allowed: f64| {
        out.push(Deviation {
            metric: name,
            fast: a,
            reference: b,
            ratio: (a - b).abs() / allowed,
        })
    };
    let (f, r) = (fast, reference);
    for (name, a, b) in [
        (metric::lag_order, f.lag_order, r.lag_order),
        (metric::mean_lag, f.mean_lag, r.mean_lag),
        (metric::min_plv, f.min_plv, r.min_plv),
        (metric::kuramoto_r, f.kuramoto_r, r.kuramoto_r),
        (metric::mean_frequency, f.mean_frequency, r.mean_frequency),
    ] {
        judge(name, a, b, tol.phase_abs);
    }
    for (name, a, b, floor) in [
        (metric::displacement, f.displacement, r.displacement, 0.3),
        (metric::mean_speed, f.mean_speed, r.mean_speed, 0.1),
        (metric::work, f.work, r.work, 1.0),
    ] {
        judge(name, a, b, tol.walk_rel * b.abs().max(floor));
    }
    judge(metric::duty_factor, f.duty_factor, r.duty_factor, DUTY_ABS);
    let (a, b) = (f.max_inextensibility, r.max_inextensibility);
    let q = a / b;
    out.push(Deviation {
        metric: metric::max_inextensibility,
        fast: a,
        reference: b,
        ratio: q.max(1.0 / q) / INEXT_FACTOR,
    });
    out
}

/// The deviation furthest outside (or least inside) its tolerance; NaN counts as worst.
pub fn worst(fast: &Metrics, reference: &Metrics, tol: Tolerances) -> Deviation {
    deviations(fast, reference, tol)
        .into_iter()
        .max_by(|a, b| {
            let key = |d: &Deviation| {
                if d.ratio.is_nan() {
                    f64::INFINITY
                } else {
                    d.ratio
                }
            };
            key(a).total_cmp(&key(b))
        })
        .expect("deviations lists every validated metric")
}
