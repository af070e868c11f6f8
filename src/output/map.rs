//! Coordination maps: a heatmap of one metric (or the class) over two swept
//! parameters, aggregating repeats; log axes where the sweep's axis is log-spaced.

use std::path::Path;

use plotters::prelude::*;

use crate::error::OutputError;
use crate::sweep::dataset::{Column, Dataset, META_SWEEP};
use crate::sweep::SweepSpec;

/// What to draw.
#[derive(Debug, Clone)]
pub struct MapRequest {
    pub x: String,
    pub y: String,
    /// A numeric column (mean over repeats), `class` (most frequent class) or
    /// `class=<label>` (fraction of repeats in that class).
    pub metric: String,
}

/// Drawing options beyond the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapOptions {
    /// `fraction:<class>` maps mark cells whose Wilson 95 % interval is wider than
    /// this; `None`: the sweep's adaptive `ci_width`, else 0.2.
    pub ci_width: Option<f64>,
}

/// What was drawn.
#[derive(Debug, Clone)]
pub struct MapSummary {
    pub rows: usize,
    pub cells: usize,
    pub filled_cells: usize,
    pub x_log: bool,
    pub y_log: bool,
    pub range: (f64, f64),
    /// Cells marked for a wide interval (`fraction:<class>` maps).
    pub wide_cells: usize,
}

fn err(path: &Path, message: impl std::fmt::Display) -> OutputError {
    OutputError::Plot {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// One axis of the map: cells in plotting coordinates (log10 when log).
struct MapAxis {
    name: String,
    log: bool,
    /// Categorical labels (text columns), else empty.
    categories: Vec<String>,
    /// Cell edges (len = cells + 1) in plotting coordinates.
    edges: Vec<f64>,
    /// Cell index of each row (None: not placeable, e.g. NaN or non-positive on log).
    cell_of_row: Vec<Option<usize>>,
}

const MAX_GRID: usize = 64;
const BINS: usize = 24;

impl MapAxis {
    fn new(name: &str, col: &Column, log: bool) -> MapAxis {
        match col {
            Column::Text(v) => {
                let mut cats: Vec<String> = Vec::new();
                for s in v {
                    if !cats.contains(s) {
                        cats.push(s.clone());
                    }
                }
                let cell_of_row = v.iter().map(|s| cats.iter().position(|c| c == s)).collect();
                let edges = (0..=cats.len()).map(|i| i as f64 - 0.5).collect();
                MapAxis {
                    name: name.into(),
                    log: false,
                    categories: cats,
                    edges,
                    cell_of_row,
                }
            }
            Column::Num(v) => {
                let log = log && v.iter().all(|&x| x > 0.0 || x.is_nan());
                let tr = |x: f64| if log { x.log10() } else { x };
                let mut d: Vec<f64> = v
                    .iter()
                    .copied()
                    .filter(|x| x.is_finite())
                    .map(tr)
                    .collect();
                d.sort_by(f64::total_cmp);
                let scale = d.iter().fold(0.0f64, |a, &x| a.max(x.abs())).max(1e-300);
                d.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * scale);
                let edges: Vec<f64> = if d.is_empty() {
                    vec![-0.5, 0.5]
                } else if d.len() == 1 {
                    let h = if d[0] == 0.0 { 0.5 } else { 0.05 * d[0].abs() };
                    vec![d[0] - h, d[0] + h]
                } else if d.len() <= MAX_GRID {
                    let first = d[0] - 0.5 * (d[1] - d[0]);
                    // A non-negative parameter's cells do not reach below zero.
                    let first = if !log && d[0] >= 0.0 {
                        first.max(0.0)
                    } else {
                        first
                    };
                    let mut e = vec![first];
                    e.extend(d.windows(2).map(|w| 0.5 * (w[0] + w[1])));
                    let n = d.len();
                    e.push(d[n - 1] + 0.5 * (d[n - 1] - d[n - 2]));
                    e
                } else {
                    let (lo, hi) = (d[0], d[d.len() - 1]);
                    (0..=BINS)
                        .map(|k| lo + (hi - lo) * k as f64 / BINS as f64)
                        .collect()
                };
                let cell_of_row = v
                    .iter()
                    .map(|&x| {
                        let t = tr(x);
                        if !t.is_finite() {
                            return None;
                        }
                        let n = edges.len() - 1;
                        let k = edges[1..n].partition_point(|&e| e <= t);
                        Some(k.min(n - 1))
                    })
                    .collect();
                MapAxis {
                    name: name.into(),
                    log,
                    categories: Vec::new(),
                    edges,
                    cell_of_row,
                }
            }
        }
    }

    fn cells(&self) -> usize {
        self.edges.len() - 1
    }

    fn label(&self, v: f64) -> String {
        if !self.categories.is_empty() {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < self.categories.len() {
                let c = &self.categories[i as usize];
                // Masks "1,0,1,..." read better as "101...".
                if c.len() > 1 && c.split(',').all(|b| b == "0" || b == "1") {
                    return c.replace(',', "");
                }
                return c.clone();
            }
            return String::new();
        }
        let x = if self.log { 10f64.powf(v) } else { v };
        sig(x, 3)
    }

    fn desc(&self) -> String {
        let unit = crate::params::spec(&self.name)
            .map(|s| s.unit)
            .filter(|u| !u.is_empty() && *u != "1");
        let mut d = match unit {
            Some(u) => format!("{} ({u})", self.name),
            None => self.name.clone(),
        };
        if self.log {
            d.push_str(", log scale");
        }
        d
    }
}

/// `x` with `digits` significant digits, without trailing zeros.
fn sig(x: f64, digits: i32) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-3..6).contains(&mag) {
        return format!("{x:.*e}", (digits - 1).max(0) as usize);
    }
    let decimals = (digits - 1 - mag).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Metrics bounded by [0, 1]: their maps share one colour scale.
