//! Throughput of every engine against batch size, in robot-seconds simulated per
//! wall-second, all measured in one run so the ratios are comparable on a noisy machine.
//! Prints a markdown table (docs/benchmarks.md records it with the date).
//!
//! `cargo bench --bench throughput` — environment:
//! - `METACHRON_BENCH_MAX_BATCH` (default 16384): largest batch tried;
//! - `METACHRON_BENCH_GPU_MAX_BATCH` (default 256 on software adapters such as lavapipe,
//!   16384 on hardware): largest GPU batch (lavapipe is a correctness backend, slow);
//! - `METACHRON_BENCH_ENGINES` (default `reference,cpu,gpu`).
//!
//! Hand-written rather than criterion: one timed run per point after a warm-up, since a
//! 16384-robot batch takes tens of seconds and criterion insists on ten samples.

use std::time::Instant;

use metachron::batch::run_batch;
use metachron::gpu::{GpuContext, GpuEngine, GpuOptions};
use metachron::simulate::{Backend, RunConfig};

/// Paper-like robots with different couplings, `t_final` simulated seconds each.
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

/// Simulated time per robot: long for small batches (start-up costs amortised), short
/// for large ones (bounded wall time).
fn horizon(n: usize) -> f64 {
    match n {
        0..=16 => 1.0,
        17..=256 => 0.25,
        _ => 0.1,
    }
}

fn env_usize(key: &str) -> Option<usize> {
    std::env::var(key).ok().and_then(|v| v.parse().ok())
}

fn main() {
    // `cargo bench` passes --bench; nothing else to parse.
    let engines =
        std::env::var("METACHRON_BENCH_ENGINES").unwrap_or_else(|_| "reference,cpu,gpu".into());
    let max_batch = env_usize("METACHRON_BENCH_MAX_BATCH").unwrap_or(16384);
    let sizes: Vec<usize> = [1usize, 16, 256, 1024, 4096, 16384]
        .into_iter()
        .filter(|&n| n <= max_batch)
        .collect();
    let mut rows: Vec<(String, usize, f64, f64)> = Vec::new();
    let mut timed = |label: &str, n: usize, t_final: f64, f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        let wall = start.elapsed().as_secs_f64();
        let rate = n as f64 * t_final / wall;
        eprintln!("{label:>10} batch {n:>6}: {wall:9.3} s, {rate:10.3} robot-s/s");
        rows.push((label.to_string(), n, wall, rate));
    };
    if engines.contains("reference") {
        for n in [1usize, 2] {
            let cfgs = batch(n, 1.0);
            timed("reference", n, 1.0, &mut || {
                run_batch(&cfgs, Backend::Reference);
            });
        }
    }
    if engines.contains("cpu") {
        run_batch(&batch(2, 0.05), Backend::Cpu); // warm-up
        for &n in &sizes {
            let t = horizon(n);
            let cfgs = batch(n, t);
            timed("cpu", n, t, &mut || {
                run_batch(&cfgs, Backend::Cpu);
            });
        }
    }
    let mut adapter = String::from("none");
    if engines.contains("gpu") {
        match GpuContext::new(&GpuOptions::from_env().unwrap_or_default()) {
            Err(e) => eprintln!("gpu: skipped ({e})"),
            Ok(ctx) => {
                adapter = format!(
                    "{} ({}, {})",
                    ctx.adapter.name,
                    ctx.adapter.device_type,
                    ctx.precision.label()
                );
                let software = ctx.adapter.device_type == "Cpu";
                let gpu_max = env_usize("METACHRON_BENCH_GPU_MAX_BATCH").unwrap_or(if software {
                    256
                } else {
                    16384
                });
                let engine = GpuEngine::new(&ctx);
                engine
                    .run(&batch(1, 0.01))
                    .expect("gpu warm-up (pipeline build)");
                for &n in sizes.iter().filter(|&&n| n <= gpu_max) {
                    let t = horizon(n);
                    let cfgs = batch(n, t);
                    timed("gpu", n, t, &mut || {
                        engine.run(&cfgs).expect("gpu batch");
                    });
                }
            }
        }
    }
    let best_ref = rows
        .iter()
        .filter(|r| r.0 == "reference")
        .map(|r| r.3)
        .fold(f64::NAN, f64::max);
    println!("\nGPU adapter: {adapter}\n");
    println!(
        "| engine | batch | s simulated per robot | wall | robot-s / s | × reference (best) |"
    );
    println!("|---|---|---|---|---|---|");
    for (label, n, wall, rate) in &rows {
        let t = if label == "reference" {
            1.0
        } else {
            horizon(*n)
        };
        println!(
            "| {label} | {n} | {t} | {wall:.3} s | {rate:.3} | {:.1} |",
            rate / best_ref
        );
    }
}
