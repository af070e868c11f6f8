//! The atlas report's content composed from a verified dataset: what the sweep is, its
//! health as `metachron check` reports it, the class map and a fraction map per class,
//! the class fractions per combination, and one run of every class replayed with its
//! snapshots and animation. [`crate::output::report`] renders it as one page.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;

use crate::dataset::schema::{META_ADAPTER, META_BACKEND, META_VERSION};
use crate::dataset::{Column, Health, Rows};
use crate::error::OutputError;
use crate::metrics::{Class, Metrics};
use crate::output::map::{draw_map_with, MapOptions, MapRequest};
use crate::output::report::{write_page, Exemplar, Figure, Report, Section, Table};
use crate::sweep::facet::{facet, groups, selected, FacetError};
use crate::sweep::replay::{Difference, Replay};
use crate::sweep::summary::summarize;
use crate::sweep::SweepSpec;
use crate::vocabulary as voc;

/// Frames per second and width of the exemplars' animations: smaller than a
/// `--animate` default, since every class's clip is embedded in the page.
pub const EXEMPLAR_FPS: u32 = 12;
pub const EXEMPLAR_WIDTH: u32 = 560;

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("map of {metric}")]
    Map {
        metric: String,
        #[source]
        source: OutputError,
    },
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Rows(#[from] FacetError),
}

/// What the page shows beyond the dataset itself.
#[derive(Debug, Clone, Default)]
pub struct ReportRequest {
    /// Parameter on the maps' horizontal axis (default: the sweep's first axis).
    pub x: Option<String>,
    /// Parameter on the maps' vertical axis (default: the sweep's second axis).
    pub y: Option<String>,
    /// Replay one run of every class (`false`: maps and tables only).
    pub exemplars: bool,
    /// `COLUMN=VALUE` conditions every row shown meets (`--where`, as `map` takes them).
    pub conditions: Vec<String>,
    /// One section (maps and table) per combination of these parameters' values.
    pub facets: Vec<String>,
    /// Swept parameters whose values share the maps' cells on purpose (`--average`).
    pub averaged: Vec<String>,
}

/// The parameters on the maps' axes: `req`'s, else the sweep's first axis and the
/// first after it that varies on its own (not zipped with x: a zipped pair's values
/// move together and fill only a diagonal); `None` without two.
pub fn map_axes(spec: &SweepSpec, req: &ReportRequest) -> Option<(String, String)> {
    let x = req
        .x
        .clone()
        .or_else(|| spec.axes.first().map(|ax| ax.param.clone()))?;
    let group_of = |p: &str| {
        spec.axes
            .iter()
            .find(|ax| ax.param == p)
            .and_then(|ax| ax.group.clone())
    };
    let x_group = group_of(&x);
    let y = req.y.clone().or_else(|| {
        spec.axes
            .iter()
            .find(|ax| ax.param != x && (x_group.is_none() || ax.group != x_group))
            .map(|ax| ax.param.clone())
    })?;
    Some((x, y))
}

/// Where an exemplar's replay writes its pictures.
#[derive(Debug, Clone)]
pub struct ExemplarOutputs {
    /// The class the run shows.
    pub class: String,
    /// Directory of its snapshots, taken at `snapshot_times`.
    pub snapshots: PathBuf,
    pub snapshot_times: Vec<f64>,
    /// Its animation (GIF), `fps` frames per second, `width` pixels wide.
    pub animation: PathBuf,
    pub fps: u32,
    pub width: u32,
}

/// An error of a replay, shown on the page instead of the exemplar.
pub type ReplayFailure = Box<dyn std::error::Error + Send + Sync>;

/// Runs a row again for the page (the command line runs it as `metachron replay` does).
pub trait Replayer {
    /// Run `replay`, writing the pictures `outputs` asks for; returns the run's metrics
    /// and where they differ from the row's.
    fn replay(
        &mut self,
        replay: &Replay,
        outputs: &ExemplarOutputs,
    ) -> Result<(Metrics, Vec<Difference>), ReplayFailure>;
}

