//! `metachron replay`: a dataset row run again from its own parameters and the recorded
//! settings reproduces the row's metrics bit for bit on the engine that wrote it, and
//! writes what `simulate` writes, animation included.

use crate::common;

use std::path::{Path, PathBuf};

use common::scratch;
use metachron::dataset::rows::read_unverified as read_dataset;
use metachron::dataset::{Column, Rows};
use metachron::metrics::METRIC_COLUMNS;
use metachron::parquet::read_parquet;

/// Write `text` as `dir/NAME.toml` and sweep it on `backend` into `dir/NAME`.
fn sweep(dir: &Path, name: &str, text: &str, backend: &str) -> PathBuf {
    std::fs::write(dir.join(format!("{name}.toml")), text).unwrap();
    let (code, out, err) = common::bin::run_in(
        &[
            "sweep",
            &format!("{name}.toml"),
            "--out",
            name,
            "--backend",
            backend,
            "--quiet",
        ],
        dir,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    dir.join(name)
}

/// Random initial phases, two repeats, passive legs that strike the ground, a mix of
/// classes: 2 x 2 x 2 points of 1 s on the cpu engine (several SIMD blocks' worth).
const CPU_SWEEP: &str = "name = \"mixed\"\nseed = 7\nrepeats = 2\nrandom_phases = true\n\
    [base]\nt_final = 1.0\nactuated = \"first\"\n\
    [[axes]]\nparam = \"alpha\"\nvalues = [20.0, 2000.0]\n\
    [[axes]]\nparam = \"k_p\"\nvalues = [5.0, 500.0]\n";

fn num(ds: &Rows, name: &str, row: usize) -> f64 {
    match ds.column(name) {
        Some(Column::Num(v)) => v[row],
        other => panic!("{name}: {other:?}"),
    }
}

fn text(ds: &Rows, name: &str, row: usize) -> String {
    match ds.column(name) {
        Some(Column::Text(v)) => v[row].clone(),
        other => panic!("{name}: {other:?}"),
    }
}

/// Every metric, the status and the class of `replayed` (a `--metrics` file) against
/// row `row` of `ds`: (name, row value, replayed value) where the bits differ.
fn bit_differences(ds: &Rows, row: usize, replayed: &Rows) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (name, _) in METRIC_COLUMNS {
        let (a, b) = (num(ds, name, row), num(replayed, name, 0));
        if a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()) {
            out.push((name.to_string(), format!("{a:e}"), format!("{b:e}")));
        }
    }
    for name in ["status", "class"] {
        let (a, b) = (text(ds, name, row), text(replayed, name, 0));
        if a != b {
            out.push((name.to_string(), a, b));
        }
    }
    out
}

/// A one-file Parquet table read like a dataset (scalar columns).
fn read_one(path: &Path) -> Rows {
    let (batches, _) = read_parquet(path).unwrap();
    let mut ds = Rows::default();
    for b in batches {
        for (f, a) in b.schema().fields().iter().zip(b.columns()) {
            use arrow_array::{Array, Float64Array, StringArray};
            let any = a.as_any();
            let col = if let Some(x) = any.downcast_ref::<Float64Array>() {
                Column::Num((0..x.len()).map(|i| x.value(i)).collect())
            } else if let Some(x) = any.downcast_ref::<StringArray>() {
                Column::Text((0..x.len()).map(|i| x.value(i).to_string()).collect())
            } else {
                continue;
            };
            ds.columns.push((f.name().clone(), col));
        }
    }
    ds
}

