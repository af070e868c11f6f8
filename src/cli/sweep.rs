//! `metachron sweep`: plan a sweep file, run it in chunks, write a Parquet dataset.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::ProgressBar;

use metachron::model::Robot;
use metachron::simulate::Backend;
use metachron::sweep::run::{self, RunOptions};
use metachron::sweep::{Plan, PlannedPoint, Shard, SweepSpec};

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
}

/// Rough single-thread cost of a point in seconds (for --dry-run), from the step the
/// cpu backend will really take (no clamp: a point with h = 1e-12 s costs what it
/// costs): the paper's robot (9 legs x 5 nodes) runs ~30 robot-s per wall-s per thread
/// at h = 2.38e-4 s; cost scales with steps and with legs x nodes. The reference is
/// ~60x slower per robot-second.
fn estimated_cost(p: &PlannedPoint, backend: Backend) -> f64 {
    let params = &p.cfg.params;
    let robot = Robot::new(params);
    let h = p.cfg.fixed_step.step_for(&robot, p.cfg.metrics.dt_out);
    let steps = params.t_final / h;
    let size = (params.n_legs * params.n_nodes) as f64 / 45.0;
    let per_step = 2.38e-4 / 30.0;
    let cpu = steps * size * per_step;
    if backend == Backend::Reference {
        cpu * 60.0
    } else {
        cpu
    }
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

fn human(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

pub fn run(a: SweepArgs) -> Result<ExitCode> {
    if a.backend == Backend::Gpu {
        a.gpu.apply()?;
    } else {
        anyhow::ensure!(
            !a.gpu.any_given(),
            "--adapter and --gpu-precision choose the GPU; they need --backend gpu"
        );
    }
    let mut spec = SweepSpec::from_file(&a.file)?;
    if let Some(t) = a.point_timeout {
        anyhow::ensure!(
            t.is_finite() && t > 0.0,
            "--point-timeout {t}: allowed is a finite number of seconds > 0"
        );
        // A run option, not part of the sweep (its hash and its points stay the same).
        spec.config.point_timeout = Some(t);
        if a.backend == Backend::Gpu {
            eprintln!(
                "warning: --point-timeout is not applied on the device: gpu chunks run to \
                 t_final (points that fall back to the cpu engine honour it)"
            );
        }
    }
    run::apply_until_settled(&mut spec, a.until_settled, a.backend)?;
    let shard = match &a.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::from_slurm(|k| std::env::var(k).ok())?.unwrap_or_default(),
    };
    let plan = Plan::for_shard(&spec, shard)?;
    let batch = match a.batch {
        Some(0) => bail!("--batch 0: allowed is an integer >= 1"),
        Some(b) => b,
        None => {
            let mine = plan.shard(shard);
            run::default_batch(a.backend, &mine)
        }
    };
    let out = match (&a.out, a.dry_run) {
        (Some(o), _) => o.clone(),
        (None, true) => PathBuf::from("(no --out)"),
        (None, false) => bail!("--out DIR is required (the dataset's directory)"),
    };
    let opts = RunOptions {
        out: out.clone(),
        backend: a.backend,
        batch,
        resume: a.resume || (a.dry_run && a.out.is_some()),
        shard,
        stop_after_chunks: None,
    };
    if spec.refine.is_some() || spec.adaptive.is_some() {
        if a.validate.is_some() {
            bail!("--validate: not supported with [refine] or adaptive repeats yet");
        }
        return super::atlas::run(&spec, &plan, &opts, a.dry_run, a.quiet);
    }
    let work = if a.dry_run {
        run::preview(&spec, &plan, &opts)?
    } else {
        run::work(&spec, &plan, &opts)?
    };
    for (from, to, why) in &work.quarantined {
        if a.dry_run {
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
    let chunks = work.pending.len().div_ceil(batch);
    let threads = rayon::current_num_threads().max(1);

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
        "shard {shard}: {} points, {} already written, {} to run in {chunks} chunks of <= {batch} on {} ({})",
        work.shard_points,
        work.already_done,
        work.pending.len(),
        a.backend.label(),
        metachron::sweep::dataset::adapter_label(a.backend),
    );
    if a.dry_run {
        let costs: Vec<f64> = work
            .pending
            .iter()
            .map(|p| estimated_cost(p, a.backend))
            .collect();
        // Points run in parallel, one thread each: no faster than the costliest point.
        let cost = (costs.iter().sum::<f64>() / threads as f64)
            .max(costs.iter().cloned().fold(0.0, f64::max));
        let robot_s: f64 = work.pending.iter().map(|p| p.cfg.params.t_final).sum();
        println!(
            "estimated time: ~{} on {threads} CPU threads for {robot_s:.0} simulated robot-seconds{}",
            human(cost),
            if a.backend == Backend::Cpu || a.backend == Backend::Reference {
                ""
            } else {
                " (estimate for the cpu backend)"
            }
        );
        if let Some(max_t) = spec.until_settled {
            println!(
                "until_settled = {max_t} s: a run not settled at t_final continues and costs up \
                 to {:.0}x its share (which runs continue is known only once they ran)",
                max_t / spec.config.params.t_final
            );
        }
        warn_outliers(&work.pending, &costs);
        if let Some(k) = a.validate {
            let ref_cost: f64 = work
                .pending
                .iter()
                .take(k)
                .map(|p| estimated_cost(p, Backend::Reference))
                .sum();
            println!(
                "--validate {k}: ~{} more on the reference",
                human(ref_cost / threads as f64)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }

    let bar = if a.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(work.pending.len() as u64)
    };
    bar.set_style(super::atlas::bar_style());
    bar.tick();
    let summary = run::run(&spec, &work.pending, &opts, |done| {
        bar.set_position(done as u64)
    })
    .with_context(|| format!("sweep {} -> {}", a.file.display(), out.display()))?;
    bar.finish_and_clear();
    let rate = summary.points_run as f64 / summary.wall_seconds.max(1e-9);
    println!(
        "ran {} points in {} chunks: wall {:.1} s, {rate:.2} points/s; {} not ok (diverged, failed or over budget)",
        summary.points_run, summary.chunks_written, summary.wall_seconds, summary.not_ok
    );
    println!(
        "dataset -> {} (read with DuckDB: SELECT * FROM '{}/shard=*/*.parquet')",
        out.display(),
        out.display()
    );

    if let Some(k) = a.validate {
        if a.backend == Backend::Reference {
            println!("--validate: the sweep ran on the reference already; nothing to compare");
        } else if k > 0 {
            println!("validating {k} points on the reference solver ...");
            let v = run::validate(&spec, &plan, &opts, k)?;
            println!(
                "validation: class agrees on {}/{} points; max |diff|: {} -> {}",
                v.class_agree,
                v.points,
                v.max_abs_diff
                    .iter()
                    .filter(
                        |(m, _)| ["lag_order", "mean_lag", "min_plv", "displacement"]
                            .contains(&m.as_str())
                    )
                    .map(|(m, d)| if d.is_nan() {
                        format!("{m} none comparable")
                    } else {
                        format!("{m} {d:.2e}")
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                v.path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
