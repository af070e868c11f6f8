//! Every column and metric the program writes or reads by name, declared once: its name,
//! unit, Parquet type, meaning and what `summarize` makes of it. Writers, readers,
//! summaries, maps, the report and replay take the names from here (parameter columns
//! come from the parameter table, [`crate::params`]); `metachron params`-style listings
//! and the docs read the same table. A test holds that no other source file spells one
//! of these names as a string literal.

/// The Parquet type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Float,
    UInt,
    /// A small signed integer (nullable).
    Int,
    Bool,
    Text,
    FloatList,
    BoolList,
}

/// What `summarize` makes of a column over one parameter combination's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// Mean and standard deviation over the runs of each class.
    PerClass,
    /// A fraction over the runs (with a Wilson interval where it is a class).
    Fraction,
    /// Identifies or groups rows; copied once per combination or not summarised.
    Key,
    /// Not summarised (per-run detail).
    None,
}

/// One column of a dataset, a metrics file or a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub unit: &'static str,
    pub kind: Kind,
    /// One line: what the column holds.
    pub meaning: &'static str,
    pub aggregate: Aggregate,
}

/// The scalar metrics of a run, in output column order: `$callback! { name: unit,
/// aggregate, "meaning"; ... }`. The metrics struct ([`crate::metrics::Metrics`]) and
/// [`METRICS`] are both generated from this one list.
macro_rules! for_each_scalar_metric {
    ($callback:ident) => {
        $callback! {
            lag_order: "1", PerClass, "lag order R: |mean of e^{iΔ} over neighbour pairs and window samples| (1: uniform lags)";
            mean_lag: "rad", PerClass, "the mean neighbour lag: the argument of the lag order's mean, in (−π, π]";
            min_plv: "1", None, "smallest phase-locking value over neighbour pairs";
            lag_spread: "rad", None, "max − min over pairs of each pair's mean lag relative to mean_lag";
            kuramoto_r: "1", None, "window mean of the Kuramoto order |(1/N) Σ e^{iφ_j}|";
            mean_frequency: "rad/s", None, "mean over legs of Ω_i, each leg's phase advance over the window per second";
            displacement: "m", PerClass, "Y_b(t_f) − Y_b(0) over the whole run (+y is forward)";
            mean_speed: "m/s", None, "Y_b's change over the window divided by the window's length";
            work: "J", PerClass, "the basal servos' work ∫Σ|M0_i ψ̇_i| dt over the whole run";
            work_axo: "J", PerClass, "the internal couples' work ∫Σ|Q_A,i·q̇_i| dt over the whole run";
            work_coupling: "J", PerClass, "the energy the coupling's dampers dissipate, ∫Σc·γ̇² dt over the whole run (0 without dampers)";
            cost_of_transport: "1", PerClass, "(work + work_axo) / ((m + Nρℓ)·g·|displacement|)";
            duty_factor: "1", None, "fraction of window samples with the tip at or beyond the terrain, mean over legs";
            max_inextensibility: "1", None, "largest |V|/ℓ over legs and every output sample of the run";
            t_run: "s", None, "the horizon run: t_final, or longer when the run was continued";
        }
    };
}
pub(crate) use for_each_scalar_metric;

macro_rules! metric_table {
    ($( $name:ident : $unit:literal, $agg:ident, $meaning:literal; )*) => {
        /// The scalar metrics' names, as constants named like the metrics themselves.
        #[allow(non_upper_case_globals)]
        pub mod metric {
            $( pub const $name: &str = stringify!($name); )*
        }

        /// The scalar metrics, in output column order.
        pub const METRICS: &[Column] = &[ $( Column {
            name: stringify!($name),
            unit: $unit,
            kind: Kind::Float,
            meaning: $meaning,
            aggregate: Aggregate::$agg,
        }, )* ];
    };
}
for_each_scalar_metric!(metric_table);

