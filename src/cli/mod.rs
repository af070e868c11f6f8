pub mod atlas;
pub mod gpu;
pub mod map;
pub mod simulate;
pub mod sweep;
pub mod summarize;
