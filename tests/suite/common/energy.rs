//! The setting in which the model's total energy is conserved, shared by the energy
//! checks: the paper's robot without dissipation (ζ = ν = μ = 0) and without servos
//! (K_p = 0), run on the reference at tight tolerances.

use metachron::model::Robot;
use metachron::params::Params;
use metachron::reference::{run_reference, ReferenceSettings};
use metachron::sample::{Deadline, Sample, SampleTimes};

/// Run that robot with `overrides` applied for 0.3 s, a sample every 0.01 s; `each`
/// sees the robot and every sample. The run must end ok.
pub fn run_without_dissipation(overrides: &[&str], mut each: impl FnMut(&Robot, &Sample)) {
    let mut p = Params {
        zeta: 0.0,
        nu: 0.0,
        k_p: 0.0,
        mu: 0.0,
        t_final: 0.3,
        ..Params::default()
    };
    for o in overrides {
        p.apply_override(o).unwrap();
    }
    let r = Robot::new(&p);
    let settings = ReferenceSettings {
        rtol: 1e-9,
        atol: 1e-11,
        ..ReferenceSettings::default()
    };
    let times = SampleTimes::new(0.01, p.t_final, 30);
    let run = run_reference(
        &r,
        &settings,
        &times,
        Deadline::NONE,
        |s: &Sample| each(&r, s),
        |_| {},
    )
    .unwrap();
    assert!(run.status.is_ok());
}
