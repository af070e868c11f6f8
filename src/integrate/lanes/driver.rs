//! Running a block of up to W robots to their ends: every lane follows its own
//! [`SampleSchedule`] (lanes may have different steps), the block steps in lockstep
//! until the next lane's sample is due, and each lane's samples go to the caller.
//! A diverged lane is flagged and parked on a finite state; the others go on. Budgets
//! (a lane's `max_steps`, the block's deadline) are checked between chunks of at most
//! [`BUDGET_CHECK_STEPS`] steps, so even a lane whose output interval never ends stops.
//! A lane whose schedule ends ok may be continued from its state with a longer
//! schedule on the same grid ([`LaneSink::extend`], `--until-settled`): in its block,
//! or handed back with its state ([`LaneState`]) to go on in a fresh block
//! ([`run_block_from`]), so that a few continuing lanes do not keep whole blocks busy.

use super::isa::Isa;
use super::kernel::{BlockState, Scratch};
use super::model::BlockModel;
use super::readout::Readout;
use super::simd::{Lanes, L};
use crate::integrate::record::{InstanceRecord, KickForm};
use crate::integrate::schedule::SampleSchedule;
use crate::model::Robot;
use crate::sample::{Deadline, Sample, Status};

/// Steps between budget checks (a step is ~1 µs, a clock read ~25 ns).
pub const BUDGET_CHECK_STEPS: usize = 1024;

/// One lane's robot, schedule, kick form (θ, centring), start and budget.
#[derive(Debug, Clone, Copy)]
pub struct LaneJob<'a> {
    pub robot: &'a Robot,
    pub schedule: SampleSchedule,
    pub kick: KickForm,
    /// The run's first opening drift ends where a probe step from rest ends
    /// ([`start_velocity`]; `DkdSettings::resolves_start`), not at the initial velocity's.
    pub resolve_start: bool,
    pub max_steps: Option<u64>,
    pub deadline: Deadline,
}

/// How a lane's run ended and the steps it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneEnd {
    pub status: Status,
    pub steps: usize,
}

/// Where a block's lanes report: every sample, and at the end of a lane's schedule
/// whether it goes on.
pub trait LaneSink {
    /// Lane `lane`'s next sample, in time order (sample 0 first).
    fn sample(&mut self, lane: usize, s: &Sample);
    /// Lane `lane` reached the end of `ended` ok: a longer schedule on the same grid
    /// (`SampleSchedule::continued`) continues it from its state, steps and work
    /// carrying on; `None` ends it.
    fn extend(&mut self, _lane: usize, _ended: &SampleSchedule) -> Option<SampleSchedule> {
        None
    }
    /// The simulated time of lane 0.
    fn progress(&mut self, _t: f64) {}
    /// Whether samples carry every coordinate (`Sample::q`, for drawing); a sink that
    /// only folds metrics says no, and its samples skip the copy.
    fn keeps_states(&self) -> bool {
        true
    }
}

/// A lane's state where it stands between blocks: positions, velocities, steps taken
/// (its place on the schedule's grid, so time and the couple's phase carry on exactly),
/// the work sums, and the schedule's sample it is at (already reported).
#[derive(Debug, Clone, PartialEq)]
pub struct LaneState {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    pub steps: usize,
    pub work: f64,
    pub work_axo: f64,
    pub work_coupling: f64,
    pub sample: usize,
}

impl LaneState {
    /// At rest at t = 0 in the robot's initial position (sample 0, not yet reported).
    pub fn at_rest(robot: &Robot) -> LaneState {
        let q = robot.initial_state().0;
        LaneState {
            v: vec![0.0; q.len()],
            q,
            steps: 0,
            work: 0.0,
            work_axo: 0.0,
            work_coupling: 0.0,
            sample: 0,
        }
    }
}

/// Where a lane that its sink continues ([`LaneSink::extend`]) goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continue {
    /// In its block, with a longer schedule (the other lanes parked meanwhile).
    InBlock,
    /// Out of its block: its state is handed back ([`LaneOutcome::Continues`]), for the
    /// caller to gather with other continuing lanes into a fresh block.
    HandBack,
}

