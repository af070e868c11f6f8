//! Sweep datasets: one Parquet part file per chunk, in a hive-style directory
//! `DIR/shard=K/part-<first point id>.parquet`, readable as one table by DuckDB
//! (`SELECT … FROM 'DIR/shard=*/*.parquet'`) and polars (`scan_parquet`). The names
//! live in [`crate::sweep::schema`]; what the dataset is, in its manifest
//! ([`crate::sweep::manifest`]).
//!
//! Rows: `point_id`, `combo`, `repeat`, `level` (refinement level), every parameter as
//! its own typed column, every metric, `status`, `class`, `backend`, `scheme`, `step`,
//! `error`. Each part is written to a hidden temporary name and renamed when complete,
//! after its checksum file (`part-….parquet.sum`: a digest of the part's bytes), so a
//! killed sweep leaves only whole part files, each with its checksum.
//!
//! Every part also records in its file metadata the sweep hash, its shard, its
//! point-id range, its row count and a digest of its values ([`content_digest`]);
//! [`crate::sweep::verify`] checks the bytes, then the metadata and the values, before
//! `--resume`, `metachron check` or a reader trusts it.

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
use crate::parquet::{self, field, TableBuilder};
use crate::sample::{SolverFailure, Status};
use crate::simulate::{Backend, PointResult};
use crate::sweep::schema::{
    COL_BACKEND, COL_COMBO, COL_ERROR, COL_LEVEL, COL_POINT_ID, COL_REPEAT, COL_SCHEME, COL_STEP,
};
use crate::sweep::{PlannedPoint, Shard, SweepSpec};

pub use crate::sweep::schema::{
    part_path, FORMAT_VERSION, META_ADAPTER, META_BACKEND, META_DIGEST, META_FIRST_ID, META_FORMAT,
    META_LAST_ID, META_ROWS, META_SHARD, META_SWEEP, META_SWEEP_HASH, META_VERSION, QUARANTINE_DIR,
};

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
    crate::batch::adapter_label(backend)
}

/// File metadata of a part: the sweep file, version, dataset format, backend, adapter,
/// the scheme that ran with its settings, and classification thresholds.
pub fn part_metadata(
    spec: &SweepSpec,
    backend: Backend,
    shard: Shard,
    chunk_wall_seconds: f64,
) -> Vec<(String, String)> {
    use crate::sweep::schema as k;
    let cfg = &spec.config;
    [
        (k::META_VERSION, crate::VERSION.to_string()),
        (k::META_FORMAT, k::FORMAT_VERSION.to_string()),
        (k::META_SWEEP, spec.text.clone()),
        (k::META_SWEEP_FILE, spec.file.clone()),
        (k::META_SWEEP_NAME, spec.name.clone()),
        (k::META_SWEEP_HASH, sweep_hash(spec)),
        (k::META_POINTS, spec.point_count().to_string()),
        (k::META_SHARD, shard.to_string()),
        (k::META_BACKEND, backend.label().into()),
        (k::META_ADAPTER, adapter_label(backend)),
        (k::META_METRICS_SETTINGS, ser(&cfg.metrics)),
        (k::META_THRESHOLDS, ser(&cfg.metrics.thresholds)),
        (k::META_CHUNK_WALL, format!("{chunk_wall_seconds:.3}")),
    ]
    .into_iter()
    .map(|(key, v)| (key.to_string(), v))
    // The scheme that ran, with its settings only.
    .chain(crate::simulate::scheme_metadata(cfg, backend))
    .collect()
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
            .column_by_name(COL_POINT_ID)
            .and_then(|a| a.as_any().downcast_ref::<UInt64Array>())
        {
            ids.extend(x.values().iter().copied());
        }
    }
    ids
}

/// FNV-1a, fed incrementally.
struct Fnv(u64);

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

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
    let mut h = Fnv(FNV_OFFSET);
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
        field(COL_POINT_ID, DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(
            points.iter().map(|p| p.point_id).collect::<Vec<_>>(),
        )),
    );
    t.push(
        field(COL_COMBO, DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(
            points.iter().map(|p| p.combo).collect::<Vec<_>>(),
        )),
    );
    t.u32(COL_REPEAT, "1", points.iter().map(|p| p.repeat).collect());
    t.u32(COL_LEVEL, "1", points.iter().map(|p| p.level).collect());
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
        COL_BACKEND,
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
    t.string(COL_SCHEME, vec![scheme.to_string(); points.len()]);
    t.f64(
        COL_STEP,
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
        COL_ERROR,
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

/// A file or link under a dataset's directory that is not the dataset's: reported,
/// never read as a part, never moved, never followed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stray {
    pub path: PathBuf,
    pub kind: StrayKind,
}

