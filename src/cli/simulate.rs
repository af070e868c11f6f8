//! `metachron simulate`: one point, its metrics, its files and pictures.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use metachron::batch::{run_point_streaming, Engine};
use metachron::dataset::schema::{
    META_ADAPTER, META_BACKEND, META_METRICS_SETTINGS, META_PARAMS, META_SOLVER_STATS, META_VERSION,
};
use metachron::gpu::Gpu;
use metachron::metrics::Metrics;
use metachron::model::Robot;
use metachron::output::animate::{self, AnimationSettings, Animator};
use metachron::output::plots;
use metachron::parquet;
use metachron::reference::Method;
use metachron::sample::Sample;
use metachron::simulate::{Backend, PointResult, RunConfig};
use metachron::vocabulary::{self as voc, metric};

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// TOML file: parameters at the top level, optional [solver] and [metrics] tables.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override one parameter, e.g. --set alpha=50 --set actuated=1,0,0,0,0,0,0,0,0
    /// (angles may be written 90deg).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Integration backend.
    #[arg(long, value_enum, default_value_t = Backend::Reference)]
    backend: Backend,
    /// Reference method (default esdirk34, metachron's structured solver).
    #[arg(long, value_enum)]
    method: Option<Method>,
    /// Relative tolerance of the reference solver.
    #[arg(long, allow_negative_numbers = true)]
    rtol: Option<f64>,
    /// Absolute tolerance of the reference solver.
    #[arg(long, allow_negative_numbers = true)]
    atol: Option<f64>,
    /// Output sample interval in seconds (metrics are computed on these samples).
    #[arg(long, allow_negative_numbers = true)]
    dt_out: Option<f64>,
    /// Start of the metrics window in seconds (default: second half of the run).
    #[arg(long, allow_negative_numbers = true)]
    window_start: Option<f64>,
    #[command(flatten)]
    outputs: OutputArgs,
    /// Wall-time budget in seconds: past it the run stops with status budget_exceeded.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    point_timeout: Option<f64>,
    /// Continue the run while it is not settled, in steps of t_final up to MAX_T
    /// seconds (cpu and gpu backends; see docs/atlas.md).
    #[arg(long, value_name = "MAX_T", allow_negative_numbers = true)]
    until_settled: Option<f64>,
    #[command(flatten)]
    gpu: super::gpu::GpuArgs,
    #[command(flatten)]
    estimate: super::estimate::EstimateArgs,
}

/// What a run writes besides its printed summary (`simulate` and `replay` alike).
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Time-series Parquet file (wide: one row per sample).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// One-row Parquet file with every parameter and metric.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Directory for PNG snapshots of the robot and the basal-angle plot.
    #[arg(long, value_name = "DIR")]
    pub snapshots: Option<PathBuf>,
    /// Snapshot times in seconds (default: 0, t_f/5, ..., t_f).
    #[arg(long, value_delimiter = ',', value_name = "T,T,...")]
    pub snapshot_times: Vec<f64>,
    /// Animated GIF of the run, drawn as the snapshots are (cpu and reference backends).
    #[arg(long, value_name = "FILE.gif")]
    pub animate: Option<PathBuf>,
    /// Frames per second of --animate.
    #[arg(long, value_name = "FPS", default_value_t = animate::DEFAULT_FPS)]
    pub animate_fps: u32,
    /// Playback length of --animate in seconds (default: the run in real time, at most
    /// 10 s; longer runs play faster).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub animate_duration: Option<f64>,
    /// Frame width of --animate in pixels.
    #[arg(long, value_name = "PIXELS", default_value_t = animate::DEFAULT_WIDTH)]
    pub animate_width: u32,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The checked plan of a run and its outputs (`simulate`, `replay`).
pub(super) struct Plan {
    pub cfg: RunConfig,
    /// What runs it (the GPU's handle where it is the GPU).
    pub engine: Engine,
    pub out: Option<PathBuf>,
    pub metrics: Option<PathBuf>,
    pub snapshots: Option<PathBuf>,
    pub snapshot_times: Vec<f64>,
    pub animate: Option<PathBuf>,
    pub animation: AnimationSettings,
    pub quiet: bool,
    /// File metadata added to the Parquet outputs (a replay names its row).
    pub extra_metadata: Vec<(String, String)>,
    /// Print the run's summary and where each output went (off where a caller reports).
    pub print: bool,
    /// What the run will cost (checked against --max-estimate; `None`: not estimated).
    pub estimate: Option<metachron::cost::Estimate>,
    /// The wall-time budget set for a run asked for none (`cost::default_budget`).
    pub default_budget: Option<f64>,
}