/// The page written, and what it holds.
#[derive(Debug, Clone)]
pub struct Written {
    pub bytes: u64,
    pub classes: usize,
    /// One per facet value (one without facets).
    pub sections: usize,
    pub pictures: usize,
}

/// Compose the report of the dataset in `dir` (its sweep `spec`, its `health` and
/// `rows`) and write it to `out` as one page; the pictures are drawn into a scratch
/// directory beside `out`, removed when done (or on failure).
pub fn write_report(
    dir: &Path,
    spec: &SweepSpec,
    health: &Health,
    rows: Rows,
    req: &ReportRequest,
    out: &Path,
    replayer: &mut dyn Replayer,
) -> Result<Written, ComposeError> {
    let scratch = Scratch(out.with_file_name(format!(
        ".{}.pictures-{}",
        out.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    )));
    std::fs::create_dir_all(&scratch.0).map_err(|source| OutputError::Io {
        path: scratch.0.display().to_string(),
        source,
    })?;
    let report = compose(dir, spec, health, rows, req, &scratch.0, replayer)?;
    let pictures = report.sections.iter().map(|s| s.maps.len()).sum::<usize>()
        + report
            .exemplars
            .iter()
            .map(|x| x.snapshots.len() + usize::from(x.animation.is_some()))
            .sum::<usize>();
    let bytes = write_page(&report, out)?;
    Ok(Written {
        bytes,
        classes: report.classes.len(),
        sections: report.sections.len(),
        pictures,
    })
}

/// A scratch directory for the pictures, removed when the report is done (or fails).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The page's content, its pictures drawn into `scratch`: the rows `req` selects (its
/// `--where` conditions; a swept parameter that varies unseen is refused as `map`
/// refuses it), in one section per facet value, each with its maps and table.
pub fn compose(
    dir: &Path,
    spec: &SweepSpec,
    health: &Health,
    rows: Rows,
    req: &ReportRequest,
    scratch: &Path,
    replayer: &mut dyn Replayer,
) -> Result<Report, ComposeError> {
    let axis_names: Vec<String> = spec.axes.iter().map(|ax| ax.param.clone()).collect();
    let xy = map_axes(spec, req);
    let rows = match &xy {
        Some((x, y)) => {
            let mut shown = vec![x.as_str(), y.as_str()];
            shown.extend(req.facets.iter().map(String::as_str));
            selected(rows, spec, &req.conditions, &shown, &req.averaged)?
        }
        // No maps: nothing shares a cell (the table has a line per combination).
        None => facet(rows, &req.conditions)?,
    };
    let classes = classes_present(&rows);
    let split = groups(&rows, &req.facets)?;
    let averaged = averaged_note(&rows, &req.averaged);
    let mut sections = Vec::with_capacity(split.names.len());
    for (k, name) in split.names.iter().enumerate() {
        let own;
        let part = match req.facets.is_empty() {
            true => &rows,
            false => {
                own = rows.select(&split.mask(k));
                &own
            }
        };
        let (maps, maps_note) = match &xy {
            Some((x, y)) => {
                let opts = MapOptions {
                    // One colour scale in every section, so that sections compare.
                    range: (!req.facets.is_empty()).then_some((0.0, 1.0)),
                    ..MapOptions::default()
                };
                let shared = match req.facets.is_empty() {
                    true => String::new(),
                    false => " The colour scale runs from 0 to 1 in every section.".into(),
                };
                let pictures = scratch.join(format!("section-{k}"));
                std::fs::create_dir_all(&pictures).map_err(|source| OutputError::Io {
                    path: pictures.display().to_string(),
                    source,
                })?;
                let note = format!("{averaged}{shared}");
                (maps(part, (x, y), &opts, &note, &classes, &pictures)?, None)
            }
            None => (
                Vec::new(),
                Some(
                    "The sweep has fewer than two axes: no maps (give --x and --y to map over \
                     other columns)."
                        .to_string(),
                ),
            ),
        };
        let (summary_batch, _) = summarize(part, dir)?;
        sections.push(Section {
            heading: (!req.facets.is_empty()).then(|| name.clone()),
            rows: part.len(),
            maps,
            maps_note,
            summary: Table::from_summary(&summary_batch, &axis_names, &classes),
        });
    }
    let exemplars = match req.exemplars {
        true => exemplars(&rows, &classes, &axis_names, scratch, replayer),
        false => Vec::new(),
    };
    let mut facts = facts(dir, spec, &rows);
    if !req.conditions.is_empty() || !req.averaged.is_empty() || !req.facets.is_empty() {
        let mut how = Vec::new();
        if !req.conditions.is_empty() {
            how.push(format!("where {}", req.conditions.join(", ")));
        }
        if !req.facets.is_empty() {
            how.push(format!(
                "one section per {} ({} sections)",
                req.facets.join(" and "),
                sections.len()
            ));
        }
        if !averaged.is_empty() {
            how.push(averaged.trim().to_string());
        }
        facts.push((
            "rows shown".into(),
            format!("{} of {} rows: {}", rows.len(), health.rows, how.join("; ")),
        ));
    }
    Ok(Report {
        title: format!("metachron atlas: {}", spec.name),
        description: spec.description.clone(),
        facts,
        check_ok: health.complete && health.clean,
        check_lines: check_lines(dir, health),
        axes: spec
            .axes
            .iter()
            .map(|ax| {
                (
                    ax.param.clone(),
                    format!("{}{}", ax.kind.key(), if ax.log { " (log)" } else { "" }),
                    values_text(&ax.values),
                )
            })
            .collect(),
        sweep_text: spec.text.clone(),
        sections,
        classes,
        exemplars,
    })
}

