//! A dataset is checked before it is trusted: a foreign Parquet file, a corrupted part
//! and a second writer are each caught; `--resume` runs again exactly the points it
//! cannot trust and `metachron check` says what it found.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{StringArray, UInt64Array};
use arrow_schema::DataType;
use common::scratch;
use common::sweep::opts;
use metachron::dataset::verify::{self, Defect};
use metachron::dataset::{part, rows, tree, Column, Rows};
use metachron::parquet::{field, write_atomic, TableBuilder};
use metachron::sweep::run;
use metachron::sweep::{Plan, SweepSpec};

/// 40 cheap points (3 legs x 3 nodes, 0.2 s).
const SWEEP: &str = r#"name = "integrity"
[base]
n_legs = 3
n_nodes = 3
t_final = 0.2
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 8 }
[[axes]]
param = "beta"
values = [50.0, 100.0, 200.0, 400.0, 800.0]
"#;

fn spec() -> SweepSpec {
    common::sweep::spec_named(SWEEP, "integrity")
}

/// Run (or resume) the sweep; returns (already done, run now, quarantined files).
fn run_sweep(
    out: &Path,
    batch: usize,
    resume: bool,
    stop: Option<usize>,
) -> (usize, usize, Vec<Defect>) {
    let mut o = opts(out, batch, resume);
    o.stop_after_chunks = stop;
    let (done, quarantined, s) = common::sweep::run_sweep(&spec(), &o);
    (done, s.points_run, quarantined)
}

fn sorted_ids(ds: &Rows) -> Vec<u64> {
    let mut ids = ds.point_ids();
    ids.sort();
    ids
}

fn num(ds: &Rows, name: &str, id: u64) -> f64 {
    let row = ds.point_ids().iter().position(|&i| i == id).unwrap();
    match ds.column(name) {
        Some(Column::Num(v)) => v[row],
        _ => panic!("no numeric column {name}"),
    }
}

fn check(dir: &Path) -> (i32, String) {
    let o = common::bin::command()
        .args(["check", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), text)
}

/// 20 of 40 points plus a small foreign file beside the parts (what DuckDB's
/// `COPY (SELECT point_id, class FROM ...) TO 'DIR/summary.parquet'` writes) and one
/// dropped into the shard's directory under a part's name: the first is reported and
/// never moved, the second is quarantined; neither counts.
#[test]
fn a_foreign_file_is_quarantined_and_its_points_are_not_counted() {
    let dir = scratch("foreign");
    let out = dir.join("out");
    let (_, ran, _) = run_sweep(&out, 5, false, Some(4));
    assert_eq!(ran, 20);
    let mut t = TableBuilder::default();
    t.push(
        field("point_id", DataType::UInt64, "1"),
        Arc::new(UInt64Array::from((0..40u64).collect::<Vec<_>>())),
    );
    t.push(
        field("class", DataType::Utf8, ""),
        Arc::new(StringArray::from(vec!["locked"; 40])),
    );
    let table = t.finish().unwrap();
    let foreign = out.join("summary.parquet");
    write_atomic(&foreign, &table, &[]).unwrap();
    let kept = std::fs::read(&foreign).unwrap();
    let posing = out.join("shard=0/part-000000020.parquet");
    write_atomic(&posing, &table, &[]).unwrap();

    // The runner's reader never mixes either in (map panicked on such a file).
    let ds = rows::read_unverified(&out);
    assert!(
        ds.as_ref()
            .is_err_and(|e| e.to_string().contains("part-000000020")),
        "{ds:?}"
    );
    let (code, text) = check(&out);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("summary.parquet: a Parquet file that is not a part")
            && text.contains("part-000000020.parquet: no checksum file")
            && text.contains("20 point ids missing"),
        "{text}"
    );

    let (done, ran, q) = run_sweep(&out, 5, true, None);
    assert_eq!((done, ran), (20, 20));
    assert!(matches!(q.as_slice(), [Defect::NoChecksum(_)]), "{q:?}");
    assert_eq!(
        std::fs::read(&foreign).unwrap(),
        kept,
        "the foreign file moved"
    );
    assert!(out
        .join("quarantine/shard=0__part-000000020.parquet.quarantined")
        .exists());
    let reason = std::fs::read_to_string(
        out.join("quarantine/shard=0__part-000000020.parquet.quarantined.reason.txt"),
    )
    .unwrap();
    assert!(reason.contains("no checksum file"), "{reason}");
    let ds = rows::read_unverified(&out).unwrap();
    assert_eq!(sorted_ids(&ds), (0..40).collect::<Vec<_>>());
    // Complete, but the quarantined and the foreign file keep it from being clean.
    let (code, text) = check(&out);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("complete") && text.contains("QUARANTINED"),
        "{text}"
    );
    std::fs::remove_dir_all(out.join("quarantine")).unwrap();
    let (code, text) = check(&out);
    assert_eq!(code, 1, "{text}");
    std::fs::remove_file(&foreign).unwrap();
    let (code, text) = check(&out);
    assert_eq!(code, 0, "{text}");
}

