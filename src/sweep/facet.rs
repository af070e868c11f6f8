//! What a picture or a summary of a sweep's rows is drawn from: the rows meeting
//! `COLUMN=VALUE` conditions (one facet of a sweep with more than two axes), and the
//! refusal to mix a swept parameter's values in one cell unless asked to average over
//! it, and the split of those rows into one group per facet value. `metachron map`,
//! `report` and `summarize` and the Python package's `map`/`summarize` read rows this way.

use std::cmp::Ordering;

use crate::dataset::schema::META_SWEEP_NAME;
use crate::dataset::{Column, Rows};
use crate::sweep::SweepSpec;

/// Conditions or averages that cannot be applied; the messages name the option.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FacetError {
    #[error("--where `{0}`: expected COLUMN=VALUE, e.g. terrain=rough")]
    NotAssignment(String),
    #[error(
        "--where `{cond}`: `{name}` is numeric; `{value}` is neither a number nor a range \
         LO..HI (either end may be left out){units}"
    )]
    NotNumber {
        cond: String,
        name: String,
        value: String,
        /// The units a number may carry, in words (empty where none is known).
        units: String,
    },
    #[error("--where `{cond}`: the dataset has no column `{name}`")]
    NoColumn { cond: String, name: String },
    #[error("--facet {name}: the dataset has no column `{name}`{hint}")]
    NoFacetColumn {
        name: String,
        /// "; did you mean `x`?" when a column's name is close.
        hint: String,
    },
    #[error(
        "--facet {names}: {count} values, more than the {max} one picture or page holds; \
         keep fewer with --where, or put a parameter on an axis"
    )]
    TooManyFacets {
        names: String,
        count: usize,
        max: usize,
    },
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

/// The rows of `ds` meeting every `COLUMN=VALUE` of `conditions`, with the conditions
/// appended to the sweep's name. Text (a class, a terrain) matches exactly; a number
/// matches to 1e-12 relative, and may carry the column's unit or, for a column in
/// radians, `deg` (`dphi=90deg`); `LO..HI` keeps the values in a closed range, either end
/// open when left out (`k_p=100..`).
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
                let unit = unit_of(name);
                let (lo, hi) = bounds(value, unit).ok_or_else(|| FacetError::NotNumber {
                    cond: cond.clone(),
                    name: name.into(),
                    value: value.into(),
                    units: match unit {
                        Some("rad") => "; numbers may carry `rad` or `deg`".into(),
                        Some(u) if u != "1" && !u.is_empty() => {
                            format!("; numbers may carry `{u}`")
                        }
                        _ => String::new(),
                    },
                })?;
                let slack = |b: f64| 1e-12 * b.abs().max(1.0);
                for (k, x) in keep.iter_mut().zip(v) {
                    *k &= *x >= lo - slack(lo) && *x <= hi + slack(hi);
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

/// The unit a numeric column is recorded in: a parameter's or a metric's.
fn unit_of(name: &str) -> Option<&'static str> {
    crate::params::SCALAR_PARAMS
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.unit)
        .or_else(|| {
            crate::metrics::METRIC_COLUMNS
                .iter()
                .find(|(m, _)| *m == name)
                .map(|(_, u)| *u)
        })
}

/// A number as `--where` writes it: plain, or followed by the column's own unit, or by
/// `deg` for a column in radians (converted). `None` for anything else.
fn number(text: &str, unit: Option<&str>) -> Option<f64> {
    let t = text.trim();
    if let Ok(x) = t.parse::<f64>() {
        return x.is_finite().then_some(x);
    }
    let at = t.find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))?;
    let (digits, suffix) = t.split_at(at);
    let x: f64 = digits.parse().ok().filter(|x: &f64| x.is_finite())?;
    match (unit, suffix.trim()) {
        (Some("rad"), "deg") => Some(x.to_radians()),
        (Some(u), s) if s == u => Some(x),
        _ => None,
    }
}

/// The closed range a `--where` value selects: one number (both ends), or `LO..HI`
/// with either end left out for an open one.
fn bounds(value: &str, unit: Option<&str>) -> Option<(f64, f64)> {
    match value.split_once("..") {
        None => number(value, unit).map(|x| (x, x)),
        Some((lo, hi)) => {
            let end = |t: &str, open: f64| match t.trim() {
                "" => Some(open),
                t => number(t, unit),
            };
            let (lo, hi) = (end(lo, f64::NEG_INFINITY)?, end(hi, f64::INFINITY)?);
            (lo <= hi).then_some((lo, hi))
        }
    }
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

/// The rows a picture over `shown` (x, y, then any facets) draws: those meeting every
/// `--where` condition ([`facet`]), refused where a swept parameter varies among them
/// unseen ([`averaged_on_purpose`]). `map` and `report` select their rows this way.
pub fn selected(
    ds: Rows,
    sweep: &SweepSpec,
    conditions: &[String],
    shown: &[&str],
    averaged: &[String],
) -> Result<Rows, FacetError> {
    let ds = facet(ds, conditions)?;
    averaged_on_purpose(ds, sweep, shown, averaged)
}

/// Most groups [`groups`] makes: panels of one picture, sections of one report.
pub const MAX_FACET_VALUES: usize = 24;

/// Rows split by the values of facet columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Groups {
    /// Each group's name, `omega = 1, terrain = rough`, in the order of the values
    /// (numbers by value, text by text).
    pub names: Vec<String>,
    /// The group of each row (an index into `names`).
    pub of_row: Vec<usize>,
}

