//! Coordination maps: a heatmap of one metric (or the class, or a class fraction) over
//! two swept parameters, aggregating repeats. Everything comes from the rows: an axis
//! is log-scaled when its values are log-spaced, spans exactly the values' range (the
//! sweep's), and a refined dataset is drawn at its native resolution (its level-0 rows
//! give the grid step). PNG, or SVG when the output file ends in `.svg`.

use std::path::Path;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::dataset::schema::{COL_CLASS, COL_COMBO, COL_LEVEL, COL_WAVE_SENSE, META_SWEEP_NAME};
use crate::dataset::{Column, Rows};
use crate::error::OutputError;
use crate::metrics::{Class, WaveSense};
use crate::sweep::summary::{wilson, Z95};
use crate::vocabulary::{self as voc, metric};

mod panels;
pub use panels::{draw_panels, MAX_PANELS};

/// What to draw.
#[derive(Debug, Clone)]
pub struct MapRequest {
    pub x: String,
    pub y: String,
    /// A numeric column (mean over repeats), `class` (most frequent class),
    /// `fraction:<class>` (fraction of runs in that class, wide intervals struck
    /// through) or `class=<class>` (the fraction, unmarked).
    pub metric: String,
}

/// Drawing options beyond the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapOptions {
    /// `fraction:<class>` maps strike through cells whose Wilson 95 % interval is wider
    /// than this; `None`: [`DEFAULT_CI_WIDTH`].
    pub ci_width: Option<f64>,
    /// The colour bar's range; `None`: 0 to a round value above the largest fraction
    /// for fractions, [0, 1] for metrics bounded by it, else the data's range.
    pub range: Option<(f64, f64)>,
    /// Cells per numeric axis (equal widths in the axis' scale); `None`: one cell per
    /// distinct value (the sweep's own lattice), up to [`MAX_NATIVE`] values.
    pub bins: Option<usize>,
}

impl MapOptions {
    /// The Wilson interval width above which `fraction:<class>` cells are struck
    /// through: [`MapOptions::ci_width`], else [`DEFAULT_CI_WIDTH`]. The drawing and
    /// every caption that states the width read it here.
    pub fn strike_width(&self) -> f64 {
        self.ci_width.unwrap_or(DEFAULT_CI_WIDTH)
    }
}

/// Default strike-through width: with 8 runs a cell is struck when 2 to 6 of them are
/// in the class (Wilson widths 0.52–0.59), not when 0, 1, 7 or 8 are (0.32–0.45).
pub const DEFAULT_CI_WIDTH: f64 = 0.5;

/// Most distinct values drawn one cell each; above, an axis is binned into this many.
pub const MAX_NATIVE: usize = 257;

/// What was drawn.
#[derive(Debug, Clone)]
pub struct MapSummary {
    pub rows: usize,
    pub cells: usize,
    pub filled_cells: usize,
    pub x_log: bool,
    pub y_log: bool,
    /// The colour bar's range.
    pub range: (f64, f64),
    /// Cells marked for a wide interval (`fraction:<class>` maps).
    pub wide_cells: usize,
    /// Fewest and most runs in a filled cell.
    pub runs_per_cell: (usize, usize),
}

