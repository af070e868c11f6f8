//! `metachron report DIR --out report.html`: one static page for a sweep dataset (built
//! by [`metachron::output::compose`]): the sweep and its health, the class map and a
//! fraction map per class, the class fractions per combination, and one run of every
//! class replayed with its snapshots and animation. Pictures are embedded, so the page
//! is a single file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use metachron::dataset::{Dataset, VerifyOptions};
use metachron::metrics::Metrics;
use metachron::output::compose::{
    write_report, ExemplarOutputs, ReplayFailure, Replayer, ReportRequest,
};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::replay::{Difference, Replay};

use super::replay::execute_replay;
use super::simulate::OutputArgs;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// The HTML page to write (pictures embedded: one self-contained file).
    #[arg(long, value_name = "FILE.html")]
    out: PathBuf,
    /// Parameter on the maps' horizontal axis (default: the sweep's first axis).
    #[arg(long)]
    x: Option<String>,
    /// Parameter on the maps' vertical axis (default: the sweep's second axis).
    #[arg(long)]
    y: Option<String>,
    /// No exemplars (no replays): maps and tables only.
    #[arg(long)]
    no_exemplars: bool,
    /// Show only the rows where a column has this value (repeatable: every condition
    /// holds), as `map --where` takes it: `dphi=90deg`, `k_p=100..`, `terrain=rough`.
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    conditions: Vec<String>,
    /// One section (its maps and table) per value of this parameter (repeatable: one
    /// per combination of the values); at most 24 sections.
    #[arg(long = "facet", value_name = "PARAM")]
    facets: Vec<String>,
    /// Average the maps over this swept parameter on purpose (repeatable; the captions
    /// say so). A swept parameter that varies in the rows shown and is neither on an
    /// axis, a facet, fixed by `--where` nor averaged is refused by name, as `map`
    /// refuses it.
    #[arg(long = "average", value_name = "PARAM")]
    averaged: Vec<String>,
}

/// Replays exemplars as `metachron replay` runs a row, saying what each gave.
struct CliReplayer<'a> {
    dir: &'a Path,
}

impl Replayer for CliReplayer<'_> {
    fn replay(
        &mut self,
        replay: &Replay,
        o: &ExemplarOutputs,
    ) -> Result<(Metrics, Vec<Difference>), ReplayFailure> {
        let outputs = OutputArgs {
            out: None,
            metrics: None,
            snapshots: Some(o.snapshots.clone()),
            snapshot_times: o.snapshot_times.clone(),
            animate: Some(o.animation.clone()),
            animate_fps: o.fps,
            animate_duration: None,
            animate_width: o.width,
            quiet: true,
        };
        let (result, diffs) = execute_replay(self.dir, replay, outputs, false)?;
        println!(
            "exemplar of {}: point {} replayed on {} ({})",
            o.class,
            replay.point_id,
            replay.backend.label(),
            if diffs.is_empty() {
                "equal to its row bit for bit".to_string()
            } else {
                format!("{} values differ from its row", diffs.len())
            }
        );
        Ok((result.metrics, diffs))
    }
}

pub fn run(a: ReportArgs) -> Result<ExitCode> {
    metachron::dataset::refuse_inside_dataset(&a.out, "--out")?;
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    // Read as every reader reads a dataset: judged as `check` judges it, refused unless
    // complete and clean.
    let opened = Dataset::open(&a.dir)?;
    let spec = recorded_sweep(&opened)?;
    let mut verified = opened.verify(&spec, VerifyOptions::reader(false))?;
    let rows = verified.rows()?;
    if rows.is_empty() {
        bail!("{}: no rows (no part files)", a.dir.display());
    }
    if let Some(parent) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("--out: cannot create {}", parent.display()))?;
    }
    // Checked before any work: the page's directory must take a file.
    drop(metachron::parquet::PendingFile::create(&a.out).context("--out")?);
    let req = ReportRequest {
        x: a.x,
        y: a.y,
        exemplars: !a.no_exemplars,
        conditions: a.conditions,
        facets: a.facets,
        averaged: a.averaged,
    };
    let mut replayer = CliReplayer { dir: &a.dir };
    let w = write_report(
        &a.dir,
        &spec,
        &verified.health,
        rows,
        &req,
        &a.out,
        &mut replayer,
    )?;
    println!(
        "report of sweep `{}` ({}{} classes, {} pictures embedded, {:.1} MB) -> {}",
        spec.name,
        match w.sections {
            1 => String::new(),
            n => format!("{n} sections, "),
        },
        w.classes,
        w.pictures,
        w.bytes as f64 / 1e6,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
