//! Diagnosis for issue 9 (batch half): why max |V|/ℓ rises when passive legs touch down
//! on DKD-dc, and what fixes it. A copy of `dkd::step` (dense kick solve: in f64 the same
//! result as the Woodbury solve; `copy` reproduces `library` to the last digit) with knobs
//! for candidate fixes, run with only leg 1 actuated; |V|/ℓ after every step and at the
//! 0.01-s samples.
//!
//! `cargo run --release --example contact_study -- library mean1 project_drift theta0.5 ...`
//! Environment: `T_FINAL` (default 20), `SET` (overrides separated by `;`, default
//! `actuated=1,0,0,0,0,0,0,0,0`), `H_DIV` (divide the automatic step), `TRACE=leg,t0,t1`
//! (per-step V, Jᵀv, vᵀGv, gap of one leg; with the single argument `reference`, the same
//! from the stiff reference).
//!
//! Findings (2026-12-03, 20 s, reference 8.3e-8 at samples):
//! - The worst step is not the switch itself: after passive leg 4 strikes the ground
//!   (t ≈ 0.82 s) the leg rattles in its top bending modes and vᵀGv swings 20 → 95 → 40 →
//!   121 → 212 between consecutive steps. The kick takes vᵀGv at the old velocity (in the
//!   2vᵀGv term of V̈ and in the dc term), while the drift after the kick moves V by
//!   (h²/4)·v_newᵀGv_new; every step leaves an O(h²Δ(vᵀGv)) error in V that the penalty's
//!   slow root (η/2μ = 1.75 s⁻¹) keeps for ~0.6 s. The reference has the same vᵀGv swings
//!   (10–50) with V flat at 6.7e-9.
//! - Not the switch timing: contact force and friction weighted by the fraction of the step
//!   in contact (`fraction`) 3.35e-6; bending implicit θ = ½ / 1: 2.9e-6 / 3.4e-6.
//! - vᵀGv re-evaluated after the kick and the kick re-solved with the mean of old and new
//!   (`mean1`; more passes change nothing): 9.2e-7 (3.9×); with α = β = 50: 2.28e-6 → 5.4e-7.
//!   Taking the new value alone (`resolve`) 1.75e-6; removing only the drift's
//!   (h²/4)(s_new − s_old) by a projection along (ρM)⁻¹J (`project_drift`) 1.35e-6.
//! - Step size: h/2 1.35e-6, h/4 3.3e-7 (≈ h²); `mean1` at h/2 3.2e-7, at h/4 8.2e-8.
//! - A full projection onto V_{n+1} = V_n(1 − hη/2μ) (`project`) gives 4e-13: it replaces
//!   Bayo's penalty by an exact constraint (the reference keeps V ~ 1e-7), not faithful.
//! - Substeps h/4 on steps whose tip flag changes (`split4`) blew up at t = 11.9 s (not investigated).
//! - `mean1` followed by `project_drift` aimed at the s the kick assumed (`both`, or `lin`
//!   with one linear Newton step): 4.135e-7, just above 5x the reference (4.13e-7).
//! - The weight of the new vᵀGv, `RESOLVE_W` (default ½ in `mean1`): the stiff-limit
//!   analysis in docs/integrators.md gives ω = (1 + k)/(2 + k), k = 2hημ (0.838 here); at it
//!   the displacement is 0.765989 m against the reference's 0.765995 m (0.764699 before).
//!   What remains is V ≈ −(h²/4)·vᵀGv at step ends (`TRACE=4,0.815,0.83`: V/ℓ tracks
//!   −1.41e-8·vᵀGv). The library's kick now uses ω (so `library` is the fixed scheme:
//!   9.31e-7 at samples), `MIDV=1` (vᵀGv of the mean velocity) diverges, `FRACTION=1` on
//!   top of ω gives 1.42e-6.
//! - Substeps where the step-end term is large (`sub2`, `sub3`: m steps of h/m with the
//!   library kernel while any leg's (h²/4)·vᵀGv > `SUB_TOL`·ℓ, default 1e-7): V runs away
//!   (8.9e-3 and 1.3e-3 at samples; 97 % of the steps substepped). A change of step size
//!   breaks the drift consistency: between kicks of steps h and h' the drifts move V by
//!   ((h + h')/2)·Jᵀv + ((h + h')/2)²·vᵀGv, while the kick assumes h'². A local substep
//!   needs a transition that accounts for it (this is also why `split` blew up).

