//! Running a planned sweep in chunks: each chunk is one `run_batch` call and one part
//! file, so an interrupted sweep loses at most the chunk in flight.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::batch::{run_batch, Engine};
use crate::dataset::manifest::{self, Manifest};
use crate::dataset::schema::{self, COL_POINT_ID, FORMAT_VERSION};
use crate::dataset::tree::{self, Stray};
use crate::dataset::verify::{self, Defect, Expected};
use crate::dataset::{part, rows, Column};
use crate::metrics::METRIC_COLUMNS;
use crate::simulate::{Backend, RunConfig};
use crate::sweep::lock::{lock_shard, ShardLock};
use crate::sweep::record;
use crate::sweep::rng::SplitMix64;
use crate::sweep::{Plan, PlannedPoint, Shard, SweepError, SweepSpec};

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub out: PathBuf,
    /// What runs the points (the GPU's handle where it is the GPU).
    pub engine: Engine,
    /// Points per chunk (= per part file and per `run_batch` call).
    pub batch: usize,
    pub resume: bool,
    pub shard: Shard,
    /// Stop after this many chunks (tests of interruption); `None` runs to the end.
    pub stop_after_chunks: Option<usize>,
    /// Raised by another thread to stop before the next chunk (an interrupted caller:
    /// the chunk in flight is written, `resume` runs the rest).
    pub stop: StopFlag,
}

/// A request, shared between threads, that a running sweep stop before its next chunk.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Ask the sweep to stop once the chunk in flight is written.
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A sweep's work: this shard's points, and which of them are still to run. Holds
/// the shard's writer lock (when taken) until dropped.
pub struct Work<'a> {
    pub shard_points: usize,
    pub already_done: usize,
    pub pending: Vec<&'a PlannedPoint>,
    /// Files that failed the check: (where it was, where it went, why).
    pub quarantined: Vec<(PathBuf, PathBuf, Defect)>,
    /// Bad parts of other shards, left to their own writer.
    pub left_for_others: Vec<(PathBuf, Defect)>,
    /// What is under DIR but not the dataset's: reported, never touched.
    pub strays: Vec<Stray>,
    pub lock: Option<ShardLock>,
}

/// Default chunk size: a few seconds of work per part file on the CPU, the thread
/// count on the slow reference; on a GPU as many instances as the device holds for
/// every shape in `points` (capped at 16384, or 256 on a software adapter, so that
/// progress and resume keep a useful granularity).
pub fn default_batch(engine: &Engine, points: &[&PlannedPoint]) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let backend = engine.backend();
    if let Some(gpu) = engine.gpu() {
        let shapes = points
            .iter()
            .map(|p| (p.cfg.params.n_legs, p.cfg.params.n_nodes));
        if let Some(limit) = crate::batch::gpu_batch_limit(gpu, shapes) {
            return limit;
        }
    }
    if backend == Backend::Reference {
        threads
    } else {
        (32 * threads).clamp(32, 512)
    }
}

/// How many point ids the sweep can have: its points, or for a refined sweep every point
/// of the finest lattice (refined points take their ids from lattice coordinates).
pub fn id_space(spec: &SweepSpec) -> u64 {
    let combos = match &spec.refine {
        Some(r) => crate::sweep::lattice::Lattice::new(&spec.shape(), r)
            .sizes
            .iter()
            .product::<usize>(),
        None => spec.combinations(),
    };
    (combos * spec.repeats) as u64
}

/// What a part of `spec`'s dataset must be (the manifest adds layout and backend).
pub fn expected(spec: &SweepSpec) -> Result<Expected, SweepError> {
    Ok(Expected {
        sweep_hash: record::sweep_hash(spec),
        points: id_space(spec),
        schema: part::part_schema()?,
        shards: None,
        backend: None,
    })
}

/// The manifest a writer of `spec` with `opts` would write (or must match).
pub fn writer_manifest(spec: &SweepSpec, opts: &RunOptions) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        sweep_hash: record::sweep_hash(spec),
        sweep_name: spec.name.clone(),
        sweep_file: spec.file.clone(),
        sweep: spec.text.clone(),
        shards: opts.shard.count,
        backend: opts.engine.backend().label().to_string(),
        written_by: crate::VERSION.to_string(),
        created: crate::sweep::lock::utc_now(),
    }
}

/// Decide what to run, as the writer of this shard: claim the directory (its manifest,
/// created by the first writer under the manifest lock: another sweep, shard layout,
/// backend or format version is refused), take the shard's lock (a second writer
/// fails at once), then, with `--resume`, check every part, move the bad ones of this
/// shard to `out/quarantine/` and count only the points of good parts; remove this
/// shard's stale temporaries (under the lock). A new dataset's directory must hold
/// nothing else; without `--resume` one with parts is an error.
pub fn work<'a>(
    spec: &SweepSpec,
    plan: &'a Plan,
    opts: &RunOptions,
) -> Result<Work<'a>, SweepError> {
    prepare(spec, plan, opts, true)
}

