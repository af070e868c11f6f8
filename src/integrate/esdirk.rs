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
        // With the coupling's dampers base-node and body velocities reach neighbours and
        // the body as their positions do: those go one at a time with them below.
        let damped = robot.p.has_coupling_dampers();
        let wide_v = |k: usize| damped && (k == a1 || k == c1);
        for k in (0..l).filter(|&k| !wide_v(k)) {
            let mut cols: Vec<usize> = (0..n_legs).map(|i| i * l + k).collect();
            if k < 3 && !damped {
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
        for &c in &wide {
            let d = step(q[c]);
            qp[c] = q[c] + d;
            accel(&qp, v, &mut ap);
            qp[c] = q[c];
            for r in 0..nq {
                jq[r * nq + c] = (ap[r] - a0[r]) / d;
            }
        }
        if damped {
            for &c in &wide {
                let d = step(v[c]);
                vp[c] = v[c] + d;
                accel(q, &vp, &mut ap);
                vp[c] = v[c];
                for r in 0..nq {
                    jv[r * nq + c] = (ap[r] - a0[r]) / d;
                }
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
        smp.work_coupling = within(|p| p.coupling);
        smp.v = vi;
        on_sample(&smp);
        next += 1;
    }
    next
}

/// Integrate from the initial state to `t_final`; see [`crate::reference::run_reference`].
/// Each step: size it (an event located in the last try ends it there), refresh the
/// Jacobian and the Newton matrix where needed, solve the implicit stages, estimate the
/// error, locate contact switches inside the step, accept (samples, work) or retake.
pub fn integrate(
    robot: &Robot,
    settings: &ReferenceSettings,
    sample_times: &SampleTimes,
    deadline: Deadline,
    on_sample: &mut dyn FnMut(&Sample),
    on_progress: &mut dyn FnMut(f64),
) -> (Status, SolverStats) {
    let mut st = Stepper::new(robot, settings);
    let mut next = 0usize;
    if sample_times.first() == Some(&0.0) {
        let mut smp = Sample::from_state(robot, 0.0, &st.q, 0.0);
        smp.v = st.v.clone();
        on_sample(&smp);
        next = 1;
    }
    let status = loop {
        if let Some(stop) = st.out_of_budget_or_stalled(deadline) {
            break stop;
        }
        let (h_step, last) = st.step_size();
        let hg = h_step * GAMMA;
        if let Err(stop) = st.refresh_newton_matrix(hg) {
            break stop;
        }
        let Some(max_rate) = st.solve_stages(h_step, hg) else {
            match st.after_newton_failure(h_step) {
                Ok(()) => continue,
                Err(stop) => break stop,
            }
        };
        let err = st.error_estimate(h_step, hg);
        // PI step-size controller (Gustafsson), exponents for an order-2 estimate.
        let factor = if err.is_finite() {
            let e = err.max(1e-10);
            (0.9 * e.powf(-0.7 / 3.0) * st.err_prev.powf(0.4 / 3.0)).clamp(0.2, 2.0)
        } else {
            0.2
        };
        if !(err.is_finite() && err <= 1.0) {
            match st.reject(h_step, factor) {
                Ok(()) => continue,
                Err(stop) => break stop,
            }
        }
        if st.switch_inside_step(h_step) {
            continue;
        }
        match st.accept(h_step, sample_times, &mut next, on_sample) {
            Ok(t) => on_progress(t),
            Err(stop) => break stop,
        }
        if last {
            break Status::Ok;
        }
        st.after_accept(factor, err, max_rate);
    };
    st.stats.rhs_evals = st.sys.evals;
    (status, st.stats)
}

/// The reference integration between steps: the state, the step size and controller
/// memory, the Jacobian and the factorised Newton matrix, the contact switch located
/// in the last try, and the work space of the stages.
struct Stepper<'a> {
    robot: &'a Robot,
    settings: &'a ReferenceSettings,
    sys: System<'a>,
    stats: SolverStats,
    switching: Switching,
    /// A contact switch located inside the last step: (surface, its time). The step is
    /// retaken to end there, and the mode switches at its end.
    pending: Option<(usize, f64)>,
    t: f64,
    q: Vec<f64>,
    v: Vec<f64>,
    /// The derivative at (t, q, v) (the first, explicit stage of the next step) and the
    /// actuation power there.
    a_n: Vec<f64>,
    p_n: Powers,
    work: Powers,
    h: f64,
    rejected_last: bool,
    stalled: usize,
    err_prev: f64,
    jac: NewtonMatrix,
    ws: Workspace,
}

/// The Jacobian blocks, the factorised Newton matrix and whether they still serve.
struct NewtonMatrix {
    jq: Vec<f64>,
    jv: Vec<f64>,
    newton: BorderedBand,
    /// Taken at the current state (not carried over from an earlier step).
    fresh: bool,
    valid: bool,
    /// The hγ the factors are of (NaN: none).
    lu_hg: f64,
}

/// Stage storage (velocities = q-slopes, accelerations, powers) and the step's vectors.
struct Workspace {
    vs: Vec<Vec<f64>>,
    accs: Vec<Vec<f64>>,
    pw: [Powers; STAGES],
    q_t: Vec<f64>,
    v_t: Vec<f64>,
    q_s: Vec<f64>,
    res: Vec<f64>,
    q_new: Vec<f64>,
    v_new: Vec<f64>,
    err_q: Vec<f64>,
    err_v: Vec<f64>,
    scratch: Vec<f64>,
}

impl<'a> Stepper<'a> {
    fn new(robot: &'a Robot, settings: &'a ReferenceSettings) -> Stepper<'a> {
        let nq = robot.nq();
        let l = robot.leg_dofs;
        let (q, v) = robot.initial_state();
        let mut sys = System::new(robot, &q, settings.couple_in_newton);
        let mut a_n = vec![0.0; nq];
        let p_n = sys.accel(0.0, &q, &v, &mut a_n);
        let zeros = || vec![0.0; nq];
        Stepper {
            robot,
            settings,
            sys,
            stats: SolverStats::default(),
            switching: Switching::new(settings.atol),
            pending: None,
            t: 0.0,
            q,
            v,
            a_n,
            p_n,
            work: Powers::default(),
            h: 1e-6_f64.min(robot.p.t_final),
            rejected_last: false,
            stalled: 0,
            err_prev: 1.0,
            jac: NewtonMatrix {
                jq: vec![0.0; nq * nq],
                jv: vec![0.0; nq * nq],
                newton: BorderedBand::new(nq, 3, 2 * l - 1, l + 2 * robot.n_nodes),
                fresh: false,
                valid: false,
                lu_hg: f64::NAN,
            },
            ws: Workspace {
                vs: vec![zeros(); STAGES],
                accs: vec![zeros(); STAGES],
                pw: [Powers::default(); STAGES],
                q_t: zeros(),
                v_t: zeros(),
                q_s: zeros(),
                res: zeros(),
                q_new: zeros(),
                v_new: zeros(),
                err_q: zeros(),
                err_v: zeros(),
                scratch: zeros(),
            },
        }
    }

    fn failed(&self, reason: SolverFailure) -> Status {
        Status::SolverFailed {
            time: self.t,
            reason,
        }
    }

    /// The step budget or the deadline spent, or the step size stuck below
    /// `stall_step` for more than `stall_steps` tries.
    fn out_of_budget_or_stalled(&mut self, deadline: Deadline) -> Option<Status> {
        if self.stats.steps >= self.settings.max_steps || deadline.passed() {
            return Some(Status::BudgetExceeded { time: self.t });
        }
        self.stalled = if self.h < self.settings.stall_step {
            self.stalled + 1
        } else {
            0
        };
        (self.stalled > self.settings.stall_steps).then(|| self.failed(SolverFailure::Stalled))
    }

    /// This try's step and whether it ends the run: to a located switch, else h (the
    /// last step stretched or cut to land on t_final).
    fn step_size(&self) -> (f64, bool) {
        let (t, h, t_final) = (self.t, self.h, self.robot.p.t_final);
        match self.pending {
            Some((_, t_event)) => (t_event - t, false),
            None if t + h >= t_final * (1.0 - 1e-14) || t + 1.01 * h > t_final => {
                (t_final - t, true)
            }
            None => (h, false),
        }
    }

    /// A new Jacobian where the last one no longer serves, a new factorisation where hγ
    /// changed.
    fn refresh_newton_matrix(&mut self, hg: f64) -> Result<(), Status> {
        let jac = &mut self.jac;
        if !jac.valid {
            let (t, q, v) = (self.t, &self.q, &self.v);
            self.sys
                .jacobian(t, q, v, &self.a_n, &mut jac.jq, &mut jac.jv);
            self.stats.jacobian_evals += 1;
            jac.valid = true;
            jac.fresh = true;
            jac.lu_hg = f64::NAN;
        }
        if jac.lu_hg != hg {
            if factor_newton_matrix(&mut jac.newton, &jac.jq, &jac.jv, hg).is_err() {
                return Err(self.failed(SolverFailure::SingularMatrix));
            }
            self.stats.lu_factorizations += 1;
            jac.lu_hg = hg;
        }
        Ok(())
    }

    /// The stages of one step; the new state into `q_new`, `v_new`. Returns Newton's
    /// largest contraction rate, or None where a stage did not converge.
    #[allow(clippy::needless_range_loop)] // k runs over several vectors at once
    fn solve_stages(&mut self, h_step: f64, hg: f64) -> Option<f64> {
        let nq = self.q.len();
        // Stage 0 is explicit (FSAL): the derivative at y_n.
        self.ws.vs[0].copy_from_slice(&self.v);
        self.ws.accs[0].copy_from_slice(&self.a_n);
        self.ws.pw[0] = self.p_n;
        let mut max_rate: f64 = 0.0;
        for i in 1..STAGES {
            let ws = &mut self.ws;
            for k in 0..nq {
                let (mut sq, mut sv) = (0.0, 0.0);
                for j in 0..i {
                    sq += A[i][j] * ws.vs[j][k];
                    sv += A[i][j] * ws.accs[j][k];
                }
                ws.q_t[k] = self.q[k] + h_step * sq;
                ws.v_t[k] = self.v[k] + h_step * sv;
            }
            // Predictor: V_i = ṽ + hγ a_i with a_i ≈ the previous stage's acceleration.
            for k in 0..nq {
                ws.vs[i][k] = ws.v_t[k] + hg * ws.accs[i - 1][k];
            }
            let rate = self.newton_stage(i, self.t + C[i] * h_step, hg)?;
            max_rate = max_rate.max(rate);
        }
        // Stiffly accurate: the last stage is the new state.
        let ws = &mut self.ws;
        for k in 0..nq {
            ws.q_new[k] = ws.q_t[k] + hg * ws.vs[STAGES - 1][k];
            ws.v_new[k] = ws.vs[STAGES - 1][k];
        }
        Some(max_rate)
    }

    /// Newton's iterations for stage i's velocity at time `ts` from the predictor in
    /// `vs[i]`; returns the largest contraction rate, None where it did not converge.
    #[allow(clippy::needless_range_loop)] // k runs over several vectors at once
    fn newton_stage(&mut self, i: usize, ts: f64, hg: f64) -> Option<f64> {
        let (rtol, atol) = (self.settings.rtol, self.settings.atol);
        let ws = &mut self.ws;
        let nq = ws.q_t.len();
        let (vi, accs) = (&mut ws.vs[i], &mut ws.accs);
        let mut prev_norm = f64::NAN;
        let mut max_rate: f64 = 0.0;
        for it in 0..MAX_NEWTON {
            for k in 0..nq {
                ws.q_s[k] = ws.q_t[k] + hg * vi[k];
            }
            ws.pw[i] = self.sys.accel(ts, &ws.q_s, vi, &mut accs[i]);
            for k in 0..nq {
                ws.res[k] = -(vi[k] - ws.v_t[k] - hg * accs[i][k]);
            }
            if !ws.res.iter().all(|x| x.is_finite()) {
                return None;
            }
            self.jac.newton.solve(&mut ws.res);
            self.stats.newton_iterations += 1;
            for k in 0..nq {
                vi[k] += ws.res[k];
            }
            let norm = wrms(&ws.res, vi, vi, rtol, atol);
            let converged = if it == 0 {
                norm < 1e-3 * KAPPA
            } else {
                let rate = norm / prev_norm;
                max_rate = max_rate.max(rate);
                if rate >= 0.9 {
                    return None;
                }
                rate / (1.0 - rate) * norm <= KAPPA || norm < 1e-3 * KAPPA
            };
            if converged {
                for k in 0..nq {
                    ws.q_s[k] = ws.q_t[k] + hg * vi[k];
                }
                ws.pw[i] = self.sys.accel(ts, &ws.q_s, vi, &mut accs[i]);
                return Some(max_rate);
            }
            prev_norm = norm;
        }
        None
    }

    /// Newton failed: retry with a new Jacobian, or (it was fresh) a quarter of the
    /// step, dropping a located switch.
    fn after_newton_failure(&mut self, h_step: f64) -> Result<(), Status> {
        self.stats.newton_failures += 1;
        if self.jac.fresh {
            if self.pending.take().is_some() {
                self.h = h_step;
            }
            self.h *= 0.25;
        } else {
            self.jac.valid = false;
        }
        self.check_min_step()
    }

    fn check_min_step(&self) -> Result<(), Status> {
        if self.h < self.settings.min_step {
            return Err(self.failed(SolverFailure::MinStep));
        }
        Ok(())
    }

    /// The step's error norm (≤ 1: accept), see [`error_norm`].
    fn error_estimate(&mut self, h_step: f64, hg: f64) -> f64 {
        let ws = &mut self.ws;
        error_norm(
            ErrorInputs {
                vs: &ws.vs,
                accs: &ws.accs,
                jq: &self.jac.jq,
                newton: &self.jac.newton,
                h_step,
                hg,
            },
            [(&self.q, &ws.q_new), (&self.v, &ws.v_new)],
            (self.settings.rtol, self.settings.atol),
            (&mut ws.err_q, &mut ws.err_v),
            &mut ws.res,
        )
    }

    /// The error is too large: a shorter step, dropping a located switch.
    fn reject(&mut self, h_step: f64, factor: f64) -> Result<(), Status> {
        self.stats.rejected_steps += 1;
        if self.pending.take().is_some() {
            self.h = h_step;
        }
        self.h *= factor.min(0.9);
        self.rejected_last = true;
        self.check_min_step()
    }

    /// Contact events: a gap that crosses its threshold inside the step ends it there
    /// (the step is retaken to the crossing); one at (or within rounding of) the start
    /// switches the mode at once. True where the step is to be retaken.
    fn switch_inside_step(&mut self, h_step: f64) -> bool {
        let dense = DenseStep {
            q0: &self.q,
            v0: &self.v,
            q1: &self.ws.q_new,
            v1: &self.ws.v_new,
            h: h_step,
        };
        let event_step = self.pending.map(|(k, _)| k);
        let crossing = self.switching.first_crossing(
            self.robot,
            &self.sys.mode,
            &dense,
            event_step,
            &mut self.ws.scratch,
        );
        match crossing {
            Some((k, s)) if s * h_step <= 4.0 * f64::EPSILON * self.t.max(1.0) => {
                self.pending = None;
                self.switch_mode(k);
                true
            }
            Some((k, s)) if s < 1.0 => {
                self.pending = Some((k, self.t + s * h_step));
                true
            }
            _ => false,
        }
    }

    /// Take the step: the work over it, the samples inside it, the new state as the
    /// current one. Returns the new time; a state that left the physical range stops.
    fn accept(
        &mut self,
        h_step: f64,
        sample_times: &SampleTimes,
        next: &mut usize,
        on_sample: &mut dyn FnMut(&Sample),
    ) -> Result<f64, Status> {
        self.stats.steps += 1;
        let t_new = self.t + h_step;
        let ws = &mut self.ws;
        let pw = &ws.pw;
        let stage_sum = |f: fn(&Powers) -> f64| {
            h_step
                * (0..STAGES)
                    .map(|j| A[STAGES - 1][j] * f(&pw[j]))
                    .sum::<f64>()
        };
        let w_new = Powers {
            servo: self.work.servo + stage_sum(|p| p.servo),
            couple: self.work.couple + stage_sum(|p| p.couple),
            coupling: self.work.coupling + stage_sum(|p| p.coupling),
        };
        if !state_is_sane(&ws.q_new) || !ws.v_new.iter().all(|x| x.is_finite()) {
            return Err(Status::Diverged { time: t_new });
        }
        let dense = DenseStep {
            q0: &self.q,
            v0: &self.v,
            q1: &ws.q_new,
            v1: &ws.v_new,
            h: h_step,
        };
        *next = emit_samples(
            self.robot,
            sample_times,
            *next,
            (self.t, t_new),
            &dense,
            (&self.work, &w_new),
            on_sample,
        );
        std::mem::swap(&mut self.q, &mut ws.q_new);
        std::mem::swap(&mut self.v, &mut ws.v_new);
        self.a_n.copy_from_slice(&ws.accs[STAGES - 1]);
        self.p_n = ws.pw[STAGES - 1];
        self.work = w_new;
        self.t = t_new;
        Ok(t_new)
    }

    /// After an accepted step: at a located switch change the mode (unless the step fell
    /// short of the band's middle; the next step then locates the rest) and keep h,
    /// which the cut step did not test; else the controller's new h (kept, with the LU,
    /// when the change would be small), and a Jacobian refresh where Newton was slow.
    fn after_accept(&mut self, factor: f64, err: f64, max_rate: f64) {
        if let Some((k, _)) = self.pending.take() {
            if self
                .switching
                .may_switch(&self.sys.mode, self.robot, k, gap(self.robot, &self.q, k))
            {
                self.switch_mode(k);
            }
            self.rejected_last = false;
            return;
        }
        let mut ratio = factor;
        if self.rejected_last {
            ratio = ratio.min(1.0);
        }
        if !(0.9..=1.3).contains(&ratio) {
            self.h *= ratio;
        }
        self.rejected_last = false;
        self.jac.fresh = false;
        self.err_prev = err.max(1e-4);
        // Slow Newton convergence: the Jacobian is stale (contact switched, legs turned).
        if max_rate > 0.25 {
            self.jac.valid = false;
        }
    }

    /// Flip surface `k`'s contact mode at the current state and re-evaluate the
    /// derivative there (the first stage of the next step), counting the event; the
    /// Jacobian is then stale.
    fn switch_mode(&mut self, k: usize) {
        let on = self.sys.mode.get(self.robot, k);
        self.sys.mode.set(self.robot, k, !on);
        self.p_n = self.sys.accel(self.t, &self.q, &self.v, &mut self.a_n);
        self.stats.contact_events += 1;
        self.jac.valid = false;
    }
}
