//! Running one row of a sweep dataset again: the parameters come from the row's own
//! columns, the settings (fixed step, reference solver, metrics window and thresholds,
//! `until_settled`) from the sweep file recorded in the dataset, the engine from the
//! row's `backend`. On the engine that wrote the row the replay reproduces its metrics
//! bit for bit (the engines are deterministic and a cpu point's result does not depend
//! on the points beside it in a block), so a row can be looked at again (time series,
//! pictures, animation) without copying its parameters by hand.

use crate::dataset::schema::{
    COL_BACKEND, COL_CLASS, COL_COMBO, COL_POINT_ID, COL_REPEAT, COL_STATUS, COL_T_RUN,
};
use crate::dataset::schema::{META_ADAPTER, META_SWEEP};
use crate::dataset::{Column, Rows};
use crate::gpu::Precision;
use crate::metrics::{Metrics, METRIC_COLUMNS};
use crate::params::{Params, ACTUATED, CHOICE_PARAMS, LIST_PARAMS, SCALAR_PARAMS};
use crate::simulate::{Backend, RunConfig};
use crate::sweep::{SweepError, SweepSpec};

/// Which row: by point id, or by combination and repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSelector {
    Point(u64),
    Combo { combo: u64, repeat: u32 },
}

/// A row ready to run again.
#[derive(Debug, Clone)]
pub struct Replay {
    pub cfg: RunConfig,
    /// The engine the replay runs on.
    pub backend: Backend,
    /// The engine that wrote the row (`gpu` rows replay on the cpu twin).
    pub recorded_backend: String,
    pub point_id: u64,
    pub combo: u64,
    pub repeat: u32,
    pub sweep_name: String,
    /// The row's metrics in [`METRIC_COLUMNS`] order, its status and class.
    pub recorded: Vec<f64>,
    pub recorded_status: String,
    pub recorded_class: String,
    /// What differs from the run that wrote the row, said before it runs.
    pub notes: Vec<String>,
    /// How close the replay promises to come to the row.
    pub tolerance: Tolerance,
}

/// How close a replay's metrics come to its row's, by the engine and precision that
/// wrote the row (docs/replay-and-report.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tolerance {
    /// The engine that wrote the row: every metric, the status and the class equal bit
    /// for bit (NaN equals NaN).
    Exact,
    /// A gpu row on the cpu engine, its twin: the status and class equal, the metrics
    /// within the kernel's bounds ([`Tolerance::allowed`]).
    Twin(Precision),
    /// Another engine than the row's (`--backend`): the schemes agree to their
    /// accuracy, not to a bound a verdict can hold them to.
    Unbounded,
}

/// Agreement of the gpu engine's f64 kernel with its cpu twin, every metric, as a
/// fraction of max(|value|, 1): the same scheme and step in f64, differing in the
/// order of sums (measured ≤ 2e-11 on lavapipe; docs/gpu.md).
pub const GPU_F64_TOLERANCE: f64 = 1e-9;

/// What the gpu engine's compensated f32 kernel promises against f64: displacement
/// within this fraction of max(|value|, 0.1 m). Its validation target is 1e-3
/// (docs/gpu.md, "Agreement with f64"), which most points meet; measured misses reach
/// 6.5e-3 (two points of the 8 x 8 map, neighbours nearly in antiphase)...
pub const GPU_F32_DISPLACEMENT: (f64, f64) = (1e-2, 0.1);

/// ... and the mean lag within this many radians (measured ≤ 1.7e-4). Its other
/// metrics follow the f32 trajectory (a leg's work, the duty factor's sample count) and
/// are held to no bound.
pub const GPU_F32_MEAN_LAG: f64 = 1e-3;

impl Tolerance {
    /// The promise of a row written by `backend` (adapter label `adapter`) replayed on
    /// `replayed`.
    pub fn of_row(backend: &str, adapter: &str, replayed: Backend) -> Tolerance {
        match (backend, replayed) {
            ("reference", Backend::Reference) | ("cpu", Backend::Cpu) => Tolerance::Exact,
            // f32, or an adapter label that does not say: the wider promise.
            ("gpu", Backend::Cpu) => {
                Tolerance::Twin(recorded_precision(adapter).unwrap_or(Precision::F32))
            }
            _ => Tolerance::Unbounded,
        }
    }

