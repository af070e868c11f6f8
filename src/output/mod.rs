//! Outputs: Parquet tables, sweep datasets, PNG pictures and maps.

pub mod bench;
pub mod dataset;
pub mod map;
pub mod parquet;
pub mod plots;
