//! `metachron replay DIR --point ID`: one row of a sweep dataset run again from its own
//! parameters and the dataset's recorded settings, writing what `simulate` writes, and
//! its metrics set against the row's.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use metachron::batch::Engine;
use metachron::dataset::schema::META_REPLAY_OF;
use metachron::dataset::{Dataset, VerifyOptions};
use metachron::simulate::{Backend, PointResult};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::replay::{find_row, Difference, Replay, RowSelector};

use super::simulate::{execute, plan_outputs, OutputArgs};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// The row's point id.
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "combo",
        conflicts_with = "combo"
    )]
    point: Option<u64>,
    /// The row's parameter combination (with --repeat; `summarize` lists combinations).
    #[arg(long, value_name = "C")]
    combo: Option<u64>,
    /// Repeat of --combo.
    #[arg(long, value_name = "R", requires = "combo", default_value_t = 0)]
    repeat: u32,
    /// Run on this engine instead of the row's own (a gpu row runs on cpu, its twin).
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    #[command(flatten)]
    outputs: OutputArgs,
}

/// A replay prepared from `dir`'s row.
pub fn prepare(dir: &Path, sel: RowSelector, backend: Option<Backend>) -> Result<Replay> {
    if !dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            dir.display()
        );
    }
    // Any row of the good parts can be replayed, also of an unfinished sweep.
    let opened = Dataset::open(dir)?;
    let sweep = recorded_sweep(&opened)?;
    let ds = opened.verify(&sweep, VerifyOptions::reader(true))?.rows()?;
    if ds.is_empty() {
        bail!("{}: no rows (no *.parquet part files)", dir.display());
    }
    let row = find_row(&ds, sel)?;
    Replay::of_row(&ds, row, backend).with_context(|| format!("replaying from {}", dir.display()))
}

/// Run `replay` with `outputs` (`print`: the run's summary and outputs as `simulate`
/// prints them); returns the result and where it differs from the row.
pub fn execute_replay(
    dir: &Path,
    replay: &Replay,
    outputs: OutputArgs,
    print: bool,
) -> Result<(PointResult, Vec<Difference>)> {
    // A replay runs on the CPU side: a gpu row replays on the cpu engine, its twin, and
    // `--backend gpu` is refused (the gpu keeps no time series).
    let engine = match replay.backend {
        Backend::Reference => Engine::Reference,
        Backend::Cpu | Backend::Gpu => Engine::Cpu,
    };
    let mut plan = plan_outputs(replay.cfg.clone(), engine, outputs)?;
    plan.print = print;
    plan.extra_metadata.push((
        META_REPLAY_OF.into(),
        format!("{} point {}", dir.display(), replay.point_id),
    ));
    let result = execute(&plan)?;
    let diffs = replay.differences(&result.metrics);
    Ok((result, diffs))
}

/// Run `replay` with `outputs`, printing what `simulate` prints and how the metrics
/// compare with the row. Returns the result and whether it equals the row bit for bit.
pub fn run_replay(dir: &Path, replay: &Replay, outputs: OutputArgs) -> Result<(PointResult, bool)> {
    println!(
        "replay of point {} (combo {}, repeat {}) of sweep `{}` in {}: written by the {} \
         engine, run on {}",
        replay.point_id,
        replay.combo,
        replay.repeat,
        replay.sweep_name,
        dir.display(),
        replay.recorded_backend,
        replay.backend.label()
    );
    for n in &replay.notes {
        println!("note: {n}");
    }
    let (result, diffs) = execute_replay(dir, replay, outputs, true)?;
    if diffs.is_empty() {
        println!(
            "against the dataset row: every metric, the status and the class are equal bit for bit"
        );
    } else {
        println!("against the dataset row: {} values differ", diffs.len());
        for d in &diffs {
            match d.relative {
                Some(r) => println!(
                    "  {:<20} row {} replay {} (relative {r:.1e})",
                    d.name, d.recorded, d.replayed
                ),
                None => println!("  {:<20} row {} replay {}", d.name, d.recorded, d.replayed),
            }
        }
    }
    Ok((result, diffs.is_empty()))
}

pub fn run(a: ReplayArgs) -> Result<ExitCode> {
    if a.backend == Some(Backend::Gpu) {
        bail!("--backend gpu: a replay runs on reference or cpu (the gpu keeps no time series)");
    }
    let sel = match (a.point, a.combo) {
        (Some(id), _) => RowSelector::Point(id),
        (None, Some(combo)) => RowSelector::Combo {
            combo,
            repeat: a.repeat,
        },
        (None, None) => bail!("give --point ID or --combo C"),
    };
    let replay = prepare(&a.dir, sel, a.backend)?;
    let (_, identical) = run_replay(&a.dir, &replay, a.outputs)?;
    if !identical && replay.same_engine() {
        eprintln!(
            "warning: on the engine that wrote it, the row was not reproduced bit for bit \
             (another instruction set or metachron version than the sweep's?)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
