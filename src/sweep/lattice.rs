//! The `[refine]` table of a sweep file, checked against the sweep's axes, and the
//! finest lattice it defines (every refined point lives on it; a point's combination
//! id is its lattice index). [`crate::sweep::refine`] splits cells on it.

use serde::Deserialize;

use crate::metrics::{Class, METRIC_COLUMNS};
use crate::sweep::axis::{spaced_value, AxisKind, SweepAxes, MAX_POINTS};
use crate::sweep::SweepError;
use crate::vocabulary::{metric_named, CLASS as COL_CLASS};

/// What decides that a cell's corners disagree.
#[derive(Debug, Clone, PartialEq)]
pub enum RefineBy {
    /// The class (most frequent over repeats) differs between corners.
    Class,
    /// The metric (mean over repeats) spans more than `threshold` over the corners.
    Metric { column: String, threshold: f64 },
    /// The fraction of a combination's runs ending in `class` changes over the corners.
    Fraction {
        class: Class,
        threshold: f64,
        test: FractionTest,
    },
}

/// How corner fractions are compared (`test = "difference"` or `"wilson"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FractionTest {
    /// Highest minus lowest fraction above the threshold.
    Difference,
    /// Two corners' Wilson 95 % intervals more than the threshold apart (0: disjoint).
    Wilson,
}

impl std::fmt::Display for RefineBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefineBy::Class => write!(f, "{COL_CLASS}"),
            RefineBy::Metric { column, threshold } => {
                write!(f, "{column} (split where it spans more than {threshold})")
            }
            RefineBy::Fraction {
                class,
                threshold,
                test: FractionTest::Difference,
            } => write!(
                f,
                "the fraction of {} runs (split where it changes by more than {threshold})",
                class.label()
            ),
            RefineBy::Fraction {
                class,
                threshold,
                test: FractionTest::Wilson,
            } => write!(
                f,
                "the fraction of {} runs (split where two corners' Wilson 95 % intervals \
                 lie more than {threshold} apart)",
                class.label()
            ),
        }
    }
}

/// A `[refine]` table, checked ([`RawRefine::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Refine {
    pub by: RefineBy,
    pub max_level: u32,
    pub max_points: usize,
    /// Indices of the refined axes (each alone in its group).
    pub axes: Vec<usize>,
}

/// The `[refine]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRefine {
    /// "class", "fraction:<class>" or a metric column (default "class").
    pub by: Option<String>,
    pub threshold: Option<f64>,
    pub test: Option<FractionTest>,
    pub max_level: Option<i64>,
    pub max_points: Option<i64>,
    /// Names of the refined axes (default: every linspace/logspace axis).
    pub axes: Option<Vec<String>>,
}

/// Most halvings: 2^12 lattice steps per grid cell is far below any useful resolution.
const MAX_LEVEL: i64 = 12;

impl RawRefine {
    /// Check `[refine]` against the sweep's axes.
    pub fn check(self, spec: &SweepAxes) -> Result<Refine, SweepError> {
        let err = |key: &str, message: String| refine_err(spec, key, message);
        let int = |key: &str, v: Option<i64>, lo: i64, hi: i64| match v {
            Some(i) if (lo..=hi).contains(&i) => Ok(Some(i)),
            Some(other) => Err(err(
                key,
                format!("expected an integer in [{lo}, {hi}], got `{other}`"),
            )),
            None => Ok(None),
        };
        let max_level = int("max_level", self.max_level, 1, MAX_LEVEL)?.unwrap_or(3) as u32;
        let max_points =
            int("max_points", self.max_points, 1, MAX_POINTS as i64)?.unwrap_or(5000) as usize;
        let threshold = match self.threshold {
            Some(x) if !(x.is_finite() && x >= 0.0) => {
                return Err(err(
                    "threshold",
                    format!("expected a finite number >= 0, got `{x}`"),
                ))
            }
            t => t,
        };
        let by = self.by.unwrap_or_else(|| COL_CLASS.to_string());
        let by = refine_by(spec, by, threshold, self.test)?;
        let axes = refined_axes(spec, self.axes)?;
        let r = Refine {
            by,
            max_level,
            max_points,
            axes,
        };
        check_lattice_size(spec, &r)?;
        Ok(r)
    }
}

