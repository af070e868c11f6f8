//! The cost of a run, said before paying it: `simulate` and `sweep` estimate every
//! point from the step it will really take, print the estimate of a costly run, and
//! refuse a point above `--max-estimate` unless `--point-timeout` bounds it.

use anyhow::{bail, Result};
use clap::Args;

use metachron::cost::{human, Estimate, DEFAULT_POINT_LIMIT};

/// Estimates above this many seconds are printed before the run starts.
pub const SHOW_ABOVE: f64 = 30.0;

#[derive(Args, Debug, Clone)]
pub struct EstimateArgs {
    /// Refuse to start a point whose estimated wall time on one thread is above SECONDS
    /// (default: one hour at the rates measured on the development machine,
    /// docs/benchmarks.md); `inf` lifts the limit. A point bounded by --point-timeout
    /// (at most SECONDS) runs anyway.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_POINT_LIMIT)]
    pub max_estimate: f64,
}

impl EstimateArgs {
    /// The limit, checked.
    pub fn limit(&self) -> Result<f64> {
        let x = self.max_estimate;
        if x.is_nan() || x <= 0.0 {
            bail!("--max-estimate {x}: allowed is a number of seconds > 0 (or inf)");
        }
        Ok(x)
    }
}

/// What one point will do, in words: "~2.1 h (3.0e10 steps of 1.2e-10 s to t = 3 s)".
pub fn describe(e: &Estimate) -> String {
    match e.h {
        Some(h) => format!(
            "~{} ({:.3e} steps of {h:.3e} s to t = {} s)",
            human(e.seconds),
            e.steps,
            e.horizon
        ),
        None => format!(
            "~{} (the reference to t = {} s, ~{:.3e} steps, at most its max_steps)",
            human(e.seconds),
            e.horizon,
            e.steps
        ),
    }
}

/// Refuse `e` when it is over `limit` and no `point_timeout` at most `limit` bounds it.
/// `what` names the point ("the run", "point 17 (k_m = 1e12)").
pub fn enforce(what: &str, e: &Estimate, limit: f64, point_timeout: Option<f64>) -> Result<()> {
    if e.seconds <= limit || point_timeout.is_some_and(|t| t <= limit) {
        return Ok(());
    }
    bail!(
        "{what} would take {} on one thread at this machine's measured rate, above the \
         limit of {} (--max-estimate {limit}): raise it (--max-estimate {:.0}, or inf) to run \
         it anyway, bound it with --point-timeout SECONDS, or shorten it (t_final, the step's \
         parameters){}",
        describe(e),
        human(limit),
        (e.seconds * 1.5).ceil(),
        step_hint(e)
    )
}

/// Why a fixed step is small, when it is.
fn step_hint(e: &Estimate) -> String {
    match e.h {
        Some(h) if h < 1e-6 => format!(
            "; the step {h:.3e} s follows the leg's top bending frequency (k_m, rho, \
             leg_length, n_nodes) or [fixed_step] h"
        ),
        _ => String::new(),
    }
}
