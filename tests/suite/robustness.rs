//! Robustness repeats: a jittered start (`phase_jitter`) and per-repeat ground
//! (`terrain_seed_per_repeat`) planned from the sweep's seed, written in every row,
//! killed mid-sweep and resumed with nothing lost on the cpu and gpu backends, and
//! summarised with Wilson intervals.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::scratch;
use common::sweep::{opts, run_sweep, spec_named};
use metachron::dataset::{rows, tree, Column, Rows};
use metachron::sweep::plan::repeat_terrain_seed;
use metachron::sweep::Plan;

/// 3 legs x 3 nodes, 0.4 s: K_p x phase_jitter, 3 jittered repeats each.
const JITTER: &str = r#"name = "jitter"
seed = 7
repeats = 3
[base]
n_legs = 3
n_nodes = 3
t_final = 0.4
[[axes]]
param = "k_p"
values = [100.0, 500.0]
[[axes]]
param = "phase_jitter"
values = [0.0, 0.4]
"#;

/// Rough ground everywhere, every repeat on its own, with a jittered start and
/// adaptive repeats (2, then up to 4).
const GROUND: &str = r#"name = "ground"
seed = 3
repeats = { min = 2, max = 4, ci_width = 0.5 }
terrain_seed_per_repeat = true
[base]
n_legs = 3
n_nodes = 3
t_final = 0.4
terrain = "rough"
terrain_start = -5.0
phase_jitter = 0.2
[[axes]]
param = "terrain_height"
values = [0.02, 0.08]
"#;

fn nums<'a>(ds: &'a Rows, name: &str) -> &'a [f64] {
    match ds.column(name) {
        Some(Column::Num(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

fn texts<'a>(ds: &'a Rows, name: &str) -> &'a [String] {
    match ds.column(name) {
        Some(Column::Text(v)) => v,
        other => panic!("{name}: {other:?}"),
    }
}

/// The planned starts: σ = 0 keeps the wave exactly (no psi_init), σ > 0 puts each leg
/// within σ of it with offsets that differ between repeats and are the same on a replan.
#[test]
fn jittered_starts_lie_within_sigma_of_the_wave_and_are_seeded() {
    let spec = spec_named(JITTER, "jitter");
    assert!(!spec.random_phases, "a jittered sweep starts from the wave");
    let plan = Plan::new(&spec).unwrap();
    assert_eq!(plan.points.len(), 12);
    let mut starts = Vec::new();
    for p in &plan.points {
        let q = &p.cfg.params;
        match q.phase_jitter {
            0.0 => assert_eq!(q.psi_init, None),
            s => {
                let psi = q.psi_init.clone().expect("a jittered start");
                for (i, a) in psi.iter().enumerate() {
                    let wave = q.psi1 + i as f64 * q.dphi;
                    assert!((a - wave).abs() <= s && a != &wave, "{psi:?}");
                }
                starts.push(psi);
            }
        }
    }
    assert_eq!(starts.len(), 6);
    for (i, a) in starts.iter().enumerate() {
        assert!(
            starts[i + 1..].iter().all(|b| b != a),
            "repeats share a start"
        );
    }
    let again = Plan::new(&spec).unwrap();
    for (a, b) in plan.points.iter().zip(&again.points) {
        assert_eq!(a.cfg.params.psi_init, b.cfg.params.psi_init);
    }
    // Another seed, other offsets.
    let other = spec_named(&JITTER.replace("seed = 7", "seed = 8"), "jitter");
    let other = Plan::new(&other).unwrap();
    assert_ne!(
        plan.points[3].cfg.params.psi_init,
        other.points[3].cfg.params.psi_init
    );
}

/// Repeat r runs on the ground of seed `repeat_terrain_seed(seed, r)` in every
/// combination; the repeats of one combination on different grounds.
#[test]
fn every_repeat_has_its_own_ground_shared_across_combinations() {
    let spec = spec_named(GROUND, "ground");
    let plan = Plan::new(&spec).unwrap();
    assert_eq!(plan.points.len(), 8);
    for p in &plan.points {
        let want = repeat_terrain_seed(3, p.repeat as u64);
        assert_eq!(p.cfg.params.terrain_seed, want);
        assert!(p.cfg.params.psi_init.is_some());
    }
    let seeds: std::collections::BTreeSet<usize> = plan
        .points
        .iter()
        .map(|p| p.cfg.params.terrain_seed)
        .collect();
    assert_eq!(seeds.len(), 4);
}

/// Files that would make a repeat option act on nothing, or be overridden, are refused
/// naming the key.
#[test]
fn repeat_options_that_cannot_act_are_refused() {
    let bad = [
        (
            GROUND.replace("terrain = \"rough\"", "terrain = \"flat\""),
            "rough",
        ),
        (
            GROUND.replace("phase_jitter = 0.2", "terrain_seed = 4"),
            "terrain_seed",
        ),
        (
            JITTER.replace("repeats = 3", "repeats = 3\nrandom_phases = true"),
            "phase_jitter",
        ),
    ];
    for (text, word) in bad {
        let e = metachron::sweep::SweepSpec::from_str_named(&text, "bad.toml", "bad")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.toml") && e.contains(word), "{e}");
    }
    let e = metachron::sweep::SweepSpec::from_str_named(
        &JITTER.replace("values = [0.0, 0.4]", "values = [0.0, -0.4]"),
        "bad.toml",
        "bad",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("phase_jitter") && e.contains("[0, "), "{e}");
}

/// Run `text` with the binary on `backend`, SIGKILL it when its first part appears,
/// then resume it: the resumed dataset and the parts written before the kill.
fn killed_then_resumed(
    dir: &Path,
    text: &str,
    backend: &str,
) -> (PathBuf, Vec<(PathBuf, Vec<u8>)>) {
    let file = dir.join("sweep.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let args = |resume: bool| {
        let mut a = vec![
            "sweep".to_string(),
            file.display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--backend".into(),
            backend.into(),
            "--batch".into(),
            "2".into(),
            "--quiet".into(),
        ];
        if resume {
            a.push("--resume".into());
        }
        a
    };
    let mut child = common::bin::command()
        .args(args(false))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while tree::part_files(&out).unwrap().is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(120), "no part appeared");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sweep ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = tree::part_files(&out)
        .unwrap()
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    let st = common::bin::command().args(args(true)).output().unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    (out, before)
}

