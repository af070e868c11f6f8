//! The extension module behind the Python package `metachron` (`metachron._native`):
//! thin calls into the library, tables handed to pyarrow through the Arrow C stream
//! interface (no copy), errors raised with the messages the command line prints.
//! The package's Python side (python/metachron/) gives these their Python shape.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use metachron::batch::{run_point, Engine};
use metachron::cost::{enforce, estimate, Mode, DEFAULT_POINT_LIMIT, MEASURED};
use metachron::dataset::{Dataset as Opened, Rows, VerifyOptions};
use metachron::gpu::Gpu;
use metachron::output::map::{map_data, MapOptions, MapRequest};
use metachron::simulate::{Backend, RunConfig};
use metachron::sweep::atlas::{
    run_adaptive, run_refined, AdaptiveOutcome, LevelReport, Progress, RefineOutcome,
};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::run::{self, StopFlag};
use metachron::sweep::setup::{set_up, set_up_spec, Request, Setup};
use metachron::sweep::{Shard, SweepSpec};

create_exception!(
    _native,
    MetachronError,
    PyException,
    "An error of metachron, with the message its command line prints."
);
create_exception!(
    _native,
    ParameterError,
    MetachronError,
    "A parameter or setting that cannot be used: names the field and what is allowed."
);
create_exception!(
    _native,
    DatasetError,
    MetachronError,
    "A dataset that cannot be opened, verified or written: names the path and why."
);

/// The error and its causes joined by ": ", each said once, as the command line
/// prints them (a cause that its error already shows is not repeated).
fn message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

fn failed(e: impl std::error::Error + 'static) -> PyErr {
    MetachronError::new_err(message(&e))
}

fn dataset_failed(e: impl std::error::Error + 'static) -> PyErr {
    DatasetError::new_err(message(&e))
}

/// Record batches handed to a consumer once, through the Arrow C stream interface
/// (`__arrow_c_stream__`): pyarrow and polars take the buffers without copying.
#[pyclass(module = "metachron._native", name = "ArrowStream")]
struct ArrowStream {
    batches: Option<(SchemaRef, Vec<RecordBatch>)>,
}

impl ArrowStream {
    fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> ArrowStream {
        ArrowStream {
            batches: Some((schema, batches)),
        }
    }

    fn one(batch: RecordBatch) -> ArrowStream {
        ArrowStream::new(batch.schema(), vec![batch])
    }
}

#[pymethods]
impl ArrowStream {
    /// The stream as a PyCapsule named `arrow_array_stream` (the consumer moves it out;
    /// an unread capsule releases it when collected).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the table's own schema is the one offered
        let (schema, batches) = self
            .batches
            .take()
            .ok_or_else(|| MetachronError::new_err("this Arrow stream was already consumed"))?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok::<_, ArrowError>), schema);
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
}

/// The backend a name picks, as `--backend` reads it.
fn backend_of(name: &str) -> PyResult<Backend> {
    [Backend::Cpu, Backend::Reference, Backend::Gpu]
        .into_iter()
        .find(|b| b.label() == name)
        .ok_or_else(|| {
            ParameterError::new_err(format!("backend `{name}`: allowed are cpu, reference, gpu"))
        })
}

/// What runs `backend`: the GPU chosen by METACHRON_ADAPTER / METACHRON_GPU_PRECISION
/// (its notices printed as warnings, as the command line prints them) where it is the
/// GPU.
fn engine_of(backend: Backend) -> Engine {
    match backend {
        Backend::Reference => Engine::Reference,
        Backend::Cpu => Engine::Cpu,
        Backend::Gpu => Engine::Gpu(Arc::new(
            Gpu::from_env().with_notice_sink(|m| eprintln!("warning: {m}")),
        )),
    }
}

