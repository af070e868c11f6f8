//! Diagnosis for issue 9 (batch half): why max |V|/ℓ rises when passive legs touch down
//! on DKD-dc, and what fixes it. A copy of `dkd::step` (dense kick solve: in f64 the same
//! result as the Woodbury solve; `copy` is the scheme before both fixes below, `kcorr` the
//! library's scheme now, reproduced to round-off) with knobs
//! for candidate fixes, run with only leg 1 actuated; |V|/ℓ after every step and at the
//! 0.01-s samples.
//!
//! `cargo run --release --example contact_study -- library mean1 project_drift theta0.5 ...`
//! (`corr0.5` with `CORR_DIR=w|j|s|stretch|stretch_tip|jmask|wmask`, `CORR_PRE`, `CORR_JM`,
//! `CORR_EXACT`, `CORR_ITER`; `kcorr` the kernel's form of `corr0.5`)
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
//!
//! The persistent position correction (`corr<g>`, `kcorr`; 2026-12-03) meets the target:
//! - Scheme: after the kick, move the leg's midpoint q (so also its step end) by c·d with
//!   c·J_endᵀd = g·h²·s_new (s = vᵀGv after the kick). The next midpoint's V then rises by
//!   (1 + g)h²s instead of h²s, the step end by (¼ + g)h²s, and the step end is the mean
//!   of the two midpoints when g = ½ (V_end − ½(V_m + V_{m+1}) = (g/2 − ¼)h²s). Redoing
//!   the stiff-limit analysis of docs/integrators.md with p_m = (V_{m+1} − V_m)/h =
//!   u_m + (1 + g)h·s_m, the centripetal terms cancel in (1 + k)p_{m+1} = p_m − hη²V_{m+1}
//!   when (2 + k)σ = (1 − g)·s_old + (1 + g)(1 + k)·s_new (g = 0 is the library's ω).
//!   So the midpoints follow Bayo's dynamics as before and now the step ends do too.
//! - Measured (20 s, leg 1 driven; reference 8.25e-8, Y_b 0.765995 m):
//!   d = (ρM)⁻¹J 1.41e-7, Y_b 0.765198; d = J 8.25e-8, 0.766197; uniform stretch about the
//!   base 8.87e-8, 0.764482 (about the tip 8.25e-8, 0.764694); d masked at the base node and
//!   tip (`CORR_DIR=jmask`, `wmask`) diverges (a rough d excites the top modes);
//!   d = S⁻¹J (the kick's own response, `CORR_DIR=s`) 8.26e-8, Y_b 0.766061. With
//!   α = β = 50 (reference 5.97e-8, Y_b 0.460856; library 6.35e-7, 0.460820): d = (ρM)⁻¹J
//!   1.14e-7, 0.460798; J 1.13e-7, 0.460800; S⁻¹J 7.9e-8, 0.460826.
//! - `kcorr` (d = S⁻¹J, c from J_mᵀd alone, s_new before the closed-form correction: what
//!   the lane kernel has at hand, J_mᵀS⁻¹J·s₁ = 1 − (C⁻¹e₁)₁): 8.26e-8 (1.0×) and 4.55e-8
//!   (0.8×), Y_b 0.766061 and 0.460826; V/ℓ stays at ~1e-8 through leg 4's strike
//!   (`TRACE=4,0.818,0.8225`: library −5e-7 … −3e-6). The 3-s validation points
//!   (paper, passive, weak coupling, soft legs, N = 5, n = 3, n = 8, Δφ = −90°): 9.79e-8,
//!   2.47e-8, 3.43e-8, 4.35e-8, 5.37e-8, 9.79e-8, 9.79e-8, 9.93e-8 (library 1.03e-7,
//!   9.31e-7, 1.06e-7, 7.65e-8, 5.84e-8, 1.03e-7, 9.85e-8, 1.06e-7), Y_b within 1e-6 of the
//!   library's except passive legs (0.275841 vs 0.275814, reference 0.275469) and weak
//!   coupling (0.796769 vs 0.796844, reference 0.796619). Stability limit unchanged (both
//!   run at h = 0.01/36, both diverge at 0.01/35).
//! - g is derived, not tuned: g = 0.4, 0.45, 0.55, 0.6 leave per-step maxima 5.9e-7,
//!   2.9e-7, 3.1e-7, 6.1e-7 (≈ |½ − g|·h²·212); the exact second-order terms of the shift
//!   (c·h·vᵀGd, c²·dᵀGd, the previous shift's 2c·dᵀGv in J_{m+1}ᵀv: `CORR_EXACT=1`) and a
//!   second re-solve change nothing visible.
//! - Y_b over 20 s with passive strikes scatters with the step by ~1e-3 for both schemes
//!   (steps per 0.01 s = 42, 43, 45, 48, 52, 84: library 0.765989, 0.765738, 0.766175,
//!   0.765690, 0.765049, 0.764019; `corr0.5` with d = S⁻¹J 0.766061, 0.765494, 0.764282,
//!   0.766575, 0.764893, 0.765538): the library's 8e-6 at the default step is luck.
//! - The price: the stored velocity is no longer tangent at the step end,
//!   J_endᵀv = −(h/2)·vᵀGv (−2.5e-2 at s = 212; library and reference ~1e-7), an O(h)
//!   error in the constraint-normal velocity that does not accumulate (the shift gives it
//!   back each step). With one direction for the shift of q and v, a step end on the
//!   midpoints' interpolant and a tangent velocity exclude each other.
//! - Why our vᵀGv is ~4× the reference's after a strike: for a mode at ωh = 1.68 DKD's
//!   velocity amplitude is 1/√(1 − (ωh/2)²) = 1.84 times the one the same impulse gives the
//!   exact flow (the invariant is v² + ω²q_m q_{m+1} = ω²A²(1 − (ωh/2)²)), so vᵀGv is 3.4×.

