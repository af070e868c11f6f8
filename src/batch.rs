//! The run layer: the one place that picks the engine for a point or a batch.
//!
//! One point ([`run_point`]) or many ([`run_batch`]): on the GPU (one dispatch chain
//! per batch shape), on the CPU batch engine ([`run_cpu_batch`]), or on the reference
//! (rayon over points). One instance's divergence, failure or exhausted budget is its
//! own row and never stops the others. GPU faults degrade instead of losing work: a
//! batch the device cannot run is split and retried smaller, and what still fails runs
//! on the CPU engine with a notice; each result records the backend that produced it.
//! The GPU is the caller's [`Gpu`] handle, named by [`Engine::Gpu`]: nothing here
//! reaches for a device of its own.

use std::sync::Arc;

use rayon::prelude::*;

use crate::error::SolverError;
use crate::gpu::Gpu;
use crate::sample::Sample;
use crate::simulate::{blank_unless_ok, run_serial, Backend, PointResult, RunConfig, SerialEngine};

/// What runs points: the reference, the CPU batch engine, or the GPU of a handle (which
/// keeps its options, its device once opened, and its notices).
#[derive(Debug, Clone)]
pub enum Engine {
    Reference,
    Cpu,
    Gpu(Arc<Gpu>),
}

impl Engine {
    /// The engine for `backend`, on `gpu` where that is the GPU.
    pub fn new(backend: Backend, gpu: &Arc<Gpu>) -> Engine {
        match backend {
            Backend::Reference => Engine::Reference,
            Backend::Cpu => Engine::Cpu,
            Backend::Gpu => Engine::Gpu(Arc::clone(gpu)),
        }
    }

    /// The backend this engine is (what a result that did not degrade records).
    pub fn backend(&self) -> Backend {
        match self {
            Engine::Reference => Backend::Reference,
            Engine::Cpu => Backend::Cpu,
            Engine::Gpu(_) => Backend::Gpu,
        }
    }

    /// The engine that produced a result reporting `backend`: this one, or the CPU
    /// batch engine a GPU batch fell back to.
    pub fn as_ran(&self, backend: Backend) -> Engine {
        match backend {
            Backend::Reference => Engine::Reference,
            Backend::Cpu => Engine::Cpu,
            Backend::Gpu => self.clone(),
        }
    }

    /// The GPU handle, where this engine is the GPU.
    pub fn gpu(&self) -> Option<&Gpu> {
        match self {
            Engine::Gpu(gpu) => Some(gpu),
            _ => None,
        }
    }
}

/// Run one point on `engine`. `keep_samples` keeps the time series in memory (it
/// grows with t_final / dt_out; stream with [`run_point_streaming`] instead);
/// `on_progress` receives the simulated time reached.
pub fn run_point(
    cfg: &RunConfig,
    engine: &Engine,
    keep_samples: bool,
    mut on_progress: impl FnMut(f64),
) -> Result<PointResult, SolverError> {
    let mut samples = Vec::new();
    let mut keep = |s: &Sample| {
        if keep_samples {
            samples.push(s.clone());
        }
    };
    let mut r = run_point_streaming(cfg, engine, &mut keep, &mut on_progress)?;
    r.samples = samples;
    Ok(r)
}

/// Run one point on `engine`, handing every output sample to `on_sample` as it is
/// produced (the gpu backend keeps no time series: it calls `on_sample` never).
pub fn run_point_streaming(
    cfg: &RunConfig,
    engine: &Engine,
    on_sample: &mut dyn FnMut(&Sample),
    on_progress: &mut dyn FnMut(f64),
) -> Result<PointResult, SolverError> {
    match engine {
        Engine::Reference => run_serial(cfg, SerialEngine::Reference, on_sample, on_progress),
        Engine::Cpu => run_serial(cfg, SerialEngine::Cpu, on_sample, on_progress),
        Engine::Gpu(_) => run_batch(std::slice::from_ref(cfg), engine)
            .pop()
            .unwrap_or_else(|| Err(SolverError::gpu("the device returned no result"))),
    }
}

/// What runs points on `engine`: the GPU's name, type, driver and precision (or why
/// there is none), or the CPU thread count.
pub fn adapter_label(engine: &Engine) -> String {
    match engine.gpu().map(Gpu::context) {
        Some(Ok(ctx)) => format!(
            "gpu: {} ({}, {}, {})",
            ctx.adapter.name,
            ctx.adapter.device_type,
            ctx.adapter.driver,
            ctx.precision.label()
        ),
        Some(Err(e)) => format!("gpu unavailable ({e}): cpu fallback"),
        None => format!("cpu: rayon, {} threads", rayon::current_num_threads()),
    }
}

