//! `metachron map`: a heatmap of a metric (or the class) over two swept parameters.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use metachron::dataset::{Dataset, VerifyOptions};
use metachron::output::map::{
    draw_map_with, draw_panels, MapOptions, MapRequest, DEFAULT_CI_WIDTH, MAX_BINS,
};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::facet::selected;

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
    #[arg(long, default_value = metachron::vocabulary::CLASS)]
    metric: String,
    /// Wilson 95 % interval width above which `fraction:` cells are struck through.
    #[arg(long, value_name = "W", default_value_t = DEFAULT_CI_WIDTH)]
    ci_width: f64,
    /// Fix the colour bar's range, e.g. `0:1` (default: fractions from 0 to a round
    /// value above the largest, metrics bounded by [0, 1] on it, others their range).
    #[arg(long, value_name = "LO:HI", allow_hyphen_values = true)]
    range: Option<String>,
    /// Cells per numeric axis, equal in the axis' scale (default: one per distinct
    /// value, the sweep's own lattice; a refined dataset at its native resolution);
    /// 1 to 500.
    #[arg(long, value_name = "N")]
    bins: Option<usize>,
    /// Draw only the rows where a column has this value, e.g. `--where terrain=rough
    /// --where alpha_damping=2` (repeatable: every condition holds): one slice of a
    /// sweep with more than two axes. A number may carry its unit (`dphi=90deg`,
    /// `alpha=500N/m`); `LO..HI` keeps a closed range (`k_p=100..`: no upper end);
    /// text columns (`class=metachronal`) match exactly. The title names the conditions.
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    conditions: Vec<String>,
    /// One panel per value of this parameter (repeatable: one per combination of the
    /// values), on shared axes and one colour scale, in one picture (small multiples);
    /// at most 24 panels.
    #[arg(long = "facet", value_name = "PARAM")]
    facets: Vec<String>,
    /// Average over this swept parameter on purpose (repeatable): its values share a
    /// cell, and the title says so. A swept parameter that varies in the drawn rows and
    /// is neither on an axis, fixed by `--where` nor averaged is refused by name.
    #[arg(long = "average", value_name = "PARAM")]
    averaged: Vec<String>,
    /// Output file: `.png` or `.svg` (other names are refused).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Draw an incomplete, unfinished or unclean dataset's good parts instead of
    /// refusing it.
    #[arg(long)]
    allow_incomplete: bool,
}

/// `LO:HI` with LO < HI, both finite.
fn parse_range(text: &str) -> Result<(f64, f64)> {
    let bad = || anyhow::anyhow!("--range `{text}`: expected LO:HI with finite LO < HI, e.g. 0:1");
    let (lo, hi) = text.split_once(':').ok_or_else(bad)?;
    let (lo, hi): (f64, f64) = (
        lo.trim().parse().map_err(|_| bad())?,
        hi.trim().parse().map_err(|_| bad())?,
    );
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(bad());
    }
    Ok((lo, hi))
}

pub fn run(a: MapArgs) -> Result<ExitCode> {
    metachron::output::map::check_out(&a.out)?;
    if let Some(b) = a.bins.filter(|b| !(1..=MAX_BINS).contains(b)) {
        bail!("--bins {b}: allowed is an integer from 1 to {MAX_BINS} cells per axis");
    }
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let opened = Dataset::open(&a.dir)?;
    let sweep = recorded_sweep(&opened)?;
    let mut verified = opened.verify(&sweep, VerifyOptions::reader(a.allow_incomplete))?;
    if let Some(why) = &verified.incomplete {
        eprintln!("warning: drawing an incomplete dataset (--allow-incomplete): {why}");
    }
    let ds = verified.rows()?;
    if ds.files == 0 {
        bail!("{}: no *.parquet part files found", a.dir.display());
    }
    let mut shown = vec![a.x.as_str(), a.y.as_str()];
    shown.extend(a.facets.iter().map(String::as_str));
    let ds = selected(ds, &sweep, &a.conditions, &shown, &a.averaged)?;
    let req = MapRequest {
        x: a.x,
        y: a.y,
        metric: a.metric,
    };
    if !(a.ci_width > 0.0 && a.ci_width <= 1.0) {
        bail!("--ci-width {}: allowed is 0 < W <= 1", a.ci_width);
    }
    let opts = MapOptions {
        ci_width: Some(a.ci_width),
        range: a.range.as_deref().map(parse_range).transpose()?,
        bins: a.bins,
    };
    let (s, panels) = if a.facets.is_empty() {
        (draw_map_with(&ds, &req, &opts, &a.out)?, Vec::new())
    } else {
        draw_panels(&ds, &req, &opts, &a.facets, &a.out)?
    };
    let panels = match panels.len() {
        0 => String::new(),
        n => format!(" in {n} panels ({})", panels.join("; ")),
    };
    println!(
        "map of {} over {} x {}{panels}: {} rows from {} files into {} cells ({} filled, {} per cell{}){}{} -> {}",
        req.metric,
        req.x,
        req.y,
        s.rows,
        ds.files,
        s.cells,
        s.filled_cells,
        match s.runs_per_cell {
            (1, 1) => "1 run".to_string(),
            (a, b) if a == b => format!("{a} runs"),
            (a, b) => format!("{a}-{b} runs"),
        },
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