/// An error about `refine.<key>`.
fn refine_err(spec: &SweepAxes, key: &str, message: String) -> SweepError {
    SweepError::Key {
        file: spec.file.to_string(),
        key: format!("refine.{key}"),
        message,
    }
}

/// What decides a split: the class, a class's fraction (with its threshold and test) or
/// a metric (with its threshold).
fn refine_by(
    spec: &SweepAxes,
    by: String,
    threshold: Option<f64>,
    test: Option<FractionTest>,
) -> Result<RefineBy, SweepError> {
    let err = |key: &str, message: String| refine_err(spec, key, message);
    if test.is_some() && !by.starts_with("fraction:") {
        return Err(err("test", "only with `by = \"fraction:<class>\"`".into()));
    }
    let need_threshold = |what: &str| {
        threshold.ok_or_else(|| {
            err(
                "threshold",
                format!("missing: refining by `{what}` needs a threshold (>= 0)"),
            )
        })
    };
    if by == COL_CLASS {
        if threshold.is_some() {
            return Err(err(
                "threshold",
                "only with a fraction or a metric column (`by = \"fraction:metachronal\"`, \
                 `by = \"lag_order\"`, ...)"
                    .into(),
            ));
        }
        Ok(RefineBy::Class)
    } else if let Some(label) = by.strip_prefix("fraction:") {
        let class = Class::from_label(label)
            .ok_or_else(|| err("by", format!("`{by}`: the classes are {}", Class::labels())))?;
        let threshold = need_threshold(&by)?;
        if threshold > 1.0 {
            return Err(err(
                "threshold",
                format!("{threshold}: a fraction's threshold is in [0, 1]"),
            ));
        }
        Ok(RefineBy::Fraction {
            class,
            threshold,
            test: test.unwrap_or(FractionTest::Difference),
        })
    } else if metric_named(&by).is_some() {
        let threshold = need_threshold(&by)?;
        Ok(RefineBy::Metric {
            column: by,
            threshold,
        })
    } else {
        let names: Vec<&str> = METRIC_COLUMNS.iter().map(|(m, _)| *m).collect();
        Err(err(
            "by",
            format!(
                "`{by}`: use \"class\", \"fraction:<class>\" or a metric: {}",
                names.join(", ")
            ),
        ))
    }
}

/// The refined axes (by default every linspace/logspace axis): 1 to 3 unzipped
/// linspace/logspace axes of at least two non-integer values each.
fn refined_axes(spec: &SweepAxes, names: Option<Vec<String>>) -> Result<Vec<usize>, SweepError> {
    let err = |message: String| refine_err(spec, "axes", message);
    let spaced = |a: usize| matches!(spec.axes[a].kind, AxisKind::Linspace | AxisKind::Logspace);
    let axes: Vec<usize> = match names {
        None => (0..spec.axes.len()).filter(|&a| spaced(a)).collect(),
        Some(list) => {
            let mut out = Vec::new();
            for name in list {
                let a = spec
                    .axes
                    .iter()
                    .position(|x| x.param == name)
                    .ok_or_else(|| {
                        err(format!(
                            "`\"{name}\"` is not a swept parameter of this file"
                        ))
                    })?;
                if !spaced(a) {
                    return Err(err(format!("`{name}` is not a linspace or logspace axis")));
                }
                if out.contains(&a) {
                    return Err(err(format!(
                        "`{name}` is listed twice: name each axis once"
                    )));
                }
                out.push(a);
            }
            out.sort_unstable();
            out
        }
    };
    if axes.is_empty() || axes.len() > 3 {
        return Err(err(format!(
            "{} refined axes: refine 1 to 3 linspace/logspace axes",
            axes.len()
        )));
    }
    for &a in &axes {
        let ax = &spec.axes[a];
        let why = if ax.values.len() < 2 {
            "has one value: a refined axis needs num >= 2"
        } else if ax.values.iter().any(|v| v.is_integer()) {
            "is an integer parameter: it cannot be halved"
        } else if spec.groups.iter().any(|g| g.contains(&a) && g.len() > 1) {
            "is zipped with another axis: refine unzipped axes"
        } else {
            continue;
        };
        return Err(err(format!("`{}` {why}", ax.param)));
    }
    Ok(axes)
}

