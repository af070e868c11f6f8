//! `metachron map`: a heatmap of a metric (or the class) over two swept parameters.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use metachron::output::map::{draw_map, MapRequest};
use metachron::sweep::dataset::read_dataset;

#[derive(Args, Debug)]
pub struct MapArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// Parameter (column) on the horizontal axis.
    #[arg(long)]
    x: String,
    /// Parameter (column) on the vertical axis.
    #[arg(long)]
    y: String,
    /// Metric column (mean over repeats), `class` (most frequent class) or
    /// `class=metachronal` (fraction of repeats in that class).
    #[arg(long, default_value = "class")]
    metric: String,
    /// Output PNG file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(a: MapArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let ds = read_dataset(&a.dir)?;
    if ds.files == 0 {
        bail!("{}: no *.parquet part files found", a.dir.display());
    }
    let req = MapRequest {
        x: a.x,
        y: a.y,
        metric: a.metric,
    };
    let s = draw_map(&ds, &req, &a.out)?;
    println!(
        "map of {} over {} x {}: {} rows from {} files into {} cells ({} filled){}{} -> {}",
        req.metric,
        req.x,
        req.y,
        s.rows,
        ds.files,
        s.cells,
        s.filled_cells,
        if s.x_log { ", x log" } else { "" },
        if s.y_log { ", y log" } else { "" },
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
