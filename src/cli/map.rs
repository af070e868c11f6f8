//! `metachron map`: a heatmap of a metric (or the class) over two swept parameters.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use metachron::output::map::{draw_map_with, MapOptions, MapRequest};
use metachron::sweep::audit::read_verified;

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
    /// Metric column (mean over repeats), `class` (most frequent class),
    /// `fraction:metachronal` (fraction of runs in that class; cells whose Wilson 95 %
    /// interval is wider than --ci-width are struck through) or `class=metachronal`
    /// (the fraction, unmarked).
    #[arg(long, default_value = "class")]
    metric: String,
    /// Interval width above which `fraction:` cells are marked (default: the sweep's
    /// adaptive ci_width, else 0.2).
    #[arg(long, value_name = "W")]
    ci_width: Option<f64>,
    /// Output PNG file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Draw an incomplete, unfinished or unclean dataset's good parts instead of
    /// refusing it.
    #[arg(long)]
    allow_incomplete: bool,
}

pub fn run(a: MapArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let verified = read_verified(&a.dir, a.allow_incomplete)?;
    if let Some(why) = &verified.incomplete {
        eprintln!("warning: drawing an incomplete dataset (--allow-incomplete): {why}");
    }
    let ds = verified.dataset;
    if ds.files == 0 {
        bail!("{}: no *.parquet part files found", a.dir.display());
    }
    let req = MapRequest {
        x: a.x,
        y: a.y,
        metric: a.metric,
    };
    if let Some(w) = a.ci_width.filter(|w| !(*w > 0.0 && *w <= 1.0)) {
        bail!("--ci-width {w}: allowed is 0 < W <= 1");
    }
    let opts = MapOptions {
        ci_width: a.ci_width,
    };
    let s = draw_map_with(&ds, &req, &opts, &a.out)?;
    println!(
        "map of {} over {} x {}: {} rows from {} files into {} cells ({} filled{}){}{} -> {}",
        req.metric,
        req.x,
        req.y,
        s.rows,
        ds.files,
        s.cells,
        s.filled_cells,
        if s.wide_cells > 0 {
            format!(", {} with a wide interval", s.wide_cells)
        } else {
            String::new()
        },
        if s.x_log { ", x log" } else { "" },
        if s.y_log { ", y log" } else { "" },
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