/// One point, as `metachron simulate` runs it: the assignments (`--set` syntax, applied
/// in order after the config file, `n_legs` first), the settings, the checks and the
/// cost limit; returns the metrics row (the `--metrics` file's table), the time series
/// (the `--out` file's table) when asked, and the warnings the command line prints (a
/// value the run cannot use).
#[pyfunction]
#[pyo3(signature = (assignments, backend, series, config=None, dt_out=None, window_start=None, point_timeout=None, max_estimate=None))]
#[allow(clippy::too_many_arguments)]
fn simulate(
    py: Python<'_>,
    assignments: Vec<String>,
    backend: &str,
    series: bool,
    config: Option<PathBuf>,
    dt_out: Option<f64>,
    window_start: Option<f64>,
    point_timeout: Option<f64>,
    max_estimate: Option<f64>,
) -> PyResult<(ArrowStream, Option<ArrowStream>, Vec<String>)> {
    let backend = backend_of(backend)?;
    let mut cfg = match &config {
        Some(path) => {
            RunConfig::from_toml_file(path).map_err(|e| ParameterError::new_err(message(&e)))?
        }
        None => RunConfig::default(),
    };
    let (first, rest): (Vec<&String>, Vec<&String>) = assignments
        .iter()
        .partition(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == "n_legs"));
    for s in first.into_iter().chain(rest) {
        cfg.params
            .apply_override(s)
            .map_err(|e| ParameterError::new_err(message(&e)))?;
    }
    if let Some(x) = dt_out {
        cfg.metrics.dt_out = x;
    }
    if window_start.is_some() {
        cfg.metrics.window_start = window_start;
    }
    cfg.point_timeout = point_timeout;
    metachron::sweep::plan::resolve_jitter(&mut cfg.params, 0, 0);
    cfg.validate()
        .map_err(|e| ParameterError::new_err(e.detail()))?;
    let limit = max_estimate.unwrap_or(DEFAULT_POINT_LIMIT);
    if limit.is_nan() || limit <= 0.0 {
        return Err(ParameterError::new_err(format!(
            "max_estimate {limit}: allowed is a number of seconds > 0 (or inf)"
        )));
    }
    let e = estimate(&cfg, backend, Mode::Solo, &MEASURED)
        .map_err(|e| ParameterError::new_err(message(&e)))?;
    enforce("the run", &e, limit, cfg.point_timeout)
        .map_err(|e| ParameterError::new_err(message(&e)))?;
    if series && backend == Backend::Gpu {
        return Err(ParameterError::new_err(
            "series needs the time series, which the gpu backend does not keep (it \
             accumulates the metrics on the device); use backend=\"cpu\" for it",
        ));
    }
    let warnings = cfg.params.inert().iter().map(|i| i.to_string()).collect();
    let engine = engine_of(backend);
    let result = py
        .detach(|| run_point(&cfg, &engine, series, |_| {}))
        .map_err(failed)?;
    let metrics =
        metachron::parquet::metrics_batch(&cfg.params, &result.metrics, result.backend.label())
            .map_err(failed)?;
    let mut meta = vec![
        (
            metachron::dataset::schema::META_VERSION.to_string(),
            metachron::VERSION.to_string(),
        ),
        (
            metachron::dataset::schema::META_BACKEND.to_string(),
            result.backend.label().to_string(),
        ),
        (
            metachron::dataset::schema::META_PARAMS.to_string(),
            cfg.params.to_toml_string(),
        ),
    ];
    meta.extend(metachron::simulate::scheme_metadata(&cfg, result.backend));
    let metrics = with_metadata(metrics, &meta).map_err(failed)?;
    let series = if series {
        let batch = metachron::parquet::timeseries_batch(&result.samples, cfg.params.n_legs)
            .map_err(failed)?;
        Some(ArrowStream::one(
            with_metadata(batch, &meta).map_err(failed)?,
        ))
    } else {
        None
    };
    Ok((ArrowStream::one(metrics), series, warnings))
}

/// `batch` with `meta` added to its schema's metadata (what the Parquet outputs carry
/// in their file metadata).
fn with_metadata(batch: RecordBatch, meta: &[(String, String)]) -> Result<RecordBatch, ArrowError> {
    let mut m = batch.schema().metadata().clone();
    m.extend(meta.iter().cloned());
    let schema = Arc::new(batch.schema().as_ref().clone().with_metadata(m));
    batch.with_schema(schema)
}