/// Offsets of the little-endian bytes of `x` in `bytes`.
fn find_f64(bytes: &[u8], x: f64) -> Vec<usize> {
    let pat = x.to_le_bytes();
    bytes
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == pat)
        .map(|(i, _)| i)
        .collect()
}

/// A flipped bit inside a part's data pages: the part's bytes no longer match its
/// checksum file. Written with a matching checksum file (a part rewritten by hand), the
/// changed value still fails the value digest. Either way only its points run again.
#[test]
fn a_corrupted_part_is_caught_and_only_its_points_run_again() {
    let dir = scratch("flip");
    let full = dir.join("full");
    run_sweep(&full, 8, false, None);
    let reference = rows::read_unverified(&full).unwrap();
    let part = tree::part_files(&full).unwrap()[1].clone();
    let sum = metachron::dataset::schema::checksum_path(&part);
    let original = std::fs::read(&part).unwrap();
    let original_sum = std::fs::read(&sum).unwrap();
    let exp = run::expected(&spec()).unwrap();
    let good = verify::check_part(&part, &exp).unwrap();

    // A value whose 8 bytes appear once in the file (stored plainly in the dictionary
    // page; the column's min and max also sit in its statistics, so not those).
    let (id, value, at) = good
        .ids
        .iter()
        .map(|&id| {
            let v = num(&reference, "mean_frequency", id);
            (id, v, find_f64(&original, v))
        })
        .find(|(_, _, at)| at.len() == 1)
        .expect("some mean_frequency stored exactly once");
    let mut bytes = original.clone();
    bytes[at[0]] ^= 0x01; // lowest mantissa bit: still a valid, plausible number
    std::fs::write(&part, &bytes).unwrap();
    assert!(matches!(
        verify::check_part(&part, &exp).unwrap_err(),
        Defect::Checksum(_)
    ));
    std::fs::write(&sum, part::Checksum::of(&bytes).to_text()).unwrap();
    assert_eq!(verify::check_part(&part, &exp).unwrap_err(), Defect::Digest);
    std::fs::write(&sum, &original_sum).unwrap();

    // Every other single-byte flip, anywhere: rejected.
    for pos in (0..original.len()).step_by((original.len() / 60).max(1)) {
        let mut bytes = original.clone();
        bytes[pos] ^= 0x5a;
        std::fs::write(&part, &bytes).unwrap();
        assert!(
            verify::check_part(&part, &exp).is_err(),
            "flip at {pos} accepted"
        );
    }

    // Resume: the corrupted part goes to quarantine, its points (and only they) rerun,
    // and the dataset equals the uninterrupted one, 40 rows.
    let mut bytes = original.clone();
    bytes[at[0]] ^= 0x01;
    std::fs::write(&part, &bytes).unwrap();
    let (done, ran, q) = run_sweep(&full, 8, true, None);
    assert!(matches!(q.as_slice(), [Defect::Checksum(_)]), "{q:?}");
    assert_eq!((done, ran), (32, 8));
    let after = rows::read_unverified(&full).unwrap();
    assert_eq!(sorted_ids(&after), (0..40).collect::<Vec<_>>());
    assert_eq!(num(&after, "mean_frequency", id).to_bits(), value.to_bits());
}

