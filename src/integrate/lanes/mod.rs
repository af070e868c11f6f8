//! The DKD-dc step in SIMD lanes: W robots of one shape side by side (struct of
//! arrays), one kernel for every width. W = the f64 lanes of the widest vector unit
//! found at run time ([`Isa`]); W = 1 is the solo path (`dkd::integrate`), so the
//! physics is written once, in `kernel.rs`.

// The kernels index several arrays in lockstep by node and row: index loops read
// closer to the equations than zipped iterators here.
#![allow(clippy::needless_range_loop)]

pub mod driver;
pub mod isa;
pub mod kernel;
pub mod model;
pub mod readout;
pub mod simd;
pub mod trig;

pub use driver::{
    run_block, run_block_from, Continue, LaneEnd, LaneJob, LaneOutcome, LaneSink, LaneState,
};
pub use isa::Isa;
