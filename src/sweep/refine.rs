//! Adaptive refinement (`[refine]`): start from the axes' grid, then, level by level,
//! split the cells whose corner points disagree (on the class, on a class fraction or
//! on a metric by more than a threshold), up to `max_level` halvings and `max_points`
//! runs in all. This module holds the splitting decision (the table and the
//! lattice are [`crate::sweep::lattice`]); [`crate::sweep::atlas`] runs the levels.
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

use crate::dataset::schema::{COL_CLASS, COL_COMBO};
use crate::dataset::{Column, Rows};
use crate::metrics::Class;
use crate::sweep::lattice::{FractionTest, Lattice, Refine, RefineBy};
use crate::sweep::plan::combo_points;
use crate::sweep::summary::{wilson, Z95};
use crate::sweep::{Plan, SweepError, SweepSpec};

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
    ds: &Rows,
    combos: &BTreeSet<u64>,
) -> Result<HashMap<u64, Corner>, SweepError> {
    let mut rows: HashMap<u64, Vec<usize>> = HashMap::new();
    let Some(Column::Num(combo)) = ds.column(COL_COMBO) else {
        return Err(no_column(COL_COMBO));
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
                let cls = text(COL_CLASS)?;
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
                let cls = text(COL_CLASS)?;
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
        let lat = Lattice::new(&spec.shape(), r);
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
                &self.lat.values(&self.spec.shape(), i),
                level,
            )?);
        }
        Ok(Plan { points })
    }

    /// Level 0: the axes' own grid.
    pub fn level0(&mut self) -> Result<LevelPlan, SweepError> {
        let lat = &self.lat;
        let grid = lat.grid(&self.spec.shape());
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
    pub fn next_level(&mut self, ds: &Rows) -> Result<Option<LevelPlan>, SweepError> {
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

/// The most points a refined sweep may plan in all levels: `max_points`, or every point
/// of its finest lattice (at its repeats) where that has fewer.
pub fn most_points(spec: &SweepSpec) -> Result<usize, SweepError> {
    let r = Refiner::new(spec)?;
    let fine = r
        .lat
        .sizes
        .iter()
        .fold(spec.repeats, |acc, &n| acc.saturating_mul(n));
    Ok(fine.min(r.r.max_points))
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
pub fn plan_from_rows(spec: &SweepSpec, ds: &Rows) -> Result<RefinedPlan, SweepError> {
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
