//! Coordination and locomotion metrics (docs/model.md, "Metrics and classes"), accumulated
//! online from output samples so that every backend (and the GPU kernel) can
//! compute the same numbers without storing a trajectory.
//!
//! Phases use unit vectors: e^{iφ_j} = e^{−iψ_j} = (t_x, −t_y) with t the unit basal
//! tangent, so lags and the Kuramoto phasor need no transcendental function.

use std::f64::consts::{FRAC_PI_4, FRAC_PI_8, PI};

/// 7π/8: the default `lag_max`, above which neighbours half a cycle apart alternate.
const SEVEN_PI_8: f64 = 7.0 * FRAC_PI_8;

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;
use crate::params::Params;
use crate::sample::{Sample, Status};

/// Classification thresholds (docs/model.md defaults); written into output metadata.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// A pair is locked when PLV ≥ this ...
    pub plv_min: f64,
    /// ... and its phase slip |Ω_i − Ω_{i+1}|·T over the window is ≤ this (rad).
    pub slip_max: f64,
    /// Lags are uniform when the lag order R ≥ this.
    pub order_min: f64,
    /// Metachronal when |mean lag| ≥ this (rad), synchronous below.
    pub lag_min: f64,
    /// Metachronal when |mean lag| ≤ this (rad), antiphase above: neighbours half a
    /// cycle apart alternate, no wave travels.
    pub lag_max: f64,
    /// A point is still when every leg frequency |Ω_i| < this (rad/s).
    pub omega_min: f64,
    /// A run is settled when its class is the same on both halves of the window and
    /// its lag order changed by less than this between them.
    pub settle_order_change: f64,
    /// A metachronal wave has a sense (direct or retrograde) only when the body moved
    /// at least this far over the run (m).
    pub d_min: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            plv_min: 0.8,
            slip_max: FRAC_PI_4,
            order_min: 0.8,
            lag_min: FRAC_PI_8,
            lag_max: SEVEN_PI_8,
            omega_min: 0.01,
            settle_order_change: 0.1,
            d_min: 0.1,
        }
    }
}

/// Sampling and evaluation-window settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSettings {
    /// Output interval (s).
    pub dt_out: f64,
    /// Start of the evaluation window (s); `None` = second half of the run.
    pub window_start: Option<f64>,
    #[serde(flatten)]
    pub thresholds: Thresholds,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            dt_out: 0.01,
            window_start: None,
            thresholds: Thresholds::default(),
        }
    }
}

impl MetricsSettings {
    pub fn window_start(&self, t_final: f64) -> f64 {
        self.window_start.unwrap_or(0.5 * t_final)
    }

    /// Length of the evaluation window of a run of `t_final` (s); a continued run keeps it.
    pub fn window_len(&self, t_final: f64) -> f64 {
        t_final - self.window_start(t_final)
    }

    /// Number of output intervals in a run (samples are k·dt_out, k = 0..=count).
    pub fn sample_count(&self, t_final: f64) -> usize {
        (t_final / self.dt_out - 1e-9).ceil().max(1.0) as usize
    }

    /// Time of sample k (the last one is exactly t_final).
    pub fn sample_time(&self, k: usize, t_final: f64) -> f64 {
        self.sample_times(t_final).at(k)
    }

    /// The whole output schedule of a run (computed on demand, never stored).
    pub fn sample_times(&self, t_final: f64) -> crate::sample::SampleTimes {
        crate::sample::SampleTimes::new(self.dt_out, t_final, self.sample_count(t_final))
    }

    /// First sample inside the evaluation window (`sample_count + 1` when none is).
    /// Computed, not searched: a run may have 1e10 samples.
    pub fn window_first_sample(&self, t_final: f64) -> usize {
        self.first_sample_from(self.window_start(t_final), t_final)
    }

    /// First sample of a run of `t_run` at or after `start` by the accumulator's test
    /// ([`in_window`]); `sample_count + 1` when none is.
    pub fn first_sample_from(&self, start: f64, t_run: f64) -> usize {
        let n = self.sample_count(t_run);
        let at = |k| self.sample_time(k, t_run);
        let guess = ((start - 1e-9) / self.dt_out).ceil().max(0.0) as usize;
        // Settle the rounding of the guess against the same test the accumulator uses.
        // The guess is off by at most one while sample times are resolved (which
        // `cost::MAX_SAMPLES` ensures for a checked run); the search is bounded either
        // way, so even an unresolved schedule is O(1).
        let end = n.saturating_add(1);
        let mut k = guess.saturating_sub(1).min(end);
        let last = k.saturating_add(3).min(end);
        while k < last && !in_window(at(k), start) {
            k += 1;
        }
        k
    }

    pub fn validate(&self, t_final: f64) -> Result<(), SettingsError> {
        let bad = |field: &str, value: f64, allowed: &str| {
            Err(SettingsError::OutOfRange {
                field: field.into(),
                value,
                allowed: allowed.into(),
            })
        };
        if !(self.dt_out.is_finite() && self.dt_out > 0.0 && self.dt_out <= t_final) {
            return bad("dt_out", self.dt_out, "0 < dt_out <= t_final");
        }
        let w = self.window_start(t_final);
        if !(w.is_finite() && w >= 0.0 && w < t_final) {
            return bad("window_start", w, "0 <= window_start < t_final");
        }
        let t = &self.thresholds;
        for (f, v) in [
            ("plv_min", t.plv_min),
            ("order_min", t.order_min),
            ("settle_order_change", t.settle_order_change),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(f, v, "[0, 1]");
            }
        }
        for (f, v) in [("slip_max", t.slip_max), ("lag_min", t.lag_min)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, v, "a finite angle >= 0 (rad)");
            }
        }
        // A mean lag lies in (−π, π]: a lag_max of π or more leaves no antiphase point.
        if !(t.lag_max.is_finite() && t.lag_max >= t.lag_min && t.lag_max <= PI) {
            return bad("lag_max", t.lag_max, "an angle in [lag_min, π] (rad)");
        }
        if !(t.d_min.is_finite() && t.d_min >= 0.0) {
            return bad("d_min", t.d_min, "a finite distance >= 0 (m)");
        }
        if !(t.omega_min.is_finite() && t.omega_min >= 0.0) {
            return bad("omega_min", t.omega_min, "a finite rate >= 0 (rad/s)");
        }
        Ok(())
    }
}

