//! Planning: a sweep becomes a list of points with stable ids, optionally one shard of it.
//!
//! `point_id = combination * repeats + repeat`, combinations numbered with the first
//! axis group outermost. Ids depend only on the sweep file, never on sharding, batch
//! size or what was already run, so part files from any shard or run can be merged.

use std::f64::consts::TAU;

use crate::dataset::part::RowPoint;
pub use crate::dataset::Shard;
use crate::simulate::{ConfigError, RunConfig};
use crate::sweep::rng::SplitMix64;
use crate::sweep::{SweepError, SweepSpec};

/// Most points one process plans (a 10-million-point sweep runs as shards).
pub const MAX_PLANNED_POINTS: usize = 2_000_000;

/// Tag of the random-phase streams (kept apart from the axes' streams).
const PHASE_STREAM: u64 = 0x5048_4153_4553; // "PHASES"

/// Tag of the jittered-start streams.
const JITTER_STREAM: u64 = 0x4A49_5454_4552; // "JITTER"

/// Tag of the per-repeat terrain seeds.
const TERRAIN_STREAM: u64 = 0x0054_4552_5241_494E; // "TERRAIN"

/// Resolve a jittered start (`phase_jitter` > 0, no `psi_init`) into `psi_init`, its
/// offsets drawn from the stream of (`seed`, `point_id`): a sweep's point, or a single
/// run as point 0 of seed 0. Nothing changes without a jitter.
pub fn resolve_jitter(params: &mut crate::Params, seed: u64, point_id: u64) {
    let mut rng = SplitMix64::derive(seed, &[JITTER_STREAM, point_id]);
    if let Some(psi) = params.jittered_start(|| rng.next_f64()) {
        params.psi_init = Some(psi);
    }
}

/// The ground of repeat `repeat` when every repeat has its own (`terrain_seed_per_repeat`):
/// a seed in [0, 2^32) drawn from (`seed`, `repeat`), the same for every combination, so
/// that combinations are compared on the same set of grounds.
pub fn repeat_terrain_seed(seed: u64, repeat: u64) -> usize {
    (SplitMix64::derive(seed, &[TERRAIN_STREAM, repeat]).next_u64() >> 32) as usize
}

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

impl RowPoint for PlannedPoint {
    fn point_id(&self) -> u64 {
        self.point_id
    }
    fn combo(&self) -> u64 {
        self.combo
    }
    fn repeat(&self) -> u32 {
        self.repeat
    }
    fn level(&self) -> u32 {
        self.level
    }
    fn config(&self) -> &RunConfig {
        &self.cfg
    }
}

/// All points of a sweep, in id order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub points: Vec<PlannedPoint>,
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
        if spec.terrain_seed_per_repeat {
            cfg.params.terrain_seed = repeat_terrain_seed(spec.seed, r);
        }
        resolve_jitter(&mut cfg.params, spec.seed, point_id);
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
