//! The GPU batch engine: thousands of independent robot instances advanced by WGSL
//! compute shaders (through wgpu), state resident on the device, only per-instance
//! metrics read back.
//!
//! [`device`] finds and opens an adapter (kept apart from the computation so tests can
//! bring their own); [`handle`] is the [`Gpu`] a caller passes down: its options, and the
//! device and engine opened from them on first use; [`instance`] (per-instance constants, from the parameter table),
//! [`tally`] (state slots and metric running sums) and [`layout`] define what host and
//! shader share; [`kernel`] generates the leg-parallel entry point, [`shader`] assembles
//! and validates the WGSL, [`budget`] reads naga's IR for the static resource budgets;
//! [`engine`] runs batches.

pub mod budget;
pub mod device;
pub mod engine;
pub mod handle;
pub mod instance;
pub mod kernel;
pub mod layout;
pub mod point_budget;
pub mod shader;
pub mod tally;

pub use device::{list_adapters, AdapterSummary, GpuContext, GpuOptions};
pub use engine::{run_gpu_batch, GpuEngine};
pub use handle::{Gpu, NoticeSink};

/// Floating-point type of the shader's `real`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    F64,
    F32,
}

impl Precision {
    pub fn label(&self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }
}

/// Precision request: `auto` = f64 where the adapter runs it fast (`device::auto_precision`),
/// else the compensated f32 kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PrecisionChoice {
    #[default]
    Auto,
    F64,
    F32,
}

/// What can go wrong on the GPU path.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found (wgpu saw none on Vulkan); install a Vulkan driver (e.g. `apt-get install mesa-vulkan-drivers` for the lavapipe CPU adapter) or use --backend cpu")]
    NoAdapter,
    #[error("no adapter matches --adapter {wanted:?}; available: {available}")]
    AdapterNotFound { wanted: String, available: String },
    #[error("adapter {adapter} lacks SHADER_F64; use --gpu-precision f32 or auto")]
    NoF64 { adapter: String },
    #[error("cannot open device on {adapter}: {message}")]
    Device { adapter: String, message: String },
    #[error("shader rejected: {0}")]
    Shader(String),
    #[error("GPU execution failed: {0}")]
    Execution(String),
    /// An environment variable that chooses the GPU holds a value it does not take.
    #[error("{variable} = {value:?}: allowed values are {allowed}")]
    Environment {
        variable: &'static str,
        value: String,
        allowed: &'static str,
    },
}

/// Why the GPU cannot be used, kept to be reported by every later use (a [`Gpu`] opens
/// its device once).
pub type GpuUnavailable = std::sync::Arc<GpuError>;