    /// The largest difference from the row's value `row` that metric `name` may show;
    /// `None` where none is promised.
    pub fn allowed(&self, name: &str, row: f64) -> Option<f64> {
        use crate::vocabulary::metric;
        match self {
            Tolerance::Exact => Some(0.0),
            Tolerance::Twin(Precision::F64) => Some(GPU_F64_TOLERANCE * row.abs().max(1.0)),
            Tolerance::Twin(Precision::F32) => match name {
                n if n == metric::displacement => {
                    let (fraction, floor) = GPU_F32_DISPLACEMENT;
                    Some(fraction * row.abs().max(floor))
                }
                n if n == metric::mean_lag => Some(GPU_F32_MEAN_LAG),
                _ => None,
            },
            Tolerance::Unbounded => None,
        }
    }

    /// The promise in words.
    pub fn describe(&self) -> String {
        match self {
            Tolerance::Exact => {
                "the engine that wrote the row: every metric equal bit for bit".into()
            }
            Tolerance::Twin(Precision::F64) => format!(
                "the gpu f64 kernel against its cpu twin: every metric within \
                 {GPU_F64_TOLERANCE:e} x max(|row|, 1), the same status and class"
            ),
            Tolerance::Twin(Precision::F32) => format!(
                "the gpu f32 kernel against f64: displacement within {:e} x max(|row|, {} m), \
                 mean lag within {GPU_F32_MEAN_LAG:e} rad, the same status and class; other \
                 metrics are not bounded",
                GPU_F32_DISPLACEMENT.0, GPU_F32_DISPLACEMENT.1
            ),
            Tolerance::Unbounded => {
                "another engine than the row's (--backend): no bound promised".into()
            }
        }
    }
}

/// The kernel precision in an adapter label written by [`crate::batch::adapter_label`]
/// (`gpu: NAME (TYPE, DRIVER, f32)`).
fn recorded_precision(adapter: &str) -> Option<Precision> {
    let last = adapter.trim_end().strip_suffix(')')?.rsplit(',').next()?;
    match last.trim() {
        "f64" => Some(Precision::F64),
        "f32" => Some(Precision::F32),
        _ => None,
    }
}

/// A replay's metric set against its row: the difference, that difference as a
/// fraction of max(|row|, 1), and the largest difference the tolerance allows.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricGap {
    pub name: &'static str,
    pub recorded: f64,
    pub replayed: f64,
    pub absolute: f64,
    pub scaled: f64,
    /// `None`: the tolerance holds this metric to no bound.
    pub allowed: Option<f64>,
}

impl MetricGap {
    /// Beyond what the tolerance allows (`absolute` is never NaN: a NaN on one side
    /// only is an infinite gap).
    pub fn outside(&self) -> bool {
        self.allowed.is_some_and(|a| self.absolute > a)
    }
}

/// A replay held to its row's [`Tolerance`].
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub tolerance: Tolerance,
    /// Every metric whose value differs (NaN on one side only: an infinite gap).
    pub gaps: Vec<MetricGap>,
    /// The status or class, where they differ: (name, row's, replay's).
    pub labels: Vec<(String, String, String)>,
    /// Within the tolerance; `None` where none is promised.
    pub within: Option<bool>,
}

impl Verdict {
    /// The metric with the largest scaled gap.
    pub fn largest(&self) -> Option<&MetricGap> {
        self.gaps
            .iter()
            .max_by(|a, b| a.scaled.total_cmp(&b.scaled))
    }
}

/// One metric (or the status, or the class) of a replay set against its row.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub name: String,
    pub recorded: String,
    pub replayed: String,
    /// |replayed − recorded| / max(|recorded|, 1e-300), for numbers.
    pub relative: Option<f64>,
}

fn dataset_err(message: String) -> SweepError {
    SweepError::Dataset(message)
}

