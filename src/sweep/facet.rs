//! What a picture or a summary of a sweep's rows is drawn from: the rows meeting
//! `COLUMN=VALUE` conditions (one facet of a sweep with more than two axes), and the
//! refusal to mix a swept parameter's values in one cell unless asked to average over
//! it. `metachron map` and the Python package's `map`/`summarize` read rows this way.

use crate::dataset::schema::META_SWEEP_NAME;
use crate::dataset::{Column, Rows};
use crate::sweep::SweepSpec;

/// Conditions or averages that cannot be applied; the messages name the option.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FacetError {
    #[error("--where `{0}`: expected COLUMN=VALUE, e.g. terrain=rough")]
    NotAssignment(String),
    #[error("--where `{cond}`: `{name}` is numeric; `{value}` is no number")]
    NotNumber {
        cond: String,
        name: String,
        value: String,
    },
    #[error("--where `{cond}`: the dataset has no column `{name}`")]
    NoColumn { cond: String, name: String },
    #[error("--where {0}: no row meets every condition")]
    NoRow(String),
    #[error("--average {name}: not an axis of this sweep (its axes: {axes})")]
    NotAnAxis { name: String, axes: String },
    #[error(transparent)]
    Mixed(Box<MixedAxis>),
}

/// A swept parameter whose values would share the cells of a map.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the sweep's axis `{name}` takes {count} values in the drawn rows ({listed}), which \
     would share each cell of the {x} x {y} map: add `--where {name}={first}` to draw one \
     of them, `--facet {name}` for one panel per value, or `--average {name}` to average \
     over it on purpose"
)]
pub struct MixedAxis {
    pub name: String,
    pub count: usize,
    pub listed: String,
    pub x: String,
    pub y: String,
    pub first: String,
}

/// The rows of `ds` meeting every `COLUMN=VALUE` of `conditions` (numbers equal to 1e-12
/// relative, text exactly), with the conditions appended to the sweep's name.
pub fn facet(ds: Rows, conditions: &[String]) -> Result<Rows, FacetError> {
    if conditions.is_empty() {
        return Ok(ds);
    }
    let mut keep = vec![true; ds.len()];
    for cond in conditions {
        let Some((name, value)) = cond.split_once('=') else {
            return Err(FacetError::NotAssignment(cond.clone()));
        };
        let (name, value) = (name.trim(), value.trim());
        match ds.column(name) {
            Some(Column::Num(v)) => {
                let want: f64 = value.parse().map_err(|_| FacetError::NotNumber {
                    cond: cond.clone(),
                    name: name.into(),
                    value: value.into(),
                })?;
                for (k, x) in keep.iter_mut().zip(v) {
                    *k &= (x - want).abs() <= 1e-12 * want.abs().max(1.0);
                }
            }
            Some(Column::Text(v)) => {
                for (k, x) in keep.iter_mut().zip(v) {
                    *k &= x == value;
                }
            }
            None => {
                return Err(FacetError::NoColumn {
                    cond: cond.clone(),
                    name: name.into(),
                })
            }
        }
    }
    if !keep.iter().any(|&k| k) {
        return Err(FacetError::NoRow(conditions.join(" ")));
    }
    let mut out = ds.select(&keep);
    in_title(&mut out, &conditions.join(", "));
    Ok(out)
}

/// Append `(note)` to the sweep's name, which heads a picture's title.
pub fn in_title(ds: &mut Rows, note: &str) {
    let name = ds
        .metadata
        .get(META_SWEEP_NAME)
        .cloned()
        .unwrap_or_default();
    ds.metadata.insert(
        META_SWEEP_NAME.to_string(),
        format!("{name} ({note})").trim().to_string(),
    );
}

/// Refuse to mix values of a swept parameter in one cell unless asked: every axis of
/// the sweep that varies in `ds` is drawn (`shown`: x, y, then any facets) or in
/// `averaged` (then named in the title). An `averaged` name that is no axis of the
/// sweep is refused too.
pub fn averaged_on_purpose(
    mut ds: Rows,
    sweep: &SweepSpec,
    shown: &[&str],
    averaged: &[String],
) -> Result<Rows, FacetError> {
    let axes: Vec<String> = sweep.axes.iter().map(|ax| ax.param.clone()).collect();
    for name in averaged {
        if !axes.contains(name) {
            return Err(FacetError::NotAnAxis {
                name: name.clone(),
                axes: axes.join(", "),
            });
        }
    }
    let mut named: Vec<&str> = shown.to_vec();
    named.extend(averaged.iter().map(String::as_str));
    if let Some((name, values)) = sweep.hidden_axes(&ds, &named).into_iter().next() {
        let listed = match values.len() {
            0..=6 => values.join(", "),
            n => format!("{}, … ({n} values)", values[..5].join(", ")),
        };
        return Err(FacetError::Mixed(Box::new(MixedAxis {
            count: values.len(),
            listed,
            x: shown.first().copied().unwrap_or_default().into(),
            y: shown.get(1).copied().unwrap_or_default().into(),
            first: values[0].clone(),
            name,
        })));
    }
    if !averaged.is_empty() {
        let note: Vec<String> = averaged
            .iter()
            .map(|name| format!("{} values of {name}", ds.distinct(name).len()))
            .collect();
        in_title(&mut ds, &format!("averaged over {}", note.join(" and ")));
    }
    Ok(ds)
}
