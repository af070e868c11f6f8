//! Writing a part: one Parquet file per chunk of rows at
//! `DIR/shard=K/part-<first point id>.parquet` ([`crate::dataset::schema::part_path`]),
//! written to a hidden temporary name and renamed when complete, after its checksum file
//! (`part-….parquet.sum`: a digest of the part's bytes), so a killed writer leaves only
//! whole part files, each with its checksum.
//!
//! Rows: `point_id`, `combo`, `repeat`, `level` (refinement level), every parameter as
//! its own typed column, every metric, `status`, `class`, `backend`, `scheme`, `step`,
//! `error`. Every part also records in its file metadata its point-id range, its row
//! count and a digest of its values ([`content_digest`]); [`crate::dataset::verify`]
//! checks the bytes, then the metadata and the values, before anyone trusts it.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, BooleanArray, Float64Array, ListArray, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, SchemaRef};

use crate::dataset::schema::{
    self as k, COL_BACKEND, COL_COMBO, COL_ERROR, COL_LEVEL, COL_POINT_ID, COL_REPEAT, COL_SCHEME,
    COL_STEP, META_DIGEST, META_FIRST_ID, META_LAST_ID, META_ROWS,
};
use crate::error::{OutputError, SolverError};
use crate::metrics::{Metrics, MetricsAccumulator};
use crate::parquet::{self, field, TableBuilder};
use crate::sample::{SolverFailure, Status};
use crate::simulate::{Backend, PointResult, RunConfig};

/// A point as a part's row records it: its ids and the configuration it ran with
/// (a sweep's planned point; the room does not know how sweeps plan).
pub trait RowPoint {
    fn point_id(&self) -> u64;
    /// Index of the parameter combination (shared by its repeats).
    fn combo(&self) -> u64;
    fn repeat(&self) -> u32;
    /// Refinement level that planned the point.
    fn level(&self) -> u32;
    fn config(&self) -> &RunConfig;
}

/// No point: the element type of the empty chunk that gives the rows' schema.
enum NoPoint {}

impl RowPoint for NoPoint {
    fn point_id(&self) -> u64 {
        match *self {}
    }
    fn combo(&self) -> u64 {
        match *self {}
    }
    fn repeat(&self) -> u32 {
        match *self {}
    }
    fn level(&self) -> u32 {
        match *self {}
    }
    fn config(&self) -> &RunConfig {
        match *self {}
    }
}

/// Metrics of a point whose solver returned an error: NaN metrics, status `solver_failed`.
fn failed_metrics(cfg: &RunConfig) -> Metrics {
    crate::simulate::blank_unless_ok(MetricsAccumulator::new(&cfg.params, &cfg.metrics).finish(
        Status::SolverFailed {
            time: f64::NAN,
            reason: SolverFailure::SolverError,
        },
    ))
}

/// The rows' schema (what every part of a dataset holds), from an empty chunk.
pub fn part_schema() -> Result<SchemaRef, OutputError> {
    Ok(chunk_batch::<NoPoint>(&[], &[], Backend::Cpu, "")?.schema())
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
    } else if let Some(x) = any.downcast_ref::<arrow_array::Int8Array>() {
        for i in 0..x.len() {
            let v = if null(h, i) {
                0
            } else {
                x.value(i) as i64 as u64
            };
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
pub fn chunk_batch<P: RowPoint>(
    points: &[&P],
    results: &[Result<PointResult, SolverError>],
    backend: Backend,
    scheme: &str,
) -> Result<RecordBatch, OutputError> {
    let mut t = TableBuilder::default();
    t.push(
        field(COL_POINT_ID, DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(
            points.iter().map(|p| p.point_id()).collect::<Vec<_>>(),
        )),
    );
    t.push(
        field(COL_COMBO, DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(
            points.iter().map(|p| p.combo()).collect::<Vec<_>>(),
        )),
    );
    t.u32(COL_REPEAT, "1", points.iter().map(|p| p.repeat()).collect());
    t.u32(COL_LEVEL, "1", points.iter().map(|p| p.level()).collect());
    let params: Vec<&crate::Params> = points.iter().map(|p| &p.config().params).collect();
    parquet::push_param_columns(&mut t, &params);
    let failed: Vec<Metrics> = points.iter().map(|p| failed_metrics(p.config())).collect();
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
        std::fs::create_dir_all(dir).map_err(|source| OutputError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    let bytes = parquet::encode(path, batch, metadata)?;
    let sum = k::checksum_path(path);
    parquet::write_bytes_atomic(&sum, Checksum::of(&bytes).to_text().as_bytes())?;
    parquet::write_bytes_atomic(path, &bytes)
}
