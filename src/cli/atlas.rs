//! `metachron sweep` for atlas sweeps: adaptive repeats (round by round) and adaptive
//! refinement (level by level); both resumable, refinement also shardable.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use metachron::sweep::adaptive::{run_adaptive, AdaptiveOutcome};
use metachron::sweep::refine::{level0_plan, run_refined, RefineOutcome};
use metachron::sweep::run::RunOptions;
use metachron::sweep::{Plan, SweepSpec};

pub fn run(
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    dry_run: bool,
    quiet: bool,
) -> Result<ExitCode> {
    let start = Instant::now();
    let out = opts.out.display().to_string();
    if let Some(r) = &spec.refine {
        let level0 = level0_plan(spec, r)?;
        println!(
            "sweep `{}`: refined by {:?} up to level {} (max {} points); level 0: {} points",
            spec.name,
            r.by,
            r.max_level,
            r.max_points,
            level0.points.len()
        );
        if dry_run {
            println!("later levels depend on the results: nothing run (--dry-run)");
            return Ok(ExitCode::SUCCESS);
        }
        let outcome = run_refined(spec, opts, |l| {
            if !quiet {
                println!(
                    "level {}: {} cells split, {} combinations, {} points ({} run here){}",
                    l.level,
                    l.cells_split,
                    l.combos,
                    l.points,
                    l.points_run,
                    if l.truncated {
                        ", cut at max_points"
                    } else {
                        ""
                    }
                );
            }
        })
        .with_context(|| format!("refined sweep {} -> {out}", spec.file))?;
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
        "sweep `{}`: {} combinations, adaptive repeats {}..{} until every class fraction's \
         Wilson 95 % interval is narrower than {}",
        spec.name,
        spec.combinations(),
        a.min,
        a.max,
        a.ci_width
    );
    if dry_run {
        println!(
            "first round: {} points; later rounds depend on the results: nothing run (--dry-run)",
            spec.combinations() * a.min
        );
        return Ok(ExitCode::SUCCESS);
    }
    let outcome = run_adaptive(spec, plan, opts, |r| {
        if !quiet {
            println!("round: {} combinations need runs", r.combos);
        }
    })
    .with_context(|| format!("adaptive sweep {} -> {out}", spec.file))?;
    if let AdaptiveOutcome::Done(rounds) = outcome {
        println!(
            "adaptive repeats done: {} points in {} rounds, wall {:.1} s -> {out}",
            rounds.iter().map(|r| r.points_run).sum::<usize>(),
            rounds.len(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}
