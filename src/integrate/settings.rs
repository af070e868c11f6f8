//! What a reference solve is asked for and what it reports: the settings of the
//! `[solver]` table and the work counters. They belong to neither solver (metachron's
//! ESDIRK in [`super::esdirk`], diffsol's methods in [`crate::reference`]), so both
//! read them from here.

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;

/// Which diffsol method integrates the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// ESDIRK3(4) on the structured reduced Newton system (metachron's own; default).
    Esdirk34,
    /// diffsol's variable-order BDF on the full dense first-order system (cross-check).
    DiffsolBdf,
    /// diffsol's ESDIRK3(4) on the full dense first-order system (cross-check).
    DiffsolEsdirk34,
}

/// Tolerances and limits of the reference solve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReferenceSettings {
    pub method: Method,
    pub rtol: f64,
    pub atol: f64,
    /// Step budget: accepted steps allowed before the run ends as `budget_exceeded`.
    pub max_steps: usize,
    /// Smallest step (s) before the run is reported as `solver_failed`: far below any
    /// time scale the solver must follow on the paper's robot (its smallest steps are
    /// ~1e-6 s), so hitting it means the model has left what an integrator can follow.
    pub min_step: f64,
    /// A run whose last `stall_steps` step attempts were all shorter than `stall_step`
    /// (s) has stalled and is reported as `solver_failed` (a contact switching on or off
    /// shrinks a few steps to ~1e-12 s; a model that has broken down keeps them there).
    pub stall_step: f64,
    pub stall_steps: usize,
    /// Whether the Newton matrix includes the internal couple's ∂Q_A/∂q (exact: Q_A is
    /// linear in q). Off, Newton treats the couple explicitly within each stage
    /// (docs/model.md, "The internal couple", measures both).
    pub couple_in_newton: bool,
}

impl Default for ReferenceSettings {
    fn default() -> Self {
        ReferenceSettings {
            method: Method::Esdirk34,
            rtol: 1e-5,
            atol: 1e-8,
            max_steps: 20_000_000,
            min_step: 1e-13,
            stall_step: 1e-8,
            stall_steps: 2000,
            couple_in_newton: true,
        }
    }
}

impl ReferenceSettings {
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(self.min_step.is_finite() && self.min_step > 0.0) {
            return Err(SettingsError::OutOfRange {
                field: "min_step".into(),
                value: self.min_step,
                allowed: "a finite number > 0 (s)".into(),
            });
        }
        if self.max_steps == 0 {
            return Err(SettingsError::OutOfRange {
                field: "max_steps".into(),
                value: 0.0,
                allowed: "an integer >= 1".into(),
            });
        }
        for (f, v) in [("rtol", self.rtol), ("atol", self.atol)] {
            if !(v.is_finite() && v > 0.0 && v < 1.0) {
                return Err(SettingsError::OutOfRange {
                    field: f.into(),
                    value: v,
                    allowed: "0 < tol < 1".into(),
                });
            }
        }
        Ok(())
    }
}

/// Work counters of one reference solve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SolverStats {
    pub steps: usize,
    pub rejected_steps: usize,
    pub rhs_evals: usize,
    pub jacobian_evals: usize,
    pub lu_factorizations: usize,
    pub newton_iterations: usize,
    pub newton_failures: usize,
    /// Contact switches located and stepped to (tips and body points; esdirk34 only).
    pub contact_events: usize,
    /// Step of a fixed-step backend (s); 0 for the adaptive reference.
    pub fixed_step: f64,
}
