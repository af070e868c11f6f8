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
                     engine, its twin (the same fixed-step scheme and step in f64): expect the \
                     metrics to agree to round-off (about 1e-13 relative from an f64 adapter, \
                     1e-5 from f32), not bit for bit"
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
        })
    }

    /// Does the replay run on the engine that wrote the row?
    pub fn same_engine(&self) -> bool {
        self.backend.label() == self.recorded_backend
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
