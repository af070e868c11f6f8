//! metachron: parameter-sweep engine for planar robots on elastic (Hermite FE) legs.
//!
//! Layout: [`params`] (every model parameter), [`model`] (FE matrices, forces,
//! accelerations), [`reference`] (the stiff adaptive CPU solver), [`metrics`]
//! (coordination and locomotion metrics), [`output`] (Parquet and pictures).

pub mod error;
pub mod model;
pub mod params;

pub use error::{OutputError, ParamError, SolverError};
pub use params::Params;

/// Version written into every output file.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub mod batch;
pub mod bench;
pub mod cost;
pub mod cpu_engine;
pub mod gpu;
pub mod input_file;
pub mod integrate;
pub mod metrics;
pub mod output;
pub mod reference;
pub mod sample;
pub mod simulate;
pub mod sweep;
