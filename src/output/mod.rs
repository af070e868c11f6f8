//! Outputs: Parquet tables, PNG pictures and maps, GIF animations, the HTML report (the sweep dataset format lives in
//! [`crate::sweep::dataset`]).

pub mod animate;
pub mod bench;
pub mod map;
pub mod parquet;
pub mod plots;
pub mod report;
