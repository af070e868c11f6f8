//! `metachron sweep`: plan a sweep file, run it in chunks, write a Parquet dataset.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::ProgressBar;

use metachron::cost::{human, Estimate, Estimator, Mode, MEASURED};
use metachron::gpu_rate::{cache_file, ProbeError, Probed};
use metachron::params::Params;
use metachron::simulate::Backend;
use metachron::sweep::run::{self, RunOptions, Work};
use metachron::sweep::setup::{set_up, Request, Setup};
use metachron::sweep::{Plan, PlannedPoint, Shard, SweepSpec};
use metachron::vocabulary::metric;

use super::estimate::{describe, EstimateArgs, SHOW_ABOVE};

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Sweep file (TOML: [base] parameters plus [[axes]]; see sweeps/README.md).
    file: PathBuf,
    /// Output directory: a hive-style Parquet dataset (DIR/shard=K/part-*.parquet).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Integration backend.
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    backend: Backend,
    /// Points per chunk (one run_batch call and one part file each).
    /// Default: 32 per CPU thread on cpu, the thread count on reference.
    #[arg(long, value_name = "B")]
    batch: Option<usize>,
    /// Skip points already written in DIR (after an interruption).
    #[arg(long)]
    resume: bool,
    /// Run shard K of N (K = 0..N-1, points with id % N == K). Default: from
    /// SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT when set, else the whole sweep.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Afterwards re-run N random points of this shard on the reference solver and
    /// write the agreement to DIR/validation-shard<S>.csv (S = this shard's index, 0
    /// without --shard).
    #[arg(long, value_name = "N")]
    validate: Option<usize>,
    /// Print the plan (points, chunks, estimated time) and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// Wall-time budget per point in seconds: a point past it ends with status
    /// budget_exceeded (NaN metrics) and the rest of its chunk goes on.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    point_timeout: Option<f64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    gpu: super::gpu::GpuArgs,
    /// Continue unsettled runs in steps of t_final up to MAX_T seconds (overrides
    /// `until_settled` in the sweep file; see docs/atlas.md).
    #[arg(long, value_name = "MAX_T")]
    until_settled: Option<f64>,
    #[command(flatten)]
    estimate: EstimateArgs,
}

/// Name the points whose estimated cost is far (100x) above the median: one such point
/// can hold a whole chunk (give it --point-timeout, or leave it out).
fn warn_outliers(points: &[&PlannedPoint], costs: &[f64]) {
    let mut sorted = costs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let Some(&median) = sorted.get(sorted.len() / 2) else {
        return;
    };
    let far: Vec<(u64, f64)> = points
        .iter()
        .zip(costs)
        .filter(|(_, &c)| c > 100.0 * median && c > 60.0)
        .map(|(p, &c)| (p.point_id, c))
        .collect();
    if far.is_empty() {
        return;
    }
    let shown: Vec<String> = far
        .iter()
        .take(10)
        .map(|(id, c)| format!("{id} (~{})", human(*c)))
        .collect();
    eprintln!(
        "warning: {} points cost far more than the median point (~{}): {}{}; bound them with --point-timeout SECONDS",
        far.len(),
        human(median),
        shown.join(", "),
        if far.len() > 10 { ", ..." } else { "" }
    );
}

/// The sweep's arguments as the library takes them (--adapter and --gpu-precision
/// choose the GPU when the sweep runs on it, and are refused otherwise).
fn request(a: &SweepArgs) -> Result<Request> {
    Ok(Request {
        file: a.file.clone(),
        out: a.out.clone(),
        engine: a.gpu.engine(a.backend)?,
        batch: a.batch,
        resume: a.resume,
        shard: shard_of(a)?,
        dry_run: a.dry_run,
        point_timeout: a.point_timeout,
        until_settled: a.until_settled,
        estimate_limit: a.estimate.limit()?,
    })
}

/// --shard, else the Slurm array task's shard, else the whole sweep.
fn shard_of(a: &SweepArgs) -> Result<Shard> {
    Ok(match &a.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::from_slurm(|k| std::env::var(k).ok())?.unwrap_or_default(),
    })
}

