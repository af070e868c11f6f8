//! The run layer: the one place that picks the engine for a point or a batch.
//!
//! One point ([`run_point`]) or many ([`run_batch`]): on the GPU (one dispatch chain
//! per batch shape), on the CPU batch engine ([`run_cpu_batch`]), or on the reference
//! (rayon over points). One instance's divergence, failure or exhausted budget is its
//! own row and never stops the others. GPU faults degrade instead of losing work: a
//! batch the device cannot run is split and retried smaller, and what still fails runs
//! on the CPU engine with a notice; each result records the backend that produced it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::SolverError;
use crate::sample::Sample;
use crate::simulate::{blank_unless_ok, run_serial, Backend, PointResult, RunConfig, SerialEngine};

/// Run one point on `backend`. `keep_samples` keeps the time series in memory (it
/// grows with t_final / dt_out; stream with [`run_point_streaming`] instead);
/// `on_progress` receives the simulated time reached.
pub fn run_point(
    cfg: &RunConfig,
    backend: Backend,
    keep_samples: bool,
    mut on_progress: impl FnMut(f64),
) -> Result<PointResult, SolverError> {
    let mut samples = Vec::new();
    let mut keep = |s: &Sample| {
        if keep_samples {
            samples.push(s.clone());
        }
    };
    let mut r = run_point_streaming(cfg, backend, &mut keep, &mut on_progress)?;
    r.samples = samples;
    Ok(r)
}

/// Run one point on `backend`, handing every output sample to `on_sample` as it is
/// produced (the gpu backend keeps no time series: it calls `on_sample` never).
pub fn run_point_streaming(
    cfg: &RunConfig,
    backend: Backend,
    on_sample: &mut dyn FnMut(&Sample),
    on_progress: &mut dyn FnMut(f64),
) -> Result<PointResult, SolverError> {
    match backend {
        Backend::Reference => run_serial(cfg, SerialEngine::Reference, on_sample, on_progress),
        Backend::Cpu => run_serial(cfg, SerialEngine::Cpu, on_sample, on_progress),
        Backend::Gpu => run_batch(std::slice::from_ref(cfg), Backend::Gpu)
            .pop()
            .unwrap_or_else(|| Err(SolverError::gpu("the device returned no result"))),
    }
}

/// What runs points on `backend`: the GPU's name, type, driver and precision (or why
/// there is none), or the CPU thread count.
pub fn adapter_label(backend: Backend) -> String {
    if backend == Backend::Gpu {
        match crate::gpu::shared_context() {
            Ok(ctx) => format!(
                "gpu: {} ({}, {}, {})",
                ctx.adapter.name,
                ctx.adapter.device_type,
                ctx.adapter.driver,
                ctx.precision.label()
            ),
            Err(e) => format!("gpu unavailable ({e}): cpu fallback"),
        }
    } else {
        format!("cpu: rayon, {} threads", rayon::current_num_threads())
    }
}

/// Most instances of the shapes `(n_legs, n_nodes)` one GPU call runs (capped at
/// 16384, or 256 on a software adapter, so that progress and resume keep a useful
/// granularity); `None` without a GPU.
pub fn gpu_batch_limit(shapes: impl Iterator<Item = (usize, usize)>) -> Option<usize> {
    let (Ok(engine), Ok(ctx)) = (crate::gpu::shared_engine(), crate::gpu::shared_context()) else {
        return None;
    };
    let cap = if ctx.adapter.device_type == "Cpu" {
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

/// Set once the GPU has failed on a single point: the rest of the process runs on the
/// cpu engine (each row's `backend` says so).
static GPU_ABANDONED: AtomicBool = AtomicBool::new(false);

/// Run every configuration on `backend` (see the module notes for the GPU).
pub fn run_batch(cfgs: &[RunConfig], backend: Backend) -> Vec<Result<PointResult, SolverError>> {
    match backend {
        Backend::Gpu if GPU_ABANDONED.load(Ordering::Relaxed) => run_cpu_batch(cfgs, Backend::Cpu),
        Backend::Gpu => match crate::gpu::shared_engine() {
            Ok(engine) => run_degrading(
                cfgs,
                &mut |part| {
                    // A device fault that panics inside wgpu (validation, lost device)
                    // is a failure of this call, never of the sweep.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.run(part)))
                        .unwrap_or_else(|_| {
                            Err(crate::gpu::GpuError::Execution(
                                "the device failed (wgpu panicked)".into(),
                            ))
                        })
                        .map_err(|e| SolverError::Gpu(Arc::new(e)))
                },
                &mut |part| {
                    // A device that cannot run even one point is not asked again.
                    GPU_ABANDONED.store(true, Ordering::Relaxed);
                    run_cpu_batch(part, Backend::Cpu)
                },
            ),
            Err(reason) => {
                notice_once(&format!(
                    "GPU backend unavailable ({reason}); running the CPU batch instead"
                ));
                run_cpu_batch(cfgs, Backend::Cpu)
            }
        },
        Backend::Cpu => run_cpu_batch(cfgs, Backend::Cpu),
        Backend::Reference => cfgs
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
/// a single point the device still cannot run goes to `fallback` (with a notice).
/// Results come back in order; metrics of unfinished runs are NaN.
pub fn run_degrading(
    cfgs: &[RunConfig],
    device: &mut DeviceRunner,
    fallback: &mut FallbackRunner,
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
            notice_once(&format!(
                "the GPU returned {} results for {} points; running them on the cpu engine",
                results.len(),
                cfgs.len()
            ));
            fallback(cfgs)
        }
        Err(e) if cfgs.len() > 1 => {
            notice_once(&format!(
                "GPU batch of {} points failed ({e}); splitting it and retrying smaller",
                cfgs.len()
            ));
            let (a, b) = cfgs.split_at(cfgs.len() / 2);
            let mut out = run_degrading(a, device, fallback);
            out.extend(run_degrading(b, device, fallback));
            out
        }
        Err(e) => {
            notice_once(&format!(
                "the GPU cannot run a single point ({e}); running such points on the cpu engine"
            ));
            fallback(cfgs)
        }
    }
}

/// Where the engine's notices go (a GPU that is unavailable, or a batch that degrades to
/// the CPU engine): the library says what it has to say, its caller (the command line)
/// prints it. Without a sink the notices are kept for [`take_notices`].
static NOTICE_SINK: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();
static KEPT_NOTICES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Hand every later notice to `sink` as it happens (the first sink set stays).
pub fn set_notice_sink(sink: fn(&str)) {
    let _ = NOTICE_SINK.set(sink);
}

/// The notices given while no sink was set, oldest first (and forget them).
pub fn take_notices() -> Vec<String> {
    std::mem::take(&mut *KEPT_NOTICES.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Give a notice once per process (a sweep would repeat it for every chunk).
fn notice_once(message: &str) {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let key: String = message.chars().take(40).collect();
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if !seen.contains(&key) {
        match NOTICE_SINK.get() {
            Some(sink) => sink(message),
            None => KEPT_NOTICES
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(message.to_string()),
        }
        seen.push(key);
    }
}
