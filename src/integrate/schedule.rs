//! The sample schedule of a fixed-step run, stated once: which step ends which output
//! sample, and where the evaluation window begins. The CPU lane kernel, the GPU host
//! and the metrics all read it from here.

use crate::metrics::{window_midpoint, MetricsSettings};
use crate::sample::SampleTimes;

/// Output samples k = 0..=`n_samples` at `time(k)`; sample k ends after `steps_to(k)`
/// steps of `h`. Every interval has `steps_per_sample` steps except the last, which
/// ends exactly at t_final. Built in O(1) whatever t_final: nothing is enumerated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleSchedule {
    pub h: f64,
    /// The output times (shared with the adaptive reference).
    pub times: SampleTimes,
    /// Output intervals (samples after the initial one).
    pub n_samples: usize,
    pub steps_per_sample: usize,
    pub steps_last: usize,
    /// First sample inside the evaluation window (`n_samples + 1` when none is).
    pub window_first: usize,
    /// First sample of the window's second half (the `settled` check's snapshot is
    /// taken before it is added): the first sample after `window_first` at or after
    /// the window's midpoint.
    pub window_mid: usize,
}

impl SampleSchedule {
    /// The schedule of a run of `t_final` with step `h` (from `DkdSettings::step_for`,
    /// which makes dt_out a whole number of steps).
    pub fn new(metrics: &MetricsSettings, t_final: f64, h: f64) -> SampleSchedule {
        Self::with_window(metrics, t_final, h, metrics.window_start(t_final))
    }

    /// The schedule of a run to `t_run` whose evaluation window starts at `window_start`.
    pub fn with_window(
        metrics: &MetricsSettings,
        t_run: f64,
        h: f64,
        window_start: f64,
    ) -> SampleSchedule {
        let dt_out = metrics.dt_out;
        let times = metrics.sample_times(t_run);
        let n_samples = times.len() - 1;
        let steps_per_sample = (dt_out / h).round().max(1.0) as usize;
        let steps_last = ((t_run - (n_samples - 1) as f64 * dt_out) / h)
            .round()
            .max(1.0) as usize;
        let window_first = metrics.first_sample_from(window_start, t_run);
        let mid = window_midpoint(window_start, t_run - window_start);
        let window_mid = metrics
            .first_sample_from(mid, t_run)
            .max(window_first.saturating_add(1))
            .min(n_samples.saturating_add(1));
        SampleSchedule {
            h,
            times,
            n_samples,
            steps_per_sample,
            steps_last,
            window_first,
            window_mid,
        }
    }

    /// This schedule continued to the horizon `t_run` (`--until-settled`): the same step
    /// and sample grid k·dt_out, the window keeping its length `window_len` and ending at
    /// `t_run`. `None` when the samples so far are not a prefix of the continued grid
    /// (a run whose last interval was shorter than dt_out) or `t_run` adds no sample.
    pub fn continued(
        &self,
        metrics: &MetricsSettings,
        t_run: f64,
        window_len: f64,
    ) -> Option<SampleSchedule> {
        let next = Self::with_window(metrics, t_run, self.h, t_run - window_len);
        let prefix = next.n_samples > self.n_samples
            && next.steps_per_sample == self.steps_per_sample
            && next.steps_to(self.n_samples) == self.total_steps();
        prefix.then_some(next)
    }

    /// Time of sample k.
    pub fn time(&self, k: usize) -> f64 {
        self.times.at(k)
    }

    /// Steps from sample k − 1 to sample k (k ≥ 1).
    pub fn steps_in(&self, k: usize) -> usize {
        if k == self.n_samples {
            self.steps_last
        } else {
            self.steps_per_sample
        }
    }

    /// Steps from the start to sample k.
    pub fn steps_to(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            // Saturating: an unchecked horizon of 1e18 s must not wrap around.
            (k - 1)
                .saturating_mul(self.steps_per_sample)
                .saturating_add(self.steps_in(k))
        }
    }

    /// Steps of the whole run.
    pub fn total_steps(&self) -> usize {
        self.steps_to(self.n_samples)
    }

    /// The last sample reached after `steps` steps.
    pub fn sample_at(&self, steps: usize) -> usize {
        if steps >= self.total_steps() {
            self.n_samples
        } else {
            steps / self.steps_per_sample
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_interval_ends_at_t_final() {
        let m = MetricsSettings {
            dt_out: 0.01,
            ..MetricsSettings::default()
        };
        // 0.105 s: 11 intervals, the last one half as long.
        let s = SampleSchedule::new(&m, 0.105, 0.001);
        assert_eq!(s.n_samples, 11);
        assert_eq!(s.steps_per_sample, 10);
        assert_eq!(s.steps_last, 5);
        assert_eq!(s.total_steps(), 105);
        assert!((s.time(11) - 0.105).abs() < 1e-15);
        assert_eq!(s.sample_at(104), 10);
        assert_eq!(s.sample_at(105), 11);
        // Window: second half, t ≥ 0.0525 → first sample 6 (t = 0.06); its second
        // half from t ≥ 0.07875 → sample 8.
        assert_eq!(s.window_first, 6);
        assert_eq!(s.window_mid, 8);
        // A short last interval cannot be continued on the same grid ...
        assert_eq!(s.continued(&m, 0.21, 0.0525), None);
    }

    /// A horizon of 1e18 s (1e20 samples, more than usize holds) is built at once and
    /// saturates instead of wrapping: an engine given it runs until its budget ends it.
    #[test]
    fn an_absurd_horizon_is_built_in_constant_time() {
        let m = MetricsSettings::default();
        let s = SampleSchedule::new(&m, 1e18, 2.5e-4);
        assert_eq!(s.n_samples, usize::MAX - 1);
        assert_eq!(s.steps_per_sample, 40);
        assert_eq!(s.total_steps(), usize::MAX);
        assert!(s.window_first > 0 && s.window_first <= s.n_samples + 1);
        assert!(s.window_mid >= s.window_first);
    }

    #[test]
    fn continued_schedule_extends_the_grid() {
        let m = MetricsSettings {
            dt_out: 0.01,
            ..MetricsSettings::default()
        };
        let s = SampleSchedule::new(&m, 0.1, 0.001);
        let c = s.continued(&m, 0.2, 0.05).expect("0.1 s is on the grid");
        assert_eq!((c.n_samples, c.total_steps()), (20, 200));
        assert_eq!(c.steps_to(10), s.total_steps());
        // Window 0.15..0.2 s: samples 15..=20, second half from 0.175 s → sample 18.
        assert_eq!((c.window_first, c.window_mid), (15, 18));
        assert_eq!(s.continued(&m, 0.1, 0.05), None);
    }
}
