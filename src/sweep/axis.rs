//! A sweep's axes: a parameter and its values each, how they were produced, how many
//! combinations they make, and the one formula of evenly spaced values (linspace and
//! logspace axes, and the refinement lattice between their values).

/// How an axis' values were produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisKind {
    Values,
    Linspace,
    Logspace,
    Random,
    Lhs,
}

impl AxisKind {
    pub fn key(&self) -> &'static str {
        match self {
            AxisKind::Values => "values",
            AxisKind::Linspace => "linspace",
            AxisKind::Logspace => "logspace",
            AxisKind::Random => "random",
            AxisKind::Lhs => "lhs",
        }
    }
}

/// One axis: a parameter and its values (as TOML values, applied like `[base]` keys).
#[derive(Debug, Clone)]
pub struct Axis {
    pub param: String,
    pub kind: AxisKind,
    /// Whether the values are spread on a log scale (logspace, or log random/lhs).
    pub log: bool,
    pub group: Option<String>,
    pub values: Vec<toml::Value>,
}

/// Most points a sweep may plan.
pub const MAX_POINTS: usize = 10_000_000;

/// A sweep's axes, how they combine and how often each combination runs: what the
/// `[refine]` table is checked against and its lattice is built on.
#[derive(Debug, Clone, Copy)]
pub struct SweepAxes<'a> {
    /// The sweep file's name, for messages.
    pub file: &'a str,
    pub axes: &'a [Axis],
    /// Axis indices per group: zipped within a group, product across groups
    /// (first group outermost).
    pub groups: &'a [Vec<usize>],
    pub repeats: usize,
}

impl SweepAxes<'_> {
    /// Number of parameter combinations (points / repeats).
    pub fn combinations(&self) -> usize {
        self.groups
            .iter()
            .map(|g| self.axes[g[0]].values.len())
            .product()
    }

    /// Total number of points (combinations × repeats).
    pub fn point_count(&self) -> usize {
        self.combinations() * self.repeats
    }
}

/// Value `k` of `num` evenly spaced values from `start` to `stop` (log-spaced when
/// `log`), endpoints exact and rounded to 12 significant digits: the one formula of
/// linspace/logspace axes and of the refinement lattice between their values.
pub fn spaced_value(start: f64, stop: f64, log: bool, k: usize, num: usize) -> f64 {
    if num == 1 || k == 0 {
        start
    } else if k == num - 1 {
        stop
    } else {
        let u = k as f64 / (num - 1) as f64;
        round_sig(if log {
            start * (stop / start).powf(u)
        } else {
            start + (stop - start) * u
        })
    }
}

/// Round to 12 significant digits: grid values read as written (500, not 499.99999999999983).
fn round_sig(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{x:.11e}").parse().unwrap_or(x)
}
