//! `metachron summarize`: one row per parameter combination of a sweep dataset, with
//! class fractions and their Wilson 95 % intervals; `--where` keeps some of the rows.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use metachron::dataset::{Dataset, VerifyOptions};
use metachron::output::compose::summary_table;
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::facet::facet;
use metachron::sweep::summary::{summarize, write_summary};

#[derive(Args, Debug)]
pub struct SummarizeArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// Also write the summary to this Parquet file (every combination, every column:
    /// fractions with their intervals, per-class means).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Summarise only the rows where a column has this value (repeatable: every
    /// condition holds), as `map --where` takes it: `dphi=90deg`, `k_p=100..`,
    /// `class=metachronal`. The table and the --out file hold those rows' combinations.
    #[arg(long = "where", value_name = "COLUMN=VALUE")]
    conditions: Vec<String>,
    /// Rows of the printed table (the file, when asked for, has them all).
    #[arg(long, value_name = "N", default_value_t = 40)]
    limit: usize,
    /// Summarise an incomplete, unfinished or unclean dataset's good parts (the
    /// summary's metadata says so) instead of refusing it.
    #[arg(long)]
    allow_incomplete: bool,
}

pub fn run(a: SummarizeArgs) -> Result<ExitCode> {
    // Refused before the dataset is read (`write_summary` checks it again).
    if let Some(out) = &a.out {
        metachron::dataset::refuse_inside_dataset(out, "the summary")?;
    }
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let opened = Dataset::open(&a.dir)?;
    let sweep = recorded_sweep(&opened)?;
    let mut v = opened.verify(&sweep, VerifyOptions::reader(a.allow_incomplete))?;
    let ds = v.rows()?;
    if ds.is_empty() {
        bail!("{}: no rows (no good part files)", a.dir.display());
    }
    let ds = &facet(ds, &a.conditions)?;
    if let Some(why) = &v.incomplete {
        eprintln!("warning: summarising an incomplete dataset (--allow-incomplete): {why}");
    }
    let (batch, combos) = summarize(ds, &a.dir)?;
    print!("{}", summary_table(&sweep, ds, &batch).text(a.limit));
    if let Some(out) = &a.out {
        write_summary(&batch, ds, &a.dir, out, v.incomplete.as_deref())?;
        println!(
            "{} runs in {combos} parameter combinations -> {} (fraction_<class>, _lo, _hi: Wilson 95 %)",
            ds.len(),
            out.display(),
        );
    }
    if v.incomplete.is_some() {
        println!("INCOMPLETE dataset: the table covers its good parts only");
    }
    Ok(ExitCode::SUCCESS)
}