/// Coordination class of a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Metachronal,
    /// Every pair locked, uniform lags, |mean lag| > `lag_max`: an alternation.
    Antiphase,
    Synchronous,
    Locked,
    Unlocked,
    /// No leg turns (every |Ω_i| < Ω_min): constant phases are no coordination.
    Still,
    Diverged,
    /// The solver gave up before the end (not a property of the model).
    Failed,
}

impl Class {
    /// Every class, in output order (one list for summaries, maps and legends).
    pub const ALL: [Class; 8] = [
        Class::Metachronal,
        Class::Antiphase,
        Class::Synchronous,
        Class::Locked,
        Class::Unlocked,
        Class::Still,
        Class::Diverged,
        Class::Failed,
    ];

    pub fn label(&self) -> &'static str {
        match self {
            Class::Metachronal => "metachronal",
            Class::Antiphase => "antiphase",
            Class::Synchronous => "synchronous",
            Class::Locked => "locked",
            Class::Unlocked => "unlocked",
            Class::Still => "still",
            Class::Diverged => "diverged",
            Class::Failed => "failed",
        }
    }

    /// The class written `label` in datasets and sweep files.
    pub fn from_label(label: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.label() == label)
    }

    /// Every label, comma-separated: what an error lists where a class name is asked for.
    pub fn labels() -> String {
        Class::ALL.map(|c| c.label()).join(", ")
    }
}

/// Which way a metachronal wave runs relative to the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaveSense {
    /// The wave runs the way the body moves.
    Direct,
    /// The wave runs against the body's motion.
    Retrograde,
}

impl WaveSense {
    /// Both senses, in output order.
    pub const ALL: [WaveSense; 2] = [WaveSense::Direct, WaveSense::Retrograde];

    pub fn label(&self) -> &'static str {
        match self {
            WaveSense::Direct => "direct",
            WaveSense::Retrograde => "retrograde",
        }
    }

    /// The sense written `label` in datasets.
    pub fn from_label(label: &str) -> Option<WaveSense> {
        WaveSense::ALL.into_iter().find(|c| c.label() == label)
    }
}

/// A metachronal wave's direction along the body and its sense relative to the walk,
/// from the class, the mean lag and the displacement (docs/model.md): +1 when the mean
/// lag is positive (leg i leads leg i+1, the wave runs towards leg N, +y), −1 when it is
/// negative; direct when the lag's sign is the displacement's, retrograde otherwise, no
/// sense when |displacement| < `d_min`. Neither for any other class.
pub fn wave_of(
    class: Class,
    mean_lag: f64,
    displacement: f64,
    d_min: f64,
) -> (Option<i8>, Option<WaveSense>) {
    if class != Class::Metachronal || !mean_lag.is_finite() || mean_lag == 0.0 {
        return (None, None);
    }
    let direction: i8 = if mean_lag > 0.0 { 1 } else { -1 };
    let sense = (displacement.is_finite() && displacement.abs() >= d_min).then_some(
        if (mean_lag > 0.0) == (displacement > 0.0) {
            WaveSense::Direct
        } else {
            WaveSense::Retrograde
        },
    );
    (Some(direction), sense)
}

/// Declares [`Metrics`] from the scalar metrics' one list
/// ([`crate::vocabulary::for_each_scalar_metric`]): the struct fields, their output
/// columns with units ([`METRIC_COLUMNS`]) and their values in that order.
macro_rules! metrics {
    ($( $name:ident : $unit:literal, $agg:ident, $meaning:literal; )*) => {
        /// Every metric of one run.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Metrics {
            $( #[doc = $meaning] pub $name: f64, )*
            pub status: Status,
            pub class: Class,
            /// Same class on both halves of the window and a lag order that moved less
            /// than `settle_order_change`; `None` for a run that is not ok, a half
            /// without samples, or a [`Tally`] without its midpoint snapshot.
            pub settled: Option<bool>,
            /// +1 / −1: the wave runs from leg 1 towards leg N / back; `None` unless
            /// metachronal ([`wave_of`]).
            pub wave_direction: Option<i8>,
            /// Direct or retrograde; `None` unless metachronal, or when the body moved
            /// less than `d_min`.
            pub wave_sense: Option<WaveSense>,
            /// Per neighbour pair: PLV and mean lag.
            pub pair_plv: Vec<f64>,
            pub pair_lag: Vec<f64>,
            /// Per leg: Ω_i.
            pub leg_frequency: Vec<f64>,
        }

        /// Names and units of the scalar metrics, in output column order.
        pub const METRIC_COLUMNS: &[(&str, &str)] = &[ $( (stringify!($name), $unit), )* ];

        impl Metrics {
            /// Scalar metrics in [`METRIC_COLUMNS`] order.
            pub fn scalars(&self) -> Vec<f64> {
                vec![ $( self.$name, )* ]
            }

            /// The scalar metrics by name, to overwrite in place.
            pub fn scalars_mut(&mut self) -> Vec<(&'static str, &mut f64)> {
                vec![ $( (stringify!($name), &mut self.$name), )* ]
            }
        }
    };
}