/// Declares each column's name as a constant and the whole list as [`COLUMNS`].
macro_rules! columns {
    ($( $konst:ident = $name:literal: $kind:ident, $unit:literal, $agg:ident, $meaning:literal; )*) => {
        $( #[doc = $meaning] pub const $konst: &str = $name; )*

        /// Every column that is not a parameter or a scalar metric.
        pub const COLUMNS: &[Column] = &[ $( Column {
            name: $name,
            unit: $unit,
            kind: Kind::$kind,
            meaning: $meaning,
            aggregate: Aggregate::$agg,
        }, )* ];
    };
}

columns! {
    // A run's outcome (every metrics row, every dataset row).
    STATUS = "status": Text, "", None, "ok, diverged, solver_failed, budget_exceeded or invalid_model (left the range of validity, docs/model.md)";
    STATUS_TIME = "status_time": Float, "s", None, "the time the run reached (t_final when ok)";
    CLASS = "class": Text, "", Fraction, "the coordination class over the evaluation window";
    SETTLED = "settled": Bool, "", Fraction, "the same class on both halves of the window (null: unknown)";
    WAVE_DIRECTION = "wave_direction": Int, "1", None, "+1: the wave runs from leg 1 towards leg N (+y), −1: back (null unless metachronal)";
    WAVE_SENSE = "wave_sense": Text, "", Fraction, "direct: the wave runs the way the body moved, retrograde: against it (null unless metachronal and |displacement| ≥ d_min)";
    PAIR_PLV = "pair_plv": FloatList, "1", None, "phase-locking value per neighbour pair";
    PAIR_LAG = "pair_lag": FloatList, "rad", None, "mean lag per neighbour pair";
    LEG_FREQUENCY = "leg_frequency": FloatList, "rad/s", None, "frequency Ω_i per leg";
    N_ACTUATED = "n_actuated": UInt, "1", Key, "how many legs the servos drive";
    BACKEND = "backend": Text, "", Key, "the engine that ran the point: reference, cpu or gpu";
    // A sweep dataset's row.
    POINT_ID = "point_id": UInt, "1", Key, "the point's stable id in its sweep";
    COMBO = "combo": UInt, "1", Key, "the parameter combination (repeats share it)";
    REPEAT = "repeat": UInt, "1", Key, "the repeat's index within its combination";
    LEVEL = "level": UInt, "1", Key, "the refinement level that planned the point";
    SCHEME = "scheme": Text, "", Key, "the integration scheme that ran";
    STEP = "step": Float, "s", None, "the fixed step (NaN on the adaptive reference)";
    ERROR = "error": Text, "", None, "why a run is not ok (empty when ok)";
    // A time series (`simulate --out`): per-leg columns are PREFIX_i, i = 1..N.
    TIME = "t": Float, "s", None, "the sample's time";
    PSI = "psi": Float, "rad", None, "basal angle ψ_i (column psi_i)";
    TIP_X = "tip_x": Float, "m", None, "tip position x of leg i (column tip_x_i)";
    TIP_Y = "tip_y": Float, "m", None, "tip position y of leg i (column tip_y_i)";
    INEXT = "inext": Float, "1", None, "relative length error of leg i (column inext_i)";
    BODY_X = "body_x": Float, "m", None, "the body's position x";
    BODY_Y = "body_y": Float, "m", None, "the body's position y";
    BODY_THETA = "body_theta": Float, "rad", None, "the body's angle";
    WORK_SO_FAR = "work": Float, "J", None, "the servos' work from t = 0 to the sample";
    // A summary (`summarize`): one row per combination.
    N_RUNS = "n_runs": UInt, "1", Key, "runs of the combination";
    CI_WIDTH_MAX = "ci_width_max": Float, "1", None, "widest Wilson 95 % interval of a class fraction";
    FRACTION_SETTLED = "fraction_settled": Float, "1", None, "fraction of the runs with settled = true";
    // A benchmark table (`bench --out`).
    ENGINE = "engine": Text, "", Key, "reference, cpu or gpu";
    ADAPTER = "adapter": Text, "", Key, "the GPU adapter (empty elsewhere)";
    PRECISION = "precision": Text, "", Key, "the GPU kernel's precision (empty elsewhere)";
    THREADS = "threads": UInt, "1", Key, "CPU threads";
    BATCH = "batch": UInt, "1", Key, "robots run together";
    T_FINAL = "t_final": Float, "s", Key, "simulated time per robot";
    WALL_S = "wall_s": Float, "s", None, "wall time of the run";
    ROBOT_S_PER_S = "robot_s_per_s": Float, "robot-s/s", None, "robot-seconds simulated per wall-second";
    SIMD = "simd": Text, "", Key, "the cpu kernel's instruction set and lanes";
    STEPS_PER_ROBOT_S = "steps_per_robot_s": Float, "1/s", None, "integration steps per simulated second of one robot (accepted steps on the adaptive reference), mean over the batch";
}

/// The per-leg column `PREFIX_i` of a time series (legs counted from 1).
pub fn per_leg(prefix: &str, leg: usize) -> String {
    format!("{prefix}_{}", leg + 1)
}

/// A summary's fraction of the runs in `class`, and its interval's bounds.
pub fn fraction(class: &str) -> String {
    format!("fraction_{class}")
}

/// The lower (`lo`) or upper (`hi`) bound of a fraction's Wilson interval.
pub fn fraction_bound(class: &str, bound: &str) -> String {
    format!("fraction_{class}_{bound}")
}

/// A summary's per-class mean of `metric`.
pub fn class_mean(metric: &str, class: &str) -> String {
    format!("{metric}_mean_{class}")
}

/// A summary's per-class standard deviation of `metric`.
pub fn class_std(metric: &str, class: &str) -> String {
    format!("{metric}_std_{class}")
}

/// The metric named `name`, if it is one.
pub fn metric_named(name: &str) -> Option<&'static Column> {
    METRICS.iter().find(|m| m.name == name)
}

