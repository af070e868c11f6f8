//! Coordination and locomotion metrics (MODEL.md, "Coordination"), accumulated
//! online from output samples so that every backend (and the GPU kernel) can
//! compute the same numbers without storing a trajectory.
//!
//! Phases use unit vectors: e^{iφ_j} = e^{−iψ_j} = (t_x, −t_y) with t the unit basal
//! tangent, so lags and the Kuramoto phasor need no transcendental function.

use std::f64::consts::{FRAC_PI_4, FRAC_PI_8, PI};

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;
use crate::params::Params;
use crate::sample::{Sample, Status};

/// Classification thresholds (MODEL.md defaults); written into output metadata.
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
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            plv_min: 0.8,
            slip_max: FRAC_PI_4,
            order_min: 0.8,
            lag_min: FRAC_PI_8,
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
        let n = self.sample_count(t_final);
        let (start, at) = (self.window_start(t_final), |k| self.sample_time(k, t_final));
        let guess = ((start - 1e-9) / self.dt_out).ceil().max(0.0) as usize;
        // Settle the rounding of the guess against the same test the accumulator uses.
        let mut k = guess.saturating_sub(1).min(n + 1);
        while k <= n && !in_window(at(k), start) {
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
        for (f, v) in [("plv_min", t.plv_min), ("order_min", t.order_min)] {
            if !(0.0..=1.0).contains(&v) {
                return bad(f, v, "[0, 1]");
            }
        }
        for (f, v) in [("slip_max", t.slip_max), ("lag_min", t.lag_min)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, v, "a finite angle >= 0 (rad)");
            }
        }
        Ok(())
    }
}

/// Coordination class of a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Metachronal,
    Synchronous,
    Locked,
    Unlocked,
    Diverged,
    /// The solver gave up before the end (not a property of the model).
    Failed,
}

impl Class {
    pub fn label(&self) -> &'static str {
        match self {
            Class::Metachronal => "metachronal",
            Class::Synchronous => "synchronous",
            Class::Locked => "locked",
            Class::Unlocked => "unlocked",
            Class::Diverged => "diverged",
            Class::Failed => "failed",
        }
    }
}

/// Every metric of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    pub lag_order: f64,
    pub mean_lag: f64,
    pub min_plv: f64,
    pub lag_spread: f64,
    pub kuramoto_r: f64,
    pub mean_frequency: f64,
    pub displacement: f64,
    pub mean_speed: f64,
    pub work: f64,
    pub cost_of_transport: f64,
    pub duty_factor: f64,
    pub max_inextensibility: f64,
    pub status: Status,
    pub class: Class,
    /// Per neighbour pair: PLV and mean lag.
    pub pair_plv: Vec<f64>,
    pub pair_lag: Vec<f64>,
    /// Per leg: Ω_i.
    pub leg_frequency: Vec<f64>,
}

/// Names and units of the scalar metrics, in output column order.
pub const METRIC_COLUMNS: &[(&str, &str)] = &[
    ("lag_order", "1"),
    ("mean_lag", "rad"),
    ("min_plv", "1"),
    ("lag_spread", "rad"),
    ("kuramoto_r", "1"),
    ("mean_frequency", "rad/s"),
    ("displacement", "m"),
    ("mean_speed", "m/s"),
    ("work", "J"),
    ("cost_of_transport", "1"),
    ("duty_factor", "1"),
    ("max_inextensibility", "1"),
];

impl Metrics {
    /// Scalar metrics in [`METRIC_COLUMNS`] order.
    pub fn scalars(&self) -> [f64; 12] {
        [
            self.lag_order,
            self.mean_lag,
            self.min_plv,
            self.lag_spread,
            self.kuramoto_r,
            self.mean_frequency,
            self.displacement,
            self.mean_speed,
            self.work,
            self.cost_of_transport,
            self.duty_factor,
            self.max_inextensibility,
        ]
    }
}

/// Wrap an angle into (−π, π].
/// Whether a sample at `t` belongs to a window starting at `start` (with a tolerance,
/// so that a window starting on a sample time includes it).
pub fn in_window(t: f64, start: f64) -> bool {
    t + 1e-9 >= start
}

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
    /// (t, Y_b, work) of the last sample.
    pub last: Option<(f64, f64, f64)>,
    pub max_inext: f64,
    pub phi: Vec<f64>,
    pub win_count: usize,
    /// (t, Y_b) of the first window sample.
    pub win_start: Option<(f64, f64)>,
    pub phi_start: Vec<f64>,
    pub pair_sum: Vec<[f64; 2]>,
    pub kuramoto_sum: f64,
    pub contact_count: Vec<usize>,
}

/// Streaming accumulator: feed samples in time order, then [`MetricsAccumulator::finish`].
#[derive(Debug, Clone)]
pub struct MetricsAccumulator {
    n: usize,
    window_start: f64,
    thresholds: Thresholds,
    x_t: f64,
    weight: f64,
    // whole run
    first_y: Option<f64>,
    last: Option<(f64, f64, f64)>, // (t, Y_b, work)
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
}