const UNIT_METRICS: &[&str] = &["lag_order", "min_plv", "kuramoto_r", "duty_factor"];

/// Whether the sweep stored in the dataset's metadata spreads `param` on a log scale.
fn axis_is_log(ds: &Dataset, param: &str) -> bool {
    ds.metadata
        .get(META_SWEEP)
        .and_then(|text| SweepSpec::from_str_named(text, "sweep", "sweep").ok())
        .and_then(|s| {
            s.axis(param).map(|a| {
                a.log
                    || (a.kind == crate::sweep::AxisKind::Values && {
                        let v: Vec<f64> = a
                            .values
                            .iter()
                            .filter_map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                            .collect();
                        v.len() >= 2
                            && v.iter().all(|&x| x > 0.0)
                            && v.iter().cloned().fold(0.0, f64::max)
                                >= 10.0 * v.iter().cloned().fold(f64::INFINITY, f64::min)
                    })
            })
        })
        .unwrap_or(false)
}

/// Viridis, interpolated between 9 samples.
fn viridis(u: f64) -> RGBColor {
    const V: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let u = if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let s = u * 8.0;
    let i = (s.floor() as usize).min(7);
    let f = s - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    RGBColor(
        mix(V[i].0, V[i + 1].0),
        mix(V[i].1, V[i + 1].1),
        mix(V[i].2, V[i + 1].2),
    )
}

/// Colours of the coordination classes.
fn class_colour(label: &str) -> RGBColor {
    match label {
        "metachronal" => RGBColor(44, 160, 44),
        "synchronous" => RGBColor(31, 119, 180),
        "locked" => RGBColor(148, 103, 189),
        "unlocked" => RGBColor(255, 187, 120),
        "still" => RGBColor(140, 86, 75),
        "diverged" => RGBColor(214, 39, 40),
        "failed" => RGBColor(60, 60, 60),
        _ => RGBColor(180, 180, 180),
    }
}

