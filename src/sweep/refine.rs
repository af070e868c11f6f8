//! Adaptive refinement (`[refine]`): start from the axes' grid, then, level by level,
//! split the cells whose corner points disagree (on the class, or on a metric by more
//! than a threshold), up to `max_level` halvings and `max_points` runs in all.
//!
//! ```toml
//! [refine]
//! by = "class"        # or a metric column, with threshold = 0.1
//! max_level = 3
//! max_points = 5000
//! axes = ["alpha", "beta"]   # optional: default every linspace/logspace axis (<= 3)
//! ```
//!
//! Every point lives on the finest lattice: a refined axis of `num` values has
//! `(num − 1)·2^max_level + 1` lattice values, the same values a dense linspace/logspace
//! axis of that size has, and a point's combination id is its lattice index (mixed
//! radix, first group outermost, like [`crate::sweep::Plan`]). So a refined sweep and
//! the dense sweep of its lattice share ids; planning is deterministic, a level's plan
//! depends only on the rows of the levels before it, and `--resume` and `--shard` work
//! as for any sweep (a shard that finished its part of a level waits for the others'
//! rows: rerun it with `--resume` once they are written).

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::metrics::{Class, METRIC_COLUMNS};
use crate::sweep::dataset::{self, Column, Dataset};
use crate::sweep::plan::combo_points;
use crate::sweep::run::{self, RunOptions};
use crate::sweep::spec::spaced_value;
use crate::sweep::verify;
use crate::sweep::{AxisKind, Plan, PlannedPoint, SweepError, SweepSpec};