/// What a stray is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum StrayKind {
    /// A symbolic link (never followed).
    Symlink,
    /// A macOS AppleDouble file (`._name`): DuckDB and polars fail on it in a glob.
    AppleDouble,
    /// Another hidden file (globs may still read it).
    Hidden,
    /// A Parquet file outside `shard=K/part-*.parquet`: globs read it with the parts.
    Parquet,
    /// A summary written by `metachron summarize` (not a part).
    Summary,
    /// The directory of another dataset (it has its own manifest).
    OtherDataset,
    /// A FIFO, socket or device.
    Special,
    /// Any other file or directory.
    Other,
}

impl StrayKind {
    /// Whether it makes the dataset unclean: a reader of `DIR/**/*.parquet` would see
    /// it, trip on it or follow it.
    pub fn disturbs_readers(self) -> bool {
        !matches!(self, StrayKind::Summary | StrayKind::Other)
    }

    pub fn describe(self) -> &'static str {
        match self {
            StrayKind::Symlink => "a symbolic link (not followed)",
            StrayKind::AppleDouble => {
                "a macOS AppleDouble file (`._*`): DuckDB and polars fail on it in a glob; remove it"
            }
            StrayKind::Hidden => "a hidden file, not the dataset's (globs may read it)",
            StrayKind::Parquet => {
                "a Parquet file that is not a part (only shard=K/part-*.parquet are): globs of \
                 DIR/**/*.parquet read it with the dataset"
            }
            StrayKind::Summary => {
                "a summary of the dataset (not a part; read the parts as DIR/shard=*/*.parquet)"
            }
            StrayKind::OtherDataset => "another dataset (it has its own manifest)",
            StrayKind::Special => "not a regular file (a FIFO, socket or device)",
            StrayKind::Other => "not part of the dataset (left alone)",
        }
    }
}

/// What a dataset directory holds: the candidate parts (`shard=K/part-*.parquet`
/// regular files), the dataset's own other files, and everything else.
#[derive(Debug, Default)]
pub struct Tree {
    /// Candidate parts, sorted.
    pub parts: Vec<PathBuf>,
    /// Temporaries of killed writers and checksum files without their part.
    pub leftovers: Vec<PathBuf>,
    pub strays: Vec<Stray>,
}

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Entries of a directory with their own type (links not followed), sorted by name.
fn entries(dir: &Path) -> Result<Vec<(PathBuf, String, std::fs::FileType)>, OutputError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io_at(dir))? {
        let e = e.map_err(io_at(dir))?;
        let ft = e.file_type().map_err(io_at(&e.path()))?;
        out.push((e.path(), e.file_name().to_string_lossy().into_owned(), ft));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Classify what `dir` holds, following no link. A missing `dir` holds nothing.
pub fn tree(dir: &Path) -> Result<Tree, OutputError> {
    use crate::sweep::schema as k;
    let mut t = Tree::default();
    if !dir.is_dir() {
        return Ok(t);
    }
    for (path, name, ft) in entries(dir)? {
        let own_file = [k::MANIFEST_FILE, k::MANIFEST_LOCK, k::VERIFY_CACHE]
            .contains(&name.as_str())
            || name.starts_with(k::VALIDATION_PREFIX) && name.ends_with(".csv")
            || is_manifest_temporary(&name);
        if ft.is_file() && own_file {
            continue;
        }
        if ft.is_dir() && name == k::QUARANTINE_DIR {
            continue;
        }
        if ft.is_dir() && k::shard_of_dir_name(&name).is_some() {
            shard_tree(&path, &mut t)?;
            continue;
        }
        stray(&path, &name, ft, &mut t.strays)?;
    }
    t.parts.sort();
    Ok(t)
}

fn is_manifest_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|n| n.strip_prefix(crate::sweep::schema::MANIFEST_FILE))
        .and_then(|n| n.strip_prefix(".tmp-"))
        .is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
}

fn shard_tree(dir: &Path, t: &mut Tree) -> Result<(), OutputError> {
    use crate::sweep::schema as k;
    let listed = entries(dir)?;
    for (path, name, ft) in &listed {
        if ft.is_file() && k::is_part_name(name) {
            t.parts.push(path.clone());
        } else if ft.is_file() && name == k::SHARD_LOCK {
        } else if ft.is_file() && k::is_part_temporary(name) {
            t.leftovers.push(path.clone());
        } else if ft.is_file() && k::is_checksum_name(name) {
            let part = name.trim_end_matches(k::CHECKSUM_EXT);
            if !listed.iter().any(|(_, n, _)| n == part) {
                t.leftovers.push(path.clone());
            }
        } else {
            stray(path, name, *ft, &mut t.strays)?;
        }
    }
    Ok(())
}

