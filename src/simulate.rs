//! One parameter point, end to end: validated run configuration, a backend, the
//! output samples and the metrics.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{ParamError, SettingsError, SolverError};
use crate::integrate::dkd::{self, DkdSettings};
use crate::metrics::{Metrics, MetricsAccumulator, MetricsSettings};
use crate::model::Robot;
use crate::params::Params;
use crate::reference::{run_reference, ReferenceSettings, SolverStats};
use crate::sample::{Sample, Status};

/// Which engine integrates a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The adaptive stiff f64 CPU solver (ground truth).
    Reference,
    /// The fixed-step DKD-dc scheme on the CPU (f64), the batch engines' readable twin.
    Cpu,
    /// The same scheme in WGSL compute shaders (wgpu), many instances per dispatch.
    Gpu,
}

impl Backend {
    pub fn label(&self) -> &'static str {
        match self {
            Backend::Reference => "reference",
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        }
    }
}

/// Everything that defines a run besides the backend.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    pub params: Params,
    pub solver: ReferenceSettings,
    pub metrics: MetricsSettings,
    /// Fixed-step scheme of the batch backends (`[fixed_step]` in config files).
    pub fixed_step: DkdSettings,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Param {
        path: String,
        #[source]
        source: ParamError,
    },
    #[error("{path}: {source}")]
    Setting {
        path: String,
        #[source]
        source: SettingsError,
    },
    #[error("{path}: {message}")]
    Toml { path: String, message: String },
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunConfig {
    /// Read a config file: parameters at the top level, optional `[solver]` and
    /// `[metrics]` tables. Unknown keys are errors naming the key.
    pub fn from_toml_file(path: &Path) -> Result<RunConfig, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: name.clone(),
            source,
        })?;
        Self::from_toml_str(&text, &name)
    }

    pub fn from_toml_str(text: &str, name: &str) -> Result<RunConfig, ConfigError> {
        let toml_err = |e: &dyn std::fmt::Display| ConfigError::Toml {
            path: name.to_string(),
            message: e.to_string(),
        };
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| toml_err(&e))?;
        let solver = match table.remove("solver") {
            Some(v) => v
                .try_into()
                .map_err(|e: toml::de::Error| toml_err(&format!("[solver]: {e}")))?,
            None => ReferenceSettings::default(),
        };
        let metrics = match table.remove("metrics") {
            Some(v) => v
                .try_into()
                .map_err(|e: toml::de::Error| toml_err(&format!("[metrics]: {e}")))?,
            None => MetricsSettings::default(),
        };
        let fixed_step = match table.remove("fixed_step") {
            Some(v) => v
                .try_into()
                .map_err(|e: toml::de::Error| toml_err(&format!("[fixed_step]: {e}")))?,
            None => DkdSettings::default(),
        };
        let params = Params::from_toml_table(table).map_err(|source| ConfigError::Param {
            path: name.to_string(),
            source,
        })?;
        Ok(RunConfig {
            params,
            solver,
            metrics,
            fixed_step,
        })
    }

    /// Check parameters and settings together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let here = |source| ConfigError::Param {
            path: "parameters".into(),
            source,
        };
        self.params.validate().map_err(here)?;
        let set = |source| ConfigError::Setting {
            path: "settings".into(),
            source,
        };
        self.solver.validate().map_err(set)?;
        self.metrics.validate(self.params.t_final).map_err(set)?;
        self.fixed_step.validate().map_err(set)?;
        Ok(())
    }

    /// Output sample times 0, dt, 2dt, ..., t_final.
    pub fn sample_times(&self) -> Vec<f64> {
        let t_final = self.params.t_final;
        (0..=self.metrics.sample_count(t_final))
            .map(|k| self.metrics.sample_time(k, t_final))
            .collect()
    }
}

/// Outcome of one point.
#[derive(Debug, Clone)]
pub struct PointResult {
    pub metrics: Metrics,
    pub stats: SolverStats,
    /// Output samples, kept only when asked for.
    pub samples: Vec<Sample>,
    pub wall_seconds: f64,
    /// The backend that produced it (gpu requests fall back to cpu without an adapter).
    pub backend: Backend,
}

/// Run one point on `backend`. `keep_samples` keeps the time series in memory;
/// `on_progress` receives the simulated time reached.
pub fn run_point(
    cfg: &RunConfig,
    backend: Backend,
    keep_samples: bool,
    on_progress: impl FnMut(f64),
) -> Result<PointResult, SolverError> {
    if backend == Backend::Gpu {
        // A batch of one through the batch entry (same CPU fallback without an adapter);
        // the device keeps no time series and reports no progress.
        return crate::batch::run_batch(std::slice::from_ref(cfg), Backend::Gpu)
            .pop()
            .unwrap_or_else(|| Err(SolverError::Gpu("no result".into())));
    }
    let start = std::time::Instant::now();
    let robot = Robot::new(&cfg.params);
    let mut acc = MetricsAccumulator::new(&cfg.params, &cfg.metrics);
    let mut samples = Vec::new();
    let mut status_override = None;
    let mut on_sample = |s: &Sample| {
        if !s.is_finite() && status_override.is_none() {
            status_override = Some(Status::Diverged { time: s.t });
        }
        acc.push(s);
        if keep_samples {
            samples.push(s.clone());
        }
    };
    let mut on_progress = on_progress;
    let (run_status, stats) = match backend {
        Backend::Reference => {
            let run = run_reference(
                &robot,
                &cfg.solver,
                &cfg.sample_times(),
                &mut on_sample,
                &mut on_progress,
            )?;
            (run.status, run.stats)
        }
        Backend::Gpu => unreachable!("gpu runs returned above"),
        Backend::Cpu => {
            let (status, st) = dkd::integrate(
                &robot,
                &cfg.fixed_step,
                &cfg.metrics,
                &mut on_sample,
                &mut on_progress,
            );
            let stats = SolverStats {
                steps: st.steps,
                fixed_step: st.h,
                ..SolverStats::default()
            };
            (status, stats)
        }
    };
    let status = status_override.unwrap_or(run_status);
    Ok(PointResult {
        metrics: acc.finish(status),
        stats,
        samples,
        wall_seconds: start.elapsed().as_secs_f64(),
        backend,
    })
}