/// Warn about every part the check moved (or would move), left alone or found stray,
/// so no file changes place without a word.
fn report_quarantined(work: &Work, dry_run: bool) {
    for (from, to, why) in &work.quarantined {
        if dry_run {
            eprintln!("warning: {} would be quarantined: {why}", from.display());
        } else {
            eprintln!(
                "warning: {} failed the check ({why}); moved to {}; points no other part holds run again",
                from.display(),
                to.display()
            );
        }
    }
    for (path, why) in &work.left_for_others {
        eprintln!(
            "warning: {} failed the check ({why}); left for its own shard's writer",
            path.display()
        );
    }
    for s in &work.strays {
        eprintln!(
            "warning: {} is not the dataset's: {}; never moved",
            s.path.display(),
            s.kind.describe()
        );
    }
}

/// What is about to run: the sweep's axes, points, chunks and where the dataset goes.
fn print_plan(a: &SweepArgs, spec: &SweepSpec, work: &Work, opts: &RunOptions) {
    let chunks = work.pending.len().div_ceil(opts.batch);
    println!(
        "sweep `{}` ({}): {} axes, {} combinations x {} repeats = {} points",
        spec.name,
        a.file.display(),
        spec.axes.len(),
        spec.combinations(),
        spec.repeats,
        spec.point_count()
    );
    for ax in &spec.axes {
        let vals: Vec<String> = ax.values.iter().take(6).map(|v| v.to_string()).collect();
        println!(
            "  {:<12} {:<9} {:>5} values: {}{}",
            ax.param,
            ax.kind.key(),
            ax.values.len(),
            vals.join(", "),
            if ax.values.len() > 6 { ", ..." } else { "" }
        );
    }
    println!(
        "shard {}: {} points, {} already written, {} to run in {chunks} chunks of <= {} on {} ({})",
        opts.shard,
        work.shard_points,
        work.already_done,
        work.pending.len(),
        opts.batch,
        a.backend.label(),
        metachron::sweep::record::adapter_label(&opts.engine),
    );
}

/// The pending points' estimated seconds, in the pending order (every pending point
/// is one of the shard's, all estimated).
fn pending_costs(work: &Work, estimates: &HashMap<u64, Estimate>) -> Vec<f64> {
    work.pending
        .iter()
        .map(|p| estimates.get(&p.point_id).map_or(0.0, |e| e.seconds))
        .collect()
}

/// "~2.1 h on 2 CPU threads for 3600 simulated robot-seconds": points run in
/// parallel, one thread each, so no faster than the costliest point. On the gpu the
/// points' costs are at the adapter's measured rate per robot-step in a batch (the
/// batch runs them in parallel already), plus the engine's setup.
fn print_total(work: &Work, costs: &[f64], batch: usize, gpu: Option<&Result<Probed, ProbeError>>) {
    let chunks = work.pending.len().div_ceil(batch.max(1));
    let robot_s: f64 = work.pending.iter().map(|p| p.cfg.params.t_final).sum();
    match gpu {
        Some(Ok(p)) => println!(
            "estimated time: ~{} on {} for {robot_s:.0} simulated robot-seconds in {chunks} \
             chunks (rate {}; {:.2} s per chunk beside its robot-steps)",
            human(p.rate.chunk * chunks as f64 + costs.iter().sum::<f64>()),
            p.adapter,
            match (p.cached, cache_file()) {
                (true, Some(f)) => format!("cached in {}", f.display()),
                _ => "measured now".into(),
            },
            p.rate.chunk
        ),
        _ => {
            let threads = rayon::current_num_threads().max(1);
            let cost = (costs.iter().sum::<f64>() / threads as f64)
                .max(costs.iter().cloned().fold(0.0, f64::max));
            println!(
                "estimated time: ~{} on {threads} CPU threads for {robot_s:.0} simulated robot-seconds{}",
                human(cost),
                match gpu {
                    Some(Err(e)) => format!(" (at the cpu engine's rate: {e})"),
                    _ => String::new(),
                }
            );
        }
    }
}