crate::vocabulary::for_each_scalar_metric!(metrics);

/// The last sample a metric needs: its time, Y_b and the two works up to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LastSample {
    pub t: f64,
    pub y: f64,
    pub work: f64,
    pub work_axo: f64,
    pub work_coupling: f64,
}

/// Midpoint of the evaluation window starting at `window_start`, `window_len` long: the
/// window's second half starts at the first sample at or after it.
pub fn window_midpoint(window_start: f64, window_len: f64) -> f64 {
    window_start + 0.5 * window_len
}

/// Whether a sample at `t` belongs to a window starting at `start` (with a tolerance,
/// so that a window starting on a sample time includes it).
pub fn in_window(t: f64, start: f64) -> bool {
    t + 1e-9 >= start
}

/// Wrap an angle into (−π, π].
pub fn wrap(x: f64) -> f64 {
    let y = x.rem_euclid(2.0 * PI);
    if y > PI {
        y - 2.0 * PI
    } else {
        y
    }
}

/// The running sums of a [`MetricsAccumulator`], as a backend that accumulates them
/// itself reports them. φ may carry any constant offset per leg (only differences count).
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub first_y: Option<f64>,
    pub last: Option<LastSample>,
    pub max_inext: f64,
    pub phi: Vec<f64>,
    pub win_count: usize,
    /// (t, Y_b) of the first window sample.
    pub win_start: Option<(f64, f64)>,
    pub phi_start: Vec<f64>,
    pub pair_sum: Vec<[f64; 2]>,
    pub kuramoto_sum: f64,
    pub contact_count: Vec<usize>,
    /// The horizon of these sums (s): t_final, or a continued horizon whose window
    /// keeps its length and ends there.
    pub t_run: f64,
    /// φ and the pair sums at the first sample of the window's second half (`None`
    /// when the run did not reach it): what the `settled` check needs.
    pub mid: Option<TallyMid>,
}

/// A backend's snapshot of the window sums at the first sample of its second half
/// (taken before that sample is added).
#[derive(Debug, Clone, PartialEq)]
pub struct TallyMid {
    /// Time of that sample (s).
    pub t: f64,
    /// Window samples before it.
    pub count: usize,
    pub phi: Vec<f64>,
    pub pair_sum: Vec<[f64; 2]>,
}

/// The window's running sums at its midpoint (taken before the first sample of the
/// second half is added): the second half's sums are the totals minus these, so the
/// settled check costs one snapshot, not a second set of sums.
#[derive(Debug, Clone, PartialEq)]
struct MidSnapshot {
    /// (t, Y_b) of the first sample of the second half.
    at: (f64, f64),
    phi: Vec<f64>,
    count: usize,
    pair_sum: Vec<[f64; 2]>,
}

/// Streaming accumulator: feed samples in time order, then [`MetricsAccumulator::finish`].
///
/// The evaluation window `[window_start, t_run]` is split at its midpoint into two
/// consecutive halves (by default the third and the last quarter of the run), each
/// classified on its own for the `settled` flag. [`MetricsAccumulator::continue_to`]
/// moves the window to the end of a continuation segment, so a run continued from its
/// kept state is evaluated online, segment by segment.
#[derive(Debug, Clone)]
pub struct MetricsAccumulator {
    n: usize,
    window_start: f64,
    /// Length of the window (kept when a run is continued).
    window_len: f64,
    t_run: f64,
    thresholds: Thresholds,
    x_t: f64,
    /// The terrain: a tip is in contact where its depth is ≥ 0 (docs/model.md (T3)).
    terrain: crate::model::terrain::Profile,
    weight: f64,
    // whole run
    first_y: Option<f64>,
    last: Option<LastSample>,
    max_inext: f64,
    tangent_prev: Vec<[f64; 2]>,
    phi: Vec<f64>,
    // window
    win_count: usize,
    win_start: Option<(f64, f64)>, // (t, Y_b)
    phi_start: Vec<f64>,
    pair_sum: Vec<[f64; 2]>,
    kuramoto_sum: f64,
    contact_count: Vec<usize>,
    /// `None` before the midpoint; never set when rebuilt from a [`Tally`] without it.
    mid: Option<MidSnapshot>,
    /// Whether this accumulator saw the midpoint itself (false: built from a tally).
    halves_known: bool,
}

impl MetricsAccumulator {
    pub fn new(p: &Params, s: &MetricsSettings) -> Self {
        let n = p.n_legs;
        let window_start = s.window_start(p.t_final);
        MetricsAccumulator {
            n,
            window_start,
            window_len: s.window_len(p.t_final),
            t_run: p.t_final,
            thresholds: s.thresholds,
            x_t: p.x_t,
            terrain: crate::model::terrain::Profile::new(p),
            weight: (p.body_mass + n as f64 * p.rho * p.leg_length) * p.g,
            first_y: None,
            last: None,
            max_inext: 0.0,
            tangent_prev: Vec::new(),
            phi: vec![0.0; n],
            win_count: 0,
            win_start: None,
            phi_start: vec![0.0; n],
            pair_sum: vec![[0.0; 2]; n - 1],
            kuramoto_sum: 0.0,
            contact_count: vec![0; n],
            mid: None,
            halves_known: true,
        }
    }