const CLASSES: &[&str] = &[
    "metachronal",
    "synchronous",
    "locked",
    "unlocked",
    "still",
    "diverged",
    "failed",
];

enum CellValue {
    Num(f64),
    Class(String),
}

/// Draw `req` from `ds` into the PNG `out` (written under a temporary name, then renamed).
pub fn draw_map(ds: &Dataset, req: &MapRequest, out: &Path) -> Result<MapSummary, OutputError> {
    draw_map_with(ds, req, &MapOptions::default(), out)
}

/// A tile's corners (lower left, upper right) in plotting coordinates.
type Rect = [(f64, f64); 2];

/// Rectangles of a refined dataset at its native resolution: one per combination,
/// `2^-level` of a grid cell wide along each refined axis (coarse levels first, so
/// finer cells are drawn over them); `None` when the dataset is not refined.
fn refined_tiles(ds: &Dataset, xa: &MapAxis, ya: &MapAxis) -> Option<(Vec<Rect>, Vec<Vec<usize>>)> {
    let Some(Column::Num(level)) = ds.column("level") else {
        return None;
    };
    if !level.iter().any(|&l| l > 0.0) {
        return None;
    }
    let spec = ds
        .metadata
        .get(META_SWEEP)
        .and_then(|text| SweepSpec::from_str_named(text, "sweep", "sweep").ok())?;
    let refine = spec.refine.as_ref()?;
    let Some(Column::Num(combo)) = ds.column("combo") else {
        return None;
    };
    // Per axis: the grid step in plotting coordinates when refined, else None.
    let step = |ax: &MapAxis| {
        let a = spec.axes.iter().position(|a| a.param == ax.name)?;
        if !refine.axes.contains(&a) {
            return None;
        }
        let v = &spec.axes[a].values;
        let f = |x: &toml::Value| x.as_float().unwrap_or(f64::NAN);
        let tr = |x: f64| if ax.log { x.log10() } else { x };
        Some((tr(f(&v[v.len() - 1])) - tr(f(&v[0]))) / (v.len() - 1) as f64)
    };
    let (sx, sy) = (step(xa), step(ya));
    let mut groups: std::collections::BTreeMap<u64, Vec<usize>> = Default::default();
    for (row, &c) in combo.iter().enumerate() {
        groups.entry(c as u64).or_default().push(row);
    }
    let mut members: Vec<Vec<usize>> = groups.into_values().collect();
    members.sort_by(|a, b| level[a[0]].total_cmp(&level[b[0]]));
    let value = |col: &str, row: usize| match ds.column(col) {
        Some(Column::Num(v)) => v[row],
        _ => f64::NAN,
    };
    let span = |ax: &MapAxis, st: Option<f64>, row: usize, cell: Option<usize>| {
        let c = cell?;
        Some(match st {
            Some(st) => {
                let x = value(&ax.name, row);
                let x = if ax.log { x.log10() } else { x };
                let h = 0.5 * st / 2f64.powf(level[row]);
                (x - h, x + h)
            }
            None => (ax.edges[c], ax.edges[c + 1]),
        })
    };
    let mut rects = Vec::new();
    let mut kept = Vec::new();
    for m in members {
        let r = m[0];
        if let (Some(x), Some(y)) = (
            span(xa, sx, r, xa.cell_of_row[r]),
            span(ya, sy, r, ya.cell_of_row[r]),
        ) {
            rects.push([(x.0, y.0), (x.1, y.1)]);
            kept.push(m);
        }
    }
    Some((rects, kept))
}