/// What [`work`] would run, changing nothing (no lock, no manifest, no quarantine):
/// `--dry-run`.
pub fn preview<'a>(
    spec: &SweepSpec,
    plan: &'a Plan,
    opts: &RunOptions,
) -> Result<Work<'a>, SweepError> {
    prepare(spec, plan, opts, false)
}

fn listing(strays: &[Stray], dir: &Path) -> String {
    let mut lines: Vec<String> = strays
        .iter()
        .take(20)
        .map(|s| {
            format!(
                "  {}: {}",
                s.path.strip_prefix(dir).unwrap_or(&s.path).display(),
                s.kind.describe()
            )
        })
        .collect();
    if strays.len() > 20 {
        lines.push(format!("  ... and {} more", strays.len() - 20));
    }
    lines.join("\n")
}

/// A path the writer creates or enters must be a real directory (never a link).
fn real_dir_or_absent(path: &Path) -> Result<(), SweepError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_dir() => Err(SweepError::Dataset(format!(
            "{}: not a directory (a link is never followed): remove it or choose another --out",
            path.display()
        ))),
        _ => Ok(()),
    }
}

fn prepare<'a>(
    spec: &SweepSpec,
    plan: &'a Plan,
    opts: &RunOptions,
    as_writer: bool,
) -> Result<Work<'a>, SweepError> {
    let mine = plan.shard(opts.shard);
    let out = &opts.out;
    if out.exists() && !out.is_dir() {
        return Err(SweepError::Dataset(format!(
            "{}: not a directory (--out names the dataset's directory)",
            out.display()
        )));
    }
    let wanted = writer_manifest(spec, opts);
    let tree = tree::tree(out)?;
    match verify::manifest_of(out)? {
        Some(m) => {
            m.admits(&wanted, out)?;
            if !opts.resume && !tree.parts.is_empty() {
                return Err(SweepError::Dataset(format!(
                    "{} already holds a dataset ({} part files): pass --resume to continue \
                     it, or choose another --out",
                    out.display(),
                    tree.parts.len()
                )));
            }
        }
        // A new dataset: the directory is its own, nothing else may be in it.
        None if !tree.strays.is_empty() => {
            return Err(SweepError::Dataset(format!(
                "{} holds other files, so it cannot become a dataset's directory (a resume \
                 would judge them): choose an empty or new --out. Found:\n{}",
                out.display(),
                listing(&tree.strays, out)
            )));
        }
        None => {}
    }
    let shard_dir = out.join(schema::shard_dir_name(opts.shard.index));
    real_dir_or_absent(&shard_dir)?;
    real_dir_or_absent(&out.join(schema::QUARANTINE_DIR))?;
    if let Some(outer) = crate::dataset::enclosing_dataset(out) {
        return Err(SweepError::Dataset(format!(
            "{} is inside the dataset {}: its readers would count the inner dataset's \
             rows as their own; choose an --out outside it",
            out.display(),
            outer.display()
        )));
    }
    let lock = if as_writer {
        let held = manifest::lock(out)?;
        let (_, created) = manifest::claim(out, &wanted, &held)?;
        drop(held);
        if !created && !opts.resume && !tree::part_files(out)?.is_empty() {
            return Err(SweepError::Dataset(format!(
                "{} already holds a dataset: pass --resume to continue it, or choose another --out",
                out.display()
            )));
        }
        Some(lock_shard(&shard_dir).map_err(|e| SweepError::Dataset(e.to_string()))?)
    } else {
        None
    };
    let mut done = HashSet::new();
    let mut quarantined = Vec::new();
    let mut left = Vec::new();
    let mut strays = Vec::new();
    if verify::manifest_of(out)?.is_some() {
        let scan = verify::scan(out, &expected(spec)?)?;
        done = scan.done_ids();
        strays = scan.strays;
        for (path, defect) in scan.bad {
            // This shard's own parts, and parts in no shard of the layout: no other
            // writer moves those.
            let owner = verify::shard_dir_of(&path);
            let ours = owner.is_none_or(|k| k == opts.shard.index || k >= opts.shard.count);
            if as_writer && ours {
                let to = verify::quarantine(out, &path, &defect)?;
                quarantined.push((path, to, defect));
            } else if ours {
                quarantined.push((path.clone(), path, defect));
            } else {
                left.push((path, defect));
            }
        }
    }
    if as_writer && opts.resume {
        // Only this shard's directory, under its lock: other shards may be writing
        // into theirs right now (a job array resumes all its tasks at once).
        tree::remove_stale_temporaries(&shard_dir)?;
    }
    let shard_points = mine.len();
    let pending: Vec<&PlannedPoint> = mine
        .into_iter()
        .filter(|p| !done.contains(&p.point_id))
        .collect();
    Ok(Work {
        shard_points,
        already_done: shard_points - pending.len(),
        pending,
        quarantined,
        left_for_others: left,
        strays,
        lock,
    })
}