/// Record `path` (and, for a plain directory, everything below it) as strays.
fn stray(
    path: &Path,
    name: &str,
    ft: std::fs::FileType,
    out: &mut Vec<Stray>,
) -> Result<(), OutputError> {
    let kind = if ft.is_symlink() {
        StrayKind::Symlink
    } else if name.starts_with("._") {
        StrayKind::AppleDouble
    } else if name.starts_with('.') {
        StrayKind::Hidden
    } else if ft.is_dir() {
        if path.join(crate::sweep::schema::MANIFEST_FILE).exists() {
            StrayKind::OtherDataset
        } else {
            for (p, n, f) in entries(path)? {
                stray(&p, &n, f, out)?;
            }
            return Ok(());
        }
    } else if !ft.is_file() {
        StrayKind::Special
    } else if name.to_ascii_lowercase().ends_with(".parquet") {
        let summary = parquet::read_parquet_metadata(path)
            .is_ok_and(|m| m.contains_key(crate::sweep::schema::META_SUMMARY_OF));
        if summary {
            StrayKind::Summary
        } else {
            StrayKind::Parquet
        }
    } else {
        StrayKind::Other
    };
    out.push(Stray {
        path: path.to_path_buf(),
        kind,
    });
    Ok(())
}

/// The candidate parts of `dir` (`shard=K/part-*.parquet` regular files, sorted): the
/// only files a check, a resume or a reader considers.
pub fn part_files(dir: &Path) -> Result<Vec<PathBuf>, OutputError> {
    Ok(tree(dir)?.parts)
}

/// Remove temporaries left by a killed writer and checksum files without a part in
/// `shard_dir`; call it on a shard's own directory, under its lock.
pub fn remove_stale_temporaries(shard_dir: &Path) -> Result<usize, OutputError> {
    let mut t = Tree::default();
    if shard_dir.is_dir() {
        shard_tree(shard_dir, &mut t)?;
    }
    for p in &t.leftovers {
        match std::fs::remove_file(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_at(p)(e)),
            _ => {}
        }
    }
    Ok(t.leftovers.len())
}

/// A digest of a file's bytes, kept beside it (`part-….parquet.sum`): any changed,
/// added or removed byte of the part changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checksum {
    pub len: u64,
    pub fnv1a64: u64,
}

const CHECKSUM_TAG: &str = "fnv1a64";

impl Checksum {
    pub fn of(bytes: &[u8]) -> Checksum {
        let mut h = Fnv(FNV_OFFSET);
        h.bytes(bytes);
        Checksum {
            len: bytes.len() as u64,
            fnv1a64: h.0,
        }
    }

    pub fn to_text(self) -> String {
        format!("{CHECKSUM_TAG} {:016x} {}\n", self.fnv1a64, self.len)
    }

    pub fn parse(text: &str) -> Option<Checksum> {
        let mut w = text.split_whitespace();
        (w.next()? == CHECKSUM_TAG).then_some(())?;
        let fnv1a64 = u64::from_str_radix(w.next()?, 16).ok()?;
        let len = w.next()?.parse().ok()?;
        w.next().is_none().then_some(Checksum { len, fnv1a64 })
    }
}

/// Write a part: encode it, write its checksum file, then the part itself (both
/// atomically, the checksum first, so a part never appears without its checksum).
pub fn write_part(
    path: &Path,
    batch: &RecordBatch,
    metadata: &[(String, String)],
) -> Result<(), OutputError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_at(path))?;
    }
    let bytes = parquet::encode(path, batch, metadata)?;
    let sum = crate::sweep::schema::checksum_path(path);
    parquet::write_bytes_atomic(&sum, Checksum::of(&bytes).to_text().as_bytes())?;
    parquet::write_bytes_atomic(path, &bytes)
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
        match self.column(COL_POINT_ID) {
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
/// comma-joined ("" for a null row): the form the summary and the maps parse.
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

/// Read the candidate parts of `dir` (`shard=K/part-*.parquet`, no other file) into
/// one table of scalar columns (the per-leg parameter lists as text), as they are: for
/// a dataset still being written (the runner's own reads, after `--resume` checked it). Readers of a finished dataset go
/// through [`crate::sweep::audit::read_verified`]. A file that is not a part of a
/// metachron dataset (its columns differ) is an error naming the file and the column.
pub fn read_dataset(dir: &Path) -> Result<Dataset, OutputError> {
    read_parts(dir, &part_files(dir)?)
}

/// Read `parts` (files of the dataset in `dir`) into one table of scalar columns.
pub fn read_parts(dir: &Path, parts: &[PathBuf]) -> Result<Dataset, OutputError> {
    let mut ds = Dataset::default();
    let expected = part_schema()?;
    let mut seen = std::collections::HashSet::new();
    for path in parts {
        let (batches, meta) = parquet::read_parquet(path)?;
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
