//! The stiff reference integrator: ESDIRK3(4) (4 stages, L-stable, stiffly accurate,
//! the tableau diffsol calls `esdirk34`) with embedded error control, written for
//! this model's structure.
//!
//! Why not hand everything to a general solver: with y = (q, v) each implicit stage
//! only needs V (Q = q̃ + hγV), so Newton works on `I − hγ·∂a/∂v − (hγ)²·∂a/∂q` of
//! size 4nN+3 instead of 2(4nN+3)+1, and that matrix is banded (legs couple to their
//! neighbours only through base nodes) with a dense 3-wide border (the body). The
//! Jacobian takes ~60 structured finite differences instead of ~370, and the LU
//! costs O(N) instead of O(N³). diffsol's BDF/ESDIRK on the full dense system gave the
//! same solution (tested) at 5–10× the cost.

use super::bordered_band::{BorderedBand, SingularMatrix};
use super::events::{DenseStep, Switching};
use super::settings::{ReferenceSettings, SolverStats};
use crate::model::contact::gap;
use crate::model::{ContactMode, Powers, Robot};
use crate::sample::{state_is_sane, Deadline, Sample, SampleTimes, SolverFailure, Status};

const GAMMA: f64 = 0.435_866_521_508_459;
const A: [[f64; 4]; 4] = [
    [0.0, 0.0, 0.0, 0.0],
    [GAMMA, GAMMA, 0.0, 0.0],
    [
        0.140_737_774_724_706_2,
        -0.108_365_551_381_320_8,
        GAMMA,
        0.0,
    ],
    [
        0.102_399_400_619_911,
        -0.376_878_452_255_556_1,
        0.838_612_530_127_186_1,
        GAMMA,
    ],
];
/// b − b̂ (error weights).
const D: [f64; 4] = [
    -0.054_625_497_240_413_94,
    -0.494_208_893_625_994_96,
    0.221_934_499_735_064_66,
    0.326_899_891_131_344_27,
];
const STAGES: usize = 4;
/// Stage times c_i = Σ_j A_ij (in units of the step).
const C: [f64; 4] = [
    A[0][0] + A[0][1] + A[0][2] + A[0][3],
    A[1][0] + A[1][1] + A[1][2] + A[1][3],
    A[2][0] + A[2][1] + A[2][2] + A[2][3],
    A[3][0] + A[3][1] + A[3][2] + A[3][3],
];
/// Newton stops when the estimated remaining error is below KAPPA (in tolerance units).
const KAPPA: f64 = 0.05;
const MAX_NEWTON: usize = 8;

/// Accelerations and actuation power of the robot in the held contact mode: the
/// right-hand side (smooth within a step; see `events`).
struct System<'a> {
    robot: &'a Robot,
    nq: usize,
    evals: usize,
    mode: ContactMode,
    /// The robot without its internal couple, when the Newton matrix is to leave the
    /// couple out (`ReferenceSettings::couple_in_newton` false and a couple present).
    uncoupled: Option<Robot>,
}

