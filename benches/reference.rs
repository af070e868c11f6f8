//! Cost of the model and of the stiff reference solver.
//!
//! `cargo bench --bench reference` — figures and the machine are recorded in
//! docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, Criterion};
use metachron::batch::{run_point, Engine};
use metachron::model::Robot;
use metachron::params::Params;
use metachron::simulate::RunConfig;
use std::hint::black_box;

/// One evaluation of all accelerations (the right-hand side) of the paper's robot,
/// at its initial state and at a walking state.
fn rhs(c: &mut Criterion) {
    let p = Params::default();
    let r = Robot::new(&p);
    let (q, v) = r.initial_state();
    let mut a = vec![0.0; r.nq()];
    c.bench_function("rhs/paper_initial_state", |b| {
        b.iter(|| black_box(r.accelerations(0.0, black_box(&q), black_box(&v), &mut a)))
    });
}

/// The paper's run for 5 s on the reference solver at its default tolerances.
fn paper_5s(c: &mut Criterion) {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 5.0;
    let mut g = c.benchmark_group("reference");
    g.sample_size(10);
    g.bench_function("paper_run_5s", |b| {
        b.iter(|| {
            let r = run_point(&cfg, &Engine::Reference, false, |_| {}).unwrap();
            black_box(r.metrics.mean_lag)
        })
    });
    g.finish();
}

criterion_group!(benches, rhs, paper_5s);
criterion_main!(benches);
