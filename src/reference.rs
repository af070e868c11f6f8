//! The stiff CPU reference: metachron's structured ESDIRK3(4) (`integrate::esdirk`, the
//! default), or, as a cross-check, diffsol's BDF or ESDIRK3(4) in f64 on the dense
//! first-order system y = [q, v, W, W_A, W_C] with W the actuation work ∫Σ|M0_i ψ̇_i| dt,
//! W_A the internal couples' work ∫Σ|Q_A,i·q̇_i| dt and W_C the energy the coupling's
//! dampers dissipate, ∫Σc·γ̇² dt.
//!
//! Jacobian-vector products are forward differences of the right-hand side with f(y)
//! cached (diffsol assembles the dense Jacobian column by column from them; the LU of
//! a 2·(4nN+3)+1 dense matrix is cheap next to the many steps an accurate solve takes).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::error::SolverError;
pub use crate::integrate::settings::{Method, ReferenceSettings, SolverStats};
use crate::model::Robot;
use crate::sample::{state_is_sane, Deadline, Sample, SampleTimes, SolverFailure, Status};
use diffsol::{NalgebraLU, NalgebraMat, OdeBuilder, OdeSolverMethod, OdeSolverStopReason, Vector};

/// Evaluates dy/dt for the reference's first-order system.
struct Rhs {
    robot: Robot,
    nq: usize,
    evals: Cell<usize>,
    /// (y, f(y), t) of the last base point of a Jacobian-vector product.
    cache: RefCell<(Vec<f64>, Vec<f64>, f64)>,
    scratch: RefCell<Vec<f64>>,
}

impl Rhs {
    fn eval(&self, t: f64, y: &[f64], dy: &mut [f64]) {
        self.evals.set(self.evals.get() + 1);
        let nq = self.nq;
        dy[..nq].copy_from_slice(&y[nq..2 * nq]);
        let power = self
            .robot
            .accelerations(t, &y[..nq], &y[nq..2 * nq], &mut dy[nq..2 * nq]);
        dy[2 * nq] = power.servo;
        dy[2 * nq + 1] = power.couple;
        if let Some(w) = dy.get_mut(2 * nq + 2) {
            *w = power.coupling;
        }
    }

    /// Forward-difference J·v with the base value f(y) cached across columns.
    fn jac_mul(&self, t: f64, y: &[f64], v: &[f64], out: &mut [f64]) {
        let vnorm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if vnorm == 0.0 {
            out.fill(0.0);
            return;
        }
        let mut cache = self.cache.borrow_mut();
        if cache.0.as_slice() != y || cache.2 != t {
            cache.0 = y.to_vec();
            cache.1.resize(y.len(), 0.0);
            cache.2 = t;
            let (_, fy, _) = &mut *cache;
            self.eval(t, y, fy);
        }
        let ynorm = y.iter().map(|x| x * x).sum::<f64>().sqrt() / (y.len() as f64).sqrt();
        let delta = f64::EPSILON.sqrt() * (1.0 + ynorm) / vnorm;
        let mut yp = self.scratch.borrow_mut();
        yp.clear();
        yp.extend(y.iter().zip(v).map(|(a, b)| a + delta * b));
        self.eval(t, &yp, out);
        for (o, f) in out.iter_mut().zip(&cache.1) {
            *o = (*o - f) / delta;
        }
    }
}

/// Result of one reference run.
#[derive(Debug, Clone)]
pub struct ReferenceRun {
    pub status: Status,
    pub stats: SolverStats,
}