/// What a running sweep tells the Python side (its progress bar, its warnings).
enum Event {
    Stage { label: String, points: usize },
    Advance(usize),
    Note(String),
    Warning(String),
}

/// The atlas' progress as events.
struct Sender(mpsc::Sender<Event>);

impl Progress for Sender {
    fn stage(&mut self, level: u32, round: usize, points: usize) {
        let mut label = String::new();
        if level > 0 || round > 0 {
            label = format!("level {level}");
        }
        if round > 0 {
            label.push_str(&format!(" round {round}"));
        }
        let _ = self.0.send(Event::Stage { label, points });
    }

    fn advance(&mut self, done: usize) {
        let _ = self.0.send(Event::Advance(done));
    }

    fn level_done(&mut self, l: &LevelReport) {
        let _ = self.0.send(Event::Note(l.to_string()));
    }
}

/// How a sweep ended.
enum Ended {
    Done { points_run: usize },
    Stopped,
}

/// Run what `setup` plans, as `metachron sweep` runs it (plain, refined or adaptive),
/// telling `tx` as it goes; stops before the next chunk once `stop` is raised.
fn run_setup(
    setup: &Setup,
    tx: mpsc::Sender<Event>,
) -> Result<Ended, metachron::sweep::SweepError> {
    let Setup {
        spec, plan, opts, ..
    } = setup;
    let mut progress = Sender(tx.clone());
    if spec.refine.is_some() {
        return Ok(match run_refined(spec, opts, &mut progress)? {
            RefineOutcome::Done(levels) => Ended::Done {
                points_run: levels.iter().map(|l| l.points_run).sum(),
            },
            RefineOutcome::Waiting { .. } | RefineOutcome::Stopped => Ended::Stopped,
        });
    }
    if spec.adaptive.is_some() {
        return Ok(match run_adaptive(spec, plan, opts, &mut progress)? {
            AdaptiveOutcome::Done(rounds) => Ended::Done {
                points_run: rounds.iter().map(|r| r.points_run).sum(),
            },
            AdaptiveOutcome::Stopped => Ended::Stopped,
        });
    }
    let work = run::work(spec, plan, opts)?;
    for (from, to, why) in &work.quarantined {
        let _ = tx.send(Event::Warning(format!(
            "{} failed the check ({why}); moved to {}; points no other part holds run again",
            from.display(),
            to.display()
        )));
    }
    for s in &work.strays {
        let _ = tx.send(Event::Warning(format!(
            "{} is not the dataset's: {}; never moved",
            s.path.display(),
            s.kind.describe()
        )));
    }
    let _ = tx.send(Event::Stage {
        label: String::new(),
        points: work.pending.len(),
    });
    let s = run::run(spec, &work.pending, opts, |done| {
        let _ = tx.send(Event::Advance(done));
    })?;
    Ok(if s.stopped {
        Ended::Stopped
    } else {
        Ended::Done {
            points_run: s.points_run,
        }
    })
}