/// A plotting error about `path`: every refusal names the picture it was drawing.
fn err(path: &Path, message: impl std::fmt::Display) -> OutputError {
    OutputError::Plot {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// One axis of the map: cells in plotting coordinates (degrees for an angle, then
/// log10 when log).
struct MapAxis {
    name: String,
    log: bool,
    /// The parameter is an angle, stored in radians and drawn in degrees (every picture
    /// shows angles in one unit).
    degrees: bool,
    /// Categorical labels (text columns), else empty.
    categories: Vec<String>,
    /// Cell edges (len = cells + 1) in plotting coordinates; the first and last are
    /// the axis' range.
    edges: Vec<f64>,
    /// Plotting coordinate of each row (NaN: not placeable, e.g. non-positive on log).
    coord: Vec<f64>,
    /// Cell index of each row.
    cell_of_row: Vec<Option<usize>>,
}

/// Whether sorted distinct values are spread on a log scale: all positive, spanning a
/// factor 10 or more, and their gaps more even in log than in linear terms.
fn looks_log(d: &[f64]) -> bool {
    let spread = |x: &[f64]| {
        let g: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
        let m = g.iter().sum::<f64>() / g.len() as f64;
        (g.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / g.len() as f64).sqrt() / m
    };
    if d.len() < 2 || d[0] <= 0.0 || d[d.len() - 1] < 10.0 * d[0] {
        return false;
    }
    let logs: Vec<f64> = d.iter().map(|x| x.log10()).collect();
    d.len() == 2 || spread(&logs) < spread(d)
}

impl MapAxis {
    fn new(name: &str, col: &Column, bins: Option<usize>) -> MapAxis {
        match col {
            Column::Text(v) => {
                let mut cats: Vec<String> = Vec::new();
                for s in v {
                    if !cats.contains(s) {
                        cats.push(s.clone());
                    }
                }
                let cell_of_row: Vec<Option<usize>> =
                    v.iter().map(|s| cats.iter().position(|c| c == s)).collect();
                MapAxis {
                    name: name.into(),
                    log: false,
                    degrees: false,
                    edges: (0..=cats.len()).map(|i| i as f64 - 0.5).collect(),
                    coord: cell_of_row
                        .iter()
                        .map(|c| c.map_or(f64::NAN, |i| i as f64))
                        .collect(),
                    categories: cats,
                    cell_of_row,
                }
            }
            Column::Num(v) => {
                let degrees = crate::params::spec(name).is_some_and(|s| s.unit == voc::RADIANS);
                let shown = |x: f64| {
                    if degrees {
                        voc::shown_value(voc::RADIANS, x)
                    } else {
                        x
                    }
                };
                let mut d: Vec<f64> = v
                    .iter()
                    .map(|&x| shown(x))
                    .filter(|x| x.is_finite())
                    .collect();
                d.sort_by(f64::total_cmp);
                d.dedup();
                let log = looks_log(&d);
                // `d` is in the shown unit already; a row's value is not.
                let tr = |x: f64| if log { x.log10() } else { x };
                let mut d: Vec<f64> = d.into_iter().map(tr).collect();
                let scale = d.iter().fold(0.0f64, |a, &x| a.max(x.abs())).max(1e-300);
                d.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * scale);
                let edges = Self::edges(&d, bins);
                let coord: Vec<f64> = v.iter().map(|&x| tr(shown(x))).collect();
                let n = edges.len() - 1;
                let cell_of_row = coord
                    .iter()
                    .map(|&t| {
                        t.is_finite()
                            .then(|| edges[1..n].partition_point(|&e| e <= t).min(n - 1))
                    })
                    .collect();
                MapAxis {
                    name: name.into(),
                    log,
                    degrees,
                    categories: Vec::new(),
                    edges,
                    coord,
                    cell_of_row,
                }
            }
        }
    }

    /// Cell edges over the distinct values `d` (sorted): one cell per value with edges
    /// halfway between neighbours and the outer edges on the first and last value, or
    /// `bins` equal cells over the same range.
    fn edges(d: &[f64], bins: Option<usize>) -> Vec<f64> {
        match d {
            [] => vec![-0.5, 0.5],
            [x] => {
                let h = if *x == 0.0 { 0.5 } else { 0.05 * x.abs() };
                vec![x - h, x + h]
            }
            _ => {
                let (lo, hi) = (d[0], d[d.len() - 1]);
                let n = match bins {
                    Some(b) => b.max(1),
                    None if d.len() > MAX_NATIVE => MAX_NATIVE,
                    None => {
                        let mut e = vec![lo];
                        e.extend(d.windows(2).map(|w| 0.5 * (w[0] + w[1])));
                        e.push(hi);
                        return e;
                    }
                };
                (0..=n)
                    .map(|k| lo + (hi - lo) * k as f64 / n as f64)
                    .collect()
            }
        }
    }

    fn cells(&self) -> usize {
        self.edges.len() - 1
    }

    fn range(&self) -> (f64, f64) {
        (self.edges[0], self.edges[self.edges.len() - 1])
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
            .map(|s| voc::shown_unit(s.unit))
            .filter(|u| !u.is_empty() && *u != voc::unit_text(voc::DIMENSIONLESS));
        let mut d = match unit {
            Some(u) => format!("{} ({u})", self.name),
            None => self.name.clone(),
        };
        if self.log {
            d.push_str(", log scale");
        }
        d
    }

    /// Tick positions: every category; on a log axis the 1-2-5 values of each decade
    /// (decades only when that gives more than 10); else round linear steps.
    fn ticks(&self) -> Vec<f64> {
        if !self.categories.is_empty() {
            return (0..self.categories.len()).map(|i| i as f64).collect();
        }
        let (lo, hi) = self.range();
        let eps = 1e-9 * (hi - lo).abs().max(1e-12);
        if self.log {
            let inside = |mantissas: &[f64]| -> Vec<f64> {
                let mut t = Vec::new();
                for d in (lo.floor() as i32)..=(hi.ceil() as i32) {
                    for m in mantissas {
                        let v = m.log10() + d as f64;
                        if v >= lo - eps && v <= hi + eps {
                            t.push(v);
                        }
                    }
                }
                t
            };
            let t = inside(&[1.0, 2.0, 5.0]);
            if t.len() > 10 {
                return inside(&[1.0]);
            }
            if t.len() >= 2 {
                return t;
            }
            let (a, b) = (10f64.powf(lo), 10f64.powf(hi));
            return linear_ticks(a, b)
                .into_iter()
                .filter(|v| *v > 0.0)
                .map(f64::log10)
                .collect();
        }
        if self.degrees {
            return degree_ticks(lo, hi);
        }
        linear_ticks(lo, hi)
    }
}

/// A linear coordinate whose labels sit at given values (round ticks, categories).
struct Ticked {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Ticked {
        Ticked {
            inner: (lo..hi).into(),
            ticks,
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// Multiples of a 1-2-5 step inside [lo, hi], about five of them.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.is_nan() || lo.is_nan() || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ticks_every(lo, hi, step)
}

/// Ticks of an angle in degrees: four to seven multiples of 15, 30, 45, 90 or 180
/// degrees (fractions of a turn) where they fit, else of 10, 5, 20, 2 or 1 degrees, else
/// round decimal steps.
fn degree_ticks(lo: f64, hi: f64) -> Vec<f64> {
    [15.0, 30.0, 45.0, 90.0, 180.0, 10.0, 5.0, 20.0, 2.0, 1.0]
        .iter()
        .map(|&step| ticks_every(lo, hi, step))
        .find(|t| (4..=7).contains(&t.len()))
        .unwrap_or_else(|| linear_ticks(lo, hi))
}

/// The multiples of `step` in [`lo`, `hi`].
fn ticks_every(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if hi.is_nan() || lo.is_nan() || hi <= lo {
        return vec![lo];
    }
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    // 12 significant digits: 0.15, not 0.15000000000000002.
    (first..=last).map(|k| round12(k as f64 * step)).collect()
}

/// `v` rounded to 12 significant digits, so that tick sums print as the round numbers they are.
fn round12(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    format!("{v:.11e}").parse().unwrap_or(v)
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

/// `x` rounded up to one significant digit (0.19 -> 0.2, 0.62 -> 0.7).
fn round_up(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let mag = 10f64.powf(x.log10().floor());
    round12((x / mag - 1e-9).ceil() * mag)
}

/// Metrics bounded by [0, 1]: their maps share one colour scale.
const UNIT_METRICS: &[&str] = &[
    metric::lag_order,
    metric::min_plv,
    metric::kuramoto_r,
    metric::duty_factor,
];

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
fn class_colour(c: Class) -> RGBColor {
    match c {
        Class::Metachronal => RGBColor(44, 160, 44),
        Class::Antiphase => RGBColor(23, 190, 207),
        Class::Synchronous => RGBColor(31, 119, 180),
        Class::Locked => RGBColor(148, 103, 189),
        Class::Unlocked => RGBColor(255, 187, 120),
        Class::Still => RGBColor(140, 86, 75),
        Class::Diverged => RGBColor(214, 39, 40),
        Class::Failed => RGBColor(60, 60, 60),
    }
}

const NO_DATA: RGBColor = RGBColor(215, 215, 215);

/// What a cell shows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quantity {
    /// The most frequent class.
    Class,
    /// The fraction of runs in a class; `marked`: wide intervals struck through.
    Fraction { class: Class, marked: bool },
    /// The mean of a numeric column.
    Metric,
    /// The waves' sense: the mean of +1 (direct) and −1 (retrograde) over the runs
    /// whose wave has one.
    Sense,
}

impl Quantity {
    fn parse(metric: &str, out: &Path) -> Result<Quantity, OutputError> {
        if metric == COL_CLASS {
            return Ok(Quantity::Class);
        }
        if metric == COL_WAVE_SENSE {
            return Ok(Quantity::Sense);
        }
        let (label, marked) = match (
            metric.strip_prefix("fraction:"),
            metric.strip_prefix("class="),
        ) {
            (Some(l), _) => (l, true),
            (_, Some(l)) => (l, false),
            _ => return Ok(Quantity::Metric),
        };
        let class = Class::from_label(label).ok_or_else(|| {
            err(
                out,
                format!("`{metric}`: the classes are {}", Class::labels()),
            )
        })?;
        Ok(Quantity::Fraction { class, marked })
    }
}

/// A tile's corners (lower left, upper right) in plotting coordinates.
type Rect = [(f64, f64); 2];

/// The tiles of a map and the rows each holds.
struct Tiles {
    rects: Vec<Rect>,
    members: Vec<Vec<usize>>,
}

/// The grid's cells, every row in the cell its values fall in.
fn grid_tiles(xa: &MapAxis, ya: &MapAxis, rows: usize) -> Tiles {
    let (nx, ny) = (xa.cells(), ya.cells());
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); nx * ny];
    for row in 0..rows {
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
    Tiles { rects, members }
}

/// Grid step (plotting coordinates) of an axis that refinement split: the spacing of
/// the level-0 values when rows of later levels lie between them; `None` otherwise.
fn refined_step(ax: &MapAxis, level: &[f64]) -> Option<f64> {
    if !ax.categories.is_empty() {
        return None;
    }
    let mut grid: Vec<f64> = ax
        .coord
        .iter()
        .zip(level)
        .filter(|(c, l)| **l == 0.0 && c.is_finite())
        .map(|(c, _)| *c)
        .collect();
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    if grid.len() < 2 {
        return None;
    }
    let step = (grid[grid.len() - 1] - grid[0]) / (grid.len() - 1) as f64;
    let tol = 1e-6 * step;
    let between = ax
        .coord
        .iter()
        .zip(level)
        .any(|(c, l)| *l > 0.0 && grid.iter().all(|g| (g - c).abs() > tol));
    between.then_some(step)
}

/// Tiles of a refined dataset at its native resolution: one per combination,
/// `2^-level` of a grid cell wide along each refined axis and clipped to the axis'
/// range (coarse levels first, so finer tiles are drawn over them); `None` when the
/// dataset is not refined.
fn refined_tiles(ds: &Rows, xa: &MapAxis, ya: &MapAxis) -> Option<Tiles> {
    let (Some(Column::Num(level)), Some(Column::Num(combo))) =
        (ds.column(COL_LEVEL), ds.column(COL_COMBO))
    else {
        return None;
    };
    if !level.iter().any(|&l| l > 0.0) {
        return None;
    }
    let (sx, sy) = (refined_step(xa, level), refined_step(ya, level));
    if sx.is_none() && sy.is_none() {
        return None;
    }
    let mut groups: std::collections::BTreeMap<u64, Vec<usize>> = Default::default();
    for (row, &c) in combo.iter().enumerate() {
        groups.entry(c as u64).or_default().push(row);
    }
    let mut members: Vec<Vec<usize>> = groups.into_values().collect();
    members.sort_by(|a, b| level[a[0]].total_cmp(&level[b[0]]));
    let span = |ax: &MapAxis, step: Option<f64>, row: usize| {
        let c = ax.cell_of_row[row]?;
        Some(match step {
            Some(st) => {
                let h = 0.5 * st / 2f64.powf(level[row]);
                let (lo, hi) = ax.range();
                ((ax.coord[row] - h).max(lo), (ax.coord[row] + h).min(hi))
            }
            None => (ax.edges[c], ax.edges[c + 1]),
        })
    };
    let mut tiles = Tiles {
        rects: Vec::new(),
        members: Vec::new(),
    };
    for m in members {
        if let (Some(x), Some(y)) = (span(xa, sx, m[0]), span(ya, sy, m[0])) {
            tiles.rects.push([(x.0, y.0), (x.1, y.1)]);
            tiles.members.push(m);
        }
    }
    Some(tiles)
}

/// Per tile: the value drawn (a number or a class), whether its interval is wide, and
/// its number of runs.
struct Cells {
    num: Vec<f64>,
    class: Vec<Option<Class>>,
    wide: Vec<bool>,
    runs: Vec<usize>,
}

/// Reduce each tile's rows to what it shows (most frequent class, class fraction with
/// its Wilson interval, or finite mean of a metric), so drawing needs no dataset.
fn aggregate(
    ds: &Rows,
    req: &MapRequest,
    q: Quantity,
    tiles: &Tiles,
    ci_width: f64,
    out: &Path,
) -> Result<Cells, OutputError> {
    let n = tiles.rects.len();
    let mut c = Cells {
        num: vec![f64::NAN; n],
        class: vec![None; n],
        wide: vec![false; n],
        runs: tiles.members.iter().map(Vec::len).collect(),
    };
    let classes = || match ds.column(COL_CLASS) {
        Some(Column::Text(v)) => Ok(v),
        _ => Err(err(out, "the dataset has no `class` column")),
    };
    for (k, rows) in tiles.members.iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        match q {
            Quantity::Class => c.class[k] = most_frequent_class(classes()?, rows),
            Quantity::Fraction { class, marked } => {
                let cls = classes()?;
                let m = rows.iter().filter(|&&r| cls[r] == class.label()).count();
                c.num[k] = m as f64 / rows.len() as f64;
                let (lo, hi) = wilson(m, rows.len(), Z95);
                c.wide[k] = marked && hi - lo > ci_width;
            }
            Quantity::Sense => {
                let Some(Column::Text(v)) = ds.column(COL_WAVE_SENSE) else {
                    return Err(err(out, "the dataset has no `wave_sense` column"));
                };
                c.num[k] = sense_mean(v, rows);
            }
            Quantity::Metric => {
                let Some(Column::Num(v)) = ds.column(&req.metric) else {
                    return Err(err(
                        out,
                        format!(
                            "`{}` is a text column: map `class` or a numeric metric",
                            req.metric
                        ),
                    ));
                };
                c.num[k] = finite_mean(v, rows);
            }
        }
    }
    Ok(c)
}

/// The class most `rows` have (the first of [`Class::ALL`] on a tie), `None` when no
/// row has a known class: a tile's colour in a class map.
fn most_frequent_class(cls: &[String], rows: &[usize]) -> Option<Class> {
    let mut best: Option<(Class, usize)> = None;
    for cl in Class::ALL {
        let m = rows.iter().filter(|&&r| cls[r] == cl.label()).count();
        if m > 0 && best.is_none_or(|(_, b)| m > b) {
            best = Some((cl, m));
        }
    }
    best.map(|(cl, _)| cl)
}

/// Mean over `rows` of +1 for a direct wave and −1 for a retrograde one (NaN when no
/// row has a sense): 1 where every wave runs with the walk, −1 where every one runs
/// against it.
fn sense_mean(v: &[String], rows: &[usize]) -> f64 {
    let signs: Vec<f64> = rows
        .iter()
        .filter_map(|&r| match WaveSense::from_label(&v[r])? {
            WaveSense::Direct => Some(1.0),
            WaveSense::Retrograde => Some(-1.0),
        })
        .collect();
    finite_mean(&signs, &(0..signs.len()).collect::<Vec<_>>())
}

/// Mean of the finite values of `v` at `rows` (NaN when none is): diverged runs leave
/// a tile empty rather than poisoning its mean.
fn finite_mean(v: &[f64], rows: &[usize]) -> f64 {
    let f: Vec<f64> = rows
        .iter()
        .map(|&r| v[r])
        .filter(|x| x.is_finite())
        .collect();
    if f.is_empty() {
        f64::NAN
    } else {
        f.iter().sum::<f64>() / f.len() as f64
    }
}

/// The colour bar's range (see [`MapOptions::range`]).
fn colour_range(q: Quantity, metric: &str, num: &[f64], fixed: Option<(f64, f64)>) -> (f64, f64) {
    if let Some(r) = fixed {
        return r;
    }
    let (lo, hi) = num
        .iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let (lo, hi) = match q {
        Quantity::Fraction { .. } if hi > 0.0 => (0.0, round_up(hi).min(1.0)),
        Quantity::Fraction { .. } => (0.0, 1.0),
        Quantity::Sense => (-1.0, 1.0),
        _ if UNIT_METRICS.contains(&metric) => (0.0, 1.0),
        _ if !lo.is_finite() => (0.0, 1.0),
        _ => (lo, hi),
    };
    if hi <= lo {
        (lo - 1.0, lo + 1.0)
    } else {
        (lo, hi)
    }
}

/// Everything [`render`] draws.
struct Picture<'a> {
    xa: &'a MapAxis,
    ya: &'a MapAxis,
    title: Vec<String>,
    rects: &'a [Rect],
    colours: Vec<RGBColor>,
    wide: &'a [bool],
    /// Colour bar: range and label; or the class legend.
    bar: Option<((f64, f64), String)>,
    legend: Vec<Class>,
    /// Strike-through legend's width, when any cell is struck through.
    strike: Option<f64>,
}

