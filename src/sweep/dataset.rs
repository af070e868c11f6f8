//! Sweep datasets: one Parquet part file per chunk, in a hive-style directory
//! `DIR/shard=K/part-<first point id>.parquet`, readable as one table by DuckDB
//! (`SELECT … FROM 'DIR/**/*.parquet'`) and polars (`scan_parquet`).
//!
//! Rows: `point_id`, `combo`, `repeat`, `level` (refinement level), every parameter as its own typed column, every
//! metric, `status`, `class`, `backend`, `scheme`, `step`, `error`. Each part is written
//! to a hidden temporary name and renamed when complete ([`parquet::write_atomic`]),
//! so a killed sweep leaves only whole part files (and at most a hidden temporary,
//! removed on `--resume`).
//!
//! Every part records in its file metadata the sweep hash, its shard, its point-id
//! range, its row count and a digest of its values ([`content_digest`]): parquet-rs
//! writes no page checksums, so [`crate::sweep::verify`] decodes each part and checks
//! the digest before `--resume` or `metachron check` trusts it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, BooleanArray, Float64Array, ListArray, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, SchemaRef};

use crate::error::{OutputError, SolverError};
use crate::metrics::{Metrics, MetricsAccumulator};
use crate::output::parquet::{self, field, TableBuilder};
use crate::sample::{SolverFailure, Status};
use crate::simulate::{Backend, PointResult};
use crate::sweep::{PlannedPoint, Shard, SweepSpec};

/// File-metadata keys written into every part file.
pub const META_SWEEP: &str = "metachron.sweep";
pub const META_SWEEP_HASH: &str = "metachron.sweep_hash";
pub const META_VERSION: &str = "metachron.version";
pub const META_SHARD: &str = "metachron.shard";
pub const META_BACKEND: &str = "metachron.backend";
pub const META_ADAPTER: &str = "metachron.adapter";
pub const META_FIRST_ID: &str = "metachron.first_point_id";
pub const META_LAST_ID: &str = "metachron.last_point_id";
pub const META_ROWS: &str = "metachron.rows";
pub const META_DIGEST: &str = "metachron.content_digest";
pub const META_FORMAT: &str = "metachron.format";

/// The rows' format. 2: per-leg lists (`psi_init`, `actuated`, `omega_legs`) are list
/// columns and each part names the scheme that ran with its settings only. 1 (parts
/// without this key): those lists were comma-joined text, both settings recorded.
/// Readers take either.
pub const FORMAT_VERSION: u32 = 2;

/// Where quarantined files go, inside the dataset directory (never read as parts).
pub const QUARANTINE_DIR: &str = "quarantine";

/// Path of the part file that starts at `first_point_id` in `shard`.
pub fn part_path(dir: &Path, shard: Shard, first_point_id: u64) -> PathBuf {
    dir.join(format!("shard={}", shard.index))
        .join(format!("part-{first_point_id:09}.parquet"))
}

/// Fingerprint of a sweep file's text (resume refuses a directory of another sweep).
pub fn sweep_hash(spec: &SweepSpec) -> String {
    format!("{:016x}", crate::sweep::rng::fnv1a(spec.text.as_bytes()))
}

/// Scheme label of a backend: the fixed-step scheme or the reference method.
pub fn scheme_label(spec: &SweepSpec, backend: Backend) -> String {
    crate::simulate::scheme_name(&spec.config, backend)
}

/// What ran the points: the backend and its adapter (the GPU's name, type and
/// precision; the thread count on the CPU).
pub fn adapter_label(backend: Backend) -> String {
    if backend == Backend::Gpu {
        match crate::gpu::shared_context() {
            Ok(ctx) => format!(
                "gpu: {} ({}, {}, {})",
                ctx.adapter.name,
                ctx.adapter.device_type,
                ctx.adapter.driver,
                ctx.precision.label()
            ),
            Err(e) => format!("gpu unavailable ({e}): cpu fallback"),
        }
    } else {
        format!("cpu: rayon, {} threads", rayon::current_num_threads())
    }
}