/// Integrate the robot from its initial state to `t_final`, handing every output
/// sample (times `sample_times`, increasing, starting at 0) to `on_sample` and the
/// reached time to `on_progress`. Failures and an exhausted budget (`max_steps`,
/// `deadline`) become a [`Status`], never a panic.
/// The reference's state vector at t = 0 and its absolute tolerances: q, v and the work
/// integrals W and W_A, then W_C where the coupling has dampers (without, the system and
/// its error norm stay the paper's). The integrals are diagnostics: their tolerance is
/// scaled to their size (≈ 100 J).
fn initial_vector(robot: &Robot, atol: f64) -> (Vec<f64>, Vec<f64>) {
    let nq = robot.nq();
    let ny = 2 * nq + 2 + usize::from(robot.p.has_coupling_dampers());
    let (q0, v0) = robot.initial_state();
    let mut y0 = q0;
    y0.extend_from_slice(&v0);
    y0.resize(ny, 0.0);
    let mut tol = vec![atol; ny];
    for x in &mut tol[2 * nq..] {
        *x = atol * 1e4;
    }
    (y0, tol)
}

/// Emit the samples due up to the step just taken, which reached `t` with state `y`:
/// at `t` itself when the stop time was reached there (`at_stop`), else interpolated
/// (`interpolate`; a sample it cannot give stops the emission until the next step).
fn emit_due(
    sample_times: &SampleTimes,
    next: &mut usize,
    (t, y): (f64, &[f64]),
    at_stop: bool,
    mut interpolate: impl FnMut(f64) -> Option<Vec<f64>>,
    mut emit: impl FnMut(&[f64], f64),
) {
    while *next < sample_times.len() && sample_times.at(*next) <= t {
        let ts = sample_times.at(*next);
        let ys = if at_stop && ts >= t {
            y.to_vec()
        } else {
            match interpolate(ts) {
                Some(v) => v,
                None => break,
            }
        };
        emit(&ys, ts);
        *next += 1;
    }
}

pub fn run_reference(
    robot: &Robot,
    settings: &ReferenceSettings,
    sample_times: &SampleTimes,
    deadline: Deadline,
    mut on_sample: impl FnMut(&Sample),
    mut on_progress: impl FnMut(f64),
) -> Result<ReferenceRun, SolverError> {
    if settings.method == Method::Esdirk34 {
        let (status, stats) = crate::integrate::esdirk::integrate(
            robot,
            settings,
            sample_times,
            deadline,
            &mut on_sample,
            &mut on_progress,
        );
        return Ok(ReferenceRun { status, stats });
    }
    let t_final = robot.p.t_final;
    let nq = robot.nq();
    let (y0, atol) = initial_vector(robot, settings.atol);
    let ny = y0.len();
    let rhs = Rc::new(Rhs {
        robot: robot.clone(),
        nq,
        evals: Cell::new(0),
        cache: RefCell::new((Vec::new(), Vec::new(), f64::NAN)),
        scratch: RefCell::new(Vec::with_capacity(ny)),
    });
    let (r1, r2) = (rhs.clone(), rhs.clone());
    let init = y0.clone();
    let problem = OdeBuilder::<NalgebraMat<f64>>::new()
        .rtol(settings.rtol)
        .atol(atol)
        .rhs_implicit(
            move |y: &[f64], _p: &[f64], t: f64, dy: &mut [f64]| r1.eval(t, y, dy),
            move |y: &[f64], _p: &[f64], t: f64, v: &[f64], out: &mut [f64]| {
                r2.jac_mul(t, y, v, out)
            },
        )
        .init(
            move |_p: &[f64], _t: f64, y: &mut [f64]| y.copy_from_slice(&init),
            ny,
        )
        .build()
        .map_err(SolverError::Setup)?;

    let mut next = 0usize;
    let emit = |y: &[f64], t: f64, on_sample: &mut dyn FnMut(&Sample)| {
        let mut s = Sample::from_state(robot, t, &y[..nq], y[2 * nq]);
        s.work_axo = y[2 * nq + 1];
        s.work_coupling = y.get(2 * nq + 2).copied().unwrap_or(0.0);
        s.v = y[nq..2 * nq].to_vec();
        on_sample(&s);
    };
    // Sample 0 is the initial state.
    if sample_times.first() == Some(&0.0) {
        emit(&y0, 0.0, &mut on_sample);
        next = 1;
    }

    let mut emit_sample = |ys: &[f64], ts: f64| emit(ys, ts, &mut on_sample);
    let mut out = Outputs {
        sample_times,
        next,
        emit: &mut emit_sample,
        on_progress: &mut on_progress,
    };
    let limits = Limits {
        t_final,
        nq,
        max_steps: settings.max_steps,
        deadline,
    };
    // The budget is checked in `drive` (budget_exceeded), not by diffsol (an error).
    let (status, stats) = match settings.method {
        Method::DiffsolBdf => {
            let mut solver = problem
                .bdf::<NalgebraLU<f64>>()
                .map_err(SolverError::Setup)?;
            solver.config_mut().maximum_number_timesteps = usize::MAX;
            drive(solver, &limits, &mut out)?
        }
        Method::DiffsolEsdirk34 => {
            let mut solver = problem
                .esdirk34::<NalgebraLU<f64>>()
                .map_err(SolverError::Setup)?;
            solver.config_mut().maximum_number_timesteps = usize::MAX;
            drive(solver, &limits, &mut out)?
        }
        Method::Esdirk34 => unreachable!("handled above"),
    };
    Ok(ReferenceRun {
        status,
        stats: SolverStats {
            rhs_evals: rhs.evals.get(),
            ..stats
        },
    })
}