/// How a lane left its block.
#[derive(Debug, Clone, PartialEq)]
pub enum LaneOutcome {
    /// The lane's run ended.
    Ended(LaneEnd),
    /// The lane goes on elsewhere ([`Continue::HandBack`]): its state at the end of the
    /// schedule it ran, and the longer schedule it continues with.
    Continues {
        state: LaneState,
        schedule: SampleSchedule,
    },
}

/// Run `jobs` (at most W, all of one shape) as one block on `isa`, every lane from rest.
/// `sink` receives every lane's samples in time order (sample 0 first) and the simulated
/// time of lane 0, and may continue a lane that ends ok in the block
/// ([`LaneSink::extend`]). A lane past its step budget or deadline ends
/// `budget_exceeded`.
pub fn run_block<const W: usize>(
    isa: Isa,
    jobs: &[LaneJob],
    sink: &mut dyn LaneSink,
) -> Vec<LaneEnd> {
    let starts: Vec<LaneState> = jobs.iter().map(|j| LaneState::at_rest(j.robot)).collect();
    run_block_from::<W>(isa, jobs, &starts, Continue::InBlock, sink)
        .into_iter()
        .map(|o| match o {
            LaneOutcome::Ended(end) => end,
            LaneOutcome::Continues { .. } => unreachable!("an in-block run hands no lane back"),
        })
        .collect()
}

/// Run `jobs` as one block on `isa`, lane j from `starts[j]` (at rest, or where an
/// earlier block handed it back) on its schedule `jobs[j].schedule`, which holds the
/// state's sample and steps on its grid. A lane starting at sample 0 reports it first;
/// steps, time and budgets count from the run's start, not the block's. A lane that
/// `sink` continues goes on as `onward` says.
pub fn run_block_from<const W: usize>(
    isa: Isa,
    jobs: &[LaneJob],
    starts: &[LaneState],
    onward: Continue,
    sink: &mut dyn LaneSink,
) -> Vec<LaneOutcome> {
    check_starts::<W>(jobs, starts);
    let records: Vec<InstanceRecord> = jobs
        .iter()
        .map(|j| InstanceRecord::with_form(j.robot, j.schedule.h, j.kick))
        .collect();
    let model = BlockModel::<W>::new(&records.iter().collect::<Vec<_>>());
    let rest: Vec<Vec<f64>> = jobs.iter().map(|j| j.robot.initial_state().0).collect();
    let mut st = block_state::<W>(starts);
    let mut scratch = Scratch::<W>::new(model.n_legs);
    resolve_start(isa, &model, &mut st, &mut scratch, jobs, starts);
    let mut outcomes: Vec<Option<LaneOutcome>> = vec![None; jobs.len()];
    // Steps each lane had taken before this block; `done` counts the block's own.
    let base: Vec<usize> = starts.iter().map(|s| s.steps).collect();
    let mut next: Vec<usize> = starts.iter().map(|s| s.sample + 1).collect();
    // Each lane's schedule, replaced when the sink continues the lane in the block.
    let mut scheds: Vec<SampleSchedule> = jobs.iter().map(|j| j.schedule).collect();
    for (j, (job, s)) in jobs.iter().zip(starts).enumerate() {
        if s.sample == 0 {
            sink.sample(j, &Sample::from_state(job.robot, 0.0, &s.q, s.work));
        }
    }
    let keep_states = sink.keeps_states();
    let lane_of = |x: &[L<W>], j: usize| x.iter().map(|e| e.lane(j)).collect::<Vec<f64>>();
    let mut done = 0;
    while let Some(due) = (0..jobs.len())
        .filter(|&j| outcomes[j].is_none())
        .map(|j| scheds[j].steps_to(next[j]) - base[j])
        .min()
    {
        let step_budget = block_step_budget(jobs, &outcomes, &base, done);
        let target = due.min(done + BUDGET_CHECK_STEPS).min(step_budget);
        isa.advance(&model, &mut st, &mut scratch, target - done);
        done = target;
        // Read off once for every lane, where the first lane's sample falls due (a lane
        // parked below changes only itself).
        let mut readout: Option<Readout<W>> = None;
        for (j, job) in jobs.iter().enumerate() {
            let (sched, at) = (scheds[j], base[j] + done);
            if outcomes[j].is_some() || sched.steps_to(next[j]) != at {
                continue;
            }
            let (k, t) = (next[j], sched.time(next[j]));
            let r = readout.get_or_insert_with(|| Readout::new(&model, &st));
            let q = if keep_states {
                lane_of(&st.q, j)
            } else {
                Vec::new()
            };
            let mut sample = r.sample(job.robot, &st, j, t, q);
            sample.work_axo = st.work_axo.lane(j);
            sample.work_coupling = st.work_coupling.lane(j);
            let end = |status| Some(LaneOutcome::Ended(LaneEnd { status, steps: at }));
            if !r.sane[j] || !sample.is_finite() {
                outcomes[j] = end(Status::Diverged { time: t });
                park(&mut st, j, &rest[j]);
                continue;
            }
            sink.sample(j, &sample);
            if j == 0 {
                sink.progress(t);
            }
            if k < sched.n_samples {
                next[j] += 1;
                continue;
            }
            let longer = sink
                .extend(j, &sched)
                // Only a schedule that keeps the grid so far continues the lane.
                .filter(|l| l.n_samples > k && l.steps_to(k) == at && l.h == sched.h);
            match (longer, onward) {
                (Some(longer), Continue::InBlock) => {
                    scheds[j] = longer;
                    next[j] += 1;
                }
                (Some(longer), Continue::HandBack) => {
                    outcomes[j] = Some(LaneOutcome::Continues {
                        state: LaneState {
                            q: lane_of(&st.q, j),
                            v: lane_of(&st.v, j),
                            steps: at,
                            work: sample.work,
                            work_axo: sample.work_axo,
                            work_coupling: sample.work_coupling,
                            sample: k,
                        },
                        schedule: longer,
                    });
                    park(&mut st, j, &rest[j]);
                }
                (None, _) => outcomes[j] = end(Status::Ok),
            }
        }
        let at: Vec<usize> = base.iter().map(|b| b + done).collect();
        end_over_budget(jobs, &at, &scheds, &rest, &mut outcomes, &mut st);
    }
    outcomes
        .into_iter()
        .map(|o| o.expect("every lane ends or is handed back"))
        .collect()
}

