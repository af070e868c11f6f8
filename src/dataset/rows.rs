//! The rows of a dataset read back: its parts' scalar columns (the per-leg parameter
//! lists as text) as one table, [`Rows`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::{
    Array, BooleanArray, Float64Array, Int8Array, ListArray, StringArray, UInt32Array, UInt64Array,
};

use crate::dataset::part::{part_schema, point_ids_of};
use crate::dataset::schema::COL_POINT_ID;
use crate::dataset::tree::part_files;
use crate::error::OutputError;
use crate::parquet;

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

/// The scalar columns of a whole dataset (the per-leg lists as text), with the file
/// metadata of its first part.
#[derive(Debug, Default)]
pub struct Rows {
    pub columns: Vec<(String, Column)>,
    pub metadata: HashMap<String, String>,
    pub files: usize,
}

impl Rows {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// The rows where `keep` holds (same columns, metadata and file count).
    pub fn select(&self, keep: &[bool]) -> Rows {
        fn pick<T: Clone>(v: &[T], keep: &[bool]) -> Vec<T> {
            v.iter()
                .zip(keep)
                .filter(|(_, k)| **k)
                .map(|(x, _)| x.clone())
                .collect()
        }
        let columns = self
            .columns
            .iter()
            .map(|(name, c)| {
                let c = match c {
                    Column::Num(v) => Column::Num(pick(v, keep)),
                    Column::Text(v) => Column::Text(pick(v, keep)),
                };
                (name.clone(), c)
            })
            .collect();
        Rows {
            columns,
            metadata: self.metadata.clone(),
            files: self.files,
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.columns.first().map(|(_, c)| c.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `row` of column `name` as `{}` prints it (as [`Rows::distinct`] lists it);
    /// empty where there is no such column.
    pub fn text_at(&self, name: &str, row: usize) -> String {
        match self.column(name) {
            Some(Column::Num(v)) => v[row].to_string(),
            Some(Column::Text(v)) => v[row].clone(),
            None => String::new(),
        }
    }

    /// The distinct values of column `name`, sorted (numbers by value, as `{}` prints
    /// them); empty when there is no such column.
    pub fn distinct(&self, name: &str) -> Vec<String> {
        match self.column(name) {
            Some(Column::Num(v)) => {
                let mut x: Vec<f64> = v.clone();
                x.sort_by(f64::total_cmp);
                x.dedup_by(|a, b| a.total_cmp(b).is_eq());
                x.iter().map(|v| v.to_string()).collect()
            }
            Some(Column::Text(v)) => {
                let mut x = v.clone();
                x.sort();
                x.dedup();
                x
            }
            None => Vec::new(),
        }
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
    if let Some(x) = any.downcast_ref::<Int8Array>() {
        // Null (not defined for this row) as NaN.
        return Some(Column::Num(
            (0..x.len())
                .map(|i| match x.is_null(i) {
                    true => f64::NAN,
                    false => f64::from(x.value(i)),
                })
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
/// through [`crate::dataset::Dataset::verify`]. A file that is not a part of a
/// metachron dataset (its columns differ) is an error naming the file and the column.
pub fn read_unverified(dir: &Path) -> Result<Rows, OutputError> {
    read_parts(dir, &part_files(dir)?)
}

/// Read `parts` (files of the dataset in `dir`) into one table of scalar columns.
pub fn read_parts(dir: &Path, parts: &[PathBuf]) -> Result<Rows, OutputError> {
    let mut ds = Rows::default();
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
