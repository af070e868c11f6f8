//! Outputs: PNG pictures and maps, GIF animations, the HTML report (Parquet tables are
//! [`crate::parquet`]; the sweep dataset format lives in [`crate::dataset`]).

pub mod animate;
pub mod bench;
pub mod compose;
pub mod map;
pub mod plots;
pub mod report;
