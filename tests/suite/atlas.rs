//! Atlas sweeps end to end: the `still` class on the engine, refinement on the finest
//! lattice (ids and rows equal to a dense run's, interrupted or killed and resumed,
//! sharded), adaptive repeats stopping at the requested width, summaries with Wilson
//! intervals, and `--until-settled` refused where it cannot continue a run.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::sweep::checked;
use common::scratch;
use common::sweep::opts;
use common::sweep::REFINED;
use metachron::batch::{run_point, Engine};
use metachron::dataset::{rows, schema, tree, Column, Rows};
use metachron::metrics::Class;
use metachron::output::map::{draw_map_with, MapOptions, MapRequest};
use metachron::simulate::RunConfig;
use metachron::sweep::atlas::{run_adaptive, run_refined, AdaptiveOutcome, RefineOutcome};
use metachron::sweep::run::{self, RunOptions};
use metachron::sweep::summary::{summarize, wilson, Z95};
use metachron::sweep::{Plan, Shard, SweepSpec};

fn spec(text: &str) -> SweepSpec {
    crate::common::sweep::spec_named(text, "atlas-test")
}

/// Rows as comparable text keyed by point id (columns in `skip` left out).
fn rows(ds: &Rows, skip: &[&str]) -> HashMap<u64, String> {
    let ids = ds.point_ids();
    (0..ids.len())
        .map(|i| {
            let text = ds
                .columns
                .iter()
                .filter(|(n, _)| !skip.contains(&n.as_str()))
                .map(|(n, c)| match c {
                    Column::Num(v) => format!("{n}={:?}", v[i].to_bits()),
                    Column::Text(v) => format!("{n}={}", v[i]),
                })
                .collect::<Vec<_>>()
                .join(";");
            (ids[i], text)
        })
        .collect()
}

fn refine_done(spec: &SweepSpec, o: &RunOptions) -> Vec<metachron::sweep::atlas::LevelReport> {
    match run_refined(spec, o, &mut ()).unwrap() {
        RefineOutcome::Done(l) => l,
        other => panic!("not done: {other:?}"),
    }
}

#[test]
fn a_robot_without_servos_is_still() {
    // A robot without servos: once the legs have settled under
    // gravity (the first seconds) they stand at rest, and this read `synchronous`.
    // The paper's robot (9 legs x 5 nodes), 20 s, like the minimal-actuation map.
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 20.0;
    cfg.params.actuated = vec![false; 9];
    let r = run_point(&cfg, &Engine::Cpu, false, |_| {}).unwrap();
    assert!(r.metrics.status.is_ok());
    assert!(
        r.metrics.leg_frequency.iter().all(|f| f.abs() < 0.01),
        "{:?}",
        r.metrics.leg_frequency
    );
    assert_eq!(r.metrics.class, Class::Still);
    // Driven, the same robot turns its legs and is not still.
    cfg.params.actuated = vec![true; 9];
    let r = run_point(&cfg, &Engine::Cpu, false, |_| {}).unwrap();
    assert_ne!(r.metrics.class, Class::Still);
    assert!(r.metrics.settled.is_some());
    assert_eq!(r.metrics.t_run, 20.0);
}

#[test]
fn refinement_matches_the_dense_lattice_and_resumes_exactly() {
    let s = spec(REFINED);
    let full = scratch("refine-full");
    let levels = refine_done(&s, &opts(&full, 7, false));
    assert_eq!(levels[0].points, 9);
    assert!(levels.len() > 1 && levels[1].points > 0, "{levels:?}");
    let total: usize = levels.iter().map(|l| l.points).sum();
    assert!(total <= 60);
    let refined = rows::read_unverified(&full).unwrap();
    assert_eq!(refined.len(), total);

    // The dense sweep of the same lattice (9 x 9): same ids, same rows.
    let dense_text = REFINED
        .split("[refine]")
        .next()
        .unwrap()
        .replace("num = 3", "num = 9");
    let d = spec(&dense_text);
    let dense = scratch("refine-dense");
    let o = opts(&dense, 32, false);
    let plan = Plan::new(&d).unwrap();
    let work = run::work(&d, &plan, &o).unwrap();
    run::run(&d, &work.pending, &o, |_| {}).unwrap();
    let dense_rows = rows(&rows::read_unverified(&dense).unwrap(), &["level"]);
    let refined_rows = rows(&refined, &["level"]);
    for (id, row) in &refined_rows {
        assert_eq!(Some(row), dense_rows.get(id), "point {id}");
    }

    // Interrupted after 3 chunks, then resumed: exactly the uninterrupted rows.
    let part = scratch("refine-part");
    let mut o = opts(&part, 7, false);
    o.stop_after_chunks = Some(3);
    assert!(matches!(
        run_refined(&s, &o, &mut ()).unwrap(),
        RefineOutcome::Stopped
    ));
    assert!(
        run_refined(&s, &opts(&part, 7, false), &mut ()).is_err(),
        "needs --resume"
    );
    let mut o = opts(&part, 7, false);
    o.resume = true;
    refine_done(&s, &o);
    assert_eq!(
        rows(&rows::read_unverified(&part).unwrap(), &[]),
        rows(&refined, &[])
    );

    // Two shards, each resumed until done: their union is the unsharded dataset.
    let sharded = scratch("refine-shards");
    let mut done = [false, false];
    for round in 0..2 * (levels.len() + 1) {
        let k = round % 2;
        if done[k] {
            continue;
        }
        let mut o = opts(&sharded, 4, false);
        o.shard = Shard::new(k, 2).unwrap();
        o.resume = round > 0;
        done[k] = matches!(
            run_refined(&s, &o, &mut ()).unwrap(),
            RefineOutcome::Done(_)
        );
    }
    assert_eq!(done, [true, true]);
    assert_eq!(
        rows(&rows::read_unverified(&sharded).unwrap(), &[]),
        rows(&refined, &[])
    );
}

