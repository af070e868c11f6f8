//! `metachron bench`: robot-seconds simulated per wall-second of every engine on this
//! machine — the reference (one robot), the CPU lane engine (one thread and all), the
//! GPU engine on each adapter and precision — over batch sizes, all in one run so
//! that ratios are comparable on a noisy machine. Sizes a sweep; measures a GPU box.

use std::time::Instant;

use crate::batch::{run_batch, Engine};
use crate::cpu_engine::run_batch_on;
use crate::error::SolverError;
use crate::gpu::{self, GpuContext, GpuEngine, GpuOptions, Precision, PrecisionChoice};
use crate::integrate::dkd::Scheme;
use crate::integrate::lanes::Isa;
use crate::params::Params;
use crate::simulate::{PointResult, RunConfig};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub reference: bool,
    pub cpu: bool,
    pub gpu: bool,
    pub batches: Vec<usize>,
    /// Simulated seconds per robot.
    pub t_final: f64,
    /// Simulated seconds of the reference's robot: its first tenths of a second (the
    /// servos spinning up) are far stiffer than the rest, so a short horizon would
    /// understate it.
    pub reference_t_final: f64,
    /// CPU thread counts to try.
    pub threads: Vec<usize>,
    /// CPU instruction sets to try (the detected one by default).
    pub isas: Vec<Isa>,
    /// The batch engines' fixed-step schemes to compare (each at its own default step).
    pub schemes: Vec<Scheme>,
    /// Largest batch on a software GPU adapter (lavapipe is a correctness backend).
    pub software_gpu_max_batch: usize,
    /// The workload's robot (the paper's by default; `bench --set` changes it, e.g. to
    /// measure what a model term costs against the paper's robot).
    pub robot: Params,
}

impl BenchPlan {
    /// Each batch size under each scheme, in the order they are measured.
    fn runs(&self) -> impl Iterator<Item = (usize, Scheme)> + '_ {
        self.batches
            .iter()
            .flat_map(|&n| self.schemes.iter().map(move |&s| (n, s)))
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    pub engine: String,
    pub adapter: String,
    pub precision: String,
    pub threads: usize,
    pub batch: usize,
    pub t_final: f64,
    pub wall_s: f64,
    pub robot_s_per_s: f64,
    /// SIMD instruction set and lanes of the CPU engine ("" elsewhere).
    pub simd: String,
    /// The batch engines' fixed-step scheme ("" for the adaptive reference).
    pub scheme: String,
    /// Steps per simulated second of one robot, mean over the batch: the fixed step's
    /// count on the batch engines (the cpu and gpu engines take the same steps), the
    /// accepted steps on the reference.
    pub steps_per_robot_s: f64,
}

/// A part of the plan that could not run (no adapter, a shape the device refuses…).
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub what: String,
    pub why: String,
}

/// The machine the figures belong to.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    /// The CPU engine's default instruction set and its f64 lanes.
    pub simd: String,
}

impl Machine {
    pub fn this() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let isa = Isa::detect();
        Machine {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            simd: simd_label(isa),
        }
    }
}

fn simd_label(isa: Isa) -> String {
    format!("{} ({} lanes)", isa.label(), isa.lanes())
}

/// The benchmark's robots: `robot` (validated), with couplings that differ per instance
/// (α·(0.8 + (i mod 64)/100), so no two lanes compute the same numbers), `t_final`
/// simulated seconds each, on the batch engines' `scheme` at its default step.
pub fn workload(robot: &Params, n: usize, t_final: f64, scheme: Scheme) -> Vec<RunConfig> {
    (0..n)
        .map(|i| {
            let params = Params {
                t_final,
                alpha: robot.alpha * (0.8 + (i % 64) as f64 / 100.0),
                ..robot.clone()
            };
            let mut cfg = RunConfig {
                params,
                ..RunConfig::default()
            };
            cfg.fixed_step.scheme = scheme;
            cfg
        })
        .collect()
}

