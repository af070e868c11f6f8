//! Checking the parts of a dataset before trusting them. Only `shard=K/part-*.parquet`
//! regular files are candidates ([`crate::dataset::tree`]); each is judged
//! against what the dataset's manifest and sweep say a part must be: its bytes match
//! its checksum file, then its schema, format version, sweep hash, shard (within the
//! manifest's layout, in its own directory), backend, point ids (inside the plan and
//! the shard, as recorded), row count and value digest; no id twice. `--resume`
//! counts only the points of parts that pass and moves the others to
//! `DIR/quarantine/` with the reason; `metachron check` and the readers report the
//! same findings. Nothing else under DIR is ever moved or followed.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use arrow_schema::SchemaRef;

use crate::dataset::manifest::{self, Manifest};
use crate::dataset::part::{content_digest, point_ids_of, Checksum};
use crate::dataset::rows::schema_mismatch;
use crate::dataset::schema::{self, QUARANTINE_DIR};
use crate::dataset::tree::{self, Stray};
use crate::dataset::{DatasetError, Shard};
use crate::error::OutputError;
use crate::parquet::read_parquet;

/// Why a file is not a trustworthy part.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Defect {
    #[error("unreadable: {0}")]
    Unreadable(String),
    #[error("no checksum file beside it (`{0}`): not written whole by metachron sweep")]
    NoChecksum(String),
    #[error("its bytes do not match its checksum file ({0}): corrupted")]
    Checksum(String),
    #[error("written in dataset format {found}, the dataset's manifest says {expected}")]
    Format { found: String, expected: u32 },
    #[error("records shard {found}, but the dataset's manifest says {shards} shards")]
    OtherLayout { found: Shard, shards: usize },
    #[error("written with --backend {found}, the dataset's manifest says {expected}")]
    OtherBackend { found: String, expected: String },
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
    #[error(
        "its embedded Arrow schema is not the one metachron writes for this schema (corrupted)"
    )]
    ArrowSchema,
    #[error(
        "its Parquet schema is not the one metachron writes for this schema (corrupted): \
         {0} differs"
    )]
    ParquetSchema(String),
    #[error("its Parquet structure is not sound (corrupted): {0}")]
    Structure(#[from] crate::dataset::footer::StructureError),
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

impl Defect {
    /// Whether the file is a part of another sweep, layout or backend.
    pub fn is_foreign(&self) -> bool {
        matches!(
            self,
            Defect::OtherSweep { .. } | Defect::OtherLayout { .. } | Defect::OtherBackend { .. }
        )
    }
}

/// What a part of this sweep must be.
#[derive(Debug, Clone)]
pub struct Expected {
    pub sweep_hash: String,
    /// Points in the plan (ids 0..points).
    pub points: u64,
    pub schema: SchemaRef,
    /// The manifest's shard layout and backend (unchecked when `None`).
    pub shards: Option<usize>,
    pub backend: Option<String>,
}

impl Expected {
    /// Add what the manifest fixes: the shard layout and the backend.
    pub fn with_manifest(self, m: &Manifest) -> Expected {
        Expected {
            shards: Some(m.shards),
            backend: Some(m.backend.clone()),
            ..self
        }
    }
}

/// A part that passed, with what `check` reports about it.
#[derive(Debug, Clone)]
pub struct GoodPart {
    pub path: PathBuf,
    pub ids: Vec<u64>,
    pub shard: Shard,
    pub version: String,
    pub backend: String,
    pub adapter: String,
}

/// The findings on one directory.
#[derive(Debug, Default)]
pub struct Scan {
    /// The dataset's manifest (`None`: no dataset here yet).
    pub manifest: Option<Manifest>,
    pub good: Vec<GoodPart>,
    pub bad: Vec<(PathBuf, Defect)>,
    /// Everything under DIR that is not the dataset's (never moved, never followed).
    pub strays: Vec<Stray>,
}

impl Scan {
    /// The paths of the good parts, in name order.
    pub fn good_paths(&self) -> Vec<PathBuf> {
        self.good.iter().map(|p| p.path.clone()).collect()
    }

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

/// The bytes of `path` against its checksum file: the checksum when they match.
pub fn check_bytes(path: &Path) -> Result<Checksum, Defect> {
    read_checked(path).map(|(sum, _)| sum)
}

/// The bytes of `path`, checked against its checksum file, with the checksum.
fn read_checked(path: &Path) -> Result<(Checksum, Vec<u8>), Defect> {
    let sum_path = schema::checksum_path(path);
    let sum_name = sum_path.display().to_string();
    let text = match std::fs::symlink_metadata(&sum_path) {
        Ok(m) if m.file_type().is_file() => {
            std::fs::read_to_string(&sum_path).map_err(|e| Defect::Unreadable(e.to_string()))?
        }
        _ => return Err(Defect::NoChecksum(sum_name)),
    };
    let recorded = Checksum::parse(&text)
        .ok_or_else(|| Defect::Checksum(format!("`{sum_name}` cannot be read")))?;
    let bytes = std::fs::read(path).map_err(|e| Defect::Unreadable(e.to_string()))?;
    let actual = Checksum::of(&bytes);
    if actual.len != recorded.len {
        return Err(Defect::Checksum(format!(
            "{} bytes, the checksum file says {}",
            actual.len, recorded.len
        )));
    }
    if actual != recorded {
        return Err(Defect::Checksum(format!(
            "digest {:016x}, the checksum file says {:016x}",
            actual.fnv1a64, recorded.fnv1a64
        )));
    }
    Ok((actual, bytes))
}

/// The Parquet schema of a part's footer is the one the writer derives from `schema`:
/// every reader builds its columns from its names, repetitions and logical types (the
/// Rust reader from the embedded Arrow schema instead, so a changed annotation would
/// go unseen by it).
fn check_parquet_schema(bytes: &[u8], schema: &arrow_schema::Schema) -> Result<(), Defect> {
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::copy_from_slice(bytes))
        .map_err(|e| Defect::Unreadable(e.to_string()))?;
    let expected = parquet::arrow::ArrowSchemaConverter::new()
        .convert(schema)
        .map_err(|e| Defect::Schema(e.to_string()))?;
    let found = meta.file_metadata().schema_descr();
    if found.root_schema() == expected.root_schema() {
        return Ok(());
    }
    let n = found.num_columns().min(expected.num_columns());
    let which = (0..n)
        .find(|&i| found.get_column_root(i) != expected.get_column_root(i))
        .map_or_else(
            || "its number of columns".to_string(),
            |i| format!("column `{}`", found.column(i).path()),
        );
    Err(Defect::ParquetSchema(which))
}

/// Check one file on its own (duplicates across files are found by [`scan`]): its
/// bytes first (a corrupted file is never decoded), then what it holds.
pub fn check_part(path: &Path, exp: &Expected) -> Result<GoodPart, Defect> {
    let (_, bytes) = read_checked(path)?;
    // The structure next: a checksum recomputed over changed bytes proves nothing.
    crate::dataset::footer::check_structure(&bytes).map_err(Defect::Structure)?;
    // Judged after the format and the schema, which name a foreign part as such.
    let parquet_schema = check_parquet_schema(&bytes, &exp.schema);
    drop(bytes);
    let (batches, m) = read_parquet(path).map_err(|e| Defect::Unreadable(e.to_string()))?;
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| exp.schema.clone());
    let format = meta(&m, schema::META_FORMAT)?;
    if format != schema::FORMAT_VERSION.to_string() {
        return Err(Defect::Format {
            found: format.to_string(),
            expected: schema::FORMAT_VERSION,
        });
    }
    if let Some(why) = schema_mismatch(&schema, &exp.schema) {
        return Err(Defect::Schema(why));
    }
    // The Arrow schema the writer embeds, byte for byte: pyarrow and polars verify its
    // flatbuffer more strictly than the Rust reader, which can read a corrupted one.
    if meta(&m, parquet::arrow::ARROW_SCHEMA_META_KEY)?
        != parquet::arrow::encode_arrow_schema(&exp.schema)
    {
        return Err(Defect::ArrowSchema);
    }
    parquet_schema?;
    let hash = meta(&m, schema::META_SWEEP_HASH)?;
    if hash != exp.sweep_hash {
        return Err(Defect::OtherSweep {
            found: hash.to_string(),
            expected: exp.sweep_hash.clone(),
        });
    }
    let shard_text = meta(&m, schema::META_SHARD)?;
    let shard = Shard::parse(shard_text).map_err(|_| Defect::BadMetadata {
        key: schema::META_SHARD,
        value: shard_text.to_string(),
    })?;
    if let Some(shards) = exp.shards.filter(|&n| n != shard.count) {
        return Err(Defect::OtherLayout {
            found: shard,
            shards,
        });
    }
    let backend = meta(&m, schema::META_BACKEND)?;
    if let Some(expected) = &exp.backend {
        // A gpu run falls back to the cpu engine without a usable adapter.
        let fallback = expected == "gpu" && backend == "cpu";
        if backend != expected && !fallback {
            return Err(Defect::OtherBackend {
                found: backend.to_string(),
                expected: expected.clone(),
            });
        }
    }
    let rows: usize = parsed(&m, schema::META_ROWS)?;
    let first: u64 = parsed(&m, schema::META_FIRST_ID)?;
    let last: u64 = parsed(&m, schema::META_LAST_ID)?;
    let digest = meta(&m, schema::META_DIGEST)?;
    let ids = point_ids_of(&batches);
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
    let actual = content_digest(&batches).map_err(Defect::Schema)?;
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
    let dir = shard_dir_of(path);
    if dir != Some(shard.index) {
        return Err(Defect::WrongDirectory {
            dir: dir.map_or_else(|| "?".into(), |k| k.to_string()),
            recorded: shard,
        });
    }
    let text = |k| m.get(k).cloned().unwrap_or_default();
    Ok(GoodPart {
        path: path.to_path_buf(),
        ids,
        shard,
        version: text(schema::META_VERSION),
        backend: text(schema::META_BACKEND),
        adapter: text(schema::META_ADAPTER),
    })
}