    fn window_mid(&self) -> f64 {
        window_midpoint(self.window_start, self.window_len)
    }

    pub fn push(&mut self, s: &Sample) {
        let n = self.n;
        // Unwrapped φ = −ψ (a sample step is assumed to turn a leg by less than π): the
        // turn since the previous sample is the angle between the two unit tangents, so
        // the GPU twin needs no angle of its own (`angle_of` in shaders/math.wgsl).
        if self.tangent_prev.is_empty() {
            self.tangent_prev = s.tangent.clone();
            for i in 0..n {
                self.phi[i] = -s.psi[i];
            }
            self.first_y = Some(s.body[1]);
        } else {
            for i in 0..n {
                let (p, t) = (self.tangent_prev[i], s.tangent[i]);
                let cross = p[0] * t[1] - p[1] * t[0];
                let dot = p[0] * t[0] + p[1] * t[1];
                self.phi[i] -= cross.atan2(dot);
                self.tangent_prev[i] = t;
            }
        }
        self.max_inext = s.inext.iter().fold(self.max_inext, |m, &x| m.max(x));
        self.last = Some(LastSample {
            t: s.t,
            y: s.body[1],
            work: s.work,
            work_axo: s.work_axo,
            work_coupling: s.work_coupling,
        });
        if !in_window(s.t, self.window_start) {
            return;
        }
        if self.win_start.is_none() {
            self.win_start = Some((s.t, s.body[1]));
            self.phi_start.copy_from_slice(&self.phi);
        }
        if self.mid.is_none() && self.win_count > 0 && s.t + 1e-9 >= self.window_mid() {
            self.mid = Some(MidSnapshot {
                at: (s.t, s.body[1]),
                phi: self.phi.clone(),
                count: self.win_count,
                pair_sum: self.pair_sum.clone(),
            });
        }
        self.win_count += 1;
        // e^{iφ_j} = (t_x, −t_y)
        let z: Vec<[f64; 2]> = s.tangent.iter().map(|t| [t[0], -t[1]]).collect();
        for i in 0..n - 1 {
            // e^{iΔ_i} = e^{iφ_i} · conj(e^{iφ_{i+1}})
            let (a, b) = (z[i], z[i + 1]);
            self.pair_sum[i][0] += a[0] * b[0] + a[1] * b[1];
            self.pair_sum[i][1] += a[1] * b[0] - a[0] * b[1];
        }
        let (sx, sy) = z.iter().fold((0.0, 0.0), |(x, y), w| (x + w[0], y + w[1]));
        self.kuramoto_sum += (sx * sx + sy * sy).sqrt() / n as f64;
        for i in 0..n {
            let [x, y] = s.tip[i];
            if self.terrain.frame(x, y, self.x_t).depth >= 0.0 {
                self.contact_count[i] += 1;
            }
        }
    }

    /// The horizon the sums are evaluated at (s).
    pub fn t_run(&self) -> f64 {
        self.t_run
    }

    /// Length of the evaluation window (s), kept by [`MetricsAccumulator::continue_to`].
    pub fn window_len(&self) -> f64 {
        self.window_len
    }

    /// Continue the run to the horizon `t_run` (s) from where the samples stopped: the
    /// whole-run sums (displacement, work, φ, inextensibility) carry on, the window
    /// moves to `[t_run − window length, t_run]` and its sums restart. The new window
    /// must lie after the last sample, so that every sum stays online.
    pub fn continue_to(&mut self, t_run: f64) -> Result<(), SettingsError> {
        let t_last = self.last.map(|l| l.t).unwrap_or(0.0);
        let start = t_run - self.window_len;
        if !(t_run.is_finite() && start + 1e-9 >= t_last) {
            return Err(SettingsError::OutOfRange {
                field: "until_settled".into(),
                value: t_run,
                allowed: format!(
                    "a horizon whose window ({} s long) starts at or after the last sample, t >= {}",
                    self.window_len,
                    t_last + self.window_len
                ),
            });
        }
        self.t_run = t_run;
        self.window_start = start;
        self.win_count = 0;
        self.win_start = None;
        self.phi_start.iter_mut().for_each(|x| *x = 0.0);
        self.pair_sum.iter_mut().for_each(|x| *x = [0.0; 2]);
        self.kuramoto_sum = 0.0;
        self.contact_count.iter_mut().for_each(|x| *x = 0);
        self.mid = None;
        Ok(())
    }

    /// Rebuild an accumulator from running sums kept elsewhere (the GPU's resident
    /// state), so that one [`MetricsAccumulator::finish`] serves every backend. Its
    /// window is the one of the tally's horizon; without a midpoint snapshot the run
    /// reports `settled` as unknown.
    pub fn from_tally(p: &Params, s: &MetricsSettings, tally: Tally) -> Self {
        let mut acc = MetricsAccumulator::new(p, s);
        acc.t_run = tally.t_run;
        acc.window_start = tally.t_run - acc.window_len;
        acc.halves_known = tally.mid.is_some();
        acc.mid = tally.mid.map(|m| MidSnapshot {
            at: (m.t, f64::NAN),
            phi: m.phi,
            count: m.count,
            pair_sum: m.pair_sum,
        });
        acc.first_y = tally.first_y;
        acc.last = tally.last;
        acc.max_inext = tally.max_inext;
        acc.phi = tally.phi;
        acc.win_count = tally.win_count;
        acc.win_start = tally.win_start;
        acc.phi_start = tally.phi_start;
        acc.pair_sum = tally.pair_sum;
        acc.kuramoto_sum = tally.kuramoto_sum;
        acc.contact_count = tally.contact_count;
        acc
    }