/// Most instances of the shapes `(n_legs, n_nodes)` one call on `gpu` runs (capped at
/// 16384, or 256 on a software adapter, so that progress and resume keep a useful
/// granularity); `None` without a GPU.
pub fn gpu_batch_limit(gpu: &Gpu, shapes: impl Iterator<Item = (usize, usize)>) -> Option<usize> {
    let engine = gpu.engine().ok()?;
    let cap = if engine.ctx.adapter.device_type == "Cpu" {
        256
    } else {
        16384
    };
    Some(
        shapes
            .map(|(legs, nodes)| engine.max_batch(legs, nodes))
            .fold(cap, usize::min)
            .max(1),
    )
}

/// Run every configuration on `engine` (see the module notes for the GPU).
pub fn run_batch(cfgs: &[RunConfig], engine: &Engine) -> Vec<Result<PointResult, SolverError>> {
    match engine {
        Engine::Gpu(gpu) if gpu.abandoned() => run_cpu_batch(cfgs, Backend::Cpu),
        Engine::Gpu(gpu) => match gpu.engine() {
            Ok(device) => run_degrading(
                cfgs,
                &mut |part| {
                    // A device fault that panics inside wgpu (validation, lost device)
                    // is a failure of this call, never of the sweep.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device.run(part)))
                        .unwrap_or_else(|_| {
                            Err(crate::gpu::GpuError::Execution(
                                "the device failed (wgpu panicked)".into(),
                            ))
                        })
                        .map_err(|e| SolverError::Gpu(Arc::new(e)))
                },
                &mut |part| {
                    // A device that cannot run even one point is not asked again.
                    gpu.abandon();
                    run_cpu_batch(part, Backend::Cpu)
                },
                &|m| gpu.notice(m),
            ),
            Err(reason) => {
                gpu.notice(&format!(
                    "GPU backend unavailable ({reason}); running the CPU batch instead"
                ));
                run_cpu_batch(cfgs, Backend::Cpu)
            }
        },
        Engine::Cpu => run_cpu_batch(cfgs, Backend::Cpu),
        Engine::Reference => cfgs
            .par_iter()
            .map(|cfg| run_serial(cfg, SerialEngine::Reference, &mut |_| {}, &mut |_| {}))
            .collect(),
    }
}

/// The CPU batch engine (fixed-step DKD-dc, f64, SIMD lanes), one result per
/// configuration in order. Each point's `point_timeout` counts from its block's start.
pub fn run_cpu_batch(
    cfgs: &[RunConfig],
    _backend: Backend,
) -> Vec<Result<PointResult, SolverError>> {
    crate::cpu_engine::run_batch(cfgs)
}

/// Runs a whole batch on a device, or fails as a whole.
pub type DeviceRunner<'a> = dyn FnMut(&[RunConfig]) -> Result<Vec<PointResult>, SolverError> + 'a;
/// Runs points elsewhere, one result each.
pub type FallbackRunner<'a> = dyn FnMut(&[RunConfig]) -> Vec<Result<PointResult, SolverError>> + 'a;

/// Run `cfgs` on a device runner; a failing call is split in halves and retried, and
/// a single point the device still cannot run goes to `fallback`; `notice` hears of
/// each of these. Results come back in order; metrics of unfinished runs are NaN.
pub fn run_degrading(
    cfgs: &[RunConfig],
    device: &mut DeviceRunner,
    fallback: &mut FallbackRunner,
    notice: &dyn Fn(&str),
) -> Vec<Result<PointResult, SolverError>> {
    if cfgs.is_empty() {
        return Vec::new();
    }
    match device(cfgs) {
        Ok(results) if results.len() == cfgs.len() => results
            .into_iter()
            .map(|mut r| {
                r.metrics = blank_unless_ok(r.metrics);
                Ok(r)
            })
            .collect(),
        Ok(results) => {
            notice(&format!(
                "the GPU returned {} results for {} points; running them on the cpu engine",
                results.len(),
                cfgs.len()
            ));
            fallback(cfgs)
        }
        Err(e) if cfgs.len() > 1 => {
            notice(&format!(
                "GPU batch of {} points failed ({e}); splitting it and retrying smaller",
                cfgs.len()
            ));
            let (a, b) = cfgs.split_at(cfgs.len() / 2);
            let mut out = run_degrading(a, device, fallback, notice);
            out.extend(run_degrading(b, device, fallback, notice));
            out
        }
        Err(e) => {
            notice(&format!(
                "the GPU cannot run a single point ({e}); running such points on the cpu engine"
            ));
            fallback(cfgs)
        }
    }
}