/// File metadata of a part: the sweep file, version, dataset format, backend, adapter,
/// the scheme that ran with its settings, and classification thresholds.
pub fn part_metadata(
    spec: &SweepSpec,
    backend: Backend,
    shard: Shard,
    chunk_wall_seconds: f64,
) -> Vec<(String, String)> {
    let cfg = &spec.config;
    let mut meta = vec![
        (META_VERSION.into(), crate::VERSION.into()),
        (META_FORMAT.into(), FORMAT_VERSION.to_string()),
        (META_SWEEP.into(), spec.text.clone()),
        ("metachron.sweep_file".into(), spec.file.clone()),
        ("metachron.sweep_name".into(), spec.name.clone()),
        (META_SWEEP_HASH.into(), sweep_hash(spec)),
        ("metachron.points".into(), spec.point_count().to_string()),
        (META_SHARD.into(), shard.to_string()),
        (META_BACKEND.into(), backend.label().into()),
        (META_ADAPTER.into(), adapter_label(backend)),
        ("metachron.metrics_settings".into(), ser(&cfg.metrics)),
        ("metachron.thresholds".into(), ser(&cfg.metrics.thresholds)),
        (
            "metachron.chunk_wall_seconds".into(),
            format!("{chunk_wall_seconds:.3}"),
        ),
    ];
    meta.extend(crate::simulate::scheme_metadata(cfg, backend));
    meta
}

fn ser<T: serde::Serialize>(v: &T) -> String {
    toml::to_string(v).unwrap_or_default()
}

/// Metrics of a point whose solver returned an error: NaN metrics, status `solver_failed`.
fn failed_metrics(p: &PlannedPoint) -> Metrics {
    crate::simulate::blank_unless_ok(
        MetricsAccumulator::new(&p.cfg.params, &p.cfg.metrics).finish(Status::SolverFailed {
            time: f64::NAN,
            reason: SolverFailure::SolverError,
        }),
    )
}

/// The rows' schema (what every part of a dataset holds), from an empty chunk.
pub fn part_schema() -> Result<SchemaRef, OutputError> {
    Ok(chunk_batch(&[], &[], Backend::Cpu, "")?.schema())
}

/// The dataset format a part declares (parts without the key are format 1).
pub fn format_of(meta: &HashMap<String, String>) -> Option<u32> {
    match meta.get(META_FORMAT) {
        None => Some(1),
        Some(v) => v.parse().ok(),
    }
}