/// A sweep, as `metachron sweep FILE --out OUT` runs it: `file` (a sweep file) or
/// `text` (a sweep file's text, named `name`). The points run on a thread of their own
/// while this one waits for Ctrl-C: an interrupt stops the sweep after the chunk in
/// flight (written, so `resume` loses nothing) and is raised here as KeyboardInterrupt.
/// `on_event(kind, label, number)` hears of stages ("stage", label, points), progress
/// ("advance", "", points done), notes and warnings ("note"/"warning", text, 0).
#[pyfunction]
#[pyo3(signature = (out, backend, resume, on_event, file=None, text=None, name=None, batch=None, point_timeout=None, until_settled=None, max_estimate=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    out: PathBuf,
    backend: &str,
    resume: bool,
    on_event: Bound<'_, PyAny>,
    file: Option<PathBuf>,
    text: Option<String>,
    name: Option<String>,
    batch: Option<usize>,
    point_timeout: Option<f64>,
    until_settled: Option<f64>,
    max_estimate: Option<f64>,
) -> PyResult<usize> {
    let backend = backend_of(backend)?;
    let name = name.unwrap_or_else(|| "sweep".into());
    let req = Request {
        file: file
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("{name} (a dict)"))),
        out: Some(out),
        engine: engine_of(backend),
        batch,
        resume,
        shard: Shard::default(),
        dry_run: false,
        point_timeout,
        until_settled,
        estimate_limit: max_estimate.unwrap_or(DEFAULT_POINT_LIMIT),
    };
    let setup = match (&file, &text) {
        (Some(_), _) => py.detach(|| set_up(&req)),
        (None, Some(t)) => {
            let spec = SweepSpec::from_str_named(t, &format!("{name} (a dict)"), &name)
                .map_err(|e| ParameterError::new_err(message(&e)))?;
            py.detach(|| set_up_spec(spec, &req))
        }
        (None, None) => return Err(ParameterError::new_err("give a sweep file or its contents")),
    }
    .map_err(|e| ParameterError::new_err(message(&e)))?;
    let stop: StopFlag = setup.opts.stop.clone();
    let (tx, rx) = mpsc::channel();
    let mut interrupted: Option<PyErr> = None;
    let ended = std::thread::scope(|scope| {
        let worker = scope.spawn(|| run_setup(&setup, tx));
        let mut rx = rx;
        loop {
            let (got, back) = py.detach(move || {
                let got = rx.recv_timeout(Duration::from_millis(100));
                (got, rx)
            });
            rx = back;
            match got {
                Ok(ev) if interrupted.is_none() => {
                    let called = match ev {
                        Event::Stage { label, points } => on_event.call1(("stage", label, points)),
                        Event::Advance(done) => on_event.call1(("advance", "", done)),
                        Event::Note(t) => on_event.call1(("note", t, 0)),
                        Event::Warning(t) => on_event.call1(("warning", t, 0)),
                    };
                    if let Err(e) = called {
                        stop.raise();
                        interrupted = Some(e);
                    }
                }
                Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if interrupted.is_none() {
                if let Err(e) = py.check_signals() {
                    stop.raise();
                    interrupted = Some(e);
                }
            }
        }
        worker.join()
    });
    let ended = match ended {
        Ok(r) => r,
        Err(_) => return Err(MetachronError::new_err("the sweep's thread panicked")),
    };
    if let Some(e) = interrupted {
        // The chunks written stay; an error of the chunk in flight is said too.
        if let Err(err) = &ended {
            eprintln!("error: {}", message(err));
        }
        return Err(e);
    }
    match ended.map_err(dataset_failed)? {
        Ended::Done { points_run } => Ok(points_run),
        Ended::Stopped => Err(MetachronError::new_err(format!(
            "the sweep stopped before its end; run it again with resume=True to finish {}",
            setup.opts.out.display()
        ))),
    }
}

/// A dataset judged whole, as `metachron check` judges it (every byte of every part,
/// or the readers' verification cache with `cached`), refused unless complete and clean
/// (unless `allow_incomplete`).
#[pyclass(module = "metachron._native", name = "Verified")]
struct Verified {
    dir: PathBuf,
    sweep_name: String,
    parts: Vec<PathBuf>,
    #[pyo3(get)]
    health: String,
    #[pyo3(get)]
    health_json: String,
    #[pyo3(get)]
    incomplete: Option<String>,
    #[pyo3(get)]
    sweep: String,
    rows: Rows,
    axes: Vec<String>,
    spec: SweepSpec,
}

fn not_a_dir(dir: &Path) -> PyErr {
    DatasetError::new_err(format!(
        "{}: not a directory (give the --out DIR of a sweep)",
        dir.display()
    ))
}

