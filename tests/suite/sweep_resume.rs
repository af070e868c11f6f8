//! Sweep runs end to end: an interrupted sweep resumed with `--resume` gives exactly
//! the rows of an uninterrupted one (stopped by the library's hook, and killed for
//! real mid-run), shards read as one dataset, the Parquet parts are self-describing,
//! and maps are drawn.

use crate::common;

use std::time::{Duration, Instant};

use common::scratch;
use common::sweep::opts;
use metachron::dataset::{rows, tree, Column, Rows};
use metachron::output::map::{draw_map, MapRequest};
use metachron::sweep::run::{self, RunOptions};
use metachron::sweep::{Plan, Shard, SweepSpec};

/// A cheap sweep: 3 legs x 3 nodes, 0.3 s, 4 x 3 points x 2 repeats with random phases.
const SMALL: &str = r#"name = "small"
seed = 5
repeats = 2
[base]
n_legs = 3
n_nodes = 3
t_final = 0.3
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 4 }
[[axes]]
param = "actuated"
values = ["all", "first", [0, 1, 0]]
"#;

fn run_all(spec: &SweepSpec, o: &RunOptions) -> run::RunSummary {
    crate::common::sweep::run_sweep(spec, o).2
}

/// Rows as comparable text, sorted by point id (NaN compares equal to NaN).
fn rows(ds: &Rows) -> Vec<String> {
    let ids = ds.point_ids();
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| ids[i]);
    order
        .iter()
        .map(|&i| {
            ds.columns
                .iter()
                .map(|(n, c)| match c {
                    Column::Num(v) => format!("{n}={:?}", v[i].to_bits()),
                    Column::Text(v) => format!("{n}={}", v[i]),
                })
                .collect::<Vec<_>>()
                .join(";")
        })
        .collect()
}

#[test]
fn stopped_then_resumed_equals_uninterrupted() {
    let spec = SweepSpec::from_str_named(SMALL, "small.toml", "small").unwrap();
    assert_eq!(spec.point_count(), 24);
    let full = scratch("resume-full");
    let s = run_all(&spec, &opts(&full, 5, false));
    assert_eq!((s.points_run, s.chunks_written), (24, 5));

    let part = scratch("resume-part");
    let mut o = opts(&part, 5, false);
    o.stop_after_chunks = Some(2);
    let s = run_all(&spec, &o);
    assert!(s.stopped);
    assert_eq!(s.points_run, 10);
    assert_eq!(tree::part_files(&part).unwrap().len(), 2);
    // Without --resume an existing dataset is refused.
    let plan = Plan::new(&spec).unwrap();
    let e = run::work(&spec, &plan, &opts(&part, 5, false))
        .err()
        .expect("refused");
    assert!(e.to_string().contains("--resume"), "{e}");
    // Resume, with a different batch size: only the 14 missing points run.
    let mut o = opts(&part, 4, false);
    o.resume = true;
    let work = run::work(&spec, &plan, &o).unwrap();
    assert_eq!((work.already_done, work.pending.len()), (10, 14));
    run::run(&spec, &work.pending, &o, |_| {}).unwrap();
    drop(work); // the shard's writer lock goes with it

    let a = rows::read_unverified(&full).unwrap();
    let b = rows::read_unverified(&part).unwrap();
    assert_eq!(a.len(), 24);
    assert_eq!(rows(&a), rows(&b));
    let mut ids = b.point_ids();
    ids.sort_unstable();
    assert_eq!(ids, (0..24).collect::<Vec<u64>>());

    // A different sweep file is refused in that directory.
    let other =
        SweepSpec::from_str_named(&SMALL.replace("seed = 5", "seed = 6"), "o.toml", "o").unwrap();
    let plan = Plan::new(&other).unwrap();
    let e = run::work(&other, &plan, &o).err().expect("refused");
    assert!(e.to_string().contains("different sweep"), "{e}");
}

#[test]
fn a_raised_stop_flag_ends_the_sweep_after_the_chunk_in_flight() {
    let spec = SweepSpec::from_str_named(SMALL, "small.toml", "small").unwrap();
    let plan = Plan::new(&spec).unwrap();
    let dir = scratch("resume-stop-flag");
    let o = opts(&dir, 5, false);
    let work = run::work(&spec, &plan, &o).unwrap();
    // Raised while the second chunk is written, from a clone (as an interrupted
    // caller's thread holds one): that chunk is kept, no third one starts.
    let flag = o.stop.clone();
    let s = run::run(&spec, &work.pending, &o, |done| {
        if done >= 10 {
            flag.raise();
        }
    })
    .unwrap();
    drop(work);
    assert!(s.stopped);
    assert_eq!((s.points_run, s.chunks_written), (10, 2));
    assert_eq!(tree::part_files(&dir).unwrap().len(), 2);
    // A resume with a fresh flag runs only what is missing.
    let (done, _, s) = crate::common::sweep::run_sweep(&spec, &opts(&dir, 5, true));
    assert_eq!((done, s.points_run, s.stopped), (10, 14, false));
}