/// " Each cell averages over 3 values of omega (--average)." for the maps' captions;
/// empty when nothing is averaged.
fn averaged_note(rows: &Rows, averaged: &[String]) -> String {
    if averaged.is_empty() {
        return String::new();
    }
    let named: Vec<String> = averaged
        .iter()
        .map(|p| format!("{p} ({})", rows.distinct(p).join(", ")))
        .collect();
    format!(
        " Each cell averages over {} (--average).",
        named.join(" and ")
    )
}

/// `metachron summarize`'s table as the report shows it: from `batch`, the summary of
/// `rows`, one row per combination of the swept parameters of `spec`, the run count,
/// and per class present its fraction with the Wilson 95 % interval.
pub fn summary_table(spec: &SweepSpec, rows: &Rows, batch: &RecordBatch) -> Table {
    let axis_names: Vec<String> = spec.axes.iter().map(|ax| ax.param.clone()).collect();
    Table::from_summary(batch, &axis_names, &classes_present(rows))
}

/// The health, as `metachron check` reports it, in a few lines.
fn check_lines(dir: &Path, h: &Health) -> Vec<String> {
    let mut lines = vec![format!(
        "{} rows of {} points in {} good parts",
        h.rows, h.points, h.good_parts
    )];
    if h.missing_count > 0 {
        lines.push(format!("{} point ids missing", h.missing_count));
    }
    if !h.bad_files.is_empty() {
        lines.push(format!("{} bad files", h.bad_files.len()));
    }
    if !h.quarantined.is_empty() {
        lines.push(format!("{} quarantined files", h.quarantined.len()));
    }
    lines.push(format!("`metachron check {}` says more", dir.display()));
    lines
}