const SIZE: (u32, u32) = (1000, 800);
const MAIN_WIDTH: u32 = 820;

/// What a map shows, in words ("fraction of runs metachronal", "mean_lag (rad)").
fn what(req: &MapRequest, q: Quantity) -> String {
    match q {
        Quantity::Class => "class (most frequent)".to_string(),
        Quantity::Fraction { class, .. } => format!("fraction of runs {}", class.label()),
        Quantity::Sense => format!(
            "wave sense (+1 all {}, -1 all {})",
            WaveSense::Direct.label(),
            WaveSense::Retrograde.label()
        ),
        Quantity::Metric => match voc::metric_named(&req.metric) {
            Some(c) => format!("{} {}", req.metric, c.header_unit()),
            None => req.metric.clone(),
        },
    }
}

/// The colour bar's range in the unit its label names: an angle metric (stored in
/// radians) in degrees, as the axes show angles; the tiles' colours are the same either
/// way, the scale being linear.
fn bar_range(req: &MapRequest, q: Quantity, (lo, hi): (f64, f64)) -> (f64, f64) {
    match (q, voc::metric_named(&req.metric)) {
        (Quantity::Metric, Some(c)) => (voc::shown_value(c.unit, lo), voc::shown_value(c.unit, hi)),
        _ => (lo, hi),
    }
}