/// The metric or other column named `name`, if it is one.
pub fn column_named(name: &str) -> Option<&'static Column> {
    METRICS.iter().chain(COLUMNS).find(|c| c.name == name)
}

/// The unit the files hold angles in.
pub const RADIANS: &str = "rad";
/// The unit printed values and pictures show angles in.
pub const DEGREES: &str = "deg";
/// The unit of a pure number (a ratio, an order parameter, a count).
pub const DIMENSIONLESS: &str = "1";

/// A stored unit in words for a reader: a pure number says it is one
/// (`dimensionless`), any other unit is itself.
pub fn unit_text(unit: &str) -> &str {
    match unit {
        DIMENSIONLESS => "dimensionless",
        u => u,
    }
}

/// The unit a printed value or a picture shows for a quantity stored in `unit`: degrees
/// for an angle, else the stored unit (in words, as [`unit_text`] has it).
pub fn shown_unit(unit: &str) -> &str {
    match unit {
        RADIANS => DEGREES,
        u => unit_text(u),
    }
}

/// `x`, stored in `unit`, in the unit [`shown_unit`] names (radians become degrees).
pub fn shown_value(unit: &str, x: f64) -> f64 {
    match unit {
        RADIANS => x.to_degrees(),
        _ => x,
    }
}

/// How a number and its unit print: `0.1234 m/s`, `90.0 deg`, and a pure number
/// followed by `(dimensionless)`; text columns (no unit) print the number alone.
fn with_unit(number: String, unit: &str) -> String {
    match shown_unit(unit) {
        "" => number,
        u if unit == DIMENSIONLESS => format!("{number} ({u})"),
        u => format!("{number} {u}"),
    }
}