/// The velocity a run's first opening drift moves at when its scheme resolves the start
/// (docs/integrators.md, "The start"): 2(q₁ − q₀)/h, so that the drift ends where one
/// probe step from rest ends. The servo spins a leg from rest to its rate within a
/// fraction of a microsecond, so the exact basal angle is −ωt almost from t = 0, and the
/// exact midpoint of the first step is half a step along; drifting it at the initial
/// velocity (zero) would leave the whole run half a step behind, a first-order error
/// that the autonomous robot keeps. DKD's step from rest drifts only its closing half,
/// at the kick's velocity, and ends on the constraint (the touchdown correction), so
/// its end is that midpoint; for the smooth rest of the motion it differs from the
/// exact one by O(h²), once. The GPU engine uploads this as the state's velocity, and
/// its kernel drifts the first half step at it and then sets the velocities to the
/// run's initial ones (zero).
pub fn start_velocity(record: &InstanceRecord, q0: &[f64]) -> Vec<f64> {
    let model = BlockModel::<1>::new(&[record]);
    let mut st = BlockState::<1>::at_rest(q0.len(), |_, k| q0[k]);
    let mut scratch = Scratch::<1>::new(record.n_legs);
    Isa::detect()
        .one_lane()
        .advance(&model, &mut st, &mut scratch, 1);
    let h = record.h();
    st.q.iter()
        .zip(q0)
        .map(|(q1, &q0)| start_drift_velocity(q1.lane(0), q0, h))
        .collect()
}

/// 2(q₁ − q₀)/h, the velocity that drifts q₀ to q₁ in half a step, rounded the same on
/// the CPU's lanes and in the GPU engine's upload.
fn start_drift_velocity(q1: f64, q0: f64, h: f64) -> f64 {
    (q1 - q0) * (2.0 / h)
}