/// The title: the sweep's name (when the dataset has one) above what is shown and how
/// many runs each cell holds.
fn title_lines(ds: &Rows, what: &str, runs: (usize, usize)) -> Vec<String> {
    let sweep = ds
        .metadata
        .get(META_SWEEP_NAME)
        .cloned()
        .unwrap_or_default();
    let runs = match runs {
        (0, 0) => String::new(),
        (1, 1) => ", 1 run per cell".to_string(),
        (a, b) if a == b => format!(", {a} runs per cell"),
        (a, b) => format!(", {a}–{b} runs per cell"),
    };
    let line = format!("{what}{runs}");
    if sweep.is_empty() {
        vec![line]
    } else {
        vec![sweep, line]
    }
}

/// Draw the picture on any plotters backend.
fn render<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, p: &Picture) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (main, side) = root.split_horizontally(MAIN_WIDTH);
    let main = draw_title(&main, &p.title)?;
    draw_tiles(&main, p)?;
    draw_key(&side, &p.bar, &p.legend, p.strike)?;
    root.present().map_err(e)
}

/// Beside the map: the colour bar (or, on a class map, the class legend) and, when any
/// cell is struck through, what that means.
fn draw_key<DB: DrawingBackend>(
    side: &DrawingArea<DB, Shift>,
    bar: &Option<((f64, f64), String)>,
    legend: &[Class],
    strike: Option<f64>,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    match bar {
        Some((range, label)) => draw_colour_bar(side, *range, label)?,
        None => draw_class_legend(side, legend)?,
    }
    if let Some(w) = strike {
        draw_strike_legend(side, w)?;
    }
    Ok(())
}