fn num(ds: &Rows, name: &str, row: usize) -> Result<f64, SweepError> {
    match ds.column(name) {
        Some(Column::Num(v)) if row < v.len() => Ok(v[row]),
        _ => Err(dataset_err(format!(
            "the dataset has no numeric column `{name}` for every row"
        ))),
    }
}

fn text<'a>(ds: &'a Rows, name: &str, row: usize) -> Result<&'a str, SweepError> {
    match ds.column(name) {
        Some(Column::Text(v)) if row < v.len() => Ok(&v[row]),
        _ => Err(dataset_err(format!(
            "the dataset has no text column `{name}` for every row"
        ))),
    }
}

/// The row `sel` names, with the ranges that exist when it names none.
pub fn find_row(ds: &Rows, sel: RowSelector) -> Result<usize, SweepError> {
    let ids = ds.point_ids();
    let found = match sel {
        RowSelector::Point(id) => ids.iter().position(|&p| p == id),
        RowSelector::Combo { combo, repeat } => (0..ds.len()).find(|&r| {
            num(ds, COL_COMBO, r).is_ok_and(|c| c as u64 == combo)
                && num(ds, COL_REPEAT, r).is_ok_and(|x| x as u32 == repeat)
        }),
    };
    found.ok_or_else(|| {
        let (lo, hi) = (
            ids.iter().min().copied().unwrap_or(0),
            ids.iter().max().copied().unwrap_or(0),
        );
        let what = match sel {
            RowSelector::Point(id) => format!("--point {id}"),
            RowSelector::Combo { combo, repeat } => format!("--combo {combo} --repeat {repeat}"),
        };
        dataset_err(format!(
            "{what}: no such row ({} rows, point ids {lo}..={hi}; `metachron check` lists \
             the missing ones)",
            ids.len()
        ))
    })
}

/// The row's parameters from its own columns: every scalar parameter, the actuation
/// mask and the per-leg lists (written with Rust's shortest round-trip formatting, so
/// read back exactly).
pub fn row_params(ds: &Rows, row: usize) -> Result<Params, SweepError> {
    let mut p = Params::default();
    let param_err = |name: &str, e: crate::error::ParamError| {
        dataset_err(format!("row {row}: parameter `{name}`: {e}"))
    };
    for spec in SCALAR_PARAMS {
        let x = num(ds, spec.name, row)?;
        p.set_scalar(spec.name, x)
            .map_err(|e| param_err(spec.name, e))?;
    }
    for &name in LIST_PARAMS {
        let value = text(ds, name, row)?;
        if name == ACTUATED || !value.is_empty() {
            p.set_text(name, value).map_err(|e| param_err(name, e))?;
        }
    }
    // A dataset written before a choice existed has no column for it: its rows ran on
    // the choice's default (flat ground).
    for &name in CHOICE_PARAMS {
        if ds.column(name).is_some() {
            p.set_text(name, text(ds, name, row)?)
                .map_err(|e| param_err(name, e))?;
        }
    }
    Ok(p)
}

/// The largest horizon any row of the dataset was run to, rounded up to a whole number
/// of t_final: a continuation cap that repeats every row's decisions when the sweep's
/// `--until-settled` came from the command line (it is recorded only as the horizons
/// the rows reached; each continued in steps of t_final up to a cap at least this).
fn reached_horizon(ds: &Rows, t_final: f64) -> Option<f64> {
    let Some(Column::Num(t_run)) = ds.column(COL_T_RUN) else {
        return None;
    };
    let steps = t_run
        .iter()
        .filter(|t| t.is_finite())
        .map(|t| (t / t_final - 1e-9).ceil())
        .fold(0.0, f64::max);
    (steps >= 2.0).then_some(steps * t_final)
}