/// The lanes whose jobs resolve their start and take their first step here move by
/// h/2·(v_s − v₀) ([`start_velocity`] v_s from a probe step of the block), so that their
/// first step's own opening drift at v₀ ends where the probe step ended.
fn resolve_start<const W: usize>(
    isa: Isa,
    m: &BlockModel<W>,
    st: &mut BlockState<W>,
    s: &mut Scratch<W>,
    jobs: &[LaneJob],
    starts: &[LaneState],
) {
    let fresh = |j: usize| jobs[j].resolve_start && starts[j].steps == 0;
    if !(0..jobs.len()).any(fresh) {
        return;
    }
    let mut probe = st.clone();
    probe.v.iter_mut().for_each(|v| *v = L::zero());
    isa.advance(m, &mut probe, s, 1);
    // The GPU kernel's arithmetic: q₀ + (h/2)·v_s.
    for j in (0..jobs.len()).filter(|&j| fresh(j)) {
        let h = m.d.h.lane(j);
        for ((q, v), q1) in st.q.iter_mut().zip(&st.v).zip(&probe.q) {
            let v_start = start_drift_velocity(q1.lane(j), q.lane(j), h);
            q.0[j] += 0.5 * h * (v_start - v.lane(j));
        }
    }
}

/// Every start on its schedule's grid, one per lane, 1 to W lanes.
fn check_starts<const W: usize>(jobs: &[LaneJob], starts: &[LaneState]) {
    assert_eq!(jobs.len(), starts.len(), "one start per lane");
    assert!(
        (1..=W).contains(&jobs.len()),
        "1 to {W} lanes in a block of width {W}"
    );
    for (job, s) in jobs.iter().zip(starts) {
        assert_eq!(
            job.schedule.steps_to(s.sample),
            s.steps,
            "a lane starts on its schedule's grid"
        );
    }
}

/// The block's steps (counted from its start) up to which no running lane passes its
/// step budget: the smallest remaining budget, at least the steps already `done`.
fn block_step_budget(
    jobs: &[LaneJob],
    outcomes: &[Option<LaneOutcome>],
    base: &[usize],
    done: usize,
) -> usize {
    (0..jobs.len())
        .filter(|&j| outcomes[j].is_none())
        .filter_map(|j| {
            let m = usize::try_from(jobs[j].max_steps?).unwrap_or(usize::MAX);
            Some(m.saturating_sub(base[j]).max(done))
        })
        .min()
        .unwrap_or(usize::MAX)
}

/// End (and park) every running lane at `at[j]` steps that has used its step budget or
/// passed its deadline.
fn end_over_budget<const W: usize>(
    jobs: &[LaneJob],
    at: &[usize],
    scheds: &[SampleSchedule],
    rest: &[Vec<f64>],
    outcomes: &mut [Option<LaneOutcome>],
    st: &mut BlockState<W>,
) {
    for (j, job) in jobs.iter().enumerate() {
        let over = job.max_steps.is_some_and(|m| at[j] as u64 >= m);
        if outcomes[j].is_none() && (over || job.deadline.passed()) {
            outcomes[j] = Some(budget_exceeded(at[j], scheds[j].h));
            park(st, j, &rest[j]);
        }
    }
}

/// A lane that spent its step budget or deadline after `steps` steps of size h.
fn budget_exceeded(steps: usize, h: f64) -> LaneOutcome {
    LaneOutcome::Ended(LaneEnd {
        status: Status::BudgetExceeded {
            time: steps as f64 * h,
        },
        steps,
    })
}

/// The block's state with lane j at `starts[j]`; the lanes past the last start repeat
/// it (a padded block computes them and nobody reads them).
fn block_state<const W: usize>(starts: &[LaneState]) -> BlockState<W> {
    let lane = |j: usize| &starts[j.min(starts.len() - 1)];
    let column = |x: &dyn Fn(&LaneState) -> f64| L(std::array::from_fn(|j| x(lane(j))));
    let nq = starts[0].q.len();
    BlockState {
        q: Lanes::from_fn(nq, |k| column(&|s| s.q[k])),
        v: Lanes::from_fn(nq, |k| column(&|s| s.v[k])),
        steps: column(&|s| s.steps as f64),
        work: column(&|s| s.work),
        work_axo: column(&|s| s.work_axo),
        work_coupling: column(&|s| s.work_coupling),
    }
}

/// Put a finished lane back on a finite state so it costs no more than any other.
fn park<const W: usize>(st: &mut BlockState<W>, j: usize, q0: &[f64]) {
    for (s, x) in q0.iter().enumerate() {
        st.q[s].0[j] = *x;
        st.v[s].0[j] = 0.0;
    }
    st.work.0[j] = 0.0;
    st.work_axo.0[j] = 0.0;
    st.work_coupling.0[j] = 0.0;
}