/// Run the plan; `on_row` sees each row as it is measured.
pub fn run(plan: &BenchPlan, on_row: &mut dyn FnMut(&BenchRow)) -> (Vec<BenchRow>, Vec<Skipped>) {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let t = plan.t_final;
    let mut record = |row: BenchRow, rows: &mut Vec<BenchRow>| {
        on_row(&row);
        rows.push(row);
    };
    let row =
        |engine: &str, adapter: &str, precision: &str, threads, batch, wall: f64, steps| BenchRow {
            engine: engine.into(),
            adapter: adapter.into(),
            precision: precision.into(),
            threads,
            batch,
            t_final: t,
            wall_s: wall,
            robot_s_per_s: batch as f64 * t / wall,
            simd: String::new(),
            scheme: String::new(),
            steps_per_robot_s: steps,
        };
    if plan.reference {
        let tr = plan.reference_t_final;
        let cfgs = workload(&plan.robot, 1, tr, Scheme::default());
        let mut results = Vec::new();
        let wall = timed(|| results = run_batch(&cfgs, &Engine::Reference));
        let mut r = row(
            "reference",
            "",
            "f64",
            1,
            1,
            wall,
            steps_per_robot_s(&results, tr),
        );
        r.t_final = tr;
        r.robot_s_per_s = tr / wall;
        record(r, &mut rows);
    }
    if plan.cpu {
        for &isa in &plan.isas {
            for &threads in &plan.threads {
                let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
                    Ok(p) => p,
                    Err(e) => {
                        skipped.push(Skipped {
                            what: format!("cpu with {threads} threads"),
                            why: e.to_string(),
                        });
                        continue;
                    }
                };
                // Warm-up.
                pool.install(|| {
                    run_batch_on(isa, &workload(&plan.robot, 2, 0.01, Scheme::default()))
                });
                for (n, scheme) in plan.runs() {
                    let cfgs = workload(&plan.robot, n, t, scheme);
                    let mut results = Vec::new();
                    let wall = pool.install(|| timed(|| results = run_batch_on(isa, &cfgs)));
                    let steps = steps_per_robot_s(&results, t);
                    let mut r = row("cpu", "", "f64", threads, n, wall, steps);
                    r.simd = simd_label(isa);
                    r.scheme = scheme.name().into();
                    record(r, &mut rows);
                }
            }
        }
    }
    if plan.gpu {
        let adapters = gpu::list_adapters();
        if adapters.is_empty() {
            skipped.push(Skipped {
                what: "gpu".into(),
                why: "no Vulkan adapter found".into(),
            });
        }
        for a in adapters {
            let precisions: Vec<Precision> = if a.shader_f64 {
                vec![Precision::F64, Precision::F32]
            } else {
                vec![Precision::F32]
            };
            for precision in precisions {
                let what = format!("gpu {} {}", a.name, precision.label());
                let opts = GpuOptions {
                    adapter: Some(a.name.clone()),
                    precision: match precision {
                        Precision::F64 => PrecisionChoice::F64,
                        Precision::F32 => PrecisionChoice::F32,
                    },
                };
                let ctx = match GpuContext::new(&opts) {
                    Ok(c) => c,
                    Err(e) => {
                        skipped.push(Skipped {
                            what,
                            why: e.to_string(),
                        });
                        continue;
                    }
                };
                let engine = GpuEngine::new(&ctx);
                if let Err(e) = engine.run(&workload(&plan.robot, 1, 0.01, Scheme::default())) {
                    skipped.push(Skipped {
                        what,
                        why: e.to_string(),
                    });
                    continue;
                }
                let software = a.device_type == "Cpu";
                for (n, scheme) in plan.runs() {
                    if software && n > plan.software_gpu_max_batch {
                        skipped.push(Skipped {
                            what: format!("{what} batch {n}"),
                            why: format!(
                                "software adapter: batches above {} take minutes (--software-gpu-max-batch)",
                                plan.software_gpu_max_batch
                            ),
                        });
                        continue;
                    }
                    let cfgs = workload(&plan.robot, n, t, scheme);
                    let mut outcome = None;
                    let wall = timed(|| outcome = Some(engine.run(&cfgs)));
                    match outcome {
                        Some(Ok(results)) => {
                            let results: Vec<Result<PointResult, SolverError>> =
                                results.into_iter().map(Ok).collect();
                            let steps = steps_per_robot_s(&results, t);
                            let mut r = row("gpu", &a.name, precision.label(), 1, n, wall, steps);
                            r.scheme = scheme.name().into();
                            record(r, &mut rows)
                        }
                        Some(Err(e)) => skipped.push(Skipped {
                            what: format!("{what} {} batch {n}", scheme.name()),
                            why: e.to_string(),
                        }),
                        None => {}
                    }
                }
            }
        }
    }
    (rows, skipped)
}

/// Mean steps per simulated second over the runs that ran (NaN when none did).
fn steps_per_robot_s(results: &[Result<PointResult, SolverError>], t_final: f64) -> f64 {
    let steps: Vec<f64> = results
        .iter()
        .flatten()
        .map(|r| r.stats.steps as f64)
        .collect();
    steps.iter().sum::<f64>() / steps.len() as f64 / t_final
}

fn timed(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}