fn plan(a: SimulateArgs) -> Result<Plan> {
    let mut cfg = match &a.config {
        Some(path) => RunConfig::from_toml_file(path)?,
        None => RunConfig::default(),
    };
    for s in &a.set {
        cfg.params
            .apply_override(s)
            .with_context(|| format!("in --set {s}"))?;
    }
    if let Some(m) = a.method {
        cfg.solver.method = m;
    }
    if let Some(x) = a.rtol {
        cfg.solver.rtol = x;
    }
    if let Some(x) = a.atol {
        cfg.solver.atol = x;
    }
    if let Some(x) = a.dt_out {
        cfg.metrics.dt_out = x;
    }
    if a.window_start.is_some() {
        cfg.metrics.window_start = a.window_start;
    }
    cfg.point_timeout = a.point_timeout;
    cfg.until_settled = a.until_settled;
    // A jittered start is drawn as a sweep's point 0 of seed 0; the angles are the
    // run's psi_init (printed below, written with its parameters).
    let jittered = cfg.params.psi_init.is_none() && cfg.params.phase_jitter > 0.0;
    metachron::sweep::plan::resolve_jitter(&mut cfg.params, 0, 0);
    if let (true, Some(psi)) = (jittered, &cfg.params.psi_init) {
        let list: Vec<String> = psi.iter().map(|x| format!("{x:.4}")).collect();
        eprintln!(
            "jittered start (phase_jitter = {} rad): psi_init = [{}]",
            cfg.params.phase_jitter,
            list.join(", ")
        );
    }
    // The message says the parameter; where it came from (--config, --set) is the user's.
    cfg.validate().map_err(|e| anyhow::anyhow!(e.detail()))?;
    if a.until_settled.is_some() {
        a.backend.continues().context("--until-settled")?;
    }
    let engine = a.gpu.engine(a.backend)?;
    let estimate = check_cost(&cfg, a.backend, &a.estimate)?;
    // The reference's cost is measured, never known: without --point-timeout a run far
    // past its estimate ends as budget_exceeded (`cost::default_budget`).
    let default_budget = (a.backend == Backend::Reference && cfg.point_timeout.is_none())
        .then(|| metachron::cost::default_budget(&estimate));
    cfg.point_timeout = cfg.point_timeout.or(default_budget);
    let mut plan = plan_outputs(cfg, engine, a.outputs)?;
    plan.estimate = Some(estimate);
    plan.default_budget = default_budget;
    Ok(plan)
}

/// Check what a run of `cfg` on `backend` is asked to write.
pub(super) fn plan_outputs(cfg: RunConfig, engine: Engine, o: OutputArgs) -> Result<Plan> {
    let backend = engine.backend();
    if backend == Backend::Gpu {
        anyhow::ensure!(
            o.out.is_none() && o.snapshots.is_none() && o.animate.is_none(),
            "--out, --snapshots and --animate need the time series, which the gpu backend \
             does not keep (it accumulates the metrics on the device); use --backend cpu for them"
        );
    }
    // Every output stays out of every dataset (`dataset::refuse_inside_dataset`).
    for (path, what) in [
        (&o.out, "--out"),
        (&o.metrics, "--metrics"),
        (&o.animate, "--animate"),
    ] {
        if let Some(path) = path {
            metachron::dataset::refuse_inside_dataset(path, what)?;
        }
    }
    if let Some(dir) = &o.snapshots {
        metachron::dataset::refuse_dir_inside_dataset(dir, "--snapshots")?;
    }
    let animation = AnimationSettings {
        fps: o.animate_fps,
        duration: o.animate_duration,
        width: o.animate_width,
    };
    animation.validate()?;
    let t_final = cfg.params.t_final;
    let snapshot_times = if o.snapshot_times.is_empty() {
        (0..=5).map(|k| t_final * k as f64 / 5.0).collect()
    } else {
        for &t in &o.snapshot_times {
            anyhow::ensure!(
                t.is_finite() && (0.0..=t_final).contains(&t),
                "--snapshot-times: {t} is outside [0, t_final = {t_final}]"
            );
        }
        o.snapshot_times.clone()
    };
    Ok(Plan {
        cfg,
        engine,
        out: o.out,
        metrics: o.metrics,
        snapshots: o.snapshots,
        snapshot_times,
        animate: o.animate,
        animation,
        quiet: o.quiet,
        extra_metadata: Vec::new(),
        print: true,
        estimate: None,
        default_budget: None,
    })
}

