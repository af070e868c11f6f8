//! A dataset's health, as `metachron check` reports it and as every reader requires
//! it: which planned ids its good parts hold and which are missing, what is bad,
//! quarantined or stray, and who wrote what.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::dataset::manifest::Manifest;
use crate::dataset::verify::{quarantined, ranges, Scan};

/// The ids a dataset must hold.
#[derive(Debug, Clone)]
pub enum Planned {
    /// Every id `0..n` (a plain sweep).
    All(u64),
    /// The ids planned from the rows (refinement, adaptive repeats), and what is left
    /// to plan or run, in words.
    Ids {
        ids: BTreeSet<u64>,
        open: Option<String>,
    },
}

/// A dataset's health, as `metachron check` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Health {
    pub dir: String,
    pub sweep_name: String,
    pub sweep_hash: String,
    pub format_version: u32,
    /// The manifest's shard layout and backend.
    pub layout_shards: usize,
    pub backend: String,
    /// Points the dataset must hold (planned so far, for refinement and adaptive repeats).
    pub points: u64,
    pub shards: Vec<String>,
    pub good_parts: usize,
    pub rows: usize,
    /// Missing ids as inclusive ranges.
    pub missing: Vec<(u64, u64)>,
    pub missing_count: u64,
    /// Levels or repeats still to run, in words.
    pub unfinished: Option<String>,
    /// Rows of good parts whose ids the plan does not hold.
    pub unplanned_rows: usize,
    /// Candidate parts that are not trustworthy, with the reason.
    pub bad_files: Vec<(String, String)>,
    pub quarantined: Vec<(String, String)>,
    /// What else is under DIR (never moved): path, what it is, whether it disturbs
    /// readers of the dataset.
    pub strays: Vec<(String, String, bool)>,
    /// (version, backend, adapter) -> parts and rows they wrote.
    pub writers: Vec<Writer>,
    pub complete: bool,
    pub clean: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Writer {
    pub version: String,
    pub backend: String,
    pub adapter: String,
    pub parts: usize,
    pub rows: usize,
}

impl Health {
    /// Why the dataset is not complete and clean, one reason each (empty when it is).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.missing_count > 0 {
            out.push(format!(
                "incomplete: {} of {} point ids missing",
                self.missing_count, self.points
            ));
        }
        if let Some(u) = &self.unfinished {
            out.push(u.clone());
        }
        if self.unplanned_rows > 0 {
            out.push(format!(
                "{} rows the plan does not hold",
                self.unplanned_rows
            ));
        }
        if !self.bad_files.is_empty() {
            out.push(format!(
                "{} bad part files (corrupt, foreign or mixed)",
                self.bad_files.len()
            ));
        }
        if !self.quarantined.is_empty() {
            out.push(format!("{} quarantined files", self.quarantined.len()));
        }
        let disturbing = self.strays.iter().filter(|s| s.2).count();
        if disturbing > 0 {
            out.push(format!(
                "{disturbing} files that are not the dataset's but that readers would see"
            ));
        }
        out
    }
}

