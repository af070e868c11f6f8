//! Adaptive refinement (`[refine]`): start from the axes' grid, then, level by level,
//! split the cells whose corner points disagree (on the class, on a class fraction or
//! on a metric by more than a threshold), up to `max_level` halvings and `max_points`
//! runs in all. This module holds the table, the lattice and the splitting decision;
//! [`crate::sweep::atlas`] runs the levels.
//!
//! ```toml
//! [refine]
//! by = "class"        # or "fraction:metachronal", or a metric column, with a threshold
//! threshold = 0.1     # fraction or metric: the span over a cell's corners that splits it
//! test = "difference" # fraction only: or "wilson" (split when two corners' Wilson 95 %
//!                     # intervals lie more than `threshold` apart)
//! max_level = 3
//! max_points = 5000
//! axes = ["alpha", "beta"]   # optional: default every linspace/logspace axis (<= 3)
//! ```
//!
//! With adaptive repeats (`repeats = { min, max, ci_width }`) every new combination
//! gets its repeats until its intervals are narrow enough, and the decision reads all
//! of them; `max_points` then counts each combination at `max` repeats.
//!
//! Every point lives on the finest lattice: a refined axis of `num` values has
//! `(num − 1)·2^max_level + 1` lattice values, the same values a dense linspace/logspace
//! axis of that size has, and a point's combination id is its lattice index (mixed
//! radix, first group outermost, like [`crate::sweep::Plan`]). So a refined sweep and
//! the dense sweep of its lattice share ids; planning is deterministic, a level's plan
//! depends only on the rows of the levels before it, and `--resume` and `--shard` work
//! as for any sweep (a shard that finished its part of a level waits for the others'
//! rows: rerun it with `--resume` once they are written).

use std::collections::{BTreeSet, HashMap};

use crate::metrics::{Class, METRIC_COLUMNS};
use crate::sweep::dataset::{Column, Dataset};
use crate::sweep::plan::combo_points;
use crate::sweep::spec::spaced_value;
use crate::sweep::summary::{wilson, Z95};
use crate::sweep::{AxisKind, Plan, SweepError, SweepSpec};

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

/// How corner fractions are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FractionTest {
    /// Highest minus lowest fraction above the threshold.
    Difference,
    /// Two corners' Wilson 95 % intervals more than the threshold apart (0: disjoint).
    Wilson,
}

impl std::fmt::Display for RefineBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefineBy::Class => write!(f, "class"),
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

/// A `[refine]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Refine {
    pub by: RefineBy,
    pub max_level: u32,
    pub max_points: usize,
    /// Indices of the refined axes (each alone in its group).
    pub axes: Vec<usize>,
}

const KEYS: &[&str] = &["by", "threshold", "test", "max_level", "max_points", "axes"];
/// Most halvings: 2^12 lattice steps per grid cell is far below any useful resolution.
const MAX_LEVEL: i64 = 12;

