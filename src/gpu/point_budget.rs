//! Budgets of the instances of one device batch: `max_steps` and `--point-timeout`
//! hold per instance, as on the CPU engines. Between dispatches the host checks each
//! instance; one past its budget gets the status word [`BUDGET_STOP`], which the
//! kernel reads as "not live" (it advances only instances whose word is 0), so it stops
//! at that dispatch boundary while the others of its batch go on. Dispatches are cut
//! at the next step budget, so a step budget ends an instance after exactly
//! `max_steps` steps, as on the CPU.

use crate::sample::Deadline;
use crate::simulate::RunConfig;

/// Status word of an instance stopped over its budget (a diverged instance's word is
/// its sample index + 1, far below this).
pub const BUDGET_STOP: u32 = u32::MAX;

/// The budgets of one batch and which instances they stopped.
#[derive(Debug, Clone)]
pub struct Budgets {
    /// Last step each instance may take (`max_steps`), if bounded.
    caps: Vec<Option<u64>>,
    /// Each instance's wall-time limit, counted from the batch's start.
    deadlines: Vec<Deadline>,
    /// Steps done when the instance was stopped.
    stopped: Vec<Option<u64>>,
}

impl Budgets {
    /// The budgets of `cfgs`, their deadlines counted from now.
    pub fn new(cfgs: &[&RunConfig]) -> Budgets {
        Budgets {
            caps: cfgs.iter().map(|c| c.fixed_step.max_steps).collect(),
            deadlines: cfgs
                .iter()
                .map(|c| Deadline::after(c.point_timeout))
                .collect(),
            stopped: vec![None; cfgs.len()],
        }
    }

    /// True when some instance has a budget (else nothing needs checking).
    pub fn any(&self) -> bool {
        self.caps.iter().any(Option::is_some) || self.deadlines.iter().any(|d| *d != Deadline::NONE)
    }

    /// End (exclusive) of a dispatch from step `begin` that would end at `end`: cut
    /// after the next step budget, so that the instance can be stopped right there.
    pub fn cut(&self, begin: u32, end: u32) -> u32 {
        self.caps
            .iter()
            .zip(&self.stopped)
            .filter(|(_, s)| s.is_none())
            .filter_map(|(c, _)| *c)
            .map(|m| m.saturating_add(1))
            .filter(|&e| e > begin as u64)
            .fold(end as u64, u64::min) as u32
    }

    /// After steps `..end` are done: the instances that are over their budget and
    /// still running (`totals[i]`: instance i's last step). They count as stopped from
    /// here; the caller writes their status words.
    pub fn over(&mut self, end: u32, totals: &[u32]) -> Vec<usize> {
        let done = (end as u64).saturating_sub(1);
        let mut over = Vec::new();
        let each = self.caps.iter().zip(&self.deadlines).zip(&mut self.stopped);
        for (i, ((cap, deadline), stopped)) in each.enumerate() {
            if stopped.is_some() || done >= totals[i] as u64 {
                continue;
            }
            if cap.is_some_and(|m| done >= m) || deadline.passed() {
                *stopped = Some(done);
                over.push(i);
            }
        }
        over
    }

    /// True while some instance is neither stopped nor past its last step after steps
    /// `..end` (`totals[i]`: instance i's last step): else further dispatches would
    /// only idle.
    pub fn running(&self, end: u32, totals: &[u32]) -> bool {
        let done = end.saturating_sub(1);
        (0..self.caps.len()).any(|i| self.stopped[i].is_none() && done < totals[i])
    }

    /// Forget instance `i`'s stop (it had diverged before it could be stopped).
    pub fn unstop(&mut self, i: usize) {
        self.stopped[i] = None;
    }

    /// The budgets of instances `idx` (none of them stopped), as a batch of their own:
    /// a continued run keeps its step cap and its deadline (counted from the first
    /// batch's start).
    pub fn subset(&self, idx: &[usize]) -> Budgets {
        Budgets {
            caps: idx.iter().map(|&i| self.caps[i]).collect(),
            deadlines: idx.iter().map(|&i| self.deadlines[i]).collect(),
            stopped: idx.iter().map(|&i| self.stopped[i]).collect(),
        }
    }

    /// Record where instance `i` was stopped in a batch of its own ([`Budgets::subset`]).
    pub fn set_stopped(&mut self, i: usize, stopped: Option<u64>) {
        self.stopped[i] = stopped;
    }

    /// Steps instance `i` had done when it was stopped, if it was.
    pub fn stopped_at(&self, i: usize) -> Option<u64> {
        self.stopped[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(max_steps: Option<u64>) -> RunConfig {
        let mut c = RunConfig::default();
        c.fixed_step.max_steps = max_steps;
        c
    }

    #[test]
    fn dispatches_are_cut_at_step_budgets_and_only_running_instances_stop() {
        let (a, b, c) = (cfg(Some(150)), cfg(None), cfg(Some(1000)));
        let mut budgets = Budgets::new(&[&a, &b, &c]);
        assert!(budgets.any());
        // A dispatch of steps 100..300 ends after step 150 (a's last).
        assert_eq!(budgets.cut(100, 300), 151);
        assert_eq!(budgets.over(151, &[400, 400, 400]), vec![0]);
        assert_eq!(budgets.stopped_at(0), Some(150));
        // a is stopped: the next cut is c's (1001), beyond this dispatch.
        assert_eq!(budgets.cut(151, 351), 351);
        // c's budget is beyond its own run: it ends by its schedule, not its budget.
        assert_eq!(budgets.over(1001, &[400, 400, 400]), Vec::<usize>::new());
        assert_eq!((budgets.stopped_at(1), budgets.stopped_at(2)), (None, None));
        assert!(!Budgets::new(&[&b]).any());
    }
}
