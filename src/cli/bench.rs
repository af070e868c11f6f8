//! `metachron bench`: measure every engine on this machine (see `metachron::bench`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use metachron::bench::{self, BenchPlan, BenchRow, Machine};
use metachron::integrate::dkd::Scheme;
use metachron::integrate::lanes::Isa;
use metachron::output::bench::write_bench;
use metachron::parquet::PendingFile;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Engine {
    Reference,
    Cpu,
    Gpu,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Engines to measure.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "reference,cpu,gpu"
    )]
    engines: Vec<Engine>,
    /// Batch sizes (robots per run) for the cpu and gpu engines; the reference runs one.
    #[arg(long, value_delimiter = ',', default_value = "1,256,4096")]
    batch: Vec<usize>,
    /// Simulated seconds per robot.
    #[arg(long, default_value_t = 0.5)]
    t_final: f64,
    /// Simulated seconds of the reference's one robot (its start-up is stiffer than the
    /// rest of a run, so it gets a longer horizon).
    #[arg(long, default_value_t = 1.0)]
    reference_t_final: f64,
    /// CPU thread counts (0 = all cores).
    #[arg(long, value_delimiter = ',', default_value = "1,0")]
    threads: Vec<usize>,
    /// CPU instruction sets to compare (avx512, avx2, portable; default: the widest
    /// this CPU has).
    #[arg(long, value_delimiter = ',')]
    simd: Vec<String>,
    /// The batch engines' fixed-step schemes to compare (dkd-dc, implicit-bending), each
    /// at its own default step (`[fixed_step] scheme`).
    #[arg(long, value_delimiter = ',', default_value = "dkd-dc,implicit-bending")]
    scheme: Vec<Scheme>,
    /// Largest batch on a software GPU adapter such as lavapipe (slow by nature).
    #[arg(long, default_value_t = 256)]
    software_gpu_max_batch: usize,
    /// Parquet file with one row per measurement (machine in the file metadata).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Change the workload's robot (the paper's by default), e.g. `--set axo_f=150` to
    /// measure what the internal couple costs; repeatable
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

fn plan(a: &BenchArgs) -> Result<BenchPlan> {
    if !(a.t_final.is_finite() && a.t_final > 0.0 && a.t_final <= 1e4) {
        bail!("--t-final must be in (0, 10000] s, got {}", a.t_final);
    }
    if !(a.reference_t_final.is_finite() && a.reference_t_final > 0.0 && a.reference_t_final <= 1e4)
    {
        bail!(
            "--reference-t-final must be in (0, 10000] s, got {}",
            a.reference_t_final
        );
    }
    if let Some(&b) = a.batch.iter().find(|&&b| b == 0 || b > 1 << 22) {
        bail!("--batch sizes must be in [1, 4194304], got {b}");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads: Vec<usize> = a
        .threads
        .iter()
        .map(|&t| if t == 0 { cores } else { t })
        .collect();
    threads.dedup();
    let isas = if a.simd.is_empty() {
        vec![Isa::detect()]
    } else {
        a.simd
            .iter()
            .map(|name| {
                Isa::named(name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--simd {name}: not one of avx512, avx2, portable that this CPU supports"
                    )
                })
            })
            .collect::<Result<_>>()?
    };
    let mut robot = metachron::params::Params::default();
    for o in &a.set {
        robot
            .apply_override(o)
            .with_context(|| format!("--set {o}"))?;
    }
    robot.validate().context("--set")?;
    Ok(BenchPlan {
        robot,
        reference: a.engines.contains(&Engine::Reference),
        cpu: a.engines.contains(&Engine::Cpu),
        gpu: a.engines.contains(&Engine::Gpu),
        batches: a.batch.clone(),
        t_final: a.t_final,
        reference_t_final: a.reference_t_final,
        threads,
        isas,
        schemes: a.scheme.clone(),
        software_gpu_max_batch: a.software_gpu_max_batch,
    })
}

pub fn run(a: BenchArgs) -> Result<ExitCode> {
    let plan = plan(&a)?;
    if let Some(out) = &a.out {
        metachron::dataset::refuse_inside_dataset(out, "--out")?;
    }
    // Created (and so checked) before any measurement.
    let pending = a.out.as_deref().map(PendingFile::create).transpose()?;
    let machine = Machine::this();
    eprintln!(
        "machine: {} ({} cores), cpu engine {}; {} s simulated per robot",
        machine.cpu_model, machine.cores, machine.simd, plan.t_final
    );
    let (rows, skipped) = bench::run(&plan, &mut |r: &BenchRow| {
        eprintln!(
            "  {:<9} {:<28} {:>3} thr  batch {:>6}: {:>8.2} s  {:>10.2} robot-s/s",
            r.engine,
            label(r),
            r.threads,
            r.batch,
            r.wall_s,
            r.robot_s_per_s
        )
    });
    for s in &skipped {
        eprintln!("skipped {}: {}", s.what, s.why);
    }
    print_table(&rows);
    if let Some(out) = pending {
        let path = out.target().to_path_buf();
        write_bench(out, &rows, &machine)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn label(r: &BenchRow) -> String {
    match r.engine.as_str() {
        "cpu" => format!("{} {}", r.simd, r.scheme),
        "gpu" => format!("{} {} {}", r.adapter, r.precision, r.scheme),
        _ => "f64, one robot".into(),
    }
}

fn print_table(rows: &[BenchRow]) {
    let reference = rows
        .iter()
        .find(|r| r.engine == "reference")
        .map(|r| r.robot_s_per_s);
    println!(
        "| engine | variant | threads | batch | wall (s) | robot-s/s | × reference | steps per robot-s |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        let ratio = reference.map_or("–".to_string(), |x| format!("{:.0}", r.robot_s_per_s / x));
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.2} | {} | {:.0} |",
            r.engine,
            label(r),
            r.threads,
            r.batch,
            r.wall_s,
            r.robot_s_per_s,
            ratio,
            r.steps_per_robot_s
        );
    }
}
