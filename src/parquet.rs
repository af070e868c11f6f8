//! Parquet files: the time series of one run, the one-row metrics table, and the
//! tables and atomic writes the sweep datasets are made of.
//!
//! Every field carries its unit in the field metadata (`unit`); file metadata carries
//! the metachron version, the solver settings and the parameters. Files are written
//! to a temporary name in the same directory and renamed when complete, so a reader
//! never sees a half-written file.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, ListBuilder};
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::error::OutputError;
use crate::metrics::{Metrics, METRIC_COLUMNS};
use crate::params::{self, Params, SCALAR_PARAMS};
use crate::sample::Sample;
use crate::vocabulary as voc;

/// A field with its unit in the metadata.
pub fn field(name: &str, dtype: DataType, unit: &str) -> Field {
    Field::new(name, dtype, true)
        .with_metadata(HashMap::from([("unit".to_string(), unit.to_string())]))
}

/// Columns assembled one at a time, then written as one record batch.
#[derive(Default)]
pub struct TableBuilder {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl TableBuilder {
    pub fn push(&mut self, field: Field, array: ArrayRef) {
        self.fields.push(field);
        self.arrays.push(array);
    }

    pub fn f64(&mut self, name: &str, unit: &str, values: Vec<f64>) {
        self.push(
            field(name, DataType::Float64, unit),
            Arc::new(Float64Array::from(values)),
        );
    }

    pub fn u32(&mut self, name: &str, unit: &str, values: Vec<u32>) {
        self.push(
            field(name, DataType::UInt32, unit),
            Arc::new(UInt32Array::from(values)),
        );
    }

    pub fn string(&mut self, name: &str, values: Vec<String>) {
        self.push(
            field(name, DataType::Utf8, ""),
            Arc::new(StringArray::from(values)),
        );
    }

    pub fn f64_list(&mut self, name: &str, unit: &str, rows: Vec<Vec<f64>>) {
        let mut b = ListBuilder::new(Float64Builder::new());
        for r in rows {
            b.values().append_slice(&r);
            b.append(true);
        }
        let arr = b.finish();
        let dtype = arr.data_type().clone();
        self.push(field(name, dtype, unit), Arc::new(arr));
    }

    /// A list column with a null entry where a row has no list.
    pub fn f64_list_opt(&mut self, name: &str, unit: &str, rows: Vec<Option<Vec<f64>>>) {
        let mut b = ListBuilder::new(Float64Builder::new());
        for r in rows {
            if let Some(r) = &r {
                b.values().append_slice(r);
            }
            b.append(r.is_some());
        }
        let arr = b.finish();
        let dtype = arr.data_type().clone();
        self.push(field(name, dtype, unit), Arc::new(arr));
    }

    pub fn bool_list(&mut self, name: &str, rows: Vec<Vec<bool>>) {
        let mut b = ListBuilder::new(BooleanBuilder::new());
        for r in rows {
            b.values().append_slice(&r);
            b.append(true);
        }
        let arr = b.finish();
        let dtype = arr.data_type().clone();
        self.push(field(name, dtype, "1"), Arc::new(arr));
    }

    pub fn finish(self) -> Result<RecordBatch, OutputError> {
        let schema = Arc::new(Schema::new(self.fields));
        Ok(RecordBatch::try_new(schema, self.arrays)?)
    }
}

/// Writer properties: Snappy pages and the given file metadata.
fn writer_props(metadata: &[(String, String)]) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(
            metadata
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                .collect(),
        ))
        .build()
}

fn io_err(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn pq_err(path: &Path, source: parquet::errors::ParquetError) -> OutputError {
    OutputError::Parquet {
        path: path.display().to_string(),
        source,
    }
}

/// A file being written under a hidden temporary name beside its target, renamed
/// onto the target when complete and removed when dropped unfinished. Creating it
/// proves the target writable before any work is done; every error names the
/// target, never the temporary.
///
/// Only a regular file or a new path is replaced that way. A character device or a
/// FIFO that already exists at the target (`/dev/null`, `/dev/stdout`, a named pipe)
/// is written through in place: it is opened and written, never replaced. A
/// directory, a block device or a socket at the target is refused, naming the path.
pub struct PendingFile {
    target: PathBuf,
    /// The temporary; empty when written through or once committed.
    tmp: PathBuf,
    file: Option<File>,
}

/// How an output path is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// A new path or a regular file: temporary, then rename.
    Replace,
    /// An existing character device or FIFO: opened and written in place.
    WriteThrough,
}