/// `--until-settled MAX_T` (or `until_settled` in the sweep file): check it and put it
/// into every point's configuration, before anything runs. The cpu and gpu engines
/// continue unsettled runs from their kept state; the reference cannot, so it is
/// refused rather than rerun from t = 0. A horizon given on the command line that the
/// file does not state becomes part of the dataset's identity (a comment appended to
/// the recorded sweep text, so the hash differs): resuming it without the same
/// `--until-settled` is refused instead of mixing horizons.
pub fn apply_until_settled(
    spec: &mut SweepSpec,
    from_cli: Option<f64>,
    backend: Backend,
) -> Result<(), SweepError> {
    let Some(max_t) = from_cli.or(spec.until_settled) else {
        return Ok(());
    };
    let key_err = |message: String| SweepError::Key {
        file: spec.file.clone(),
        key: "until_settled".into(),
        message,
    };
    let (t_final, dt_out) = (spec.config.params.t_final, spec.config.metrics.dt_out);
    crate::integrate::continuation::validate(max_t, t_final, dt_out)
        .map_err(|e| key_err(e.to_string()))?;
    backend.continues().map_err(|e| {
        key_err(format!(
            "continuing unsettled runs to {max_t} s is {e}, or a longer t_final"
        ))
    })?;
    if from_cli.is_some() && spec.until_settled != Some(max_t) {
        spec.text.push_str(&format!(
            "\n# until_settled = {max_t} (from --until-settled)\n"
        ));
    }
    spec.until_settled = Some(max_t);
    spec.config.until_settled = Some(max_t);
    Ok(())
}

/// Outcome of [`run`].
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub points_run: usize,
    pub chunks_written: usize,
    pub not_ok: usize,
    pub wall_seconds: f64,
    /// Whether it stopped early (`stop_after_chunks` or `stop`).
    pub stopped: bool,
}

/// Run the pending points chunk by chunk, writing one part file per chunk;
/// `on_chunk(points_done_so_far)` after each. Stops early (`stopped`) after
/// `stop_after_chunks` chunks or once `opts.stop` is raised.
pub fn run(
    spec: &SweepSpec,
    pending: &[&PlannedPoint],
    opts: &RunOptions,
    mut on_chunk: impl FnMut(usize),
) -> Result<RunSummary, SweepError> {
    let start = Instant::now();
    let scheme = record::scheme_label(spec, opts.engine.backend());
    let mut s = RunSummary::default();
    for chunk in pending.chunks(opts.batch.max(1)) {
        if opts
            .stop_after_chunks
            .is_some_and(|k| s.chunks_written >= k)
            || opts.stop.is_raised()
        {
            s.stopped = true;
            break;
        }
        let t0 = Instant::now();
        let cfgs: Vec<RunConfig> = chunk.iter().map(|p| p.cfg.clone()).collect();
        let results = run_batch(&cfgs, &opts.engine);
        s.not_ok += results
            .iter()
            .filter(|r| !r.as_ref().is_ok_and(|r| r.metrics.status.is_ok()))
            .count();
        let batch = part::chunk_batch(chunk, &results, opts.engine.backend(), &scheme)?;
        let used = results
            .iter()
            .find_map(|r| r.as_ref().ok().map(|r| r.backend))
            .unwrap_or(opts.engine.backend());
        let ran = opts.engine.as_ran(used);
        let mut meta = record::part_metadata(spec, &ran, opts.shard, t0.elapsed().as_secs_f64());
        meta.extend(part::integrity_metadata(&batch)?);
        let path = schema::part_path(&opts.out, opts.shard, chunk[0].point_id);
        part::write_part(&path, &batch, &meta)?;
        s.points_run += chunk.len();
        s.chunks_written += 1;
        on_chunk(s.points_run);
    }
    s.wall_seconds = start.elapsed().as_secs_f64();
    Ok(s)
}

/// Agreement of `k` re-runs on the reference solver with the sweep's rows.
#[derive(Debug, Clone)]
pub struct Validation {
    pub path: PathBuf,
    pub points: usize,
    pub class_agree: usize,
    /// Largest |sweep − reference| per metric (NaN pairs skipped; NaN when no pair
    /// could be compared, e.g. every reference run failed).
    pub max_abs_diff: Vec<(String, f64)>,
}

