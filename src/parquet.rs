//! Parquet files: the time series of one run, the one-row metrics table, and the
//! tables and atomic writes the sweep datasets are made of.
//!
//! Every field carries its unit in the field metadata (`unit`); file metadata carries
//! the metachron version, the solver settings and the parameters. Files are written
//! through [`crate::output_file`] (a temporary in the same directory, renamed when
//! complete), so a reader never sees a half-written file.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
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

pub use crate::output_file::{write_bytes as write_bytes_atomic, PendingFile};

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
        crate::output_file::create_dir_all(dir)?;
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

thread_local! {
    /// Set while this thread runs the Parquet decoder under [`decode_guarded`].
    static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the current thread is inside the Parquet decoder, whose panics are caught
/// and reported as an error naming the file: a panic hook stays quiet for them (no
/// message, no backtrace) unless `RUST_BACKTRACE` asks for one.
pub fn decoder_panicking() -> bool {
    DECODING.with(|d| d.get()) && std::env::var_os("RUST_BACKTRACE").is_none_or(|v| v == "0")
}

/// Run the decoder on `path`; a panic in it is an error naming the file and the
/// decoder's message.
fn decode_guarded<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, OutputError>,
) -> Result<T, OutputError> {
    let was = DECODING.with(|d| d.replace(true));
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    DECODING.with(|d| d.set(was));
    got.unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(OutputError::Invalid {
            path: path.display().to_string(),
            message: format!("the Parquet decoder failed on it (corrupted?): {why}"),
        })
    })
}

/// Read every batch of a Parquet file back, with its file metadata. A file the decoder
/// cannot read (corrupted, truncated, not Parquet) is an error naming it, never a panic.
pub fn read_parquet(
    path: &Path,
) -> Result<(Vec<RecordBatch>, HashMap<String, String>), OutputError> {
    decode_guarded(path, || read_parquet_inner(path))
}

/// The file metadata (key-value pairs of the footer) of a Parquet file, without
/// decoding its rows. An unreadable footer is an error naming the file.
pub fn read_parquet_metadata(path: &Path) -> Result<HashMap<String, String>, OutputError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    decode_guarded(path, || {
        let file = crate::input_file::open_regular(path).map_err(|e| io_err(path, e))?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| pq_err(path, e))?;
        Ok(key_values(builder.metadata().file_metadata()))
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
    let file = crate::input_file::open_regular(path).map_err(|source| OutputError::Io {
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
