//! Checking a dataset before trusting it: every `*.parquet` file under the directory
//! is decoded and compared with what a part of this sweep must be (schema, sweep hash,
//! shard, point ids inside the plan and the shard, row count, value digest, no id
//! twice). `--resume` counts only the points of parts that pass and moves the others to
//! `DIR/quarantine/` with the reason; `metachron check` reports the same findings.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use arrow_schema::SchemaRef;

use crate::error::OutputError;
use crate::output::parquet::read_parquet;
use crate::sweep::dataset::{self as ds, QUARANTINE_DIR};
use crate::sweep::Shard;

/// Why a file is not a trustworthy part.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Defect {
    #[error("unreadable: {0}")]
    Unreadable(String),
    #[error("not a part of a metachron dataset: {0}")]
    Schema(String),
    #[error("no `{0}` in its metadata (not written by metachron sweep)")]
    MissingMetadata(&'static str),
    #[error("`{key}` = `{value}` in its metadata cannot be read")]
    BadMetadata { key: &'static str, value: String },
    #[error("written by another sweep file (hash {found}, this sweep {expected})")]
    OtherSweep { found: String, expected: String },
    #[error("holds {actual} rows, its metadata says {recorded}")]
    RowCount { recorded: usize, actual: usize },
    #[error("point ids {actual} do not match the range {recorded} in its metadata")]
    IdRange { recorded: String, actual: String },
    #[error("its values do not match their digest (corrupted)")]
    Digest,
    #[error("point id {id} is outside the plan (0..{points})")]
    OutsidePlan { id: u64, points: u64 },
    #[error("point id {id} does not belong to shard {shard}")]
    OutsideShard { id: u64, shard: Shard },
    #[error("is in directory shard={dir} but records shard {recorded}")]
    WrongDirectory { dir: String, recorded: Shard },
    #[error("point id {id} appears twice in it")]
    DuplicateInside { id: u64 },
    #[error("point id {id} is already in {other}")]
    Duplicate { id: u64, other: String },
}

/// What a part of this sweep must be.
#[derive(Debug, Clone)]
pub struct Expected {
    pub sweep_hash: String,
    /// Points in the plan (ids 0..points).
    pub points: u64,
    pub schema: SchemaRef,
}

/// A part that passed, with what `check` reports about it.
#[derive(Debug, Clone)]
pub struct GoodPart {
    pub path: PathBuf,
    pub ids: Vec<u64>,
    pub shard: Shard,
    pub version: String,
    /// Its dataset format ([`ds::FORMAT_VERSION`] or older).
    pub format: u32,
    pub backend: String,
    pub adapter: String,
}

/// The findings on one directory.
#[derive(Debug, Default)]
pub struct Scan {
    pub good: Vec<GoodPart>,
    pub bad: Vec<(PathBuf, Defect)>,
}

impl Scan {
    /// Every point id of the good parts (each once: duplicates make a part bad).
    pub fn done_ids(&self) -> std::collections::HashSet<u64> {
        self.good
            .iter()
            .flat_map(|p| p.ids.iter().copied())
            .collect()
    }
}

fn meta<'a>(m: &'a HashMap<String, String>, key: &'static str) -> Result<&'a str, Defect> {
    m.get(key)
        .map(String::as_str)
        .ok_or(Defect::MissingMetadata(key))
}

fn parsed<T: std::str::FromStr>(
    m: &HashMap<String, String>,
    key: &'static str,
) -> Result<T, Defect> {
    let v = meta(m, key)?;
    v.parse().map_err(|_| Defect::BadMetadata {
        key,
        value: v.to_string(),
    })
}

/// Check one file on its own (duplicates across files are found by [`scan`]).
pub fn check_part(path: &Path, exp: &Expected) -> Result<GoodPart, Defect> {
    let (batches, m) = read_parquet(path).map_err(|e| Defect::Unreadable(e.to_string()))?;
    // An older format's part is checked against its own format's schema.
    let format = match ds::format_of(&m) {
        Some(f @ 1..=ds::FORMAT_VERSION) => f,
        _ => {
            return Err(Defect::BadMetadata {
                key: ds::META_FORMAT,
                value: m.get(ds::META_FORMAT).cloned().unwrap_or_default(),
            })
        }
    };
    let expected = if format == ds::FORMAT_VERSION {
        exp.schema.clone()
    } else {
        ds::part_schema_for(format).map_err(|e| Defect::Schema(e.to_string()))?
    };
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| expected.clone());
    if let Some(why) = ds::schema_mismatch(&schema, &expected) {
        return Err(Defect::Schema(why));
    }
    let hash = meta(&m, ds::META_SWEEP_HASH)?;
    if hash != exp.sweep_hash {
        return Err(Defect::OtherSweep {
            found: hash.to_string(),
            expected: exp.sweep_hash.clone(),
        });
    }
    let shard_text = meta(&m, ds::META_SHARD)?;
    let shard = Shard::parse(shard_text).map_err(|_| Defect::BadMetadata {
        key: ds::META_SHARD,
        value: shard_text.to_string(),
    })?;
    let rows: usize = parsed(&m, ds::META_ROWS)?;
    let first: u64 = parsed(&m, ds::META_FIRST_ID)?;
    let last: u64 = parsed(&m, ds::META_LAST_ID)?;
    let digest = meta(&m, ds::META_DIGEST)?;
    let ids = ds::point_ids_of(&batches);
    if ids.len() != rows {
        return Err(Defect::RowCount {
            recorded: rows,
            actual: ids.len(),
        });
    }
    let (lo, hi) = (ids.iter().min().copied(), ids.iter().max().copied());
    if rows > 0 && (lo, hi) != (Some(first), Some(last)) {
        return Err(Defect::IdRange {
            recorded: format!("{first}..={last}"),
            actual: format!("{}..={}", lo.unwrap_or(0), hi.unwrap_or(0)),
        });
    }
    let actual = ds::content_digest(&batches).map_err(Defect::Schema)?;
    if format!("{actual:016x}") != digest {
        return Err(Defect::Digest);
    }
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    for &id in &ids {
        if id >= exp.points {
            return Err(Defect::OutsidePlan {
                id,
                points: exp.points,
            });
        }
        if !shard.contains(id) {
            return Err(Defect::OutsideShard { id, shard });
        }
        if !seen.insert(id) {
            return Err(Defect::DuplicateInside { id });
        }
    }
    // A part lives in its own shard's directory (one writer, one lock per shard).
    if let Some(dir) = path
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
    {
        if dir != format!("shard={}", shard.index) {
            return Err(Defect::WrongDirectory {
                dir: dir.trim_start_matches("shard=").to_string(),
                recorded: shard,
            });
        }
    }
    let text = |k| m.get(k).cloned().unwrap_or_default();
    Ok(GoodPart {
        path: path.to_path_buf(),
        ids,
        shard,
        version: text(ds::META_VERSION),
        format,
        backend: text(ds::META_BACKEND),
        adapter: text(ds::META_ADAPTER),
    })
}