use metachron::integrate::dkd::{step, DkdSettings, KickConstants};
use metachron::model::robot::basal_gradient;
use metachron::model::Robot;
use metachron::params::Params;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// The library's `dkd::step`.
    Library,
    /// The library's step with bending implicitness θ in the kick (`DkdSettings::theta`).
    Theta(f64),
    /// This file's copy of it (must reproduce `Library`).
    Copy,
    /// Re-solve the kick once with vᵀGv taken at the new velocity (penalty and dc terms).
    ResolveVgv,
    /// Re-solve (n times) with vᵀGv averaged over old and new velocity.
    ResolveVgvMean(usize),
    /// A step whose tip contact flag differs between start and predicted end is done as
    /// `m` substeps.
    Split(usize),
    /// After the kick, move v_new along (ρM)⁻¹J so that the exact V after the second
    /// half drift equals V_n·(1 − h·η/(2μ)) (the penalty's slow root).
    Project,
    /// Like `Project`, but the target is the V the kick assumed (vᵀGv of the second half
    /// drift taken at the old velocity, as in the dc term): only the drift's
    /// (h²/4)(s_new − s_old) discrepancy is removed.
    ProjectDrift,
    /// `ResolveVgvMean(1)`, then the drift's remaining (h²/4)(s_new − s_mean) removed by
    /// the `ProjectDrift` projection (its target uses the s the kick assumed).
    MeanProject,
    /// `MeanProject` with one Newton step on the linear part only (the kernel's form):
    /// α = −(h/2)(s_new − s_mean)/(Jᵀw).
    MeanProjectLinear,
    /// The library's step, done as `m` substeps of h/m while any leg's (h²/4)·vᵀGv (the
    /// step-end term of V) exceeds `SUB_TOL` (default 1e-7) times the leg length.
    Substep(usize),
    /// Contact force and friction scaled by the fraction of the step the tip spends in
    /// contact on the straight-line prediction X(t) = X_n + t·Ẋ_n.
    Fraction,
}

#[derive(Default)]
struct Knobs {
    project: bool,
    drift_only: bool,
    resolve: Option<f64>,
    iterations: usize,
    fraction: bool,
    linear: bool,
}

fn knobs(var: Variant) -> Knobs {
    let none = Knobs::default();
    match var {
        Variant::ResolveVgv => Knobs {
            resolve: Some(1.0),
            iterations: 1,
            ..none
        },
        Variant::ResolveVgvMean(it) => Knobs {
            resolve: Some(0.5),
            iterations: it,
            ..none
        },
        Variant::Project => Knobs {
            project: true,
            ..none
        },
        Variant::ProjectDrift => Knobs {
            project: true,
            drift_only: true,
            ..none
        },
        Variant::Fraction => Knobs {
            fraction: true,
            ..none
        },
        Variant::MeanProjectLinear => Knobs {
            resolve: Some(0.5),
            iterations: 1,
            project: true,
            drift_only: true,
            linear: true,
            ..none
        },
        Variant::MeanProject => Knobs {
            resolve: Some(0.5),
            iterations: 1,
            project: true,
            drift_only: true,
            ..none
        },
        _ => none,
    }
}

