//! The cost of a run, said before paying it: `simulate` and `sweep` estimate every
//! point from the step it will really take, print the estimate of a costly run, and
//! refuse a point above `--max-estimate` unless `--point-timeout` bounds it.

use anyhow::{bail, Result};
use clap::Args;

use metachron::cost::DEFAULT_POINT_LIMIT;
pub use metachron::cost::{describe, enforce};

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
