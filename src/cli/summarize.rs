//! `metachron summarize`: one row per parameter combination of a sweep dataset, with
//! class fractions and their Wilson 95 % intervals.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;

use metachron::dataset::schema::{
    META_CHUNK_WALL, META_INCOMPLETE, META_INTERVAL, META_SUMMARY_OF,
};
use metachron::dataset::{Dataset, VerifyOptions};
use metachron::parquet::write_atomic;
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::summary::{summarize, Z95};

#[derive(Args, Debug)]
pub struct SummarizeArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// Output Parquet file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Summarise an incomplete, unfinished or unclean dataset's good parts (the
    /// summary's metadata says so) instead of refusing it.
    #[arg(long)]
    allow_incomplete: bool,
}

pub fn run(a: SummarizeArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let opened = Dataset::open(&a.dir)?;
    let sweep = recorded_sweep(&opened)?;
    let mut v = opened.verify(&sweep, VerifyOptions::reader(a.allow_incomplete))?;
    let ds = &v.rows()?;
    if ds.is_empty() {
        bail!("{}: no rows (no good part files)", a.dir.display());
    }
    let (batch, combos) = summarize(ds, &a.dir)?;
    let mut meta: Vec<(String, String)> = ds
        .metadata
        .iter()
        .filter(|(k, _)| k.starts_with("metachron.") && k.as_str() != META_CHUNK_WALL)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    meta.sort();
    meta.push((META_SUMMARY_OF.into(), a.dir.display().to_string()));
    meta.push((
        META_INTERVAL.into(),
        format!("Wilson score, 95 % (z = {Z95})"),
    ));
    if let Some(why) = &v.incomplete {
        meta.push((META_INCOMPLETE.into(), why.clone()));
        eprintln!("warning: summarising an incomplete dataset (--allow-incomplete): {why}");
    }
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    write_atomic(&a.out, &batch, &meta)?;
    println!(
        "{} runs in {combos} parameter combinations -> {} (fraction_<class>, _lo, _hi: Wilson 95 %){}",
        ds.len(),
        a.out.display(),
        if v.incomplete.is_some() {
            "; INCOMPLETE dataset"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}