impl<'a> System<'a> {
    fn new(robot: &'a Robot, q: &[f64], couple_in_newton: bool) -> System<'a> {
        let uncoupled = (!couple_in_newton && robot.p.axo_f != 0.0).then(|| {
            let mut p = robot.p.clone();
            p.axo_f = 0.0;
            Robot::new(&p)
        });
        System {
            robot,
            nq: robot.nq(),
            evals: 0,
            mode: ContactMode::of_state(robot, q),
            uncoupled,
        }
    }

    fn accel(&mut self, t: f64, q: &[f64], v: &[f64], a: &mut [f64]) -> Powers {
        self.evals += 1;
        self.robot.accelerations_in(t, q, v, a, &self.mode)
    }

    /// ∂a/∂q and ∂a/∂v (dense row-major) at time t by forward differences, columns
    /// grouped by the model's structure so that columns sharing a group touch disjoint
    /// rows (the couple acts within a leg, so it keeps the grouping).
    fn jacobian(
        &mut self,
        t: f64,
        q: &[f64],
        v: &[f64],
        a0: &[f64],
        jq: &mut [f64],
        jv: &mut [f64],
    ) {
        let (nq, l) = (self.nq, self.robot.leg_dofs);
        let robot = self.uncoupled.as_ref().unwrap_or(self.robot);
        let mode = self.mode;
        let mut evals = 0;
        let mut accel = |q: &[f64], v: &[f64], a: &mut [f64]| {
            evals += 1;
            robot.accelerations_in(t, q, v, a, &mode);
        };
        let mut base = Vec::new();
        let a0 = if self.uncoupled.is_some() {
            base.resize(nq, 0.0);
            accel(q, v, &mut base);
            &base[..]
        } else {
            a0
        };
        let n_legs = robot.n_legs;
        let body = n_legs * l;
        let (a1, c1) = (robot.idx.a(0), robot.idx.c(0));
        let mut qp = q.to_vec();
        let mut vp = v.to_vec();
        let mut ap = vec![0.0; nq];
        let step = |x: f64| f64::EPSILON.sqrt() * x.abs().max(1.0);
        // Velocity columns: leg velocities act on their own leg only, body velocities on
        // the body only; so local column k of every leg and body column k share a group.
        for k in 0..l {
            let mut cols: Vec<usize> = (0..n_legs).map(|i| i * l + k).collect();
            if k < 3 {
                cols.push(body + k);
            }
            let deltas: Vec<f64> = cols.iter().map(|&c| step(v[c])).collect();
            for (&c, d) in cols.iter().zip(&deltas) {
                vp[c] = v[c] + d;
            }
            accel(q, &vp, &mut ap);
            for (&c, d) in cols.iter().zip(&deltas) {
                vp[c] = v[c];
                let rows = if c >= body {
                    body..nq
                } else {
                    (c / l) * l..(c / l + 1) * l
                };
                for r in rows {
                    jv[r * nq + c] = (ap[r] - a0[r]) / d;
                }
            }
        }
        // Interior position columns (not a base node) act on their own leg only.
        for k in (0..l).filter(|&k| k != a1 && k != c1) {
            let cols: Vec<usize> = (0..n_legs).map(|i| i * l + k).collect();
            let deltas: Vec<f64> = cols.iter().map(|&c| step(q[c])).collect();
            for (&c, d) in cols.iter().zip(&deltas) {
                qp[c] = q[c] + d;
            }
            accel(&qp, v, &mut ap);
            for (&c, d) in cols.iter().zip(&deltas) {
                qp[c] = q[c];
                for r in (c / l) * l..(c / l + 1) * l {
                    jq[r * nq + c] = (ap[r] - a0[r]) / d;
                }
            }
        }
        // Base-node and body positions reach neighbours and the body: one at a time.
        let wide: Vec<usize> = (0..n_legs)
            .flat_map(|i| [i * l + a1, i * l + c1])
            .chain(body..nq)
            .collect();
        for c in wide {
            let d = step(q[c]);
            qp[c] = q[c] + d;
            accel(&qp, v, &mut ap);
            qp[c] = q[c];
            for r in 0..nq {
                jq[r * nq + c] = (ap[r] - a0[r]) / d;
            }
        }
        self.evals += evals;
    }
}

/// ∂a/∂q and ∂a/∂v of the robot at (q, v), dense row-major `nq × nq` each: the
/// finite-difference Jacobian the reference uses (also for spectrum measurements).
pub fn acceleration_jacobian(robot: &Robot, q: &[f64], v: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let nq = robot.nq();
    let mut sys = System::new(robot, q, true);
    let mut a0 = vec![0.0; nq];
    sys.accel(0.0, q, v, &mut a0);
    let (mut jq, mut jv) = (vec![0.0; nq * nq], vec![0.0; nq * nq]);
    sys.jacobian(0.0, q, v, &a0, &mut jq, &mut jv);
    (jq, jv)
}

/// Weighted RMS norm of e with weights atol + rtol·max(|y0|, |y1|) (no scale vector).
fn wrms(e: &[f64], y0: &[f64], y1: &[f64], rtol: f64, atol: f64) -> f64 {
    let s: f64 = e
        .iter()
        .zip(y0.iter().zip(y1))
        .map(|(e, (a, b))| {
            let w = e / (atol + rtol * a.abs().max(b.abs()));
            w * w
        })
        .sum();
    (s / e.len() as f64).sqrt()
}

/// The Newton matrix I − hγJ_v − (hγ)²J_q, written on the band and border of `newton`
/// (the factorisation touches nothing else), then factorised.
fn factor_newton_matrix(
    newton: &mut BorderedBand,
    jq: &[f64],
    jv: &[f64],
    hg: f64,
) -> Result<(), SingularMatrix> {
    let nq = newton.n;
    newton.a.fill(0.0);
    for r in 0..nq {
        for c in newton.pattern(r) {
            let i = r * nq + c;
            newton.a[i] = -hg * jv[i] - hg * hg * jq[i] + if r == c { 1.0 } else { 0.0 };
        }
    }
    newton.factor()
}

/// What the error estimate of a step reads: the stages' slopes and accelerations, the
/// Jacobian's position block, the factorised Newton matrix, h and hγ.
struct ErrorInputs<'a> {
    vs: &'a [Vec<f64>],
    accs: &'a [Vec<f64>],
    jq: &'a [f64],
    newton: &'a BorderedBand,
    h_step: f64,
    hg: f64,
}