/// What decides that a cell's corners disagree.
#[derive(Debug, Clone, PartialEq)]
pub enum RefineBy {
    /// The class (most frequent over repeats) differs between corners.
    Class,
    /// The metric (mean over repeats) spans more than `threshold` over the corners.
    Metric { column: String, threshold: f64 },
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

const KEYS: &[&str] = &["by", "threshold", "max_level", "max_points", "axes"];
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
        let by = if by == "class" {
            if threshold.is_some() {
                return Err(err(
                    "threshold",
                    "only with a metric column (`by = \"lag_order\"`, ...)".into(),
                ));
            }
            RefineBy::Class
        } else if METRIC_COLUMNS.iter().any(|(m, _)| *m == by) {
            let threshold = threshold.ok_or_else(|| {
                err(
                    "threshold",
                    format!("missing: refining by `{by}` needs a threshold (>= 0)"),
                )
            })?;
            RefineBy::Metric {
                column: by,
                threshold,
            }
        } else {
            let names: Vec<&str> = METRIC_COLUMNS.iter().map(|(m, _)| *m).collect();
            return Err(err(
                "by",
                format!("`{by}`: use \"class\" or a metric: {}", names.join(", ")),
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
        if spec.adaptive.is_some() {
            return Err(err(
                "axes",
                "refinement and adaptive repeats do not combine: give `repeats` a number".into(),
            ));
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

/// One level's outcome.
#[derive(Debug, Clone, Default)]
pub struct LevelReport {
    pub level: u32,
    /// Cells split to plan this level (0 at level 0).
    pub cells_split: usize,
    /// New parameter combinations and points (combinations × repeats).
    pub combos: usize,
    pub points: usize,
    /// Points this process ran.
    pub points_run: usize,
    /// Splits left out because of `max_points`.
    pub truncated: bool,
}

/// How a refined sweep ended.
#[derive(Debug, Clone)]
pub enum RefineOutcome {
    /// Every level is written.
    Done(Vec<LevelReport>),
    /// This shard wrote its part of `level`; other shards' rows are still missing.
    Waiting { level: u32, missing: usize },
    /// Stopped after `stop_after_chunks` (tests of interruption).
    Stopped,
}

/// Value of a combination's corner: its class or its metric (over its repeats).
#[derive(Debug, Clone, PartialEq)]
enum Corner {
    Class(String),
    Num(f64),
}

/// Whether a cell's corners disagree: a corner without a value, different classes,
/// a metric spanning more than the threshold, or a metric finite at some corners only.
fn disagree(by: &RefineBy, corners: &[Option<&Corner>]) -> bool {
    if corners.iter().any(|c| c.is_none()) {
        return true;
    }
    let corners: Vec<&Corner> = corners.iter().flatten().copied().collect();
    match by {
        RefineBy::Class => corners.windows(2).any(|w| w[0] != w[1]),
        RefineBy::Metric { threshold, .. } => {
            let x: Vec<f64> = corners
                .iter()
                .map(|c| match c {
                    Corner::Num(x) => *x,
                    Corner::Class(_) => f64::NAN,
                })
                .collect();
            let finite: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
            if finite.is_empty() {
                return false;
            }
            let (lo, hi) = finite
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            finite.len() != x.len() || hi - lo > *threshold
        }
    }
}

/// Corner values of `combos` from the rows `ds` (the rows written under `out`).
fn corner_values(
    spec: &SweepSpec,
    r: &Refine,
    out: &std::path::Path,
    ds: &Dataset,
    combos: &BTreeSet<u64>,
) -> Result<HashMap<u64, Corner>, SweepError> {
    let ids = ds.point_ids();
    let col = |name: &str| {
        ds.column(name).ok_or_else(|| {
            SweepError::Dataset(format!(
                "{}: the dataset has no column `{name}`",
                out.display()
            ))
        })
    };
    let repeats = spec.repeats as u64;
    let mut rows: HashMap<u64, Vec<usize>> = HashMap::new();
    for (row, id) in ids.iter().enumerate() {
        if combos.contains(&(id / repeats)) {
            rows.entry(id / repeats).or_default().push(row);
        }
    }
    let mut out_map = HashMap::new();
    for (combo, rs) in rows {
        let v = match (
            &r.by,
            col(match &r.by {
                RefineBy::Class => "class",
                RefineBy::Metric { column, .. } => column,
            })?,
        ) {
            (RefineBy::Class, Column::Text(cls)) => {
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
            (RefineBy::Metric { .. }, Column::Num(x)) => {
                let f: Vec<f64> = rs.iter().map(|&i| x[i]).filter(|v| v.is_finite()).collect();
                Corner::Num(if f.is_empty() {
                    f64::NAN
                } else {
                    f.iter().sum::<f64>() / f.len() as f64
                })
            }
            _ => {
                return Err(SweepError::Dataset(format!(
                    "{}: column type of the refinement criterion is not as expected",
                    out.display()
                )))
            }
        };
        out_map.insert(combo, v);
    }
    Ok(out_map)
}

/// The level-0 points of a refined sweep (its axes' grid, with lattice ids).
pub fn level0_plan(spec: &SweepSpec, r: &Refine) -> Result<Plan, SweepError> {
    let lat = Lattice::new(spec, r);
    let mut points = Vec::new();
    for idx in lat.grid(spec) {
        points.extend(combo_points(
            spec,
            lat.combo(&idx),
            &lat.values(spec, &idx),
            0,
        )?);
    }
    Ok(Plan { points })
}

/// The planning of a refined sweep between levels: what is planned so far, the cells
/// that may split next, and the lattice points of the level just planned. The runner
/// and `metachron check` plan with it alike.
struct Planner<'a> {
    spec: &'a SweepSpec,
    r: &'a Refine,
    lat: Lattice,
    planned: BTreeSet<u64>,
    cells: Vec<Cell>,
    total: usize,
    /// Lattice points of the current level, in id order.
    level_idx: Vec<Vec<usize>>,
}

impl<'a> Planner<'a> {
    /// Level 0: the axes' own grid.
    fn new(spec: &'a SweepSpec, r: &'a Refine) -> Planner<'a> {
        let lat = Lattice::new(spec, r);
        let grid = lat.grid(spec);
        let planned: BTreeSet<u64> = grid.iter().map(|i| lat.combo(i)).collect();
        let cells: Vec<Cell> = grid
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
        let total = planned.len() * spec.repeats;
        Planner {
            spec,
            r,
            lat,
            planned,
            cells,
            total,
            level_idx: grid,
        }
    }

    /// Plan the next level from the corner values of what is planned so far: split
    /// the cells whose corners disagree (within `max_points`). Fills `report`'s
    /// `cells_split` and `truncated`; an empty `level_idx` afterwards means done.
    fn advance(&mut self, values: &HashMap<u64, Corner>, report: &mut LevelReport) {
        let lat = &self.lat;
        let mut next = Vec::new();
        self.level_idx.clear();
        let mut new_here: HashSet<u64> = HashSet::new();
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
            if self.total + fresh.len() * self.spec.repeats > self.r.max_points {
                report.truncated = true;
                break;
            }
            self.total += fresh.len() * self.spec.repeats;
            report.cells_split += 1;
            for p in fresh {
                new_here.insert(lat.combo(&p));
                self.level_idx.push(p);
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
        self.level_idx.sort_by_key(|p| lat.combo(p));
        self.cells = next;
    }

    /// Point ids of the current level (every repeat of its combinations).
    fn level_ids(&self) -> Vec<u64> {
        let repeats = self.spec.repeats as u64;
        self.level_idx
            .iter()
            .flat_map(|idx| {
                let c = self.lat.combo(idx);
                (0..repeats).map(move |k| c * repeats + k)
            })
            .collect()
    }
}

/// A refined dataset's plan, computed from its rows as the runner computes it.
#[derive(Debug, Clone, Default)]
pub struct RefinedPlan {
    /// Every point id planned by the levels whose planning the rows allow.
    pub ids: BTreeSet<u64>,
    /// The first level with points still to run, and how many.
    pub open_level: Option<(u32, usize)>,
}

/// Plan a refined sweep from the rows `ds` it wrote (under `out`), level by level as
/// [`run_refined`] does: a level's plan needs every row of the levels before it.
pub fn plan_from_rows(
    spec: &SweepSpec,
    out: &std::path::Path,
    ds: &Dataset,
) -> Result<RefinedPlan, SweepError> {
    let r = spec
        .refine
        .as_ref()
        .ok_or_else(|| SweepError::Dataset("the sweep file has no [refine] table".into()))?;
    let present: HashSet<u64> = ds.point_ids().into_iter().collect();
    let mut planner = Planner::new(spec, r);
    let mut plan = RefinedPlan::default();
    for level in 0..=r.max_level {
        if level > 0 {
            let values = corner_values(spec, r, out, ds, &planner.planned)?;
            planner.advance(&values, &mut LevelReport::default());
            if planner.level_idx.is_empty() {
                break;
            }
        }
        let ids = planner.level_ids();
        let missing = ids.iter().filter(|id| !present.contains(id)).count();
        plan.ids.extend(ids);
        if missing > 0 {
            plan.open_level = Some((level, missing));
            break;
        }
    }
    Ok(plan)
}

/// Run a refined sweep level by level (this shard's points of each level), writing
/// part files as [`run::run`] does. `on_level` sees each finished level.
pub fn run_refined(
    spec: &SweepSpec,
    opts: &RunOptions,
    mut on_level: impl FnMut(&LevelReport),
) -> Result<RefineOutcome, SweepError> {
    let r = spec
        .refine
        .as_ref()
        .ok_or_else(|| SweepError::Dataset("the sweep file has no [refine] table".into()))?;
    let mut planner = Planner::new(spec, r);
    let mut chunks_left = opts.stop_after_chunks;
    let mut reports = Vec::new();
    for level in 0..=r.max_level {
        let mut report = LevelReport {
            level,
            ..LevelReport::default()
        };
        if level > 0 {
            let ds = dataset::read_dataset(&opts.out)?;
            let values = corner_values(spec, r, &opts.out, &ds, &planner.planned)?;
            planner.advance(&values, &mut report);
            if planner.level_idx.is_empty() {
                break;
            }
        }
        let mut points: Vec<PlannedPoint> = Vec::new();
        for idx in &planner.level_idx {
            points.extend(combo_points(
                spec,
                planner.lat.combo(idx),
                &planner.lat.values(spec, idx),
                level,
            )?);
        }
        report.combos = planner.level_idx.len();
        report.points = points.len();
        let plan = Plan { points };
        let level_opts = RunOptions {
            resume: opts.resume || level > 0,
            stop_after_chunks: chunks_left,
            ..opts.clone()
        };
        let work = run::work(spec, &plan, &level_opts)?;
        let s = run::run(spec, &work.pending, &level_opts, |_| {})?;
        report.points_run = s.points_run;
        if s.stopped {
            return Ok(RefineOutcome::Stopped);
        }
        if let Some(k) = chunks_left.as_mut() {
            *k -= s.chunks_written;
        }
        // What the verified parts hold (a foreign or corrupt file counts for nothing).
        let done = verify::scan(&opts.out, &run::expected(spec)?)?.done_ids();
        let missing = plan
            .points
            .iter()
            .filter(|p| !done.contains(&p.point_id))
            .count();
        on_level(&report);
        reports.push(report);
        if missing > 0 {
            return Ok(RefineOutcome::Waiting { level, missing });
        }
    }
    Ok(RefineOutcome::Done(reports))
}