/// The run's derived values checked and its cost estimated from the step it will take;
/// refused above the limit (unless --point-timeout bounds it).
fn check_cost(
    cfg: &RunConfig,
    backend: Backend,
    args: &super::estimate::EstimateArgs,
) -> Result<metachron::cost::Estimate> {
    use metachron::cost::{estimate, estimate_solo, Mode, MEASURED};
    let limit = args.limit()?;
    // Derived values are refused before the reference's probe runs.
    let e = estimate(cfg, backend, Mode::Solo, &MEASURED)?;
    let e = if backend == Backend::Reference {
        estimate_solo(cfg, backend, &MEASURED)?
    } else {
        e
    };
    super::estimate::enforce("the run", &e, limit, cfg.point_timeout)?;
    Ok(e)
}

/// File metadata known before the run (the streamed time series starts with it).
fn run_metadata(plan: &Plan) -> Vec<(String, String)> {
    let cfg = &plan.cfg;
    vec![
        (META_VERSION.into(), metachron::VERSION.into()),
        (
            META_METRICS_SETTINGS.into(),
            toml::to_string(&cfg.metrics).unwrap_or_default(),
        ),
        (META_PARAMS.into(), cfg.params.to_toml_string()),
    ]
    .into_iter()
    .chain(metachron::simulate::scheme_metadata(
        cfg,
        plan.engine.backend(),
    ))
    .collect()
}

/// File metadata shared by both Parquet outputs.
fn file_metadata(plan: &Plan, result: &PointResult) -> Vec<(String, String)> {
    let cfg = &plan.cfg;
    vec![
        (META_VERSION.into(), metachron::VERSION.into()),
        (META_BACKEND.into(), result.backend.label().into()),
        (META_ADAPTER.into(), adapter_label(plan, result)),
        (
            META_SOLVER_STATS.into(),
            toml::to_string(&result.stats).unwrap_or_default(),
        ),
        (
            META_METRICS_SETTINGS.into(),
            toml::to_string(&cfg.metrics).unwrap_or_default(),
        ),
        (META_PARAMS.into(), cfg.params.to_toml_string()),
    ]
    .into_iter()
    .chain(metachron::simulate::scheme_metadata(cfg, result.backend))
    .collect()
}