/// The step's error norm (≤ 1: accept): the embedded estimate (weights `D`) of q and
/// v, filtered through (I − hγJ)⁻¹ (Hairer–Wanner: stiff components, servo and
/// penalty, are damped by the method but not by the raw estimate), in the weighted RMS
/// norm of each of q and v against its old and new value (`states`). `err` and `res`
/// are scratch space.
fn error_norm(
    x: ErrorInputs,
    states: [(&[f64], &[f64]); 2],
    (rtol, atol): (f64, f64),
    (err_q, err_v): (&mut [f64], &mut [f64]),
    res: &mut [f64],
) -> f64 {
    let nq = err_q.len();
    for k in 0..nq {
        let (mut eq, mut ev) = (0.0, 0.0);
        for (j, d) in D.iter().enumerate() {
            eq += d * x.vs[j][k];
            ev += d * x.accs[j][k];
        }
        err_q[k] = x.h_step * eq;
        err_v[k] = x.h_step * ev;
    }
    // Reduced form: M e'_v = e_v + hγ A_q e_q, e'_q = e_q + hγ e'_v.
    for r in 0..nq {
        let row = &x.jq[r * nq..(r + 1) * nq];
        res[r] = err_v[r] + x.hg * x.newton.pattern(r).map(|c| row[c] * err_q[c]).sum::<f64>();
    }
    x.newton.solve(res);
    err_v.copy_from_slice(res);
    for (e, r) in err_q.iter_mut().zip(res.iter()) {
        *e += x.hg * r;
    }
    let [(q, q_new), (v, v_new)] = states;
    let eq = wrms(err_q, q, q_new, rtol, atol);
    let ev = wrms(err_v, v, v_new, rtol, atol);
    ((eq * eq + ev * ev) / 2.0).sqrt()
}

/// Hand `on_sample` the samples inside the accepted step (t, t_new], from the step's
/// cubic Hermite interpolant (work interpolated linearly between `works`), starting
/// at sample `next`; returns the next sample still to come.
fn emit_samples(
    robot: &Robot,
    sample_times: &SampleTimes,
    mut next: usize,
    (t, t_new): (f64, f64),
    dense: &DenseStep,
    (work, w_new): (&Powers, &Powers),
    on_sample: &mut dyn FnMut(&Sample),
) -> usize {
    let nq = dense.q0.len();
    while next < sample_times.len() && sample_times.at(next) <= t_new {
        let ts = sample_times.at(next);
        let s = (ts - t) / dense.h;
        let (mut qi, mut vi) = (vec![0.0; nq], vec![0.0; nq]);
        dense.q(s, &mut qi);
        dense.v(s, &mut vi);
        let within = |f: fn(&Powers) -> f64| f(work) + s * (f(w_new) - f(work));
        let mut smp = Sample::from_state(robot, ts, &qi, within(|p| p.servo));
        smp.work_axo = within(|p| p.couple);
        smp.v = vi;
        on_sample(&smp);
        next += 1;
    }
    next
}

