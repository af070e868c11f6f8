//! The `metachron` command line: raw arguments become one checked plan, then run.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

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
    /// Run one row of a sweep dataset again (its own parameters, the dataset's settings)
    /// and write what `simulate` writes: time series, metrics, snapshots, animation.
    Replay(cli::replay::ReplayArgs),
    /// Write one static HTML page for a sweep dataset: its settings and health, maps,
    /// class fractions, and an animated exemplar of every class.
    Report(cli::report::ReportArgs),
    /// List the GPU adapters (backend, type, driver, limits, SHADER_F64), or print the
    /// generated WGSL kernel of a robot shape (`--dump-wgsl 9x7`; needs no GPU).
    Devices(cli::gpu::DevicesArgs),
    /// Measure robot-seconds per wall-second of every engine on this machine.
    Bench(cli::bench::BenchArgs),
    /// Report a sweep dataset's health: complete, missing ids, bad or quarantined files,
    /// who wrote what. Exit 0 only when complete and clean.
    Check(cli::check::CheckArgs),
    /// List every model parameter: name, unit, default, allowed range, meaning.
    Params,
    /// List every output column and metric: name, unit, type, how summarize treats it,
    /// meaning.
    Columns,
    /// Print a shell completion script, e.g. `metachron completions bash > ~/.local/share/bash-completion/completions/metachron`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `metachron man > ~/.local/share/man/man1/metachron.1`.
    Man,
}

/// Environment variables that choose how points run: a value they cannot mean is an
/// error naming the variable and what it allows (the engines would ignore it silently).
fn check_environment() -> anyhow::Result<()> {
    if let Ok(v) = std::env::var("METACHRON_SIMD") {
        anyhow::ensure!(
            ["avx512", "avx2", "portable"].contains(&v.as_str()),
            "METACHRON_SIMD = `{v}`: allowed are avx512, avx2, portable (or unset: the widest this CPU has)"
        );
    }
    if let Ok(v) = std::env::var("RAYON_NUM_THREADS") {
        anyhow::ensure!(
            v.trim().parse::<usize>().is_ok(),
            "RAYON_NUM_THREADS = `{v}`: allowed is an integer >= 1 (0 or unset: one thread per CPU)"
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = check_environment() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let result = cli::pipe::guard(|| run(cli.command));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Simulate(args) => cli::simulate::run(args),
        Command::Devices(args) => cli::gpu::devices(args),
        Command::Sweep(args) => cli::sweep::run(args),
        Command::Map(args) => cli::map::run(args),
        Command::Bench(args) => cli::bench::run(args),
        Command::Check(args) => cli::check::run(args),
        Command::Completions { shell } => {
            // Generated into memory, then written: a failed write is an error returned
            // here (clap_complete would panic on it).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "metachron", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout())
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::from),
        Command::Summarize(args) => cli::summarize::run(args),
        Command::Replay(args) => cli::replay::run(args),
        Command::Report(args) => cli::report::run(args),
        Command::Params => cli::listing::run_params(),
        Command::Columns => cli::listing::run_columns(),
    }
}

/// The error and its causes joined by ": ", each said once (a library error that
/// already shows its cause in its own text is not followed by that cause again).
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}
