//! The `metachron` command line: raw arguments become one checked plan, then run.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

#[derive(Parser)]
#[command(
    name = "metachron",
    version,
    about = "Maps where legged robots with elastic legs coordinate and walk"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate one parameter point (the paper's robot by default) and report its metrics.
    Simulate(cli::simulate::SimulateArgs),
    /// Run a sweep file into a Parquet dataset (chunked, resumable, shardable).
    Sweep(cli::sweep::SweepArgs),
    /// Draw a heatmap of a metric over two swept parameters from a sweep's dataset.
    Map(cli::map::MapArgs),
    /// One row per parameter combination: class fractions with Wilson 95 % intervals.
    Summarize(cli::summarize::SummarizeArgs),
    /// List the GPU adapters (backend, type, driver, limits, SHADER_F64).
    Devices,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Simulate(args) => cli::simulate::run(args),
        Command::Devices => cli::gpu::devices(),
        Command::Sweep(args) => cli::sweep::run(args),
        Command::Map(args) => cli::map::run(args),
        Command::Summarize(args) => cli::summarize::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
