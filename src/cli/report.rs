//! `metachron report DIR --out report.html`: one static page for a sweep dataset: the
//! sweep and its health, the class map and a fraction map per class, the class
//! fractions per combination, and one run of every class replayed with its snapshots
//! and animation. Pictures are embedded, so the page is a single file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;

use metachron::dataset::schema::{META_ADAPTER, META_BACKEND, META_VERSION};
use metachron::dataset::{Column, Dataset, Rows, VerifyOptions};
use metachron::metrics::{Class, Metrics};
use metachron::output::map::{draw_map_with, MapOptions, MapRequest};
use metachron::output::report::{write_page, Exemplar, Figure, Report, Table};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::replay::Replay;
use metachron::sweep::summary::summarize;
use metachron::vocabulary as voc;

use super::replay::execute_replay;
use super::simulate::OutputArgs;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Dataset directory written by `metachron sweep --out DIR`.
    dir: PathBuf,
    /// The HTML page to write (pictures embedded: one self-contained file).
    #[arg(long, value_name = "FILE.html")]
    out: PathBuf,
    /// Parameter on the maps' horizontal axis (default: the sweep's first axis).
    #[arg(long)]
    x: Option<String>,
    /// Parameter on the maps' vertical axis (default: the sweep's second axis).
    #[arg(long)]
    y: Option<String>,
    /// No exemplars (no replays): maps and tables only.
    #[arg(long)]
    no_exemplars: bool,
}

/// Frames per second and width of the exemplars' animations: smaller than a
/// `--animate` default, since every class's clip is embedded in the page.
const EXEMPLAR_FPS: u32 = 12;
const EXEMPLAR_WIDTH: u32 = 560;

/// A scratch directory for the pictures, removed when the report is done (or fails).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn values_text(values: &[toml::Value]) -> String {
    const SHOWN: usize = 10;
    let mut parts: Vec<String> = values.iter().take(SHOWN).map(|v| v.to_string()).collect();
    if values.len() > SHOWN {
        parts.push(format!("… ({} values)", values.len()));
    }
    parts.join(", ")
}

/// The classes present in `ds`, in the classification's order.
fn classes_present(ds: &Rows) -> Vec<String> {
    let Some(Column::Text(class)) = ds.column(voc::CLASS) else {
        return Vec::new();
    };
    Class::ALL
        .iter()
        .map(|c| c.label().to_string())
        .filter(|c| class.iter().any(|x| x == c))
        .collect()
}

/// The row that shows `class` best: from the combination with the largest fraction of
/// runs in it, the lowest point id.
fn exemplar_row(ds: &Rows, class: &str) -> Option<usize> {
    let (Some(Column::Text(classes)), Some(Column::Num(combo)), Some(Column::Num(id))) = (
        ds.column(voc::CLASS),
        ds.column(voc::COMBO),
        ds.column(voc::POINT_ID),
    ) else {
        return None;
    };
    let mut per_combo: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for (r, &c) in combo.iter().enumerate() {
        let e = per_combo.entry(c as u64).or_default();
        e.1 += 1;
        if classes[r] == class {
            e.0 += 1;
        }
    }
    let fraction = |r: usize| {
        let (k, n) = per_combo[&(combo[r] as u64)];
        k as f64 / n as f64
    };
    (0..ds.len())
        .filter(|&r| classes[r] == class)
        .max_by(|&a, &b| {
            fraction(a)
                .total_cmp(&fraction(b))
                .then(id[b].total_cmp(&id[a]))
        })
}

fn metric_lines(m: &Metrics) -> Vec<(String, String)> {
    let mut v = vec![
        (voc::STATUS.to_string(), m.status.label().to_string()),
        (voc::CLASS.into(), m.class.label().into()),
        ("horizon t_run".into(), format!("{} s", m.t_run)),
    ];
    if m.status.is_ok() {
        v.extend([
            ("lag order R".to_string(), format!("{:.4}", m.lag_order)),
            (
                "mean lag".into(),
                format!("{:.2} deg", m.mean_lag.to_degrees()),
            ),
            ("min PLV".into(), format!("{:.4}", m.min_plv)),
            ("mean speed".into(), format!("{:.4} m/s", m.mean_speed)),
            (
                voc::metric::displacement.into(),
                format!("{:.4} m", m.displacement),
            ),
            (
                "cost of transport".into(),
                format!("{:.4}", m.cost_of_transport),
            ),
            ("duty factor".into(), format!("{:.3}", m.duty_factor)),
        ]);
    } else {
        v.push(("stopped at".into(), format!("t = {:.4} s", m.status.time())));
    }
    v
}

