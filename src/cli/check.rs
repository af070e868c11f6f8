//! `metachron check DIR`: a dataset's health. Every file is decoded and checked as
//! `--resume` checks it; the report says whether every point of the sweep is there
//! once, which ids are missing, which files are bad or quarantined, and which version,
//! backend and adapter wrote what. Exit 0 only when complete and clean.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use metachron::output::parquet::read_parquet;
use metachron::sweep::dataset::{part_files, META_SWEEP};
use metachron::sweep::run::expected;
use metachron::sweep::verify::{health, scan, Health};
use metachron::sweep::SweepSpec;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// The sweep file (default: the sweep recorded in the dataset's parts).
    #[arg(long, value_name = "FILE")]
    sweep: Option<PathBuf>,
    /// Print the report as JSON (for scripts).
    #[arg(long)]
    json: bool,
}

/// The sweep the dataset belongs to: the one given, or the first recorded in a part.
fn sweep_of(a: &CheckArgs) -> Result<SweepSpec> {
    if let Some(f) = &a.sweep {
        return Ok(SweepSpec::from_file(f)?);
    }
    for path in part_files(&a.dir)? {
        let Ok((_, meta)) = read_parquet(&path) else {
            continue;
        };
        if let Some(text) = meta.get(META_SWEEP) {
            let name = format!("{} (recorded in {})", "sweep", path.display());
            if let Ok(spec) = SweepSpec::from_str_named(text, &name, "sweep") {
                return Ok(spec);
            }
        }
    }
    bail!(
        "{}: no part written by `metachron sweep` found (pass --sweep FILE to check against a sweep file)",
        a.dir.display()
    )
}

pub fn run(a: CheckArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    let spec = sweep_of(&a)?;
    let exp = expected(&spec)?;
    let found = scan(&a.dir, &exp).with_context(|| format!("checking {}", a.dir.display()))?;
    let h = health(&a.dir, &spec.name, &exp, &found);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&h)?);
    } else {
        print_report(&h);
    }
    Ok(if h.complete && h.clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_report(h: &Health) {
    println!(
        "dataset {}: sweep `{}` (hash {}), {} points; shards {}",
        h.dir,
        h.sweep_name,
        h.sweep_hash,
        h.points,
        if h.shards.is_empty() {
            "none".into()
        } else {
            h.shards.join(", ")
        }
    );
    println!("  {} good parts, {} rows", h.good_parts, h.rows);
    if h.complete {
        println!("  complete: every point id 0..{} is present once", h.points);
    } else {
        let shown: Vec<String> = h
            .missing
            .iter()
            .take(20)
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        println!(
            "  INCOMPLETE: {} point ids missing: {}{}",
            h.missing_count,
            shown.join(", "),
            if h.missing.len() > 20 { ", ..." } else { "" }
        );
    }
    for (p, why) in &h.bad_files {
        println!("  BAD FILE {p}: {why}");
    }
    for (p, why) in &h.quarantined {
        println!("  QUARANTINED {p}: {why}");
    }
    for w in &h.writers {
        println!(
            "  written by metachron {} on {} ({}): {} parts, {} rows",
            w.version, w.backend, w.adapter, w.parts, w.rows
        );
    }
    println!(
        "  {}",
        match (h.complete, h.clean) {
            (true, true) => "OK: complete and clean",
            (true, false) => "complete, but not clean (bad or quarantined files above; `--resume` moves bad files to quarantine/, remove quarantine/ once inspected)",
            (false, _) => "not complete: run the sweep again with --resume",
        }
    );
}
