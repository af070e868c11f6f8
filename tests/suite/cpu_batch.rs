//! The CPU lane engine: every lane width agrees with the one-lane solo path to
//! round-off, a point's result does not depend on its block neighbours (bit for bit
//! within one width), and a diverging instance is flagged without touching the others.
//! (Accuracy against the reference is in batch_validation.rs.)

use crate::common;

use common::validation::validation_points;
use metachron::batch::{run_point, Engine};
use metachron::cpu_engine::run_batch_on;
use metachron::integrate::dkd::{self, DkdSettings};
use metachron::integrate::lanes::kernel::{BlockState, Scratch};
use metachron::integrate::lanes::model::BlockModel;
use metachron::integrate::lanes::Isa;
use metachron::integrate::record::InstanceRecord;
use metachron::model::Robot;
use metachron::simulate::{PointResult, RunConfig};

fn short_points(t_final: f64) -> Vec<RunConfig> {
    let mut cfgs: Vec<RunConfig> = validation_points().into_iter().map(|(_, c)| c).collect();
    for c in &mut cfgs {
        c.params.t_final = t_final;
    }
    cfgs
}

fn isas() -> Vec<Isa> {
    ["portable", "avx2", "avx512"]
        .iter()
        .filter_map(|n| Isa::named(n))
        .collect()
}

fn bits(r: &PointResult) -> Vec<u64> {
    r.metrics.scalars().iter().map(|x| x.to_bits()).collect()
}

#[test]
fn every_lane_width_agrees_with_the_solo_path() {
    let cfgs = short_points(0.5);
    let solo: Vec<PointResult> = cfgs
        .iter()
        .map(|c| run_point(c, &Engine::Cpu, false, |_| {}).unwrap())
        .collect();
    for isa in isas() {
        let batch = run_batch_on(isa, &cfgs);
        for (i, (got, alone)) in batch.iter().zip(&solo).enumerate() {
            let got = got.as_ref().unwrap();
            assert_eq!(got.metrics.status, alone.metrics.status, "{}", isa.label());
            assert_eq!(got.metrics.class, alone.metrics.class, "{}", isa.label());
            assert_eq!(got.stats.steps, alone.stats.steps);
            for (x, y) in got.metrics.scalars().iter().zip(alone.metrics.scalars()) {
                let tol = 1e-9 * y.abs().max(1e-3);
                assert!(
                    (x - y).abs() <= tol || (x.is_nan() && y.is_nan()),
                    "{} point {i}: {x} vs solo {y}",
                    isa.label()
                );
            }
        }
    }
}

/// The state itself, step by step: W lanes (the width this CPU's build runs) holding
/// the robots in turn, against the one-lane step of each.
#[test]
fn lane_state_matches_one_lane_steps() {
    let isa = Isa::detect();
    match isa.lanes() {
        8 => lane_state_at::<8>(isa),
        4 => lane_state_at::<4>(isa),
        _ => lane_state_at::<2>(isa),
    }
}

fn lane_state_at<const W: usize>(isa: Isa) {
    let cfgs = short_points(0.5);
    // Five-node robots (the specialised kernel) and the others (the generic one).
    for shape in [5usize, 3] {
        let group: Vec<&RunConfig> = cfgs
            .iter()
            .filter(|c| c.params.n_nodes == shape && c.params.n_legs == 9)
            .collect();
        let robots: Vec<Robot> = group.iter().map(|c| Robot::new(&c.params)).collect();
        let hs: Vec<f64> = robots
            .iter()
            .map(|r| DkdSettings::default().step_for(r, 0.01))
            .collect();
        let lanes: Vec<usize> = (0..W).map(|j| j % robots.len()).collect();
        let refs: Vec<&Robot> = lanes.iter().map(|&k| &robots[k]).collect();
        let h: Vec<f64> = lanes.iter().map(|&k| hs[k]).collect();
        let records: Vec<InstanceRecord> = refs
            .iter()
            .zip(&h)
            .map(|(r, &h)| InstanceRecord::new(r, h, 0.0))
            .collect();
        let model = BlockModel::<W>::new(&records.iter().collect::<Vec<_>>());
        let init: Vec<Vec<f64>> = refs.iter().map(|r| r.initial_state().0).collect();
        let mut st = BlockState::<W>::at_rest(init[0].len(), |j, k| init[j][k]);
        let mut scratch = Scratch::<W>::new(refs[0].n_legs);
        let steps = 400;
        isa.advance(&model, &mut st, &mut scratch, steps);
        for (j, r) in refs.iter().enumerate() {
            let k = &records[j];
            let (mut q, mut v) = r.initial_state();
            for _ in 0..steps {
                dkd::step(k, &mut q, &mut v);
            }
            for (s, (a, b)) in q.iter().zip(&st.q).enumerate() {
                assert!(
                    (a - b.0[j]).abs() <= 1e-11,
                    "n={shape} lane {j} q[{s}]: {a} vs {}",
                    b.0[j]
                );
            }
            for (s, (a, b)) in v.iter().zip(&st.v).enumerate() {
                assert!(
                    (a - b.0[j]).abs() <= 1e-8 * a.abs().max(1.0),
                    "n={shape} lane {j} v[{s}]: {a} vs {}",
                    b.0[j]
                );
            }
        }
    }
}

#[test]
fn lanes_are_independent_and_a_diverging_one_is_isolated() {
    let cfgs = short_points(1.0);
    let mut with_bad = cfgs.clone();
    // A step far beyond the explicit bending limit: this instance must blow up.
    let mut bad = cfgs[0].clone();
    bad.fixed_step.h = Some(5e-3);
    with_bad.insert(3, bad);
    let mut reversed = cfgs.clone();
    reversed.reverse();
    for isa in isas() {
        let plain = run_batch_on(isa, &cfgs);
        let mixed = run_batch_on(isa, &with_bad);
        let shuffled = run_batch_on(isa, &reversed);
        let flagged = mixed[3].as_ref().unwrap();
        assert!(
            !flagged.metrics.status.is_ok(),
            "the unstable instance was not flagged"
        );
        assert!(flagged.metrics.status.time() <= 1.0);
        let mixed: Vec<&PointResult> = mixed
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 3)
            .map(|(_, r)| r.as_ref().unwrap())
            .collect();
        let n = cfgs.len();
        for i in 0..n {
            let a = plain[i].as_ref().unwrap();
            assert!(a.metrics.status.is_ok(), "{}: {:?}", i, a.metrics.status);
            // Bit for bit: other neighbours, other lane, a diverging neighbour.
            assert_eq!(
                bits(a),
                bits(mixed[i]),
                "{} point {i} beside a diverging lane",
                isa.label()
            );
            let b = shuffled[n - 1 - i].as_ref().unwrap();
            assert_eq!(
                bits(a),
                bits(b),
                "{} point {i} in another block",
                isa.label()
            );
        }
    }
}
