//! What a dataset directory holds, following no link: the candidate parts
//! (`shard=K/part-*.parquet` regular files), the dataset's own other files, leftovers
//! of killed writers, and strays (everything else: reported, never read, moved or
//! followed).

use std::path::{Path, PathBuf};

use crate::dataset::schema as k;
use crate::error::OutputError;
use crate::parquet;

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
        .and_then(|n| n.strip_prefix(k::MANIFEST_FILE))
        .and_then(|n| n.strip_prefix(".tmp-"))
        .is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
}

fn shard_tree(dir: &Path, t: &mut Tree) -> Result<(), OutputError> {
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
        if path.join(k::MANIFEST_FILE).exists() {
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
        let summary =
            parquet::read_parquet_metadata(path).is_ok_and(|m| m.contains_key(k::META_SUMMARY_OF));
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
