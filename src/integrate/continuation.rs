//! `--until-settled MAX_T` (`until_settled = MAX_T` in a sweep file): a run whose class
//! is not settled at its horizon continues from its kept state, in steps of the initial
//! horizon t_final, until it is settled or the next step would pass MAX_T. One statement
//! of the rule for every engine that continues runs (the CPU lane driver, the GPU host).

use crate::error::SettingsError;
use crate::integrate::schedule::SampleSchedule;
use crate::metrics::{MetricsAccumulator, MetricsSettings};
use crate::sample::Status;

/// Why runs on the reference backend do not continue: its adaptive solver keeps no state
/// to continue from (a rerun from zero would pay the whole horizon again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "not supported on backend reference: the adaptive solver cannot continue a run from \
     its kept state (docs/atlas.md); use --backend cpu or gpu"
)]
pub struct ReferenceCannotContinue;

/// Check `max_t` against the run it continues: at least one continuation step must fit,
/// and t_final must be a whole number of output intervals (a continued run's samples
/// stay on the grid k·dt_out, so the last interval of a segment cannot be short).
pub fn validate(max_t: f64, t_final: f64, dt_out: f64) -> Result<(), SettingsError> {
    if !(max_t.is_finite() && max_t >= 2.0 * t_final * (1.0 - 1e-12)) {
        return Err(SettingsError::OutOfRange {
            field: "until_settled".into(),
            value: max_t,
            allowed: format!(
                "a horizon >= 2 t_final = {} s (runs continue in steps of t_final)",
                2.0 * t_final
            ),
        });
    }
    let intervals = t_final / dt_out;
    if (intervals - intervals.round()).abs() > 1e-9 * intervals.max(1.0) {
        return Err(SettingsError::OutOfRange {
            field: "t_final".into(),
            value: t_final,
            allowed: format!(
                "a whole number of output intervals dt_out = {dt_out} s with until_settled \
                 (continued samples stay on the grid k·dt_out)"
            ),
        });
    }
    Ok(())
}

/// The horizon to continue a run to, if it continues: it ended ok and unsettled
/// (`settled == Some(false)`; unknown never continues) at `t_run`, and one more step of
/// `t_final` stays within `max_t`. Horizons are whole multiples of t_final.
pub fn next_horizon(
    max_t: Option<f64>,
    t_final: f64,
    t_run: f64,
    settled: Option<bool>,
) -> Option<f64> {
    let max_t = max_t?;
    let next = ((t_run / t_final).round() + 1.0) * t_final;
    (settled == Some(false) && next <= max_t * (1.0 + 1e-12)).then_some(next)
}

/// What the rule reads of a run's configuration: the cap `--until-settled MAX_T` (none:
/// the run never continues), the initial horizon t_final (the continuation step) and
/// the metric settings (the window of the continued schedule).
#[derive(Debug, Clone, Copy)]
pub struct Continuation<'a> {
    pub max_t: Option<f64>,
    pub t_final: f64,
    pub metrics: &'a MetricsSettings,
}

/// At the ok end of `ended`: if the run is to continue, move `acc` to the next horizon
/// and return the continued schedule (same grid, window of the same length ending at
/// the new horizon); else `None` and `acc` is untouched.
pub fn continue_run(
    acc: &mut MetricsAccumulator,
    rule: Continuation,
    ended: &SampleSchedule,
) -> Option<SampleSchedule> {
    rule.max_t?;
    let settled = acc.finish(Status::Ok).settled;
    let (next, longer) = continued_schedule(rule, ended, acc.t_run(), settled)?;
    acc.continue_to(next).ok()?;
    Some(longer)
}

/// The rule for an engine that keeps its own metric sums (the GPU host): a run under `rule`
/// that ended ok at the end of `ended` (horizon `t_run`, `settled`) continues to the
/// returned horizon with the returned schedule (same grid, window of the same length
/// ending at the new horizon), or ends (`None`).
pub fn continued_schedule(
    rule: Continuation,
    ended: &SampleSchedule,
    t_run: f64,
    settled: Option<bool>,
) -> Option<(f64, SampleSchedule)> {
    let next = next_horizon(rule.max_t, rule.t_final, t_run, settled)?;
    let window_len = rule.metrics.window_len(rule.t_final);
    Some((next, ended.continued(rule.metrics, next, window_len)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continues_unsettled_runs_in_steps_of_t_final_up_to_max_t() {
        assert_eq!(
            next_horizon(Some(30.0), 10.0, 10.0, Some(false)),
            Some(20.0)
        );
        assert_eq!(
            next_horizon(Some(30.0), 10.0, 20.0, Some(false)),
            Some(30.0)
        );
        assert_eq!(next_horizon(Some(30.0), 10.0, 30.0, Some(false)), None);
        assert_eq!(next_horizon(Some(25.0), 10.0, 20.0, Some(false)), None);
        assert_eq!(next_horizon(Some(30.0), 10.0, 10.0, Some(true)), None);
        assert_eq!(next_horizon(Some(30.0), 10.0, 10.0, None), None);
        assert_eq!(next_horizon(None, 10.0, 10.0, Some(false)), None);
    }

    #[test]
    fn max_t_must_allow_one_step_and_t_final_sit_on_the_grid() {
        assert!(validate(20.0, 10.0, 0.01).is_ok());
        let e = validate(15.0, 10.0, 0.01).unwrap_err().to_string();
        assert!(
            e.contains("until_settled") && e.contains(">= 2 t_final = 20 s"),
            "{e}"
        );
        assert!(validate(f64::NAN, 10.0, 0.01).is_err());
        let e = validate(1.0, 0.105, 0.01).unwrap_err().to_string();
        assert!(e.contains("t_final"), "{e}");
    }
}