    /// Class of the run (or of one half of its window) from its window sums.
    fn classify(&self, status: Status, w: &WindowSums) -> Class {
        let th = self.thresholds;
        let n = self.n;
        let all_locked = (0..n - 1).all(|i| {
            w.pair_plv(i) >= th.plv_min
                && ((w.freq[i] - w.freq[i + 1]) * w.span).abs() <= th.slip_max
        });
        let still = w.count > 0 && w.freq.iter().all(|f| f.abs() < th.omega_min);
        match status {
            Status::Diverged { .. } => Class::Diverged,
            Status::SolverFailed { .. }
            | Status::BudgetExceeded { .. }
            | Status::InvalidModel { .. } => Class::Failed,
            // A robot whose legs do not turn has PLV 1 and zero lag: not synchronous.
            Status::Ok if still => Class::Still,
            Status::Ok if !all_locked || w.count == 0 => Class::Unlocked,
            Status::Ok if w.lag_order() < th.order_min => Class::Locked,
            Status::Ok if w.mean_lag().abs() > th.lag_max => Class::Antiphase,
            Status::Ok if w.mean_lag().abs() >= th.lag_min => Class::Metachronal,
            Status::Ok => Class::Synchronous,
        }
    }

    /// The settled flag: both halves have samples and agree (class, lag order).
    fn settled(&self, status: Status) -> Option<bool> {
        if !status.is_ok() || !self.halves_known {
            return None;
        }
        let mid = self.mid.as_ref()?;
        let (t0, _) = self.win_start?;
        let t_end = self.last?.t;
        let first = WindowSums::new(
            mid.count,
            &mid.pair_sum,
            &self.phi_start,
            &mid.phi,
            mid.at.0 - t0,
        );
        let rest: Vec<[f64; 2]> = self
            .pair_sum
            .iter()
            .zip(&mid.pair_sum)
            .map(|(a, b)| [a[0] - b[0], a[1] - b[1]])
            .collect();
        let second = WindowSums::new(
            self.win_count - mid.count,
            &rest,
            &mid.phi,
            &self.phi,
            t_end - mid.at.0,
        );
        if first.count == 0 || second.count == 0 {
            return None;
        }
        let change = (first.lag_order() - second.lag_order()).abs();
        Some(
            self.classify(status, &first) == self.classify(status, &second)
                && change < self.thresholds.settle_order_change,
        )
    }

    pub fn finish(&self, status: Status) -> Metrics {
        let n = self.n;
        let nan = f64::NAN;
        let cnt = self.win_count as f64;
        let LastSample {
            t: t_end,
            y: y_end,
            work,
            work_axo,
            work_coupling,
        } = self.last.unwrap_or(LastSample {
            t: nan,
            y: nan,
            work: nan,
            work_axo: nan,
            work_coupling: nan,
        });
        let (t0, y0) = self.win_start.unwrap_or((nan, nan));
        // Decided here, from the running maximum every engine keeps.
        let status = match status {
            Status::Ok
                if self.max_inext > crate::sample::MAX_INEXTENSIBILITY
                    || self.max_inext.is_nan() =>
            {
                Status::InvalidModel {
                    time: t_end,
                    max_inext: self.max_inext,
                }
            }
            s => s,
        };
        let span = t_end - t0;
        let w = WindowSums::new(
            self.win_count,
            &self.pair_sum,
            &self.phi_start,
            &self.phi,
            span,
        );
        let pair_plv: Vec<f64> = (0..n - 1).map(|i| w.pair_plv(i)).collect();
        let pair_lag: Vec<f64> = self.pair_sum.iter().map(|p| p[1].atan2(p[0])).collect();
        let lag_order = w.lag_order();
        let mean_lag = w.mean_lag();
        let rel: Vec<f64> = pair_lag.iter().map(|l| wrap(l - mean_lag)).collect();
        let lag_spread = rel.iter().cloned().fold(f64::MIN, f64::max)
            - rel.iter().cloned().fold(f64::MAX, f64::min);
        let min_plv = pair_plv.iter().cloned().fold(f64::INFINITY, f64::min);
        let displacement = y_end - self.first_y.unwrap_or(nan);
        let duty_factor = self
            .contact_count
            .iter()
            .map(|&c| c as f64 / cnt)
            .sum::<f64>()
            / n as f64;
        let class = self.classify(status, &w);
        let (wave_direction, wave_sense) =
            wave_of(class, mean_lag, displacement, self.thresholds.d_min);
        // A window without samples (a run that failed early) has no window metrics.
        let windowed = |x: f64| if self.win_count == 0 { nan } else { x };
        Metrics {
            lag_order: windowed(lag_order),
            mean_lag: windowed(mean_lag),
            min_plv: windowed(min_plv),
            lag_spread: windowed(lag_spread),
            kuramoto_r: self.kuramoto_sum / cnt,
            mean_frequency: w.freq.iter().sum::<f64>() / n as f64,
            displacement,
            mean_speed: (y_end - y0) / span,
            work,
            work_axo,
            work_coupling,
            cost_of_transport: (work + work_axo) / (self.weight * displacement.abs()),
            duty_factor,
            max_inextensibility: self.max_inext,
            t_run: self.t_run,
            status,
            class,
            settled: self.settled(status),
            wave_direction,
            wave_sense,
            pair_lag: pair_lag.into_iter().map(windowed).collect(),
            pair_plv,
            leg_frequency: w.freq,
        }
    }
}