/// The single run a row stands for: its configuration to the horizon the row records
/// (`t_run`), with the window a continued run ends with (`--until-settled` keeps the
/// window's length), and no continuation. The reference reruns it for `--validate`.
pub fn single_run_to(cfg: &RunConfig, t_run: f64) -> RunConfig {
    let mut c = cfg.clone();
    c.until_settled = None;
    if t_run.is_finite() && t_run > cfg.params.t_final {
        let window_len = cfg.metrics.window_len(cfg.params.t_final);
        c.params.t_final = t_run;
        c.metrics.window_start = Some(t_run - window_len);
    }
    c
}

/// Re-run `k` randomly chosen points of this shard (seeded by the sweep's seed) on the
/// reference solver and write the comparison to `out/validation-shard<K>.csv`. A row
/// continued by `--until-settled` is compared with the reference run to its horizon
/// ([`single_run_to`]).
pub fn validate(
    spec: &SweepSpec,
    plan: &Plan,
    opts: &RunOptions,
    k: usize,
) -> Result<Validation, SweepError> {
    let mine = plan.shard(opts.shard);
    let mut rng = SplitMix64::derive(spec.seed, &[0x56414c4944]); // "VALID"
    let perm = rng.permutation(mine.len());
    let mut chosen: Vec<&PlannedPoint> = perm.iter().take(k).map(|&i| mine[i]).collect();
    chosen.sort_by_key(|p| p.point_id);
    let ds = rows::read_unverified(&opts.out)?;
    let ids = ds.point_ids();
    let t_run_of = |p: &PlannedPoint| match ds.column(schema::COL_T_RUN) {
        Some(Column::Num(v)) => ids
            .iter()
            .position(|&id| id == p.point_id)
            .map_or(f64::NAN, |row| v[row]),
        _ => f64::NAN,
    };
    let cfgs: Vec<RunConfig> = chosen
        .iter()
        .map(|p| single_run_to(&p.cfg, t_run_of(p)))
        .collect();
    let refs = run_batch(&cfgs, &Engine::Reference);

    let text = |name: &str, row: usize| match ds.column(name) {
        Some(Column::Text(v)) => v[row].clone(),
        _ => String::new(),
    };
    let num = |name: &str, row: usize| match ds.column(name) {
        Some(Column::Num(v)) => v[row],
        _ => f64::NAN,
    };
    let mut header = vec![
        COL_POINT_ID.to_string(),
        "sweep_backend".into(),
        "sweep_status".into(),
        "reference_status".into(),
        "sweep_class".into(),
        "reference_class".into(),
    ];
    for (m, _) in METRIC_COLUMNS {
        header.push(format!("{m}_sweep"));
        header.push(format!("{m}_reference"));
    }
    let mut lines = vec![header.join(",")];
    // NaN until a pair of finite values is compared (never a 0 nothing measured).
    let mut max_abs = vec![f64::NAN; METRIC_COLUMNS.len()];
    let mut agree = 0;
    for (p, r) in chosen.iter().zip(&refs) {
        let Some(row) = ids.iter().position(|&id| id == p.point_id) else {
            return Err(SweepError::Dataset(format!(
                "--validate: point {} is not in {} (run the sweep to completion first)",
                p.point_id,
                opts.out.display()
            )));
        };
        let (r_status, r_class, r_vals) = match r {
            Ok(r) => (
                r.metrics.status.label().to_string(),
                r.metrics.class.label().to_string(),
                r.metrics.scalars().to_vec(),
            ),
            Err(e) => (
                format!("error: {}", e.to_string().replace(',', ";")),
                "failed".into(),
                vec![f64::NAN; METRIC_COLUMNS.len()],
            ),
        };
        if text(schema::COL_CLASS, row) == r_class {
            agree += 1;
        }
        let mut line = vec![
            p.point_id.to_string(),
            text(schema::COL_BACKEND, row),
            text(schema::COL_STATUS, row),
            r_status,
            text(schema::COL_CLASS, row),
            r_class,
        ];
        for (j, (m, _)) in METRIC_COLUMNS.iter().enumerate() {
            let a = num(m, row);
            let b = r_vals[j];
            if (a - b).is_finite() {
                max_abs[j] = max_abs[j].max((a - b).abs());
            }
            line.push(format!("{a}"));
            line.push(format!("{b}"));
        }
        lines.push(line.join(","));
    }
    let path = opts.out.join(format!(
        "{}{}.csv",
        schema::VALIDATION_PREFIX,
        opts.shard.index
    ));
    write_text_atomic(&path, &(lines.join("\n") + "\n"))?;
    Ok(Validation {
        path,
        points: chosen.len(),
        class_agree: agree,
        max_abs_diff: METRIC_COLUMNS
            .iter()
            .zip(max_abs)
            .map(|((m, _), d)| (m.to_string(), d))
            .collect(),
    })
}

fn write_text_atomic(path: &Path, text: &str) -> Result<(), SweepError> {
    Ok(crate::parquet::write_bytes_atomic(path, text.as_bytes())?)
}