/// `points` points at `mean` estimated seconds each, and where they run: on the gpu
/// at the adapter's rate (the batch runs them in parallel already) plus each chunk's
/// setup; on the cpu one point per thread.
fn spread(
    points: usize,
    mean: f64,
    batch: usize,
    gpu: Option<&Result<Probed, ProbeError>>,
) -> super::atlas::Cost {
    let robot_s = points as f64 * mean;
    match gpu {
        Some(Ok(p)) => super::atlas::Cost {
            seconds: p.rate.chunk * points.div_ceil(batch.max(1)) as f64 + robot_s,
            on: p.adapter.clone(),
        },
        _ => {
            let threads = rayon::current_num_threads().max(1);
            super::atlas::Cost {
                seconds: (robot_s / threads as f64).max(mean.min(robot_s)),
                on: format!("{threads} CPU threads"),
            }
        }
    }
}

/// --dry-run: the estimates, and what --validate would add; nothing runs.
fn print_dry_run(
    a: &SweepArgs,
    spec: &SweepSpec,
    work: &Work,
    costs: &[f64],
    batch: usize,
    gpu: Option<&Result<Probed, ProbeError>>,
) -> Result<()> {
    print_total(work, costs, batch, gpu);
    if let Some(max_t) = spec.until_settled {
        println!(
            "until_settled = {max_t} s: a run not settled at t_final continues and costs up \
             to {:.0}x its share (which runs continue is known only once they ran)",
            max_t / spec.config.params.t_final
        );
    }
    warn_outliers(&work.pending, costs);
    if let Some(k) = a.validate {
        let mut estimator = Estimator::default();
        let mut ref_cost = 0.0;
        for p in work.pending.iter().take(k) {
            ref_cost += estimator
                .estimate(&p.cfg, Backend::Reference, Mode::Batch, &MEASURED)?
                .seconds;
        }
        let threads = rayon::current_num_threads().max(1);
        println!(
            "--validate {k}: ~{} more on the reference",
            human(ref_cost / threads as f64)
        );
    }
    Ok(())
}

/// A bar over `len` points, hidden with `--quiet` so logs of unattended runs stay clean.
fn progress_bar(len: usize, quiet: bool) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len as u64)
    };
    bar.set_style(super::atlas::bar_style());
    bar.tick();
    bar
}

/// --validate K: re-run K points on the reference and print the agreement.
fn validate_on_reference(
    a: &SweepArgs,
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    k: usize,
) -> Result<()> {
    if a.backend == Backend::Reference {
        println!("--validate: the sweep ran on the reference already; nothing to compare");
        return Ok(());
    }
    if k == 0 {
        return Ok(());
    }
    println!("validating {k} points on the reference solver ...");
    let v = run::validate(spec, plan, opts, k)?;
    println!(
        "validation: class agrees on {}/{} points; max |diff|: {} -> {}",
        v.class_agree,
        v.points,
        v.max_abs_diff
            .iter()
            .filter(|(m, _)| {
                [
                    metric::lag_order,
                    metric::mean_lag,
                    metric::min_plv,
                    metric::displacement,
                ]
                .contains(&m.as_str())
            })
            .map(|(m, d)| if d.is_nan() {
                format!("{m} none comparable")
            } else {
                format!("{m} {d:.2e}")
            })
            .collect::<Vec<_>>()
            .join(", "),
        v.path.display()
    );
    Ok(())
}

/// The pending point with the largest estimate and what it is made of, so a long sweep
/// shows where its time goes.
fn print_costliest(work: &Work, costs: &[f64], estimates: &HashMap<u64, Estimate>) {
    if let Some((i, _)) = costs.iter().enumerate().max_by(|x, y| x.1.total_cmp(y.1)) {
        let id = work.pending[i].point_id;
        if let Some(e) = estimates.get(&id) {
            println!("  costliest point {id}: {}", describe(e));
        }
    }
}