/// A picture the map writer draws on either backend (PNG or SVG) at its own size.
trait Drawing {
    fn size(&self) -> (u32, u32);
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static;
}

impl Drawing for Picture<'_> {
    fn size(&self) -> (u32, u32) {
        SIZE
    }
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String>
    where
        DB::ErrorType: 'static,
    {
        render(root, self)
    }
}

/// The title, each line in the largest size up to 24 px that fits the width; returns
/// the area below it.
fn draw_title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[String],
) -> Result<DrawingArea<DB, Shift>, String>
where
    DB::ErrorType: 'static,
{
    let width = area.dim_in_pixel().0.saturating_sub(20);
    let mut y = 8;
    for line in lines {
        let mut size = 24.0;
        while size > 10.0 {
            let w = area
                .estimate_text_size(line, &("sans-serif", size).into())
                .map(|d| d.0)
                .unwrap_or(u32::MAX);
            if w <= width {
                break;
            }
            size -= 1.0;
        }
        let style = ("sans-serif", size)
            .into_font()
            .into_text_style(area)
            .pos(Pos::new(HPos::Center, VPos::Top));
        area.draw(&Text::new(
            line.clone(),
            (area.dim_in_pixel().0 as i32 / 2, y),
            style,
        ))
        .map_err(|x| x.to_string())?;
        y += size as i32 + 6;
    }
    Ok(area.split_vertically(y + 4).1)
}

/// The map itself: axes with their ticks, one filled rectangle per tile, and a white
/// diagonal across each tile whose interval is too wide to trust its colour.
fn draw_tiles<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Picture) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let ((x0, x1), (y0, y1)) = (p.xa.range(), p.ya.range());
    let y_label_width =
        p.ya.categories
            .iter()
            .map(|c| 9 * c.len() as u32 + 24)
            .max()
            .unwrap_or(0)
            .clamp(80, 260);
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(55)
        .y_label_area_size(y_label_width)
        .build_cartesian_2d(
            Ticked::new(x0, x1, p.xa.ticks()),
            Ticked::new(y0, y1, p.ya.ticks()),
        )
        .map_err(e)?;
    let xf = |v: &f64| p.xa.label(*v);
    let yf = |v: &f64| p.ya.label(*v);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(p.xa.desc())
        .y_desc(p.ya.desc())
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(e)?;
    chart
        .draw_series(
            p.rects
                .iter()
                .zip(&p.colours)
                .map(|(r, c)| Rectangle::new(*r, c.filled())),
        )
        .map_err(e)?;
    // A wide interval: a white diagonal across the cell.
    chart
        .draw_series(
            p.rects
                .iter()
                .zip(p.wide)
                .filter(|(_, w)| **w)
                .map(|(&[a, b], _)| PathElement::new(vec![a, b], WHITE.stroke_width(2))),
        )
        .map_err(e)?;
    Ok(())
}

/// The viridis colour bar over `(lo, hi)` with its label, so colours read as numbers.
fn draw_colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (lo, hi): (f64, f64),
    label: &str,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let mut bar = ChartBuilder::on(area)
        .margin_top(60)
        .margin_bottom(140)
        .margin_right(10)
        .y_label_area_size(95)
        .build_cartesian_2d(0.0..1.0, Ticked::new(lo, hi, linear_ticks(lo, hi)))
        .map_err(e)?;
    let digits = (2.0 - (hi - lo).log10().floor()).clamp(0.0, 12.0) as usize;
    let fmt = |v: &f64| {
        if (hi - lo) < 1e-4 * lo.abs().max(hi.abs()) {
            format!("{v:.6e}")
        } else {
            let s = format!("{v:.digits$}");
            if s.contains('.') {
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                s
            }
        }
    };
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc(label)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 16))
        .y_label_formatter(&fmt)
        .draw()
        .map_err(e)?;
    let steps = 200;
    bar.draw_series((0..steps).map(|s| {
        let a = lo + (hi - lo) * s as f64 / steps as f64;
        let b = lo + (hi - lo) * (s + 1) as f64 / steps as f64;
        Rectangle::new([(0.0, a), (1.0, b)], viridis((a - lo) / (hi - lo)).filled())
    }))
    .map_err(e)?;
    Ok(())
}

/// One swatch per class present in the map, so colours read as classes.
fn draw_class_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    classes: &[Class],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (k, c) in classes.iter().enumerate() {
        let y = 80 + 34 * k as i32;
        area.draw(&Rectangle::new(
            [(10, y), (34, y + 24)],
            class_colour(*c).filled(),
        ))
        .map_err(|x| x.to_string())?;
        area.draw(&Text::new(c.label(), (42, y + 4), ("sans-serif", 16)))
            .map_err(|x| x.to_string())?;
    }
    Ok(())
}

