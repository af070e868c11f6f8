//! The CPU batch engine: instances grouped by shape (N legs, n nodes) into blocks of
//! the vector unit's lane width, rayon over blocks, each lane's samples folded into
//! its own metrics accumulator. The CPU counterpart of `gpu::engine`.
//!
//! With `--until-settled` the batch runs in rounds: every block runs to its lanes'
//! horizons; a lane that continues is handed back with its state, and the continuing
//! lanes of all blocks are gathered, grouped by shape into fresh blocks, and run on to
//! their next horizon, until none continues. A block costs its longest lane, so a few
//! continuing runs do not keep whole blocks (and their finished, parked lanes)
//! stepping.
//!
//! Lanes are independent: a lane's result does not depend on its neighbours' values,
//! only on its own inputs (a block computes every lane with the same instruction
//! sequence, so a point's result is bit-identical in any block of the same width;
//! across widths, and against the one-lane solo path, it agrees to round-off, since
//! the compiler may fuse differently). So a continuing lane keeps the width of its
//! first block, and its result is bit for bit that of one uninterrupted run.

use std::cmp::Reverse;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::SolverError;
use crate::integrate::continuation::continue_run;
use crate::integrate::dkd::TopFrequencies;
use crate::integrate::lanes::{
    run_block_from, Continue, Isa, LaneEnd, LaneJob, LaneOutcome, LaneSink, LaneState,
};
use crate::integrate::schedule::SampleSchedule;
use crate::integrate::settings::SolverStats;
use crate::metrics::MetricsAccumulator;
use crate::model::Robot;
use crate::sample::{Deadline, Sample};
use crate::simulate::{blank_unless_ok, Backend, PointResult, RunConfig};

/// One instance, prepared.
struct Prepared<'a> {
    cfg: &'a RunConfig,
    robot: Robot,
    schedule: SampleSchedule,
}

/// The kernel width a run is computed with, fixed by its first block: the one-lane
/// kernel for an instance alone in it, else blocks of the vector unit's lane width. A
/// continuing run keeps it in every later block (the widths round differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    One,
    Full,
}

/// One run on its way through the rounds: where it stands and what it has gathered.
struct Lane<'a> {
    index: usize,
    p: &'a Prepared<'a>,
    /// `None` until its first block is planned.
    width: Option<Width>,
    /// The schedule it runs (a continued one after its first horizon).
    schedule: SampleSchedule,
    start: LaneState,
    acc: MetricsAccumulator,
    /// Wall seconds of its blocks so far, each from the block's start to where the lane
    /// left it: its `--point-timeout` counts these (not the wait between rounds).
    busy: f64,
    /// Its share of its blocks' wall time (each block's shared among its lanes).
    wall: f64,
}

impl<'a> Lane<'a> {
    fn new(index: usize, p: &'a Prepared<'a>) -> Self {
        Lane {
            index,
            p,
            width: None,
            schedule: p.schedule,
            start: LaneState::at_rest(&p.robot),
            acc: MetricsAccumulator::new(&p.cfg.params, &p.cfg.metrics),
            busy: 0.0,
            wall: 0.0,
        }
    }

    fn shape(&self) -> (usize, usize) {
        (self.p.robot.n_legs, self.p.robot.n_nodes)
    }

    /// What a lane's leg matrices (K, G and P⁻¹ = ((ρ + hζ)M + θh²K_M·K)⁻¹) are made
    /// of, beyond its shape: lanes with equal keys share them, and a block of such
    /// lanes reads them once for all (`BlockModel::shared`).
    fn matrices_key(&self) -> [u64; 6] {
        let p = &self.p.cfg.params;
        let theta = self.p.cfg.fixed_step.for_point(p).theta();
        [
            p.leg_length.to_bits(),
            p.rho.to_bits(),
            p.zeta.to_bits(),
            self.schedule.h.to_bits(),
            theta.to_bits(),
            if theta == 0.0 { 0 } else { p.k_m.to_bits() },
        ]
    }

    fn steps_left(&self) -> usize {
        self.schedule.total_steps() - self.start.steps
    }

    fn job(&self) -> LaneJob<'a> {
        let p = self.p;
        let settings = p.cfg.fixed_step.for_point(&p.cfg.params);
        LaneJob {
            robot: &p.robot,
            schedule: self.schedule,
            kick: settings.kick_form(),
            resolve_start: settings.resolves_start(),
            max_steps: p.cfg.fixed_step.max_steps,
            // What is left of the point's `--point-timeout`, from this block's start.
            deadline: Deadline::after(p.cfg.point_timeout.map(|t| (t - self.busy).max(0.0))),
        }
    }

    fn finish(self, end: LaneEnd) -> PointResult {
        PointResult {
            metrics: blank_unless_ok(self.acc.finish(end.status)),
            stats: SolverStats {
                steps: end.steps,
                fixed_step: self.schedule.h,
                ..SolverStats::default()
            },
            samples: Vec::new(),
            wall_seconds: self.wall,
            backend: Backend::Cpu,
        }
    }
}

/// What a block leaves of a lane: its result, or the lane to run on in the next round.
// One per lane and round, moved once into the round's list: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Onward<'a> {
    Finished(usize, PointResult),
    Continues(Lane<'a>),
}

/// Run every configuration on the CPU lane kernel; results in input order.
pub fn run_batch(cfgs: &[RunConfig]) -> Vec<Result<PointResult, SolverError>> {
    run_batch_on(Isa::detect(), cfgs)
}