/// Where a diffsol run stops: its horizon, its state's size (q's), its step budget and
/// its wall-clock deadline.
struct Limits {
    t_final: f64,
    nq: usize,
    max_steps: usize,
    deadline: Deadline,
}

/// What a diffsol run reports as it goes: the samples due (from `next` on) and its
/// progress.
struct Outputs<'a> {
    sample_times: &'a SampleTimes,
    next: usize,
    emit: &'a mut dyn FnMut(&[f64], f64),
    on_progress: &'a mut dyn FnMut(f64),
}

/// Step a diffsol solver to the horizon, emitting the samples as they come due; the run
/// ends `ok`, `diverged` (a state that is not finite), `solver_failed` or
/// `budget_exceeded` (its steps or its deadline). The statistics' right-hand-side count
/// is the caller's (diffsol does not count them).
fn drive<'a, Eqn, S>(
    mut solver: S,
    limits: &Limits,
    out: &mut Outputs<'_>,
) -> Result<(Status, SolverStats), SolverError>
where
    Eqn: diffsol::OdeEquations<T = f64> + 'a,
    S: OdeSolverMethod<'a, Eqn>,
{
    let nq = limits.nq;
    solver
        .set_stop_time(limits.t_final)
        .map_err(SolverError::Setup)?;
    let status = loop {
        let t_before = solver.state().t;
        if solver.get_statistics().number_of_steps >= limits.max_steps || limits.deadline.passed() {
            break Status::BudgetExceeded { time: t_before };
        }
        let step = solver.step();
        let t = solver.state().t;
        let y = solver.state().y.clone_as_vec();
        if !state_is_sane(&y[..2 * nq]) {
            break Status::Diverged { time: t };
        }
        match step {
            Err(_) => {
                break Status::SolverFailed {
                    time: t_before,
                    reason: SolverFailure::SolverError,
                }
            }
            Ok(reason) => {
                let at_stop = reason == OdeSolverStopReason::TstopReached;
                emit_due(
                    out.sample_times,
                    &mut out.next,
                    (t, &y),
                    at_stop,
                    |ts| solver.interpolate(ts).ok().map(|v| v.clone_as_vec()),
                    &mut *out.emit,
                );
                (out.on_progress)(t);
                if at_stop || t >= limits.t_final {
                    break Status::Ok;
                }
            }
        }
    };
    let st = solver.get_statistics();
    let stats = SolverStats {
        steps: st.number_of_steps,
        rejected_steps: st.number_of_error_test_failures,
        rhs_evals: 0,
        jacobian_evals: st.number_of_linear_solver_setups,
        lu_factorizations: st.number_of_linear_solver_setups,
        newton_iterations: st.number_of_nonlinear_solver_iterations,
        newton_failures: st.number_of_nonlinear_solver_fails,
        contact_events: 0,
        fixed_step: 0.0,
    };
    Ok((status, stats))
}
