//! One parameter point, end to end: validated run configuration, a backend, the
//! output samples and the metrics.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{ParamError, SettingsError, SolverError};
use crate::input_keys::{closest, default_fields, UnknownKey};
use crate::integrate::continuation::{Continuation, ReferenceCannotContinue};
use crate::integrate::dkd::{self, DkdSettings};
use crate::integrate::settings::{ReferenceSettings, SolverStats};
use crate::metrics::{Metrics, MetricsAccumulator, MetricsSettings};
use crate::model::Robot;
use crate::params::{is_param, param_names, Params};
use crate::reference::run_reference;
use crate::sample::{Deadline, Sample, SampleTimes, Status};

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

    /// Whether runs on this backend can continue from their kept state
    /// (`--until-settled`): the cpu and gpu engines can, the reference cannot.
    pub fn continues(self) -> Result<(), ReferenceCannotContinue> {
        match self {
            Backend::Reference => Err(ReferenceCannotContinue),
            Backend::Cpu | Backend::Gpu => Ok(()),
        }
    }
}

/// File metadata key of the scheme that ran (`dkd-dc` or the reference's method).
pub const META_SCHEME: &str = "metachron.scheme";
/// File metadata key of the fixed step's settings (cpu and gpu engines), as TOML.
pub const META_FIXED_STEP: &str = "metachron.fixed_step";
/// File metadata key of the reference's method and tolerances, as TOML.
pub const META_SOLVER: &str = "metachron.solver";

/// File metadata naming the scheme that ran on `backend` and its settings: the fixed
/// step's ([`META_FIXED_STEP`]) for the cpu and gpu engines, the ESDIRK method and
/// tolerances ([`META_SOLVER`]) for the reference; never the other's.
pub fn scheme_metadata(cfg: &RunConfig, backend: Backend) -> Vec<(String, String)> {
    match backend {
        Backend::Reference => vec![
            (META_SCHEME.into(), scheme_name(cfg, backend)),
            (
                META_SOLVER.into(),
                toml::to_string(&cfg.solver).unwrap_or_default(),
            ),
        ],
        Backend::Cpu | Backend::Gpu => vec![
            (META_SCHEME.into(), scheme_name(cfg, backend)),
            (
                META_FIXED_STEP.into(),
                toml::to_string(&cfg.fixed_step.resolved()).unwrap_or_default(),
            ),
        ],
    }
}

