//! The reference solver: the paper's robot walks, and metachron's structured ESDIRK
//! agrees with diffsol's general-purpose BDF on the same equations.

use metachron::batch::{run_point, Engine};
use metachron::metrics::Class;
use metachron::model::Robot;
use metachron::params::Params;
use metachron::reference::{run_reference, Method, ReferenceSettings};
use metachron::sample::{Deadline, Sample, SampleTimes, SolverFailure};
use metachron::simulate::RunConfig;

#[test]
#[ignore = "long (the full suite runs it): the paper's run on the reference, ~20 s of one core"]
fn papers_run_walks_forward_with_a_quarter_period_lag() {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 10.0;
    cfg.solver.rtol = 1e-4;
    cfg.solver.atol = 1e-7;
    let r = run_point(&cfg, &Engine::Reference, false, |_| {}).unwrap();
    let m = &r.metrics;
    assert!(m.status.is_ok(), "{:?}", m.status);
    assert_eq!(m.class, Class::Metachronal);
    // Forward is +y (legs turn clockwise and push back on the ground).
    assert!(m.displacement > 1.0, "displacement {}", m.displacement);
    assert!(m.mean_speed > 0.1, "speed {}", m.mean_speed);
    let lag_deg = m.mean_lag.to_degrees();
    assert!((lag_deg - 90.0).abs() < 10.0, "mean lag {lag_deg}°");
    assert!(m.lag_order > 0.95 && m.min_plv > 0.95);
    // Legs turn at about ω = 0.5 rad/s.
    assert!(
        (m.mean_frequency - 0.5).abs() < 0.05,
        "Ω {}",
        m.mean_frequency
    );
    assert!(
        m.max_inextensibility < 1e-5,
        "inext {}",
        m.max_inextensibility
    );
    assert!(m.duty_factor > 0.05 && m.duty_factor < 0.8);
    assert!(m.work > 0.0 && m.cost_of_transport.is_finite());
}

/// Final generalised coordinates of a short run with the given method.
fn final_state(p: &Params, method: Method, rtol: f64) -> Vec<f64> {
    let r = Robot::new(p);
    let s = ReferenceSettings {
        method,
        rtol,
        atol: rtol * 1e-2,
        ..ReferenceSettings::default()
    };
    let mut last = Vec::new();
    let run = run_reference(
        &r,
        &s,
        &SampleTimes::new(p.t_final, p.t_final, 1),
        Deadline::NONE,
        |smp: &Sample| last = smp.q.clone(),
        |_| {},
    )
    .unwrap();
    assert!(run.status.is_ok(), "{method:?}: {:?}", run.status);
    last
}

#[test]
fn structured_esdirk_agrees_with_diffsol_bdf() {
    // Short horizon through the start-up transient and first contacts; passive leg 2
    // and a detuned leg so that every term is exercised.
    let mut p = Params {
        t_final: 0.15,
        ..Params::default()
    };
    p.apply_override("actuated=1,0,1,1,1,1,1,1,1").unwrap();
    let ours = final_state(&p, Method::Esdirk34, 1e-8);
    let theirs = final_state(&p, Method::DiffsolBdf, 1e-8);
    let diff = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let moved = ours
        .iter()
        .zip(Robot::new(&p).initial_state().0)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(moved > 1e-3, "the robot moved {moved}");
    assert!(diff < 1e-5, "max |Δq| between solvers = {diff}");
}

#[test]
fn a_point_the_model_cannot_follow_is_reported_with_its_time() {
    // Legs with neither bending stiffness nor inextensibility collapse under the servo:
    // the reference must stop early with a status and the time, not run on or panic.
    let mut cfg = RunConfig::default();
    cfg.params.k_m = 1e-6;
    cfg.params.lambda = 1e-6;
    cfg.params.t_final = 0.5;
    let r = run_point(&cfg, &Engine::Reference, false, |_| {}).unwrap();
    let m = &r.metrics;
    assert!(!m.status.is_ok(), "{:?}", m.status);
    assert!(m.status.time() > 0.0 && m.status.time() < 0.5);
    // The status names the criterion that fired: the steps collapsed and stayed there.
    assert_eq!(
        m.status.failure(),
        Some(SolverFailure::Stalled),
        "{:?}",
        m.status
    );
    assert!(matches!(m.class, Class::Diverged | Class::Failed));
    // Nothing from the (never reached) window is reported as a number.
    assert!(m.lag_order.is_nan() && m.min_plv.is_nan());
}