impl Replay {
    /// Prepare row `row` of `ds` to run again; `engine` overrides the row's own.
    pub fn of_row(ds: &Rows, row: usize, engine: Option<Backend>) -> Result<Replay, SweepError> {
        let text_of_sweep = ds.metadata.get(META_SWEEP).ok_or_else(|| {
            dataset_err(format!(
                "the dataset records no sweep file (file metadata `{META_SWEEP}`): not written \
                 by `metachron sweep`"
            ))
        })?;
        let spec = SweepSpec::from_str_named(text_of_sweep, "the recorded sweep", "sweep")?;
        let mut cfg = spec.config.clone();
        cfg.params = row_params(ds, row)?;
        cfg.until_settled = spec
            .until_settled
            .or_else(|| reached_horizon(ds, cfg.params.t_final));
        let recorded_backend = text(ds, COL_BACKEND, row)?.to_string();
        let recorded_status = text(ds, COL_STATUS, row)?.to_string();
        let mut notes = Vec::new();
        let own = match recorded_backend.as_str() {
            "reference" => Backend::Reference,
            "cpu" => Backend::Cpu,
            "gpu" => {
                let adapter = ds.metadata.get(META_ADAPTER).cloned().unwrap_or_default();
                notes.push(format!(
                    "the row was computed by the gpu engine ({adapter}); it replays on the cpu \
                     engine, its twin (the same fixed-step scheme and step in f64): the metrics \
                     agree to round-off of the kernel's precision, not bit for bit"
                ));
                Backend::Cpu
            }
            other => {
                return Err(dataset_err(format!(
                    "row {row}: backend `{other}` is not one metachron runs"
                )))
            }
        };
        let backend = engine.unwrap_or(own);
        if engine.is_some_and(|e| e != own) {
            notes.push(format!(
                "replayed on {} instead of {recorded_backend} (--backend): the metrics agree \
                 to the schemes' accuracy, not bit for bit",
                backend.label()
            ));
        }
        if backend == Backend::Reference && cfg.until_settled.is_some() {
            return Err(dataset_err(
                "the sweep continued unsettled runs (until_settled), which the reference \
                 cannot do; replay with --backend cpu"
                    .into(),
            ));
        }
        if recorded_status == "budget_exceeded" {
            notes.push(
                "the row ended budget_exceeded; the replay keeps the step budget (max_steps) \
                 but runs without a wall-time budget (--point-timeout), so it may go further"
                    .into(),
            );
        }
        cfg.validate()
            .map_err(|e| dataset_err(format!("row {row}: {e}")))?;
        let adapter = ds.metadata.get(META_ADAPTER).map_or("", String::as_str);
        let tolerance = Tolerance::of_row(&recorded_backend, adapter, backend);
        let recorded = METRIC_COLUMNS
            .iter()
            .map(|(name, _)| num(ds, name, row))
            .collect::<Result<Vec<f64>, _>>()?;
        Ok(Replay {
            cfg,
            backend,
            recorded_backend,
            point_id: num(ds, COL_POINT_ID, row)? as u64,
            combo: num(ds, COL_COMBO, row)? as u64,
            repeat: num(ds, COL_REPEAT, row)? as u32,
            sweep_name: spec.name,
            recorded,
            recorded_status,
            recorded_class: text(ds, COL_CLASS, row)?.to_string(),
            notes,
            tolerance,
        })
    }

    /// Does the replay run on the engine that wrote the row?
    pub fn same_engine(&self) -> bool {
        self.backend.label() == self.recorded_backend
    }

