//! Planning: a sweep becomes a list of points with stable ids, optionally one shard of it.
//!
//! `point_id = combination * repeats + repeat`, combinations numbered with the first
//! axis group outermost. Ids depend only on the sweep file, never on sharding, batch
//! size or what was already run, so part files from any shard or run can be merged.

use std::f64::consts::TAU;

use crate::simulate::{ConfigError, RunConfig};
use crate::sweep::rng::SplitMix64;
use crate::sweep::{SweepError, SweepSpec};

/// Most points one process plans (a 10-million-point sweep runs as shards).
pub const MAX_PLANNED_POINTS: usize = 2_000_000;

/// Tag of the random-phase streams (kept apart from the axes' streams).
const PHASE_STREAM: u64 = 0x5048_4153_4553; // "PHASES"

/// One point of a sweep.
#[derive(Debug, Clone)]
pub struct PlannedPoint {
    pub point_id: u64,
    /// Index of the parameter combination (shared by its repeats).
    pub combo: u64,
    pub repeat: u32,
    /// Refinement level that planned the point (0: the axes' own grid).
    pub level: u32,
    pub cfg: RunConfig,
}

/// All points of a sweep, in id order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub points: Vec<PlannedPoint>,
}

/// A slice of a sweep: shard `index` (0-based) of `count`, by point id modulo `count`
/// (round robin, so every shard gets a similar mix of cheap and costly points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// Parse `K/N` (K = 0..N-1).
    pub fn parse(text: &str) -> Result<Shard, SweepError> {
        let bad = || {
            SweepError::Shard(format!(
                "--shard `{text}`: expected K/N with N >= 1 and K in [0, N-1], e.g. 0/4"
            ))
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        let n: usize = n.trim().parse().map_err(|_| bad())?;
        Shard::new(k, n).map_err(|_| bad())
    }

    pub fn new(index: usize, count: usize) -> Result<Shard, SweepError> {
        if count == 0 || index >= count {
            return Err(SweepError::Shard(format!(
                "shard {index}/{count}: allowed is N >= 1 and K in [0, N-1]"
            )));
        }
        Ok(Shard { index, count })
    }

    /// The shard of a SLURM job array task, from `SLURM_ARRAY_TASK_ID`,
    /// `SLURM_ARRAY_TASK_COUNT` and (when set) `SLURM_ARRAY_TASK_MIN`; `None` outside one.
    pub fn from_slurm(env: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, SweepError> {
        let (id, count) = match (env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")) {
            (Some(id), Some(count)) => (id, count),
            (None, _) => return Ok(None),
            // Running the whole sweep in every task would write it N times over.
            (Some(id), None) => {
                return Err(SweepError::Shard(format!(
                    "SLURM_ARRAY_TASK_ID = {id} is set without SLURM_ARRAY_TASK_COUNT (an older \
                     Slurm?): pass --shard {id}/N (or set METACHRON_SHARDS=N in the batch script)"
                )))
            }
        };
        let num = |name: &str, v: &str| {
            v.trim().parse::<usize>().map_err(|_| {
                SweepError::Shard(format!("{name} = `{v}`: expected a non-negative integer"))
            })
        };
        let id = num("SLURM_ARRAY_TASK_ID", &id)?;
        let count = num("SLURM_ARRAY_TASK_COUNT", &count)?;
        let min = match env("SLURM_ARRAY_TASK_MIN") {
            Some(m) => num("SLURM_ARRAY_TASK_MIN", &m)?,
            None => 0,
        };
        let index = id.checked_sub(min).ok_or_else(|| {
            SweepError::Shard(format!(
                "SLURM_ARRAY_TASK_ID = {id} is below SLURM_ARRAY_TASK_MIN = {min}"
            ))
        })?;
        Shard::new(index, count).map(Some).map_err(|_| {
            SweepError::Shard(format!(
                "SLURM array task {id} (min {min}) of {count}: use a contiguous array \
                 (--array=0-{}) so that tasks map to shards 0..{}",
                count.saturating_sub(1),
                count.saturating_sub(1)
            ))
        })
    }

    pub fn contains(&self, point_id: u64) -> bool {
        point_id % self.count as u64 == self.index as u64
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The repeats of parameter combination `combo`, whose axes take `values` (axis index,
/// value): validated configurations with ids `combo * repeats + repeat`.
pub fn combo_points(
    spec: &SweepSpec,
    combo: u64,
    values: &[(usize, toml::Value)],
    level: u32,
) -> Result<Vec<PlannedPoint>, SweepError> {
    let repeats = spec.repeats as u64;
    let mut table = spec.base.clone();
    let mut desc = Vec::new();
    for (a, v) in values {
        let axis = &spec.axes[*a];
        desc.push(format!("{} = {v}", axis.param));
        table.insert(axis.param.clone(), v.clone());
    }
    let point_err = |point_id: u64, source: ConfigError| SweepError::Config {
        file: spec.file.clone(),
        context: format!("point {point_id} ({})", desc.join(", ")),
        cause: Box::new(source),
    };
    let params = crate::Params::from_toml_table(table).map_err(|source| {
        point_err(
            combo * repeats,
            ConfigError::Param {
                path: "parameters".into(),
                source,
            },
        )
    })?;
    let mut points = Vec::with_capacity(spec.repeats);
    for r in 0..repeats {
        let point_id = combo * repeats + r;
        let mut cfg = spec.config.clone();
        cfg.params = params.clone();
        if spec.random_phases {
            let mut rng = SplitMix64::derive(spec.seed, &[PHASE_STREAM, point_id]);
            cfg.params.psi_init = Some((0..params.n_legs).map(|_| TAU * rng.next_f64()).collect());
        }
        cfg.validate().map_err(|e| point_err(point_id, e))?;
        points.push(PlannedPoint {
            point_id,
            combo,
            repeat: r as u32,
            level,
            cfg,
        });
    }
    Ok(points)
}

impl Plan {
    /// Plan every point of `spec`; each point is validated, and an invalid one is an
    /// error naming the file, the point's axis values and the parameter's allowed range.
    pub fn new(spec: &SweepSpec) -> Result<Plan, SweepError> {
        Plan::for_shard(spec, Shard::default())
    }

    /// Plan only the points of `shard` (what one task of a job array runs): memory
    /// and time in proportion to the shard, refused above [`MAX_PLANNED_POINTS`].
    pub fn for_shard(spec: &SweepSpec, shard: Shard) -> Result<Plan, SweepError> {
        let sizes: Vec<usize> = spec
            .groups
            .iter()
            .map(|g| spec.axes[g[0]].values.len())
            .collect();
        let combos = spec.combinations();
        let total = spec.point_count();
        let mine = total.saturating_sub(shard.index).div_ceil(shard.count);
        if mine > MAX_PLANNED_POINTS {
            return Err(SweepError::Shard(format!(
                "{}: {total} points, {mine} of them in shard {shard}: one process plans at most \
                 {MAX_PLANNED_POINTS} points (~1 KB each in memory); run it as at least {} \
                 shards (--shard K/N, or a job array)",
                spec.file,
                total.div_ceil(MAX_PLANNED_POINTS)
            )));
        }
        let mut points = Vec::with_capacity(mine);
        for c in 0..combos {
            let first = c * spec.repeats;
            if spec.repeats < shard.count
                && !(first..first + spec.repeats).any(|id| shard.contains(id as u64))
            {
                continue;
            }
            // Mixed radix, last group fastest.
            let mut idx = vec![0usize; sizes.len()];
            let mut rest = c;
            for g in (0..sizes.len()).rev() {
                idx[g] = rest % sizes[g];
                rest /= sizes[g];
            }
            let mut values = Vec::new();
            for (g, members) in spec.groups.iter().enumerate() {
                for &m in members {
                    values.push((m, spec.axes[m].values[idx[g]].clone()));
                }
            }
            points.extend(
                combo_points(spec, c as u64, &values, 0)?
                    .into_iter()
                    .filter(|p| shard.contains(p.point_id)),
            );
        }
        Ok(Plan { points })
    }

    /// The points of one shard.
    pub fn shard(&self, shard: Shard) -> Vec<&PlannedPoint> {
        self.points
            .iter()
            .filter(|p| shard.contains(p.point_id))
            .collect()
    }
}