impl Refine {
    /// Read and check `[refine]` against the sweep's axes.
    pub fn parse(spec: &SweepSpec, v: toml::Value) -> Result<Refine, SweepError> {
        let err = |key: &str, message: String| SweepError::Key {
            file: spec.file.clone(),
            key: format!("refine.{key}"),
            message,
        };
        let toml::Value::Table(mut t) = v else {
            return Err(SweepError::Key {
                file: spec.file.clone(),
                key: "refine".into(),
                message: format!("expected a table [refine], got {}", v.type_str()),
            });
        };
        if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                k,
                format!("unknown key; allowed are {}", KEYS.join(", ")),
            ));
        }
        let int = |t: &mut toml::Table, key: &str, lo: i64, hi: i64| match t.remove(key) {
            Some(toml::Value::Integer(i)) if (lo..=hi).contains(&i) => Ok(Some(i)),
            Some(other) => Err(err(
                key,
                format!("expected an integer in [{lo}, {hi}], got `{other}`"),
            )),
            None => Ok(None),
        };
        let max_level = int(&mut t, "max_level", 1, MAX_LEVEL)?.unwrap_or(3) as u32;
        let max_points = int(
            &mut t,
            "max_points",
            1,
            crate::sweep::spec::MAX_POINTS as i64,
        )?
        .unwrap_or(5000) as usize;
        let by = match t.remove("by") {
            None => "class".to_string(),
            Some(toml::Value::String(s)) => s,
            Some(other) => return Err(err("by", format!("expected a string, got `{other}`"))),
        };
        let threshold = match t.remove("threshold") {
            None => None,
            Some(toml::Value::Float(x)) if x.is_finite() && x >= 0.0 => Some(x),
            Some(toml::Value::Integer(i)) if i >= 0 => Some(i as f64),
            Some(other) => {
                return Err(err(
                    "threshold",
                    format!("expected a finite number >= 0, got `{other}`"),
                ))
            }
        };
        let test = match t.remove("test") {
            None => None,
            Some(toml::Value::String(s)) if s == "difference" => Some(FractionTest::Difference),
            Some(toml::Value::String(s)) if s == "wilson" => Some(FractionTest::Wilson),
            Some(other) => {
                return Err(err(
                    "test",
                    format!("`{other}`: use \"difference\" or \"wilson\""),
                ))
            }
        };
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
        let by = if by == "class" {
            if threshold.is_some() {
                return Err(err(
                    "threshold",
                    "only with a fraction or a metric column (`by = \"fraction:metachronal\"`, \
                     `by = \"lag_order\"`, ...)"
                        .into(),
                ));
            }
            RefineBy::Class
        } else if let Some(label) = by.strip_prefix("fraction:") {
            let class = Class::ALL
                .iter()
                .copied()
                .find(|c| c.label() == label)
                .ok_or_else(|| {
                    let names: Vec<&str> = Class::ALL.iter().map(|c| c.label()).collect();
                    err(
                        "by",
                        format!("`{by}`: the classes are {}", names.join(", ")),
                    )
                })?;
            let threshold = need_threshold(&by)?;
            if threshold > 1.0 {
                return Err(err(
                    "threshold",
                    format!("{threshold}: a fraction's threshold is in [0, 1]"),
                ));
            }
            RefineBy::Fraction {
                class,
                threshold,
                test: test.unwrap_or(FractionTest::Difference),
            }
        } else if METRIC_COLUMNS.iter().any(|(m, _)| *m == by) {
            let threshold = need_threshold(&by)?;
            RefineBy::Metric {
                column: by,
                threshold,
            }
        } else {
            let names: Vec<&str> = METRIC_COLUMNS.iter().map(|(m, _)| *m).collect();
            return Err(err(
                "by",
                format!(
                    "`{by}`: use \"class\", \"fraction:<class>\" or a metric: {}",
                    names.join(", ")
                ),
            ));
        };
        let spaced =
            |a: usize| matches!(spec.axes[a].kind, AxisKind::Linspace | AxisKind::Logspace);
        let axes: Vec<usize> = match t.remove("axes") {
            None => (0..spec.axes.len()).filter(|&a| spaced(a)).collect(),
            Some(toml::Value::Array(list)) => {
                let mut out = Vec::new();
                for v in list {
                    let name = v.as_str().unwrap_or_default();
                    let a = spec
                        .axes
                        .iter()
                        .position(|x| x.param == name)
                        .ok_or_else(|| {
                            err(
                                "axes",
                                format!("`{v}` is not a swept parameter of this file"),
                            )
                        })?;
                    if !spaced(a) {
                        return Err(err(
                            "axes",
                            format!("`{name}` is not a linspace or logspace axis"),
                        ));
                    }
                    out.push(a);
                }
                out.sort_unstable();
                out.dedup();
                out
            }
            Some(other) => {
                return Err(err(
                    "axes",
                    format!("expected a list of parameter names, got `{other}`"),
                ))
            }
        };
        if axes.is_empty() || axes.len() > 3 {
            return Err(err(
                "axes",
                format!(
                    "{} refined axes: refine 1 to 3 linspace/logspace axes",
                    axes.len()
                ),
            ));
        }
        for &a in &axes {
            let ax = &spec.axes[a];
            if ax.values.len() < 2 {
                return Err(err(
                    "axes",
                    format!(
                        "`{}` has one value: a refined axis needs num >= 2",
                        ax.param
                    ),
                ));
            }
            if ax.values.iter().any(|v| v.is_integer()) {
                return Err(err(
                    "axes",
                    format!(
                        "`{}` is an integer parameter: it cannot be halved",
                        ax.param
                    ),
                ));
            }
            if spec.groups.iter().any(|g| g.contains(&a) && g.len() > 1) {
                return Err(err(
                    "axes",
                    format!(
                        "`{}` is zipped with another axis: refine unzipped axes",
                        ax.param
                    ),
                ));
            }
        }
        let r = Refine {
            by,
            max_level,
            max_points,
            axes,
        };
        let lat = Lattice::new(spec, &r);
        let fine = lat
            .sizes
            .iter()
            .try_fold(spec.repeats as u64, |acc, &n| acc.checked_mul(n as u64));
        if fine.is_none_or(|n| n > (1u64 << 53)) {
            return Err(err(
                "max_level",
                format!("{max_level}: the finest lattice has too many points; lower it"),
            ));
        }
        let coarse = spec.point_count();
        if coarse > max_points {
            return Err(err(
                "max_points",
                format!(
                    "{max_points} is below the {coarse} points of the axes' own grid \
                     (level 0): raise it to at least {coarse}"
                ),
            ));
        }
        Ok(r)
    }
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
    pub fn new(spec: &SweepSpec, r: &Refine) -> Lattice {
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
    fn values(&self, spec: &SweepSpec, idx: &[usize]) -> Vec<(usize, toml::Value)> {
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
    fn grid(&self, spec: &SweepSpec) -> Vec<Vec<usize>> {
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

/// A cell: its lowest corner on the lattice and its edge in lattice steps.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Cell {
    base: Vec<usize>,
    size: usize,
}

impl Cell {
    /// Lattice points of the cell with spacing `step` along the refined groups.
    fn points(&self, lat: &Lattice, step: usize) -> Vec<Vec<usize>> {
        let mut out = vec![self.base.clone()];
        for g in 0..self.base.len() {
            if !lat.refined[g] {
                continue;
            }
            out = out
                .into_iter()
                .flat_map(|p| {
                    (0..=self.size / step).map(move |k| {
                        let mut q = p.clone();
                        q[g] += k * step;
                        q
                    })
                })
                .collect();
        }
        out
    }
}

/// Value of a combination's corner: its class, its class fraction or its metric (over
/// its repeats).
#[derive(Debug, Clone, PartialEq)]
enum Corner {
    Class(String),
    Num(f64),
    /// `k` of `n` runs in the class.
    Fraction {
        k: usize,
        n: usize,
    },
}

/// Whether a cell's corners disagree: a corner without a value, different classes,
/// a fraction or metric spanning more than the threshold, or a metric finite at some
/// corners only.
fn disagree(by: &RefineBy, corners: &[Option<&Corner>]) -> bool {
    if corners.iter().any(|c| c.is_none()) {
        return true;
    }
    let corners: Vec<&Corner> = corners.iter().flatten().copied().collect();
    match by {
        RefineBy::Class => corners.windows(2).any(|w| w[0] != w[1]),
        RefineBy::Fraction {
            threshold, test, ..
        } => {
            let kn: Vec<(usize, usize)> = corners
                .iter()
                .filter_map(|c| match c {
                    Corner::Fraction { k, n } => Some((*k, *n)),
                    _ => None,
                })
                .collect();
            if kn.len() != corners.len() || kn.iter().any(|&(_, n)| n == 0) {
                return true;
            }
            match test {
                FractionTest::Difference => {
                    let p: Vec<f64> = kn.iter().map(|&(k, n)| k as f64 / n as f64).collect();
                    let (lo, hi) = span(&p);
                    hi - lo > *threshold
                }
                FractionTest::Wilson => {
                    let iv: Vec<(f64, f64)> = kn.iter().map(|&(k, n)| wilson(k, n, Z95)).collect();
                    let highest_lower = iv.iter().map(|i| i.0).fold(f64::NEG_INFINITY, f64::max);
                    let lowest_upper = iv.iter().map(|i| i.1).fold(f64::INFINITY, f64::min);
                    highest_lower - lowest_upper > *threshold
                }
            }
        }
        RefineBy::Metric { threshold, .. } => {
            let x: Vec<f64> = corners
                .iter()
                .map(|c| match c {
                    Corner::Num(x) => *x,
                    _ => f64::NAN,
                })
                .collect();
            let finite: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
            if finite.is_empty() {
                return false;
            }
            let (lo, hi) = span(&finite);
            finite.len() != x.len() || hi - lo > *threshold
        }
    }
}

fn span(x: &[f64]) -> (f64, f64) {
    x.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        })
}

