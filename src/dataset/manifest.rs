//! The dataset's manifest, `DIR/metachron-dataset.json`: what the dataset is (its
//! sweep's hash and text, the shard layout, the backend, the format version), written
//! once by the first writer. Every part is judged against it, never against another
//! part, and every later writer must match it.
//!
//! The claim is made under one lock for the whole directory (`DIR/.manifest.lock`,
//! whatever the writer's shard layout) and the file is created exclusively (a complete
//! temporary hard-linked onto the name, which fails if the name exists): two sweeps
//! started at the same instant cannot both claim the directory.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::dataset::schema::{
    FORMAT_VERSION, LEGACY_FORMAT_VERSION, MANIFEST_FILE, MANIFEST_LOCK, META_VERSION,
};

/// What a dataset is.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// Dataset format version ([`FORMAT_VERSION`] when written by this metachron).
    pub format_version: u32,
    pub sweep_hash: String,
    pub sweep_name: String,
    pub sweep_file: String,
    /// The sweep file's text: `check` plans the dataset from it.
    pub sweep: String,
    /// Shard layout: the number of shards (1 when unsharded).
    pub shards: usize,
    /// The backend asked for (rows record the backend that really ran them).
    pub backend: String,
    /// The metachron version of the first writer.
    pub written_by: String,
    pub created: String,
}

/// Why a directory's manifest cannot be used, or a writer does not match it.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(
        "{dir} holds a dataset in format {found} (written by metachron {written_by}); this \
         metachron {ours} reads and writes format {expected} only: {advice}"
    )]
    Version {
        dir: String,
        found: u32,
        expected: u32,
        written_by: String,
        ours: &'static str,
        advice: &'static str,
    },
    #[error(
        "{dir} is a dataset of a different {field}: its manifest says {found}, this run has \
         {expected}; {advice}"
    )]
    Mismatch {
        dir: String,
        field: &'static str,
        found: String,
        expected: String,
        advice: &'static str,
    },
    #[error("{path}: the dataset's manifest cannot be read ({message}); if no writer is running, inspect and remove it")]
    Unreadable { path: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ManifestError + '_ {
    move |source| ManifestError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Path of the manifest of `dir`.
pub fn manifest_path(dir: &Path) -> PathBuf {
    dir.join(MANIFEST_FILE)
}

impl Manifest {
    /// The manifest of `dir`; `None` when it has none. A manifest of another format
    /// version is an error naming both versions.
    pub fn load(dir: &Path) -> Result<Option<Manifest>, ManifestError> {
        let path = manifest_path(dir);
        let text = match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(&path)(e)),
            Ok(m) if !m.file_type().is_file() => {
                return Err(ManifestError::Unreadable {
                    path: path.display().to_string(),
                    message: "not a regular file (a link or a directory is never followed)".into(),
                })
            }
            Ok(_) => std::fs::read_to_string(&path).map_err(io(&path))?,
        };
        let unreadable = |message: String| ManifestError::Unreadable {
            path: path.display().to_string(),
            message,
        };
        // The version first, so that a future format's other fields cannot hide it.
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
        let found = value
            .get("format_version")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| unreadable("no `format_version`".into()))?;
        if found != u64::from(FORMAT_VERSION) {
            return Err(ManifestError::Version {
                dir: dir.display().to_string(),
                found: u32::try_from(found).unwrap_or(u32::MAX),
                expected: FORMAT_VERSION,
                written_by: value
                    .get("written_by")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("unknown")
                    .to_string(),
                ours: crate::VERSION,
                advice: version_advice(found),
            });
        }
        serde_json::from_value(value)
            .map(Some)
            .map_err(|e| unreadable(e.to_string()))
    }

    /// Whether a writer with this manifest may write into a dataset with `self`:
    /// the first difference in sweep, shard layout or backend, named.
    pub fn admits(&self, writer: &Manifest, dir: &Path) -> Result<(), ManifestError> {
        let mismatch = |field, found: String, expected: String, advice| {
            Err(ManifestError::Mismatch {
                dir: dir.display().to_string(),
                field,
                found,
                expected,
                advice,
            })
        };
        if self.sweep_hash != writer.sweep_hash {
            return mismatch(
                "sweep file",
                format!("`{}` (hash {})", self.sweep_name, self.sweep_hash),
                format!("`{}` (hash {})", writer.sweep_name, writer.sweep_hash),
                "resume it with the same sweep file, or choose another --out",
            );
        }
        if self.shards != writer.shards {
            return mismatch(
                "shard layout",
                layout(self.shards),
                layout(writer.shards),
                "every writer of a dataset uses the same --shard K/N count (or job array size)",
            );
        }
        if self.backend != writer.backend {
            return mismatch(
                "backend",
                format!("--backend {}", self.backend),
                format!("--backend {}", writer.backend),
                "resume with the dataset's backend, or choose another --out",
            );
        }
        Ok(())
    }
}