/// Draw `req` from `ds` into the PNG `out` with `opts`.
pub fn draw_map_with(
    ds: &Dataset,
    req: &MapRequest,
    opts: &MapOptions,
    out: &Path,
) -> Result<MapSummary, OutputError> {
    let names: Vec<&str> = ds.columns.iter().map(|(n, _)| n.as_str()).collect();
    let col = |name: &str| {
        ds.column(name).ok_or_else(|| {
            err(
                out,
                format!(
                    "the dataset has no column `{name}`; columns are {}",
                    names.join(", ")
                ),
            )
        })
    };
    if ds.rows() == 0 {
        return Err(err(out, "the dataset is empty (no part files with rows)"));
    }
    // Columns of unequal length (parts that do not all hold them) cannot be a table.
    if let Some((name, c)) = ds.columns.iter().find(|(_, c)| c.len() != ds.rows()) {
        return Err(err(
            out,
            format!(
                "column `{name}` has {} rows but the table has {}: not every part holds it",
                c.len(),
                ds.rows()
            ),
        ));
    }
    let xa = MapAxis::new(&req.x, col(&req.x)?, axis_is_log(ds, &req.x));
    let ya = MapAxis::new(&req.y, col(&req.y)?, axis_is_log(ds, &req.y));
    let (nx, ny) = (xa.cells(), ya.cells());

    // Aggregate rows into cells.
    // `fraction:<class>` (with wide intervals marked) or `class=<class>`.
    let fraction_of = req
        .metric
        .strip_prefix("fraction:")
        .or(req.metric.strip_prefix("class="));
    let mark_wide = req.metric.starts_with("fraction:");
    let mode = if req.metric == "class" {
        0
    } else if fraction_of.is_some() {
        1
    } else {
        2
    };
    let class_col = match ds.column("class") {
        Some(Column::Text(v)) => Some(v),
        _ => None,
    };
    // Tiles: the grid's cells, or a refined dataset's combinations at their level.
    let (rects, members) = refined_tiles(ds, &xa, &ya).unwrap_or_else(|| {
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); nx * ny];
        for row in 0..ds.rows() {
            if let (Some(i), Some(j)) = (xa.cell_of_row[row], ya.cell_of_row[row]) {
                members[j * nx + i].push(row);
            }
        }
        let rects = (0..nx * ny)
            .map(|k| {
                let (i, j) = (k % nx, k / nx);
                [
                    (xa.edges[i], ya.edges[j]),
                    (xa.edges[i + 1], ya.edges[j + 1]),
                ]
            })
            .collect();
        (rects, members)
    });
    let n_tiles = rects.len();
    let mut cells: Vec<Vec<CellValue>> = (0..n_tiles).map(|_| Vec::new()).collect();
    for (k, rows) in members.iter().enumerate() {
        for &row in rows {
            let v = match mode {
                2 => match col(&req.metric)? {
                    Column::Num(v) => CellValue::Num(v[row]),
                    Column::Text(_) => {
                        return Err(err(
                            out,
                            format!(
                                "`{}` is a text column: map `class` or a numeric metric",
                                req.metric
                            ),
                        ))
                    }
                },
                _ => CellValue::Class(
                    class_col.ok_or_else(|| err(out, "the dataset has no `class` column"))?[row]
                        .clone(),
                ),
            };
            cells[k].push(v);
        }
    }
    let target = fraction_of.unwrap_or("");
    if mode == 1 && !CLASSES.contains(&target) {
        return Err(err(
            out,
            format!("`{}`: the classes are {}", req.metric, CLASSES.join(", ")),
        ));
    }
    // Aggregate: numeric mean (of finite values), class fraction, or most frequent class.
    let mut num = vec![f64::NAN; n_tiles];
    let mut cls: Vec<Option<String>> = vec![None; n_tiles];
    let mut wide = vec![false; n_tiles];
    let ci_width = opts.ci_width.unwrap_or_else(|| {
        ds.metadata
            .get(META_SWEEP)
            .and_then(|text| SweepSpec::from_str_named(text, "sweep", "sweep").ok())
            .and_then(|s| s.adaptive.map(|a| a.ci_width))
            .unwrap_or(0.2)
    });
    for (k, vs) in cells.iter().enumerate() {
        match mode {
            0 => {
                let mut best: Option<(&str, usize)> = None;
                for c in CLASSES {
                    let n = vs
                        .iter()
                        .filter(|v| matches!(v, CellValue::Class(s) if s == c))
                        .count();
                    if n > 0 && best.is_none_or(|(_, b)| n > b) {
                        best = Some((c, n));
                    }
                }
                cls[k] = best.map(|(c, _)| c.to_string());
            }
            1 => {
                if !vs.is_empty() {
                    let n = vs
                        .iter()
                        .filter(|v| matches!(v, CellValue::Class(s) if s == target))
                        .count();
                    num[k] = n as f64 / vs.len() as f64;
                    let (lo, hi) =
                        crate::sweep::summary::wilson(n, vs.len(), crate::sweep::summary::Z95);
                    wide[k] = mark_wide && hi - lo > ci_width;
                }
            }
            _ => {
                let f: Vec<f64> = vs
                    .iter()
                    .filter_map(|v| match v {
                        CellValue::Num(x) if x.is_finite() => Some(*x),
                        _ => None,
                    })
                    .collect();
                if !f.is_empty() {
                    num[k] = f.iter().sum::<f64>() / f.len() as f64;
                }
            }
        }
    }
    let finite: Vec<f64> = num.iter().copied().filter(|x| x.is_finite()).collect();
    let (mut lo, mut hi) = if mode == 1 || UNIT_METRICS.contains(&req.metric.as_str()) {
        (0.0, 1.0)
    } else {
        finite
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            })
    };
    if mode == 2 && finite.is_empty() {
        lo = 0.0;
        hi = 1.0;
    }
    if hi <= lo {
        hi = lo + 1.0;
        lo -= 1.0;
    }
    let filled = if mode == 0 {
        cls.iter().filter(|c| c.is_some()).count()
    } else {
        finite.len()
    };
    let repeats = cells.iter().map(|c| c.len()).max().unwrap_or(0);

    crate::output::plots::ensure_font();
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = out.with_file_name(format!(".{name}.tmp-{}.png", std::process::id()));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| OutputError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let drawn = (|| -> Result<(), OutputError> {
        let e = |x: &dyn std::fmt::Display| err(out, x);
        let root = BitMapBackend::new(&tmp, (1000, 800)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let (main, side) = root.split_horizontally(830);
        let sweep = ds
            .metadata
            .get("metachron.sweep_name")
            .cloned()
            .unwrap_or_default();
        let what = match mode {
            0 => "class (most frequent)".to_string(),
            1 if mark_wide => {
                format!("fraction {target} (/ : 95 % interval wider than {ci_width})")
            }
            1 => format!("fraction of runs {target}"),
            _ => match crate::metrics::METRIC_COLUMNS
                .iter()
                .find(|(m, u)| *m == req.metric && *u != "1")
            {
                Some((m, u)) => format!("{m} ({u})"),
                None => req.metric.clone(),
            },
        };
        let caption = if repeats > 1 {
            format!("{sweep}: {what}, {repeats} runs per cell")
        } else {
            format!("{sweep}: {what}")
        };
        // The tiles' extent (the grid's edges, or a refined dataset's outer cells).
        let bound = |f: fn(&Rect) -> (f64, f64)| {
            rects
                .iter()
                .map(f)
                .fold((f64::INFINITY, f64::NEG_INFINITY), |a, r| {
                    (a.0.min(r.0), a.1.max(r.1))
                })
        };
        let (x0, x1) = bound(|r| (r[0].0, r[1].0));
        let (y0, y1) = bound(|r| (r[0].1, r[1].1));
        let mut chart = ChartBuilder::on(&main)
            .caption(caption, ("sans-serif", 24))
            .margin(14)
            .x_label_area_size(55)
            .y_label_area_size(
                (ya.categories
                    .iter()
                    .map(|c| 9 * c.len() as u32 + 24)
                    .max()
                    .unwrap_or(0))
                .clamp(80, 260),
            )
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|x| e(&x))?;
        let xf = |v: &f64| xa.label(*v);
        let yf = |v: &f64| ya.label(*v);
        let mut mesh = chart.configure_mesh();
        mesh.disable_mesh()
            .x_desc(xa.desc())
            .y_desc(ya.desc())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 18));
        if !xa.categories.is_empty() {
            mesh.x_labels(xa.categories.len().max(2) * 4);
        }
        if !ya.categories.is_empty() {
            mesh.y_labels(ya.categories.len().max(2) * 4);
        }
        mesh.draw().map_err(|x| e(&x))?;
        let grey = RGBColor(215, 215, 215);
        chart
            .draw_series((0..n_tiles).map(|k| {
                let c = match mode {
                    0 => cls[k].as_deref().map(class_colour).unwrap_or(grey),
                    _ if num[k].is_finite() => viridis((num[k] - lo) / (hi - lo)),
                    _ => grey,
                };
                Rectangle::new(rects[k], c.filled())
            }))
            .map_err(|x| e(&x))?;
        // A wide interval: a white diagonal across the cell.
        chart
            .draw_series((0..n_tiles).filter(|&k| wide[k]).map(|k| {
                let [a, b] = rects[k];
                PathElement::new(vec![a, b], WHITE.stroke_width(2))
            }))
            .map_err(|x| e(&x))?;

        // Side: colour bar or class legend.
        if mode == 0 {
            let present: Vec<&str> = CLASSES
                .iter()
                .copied()
                .filter(|c| cls.iter().any(|k| k.as_deref() == Some(*c)))
                .collect();
            for (k, c) in present.iter().enumerate() {
                let y = 80 + 34 * k as i32;
                side.draw(&Rectangle::new(
                    [(10, y), (34, y + 24)],
                    class_colour(c).filled(),
                ))
                .map_err(|x| e(&x))?;
                side.draw(&Text::new(c.to_string(), (42, y + 4), ("sans-serif", 16)))
                    .map_err(|x| e(&x))?;
            }
        } else {
            let mut bar = ChartBuilder::on(&side)
                .margin_top(60)
                .margin_bottom(70)
                .margin_right(10)
                .y_label_area_size(70)
                .build_cartesian_2d(0.0..1.0, lo..hi)
                .map_err(|x| e(&x))?;
            bar.configure_mesh()
                .disable_mesh()
                .disable_x_axis()
                .label_style(("sans-serif", 14))
                .y_label_formatter(&|v| {
                    let digits = (2.0 - (hi - lo).log10().floor()).clamp(0.0, 12.0) as usize;
                    if (hi - lo) < 1e-4 * lo.abs().max(hi.abs()) {
                        format!("{v:.6e}")
                    } else {
                        format!("{v:.digits$}")
                    }
                })
                .draw()
                .map_err(|x| e(&x))?;
            let steps = 200;
            bar.draw_series((0..steps).map(|s| {
                let a = lo + (hi - lo) * s as f64 / steps as f64;
                let b = lo + (hi - lo) * (s + 1) as f64 / steps as f64;
                Rectangle::new([(0.0, a), (1.0, b)], viridis((a - lo) / (hi - lo)).filled())
            }))
            .map_err(|x| e(&x))?;
        }
        root.present().map_err(|x| e(&x))?;
        Ok(())
    })();
    let done = drawn.and_then(|_| {
        std::fs::rename(&tmp, out).map_err(|source| OutputError::Io {
            path: out.display().to_string(),
            source,
        })
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done?;
    Ok(MapSummary {
        rows: ds.rows(),
        cells: n_tiles,
        filled_cells: filled,
        x_log: xa.log,
        y_log: ya.log,
        range: (lo, hi),
        wide_cells: wide.iter().filter(|&&w| w).count(),
    })
}
