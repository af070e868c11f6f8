//! The gpu engine's rate on the adapter that runs, for the estimates of `sweep
//! --backend gpu`: a short probe (a batch of the paper's robot) measures the seconds one
//! robot-step takes in a batch and a batch's overhead, and the result is kept per adapter, kernel precision and
//! metachron version in the user's cache (`$XDG_CACHE_HOME/metachron/gpu-rates.toml`, else
//! `~/.cache/metachron/gpu-rates.toml`), so only the first estimate on an adapter pays it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::batch::{adapter_label, run_batch, Engine};
use crate::cost::Rates;
use crate::simulate::RunConfig;

/// Robots in the probe's batch and the horizon each runs to (s): 64 × 0.05 s of the
/// paper's robot, 13 440 robot-steps, about 0.4 s on lavapipe.
pub const PROBE_ROBOTS: usize = 64;
pub const PROBE_T_FINAL: f64 = 0.05;

/// What the probe measured on one adapter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GpuRate {
    /// Seconds per robot-step of the paper's robot in a batch (a robot of another size
    /// costs in proportion to legs × nodes, as [`Rates::batch_step`]).
    pub robot_step: f64,
    /// Seconds of a batch beyond its robot-steps (dispatch, read-back): a batch of one
    /// robot, less nothing.
    pub chunk: f64,
}

impl GpuRate {
    /// The rates an estimate of a gpu sweep uses: the measured robot-step in place of
    /// the CPU lane kernel's.
    pub fn rates(&self) -> Rates {
        Rates {
            batch_step: self.robot_step,
            ..crate::cost::MEASURED
        }
    }
}

/// Where a gpu rate came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    pub rate: GpuRate,
    /// The adapter label it was measured on.
    pub adapter: String,
    /// Read from the cache file (else measured now).
    pub cached: bool,
}

/// Why no rate could be measured (the estimate then says so and uses the CPU's).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("the probe batch failed on the adapter: {0}")]
    Run(String),
    #[error("the probe measured no time (clock resolution)")]
    NoTime,
}

/// The cache file, or `None` where neither XDG_CACHE_HOME (absolute) nor HOME is set.
pub fn cache_file() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let dir = env("XDG_CACHE_HOME")
        .filter(|d| d.is_absolute())
        .or_else(|| {
            env("HOME")
                .filter(|h| h.is_absolute())
                .map(|h| h.join(".cache"))
        })?;
    Some(dir.join("metachron").join("gpu-rates.toml"))
}

/// The cache's key of `engine`: its adapter label (name, type, driver, precision) and
/// this metachron's version (another version may run another kernel).
fn key(adapter: &str) -> String {
    format!("{adapter} | metachron {}", crate::VERSION)
}

fn read_cache(path: &Path) -> BTreeMap<String, GpuRate> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| toml::from_str(&t).ok())
        .unwrap_or_default()
}

/// The rate of `engine`'s gpu: from the cache `cache` when it holds this adapter's,
/// else measured now and added to it (a cache that cannot be written is left alone).
/// `None` when `engine` runs no gpu (or its gpu is unavailable: the sweep runs on the
/// CPU).
pub fn gpu_rate(engine: &Engine, cache: Option<&Path>) -> Option<Result<Probed, ProbeError>> {
    let gpu = engine.gpu()?;
    gpu.context().ok()?;
    let adapter = adapter_label(engine);
    let mut known = cache.map(read_cache).unwrap_or_default();
    if let Some(rate) = known.get(&key(&adapter)) {
        if rate.robot_step.is_finite() && rate.robot_step > 0.0 && rate.chunk.is_finite() {
            return Some(Ok(Probed {
                rate: *rate,
                adapter,
                cached: true,
            }));
        }
    }
    Some(probe(engine).map(|rate| {
        if let Some(path) = cache {
            known.insert(key(&adapter), rate);
            if let Ok(text) = toml::to_string(&known) {
                let written = path
                    .parent()
                    .map_or(Ok(()), crate::output_file::create_dir_all)
                    .and_then(|()| crate::output_file::write_bytes(path, text.as_bytes()));
                if let Err(e) = written {
                    eprintln!("warning: the gpu rate is not cached: {e}");
                }
            }
        }
        Probed {
            rate,
            adapter,
            cached: false,
        }
    }))
}

/// Run the probe on `engine`: one robot untimed (warming the device up), one robot
/// timed (a chunk's overhead), then the whole batch (its time per robot-step the rate).
pub fn probe(engine: &Engine) -> Result<GpuRate, ProbeError> {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = PROBE_T_FINAL;
    let cfgs = vec![cfg; PROBE_ROBOTS];
    // Robot-steps of the paper's robot in one probe robot: the estimate at one second
    // per robot-step.
    let unit = Rates {
        batch_step: 1.0,
        ..crate::cost::MEASURED
    };
    let work = crate::cost::estimate(
        &cfgs[0],
        crate::simulate::Backend::Gpu,
        crate::cost::Mode::Batch,
        &unit,
    )
    .map_err(|e| ProbeError::Run(e.to_string()))?
    .seconds;
    let timed = |cfgs: &[RunConfig]| {
        let start = Instant::now();
        for r in run_batch(cfgs, engine) {
            r.map_err(|e| ProbeError::Run(e.to_string()))?;
        }
        Ok::<f64, ProbeError>(start.elapsed().as_secs_f64())
    };
    // The first batch on a device pays once for what a sweep's chunks do not (the
    // pipeline's first compilation on some drivers): run it, untimed.
    timed(&cfgs[..1])?;
    let one = timed(&cfgs[..1])?;
    let all = timed(&cfgs)?;
    if all <= 0.0 {
        return Err(ProbeError::NoTime);
    }
    Ok(GpuRate {
        robot_step: all / (work * PROBE_ROBOTS as f64),
        chunk: one.min(all),
    })
}