impl MetricsAccumulator {
    pub fn new(p: &Params, s: &MetricsSettings) -> Self {
        let n = p.n_legs;
        MetricsAccumulator {
            n,
            window_start: s.window_start(p.t_final),
            thresholds: s.thresholds,
            x_t: p.x_t,
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
        }
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
        self.last = Some((s.t, s.body[1], s.work));
        if !in_window(s.t, self.window_start) {
            return;
        }
        if self.win_start.is_none() {
            self.win_start = Some((s.t, s.body[1]));
            self.phi_start.copy_from_slice(&self.phi);
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
            if s.tip[i][0] >= self.x_t {
                self.contact_count[i] += 1;
            }
        }
    }

    /// Rebuild an accumulator from running sums kept elsewhere (the GPU's resident
    /// state), so that one [`MetricsAccumulator::finish`] serves every backend.
    pub fn from_tally(p: &Params, s: &MetricsSettings, tally: Tally) -> Self {
        let mut acc = MetricsAccumulator::new(p, s);
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

    pub fn finish(&self, status: Status) -> Metrics {
        let n = self.n;
        let nan = f64::NAN;
        let cnt = self.win_count as f64;
        let (t_end, y_end, work) = self.last.unwrap_or((nan, nan, nan));
        let (t0, y0) = self.win_start.unwrap_or((nan, nan));
        let span = t_end - t0;
        let leg_frequency: Vec<f64> = (0..n)
            .map(|i| (self.phi[i] - self.phi_start[i]) / span)
            .collect();
        let pair_plv: Vec<f64> = self
            .pair_sum
            .iter()
            .map(|p| p[0].hypot(p[1]) / cnt)
            .collect();
        let pair_lag: Vec<f64> = self.pair_sum.iter().map(|p| p[1].atan2(p[0])).collect();
        let tot = self
            .pair_sum
            .iter()
            .fold([0.0, 0.0], |a, p| [a[0] + p[0], a[1] + p[1]]);
        let lag_order = tot[0].hypot(tot[1]) / (cnt * (n - 1) as f64);
        let mean_lag = tot[1].atan2(tot[0]);
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
        let th = self.thresholds;
        let all_locked = (0..n - 1).all(|i| {
            pair_plv[i] >= th.plv_min
                && ((leg_frequency[i] - leg_frequency[i + 1]) * span).abs() <= th.slip_max
        });
        let class = match status {
            Status::Diverged { .. } => Class::Diverged,
            Status::SolverFailed { .. } | Status::BudgetExceeded { .. } => Class::Failed,
            Status::Ok if !all_locked || self.win_count == 0 => Class::Unlocked,
            Status::Ok if lag_order < th.order_min => Class::Locked,
            Status::Ok if mean_lag.abs() >= th.lag_min => Class::Metachronal,
            Status::Ok => Class::Synchronous,
        };
        // A window without samples (a run that failed early) has no window metrics.
        let windowed = |x: f64| if self.win_count == 0 { nan } else { x };
        Metrics {
            lag_order: windowed(lag_order),
            mean_lag: windowed(mean_lag),
            min_plv: windowed(min_plv),
            lag_spread: windowed(lag_spread),
            kuramoto_r: self.kuramoto_sum / cnt,
            mean_frequency: leg_frequency.iter().sum::<f64>() / n as f64,
            displacement,
            mean_speed: (y_end - y0) / span,
            work,
            cost_of_transport: work / (self.weight * displacement.abs()),
            duty_factor,
            max_inextensibility: self.max_inext,
            status,
            class,
            pair_lag: pair_lag.into_iter().map(windowed).collect(),
            pair_plv,
            leg_frequency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic travelling wave ψ_i = −ω t + i·lag (the paper's ψ_i(0) = (i−1)Δφ), so Δ = +lag.
    fn wave(lag: f64, omega_of: impl Fn(usize) -> f64) -> Metrics {
        let p = Params {
            n_legs: 4,
            actuated: vec![true; 4],
            t_final: 10.0,
            ..Params::default()
        };
        let s = MetricsSettings::default();
        let mut acc = MetricsAccumulator::new(&p, &s);
        for k in 0..=s.sample_count(p.t_final) {
            let t = s.sample_time(k, p.t_final);
            let psi: Vec<f64> = (0..4)
                .map(|i| wrap(-omega_of(i) * t + i as f64 * lag))
                .collect();
            acc.push(&Sample {
                t,
                tangent: psi.iter().map(|a| [a.cos(), a.sin()]).collect(),
                psi,
                tip: vec![[if t < 7.5 { 2.0 } else { 0.0 }, 0.0]; 4],
                inext: vec![1e-7; 4],
                body: [0.0, 0.3 * t, 0.0],
                work: 2.0 * t,
                q: Vec::new(),
                v: Vec::new(),
            });
        }
        acc.finish(Status::Ok)
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
}