/// What ran (points, chunks, rate, how many not ok) and how to read the dataset.
fn print_ran(summary: &run::RunSummary, opts: &RunOptions) {
    let rate = summary.points_run as f64 / summary.wall_seconds.max(1e-9);
    println!(
        "ran {} points in {} chunks: wall {:.1} s, {rate:.2} points/s; {} not ok (diverged, failed or over budget)",
        summary.points_run, summary.chunks_written, summary.wall_seconds, summary.not_ok
    );
    println!(
        "dataset -> {} (read with DuckDB: SELECT * FROM '{}/shard=*/*.parquet')",
        opts.out.display(),
        opts.out.display()
    );
}

/// Warn once per parameter whose value cannot act at some of the shard's points
/// (`Params::inert`), with how many: a sweep whose axis mixes terrain profiles warns of
/// the seed once, not at every flat point. Under random initial phases the points'
/// psi_init is the sweep's own, and a psi1 or dphi given is what cannot act. Printed
/// with --quiet too.
fn warn_inert(spec: &SweepSpec, plan: &Plan) {
    let own = |p: &PlannedPoint| {
        let mut params = p.cfg.params.clone();
        if spec.random_phases {
            params.psi_init = None;
        }
        params
    };
    let runs: Vec<Params> = plan.points.iter().map(own).collect();
    let mut inert = metachron::params::inert_once(&runs);
    if spec.random_phases {
        let phased: Vec<Params> = runs
            .iter()
            .map(|p| Params {
                psi_init: Some(Vec::new()),
                ..p.clone()
            })
            .collect();
        for (mut i, count) in metachron::params::inert_once(&phased) {
            if inert.iter().all(|(o, _)| o.name != i.name) {
                i.reason = "random initial phases (random_phases) give every leg's \
                            initial angle"
                    .into();
                inert.push((i, count));
            }
        }
    }
    let total = runs.len();
    for (i, count) in inert {
        if count == total {
            eprintln!("warning: {i}");
        } else {
            eprintln!("warning: at {count} of {total} points, {i}");
        }
    }
}

/// `metachron sweep`: plan the shard, show what it will cost, run what is pending
/// (or hand refined sweeps to the atlas), then optionally check points on the reference.
pub fn run(a: SweepArgs) -> Result<ExitCode> {
    let Setup {
        spec,
        plan,
        opts,
        estimates,
        gpu_rate,
    } = set_up(&request(&a)?)?;
    warn_inert(&spec, &plan);
    if spec.refine.is_some() || spec.adaptive.is_some() {
        if a.validate.is_some() {
            bail!("--validate: not supported with [refine] or adaptive repeats yet");
        }
        let mean =
            estimates.values().map(|e| e.seconds).sum::<f64>() / estimates.len().max(1) as f64;
        let cost = |points: usize| spread(points, mean, opts.batch, gpu_rate.as_ref());
        return super::atlas::run(&spec, &plan, &opts, a.dry_run, a.quiet, &cost);
    }
    let work = if a.dry_run {
        run::preview(&spec, &plan, &opts)?
    } else {
        run::work(&spec, &plan, &opts)?
    };
    report_quarantined(&work, a.dry_run);
    print_plan(&a, &spec, &work, &opts);
    let costs = pending_costs(&work, &estimates);
    if a.dry_run {
        print_dry_run(&a, &spec, &work, &costs, opts.batch, gpu_rate.as_ref())?;
        return Ok(ExitCode::SUCCESS);
    }
    if costs.iter().sum::<f64>() > SHOW_ABOVE {
        print_total(&work, &costs, opts.batch, gpu_rate.as_ref());
        print_costliest(&work, &costs, &estimates);
    }

    let bar = progress_bar(work.pending.len(), a.quiet);
    let summary = run::run(&spec, &work.pending, &opts, |done| {
        bar.set_position(done as u64)
    })
    .with_context(|| format!("sweep {} -> {}", a.file.display(), opts.out.display()))?;
    bar.finish_and_clear();
    print_ran(&summary, &opts);
    if let Some(k) = a.validate {
        validate_on_reference(&a, &spec, &plan, &opts, k)?;
    }
    Ok(ExitCode::SUCCESS)
}