const VERSION_ADVICE: &str = "write a new dataset with another --out, or read this one with the \
                              metachron that wrote it";

/// What to do with a dataset of format `found`: format 2 classes differ from this
/// format's, so its rows are never read as this format's.
fn version_advice(found: u64) -> &'static str {
    if found == 2 {
        "format 2 has no `antiphase` class (its `metachronal` rows include neighbours half a \
         cycle apart, an alternation that travels nowhere) and no `wave_direction` or \
         `wave_sense`: run its sweep again with another --out (the sweep file's text is in \
         its metachron-dataset.json), or read it with the metachron that wrote it"
    } else {
        VERSION_ADVICE
    }
}

fn layout(n: usize) -> String {
    if n == 1 {
        "unsharded (1 shard)".into()
    } else {
        format!("{n} shards (--shard K/{n})")
    }
}

/// The error for a directory holding parts but no manifest: a dataset of the format
/// before manifests (`written_by`: the version its parts record, when readable).
pub fn legacy_error(dir: &Path, written_by: Option<String>) -> ManifestError {
    ManifestError::Version {
        dir: dir.display().to_string(),
        found: LEGACY_FORMAT_VERSION,
        expected: FORMAT_VERSION,
        written_by: written_by
            .map(|v| format!("{v}, parts without a manifest or checksums"))
            .unwrap_or_else(|| "unknown, parts without a manifest or checksums".into()),
        ours: crate::VERSION,
        advice: VERSION_ADVICE,
    }
}

/// The `metachron.version` a part records, if its footer can be read.
pub fn version_of_part(part: &Path) -> Option<String> {
    crate::parquet::read_parquet_metadata(part)
        .ok()?
        .remove(META_VERSION)
}

/// The manifest lock of a directory, held while the manifest is compared or created.
#[derive(Debug)]
pub struct ManifestLock {
    _file: File,
}

/// Take the manifest lock of `dir` (created with `dir` if missing), waiting for a
/// holder: holders keep it only while they read or create the manifest.
pub fn lock(dir: &Path) -> Result<ManifestLock, ManifestError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path = dir.join(MANIFEST_LOCK);
    let file = crate::output_file::open_lock(&path).map_err(|e| ManifestError::Unreadable {
        path: path.display().to_string(),
        message: format!("the manifest lock {e}"),
    })?;
    loop {
        // SAFETY: the descriptor is open and owned by `file` for the whole call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(ManifestLock { _file: file });
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(io(&path)(e));
        }
    }
}

/// Claim `dir` for `mine` (under the held manifest lock): create the manifest if there
/// is none, exclusively; otherwise check that `mine` matches it. Returns the
/// dataset's manifest and whether this call created it.
pub fn claim(
    dir: &Path,
    mine: &Manifest,
    _held: &ManifestLock,
) -> Result<(Manifest, bool), ManifestError> {
    if let Some(existing) = Manifest::load(dir)? {
        existing.admits(mine, dir)?;
        return Ok((existing, false));
    }
    let path = manifest_path(dir);
    let text = serde_json::to_string_pretty(mine).map_err(|e| ManifestError::Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    // Exclusive: fails when the name exists, and it appears whole.
    let written = crate::output_file::write_new(&path, format!("{text}\n").as_bytes());
    match written {
        Ok(()) => Ok((mine.clone(), true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Created by a writer that did not take the lock: judge against it.
            let existing = Manifest::load(dir)?.ok_or_else(|| io(&path)(e))?;
            existing.admits(mine, dir)?;
            Ok((existing, false))
        }
        Err(e) => Err(io(&path)(e)),
    }
}