use metachron::integrate::dkd::{step, DkdSettings};
use metachron::integrate::record::InstanceRecord;
use metachron::model::robot::basal_gradient;
use metachron::model::Robot;
use metachron::params::Params;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// The library's `dkd::step`.
    Library,
    /// The library's step with bending implicitness θ in the kick (`DkdSettings::theta`).
    Theta(f64),
    /// This file's copy of the step before the fixes (`kcorr` reproduces today's `Library`).
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
    /// Persistent position correction: after the kick the leg is moved along
    /// w = (ρM)⁻¹J_m so that V at the step end rises by g·h²·vᵀGv (g = ½: the step end
    /// is the mean of the two midpoints' V), and the kick's vᵀGv is re-derived for the
    /// modified drift: (2 + k)σ = (1 − g)·s_old + (1 + g)(1 + k)·s_new.
    Corr(f64),
    /// `Corr(0.5)` in the form a kernel would compute it (see `Knobs::corr_kernel`).
    CorrKernel,
}

#[derive(Default)]
struct Knobs {
    project: bool,
    drift_only: bool,
    resolve: Option<f64>,
    iterations: usize,
    fraction: bool,
    linear: bool,
    corr: Option<f64>,
    /// The kernel's form of `Corr`: d = S⁻¹J_m, c from J_mᵀd and the pre-correction vᵀGv
    /// (overrides `CORR_DIR`, `CORR_PRE`, `CORR_JM`).
    corr_kernel: bool,
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
        Variant::Corr(g) => Knobs {
            corr: Some(g),
            ..none
        },
        Variant::CorrKernel => Knobs {
            corr: Some(0.5),
            corr_kernel: true,
            ..none
        },
        _ => none,
    }
}

