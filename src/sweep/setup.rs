//! A sweep set up to run from what `metachron sweep` was asked: the sweep file with the
//! run options that are not part of it, the plan of its shard, where and how it runs,
//! and every point's estimate (a point over the limit refuses the sweep, named), on the
//! gpu backend at the rate measured on the adapter that runs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;

use crate::batch::Engine;
use crate::cost::{default_budget, enforce, Estimate, Estimator, Mode, Rates, MEASURED};
use crate::gpu_rate::{cache_file, gpu_rate, ProbeError, Probed};
use crate::simulate::Backend;
use crate::sweep::run::{self, RunOptions};
use crate::sweep::{Plan, PlannedPoint, Shard, SweepError, SweepSpec};

/// The sweep's arguments, parsed by the command line.
#[derive(Debug, Clone)]
pub struct Request {
    pub file: PathBuf,
    /// The dataset's directory (none: only for a dry run).
    pub out: Option<PathBuf>,
    /// What runs the points (the GPU's handle where it is the GPU).
    pub engine: Engine,
    /// Points per chunk (none: the backend's default).
    pub batch: Option<usize>,
    pub resume: bool,
    pub shard: Shard,
    pub dry_run: bool,
    /// Wall-time budget per point, seconds.
    pub point_timeout: Option<f64>,
    /// Continue unsettled runs up to this time (overrides the sweep file's).
    pub until_settled: Option<f64>,
    /// Refuse a point estimated above this many seconds (unless its timeout bounds it).
    pub estimate_limit: f64,
}

/// A sweep ready to run: what [`run::work`] and [`run::run`] (or the atlas) execute.
#[derive(Debug)]
pub struct Setup {
    pub spec: SweepSpec,
    pub plan: Plan,
    pub opts: RunOptions,
    /// Each point of the shard's estimate, by point id.
    pub estimates: HashMap<u64, Estimate>,
    /// On the gpu backend: the adapter's measured rate the estimates use (or why none
    /// could be measured: then they use the CPU's); `None` on the CPU backends.
    pub gpu_rate: Option<Result<Probed, ProbeError>>,
}

/// Set the sweep of `req` up: read its file, apply the run options, plan its shard,
/// decide where and how it runs, and estimate every point.
pub fn set_up(req: &Request) -> Result<Setup, SweepError> {
    set_up_spec(SweepSpec::from_file(&req.file)?, req)
}

/// [`set_up`] for a sweep already read (from text, say: `req.file` is not read).
pub fn set_up_spec(spec: SweepSpec, req: &Request) -> Result<Setup, SweepError> {
    let spec = apply_run_options(spec, req)?;
    let mut plan = Plan::for_shard(&spec, req.shard)?;
    let opts = run_options(req, &plan)?;
    let gpu_rate = gpu_rate(&req.engine, cache_file().as_deref());
    let rates = match &gpu_rate {
        Some(Ok(p)) => p.rate.rates(),
        _ => MEASURED,
    };
    let estimates = estimate_points(&spec, &plan.shard(req.shard), req, &rates)?;
    if needs_budgets(&spec, req.engine.backend()) {
        for p in &mut plan.points {
            if let Some(e) = estimates.get(&p.point_id) {
                p.cfg.point_timeout = Some(default_budget(e));
            }
        }
    }
    Ok(Setup {
        spec,
        plan,
        opts,
        estimates,
        gpu_rate,
    })
}

fn arg(message: String) -> SweepError {
    SweepError::Argument(message)
}

/// The sweep with the run options that are not part of it (its hash and its points
/// stay the same): --point-timeout and --until-settled.
fn apply_run_options(mut spec: SweepSpec, req: &Request) -> Result<SweepSpec, SweepError> {
    if let Some(t) = req.point_timeout {
        if !(t.is_finite() && t > 0.0) {
            return Err(arg(format!(
                "--point-timeout {t}: allowed is a finite number of seconds > 0"
            )));
        }
        spec.config.point_timeout = Some(t);
    }
    run::apply_until_settled(&mut spec, req.until_settled, req.engine.backend())?;
    Ok(spec)
}

