//! `metachron sweep` for atlas sweeps: adaptive repeats (round by round) and adaptive
//! refinement (level by level), alone or together; resumable, refinement with fixed
//! repeats also shardable. On a terminal every stage shows a progress bar (points
//! done, points/s, ETA); elsewhere only the one-line summaries are printed.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use metachron::cost::human;
use metachron::sweep::atlas::{
    run_adaptive, run_refined, AdaptiveOutcome, LevelReport, Progress, RefineOutcome,
};
use metachron::sweep::refine::{level0_plan, most_points};
use metachron::sweep::run::RunOptions;
use metachron::sweep::{Plan, SweepSpec};

/// The style of every sweep's progress bar (the plain sweep's too).
pub fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{spinner} {prefix}[{elapsed_precise}] {bar:40} {pos}/{len} points | {rate} | eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .with_key(
        "rate",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.2} points/s", s.per_sec());
        },
    )
}

/// What some points of an atlas sweep cost, and where they run.
pub struct Cost {
    pub seconds: f64,
    pub on: String,
}

/// The estimate of an atlas sweep: its later levels or rounds depend on its results, so
/// it is the most that all of them may run (`most` points, at the mean estimate of the
/// first stage's points) and the first stage's (`first` points, named `stage`).
fn print_estimate(
    stage: &str,
    first: usize,
    most: usize,
    cost: &dyn Fn(usize) -> Cost,
    dry_run: bool,
) {
    let (all, first_cost) = (cost(most), cost(first));
    if dry_run || all.seconds > super::estimate::SHOW_ABOVE {
        println!(
            "estimated time: ~{} on {} at most ({most} points, each at {stage}'s mean estimate); {stage}: ~{}",
            human(all.seconds),
            all.on,
            human(first_cost.seconds)
        );
    }
}

/// A progress bar per stage (drawn on stderr only when it is a terminal), and one
/// line per finished refinement level.
struct Bars {
    quiet: bool,
    refined: bool,
    bar: Option<ProgressBar>,
}

impl Bars {
    fn close(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bars {
    fn stage(&mut self, level: u32, round: usize, points: usize) {
        self.close();
        if self.quiet {
            return;
        }
        let bar = ProgressBar::new(points as u64).with_style(bar_style());
        let mut prefix = String::new();
        if self.refined {
            prefix.push_str(&format!("level {level} "));
        }
        if round > 0 {
            prefix.push_str(&format!("round {round} "));
        }
        bar.set_prefix(prefix);
        bar.tick();
        self.bar = Some(bar);
    }

    fn advance(&mut self, done: usize) {
        if let Some(b) = &self.bar {
            b.set_position(done as u64);
        }
    }

    fn level_done(&mut self, l: &LevelReport) {
        self.close();
        if !self.quiet {
            println!("{l}");
        }
    }
}

pub fn run(
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    dry_run: bool,
    quiet: bool,
    cost: &dyn Fn(usize) -> Cost,
) -> Result<ExitCode> {
    let start = Instant::now();
    let out = opts.out.display().to_string();
    let mut bars = Bars {
        quiet,
        refined: spec.refine.is_some(),
        bar: None,
    };
    if let Some(r) = &spec.refine {
        let level0 = level0_plan(spec)?;
        let (described, first) = match spec.adaptive {
            Some(a) => {
                let combos = level0.points.len() / a.max.max(1);
                (format!("{combos} combinations with {a}"), combos * a.min)
            }
            None => (
                format!("{} points", level0.points.len()),
                level0.points.len(),
            ),
        };
        println!("sweep `{}`: {r}; level 0: {described}", spec.name);
        print_estimate(
            "level 0",
            first,
            most_points(spec)?.max(first),
            cost,
            dry_run,
        );
        if dry_run {
            println!("later levels depend on the results: nothing run (--dry-run)");
            return Ok(ExitCode::SUCCESS);
        }
        let outcome = run_refined(spec, opts, &mut bars)
            .with_context(|| format!("refined sweep {} -> {out}", spec.file))?;
        bars.close();
        match outcome {
            RefineOutcome::Done(levels) => println!(
                "refinement done: {} points in {} levels, wall {:.1} s -> {out}",
                levels.iter().map(|l| l.points).sum::<usize>(),
                levels.len(),
                start.elapsed().as_secs_f64()
            ),
            RefineOutcome::Waiting { level, missing } => println!(
                "shard {} wrote its part of level {level}; {missing} points of other shards \
                 are missing: rerun with --resume once they are written",
                opts.shard
            ),
            RefineOutcome::Stopped => println!("stopped"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(a) = spec.adaptive else {
        return Ok(ExitCode::SUCCESS);
    };
    println!(
        "sweep `{}`: {} combinations, {a}",
        spec.name,
        spec.combinations(),
    );
    print_estimate(
        "the first round",
        spec.combinations() * a.min,
        spec.combinations() * a.max,
        cost,
        dry_run,
    );
    if dry_run {
        println!(
            "first round: {} points; later rounds depend on the results: nothing run (--dry-run)",
            spec.combinations() * a.min
        );
        return Ok(ExitCode::SUCCESS);
    }
    let outcome = run_adaptive(spec, plan, opts, &mut bars)
        .with_context(|| format!("adaptive sweep {} -> {out}", spec.file))?;
    bars.close();
    if let AdaptiveOutcome::Done(rounds) = outcome {
        if !quiet {
            for (k, r) in rounds.iter().enumerate() {
                println!(
                    "round {}: {} combinations needed runs, {} points run",
                    k + 1,
                    r.combos,
                    r.points_run
                );
            }
        }
        println!(
            "adaptive repeats done: {} points in {} rounds, wall {:.1} s -> {out}",
            rounds.iter().map(|r| r.points_run).sum::<usize>(),
            rounds.len(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