#[test]
fn killed_refined_sweep_resumes_to_the_same_rows() {
    let dir = scratch("refine-killed");
    let text = REFINED.replace("t_final = 1.0", "t_final = 2.0");
    let file = dir.join("refined.toml");
    std::fs::write(&file, &text).unwrap();
    let args = |out: &Path, extra: &[&str]| {
        let mut a: Vec<String> = ["sweep", file.to_str().unwrap(), "--out"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(out.to_str().unwrap().to_string());
        a.extend(["--batch", "1", "--quiet"].iter().map(|s| s.to_string()));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let full = dir.join("full");
    let st = common::bin::command()
        .args(args(&full, &[]))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );

    let out = dir.join("killed");
    let mut child = common::bin::command()
        .args(args(&out, &[]))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // Kill it once a level-1 point is written (past the first level).
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no level 1 appeared"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sweep ended before it could be killed: {status}");
        }
        if tree::part_files(&out).unwrap().len() > 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let full_ds = rows::read_unverified(&full).unwrap();
    assert!(tree::part_files(&out).unwrap().len() < full_ds.len());
    let st = common::bin::command()
        .args(args(&out, &["--resume"]))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(
        rows(&rows::read_unverified(&out).unwrap(), &[]),
        rows(&full_ds, &[])
    );
}

/// Random initial phases over K_p (6 legs, 2 s): some combinations mix classes.
const ADAPTIVE: &str = r#"name = "adaptive"
seed = 7
repeats = { min = 4, max = 32, ci_width = 0.45 }
[base]
n_legs = 4
n_nodes = 3
t_final = 1.0
[[axes]]
param = "k_p"
values = [5.0, 500.0]
[[axes]]
param = "alpha"
values = [50.0, 5000.0]
"#;

#[test]
fn adaptive_repeats_stop_at_the_requested_width_and_resume() {
    let s = spec(ADAPTIVE);
    let a = s.adaptive.unwrap();
    assert_eq!(a.targets(), vec![4, 8, 16, 32]);
    let full = scratch("adaptive-full");
    let plan = Plan::new(&s).unwrap();
    let AdaptiveOutcome::Done(rounds) =
        run_adaptive(&s, &plan, &opts(&full, 8, false), &mut ()).unwrap()
    else {
        panic!("not done")
    };
    assert!(!rounds.is_empty());
    let ds = rows::read_unverified(&full).unwrap();
    let Some(Column::Text(class)) = ds.column("class") else {
        panic!("no class column")
    };
    let ids = ds.point_ids();
    // Check every combination independently: its runs are repeats 0..n, n a target;
    // the widest class interval of its runs is below ci_width unless n = max, and
    // was not below it at the target before n.
    let width = |cls: &[&str]| {
        Class::ALL
            .iter()
            .map(|c| {
                let k = cls.iter().filter(|l| **l == c.label()).count();
                let (lo, hi) = wilson(k, cls.len(), Z95);
                hi - lo
            })
            .fold(0.0, f64::max)
    };
    let mut saw_more = false;
    for combo in 0..4u64 {
        let mut mine: Vec<(u64, &str)> = ids
            .iter()
            .zip(class)
            .filter(|(id, _)| **id / 32 == combo)
            .map(|(id, c)| (id % 32, c.as_str()))
            .collect();
        mine.sort();
        let n = mine.len();
        assert!(mine.iter().enumerate().all(|(i, (r, _))| *r == i as u64));
        assert!(a.targets().contains(&n), "combo {combo}: {n} runs");
        let cls: Vec<&str> = mine.iter().map(|m| m.1).collect();
        assert!(n == 32 || width(&cls) < 0.45, "combo {combo}");
        if n > 4 {
            saw_more = true;
            assert!(width(&cls[..n / 2]) >= 0.45, "combo {combo} ran too many");
        }
    }
    assert!(saw_more, "no combination needed more than min runs");

    // Interrupted and resumed: the same rows.
    let part = scratch("adaptive-part");
    let mut o = opts(&part, 8, false);
    o.stop_after_chunks = Some(3);
    assert!(matches!(
        run_adaptive(&s, &plan, &o, &mut ()).unwrap(),
        AdaptiveOutcome::Stopped
    ));
    let mut o = opts(&part, 8, false);
    o.resume = true;
    run_adaptive(&s, &plan, &o, &mut ()).unwrap();
    assert_eq!(
        rows(&rows::read_unverified(&part).unwrap(), &[]),
        rows(&ds, &[])
    );
    let mut o = opts(&scratch("adaptive-shard"), 8, false);
    o.shard = Shard::new(0, 2).unwrap();
    assert!(run_adaptive(&s, &plan, &o, &mut ()).is_err());

    // The summary: one row per combination with hand-checkable fractions.
    let (batch, combos) = summarize(&ds, &full).unwrap();
    assert_eq!(combos, 4);
    let f = |name: &str| {
        batch
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap()
            .values()
            .to_vec()
    };
    let n_runs = batch
        .column_by_name("n_runs")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::UInt32Array>()
        .unwrap()
        .values()
        .to_vec();
    for c in Class::ALL {
        let (fr, lo, hi) = (
            f(&format!("fraction_{}", c.label())),
            f(&format!("fraction_{}_lo", c.label())),
            f(&format!("fraction_{}_hi", c.label())),
        );
        for g in 0..4 {
            let k = (fr[g] * n_runs[g] as f64).round() as usize;
            let direct = class
                .iter()
                .zip(&ids)
                .filter(|(l, id)| **id / 32 == g as u64 && l.as_str() == c.label())
                .count();
            assert_eq!(k, direct);
            assert!(lo[g] <= fr[g] && fr[g] <= hi[g]);
        }
    }
    // The fraction map strikes through exactly the cells whose interval is wide.
    let wide = (0..4)
        .filter(|&g| {
            let (k, n) = (
                (f("fraction_metachronal")[g] * n_runs[g] as f64).round() as usize,
                n_runs[g] as usize,
            );
            let (lo, hi) = wilson(k, n, Z95);
            hi - lo > 0.3
        })
        .count();
    let req = MapRequest {
        x: "alpha".into(),
        y: "k_p".into(),
        metric: "fraction:metachronal".into(),
    };
    let png = scratch("adaptive-full-map").join("fraction.png");
    let opts = MapOptions {
        ci_width: Some(0.3),
        ..MapOptions::default()
    };
    let m = draw_map_with(&ds, &req, &opts, &png).unwrap();
    assert_eq!((m.cells, m.wide_cells), (4, wide));
    assert!(png.metadata().unwrap().len() > 1000);
    let sum: f64 = Class::ALL
        .iter()
        .map(|c| f(&format!("fraction_{}", c.label()))[0])
        .sum();
    assert!((sum - 1.0).abs() < 1e-12);
}

