//! Sweeps: a sweep file (a base parameter set plus axes) becomes a plan of points
//! with stable ids, run in chunks whose results are written as the part files of one
//! Parquet dataset ([`dataset`], names in [`schema`]) that its manifest describes
//! ([`manifest`]), checked before it is trusted ([`verify`], [`audit`]) and written by
//! one process per shard ([`lock`]); any row can be run again ([`replay`]).

pub mod adaptive;
pub mod atlas;
pub mod audit;
pub mod axis;
pub mod dataset;
pub mod input;
pub mod lattice;
pub mod lock;
pub mod manifest;
pub mod plan;
pub mod refine;
pub mod repeats;
pub mod replay;
pub mod rng;
pub mod run;
pub mod schema;
pub mod spec;
pub mod summary;
pub mod verify;

pub use axis::{Axis, AxisKind};
pub use plan::{Plan, PlannedPoint, Shard};
pub use spec::SweepSpec;

use crate::error::{OutputError, ParamError};
use crate::input_keys::UnknownKey;
use crate::simulate::ConfigError;

/// A sweep file, plan or run that cannot be used. Messages name the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{file}: {message}")]
    Toml { file: String, message: String },
    #[error("{file}: `{key}`: {message}")]
    Key {
        file: String,
        key: String,
        message: String,
    },
    /// A key that no table of a sweep file takes, with the closest one that it does.
    #[error("{file}: {source}")]
    UnknownKey {
        file: String,
        #[source]
        source: Box<UnknownKey>,
    },
    /// A parameter that cannot be used, at `key` (`base.alphaa`, `axes[1].param`).
    #[error("{file}: `{key}`: {source}")]
    Param {
        file: String,
        key: String,
        #[source]
        source: ParamError,
    },
    /// A configuration error at `context` in `file` (the file and the place inside it
    /// said once: the cause's own place is left out of the message).
    #[error("{file}: {context}: {}", cause.detail())]
    Config {
        file: String,
        context: String,
        cause: Box<ConfigError>,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Shard(String),
    #[error("{0}")]
    Dataset(String),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    /// A directory that holds no dataset (`check`, `summarize`, `map`, `report`, `replay`).
    #[error(
        "{dir}: no dataset here (no {manifest} and no shard=K/part-*.parquet files); give the \
         --out DIR of a sweep"
    )]
    NoDataset { dir: String, manifest: &'static str },
    /// A dataset that `check` would not pass, refused by a reader.
    #[error(
        "{dir}: {reasons}. Run `metachron check {dir}` for the details, or pass \
         --allow-incomplete to use what is there"
    )]
    Refused { dir: String, reasons: String },
}