/// What a struck-through cell means, under the colour bar.
fn draw_strike_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    width: f64,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let y = area.dim_in_pixel().1 as i32 - 110;
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    area.draw(&Rectangle::new([(10, y), (34, y + 24)], NO_DATA.filled()))
        .map_err(e)?;
    area.draw(&PathElement::new(
        vec![(10, y + 24), (34, y)],
        WHITE.stroke_width(2),
    ))
    .map_err(e)?;
    for (k, line) in ["95 % interval", &format!("wider than {}", sig(width, 3))]
        .iter()
        .enumerate()
    {
        area.draw(&Text::new(
            line.to_string(),
            (40, y + 18 * k as i32),
            ("sans-serif", 14),
        ))
        .map_err(e)?;
    }
    Ok(())
}

/// Draw `req` from `ds` into `out` (PNG, or SVG for `*.svg`).
pub fn draw_map(ds: &Rows, req: &MapRequest, out: &Path) -> Result<MapSummary, OutputError> {
    draw_map_with(ds, req, &MapOptions::default(), out)
}

/// The rows must form one table: present, and every column as long as the others.
fn check_table(ds: &Rows, out: &Path) -> Result<(), OutputError> {
    if ds.is_empty() {
        return Err(err(out, "the dataset is empty (no part files with rows)"));
    }
    if let Some((name, c)) = ds.columns.iter().find(|(_, c)| c.len() != ds.len()) {
        return Err(err(
            out,
            format!(
                "column `{name}` has {} rows but the table has {}: not every part holds it",
                c.len(),
                ds.len()
            ),
        ));
    }
    Ok(())
}

/// Most cells per axis `--bins` asks for: the picture is 1000 pixels wide, and more
/// cells than pixels draw nothing more (and would cost memory for nothing).
pub const MAX_BINS: usize = 500;

/// Refuse an output the map cannot write, before any work: a name that does not end
/// in `.png` or `.svg` (a `.jpg` would hold a PNG), a path inside a dataset's
/// directory, or a path that is not a new name or a regular file.
pub fn check_out(out: &Path) -> Result<(), OutputError> {
    let ext = out
        .extension()
        .map(|x| x.to_string_lossy().to_ascii_lowercase());
    if !matches!(ext.as_deref(), Some("png" | "svg")) {
        return Err(err(
            out,
            "a map is written as PNG or SVG: give a file name ending in .png or .svg",
        ));
    }
    crate::dataset::refuse_inside_dataset(out, "the map")?;
    crate::output_file::check_target(out)
}

/// Draw the image in memory and write it through [`crate::output_file`], so that a
/// failed drawing or write leaves no file under `out`.
fn write_image(out: &Path, picture: &impl Drawing) -> Result<(), OutputError> {
    check_out(out)?;
    let size = picture.size();
    let svg = out
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("svg"));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::output_file::create_dir_all(dir)?;
    }
    crate::output::plots::ensure_font();
    let bytes = if svg {
        let mut text = String::new();
        picture
            .draw_on(SVGBackend::with_string(&mut text, size).into_drawing_area())
            .map_err(|m| err(out, m))?;
        text.into_bytes()
    } else {
        let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
        picture
            .draw_on(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area())
            .map_err(|m| err(out, m))?;
        crate::output::plots::png_bytes(&rgb, size).map_err(|e| err(out, e.to_string()))?
    };
    crate::output_file::write_bytes(out, &bytes)
}

/// The column `name` of `ds`, or an error listing the columns there are (a misspelt
/// axis or metric is told what it could have been).
fn named_column<'a>(ds: &'a Rows, name: &str, out: &Path) -> Result<&'a Column, OutputError> {
    ds.column(name).ok_or_else(|| {
        let names: Vec<&str> = ds.columns.iter().map(|(n, _)| n.as_str()).collect();
        err(
            out,
            format!(
                "the dataset has no column `{name}`; columns are {}",
                names.join(", ")
            ),
        )
    })
}

/// The tiles to draw: each refined point's own tile when the dataset was refined and
/// no `bins` were asked for, else the grid of the axes' cells.
fn map_tiles(ds: &Rows, xa: &MapAxis, ya: &MapAxis, bins: Option<usize>) -> Tiles {
    match bins {
        Some(_) => None,
        None => refined_tiles(ds, xa, ya),
    }
    .unwrap_or_else(|| grid_tiles(xa, ya, ds.len()))
}

/// Fewest and most runs over the tiles that hold any, `(0, 0)` when none does: the
/// title says how much each colour rests on.
fn runs_per_filled_cell(runs: &[usize]) -> (usize, usize) {
    let filled_runs: Vec<usize> = runs.iter().copied().filter(|&n| n > 0).collect();
    (
        filled_runs.iter().copied().min().unwrap_or(0),
        filled_runs.iter().copied().max().unwrap_or(0),
    )
}

/// Each tile's colour: its class's, or its value on viridis over `range`; grey where
/// the tile has nothing to show.
fn tile_colours(q: Quantity, cells: &Cells, range: (f64, f64)) -> Vec<RGBColor> {
    (0..cells.num.len())
        .map(|k| match q {
            Quantity::Class => cells.class[k].map(class_colour).unwrap_or(NO_DATA),
            _ if cells.num[k].is_finite() => {
                viridis((cells.num[k] - range.0) / (range.1 - range.0))
            }
            _ => NO_DATA,
        })
        .collect()
}

/// How many tiles have something to show (a class, or a finite value).
fn filled_cells(q: Quantity, cells: &Cells) -> usize {
    match q {
        Quantity::Class => cells.class.iter().filter(|c| c.is_some()).count(),
        _ => cells.num.iter().filter(|x| x.is_finite()).count(),
    }
}

/// A map computed from the rows, before any drawing: its axes, tiles and what each
/// tile shows.
struct Computed {
    q: Quantity,
    xa: MapAxis,
    ya: MapAxis,
    tiles: Tiles,
    cells: Cells,
    ci_width: f64,
    range: (f64, f64),
    runs: (usize, usize),
    what: String,
}