/// Check every `*.parquet` file under `dir` (quarantine excluded). Files are taken in
/// name order; a file repeating an id of an earlier good file is bad.
pub fn scan(dir: &Path, exp: &Expected) -> Result<Scan, OutputError> {
    let mut s = Scan::default();
    let mut owner: HashMap<u64, usize> = HashMap::new();
    for path in ds::part_files(dir)? {
        match check_part(&path, exp) {
            Err(d) => s.bad.push((path, d)),
            Ok(part) => {
                if let Some((id, &k)) = part
                    .ids
                    .iter()
                    .find_map(|id| owner.get(id).map(|k| (*id, k)))
                {
                    let other = s.good[k].path.display().to_string();
                    s.bad.push((path, Defect::Duplicate { id, other }));
                    continue;
                }
                let k = s.good.len();
                part.ids.iter().for_each(|&id| {
                    owner.insert(id, k);
                });
                s.good.push(part);
            }
        }
    }
    Ok(s)
}

/// Move a bad file to `DIR/quarantine/` (its path below DIR flattened into the name,
/// `.quarantined` appended) and write the reason beside it. Returns the new path. A file another process has
/// already moved is not an error.
pub fn quarantine(dir: &Path, file: &Path, defect: &Defect) -> Result<PathBuf, OutputError> {
    let qdir = dir.join(QUARANTINE_DIR);
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| OutputError::Io { path, source }
    };
    std::fs::create_dir_all(&qdir).map_err(io(&qdir))?;
    let rel = file.strip_prefix(dir).unwrap_or(file);
    let flat = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("__");
    // Not `*.parquet` any more: `DIR/**/*.parquet` globs (DuckDB, polars) skip it.
    let flat = format!("{flat}.quarantined");
    let target = qdir.join(&flat);
    match std::fs::rename(file, &target) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(target),
        Err(e) => return Err(io(file)(e)),
    }
    let note = qdir.join(format!("{flat}.reason.txt"));
    std::fs::write(&note, format!("{}: {defect}\n", rel.display())).map_err(io(&note))?;
    Ok(target)
}

