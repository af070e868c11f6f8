//! Outputs: Parquet tables and PNG pictures.

pub mod parquet;
pub mod plots;