/// As [`run_batch`], on a given instruction set (benchmarks compare them).
pub fn run_batch_on(isa: Isa, cfgs: &[RunConfig]) -> Vec<Result<PointResult, SolverError>> {
    let mut top_frequencies = TopFrequencies::default();
    let prepared: Vec<Prepared> = cfgs
        .iter()
        .map(|cfg| {
            let robot = Robot::new(&cfg.params);
            let h = cfg
                .fixed_step
                .step_with(&robot, cfg.metrics.dt_out, &mut top_frequencies);
            let schedule = SampleSchedule::new(&cfg.metrics, cfg.params.t_final, h);
            Prepared {
                cfg,
                robot,
                schedule,
            }
        })
        .collect();
    let mut out: Vec<Option<PointResult>> = (0..cfgs.len()).map(|_| None).collect();
    let mut lanes: Vec<Lane> = prepared
        .iter()
        .enumerate()
        .map(|(i, p)| Lane::new(i, p))
        .collect();
    // Round by round: every block to its lanes' next horizon; the lanes that continue
    // are gathered into fresh blocks for the next round.
    while !lanes.is_empty() {
        let onward: Vec<Onward> = plan_blocks(lanes, isa.lanes())
            .into_par_iter()
            .flat_map_iter(|block| run_one_block(isa, block))
            .collect();
        lanes = Vec::new();
        for o in onward {
            match o {
                Onward::Finished(i, r) => out[i] = Some(r),
                Onward::Continues(lane) => lanes.push(lane),
            }
        }
    }
    out.into_iter()
        .map(|r| Ok(r.expect("every instance finishes in some round")))
        .collect()
}

/// Blocks of lanes of one kernel width and shape, at most `width` lanes (one for the
/// one-lane kernel); lanes with the same leg matrices, then with similar steps left,
/// share a block, so that most blocks read their matrices once for all lanes and few
/// lanes idle while the longest one finishes. A lane's first block fixes its width:
/// the one-lane kernel where it is alone in it.
fn plan_blocks(mut lanes: Vec<Lane>, width: usize) -> Vec<Vec<Lane>> {
    lanes.sort_by_key(|l| {
        (
            l.width,
            l.shape(),
            l.matrices_key(),
            Reverse(l.steps_left()),
        )
    });
    let mut blocks: Vec<Vec<Lane>> = Vec::new();
    for lane in lanes {
        let cap = if lane.width == Some(Width::One) {
            1
        } else {
            width
        };
        match blocks.last_mut() {
            Some(b)
                if b.len() < cap && (b[0].width, b[0].shape()) == (lane.width, lane.shape()) =>
            {
                b.push(lane)
            }
            _ => blocks.push(vec![lane]),
        }
    }
    for b in &mut blocks {
        let first = if b.len() == 1 {
            Width::One
        } else {
            Width::Full
        };
        for lane in b.iter_mut() {
            lane.width.get_or_insert(first);
        }
    }
    blocks
}

/// Each lane's samples folded into its own accumulator; a lane that ends ok but not
/// settled continues (`--until-settled`) and is handed back to go on in a later round.
struct Accumulators<'s, 'a> {
    lanes: &'s mut [Lane<'a>],
    /// When each handed-back lane left the block.
    left_at: Vec<Option<Instant>>,
}

impl LaneSink for Accumulators<'_, '_> {
    fn sample(&mut self, lane: usize, s: &Sample) {
        self.lanes[lane].acc.push(s);
    }
    fn keeps_states(&self) -> bool {
        false
    }
    fn extend(&mut self, lane: usize, ended: &SampleSchedule) -> Option<SampleSchedule> {
        let l = &mut self.lanes[lane];
        let longer = continue_run(&mut l.acc, l.p.cfg.continuation(), ended)?;
        self.left_at[lane] = Some(Instant::now());
        Some(longer)
    }
}

/// Run one block of lanes (of one width and shape) to their next horizons.
fn run_one_block<'a>(isa: Isa, mut lanes: Vec<Lane<'a>>) -> Vec<Onward<'a>> {
    let start = Instant::now();
    let jobs: Vec<LaneJob<'a>> = lanes.iter().map(Lane::job).collect();
    let starts: Vec<LaneState> = lanes.iter().map(|l| l.start.clone()).collect();
    let width = lanes[0].width.expect("a planned block has its width");
    let mut sink = Accumulators {
        left_at: vec![None; lanes.len()],
        lanes: &mut lanes,
    };
    let on = Continue::HandBack;
    let outcomes: Vec<LaneOutcome> = match (width, isa.lanes()) {
        (Width::One, _) => run_block_from::<1>(isa.one_lane(), &jobs, &starts, on, &mut sink),
        (Width::Full, 8) => run_block_from::<8>(isa, &jobs, &starts, on, &mut sink),
        (Width::Full, 4) => run_block_from::<4>(isa, &jobs, &starts, on, &mut sink),
        (Width::Full, _) => run_block_from::<2>(isa, &jobs, &starts, on, &mut sink),
    };
    let left_at = sink.left_at;
    let elapsed = start.elapsed().as_secs_f64();
    // The block's wall time shared among its lanes.
    let share = elapsed / lanes.len() as f64;
    lanes
        .into_iter()
        .zip(outcomes)
        .zip(left_at)
        .map(|((mut lane, outcome), left)| {
            lane.wall += share;
            match outcome {
                LaneOutcome::Ended(end) => Onward::Finished(lane.index, lane.finish(end)),
                LaneOutcome::Continues { state, schedule } => {
                    lane.busy += left.map_or(elapsed, |t| (t - start).as_secs_f64());
                    lane.start = state;
                    lane.schedule = schedule;
                    Onward::Continues(lane)
                }
            }
        })
        .collect()
}