/// Files in `DIR/quarantine/` with their recorded reasons.
pub fn quarantined(dir: &Path) -> Vec<(PathBuf, String)> {
    let qdir = dir.join(QUARANTINE_DIR);
    let Ok(entries) = std::fs::read_dir(&qdir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, String)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.to_string_lossy().ends_with(".reason.txt"))
        .map(|p| {
            let note = PathBuf::from(format!("{}.reason.txt", p.display()));
            let why = std::fs::read_to_string(note)
                .map(|t| t.trim().to_string())
                .unwrap_or_else(|_| "no reason recorded".into());
            (p, why)
        })
        .collect();
    out.sort();
    out
}

/// Sorted ids as compact ranges: `3-5, 17, 22`.
pub fn ranges(ids: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some((_, hi)) if *hi + 1 == id => *hi = id,
            _ => out.push((id, id)),
        }
    }
    out
}

/// A dataset's health, as `metachron check` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Health {
    pub dir: String,
    pub sweep_name: String,
    pub sweep_hash: String,
    pub points: u64,
    pub shards: Vec<String>,
    pub good_parts: usize,
    pub rows: usize,
    /// Missing ids as inclusive ranges.
    pub missing: Vec<(u64, u64)>,
    pub missing_count: u64,
    /// Files under DIR that are not trustworthy parts, with the reason.
    pub bad_files: Vec<(String, String)>,
    pub quarantined: Vec<(String, String)>,
    /// (version, backend, adapter) -> parts and rows they wrote.
    pub writers: Vec<Writer>,
    pub complete: bool,
    pub clean: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Writer {
    pub version: String,
    pub backend: String,
    pub adapter: String,
    pub parts: usize,
    pub rows: usize,
}

/// Summarise a scan: which ids of 0..points are missing, who wrote what.
pub fn health(dir: &Path, name: &str, exp: &Expected, scan: &Scan) -> Health {
    let mut present = vec![false; exp.points as usize];
    let mut writers: BTreeMap<(String, String, String), (usize, usize)> = BTreeMap::new();
    let mut shards: Vec<String> = Vec::new();
    for p in &scan.good {
        for &id in &p.ids {
            present[id as usize] = true;
        }
        let w = writers
            .entry((p.version.clone(), p.backend.clone(), p.adapter.clone()))
            .or_default();
        w.0 += 1;
        w.1 += p.ids.len();
        let s = p.shard.to_string();
        if !shards.contains(&s) {
            shards.push(s);
        }
    }
    shards.sort();
    let missing_ids: Vec<u64> = (0..exp.points).filter(|&i| !present[i as usize]).collect();
    let quarantined: Vec<(String, String)> = quarantined(dir)
        .into_iter()
        .map(|(p, w)| (p.display().to_string(), w))
        .collect();
    let complete = missing_ids.is_empty();
    let clean = scan.bad.is_empty() && quarantined.is_empty();
    Health {
        dir: dir.display().to_string(),
        sweep_name: name.to_string(),
        sweep_hash: exp.sweep_hash.clone(),
        points: exp.points,
        shards,
        good_parts: scan.good.len(),
        rows: scan.good.iter().map(|p| p.ids.len()).sum(),
        missing: ranges(&missing_ids),
        missing_count: missing_ids.len() as u64,
        bad_files: scan
            .bad
            .iter()
            .map(|(p, d)| (p.display().to_string(), d.to_string()))
            .collect(),
        quarantined,
        writers: writers
            .into_iter()
            .map(|((version, backend, adapter), (parts, rows))| Writer {
                version,
                backend,
                adapter,
                parts,
                rows,
            })
            .collect(),
        complete,
        clean,
    }
}