/// Integrate from the initial state to `t_final`; see [`crate::reference::run_reference`].
pub fn integrate(
    robot: &Robot,
    settings: &ReferenceSettings,
    sample_times: &SampleTimes,
    deadline: Deadline,
    on_sample: &mut dyn FnMut(&Sample),
    on_progress: &mut dyn FnMut(f64),
) -> (Status, SolverStats) {
    let t_final = robot.p.t_final;
    let nq = robot.nq();
    let l = robot.leg_dofs;
    let (rtol, atol) = (settings.rtol, settings.atol);
    let (mut q, mut v) = robot.initial_state();
    let mut sys = System::new(robot, &q, settings.couple_in_newton);
    let mut stats = SolverStats::default();
    let switching = Switching::new(atol);
    // A contact switch located inside the last step: (surface, its time). The step is
    // retaken to end there, and the mode switches at its end.
    let mut pending: Option<(usize, f64)> = None;
    let mut scratch = vec![0.0; nq];
    let mut work = Powers::default();
    let mut t = 0.0;
    let mut a_n = vec![0.0; nq];
    let mut p_n = sys.accel(t, &q, &v, &mut a_n);

    // Stage storage: velocities (= q-slopes), accelerations and powers.
    let mut vs = vec![vec![0.0; nq]; STAGES];
    let mut accs = vec![vec![0.0; nq]; STAGES];
    let mut pw = [Powers::default(); STAGES];
    let (mut q_t, mut v_t) = (vec![0.0; nq], vec![0.0; nq]);
    let (mut q_s, mut res) = (vec![0.0; nq], vec![0.0; nq]);
    let (mut q_new, mut v_new) = (vec![0.0; nq], vec![0.0; nq]);
    let (mut err_q, mut err_v) = (vec![0.0; nq], vec![0.0; nq]);

    // Jacobian and the factorised Newton matrix.
    let (mut jq, mut jv) = (vec![0.0; nq * nq], vec![0.0; nq * nq]);
    let mut newton = BorderedBand::new(nq, 3, 2 * l - 1, l + 2 * robot.n_nodes);
    let mut jac_fresh = false;
    let mut jac_valid = false;
    let mut lu_hg = f64::NAN;

    let mut next = 0usize;
    if sample_times.first() == Some(&0.0) {
        let mut smp = Sample::from_state(robot, 0.0, &q, 0.0);
        smp.v = v.clone();
        on_sample(&smp);
        next = 1;
    }

    let mut h = 1e-6_f64.min(t_final);
    let mut rejected_last = false;
    let mut stalled = 0usize;
    let mut err_prev = 1.0_f64;
    let failed = |time: f64, reason: SolverFailure| Status::SolverFailed { time, reason };
    let status = loop {
        if stats.steps >= settings.max_steps || deadline.passed() {
            break Status::BudgetExceeded { time: t };
        }
        stalled = if h < settings.stall_step {
            stalled + 1
        } else {
            0
        };
        if stalled > settings.stall_steps {
            break failed(t, SolverFailure::Stalled);
        }
        let (h_step, last) = match pending {
            Some((_, t_event)) => (t_event - t, false),
            None if t + h >= t_final * (1.0 - 1e-14) || t + 1.01 * h > t_final => {
                (t_final - t, true)
            }
            None => (h, false),
        };
        let hg = h_step * GAMMA;
        if !jac_valid {
            sys.jacobian(t, &q, &v, &a_n, &mut jq, &mut jv);
            stats.jacobian_evals += 1;
            jac_valid = true;
            jac_fresh = true;
            lu_hg = f64::NAN;
        }
        if lu_hg != hg {
            if factor_newton_matrix(&mut newton, &jq, &jv, hg).is_err() {
                break failed(t, SolverFailure::SingularMatrix);
            }
            stats.lu_factorizations += 1;
            lu_hg = hg;
        }

        // Stage 0 is explicit (FSAL): the derivative at y_n.
        vs[0].copy_from_slice(&v);
        accs[0].copy_from_slice(&a_n);
        pw[0] = p_n;
        let mut newton_failed = false;
        let mut max_rate: f64 = 0.0;
        for i in 1..STAGES {
            for k in 0..nq {
                let (mut sq, mut sv) = (0.0, 0.0);
                for j in 0..i {
                    sq += A[i][j] * vs[j][k];
                    sv += A[i][j] * accs[j][k];
                }
                q_t[k] = q[k] + h_step * sq;
                v_t[k] = v[k] + h_step * sv;
            }
            // Predictor: V_i = ṽ + hγ a_i with a_i ≈ the previous stage's acceleration.
            let vi = &mut vs[i];
            for k in 0..nq {
                vi[k] = v_t[k] + hg * accs[i - 1][k];
            }
            let mut prev_norm = f64::NAN;
            let mut converged = false;
            for it in 0..MAX_NEWTON {
                for k in 0..nq {
                    q_s[k] = q_t[k] + hg * vi[k];
                }
                pw[i] = sys.accel(t + C[i] * h_step, &q_s, vi, &mut accs[i]);
                for k in 0..nq {
                    res[k] = -(vi[k] - v_t[k] - hg * accs[i][k]);
                }
                if !res.iter().all(|x| x.is_finite()) {
                    break;
                }
                newton.solve(&mut res);
                stats.newton_iterations += 1;
                for k in 0..nq {
                    vi[k] += res[k];
                }
                let norm = wrms(&res, vi, vi, rtol, atol);
                if it == 0 {
                    if norm < 1e-3 * KAPPA {
                        converged = true;
                    }
                } else {
                    let rate = norm / prev_norm;
                    max_rate = max_rate.max(rate);
                    if rate >= 0.9 {
                        break;
                    }
                    if rate / (1.0 - rate) * norm <= KAPPA || norm < 1e-3 * KAPPA {
                        converged = true;
                    }
                }
                if converged {
                    for k in 0..nq {
                        q_s[k] = q_t[k] + hg * vi[k];
                    }
                    pw[i] = sys.accel(t + C[i] * h_step, &q_s, vi, &mut accs[i]);
                    break;
                }
                prev_norm = norm;
            }
            if !converged {
                newton_failed = true;
                break;
            }
        }

        if newton_failed {
            stats.newton_failures += 1;
            if jac_fresh {
                if pending.take().is_some() {
                    h = h_step;
                }
                h *= 0.25;
            } else {
                jac_valid = false;
            }
            if h < settings.min_step {
                break failed(t, SolverFailure::MinStep);
            }
            continue;
        }

        // Stiffly accurate: the last stage is the new state.
        for k in 0..nq {
            q_new[k] = q_t[k] + hg * vs[STAGES - 1][k];
            v_new[k] = vs[STAGES - 1][k];
        }
        let err = error_norm(
            ErrorInputs {
                vs: &vs,
                accs: &accs,
                jq: &jq,
                newton: &newton,
                h_step,
                hg,
            },
            [(&q, &q_new), (&v, &v_new)],
            (rtol, atol),
            (&mut err_q, &mut err_v),
            &mut res,
        );
        let err_ok = err.is_finite() && err <= 1.0;
        // PI step-size controller (Gustafsson), exponents for an order-2 estimate.
        let factor = if err.is_finite() {
            let e = err.max(1e-10);
            (0.9 * e.powf(-0.7 / 3.0) * err_prev.powf(0.4 / 3.0)).clamp(0.2, 2.0)
        } else {
            0.2
        };

        if !err_ok {
            stats.rejected_steps += 1;
            if pending.take().is_some() {
                h = h_step;
            }
            h *= factor.min(0.9);
            rejected_last = true;
            if h < settings.min_step {
                break failed(t, SolverFailure::MinStep);
            }
            continue;
        }

        // Contact events: a gap that crosses its threshold inside the step ends it there.
        let dense = DenseStep {
            q0: &q,
            v0: &v,
            q1: &q_new,
            v1: &v_new,
            h: h_step,
        };
        let event_step = pending.map(|(k, _)| k);
        match switching.first_crossing(robot, &sys.mode, &dense, event_step, &mut scratch) {
            Some((k, s)) if s * h_step <= 4.0 * f64::EPSILON * t.max(1.0) => {
                // At (or within rounding of) the start: switch here, retake the step.
                pending = None;
                switch_mode(&mut sys, t, k, &q, &v, &mut a_n, &mut p_n, &mut stats);
                jac_valid = false;
                continue;
            }
            Some((k, s)) if s < 1.0 => {
                pending = Some((k, t + s * h_step));
                continue;
            }
            _ => {}
        }

        // Accept.
        stats.steps += 1;
        let t_new = t + h_step;
        let stage_sum = |f: fn(&Powers) -> f64| {
            h_step
                * (0..STAGES)
                    .map(|j| A[STAGES - 1][j] * f(&pw[j]))
                    .sum::<f64>()
        };
        let w_new = Powers {
            servo: work.servo + stage_sum(|p| p.servo),
            couple: work.couple + stage_sum(|p| p.couple),
        };
        if !state_is_sane(&q_new) || !v_new.iter().all(|x| x.is_finite()) {
            break Status::Diverged { time: t_new };
        }
        next = emit_samples(
            robot,
            sample_times,
            next,
            (t, t_new),
            &dense,
            (&work, &w_new),
            on_sample,
        );
        std::mem::swap(&mut q, &mut q_new);
        std::mem::swap(&mut v, &mut v_new);
        a_n.copy_from_slice(&accs[STAGES - 1]);
        p_n = pw[STAGES - 1];
        work = w_new;
        t = t_new;
        on_progress(t);
        if last {
            break Status::Ok;
        }
        if let Some((k, _)) = pending.take() {
            // The step ends at the located switch: change the mode (unless the step fell
            // short of the band's middle; the next step then locates the rest) and keep h,
            // which the cut step did not test.
            if switching.may_switch(&sys.mode, robot, k, gap(robot, &q, k)) {
                switch_mode(&mut sys, t, k, &q, &v, &mut a_n, &mut p_n, &mut stats);
                jac_valid = false;
            }
            rejected_last = false;
            continue;
        }
        // Step-size choice; keep h (and the LU) when the change would be small.
        let mut ratio = factor;
        if rejected_last {
            ratio = ratio.min(1.0);
        }
        if !(0.9..=1.3).contains(&ratio) {
            h *= ratio;
        }
        rejected_last = false;
        jac_fresh = false;
        err_prev = err.max(1e-4);
        // Slow Newton convergence: the Jacobian is stale (contact switched, legs turned).
        if max_rate > 0.25 {
            jac_valid = false;
        }
    };
    stats.rhs_evals = sys.evals;
    (status, stats)
}

/// Flip surface `k`'s contact mode at (q, v) and re-evaluate the derivative there (the
/// first stage of the next step), counting the event.
#[allow(clippy::too_many_arguments)]
fn switch_mode(
    sys: &mut System,
    t: f64,
    k: usize,
    q: &[f64],
    v: &[f64],
    a_n: &mut [f64],
    p_n: &mut Powers,
    stats: &mut SolverStats,
) {
    let on = sys.mode.get(sys.robot, k);
    sys.mode.set(sys.robot, k, !on);
    *p_n = sys.accel(t, q, v, a_n);
    stats.contact_events += 1;
}
