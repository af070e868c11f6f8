//! Contact events of the reference: the locator finds analytic crossing times,
//! the hysteresis band holds a contact until its gap falls to −δ, and the grazing point
//! (which stalls a solver without events) runs through and agrees with the fixed-step engine
//! under either scheme.

use crate::common;

use common::validation::disagreements_within;
use metachron::batch::{run_point, Engine};
use metachron::integrate::accuracy::Tolerances;
use metachron::integrate::dkd::Scheme;
use metachron::integrate::events::{DenseStep, Switching};
use metachron::model::contact::gap;
use metachron::model::{ContactMode, Robot};
use metachron::params::Params;
use metachron::reference::{run_reference, ReferenceSettings};
use metachron::sample::SolverFailure;
use metachron::sample::{Deadline, Sample, SampleTimes};
use metachron::simulate::RunConfig;

/// A free fall of leg 3's tip from X_t − d (quadratic in t, which the step's cubic
/// Hermite interpolant reproduces exactly) and a body turning at a constant rate.
#[test]
fn the_locator_finds_analytic_crossing_times() {
    let robot = Robot::new(&Params::default());
    let (x_t, g) = (robot.p.x_t, 9.81);
    let (mut q0, v0) = robot.initial_state();
    let nq = robot.nq();
    let tip = 2 * robot.leg_dofs + robot.idx.a(robot.idx.tip());
    let d = 1e-3;
    q0[tip] = x_t - d;
    let h = 0.02;
    let (mut q1, mut v1) = (q0.clone(), v0.clone());
    q1[tip] = q0[tip] + 0.5 * g * h * h;
    v1[tip] = g * h;
    let mut v0f = v0.clone();
    v0f[tip] = 0.0;
    let mode = ContactMode::of_state(&robot, &q0);
    assert!(!mode.get(&robot, 2));
    let sw = Switching::new(1e-8);
    let step = DenseStep {
        q0: &q0,
        v0: &v0f,
        q1: &q1,
        v1: &v1,
        h,
    };
    let mut scratch = vec![0.0; nq];
    let (k, s) = sw
        .first_crossing(&robot, &mode, &step, None, &mut scratch)
        .expect("the tip crosses X_t");
    let t_exact = (2.0 * d / g).sqrt();
    assert_eq!(k, 2);
    assert!((s * h - t_exact).abs() < 1e-12, "{} vs {t_exact}", s * h);

    // Body point P₁ reaches the terrain as the body turns at rate w: x_P(t) = X_b +
    // cos(wt)·o_x − sin(wt)·o_y with the body lowered so that it touches at θ = −0.1.
    let (mut b0, bv) = robot.initial_state();
    let o = robot.n_legs * robot.leg_dofs;
    let off = robot.body.p_points[0];
    let theta_hit: f64 = -0.1;
    b0[o] = x_t - (theta_hit.cos() * off[0] - theta_hit.sin() * off[1]);
    // Keep every tip clear of the terrain.
    for i in 0..robot.n_legs {
        b0[i * robot.leg_dofs + robot.idx.a(robot.idx.tip())] = 0.0;
    }
    let w = -1.0;
    let h = 0.2;
    let (mut bv0, mut b1) = (bv.clone(), b0.clone());
    bv0[o + 2] = w;
    b1[o + 2] = w * h;
    let mode = ContactMode::of_state(&robot, &b0);
    assert!(gap(&robot, &b0, robot.n_legs) < 0.0 && gap(&robot, &b1, robot.n_legs) > 0.0);
    let step = DenseStep {
        q0: &b0,
        v0: &bv0,
        q1: &b1,
        v1: &bv0,
        h,
    };
    let (k, s) = sw
        .first_crossing(&robot, &mode, &step, None, &mut scratch)
        .expect("P1 crosses X_t");
    assert_eq!(k, robot.n_legs);
    assert!((s * h - theta_hit / w).abs() < 1e-10, "{}", s * h);
}

#[test]
fn a_contact_is_released_only_past_the_band() {
    let robot = Robot::new(&Params::default());
    let (q, v) = robot.initial_state();
    // Legs 1, 5, 9 start on the terrain (gap 0): in contact.
    let mode = ContactMode::of_state(&robot, &q);
    assert!(mode.get(&robot, 0) && mode.get(&robot, 4) && !mode.get(&robot, 1));
    let atol = 1e-8;
    let sw = Switching::new(atol);
    let tip = robot.idx.a(robot.idx.tip());
    let mut scratch = vec![0.0; robot.nq()];
    let lift = |dx: f64| {
        let mut q1 = q.clone();
        q1[tip] += dx;
        q1
    };
    // Lifted by half the band: no event. By twice the band: the release at half the step
    // (with the constant velocity dx/h at both ends the interpolant is linear).
    let delta = sw.release;
    for (dx, expect) in [(-0.5 * delta, None), (-2.0 * delta, Some(0.5))] {
        let q1 = lift(dx);
        let h = 1e-3;
        let mut vv = v.clone();
        vv[tip] = dx / h;
        let step = DenseStep {
            q0: &q,
            v0: &vv,
            q1: &q1,
            v1: &vv,
            h,
        };
        let found = sw.first_crossing(&robot, &mode, &step, None, &mut scratch);
        match expect {
            None => assert!(found.is_none(), "{found:?}"),
            Some(s) => {
                let (k, sf) = found.expect("released");
                assert_eq!(k, 0);
                // The gaps (1e-10 m) are differences of coordinates near 1 m: s is
                // resolved to ~1e-6.
                assert!((sf - s).abs() < 1e-5, "{sf}");
            }
        }
    }
}