impl Groups {
    /// Which rows are in group `k`, as [`Rows::select`] takes them.
    pub fn mask(&self, k: usize) -> Vec<bool> {
        self.of_row.iter().map(|&g| g == k).collect()
    }
}

/// Split `ds` into one group per combination of the `facets` columns' values present;
/// more than [`MAX_FACET_VALUES`] groups, or a facet that is no column, is refused.
pub fn groups(ds: &Rows, facets: &[String]) -> Result<Groups, FacetError> {
    let columns = facets
        .iter()
        .map(|f| {
            ds.column(f).ok_or_else(|| FacetError::NoFacetColumn {
                name: f.clone(),
                hint: crate::input_keys::did_you_mean(&crate::input_keys::closest(
                    f,
                    ds.columns.iter().map(|(n, _)| n.as_str()),
                )),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let order_of = |a: usize, b: usize| {
        columns
            .iter()
            .map(|c| match c {
                Column::Num(v) => v[a].total_cmp(&v[b]),
                Column::Text(v) => v[a].cmp(&v[b]),
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let mut rows: Vec<usize> = (0..ds.len()).collect();
    rows.sort_by(|&a, &b| order_of(a, b));
    let mut names = Vec::new();
    let mut of_row = vec![0; ds.len()];
    let mut last: Option<usize> = None;
    for r in rows {
        if last.is_none_or(|l| order_of(l, r).is_ne()) {
            let parts: Vec<String> = facets
                .iter()
                .map(|f| format!("{f} = {}", facet_value(ds, f, r)))
                .collect();
            names.push(parts.join(", "));
            last = Some(r);
        }
        of_row[r] = names.len() - 1;
    }
    if names.len() > MAX_FACET_VALUES {
        return Err(FacetError::TooManyFacets {
            names: facets.join(" --facet "),
            count: names.len(),
            max: MAX_FACET_VALUES,
        });
    }
    Ok(Groups { names, of_row })
}

/// Row `r`'s value of facet `f` as pictures and reports show it: an angle parameter in
/// degrees (to six decimals, trailing zeros dropped), anything else as stored.
fn facet_value(ds: &Rows, f: &str, r: usize) -> String {
    use crate::vocabulary::{shown_unit, shown_value, RADIANS};
    match (ds.column(f), crate::params::spec(f)) {
        (Some(Column::Num(v)), Some(s)) if s.unit == RADIANS => {
            let shown = format!("{:.6}", shown_value(RADIANS, v[r]));
            let shown = shown.trim_end_matches('0').trim_end_matches('.');
            format!("{shown} {}", shown_unit(RADIANS))
        }
        _ => ds.text_at(f, r),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Panels and report sections of an angle are named in degrees, as the pictures'
    /// axes are; other parameters as stored.
    #[test]
    fn facets_of_an_angle_are_named_in_degrees() {
        use std::f64::consts::PI;
        let ds = Rows {
            columns: vec![
                ("dphi".into(), Column::Num(vec![PI / 2.0, 0.0, PI / 2.0])),
                ("axo_f".into(), Column::Num(vec![0.0, 150.0, 150.0])),
            ],
            ..Rows::default()
        };
        let g = groups(&ds, &["dphi".into()]).unwrap();
        assert_eq!(g.names, ["dphi = 0 deg", "dphi = 90 deg"]);
        assert_eq!(g.of_row, [1, 0, 1]);
        let g = groups(&ds, &["axo_f".into()]).unwrap();
        assert_eq!(g.names, ["axo_f = 0", "axo_f = 150"]);
    }

    #[test]
    fn where_values_take_units_and_ranges() {
        assert_eq!(
            number("30deg", Some("rad")),
            Some(std::f64::consts::PI / 6.0)
        );
        assert_eq!(number("0.5rad", Some("rad")), Some(0.5));
        assert_eq!(number("500N/m", Some("N/m")), Some(500.0));
        assert_eq!(number("5e4", None), Some(5e4));
        assert_eq!(number("30deg", Some("N/m")), None);
        assert_eq!(number("fast", Some("rad")), None);
        assert_eq!(bounds("100..", None), Some((100.0, f64::INFINITY)));
        assert_eq!(bounds("..2", None), Some((f64::NEG_INFINITY, 2.0)));
        assert_eq!(
            bounds("0deg..90deg", Some("rad")),
            Some((0.0, std::f64::consts::FRAC_PI_2))
        );
        assert_eq!(bounds("3..1", None), None);
        assert_eq!(bounds("1..x", None), None);
    }
}