/// The rows' schema in dataset format `format` (1 or [`FORMAT_VERSION`]): format 1
/// held the per-leg lists as comma-joined text.
pub fn part_schema_for(format: u32) -> Result<SchemaRef, OutputError> {
    let now = part_schema()?;
    if format == FORMAT_VERSION {
        return Ok(now);
    }
    let fields: Vec<arrow_schema::Field> = now
        .fields()
        .iter()
        .map(|f| {
            if crate::params::LIST_PARAMS.contains(&f.name().as_str()) {
                field(f.name(), DataType::Utf8, "")
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    Ok(Arc::new(arrow_schema::Schema::new(fields)))
}

/// The metadata that lets a part be checked on its own: its rows, id range and digest.
pub fn integrity_metadata(batch: &RecordBatch) -> Result<Vec<(String, String)>, OutputError> {
    let ids = point_ids_of(std::slice::from_ref(batch));
    let digest = content_digest(std::slice::from_ref(batch)).map_err(|m| OutputError::Invalid {
        path: "(new part)".into(),
        message: m,
    })?;
    Ok(vec![
        (
            META_FIRST_ID.into(),
            ids.iter().min().copied().unwrap_or(0).to_string(),
        ),
        (
            META_LAST_ID.into(),
            ids.iter().max().copied().unwrap_or(0).to_string(),
        ),
        (META_ROWS.into(), batch.num_rows().to_string()),
        (META_DIGEST.into(), format!("{digest:016x}")),
    ])
}

/// The `point_id` values of some batches, in order.
pub fn point_ids_of(batches: &[RecordBatch]) -> Vec<u64> {
    let mut ids = Vec::new();
    for b in batches {
        if let Some(x) = b
            .column_by_name("point_id")
            .and_then(|a| a.as_any().downcast_ref::<UInt64Array>())
        {
            ids.extend(x.values().iter().copied());
        }
    }
    ids
}

/// FNV-1a, fed incrementally.
struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }
}

/// A digest of every value of a table, column by column (independent of how the rows
/// are split into batches): a flipped bit that changes any decoded value changes it.
pub fn content_digest(batches: &[RecordBatch]) -> Result<u64, String> {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let Some(first) = batches.first() else {
        return Ok(h.0);
    };
    let schema = first.schema();
    for (c, f) in schema.fields().iter().enumerate() {
        h.bytes(f.name().as_bytes());
        for b in batches {
            let a = b
                .columns()
                .get(c)
                .ok_or_else(|| format!("column `{}` missing in a batch", f.name()))?;
            digest_array(&mut h, a.as_ref()).map_err(|m| format!("column `{}`: {m}", f.name()))?;
        }
    }
    Ok(h.0)
}

fn digest_array(h: &mut Fnv, a: &dyn Array) -> Result<(), String> {
    let any = a.as_any();
    let null = |h: &mut Fnv, i: usize| {
        let n = a.is_null(i);
        h.u64(n as u64);
        n
    };
    if let Some(x) = any.downcast_ref::<UInt64Array>() {
        for i in 0..x.len() {
            let v = if null(h, i) { 0 } else { x.value(i) };
            h.u64(v);
        }
    } else if let Some(x) = any.downcast_ref::<UInt32Array>() {
        for i in 0..x.len() {
            let v = if null(h, i) { 0 } else { x.value(i) as u64 };
            h.u64(v);
        }
    } else if let Some(x) = any.downcast_ref::<Float64Array>() {
        for i in 0..x.len() {
            let v = if null(h, i) { 0 } else { x.value(i).to_bits() };
            h.u64(v);
        }
    } else if let Some(x) = any.downcast_ref::<BooleanArray>() {
        for i in 0..x.len() {
            let v = if null(h, i) { 0 } else { 1 + x.value(i) as u64 };
            h.u64(v);
        }
    } else if let Some(x) = any.downcast_ref::<StringArray>() {
        for i in 0..x.len() {
            if !null(h, i) {
                h.u64(x.value(i).len() as u64);
                h.bytes(x.value(i).as_bytes());
            }
        }
    } else if let Some(x) = any.downcast_ref::<ListArray>() {
        for i in 0..x.len() {
            if !null(h, i) {
                let v = x.value(i);
                h.u64(v.len() as u64);
                digest_array(h, v.as_ref())?;
            }
        }
    } else {
        return Err(format!("unexpected type {}", a.data_type()));
    }
    Ok(())
}

/// The rows of one chunk.
pub fn chunk_batch(
    points: &[&PlannedPoint],
    results: &[Result<PointResult, SolverError>],
    backend: Backend,
    scheme: &str,
) -> Result<RecordBatch, OutputError> {
    let mut t = TableBuilder::default();
    t.push(
        field("point_id", DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(
            points.iter().map(|p| p.point_id).collect::<Vec<_>>(),
        )),
    );
    t.push(
        field("combo", DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(
            points.iter().map(|p| p.combo).collect::<Vec<_>>(),
        )),
    );
    t.u32("repeat", "1", points.iter().map(|p| p.repeat).collect());
    t.u32("level", "1", points.iter().map(|p| p.level).collect());
    let params: Vec<&crate::Params> = points.iter().map(|p| &p.cfg.params).collect();
    parquet::push_param_columns(&mut t, &params);
    let failed: Vec<Metrics> = points.iter().map(|p| failed_metrics(p)).collect();
    let metrics: Vec<&Metrics> = results
        .iter()
        .zip(&failed)
        .map(|(r, f)| r.as_ref().map(|r| &r.metrics).unwrap_or(f))
        .collect();
    parquet::push_metric_columns(&mut t, &metrics);
    // The backend that produced each row (a gpu request falls back to cpu without an adapter).
    t.string(
        "backend",
        results
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|r| r.backend)
                    .unwrap_or(backend)
                    .label()
                    .to_string()
            })
            .collect(),
    );
    t.string("scheme", vec![scheme.to_string(); points.len()]);
    t.f64(
        "step",
        "s",
        results
            .iter()
            .map(|r| match r {
                Ok(r) if r.stats.fixed_step > 0.0 => r.stats.fixed_step,
                _ => f64::NAN,
            })
            .collect(),
    );
    // Every row that is not `ok` says why: the engine's error, or what its status means.
    t.string(
        "error",
        results
            .iter()
            .map(|r| match r {
                Ok(r) => r.metrics.status.describe(),
                Err(e) => e.to_string(),
            })
            .collect(),
    );
    t.finish()
}

