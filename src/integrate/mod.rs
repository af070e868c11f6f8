//! Time integrators: the structured stiff reference (ESDIRK) and its linear algebra.

pub mod bordered_band;
pub mod esdirk;