#[test]
fn replayed_rows_equal_the_dataset_bit_for_bit_on_the_cpu_engine() {
    let dir = scratch("cpu");
    let ds_dir = sweep(&dir, "mixed", CPU_SWEEP, "cpu");
    let ds = read_dataset(&ds_dir).unwrap();
    assert_eq!(ds.len(), 8);
    let ids = ds.point_ids();
    let mut failures = Vec::new();
    for (row, &id) in ids.iter().enumerate() {
        let m = dir.join(format!("m{id}.parquet"));
        let (code, out, err) = common::bin::run_in(
            &[
                "replay",
                "mixed",
                "--point",
                &id.to_string(),
                "--metrics",
                m.to_str().unwrap(),
                "--quiet",
            ],
            &dir,
        );
        assert_eq!(code, 0, "point {id}: {out}\n{err}");
        assert!(out.contains("equal bit for bit"), "point {id}: {out}");
        let diffs = bit_differences(&ds, row, &read_one(&m));
        if !diffs.is_empty() {
            failures.push(format!("point {id}: {diffs:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // --combo/--repeat name the same row as its point id (id = combo * repeats + repeat).
    let row = ids.iter().position(|&i| i == 5).unwrap();
    let (combo, repeat) = (num(&ds, "combo", row), num(&ds, "repeat", row));
    assert_eq!((combo, repeat), (2.0, 1.0));
    let m = dir.join("combo.parquet");
    let (code, out, err) = common::bin::run_in(
        &[
            "replay",
            "mixed",
            "--combo",
            "2",
            "--repeat",
            "1",
            "--metrics",
            "combo.parquet",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("replay of point 5 (combo 2, repeat 1)"),
        "{out}"
    );
    assert!(bit_differences(&ds, row, &read_one(&m)).is_empty());
    // A row that does not exist names the ids that do.
    let (code, _, err) = common::bin::run_in(&["replay", "mixed", "--point", "99"], &dir);
    assert_eq!(code, 2);
    assert!(
        err.contains("--point 99: no such row") && err.contains("point ids 0..=7"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_reference_row_replays_bit_for_bit_on_the_reference() {
    let dir = scratch("reference");
    let sweep_text = "name = \"ref\"\n[base]\nt_final = 0.2\n\
        [[axes]]\nparam = \"beta\"\nvalues = [100.0, 1000.0]\n";
    let ds_dir = sweep(&dir, "ref", sweep_text, "reference");
    let ds = read_dataset(&ds_dir).unwrap();
    let row = ds.point_ids().iter().position(|&i| i == 1).unwrap();
    assert_eq!(text(&ds, "backend", row), "reference");
    let (code, out, err) = common::bin::run_in(
        &[
            "replay",
            "ref",
            "--point",
            "1",
            "--metrics",
            "m.parquet",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("backend reference"), "{out}");
    assert!(bit_differences(&ds, row, &read_one(&dir.join("m.parquet"))).is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn replay_writes_the_outputs_of_simulate_and_a_decodable_animation() {
    let dir = scratch("outputs");
    let sweep_text = "name = \"one\"\n[base]\nt_final = 0.5\n\
        [[axes]]\nparam = \"alpha\"\nvalues = [100.0, 500.0]\n";
    sweep(&dir, "one", sweep_text, "cpu");
    let (code, out, err) = common::bin::run_in(
        &[
            "replay",
            "one",
            "--point",
            "1",
            "--out",
            "ts.parquet",
            "--snapshots",
            "pics",
            "--animate",
            "walk.gif",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // The time series: one row per output sample, 0 to t_final every 0.01 s.
    let (batches, meta) = read_parquet(&dir.join("ts.parquet")).unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 51);
    assert!(meta
        .get("metachron.replay_of")
        .is_some_and(|v| v.ends_with("point 1")));
    assert!(dir.join("pics").join("basal_angles.png").exists());
    // The clip: 0.5 s in real time at 20 fps is a frame every 0.05 s of the run (11,
    // 0 and 0.5 included), then the closing frame held for 2 s.
    let file = std::fs::File::open(dir.join("walk.gif")).unwrap();
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut dec = opts.read_info(file).unwrap();
    let (w, h) = (dec.width(), dec.height());
    assert_eq!(w, 640);
    let mut delays = Vec::new();
    let mut first: Option<Vec<u8>> = None;
    let mut changed = false;
    while let Some(frame) = dec.read_next_frame().unwrap() {
        assert_eq!((frame.width, frame.height), (w, h));
        delays.push(frame.delay);
        // Not blank: dark ink on the white page; and the robot moves between frames.
        let dark = frame
            .buffer
            .chunks(4)
            .filter(|p| p[0] < 100 && p[1] < 100 && p[2] < 100)
            .count();
        assert!(dark > 500, "frame {}: {dark} dark pixels", delays.len());
        match &first {
            None => first = Some(frame.buffer.to_vec()),
            Some(f) => changed |= f.as_slice() != &frame.buffer[..],
        }
    }
    assert!(changed, "every frame is the same picture");
    let mut want = vec![5u16; 11];
    want.push(200);
    assert_eq!(delays, want);
    // Settings out of range name the flag; the gpu keeps no samples to draw.
    let (code, _, err) = common::bin::run_in(
        &["simulate", "--animate", "x.gif", "--animate-fps", "0"],
        &dir,
    );
    assert_eq!(code, 2);
    assert!(err.contains("--animate-fps 0: allowed is 1 to 50"), "{err}");
    let (code, _, err) = common::bin::run_in(
        &["simulate", "--backend", "gpu", "--animate", "x.gif"],
        &dir,
    );
    assert_eq!(code, 2);
    assert!(err.contains("--animate need the time series"), "{err}");
    assert!(!dir.join("x.gif").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_gpu_row_replays_on_the_cpu_twin_with_the_difference_stated() {
    if common::gpu::gpu_context("a_gpu_row_replays_on_the_cpu_twin").is_none() {
        return;
    }
    let dir = scratch("gpu");
    let sweep_text = "name = \"dev\"\n[base]\nt_final = 0.2\n\
        [[axes]]\nparam = \"alpha\"\nvalues = [100.0, 500.0]\n";
    let ds_dir = sweep(&dir, "dev", sweep_text, "gpu");
    let ds = read_dataset(&ds_dir).unwrap();
    let row = ds.point_ids().iter().position(|&i| i == 0).unwrap();
    assert_eq!(text(&ds, "backend", row), "gpu");
    let (code, out, err) = common::bin::run_in(
        &[
            "replay",
            "dev",
            "--point",
            "0",
            "--metrics",
            "m.parquet",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("written by the gpu engine, run on cpu"),
        "{out}"
    );
    assert!(
        out.contains("note: the row was computed by the gpu engine"),
        "{out}"
    );
    // The twins agree to round-off (docs/gpu.md; f32 adapters to ~1e-5).
    let replayed = read_one(&dir.join("m.parquet"));
    assert_eq!(text(&ds, "class", row), text(&replayed, "class", 0));
    for (name, _) in METRIC_COLUMNS {
        let (a, b) = (num(&ds, name, row), num(&replayed, name, 0));
        assert!(
            (a - b).abs() <= 1e-4 * a.abs().max(1e-3) || (a.is_nan() && b.is_nan()),
            "{name}: gpu {a} vs cpu {b}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Rewrite the part of the dataset in `ds_dir` that holds point `id` with its `metric`
/// changed by `change` (its digest and checksum made to match, as a writer would).
fn alter_row(ds_dir: &Path, id: u64, metric: &str, change: impl Fn(f64) -> f64) {
    use arrow_array::{Array, Float64Array, RecordBatch, UInt64Array};
    use std::sync::Arc;
    for shard in std::fs::read_dir(ds_dir).unwrap() {
        let shard = shard.unwrap().path();
        if !shard.is_dir() {
            continue;
        }
        for part in std::fs::read_dir(&shard).unwrap() {
            let part = part.unwrap().path();
            if part.extension().and_then(|e| e.to_str()) != Some("parquet") {
                continue;
            }
            let (batches, meta) = read_parquet(&part).unwrap();
            assert_eq!(batches.len(), 1, "{}", part.display());
            let b = &batches[0];
            let ids = b.column_by_name("point_id").unwrap();
            let ids = ids.as_any().downcast_ref::<UInt64Array>().unwrap();
            let Some(row) = (0..ids.len()).find(|&r| ids.value(r) == id) else {
                continue;
            };
            let at = b.schema().index_of(metric).unwrap();
            let old = b
                .column(at)
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap();
            let new: Float64Array = (0..old.len())
                .map(|r| {
                    Some(if r == row {
                        change(old.value(r))
                    } else {
                        old.value(r)
                    })
                })
                .collect();
            let mut columns = b.columns().to_vec();
            columns[at] = Arc::new(new);
            let b = RecordBatch::try_new(b.schema(), columns).unwrap();
            let mut meta: Vec<(String, String)> = meta.into_iter().collect();
            for (k, v) in metachron::dataset::part::integrity_metadata(&b).unwrap() {
                meta.retain(|(key, _)| *key != k);
                meta.push((k, v));
            }
            metachron::dataset::part::write_part(&part, &b, &meta).unwrap();
            return;
        }
    }
    panic!("no part holds point {id}");
}

/// On the f32 and the f64 kernel: a genuine gpu row replays within the tolerance its
/// kernel promises (exit 0), and the same row with a metric moved beyond it is outside
/// (exit 1), the metric named. An f64 row is held to round-off on every metric, so a
/// work changed by 1e-6 is outside; an f32 row holds its work to no bound.
#[test]
fn a_gpu_replays_exit_status_is_its_verdict_on_both_kernels() {
    if common::gpu::gpu_context("a_gpu_replays_exit_status_is_its_verdict").is_none() {
        return;
    }
    let dir = scratch("gpu-verdict");
    let text = "name = \"two\"\n[base]\nt_final = 1.0\nactuated = \"first\"\n\
        [[axes]]\nparam = \"alpha\"\nvalues = [20.0, 2000.0]\n";
    std::fs::write(dir.join("two.toml"), text).unwrap();
    for precision in ["f32", "f64"] {
        let (code, out, err) = common::bin::run_in(
            &[
                "sweep",
                "two.toml",
                "--out",
                precision,
                "--backend",
                "gpu",
                "--gpu-precision",
                precision,
                "--quiet",
            ],
            &dir,
        );
        assert_eq!(code, 0, "{out}\n{err}");
        let replay =
            |id: &str| common::bin::run_in(&["replay", precision, "--point", id, "--quiet"], &dir);
        for id in ["0", "1"] {
            let (code, out, err) = replay(id);
            assert!(
                out.contains("verdict: within the tolerance"),
                "{precision} {id}: {out}"
            );
            assert!(
                out.contains(&format!("the gpu {precision} kernel against")),
                "{precision}: {out}"
            );
            assert_eq!(code, 0, "{precision} {id}: {out}\n{err}");
        }
        let ds_dir = dir.join(precision);
        let moved = |x: f64| x + 0.05 * x.abs().max(0.1);
        alter_row(&ds_dir, 0, "displacement", moved);
        let (code, out, err) = replay("0");
        assert!(
            out.contains("verdict: outside the tolerance"),
            "{precision}: {out}\n{err}"
        );
        assert!(
            out.contains("beyond the bound: displacement"),
            "{precision}: {out}"
        );
        assert_eq!(code, 1, "{precision}: {out}");
        alter_row(&ds_dir, 1, "work", |x| x * (1.0 + 1e-6));
        let (code, out, _) = replay("1");
        match precision {
            "f64" => {
                assert!(out.contains("beyond the bound: work"), "{out}");
                assert_eq!(code, 1, "{out}");
            }
            _ => {
                assert!(out.contains("verdict: within the tolerance"), "{out}");
                assert_eq!(code, 0, "{out}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A cpu row with three metrics moved: the replay's comparison names each with the unit
/// the dataset stores it in (metres, radians, and the cost of transport said to be
/// dimensionless), and the simulate summary it prints carries units on every metric line.
#[test]
fn the_replays_per_metric_lines_carry_their_units() {
    let dir = scratch("replay-units");
    let text = "name = \"one\"\n[base]\nt_final = 1.0\nactuated = \"first\"\n\
        [[axes]]\nparam = \"alpha\"\nvalues = [500.0]\n";
    let ds_dir = sweep(&dir, "one", text, "cpu");
    alter_row(&ds_dir, 0, "displacement", |x| x + 1.0);
    alter_row(&ds_dir, 0, "mean_lag", |x| x + 0.5);
    alter_row(&ds_dir, 0, "cost_of_transport", |x| x + 2.0);
    let (code, out, err) = common::bin::run_in(&["replay", "one", "--point", "0", "--quiet"], &dir);
    assert_eq!(code, 1, "moved by 1 m, outside: {out}\n{err}");
    // The comparison's lines follow its heading (the summary above it names the
    // metrics in words).
    let comparison: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("against the dataset row"))
        .collect();
    assert!(!comparison.is_empty(), "no comparison: {out}");
    let line = |name: &str| {
        comparison
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {out}"))
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(line("displacement"), "m");
    assert_eq!(line("mean_lag"), "rad");
    assert_eq!(line("cost_of_transport"), "dimensionless");
    // The printed summary: mean lag in degrees, cost of transport dimensionless.
    let summary = |label: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label}: {out}"))
            .to_string()
    };
    assert!(summary("mean lag").ends_with(" deg"), "{out}");
    assert!(summary("displacement").ends_with(" m"), "{out}");
    assert!(summary("mean speed").ends_with(" m/s"), "{out}");
    assert!(summary("actuation work").ends_with(" J"), "{out}");
    assert!(
        summary("cost of transport").ends_with(" (dimensionless)"),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