/// Two writers on one dataset: the second is refused at once, and a `--resume` beside
/// a running sweep never deletes its in-flight temporary.
#[test]
fn a_second_writer_fails_at_once_naming_the_holder_and_touches_nothing() {
    let dir = scratch("lock");
    let out = dir.join("out");
    let spec = spec();
    let plan = Plan::new(&spec).unwrap();
    let first = run::work(&spec, &plan, &opts(&out, 5, false)).unwrap();
    // The first writer's chunk in flight.
    let in_flight = out.join("shard=0/.part-000000000.parquet.tmp-4242");
    std::fs::write(&in_flight, b"half a part").unwrap();

    for resume in [false, true] {
        let e = run::work(&spec, &plan, &opts(&out, 5, resume))
            .err()
            .expect("second writer refused")
            .to_string();
        assert!(
            e.contains("locked by another writer")
                && e.contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        assert!(e.contains("host ") && e.contains("started "), "{e}");
    }
    // The same through the binary: exit 2 at once, the holder named.
    let file = dir.join("integrity.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let o = common::bin::command()
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
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("locked by another writer"), "{err}");
    assert!(in_flight.exists(), "the in-flight temporary was removed");

    // The holder finishes; the lock goes with it, and a later resume cleans up.
    run::run(&spec, &first.pending, &opts(&out, 5, false), |_| {}).unwrap();
    drop(first);
    let (done, ran, q) = run_sweep(&out, 5, true, None);
    assert_eq!((done, ran, q.len()), (40, 0, 0));
    assert!(
        !in_flight.exists(),
        "stale temporary kept after the writer ended"
    );
    assert_eq!(rows::read_unverified(&out).unwrap().len(), 40);
}

/// Parts of another shard in the wrong directory are not trusted either; a writer of
/// a different sweep file is refused outright (the dataset is never quarantined
/// wholesale).
#[test]
fn other_sweeps_and_misplaced_parts_are_not_trusted() {
    let dir = scratch("other");
    let out = dir.join("out");
    run_sweep(&out, 10, false, None);
    let other = SweepSpec::from_str_named(
        &SWEEP.replace("t_final = 0.2", "t_final = 0.1"),
        "o.toml",
        "o",
    )
    .unwrap();
    let plan = Plan::new(&other).unwrap();
    let e = run::work(&other, &plan, &opts(&out, 10, true))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("different sweep file"), "{e}");
    assert!(!out.join("quarantine").exists());

    // A good part copied into another shard's directory.
    let part = tree::part_files(&out).unwrap()[0].clone();
    std::fs::create_dir_all(out.join("shard=1")).unwrap();
    std::fs::copy(&part, out.join("shard=1/part-000000000.parquet")).unwrap();
    std::fs::copy(
        metachron::dataset::schema::checksum_path(&part),
        out.join("shard=1/part-000000000.parquet.sum"),
    )
    .unwrap();
    let exp = run::expected(&spec()).unwrap();
    let scan = verify::scan(&out, &exp).unwrap();
    assert_eq!(scan.bad.len(), 1, "{:?}", scan.bad);
    assert!(
        matches!(
            scan.bad[0].1,
            Defect::Duplicate { .. } | Defect::WrongDirectory { .. }
        ),
        "{:?}",
        scan.bad
    );
    assert_eq!(scan.done_ids().len(), 40);
}

/// `map` never panics, whatever the directory holds: each case is a clear error (exit
/// 2) naming the file or the column, or a map.
#[test]
fn map_never_panics_on_any_directory() {
    let dir = scratch("map-any");
    let good = dir.join("good");
    run_sweep(&good, 10, false, None);
    let part = tree::part_files(&good).unwrap()[0].clone();
    let bytes = std::fs::read(&part).unwrap();
    let mut cases: Vec<(&str, PathBuf)> = Vec::new();
    let mk = |name: &str| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    cases.push(("empty", mk("empty")));
    let d = mk("garbage");
    std::fs::write(d.join("x.parquet"), b"PAR1 not really").unwrap();
    cases.push(("garbage", d));
    let d = mk("truncated");
    std::fs::write(d.join("p.parquet"), &bytes[..bytes.len() / 2]).unwrap();
    cases.push(("truncated", d));
    let d = mk("foreign");
    let mut t = TableBuilder::default();
    t.push(
        field("point_id", DataType::UInt64, "1"),
        Arc::new(UInt64Array::from(vec![0u64, 1])),
    );
    write_atomic(&d.join("a.parquet"), &t.finish().unwrap(), &[]).unwrap();
    cases.push(("foreign", d));
    let d = mk("twice");
    std::fs::copy(&part, d.join("a.parquet")).unwrap();
    std::fs::copy(&part, d.join("b.parquet")).unwrap();
    cases.push(("twice", d));
    for k in [100usize, 1000, 3000, 6000] {
        let d = mk(&format!("flip{k}"));
        let mut b = bytes.clone();
        let at = k.min(b.len() - 9);
        b[at] ^= 0xff;
        std::fs::write(d.join("p.parquet"), &b).unwrap();
        cases.push(("flipped", d));
    }
    cases.push(("not a directory", part.clone()));
    for (what, d) in cases {
        let o = common::bin::command()
            .args(["map", d.to_str().unwrap(), "--x", "alpha", "--y", "beta"])
            .arg("--out")
            .arg(dir.join("m.png"))
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(0) | Some(2)) && !e.contains("panicked"),
            "{what}: {:?} {e}",
            o.status
        );
    }
}