/// One leg's kick: dense solve of S v_new = r (S = P + Σ uuᵀ), as `dkd::kick_leg`.
#[allow(clippy::too_many_arguments)]
fn kick(
    robot: &Robot,
    h: f64,
    leg: usize,
    q: &[f64],
    v: &[f64],
    base: [f64; 2],
    s_used: f64,
    cfrac: f64,
    v_new: &mut [f64],
) {
    let p = &robot.p;
    let ix = robot.idx;
    let m = 2 * robot.n_nodes;
    let l = 2 * m;
    let ct = robot.constraint_terms(q, v);
    let j: Vec<f64> = ct.gq[..l].iter().map(|g| 2.0 * g).collect();
    let (vres, jv) = (ct.residual, ct.jv);
    let pen = p.lambda * (2.0 * s_used + p.eta * p.eta * vres)
        + 2.0 * p.lambda * p.eta * p.mu * h * s_used;
    let mut f = vec![0.0; l];
    let mut tmp = vec![0.0; m];
    for c in 0..2 {
        robot.fe.bending.mul(&q[c * m..(c + 1) * m], &mut tmp);
        for i in 0..m {
            f[c * m + i] = -p.k_m * tmp[i];
        }
    }
    for (fi, ld) in f[..m].iter_mut().zip(&robot.fe.load) {
        *fi += p.rho * p.g * ld;
    }
    for i in 0..l {
        f[i] -= pen * j[i];
    }
    f[ix.a(0)] += base[0];
    f[ix.c(0)] += base[1];
    let [gb, gd] = basal_gradient(q[ix.b(0)], q[ix.d(0)]);
    let actuated = p.actuated[leg] && p.k_p > 0.0;
    if actuated {
        f[ix.b(0)] -= p.k_p * p.leg_omega(leg) * gb;
        f[ix.d(0)] -= p.k_p * p.leg_omega(leg) * gd;
    }
    let tip = ix.tip();
    f[ix.a(tip)] += cfrac * p.epsilon * (p.x_t - q[ix.a(tip)]);
    // S = (ρ + hζ)M + λ(1 + 2hημ)JJᵀ + hK_p ggᵀ + hν·c e eᵀ
    let mut s = vec![0.0; l * l];
    for c in 0..2 {
        for r in 0..m {
            for cc in 0..m {
                s[(c * m + r) * l + c * m + cc] = (p.rho + h * p.zeta) * robot.fe.mass.get(r, cc);
            }
        }
    }
    let w1 = p.lambda * (1.0 + 2.0 * h * p.eta * p.mu);
    for r in 0..l {
        for c in 0..l {
            s[r * l + c] += w1 * j[r] * j[c];
        }
    }
    if actuated {
        let g = [(ix.b(0), gb), (ix.d(0), gd)];
        for &(a, x) in &g {
            for &(b, y) in &g {
                s[a * l + b] += h * p.k_p * x * y;
            }
        }
    }
    s[ix.c(tip) * l + ix.c(tip)] += cfrac * h * p.nu;
    let mut mv = vec![0.0; l];
    robot.fe.mass.mul(&v[..m], &mut mv[..m]);
    robot.fe.mass.mul(&v[m..l], &mut mv[m..l]);
    let mut r: Vec<f64> = (0..l)
        .map(|i| p.rho * mv[i] + p.lambda * j[i] * jv + h * f[i])
        .collect();
    // Gaussian elimination (S is SPD).
    for col in 0..l {
        let piv = s[col * l + col];
        for row in col + 1..l {
            let fct = s[row * l + col] / piv;
            if fct != 0.0 {
                for k in col..l {
                    s[row * l + k] -= fct * s[col * l + k];
                }
                r[row] -= fct * r[col];
            }
        }
    }
    for row in (0..l).rev() {
        let mut x = r[row];
        for k in row + 1..l {
            x -= s[row * l + k] * v_new[k];
        }
        v_new[row] = x / s[row * l + row];
    }
}

/// Fraction of [0, h] with X_n + t·Ẋ_n ≥ X_t.
fn contact_fraction(x: f64, xd: f64, x_t: f64, h: f64) -> f64 {
    let end = x + h * xd;
    match (x >= x_t, end >= x_t) {
        (true, true) => 1.0,
        (false, false) => 0.0,
        (true, false) => (x - x_t) / (x - end),
        (false, true) => (end - x_t) / (end - x),
    }
}