#[pyfunction]
#[pyo3(signature = (dir, allow_incomplete=false, cached=false))]
fn open(py: Python<'_>, dir: PathBuf, allow_incomplete: bool, cached: bool) -> PyResult<Verified> {
    if !dir.is_dir() {
        return Err(not_a_dir(&dir));
    }
    py.detach(|| {
        let opened = Opened::open(&dir).map_err(dataset_failed)?;
        let spec = recorded_sweep(&opened).map_err(dataset_failed)?;
        let opts = VerifyOptions {
            use_cache: cached,
            require_complete: !allow_incomplete,
        };
        let mut v = opened.verify(&spec, opts).map_err(dataset_failed)?;
        let rows = v.rows().map_err(dataset_failed)?;
        Ok(Verified {
            dir: dir.clone(),
            sweep_name: spec.name.clone(),
            parts: v.scan.good_paths(),
            health: v.health.to_string(),
            health_json: serde_json::to_string(&v.health).map_err(failed)?,
            incomplete: v.incomplete.clone(),
            sweep: v.manifest.sweep.clone(),
            rows,
            axes: spec.axes.iter().map(|a| a.param.clone()).collect(),
            spec,
        })
    })
}

#[pymethods]
impl Verified {
    #[getter]
    fn dir(&self) -> PathBuf {
        self.dir.clone()
    }

    #[getter]
    fn name(&self) -> String {
        self.sweep_name.clone()
    }

    #[getter]
    fn axes(&self) -> Vec<String> {
        self.axes.clone()
    }

    #[getter]
    fn parts(&self) -> Vec<PathBuf> {
        self.parts.clone()
    }

    /// The good parts' rows, every column as written (one stream of the parts' batches).
    fn table(&self, py: Python<'_>) -> PyResult<ArrowStream> {
        let parts = self.parts.clone();
        py.detach(move || {
            let mut batches = Vec::new();
            let mut schema: Option<SchemaRef> = None;
            for p in &parts {
                let (bs, _) = metachron::parquet::read_parquet(p).map_err(dataset_failed)?;
                for b in bs {
                    schema.get_or_insert_with(|| b.schema());
                    batches.push(b);
                }
            }
            let schema = match schema {
                Some(s) => s,
                None => metachron::dataset::part::part_schema().map_err(dataset_failed)?,
            };
            // Parts written by one build share the schema; their field metadata is
            // the dataset's (the first part's).
            let batches = batches
                .into_iter()
                .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(failed)?;
            Ok(ArrowStream::new(schema, batches))
        })
    }

    /// The summary `metachron summarize` computes (one row per parameter combination:
    /// class fractions with Wilson 95 % intervals, per-class means) of the rows meeting
    /// every `COLUMN=VALUE` of `conditions`; with `by`, one row per distinct value of
    /// those columns instead (`combo` then numbers these groups, and a parameter that
    /// varies inside a group is left out, as summarize leaves out one that varies
    /// between a combination's repeats).
    fn summarize(
        &self,
        py: Python<'_>,
        conditions: Vec<String>,
        by: Vec<String>,
    ) -> PyResult<ArrowStream> {
        let mut rows = self.facet(&conditions)?;
        if !by.is_empty() {
            regroup(&mut rows, &by)?;
        }
        let dir = self.dir.clone();
        py.detach(move || {
            let (batch, _) = metachron::sweep::summary::summarize(&rows, &dir).map_err(failed)?;
            Ok(ArrowStream::one(batch))
        })
    }