/// Compute `req` from `ds` with `opts`; `out` names the picture in every refusal.
fn compute(
    ds: &Rows,
    req: &MapRequest,
    opts: &MapOptions,
    out: &Path,
) -> Result<Computed, OutputError> {
    if let Some(b) = opts.bins.filter(|b| !(1..=MAX_BINS).contains(b)) {
        return Err(err(
            out,
            format!("--bins {b}: allowed is an integer from 1 to {MAX_BINS} cells per axis"),
        ));
    }
    check_table(ds, out)?;
    let q = Quantity::parse(&req.metric, out)?;
    if q == Quantity::Metric {
        named_column(ds, &req.metric, out)?;
    }
    let xa = MapAxis::new(&req.x, named_column(ds, &req.x, out)?, opts.bins);
    let ya = MapAxis::new(&req.y, named_column(ds, &req.y, out)?, opts.bins);
    let tiles = map_tiles(ds, &xa, &ya, opts.bins);
    let ci_width = opts.strike_width();
    let cells = aggregate(ds, req, q, &tiles, ci_width, out)?;
    let range = colour_range(q, &req.metric, &cells.num, opts.range);
    let runs = runs_per_filled_cell(&cells.runs);
    let what = what(req, q);
    Ok(Computed {
        q,
        xa,
        ya,
        tiles,
        cells,
        ci_width,
        range,
        runs,
        what,
    })
}

/// A map's content without the picture (for callers that draw it themselves): one
/// entry per tile in every vector.
#[derive(Debug, Clone)]
pub struct MapData {
    pub x: String,
    pub y: String,
    pub x_log: bool,
    pub y_log: bool,
    /// A text axis' values in cell order (its tiles span cell index ± 0.5); empty for
    /// a numeric axis.
    pub x_categories: Vec<String>,
    pub y_categories: Vec<String>,
    /// Each tile's extent in the parameters' own units (cell indices on a text axis).
    pub x_lo: Vec<f64>,
    pub x_hi: Vec<f64>,
    pub y_lo: Vec<f64>,
    pub y_hi: Vec<f64>,
    /// The tile's number (fraction or mean); NaN on a class map and where no run is.
    pub value: Vec<f64>,
    /// The tile's most frequent class (class maps only).
    pub class: Vec<Option<&'static str>>,
    /// Whether the tile's Wilson interval is wider than the strike-through width.
    pub wide: Vec<bool>,
    pub runs: Vec<usize>,
    /// The colour bar's range.
    pub range: (f64, f64),
    /// The picture's title lines and what its colours show.
    pub title: Vec<String>,
    pub what: String,
}

/// Compute `req` from `ds` with `opts` as [`draw_map_with`] would draw it, drawing
/// nothing. Refusals are [`draw_map_with`]'s, naming "map".
pub fn map_data(ds: &Rows, req: &MapRequest, opts: &MapOptions) -> Result<MapData, OutputError> {
    let c = compute(ds, req, opts, Path::new("map"))?;
    let unit = |ax: &MapAxis, v: f64| {
        let v = if ax.log { 10f64.powf(v) } else { v };
        if ax.degrees {
            v.to_radians()
        } else {
            v
        }
    };
    let corner = |k: usize, i: usize| {
        c.tiles
            .rects
            .iter()
            .map(move |r| r[i])
            .map(move |p| if k == 0 { p.0 } else { p.1 })
    };
    Ok(MapData {
        x: req.x.clone(),
        y: req.y.clone(),
        x_log: c.xa.log,
        y_log: c.ya.log,
        x_categories: c.xa.categories.clone(),
        y_categories: c.ya.categories.clone(),
        x_lo: corner(0, 0).map(|v| unit(&c.xa, v)).collect(),
        x_hi: corner(0, 1).map(|v| unit(&c.xa, v)).collect(),
        y_lo: corner(1, 0).map(|v| unit(&c.ya, v)).collect(),
        y_hi: corner(1, 1).map(|v| unit(&c.ya, v)).collect(),
        value: c.cells.num.clone(),
        class: c.cells.class.iter().map(|k| k.map(|k| k.label())).collect(),
        wide: c.cells.wide.clone(),
        runs: c.cells.runs.clone(),
        range: c.range,
        title: title_lines(ds, &c.what, c.runs),
        what: c.what,
    })
}

