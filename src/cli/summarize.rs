//! `metachron summarize`: one row per parameter combination of a sweep dataset, with
//! class fractions and their Wilson 95 % intervals.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use metachron::output::parquet::write_atomic;
use metachron::sweep::dataset::read_dataset;
use metachron::sweep::summary::{summarize, Z95};

#[derive(Args, Debug)]
pub struct SummarizeArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// Output Parquet file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(a: SummarizeArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let ds = read_dataset(&a.dir)?;
    if ds.rows() == 0 {
        bail!("{}: no rows (no *.parquet part files)", a.dir.display());
    }
    let (batch, combos) = summarize(&ds, &a.dir)?;
    let mut meta: Vec<(String, String)> = ds
        .metadata
        .iter()
        .filter(|(k, _)| k.starts_with("metachron.") && !k.contains("wall"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    meta.sort();
    meta.push(("metachron.summary_of".into(), a.dir.display().to_string()));
    meta.push((
        "metachron.interval".into(),
        format!("Wilson score, 95 % (z = {Z95})"),
    ));
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic(&a.out, &batch, &meta)?;
    println!(
        "{} runs in {combos} parameter combinations -> {} (fraction_<class>, _lo, _hi: Wilson 95 %)",
        ds.rows(),
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
