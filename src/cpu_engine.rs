//! The CPU batch engine: instances grouped by shape (N legs, n nodes) into blocks of
//! the vector unit's lane width, rayon over blocks, each lane's samples folded into
//! its own metrics accumulator. The CPU counterpart of `gpu::engine`.
//!
//! Lanes are independent: a lane's result does not depend on its neighbours' values,
//! only on its own inputs (a block computes every lane with the same instruction
//! sequence, so a point's result is bit-identical in any block of the same width;
//! across widths, and against the one-lane solo path, it agrees to round-off, since
//! the compiler may fuse differently).

use std::time::Instant;

use rayon::prelude::*;

use crate::error::SolverError;
use crate::integrate::continuation::continue_run;
use crate::integrate::dkd::TopFrequencies;
use crate::integrate::lanes::{run_block, Isa, LaneEnd, LaneJob, LaneSink};
use crate::integrate::schedule::SampleSchedule;
use crate::integrate::settings::SolverStats;
use crate::metrics::MetricsAccumulator;
use crate::model::Robot;
use crate::sample::Deadline;
use crate::simulate::{blank_unless_ok, Backend, PointResult, RunConfig};

/// One instance, prepared.
struct Prepared<'a> {
    cfg: &'a RunConfig,
    robot: Robot,
    schedule: SampleSchedule,
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
    let blocks = plan_blocks(&prepared, isa.lanes());
    let done: Vec<(usize, PointResult)> = blocks
        .par_iter()
        .flat_map_iter(|block| {
            let lanes: Vec<&Prepared> = block.iter().map(|&i| &prepared[i]).collect();
            block.iter().copied().zip(run_one_block(isa, &lanes))
        })
        .collect();
    let mut out: Vec<Option<PointResult>> = (0..cfgs.len()).map(|_| None).collect();
    for (i, r) in done {
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|r| Ok(r.expect("every instance is planned into exactly one block")))
        .collect()
}

/// Blocks of at most `width` instances of one shape; instances of similar length
/// share a block, so few lanes idle while the longest one finishes.
fn plan_blocks(prepared: &[Prepared], width: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..prepared.len()).collect();
    let key = |i: &usize| {
        let p = &prepared[*i];
        (
            p.robot.n_legs,
            p.robot.n_nodes,
            std::cmp::Reverse(p.schedule.total_steps()),
        )
    };
    order.sort_by_key(key);
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    for i in order {
        let shape = |j: usize| (prepared[j].robot.n_legs, prepared[j].robot.n_nodes);
        match blocks.last_mut() {
            Some(b) if b.len() < width && shape(b[0]) == shape(i) => b.push(i),
            _ => blocks.push(vec![i]),
        }
    }
    blocks
}

/// Each lane's samples folded into its own accumulator; a lane that ends ok but not
/// settled continues (`--until-settled`) within its block, from its state.
struct Accumulators<'a> {
    lanes: &'a [&'a Prepared<'a>],
    accs: Vec<MetricsAccumulator>,
}

impl LaneSink for Accumulators<'_> {
    fn sample(&mut self, lane: usize, s: &crate::sample::Sample) {
        self.accs[lane].push(s);
    }
    fn extend(&mut self, lane: usize, ended: &SampleSchedule) -> Option<SampleSchedule> {
        continue_run(
            &mut self.accs[lane],
            self.lanes[lane].cfg.continuation(),
            ended,
        )
    }
}

fn run_one_block(isa: Isa, lanes: &[&Prepared]) -> Vec<PointResult> {
    let start = Instant::now();
    let jobs: Vec<LaneJob> = lanes
        .iter()
        .map(|p| LaneJob {
            robot: &p.robot,
            schedule: p.schedule,
            theta: p.cfg.fixed_step.theta,
            max_steps: p.cfg.fixed_step.max_steps,
            // Each point's `--point-timeout` counts from its block's start.
            deadline: Deadline::after(p.cfg.point_timeout),
        })
        .collect();
    let mut sink = Accumulators {
        lanes,
        accs: lanes
            .iter()
            .map(|p| MetricsAccumulator::new(&p.cfg.params, &p.cfg.metrics))
            .collect(),
    };
    let ends: Vec<LaneEnd> = match (lanes.len(), isa.lanes()) {
        // A lone instance runs the one-lane kernel rather than a padded block.
        (1, _) => run_block::<1>(isa.one_lane(), &jobs, &mut sink),
        (_, 8) => run_block::<8>(isa, &jobs, &mut sink),
        (_, 4) => run_block::<4>(isa, &jobs, &mut sink),
        _ => run_block::<2>(isa, &jobs, &mut sink),
    };
    let accs = sink.accs;
    // The block's wall time shared among its instances.
    let wall = start.elapsed().as_secs_f64() / lanes.len() as f64;
    lanes
        .iter()
        .zip(accs)
        .zip(ends)
        .map(|((p, acc), end)| PointResult {
            metrics: blank_unless_ok(acc.finish(end.status)),
            stats: SolverStats {
                steps: end.steps,
                fixed_step: p.schedule.h,
                ..SolverStats::default()
            },
            samples: Vec::new(),
            wall_seconds: wall,
            backend: Backend::Cpu,
        })
        .collect()
}
