pub mod gpu;
pub mod simulate;
