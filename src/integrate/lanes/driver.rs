//! Running a block of up to W robots to their ends: every lane follows its own
//! [`SampleSchedule`] (lanes may have different steps), the block steps in lockstep
//! until the next lane's sample is due, and each lane's samples go to the caller.
//! A diverged lane is flagged and parked on a finite state; the others go on. Budgets
//! (a lane's `max_steps`, the block's deadline) are checked between chunks of at most
//! [`BUDGET_CHECK_STEPS`] steps, so even a lane whose output interval never ends stops.
//! A lane whose schedule ends ok may be continued from its state with a longer
//! schedule on the same grid ([`LaneSink::extend`], `--until-settled`).

use super::isa::Isa;
use super::kernel::{BlockState, Scratch};
use super::model::BlockModel;
use crate::integrate::record::InstanceRecord;
use crate::integrate::schedule::SampleSchedule;
use crate::model::Robot;
use crate::sample::{state_is_sane, Deadline, Sample, Status};

/// Steps between budget checks (a step is ~1 µs, a clock read ~25 ns).
pub const BUDGET_CHECK_STEPS: usize = 1024;

/// One lane's robot, schedule, kick implicitness θ and budget.
#[derive(Debug, Clone, Copy)]
pub struct LaneJob<'a> {
    pub robot: &'a Robot,
    pub schedule: SampleSchedule,
    pub theta: f64,
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
}

/// Run `jobs` (at most W, all of one shape) as one block on `isa`. `sink` receives
/// every lane's samples in time order (sample 0 first) and the simulated time of lane 0,
/// and may continue a lane that ends ok ([`LaneSink::extend`]). A lane past its step
/// budget or deadline ends `budget_exceeded`.
pub fn run_block<const W: usize>(
    isa: Isa,
    jobs: &[LaneJob],
    sink: &mut dyn LaneSink,
) -> Vec<LaneEnd> {
    let robots: Vec<&Robot> = jobs.iter().map(|j| j.robot).collect();
    let records: Vec<InstanceRecord> = jobs
        .iter()
        .map(|j| InstanceRecord::new(j.robot, j.schedule.h, j.theta))
        .collect();
    let model = BlockModel::<W>::new(&records.iter().collect::<Vec<_>>());
    let initial: Vec<Vec<f64>> = robots.iter().map(|r| r.initial_state().0).collect();
    let nq = initial[0].len();
    let lane = |j: usize| j.min(jobs.len() - 1);
    let mut st = BlockState::<W>::at_rest(nq, |j, k| initial[lane(j)][k]);
    let mut scratch = Scratch::<W>::new(model.n_legs);
    let mut ends: Vec<Option<LaneEnd>> = vec![None; jobs.len()];
    let mut next = vec![1usize; jobs.len()];
    // Each lane's schedule, replaced when the sink continues the lane.
    let mut scheds: Vec<SampleSchedule> = jobs.iter().map(|j| j.schedule).collect();
    for (j, job) in jobs.iter().enumerate() {
        sink.sample(j, &Sample::from_state(job.robot, 0.0, &initial[j], 0.0));
    }
    let (mut q, mut v) = (vec![0.0; nq], vec![0.0; nq]);
    let mut done = 0;
    while let Some(due) = (0..jobs.len())
        .filter(|&j| ends[j].is_none())
        .map(|j| scheds[j].steps_to(next[j]))
        .min()
    {
        let step_budget = (0..jobs.len())
            .filter(|&j| ends[j].is_none())
            .filter_map(|j| jobs[j].max_steps)
            .map(|m| usize::try_from(m).unwrap_or(usize::MAX).max(done))
            .min()
            .unwrap_or(usize::MAX);
        let target = due.min(done + BUDGET_CHECK_STEPS).min(step_budget);
        isa.advance(&model, &mut st, &mut scratch, target - done);
        done = target;
        for (j, job) in jobs.iter().enumerate() {
            let sched = scheds[j];
            if ends[j].is_some() || sched.steps_to(next[j]) != done {
                continue;
            }
            let (k, t) = (next[j], sched.time(next[j]));
            for (s, (qs, vs)) in q.iter_mut().zip(v.iter_mut()).enumerate() {
                *qs = st.q[s].lane(j);
                *vs = st.v[s].lane(j);
            }
            let mut sample = Sample::from_state(job.robot, t, &q, st.work.lane(j));
            sample.work_axo = st.work_axo.lane(j);
            let end = |status| {
                Some(LaneEnd {
                    status,
                    steps: done,
                })
            };
            if !state_is_sane(&q) || !v.iter().all(|x| x.is_finite()) || !sample.is_finite() {
                ends[j] = end(Status::Diverged { time: t });
                park(&mut st, j, &initial[j]);
                continue;
            }
            sink.sample(j, &sample);
            if j == 0 {
                sink.progress(t);
            }
            if k < sched.n_samples {
                next[j] += 1;
            } else if let Some(longer) = sink
                .extend(j, &sched)
                // Only a schedule that keeps the grid so far continues the lane.
                .filter(|l| l.n_samples > k && l.steps_to(k) == done && l.h == sched.h)
            {
                scheds[j] = longer;
                next[j] += 1;
            } else {
                ends[j] = end(Status::Ok);
            }
        }
        for (j, job) in jobs.iter().enumerate() {
            let over = job.max_steps.is_some_and(|m| done as u64 >= m);
            if ends[j].is_none() && (over || job.deadline.passed()) {
                let time = done as f64 * scheds[j].h;
                ends[j] = Some(LaneEnd {
                    status: Status::BudgetExceeded { time },
                    steps: done,
                });
                park(&mut st, j, &initial[j]);
            }
        }
    }
    ends.into_iter()
        .map(|e| e.expect("every lane ends"))
        .collect()
}

/// Put a finished lane back on a finite state so it costs no more than any other.
fn park<const W: usize>(st: &mut BlockState<W>, j: usize, q0: &[f64]) {
    for (s, x) in q0.iter().enumerate() {
        st.q[s].0[j] = *x;
        st.v[s].0[j] = 0.0;
    }
    st.work.0[j] = 0.0;
    st.work_axo.0[j] = 0.0;
}