    /// The replayed metrics `m` held to the row's tolerance.
    pub fn verdict(&self, m: &Metrics) -> Verdict {
        let replayed = m.scalars();
        let mut gaps = Vec::new();
        for (k, (name, _)) in METRIC_COLUMNS.iter().enumerate() {
            let (a, b) = (self.recorded[k], replayed[k]);
            if a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) {
                continue;
            }
            let mut absolute = (b - a).abs();
            if *name == crate::vocabulary::metric::mean_lag {
                // An angle in (−π, π]: −π + ε and π − ε are 2ε apart.
                absolute = absolute.min(std::f64::consts::TAU - absolute);
            }
            let absolute = if absolute.is_nan() {
                f64::INFINITY
            } else {
                absolute
            };
            gaps.push(MetricGap {
                name,
                recorded: a,
                replayed: b,
                absolute,
                scaled: absolute / a.abs().max(1.0),
                allowed: self.tolerance.allowed(name, a),
            });
        }
        let labels: Vec<(String, String, String)> = [
            (COL_STATUS, &self.recorded_status, m.status.label()),
            (COL_CLASS, &self.recorded_class, m.class.label()),
        ]
        .into_iter()
        .filter(|(_, a, b)| a.as_str() != *b)
        .map(|(n, a, b)| (n.to_string(), a.clone(), b.to_string()))
        .collect();
        let within = match self.tolerance {
            Tolerance::Unbounded => None,
            _ => Some(labels.is_empty() && !gaps.iter().any(MetricGap::outside)),
        };
        Verdict {
            tolerance: self.tolerance,
            gaps,
            labels,
            within,
        }
    }

    /// Where the replayed metrics differ from the row (empty: bit for bit the same;
    /// NaN equals NaN, as both mean "not computed").
    pub fn differences(&self, m: &Metrics) -> Vec<Difference> {
        let mut out = Vec::new();
        for (k, (name, _)) in METRIC_COLUMNS.iter().enumerate() {
            let (a, b) = (self.recorded[k], m.scalars()[k]);
            let same = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            if !same {
                out.push(Difference {
                    name: name.to_string(),
                    recorded: format!("{a:e}"),
                    replayed: format!("{b:e}"),
                    relative: Some((b - a).abs() / a.abs().max(1e-300)),
                });
            }
        }
        for (name, a, b) in [
            (COL_STATUS, &self.recorded_status, m.status.label()),
            (COL_CLASS, &self.recorded_class, m.class.label()),
        ] {
            if a != b {
                out.push(Difference {
                    name: name.into(),
                    recorded: a.clone(),
                    replayed: b.to_string(),
                    relative: None,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_promise_follows_the_rows_engine_and_precision() {
        let f32_label = "gpu: llvmpipe (LLVM 19.1.7, 256 bits) (Cpu, llvmpipe, f32)";
        let f64_label = "gpu: NVIDIA H100 (DiscreteGpu, NVIDIA, f64)";
        assert_eq!(recorded_precision(f32_label), Some(Precision::F32));
        assert_eq!(recorded_precision(f64_label), Some(Precision::F64));
        assert_eq!(recorded_precision("cpu: rayon, 2 threads"), None);
        let of = |b: &str, a: &str, r: Backend| Tolerance::of_row(b, a, r);
        let f64_twin = of("gpu", f64_label, Backend::Cpu);
        assert_eq!(f64_twin, Tolerance::Twin(Precision::F64));
        assert_eq!(
            f64_twin.allowed("work", 20.0),
            Some(20.0 * GPU_F64_TOLERANCE)
        );
        assert_eq!(f64_twin.allowed("work", 0.5), Some(GPU_F64_TOLERANCE));
        let f32_twin = of("gpu", f32_label, Backend::Cpu);
        assert_eq!(f32_twin, Tolerance::Twin(Precision::F32));
        assert_eq!(of("gpu", "", Backend::Cpu), f32_twin);
        assert_eq!(f32_twin.allowed("displacement", 2.0), Some(2e-2));
        assert_eq!(f32_twin.allowed("displacement", -0.01), Some(1e-3));
        assert_eq!(f32_twin.allowed("mean_lag", 3.0), Some(GPU_F32_MEAN_LAG));
        assert_eq!(f32_twin.allowed("work", 3.0), None);
        assert_eq!(of("cpu", "", Backend::Cpu), Tolerance::Exact);
        assert_eq!(Tolerance::Exact.allowed("work", 3.0), Some(0.0));
        assert_eq!(of("reference", "", Backend::Reference), Tolerance::Exact);
        assert_eq!(of("cpu", "", Backend::Reference), Tolerance::Unbounded);
        assert_eq!(
            of("gpu", f64_label, Backend::Reference),
            Tolerance::Unbounded
        );
        assert_eq!(Tolerance::Unbounded.allowed("work", 3.0), None);
    }
}
