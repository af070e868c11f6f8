//! Output samples: what every backend reports at the fixed output interval, and
//! the run status shared by all backends.

use crate::model::Robot;

/// One output sample of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub t: f64,
    /// Basal angle ψ_i = atan2(d_1, b_1) per leg, in (−π, π].
    pub psi: Vec<f64>,
    /// Unit basal tangent (b_1, d_1)/|.| per leg: e^{iψ} without transcendental functions.
    pub tangent: Vec<[f64; 2]>,
    pub tip: Vec<[f64; 2]>,
    /// |V|/ℓ per leg.
    pub inext: Vec<f64>,
    /// (X_b, Y_b, θ).
    pub body: [f64; 3],
    /// Actuation work ∫Σ|M0_i ψ̇_i| dt up to t.
    pub work: f64,
    /// The internal couples' work ∫Σ|Q_A,i·q̇_i| dt up to t.
    pub work_axo: f64,
    /// The energy the coupling's dampers dissipated, ∫Σc·γ̇² dt up to t.
    pub work_coupling: f64,
    /// All generalised coordinates (leg shapes for drawing); empty when a backend
    /// reports only the summary above.
    pub q: Vec<f64>,
    /// All generalised velocities, when the backend provides them.
    pub v: Vec<f64>,
}

impl Sample {
    /// Read a sample off the generalised coordinates (the couples' work and the
    /// coupling's dissipation start at 0: a backend that has them sets `work_axo`,
    /// `work_coupling`).
    pub fn from_state(robot: &Robot, t: f64, q: &[f64], work: f64) -> Sample {
        let ix = robot.idx;
        let body = robot.body_of(q);
        let mut s = Sample::begin(robot, t, [body[0], body[1], body[2]], work, q.to_vec());
        for i in 0..robot.n_legs {
            let leg = robot.leg(q, i);
            let basal = [leg[ix.b(0)], leg[ix.d(0)]];
            s.push_leg(robot, basal, robot.tip(q, i), robot.constraint(leg));
        }
        s
    }

    /// A sample at `t` without legs yet: each leg follows with [`Sample::push_leg`], in
    /// order. `q`: all coordinates, or empty where the caller keeps only the summary.
    pub fn begin(robot: &Robot, t: f64, body: [f64; 3], work: f64, q: Vec<f64>) -> Sample {
        let n = robot.n_legs;
        Sample {
            t,
            psi: Vec::with_capacity(n),
            tangent: Vec::with_capacity(n),
            tip: Vec::with_capacity(n),
            inext: Vec::with_capacity(n),
            body,
            work,
            work_axo: 0.0,
            work_coupling: 0.0,
            q,
            v: Vec::new(),
        }
    }

    /// The next leg's entries from its basal slopes (b_1, d_1), its tip and its
    /// constraint residual V = qᵀGq − ℓ.
    pub fn push_leg(&mut self, robot: &Robot, [b1, d1]: [f64; 2], tip: [f64; 2], residual: f64) {
        let r = (b1 * b1 + d1 * d1).sqrt();
        self.psi.push(d1.atan2(b1));
        self.tangent.push([b1 / r, d1 / r]);
        self.tip.push(tip);
        self.inext.push(residual.abs() / robot.p.leg_length);
    }

