//! Outputs: Parquet tables, PNG pictures and maps (the sweep dataset format lives in
//! [`crate::sweep::dataset`]).

pub mod bench;
pub mod map;
pub mod parquet;
pub mod plots;