fn no_column(name: &str) -> SweepError {
    SweepError::Dataset(format!(
        "the dataset has no column `{name}` of the expected type (the refinement criterion)"
    ))
}

/// Corner values of `combos` from the rows of `ds` (every row of a combination: its
/// repeats, fixed or adaptive).
fn corner_values(
    r: &Refine,
    ds: &Dataset,
    combos: &BTreeSet<u64>,
) -> Result<HashMap<u64, Corner>, SweepError> {
    let mut rows: HashMap<u64, Vec<usize>> = HashMap::new();
    let Some(Column::Num(combo)) = ds.column("combo") else {
        return Err(no_column("combo"));
    };
    for (row, &c) in combo.iter().enumerate() {
        if combos.contains(&(c as u64)) {
            rows.entry(c as u64).or_default().push(row);
        }
    }
    let text = |name: &str| match ds.column(name) {
        Some(Column::Text(v)) => Ok(v),
        _ => Err(no_column(name)),
    };
    let mut out = HashMap::new();
    for (combo, rs) in rows {
        let v = match &r.by {
            RefineBy::Class => {
                let cls = text("class")?;
                // Most frequent class; ties go to the first in the class list.
                let best = Class::ALL
                    .iter()
                    .map(|c| (rs.iter().filter(|&&i| cls[i] == c.label()).count(), c))
                    .fold(
                        (0, None),
                        |b, (n, c)| if n > b.0 { (n, Some(c)) } else { b },
                    );
                Corner::Class(best.1.map(|c| c.label()).unwrap_or("").to_string())
            }
            RefineBy::Fraction { class, .. } => {
                let cls = text("class")?;
                Corner::Fraction {
                    k: rs.iter().filter(|&&i| cls[i] == class.label()).count(),
                    n: rs.len(),
                }
            }
            RefineBy::Metric { column, .. } => {
                let Some(Column::Num(x)) = ds.column(column) else {
                    return Err(no_column(column));
                };
                let f: Vec<f64> = rs.iter().map(|&i| x[i]).filter(|v| v.is_finite()).collect();
                Corner::Num(if f.is_empty() {
                    f64::NAN
                } else {
                    f.iter().sum::<f64>() / f.len() as f64
                })
            }
        };
        out.insert(combo, v);
    }
    Ok(out)
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

/// The points one level adds, and why.
#[derive(Debug, Clone)]
pub struct LevelPlan {
    pub level: u32,
    /// Cells split to plan this level (0 at level 0).
    pub cells_split: usize,
    /// New parameter combinations (each with `spec.repeats` points, or adaptive ones).
    pub combos: usize,
    /// Splits left out because of `max_points`.
    pub truncated: bool,
    pub plan: Plan,
}

/// The refinement's planning state: which combinations are planned and which cells
/// may split next. A level's plan depends only on the rows of the levels before it.
pub struct Refiner<'a> {
    spec: &'a SweepSpec,
    r: &'a Refine,
    lat: Lattice,
    planned: BTreeSet<u64>,
    cells: Vec<Cell>,
    /// Points planned so far (combinations × repeats; adaptive: × max).
    total: usize,
    level: u32,
}

