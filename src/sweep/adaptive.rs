//! Adaptive repeats: `repeats = { min = 8, max = 256, ci_width = 0.1 }` runs `min`
//! repeats of every combination, then keeps doubling a combination's repeats (up to
//! `max`) while the Wilson 95 % interval of any of its class fractions is `ci_width`
//! wide or wider.
//!
//! Point ids are those of a sweep with `repeats = max` (`combo · max + repeat`), and a
//! combination's decision at each round reads only its repeats below that round's
//! target (min, 2·min, 4·min, …, max): which points run depends only on results, never
//! on batch size or on where a run was interrupted, so `--resume` continues it exactly.

use std::collections::HashMap;

use crate::sweep::dataset::{self, Column};
use crate::sweep::run::{self, RunOptions};
use crate::sweep::summary::widest_interval;
use crate::sweep::{Plan, PlannedPoint, SweepError, SweepSpec};

/// `repeats = { min, max, ci_width }`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveRepeats {
    pub min: usize,
    pub max: usize,
    pub ci_width: f64,
}

const KEYS: &[&str] = &["min", "max", "ci_width"];

impl AdaptiveRepeats {
    pub fn parse(file: &str, mut t: toml::Table) -> Result<AdaptiveRepeats, SweepError> {
        let err = |key: &str, message: String| SweepError::Key {
            file: file.to_string(),
            key: format!("repeats.{key}"),
            message,
        };
        if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                k,
                "unknown key; adaptive repeats are { min = 8, max = 256, ci_width = 0.1 }".into(),
            ));
        }
        let mut int = |key: &str| match t.remove(key) {
            Some(toml::Value::Integer(i)) if (1..=1_000_000).contains(&i) => Ok(i as usize),
            Some(other) => Err(err(
                key,
                format!("expected an integer in [1, 1000000], got `{other}`"),
            )),
            None => Err(err(key, "missing: give min, max and ci_width".into())),
        };
        let (min, max) = (int("min")?, int("max")?);
        if max < min {
            return Err(err("max", format!("{max} is below min = {min}")));
        }
        let ci_width = match t.remove("ci_width") {
            Some(toml::Value::Float(x)) if x > 0.0 && x <= 1.0 => x,
            Some(other) => {
                return Err(err(
                    "ci_width",
                    format!("expected a number in (0, 1], got `{other}`"),
                ))
            }
            None => {
                return Err(err(
                    "ci_width",
                    "missing: give min, max and ci_width".into(),
                ))
            }
        };
        Ok(AdaptiveRepeats { min, max, ci_width })
    }

    /// The repeat counts a combination may reach: min, 2·min, 4·min, …, max.
    pub fn targets(&self) -> Vec<usize> {
        let mut out = vec![self.min];
        while *out.last().unwrap_or(&self.max) < self.max {
            let next = (out[out.len() - 1] * 2).min(self.max);
            out.push(next);
        }
        out
    }
}

/// One round of an adaptive sweep.
#[derive(Debug, Clone, Default)]
pub struct Round {
    /// Combinations still adding runs, and the points run for them.
    pub combos: usize,
    pub points_run: usize,
}

/// How an adaptive sweep ended.
#[derive(Debug, Clone)]
pub enum AdaptiveOutcome {
    Done(Vec<Round>),
    Stopped,
}

/// Where an adaptive sweep stands, from the classes of its written points.
#[derive(Debug, Clone, Default)]
pub struct AdaptiveState {
    /// Point ids still to run: for every combination, the repeats below its current
    /// target that are not written yet.
    pub todo: Vec<u64>,
    /// Every point id of the targets reached so far (written or to run).
    pub planned: Vec<u64>,
    /// Combinations still adding runs.
    pub open: usize,
}

/// Where an adaptive sweep of `combos` combinations stands (`classes`: class label
/// per written point id); the runner and `metachron check` decide alike.
pub fn state(a: &AdaptiveRepeats, combos: u64, classes: &HashMap<u64, String>) -> AdaptiveState {
    let max = a.max as u64;
    let mut s = AdaptiveState::default();
    for c in 0..combos {
        for &target in &a.targets() {
            let ids = c * max..c * max + target as u64;
            let todo: Vec<u64> = ids.clone().filter(|id| !classes.contains_key(id)).collect();
            s.planned.extend(ids.clone());
            if !todo.is_empty() {
                s.open += 1;
                s.todo.extend(todo);
                break;
            }
            let width = widest_interval(ids.map(|id| classes[&id].as_str()));
            if width < a.ci_width {
                break;
            }
        }
    }
    s.planned.sort_unstable();
    s.planned.dedup();
    s
}

/// The points still to run (see [`state`]).
fn pending<'a>(
    a: &AdaptiveRepeats,
    plan: &'a Plan,
    classes: &HashMap<u64, String>,
) -> (Vec<&'a PlannedPoint>, usize) {
    let combos = plan.points.len() as u64 / a.max as u64;
    let s = state(a, combos, classes);
    let out = s.todo.iter().map(|&id| &plan.points[id as usize]).collect();
    (out, s.open)
}

/// Run an adaptive-repeats sweep round by round (unsharded), writing part files as
/// [`run::run`] does; `on_round` sees each round before it runs.
pub fn run_adaptive(
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    mut on_round: impl FnMut(&Round),
) -> Result<AdaptiveOutcome, SweepError> {
    let a = spec
        .adaptive
        .ok_or_else(|| SweepError::Dataset("the sweep file has no adaptive repeats".into()))?;
    if opts.shard.count > 1 {
        return Err(SweepError::Shard(format!(
            "--shard {}: adaptive repeats decide from all runs of a combination, so they run \
             unsharded (give `repeats` a number to shard the sweep)",
            opts.shard
        )));
    }
    let mut rounds = Vec::new();
    let mut chunks_left = opts.stop_after_chunks;
    // The first round goes through `work`: it refuses a foreign or unflagged dataset.
    run::work(spec, plan, opts)?;
    loop {
        let ds = dataset::read_dataset(&opts.out)?;
        let mut classes = HashMap::new();
        if let Some(Column::Text(cls)) = ds.column("class") {
            for (id, c) in ds.point_ids().into_iter().zip(cls) {
                classes.insert(id, c.clone());
            }
        }
        let (todo, open) = pending(&a, plan, &classes);
        if todo.is_empty() {
            return Ok(AdaptiveOutcome::Done(rounds));
        }
        let mut round = Round {
            combos: open,
            points_run: 0,
        };
        on_round(&round);
        let round_opts = RunOptions {
            resume: true,
            stop_after_chunks: chunks_left,
            ..opts.clone()
        };
        let s = run::run(spec, &todo, &round_opts, |_| {})?;
        if s.stopped {
            return Ok(AdaptiveOutcome::Stopped);
        }
        if let Some(k) = chunks_left.as_mut() {
            *k -= s.chunks_written;
        }
        round.points_run = s.points_run;
        rounds.push(round);
    }
}