/// How `target` is written, or why it cannot be (a directory, a block device, a socket).
pub fn output_kind(target: &Path) -> Result<OutputKind, OutputError> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OutputKind::Replace),
        Err(e) => return Err(io_err(target, e)),
        Ok(m) => m,
    };
    let ft = meta.file_type();
    let refuse = |what: &str| {
        Err(io_err(
            target,
            std::io::Error::other(format!(
                "is {what}: outputs replace only regular files (and write through character                  devices and FIFOs); give a file name"
            )),
        ))
    };
    if ft.is_file() {
        Ok(OutputKind::Replace)
    } else if ft.is_char_device() || ft.is_fifo() {
        Ok(OutputKind::WriteThrough)
    } else if ft.is_dir() {
        refuse("a directory")
    } else if ft.is_block_device() {
        refuse("a block device")
    } else if ft.is_socket() {
        refuse("a socket")
    } else {
        refuse("not a regular file")
    }
}

impl PendingFile {
    /// Check `target` (see [`output_kind`]; parent exists, writable) by creating its
    /// temporary. Temporaries of the same target left by dead processes are removed.
    pub fn create(target: &Path) -> Result<PendingFile, OutputError> {
        if output_kind(target)? == OutputKind::WriteThrough {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .map_err(|e| io_err(target, e))?;
            return Ok(PendingFile {
                target: target.to_path_buf(),
                tmp: PathBuf::new(),
                file: Some(file),
            });
        }
        let parent = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(io_err(
                target,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the directory {} does not exist", parent.display()),
                ),
            ));
        }
        remove_dead_temporaries(target);
        let tmp = temp_path(target);
        let file = File::create(&tmp).map_err(|e| io_err(target, e))?;
        Ok(PendingFile {
            target: target.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// A handle on the open temporary, for a writer (this keeps its own, to sync it).
    pub fn take_file(&mut self) -> Result<File, OutputError> {
        match &self.file {
            Some(f) => f.try_clone().map_err(|e| io_err(&self.target, e)),
            None => Err(io_err(
                &self.target,
                std::io::Error::other("already committed"),
            )),
        }
    }

    /// Flush to disk and rename onto the target (written through: flush only).
    pub fn commit(mut self) -> Result<(), OutputError> {
        let through = self.tmp.as_os_str().is_empty();
        if let Some(f) = self.file.take() {
            if !through {
                f.sync_all().map_err(|e| io_err(&self.target, e))?;
            }
        }
        if through {
            return Ok(());
        }
        std::fs::rename(&self.tmp, &self.target).map_err(|e| io_err(&self.target, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Write `bytes` to `path` as a [`PendingFile`] does (atomically over a regular file
/// or a new path).
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    use std::io::Write;
    let mut pending = PendingFile::create(path)?;
    let mut f = pending.take_file()?;
    f.write_all(bytes).map_err(|e| io_err(path, e))?;
    drop(f);
    pending.commit()
}

/// One batch encoded as a whole Parquet file in memory (`path` names it in errors).
pub fn encode(
    path: &Path,
    batch: &RecordBatch,
    metadata: &[(String, String)],
) -> Result<Vec<u8>, OutputError> {
    let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(writer_props(metadata)))
        .map_err(|e| pq_err(path, e))?;
    w.write(batch).map_err(|e| pq_err(path, e))?;
    w.into_inner().map_err(|e| pq_err(path, e))
}

/// Write one batch to `path` atomically (temporary file + rename), with file metadata.
pub fn write_atomic(
    path: &Path,
    batch: &RecordBatch,
    metadata: &[(String, String)],
) -> Result<(), OutputError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_err(path, e))?;
    }
    write_pending(PendingFile::create(path)?, batch, metadata)
}

/// Write one batch into a file created (and so checked) earlier, then rename it onto
/// its target.
pub fn write_pending(
    mut pending: PendingFile,
    batch: &RecordBatch,
    metadata: &[(String, String)],
) -> Result<(), OutputError> {
    let path = pending.target().to_path_buf();
    let file = pending.take_file()?;
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(writer_props(metadata)))
        .map_err(|e| pq_err(&path, e))?;
    w.write(batch).map_err(|e| pq_err(&path, e))?;
    w.close().map_err(|e| pq_err(&path, e))?;
    pending.commit()
}

