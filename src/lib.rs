//! metachron: parameter-sweep engine for planar robots on elastic (Hermite FE) legs.
//!
//! Layers, lowest first: a module uses modules of its own line (without circles) and of
//! the lines above it, never of a line below (tests/suite/architecture.rs checks it; the
//! binary's `cli` sits on top):
//! - [`params`], [`error`], [`input_file`], [`output_file`], [`input_keys`],
//!   [`vocabulary`]: every model parameter (one table), typed errors, bounded reads of
//!   regular input files, the one way a file is written, unknown keys refused with the
//!   closest allowed one, every column and metric name;
//! - [`model`]: FE matrices, springs, body, contact, the internal couple, accelerations,
//!   energy (the readable statement of the equations);
//! - [`sample`], [`metrics`], [`parquet`]: output samples, the online coordination
//!   metrics and their Parquet tables (fields with units, atomic writes, reads);
//! - [`integrate`]: the ESDIRK reference, the DKD-dc fixed step, the per-instance record
//!   and the SIMD lane kernel; [`reference`]: the reference's entry point;
//! - [`simulate`], [`cpu_engine`], [`gpu`]: one run, the CPU batch engine, the GPU host
//!   and its generated WGSL; [`batch`]: the one place that picks the engine; [`cost`]:
//!   estimates before a run; [`gpu_rate`]: the gpu engine's measured rate on an adapter,
//!   cached, for those estimates; [`bench`];
//! - [`dataset`]: a sweep's dataset on disk, one way through: its manifest, part
//!   writing, verification (checksums, the verification cache, health) and its rows;
//! - [`sweep`]: sweep files, plans, runs (writing through the dataset room), refinement,
//!   replays;
//! - [`output`]: pictures, maps, animations, the report page.

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
pub mod dataset;
pub mod gpu;
pub mod gpu_rate;
pub mod input_file;
pub mod input_keys;
pub mod integrate;
pub mod metrics;
pub mod output;
pub mod output_file;
pub mod parquet;
pub mod reference;
pub mod sample;
pub mod simulate;
pub mod sweep;
pub mod vocabulary;
