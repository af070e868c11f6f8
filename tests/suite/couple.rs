//! The internal (axonemal) couple, docs/model.md (A1)–(A6), against independent
//! statements of it: the gradient of its energy, energy conservation on the reference,
//! the reference on every batch engine, the GPU twin, lane independence in SIMD blocks,
//! and the paper's run, which its default (f_A = 0) leaves as it was.

use crate::common;

use common::energy::run_without_dissipation;
use common::validation::{assert_lanes_independent, disagreements, point, run_engines};
use metachron::batch::Engine;
use metachron::model::axoneme::{couple_energy, couple_force, phase, CoupleMatrices};
use metachron::model::Robot;
use metachron::params::Params;
use metachron::simulate::RunConfig;

/// A bent, stretched, slanted leg state (every curvature term non-zero).
fn bent_leg(robot: &Robot) -> Vec<f64> {
    let (q, _) = robot.initial_state();
    let mut leg = robot.leg(&q, 1).to_vec();
    for (k, x) in leg.iter_mut().enumerate() {
        *x += 0.07 * (1.3 * k as f64 + 0.4).sin();
    }
    leg
}

fn couple_params(extra: &[&str]) -> Params {
    let mut p = Params::default();
    for o in ["axo_f=350", "axo_omega=3", "n_nodes=6"]
        .iter()
        .chain(extra)
    {
        p.apply_override(o).unwrap();
    }
    p.validate().unwrap();
    p
}

#[test]
fn couple_force_is_minus_the_gradient_of_the_couple_energy() {
    for extra in [
        &[][..],
        &["axo_k=2.5", "axo_dphi=40deg"][..],
        &["axo_k=-7"][..],
    ] {
        let p = couple_params(extra);
        let robot = Robot::new(&p);
        let leg = bent_leg(&robot);
        let t = 0.83;
        let mut qa = vec![0.0; leg.len()];
        couple_force(&robot.p, 1, &leg, t, &mut qa);
        let scale = qa.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        assert!(scale > 1.0, "{extra:?}: the couple does act ({scale})");
        // E_A is quadratic in q: central differences are exact up to round-off.
        let d = 1e-4;
        for j in 0..leg.len() {
            let (mut up, mut down) = (leg.clone(), leg.clone());
            up[j] += d;
            down[j] -= d;
            let grad = (couple_energy(&robot.p, 1, &up, t) - couple_energy(&robot.p, 1, &down, t))
                / (2.0 * d);
            assert!(
                (qa[j] + grad).abs() <= 1e-8 * scale,
                "{extra:?} unknown {j}: Q_A {} vs -dE/dq {}",
                qa[j],
                -grad
            );
        }
        // The kernels' matrix form gives the same force.
        let mut qm = vec![0.0; leg.len()];
        let amp = p.axo_f;
        CoupleMatrices::new(&p).add_force(amp, phase(&p, 1, t), &leg, &mut qm);
        for j in 0..leg.len() {
            assert!(
                (qm[j] - qa[j]).abs() <= 1e-12 * scale,
                "{extra:?} unknown {j}: matrices {} vs quadrature {}",
                qm[j],
                qa[j]
            );
        }
    }
}

#[test]
fn a_masked_leg_feels_no_couple() {
    let p = couple_params(&["axo_actuated=every_other"]);
    let robot = Robot::new(&p);
    let leg = bent_leg(&robot);
    let mut qa = vec![0.0; leg.len()];
    couple_force(&robot.p, 1, &leg, 0.5, &mut qa);
    assert!(qa.iter().all(|&x| x == 0.0));
    couple_force(&robot.p, 2, &leg, 0.5, &mut qa);
    assert!(qa.iter().any(|&x| x != 0.0));
}

/// With ω_A = 0 the couple is a fixed preferred curvature: kinetic + bending + springs +
/// gravity + contact + penalty + E_A is conserved without dissipation and actuation.
/// Over 0.15 s: E_A has made its whole change by then (13.6 J, the same over 0.3 s) and the
/// kinetic energy reaches 6.4 J; the drift is 9e-6 J (1.7e-5 J over 0.3 s, at 2.1× the
/// cost; 2026-12-07).
#[test]
#[ignore = "long (the full suite runs it): an energy balance on the reference at tight tolerances, ~65 s of one core"]
fn energy_with_a_static_couple_is_conserved_on_the_reference() {
    let (mut totals, mut couple) = (Vec::new(), Vec::new());
    let mut kinetic: f64 = 0.0;
    run_without_dissipation(
        &[
            "actuated=none",
            "axo_f=400",
            "axo_omega=0",
            "axo_k=1.5",
            "axo_dphi=30deg",
            "t_final=0.15",
        ],
        |r, s| {
            let e = r.energy(&s.q, &s.v);
            let ea = r.couple_energy(s.t, &s.q);
            kinetic = kinetic.max(e.kinetic);
            totals.push(e.total() + ea);
            couple.push(ea);
        },
    );
    let spread = |x: &[f64]| x.iter().map(|e| (e - x[0]).abs()).fold(0.0, f64::max);
    let drift = spread(&totals);
    assert!(kinetic > 1.0, "kinetic {kinetic}");
    assert!(drift < 1e-4 * kinetic, "drift {drift} of kinetic {kinetic}");
    // E_A itself changes by far more than the drift: leaving it out would fail.
    assert!(spread(&couple) > 100.0 * drift, "E_A {:?}", spread(&couple));
}

