//! A dataset judged whole, as `metachron check` reports it and as every reader
//! (`summarize`, `map`) requires it: its manifest, its sweep (the recorded one, or one
//! the user states), every part checked against both, what else lies in the
//! directory, and the plan the dataset must hold. A plain sweep's plan is every id;
//! a refined or adaptive-repeats sweep's plan is computed from its rows as the runner
//! computes it, so a finished one is complete and one with levels or repeats left
//! says so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::sweep::dataset::{self, Dataset};
use crate::sweep::manifest::{manifest_path, Manifest};
use crate::sweep::schema;
use crate::sweep::verify::{self, quarantined, ranges, Expected, Scan, VerifyCache};
use crate::sweep::{adaptive, refine, run, SweepError, SweepSpec};

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

/// A dataset judged whole.
#[derive(Debug)]
pub struct Audit {
    pub manifest: Manifest,
    pub spec: SweepSpec,
    pub scan: Scan,
    pub health: Health,
    /// The good parts' rows, when the plan needed them.
    rows: Option<Dataset>,
}

/// The sweep recorded in a dataset's manifest.
pub fn recorded_sweep(dir: &Path, m: &Manifest) -> Result<SweepSpec, SweepError> {
    let name = format!("{} (the recorded sweep)", manifest_path(dir).display());
    SweepSpec::from_str_named(&m.sweep, &name, &m.sweep_name)
}

/// Judge the dataset in `dir` against its manifest and `sweep` (default: the one the
/// manifest records). `cached`: trust parts whose verification is recorded and
/// unchanged (readers); `check` reads every byte.
pub fn audit(dir: &Path, sweep: Option<SweepSpec>, cached: bool) -> Result<Audit, SweepError> {
    let manifest = verify::manifest_of(dir)?.ok_or_else(|| SweepError::NoDataset {
        dir: dir.display().to_string(),
        manifest: schema::MANIFEST_FILE,
    })?;
    let spec = match sweep {
        Some(s) => s,
        None => recorded_sweep(dir, &manifest)?,
    };
    let exp = run::expected(&spec)?;
    let mut cache = cached.then(|| VerifyCache::load(dir, &manifest));
    let scan = verify::scan_with(dir, &exp, cache.as_mut())?;
    if let Some(c) = &cache {
        c.save(dir);
    }
    let mut rows = None;
    let planned = if spec.refine.is_some() || spec.adaptive.is_some() {
        let paths: Vec<_> = scan.good.iter().map(|p| p.path.clone()).collect();
        let ds = dataset::read_parts(dir, &paths)?;
        let p = planned_from_rows(&spec, &ds)?;
        rows = Some(ds);
        p
    } else {
        Planned::All(exp.points)
    };
    let health = health(dir, &manifest, &spec, &exp, &scan, &planned);
    Ok(Audit {
        manifest,
        spec,
        scan,
        health,
        rows,
    })
}

/// The ids a refined or adaptive-repeats dataset must hold, from its rows.
fn planned_from_rows(spec: &SweepSpec, ds: &Dataset) -> Result<Planned, SweepError> {
    if spec.refine.is_some() {
        let p = refine::plan_from_rows(spec, ds)?;
        let open = p.open_level.map(|(level, n)| {
            format!("refinement level {level} has {n} points still to run (run the sweep again with --resume)")
        });
        return Ok(Planned::Ids { ids: p.ids, open });
    }
    let Some(a) = spec.adaptive else {
        return Ok(Planned::All(run::id_space(spec)));
    };
    let classes = adaptive::classes_by_id(ds);
    let s = adaptive::state(&a, spec.combinations() as u64, &classes);
    let open = (s.open > 0).then(|| {
        format!(
            "adaptive repeats: {} combinations still need {} runs (run the sweep again with --resume)",
            s.open,
            s.todo.len()
        )
    });
    Ok(Planned::Ids {
        ids: s.planned.into_iter().collect(),
        open,
    })
}

/// Summarise a scan against the plan: which ids are missing, who wrote what.
pub fn health(
    dir: &Path,
    m: &Manifest,
    spec: &SweepSpec,
    exp: &Expected,
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
    let _ = exp;
    Health {
        dir: dir.display().to_string(),
        sweep_name: spec.name.clone(),
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

/// A dataset read through its audit.
#[derive(Debug)]
pub struct Verified {
    pub dataset: Dataset,
    pub audit: Audit,
    /// Why it is not complete and clean, when read with `allow_incomplete`.
    pub incomplete: Option<String>,
}

/// Read the dataset in `dir` as its readers must: judged as `check` judges it (with
/// the cached fast path), refused with the reasons unless complete and clean, or,
/// with `allow_incomplete`, the good parts only and the reasons returned.
pub fn read_verified(dir: &Path, allow_incomplete: bool) -> Result<Verified, SweepError> {
    let mut audit = audit(dir, None, true)?;
    let problems = audit.health.problems();
    if !problems.is_empty() && !allow_incomplete {
        return Err(SweepError::Refused {
            dir: dir.display().to_string(),
            reasons: problems.join("; "),
        });
    }
    let dataset = match audit.rows.take() {
        Some(ds) => ds,
        None => {
            let paths: Vec<_> = audit.scan.good.iter().map(|p| p.path.clone()).collect();
            dataset::read_parts(dir, &paths)?
        }
    };
    let incomplete = (!problems.is_empty()).then(|| {
        format!(
            "{} of {} planned points read; {}",
            dataset.rows(),
            audit.health.points,
            problems.join("; ")
        )
    });
    Ok(Verified {
        dataset,
        audit,
        incomplete,
    })
}