pub fn run(args: SimulateArgs) -> Result<ExitCode> {
    let plan = plan(args)?;
    // A value the run cannot use is never ignored in silence (--quiet hides the
    // progress bar, not warnings).
    for inert in plan.cfg.params.inert() {
        eprintln!("warning: {inert}");
    }
    let result = execute(&plan)?;
    Ok(if result.metrics.status.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Run `plan`'s point, print its summary and write its outputs.
pub(super) fn execute(plan: &Plan) -> Result<PointResult> {
    let cfg = &plan.cfg;
    if let Some(est) = plan
        .estimate
        .filter(|e| e.seconds > super::estimate::SHOW_ABOVE)
    {
        eprintln!(
            "estimate: {}{}",
            super::estimate::describe(&est),
            match (cfg.point_timeout, plan.default_budget) {
                (Some(t), None) if t < est.seconds =>
                    format!("; --point-timeout {t} ends it sooner"),
                (Some(t), Some(_)) => format!(
                    "; it ends as budget_exceeded after {} (--point-timeout sets another budget)",
                    metachron::cost::human(t)
                ),
                _ => String::new(),
            }
        );
    }
    // The bar spans the longest horizon the run may reach.
    let t_final = cfg.until_settled.unwrap_or(cfg.params.t_final);
    let bar = if plan.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new((t_final * 100.0).round() as u64)
    };
    let len_s = format!("{t_final}");
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} [{{elapsed_precise}}] {{bar:40}} t = {{msg}} / {len_s} s (eta {{eta}})"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Every output is checked (its temporary created) before any computing.
    let mut run_meta = run_metadata(plan);
    run_meta.extend(plan.extra_metadata.iter().cloned());
    let mut series = match &plan.out {
        Some(path) => Some(
            parquet::TimeseriesWriter::create(path, cfg.params.n_legs, &run_meta)
                .context("--out")?,
        ),
        None => None,
    };
    let metrics_file = match &plan.metrics {
        Some(path) => Some(parquet::PendingFile::create(path).context("--metrics")?),
        None => None,
    };
    if let Some(dir) = &plan.snapshots {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--snapshots: cannot create {}", dir.display()))?;
        let probe =
            parquet::PendingFile::create(&dir.join("basal_angles.png")).context("--snapshots")?;
        drop(probe);
    }
    let mut animator = match &plan.animate {
        Some(path) => Some(
            Animator::create(
                path,
                Robot::new(&cfg.params),
                t_final,
                cfg.metrics.dt_out,
                &plan.animation,
            )
            .context("--animate")?,
        ),
        None => None,
    };
    let mut animate_error = None;
    // Samples are streamed to --out; only --snapshots keeps them (its pictures need
    // the whole series).
    let keep = plan.snapshots.is_some();
    let mut samples: Vec<Sample> = Vec::new();
    let mut write_error = None;
    let mut on_sample = |s: &Sample| {
        if let (Some(w), None) = (series.as_mut(), write_error.as_ref()) {
            if let Err(e) = w.push(s) {
                write_error = Some(e);
            }
        }
        if let (Some(a), None) = (animator.as_mut(), animate_error.as_ref()) {
            if let Err(e) = a.push(s) {
                animate_error = Some(e);
            }
        }
        if keep {
            samples.push(s.clone());
        }
    };
    let mut shown = 0u64;
    if plan.engine.backend() == Backend::Gpu {
        bar.set_message("(on the device)");
    }
    let mut on_progress = |t: f64| {
        let pos = (t * 100.0) as u64;
        if pos > shown {
            shown = pos;
            bar.set_position(pos);
            bar.set_message(format!("{t:.2}"));
        }
    };
    let mut result = run_point_streaming(cfg, &plan.engine, &mut on_sample, &mut on_progress)?;
    result.samples = samples;
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e).context("--out");
    }
    if let Some(e) = animate_error {
        return Err(e).context("--animate");
    }

    if plan.print {
        print_summary(plan, &result);
    }
    let mut meta = file_metadata(plan, &result);
    meta.extend(plan.extra_metadata.iter().cloned());
    if let (Some(w), Some(path)) = (series, &plan.out) {
        let end_meta = vec![
            (META_BACKEND.to_string(), result.backend.label().to_string()),
            (META_ADAPTER.into(), adapter_label(plan, &result)),
            (
                META_SOLVER_STATS.into(),
                toml::to_string(&result.stats).unwrap_or_default(),
            ),
        ];
        let rows = w.finish(&end_meta)?;
        if plan.print {
            println!("time series  -> {} ({rows} samples)", path.display());
        }
    }
    if let (Some(pending), Some(path)) = (metrics_file, &plan.metrics) {
        drop(pending);
        let batch = parquet::metrics_batch(&cfg.params, &result.metrics, result.backend.label())?;
        parquet::write_atomic(path, &batch, &meta)?;
        if plan.print {
            println!("metrics      -> {}", path.display());
        }
    }
    if let Some(dir) = &plan.snapshots {
        let robot = Robot::new(&cfg.params);
        let files = plots::snapshots(&robot, &result.samples, &plan.snapshot_times, dir)?;
        let angles = dir.join(plots::BASAL_ANGLES_FILE);
        let start: Vec<f64> = (0..cfg.params.n_legs)
            .map(|i| cfg.params.initial_angle(i))
            .collect();
        plots::basal_angles(&result.samples, &start, &angles)?;
        if plan.print {
            println!(
                "pictures     -> {} ({} snapshots + basal_angles.png)",
                dir.display(),
                files.len()
            );
        }
    }
    if let Some(a) = animator {
        let clip = a.finish(&result.metrics).context("--animate")?;
        if plan.print {
            println!(
                "animation    -> {} ({} frames, {:.1} s at {:.2}x, {:.1} MB)",
                clip.path.display(),
                clip.frames,
                clip.seconds,
                clip.speed,
                clip.bytes as f64 / 1e6
            );
        }
    }
    Ok(result)
}