/// Draw `req` from `ds` into `out` (PNG, or SVG for `*.svg`) with `opts`.
pub fn draw_map_with(
    ds: &Rows,
    req: &MapRequest,
    opts: &MapOptions,
    out: &Path,
) -> Result<MapSummary, OutputError> {
    check_out(out)?;
    let Computed {
        q,
        xa,
        ya,
        tiles,
        cells,
        ci_width,
        range,
        runs,
        what,
    } = compute(ds, req, opts, out)?;
    let colours = tile_colours(q, &cells, range);
    let title = title_lines(ds, &what, runs);
    let bar_label = (q != Quantity::Class).then_some(what);
    let wide_cells = cells.wide.iter().filter(|&&w| w).count();
    let picture = Picture {
        xa: &xa,
        ya: &ya,
        title,
        rects: &tiles.rects,
        colours,
        wide: &cells.wide,
        bar: bar_label.map(|l| (bar_range(req, q, range), l)),
        legend: Class::ALL
            .iter()
            .copied()
            .filter(|c| cells.class.contains(&Some(*c)))
            .collect(),
        strike: (wide_cells > 0).then_some(ci_width),
    };
    write_image(out, &picture)?;
    Ok(MapSummary {
        rows: ds.len(),
        cells: tiles.rects.len(),
        filled_cells: filled_cells(q, &cells),
        x_log: xa.log,
        y_log: ya.log,
        range,
        wide_cells,
        runs_per_cell: runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_are_round() {
        let ax = MapAxis::new(
            "k_p",
            &Column::Num(vec![20.0, 63.2, 200.0, 632.0, 2000.0]),
            None,
        );
        assert!(ax.log);
        let labels: Vec<String> = ax.ticks().iter().map(|&v| ax.label(v)).collect();
        assert_eq!(labels, ["20", "50", "100", "200", "500", "1000", "2000"]);
    }

    #[test]
    fn axes_span_the_values_range() {
        let ax = MapAxis::new("k_p", &Column::Num(vec![0.0, 0.5, 1.0, 1.5]), None);
        assert!(!ax.log);
        assert_eq!(ax.range(), (0.0, 1.5));
        assert_eq!(ax.cells(), 4);
        let binned = MapAxis::new("k_p", &Column::Num(vec![0.0, 0.5, 1.0, 1.5]), Some(3));
        assert_eq!((binned.range(), binned.cells()), ((0.0, 1.5), 3));
    }

    /// An angle parameter, stored in radians, is drawn in degrees: its title, its ticks
    /// and its cells; what `map_data` hands out stays in the stored unit.
    #[test]
    fn angle_axes_are_drawn_in_degrees() {
        use std::f64::consts::PI;
        let dphi = vec![0.0, PI / 4.0, PI / 2.0, 3.0 * PI / 4.0];
        let ax = MapAxis::new("dphi", &Column::Num(dphi.clone()), None);
        assert_eq!(ax.desc(), "dphi (deg)");
        let (lo, hi) = ax.range();
        assert!(
            (lo - 0.0).abs() < 1e-12 && (hi - 135.0).abs() < 1e-12,
            "{lo} {hi}"
        );
        let labels: Vec<String> = ax.ticks().iter().map(|&v| ax.label(v)).collect();
        assert_eq!(labels, ["0", "30", "60", "90", "120"]);
        assert_eq!(degree_ticks(-24.0, 24.0), [-20.0, -10.0, 0.0, 10.0, 20.0]);
        assert_eq!(degree_ticks(0.0, 180.0).len(), 7);
        // A parameter in another unit keeps it.
        assert_eq!(
            MapAxis::new("omega", &Column::Num(vec![1.0, 2.0]), None).desc(),
            "omega (rad/s)"
        );

        let rows = Rows {
            columns: vec![
                ("dphi".into(), Column::Num(dphi.clone())),
                ("k_p".into(), Column::Num(vec![10.0; 4])),
                ("displacement".into(), Column::Num(vec![1.0, 2.0, 3.0, 4.0])),
            ],
            ..Rows::default()
        };
        let req = MapRequest {
            x: "dphi".into(),
            y: "k_p".into(),
            metric: "displacement".into(),
        };
        // An angle metric's colour bar speaks degrees too, a pure number says so.
        let lag = MapRequest {
            metric: "mean_lag".into(),
            ..req.clone()
        };
        assert_eq!(what(&lag, Quantity::Metric), "mean_lag (deg)");
        assert_eq!(bar_range(&lag, Quantity::Metric, (0.0, PI)), (0.0, 180.0));
        assert_eq!(bar_range(&req, Quantity::Metric, (0.0, PI)), (0.0, PI));
        let cot = MapRequest {
            metric: "cost_of_transport".into(),
            ..req.clone()
        };
        assert_eq!(
            what(&cot, Quantity::Metric),
            "cost_of_transport (dimensionless)"
        );
        let data = map_data(&rows, &req, &MapOptions::default()).unwrap();
        let lo_edge = data.x_lo.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi_edge = data.x_hi.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert!((lo_edge - 0.0).abs() < 1e-12 && (hi_edge - 3.0 * PI / 4.0).abs() < 1e-12);
    }

    #[test]
    fn refined_tiles_stay_inside_the_swept_range() {
        // A 3 x 3 grid on [0, 1] x [1, 100] (log), and one level-1 point at the centre
        // of its lower-left cell: each tile a grid cell (or a quarter of one) around its
        // point, clipped at the edges.
        let mut x = vec![0.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.25];
        let mut y = vec![1.0, 1.0, 1.0, 10.0, 10.0, 10.0, 100.0, 100.0, 100.0];
        y.push(10f64.sqrt());
        let level = [vec![0.0; 9], vec![1.0]].concat();
        let combo: Vec<f64> = (0..10).map(|c| c as f64).collect();
        let ds = Rows {
            columns: vec![
                ("x".into(), Column::Num(std::mem::take(&mut x))),
                ("y".into(), Column::Num(y)),
                (COL_LEVEL.into(), Column::Num(level)),
                (COL_COMBO.into(), Column::Num(combo)),
            ],
            ..Rows::default()
        };
        let col = |n: &str| ds.column(n).unwrap();
        let (xa, ya) = (
            MapAxis::new("x", col("x"), None),
            MapAxis::new("y", col("y"), None),
        );
        assert!(!xa.log && ya.log);
        let t = refined_tiles(&ds, &xa, &ya).expect("a refined dataset");
        assert_eq!(t.rects.len(), 10);
        for [(x0, y0), (x1, y1)] in &t.rects {
            assert!(*x0 >= 0.0 && *x1 <= 1.0 && *y0 >= 0.0 && *y1 <= 2.0);
        }
        let close =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-12 && (a.1 - b.1).abs() < 1e-12;
        // The corner point (0, 1): a quarter cell, clipped on two sides.
        assert!(close(t.rects[0][0], (0.0, 0.0)) && close(t.rects[0][1], (0.25, 0.5)));
        // The level-1 point, drawn last: half a grid step wide, centred on it.
        assert!(close(t.rects[9][0], (0.125, 0.25)) && close(t.rects[9][1], (0.375, 0.75)));
    }

    #[test]
    fn fraction_range_rounds_up_the_largest_fraction() {
        let q = Quantity::Fraction {
            class: Class::Metachronal,
            marked: true,
        };
        assert_eq!(
            colour_range(q, "", &[0.0, 0.19, f64::NAN], None),
            (0.0, 0.2)
        );
        assert_eq!(colour_range(q, "", &[0.62], None), (0.0, 0.7));
        assert_eq!(colour_range(q, "", &[0.62], Some((0.0, 1.0))), (0.0, 1.0));
        assert_eq!(linear_ticks(0.0, 0.2), vec![0.0, 0.05, 0.1, 0.15, 0.2]);
    }
}