/// Replay `row` into `scratch` and describe it for the page.
fn exemplar(
    dir: &Path,
    ds: &Rows,
    row: usize,
    class: &str,
    axes: &[String],
    scratch: &Path,
) -> Result<Exemplar> {
    let replay = Replay::of_row(ds, row, None)?;
    let where_ = axes
        .iter()
        .filter_map(|a| replay.cfg.params.scalar(a).map(|x| format!("{a} = {x}")))
        .collect::<Vec<_>>()
        .join(", ");
    let pics = scratch.join(format!("exemplar-{class}"));
    let gif = scratch.join(format!("exemplar-{class}.gif"));
    let t_final = replay.cfg.params.t_final;
    let outputs = OutputArgs {
        out: None,
        metrics: None,
        snapshots: Some(pics.clone()),
        snapshot_times: (0..4).map(|k| t_final * k as f64 / 3.0).collect(),
        animate: Some(gif.clone()),
        animate_fps: EXEMPLAR_FPS,
        animate_duration: None,
        animate_width: EXEMPLAR_WIDTH,
        quiet: true,
    };
    let (result, diffs) = execute_replay(dir, &replay, outputs, false)?;
    let mut notes = vec![format!(
        "Point {} of the dataset (combination {}, repeat {}), run again on the {} engine \
         (written by the {} engine): {}.",
        replay.point_id,
        replay.combo,
        replay.repeat,
        replay.backend.label(),
        replay.recorded_backend,
        if diffs.is_empty() {
            "every metric, the status and the class equal the row's bit for bit".to_string()
        } else {
            let worst = diffs.iter().filter_map(|d| d.relative).fold(0.0, f64::max);
            format!(
                "{} values differ from the row's (largest relative difference {worst:.1e})",
                diffs.len()
            )
        }
    )];
    notes.extend(replay.notes.iter().cloned());
    let mut snapshots: Vec<PathBuf> = std::fs::read_dir(&pics)
        .with_context(|| format!("reading {}", pics.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("snapshot_t"))
        })
        .collect();
    snapshots.sort();
    println!(
        "exemplar of {class}: point {} replayed on {} ({})",
        replay.point_id,
        replay.backend.label(),
        if diffs.is_empty() {
            "equal to its row bit for bit".to_string()
        } else {
            format!("{} values differ from its row", diffs.len())
        }
    );
    Ok(Exemplar {
        class: class.to_string(),
        heading: format!("{class}: point {} ({where_})", replay.point_id),
        notes,
        metrics: metric_lines(&result.metrics),
        animation: gif.exists().then_some(gif),
        snapshots,
    })
}

