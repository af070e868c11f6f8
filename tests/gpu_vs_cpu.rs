//! The shader against its CPU twin: same scheme, same step, same metrics.

mod common;

use metachron::batch::run_batch;
use metachron::gpu::run_gpu_batch;
use metachron::simulate::{Backend, RunConfig};

fn cfg(sets: &[&str]) -> RunConfig {
    let mut c = RunConfig::default();
    for s in sets {
        c.params.apply_override(s).expect("valid override");
    }
    c.validate().expect("valid config");
    c
}

#[test]
fn gpu_matches_cpu_twin_over_a_short_horizon() {
    let Some(ctx) = common::gpu::gpu_context("gpu_matches_cpu_twin_over_a_short_horizon") else {
        return;
    };
    let cfgs = vec![cfg(&["t_final=0.5"])];
    let t0 = std::time::Instant::now();
    let gpu = run_gpu_batch(&ctx, &cfgs);
    eprintln!("gpu {:?}", t0.elapsed());
    let cpu = run_batch(&cfgs, Backend::Cpu);
    for (g, c) in gpu.iter().zip(&cpu) {
        let (g, c) = (g.as_ref().expect("gpu ok"), c.as_ref().expect("cpu ok"));
        eprintln!("gpu {:?}\ncpu {:?}", g.metrics, c.metrics);
        assert_eq!(g.stats.steps, c.stats.steps);
    }
}

#[test]
fn one_step_matches_cpu_step() {
    use metachron::integrate::dkd::{self, KickConstants};
    use metachron::model::Robot;
    let Some(ctx) = common::gpu::gpu_context("one_step_matches_cpu_step") else {
        return;
    };
    let steps: usize = std::env::var("STEPS")
        .map(|s| s.parse().unwrap())
        .unwrap_or(1);
    let mut c = RunConfig::default();
    c.params.t_final = 0.00025 * steps as f64;
    c.metrics.dt_out = 0.00025;
    c.fixed_step.h = Some(0.00025);
    let engine = metachron::gpu::GpuEngine::new(&ctx);
    let (res, qv) = engine.run_with_state(&[c.clone()]).unwrap().pop().unwrap();
    eprintln!("status {:?} steps {}", res.metrics.status, res.stats.steps);
    let robot = Robot::new(&c.params);
    let (mut q, mut v) = robot.initial_state();
    let k = KickConstants::new(&robot, 0.00025, 0.0);
    for _ in 0..steps {
        dkd::step(&robot, &k, &mut q, &mut v);
    }
    let nq = q.len();
    for i in 0..nq {
        let (a, b) = (qv[i], q[i]);
        if (a - b).abs() > 1e-12 * (1.0 + b.abs()) {
            eprintln!("q[{i}] gpu {a} cpu {b}");
        }
        let (a, b) = (qv[nq + i], v[i]);
        if (a - b).abs() > 1e-9 * (1.0 + b.abs()) {
            eprintln!("v[{i}] gpu {a} cpu {b}");
        }
    }
}

#[test]
fn debug_series() {
    use metachron::integrate::dkd::{self, KickConstants};
    use metachron::model::Robot;
    let Some(ctx) = common::gpu::gpu_context("debug") else {
        return;
    };
    let engine = metachron::gpu::GpuEngine::new(&ctx);
    let mut cfgs = Vec::new();
    let lo: usize = std::env::var("LO").map(|s| s.parse().unwrap()).unwrap_or(1);
    for steps in lo..=12 {
        let mut c = RunConfig::default();
        let per: usize = std::env::var("PER")
            .map(|s| s.parse().unwrap())
            .unwrap_or(1);
        c.params.t_final = 0.00025 * (steps * per) as f64;
        c.metrics.dt_out = 0.00025 * per as f64;
        c.fixed_step.h = Some(0.00025);
        cfgs.push(c);
    }
    let out = engine.run_with_state(&cfgs).unwrap();
    let robot = Robot::new(&cfgs[0].params);
    let (mut q, mut v) = robot.initial_state();
    let k = KickConstants::new(&robot, 0.00025, 0.0);
    let per: usize = std::env::var("PER")
        .map(|s| s.parse().unwrap())
        .unwrap_or(1);
    for _ in per..lo * per {
        dkd::step(&robot, &k, &mut q, &mut v);
    }
    for (s, (r, qv)) in out.iter().enumerate() {
        for _ in 0..per {
            dkd::step(&robot, &k, &mut q, &mut v);
        }
        let nq = q.len();
        eprintln!("{} gpu {:.12e} cpu {:.12e} steps {} v1 {:.6e} {:.6e} body {:.6e} {:.6e} vb {:.6e} {:.6e}", s + lo, qv[1], q[1], r.stats.steps, qv[nq + 1], v[1], qv[nq - 3], q[nq - 3], qv[2 * nq - 3], v[nq - 3]);
    }
}
