//! A sweep's dataset on disk: a directory `DIR` holding a manifest
//! (`DIR/metachron-dataset.json`, [`manifest`]) and one Parquet part per chunk of rows
//! in a hive-style layout, `DIR/shard=K/part-<first point id>.parquet`, readable as one
//! table by DuckDB (`SELECT … FROM 'DIR/shard=*/*.parquet'`) and polars
//! (`scan_parquet`). The names live in [`schema`], the shard layout in [`shard`].
//!
//! Writing: a sweep claims the directory through its manifest ([`manifest::claim`]) and
//! writes each chunk with [`part::write_part`] (the part's checksum first, then the
//! part, both atomically).
//!
//! Reading is one way through, each step refusing what the next cannot trust:
//! [`Dataset::open`] reads the manifest, [`Dataset::verify`] checks every candidate
//! part ([`tree`]) against the manifest and the sweep's plan ([`verify`], with the
//! readers' verification cache) and judges the whole ([`health`]), and
//! [`Verified::rows`] reads the good parts' rows ([`rows`]):
//!
//! ```no_run
//! # fn demo<P: metachron::dataset::Planner>(plan: &P) -> Result<(), P::Error> {
//! use metachron::dataset::{Dataset, VerifyOptions};
//! let rows = Dataset::open("runs/demo")?
//!     .verify(plan, VerifyOptions::reader(false))?
//!     .rows()?;
//! # let _ = rows; Ok(()) }
//! ```
//!
//! The room does not know how sweeps plan: the plan a dataset must hold comes from a
//! [`Planner`] (the sweep implements it).

pub mod footer;
pub mod health;
pub mod manifest;
pub mod part;
pub mod rows;
pub mod schema;
pub mod shard;
pub mod strict_thrift;
pub mod tree;
pub mod verify;

use std::path::{Path, PathBuf};

pub use health::{Health, Planned};
pub use manifest::{Manifest, ManifestError};
pub use rows::{Column, Rows};
pub use shard::{Shard, ShardError};
pub use verify::{Defect, Expected, Scan};

use crate::error::OutputError;

/// The dataset directory (one holding a manifest) that `path` lies inside, if any:
/// `path` itself is not counted, only the directories above it (resolved through
/// links and `..`, as the readers' `DIR/**/*.parquet` globs would see them).
pub fn enclosing_dataset(path: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(path).ok()?;
    // The deepest directory above `path` that exists, resolved.
    let mut above = abs.parent();
    while let Some(d) = above {
        if let Ok(real) = d.canonicalize() {
            return real
                .ancestors()
                .find(|a| std::fs::symlink_metadata(a.join(schema::MANIFEST_FILE)).is_ok())
                .map(Path::to_path_buf);
        }
        above = d.parent();
    }
    None
}

/// Refuse `out` (`what` names its option) inside a dataset directory. Every output
/// that is not the dataset's own is refused there, whatever its kind: a Parquet file
/// would be counted as rows by the readers' `DIR/**/*.parquet` (DuckDB, polars), and a
/// picture, page or GIF is a file the dataset's checksums, `check` and copies do not
/// account for. One rule for all outputs keeps the directory exactly what the sweep
/// wrote.
pub fn refuse_inside_dataset(out: &Path, what: &str) -> Result<(), OutputError> {
    match enclosing_dataset(out) {
        None => Ok(()),
        Some(ds) => Err(OutputError::Invalid {
            path: out.display().to_string(),
            message: format!(
                "{what} is inside the dataset {}: a dataset's directory holds only what its \
                 sweep wrote (a query over its `**/*.parquet` files would count more rows, \
                 and `check` would meet files it does not know); write it outside the \
                 dataset's directory",
                ds.display()
            ),
        }),
    }
}

/// Refuse the output directory `dir` (`what` names its option) when it is a dataset's
/// directory or lies inside one: the files written into it would be inside the dataset.
pub fn refuse_dir_inside_dataset(dir: &Path, what: &str) -> Result<(), OutputError> {
    // A name inside `dir` is inside a dataset exactly when `dir` is one or lies in one.
    refuse_inside_dataset(&dir.join(schema::MANIFEST_FILE), what).map_err(|e| match e {
        OutputError::Invalid { message, .. } => OutputError::Invalid {
            path: dir.display().to_string(),
            message,
        },
        other => other,
    })
}

/// A dataset that cannot be opened, verified or read. Messages name the directory or
/// the file.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// A directory that holds no dataset (`check`, `summarize`, `map`, `report`, `replay`).
    #[error(
        "{dir}: no dataset here (no {manifest} and no shard=K/part-*.parquet files); give the \
         --out DIR of a sweep"
    )]
    NoDataset { dir: String, manifest: &'static str },
    /// A dataset that is not complete and clean, refused by a reader; `bad` holds the
    /// part files found untrustworthy, each with why.
    #[error(
        "{dir}: {reasons}. Run `metachron check {dir}` for the details, or pass \
         --allow-incomplete to use what is there"
    )]
    Refused {
        dir: String,
        reasons: String,
        bad: Vec<(PathBuf, Defect)>,
    },
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A file of the dataset that cannot be read or written (the message names it).
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// What a dataset must hold, as its sweep plans it: what every part must be and which
/// point ids the whole must have.
pub trait Planner {
    /// The planner's own errors; the room's convert into them.
    type Error: From<DatasetError>;