pub fn run(a: ReportArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory (give the --out DIR of a sweep)",
            a.dir.display()
        );
    }
    // Read as every reader reads a dataset: judged as `check` judges it, refused unless
    // complete and clean.
    let opened = Dataset::open(&a.dir)?;
    let spec = recorded_sweep(&opened)?;
    let mut verified = opened.verify(&spec, VerifyOptions::reader(false))?;
    let ds = verified.rows()?;
    if ds.is_empty() {
        bail!("{}: no rows (no part files)", a.dir.display());
    }
    if let Some(parent) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("--out: cannot create {}", parent.display()))?;
    }
    // Checked before any work: the page's directory must take a file.
    drop(metachron::parquet::PendingFile::create(&a.out).context("--out")?);
    let scratch = Scratch(a.out.with_file_name(format!(
        ".{}.pictures-{}",
        a.out.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    )));
    std::fs::create_dir_all(&scratch.0)
        .with_context(|| format!("cannot create {}", scratch.0.display()))?;

    // Health, as `metachron check` reports it.
    let h = &verified.health;
    let mut check_lines = vec![format!(
        "{} rows of {} points in {} good parts",
        h.rows, h.points, h.good_parts
    )];
    if h.missing_count > 0 {
        check_lines.push(format!("{} point ids missing", h.missing_count));
    }
    if !h.bad_files.is_empty() {
        check_lines.push(format!("{} bad files", h.bad_files.len()));
    }
    if !h.quarantined.is_empty() {
        check_lines.push(format!("{} quarantined files", h.quarantined.len()));
    }
    check_lines.push(format!("`metachron check {}` says more", a.dir.display()));

    let meta = |k: &str| ds.metadata.get(k).cloned().unwrap_or_default();
    let mut facts = vec![
        ("dataset".to_string(), a.dir.display().to_string()),
        (
            "written by".into(),
            format!("metachron {}", meta(META_VERSION)),
        ),
        (
            voc::BACKEND.into(),
            format!("{} ({})", meta(META_BACKEND), meta(META_ADAPTER)),
        ),
        (
            "points".into(),
            format!(
                "{} combinations x {} repeats, t_final = {} s",
                spec.combinations(),
                spec.repeats,
                spec.config.params.t_final
            ),
        ),
    ];
    if let Some(t) = spec.until_settled {
        facts.push(("until_settled".into(), format!("{t} s")));
    }
    let axes: Vec<(String, String, String)> = spec
        .axes
        .iter()
        .map(|ax| {
            (
                ax.param.clone(),
                format!("{}{}", ax.kind.key(), if ax.log { " (log)" } else { "" }),
                values_text(&ax.values),
            )
        })
        .collect();
    let axis_names: Vec<String> = spec.axes.iter().map(|ax| ax.param.clone()).collect();
    let classes = classes_present(&ds);

    // Maps: the class, then the fraction of runs in each class present.
    let x = a.x.clone().or_else(|| axis_names.first().cloned());
    let y = a.y.clone().or_else(|| axis_names.get(1).cloned());
    let mut maps = Vec::new();
    let mut maps_note = None;
    match (x, y) {
        (Some(x), Some(y)) => {
            let metrics = std::iter::once(voc::CLASS.to_string())
                .chain(classes.iter().map(|c| format!("fraction:{c}")));
            for (k, metric) in metrics.enumerate() {
                let path = scratch.0.join(format!("map-{k}.png"));
                let req = MapRequest {
                    x: x.clone(),
                    y: y.clone(),
                    metric: metric.clone(),
                };
                draw_map_with(&ds, &req, &MapOptions::default(), &path)
                    .with_context(|| format!("map of {metric}"))?;
                let (title, caption) = match metric.strip_prefix("fraction:") {
                    Some(c) => (
                        format!("fraction {c}"),
                        format!(
                            "Fraction of each combination's runs in class {c}; struck-through \
                             cells have a Wilson 95 % interval wider than the sweep's ci_width \
                             (0.2 unless set)."
                        ),
                    ),
                    None => (
                        voc::CLASS.to_string(),
                        "The most frequent class of each combination.".to_string(),
                    ),
                };
                maps.push(Figure {
                    path,
                    title,
                    caption,
                });
            }
        }
        _ => {
            maps_note = Some(
                "The sweep has fewer than two axes: no maps (give --x and --y to map over \
                 other columns)."
                    .to_string(),
            )
        }
    }

    let (summary_batch, _) = summarize(&ds, &a.dir)?;
    let summary = Table::from_summary(&summary_batch, &axis_names, &classes);

    let mut exemplars = Vec::new();
    if !a.no_exemplars {
        for class in &classes {
            let Some(row) = exemplar_row(&ds, class) else {
                continue;
            };
            match exemplar(&a.dir, &ds, row, class, &axis_names, &scratch.0) {
                Ok(x) => exemplars.push(x),
                Err(e) => exemplars.push(Exemplar {
                    class: class.clone(),
                    heading: class.clone(),
                    notes: vec![format!("Could not be replayed: {e:#}")],
                    metrics: Vec::new(),
                    animation: None,
                    snapshots: Vec::new(),
                }),
            }
        }
    }

    let report = Report {
        title: format!("metachron atlas: {}", spec.name),
        description: spec.description.clone(),
        facts,
        check_ok: h.complete && h.clean,
        check_lines,
        axes,
        sweep_text: spec.text.clone(),
        maps,
        maps_note,
        summary,
        exemplars,
    };
    let pictures = report.maps.len()
        + report
            .exemplars
            .iter()
            .map(|x| x.snapshots.len() + usize::from(x.animation.is_some()))
            .sum::<usize>();
    let bytes = write_page(&report, &a.out)?;
    println!(
        "report of sweep `{}` ({} classes, {pictures} pictures embedded, {:.1} MB) -> {}",
        spec.name,
        classes.len(),
        bytes as f64 / 1e6,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
