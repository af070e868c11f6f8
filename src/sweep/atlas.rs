//! Running atlas sweeps: adaptive repeats round by round ([`crate::sweep::adaptive`]),
//! refinement level by level ([`crate::sweep::refine`]), and both together (every
//! level's new combinations get their adaptive repeats before the next level is
//! planned from them). Part files are written as [`run::run`] writes them, so these
//! sweeps resume and (refinement with fixed repeats) shard like any other.

use crate::dataset::{rows, verify};
use crate::sweep::adaptive::{classes_by_id, pending};
use crate::sweep::refine::{LevelPlan, Refiner};
use crate::sweep::run::{self, RunOptions};
use crate::sweep::setup::with_reference_budgets;
use crate::sweep::{Plan, PlannedPoint, SweepError, SweepSpec};

/// What a running atlas sweep reports as it goes (the CLI draws it; tests ignore it).
pub trait Progress {
    /// A stage starts: `points` to run at refinement `level` (0 when not refined),
    /// adaptive round `round` (0 with fixed repeats).
    fn stage(&mut self, _level: u32, _round: usize, _points: usize) {}
    /// `done` points of the current stage are written.
    fn advance(&mut self, _done: usize) {}
    /// A refinement level is complete.
    fn level_done(&mut self, _report: &LevelReport) {}
}

/// No reporting.
impl Progress for () {}

/// One level's outcome.
#[derive(Debug, Clone, Default)]
pub struct LevelReport {
    pub level: u32,
    /// Cells split to plan this level (0 at level 0).
    pub cells_split: usize,
    /// New parameter combinations, and their points (combinations × repeats; with
    /// adaptive repeats, the points their rounds asked for).
    pub combos: usize,
    pub points: usize,
    /// Points this process ran.
    pub points_run: usize,
    /// Splits left out because of `max_points`.
    pub truncated: bool,
}

/// The line the command line and the Python package print when a level ends.
impl std::fmt::Display for LevelReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "level {}: {} cells split, {} combinations, {} points ({} run here){}",
            self.level,
            self.cells_split,
            self.combos,
            self.points,
            self.points_run,
            if self.truncated {
                ", cut at max_points"
            } else {
                ""
            }
        )
    }
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

/// What running some points came to.
struct Ran {
    rounds: Vec<Round>,
    /// Points of the stage written (run now or before).
    points: usize,
    stopped: bool,
}

/// Run `plan`'s points that are not written yet, with adaptive repeats when the sweep
/// has them; `chunks_left` counts down `stop_after_chunks`.
fn run_stage(
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    level: u32,
    chunks_left: &mut Option<usize>,
    progress: &mut dyn Progress,
) -> Result<Ran, SweepError> {
    // Points planned from results get the reference's default budget as a plain
    // sweep's do.
    let plan = &*with_reference_budgets(spec, opts.engine.backend(), plan)?;
    // `work` takes the shard's lock and refuses a foreign or unflagged dataset.
    let work = run::work(spec, plan, opts)?;
    let mut ran = Ran {
        rounds: Vec::new(),
        points: 0,
        stopped: false,
    };
    let run_opts = |chunks_left: &Option<usize>| RunOptions {
        resume: true,
        stop_after_chunks: *chunks_left,
        ..opts.clone()
    };
    let Some(a) = spec.adaptive else {
        progress.stage(level, 0, work.pending.len());
        let s = run::run(spec, &work.pending, &run_opts(chunks_left), |d| {
            progress.advance(d)
        })?;
        ran.rounds.push(Round {
            combos: plan.points.len() / spec.repeats.max(1),
            points_run: s.points_run,
        });
        ran.points = plan.points.len();
        ran.stopped = s.stopped;
        if let Some(k) = chunks_left.as_mut() {
            *k -= s.chunks_written;
        }
        return Ok(ran);
    };
    let all: Vec<&PlannedPoint> = plan.points.iter().collect();
    loop {
        let classes = classes_by_id(&rows::read_unverified(&opts.out)?);
        let (todo, open) = pending(&a, &all, &classes);
        if todo.is_empty() {
            ran.points = all
                .iter()
                .filter(|p| classes.contains_key(&p.point_id))
                .count();
            break;
        }
        progress.stage(level, ran.rounds.len() + 1, todo.len());
        let s = run::run(spec, &todo, &run_opts(chunks_left), |d| progress.advance(d))?;
        ran.rounds.push(Round {
            combos: open,
            points_run: s.points_run,
        });
        if s.stopped {
            ran.stopped = true;
            break;
        }
        if let Some(k) = chunks_left.as_mut() {
            *k -= s.chunks_written;
        }
    }
    drop(work);
    Ok(ran)
}

/// Run an adaptive-repeats sweep round by round (unsharded).
pub fn run_adaptive(
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<AdaptiveOutcome, SweepError> {
    if spec.adaptive.is_none() {
        return Err(SweepError::Dataset(
            "the sweep file has no adaptive repeats".into(),
        ));
    }
    refuse_shards(opts)?;
    let mut chunks_left = opts.stop_after_chunks;
    let ran = run_stage(spec, plan, opts, 0, &mut chunks_left, progress)?;
    Ok(if ran.stopped {
        AdaptiveOutcome::Stopped
    } else {
        AdaptiveOutcome::Done(ran.rounds)
    })
}

fn refuse_shards(opts: &RunOptions) -> Result<(), SweepError> {
    if opts.shard.count > 1 {
        return Err(SweepError::Shard(format!(
            "--shard {}: adaptive repeats decide from all runs of a combination, so they run \
             unsharded (give `repeats` a number to shard the sweep)",
            opts.shard
        )));
    }
    Ok(())
}

/// Run a refined sweep level by level (this shard's points of each level; with
/// adaptive repeats, every level's rounds), writing part files as [`run::run`] does.
pub fn run_refined(
    spec: &SweepSpec,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<RefineOutcome, SweepError> {
    if spec.adaptive.is_some() {
        refuse_shards(opts)?;
    }
    let mut refiner = Refiner::new(spec)?;
    let mut next: Option<LevelPlan> = Some(refiner.level0()?);
    let mut chunks_left = opts.stop_after_chunks;
    let mut reports = Vec::new();
    while let Some(lp) = next {
        let level_opts = RunOptions {
            resume: opts.resume || lp.level > 0,
            ..opts.clone()
        };
        let ran = run_stage(
            spec,
            &lp.plan,
            &level_opts,
            lp.level,
            &mut chunks_left,
            progress,
        )?;
        if ran.stopped {
            return Ok(RefineOutcome::Stopped);
        }
        let report = LevelReport {
            level: lp.level,
            cells_split: lp.cells_split,
            combos: lp.combos,
            points: if spec.adaptive.is_some() {
                ran.points
            } else {
                lp.plan.points.len()
            },
            points_run: ran.rounds.iter().map(|r| r.points_run).sum(),
            truncated: lp.truncated,
        };
        progress.level_done(&report);
        reports.push(report);
        if spec.adaptive.is_none() {
            // What the verified parts hold (a foreign or corrupt file counts for nothing);
            // other shards may not have written their part of this level yet.
            let done = verify::scan(&opts.out, &run::expected(spec)?)?.done_ids();
            let missing = lp
                .plan
                .points
                .iter()
                .filter(|p| !done.contains(&p.point_id))
                .count();
            if missing > 0 {
                return Ok(RefineOutcome::Waiting {
                    level: lp.level,
                    missing,
                });
            }
        }
        next = refiner.next_level(&rows::read_unverified(&opts.out)?)?;
    }
    Ok(RefineOutcome::Done(reports))
}