    /// The map `metachron map` draws, as data (see `MapData`), of the rows meeting
    /// `conditions`, averaging over the swept parameters in `averaged`.
    #[pyo3(signature = (x, y, metric, conditions, averaged, bins=None, ci_width=None, range=None))]
    #[allow(clippy::too_many_arguments)]
    fn map<'py>(
        &self,
        py: Python<'py>,
        x: String,
        y: String,
        metric: String,
        conditions: Vec<String>,
        averaged: Vec<String>,
        bins: Option<usize>,
        ci_width: Option<f64>,
        range: Option<(f64, f64)>,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let rows = self.facet(&conditions)?;
        let rows = metachron::sweep::facet::averaged_on_purpose(
            rows,
            &self.spec,
            &[x.as_str(), y.as_str()],
            &averaged,
        )
        .map_err(|e| ParameterError::new_err(message(&e)))?;
        if let Some(w) = ci_width.filter(|w| !(*w > 0.0 && *w <= 1.0)) {
            return Err(ParameterError::new_err(format!(
                "--ci-width {w}: allowed is 0 < W <= 1"
            )));
        }
        let req = MapRequest { x, y, metric };
        let opts = MapOptions {
            ci_width,
            range,
            bins,
        };
        let d = map_data(&rows, &req, &opts).map_err(|e| ParameterError::new_err(message(&e)))?;
        let out = pyo3::types::PyDict::new(py);
        out.set_item("x", d.x)?;
        out.set_item("y", d.y)?;
        out.set_item("x_log", d.x_log)?;
        out.set_item("y_log", d.y_log)?;
        out.set_item("x_categories", d.x_categories)?;
        out.set_item("y_categories", d.y_categories)?;
        out.set_item("x_lo", d.x_lo)?;
        out.set_item("x_hi", d.x_hi)?;
        out.set_item("y_lo", d.y_lo)?;
        out.set_item("y_hi", d.y_hi)?;
        out.set_item("value", d.value)?;
        out.set_item("class", d.class)?;
        out.set_item("wide", d.wide)?;
        out.set_item("runs", d.runs)?;
        out.set_item("range", d.range)?;
        out.set_item("title", d.title)?;
        out.set_item("what", d.what)?;
        Ok(out)
    }
}

impl Verified {
    /// The rows meeting every `COLUMN=VALUE` of `conditions` (as `map --where`).
    fn facet(&self, conditions: &[String]) -> PyResult<Rows> {
        let rows = self.rows.select(&vec![true; self.rows.len()]);
        metachron::sweep::facet::facet(rows, conditions)
            .map_err(|e| ParameterError::new_err(message(&e)))
    }
}

/// Number the rows' groups of equal `by` values (in order of first appearance) in the
/// `combo` column, which summarize groups by.
fn regroup(rows: &mut Rows, by: &[String]) -> PyResult<()> {
    use metachron::dataset::schema::COL_COMBO;
    use metachron::dataset::Column;
    let mut keys: Vec<Vec<String>> = vec![Vec::new(); rows.len()];
    for name in by {
        match rows.column(name) {
            Some(Column::Num(v)) => {
                for (k, x) in keys.iter_mut().zip(v) {
                    k.push(x.to_bits().to_string());
                }
            }
            Some(Column::Text(v)) => {
                for (k, x) in keys.iter_mut().zip(v) {
                    k.push(x.clone());
                }
            }
            None => {
                return Err(ParameterError::new_err(format!(
                    "by `{name}`: the dataset has no column `{name}`"
                )))
            }
        }
    }
    let mut seen: std::collections::HashMap<&Vec<String>, usize> = Default::default();
    let group: Vec<f64> = keys
        .iter()
        .map(|k| {
            let next = seen.len();
            *seen.entry(k).or_insert(next) as f64
        })
        .collect();
    for (name, col) in rows.columns.iter_mut() {
        if name == COL_COMBO {
            *col = Column::Num(group.clone());
        }
    }
    Ok(())
}

/// The parameter table `metachron params` prints: (name, unit, default, allowed,
/// meaning) per parameter.
#[pyfunction]
fn params() -> Vec<(String, String, String, String, String)> {
    metachron::params::table()
        .into_iter()
        .map(|r| {
            (
                r.name.to_string(),
                r.unit.to_string(),
                r.default,
                r.allowed,
                r.meaning,
            )
        })
        .collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", metachron::VERSION)?;
    m.add("MetachronError", m.py().get_type::<MetachronError>())?;
    m.add("ParameterError", m.py().get_type::<ParameterError>())?;
    m.add("DatasetError", m.py().get_type::<DatasetError>())?;
    m.add_class::<ArrowStream>()?;
    m.add_class::<Verified>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(params, m)?)?;
    Ok(())
}
