//! The plan a dataset is judged against: its sweep (the recorded one, or one the user
//! states) as a [`Planner`] of the dataset room. A plain sweep's plan is every id; a
//! refined or adaptive-repeats sweep's plan is computed from its rows as the runner
//! computes it, so a finished one is complete and one with levels or repeats left says
//! so.

use crate::dataset::manifest::manifest_path;
use crate::dataset::{Dataset, Expected, Planned, Planner, Rows};
use crate::sweep::{adaptive, refine, run, SweepError, SweepSpec};

/// The sweep recorded in an opened dataset's manifest: the plan its readers verify it
/// against.
pub fn recorded_sweep(ds: &Dataset) -> Result<SweepSpec, SweepError> {
    let m = ds.manifest();
    let name = format!("{} (the recorded sweep)", manifest_path(ds.dir()).display());
    SweepSpec::from_str_named(&m.sweep, &name, &m.sweep_name)
}

impl Planner for SweepSpec {
    type Error = SweepError;

    fn sweep_name(&self) -> &str {
        &self.name
    }

    fn expected(&self) -> Result<Expected, SweepError> {
        run::expected(self)
    }

    fn needs_rows(&self) -> bool {
        self.refine.is_some() || self.adaptive.is_some()
    }

    fn planned(&self, expected: &Expected, rows: Option<&Rows>) -> Result<Planned, SweepError> {
        match rows {
            Some(rows) if self.needs_rows() => planned_from_rows(self, rows),
            _ => Ok(Planned::All(expected.points)),
        }
    }
}

/// The ids a refined or adaptive-repeats dataset must hold, from its rows.
fn planned_from_rows(spec: &SweepSpec, rows: &Rows) -> Result<Planned, SweepError> {
    if spec.refine.is_some() {
        let p = refine::plan_from_rows(spec, rows)?;
        let open = p.open_level.map(|(level, n)| {
            format!("refinement level {level} has {n} points still to run (run the sweep again with --resume)")
        });
        return Ok(Planned::Ids { ids: p.ids, open });
    }
    let Some(a) = spec.adaptive else {
        return Ok(Planned::All(run::id_space(spec)));
    };
    let classes = adaptive::classes_by_id(rows);
    let s = adaptive::state(&a, spec.combinations() as u64, &classes);
    let open = (s.open > 0).then(|| {
        format!(
            "adaptive repeats: {} combinations still need {} runs (run the sweep again with --resume)",
            s.open,
            s.todo.len()
        )
    });
    Ok(Planned::Ids {
        ids: s.planned.into_iter().collect(),
        open,
    })
}