/// The finest lattice fits exact f64 point ids, and `max_points` holds the axes' own
/// grid.
fn check_lattice_size(spec: &SweepAxes, r: &Refine) -> Result<(), SweepError> {
    let err = |key: &str, message: String| refine_err(spec, key, message);
    let lat = Lattice::new(spec, r);
    let fine = lat
        .sizes
        .iter()
        .try_fold(spec.repeats as u64, |acc, &n| acc.checked_mul(n as u64));
    if fine.is_none_or(|n| n > (1u64 << 53)) {
        return Err(err(
            "max_level",
            format!(
                "{}: the finest lattice has too many points; lower it",
                r.max_level
            ),
        ));
    }
    let coarse = spec.point_count();
    if coarse > r.max_points {
        return Err(err(
            "max_points",
            format!(
                "{} is below the {coarse} points of the axes' own grid (level 0): raise it \
                 to at least {coarse}",
                r.max_points
            ),
        ));
    }
    Ok(())
}

/// The finest lattice of a refined sweep: one size per axis group.
#[derive(Debug, Clone)]
pub struct Lattice {
    /// Lattice values per group (refined: (num − 1)·2^L + 1, else the axis' count).
    pub sizes: Vec<usize>,
    /// Whether each group is refined.
    pub refined: Vec<bool>,
    /// Lattice steps between two grid values of a refined axis: 2^max_level.
    pub stride: usize,
}

impl Lattice {
    pub fn new(spec: &SweepAxes, r: &Refine) -> Lattice {
        let stride = 1usize << r.max_level;
        let refined: Vec<bool> = spec.groups.iter().map(|g| r.axes.contains(&g[0])).collect();
        let sizes = spec
            .groups
            .iter()
            .zip(&refined)
            .map(|(g, &rf)| {
                let n = spec.axes[g[0]].values.len();
                if rf {
                    (n - 1) * stride + 1
                } else {
                    n
                }
            })
            .collect();
        Lattice {
            sizes,
            refined,
            stride,
        }
    }

    /// Combination id of a lattice index (mixed radix, last group fastest).
    pub fn combo(&self, idx: &[usize]) -> u64 {
        idx.iter()
            .zip(&self.sizes)
            .fold(0u64, |acc, (&i, &n)| acc * n as u64 + i as u64)
    }

    /// The axis values at a lattice index.
    pub(super) fn values(&self, spec: &SweepAxes, idx: &[usize]) -> Vec<(usize, toml::Value)> {
        let mut out = Vec::new();
        for (g, members) in spec.groups.iter().enumerate() {
            for &m in members {
                let ax = &spec.axes[m];
                let v = if self.refined[g] {
                    let num = |v: &toml::Value| v.as_float().unwrap_or(f64::NAN);
                    let (a, b) = (num(&ax.values[0]), num(&ax.values[ax.values.len() - 1]));
                    toml::Value::Float(spaced_value(a, b, ax.log, idx[g], self.sizes[g]))
                } else {
                    ax.values[idx[g]].clone()
                };
                out.push((m, v));
            }
        }
        out
    }

    /// Lattice indices of the axes' own grid (level 0), in id order.
    pub(super) fn grid(&self, spec: &SweepAxes) -> Vec<Vec<usize>> {
        let coarse: Vec<usize> = spec
            .groups
            .iter()
            .map(|g| spec.axes[g[0]].values.len())
            .collect();
        let total: usize = coarse.iter().product();
        (0..total)
            .map(|c| {
                let mut idx = vec![0; coarse.len()];
                let mut rest = c;
                for g in (0..coarse.len()).rev() {
                    let k = rest % coarse[g];
                    rest /= coarse[g];
                    idx[g] = if self.refined[g] { k * self.stride } else { k };
                }
                idx
            })
            .collect()
    }
}

impl std::fmt::Display for Refine {
    /// The user's words: "refined on class up to level 3 (at most 5000 points)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "refined on {} up to level {} (at most {} points)",
            self.by, self.max_level, self.max_points
        )
    }
}
