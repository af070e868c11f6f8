//! The cpu engine's lane kernel per robot-step, several workloads side by side:
//! `cargo bench --bench lane_kernel`. One block of the widest vector unit (or the one
//! `METACHRON_SIMD` names) steps each workload in turn, round after round, and each
//! workload's fastest round is kept, so that ratios between workloads are taken in one
//! run, on a machine whose speed drifts (figures in docs/benchmarks.md).

use metachron::integrate::dkd::DkdSettings;
use metachron::integrate::lanes::kernel::{BlockState, Scratch};
use metachron::integrate::lanes::model::BlockModel;
use metachron::integrate::lanes::{Isa, LaneState};
use metachron::integrate::record::InstanceRecord;
use metachron::metrics::MetricsSettings;
use metachron::model::Robot;
use metachron::params::Params;
use std::time::Instant;

/// The workloads: the paper's robot, then with the internal couple as a standing wave
/// and as a travelling wave with a phase step between legs.
const WORKLOADS: [(&str, &[&str]); 3] = [
    ("paper", &[]),
    ("couple, standing", &["axo_f=150", "axo_omega=2"]),
    (
        "couple, travelling",
        &["axo_f=150", "axo_omega=2", "axo_k=2", "axo_dphi=0.5"],
    ),
];
const ROUNDS: usize = 25;
const COPIES: usize = 8;
const STEPS: usize = 600;

struct Workload<const W: usize> {
    model: BlockModel<W>,
    state: BlockState<W>,
    scratch: Scratch<W>,
    best: f64,
}

fn workload<const W: usize>(sets: &[&str]) -> Workload<W> {
    let mut p = Params::default();
    for s in sets {
        p.apply_override(s).expect("a valid setting");
    }
    let robot = Robot::new(&p);
    let h = DkdSettings::default().step_for(&robot, MetricsSettings::default().dt_out);
    let record = InstanceRecord::new(&robot, h, 0.0);
    let start = LaneState::at_rest(&robot);
    Workload {
        model: BlockModel::new(&[&record]),
        state: BlockState::at_rest(start.q.len(), |_, k| start.q[k]),
        scratch: Scratch::new(robot.n_legs),
        best: f64::INFINITY,
    }
}

fn measure<const W: usize>(isa: Isa) {
    // Each workload in several copies, allocated in turn: where a block's arrays fall
    // changes its speed by several per cent (its working set is about L1's size), so
    // a workload's figure is the mean over its copies of each copy's fastest round.
    let mut runs: Vec<Workload<W>> = (0..COPIES)
        .flat_map(|_| WORKLOADS.iter().map(|(_, s)| workload(s)))
        .collect();
    let k = runs.len();
    for round in 0..ROUNDS {
        // Each round starts with the next run: none always goes first.
        for i in 0..k {
            let w = &mut runs[(round + i) % k];
            let t = Instant::now();
            isa.advance(&w.model, &mut w.state, &mut w.scratch, STEPS);
            let per_robot_step = t.elapsed().as_secs_f64() / (STEPS * W) as f64;
            w.best = w.best.min(per_robot_step);
        }
    }
    let mean = |j: usize| {
        let copies = runs.iter().skip(j).step_by(WORKLOADS.len());
        copies.map(|w| w.best).sum::<f64>() / COPIES as f64
    };
    println!(
        "lane kernel, {} ({W} lanes): {COPIES} copies of each workload, fastest of {ROUNDS} rounds of {STEPS} steps",
        isa.label()
    );
    for (j, (name, _)) in WORKLOADS.iter().enumerate() {
        let spread: Vec<String> = runs
            .iter()
            .skip(j)
            .step_by(WORKLOADS.len())
            .map(|w| format!("{:.3}", w.best * 1e6))
            .collect();
        println!(
            "  {name:<20} {:.4} µs per robot-step  ({:.3} × {}; copies {})",
            mean(j) * 1e6,
            mean(j) / mean(0),
            WORKLOADS[0].0,
            spread.join(" ")
        );
    }
}

fn main() {
    let isa = Isa::detect();
    match isa.lanes() {
        8 => measure::<8>(isa),
        4 => measure::<4>(isa),
        _ => measure::<2>(isa),
    }
}