/// Where, how and which shard the sweep runs.
fn run_options(req: &Request, plan: &Plan) -> Result<RunOptions, SweepError> {
    let batch = match req.batch {
        Some(0) => return Err(arg("--batch 0: allowed is an integer >= 1".into())),
        Some(b) => b,
        None => run::default_batch(&req.engine, &plan.shard(req.shard)),
    };
    let out = match (&req.out, req.dry_run) {
        (Some(o), _) => o.clone(),
        (None, true) => PathBuf::from("(no --out)"),
        (None, false) => return Err(arg("--out DIR is required (the dataset's directory)".into())),
    };
    Ok(RunOptions {
        out,
        engine: req.engine.clone(),
        batch,
        resume: req.resume || (req.dry_run && req.out.is_some()),
        shard: req.shard,
        stop_after_chunks: None,
        stop: run::StopFlag::default(),
    })
}

/// Each point's estimate (from the step it will really take), by point id; a point
/// whose derived values no engine can use, or whose estimate is over the limit (and no
/// --point-timeout bounds it), refuses the sweep, naming the point.
fn estimate_points(
    spec: &SweepSpec,
    points: &[&PlannedPoint],
    req: &Request,
    rates: &Rates,
) -> Result<HashMap<u64, Estimate>, SweepError> {
    let mut estimator = Estimator::default();
    let mut out = HashMap::with_capacity(points.len());
    for p in points {
        let what = || point_name(spec, p);
        let e = estimator
            .estimate(&p.cfg, req.engine.backend(), Mode::Batch, rates)
            .map_err(|source| SweepError::Estimate {
                point: what(),
                source,
            })?;
        enforce(&what(), &e, req.estimate_limit, p.cfg.point_timeout)?;
        out.insert(p.point_id, e);
    }
    Ok(out)
}

/// The reference's cost is measured, never known: on the reference, a point of a sweep
/// asked for no budget (no `point_timeout`) gets [`default_budget`] of its estimate, and
/// one far past that ends as budget_exceeded in its row while the sweep goes on.
fn needs_budgets(spec: &SweepSpec, backend: Backend) -> bool {
    backend == Backend::Reference && spec.config.point_timeout.is_none()
}

/// `plan` with the reference's default budgets ([`needs_budgets`]) on its points: for the
/// points of refinement levels and adaptive rounds, planned as the sweep runs (a plan
/// that needs none is returned as it is).
pub fn with_reference_budgets<'p>(
    spec: &SweepSpec,
    backend: Backend,
    plan: &'p Plan,
) -> Result<Cow<'p, Plan>, SweepError> {
    if !needs_budgets(spec, backend) {
        return Ok(Cow::Borrowed(plan));
    }
    let mut plan = plan.clone();
    let mut estimator = Estimator::default();
    for p in &mut plan.points {
        let e = estimator
            .estimate(&p.cfg, backend, Mode::Batch, &MEASURED)
            .map_err(|source| SweepError::Estimate {
                point: point_name(spec, p),
                source,
            })?;
        p.cfg.point_timeout = Some(default_budget(&e));
    }
    Ok(Cow::Owned(plan))
}

/// "sweep.toml: point 7 (k_m = 1e12, alpha = 50)": how errors name a point.
fn point_name(spec: &SweepSpec, p: &PlannedPoint) -> String {
    format!(
        "{}: point {} ({})",
        spec.file,
        p.point_id,
        point_label(spec, p)
    )
}

/// "k_m = 1e12, alpha = 50": the point's values on the swept axes.
pub fn point_label(spec: &SweepSpec, p: &PlannedPoint) -> String {
    let label: Vec<String> = spec
        .axes
        .iter()
        .filter_map(|ax| {
            let x = p.cfg.params.scalar(&ax.param)?;
            Some(format!("{} = {x}", ax.param))
        })
        .collect();
    if label.is_empty() {
        "the base point".into()
    } else {
        label.join(", ")
    }
}