impl Column {
    /// `x`, a value of this column, as printed with its unit (`decimals` places):
    /// angles in degrees, a pure number marked dimensionless.
    pub fn show(&self, x: f64, decimals: usize) -> String {
        let v = shown_value(self.unit, x);
        with_unit(format!("{v:.decimals$}"), self.unit)
    }

    /// As [`Column::show`], the number in scientific notation (`digits` after the point).
    pub fn show_exp(&self, x: f64, digits: usize) -> String {
        let v = shown_value(self.unit, x);
        with_unit(format!("{v:.digits$e}"), self.unit)
    }

    /// The unit for a table's header, `(m/s)`, `(deg)`, `(dimensionless)`; empty for a
    /// column without a unit.
    pub fn header_unit(&self) -> String {
        match shown_unit(self.unit) {
            "" => String::new(),
            u => format!("({u})"),
        }
    }
}

/// `x` of the metric or column `name` as printed with its unit ([`Column::show`]); a
/// name the vocabulary does not declare prints the number alone.
pub fn show(name: &str, x: f64, decimals: usize) -> String {
    match column_named(name) {
        Some(c) => c.show(x, decimals),
        None => format!("{x:.decimals$}"),
    }
}

/// As [`show`], the number in its shortest exact form (`20 s`, `4.5 s`).
pub fn show_shortest(name: &str, x: f64) -> String {
    match column_named(name) {
        Some(c) => with_unit(format!("{}", shown_value(c.unit, x)), c.unit),
        None => format!("{x}"),
    }
}

/// As [`show`], in scientific notation.
pub fn show_exp(name: &str, x: f64, digits: usize) -> String {
    match column_named(name) {
        Some(c) => c.show_exp(x, digits),
        None => format!("{x:.digits$e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_described() {
        let mut seen = std::collections::BTreeSet::new();
        for c in METRICS.iter().chain(COLUMNS) {
            // The time series' cumulative work shares the metric's name on purpose: the
            // two never stand in one table.
            if c.name != WORK_SO_FAR {
                assert!(seen.insert(c.name), "{} declared twice", c.name);
            }
            assert!(!c.meaning.trim().is_empty(), "{} has no meaning", c.name);
        }
        assert_eq!(metric::work, WORK_SO_FAR);
        assert_eq!(metric_named("lag_order").map(|c| c.unit), Some("1"));
        assert_eq!(metric_named("nope"), None);
    }

    #[test]
    fn printed_values_carry_their_unit() {
        // Angles print in degrees: π/2 rad is 90 degrees.
        assert_eq!(
            show(metric::mean_lag, std::f64::consts::FRAC_PI_2, 2),
            "90.00 deg"
        );
        assert_eq!(show(metric::mean_speed, 0.12345, 3), "0.123 m/s");
        assert_eq!(show(metric::work, 2.0, 1), "2.0 J");
        assert_eq!(show(metric::t_run, 20.0, 0), "20 s");
        // The cost of transport is a pure number and says so.
        assert_eq!(
            show(metric::cost_of_transport, 0.5, 4),
            "0.5000 (dimensionless)"
        );
        assert_eq!(
            show_exp(metric::max_inextensibility, 1.5e-7, 2),
            "1.50e-7 (dimensionless)"
        );
        assert_eq!(show(STATUS_TIME, 1.25, 2), "1.25 s");
        assert_eq!(show_shortest(metric::t_run, 4.0), "4 s");
        // A name outside the vocabulary prints the number alone.
        assert_eq!(show("no_such_metric", 1.0, 1), "1.0");
        assert_eq!(
            metric_named(metric::lag_order).map(Column::header_unit),
            Some("(dimensionless)".into())
        );
        assert_eq!(
            column_named(PSI).map(Column::header_unit),
            Some("(deg)".into())
        );
        assert_eq!(
            column_named(CLASS).map(Column::header_unit),
            Some(String::new())
        );
        // Every metric prints with a unit.
        for m in METRICS {
            assert!(!shown_unit(m.unit).is_empty(), "{} has no unit", m.name);
        }
    }
}
