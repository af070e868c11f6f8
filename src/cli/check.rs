//! `metachron check DIR`: a dataset's health. Every part is judged against the
//! dataset's manifest and sweep as `--resume` judges it (every byte read: its
//! checksum, then its contents); the report says whether every planned point is there
//! once (for a refined or adaptive sweep: the plan its rows lead to), which ids are
//! missing, which files are bad, quarantined or not the dataset's, and which version,
//! backend and adapter wrote what. Exit 0 only when complete and clean.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use metachron::dataset::{Dataset, VerifyOptions};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::SweepSpec;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// The sweep file to check against (default: the sweep in the dataset's manifest).
    #[arg(long, value_name = "FILE")]
    sweep: Option<PathBuf>,
    /// Print the report as JSON (for scripts).
    #[arg(long)]
    json: bool,
}

pub fn run(a: CheckArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let checking = || format!("checking {}", a.dir.display());
    let ds = Dataset::open(&a.dir).with_context(checking)?;
    let sweep = match a.sweep.as_deref() {
        Some(file) => SweepSpec::from_file(file)?,
        None => recorded_sweep(&ds).with_context(checking)?,
    };
    let found = ds
        .verify(&sweep, VerifyOptions::full())
        .with_context(checking)?;
    let h = &found.health;
    if a.json {
        println!("{}", serde_json::to_string_pretty(h)?);
    } else {
        print!("{h}");
    }
    Ok(if h.complete && h.clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