#[test]
fn shards_write_one_dataset() {
    let spec = SweepSpec::from_str_named(SMALL, "small.toml", "small").unwrap();
    let dir = scratch("shards");
    for k in 0..3 {
        let mut o = opts(&dir, 8, false);
        o.shard = Shard::new(k, 3).unwrap();
        o.resume = k > 0; // later shards join the existing dataset
        run_all(&spec, &o);
    }
    let ds = rows::read_unverified(&dir).unwrap();
    let mut ids = ds.point_ids();
    ids.sort_unstable();
    assert_eq!(ids, (0..24).collect::<Vec<u64>>());
    // A resuming shard leaves other shards' in-flight temporaries alone.
    let busy = dir.join("shard=0/.part-000000099.parquet.tmp-1");
    std::fs::write(&busy, b"being written").unwrap();
    let mut o = opts(&dir, 8, false);
    o.shard = Shard::new(1, 3).unwrap();
    o.resume = true;
    assert_eq!(run_all(&spec, &o).points_run, 0);
    assert!(busy.exists());
    for k in 0..3 {
        assert!(dir.join(format!("shard={k}")).is_dir());
    }
}

#[test]
fn parts_are_typed_with_units_and_self_describing_metadata() {
    let spec = SweepSpec::from_str_named(SMALL, "small.toml", "small").unwrap();
    let dir = scratch("roundtrip");
    run_all(&spec, &opts(&dir, 24, false));
    let files = tree::part_files(&dir).unwrap();
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("shard=0/part-000000000.parquet"));
    let (batches, meta) = metachron::parquet::read_parquet(&files[0]).unwrap();
    let schema = batches[0].schema();
    let ty = |n: &str| schema.field_with_name(n).unwrap().data_type().clone();
    let unit = |n: &str| {
        schema
            .field_with_name(n)
            .unwrap()
            .metadata()
            .get("unit")
            .cloned()
    };
    use arrow_schema::DataType;
    assert_eq!(ty("point_id"), DataType::UInt64);
    assert_eq!(ty("repeat"), DataType::UInt32);
    assert_eq!(ty("n_legs"), DataType::UInt32);
    assert_eq!(ty("alpha"), DataType::Float64);
    assert_eq!(ty("class"), DataType::Utf8);
    assert_eq!(ty("wave_direction"), DataType::Int8);
    assert_eq!(ty("wave_sense"), DataType::Utf8);
    assert_eq!(ty("step"), DataType::Float64);
    assert_eq!(unit("alpha").as_deref(), Some("N/m"));
    assert_eq!(unit("mean_lag").as_deref(), Some("rad"));
    assert_eq!(unit("step").as_deref(), Some("s"));
    assert_eq!(meta["metachron.sweep"], SMALL);
    assert_eq!(meta["metachron.version"], metachron::VERSION);
    assert_eq!(meta["metachron.backend"], "cpu");
    assert_eq!(meta["metachron.scheme"], "dkd-dc");
    assert!(meta["metachron.adapter"].contains("rayon"));
    assert!(meta["metachron.thresholds"].contains("plv_min"));
    assert!(meta["metachron.fixed_step"].contains("max_step"));

    let ds = rows::read_unverified(&dir).unwrap();
    assert_eq!(ds.len(), 24);
    let Some(Column::Text(status)) = ds.column("status") else {
        panic!("status")
    };
    assert!(status.iter().all(|s| s == "ok"), "{status:?}");
    let Some(Column::Num(step)) = ds.column("step") else {
        panic!("step")
    };
    assert!(step.iter().all(|&h| h > 0.0 && h <= 2.5e-4));
    let Some(Column::Text(act)) = ds.column("actuated") else {
        panic!("actuated")
    };
    assert_eq!(act[0], "1,1,1");
    assert_eq!(act[2], "1,0,0");
    let Some(Column::Text(psi)) = ds.column("psi_init") else {
        panic!("psi_init")
    };
    assert_ne!(psi[0], psi[1], "repeats start from different random phases");

    // --validate: re-run 2 random points on the reference; the cpu rows agree with it.
    let v = run::validate(&spec, &Plan::new(&spec).unwrap(), &opts(&dir, 24, false), 2).unwrap();
    assert_eq!((v.points, v.class_agree), (2, 2));
    let lag = v
        .max_abs_diff
        .iter()
        .find(|(m, _)| m == "lag_order")
        .unwrap()
        .1;
    assert!(lag < 1e-4, "lag order differs by {lag}");
    let csv = std::fs::read_to_string(&v.path).unwrap();
    assert_eq!(csv.lines().count(), 3);
    assert!(csv.starts_with("point_id,sweep_backend,"));
    // The report is not a part file: the dataset still reads as the sweep's rows.
    assert_eq!(rows::read_unverified(&dir).unwrap().len(), 24);

    // Maps: a numeric metric (repeats averaged, log x) and the class.
    // Pictures go beside the dataset: its directory holds only what the sweep wrote.
    let maps = scratch("roundtrip-maps");
    let png = maps.join("lag.png");
    let s = draw_map(
        &ds,
        &MapRequest {
            x: "alpha".into(),
            y: "actuated".into(),
            metric: "lag_order".into(),
        },
        &png,
    )
    .unwrap();
    assert_eq!((s.cells, s.filled_cells), (12, 12));
    assert!(s.x_log && !s.y_log);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG");
    let s = draw_map(
        &ds,
        &MapRequest {
            x: "alpha".into(),
            y: "actuated".into(),
            metric: "class".into(),
        },
        &maps.join("class.png"),
    )
    .unwrap();
    assert_eq!(s.filled_cells, 12);
    let e = draw_map(
        &ds,
        &MapRequest {
            x: "alpha".into(),
            y: "gamma".into(),
            metric: "class".into(),
        },
        &maps.join("bad.png"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no column `gamma`"), "{e}");
}

/// The real thing: the binary is killed (SIGKILL) as soon as its first part file
/// appears, a stale temporary is left behind, and `--resume` completes the sweep with
/// exactly the rows of an uninterrupted run.
#[test]
fn killed_binary_then_resume_equals_uninterrupted() {
    let dir = scratch("killed");
    // 9 legs, 1 s: ~30 ms per point per thread, 16 chunks of 2 points.
    let text = "name = \"kill\"\n[base]\nt_final = 1.0\n[[axes]]\nparam = \"beta\"\nlogspace = { start = 50.0, stop = 5000.0, num = 32 }\n";
    let file = dir.join("kill.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let mut child = common::bin::command()
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--batch",
            "2",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while tree::part_files(&out).unwrap().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no part file appeared"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("sweep ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let written = tree::part_files(&out).unwrap().len();
    assert!(
        written < 16,
        "the kill came after the end ({written} parts)"
    );
    // What a kill during a write leaves: a hidden temporary, invisible to readers.
    let stale = out.join("shard=0/.part-000000030.parquet.tmp-999999");
    std::fs::write(&stale, b"half a file").unwrap();
    assert_eq!(tree::part_files(&out).unwrap().len(), written);

    // Without --resume: refused (exit code 2).
    let st = common::bin::command()
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&st.stderr).contains("--resume"));
    let st = common::bin::command()
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--resume",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(!stale.exists(), "stale temporary removed on resume");

    let spec = SweepSpec::from_str_named(text, "kill.toml", "kill").unwrap();
    let full = dir.join("full");
    run_all(&spec, &opts(&full, 32, false));
    let a = rows::read_unverified(&full).unwrap();
    let b = rows::read_unverified(&out).unwrap();
    assert_eq!(a.len(), 32);
    assert_eq!(rows(&a), rows(&b));
}

#[test]
fn cli_dry_run_prints_the_plan_and_bad_files_exit_2() {
    let dir = scratch("cli");
    let file = dir.join("s.toml");
    std::fs::write(&file, SMALL).unwrap();
    let o = common::bin::command()
        .args(["sweep", file.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        s.contains("= 24 points") && s.contains("estimated time"),
        "{s}"
    );
    std::fs::write(
        &file,
        SMALL.replace("n_legs = 3", "n_legs = 3\nalphaa = 5.0"),
    )
    .unwrap();
    let o = common::bin::command()
        .args(["sweep", file.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("s.toml") && e.contains("alphaa"), "{e}");
}
