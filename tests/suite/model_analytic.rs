//! The model against analytic results: Hermite element matrices, an Euler–Bernoulli
//! cantilever, the rest state and energy conservation.

use crate::common;

use common::energy::run_without_dissipation;
use metachron::model::hermite::assemble;
use metachron::model::Robot;
use metachron::params::Params;
use nalgebra::{DMatrix, DVector};

#[test]
fn mass_matrix_sums_to_leg_mass() {
    let p = Params {
        rho: 1.7,
        leg_length: 1.3,
        ..Params::default()
    };
    let r = Robot::new(&p);
    let n = p.n_nodes;
    // A rigid unit translation: values 1, slopes 0; ρ·1ᵀM1 is the leg's mass.
    let mut ones = vec![0.0; 2 * n];
    ones[..n].fill(1.0);
    let mass = p.rho * r.fe.mass.quad(&ones);
    assert!((mass - p.rho * p.leg_length).abs() < 1e-12, "{mass}");
}

#[test]
fn bending_energy_of_a_circular_arc() {
    for (n, kappa) in [(5, 1.0), (5, 0.4), (8, 2.0)] {
        let (len, km) = (1.0, 50.0);
        let a = assemble(n, len);
        let h = len / (n - 1) as f64;
        let (mut x, mut y) = (vec![0.0; 2 * n], vec![0.0; 2 * n]);
        for k in 0..n {
            let s = k as f64 * h;
            x[k] = (kappa * s).sin() / kappa;
            x[n + k] = (kappa * s).cos();
            y[k] = (1.0 - (kappa * s).cos()) / kappa;
            y[n + k] = (kappa * s).sin();
        }
        let e = 0.5 * km * (a.bending.quad(&x) + a.bending.quad(&y));
        let exact = km * kappa * kappa * len / 2.0;
        assert!(
            (e - exact).abs() / exact < 0.01,
            "n={n} κ={kappa}: {e} vs {exact}"
        );
        // The arc is parametrised by arc length: V ≈ 0.
        let v = a.geometric.quad(&x) + a.geometric.quad(&y) - len;
        assert!(v.abs() < 1e-3 * kappa * kappa, "V = {v}");
    }
}

/// Reduced (clamped at s = 0: value and slope of the transverse component fixed) matrices.
fn clamped(m: &metachron::model::hermite::Dense, n: usize) -> DMatrix<f64> {
    let free: Vec<usize> = (0..2 * n).filter(|&i| i != 0 && i != n).collect();
    DMatrix::from_fn(free.len(), free.len(), |i, j| m.get(free[i], free[j]))
}

#[test]
fn cantilever_static_deflection_and_first_frequency() {
    let p = Params::default();
    let n = p.n_nodes;
    let r = Robot::new(&p);
    let k = clamped(&r.fe.bending, n) * p.k_m;
    let m = clamped(&r.fe.mass, n) * p.rho;
    let free: Vec<usize> = (0..2 * n).filter(|&i| i != 0 && i != n).collect();
    let f = DVector::from_iterator(free.len(), free.iter().map(|&i| p.rho * p.g * r.fe.load[i]));
    // Static: tip deflection under its own weight (transverse gravity) = wℓ⁴/(8 K_M).
    let u = k.clone().lu().solve(&f).expect("clamped K is regular");
    let tip = u[free.iter().position(|&i| i == n - 1).unwrap()];
    let exact = p.rho * p.g * p.leg_length.powi(4) / (8.0 * p.k_m);
    assert!((tip - exact).abs() / exact < 0.01, "tip {tip} vs {exact}");
    // First natural frequency: K φ = ω² M φ.
    let l = m.cholesky().expect("M is SPD").l();
    let li = l.clone().try_inverse().unwrap();
    let a = &li * k * li.transpose();
    let w2 = a.symmetric_eigen().eigenvalues.min();
    let omega = w2.sqrt();
    let exact = 1.8751_f64.powi(2) * (p.k_m / (p.rho * p.leg_length.powi(4))).sqrt();
    assert!(
        (omega - exact).abs() / exact < 0.01,
        "ω1 {omega} vs {exact}"
    );
}

#[test]
fn rest_state_has_zero_acceleration_without_gravity_and_actuation() {
    let mut p = Params {
        g: 0.0,
        ..Params::default()
    };
    p.apply_override("actuated=none").unwrap();
    let r = Robot::new(&p);
    let (q, v) = r.initial_state();
    let mut a = vec![1.0; r.nq()];
    let power = r.accelerations(0.0, &q, &v, &mut a);
    let worst = a.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    // Round-off in V = qᵀGq − ℓ (~1e-16) is amplified by λη² ≈ 3e8: ~1e-7 is the floor.
    assert!(worst < 1e-6, "max |a| = {worst}");
    assert_eq!(power, metachron::model::Powers::default());
    // Gravity alone does accelerate it (so the check above can fail).
    p.g = 9.81;
    let r = Robot::new(&p);
    r.accelerations(0.0, &q, &v, &mut a);
    assert!(a.iter().any(|x| x.abs() > 1.0));
}

#[test]
fn energy_is_conserved_without_dissipation_actuation_and_penalty_damping() {
    let mut energies = Vec::new();
    let mut kinetic: f64 = 0.0;
    run_without_dissipation(&["actuated=none"], |r, s| {
        let e = r.energy(&s.q, &s.v);
        kinetic = kinetic.max(e.kinetic);
        energies.push(e.total());
    });
    assert_eq!(energies.len(), 31);
    // Legs fall under gravity: a real exchange between potential and kinetic energy ...
    assert!(kinetic > 1.0, "kinetic {kinetic}");
    // ... with the total conserved to a small fraction of it.
    let drift = energies
        .iter()
        .map(|e| (e - energies[0]).abs())
        .fold(0.0, f64::max);
    assert!(drift < 1e-4 * kinetic, "drift {drift} of kinetic {kinetic}");
}

#[test]
fn top_bending_frequency_matches_the_generalised_eigenproblem() {
    use metachron::integrate::dkd::{top_bending_frequency, DkdSettings};
    for overrides in [&[][..], &["n_nodes=8"][..], &["k_m=5"][..]] {
        let mut p = Params::default();
        for o in overrides {
            p.apply_override(o).unwrap();
        }
        let r = Robot::new(&p);
        let m2 = 2 * p.n_nodes;
        let k = DMatrix::from_fn(m2, m2, |i, j| p.k_m * r.fe.bending.get(i, j));
        let m = DMatrix::from_fn(m2, m2, |i, j| p.rho * r.fe.mass.get(i, j));
        let li = m.cholesky().unwrap().l().try_inverse().unwrap();
        let w2 = (&li * k * li.transpose())
            .symmetric_eigen()
            .eigenvalues
            .max();
        let w = top_bending_frequency(&r);
        assert!(
            (w - w2.sqrt()).abs() < 1e-6 * w,
            "{overrides:?}: {w} vs {}",
            w2.sqrt()
        );
        let h = DkdSettings::default().step_for(&r, 0.01);
        assert!(
            h <= 0.85 * 2.0 / w + 1e-15 && h <= 2.5e-4,
            "{overrides:?}: h = {h}"
        );
        eprintln!("{overrides:?}: omega_max {w:.1} rad/s, step {h:.4e} s");
    }
}