/// The three couple points, over 2 s: the couple alone (servos off) with a phase step that
/// makes its own wave, servo and couple, and a wave travelling down the legs with a phase
/// step between them. Amplitudes are moderate: at a·F ≈ K_M/2 the default step still
/// follows the couple but the walking metrics drift past the validation tolerances
/// (measured and recorded in docs/model.md, "The internal couple").
fn couple_points() -> Vec<(&'static str, RunConfig)> {
    [
        (
            "couple alone",
            &["actuated=none", "axo_f=60", "axo_omega=2", "axo_dphi=90deg"][..],
        ),
        ("servo + couple", &["axo_f=150", "axo_omega=2"][..]),
        (
            "travelling wave",
            &[
                "axo_f=150",
                "axo_omega=4",
                "axo_k=3",
                "axo_dphi=60deg",
                "actuated=first",
            ][..],
        ),
    ]
    .into_iter()
    .map(|(name, o)| {
        let mut c = point(o);
        c.params.t_final = 2.0;
        (name, c)
    })
    .collect()
}

/// The couple's work agrees with the reference to 5 %: |Q_A·q̇| counts every velocity
/// component at full weight, and the fixed step's velocity carries its top bending mode
/// differently from the resolved one. Measured on these points: 0.03 % (servo + couple),
/// 1.2 % (travelling wave), 3.2 % (couple alone, legs tapping the ground); it shrinks with
/// the step (docs/model.md, "The internal couple").
const WORK_AXO_REL: f64 = 5e-2;

#[test]
#[ignore = "long (the full suite runs it): couple points on the reference and both batch engines, ~1 min of one core"]
fn batch_engines_match_the_reference_with_the_couple() {
    let points = couple_points();
    let cfgs: Vec<RunConfig> = points.iter().map(|(_, c)| c.clone()).collect();
    let runs = run_engines(&cfgs, "batch_engines_match_the_reference_with_the_couple");
    let mut failures = Vec::new();
    for (k, ((name, _), r)) in points.iter().zip(&runs.reference).enumerate() {
        let rm = &r.metrics;
        assert!(rm.status.is_ok(), "{name}: reference {:?}", rm.status);
        assert!(
            rm.work_axo > 1.0,
            "{name}: the couple works ({})",
            rm.work_axo
        );
        for (engine, results) in &runs.engines {
            let f = &results[k].metrics;
            eprintln!(
                "{engine} {name:>16}: disp {:.6} vs {:.6}, lag {:.6} vs {:.6}, work_axo {:.5} vs {:.5}, inext {:.2e} vs {:.2e}",
                f.displacement, rm.displacement, f.mean_lag, rm.mean_lag, f.work_axo, rm.work_axo,
                f.max_inextensibility, rm.max_inextensibility
            );
            failures.extend(disagreements(&format!("{engine} {name}"), f, rm));
            if (f.work_axo - rm.work_axo).abs() > WORK_AXO_REL * rm.work_axo.max(1.0) {
                failures.push(format!(
                    "{engine} {name}: work_axo {} vs reference {}",
                    f.work_axo, rm.work_axo
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A lane's result does not depend on its neighbours in a SIMD block: couple points run
/// alone and side by side with couple-free points give the same bits, and so do the
/// couple-free points (whose lanes then add exact zeros).
#[test]
fn lanes_with_and_without_the_couple_share_a_block() {
    let mut cfgs: Vec<RunConfig> = couple_points().into_iter().map(|(_, c)| c).collect();
    cfgs.extend([point(&[]), point(&["alpha=80"])]);
    assert_lanes_independent(cfgs);
}

/// The paper's run with every new term at its default, against the metrics of a build
/// without the couple (recorded 2026-12-04: `simulate --backend cpu --set t_final=10` and
/// `simulate --set t_final=2`).
#[test]
fn the_paper_run_is_unchanged_by_the_default_couple() {
    use metachron::batch::run_point;
    let recorded = [
        (
            Engine::Cpu,
            10.0,
            [
                0.9982917853121579,
                1.5705895671501613,
                0.999187697340749,
                0.16457272463707517,
                0.09270669530264175,
                0.4899986828373384,
                3.827457453758134,
                0.3749721882978672,
                289.38906466182533,
                0.8554171361273327,
                0.2612552672432912,
                1.1420469125944521e-07,
            ],
        ),
        (
            Engine::Reference,
            2.0,
            [
                0.9999240934654264,
                1.5706848519073162,
                0.9999831816496195,
                0.02926955159027167,
                0.11594680366872728,
                0.49872157100110265,
                0.7548946702877722,
                0.29676971558273485,
                38.69920897230098,
                0.5799919027327028,
                0.44004400440044006,
                3.103442702823145e-08,
            ],
        ),
    ];
    let names = [
        "lag_order",
        "mean_lag",
        "min_plv",
        "lag_spread",
        "kuramoto_r",
        "mean_frequency",
        "displacement",
        "mean_speed",
        "work",
        "cost_of_transport",
        "duty_factor",
        "max_inextensibility",
    ];
    for (backend, t_final, want) in recorded {
        let mut cfg = RunConfig::default();
        cfg.params.t_final = t_final;
        let r = run_point(&cfg, &backend, false, |_| {}).expect("runs");
        let m = &r.metrics;
        assert_eq!(m.work_axo, 0.0);
        let cols = metachron::metrics::METRIC_COLUMNS;
        for (name, want) in names.iter().zip(want) {
            let k = cols.iter().position(|(c, _)| c == name).expect("a metric");
            let got = m.scalars()[k];
            // The SIMD width picked at run time may change fused multiply-adds: round-off.
            // max |V|/ℓ is itself a residual of O(1) terms: its round-off is absolute,
            // of order 1e-14 (another order of the kick's sums moves it by 7.5e-15).
            let floor = if *name == "max_inextensibility" {
                1e-13
            } else {
                0.0
            };
            assert!(
                (got - want).abs() <= 1e-9 * want.abs() + floor,
                "{backend:?} {name}: {got:e} vs recorded {want:e}"
            );
        }
    }
}
