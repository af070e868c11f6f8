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

use metachron::dataset::{Dataset, Health, VerifyOptions};
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
        print_report(h);
    }
    Ok(if h.complete && h.clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_report(h: &Health) {
    println!(
        "dataset {} (format {}, {}, --backend {}): sweep `{}` (hash {}), {} points; shards {}",
        h.dir,
        h.format_version,
        if h.layout_shards == 1 {
            "unsharded".to_string()
        } else {
            format!("{} shards", h.layout_shards)
        },
        h.backend,
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
        println!("  complete: every planned point id is present once");
    } else if h.missing_count > 0 {
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
    if let Some(u) = &h.unfinished {
        println!("  NOT FINISHED: {u}");
    }
    if h.unplanned_rows > 0 {
        println!(
            "  {} rows hold point ids the plan does not hold",
            h.unplanned_rows
        );
    }
    for (p, why) in &h.bad_files {
        println!("  BAD FILE {p}: {why}");
    }
    for (p, why) in &h.quarantined {
        println!("  QUARANTINED {p}: {why}");
    }
    for (p, what, disturbs) in &h.strays {
        let tag = if *disturbs {
            "NOT THE DATASET'S"
        } else {
            "note"
        };
        println!("  {tag} {p}: {what}");
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
            (true, false) => "complete, but not clean (files above: `--resume` moves bad parts to quarantine/, remove quarantine/ once inspected; files that are not the dataset's are never moved: remove them yourself)",
            (false, _) => "not complete: run the sweep again with --resume",
        }
    );
}