thread_local! {
    /// Per leg, the previous correction's term in the next kick's vᵀGv (`CORR_EXACT`).
    static TAU: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
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
        let mut shift: Option<(f64, Vec<f64>)> = None;
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
        if let Some(g) = kn.corr {
            let k2 = 2.0 * h * p.eta * p.mu;
            let exact = std::env::var("CORR_EXACT").is_ok();
            let iters: usize = std::env::var("CORR_ITER")
                .ok()
                .and_then(|x| x.parse().ok())
                .unwrap_or(1);
            let v_first = v_new.clone();
            // The direction d: P⁻¹J_m ∝ (ρM)⁻¹J_m by default; CORR_DIR=j: J_m; s: S⁻¹J_m;
            // stretch / stretch_tip: uniform stretch about the base / the tip.
            let ct = robot.constraint_terms(ql, vl);
            let jm: Vec<f64> = ct.gq[..l].iter().map(|g| 2.0 * g).collect();
            let mut d = vec![0.0; l];
            let dir = if kn.corr_kernel {
                "s".to_string()
            } else {
                std::env::var("CORR_DIR").unwrap_or_default()
            };
            if dir == "s" {
                // S⁻¹J (the kick's own response to the penalty), from the kick's linearity.
                let mut v_unit = vec![0.0; l];
                kick(
                    robot,
                    h,
                    i,
                    ql,
                    vl,
                    base[i],
                    s_old + 1.0,
                    cfrac,
                    &mut v_unit,
                );
                for k in 0..l {
                    d[k] = v_first[k] - v_unit[k];
                }
            } else if dir.starts_with('j') {
                d.copy_from_slice(&jm);
            } else if dir.starts_with("stretch") {
                // Jᵀd = 2(V + ℓ), no base motion nor basal rotation (about the base).
                let ix = robot.idx;
                let o = if dir == "stretch_tip" { ix.tip() } else { 0 };
                for k in 0..robot.n_nodes {
                    d[ix.a(k)] = ql[ix.a(k)] - ql[ix.a(o)];
                    d[ix.c(k)] = ql[ix.c(k)] - ql[ix.c(o)];
                    d[ix.b(k)] = ql[ix.b(k)];
                    d[ix.d(k)] = ql[ix.d(k)];
                }
            } else {
                robot.mass_inv.mul(&jm[..m], &mut d[..m]);
                robot.mass_inv.mul(&jm[m..], &mut d[m..]);
            }
            if dir.ends_with("mask") {
                // No shift of the base node (springs, servo) nor of the tip (contact, friction).
                let ix = robot.idx;
                for k in [
                    ix.a(0),
                    ix.b(0),
                    ix.c(0),
                    ix.d(0),
                    ix.a(ix.tip()),
                    ix.c(ix.tip()),
                ] {
                    d[k] = 0.0;
                }
            }
            let mut gd = vec![0.0; l];
            robot.fe.geometric.mul(&d[..m], &mut gd[..m]);
            robot.fe.geometric.mul(&d[m..], &mut gd[m..]);
            let jd: f64 = jm.iter().zip(&d).map(|(a, b)| a * b).sum();
            let dgd: f64 = d.iter().zip(&gd).map(|(a, b)| a * b).sum();
            // c with c·J_endᵀd = g·h²·s (J_end = J_m + hGv), and the terms of the next
            // midpoint's V and of J_{m+1}ᵀv beyond g·h²·s (exact mode).
            let jm_only = kn.corr_kernel || std::env::var("CORR_JM").is_ok();
            let shift_of = |vn: &[f64]| {
                let s = robot.fe.geometric.quad(&vn[..m]) + robot.fe.geometric.quad(&vn[m..]);
                let vgd: f64 = vn.iter().zip(&gd).map(|(a, b)| a * b).sum();
                // CORR_JM: J_mᵀd alone (the kernel has it for free: (1 − C⁻¹e₁)₁/s₁).
                let c = g * h * h * s / if jm_only { jd } else { jd + h * vgd };
                (s, c, vgd)
            };
            let prev = TAU.with(|t| t.borrow().get(i).copied().unwrap_or(0.0));
            let mut s_pre = 0.0;
            for _ in 0..iters {
                let (s_new, c, vgd) = shift_of(&v_new);
                s_pre = s_new;
                let mut rhs = (1.0 - g) * s_old + (1.0 + g) * (1.0 + k2) * s_new;
                if exact {
                    let extra = c * h * vgd + c * c * dgd;
                    rhs += (1.0 + k2) * extra / (h * h) + prev;
                }
                kick(
                    robot,
                    h,
                    i,
                    ql,
                    vl,
                    base[i],
                    rhs / (2.0 + k2),
                    cfrac,
                    &mut v_new,
                );
            }
            let (_, c_fin, vgd) = shift_of(&v_new);
            let c = if kn.corr_kernel || std::env::var("CORR_PRE").is_ok() {
                let vgd0: f64 = v_new.iter().zip(&gd).map(|(a, b)| a * b).sum();
                g * h * h * s_pre / if jm_only { jd } else { jd + h * vgd0 }
            } else {
                c_fin
            };
            // τ = (ε − extra/h)/h for the next kick: ε = 2c·dᵀGv, extra = c·h·vᵀGd + c²·dᵀGd.
            let tau = (c * vgd - c * c * dgd / h) / h;
            TAU.with(|t| {
                let mut t = t.borrow_mut();
                if t.len() < robot.n_legs {
                    t.resize(robot.n_legs, 0.0);
                }
                t[i] = tau;
            });
            shift = Some((c, d));
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
        v[r.clone()].copy_from_slice(&v_new);
        if let Some((c, w)) = shift {
            for (x, y) in q[r].iter_mut().zip(&w) {
                *x += c * y;
            }
        }
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
                "kcorr" => Variant::CorrKernel,
                s if s.starts_with("corr") => Variant::Corr(s[4..].parse().unwrap_or(0.5)),
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
        let k = InstanceRecord::new(&robot, h, theta);
        let k_sub = InstanceRecord::new(
            &robot,
            h / if let Variant::Substep(mm) = var {
                mm as f64
            } else {
                1.0
            },
            theta,
        );
        TAU.with(|t| t.borrow_mut().clear());
        let (mut q, mut v) = robot.initial_state();
        let n = (t_final / h).round() as usize;
        let (mut worst_step, mut worst_sample, mut at) = (0.0f64, 0.0f64, 0.0);
        let mut substeps = 0usize;
        let clock = std::time::Instant::now();
        for s in 0..n {
            match var {
                Variant::Library | Variant::Theta(_) => {
                    step(&k, &mut q, &mut v);
                }
                Variant::Copy
                | Variant::ResolveVgv
                | Variant::ResolveVgvMean(_)
                | Variant::Project
                | Variant::ProjectDrift
                | Variant::MeanProject
                | Variant::MeanProjectLinear
                | Variant::Corr(_)
                | Variant::CorrKernel
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
                            step(&k_sub, &mut q, &mut v);
                        }
                        substeps += mm;
                    } else {
                        step(&k, &mut q, &mut v);
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