#[test]
fn until_settled_is_refused_where_it_cannot_continue() {
    let dir = scratch("until-settled");
    let file = dir.join("u.toml");
    std::fs::write(
        &file,
        "[base]\nt_final = 0.5\nn_legs = 3\nn_nodes = 3\n[[axes]]\nparam = \"alpha\"\nvalues = [50.0]\n",
    )
    .unwrap();
    let out = dir.join("out");
    // The reference cannot continue a run; a horizon below 2 t_final allows no step.
    for (backend, max_t, why) in [
        ("reference", "2.0", "backend reference"),
        ("cpu", "0.25", ">= 2 t_final"),
        ("cpu", "0.75", ">= 2 t_final"),
    ] {
        let st = common::bin::command()
            .args([
                "sweep",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .args(["--backend", backend, "--until-settled", max_t, "--quiet"])
            .output()
            .unwrap();
        assert_eq!(st.status.code(), Some(2));
        let err = String::from_utf8_lossy(&st.stderr);
        assert!(err.contains("until_settled") && err.contains(why), "{err}");
        assert!(!out.exists(), "nothing may run");
    }
}

/// Random initial phases over K_p x alpha (3 legs, 1 s): the metachronal fraction
/// changes over the grid. Adaptive repeats 4..16, refined twice where that fraction
/// changes by more than 0.25 between a cell's corners.
const FRACTION: &str = r#"name = "fraction"
seed = 3
repeats = { min = 4, max = 16, ci_width = 0.5 }
[base]
n_legs = 3
n_nodes = 3
t_final = 1.0
[metrics]
# Every uniform lag of at least lag_min counts as a wave here (no antiphase class): random
# phases of three legs often lock near half a cycle, and the fraction changes most so.
lag_max = 3.141592653589793
[[axes]]
param = "k_p"
logspace = { start = 1.0, stop = 1000.0, num = 3 }
[[axes]]
param = "alpha"
logspace = { start = 10.0, stop = 10000.0, num = 3 }
[refine]
by = "fraction:metachronal"
threshold = 0.25
max_level = 2
max_points = 2000
"#;

#[test]
fn refine_table_errors_name_the_key_and_dry_run_speaks_words() {
    let bad = |from: &str, to: &str| {
        let text = FRACTION.replace(from, to);
        SweepSpec::from_str_named(&text, "f.toml", "f")
            .unwrap_err()
            .to_string()
    };
    let e = bad("fraction:metachronal", "fraction:walking");
    assert!(
        e.contains("refine.by") && e.contains("metachronal, antiphase, synchronous"),
        "{e}"
    );
    let e = bad("threshold = 0.25\n", "");
    assert!(
        e.contains("refine.threshold") && e.contains("missing"),
        "{e}"
    );
    let e = bad("threshold = 0.25", "threshold = 1.5");
    assert!(
        e.contains("refine.threshold") && e.contains("[0, 1]"),
        "{e}"
    );
    let e = bad(
        "by = \"fraction:metachronal\"",
        "by = \"class\"\ntest = \"wilson\"",
    );
    assert!(e.contains("refine.test"), "{e}");
    // Any class refines, the alternation among them.
    let s = spec(&FRACTION.replace("fraction:metachronal", "fraction:antiphase"));
    let r = s.refine.as_ref().unwrap().to_string();
    assert!(r.contains("the fraction of antiphase runs"), "{r}");
    let s = spec(&FRACTION.replace("threshold = 0.25", "threshold = 0.0\ntest = \"wilson\""));
    let r = s.refine.as_ref().unwrap();
    assert_eq!(
        r.to_string(),
        "refined on the fraction of metachronal runs (split where two corners' Wilson 95 % \
         intervals lie more than 0 apart) up to level 2 (at most 2000 points)"
    );
    let class = spec(&REFINED.replace("by = \"lag_order\"\nthreshold = 0.15", "by = \"class\""));
    assert_eq!(
        class.refine.unwrap().to_string(),
        "refined on class up to level 2 (at most 60 points)"
    );
}

#[test]
fn fraction_refinement_with_adaptive_repeats_splits_where_the_fraction_changes() {
    let s = spec(FRACTION);
    let a = s.adaptive.unwrap();
    let full = scratch("fraction-full");
    let RefineOutcome::Done(levels) = run_refined(&s, &opts(&full, 8, false), &mut ()).unwrap()
    else {
        panic!("not done")
    };
    let ds = rows::read_unverified(&full).unwrap();
    let num = |name: &str| match ds.column(name) {
        Some(Column::Num(v)) => v.clone(),
        _ => panic!("{name}"),
    };
    let (combo, level, kp, alpha) = (num("combo"), num("level"), num("k_p"), num("alpha"));
    let Some(Column::Text(class)) = ds.column("class") else {
        panic!("class")
    };
    let ids = ds.point_ids();
    // Per combination: its repeats 0..n (n a target; the adaptive rule holds) and
    // its metachronal fraction.
    let mut by_combo: std::collections::BTreeMap<u64, Vec<usize>> = Default::default();
    for (row, &c) in combo.iter().enumerate() {
        by_combo.entry(c as u64).or_default().push(row);
    }
    let mut frac: Vec<(f64, f64, u32, f64)> = Vec::new(); // (k_p, alpha, level, fraction)
    for (c, rows) in &by_combo {
        let mut reps: Vec<u64> = rows.iter().map(|&r| ids[r] - c * a.max as u64).collect();
        reps.sort();
        assert!(
            reps.iter().enumerate().all(|(i, &r)| r == i as u64),
            "combo {c}"
        );
        let n = rows.len();
        assert!(a.targets().contains(&n), "combo {c}: {n} runs");
        let meta = rows.iter().filter(|&&r| class[r] == "metachronal").count();
        frac.push((
            kp[rows[0]],
            alpha[rows[0]],
            level[rows[0]] as u32,
            meta as f64 / n as f64,
        ));
    }
    let level1: Vec<&(f64, f64, u32, f64)> = frac.iter().filter(|f| f.2 == 1).collect();
    assert!(!level1.is_empty(), "nothing split: {levels:?}");
    // Level 0 cells on the 3 x 3 grid; each splits iff its corners' fractions span
    // more than 0.25, and a split plans its centre (geometric: both axes are log).
    let grid = |v: &[f64]| [v[0], (v[0] * v[2]).sqrt(), v[2]];
    let (gk, ga) = (grid(&[1.0, 0.0, 1000.0]), grid(&[10.0, 0.0, 10000.0]));
    let at = |k: f64, al: f64| {
        frac.iter()
            .find(|f| (f.0 / k - 1.0).abs() < 1e-9 && (f.1 / al - 1.0).abs() < 1e-9)
            .copied()
    };
    let mut split = 0;
    for i in 0..2 {
        for j in 0..2 {
            let corners: Vec<f64> = [(i, j), (i + 1, j), (i, j + 1), (i + 1, j + 1)]
                .iter()
                .map(|&(p, q)| at(gk[p], ga[q]).unwrap().3)
                .collect();
            let span = corners.iter().cloned().fold(f64::MIN, f64::max)
                - corners.iter().cloned().fold(f64::MAX, f64::min);
            let centre = at((gk[i] * gk[i + 1]).sqrt(), (ga[j] * ga[j + 1]).sqrt());
            assert_eq!(
                span > 0.25,
                centre.is_some_and(|c| c.2 == 1),
                "cell {i},{j}"
            );
            split += usize::from(span > 0.25);
        }
    }
    assert_eq!(split, levels[1].cells_split);

    // Interrupted after 3 chunks, then resumed: exactly the uninterrupted rows.
    let part = scratch("fraction-part");
    let mut o = opts(&part, 8, false);
    o.stop_after_chunks = Some(3);
    assert!(matches!(
        run_refined(&s, &o, &mut ()).unwrap(),
        RefineOutcome::Stopped
    ));
    // `check` plans the levels and rounds from the rows as the runner does: the
    // interrupted dataset is unfinished, not complete.
    let h = checked(&part).unwrap().health;
    assert!(!h.complete && h.unfinished.is_some(), "{h:?}");
    let mut o = opts(&part, 8, false);
    o.resume = true;
    assert!(matches!(
        run_refined(&s, &o, &mut ()).unwrap(),
        RefineOutcome::Done(_)
    ));
    assert_eq!(
        rows(&rows::read_unverified(&part).unwrap(), &[]),
        rows(&ds, &[])
    );
    // Finished, `check` expects exactly the rows the runner wrote.
    for dir in [&full, &part] {
        let h = checked(dir).unwrap().health;
        assert!(h.complete && h.clean, "{h:?}");
        assert_eq!(h.points as usize, ds.point_ids().len());
        assert_eq!((h.missing_count, h.unplanned_rows), (0, 0));
        assert!(h.unfinished.is_none(), "{h:?}");
    }

    // Its map: per-cell run counts as in the rows, a labelled colour bar, SVG.
    let req = MapRequest {
        x: "alpha".into(),
        y: "k_p".into(),
        metric: "fraction:metachronal".into(),
    };
    let svg = scratch("fraction-full-map").join("fraction.svg");
    let m = draw_map_with(&ds, &req, &MapOptions::default(), &svg).unwrap();
    let counts: Vec<usize> = by_combo.values().map(Vec::len).collect();
    assert_eq!(m.cells, by_combo.len());
    assert_eq!(
        m.runs_per_cell,
        (*counts.iter().min().unwrap(), *counts.iter().max().unwrap())
    );
    assert!(m.x_log && m.y_log);
    let largest = frac.iter().map(|f| f.3).fold(0.0, f64::max);
    assert!(m.range.0 == 0.0 && m.range.1 >= largest && m.range.1 <= 1.0);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..40]);
    // Every text element's content (plotters writes it on its own line).
    let texts: Vec<&str> = text
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
        .map(|(content, _)| content.trim())
        .collect();
    // The colour bar's label (rotated along the bar), the axes' round log ticks and
    // the runs per cell.
    assert!(
        texts.contains(&"fraction of runs metachronal"),
        "no colour bar label in {texts:?}"
    );
    for tick in ["10", "100", "1000", "10000", "1", "1000"] {
        assert!(texts.contains(&tick), "no tick {tick} in {texts:?}");
    }
    let runs = if m.runs_per_cell.0 == m.runs_per_cell.1 {
        format!("{} runs per cell", m.runs_per_cell.0)
    } else {
        format!("{}–{} runs per cell", m.runs_per_cell.0, m.runs_per_cell.1)
    };
    assert!(
        texts.iter().any(|t| t.ends_with(&runs)),
        "title lacks `{runs}`: {texts:?}"
    );
    // Binned 2 x 2: every row in one cell, counts summing to the rows.
    let png = scratch("fraction-full-binned").join("binned.png");
    let b = draw_map_with(
        &ds,
        &req,
        &MapOptions {
            bins: Some(2),
            range: Some((0.0, 1.0)),
            ..MapOptions::default()
        },
        &png,
    )
    .unwrap();
    assert_eq!((b.cells, b.range), (4, (0.0, 1.0)));
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
}

