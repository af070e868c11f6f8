//! Basin fractions: a sweep's runs grouped by parameter combination, with the
//! fraction of runs in every class and its Wilson 95 % score interval, plus per-class
//! means and standard deviations of the lag order, mean lag and displacement.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::RecordBatch;

use crate::dataset::schema::{
    COL_CLASS, COL_COMBO, COL_LEVEL, COL_SETTLED, COL_WAVE_SENSE, META_CHUNK_WALL, META_INCOMPLETE,
    META_INTERVAL, META_SUMMARY_OF,
};
use crate::dataset::{Column, Rows};
use crate::error::OutputError;
use crate::metrics::{Class, WaveSense};
use crate::params::{CHOICE_PARAMS, LIST_PARAMS, MASK_PARAMS, OMEGA_LEGS, PSI_INIT, SCALAR_PARAMS};
use crate::parquet::TableBuilder;
use crate::vocabulary::{self as voc, metric, Aggregate, METRICS};

/// The two-sided 95 % normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score interval of a proportion `k` of `n` at normal quantile `z`:
/// (p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n), p = k/n. It stays inside
/// [0, 1] and is not degenerate at k = 0 or k = n (unlike the Wald interval); with no
/// runs it is the whole [0, 1].
pub fn wilson(k: usize, n: usize, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Widest Wilson 95 % interval over every class fraction of `classes` (labels).
pub fn widest_interval<'a>(classes: impl Iterator<Item = &'a str> + Clone) -> f64 {
    let n = classes.clone().count();
    Class::ALL
        .iter()
        .map(|c| {
            let k = classes.clone().filter(|l| *l == c.label()).count();
            let (lo, hi) = wilson(k, n, Z95);
            hi - lo
        })
        .fold(0.0, f64::max)
}

/// Metrics summarised per class (mean and standard deviation over that class' runs):
/// the vocabulary's [`Aggregate::PerClass`] metrics, as (name, unit).
pub fn per_class_metrics() -> impl Iterator<Item = (&'static str, &'static str)> {
    METRICS
        .iter()
        .filter(|m| m.aggregate == Aggregate::PerClass)
        .map(|m| (m.name, m.unit))
}

/// Metrics a dataset of format version 2 may lack (it was written by a build without
/// them): summarised where present.
const OPTIONAL_METRICS: &[&str] = &[
    metric::work,
    metric::work_axo,
    metric::work_coupling,
    metric::cost_of_transport,
];

