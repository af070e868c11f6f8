//! Batch behaviour of the CPU engine: independence of instances, divergence isolation.
//! (Its accuracy against the reference is in batch_validation.rs.)

mod common;

use common::validation::validation_points;
use metachron::batch::{run_batch, run_point};
use metachron::simulate::{Backend, RunConfig};

#[test]
fn batch_instances_are_independent_and_a_diverging_one_is_isolated() {
    let mut cfgs: Vec<RunConfig> = validation_points().into_iter().map(|(_, c)| c).collect();
    for c in &mut cfgs {
        c.params.t_final = 1.0;
    }
    // A step far beyond the explicit bending limit: this instance must blow up.
    let mut bad = cfgs[0].clone();
    bad.fixed_step.h = Some(5e-3);
    cfgs.insert(3, bad);
    let batch = run_batch(&cfgs, Backend::Cpu);
    for (i, (cfg, got)) in cfgs.iter().zip(&batch).enumerate() {
        let got = got.as_ref().unwrap();
        if i == 3 {
            assert!(
                !got.metrics.status.is_ok(),
                "the unstable instance was not flagged"
            );
            assert!(got.metrics.status.time() <= 1.0);
            continue;
        }
        let alone = run_point(cfg, Backend::Cpu, false, |_| {}).unwrap();
        assert!(
            got.metrics.status.is_ok(),
            "instance {i}: {:?}",
            got.metrics.status
        );
        // Bit for bit: nothing leaks between instances.
        let (a, b) = (got.metrics.scalars(), alone.metrics.scalars());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.to_bits(), y.to_bits(), "instance {i}");
        }
    }
}