/// 3 legs, only leg 1 driven, two repeats from random phases: every per-leg list
/// column holds something (`omega_legs` is null: not given).
const FORMATS: &str = r#"name = "formats"
repeats = 2
[base]
n_legs = 3
n_nodes = 3
t_final = 0.5
actuated = "first"
[[axes]]
param = "alpha"
values = [50.0, 5000.0]
"#;

#[test]
fn format_2_rows_hold_list_columns_and_the_summary_keeps_their_types() {
    let s = spec(FORMATS);
    let dir = scratch("formats");
    let o = opts(&dir, 2, false);
    let plan = Plan::new(&s).unwrap();
    let work = run::work(&s, &plan, &o).unwrap();
    run::run(&s, &work.pending, &o, |_| {}).unwrap();
    drop(work);
    let ds = rows::read_unverified(&dir).unwrap();
    // The format on disk (list columns since format 2), and the file says so.
    let part = &tree::part_files(&dir).unwrap()[0];
    let (b, meta) = metachron::parquet::read_parquet(part).unwrap();
    assert_eq!(
        meta[schema::META_FORMAT],
        schema::FORMAT_VERSION.to_string()
    );
    let schema = b[0].schema();
    let ty = |n: &str| schema.field_with_name(n).unwrap().data_type().to_string();
    assert!(ty("psi_init").starts_with("List(") && ty("psi_init").contains("Float64"));
    for mask in ["actuated", "axo_actuated"] {
        assert!(
            ty(mask).starts_with("List(") && ty(mask).contains("Boolean"),
            "{mask}: {}",
            ty(mask)
        );
    }
    assert!(meta["metachron.fixed_step"].contains("max_step"));
    assert!(
        !meta.contains_key("metachron.solver"),
        "a cpu part claims the reference"
    );
    // The lists read back as the sweep file set them: `actuated = "first"` of 3 legs,
    // the couple's mask unset (every leg).
    let Some(Column::Text(mask)) = ds.column("actuated") else {
        panic!("actuated")
    };
    assert!(mask.iter().all(|m| m == "1,0,0"), "{mask:?}");
    let Some(Column::Text(axo)) = ds.column("axo_actuated") else {
        panic!("axo_actuated")
    };
    assert!(axo.iter().all(|m| m == "1,1,1"), "{axo:?}");
    let (sum, _) = summarize(&ds, &dir).unwrap();
    let st = sum.schema();
    assert_eq!(
        st.field_with_name("n_legs").unwrap().data_type(),
        &arrow_schema::DataType::UInt32
    );
    assert_eq!(
        st.field_with_name("level").unwrap().data_type(),
        &arrow_schema::DataType::UInt32
    );
    for mask in ["actuated", "axo_actuated"] {
        let col = sum.column_by_name(mask).expect(mask);
        let list = col
            .as_any()
            .downcast_ref::<arrow_array::ListArray>()
            .expect("a list column");
        let legs = list.value(0);
        let legs = legs
            .as_any()
            .downcast_ref::<arrow_array::BooleanArray>()
            .expect("booleans");
        let got: Vec<bool> = (0..legs.len()).map(|k| legs.value(k)).collect();
        let want = if mask == "actuated" {
            vec![true, false, false]
        } else {
            vec![true, true, true]
        };
        assert_eq!(got, want, "{mask}");
    }
}

