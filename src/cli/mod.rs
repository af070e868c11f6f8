pub mod atlas;
pub mod bench;
pub mod check;
pub mod gpu;
pub mod map;
pub mod simulate;
pub mod summarize;
pub mod sweep;