/// Every visible `*.parquet` file under `dir` (recursively, `quarantine/` excluded),
/// sorted: the files a dataset reader would see, whatever wrote them.
pub fn part_files(dir: &Path) -> Result<Vec<PathBuf>, OutputError> {
    let quarantine = dir.join(QUARANTINE_DIR);
    let mut out = files_named(dir, |name| {
        !name.starts_with('.') && name.ends_with(".parquet")
    })?;
    out.retain(|p| !p.starts_with(&quarantine));
    out.sort();
    Ok(out)
}

/// Files under `dir` (recursively; none when it does not exist) whose name passes `keep`.
fn files_named(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>, OutputError> {
    let mut out = Vec::new();
    if dir.is_dir() {
        walk(dir, &mut |p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            if keep(&name) {
                out.push(p.to_path_buf());
            }
        })?;
    }
    Ok(out)
}

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) -> Result<(), OutputError> {
    let io = |source| OutputError::Io {
        path: dir.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            walk(&path, f)?;
        } else {
            f(&path);
        }
    }
    Ok(())
}

/// Remove temporaries left by a killed writer (hidden `.part-*.tmp-*` files) under
/// `dir`; call it on a shard's own directory, never on one another process writes to.
pub fn remove_stale_temporaries(dir: &Path) -> Result<usize, OutputError> {
    let stale = files_named(dir, |name| {
        name.starts_with(".part-") && name.contains(".parquet.tmp-")
    })?;
    for p in &stale {
        std::fs::remove_file(p).map_err(|source| OutputError::Io {
            path: p.display().to_string(),
            source,
        })?;
    }
    Ok(stale.len())
}

