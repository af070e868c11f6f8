//! Budgets on the device: `max_steps` and `--point-timeout` hold per instance on the
//! gpu engine. An instance past its budget stops at a dispatch boundary with status
//! `budget_exceeded` at the time it reached (the same as the cpu engine's for a step
//! budget), and the other instances of its batch run on to what they get alone.
//! Skipped with a notice where no adapter exists, unless METACHRON_REQUIRE_GPU=1.

use crate::common;

use metachron::batch::{run_batch, Engine};
use metachron::gpu::GpuEngine;
use metachron::sample::Status;
use metachron::simulate::RunConfig;

fn small(t_final: f64) -> RunConfig {
    let mut c = RunConfig::default();
    c.params.apply_override("n_legs=3").unwrap();
    c.params.n_nodes = 3;
    c.params.t_final = t_final;
    c
}

#[test]
fn a_step_budget_stops_one_instance_where_the_cpu_engine_stops_it() {
    let Some(ctx) = common::gpu::gpu_context("gpu_step_budget") else {
        return;
    };
    let free = small(0.3);
    let mut capped = small(0.3);
    capped.fixed_step.max_steps = Some(333);
    let mut engine = GpuEngine::new(&ctx);
    // Dispatches of 100 steps: the budget falls inside the fourth, which is cut there.
    engine.steps_per_dispatch = Some(100);
    let batch = engine
        .run(&[free.clone(), capped.clone()])
        .expect("gpu batch");
    let cpu = run_batch(std::slice::from_ref(&capped), &Engine::Cpu)
        .remove(0)
        .expect("cpu run");
    let got = &batch[1];
    assert_eq!(got.metrics.status.label(), "budget_exceeded");
    assert_eq!(got.stats.steps, 333);
    assert_eq!(got.metrics.status, cpu.metrics.status, "time reached");
    assert_eq!(got.metrics.status.time(), 333.0 * got.stats.fixed_step);
    assert!(got.metrics.lag_order.is_nan() && got.metrics.t_run == got.metrics.status.time());
    // The other instance ran to its end, exactly as alone.
    let alone = engine
        .run(std::slice::from_ref(&free))
        .expect("alone")
        .remove(0);
    assert!(
        batch[0].metrics.status.is_ok(),
        "{:?}",
        batch[0].metrics.status
    );
    for (x, y) in batch[0]
        .metrics
        .scalars()
        .iter()
        .zip(&alone.metrics.scalars())
    {
        assert_eq!(x.to_bits(), y.to_bits(), "{x} in the batch, {y} alone");
    }
}

#[test]
fn a_wall_time_budget_stops_a_long_instance_and_its_neighbour_finishes() {
    let Some(ctx) = common::gpu::gpu_context("gpu_wall_time_budget") else {
        return;
    };
    let short = small(0.2);
    // Hours of simulated time: only the budget can end it.
    let mut long = small(1e5);
    long.point_timeout = Some(1.0);
    let mut engine = GpuEngine::new(&ctx);
    engine.steps_per_dispatch = Some(500);
    let batch = engine.run(&[short.clone(), long]).expect("gpu batch");
    match batch[1].metrics.status {
        Status::BudgetExceeded { time } => {
            assert!(time > 0.0 && time < 1e5, "stopped at t = {time}");
            assert_eq!(
                time,
                batch[1].stats.steps as f64 * batch[1].stats.fixed_step
            );
        }
        other => panic!("the long instance ended {other:?}"),
    }
    let alone = engine
        .run(std::slice::from_ref(&short))
        .expect("alone")
        .remove(0);
    assert!(batch[0].metrics.status.is_ok());
    for (x, y) in batch[0]
        .metrics
        .scalars()
        .iter()
        .zip(&alone.metrics.scalars())
    {
        assert_eq!(x.to_bits(), y.to_bits(), "{x} in the batch, {y} alone");
    }
}
