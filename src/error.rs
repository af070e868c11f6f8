//! Library errors, layered: parameter errors, solver errors, output errors.

use thiserror::Error;

use crate::input_keys::did_you_mean;

/// A number as people read it in a message: 0.5, 50, 1e-300, 1e18 (never 300 digits).
pub fn num(x: &f64) -> String {
    let a = x.abs();
    if *x == 0.0 || !x.is_finite() || (1e-4..1e6).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A parameter (or override) that cannot be used.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ParamError {
    #[error("unknown parameter `{name}`{}", did_you_mean(.suggestions))]
    UnknownKey {
        name: String,
        /// The known parameters closest to `name`, when any is close enough to be a typo.
        suggestions: Vec<String>,
    },
    #[error("parameter `{field}` = {} is out of range: allowed is {allowed}", num(.value))]
    OutOfRange {
        field: String,
        value: f64,
        allowed: String,
    },
    #[error("parameter `{field}` = {} is out of range: allowed is {allowed}", num(.value))]
    NotInteger {
        field: String,
        value: f64,
        allowed: String,
    },
    #[error(
        "parameter `{field}` has {len} entries but n_legs = {n_legs}: one per leg is required"
    )]
    WrongLength {
        field: String,
        len: usize,
        n_legs: usize,
    },
    #[error("parameter `{field}`: cannot read `{value}`, expected {expected}")]
    BadValue {
        field: String,
        value: String,
        expected: String,
    },
    #[error("`{0}` is not an assignment: write key=value")]
    BadAssignment(String),
    /// A value computed from several parameters (or settings) that the model cannot use.
    #[error("{0}")]
    Derived(Box<DerivedValue>),
}

/// A derived value out of its range: what it is, what it breaks, what to change.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{field} = {} is out of range: allowed is {allowed}; otherwise {breaks}: {change}", num(.value))]
pub struct DerivedValue {
    pub field: String,
    pub value: f64,
    pub allowed: String,
    pub breaks: String,
    pub change: String,
    /// The parameters it is computed from.
    pub inputs: Vec<&'static str>,
}

impl ParamError {
    /// The parameter (or derived value) the error is about.
    pub fn field(&self) -> &str {
        match self {
            ParamError::OutOfRange { field, .. }
            | ParamError::NotInteger { field, .. }
            | ParamError::WrongLength { field, .. }
            | ParamError::BadValue { field, .. } => field,
            ParamError::Derived(d) => &d.field,
            ParamError::UnknownKey { name: k, .. } | ParamError::BadAssignment(k) => k,
        }
    }

    /// The parameters whose values caused it (one, or a derived value's inputs).
    pub fn inputs(&self) -> Vec<&str> {
        match self {
            ParamError::Derived(d) => d.inputs.clone(),
            other => vec![other.field()],
        }
    }
}

/// Failure of a run setting (not a model parameter).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SettingsError {
    #[error("setting `{field}` = {} is out of range: allowed is {allowed}", num(.value))]
    OutOfRange {
        field: String,
        value: f64,
        allowed: String,
    },
}

/// Failures of an engine that stop it before it can report a status (a run that
/// diverges, fails or exceeds its budget is a [`crate::sample::Status`], not an error).
/// Cloneable: one device failure is reported in every instance of its batch.
#[derive(Debug, Error, Clone)]
pub enum SolverError {
    #[error("reference solver could not be set up: {0}")]
    Setup(#[source] diffsol::error::DiffsolError),
    #[error("step failed at t = {time}: {message}")]
    StepFailed { time: f64, message: String },
    /// A GPU failure, kept typed (downcast the source to `gpu::GpuError`).
    #[error("GPU backend: {0}")]
    Gpu(#[source] std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>),
    /// A run setting the engine does not offer (refused before the run starts).
    #[error("{what} is not supported on backend {backend}")]
    Unsupported { what: String, backend: String },
}

impl SolverError {
    /// A GPU failure described by text only (no typed cause).
    pub fn gpu(message: impl Into<String>) -> SolverError {
        SolverError::Gpu(std::sync::Arc::new(GpuMessage(message.into())))
    }
}

/// A GPU failure that has only a message.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct GpuMessage(pub String);

/// Failures while writing or reading outputs.
#[derive(Debug, Error)]
pub enum OutputError {
    #[error("i/o error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("parquet error on {path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("arrow error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("plot error on {path}: {message}")]
    Plot { path: String, message: String },
    /// A file that is readable but not what it should be (a foreign table, a column
    /// of the wrong type).
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}
