//! Throughput of the CPU batch engine (DKD-dc, rayon over instances) against batch
//! size, in robot-seconds simulated per wall-second (criterion's elements/s), next to
//! the reference solver on one robot in the same run.
//!
//! `cargo bench --bench batch` — figures in docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use metachron::batch::run_batch;
use metachron::simulate::{Backend, RunConfig};
use std::hint::black_box;

/// Paper-like robots with slightly different couplings, `t_final` simulated seconds each.
fn batch(n: usize, t_final: f64) -> Vec<RunConfig> {
    (0..n)
        .map(|i| {
            let mut c = RunConfig::default();
            c.params.t_final = t_final;
            c.params.alpha = 400.0 + (i % 64) as f64 * 5.0;
            c
        })
        .collect()
}

fn throughput(c: &mut Criterion) {
    let t_final = 1.0;
    let mut g = c.benchmark_group("robot_seconds");
    g.sample_size(10);
    let one = batch(1, t_final);
    g.throughput(Throughput::Elements(1));
    g.bench_function("reference/1", |b| {
        b.iter(|| black_box(run_batch(&one, Backend::Reference)))
    });
    for n in [1usize, 16, 256] {
        let cfgs = batch(n, t_final);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("cpu/{n}"), |b| {
            b.iter(|| black_box(run_batch(&cfgs, Backend::Cpu)))
        });
    }
    g.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