fn step_copy(robot: &Robot, h: f64, q: &mut [f64], v: &mut [f64], kn: &Knobs) {
    let p = &robot.p;
    let nq = robot.nq();
    let l = robot.leg_dofs;
    let (tip_a, m) = (robot.idx.a(robot.idx.tip()), 2 * robot.n_nodes);
    let fracs: Vec<f64> = (0..robot.n_legs)
        .map(|i| contact_fraction(q[i * l + tip_a], v[i * l + tip_a], p.x_t, h))
        .collect();
    let v_n: Vec<f64> = (0..robot.n_legs)
        .map(|i| robot.constraint(&q[i * l..(i + 1) * l]))
        .collect();
    for i in 0..nq {
        q[i] += 0.5 * h * v[i];
    }
    let mut base = vec![[0.0; 2]; robot.n_legs];
    let springs = robot.spring_pass(q, &mut base);
    let mut v_new = vec![0.0; l];
    for i in 0..robot.n_legs {
        let r = i * l..(i + 1) * l;
        let (ql, vl) = (&q[r.clone()], &v[r.clone()]);
        let cfrac = if kn.fraction || std::env::var("FRACTION").is_ok() {
            fracs[i]
        } else if ql[tip_a] >= p.x_t {
            1.0
        } else {
            0.0
        };
        let s_old = robot.constraint_terms(ql, vl).vgv;
        let mut s_assumed = s_old;
        kick(robot, h, i, ql, vl, base[i], s_old, cfrac, &mut v_new);
        if let Some(wt) = kn.resolve {
            for _ in 0..kn.iterations {
                let s_new =
                    robot.fe.geometric.quad(&v_new[..m]) + robot.fe.geometric.quad(&v_new[m..]);
                let wt = std::env::var("RESOLVE_W")
                    .ok()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(wt);
                let mut s_used = (1.0 - wt) * s_old + wt * s_new;
                if std::env::var("MIDV").is_ok() {
                    let vm: Vec<f64> = vl.iter().zip(&v_new).map(|(a, b)| 0.5 * (a + b)).collect();
                    s_used = robot.fe.geometric.quad(&vm[..m]) + robot.fe.geometric.quad(&vm[m..]);
                }
                s_assumed = s_used;
                kick(robot, h, i, ql, vl, base[i], s_used, cfrac, &mut v_new);
            }
        }
        if kn.project {
            // f(α) = V_{n+1}(v_new + αw) − target, V_{n+1} = V_m + (h/2)J_mᵀv' + (h²/4)v'ᵀGv'.
            let ct = robot.constraint_terms(ql, vl);
            let jm: Vec<f64> = ct.gq[..l].iter().map(|g| 2.0 * g).collect();
            let mut w = vec![0.0; l];
            robot.mass_inv.mul(&jm[..m], &mut w[..m]);
            robot.mass_inv.mul(&jm[m..], &mut w[m..]);
            let target = if kn.drift_only {
                let jv: f64 = jm.iter().zip(&v_new).map(|(a, b)| a * b).sum();
                ct.residual + 0.5 * h * jv + 0.25 * h * h * s_assumed
            } else {
                v_n[i] * (1.0 - h * p.eta / (2.0 * p.mu))
            };
            for _ in 0..if kn.linear { 1 } else { 2 } {
                let vgv =
                    robot.fe.geometric.quad(&v_new[..m]) + robot.fe.geometric.quad(&v_new[m..]);
                let jv: f64 = jm.iter().zip(&v_new).map(|(a, b)| a * b).sum();
                let f = ct.residual + 0.5 * h * jv + 0.25 * h * h * vgv - target;
                let mut gw = vec![0.0; l];
                robot.fe.geometric.mul(&w[..m], &mut gw[..m]);
                robot.fe.geometric.mul(&w[m..], &mut gw[m..]);
                let jw: f64 = jm.iter().zip(&w).map(|(a, b)| a * b).sum();
                let vgw: f64 = v_new.iter().zip(&gw).map(|(a, b)| a * b).sum();
                let alpha = if kn.linear {
                    -f / (0.5 * h * jw)
                } else {
                    -f / (0.5 * h * jw + 0.5 * h * h * vgw)
                };
                for (x, y) in v_new.iter_mut().zip(&w) {
                    *x += alpha * y;
                }
            }
        }
        v[r].copy_from_slice(&v_new);
    }
    let o = robot.n_legs * l;
    let mut load = springs;
    load.add(robot.body.contact(&q[o..o + 3], p.x_t, p.epsilon));
    let mb = p.body_mass;
    v[o] = (mb * v[o] + h * (mb * p.g + load.fx)) / (mb + h * p.zeta);
    v[o + 1] = (mb * v[o + 1] + h * load.fy) / (mb + h * p.zeta);
    let ib = robot.body.inertia;
    let zl2 = p.zeta * p.leg_length * p.leg_length;
    v[o + 2] = (ib * v[o + 2] + h * load.torque) / (ib + h * zl2);
    for i in 0..nq {
        q[i] += 0.5 * h * v[i];
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let t_final: f64 = std::env::var("T_FINAL")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0);
    let overrides = std::env::var("SET").unwrap_or("actuated=1,0,0,0,0,0,0,0,0".into());
    let variants: Vec<Variant> = if args.is_empty() || args[0] == "reference" {
        vec![Variant::Library, Variant::Copy]
    } else {
        args.iter()
            .map(|a| match a.as_str() {
                "library" => Variant::Library,
                s if s.starts_with("theta") => Variant::Theta(s[5..].parse().unwrap()),
                "copy" => Variant::Copy,
                "resolve" => Variant::ResolveVgv,
                s if s.starts_with("mean") => Variant::ResolveVgvMean(s[4..].parse().unwrap_or(1)),
                "fraction" => Variant::Fraction,
                "project" => Variant::Project,
                "project_drift" => Variant::ProjectDrift,
                "both" => Variant::MeanProject,
                "lin" => Variant::MeanProjectLinear,
                s if s.starts_with("split") => Variant::Split(s[5..].parse().unwrap_or(4)),
                s if s.starts_with("sub") => Variant::Substep(s[3..].parse().unwrap_or(2)),
                s => panic!("unknown variant {s}"),
            })
            .collect()
    };
    let mut p = Params::default();
    for o in overrides.split(';').filter(|s| !s.is_empty()) {
        p.apply_override(o).unwrap();
    }
    p.t_final = t_final;
    let robot = Robot::new(&p);
    let st = DkdSettings::default();
    // H_DIV=k divides the automatic step by k.
    let h_div: f64 = std::env::var("H_DIV")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let h = st.step_for(&robot, 0.01) / h_div;
    let per_sample = (0.01 / h).round() as usize;
    let l = robot.leg_dofs;
    let tip_a = robot.idx.a(robot.idx.tip());
    // TRACE=leg,t0,t1 (leg from 1): per-step constraint quantities of one leg.
    let trace: Option<(usize, f64, f64)> = std::env::var("TRACE").ok().map(|s| {
        let x: Vec<f64> = s.split(',').map(|a| a.parse().unwrap()).collect();
        (x[0] as usize - 1, x[1], x[2])
    });
    if args.iter().any(|a| a == "reference") {
        let (leg, t0, t1) = trace.expect("reference needs TRACE=leg,t0,t1");
        let mut p1 = p.clone();
        p1.t_final = t1;
        let r1 = Robot::new(&p1);
        // Every step's time from 0 (the callback keeps those from t0 on).
        let times = metachron::sample::SampleTimes::new(h, t1, (t1 / h).ceil() as usize);
        let settings = metachron::reference::ReferenceSettings::default();
        let run = metachron::reference::run_reference(
            &r1,
            &settings,
            &times,
            metachron::sample::Deadline::NONE,
            |smp: &metachron::sample::Sample| {
                if smp.t >= t0 {
                    let rg = leg * l..(leg + 1) * l;
                    let ct = r1.constraint_terms(&smp.q[rg.clone()], &smp.v[rg]);
                    println!(
                        "  ref t {:.5} V/ℓ {:+.3e} Jᵀv {:+.3e} vᵀGv {:.3e} gap {:+.3e}",
                        smp.t,
                        ct.residual / p.leg_length,
                        ct.jv,
                        ct.vgv,
                        smp.q[leg * l + tip_a] - p.x_t
                    );
                }
            },
            |_| {},
        )
        .unwrap();
        println!(
            "reference: {:?}, {} events",
            run.status, run.stats.contact_events
        );
        return;
    }
    for var in variants {
        let theta = if let Variant::Theta(th) = var {
            th
        } else {
            st.theta
        };
        let k = KickConstants::new(&robot, h, theta);
        let k_sub = KickConstants::new(
            &robot,
            h / if let Variant::Substep(mm) = var {
                mm as f64
            } else {
                1.0
            },
            theta,
        );
        let (mut q, mut v) = robot.initial_state();
        let n = (t_final / h).round() as usize;
        let (mut worst_step, mut worst_sample, mut at) = (0.0f64, 0.0f64, 0.0);
        let mut substeps = 0usize;
        let clock = std::time::Instant::now();
        for s in 0..n {
            match var {
                Variant::Library | Variant::Theta(_) => {
                    step(&robot, &k, &mut q, &mut v);
                }
                Variant::Copy
                | Variant::ResolveVgv
                | Variant::ResolveVgvMean(_)
                | Variant::Project
                | Variant::ProjectDrift
                | Variant::MeanProject
                | Variant::MeanProjectLinear
                | Variant::Fraction => step_copy(&robot, h, &mut q, &mut v, &knobs(var)),
                Variant::Substep(mm) => {
                    let tol: f64 = std::env::var("SUB_TOL")
                        .ok()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(1e-7);
                    let rattling = (0..robot.n_legs).any(|i| {
                        let r = i * l..(i + 1) * l;
                        let s = robot.constraint_terms(&q[r.clone()], &v[r]).vgv;
                        0.25 * h * h * s > tol * p.leg_length
                    });
                    if rattling {
                        for _ in 0..mm {
                            step(&robot, &k_sub, &mut q, &mut v);
                        }
                        substeps += mm;
                    } else {
                        step(&robot, &k, &mut q, &mut v);
                    }
                }
                Variant::Split(mm) => {
                    let switching = (0..robot.n_legs).any(|i| {
                        let (x, xd) = (q[i * l + tip_a], v[i * l + tip_a]);
                        (x >= p.x_t) != (x + h * xd >= p.x_t)
                    });
                    let kn = if std::env::var("RESOLVE_W").is_ok() {
                        knobs(Variant::ResolveVgvMean(1))
                    } else {
                        Knobs::default()
                    };
                    if switching {
                        for _ in 0..mm {
                            step_copy(&robot, h / mm as f64, &mut q, &mut v, &kn);
                        }
                        substeps += mm;
                    } else {
                        step_copy(&robot, h, &mut q, &mut v, &kn);
                    }
                }
            }
            let t = (s + 1) as f64 * h;
            if let Some((leg, t0, t1)) = trace {
                if t >= t0 && t <= t1 {
                    let r = leg * l..(leg + 1) * l;
                    let ct = robot.constraint_terms(&q[r.clone()], &v[r.clone()]);
                    let ix = robot.idx;
                    println!(
                        "  t {t:.5} V/ℓ {:+.3e} Jᵀv {:+.3e} vᵀGv {:.3e} gap {:+.3e} tip v ({:+.4}, {:+.4})",
                        ct.residual / p.leg_length,
                        ct.jv,
                        ct.vgv,
                        q[leg * l + tip_a] - p.x_t,
                        v[leg * l + tip_a],
                        v[leg * l + ix.c(ix.tip())]
                    );
                }
            }
            for i in 0..robot.n_legs {
                let vi = robot.constraint(&q[i * l..(i + 1) * l]).abs() / p.leg_length;
                if vi > worst_step {
                    worst_step = vi;
                    at = t;
                }
                if (s + 1) % per_sample == 0 {
                    worst_sample = worst_sample.max(vi);
                }
            }
        }
        println!(
            "{var:?}: max |V|/ℓ per step {worst_step:.3e} (t = {at:.4}), at samples {worst_sample:.3e}; {} split substeps; Y_b {:.6}; {:.2} s",
            substeps,
            q[robot.n_legs * l + 1],
            clock.elapsed().as_secs_f64()
        );
    }
}