/// A column read back from a dataset: numbers (any numeric type) or text.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Num(Vec<f64>),
    Text(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::Num(v) => v.len(),
            Column::Text(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The scalar columns of a whole dataset (list columns are skipped), with the file
/// metadata of its first part.
#[derive(Debug, Default)]
pub struct Dataset {
    pub columns: Vec<(String, Column)>,
    pub metadata: HashMap<String, String>,
    pub files: usize,
}

impl Dataset {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    pub fn rows(&self) -> usize {
        self.columns.first().map(|(_, c)| c.len()).unwrap_or(0)
    }

    /// The `point_id` column as integers.
    pub fn point_ids(&self) -> Vec<u64> {
        match self.column("point_id") {
            Some(Column::Num(v)) => v.iter().map(|&x| x as u64).collect(),
            _ => Vec::new(),
        }
    }
}

fn column_of(a: &dyn Array) -> Option<Column> {
    let any = a.as_any();
    if let Some(x) = any.downcast_ref::<Float64Array>() {
        return Some(Column::Num(
            (0..x.len())
                .map(|i| if x.is_null(i) { f64::NAN } else { x.value(i) })
                .collect(),
        ));
    }
    if let Some(x) = any.downcast_ref::<UInt32Array>() {
        return Some(Column::Num(x.values().iter().map(|&v| v as f64).collect()));
    }
    if let Some(x) = any.downcast_ref::<UInt64Array>() {
        return Some(Column::Num(x.values().iter().map(|&v| v as f64).collect()));
    }
    if let Some(x) = any.downcast_ref::<BooleanArray>() {
        // true/false as 1/0; null (unknown) as NaN.
        return Some(Column::Num(
            (0..x.len())
                .map(|i| match x.is_null(i) {
                    true => f64::NAN,
                    false => f64::from(u8::from(x.value(i))),
                })
                .collect(),
        ));
    }
    if let Some(x) = any.downcast_ref::<StringArray>() {
        return Some(Column::Text(
            (0..x.len()).map(|i| x.value(i).to_string()).collect(),
        ));
    }
    None
}

/// A per-leg list column as text, one row each: numbers as written, masks as 1/0,
/// comma-joined ("" for a null row), as format 1 stored them: both formats read alike.
fn list_text_column(a: &dyn Array) -> Option<Column> {
    let x = a.as_any().downcast_ref::<ListArray>()?;
    let text = |i: usize| {
        if x.is_null(i) {
            return String::new();
        }
        let v = x.value(i);
        if let Some(f) = v.as_any().downcast_ref::<Float64Array>() {
            f.values()
                .iter()
                .map(|x| format!("{x}"))
                .collect::<Vec<_>>()
                .join(",")
        } else if let Some(b) = v.as_any().downcast_ref::<BooleanArray>() {
            (0..b.len())
                .map(|k| if b.value(k) { "1" } else { "0" })
                .collect::<Vec<_>>()
                .join(",")
        } else {
            String::new()
        }
    };
    Some(Column::Text((0..x.len()).map(text).collect()))
}

/// Why `schema` is not a part's schema (a missing or retyped column), if it is not.
pub fn schema_mismatch(
    schema: &arrow_schema::Schema,
    expected: &arrow_schema::Schema,
) -> Option<String> {
    for f in expected.fields() {
        match schema.field_with_name(f.name()) {
            Err(_) => return Some(format!("column `{}` is missing", f.name())),
            Ok(g) if g.data_type() != f.data_type() => {
                return Some(format!(
                    "column `{}` has type {}, expected {}",
                    f.name(),
                    g.data_type(),
                    f.data_type()
                ))
            }
            // The unit lives in the field's metadata, outside the content digest.
            Ok(g) if g.metadata() != f.metadata() => {
                return Some(format!(
                    "column `{}` has metadata {:?}, expected {:?}",
                    f.name(),
                    g.metadata(),
                    f.metadata()
                ))
            }
            Ok(_) => {}
        }
    }
    if let Some(extra) = schema
        .fields()
        .iter()
        .find(|g| expected.field_with_name(g.name()).is_err())
    {
        return Some(format!("column `{}` is not a dataset column", extra.name()));
    }
    None
}

/// Read every part file under `dir` into one table of scalar columns (the per-leg
/// parameter lists as text, in either dataset format). A file that is not a part of a
/// metachron dataset (its columns differ) is an error naming the file and the column;
/// `metachron check DIR` says more.
pub fn read_dataset(dir: &Path) -> Result<Dataset, OutputError> {
    let mut ds = Dataset::default();
    let mut seen = std::collections::HashSet::new();
    for path in part_files(dir)? {
        let (batches, meta) = parquet::read_parquet(&path)?;
        let expected = match format_of(&meta) {
            Some(f @ 1..=FORMAT_VERSION) => part_schema_for(f)?,
            _ => {
                return Err(OutputError::Invalid {
                    path: path.display().to_string(),
                    message: format!(
                    "dataset format `{}` is not one this metachron reads (1 to {FORMAT_VERSION})",
                    meta.get(META_FORMAT).cloned().unwrap_or_default()
                ),
                })
            }
        };
        if let Some(b) = batches.first() {
            if let Some(why) = schema_mismatch(&b.schema(), &expected) {
                return Err(OutputError::Invalid {
                    path: path.display().to_string(),
                    message: format!(
                        "not a part of a metachron dataset: {why} (run `metachron check {}`)",
                        dir.display()
                    ),
                });
            }
        }
        let ids = point_ids_of(&batches);
        if let Some(dup) = ids.iter().find(|id| !seen.insert(**id)) {
            return Err(OutputError::Invalid {
                path: path.display().to_string(),
                message: format!(
                    "point id {dup} is also in an earlier part (run `metachron check {}`)",
                    dir.display()
                ),
            });
        }
        if ds.files == 0 {
            ds.metadata = meta;
        }
        ds.files += 1;
        for b in batches {
            let schema = b.schema();
            for (f, a) in schema.fields().iter().zip(b.columns()) {
                let col = if crate::params::LIST_PARAMS.contains(&f.name().as_str()) {
                    list_text_column(a.as_ref()).or_else(|| column_of(a.as_ref()))
                } else {
                    column_of(a.as_ref())
                };
                let Some(col) = col else {
                    continue;
                };
                match ds.columns.iter_mut().find(|(n, _)| n == f.name()) {
                    None => ds.columns.push((f.name().clone(), col)),
                    Some((_, existing)) => match (existing, col) {
                        (Column::Num(e), Column::Num(c)) => e.extend(c),
                        (Column::Text(e), Column::Text(c)) => e.extend(c),
                        _ => {
                            return Err(OutputError::Invalid {
                                path: path.display().to_string(),
                                message: format!(
                                    "column `{}` changes type between parts",
                                    f.name()
                                ),
                            })
                        }
                    },
                }
            }
        }
    }
    Ok(ds)
}