fn grazing_point() -> RunConfig {
    let mut cfg = RunConfig::default();
    for o in ["k_p=50", "actuated=1,0,1,0,1,0,1,0,1", "t_final=10"] {
        cfg.params.apply_override(o).unwrap();
    }
    cfg.validate().unwrap();
    cfg
}

/// The grazing point: passive leg 4's tip grazes the terrain near t = 5.8 s (it
/// crossed X_t 34 times within 0.3 s on the cpu engine); a reference without contact
/// events stops there with `solver_failed`. About 70 s of one core.
#[test]
#[ignore = "long (the full suite runs it): a 10-s grazing run on the reference, ~1.5 min of one core"]
fn the_grazing_point_runs_through_and_matches_the_cpu_engine() {
    let cfg = grazing_point();
    let r = run_point(&cfg, &Engine::Reference, false, |_| {}).unwrap();
    assert!(r.metrics.status.is_ok(), "{:?}", r.metrics.status);
    assert!(
        r.stats.contact_events > 100,
        "{} events",
        r.stats.contact_events
    );
    // Walking metrics to 5e-3 and phase-like ones to 3e-3: the grazing makes them
    // sensitive beyond the scheme's error (cpu mean speed at h = 2.38e-4, 2e-4, 1.2e-4,
    // 6e-5: 0.137991, 0.138432, 0.138015, 0.137896 m/s, reference 0.138312; min PLV at
    // h = auto, 2e-4, 1.25e-4, 6.25e-5, 3.125e-5: 0.740588, 0.740451, 0.742702, 0.740224,
    // 0.742291 with the touchdown correction and 0.741678, 0.741920, 0.740472, 0.740830,
    // 0.742834 without it, reference 0.742313; 2026-12-03). Each scheme at its own default
    // step, which is what a run takes: under implicit bending the mean speed scatters
    // wider with the step (0.138242 at its 6.25e-4 s, 0.137180 at 2.5e-4 s;
    // docs/integrators.md, "Grazing contact").
    let mut bad = Vec::new();
    for scheme in [Scheme::DkdDc, Scheme::ImplicitBending] {
        let mut at = cfg.clone();
        at.fixed_step.scheme = scheme;
        let c = run_point(&at, &Engine::Cpu, false, |_| {}).unwrap();
        bad.extend(disagreements_within(
            &format!("grazing point, {}", scheme.name()),
            &c.metrics,
            &r.metrics,
            Tolerances {
                walk_rel: 5e-3,
                phase_abs: 3e-3,
            },
        ));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Soft legs (K_M = 5) break down at t ≈ 4.36 s (docs/model.md: a stiff solver stalls after a
/// few seconds); with contact events the run still stops there, and says why. About 40 s
/// of one core.
#[test]
#[ignore = "long (the full suite runs it): soft legs on the reference until they stall at 4.4 s, ~50 s of one core"]
fn soft_legs_still_fail_and_say_why() {
    let mut cfg = RunConfig::default();
    cfg.params.k_m = 5.0;
    cfg.params.t_final = 5.0;
    let r = run_point(&cfg, &Engine::Reference, false, |_| {}).unwrap();
    let s = r.metrics.status;
    assert_eq!(s.failure(), Some(SolverFailure::Stalled), "{s:?}");
    assert!(s.time() > 4.0 && s.time() < 4.7, "{s:?}");
}

/// Studies and probes: run by hand (`--ignored`), not by the suite.
mod study {
    use super::*;

    /// Convergence through the grazing episode (5.7–6.0 s) as the tolerance (and the
    /// hysteresis band δ = 0.01·atol with it) tightens: the state at 6.5 s. The 10-s metrics
    /// of this point are no good measure of it: it is sensitive at the 1e-3 level (the cpu
    /// engine's displacement moves by ~2e-3 between steps h, h/2, h/4, h/8, without trend).
    /// A few minutes: `cargo test --release --test suite contact_events::study -- --ignored`.
    #[test]
    #[ignore]
    fn the_grazing_passage_converges_as_the_tolerance_tightens() {
        let mut p = grazing_point().params;
        p.t_final = 6.5;
        let robot = Robot::new(&p);
        let states: Vec<(Vec<f64>, usize)> = [1e-4, 1e-5, 1e-6]
            .iter()
            .map(|&rtol| {
                let s = ReferenceSettings {
                    rtol,
                    atol: rtol * 1e-3,
                    ..ReferenceSettings::default()
                };
                let mut last = Vec::new();
                let run = run_reference(
                    &robot,
                    &s,
                    &SampleTimes::new(p.t_final, p.t_final, 1),
                    Deadline::NONE,
                    |x: &Sample| last = x.q.clone(),
                    |_| {},
                )
                .unwrap();
                assert!(run.status.is_ok(), "rtol {rtol}: {:?}", run.status);
                (last, run.stats.contact_events)
            })
            .collect();
        let dist = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max)
        };
        let coarse = dist(&states[0].0, &states[2].0);
        let fine = dist(&states[1].0, &states[2].0);
        eprintln!(
            "max |Δq| at 6.5 s against rtol 1e-6: rtol 1e-4 {coarse:.3e}, rtol 1e-5 {fine:.3e}; events {:?}",
            states.iter().map(|s| s.1).collect::<Vec<_>>()
        );
        assert!(fine < 0.5 * coarse, "{fine} vs {coarse}");
    }
}