    /// The sweep's name, as the health report names it.
    fn sweep_name(&self) -> &str;

    /// What a part of this sweep must be (the manifest adds its layout and backend).
    fn expected(&self) -> Result<Expected, Self::Error>;

    /// Whether the planned ids depend on the rows (refinement, adaptive repeats): then
    /// [`Planner::planned`] is given the good parts' rows.
    fn needs_rows(&self) -> bool {
        false
    }

    /// The ids the dataset must hold; `rows`: the good parts' rows when
    /// [`Planner::needs_rows`].
    fn planned(&self, expected: &Expected, rows: Option<&Rows>) -> Result<Planned, Self::Error>;
}

/// How [`Dataset::verify`] checks and what it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Trust parts whose verification is recorded and unchanged since (the readers'
    /// fast path); `false`: read every byte of every part.
    pub use_cache: bool,
    /// Refuse a dataset that is not complete and clean ([`DatasetError::Refused`]);
    /// `false`: accept it, its good parts only, with the reasons in
    /// [`Verified::incomplete`].
    pub require_complete: bool,
}

impl VerifyOptions {
    /// How a reader verifies: through the cache, refusing a dataset that is not complete
    /// and clean unless `allow_incomplete`.
    pub fn reader(allow_incomplete: bool) -> VerifyOptions {
        VerifyOptions {
            use_cache: true,
            require_complete: !allow_incomplete,
        }
    }

    /// How `metachron check` verifies: every byte, nothing refused (the findings are
    /// its report).
    pub fn full() -> VerifyOptions {
        VerifyOptions {
            use_cache: false,
            require_complete: false,
        }
    }
}

/// An opened dataset: its directory and its manifest.
#[derive(Debug, Clone)]
pub struct Dataset {
    dir: PathBuf,
    manifest: Manifest,
}

impl Dataset {
    /// Open the dataset in `dir` by reading its manifest. A directory without a manifest
    /// and parts holds no dataset; parts without a manifest are a dataset of the format
    /// before manifests, and a manifest of another format version is refused with both
    /// versions named.
    pub fn open(dir: impl AsRef<Path>) -> Result<Dataset, DatasetError> {
        let dir = dir.as_ref();
        let manifest = verify::manifest_of(dir)?.ok_or_else(|| DatasetError::NoDataset {
            dir: dir.display().to_string(),
            manifest: schema::MANIFEST_FILE,
        })?;
        Ok(Dataset {
            dir: dir.to_path_buf(),
            manifest,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Check every candidate part against the manifest and `plan`, judge the whole as
    /// `metachron check` judges it, and refuse it unless it is complete and clean (when
    /// `opts.require_complete`).
    pub fn verify<P: Planner>(self, plan: &P, opts: VerifyOptions) -> Result<Verified, P::Error> {
        let exp = plan.expected()?;
        let mut cache = opts
            .use_cache
            .then(|| verify::VerifyCache::load(&self.dir, &self.manifest));
        let scan = verify::scan_with(&self.dir, &exp, cache.as_mut())?;
        if let Some(c) = &cache {
            c.save(&self.dir);
        }
        let rows = match plan.needs_rows() {
            true => {
                Some(rows::read_parts(&self.dir, &scan.good_paths()).map_err(DatasetError::from)?)
            }
            false => None,
        };
        let planned = plan.planned(&exp, rows.as_ref())?;
        let health = health::health(
            &self.dir,
            &self.manifest,
            plan.sweep_name(),
            &scan,
            &planned,
        );
        let problems = health.problems();
        if !problems.is_empty() && opts.require_complete {
            return Err(DatasetError::Refused {
                dir: self.dir.display().to_string(),
                reasons: problems.join("; "),
                bad: scan.bad,
            }
            .into());
        }
        let incomplete = (!problems.is_empty()).then(|| {
            format!(
                "{} of {} planned points read; {}",
                health.rows,
                health.points,
                problems.join("; ")
            )
        });
        Ok(Verified {
            dir: self.dir,
            manifest: self.manifest,
            scan,
            health,
            incomplete,
            rows,
        })
    }
}

/// A dataset judged whole: what was found, and the way to its good parts' rows.
#[derive(Debug)]
pub struct Verified {
    dir: PathBuf,
    pub manifest: Manifest,
    pub scan: Scan,
    pub health: Health,
    /// Why it is not complete and clean (only when verified without
    /// `require_complete`).
    pub incomplete: Option<String>,
    /// The good parts' rows, when the plan already read them.
    rows: Option<Rows>,
}

impl Verified {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The good parts' rows as one table (taken from the plan when it read them, read
    /// otherwise).
    pub fn rows(&mut self) -> Result<Rows, DatasetError> {
        match self.rows.take() {
            Some(rows) => Ok(rows),
            None => Ok(rows::read_parts(&self.dir, &self.scan.good_paths())?),
        }
    }
}
