//! Sweeps: a sweep file (a base parameter set plus axes) becomes a plan of points
//! with stable ids, run in chunks whose results are written as the part files of one
//! dataset ([`crate::dataset`]; what each part records: [`record`]) by one process per
//! shard ([`lock`]). A dataset is judged against the plan its sweep makes ([`audit`]);
//! any row can be run again ([`replay`]).

pub mod adaptive;
pub mod atlas;
pub mod audit;
pub mod axis;
pub mod facet;
pub mod input;
pub mod lattice;
pub mod lock;
pub mod plan;
pub mod record;
pub mod refine;
pub mod repeats;
pub mod replay;
pub mod rng;
pub mod run;
pub mod setup;
pub mod spec;
pub mod summary;

pub use axis::{Axis, AxisKind};
pub use plan::{Plan, PlannedPoint, Shard};
pub use spec::SweepSpec;

use crate::cost::OverLimit;
use crate::dataset::{DatasetError, ManifestError};
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
    Manifest(#[from] ManifestError),
    /// A run option that cannot be used (named as the command line spells it).
    #[error("{0}")]
    Argument(String),
    /// A point whose cost cannot be estimated (its derived values no engine can use).
    #[error("{point}")]
    Estimate {
        point: String,
        #[source]
        source: ParamError,
    },
    #[error(transparent)]
    OverLimit(#[from] OverLimit),
    /// A dataset that cannot be opened, verified or read.
    #[error(transparent)]
    Data(#[from] DatasetError),
}