/// After the kill and the resume: every planned point once, every part written before
/// the kill untouched, and `summarize` gives every class fraction and the waves' senses
/// with their Wilson intervals, one row per combination (the per-repeat terrain seed
/// left out: it describes runs, not the combination).
fn check_resumed(
    out: &Path,
    before: &[(PathBuf, Vec<u8>)],
    points: usize,
    combos: usize,
    seed_per_repeat: bool,
) -> Rows {
    for (p, bytes) in before {
        assert_eq!(&std::fs::read(p).unwrap(), bytes, "{} changed", p.display());
    }
    let ds = rows::read_unverified(out).unwrap();
    let mut ids = ds.point_ids();
    ids.sort_unstable();
    assert_eq!(ids, (0..points as u64).collect::<Vec<_>>());
    assert!(texts(&ds, "status").iter().all(|s| s == "ok"));
    let sum = out.with_file_name("summary.parquet");
    let (code, _, err) = common::bin::run(&[
        "summarize",
        out.to_str().unwrap(),
        "--out",
        sum.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (batches, _) = metachron::parquet::read_parquet(&sum).unwrap();
    let b = &batches[0];
    assert_eq!(b.num_rows(), combos);
    let col = |name: &str| -> Vec<f64> {
        let a = b
            .column_by_name(name)
            .unwrap_or_else(|| panic!("no {name}"));
        let f = a
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap();
        f.values().to_vec()
    };
    for what in ["metachronal", "antiphase", "direct", "retrograde"] {
        let (f, lo, hi) = (
            col(&format!("fraction_{what}")),
            col(&format!("fraction_{what}_lo")),
            col(&format!("fraction_{what}_hi")),
        );
        for k in 0..combos {
            // Round-off only: the interval's ends at k = 0 or n are sums of O(1) terms.
            let eps = 1e-12;
            assert!(
                lo[k] <= f[k] + eps && f[k] <= hi[k] + eps && hi[k] - lo[k] > 0.0,
                "{what}: {} [{}, {}]",
                f[k],
                lo[k],
                hi[k]
            );
        }
    }
    assert_eq!(b.column_by_name("terrain_seed").is_none(), seed_per_repeat);
    ds
}

#[test]
fn jittered_sweep_resumes_after_a_kill_on_the_cpu_with_nothing_lost() {
    let dir = scratch("jitter-cpu");
    let (out, before) = killed_then_resumed(&dir, JITTER, "cpu");
    let ds = check_resumed(&out, &before, 12, 4, false);
    // Bit for bit the rows of an uninterrupted run.
    let spec = spec_named(JITTER, "sweep");
    let full = dir.join("full");
    run_sweep(&spec, &opts(&full, 12, false));
    let all = rows::read_unverified(&full).unwrap();
    let key = |d: &Rows| {
        let ids = d.point_ids();
        let mut v: Vec<(u64, String)> = (0..d.len())
            .map(|i| {
                let row = d.columns.iter().map(|(n, c)| match c {
                    Column::Num(v) => format!("{n}={:?}", v[i].to_bits()),
                    Column::Text(v) => format!("{n}={}", v[i]),
                });
                (ids[i], row.collect::<Vec<_>>().join(";"))
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&ds), key(&all));
}

#[test]
fn ground_repeats_resume_after_a_kill_on_the_gpu_with_nothing_lost() {
    if common::gpu::gpu_context("ground_repeats_resume_on_the_gpu").is_none() {
        return;
    }
    let dir = scratch("ground-gpu");
    let (out, before) = killed_then_resumed(&dir, GROUND, "gpu");
    let ds = check_resumed(&out, &before, 8, 2, true);
    // Each row records its own ground.
    let seeds = nums(&ds, "terrain_seed");
    let reps = nums(&ds, "repeat");
    for (s, r) in seeds.iter().zip(reps) {
        assert_eq!(*s as usize, repeat_terrain_seed(3, *r as u64));
    }
    assert!(texts(&ds, "backend").iter().all(|b| b == "gpu"));
}

#[test]
fn jittered_sweep_resumes_after_a_kill_on_the_gpu_with_nothing_lost() {
    if common::gpu::gpu_context("jittered_sweep_resumes_on_the_gpu").is_none() {
        return;
    }
    let dir = scratch("jitter-gpu");
    let (out, before) = killed_then_resumed(&dir, JITTER, "gpu");
    let ds = check_resumed(&out, &before, 12, 4, false);
    // The starts are planned, not drawn by an engine: the gpu rows carry the psi_init
    // of an uninterrupted cpu run of the same file, point for point.
    let full = dir.join("full");
    run_sweep(&spec_named(JITTER, "sweep"), &opts(&full, 12, false));
    let cpu = rows::read_unverified(&full).unwrap();
    let starts = |d: &Rows| {
        let ids = d.point_ids();
        let col = d
            .columns
            .iter()
            .find(|(n, _)| n == "psi_init")
            .map(|(_, c)| c)
            .expect("a psi_init column");
        let mut v: Vec<(u64, String)> = (0..d.len())
            .map(|i| {
                let s = match col {
                    Column::Num(v) => format!("{:?}", v[i].to_bits()),
                    Column::Text(v) => v[i].clone(),
                };
                (ids[i], s)
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(starts(&ds), starts(&cpu));
    assert!(texts(&ds, "backend").iter().all(|b| b == "gpu"));
}

#[test]
fn ground_repeats_resume_after_a_kill_on_the_cpu_with_nothing_lost() {
    let dir = scratch("ground-cpu");
    let (out, before) = killed_then_resumed(&dir, GROUND, "cpu");
    let ds = check_resumed(&out, &before, 8, 2, true);
    let seeds = nums(&ds, "terrain_seed");
    let reps = nums(&ds, "repeat");
    for (s, r) in seeds.iter().zip(reps) {
        assert_eq!(*s as usize, repeat_terrain_seed(3, *r as u64));
    }
}