    pub fn is_finite(&self) -> bool {
        self.tangent
            .iter()
            .all(|t| t[0].is_finite() && t[1].is_finite())
            && self
                .tip
                .iter()
                .all(|t| t[0].is_finite() && t[1].is_finite())
            && self.inext.iter().all(|x| x.is_finite())
            && self.body.iter().all(|x| x.is_finite())
            && self.work.is_finite()
            && self.work_axo.is_finite()
            && self.work_coupling.is_finite()
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Status {
    Ok,
    /// The state stopped being finite (or left the physically meaningful range) at `time`.
    Diverged {
        time: f64,
    },
    /// The solver gave up at `time`, for `reason`.
    SolverFailed {
        time: f64,
        reason: SolverFailure,
    },
    /// The point used up its step or wall-time budget (`max_steps`, `--point-timeout`)
    /// at simulated time `time`; its metrics are NaN.
    BudgetExceeded {
        time: f64,
    },
    /// The run finished, but left the model's range of validity: its largest
    /// inextensibility error |V|/ℓ (the "inextensible" legs' stretch) is `max_inext`,
    /// above [`MAX_INEXTENSIBILITY`]. Its metrics describe a model that no longer holds.
    InvalidModel {
        time: f64,
        max_inext: f64,
    },
}

/// Largest inextensibility error |V|/ℓ of a valid run: a leg stretched by 1 %. The
/// paper's run keeps it near 2·10⁻⁷; a run above it (huge motor forces, rates or
/// stiffnesses against the penalty λ) ends `invalid_model`, never `ok`.
pub const MAX_INEXTENSIBILITY: f64 = 1e-2;

/// Which criterion made a solver give up (the text of a `solver_failed` status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolverFailure {
    /// The step limit `max_steps` was reached.
    StepLimit,
    /// The step size fell below `min_step`.
    MinStep,
    /// The last `stall_steps` step attempts were all shorter than `stall_step`.
    Stalled,
    /// The Newton matrix could not be factorised.
    SingularMatrix,
    /// An external solver (diffsol) returned an error, or the run could not start.
    SolverError,
}

impl std::fmt::Display for SolverFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SolverFailure::StepLimit => "step limit (max_steps) reached",
            SolverFailure::MinStep => "step size fell below min_step",
            SolverFailure::Stalled => {
                "stalled: the last stall_steps step attempts were all shorter than stall_step"
            }
            SolverFailure::SingularMatrix => "Newton matrix is singular",
            SolverFailure::SolverError => "the solver returned an error",
        })
    }
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Diverged { .. } => "diverged",
            Status::SolverFailed { .. } => "solver_failed",
            Status::BudgetExceeded { .. } => "budget_exceeded",
            Status::InvalidModel { .. } => "invalid_model",
        }
    }

    /// Time of failure, NaN when the run finished.
    pub fn time(&self) -> f64 {
        match self {
            Status::Ok => f64::NAN,
            Status::Diverged { time }
            | Status::SolverFailed { time, .. }
            | Status::BudgetExceeded { time }
            | Status::InvalidModel { time, .. } => *time,
        }
    }

    /// The criterion that stopped a failed solver.
    pub fn failure(&self) -> Option<SolverFailure> {
        match self {
            Status::SolverFailed { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Status::Ok)
    }

    /// The row's `error` text: empty for `ok`, else what happened and where.
    pub fn describe(&self) -> String {
        match self {
            Status::Ok => String::new(),
            Status::Diverged { time } => {
                format!("state left the finite range (|coordinate| >= {DIVERGENCE_BOUND:e}) at t = {time} s")
            }
            Status::SolverFailed { time, reason } => {
                format!("reference solver gave up at t = {time} s: {reason}")
            }
            Status::BudgetExceeded { time } => {
                format!("budget exceeded (max_steps or --point-timeout) at t = {time} s")
            }
            Status::InvalidModel { max_inext, .. } => format!(
                "left the model's range of validity: inextensibility error |V|/l reached \
                 {max_inext:.3e}, above {MAX_INEXTENSIBILITY:e} (the legs stretched)"
            ),
        }
    }
}

/// The output sample schedule 0, dt, 2dt, ..., t_final, computed on demand (a run
/// of t_final = 1e8 s at dt = 0.01 s has 1e10 samples: never a vector).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleTimes {
    dt_out: f64,
    t_final: f64,
    intervals: usize,
}

impl SampleTimes {
    /// Samples k·dt_out for k = 0..=intervals, the last clamped to t_final.
    pub fn new(dt_out: f64, t_final: f64, intervals: usize) -> SampleTimes {
        SampleTimes {
            dt_out,
            t_final,
            intervals,
        }
    }

    /// Number of samples (intervals + 1).
    pub fn len(&self) -> usize {
        self.intervals.saturating_add(1)
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Time of sample `k`.
    pub fn at(&self, k: usize) -> f64 {
        (k as f64 * self.dt_out).min(self.t_final)
    }

    /// The first sample time (always 0).
    pub fn first(&self) -> Option<&'static f64> {
        Some(&0.0)
    }
}

/// A point's wall-time limit (`--point-timeout`): the instant it ends, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Deadline(Option<std::time::Instant>);

impl Deadline {
    /// No limit.
    pub const NONE: Deadline = Deadline(None);

    /// `seconds` from now (none when `None`).
    pub fn after(seconds: Option<f64>) -> Deadline {
        Deadline(seconds.and_then(|s| {
            std::time::Instant::now().checked_add(std::time::Duration::try_from_secs_f64(s).ok()?)
        }))
    }

    pub fn passed(&self) -> bool {
        self.0.is_some_and(|d| std::time::Instant::now() >= d)
    }
}

/// Largest |coordinate| (m or rad) still taken as a physical state; beyond it a run is
/// `diverged`. Far above any real robot's reach, far below where an instability lands.
pub const DIVERGENCE_BOUND: f64 = 1e6;

/// True when the coordinates are finite and within [`DIVERGENCE_BOUND`].
pub fn state_is_sane(q: &[f64]) -> bool {
    q.iter().all(|&x| coordinate_is_sane(x))
}

/// True when one coordinate is finite and within [`DIVERGENCE_BOUND`].
pub fn coordinate_is_sane(x: f64) -> bool {
    x.is_finite() && x.abs() < DIVERGENCE_BOUND
}