/// "adapter name, f64" for GPU results, empty otherwise. Only a GPU result asks for the
/// context: opening it creates a Vulkan instance, which cpu and reference runs must not.
fn adapter_label(plan: &Plan, r: &PointResult) -> String {
    if r.backend != Backend::Gpu {
        return String::new();
    }
    match plan.engine.gpu().map(Gpu::context) {
        Some(Ok(ctx)) => format!("{}, {}", ctx.adapter.name, ctx.precision.label()),
        _ => String::new(),
    }
}

fn print_summary(plan: &Plan, r: &PointResult) {
    let m: &Metrics = &r.metrics;
    let s = &r.stats;
    println!(
        "metachron {} | backend {}{} | N = {}, n = {}, t_f = {} s",
        metachron::VERSION,
        r.backend.label(),
        match r.backend {
            Backend::Gpu => format!(" ({})", adapter_label(plan, r)),
            _ => String::new(),
        },
        plan.cfg.params.n_legs,
        plan.cfg.params.n_nodes,
        plan.cfg.params.t_final
    );
    println!(
        "status {}{} | class {}",
        m.status.label(),
        if m.status.is_ok() {
            String::new()
        } else {
            format!(
                " at t = {}",
                voc::show(voc::STATUS_TIME, m.status.time(), 4)
            )
        } + &m
            .status
            .failure()
            .map(|f| format!(" ({f})"))
            .unwrap_or_default(),
        m.class.label()
    );
    println!(
        "  horizon t_run        {} | settled {}",
        voc::show_shortest(metric::t_run, m.t_run),
        match m.settled {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        }
    );
    if let Some(d) = m.wave_direction {
        println!(
            "  wave                 direction {d:+}, {}",
            m.wave_sense
                .map(|w| w.label())
                .unwrap_or("no sense (the body hardly moved)")
        );
    }
    let line = |label: &str, name: &str, x: f64, decimals: usize| {
        println!("  {label:<20} {}", voc::show(name, x, decimals));
    };
    line("lag order R", metric::lag_order, m.lag_order, 6);
    line("mean lag", metric::mean_lag, m.mean_lag, 3);
    line("min PLV", metric::min_plv, m.min_plv, 6);
    line("lag spread", metric::lag_spread, m.lag_spread, 3);
    line("Kuramoto r", metric::kuramoto_r, m.kuramoto_r, 6);
    line(
        "mean frequency",
        metric::mean_frequency,
        m.mean_frequency,
        6,
    );
    line(
        metric::displacement,
        metric::displacement,
        m.displacement,
        6,
    );
    line("mean speed", metric::mean_speed, m.mean_speed, 6);
    line("actuation work", metric::work, m.work, 6);
    if plan.cfg.params.axo_f != 0.0 {
        line("couple work", metric::work_axo, m.work_axo, 6);
    }
    if plan.cfg.params.has_coupling_dampers() {
        line(
            "coupling dissipation",
            metric::work_coupling,
            m.work_coupling,
            6,
        );
    }
    line(
        "cost of transport",
        metric::cost_of_transport,
        m.cost_of_transport,
        6,
    );
    line("duty factor", metric::duty_factor, m.duty_factor, 6);
    println!(
        "  {:<20} {}",
        "max inextensibility",
        voc::show_exp(metric::max_inextensibility, m.max_inextensibility, 3)
    );
    // Simulated time actually covered (a run that stopped early did not reach t_final).
    let reached = if m.status.is_ok() {
        m.t_run
    } else {
        m.status.time()
    };
    let rate = reached / r.wall_seconds;
    let estimated = match &plan.estimate {
        Some(e) => format!(", estimated {}", metachron::cost::human(e.seconds)),
        None => String::new(),
    };
    if s.fixed_step > 0.0 {
        println!(
            "fixed step: {} steps of {:.4e} s | wall {:.2} s{estimated} ({rate:.3} robot-s per s)",
            s.steps, s.fixed_step, r.wall_seconds
        );
    } else {
        println!(
            "solver: {} steps ({} rejected), {} contact events, {} rhs, {} jacobians, {} LU, {} newton its | wall {:.2} s{estimated} ({rate:.3} robot-s per s)",
            s.steps,
            s.rejected_steps,
            s.contact_events,
            s.rhs_evals,
            s.jacobian_evals,
            s.lu_factorizations,
            s.newton_iterations,
            r.wall_seconds,
        );
    }
}
