//! Many independent points at once on the CPU (rayon over instances): the fallback
//! without a GPU, and the tool for checking a GPU batch instance by instance.

use rayon::prelude::*;

use crate::error::SolverError;
use crate::simulate::{run_point, Backend, PointResult, RunConfig};

/// Run every configuration on `backend`, in parallel over instances. One instance's
/// divergence or failure is its own row and never stops the others.
pub fn run_batch(cfgs: &[RunConfig], backend: Backend) -> Vec<Result<PointResult, SolverError>> {
    cfgs.par_iter()
        .map(|cfg| run_point(cfg, backend, false, |_| {}))
        .collect()
}