/// The scheme a backend runs: the reference's method (`esdirk34`, ...) or the batch
/// engines' `[fixed_step] scheme` (`dkd-dc`, `implicit-bending`).
pub fn scheme_name(cfg: &RunConfig, backend: Backend) -> String {
    if backend == Backend::Reference {
        toml::Value::try_from(cfg.solver.method)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "reference".into())
    } else {
        cfg.fixed_step.scheme.name().into()
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
    /// Wall-time budget of one point in seconds (`--point-timeout`; not a config-file
    /// key). Counted from the moment the point starts on its engine; past it the point
    /// ends as `budget_exceeded` and the rest of its chunk goes on.
    #[serde(skip)]
    pub point_timeout: Option<f64>,
    /// `--until-settled MAX_T` (`until_settled` in a sweep file): continue a run that is
    /// not settled at t_final from its kept state, in steps of t_final up to this
    /// horizon (s); see `integrate::continuation`. The cpu and gpu engines honour it.
    #[serde(skip)]
    pub until_settled: Option<f64>,
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
    /// A key no settings table takes, with the closest one that it does.
    #[error("{path}: {source}")]
    UnknownKey {
        path: String,
        #[source]
        source: Box<UnknownKey>,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl ConfigError {
    /// The message without the place it names first (for a caller that names it).
    pub fn detail(&self) -> String {
        match self {
            ConfigError::Param { source, .. } => source.to_string(),
            ConfigError::Setting { source, .. } => source.to_string(),
            ConfigError::Toml { message, .. } => message.clone(),
            ConfigError::UnknownKey { source, .. } => source.to_string(),
            ConfigError::Io { source, .. } => format!("cannot read: {source}"),
        }
    }
}

/// The settings tables of a config file (every other top-level key is a parameter).
pub const SETTINGS_TABLES: [&str; 3] = ["solver", "metrics", "fixed_step"];

/// Take the settings table `key` out of a config file's `table` and read it (its
/// defaults when absent): its keys checked against the settings' fields first, so that
/// an unknown one is refused with the closest known one.
fn settings_table<T: DeserializeOwned + Serialize + Default>(
    table: &mut toml::Table,
    key: &str,
    path: &str,
) -> Result<T, ConfigError> {
    let toml_err = |message: String| ConfigError::Toml {
        path: path.to_string(),
        message: format!("[{key}]: {message}"),
    };
    let t = match table.remove(key) {
        Some(toml::Value::Table(t)) => t,
        Some(other) => {
            return Err(toml_err(format!(
                "expected a table, got {}",
                other.type_str()
            )))
        }
        None => return Ok(T::default()),
    };
    let allowed = default_fields::<T>();
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    UnknownKey::check(t.keys(), &format!("in [{key}]"), &allowed).map_err(|source| {
        ConfigError::UnknownKey {
            path: path.to_string(),
            source: Box::new(source),
        }
    })?;
    toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| toml_err(e.to_string().trim_end().replace('\n', " ")))
}

impl RunConfig {
    /// What the continuation rule (`integrate::continuation`) reads of this run.
    pub fn continuation(&self) -> Continuation<'_> {
        Continuation {
            max_t: self.until_settled,
            t_final: self.params.t_final,
            metrics: &self.metrics,
        }
    }

    /// Read a config file: parameters at the top level, optional `[solver]` and
    /// `[metrics]` tables. Unknown keys are errors naming the key.
    pub fn from_toml_file(path: &Path) -> Result<RunConfig, ConfigError> {
        let name = path.display().to_string();
        let text = crate::input_file::read_limited(path).map_err(|source| ConfigError::Io {
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
        // A sweep file given as a config: say so instead of failing on its first table.
        if let Some(k) = ["base", "axes"]
            .into_iter()
            .find(|k| table.contains_key(*k))
        {
            return Err(toml_err(&format!(
                "`{k}` belongs in a sweep file (run it with `metachron sweep FILE`); a config \
                 file holds parameters at the top level and optional [solver], [metrics] and \
                 [fixed_step] tables"
            )));
        }
        let solver = settings_table(&mut table, "solver", name)?;
        let metrics = settings_table(&mut table, "metrics", name)?;
        let fixed_step = settings_table(&mut table, "fixed_step", name)?;
        if let Some(k) = table.keys().find(|k| !is_param(k)) {
            return Err(ConfigError::Param {
                path: name.to_string(),
                source: ParamError::UnknownKey {
                    name: k.clone(),
                    suggestions: closest(k, param_names().chain(SETTINGS_TABLES)),
                },
            });
        }
        let params = Params::from_toml_table(table).map_err(|source| ConfigError::Param {
            path: name.to_string(),
            source,
        })?;
        Ok(RunConfig {
            params,
            solver,
            metrics,
            fixed_step,
            point_timeout: None,
            until_settled: None,
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
        if let Some(s) = self.point_timeout {
            if !(s.is_finite() && s > 0.0) {
                return Err(set(SettingsError::OutOfRange {
                    field: "--point-timeout".into(),
                    value: s,
                    allowed: "a finite number of seconds > 0".into(),
                }));
            }
        }
        if let Some(max_t) = self.until_settled {
            crate::integrate::continuation::validate(
                max_t,
                self.params.t_final,
                self.metrics.dt_out,
            )
            .map_err(set)?;
        }
        Ok(())
    }

    /// Output sample times 0, dt, 2dt, ..., t_final (computed on demand).
    pub fn sample_times(&self) -> SampleTimes {
        self.metrics.sample_times(self.params.t_final)
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

/// The engines that integrate one point on the calling thread. Which one runs a point
/// is decided by the run layer ([`crate::batch`]), never here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerialEngine {
    Reference,
    Cpu,
}

impl SerialEngine {
    pub fn backend(self) -> Backend {
        match self {
            SerialEngine::Reference => Backend::Reference,
            SerialEngine::Cpu => Backend::Cpu,
        }
    }
}

/// Metrics of a run that did not finish are not results: NaN everywhere (the status,
/// its time and the class say what happened).
pub fn blank_unless_ok(mut m: Metrics) -> Metrics {
    if m.status.is_ok() {
        return m;
    }
    // The horizon actually run is where it stopped.
    m.t_run = m.status.time();
    let nan = f64::NAN;
    for (name, x) in m.scalars_mut() {
        if name != crate::vocabulary::metric::t_run {
            *x = nan;
        }
    }
    for list in [&mut m.pair_plv, &mut m.pair_lag, &mut m.leg_frequency] {
        list.iter_mut().for_each(|x| *x = nan);
    }
    m
}

/// One serial run's accumulator and the caller's callbacks; the cpu engine's run
/// continues from its state while `--until-settled` asks for it.
struct SerialSink<'a> {
    cfg: &'a RunConfig,
    acc: MetricsAccumulator,
    /// A non-finite sample seen by the accumulator (the engine may not flag it).
    status_override: Option<Status>,
    on_sample: &'a mut dyn FnMut(&Sample),
    on_progress: &'a mut dyn FnMut(f64),
}

impl SerialSink<'_> {
    fn fold(
        acc: &mut MetricsAccumulator,
        status_override: &mut Option<Status>,
        on_sample: &mut dyn FnMut(&Sample),
        s: &Sample,
    ) {
        if !s.is_finite() && status_override.is_none() {
            *status_override = Some(Status::Diverged { time: s.t });
        }
        acc.push(s);
        on_sample(s);
    }
}

impl crate::integrate::lanes::LaneSink for SerialSink<'_> {
    fn sample(&mut self, _lane: usize, s: &Sample) {
        Self::fold(
            &mut self.acc,
            &mut self.status_override,
            &mut *self.on_sample,
            s,
        );
    }
    fn extend(
        &mut self,
        _lane: usize,
        ended: &crate::integrate::schedule::SampleSchedule,
    ) -> Option<crate::integrate::schedule::SampleSchedule> {
        crate::integrate::continuation::continue_run(&mut self.acc, self.cfg.continuation(), ended)
    }
    fn progress(&mut self, t: f64) {
        (self.on_progress)(t)
    }
}

/// Integrate one point on `engine`, streaming every output sample to `on_sample`
/// (nothing is kept: memory does not grow with t_final) and the simulated time
/// reached to `on_progress`. The point's wall-time budget starts now.
pub fn run_serial(
    cfg: &RunConfig,
    engine: SerialEngine,
    on_sample: &mut dyn FnMut(&Sample),
    on_progress: &mut dyn FnMut(f64),
) -> Result<PointResult, SolverError> {
    let start = std::time::Instant::now();
    let deadline = Deadline::after(cfg.point_timeout);
    let robot = Robot::new(&cfg.params);
    let mut sink = SerialSink {
        cfg,
        acc: MetricsAccumulator::new(&cfg.params, &cfg.metrics),
        status_override: None,
        on_sample,
        on_progress,
    };
    let (run_status, stats) = match engine {
        SerialEngine::Reference => {
            if let Some(max_t) = cfg.until_settled {
                return Err(SolverError::Unsupported {
                    what: format!("--until-settled {max_t} (continuing a run from its kept state)"),
                    backend: Backend::Reference.label().into(),
                });
            }
            let SerialSink {
                acc,
                status_override,
                on_sample,
                on_progress,
                ..
            } = &mut sink;
            let run = run_reference(
                &robot,
                &cfg.solver,
                &cfg.sample_times(),
                deadline,
                &mut |s: &Sample| SerialSink::fold(acc, status_override, &mut **on_sample, s),
                &mut **on_progress,
            )?;
            (run.status, run.stats)
        }
        SerialEngine::Cpu => {
            let (status, st) =
                dkd::integrate(&robot, &cfg.fixed_step, &cfg.metrics, deadline, &mut sink);
            let stats = SolverStats {
                steps: st.steps,
                fixed_step: st.h,
                ..SolverStats::default()
            };
            (status, stats)
        }
    };
    let (acc, status_override) = (sink.acc, sink.status_override);
    let status = status_override.unwrap_or(run_status);
    Ok(PointResult {
        metrics: blank_unless_ok(acc.finish(status)),
        stats,
        samples: Vec::new(),
        wall_seconds: start.elapsed().as_secs_f64(),
        backend: engine.backend(),
    })
}
