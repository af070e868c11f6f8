//! Measurements behind docs/integrators.md: the Jacobian spectrum of the paper's robot at
//! its initial state, and DKD-dc against the stiff reference at several fixed steps.
//!
//! `cargo run --release --example integrator_study`

use metachron::batch::{run_point, Engine};
use metachron::integrate::dkd::{top_bending_frequency, DkdSettings};
use metachron::integrate::esdirk::acceleration_jacobian;
use metachron::model::Robot;
use metachron::simulate::RunConfig;
use nalgebra::DMatrix;

fn main() {
    let cfg = RunConfig::default();
    let robot = Robot::new(&cfg.params);
    let (q, v) = robot.initial_state();
    let nq = robot.nq();
    let (jq, jv) = acceleration_jacobian(&robot, &q, &v);
    // First-order system y = (q, v): J = [[0, I], [∂a/∂q, ∂a/∂v]].
    let n = 2 * nq;
    let j = DMatrix::from_fn(n, n, |r, c| match (r < nq, c < nq) {
        (true, true) => 0.0,
        (true, false) => f64::from(c - nq == r),
        (false, true) => jq[(r - nq) * nq + c],
        (false, false) => jv[(r - nq) * nq + (c - nq)],
    });
    // Balance (diagonal similarity) so that rows and columns of very different scale
    // (servo rates ~1e7 next to unit couplings) do not stall the QR iteration.
    let mut j = j;
    for _ in 0..20 {
        for i in 0..n {
            let (r, c): (f64, f64) = (
                (0..n).filter(|&k| k != i).map(|k| j[(i, k)].abs()).sum(),
                (0..n).filter(|&k| k != i).map(|k| j[(k, i)].abs()).sum(),
            );
            if r > 0.0 && c > 0.0 {
                let f = (c / r).sqrt();
                for k in 0..n {
                    j[(i, k)] *= f;
                    j[(k, i)] /= f;
                }
            }
        }
    }
    let schur =
        nalgebra::linalg::Schur::try_new(j, 1e-14, 200_000).expect("QR iteration converged");
    let mut ev: Vec<(f64, f64)> = schur
        .complex_eigenvalues()
        .iter()
        .map(|z| (z.re, z.im))
        .collect();
    ev.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("Jacobian of the paper's robot at t = 0: {n} eigenvalues");
    let show = |label: &str, sel: &dyn Fn(&(f64, f64)) -> bool| {
        let s: Vec<&(f64, f64)> = ev.iter().filter(|e| sel(e)).collect();
        if let (Some(lo), Some(hi)) = (s.first(), s.last()) {
            println!(
                "  {label:<44} {:>4}  re [{:.4e}, {:.4e}]",
                s.len(),
                lo.0,
                hi.0
            );
        }
    };
    show("real part < -1e6 (servo on basal slopes)", &|e| e.0 < -1e6);
    show("real part in [-1e5, -1e3] (penalty, friction)", &|e| {
        e.0 >= -1e6 && e.0 < -1e3
    });
    show("|imag| > 1000 (bending pairs)", &|e| {
        e.1.abs() > 1000.0 && e.0 >= -1e3
    });
    show("real part > 1e-6 (toppling legs)", &|e| e.0 > 1e-6);
    let max_im = ev.iter().map(|e| e.1.abs()).fold(0.0, f64::max);
    let top = ev
        .iter()
        .filter(|e| e.1.abs() > 0.9 * max_im)
        .map(|e| e.0)
        .fold(f64::MIN, f64::max);
    println!("  largest |imag| {max_im:.1} rad/s (real part {top:.3}); RK4 limit ~2.8/|λ|max");
    println!(
        "  free-leg top bending frequency ω_max = {:.1} rad/s -> explicit-elastic limit 2/ω_max = {:.4e} s",
        top_bending_frequency(&robot),
        2.0 / top_bending_frequency(&robot)
    );

    // DKD-dc against the reference, paper's point, 3 s (window from 1.5 s).
    let mut short = cfg.clone();
    short.params.t_final = 3.0;
    let reference = run_point(&short, &Engine::Reference, false, |_| {})
        .unwrap()
        .metrics;
    println!("\nDKD-dc vs reference (paper, 3 s): h, |Δdisplacement|/disp, |Δmean_lag|, |Δwork|/work, max|V|/ℓ (ref {:.2e}), wall", reference.max_inextensibility);
    for h in [5e-5, 1e-4, 2e-4, 2.5e-4, 2.9e-4, 3.1e-4] {
        let mut c = short.clone();
        c.fixed_step = DkdSettings {
            h: Some(h),
            ..DkdSettings::default()
        };
        let r = run_point(&c, &Engine::Cpu, false, |_| {}).unwrap();
        let m = &r.metrics;
        println!(
            "  {h:.1e}  {:<10} {:.2e}  {:.2e}  {:.2e}  {:.2e}  {:.2} s",
            m.status.label(),
            (m.displacement - reference.displacement).abs() / reference.displacement.abs(),
            (m.mean_lag - reference.mean_lag).abs(),
            (m.work - reference.work).abs() / reference.work,
            m.max_inextensibility,
            r.wall_seconds
        );
    }
}