fn mean_std(x: &[f64]) -> (f64, f64) {
    let f: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    let n = f.len() as f64;
    if f.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = f.iter().sum::<f64>() / n;
    let s = if f.len() < 2 {
        f64::NAN
    } else {
        (f.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    (m, s)
}

fn missing(dir: &Path, name: &str) -> OutputError {
    OutputError::Plot {
        path: dir.display().to_string(),
        message: format!("the dataset has no column `{name}` (is it a metachron sweep?)"),
    }
}

/// A per-leg list read as text ("0.5,1,..."; "" when not given: None). The text is the
/// dataset's own (Rust's shortest round-trip form), so the numbers come back exactly.
fn parse_list(text: &str) -> Option<Vec<f64>> {
    if text.is_empty() {
        return None;
    }
    text.split(',').map(|x| x.trim().parse().ok()).collect()
}

/// The unit of a per-leg list parameter's entries (masks are 0/1).
fn list_unit(name: &str) -> &'static str {
    match name {
        PSI_INIT => "rad",
        OMEGA_LEGS => "rad/s",
        _ => "1",
    }
}

/// Rows of `ds` grouped by `combo` (in combination order).
pub fn rows_by_combo(ds: &Rows, dir: &Path) -> Result<BTreeMap<u64, Vec<usize>>, OutputError> {
    let Some(Column::Num(combo)) = ds.column(COL_COMBO) else {
        return Err(missing(dir, COL_COMBO));
    };
    let mut groups: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (row, &c) in combo.iter().enumerate() {
        groups.entry(c as u64).or_default().push(row);
    }
    Ok(groups)
}

/// Write `batch`, the summary of `ds` (read from `dir`, made by [`summarize`]), to the
/// Parquet file `out` (its directory created if missing), with the dataset's file
/// metadata (less the chunk timing), the dataset it summarises, the interval, and
/// `incomplete` (why) when it covers only part of its dataset.
pub fn write_summary(
    batch: &RecordBatch,
    ds: &Rows,
    dir: &Path,
    out: &Path,
    incomplete: Option<&str>,
) -> Result<(), OutputError> {
    let mut meta: Vec<(String, String)> = ds
        .metadata
        .iter()
        .filter(|(k, _)| k.starts_with("metachron.") && k.as_str() != META_CHUNK_WALL)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    meta.sort();
    meta.push((META_SUMMARY_OF.into(), dir.display().to_string()));
    meta.push((
        META_INTERVAL.into(),
        format!("Wilson score, 95 % (z = {Z95})"),
    ));
    if let Some(why) = incomplete {
        meta.push((META_INCOMPLETE.into(), why.to_string()));
    }
    crate::dataset::refuse_inside_dataset(out, "the summary")?;
    crate::parquet::write_atomic(out, batch, &meta)?;
    Ok(())
}

/// One row per parameter combination of the sweep dataset `ds` (read from `dir`).
pub fn summarize(ds: &Rows, dir: &Path) -> Result<(RecordBatch, usize), OutputError> {
    let groups = rows_by_combo(ds, dir)?;
    let Some(Column::Text(class)) = ds.column(COL_CLASS) else {
        return Err(missing(dir, COL_CLASS));
    };
    let first: Vec<usize> = groups.values().map(|r| r[0]).collect();
    let mut t = TableBuilder::default();
    t.push(
        crate::parquet::field(COL_COMBO, arrow_schema::DataType::UInt64, "1"),
        std::sync::Arc::new(arrow_array::UInt64Array::from(
            groups.keys().copied().collect::<Vec<_>>(),
        )),
    );
    // Parameters (the first run's: a combination's runs differ only in random inputs
    // such as psi_init, which is left out) and the refinement level, typed as in the
    // rows: integers as integers, per-leg lists as list columns.
    let integer = |name: &str| {
        [voc::N_ACTUATED, COL_LEVEL].contains(&name)
            || SCALAR_PARAMS
                .iter()
                .any(|s| s.name == name && matches!(s.range, crate::params::Range::Int(..)))
    };
    let params = SCALAR_PARAMS
        .iter()
        .map(|s| (s.name, s.unit))
        .chain([(voc::N_ACTUATED, "1"), (COL_LEVEL, "1")])
        .chain(
            LIST_PARAMS
                .iter()
                .filter(|&&l| l != PSI_INIT)
                .map(|&l| (l, list_unit(l))),
        )
        .chain(CHOICE_PARAMS.iter().map(|&c| (c, "")));
    // A parameter that differs between a combination's runs (the terrain's seed when
    // every repeat has its own ground) describes runs, not the combination: left out.
    let varies = |v: &[f64]| {
        groups
            .values()
            .any(|rows| rows.iter().any(|&r| v[r].to_bits() != v[rows[0]].to_bits()))
    };
    for (name, unit) in params {
        match ds.column(name) {
            Some(Column::Num(v)) if varies(v) => {}
            Some(Column::Num(v)) if integer(name) => {
                t.u32(name, unit, first.iter().map(|&r| v[r] as u32).collect())
            }
            Some(Column::Num(v)) => t.f64(name, unit, first.iter().map(|&r| v[r]).collect()),
            Some(Column::Text(v)) if MASK_PARAMS.contains(&name) => t.bool_list(
                name,
                first
                    .iter()
                    .map(|&r| v[r].split(',').map(|b| b.trim() == "1").collect())
                    .collect(),
            ),
            Some(Column::Text(v)) if LIST_PARAMS.contains(&name) => t.f64_list_opt(
                name,
                unit,
                first.iter().map(|&r| parse_list(&v[r])).collect(),
            ),
            Some(Column::Text(v)) => t.string(name, first.iter().map(|&r| v[r].clone()).collect()),
            None => {}
        }
    }
    t.u32(
        voc::N_RUNS,
        "1",
        groups.values().map(|r| r.len() as u32).collect(),
    );
    let mut widest = vec![0.0f64; groups.len()];
    for c in Class::ALL {
        let (mut f, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
        for (g, rows) in groups.values().enumerate() {
            let k = rows.iter().filter(|&&r| class[r] == c.label()).count();
            let (l, h) = wilson(k, rows.len(), Z95);
            f.push(k as f64 / rows.len() as f64);
            lo.push(l);
            hi.push(h);
            widest[g] = widest[g].max(h - l);
        }
        t.f64(&voc::fraction(c.label()), "1", f);
        t.f64(&voc::fraction_bound(c.label(), "lo"), "1", lo);
        t.f64(&voc::fraction_bound(c.label(), "hi"), "1", hi);
    }
    t.f64(voc::CI_WIDTH_MAX, "1", widest);
    if let Some(Column::Text(sense)) = ds.column(COL_WAVE_SENSE) {
        // Over all the combination's runs: fraction_direct + fraction_retrograde is at
        // most fraction_metachronal (a wave of a robot that hardly moved has no sense).
        for w in WaveSense::ALL {
            let (mut f, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
            for rows in groups.values() {
                let k = rows.iter().filter(|&&r| sense[r] == w.label()).count();
                let (l, h) = wilson(k, rows.len(), Z95);
                f.push(k as f64 / rows.len() as f64);
                lo.push(l);
                hi.push(h);
            }
            t.f64(&voc::fraction(w.label()), "1", f);
            t.f64(&voc::fraction_bound(w.label(), "lo"), "1", lo);
            t.f64(&voc::fraction_bound(w.label(), "hi"), "1", hi);
        }
    }
    if let Some(Column::Num(settled)) = ds.column(COL_SETTLED) {
        // Over the runs whose `settled` is known (null on backends without the sums).
        t.f64(
            voc::FRACTION_SETTLED,
            "1",
            groups
                .values()
                .map(|rows| {
                    let known: Vec<f64> = rows
                        .iter()
                        .map(|&r| settled[r])
                        .filter(|v| v.is_finite())
                        .collect();
                    known.iter().sum::<f64>() / known.len() as f64
                })
                .collect(),
        );
    }
    for (m, unit) in per_class_metrics() {
        let Some(Column::Num(x)) = ds.column(m) else {
            if OPTIONAL_METRICS.contains(&m) {
                continue;
            }
            return Err(missing(dir, m));
        };
        for c in Class::ALL {
            let stats: Vec<(f64, f64)> = groups
                .values()
                .map(|rows| {
                    let v: Vec<f64> = rows
                        .iter()
                        .filter(|&&r| class[r] == c.label())
                        .map(|&r| x[r])
                        .collect();
                    mean_std(&v)
                })
                .collect();
            t.f64(
                &voc::class_mean(m, c.label()),
                unit,
                stats.iter().map(|s| s.0).collect(),
            );
            t.f64(
                &voc::class_std(m, c.label()),
                unit,
                stats.iter().map(|s| s.1).collect(),
            );
        }
    }
    Ok((t.finish()?, groups.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_hand_computed_intervals() {
        let z = Z95;
        // k = 0 of n = 10: lo = 0, hi = z²/(n + z²) = 3.841459/13.841459.
        let (lo, hi) = wilson(0, 10, z);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.277_532).abs() < 1e-6, "{hi}");
        // k = 5 of n = 10: centre 0.5, half = z·sqrt(0.025 + z²/400)/(1 + z²/10)
        // = 1.959964·sqrt(0.034604)/1.384146 = 0.263402.
        let (lo, hi) = wilson(5, 10, z);
        assert!((lo - 0.236_593).abs() < 1e-6, "{lo}");
        assert!((hi - 0.763_407).abs() < 1e-6, "{hi}");
        // k = 8 of n = 8: symmetric to k = 0: lo = 8/(8 + z²) = 0.675592.
        let (lo, hi) = wilson(8, 8, z);
        assert!((lo - 0.675_592).abs() < 1e-6, "{lo}");
        assert_eq!(hi, 1.0);
        // k = 1 of n = 3 (published table value, Newcombe 1998 style): [0.0615, 0.7923].
        let (lo, hi) = wilson(1, 3, z);
        assert!((lo - 0.061_5).abs() < 1e-4 && (hi - 0.792_3).abs() < 1e-4);
        assert_eq!(wilson(0, 0, z), (0.0, 1.0));
    }

    #[test]
    fn widest_interval_covers_every_class() {
        // 20 runs, all metachronal: every other class has k = 0, width z²/(20 + z²).
        let labels = vec!["metachronal"; 20];
        let w = widest_interval(labels.iter().copied());
        let z2 = Z95 * Z95;
        assert!((w - z2 / (20.0 + z2)).abs() < 1e-12);
    }
}