/// The sums of one stretch of the window, with what the classes read off them.
struct WindowSums<'a> {
    count: usize,
    pair_sum: &'a [[f64; 2]],
    /// Per leg Ω_i over the stretch.
    freq: Vec<f64>,
    span: f64,
}

impl<'a> WindowSums<'a> {
    fn new(
        count: usize,
        pair_sum: &'a [[f64; 2]],
        phi_from: &[f64],
        phi_to: &[f64],
        span: f64,
    ) -> Self {
        let freq = phi_from
            .iter()
            .zip(phi_to)
            .map(|(a, b)| (b - a) / span)
            .collect();
        WindowSums {
            count,
            pair_sum,
            freq,
            span,
        }
    }

    fn pair_plv(&self, i: usize) -> f64 {
        self.pair_sum[i][0].hypot(self.pair_sum[i][1]) / self.count as f64
    }

    fn total(&self) -> [f64; 2] {
        self.pair_sum
            .iter()
            .fold([0.0, 0.0], |a, p| [a[0] + p[0], a[1] + p[1]])
    }

    fn lag_order(&self) -> f64 {
        let t = self.total();
        t[0].hypot(t[1]) / (self.count * self.pair_sum.len()) as f64
    }

    fn mean_lag(&self) -> f64 {
        let t = self.total();
        t[1].atan2(t[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sweep files and map commands name classes by label: each label reads back as its
    /// class, and an error's list names all eight.
    #[test]
    fn every_class_label_reads_back() {
        for c in Class::ALL {
            assert_eq!(Class::from_label(c.label()), Some(c));
        }
        assert_eq!(Class::from_label("Metachronal"), None);
        assert_eq!(
            Class::labels(),
            "metachronal, antiphase, synchronous, locked, unlocked, still, diverged, failed"
        );
    }

    fn params(t_final: f64) -> Params {
        Params {
            n_legs: 4,
            actuated: vec![true; 4],
            t_final,
            ..Params::default()
        }
    }

    /// A hand-built sample: basal angles ψ_i, body at Y = 0.3 t, work 2 t, tips in
    /// contact before 7.5 s.
    fn sample(t: f64, psi: Vec<f64>) -> Sample {
        let n = psi.len();
        Sample {
            t,
            tangent: psi.iter().map(|a| [a.cos(), a.sin()]).collect(),
            psi,
            tip: vec![[if t < 7.5 { 2.0 } else { 0.0 }, 0.0]; n],
            inext: vec![1e-7; n],
            body: [0.0, 0.3 * t, 0.0],
            work: 2.0 * t,
            work_axo: 0.0,
            work_coupling: 0.0,
            q: Vec::new(),
            v: Vec::new(),
        }
    }

    /// Feed samples k·dt_out for k in `ks` with ψ_i = `psi(i, t)` (wrapped).
    fn feed(
        acc: &mut MetricsAccumulator,
        s: &MetricsSettings,
        t_final: f64,
        ks: std::ops::RangeInclusive<usize>,
        psi: &impl Fn(usize, f64) -> f64,
    ) {
        for k in ks {
            let t = s.sample_time(k, t_final);
            acc.push(&sample(t, (0..4).map(|i| wrap(psi(i, t))).collect()));
        }
    }

    /// A 10 s run of four legs with ψ_i = `psi(i, t)`.
    fn run(psi: impl Fn(usize, f64) -> f64) -> Metrics {
        let p = params(10.0);
        let s = MetricsSettings::default();
        let mut acc = MetricsAccumulator::new(&p, &s);
        feed(&mut acc, &s, p.t_final, 0..=s.sample_count(p.t_final), &psi);
        acc.finish(Status::Ok)
    }

    /// A wave whose legs stretch once, by `stretch` (|V|/ℓ), at one sample mid-run.
    fn stretched_once(stretch: f64) -> Metrics {
        let p = params(10.0);
        let s = MetricsSettings::default();
        let mut acc = MetricsAccumulator::new(&p, &s);
        let psi = |i: usize, t: f64| wrap(-0.5 * t + i as f64 * FRAC_PI_4 * 2.0);
        for k in 0..=s.sample_count(p.t_final) {
            let t = s.sample_time(k, p.t_final);
            let mut x = sample(t, (0..4).map(|i| psi(i, t)).collect());
            if k == 300 {
                x.inext[2] = stretch;
            }
            acc.push(&x);
        }
        acc.finish(Status::Ok)
    }

    #[test]
    fn a_run_past_the_inextensibility_limit_is_invalid_never_ok() {
        let limit = crate::sample::MAX_INEXTENSIBILITY;
        let inside = stretched_once(limit * 0.99);
        assert_eq!(inside.status, Status::Ok);
        assert_eq!(inside.class, Class::Metachronal);
        let outside = stretched_once(limit * 1.01);
        assert_eq!(outside.status.label(), "invalid_model");
        assert_eq!(outside.max_inextensibility, limit * 1.01);
        assert_eq!(outside.class, Class::Failed);
        assert_eq!(outside.status.time(), 10.0);
        assert!(
            outside.status.describe().contains("1.010e-2"),
            "{}",
            outside.status.describe()
        );
        // A failure stays what it was: validity only judges runs that finished.
        let p = params(10.0);
        let acc = MetricsAccumulator::new(&p, &MetricsSettings::default());
        assert_eq!(
            acc.finish(Status::Diverged { time: 1.0 }).status,
            Status::Diverged { time: 1.0 }
        );
    }

    /// Synthetic travelling wave ψ_i = −ω t + i·lag (the paper's ψ_i(0) = (i−1)Δφ), so Δ = +lag.
    fn wave(lag: f64, omega_of: impl Fn(usize) -> f64) -> Metrics {
        run(|i, t| -omega_of(i) * t + i as f64 * lag)
    }

    #[test]
    fn steady_wave_is_metachronal_with_exact_metrics() {
        let m = wave(FRAC_PI_4 * 2.0, |_| 0.5);
        assert!((m.lag_order - 1.0).abs() < 1e-12, "{m:?}");
        assert!((m.mean_lag - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        assert!((m.mean_frequency - 0.5).abs() < 1e-9);
        assert!((m.mean_speed - 0.3).abs() < 1e-9);
        assert!((m.displacement - 3.0).abs() < 1e-9);
        assert!((m.work - 20.0).abs() < 1e-12);
        // window 5..10 s, contact until 7.5 s: 250 of 501 samples.
        assert!((m.duty_factor - 250.0 / 501.0).abs() < 1e-12);
        assert!(m.lag_spread.abs() < 1e-12);
        assert_eq!(m.class, Class::Metachronal);
    }

    #[test]
    fn in_phase_is_synchronous_and_detuned_is_unlocked() {
        let m = wave(0.0, |_| 0.5);
        assert_eq!(m.class, Class::Synchronous);
        assert!((m.kuramoto_r - 1.0).abs() < 1e-12);
        let m = wave(0.3, |i| 0.5 + 0.4 * i as f64);
        assert_eq!(m.class, Class::Unlocked);
        assert!((m.leg_frequency[3] - 1.7).abs() < 1e-9);
    }

    #[test]
    fn legs_at_rest_are_still_not_synchronous() {
        // No servo, legs at rest up to round-off: ψ drifts by ~1e-10 rad/s, phases
        // equal, so PLV = R = 1 and Δ̄ = 0; without the `still` class this read as
        // synchronous.
        let m = run(|_, t| 0.3 + 1e-10 * t);
        assert!(
            (m.lag_order - 1.0).abs() < 1e-12 && m.min_plv > 0.999,
            "{m:?}"
        );
        assert_eq!(m.class, Class::Still);
        // Still takes precedence over every coordination class, also with a lag ...
        let m = run(|i, t| 0.5 * i as f64 + 0.005 * t);
        assert_eq!(m.class, Class::Still);
        // ... but one leg turning at 0.02 rad/s (above Ω_min = 0.01) is not still.
        let m = run(|i, t| if i == 2 { -0.02 * t } else { 0.0 });
        assert_ne!(m.class, Class::Still);
        // The threshold is a setting.
        let p = params(10.0);
        let mut s = MetricsSettings::default();
        s.thresholds.omega_min = 0.001;
        let mut acc = MetricsAccumulator::new(&p, &s);
        feed(&mut acc, &s, 10.0, 0..=1000, &|_, t| 0.005 * t);
        assert_eq!(acc.finish(Status::Ok).class, Class::Synchronous);
        // A diverged run stays diverged even when its legs stood still.
        let mut acc = MetricsAccumulator::new(&p, &MetricsSettings::default());
        feed(&mut acc, &s, 10.0, 0..=1000, &|_, _| 0.0);
        let d = acc.finish(Status::Diverged { time: 9.0 });
        assert_eq!(d.class, Class::Diverged);
        assert_eq!(d.settled, None);
    }

    /// Classes at the lag thresholds: |Δ̄| ≤ lag_max is a wave, above it an alternation,
    /// on either side of zero; `lag_max` is a setting.
    #[test]
    fn antiphase_begins_above_lag_max() {
        let lag_max = 7.0 * FRAC_PI_8;
        for sign in [1.0, -1.0] {
            assert_eq!(
                wave(sign * (lag_max - 1e-3), |_| 0.5).class,
                Class::Metachronal
            );
            assert_eq!(
                wave(sign * (lag_max + 1e-3), |_| 0.5).class,
                Class::Antiphase
            );
            assert_eq!(
                wave(sign * (lag_min_default() + 1e-3), |_| 0.5).class,
                Class::Metachronal
            );
            assert_eq!(
                wave(sign * (lag_min_default() - 1e-3), |_| 0.5).class,
                Class::Synchronous
            );
        }
        let m = wave(PI, |_| 0.5);
        assert_eq!(m.class, Class::Antiphase);
        assert_eq!((m.wave_direction, m.wave_sense), (None, None));
        // With lag_max = π every locked uniform lag of at least lag_min is a wave.
        let p = params(10.0);
        let mut s = MetricsSettings::default();
        s.thresholds.lag_max = PI;
        let mut acc = MetricsAccumulator::new(&p, &s);
        feed(&mut acc, &s, 10.0, 0..=1000, &|i, t| {
            -0.5 * t + 3.0 * i as f64
        });
        assert_eq!(acc.finish(Status::Ok).class, Class::Metachronal);
        // A lag_max outside [lag_min, π] is refused, naming it.
        s.thresholds.lag_max = 3.5;
        let e = s.validate(10.0).unwrap_err().to_string();
        assert!(e.contains("lag_max"), "{e}");
        s.thresholds.lag_max = 0.1;
        assert!(s.validate(10.0).is_err());
    }

    fn lag_min_default() -> f64 {
        Thresholds::default().lag_min
    }

    /// The body moves towards +y (Y = 0.3 t): a positive lag runs with it (direct), a
    /// negative one against it (retrograde); below d_min of displacement no sense.
    #[test]
    fn wave_direction_and_sense_follow_the_lag_and_the_walk() {
        let m = wave(std::f64::consts::FRAC_PI_2, |_| 0.5);
        assert_eq!(m.wave_direction, Some(1));
        assert_eq!(m.wave_sense, Some(WaveSense::Direct));
        let m = wave(-std::f64::consts::FRAC_PI_2, |_| 0.5);
        assert_eq!(m.class, Class::Metachronal);
        assert_eq!(m.wave_direction, Some(-1));
        assert_eq!(m.wave_sense, Some(WaveSense::Retrograde));
        // Walking backwards flips the sense, not the direction.
        assert_eq!(
            wave_of(Class::Metachronal, 1.0, -0.5, 0.1),
            (Some(1), Some(WaveSense::Retrograde))
        );
        assert_eq!(
            wave_of(Class::Metachronal, -1.0, -0.5, 0.1),
            (Some(-1), Some(WaveSense::Direct))
        );
        // |displacement| at d_min has a sense, below it none.
        assert_eq!(
            wave_of(Class::Metachronal, 1.0, 0.1, 0.1).1,
            Some(WaveSense::Direct)
        );
        assert_eq!(
            wave_of(Class::Metachronal, 1.0, 0.0999, 0.1),
            (Some(1), None)
        );
        assert_eq!(
            wave_of(Class::Metachronal, 1.0, f64::NAN, 0.1),
            (Some(1), None)
        );
        for c in Class::ALL.into_iter().filter(|&c| c != Class::Metachronal) {
            assert_eq!(wave_of(c, 1.0, 3.0, 0.1), (None, None), "{c:?}");
        }
        // d_min is a setting: 3 m of displacement is below a d_min of 3.5 m.
        let p = params(10.0);
        let mut s = MetricsSettings::default();
        s.thresholds.d_min = 3.5;
        let mut acc = MetricsAccumulator::new(&p, &s);
        feed(&mut acc, &s, 10.0, 0..=1000, &|i, t| {
            -0.5 * t + 1.5 * i as f64
        });
        let m = acc.finish(Status::Ok);
        assert_eq!((m.wave_direction, m.wave_sense), (Some(1), None));
        for label in ["direct", "retrograde"] {
            assert_eq!(WaveSense::from_label(label).map(|w| w.label()), Some(label));
        }
    }

    #[test]
    fn steady_wave_is_settled() {
        let m = wave(std::f64::consts::FRAC_PI_2, |_| 0.5);
        assert_eq!(m.settled, Some(true));
        assert_eq!(m.t_run, 10.0);
    }

    #[test]
    fn wave_forming_in_the_last_quarter_is_not_settled() {
        // Quarter 3 (5..7.5 s): legs detuned, drifting apart (unlocked); quarter 4
        // (7.5..10 s): a steady 90° wave. The whole window reads unlocked; its halves
        // differ, so the run is not settled.
        let lag = std::f64::consts::FRAC_PI_2;
        let m = run(|i, t| {
            let tt = t.min(7.5);
            -0.5 * t + i as f64 * lag - 0.4 * i as f64 * tt
        });
        assert_eq!(m.class, Class::Unlocked);
        assert_eq!(m.settled, Some(false));
        // Same class on both halves (metachronal) but a lag order that moved by more
        // than the threshold: at 7.5 s every other leg steps back by 0.6 rad (a slip
        // below π/4), so the lags alternate 90° ± 0.6 and R drops from 1 to
        // |2e^{0.6i} + e^{−0.6i}|/3 = 0.847: not settled.
        let m = run(|i, t| {
            let spread = if t < 7.5 { 0.0 } else { 0.6 };
            -0.5 * t + i as f64 * lag + if i % 2 == 1 { spread } else { 0.0 }
        });
        assert_eq!(m.class, Class::Metachronal);
        assert_eq!(m.settled, Some(false));
        // The same step of 0.6 rad before the window leaves a steady (settled) wave.
        let m = run(|i, t| {
            let spread = if t < 2.0 { 0.0 } else { 0.6 };
            -0.5 * t + i as f64 * lag + if i % 2 == 1 { spread } else { 0.0 }
        });
        assert_eq!(m.settled, Some(true));
    }

    #[test]
    fn continued_run_is_evaluated_on_its_last_segment() {
        // 10 s run, continued to 20 s: the window moves to 15..20 s. Until 10 s the
        // legs drift apart, from 10 s on they keep a steady 90° wave.
        let lag = std::f64::consts::FRAC_PI_2;
        let psi = |i: usize, t: f64| -0.5 * t + i as f64 * lag - 0.4 * i as f64 * t.min(10.0);
        let p = params(10.0);
        let s = MetricsSettings::default();
        let mut acc = MetricsAccumulator::new(&p, &s);
        feed(&mut acc, &s, 10.0, 0..=1000, &psi);
        let first = acc.finish(Status::Ok);
        assert_eq!(first.class, Class::Unlocked);
        // The new window may not reach back before the last sample.
        assert!(acc.clone().continue_to(14.0).is_err());
        acc.continue_to(20.0).unwrap();
        feed(&mut acc, &s, 20.0, 1001..=2000, &psi);
        let m = acc.finish(Status::Ok);
        assert_eq!(m.t_run, 20.0);
        assert_eq!(m.class, Class::Metachronal);
        assert_eq!(m.settled, Some(true));
        // Whole-run metrics span 0..20 s, window metrics 15..20 s.
        assert!((m.displacement - 6.0).abs() < 1e-9);
        assert!((m.work - 40.0).abs() < 1e-9);
        assert!((m.mean_speed - 0.3).abs() < 1e-9);
        assert!((m.mean_frequency - 0.5).abs() < 1e-9, "{m:?}");
        assert!((m.lag_order - 1.0).abs() < 1e-12);
    }
}