/// The shard index of the `shard=K` directory a part is in.
pub fn shard_dir_of(part: &Path) -> Option<usize> {
    part.parent()
        .and_then(|d| d.file_name())
        .and_then(|n| schema::shard_of_dir_name(&n.to_string_lossy()))
}

/// The manifest of `dir` and what it fixes, or why there is no usable one: a
/// directory holding parts without a manifest is a dataset of the format before
/// manifests, refused with both versions named.
pub fn manifest_of(dir: &Path) -> Result<Option<Manifest>, DatasetError> {
    if let Some(m) = Manifest::load(dir)? {
        return Ok(Some(m));
    }
    let parts = tree::part_files(dir)?;
    match parts.first() {
        None => Ok(None),
        Some(p) => Err(manifest::legacy_error(dir, manifest::version_of_part(p)).into()),
    }
}

/// Check every candidate part of `dir` against `exp` and the dataset's manifest, and
/// list what is not the dataset's. Files are taken in name order; a file repeating an
/// id of an earlier good file is bad. A directory without a manifest and parts is
/// empty; one whose manifest names another sweep is an error.
pub fn scan(dir: &Path, exp: &Expected) -> Result<Scan, DatasetError> {
    scan_with(dir, exp, None)
}

/// [`scan`], trusting parts whose size, times and checksum file are as when `cache`
/// recorded them good (readers' fast path; `check` and `--resume` read every byte).
pub fn scan_with(
    dir: &Path,
    exp: &Expected,
    mut cache: Option<&mut VerifyCache>,
) -> Result<Scan, DatasetError> {
    let manifest = manifest_of(dir)?;
    let exp = match &manifest {
        Some(m) if m.sweep_hash != exp.sweep_hash => {
            return Err(manifest::ManifestError::Mismatch {
                dir: dir.display().to_string(),
                field: "sweep file",
                found: format!("`{}` (hash {})", m.sweep_name, m.sweep_hash),
                expected: format!("hash {}", exp.sweep_hash),
                advice: "check it against its own sweep file (or without --sweep)",
            }
            .into())
        }
        Some(m) => exp.clone().with_manifest(m),
        None => exp.clone(),
    };
    let tree = tree::tree(dir)?;
    let mut s = Scan {
        manifest,
        strays: tree.strays,
        ..Scan::default()
    };
    let mut owner: HashMap<u64, usize> = HashMap::new();
    for path in tree.parts {
        let cached = cache.as_deref().and_then(|c| c.lookup(dir, &path));
        let was_cached = cached.is_some();
        let checked = match cached {
            Some(part) => Ok(part),
            None => check_part(&path, &exp),
        };
        match checked {
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
                if !was_cached {
                    if let Some(c) = cache.as_deref_mut() {
                        c.record(dir, &part);
                    }
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

/// The rules a part is checked by, counted: raised whenever [`check_part`] grows
/// stricter, so that verdicts cached under laxer rules are not trusted.
pub const CHECK_RULES: u32 = 2;

/// Readers' record of parts found good, keyed by their path below DIR with the
/// part's and its checksum file's size, modification and change times and inode: a
/// part rewritten, touched or replaced since is checked again in full. Kept in
/// `DIR/.verified.json` when DIR is writable (a cache: losing it costs time only).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct VerifyCache {
    sweep_hash: String,
    format_version: u32,
    /// The [`CHECK_RULES`] that found the parts good (absent: the rules before
    /// they were counted).
    #[serde(default)]
    rules: u32,
    parts: HashMap<String, CachedPart>,
    #[serde(skip)]
    changed: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct CachedPart {
    stamp: Vec<i64>,
    ids: Vec<(u64, u64)>,
    shard: String,
    version: String,
    backend: String,
    adapter: String,
}

/// Size, mtime, ctime (ns) and inode of a file and of its checksum file.
fn stamp(part: &Path) -> Option<Vec<i64>> {
    use std::os::unix::fs::MetadataExt;
    let one = |p: &Path| {
        let m = std::fs::symlink_metadata(p).ok()?;
        m.file_type().is_file().then(|| {
            [
                m.len() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                m.ino() as i64,
            ]
        })
    };
    let mut v = one(part)?.to_vec();
    v.extend(one(&schema::checksum_path(part))?);
    Some(v)
}

fn rel_key(dir: &Path, part: &Path) -> String {
    part.strip_prefix(dir)
        .unwrap_or(part)
        .to_string_lossy()
        .into_owned()
}

impl VerifyCache {
    /// The cache of `dir` for this manifest (empty when absent or another dataset's).
    pub fn load(dir: &Path, m: &Manifest) -> VerifyCache {
        let fresh = VerifyCache {
            sweep_hash: m.sweep_hash.clone(),
            format_version: m.format_version,
            rules: CHECK_RULES,
            ..VerifyCache::default()
        };
        let path = dir.join(schema::VERIFY_CACHE);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return fresh;
        };
        if !meta.file_type().is_file() {
            return fresh;
        }
        match std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<VerifyCache>(&t).ok())
        {
            Some(c)
                if c.sweep_hash == m.sweep_hash
                    && c.format_version == m.format_version
                    && c.rules == CHECK_RULES =>
            {
                c
            }
            _ => fresh,
        }
    }

    fn lookup(&self, dir: &Path, part: &Path) -> Option<GoodPart> {
        let c = self.parts.get(&rel_key(dir, part))?;
        if stamp(part)? != c.stamp {
            return None;
        }
        Some(GoodPart {
            path: part.to_path_buf(),
            ids: c.ids.iter().flat_map(|&(a, b)| a..=b).collect(),
            shard: Shard::parse(&c.shard).ok()?,
            version: c.version.clone(),
            backend: c.backend.clone(),
            adapter: c.adapter.clone(),
        })
    }

    fn record(&mut self, dir: &Path, part: &GoodPart) {
        let Some(stamp) = stamp(&part.path) else {
            return;
        };
        let mut ids = part.ids.clone();
        ids.sort_unstable();
        self.parts.insert(
            rel_key(dir, &part.path),
            CachedPart {
                stamp,
                ids: ranges(&ids),
                shard: part.shard.to_string(),
                version: part.version.clone(),
                backend: part.backend.clone(),
                adapter: part.adapter.clone(),
            },
        );
        self.changed = true;
    }

    /// Write the cache back if it learned something (best effort: a read-only dataset
    /// is read without it).
    pub fn save(&self, dir: &Path) {
        if !self.changed {
            return;
        }
        if let Ok(text) = serde_json::to_string(self) {
            let _ = crate::parquet::write_bytes_atomic(
                &dir.join(schema::VERIFY_CACHE),
                text.as_bytes(),
            );
        }
    }
}

/// Move a bad part (and its checksum file) to `DIR/quarantine/` (its path below DIR
/// flattened into the name, `.quarantined` appended) and write the reason beside it.
/// Returns the new path. Only a file below DIR is ever moved, into a real directory
/// (never through a link); a file another process has already moved is not an error.
pub fn quarantine(dir: &Path, file: &Path, defect: &Defect) -> Result<PathBuf, OutputError> {
    let qdir = dir.join(QUARANTINE_DIR);
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| OutputError::Io { path, source }
    };
    let Ok(rel) = file.strip_prefix(dir) else {
        return Err(OutputError::Invalid {
            path: file.display().to_string(),
            message: format!("not below {}: never moved", dir.display()),
        });
    };
    match std::fs::symlink_metadata(&qdir) {
        Ok(m) if !m.file_type().is_dir() => {
            return Err(OutputError::Invalid {
                path: qdir.display().to_string(),
                message: "is not a directory (a link is never followed): nothing moved".into(),
            })
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir(&qdir).map_err(io(&qdir))?,
    }
    let mut flat = OsString::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            flat.push("__");
        }
        flat.push(c.as_os_str());
    }
    // Not `*.parquet` any more: `DIR/**/*.parquet` globs (DuckDB, polars) skip it.
    flat.push(".quarantined");
    // A name quarantined before (the same part bad twice) keeps its first copy.
    let mut target = qdir.join(&flat);
    let mut k = 1;
    while std::fs::symlink_metadata(&target).is_ok() {
        k += 1;
        let mut again = flat.clone();
        again.push(format!(".{k}"));
        target = qdir.join(again);
    }
    if !crate::output_file::move_file(file, &target)? {
        return Ok(target);
    }
    let sum = schema::checksum_path(file);
    let _ = crate::output_file::move_file(&sum, &schema::checksum_path(&target));
    let note = reason_path(&target);
    crate::output_file::write_bytes(&note, format!("{}: {defect}\n", rel.display()).as_bytes())?;
    Ok(target)
}

/// Where the reason of a quarantined file is written (byte-exact, any file name).
fn reason_path(quarantined: &Path) -> PathBuf {
    let mut name = quarantined.as_os_str().to_os_string();
    name.push(".reason.txt");
    PathBuf::from(name)
}

/// Files in `DIR/quarantine/` with their recorded reasons.
pub fn quarantined(dir: &Path) -> Vec<(PathBuf, String)> {
    let qdir = dir.join(QUARANTINE_DIR);
    if !std::fs::symlink_metadata(&qdir).is_ok_and(|m| m.file_type().is_dir()) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&qdir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, String)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.as_os_str().as_encoded_bytes();
            !n.ends_with(b".reason.txt") && !n.ends_with(schema::CHECKSUM_EXT.as_bytes())
        })
        .map(|p| {
            let why = std::fs::read_to_string(reason_path(&p))
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
