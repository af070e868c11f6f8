//! Time integrators: the structured stiff reference (ESDIRK) with its linear algebra,
//! and the fixed-step DKD-dc scheme of the batch engines.

pub mod accuracy;
pub mod bordered_band;
pub mod continuation;
pub mod dkd;
pub mod esdirk;
pub mod events;
pub mod lanes;
pub mod record;
pub mod schedule;
pub mod settings;