/// `metachron sweep FILE --out OUT --quiet`, which must succeed; returns OUT.
fn swept(file: &Path, out: &Path) -> PathBuf {
    let (code, _, err) = common::bin::run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    out.to_path_buf()
}

/// `metachron map` of the displacement over alpha x k_p into `png`, with `extra`.
fn displacement_map(out: &Path, png: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "map",
        out.to_str().unwrap(),
        "--x",
        "alpha",
        "--y",
        "k_p",
        "--metric",
        "displacement",
        "--out",
        png.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::bin::run(&args)
}

/// Two repeats of 2 x 2 x 3 combinations: alpha (beta zipped with it), k_p and omega.
const THREE_AXES: &str = r#"name = "three-axes"
seed = 3
repeats = 2
random_phases = true
[base]
n_legs = 3
n_nodes = 3
t_final = 0.2
[[axes]]
param = "alpha"
values = [100.0, 300.0]
group = "coupling"
[[axes]]
param = "beta"
values = [100.0, 300.0]
group = "coupling"
[[axes]]
param = "k_p"
values = [5.0, 20.0]
[[axes]]
param = "omega"
values = [1.0, 2.0, 3.0]
"#;

/// Three swept parameters, a map over two: the third is refused by name with its
/// values, `--where` draws the rows of one value, `--average` all of them (the printed
/// summary counts the rows and each cell's runs); a parameter zipped with an axis
/// (here β with α) follows it and is no third parameter.
#[test]
fn a_map_over_two_of_three_axes_names_the_third() {
    let dir = scratch("map-hidden-axis");
    let file = dir.join("three.toml");
    std::fs::write(&file, THREE_AXES).unwrap();
    let out = swept(&file, &dir.join("ds"));
    let map = |extra: &[&str]| displacement_map(&out, &dir.join("m.png"), extra);
    let (code, _, err) = map(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("axis `omega` takes 3 values in the drawn rows (1, 2, 3)")
            && err.contains("--where omega=1")
            && err.contains("--average omega"),
        "{err}"
    );
    let (code, said, err) = map(&["--where", "omega=2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        said.contains(": 8 rows from") && said.contains("2 runs per cell"),
        "{said}"
    );
    let (code, said, err) = map(&["--average", "omega"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        said.contains(": 24 rows from") && said.contains("6 runs per cell"),
        "{said}"
    );
    // A range and a number with its unit select as the plain values do; a unit the
    // column is not in is refused, naming the one it takes.
    let (code, said, err) = map(&["--where", "omega=2..", "--average", "omega"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        said.contains(": 16 rows from") && said.contains("4 runs per cell"),
        "{said}"
    );
    let (code, said, err) = map(&["--where", "omega=2rad/s"]);
    assert_eq!(code, 0, "{err}");
    assert!(said.contains(": 8 rows from"), "{said}");
    let (code, _, err) = map(&["--where", "omega=2deg"]);
    assert_eq!(code, 2);
    assert!(err.contains("numbers may carry `rad/s`"), "{err}");
    // One panel per value of omega: every row, each panel's cells those of its
    // `--where` map (2 runs each), in one picture three panels wide.
    let (code, said, err) = map(&["--facet", "omega"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        said.contains("in 3 panels (omega = 1; omega = 2; omega = 3): 24 rows from")
            && said.contains("into 12 cells (12 filled, 2 runs per cell)"),
        "{said}"
    );
    let png = std::fs::read(dir.join("m.png")).unwrap();
    let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((size(16), size(20)), (3 * 460 + 190, 80 + 400));
    let (code, _, err) = map(&["--average", "omgea"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--average omgea: not an axis of this sweep"),
        "{err}"
    );

    // summarize prints the table whose numbers its Parquet file holds: per combination
    // (here 12) the runs and each class's fraction with its interval.
    let file = dir.join("summary.parquet");
    let (code, said, err) = common::bin::run(&[
        "summarize",
        out.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (batches, _) = metachron::parquet::read_parquet(&file).unwrap();
    let b = &batches[0];
    assert_eq!(b.num_rows(), 12);
    let lines: Vec<&str> = said.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        &header[..6],
        ["combo", "alpha", "beta", "k_p", "omega", "runs"]
    );
    let float = |name: &str, r: usize| {
        let a = b.column_by_name(name).unwrap();
        let a = a
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap();
        a.value(r)
    };
    // The first class column: "<class> [95 % interval]".
    assert_eq!(header[7], "[95", "{}", lines[0]);
    let class = header[6];
    for r in 0..12 {
        let row: Vec<&str> = lines[1 + r].split_whitespace().collect();
        let shown = format!("{} {} {}", row[6], row[7], row[8]);
        let want = format!(
            "{:.2} [{:.2}, {:.2}]",
            float(&format!("fraction_{class}"), r),
            float(&format!("fraction_{class}_lo"), r),
            float(&format!("fraction_{class}_hi"), r)
        );
        assert_eq!(shown, want, "row {r}: {}", lines[1 + r]);
        assert_eq!(row[5], "2", "runs of row {r}");
    }
    let (code, said, _) = common::bin::run(&["summarize", out.to_str().unwrap(), "--limit", "3"]);
    assert_eq!(code, 0);
    assert!(said.contains("… 9 more rows"), "{said}");
}

/// A zipped group whose members repeat values (three coupling laws: linear, damped,
/// stiffening) is told apart only by all its members: a facet, axis or `--where` on one
/// of them leaves two laws in a cell, and the other member is named; faceting by both
/// draws one panel per law.
#[test]
fn a_zipped_axis_that_does_not_tell_its_group_apart_is_named() {
    let dir = scratch("map-zipped-law");
    let file = dir.join("laws.toml");
    std::fs::write(
        &file,
        r#"name = "laws"
[base]
n_legs = 3
n_nodes = 3
t_final = 0.2
[[axes]]
param = "alpha"
values = [100.0, 300.0]
[[axes]]
param = "k_p"
values = [5.0, 20.0]
[[axes]]
param = "alpha_damping"
values = [0.0, 2.0, 0.0]
group = "law"
[[axes]]
param = "alpha_cubic"
values = [0.0, 0.0, 5.0e4]
group = "law"
"#,
    )
    .unwrap();
    let out = swept(&file, &dir.join("ds"));
    let map = |extra: &[&str]| displacement_map(&out, &dir.join("m.png"), extra);
    for (extra, named) in [
        (
            vec!["--facet", "alpha_damping"],
            "alpha_cubic` takes 2 values in the drawn rows (0, 50000)",
        ),
        (
            vec!["--where", "alpha_cubic=0"],
            "alpha_damping` takes 2 values in the drawn rows (0, 2)",
        ),
    ] {
        let (code, _, err) = map(&extra);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(named), "{extra:?}: {err}");
    }
    let (code, said, err) = map(&["--facet", "alpha_damping", "--facet", "alpha_cubic"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        said.contains("in 3 panels (alpha_damping = 0, alpha_cubic = 0; alpha_damping = 0, alpha_cubic = 50000; alpha_damping = 2, alpha_cubic = 0): 12 rows")
            && said.contains("into 12 cells (12 filled, 1 run per cell)"),
        "{said}"
    );
}

/// The cells of the rows of the first `<table>` after `heading` in `html` (the header
/// row left out), tags inside cells removed.
fn html_table(html: &str, heading: &str) -> Vec<Vec<String>> {
    let at = html.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let table = &html[at..];
    let table = &table[table.find("<table>").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    table
        .split("<tr>")
        .filter(|r| r.contains("<td>"))
        .map(|r| {
            r.split("<td>")
                .skip(1)
                .map(|c| c[..c.find("</td>").unwrap()].to_string())
                .collect()
        })
        .collect()
}

/// `summarize DIR --where ... --out FILE`: each combination's run count and first
/// class's "fraction [lo, hi]" by combination id, from the Parquet file, as the table
/// prints them; and the class.
fn summary_by_combo(
    ds: &Path,
    file: &Path,
    conditions: &[&str],
) -> (String, HashMap<String, (String, String)>) {
    let mut args = vec![
        "summarize",
        ds.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
    ];
    for c in conditions {
        args.extend(["--where", c]);
    }
    let (code, said, err) = common::bin::run(&args);
    assert_eq!(code, 0, "{err}");
    let (batches, _) = metachron::parquet::read_parquet(file).unwrap();
    let b = &batches[0];
    let class = said
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(6)
        .unwrap()
        .to_string();
    let float = |name: &str, r: usize| {
        b.column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap()
            .value(r)
    };
    let whole = |name: &str, r: usize| {
        let a = b.column_by_name(name).unwrap();
        let a = a.as_any();
        match a.downcast_ref::<arrow_array::UInt64Array>() {
            Some(x) => x.value(r),
            None => u64::from(
                a.downcast_ref::<arrow_array::UInt32Array>()
                    .unwrap()
                    .value(r),
            ),
        }
    };
    let mut out = HashMap::new();
    for r in 0..b.num_rows() {
        out.insert(
            whole("combo", r).to_string(),
            (
                whole("n_runs", r).to_string(),
                format!(
                    "{:.2} [{:.2}, {:.2}]",
                    float(&format!("fraction_{class}"), r),
                    float(&format!("fraction_{class}_lo"), r),
                    float(&format!("fraction_{class}_hi"), r)
                ),
            ),
        );
    }
    (class, out)
}

/// A report over two of three axes refuses the third as `map` does; `--facet` gives one
/// section per value, each with its maps and the table of its own rows (the numbers of
/// `summarize --where` of that value), `--where` one value's rows; `summarize --where`
/// summarises those rows only.
#[test]
fn a_report_has_a_section_per_facet_value_and_summarize_takes_where() {
    let dir = scratch("report-facets");
    let file = dir.join("three.toml");
    std::fs::write(&file, THREE_AXES).unwrap();
    let ds = swept(&file, &dir.join("ds"));
    let page = dir.join("r.html");
    let report = |extra: &[&str]| {
        let mut args = vec![
            "report",
            ds.to_str().unwrap(),
            "--out",
            page.to_str().unwrap(),
            "--no-exemplars",
        ];
        args.extend_from_slice(extra);
        common::bin::run(&args)
    };
    let (code, _, err) = report(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("axis `omega` takes 3 values in the drawn rows (1, 2, 3)")
            && err.contains("--facet omega"),
        "{err}"
    );

    let (code, said, err) = report(&["--facet", "omega"]);
    assert_eq!(code, 0, "{err}");
    assert!(said.contains("3 sections"), "{said}");
    let html = std::fs::read_to_string(&page).unwrap();
    let sections: Vec<&str> = html.split("<section class=\"facet\"").skip(1).collect();
    assert_eq!(sections.len(), 3);
    for (k, omega) in ["1", "2", "3"].iter().enumerate() {
        let s = sections[k];
        assert!(
            s.starts_with(&format!(" data-facet=\"omega = {omega}\" data-rows=\"8\">")),
            "{}",
            &s[..80]
        );
        let s = &s[..s.find("</section>").unwrap()];
        let (class, want) = summary_by_combo(
            &ds,
            &dir.join(format!("s{omega}.parquet")),
            &[&format!("omega={omega}")],
        );
        // The class map and a fraction map per class present, at least the class shown.
        assert!(s.matches("<figure>").count() >= 2, "section {omega}");
        let rows = html_table(s, "Class fractions per combination");
        assert_eq!(rows.len(), 4, "section {omega}: {rows:?}");
        let header = html_table_header(s);
        let at = |name: &str| header.iter().position(|h| h == name).unwrap();
        let shown = header
            .iter()
            .position(|h| *h == format!("{class} [95 % interval]"))
            .unwrap();
        for row in &rows {
            assert_eq!(row[at("omega")], *omega, "{row:?}");
            let (runs, fraction) = &want[&row[at("combo")]];
            assert_eq!((&row[at("runs")], &row[shown]), (runs, fraction), "{row:?}");
        }
    }

    let (code, _, err) = report(&["--where", "omega=2"]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<section class=\"facet\""));
    assert!(html.contains("8 of 24 rows: where omega=2"));
    let rows = html_table(&html, "Class fractions per combination");
    assert_eq!(rows.len(), 4);
    let header = html_table_header(&html[html.find("Class fractions per combination").unwrap()..]);
    let omega = header.iter().position(|h| h == "omega").unwrap();
    assert!(rows.iter().all(|r| r[omega] == "2"), "{rows:?}");

    // summarize --where: the rows of omega 2 only, in its table and its file.
    let (code, said, err) = common::bin::run(&[
        "summarize",
        ds.to_str().unwrap(),
        "--where",
        "omega=2rad/s",
        "--where",
        "k_p=10..",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    let (_, two) = summary_by_combo(&ds, &dir.join("s.parquet"), &["omega=2", "k_p=10.."]);
    assert_eq!(two.len(), 2);
    for line in &lines[1..] {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((cells[3], cells[4]), ("20", "2"), "{line}");
        let (runs, fraction) = &two[cells[0]];
        assert_eq!(
            (cells[5], format!("{} {} {}", cells[6], cells[7], cells[8])),
            (runs.as_str(), fraction.clone()),
            "{line}"
        );
    }
    let (code, _, err) =
        common::bin::run(&["summarize", ds.to_str().unwrap(), "--where", "omega=7"]);
    assert_eq!(code, 2);
    assert!(err.contains("no row meets every condition"), "{err}");
}

/// The header cells of the first `<table>` with `<th>` cells in `html`.
fn html_table_header(html: &str) -> Vec<String> {
    let at = html.find("<tr><th>").unwrap();
    let row = &html[at..];
    let row = &row[..row.find("</tr>").unwrap()];
    row.split("<th>")
        .skip(1)
        .map(|c| c[..c.find("</th>").unwrap()].to_string())
        .collect()
}