impl<'a> Refiner<'a> {
    pub fn new(spec: &'a SweepSpec) -> Result<Refiner<'a>, SweepError> {
        let r = spec
            .refine
            .as_ref()
            .ok_or_else(|| SweepError::Dataset("the sweep file has no [refine] table".into()))?;
        let lat = Lattice::new(spec, r);
        Ok(Refiner {
            spec,
            r,
            lat,
            planned: BTreeSet::new(),
            cells: Vec::new(),
            total: 0,
            level: 0,
        })
    }

    fn plan_of(&self, idx: &[Vec<usize>], level: u32) -> Result<Plan, SweepError> {
        let mut points = Vec::new();
        for i in idx {
            points.extend(combo_points(
                self.spec,
                self.lat.combo(i),
                &self.lat.values(self.spec, i),
                level,
            )?);
        }
        Ok(Plan { points })
    }

    /// Level 0: the axes' own grid.
    pub fn level0(&mut self) -> Result<LevelPlan, SweepError> {
        let lat = &self.lat;
        let grid = lat.grid(self.spec);
        self.planned = grid.iter().map(|i| lat.combo(i)).collect();
        self.cells = grid
            .iter()
            .filter(|b| {
                b.iter()
                    .enumerate()
                    .all(|(g, &i)| !lat.refined[g] || i + lat.stride < lat.sizes[g])
            })
            .map(|b| Cell {
                base: b.clone(),
                size: lat.stride,
            })
            .collect();
        self.total = grid.len() * self.spec.repeats;
        self.level = 0;
        Ok(LevelPlan {
            level: 0,
            cells_split: 0,
            combos: grid.len(),
            truncated: false,
            plan: self.plan_of(&grid, 0)?,
        })
    }

    /// The next level from the rows written so far (`ds` holds every row of the
    /// levels before it); `None` when no cell splits or `max_level` is reached.
    pub fn next_level(&mut self, ds: &Dataset) -> Result<Option<LevelPlan>, SweepError> {
        if self.level >= self.r.max_level {
            return Ok(None);
        }
        let level = self.level + 1;
        let lat = &self.lat;
        let repeats = self.spec.repeats;
        let values = corner_values(self.r, ds, &self.planned)?;
        let mut next = Vec::new();
        let mut level_idx: Vec<Vec<usize>> = Vec::new();
        let mut new_here: BTreeSet<u64> = BTreeSet::new();
        let (mut cells_split, mut truncated) = (0, false);
        for cell in &self.cells {
            let corners: Vec<Option<&Corner>> = cell
                .points(lat, cell.size)
                .iter()
                .map(|p| values.get(&lat.combo(p)))
                .collect();
            if !disagree(&self.r.by, &corners) {
                continue;
            }
            let h = cell.size / 2;
            let fresh: Vec<Vec<usize>> = cell
                .points(lat, h)
                .into_iter()
                .filter(|p| {
                    let c = lat.combo(p);
                    !self.planned.contains(&c) && !new_here.contains(&c)
                })
                .collect();
            if self.total + fresh.len() * repeats > self.r.max_points {
                truncated = true;
                break;
            }
            self.total += fresh.len() * repeats;
            cells_split += 1;
            for p in fresh {
                new_here.insert(lat.combo(&p));
                level_idx.push(p);
            }
            // Its 2^d sub-cells are candidates of the next level.
            let sub = Cell {
                base: cell.base.clone(),
                size: h,
            };
            for base in sub.points(lat, h) {
                next.push(Cell { base, size: h });
            }
        }
        self.planned.extend(new_here.iter().copied());
        level_idx.sort_by_key(|p| lat.combo(p));
        self.cells = next;
        self.level = level;
        if level_idx.is_empty() {
            return Ok(None);
        }
        Ok(Some(LevelPlan {
            level,
            cells_split,
            combos: level_idx.len(),
            truncated,
            plan: self.plan_of(&level_idx, level)?,
        }))
    }
}

/// The level-0 points of a refined sweep (its axes' grid, with lattice ids).
pub fn level0_plan(spec: &SweepSpec) -> Result<Plan, SweepError> {
    Ok(Refiner::new(spec)?.level0()?.plan)
}

/// A refined dataset's plan, computed from its rows as the runner computes it.
#[derive(Debug, Clone, Default)]
pub struct RefinedPlan {
    /// Every point id planned by the levels whose planning the rows allow.
    pub ids: BTreeSet<u64>,
    /// The first level with points still to run, and how many.
    pub open_level: Option<(u32, usize)>,
}

/// Plan a refined sweep from the rows `ds` it wrote, level by level with the runner's
/// [`Refiner`]: a level's plan needs every row of the levels before it (with adaptive
/// repeats, every round its combinations asked for).
pub fn plan_from_rows(spec: &SweepSpec, ds: &Dataset) -> Result<RefinedPlan, SweepError> {
    let present: std::collections::HashSet<u64> = ds.point_ids().into_iter().collect();
    let classes = crate::sweep::adaptive::classes_by_id(ds);
    let mut refiner = Refiner::new(spec)?;
    let mut plan = RefinedPlan::default();
    let mut next = Some(refiner.level0()?);
    while let Some(lp) = next {
        let (ids, missing) = match &spec.adaptive {
            None => {
                let ids: Vec<u64> = lp.plan.points.iter().map(|p| p.point_id).collect();
                let missing = ids.iter().filter(|id| !present.contains(id)).count();
                (ids, missing)
            }
            Some(a) => {
                let points: Vec<_> = lp.plan.points.iter().collect();
                let s = crate::sweep::adaptive::state_of(a, &points, &classes);
                (s.planned, s.todo.len())
            }
        };
        plan.ids.extend(ids);
        if missing > 0 {
            plan.open_level = Some((lp.level, missing));
            break;
        }
        next = refiner.next_level(ds)?;
    }
    Ok(plan)
}
