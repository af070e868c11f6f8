//! `metachron replay DIR --point ID`: one row of a sweep dataset run again from its own
//! parameters and the dataset's recorded settings, writing what `simulate` writes, and
//! its metrics set against the row's and held to the tolerance the row's engine and
//! precision promise (exit status 1 outside it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use metachron::batch::Engine;
use metachron::dataset::schema::META_REPLAY_OF;
use metachron::dataset::{Dataset, VerifyOptions};
use metachron::simulate::{Backend, PointResult};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::replay::{find_row, Difference, Replay, RowSelector, Verdict};
use metachron::vocabulary as voc;

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

/// Run `replay` with `outputs`, printing what `simulate` prints, how each metric
/// compares with the row's and the verdict against the row's tolerance. Returns the
/// result and the verdict.
pub fn run_replay(
    dir: &Path,
    replay: &Replay,
    outputs: OutputArgs,
) -> Result<(PointResult, Verdict)> {
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
    let (result, _) = execute_replay(dir, replay, outputs, true)?;
    let verdict = replay.verdict(&result.metrics);
    print!("{}", verdict_text(&verdict));
    Ok((result, verdict))
}

/// The comparison as printed: each metric that differs with its difference (also as a
/// fraction of max(|row|, 1)), a differing status or class, and the verdict line.
fn verdict_text(v: &Verdict) -> String {
    let mut out = String::new();
    if v.gaps.is_empty() && v.labels.is_empty() {
        out.push_str(
            "against the dataset row: every metric, the status and the class are equal bit for bit\n",
        );
    } else {
        out.push_str(&format!(
            "against the dataset row: {} values differ (in the dataset's units)\n  {:<20} {:<13} {:>13} {:>13} {:>9} {:>9} {:>9}\n",
            v.gaps.len() + v.labels.len(),
            "metric",
            "unit",
            "row",
            "replay",
            "|diff|",
            "scaled",
            "allowed"
        ));
        for g in &v.gaps {
            let allowed = match g.allowed {
                Some(a) => format!("{a:.2e}{}", if g.outside() { " OUTSIDE" } else { "" }),
                None => "-".into(),
            };
            let unit = voc::column_named(g.name).map_or("", |c| voc::unit_text(c.unit));
            out.push_str(&format!(
                "  {:<20} {unit:<13} {:>13.6e} {:>13.6e} {:>9.2e} {:>9.2e} {:>9}\n",
                g.name, g.recorded, g.replayed, g.absolute, g.scaled, allowed
            ));
        }
        for (name, row, replay) in &v.labels {
            out.push_str(&format!("  {name:<20} {:<13} {row:>13} {replay:>13}\n", ""));
        }
    }
    let largest = match v.largest() {
        Some(g) => format!("largest difference {:.2e} scaled ({})", g.scaled, g.name),
        None => "no metric differs".into(),
    };
    let beyond: Vec<&str> = v
        .gaps
        .iter()
        .filter(|g| g.outside())
        .map(|g| g.name)
        .collect();
    let largest = match beyond.is_empty() {
        true => largest,
        false => format!("{largest}; beyond the bound: {}", beyond.join(", ")),
    };
    let labels = match v.labels.len() {
        0 => String::new(),
        _ => {
            let named: Vec<&str> = v.labels.iter().map(|(n, _, _)| n.as_str()).collect();
            format!(", the {} differs", named.join(" and "))
        }
    };
    out.push_str(&match v.within {
        Some(true) => format!(
            "verdict: within the tolerance ({}); {largest}\n",
            v.tolerance.describe()
        ),
        Some(false) => format!(
            "verdict: outside the tolerance ({}); {largest}{labels}\n",
            v.tolerance.describe()
        ),
        None => format!(
            "verdict: none ({}); {largest}{labels}\n",
            v.tolerance.describe()
        ),
    });
    out
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
    let (_, verdict) = run_replay(&a.dir, &replay, a.outputs)?;
    if verdict.within == Some(false) {
        eprintln!(
            "warning: the replay is outside the tolerance the row's engine promises \
             (another instruction set or metachron version than the sweep's, or an altered \
             dataset?)"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