/// What the dataset is: where, who wrote it on what, how many points.
fn facts(dir: &Path, spec: &SweepSpec, rows: &Rows) -> Vec<(String, String)> {
    let meta = |k: &str| rows.metadata.get(k).cloned().unwrap_or_default();
    let mut facts = vec![
        ("dataset".to_string(), dir.display().to_string()),
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
    facts
}

/// The class map, then the fraction of runs in each class present, over `x` and `y`,
/// drawn from `rows` with `opts`; `note` ends every caption.
fn maps(
    rows: &Rows,
    (x, y): (&str, &str),
    opts: &MapOptions,
    note: &str,
    classes: &[String],
    scratch: &Path,
) -> Result<Vec<Figure>, ComposeError> {
    let metrics = std::iter::once(voc::CLASS.to_string())
        .chain(classes.iter().map(|c| format!("fraction:{c}")));
    let mut maps = Vec::new();
    for (k, metric) in metrics.enumerate() {
        let path = scratch.join(format!("map-{k}.png"));
        let req = MapRequest {
            x: x.to_string(),
            y: y.to_string(),
            metric: metric.clone(),
        };
        if let Err(source) = draw_map_with(rows, &req, opts, &path) {
            return Err(ComposeError::Map { metric, source });
        }
        let (title, caption) = match metric.strip_prefix("fraction:") {
            Some(c) => (format!("fraction {c}"), fraction_caption(c, opts, note)),
            None => (
                voc::CLASS.to_string(),
                format!("The most frequent class of each combination.{note}"),
            ),
        };
        maps.push(Figure {
            path,
            title,
            caption,
        });
    }
    Ok(maps)
}

/// The caption of class `class`'s fraction map drawn with `opts`: the strike-through
/// width it states is the one the drawing used ([`MapOptions::strike_width`]).
fn fraction_caption(class: &str, opts: &MapOptions, note: &str) -> String {
    format!(
        "Fraction of each combination's runs in class {class}; struck-through cells have \
         a Wilson 95 % interval wider than {}.{note}",
        opts.strike_width()
    )
}

/// One replayed run of every class present; a run that cannot be replayed says why.
fn exemplars(
    rows: &Rows,
    classes: &[String],
    axes: &[String],
    scratch: &Path,
    replayer: &mut dyn Replayer,
) -> Vec<Exemplar> {
    let mut out = Vec::new();
    for class in classes {
        let Some(row) = exemplar_row(rows, class) else {
            continue;
        };
        match exemplar(rows, row, class, axes, scratch, replayer) {
            Ok(x) => out.push(x),
            Err(e) => out.push(Exemplar {
                class: class.clone(),
                heading: class.clone(),
                notes: vec![format!("Could not be replayed: {}", chain(e.as_ref()))],
                metrics: Vec::new(),
                animation: None,
                snapshots: Vec::new(),
            }),
        }
    }
    out
}

/// An error and its causes, `outer: inner`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// Replay `row` into `scratch` and describe it for the page.
fn exemplar(
    rows: &Rows,
    row: usize,
    class: &str,
    axes: &[String],
    scratch: &Path,
    replayer: &mut dyn Replayer,
) -> Result<Exemplar, ReplayFailure> {
    let replay = Replay::of_row(rows, row, None)?;
    let where_ = axes
        .iter()
        .filter_map(|a| replay.cfg.params.scalar(a).map(|x| format!("{a} = {x}")))
        .collect::<Vec<_>>()
        .join(", ");
    let t_final = replay.cfg.params.t_final;
    let outputs = ExemplarOutputs {
        class: class.to_string(),
        snapshots: scratch.join(format!("exemplar-{class}")),
        snapshot_times: (0..4).map(|k| t_final * k as f64 / 3.0).collect(),
        animation: scratch.join(format!("exemplar-{class}.gif")),
        fps: EXEMPLAR_FPS,
        width: EXEMPLAR_WIDTH,
    };
    let (metrics, diffs) = replayer.replay(&replay, &outputs)?;
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
    let pics = &outputs.snapshots;
    let mut snapshots: Vec<PathBuf> = std::fs::read_dir(pics)
        .map_err(|source| OutputError::Io {
            path: pics.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("snapshot_t"))
        })
        .collect();
    snapshots.sort();
    let gif = outputs.animation;
    Ok(Exemplar {
        class: class.to_string(),
        heading: format!("{class}: point {} ({where_})", replay.point_id),
        notes,
        metrics: metric_lines(&metrics),
        animation: gif.exists().then_some(gif),
        snapshots,
    })
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

/// The exemplar's metrics as the page lists them, each with its unit from the
/// vocabulary (angles in degrees, pure numbers marked dimensionless).
fn metric_lines(m: &Metrics) -> Vec<(String, String)> {
    use voc::metric;
    let mut v = vec![
        (voc::STATUS.to_string(), m.status.label().to_string()),
        (voc::CLASS.into(), m.class.label().into()),
        (
            "horizon t_run".into(),
            voc::show_shortest(metric::t_run, m.t_run),
        ),
    ];
    if m.status.is_ok() {
        let line = |label: &str, name: &str, x: f64, decimals: usize| {
            (label.to_string(), voc::show(name, x, decimals))
        };
        v.extend([
            line("lag order R", metric::lag_order, m.lag_order, 4),
            line("mean lag", metric::mean_lag, m.mean_lag, 2),
            line("min PLV", metric::min_plv, m.min_plv, 4),
            (
                "wave".into(),
                match (m.wave_direction, m.wave_sense) {
                    (Some(d), Some(w)) => format!("{d:+}, {}", w.label()),
                    (Some(d), None) => format!("{d:+}"),
                    _ => "none".into(),
                },
            ),
            line("mean speed", metric::mean_speed, m.mean_speed, 4),
            line(
                metric::displacement,
                metric::displacement,
                m.displacement,
                4,
            ),
            line(
                "cost of transport",
                metric::cost_of_transport,
                m.cost_of_transport,
                4,
            ),
            line("duty factor", metric::duty_factor, m.duty_factor, 3),
        ]);
        if m.work_coupling != 0.0 {
            v.push(line(
                "coupling dissipation",
                metric::work_coupling,
                m.work_coupling,
                4,
            ));
        }
    } else {
        v.push((
            "stopped at".into(),
            format!("t = {}", voc::show(voc::STATUS_TIME, m.status.time(), 4)),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::map::DEFAULT_CI_WIDTH;

    #[test]
    fn the_fraction_caption_states_the_width_the_map_strikes_at() {
        let default = fraction_caption("metachronal", &MapOptions::default(), "");
        assert!(
            default.ends_with(&format!("wider than {DEFAULT_CI_WIDTH}.")),
            "{default}"
        );
        let narrow = MapOptions {
            ci_width: Some(0.3),
            ..MapOptions::default()
        };
        let text = fraction_caption("synchronous", &narrow, " Note.");
        assert!(text.ends_with("wider than 0.3. Note."), "{text}");
        assert!(!text.contains(&DEFAULT_CI_WIDTH.to_string()), "{text}");
    }

    #[test]
    fn an_exemplars_metrics_carry_their_units() {
        let m = Metrics {
            mean_lag: std::f64::consts::FRAC_PI_2,
            mean_speed: 0.25,
            displacement: 5.0,
            cost_of_transport: 1.5,
            t_run: 20.0,
            ..crate::metrics::MetricsAccumulator::new(
                &crate::params::Params::default(),
                &crate::metrics::MetricsSettings::default(),
            )
            .finish(crate::sample::Status::Ok)
        };
        let lines: BTreeMap<String, String> = metric_lines(&m).into_iter().collect();
        assert_eq!(lines["mean lag"], "90.00 deg");
        assert_eq!(lines["mean speed"], "0.2500 m/s");
        assert_eq!(lines["displacement"], "5.0000 m");
        assert_eq!(lines["cost of transport"], "1.5000 (dimensionless)");
        assert_eq!(lines["horizon t_run"], "20 s");
        assert!(lines["lag order R"].ends_with("(dimensionless)"));
    }
}