/// `dir/.name.tmp-<pid>`: same filesystem as the target, hidden from `*.parquet` globs.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Remove `.name.tmp-<pid>` files of `target` whose process no longer exists (a
/// killed writer's leftovers). Only where `/proc` tells which processes live.
fn remove_dead_temporaries(target: &Path) {
    let (Some(name), Some(dir)) = (target.file_name(), target.parent()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = n.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Samples per row group of a streamed time series (bounded memory: ~1 MB buffered).
const ROWS_PER_GROUP: usize = 4096;

/// The time series of one run written as it is produced: samples are buffered up to
/// [`ROWS_PER_GROUP`] and written as one row group, so memory does not grow with the
/// run's length. The target is checked (and its temporary created) at creation.
pub struct TimeseriesWriter {
    pending: PendingFile,
    writer: ArrowWriter<File>,
    n_legs: usize,
    buffer: Vec<Sample>,
    rows: usize,
}

impl TimeseriesWriter {
    pub fn create(
        path: &Path,
        n_legs: usize,
        metadata: &[(String, String)],
    ) -> Result<TimeseriesWriter, OutputError> {
        let mut pending = PendingFile::create(path)?;
        let schema = timeseries_batch(&[], n_legs)?.schema();
        let file = pending.take_file()?;
        let writer = ArrowWriter::try_new(file, schema, Some(writer_props(metadata)))
            .map_err(|e| pq_err(path, e))?;
        Ok(TimeseriesWriter {
            pending,
            writer,
            n_legs,
            buffer: Vec::with_capacity(ROWS_PER_GROUP),
            rows: 0,
        })
    }

    /// Add one sample (only what the table holds is kept: no q, v).
    pub fn push(&mut self, s: &Sample) -> Result<(), OutputError> {
        self.buffer.push(Sample {
            q: Vec::new(),
            v: Vec::new(),
            ..s.clone()
        });
        if self.buffer.len() >= ROWS_PER_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), OutputError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let batch = timeseries_batch(&self.buffer, self.n_legs)?;
        let path = self.pending.target().to_path_buf();
        self.writer.write(&batch).map_err(|e| pq_err(&path, e))?;
        self.writer.flush().map_err(|e| pq_err(&path, e))?;
        self.rows += self.buffer.len();
        self.buffer.clear();
        Ok(())
    }

    /// Write the rest, add `metadata` known only at the end, and rename onto the
    /// target. Returns the number of rows.
    pub fn finish(mut self, metadata: &[(String, String)]) -> Result<usize, OutputError> {
        self.flush()?;
        for (k, v) in metadata {
            self.writer
                .append_key_value_metadata(KeyValue::new(k.clone(), v.clone()));
        }
        let path = self.pending.target().to_path_buf();
        self.writer.close().map_err(|e| pq_err(&path, e))?;
        self.pending.commit()?;
        Ok(self.rows)
    }
}

/// Time series of one run in wide format: one row per output sample; per-leg
/// quantities as columns suffixed with the 1-based leg number.
pub fn timeseries_batch(samples: &[Sample], n_legs: usize) -> Result<RecordBatch, OutputError> {
    let mut t = TableBuilder::default();
    t.f64(voc::TIME, "s", samples.iter().map(|s| s.t).collect());
    let per_leg =
        |t: &mut TableBuilder, name: &str, unit: &str, get: &dyn Fn(&Sample, usize) -> f64| {
            for i in 0..n_legs {
                t.f64(
                    &voc::per_leg(name, i),
                    unit,
                    samples.iter().map(|s| get(s, i)).collect(),
                );
            }
        };
    per_leg(&mut t, voc::PSI, "rad", &|s, i| s.psi[i]);
    per_leg(&mut t, voc::TIP_X, "m", &|s, i| s.tip[i][0]);
    per_leg(&mut t, voc::TIP_Y, "m", &|s, i| s.tip[i][1]);
    per_leg(&mut t, voc::INEXT, "1", &|s, i| s.inext[i]);
    t.f64(
        voc::BODY_X,
        "m",
        samples.iter().map(|s| s.body[0]).collect(),
    );
    t.f64(
        voc::BODY_Y,
        "m",
        samples.iter().map(|s| s.body[1]).collect(),
    );
    t.f64(
        voc::BODY_THETA,
        "rad",
        samples.iter().map(|s| s.body[2]).collect(),
    );
    t.f64(
        voc::WORK_SO_FAR,
        "J",
        samples.iter().map(|s| s.work).collect(),
    );
    t.finish()
}

/// Append the parameter columns (every scalar typed, the per-leg lists as list
/// columns: `actuated` and `axo_actuated` booleans, `psi_init` and `omega_legs` numbers, null when not
/// given; the choices as text) for `rows`.
pub fn push_param_columns(t: &mut TableBuilder, rows: &[&Params]) {
    for spec in SCALAR_PARAMS {
        let vals: Vec<f64> = rows
            .iter()
            .map(|p| p.scalar(spec.name).unwrap_or(f64::NAN))
            .collect();
        if matches!(spec.range, crate::params::Range::Int(..)) {
            t.u32(
                spec.name,
                spec.unit,
                vals.iter().map(|&x| x as u32).collect(),
            );
        } else {
            t.f64(spec.name, spec.unit, vals);
        }
    }
    t.bool_list(
        params::ACTUATED,
        rows.iter().map(|p| p.actuated.clone()).collect(),
    );
    t.u32(
        voc::N_ACTUATED,
        "1",
        rows.iter()
            .map(|p| p.actuated.iter().filter(|&&a| a).count() as u32)
            .collect(),
    );
    t.f64_list_opt(
        params::PSI_INIT,
        "rad",
        rows.iter().map(|p| p.psi_init.clone()).collect(),
    );
    t.f64_list_opt(
        params::OMEGA_LEGS,
        "rad/s",
        rows.iter().map(|p| p.omega_legs.clone()).collect(),
    );
    t.bool_list(
        params::AXO_ACTUATED,
        rows.iter().map(|p| p.axo_mask()).collect(),
    );
    t.string(
        params::TERRAIN,
        rows.iter().map(|p| p.terrain.label().to_string()).collect(),
    );
}

/// Append every metric column for `rows`.
pub fn push_metric_columns(t: &mut TableBuilder, rows: &[&Metrics]) {
    for (k, (name, unit)) in METRIC_COLUMNS.iter().enumerate() {
        t.f64(name, unit, rows.iter().map(|m| m.scalars()[k]).collect());
    }
    t.string(
        voc::STATUS,
        rows.iter().map(|m| m.status.label().to_string()).collect(),
    );
    t.f64(
        voc::STATUS_TIME,
        "s",
        rows.iter().map(|m| m.status.time()).collect(),
    );
    t.string(
        voc::CLASS,
        rows.iter().map(|m| m.class.label().to_string()).collect(),
    );
    t.push(
        field(voc::SETTLED, DataType::Boolean, ""),
        Arc::new(arrow_array::BooleanArray::from(
            rows.iter().map(|m| m.settled).collect::<Vec<_>>(),
        )),
    );
    t.push(
        field(voc::WAVE_DIRECTION, DataType::Int8, "1"),
        Arc::new(arrow_array::Int8Array::from(
            rows.iter().map(|m| m.wave_direction).collect::<Vec<_>>(),
        )),
    );
    t.push(
        field(voc::WAVE_SENSE, DataType::Utf8, ""),
        Arc::new(arrow_array::StringArray::from(
            rows.iter()
                .map(|m| m.wave_sense.map(|w| w.label()))
                .collect::<Vec<_>>(),
        )),
    );
    t.f64_list(
        voc::PAIR_PLV,
        "1",
        rows.iter().map(|m| m.pair_plv.clone()).collect(),
    );
    t.f64_list(
        voc::PAIR_LAG,
        "rad",
        rows.iter().map(|m| m.pair_lag.clone()).collect(),
    );
    t.f64_list(
        voc::LEG_FREQUENCY,
        "rad/s",
        rows.iter().map(|m| m.leg_frequency.clone()).collect(),
    );
}

/// One-row table: every parameter and every metric of one run.
pub fn metrics_batch(
    params: &Params,
    metrics: &Metrics,
    backend: &str,
) -> Result<RecordBatch, OutputError> {
    let mut t = TableBuilder::default();
    push_param_columns(&mut t, &[params]);
    push_metric_columns(&mut t, &[metrics]);
    t.string(voc::BACKEND, vec![backend.to_string()]);
    t.finish()
}

/// Read every batch of a Parquet file back, with its file metadata. A file the decoder
/// cannot read (corrupted, truncated, not Parquet) is an error naming it, never a panic.
pub fn read_parquet(
    path: &Path,
) -> Result<(Vec<RecordBatch>, HashMap<String, String>), OutputError> {
    std::panic::catch_unwind(|| read_parquet_inner(path)).unwrap_or_else(|_| {
        Err(OutputError::Invalid {
            path: path.display().to_string(),
            message: "the Parquet decoder failed on it (corrupted?)".into(),
        })
    })
}

/// The file metadata (key-value pairs of the footer) of a Parquet file, without
/// decoding its rows. An unreadable footer is an error naming the file.
pub fn read_parquet_metadata(path: &Path) -> Result<HashMap<String, String>, OutputError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    std::panic::catch_unwind(|| {
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| pq_err(path, e))?;
        Ok(key_values(builder.metadata().file_metadata()))
    })
    .unwrap_or_else(|_| {
        Err(OutputError::Invalid {
            path: path.display().to_string(),
            message: "the Parquet decoder failed on it (corrupted?)".into(),
        })
    })
}

fn key_values(m: &parquet::file::metadata::FileMetaData) -> HashMap<String, String> {
    m.key_value_metadata()
        .map(|v| {
            v.iter()
                .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

fn read_parquet_inner(
    path: &Path,
) -> Result<(Vec<RecordBatch>, HashMap<String, String>), OutputError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let pq = |source| OutputError::Parquet {
        path: path.display().to_string(),
        source,
    };
    let file = File::open(path).map_err(|source| OutputError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq)?;
    let kv = key_values(builder.metadata().file_metadata());
    let reader = builder.build().map_err(pq)?;
    // Decoding errors name the file (the parquet crate's own are a bare `Parquet error: ...`).
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| OutputError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    Ok((batches, kv))
}
