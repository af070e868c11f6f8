//! Adaptive repeats: `repeats = { min = 8, max = 256, ci_width = 0.1 }` runs `min`
//! repeats of every combination, then keeps doubling a combination's repeats (up to
//! `max`) while the Wilson 95 % interval of any of its class fractions is `ci_width`
//! wide or wider.
//!
//! Point ids are those of a sweep with `repeats = max` (`combo · max + repeat`), and a
//! combination's decision at each round reads only its repeats below that round's
//! target (min, 2·min, 4·min, …, max): which points run depends only on results, never
//! on batch size or on where a run was interrupted, so `--resume` continues it exactly.
//! [`crate::sweep::atlas`] runs the rounds.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::dataset::{Column, Rows};
use crate::sweep::repeats::AdaptiveRepeats;
use crate::sweep::summary::widest_interval;
use crate::sweep::PlannedPoint;

/// Class label per written point id.
pub fn classes_by_id(ds: &Rows) -> HashMap<u64, String> {
    let mut classes = HashMap::new();
    if let Some(Column::Text(cls)) = ds.column(crate::dataset::schema::COL_CLASS) {
        for (id, c) in ds.point_ids().into_iter().zip(cls) {
            classes.insert(id, c.clone());
        }
    }
    classes
}

/// Where an adaptive sweep stands, from the classes of its written points.
#[derive(Debug, Clone, Default)]
pub struct AdaptiveState {
    /// Point ids still to run: for every combination, the repeats below its current
    /// target that are not written yet.
    pub todo: Vec<u64>,
    /// Every point id of the targets reached so far (written or to run).
    pub planned: Vec<u64>,
    /// Combinations still adding runs.
    pub open: usize,
}

/// The rule, written once: one combination's repeats (`ids`, in repeat order, every
/// repeat 0..max) against the written classes. Returns the ids to run now and how many
/// leading repeats its current target covers.
fn decide(a: &AdaptiveRepeats, ids: &[u64], classes: &HashMap<u64, String>) -> (Vec<u64>, usize) {
    let mut reached = 0;
    for &target in &a.targets() {
        let below = &ids[..target.min(ids.len())];
        reached = below.len();
        let todo: Vec<u64> = below
            .iter()
            .copied()
            .filter(|id| !classes.contains_key(id))
            .collect();
        if !todo.is_empty() {
            return (todo, reached);
        }
        let width = widest_interval(below.iter().map(|id| classes[id].as_str()));
        if width < a.ci_width {
            break;
        }
    }
    (Vec::new(), reached)
}

/// Tally the decisions of some combinations (each its ids in repeat order).
fn tally(
    a: &AdaptiveRepeats,
    combos: impl IntoIterator<Item = Vec<u64>>,
    classes: &HashMap<u64, String>,
) -> AdaptiveState {
    let mut s = AdaptiveState::default();
    for ids in combos {
        let (todo, reached) = decide(a, &ids, classes);
        s.planned.extend(&ids[..reached]);
        if !todo.is_empty() {
            s.open += 1;
            s.todo.extend(todo);
        }
    }
    s.planned.sort_unstable();
    s.todo.sort_unstable();
    s
}

/// Where an adaptive sweep of `combos` combinations stands (`classes`: class label
/// per written point id); the runner and `metachron check` decide alike.
pub fn state(a: &AdaptiveRepeats, combos: u64, classes: &HashMap<u64, String>) -> AdaptiveState {
    let max = a.max as u64;
    tally(
        a,
        (0..combos).map(|c| (c * max..(c + 1) * max).collect()),
        classes,
    )
}

/// Where the combinations of `points` (every repeat, 0..max, of some combinations:
/// a refinement level's) stand.
pub fn state_of(
    a: &AdaptiveRepeats,
    points: &[&PlannedPoint],
    classes: &HashMap<u64, String>,
) -> AdaptiveState {
    let mut by_combo: BTreeMap<u64, Vec<&PlannedPoint>> = BTreeMap::new();
    for &p in points {
        by_combo.entry(p.combo).or_default().push(p);
    }
    let combos = by_combo.into_values().map(|mut reps| {
        reps.sort_by_key(|p| p.repeat);
        reps.iter().map(|p| p.point_id).collect::<Vec<u64>>()
    });
    tally(a, combos, classes)
}

/// The points still to run among `points` (see [`state_of`]), in id order, and how
/// many combinations still add runs.
pub fn pending<'a>(
    a: &AdaptiveRepeats,
    points: &[&'a PlannedPoint],
    classes: &HashMap<u64, String>,
) -> (Vec<&'a PlannedPoint>, usize) {
    let s = state_of(a, points, classes);
    let todo: HashSet<u64> = s.todo.into_iter().collect();
    let mut out: Vec<&PlannedPoint> = points
        .iter()
        .copied()
        .filter(|p| todo.contains(&p.point_id))
        .collect();
    out.sort_by_key(|p| p.point_id);
    (out, s.open)
}
