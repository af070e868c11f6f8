//! Many independent points at once: on the GPU (one dispatch chain per batch shape),
//! or on the CPU (rayon over instances), the fallback without a GPU and the tool for
//! checking a GPU batch instance by instance.

use rayon::prelude::*;

use crate::error::SolverError;
use crate::simulate::{run_point, Backend, PointResult, RunConfig};

/// Run every configuration on `backend`. One instance's divergence or failure is its
/// own row and never stops the others. `Backend::Gpu` without a usable adapter prints
/// why once and runs the CPU batch instead (each result records the backend used).
pub fn run_batch(cfgs: &[RunConfig], backend: Backend) -> Vec<Result<PointResult, SolverError>> {
    if backend == Backend::Gpu {
        match crate::gpu::shared_engine() {
            Ok(engine) => return crate::gpu::run_gpu_batch(engine, cfgs),
            Err(e) => warn_gpu_fallback(&e),
        }
        return run_cpu_batch(cfgs, Backend::Cpu);
    }
    run_cpu_batch(cfgs, backend)
}

fn run_cpu_batch(cfgs: &[RunConfig], backend: Backend) -> Vec<Result<PointResult, SolverError>> {
    match backend {
        Backend::Cpu => crate::cpu_engine::run_batch(cfgs),
        _ => cfgs
            .par_iter()
            .map(|cfg| run_point(cfg, backend, false, |_| {}))
            .collect(),
    }
}

fn warn_gpu_fallback(reason: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!("warning: GPU backend unavailable ({reason}); running the CPU batch instead");
    });
}