/// Summarise a scan against the plan: which ids are missing, who wrote what.
pub fn health(
    dir: &Path,
    m: &Manifest,
    sweep_name: &str,
    scan: &Scan,
    planned: &Planned,
) -> Health {
    let present: BTreeSet<u64> = scan.done_ids().into_iter().collect();
    let (points, missing_ids, unplanned, unfinished): (u64, Vec<u64>, usize, Option<String>) =
        match planned {
            Planned::All(n) => (
                *n,
                (0..*n).filter(|i| !present.contains(i)).collect(),
                0,
                None,
            ),
            Planned::Ids { ids, open } => (
                ids.len() as u64,
                ids.difference(&present).copied().collect(),
                present.difference(ids).count(),
                open.clone(),
            ),
        };
    let mut writers: BTreeMap<(String, String, String), (usize, usize)> = BTreeMap::new();
    let mut shards: Vec<String> = Vec::new();
    for p in &scan.good {
        let w = writers
            .entry((p.version.clone(), p.backend.clone(), p.adapter.clone()))
            .or_default();
        w.0 += 1;
        w.1 += p.ids.len();
        let s = p.shard.to_string();
        if !shards.contains(&s) {
            shards.push(s);
        }
    }
    shards.sort();
    let quarantined: Vec<(String, String)> = quarantined(dir)
        .into_iter()
        .map(|(p, w)| (p.display().to_string(), w))
        .collect();
    let strays: Vec<(String, String, bool)> = scan
        .strays
        .iter()
        .map(|s| {
            (
                s.path.display().to_string(),
                s.kind.describe().to_string(),
                s.kind.disturbs_readers(),
            )
        })
        .collect();
    let complete = missing_ids.is_empty() && unfinished.is_none();
    let clean = scan.bad.is_empty()
        && quarantined.is_empty()
        && unplanned == 0
        && !strays.iter().any(|s| s.2);
    Health {
        dir: dir.display().to_string(),
        sweep_name: sweep_name.to_string(),
        sweep_hash: m.sweep_hash.clone(),
        format_version: m.format_version,
        layout_shards: m.shards,
        backend: m.backend.clone(),
        points,
        shards,
        good_parts: scan.good.len(),
        rows: scan.good.iter().map(|p| p.ids.len()).sum(),
        missing: ranges(&missing_ids),
        missing_count: missing_ids.len() as u64,
        unfinished,
        unplanned_rows: unplanned,
        bad_files: scan
            .bad
            .iter()
            .map(|(p, d)| (p.display().to_string(), d.to_string()))
            .collect(),
        quarantined,
        strays,
        writers: writers
            .into_iter()
            .map(|((version, backend, adapter), (parts, rows))| Writer {
                version,
                backend,
                adapter,
                parts,
                rows,
            })
            .collect(),
        complete,
        clean,
    }
}

/// The report `metachron check` prints: one line on the dataset, then what is missing,
/// unfinished, bad, quarantined or stray, who wrote what, and the verdict.
impl std::fmt::Display for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let h = self;
        writeln!(
            f,
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
        )?;
        writeln!(f, "  {} good parts, {} rows", h.good_parts, h.rows)?;
        if h.complete {
            writeln!(f, "  complete: every planned point id is present once")?;
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
            writeln!(
                f,
                "  INCOMPLETE: {} point ids missing: {}{}",
                h.missing_count,
                shown.join(", "),
                if h.missing.len() > 20 { ", ..." } else { "" }
            )?;
        }
        if let Some(u) = &h.unfinished {
            writeln!(f, "  NOT FINISHED: {u}")?;
        }
        if h.unplanned_rows > 0 {
            writeln!(
                f,
                "  {} rows hold point ids the plan does not hold",
                h.unplanned_rows
            )?;
        }
        for (p, why) in &h.bad_files {
            writeln!(f, "  BAD FILE {p}: {why}")?;
        }
        for (p, why) in &h.quarantined {
            writeln!(f, "  QUARANTINED {p}: {why}")?;
        }
        for (p, what, disturbs) in &h.strays {
            let tag = if *disturbs {
                "NOT THE DATASET'S"
            } else {
                "note"
            };
            writeln!(f, "  {tag} {p}: {what}")?;
        }
        for w in &h.writers {
            writeln!(
                f,
                "  written by metachron {} on {} ({}): {} parts, {} rows",
                w.version, w.backend, w.adapter, w.parts, w.rows
            )?;
        }
        writeln!(
        f,
        "  {}",
        match (h.complete, h.clean) {
            (true, true) => "OK: complete and clean",
            (true, false) => "complete, but not clean (files above: `--resume` moves bad parts to quarantine/, remove quarantine/ once inspected; files that are not the dataset's are never moved: remove them yourself)",
            (false, _) => "not complete: run the sweep again with --resume",
        }
    )?;
        Ok(())
    }
}
