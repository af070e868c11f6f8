//! A dataset is what its manifest says, and nothing else is touched: links are never
//! followed, files that are not the dataset's are reported and never moved, a parent
//! folder is refused as `--out`, writers of another sweep, shard layout, backend or
//! format version are refused however close in time they start, every byte of a part
//! is checked, readers refuse what `check` would not pass, and `check` knows refined
//! and adaptive sweeps. Values in the environment that cannot mean anything are errors.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::sweep::{checked, read_verified};
use common::scratch;
use common::sweep::REFINED;
use common::sweep::{opts, run_sweep, spec_named};
use metachron::dataset::verify::{self, Defect};
use metachron::dataset::{part, tree};
use metachron::sweep::atlas::{run_adaptive, run_refined, AdaptiveOutcome, RefineOutcome};
use metachron::sweep::run;
use metachron::sweep::{Plan, SweepSpec};

/// 16 cheap points (3 legs x 3 nodes, 0.2 s).
const SWEEP: &str = r#"name = "trust"
[base]
n_legs = 3
n_nodes = 3
t_final = 0.2
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 4 }
[[axes]]
param = "beta"
values = [50.0, 100.0, 200.0, 400.0]
"#;

/// The same grid, another sweep (another t_final).
fn other_sweep() -> String {
    SWEEP
        .replace("t_final = 0.2", "t_final = 0.1")
        .replace("\"trust\"", "\"other\"")
}

fn spec_of(text: &str) -> SweepSpec {
    spec_named(text, "trust")
}

/// Run (or resume) `text` into `out` through the library.
fn run_lib(text: &str, out: &Path, batch: usize) -> run::RunSummary {
    run_sweep(&spec_of(text), &opts(out, batch, true)).2
}

fn bin(args: &[&str]) -> Output {
    common::bin::command().args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file and link under `dir` (links not followed): path -> bytes (a link: its
/// target, prefixed).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            let p = e.path();
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(p, format!("link -> {}", t.display()).into_bytes());
            } else if ft.is_dir() {
                stack.push(p);
            } else if [".writer.lock", ".manifest.lock", ".verified.json"]
                .contains(&e.file_name().to_str().unwrap_or(""))
            {
                // Rewritten by every writer (the holder) or reader (a cache).
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `snapshot` restricted to what lies outside `inside`.
fn outside(snap: &BTreeMap<PathBuf, Vec<u8>>, inside: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    snap.iter()
        .filter(|(p, _)| !p.starts_with(inside))
        .map(|(p, b)| (p.clone(), b.clone()))
        .collect()
}

fn write_sweep(dir: &Path, name: &str, text: &str) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

#[test]
fn links_are_never_followed_and_nothing_outside_the_dataset_moves() {
    let root = scratch("links");
    let ds = root.join("ds");
    run_lib(SWEEP, &ds, 4);
    // Another dataset beside it, reachable through a link inside ds.
    let other = root.join("other");
    run_lib(&other_sweep(), &other, 4);
    std::os::unix::fs::symlink("..", ds.join("shard=0/up")).unwrap();
    std::os::unix::fs::symlink(&other, ds.join("shard=0/elsewhere")).unwrap();
    std::os::unix::fs::symlink(other.join("shard=0"), ds.join("shard=1")).unwrap();
    let file = write_sweep(&root, "trust.toml", SWEEP);
    let before = snapshot(&root);

    let o = bin(&["sweep", s(&file), "--out", s(&ds), "--resume", "--quiet"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("16 already written, 0 to run"), "{t}");
    assert!(t.contains("symbolic link"), "{t}");
    // Every file stays where it was, with the same bytes: the links, the parts of
    // both datasets, everything.
    let after = snapshot(&root);
    let differ = |a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>| {
        a.iter()
            .filter(|(p, x)| b.get(*p) != Some(x))
            .map(|(p, _)| p.clone())
            .chain(b.keys().filter(|p| !a.contains_key(*p)).cloned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        differ(&before, &after),
        Vec::<PathBuf>::new(),
        "changed, moved or added"
    );
    assert!(!ds.join("quarantine").exists());
    assert_eq!(
        differ(&outside(&before, &ds), &outside(&after, &ds)),
        Vec::<PathBuf>::new(),
        "a file outside the dataset changed"
    );
    // check names each link and does not call the dataset clean.
    let o = bin(&["check", s(&ds)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    for name in ["shard=0/up", "shard=0/elsewhere", "shard=1"] {
        assert!(
            t.lines()
                .any(|l| l.contains(name) && l.contains("symbolic link")),
            "{name}: {t}"
        );
    }
    assert!(t.contains("4 good parts, 16 rows"), "{t}");
}

#[test]
fn a_parent_folder_is_refused_as_out_and_nothing_in_it_moves() {
    let home = scratch("parent");
    run_lib(SWEEP, &home.join("projA/ds"), 8);
    run_lib(&other_sweep(), &home.join("projB/ds"), 8);
    std::fs::create_dir_all(home.join("misc")).unwrap();
    let part = tree::part_files(&home.join("projA/ds")).unwrap()[0].clone();
    std::fs::copy(&part, home.join("misc/data.parquet")).unwrap();
    let file = write_sweep(&scratch("parent-sweep"), "b.toml", &other_sweep());
    let before = snapshot(&home);
    for resume in [false, true] {
        let mut args = vec!["sweep", s(&file), "--out", s(&home), "--quiet"];
        if resume {
            args.push("--resume");
        }
        let o = bin(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(
            t.contains("projA/ds") && t.contains("projB/ds") && t.contains("misc/data.parquet"),
            "the refusal lists what is there: {t}"
        );
        assert!(!t.contains("--resume to continue"), "{t}");
    }
    assert_eq!(snapshot(&home), before, "a file under the parent changed");
    assert!(!home.join("quarantine").exists());
    assert!(!home.join("metachron-dataset.json").exists());
}

#[test]
fn parts_are_judged_against_the_manifest_not_the_first_file() {
    let dir = scratch("first");
    let ds = dir.join("ds");
    run_lib(SWEEP, &ds, 4);
    // A part of another sweep that sorts before every genuine part, at the top and
    // inside the shard directory (with a checksum file, so only its sweep is wrong).
    let other = dir.join("other");
    run_lib(&other_sweep(), &other, 16);
    let foreign = tree::part_files(&other).unwrap()[0].clone();
    std::fs::copy(&foreign, ds.join("a.parquet")).unwrap();
    let inside = ds.join("shard=0/part-000000000.parquet");
    std::fs::rename(&inside, ds.join("shard=0/part-000000000.keep")).unwrap();
    std::fs::rename(
        metachron::dataset::schema::checksum_path(&inside),
        ds.join("shard=0/part-000000000.sum.keep"),
    )
    .unwrap();
    std::fs::copy(&foreign, &inside).unwrap();
    std::fs::copy(
        metachron::dataset::schema::checksum_path(&foreign),
        metachron::dataset::schema::checksum_path(&inside),
    )
    .unwrap();
    let a = checked(&ds).unwrap();
    assert_eq!(a.health.good_parts, 3, "{:?}", a.health);
    assert_eq!(a.scan.bad.len(), 1);
    assert!(
        matches!(a.scan.bad[0].1, Defect::OtherSweep { .. }),
        "{:?}",
        a.scan.bad
    );
    assert!(a
        .health
        .strays
        .iter()
        .any(|(p, _, disturbs)| p.ends_with("a.parquet") && *disturbs));

    // Put the genuine first part back, with one byte of its recorded sweep text
    // flipped: that part alone is bad, the others stay good.
    std::fs::rename(ds.join("shard=0/part-000000000.keep"), &inside).unwrap();
    std::fs::rename(
        ds.join("shard=0/part-000000000.sum.keep"),
        metachron::dataset::schema::checksum_path(&inside),
    )
    .unwrap();
    let mut bytes = std::fs::read(&inside).unwrap();
    let at = bytes
        .windows(13)
        .position(|w| w == b"name = \"trust".as_slice())
        .expect("the sweep text is in the footer");
    bytes[at + 8] ^= 0x20;
    std::fs::write(&inside, &bytes).unwrap();
    let o = bin(&["check", s(&ds)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("3 good parts, 12 rows"), "{t}");
    assert!(
        t.contains("part-000000000.parquet: its bytes do not match"),
        "{t}"
    );
    // `--sweep FILE` still states the sweep; a file of another sweep is named.
    let file = write_sweep(&dir, "o.toml", &other_sweep());
    let o = bin(&["check", s(&ds), "--sweep", s(&file)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("different sweep file"), "{t}");
}

#[test]
fn writers_of_another_layout_backend_or_sweep_are_refused_with_the_difference() {
    let dir = scratch("layout");
    let ds = dir.join("ds");
    let file = write_sweep(&dir, "trust.toml", SWEEP);
    let o = bin(&[
        "sweep",
        s(&file),
        "--out",
        s(&ds),
        "--quiet",
        "--batch",
        "4",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let before = snapshot(&ds);
    let cases: [(&[&str], &str); 3] = [
        (&["--shard", "1/2"], "shard layout"),
        (&["--backend", "reference"], "backend"),
        (&["--shard", "0/1", "--backend", "reference"], "backend"),
    ];
    for (extra, field) in cases {
        let mut args = vec!["sweep", s(&file), "--out", s(&ds), "--resume", "--quiet"];
        args.extend_from_slice(extra);
        let o = bin(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {t}");
        assert!(
            t.contains(&format!("a different {field}")),
            "{extra:?}: {t}"
        );
    }
    assert_eq!(snapshot(&ds), before);

    // A shard of a sharded dataset and an unsharded writer never meet in it either.
    let sharded = dir.join("sharded");
    let o = bin(&[
        "sweep",
        s(&file),
        "--out",
        s(&sharded),
        "--shard",
        "0/2",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = bin(&[
        "sweep",
        s(&file),
        "--out",
        s(&sharded),
        "--resume",
        "--quiet",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("2 shards") && t.contains("unsharded"), "{t}");
}

#[test]
fn two_sweeps_started_at_the_same_instant_never_share_a_directory() {
    let dir = scratch("race");
    let texts = [SWEEP.to_string(), other_sweep()];
    for round in 0..8 {
        let ds = dir.join(format!("ds{round}"));
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Result<usize, String>> = std::thread::scope(|sc| {
            let handles: Vec<_> = texts
                .iter()
                .map(|t| {
                    let (barrier, ds) = (&barrier, &ds);
                    sc.spawn(move || {
                        let spec = spec_of(t);
                        let plan = Plan::new(&spec).unwrap();
                        let o = opts(ds, 4, true);
                        barrier.wait();
                        let work = run::work(&spec, &plan, &o).map_err(|e| e.to_string())?;
                        let r = run::run(&spec, &work.pending, &o, |_| {}).unwrap();
                        Ok(r.points_run)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "round {round}: {results:?}");
        let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(refused.contains("different sweep file"), "{refused}");
        let a = checked(&ds).unwrap();
        assert!(a.health.complete && a.health.clean, "{:?}", a.health);
        assert_eq!(a.health.rows, 16);
    }
}

#[test]
fn hidden_and_appledouble_files_are_reported_and_left_alone() {
    let dir = scratch("hidden");
    let ds = dir.join("ds");
    run_lib(SWEEP, &ds, 4);
    let part = tree::part_files(&ds).unwrap()[0].clone();
    std::fs::write(
        ds.join("shard=0/._part-000000000.parquet"),
        b"\0\x05\x16\x07",
    )
    .unwrap();
    std::fs::copy(&part, ds.join(".x.parquet")).unwrap();
    let before = snapshot(&ds);
    let o = bin(&["check", s(&ds)]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.lines()
            .any(|l| l.contains("._part-000000000.parquet") && l.contains("AppleDouble")),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.contains(".x.parquet") && l.contains("hidden")),
        "{t}"
    );
    let file = write_sweep(&dir, "trust.toml", SWEEP);
    let o = bin(&["sweep", s(&file), "--out", s(&ds), "--resume", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("AppleDouble"), "{}", text(&o));
    assert_eq!(snapshot(&ds), before, "resume touched a file");
    // Readers refuse it (a glob would read 20 rows for 16 ids) and say what to run.
    let e = read_verified(&ds, false).unwrap_err().to_string();
    assert!(
        e.contains("readers would see") && e.contains("metachron check"),
        "{e}"
    );
}

#[test]
fn a_dataset_of_another_format_version_is_refused_naming_both_and_never_moved() {
    let dir = scratch("version");
    let ds = dir.join("ds");
    run_lib(SWEEP, &ds, 4);
    // The layout before manifests: parts only.
    std::fs::remove_file(ds.join("metachron-dataset.json")).unwrap();
    for p in tree::part_files(&ds).unwrap() {
        std::fs::remove_file(metachron::dataset::schema::checksum_path(&p)).unwrap();
    }
    let file = write_sweep(&dir, "trust.toml", SWEEP);
    let before = snapshot(&ds);
    let sum = dir.join("sum.parquet");
    let runs: [&[&str]; 4] = [
        &["check", s(&ds)],
        &["sweep", s(&file), "--out", s(&ds), "--resume", "--quiet"],
        &["sweep", s(&file), "--out", s(&ds), "--quiet"],
        &["summarize", s(&ds), "--out", s(&sum)],
    ];
    for args in runs {
        let o = bin(args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(
            t.contains("format 1")
                && t.contains(&format!(
                    "format {}",
                    metachron::dataset::schema::FORMAT_VERSION
                ))
                && t.contains("without a manifest"),
            "{args:?}: {t}"
        );
    }
    assert_eq!(snapshot(&ds), before);
    assert!(!ds.join("quarantine").exists());

    // A manifest of a later format: both versions named, nothing touched.
    let ds2 = dir.join("ds2");
    run_lib(SWEEP, &ds2, 4);
    let m = ds2.join("metachron-dataset.json");
    let t = std::fs::read_to_string(&m).unwrap();
    let v = metachron::dataset::schema::FORMAT_VERSION;
    std::fs::write(
        &m,
        t.replace(
            &format!("\"format_version\": {v}"),
            &format!("\"format_version\": {}", v + 1),
        ),
    )
    .unwrap();
    let before = snapshot(&ds2);
    for args in [
        vec!["check", s(&ds2)],
        vec!["sweep", s(&file), "--out", s(&ds2), "--resume", "--quiet"],
    ] {
        let o = bin(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(
            t.contains(&format!("format {}", v + 1)) && t.contains(&format!("format {v}")),
            "{t}"
        );
    }
    assert_eq!(snapshot(&ds2), before);

    // Format 2 called alternations metachronal and had no wave columns: refused by
    // readers and writers alike, saying why and what to do, never mixed with new rows.
    std::fs::write(
        &m,
        t.replace(&format!("\"format_version\": {v}"), "\"format_version\": 2"),
    )
    .unwrap();
    let before = snapshot(&ds2);
    for args in [
        vec!["check", s(&ds2)],
        vec!["summarize", s(&ds2), "--out", s(&sum)],
        vec!["sweep", s(&file), "--out", s(&ds2), "--resume", "--quiet"],
    ] {
        let o = bin(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{t}");
        assert!(
            t.contains("format 2") && t.contains("antiphase") && t.contains("another --out"),
            "{t}"
        );
    }
    assert_eq!(snapshot(&ds2), before);
}

#[test]
fn readers_refuse_corrupt_incomplete_or_mixed_datasets_unless_allowed() {
    let dir = scratch("readers");
    let sum = dir.join("sum.parquet");
    let png = dir.join("m.png");
    let refused = |ds: &Path, why: &str| {
        for args in [
            vec!["summarize", s(ds), "--out", s(&sum)],
            vec![
                "map",
                s(ds),
                "--x",
                "alpha",
                "--y",
                "beta",
                "--out",
                s(&png),
            ],
        ] {
            let o = bin(&args);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{why}: {args:?}: {t}");
            assert!(
                t.contains(&format!("metachron check {}", s(ds))),
                "{why}: {t}"
            );
        }
    };
    // Values changed under a valid checksum file (a rewritten part).
    let ds = dir.join("digest");
    run_lib(SWEEP, &ds, 8);
    let part = tree::part_files(&ds).unwrap()[0].clone();
    let (batches, meta) = metachron::parquet::read_parquet(&part).unwrap();
    let mut cols = batches[0].columns().to_vec();
    let i = batches[0].schema().index_of("lag_order").unwrap();
    cols[i] = std::sync::Arc::new(arrow_array::Float64Array::from(vec![0.5; 8]));
    let forged = arrow_array::RecordBatch::try_new(batches[0].schema(), cols).unwrap();
    let meta: Vec<(String, String)> = meta
        .into_iter()
        .filter(|(k, _)| k.starts_with("metachron."))
        .collect();
    part::write_part(&part, &forged, &meta).unwrap();
    assert_eq!(
        verify::check_part(&part, &run::expected(&spec_of(SWEEP)).unwrap()).unwrap_err(),
        Defect::Digest
    );
    refused(&ds, "digest");
    // A dropped part: 8 of 16 points.
    let ds = dir.join("dropped");
    run_lib(SWEEP, &ds, 8);
    let part = tree::part_files(&ds).unwrap()[1].clone();
    std::fs::remove_file(&part).unwrap();
    refused(&ds, "incomplete");
    let o = bin(&["summarize", s(&ds), "--out", s(&sum), "--allow-incomplete"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("INCOMPLETE"), "{}", text(&o));
    let m = metachron::parquet::read_parquet_metadata(&sum).unwrap();
    let note = &m[metachron::dataset::schema::META_INCOMPLETE];
    assert!(
        note.contains("8 of 16") && note.contains("missing"),
        "{note}"
    );
    // Two sweeps in one directory (a part of the other copied in): refused, not
    // summarised as one.
    let ds = dir.join("mixed");
    run_lib(SWEEP, &ds, 8);
    let other = dir.join("other");
    run_lib(&other_sweep(), &other, 8);
    let theirs = tree::part_files(&other).unwrap()[1].clone();
    let into = ds.join("shard=0/part-000000100.parquet");
    std::fs::copy(&theirs, &into).unwrap();
    std::fs::copy(
        metachron::dataset::schema::checksum_path(&theirs),
        metachron::dataset::schema::checksum_path(&into),
    )
    .unwrap();
    refused(&ds, "mixed");
    // The same dataset once complete and clean: read (cached the second time).
    let ds = dir.join("clean");
    run_lib(SWEEP, &ds, 8);
    for _ in 0..2 {
        let (v, rows) = read_verified(&ds, false).unwrap();
        assert_eq!(rows.len(), 16);
        assert!(v.incomplete.is_none());
    }
    assert!(ds.join(".verified.json").exists());
    // A part changed after it was cached is judged again, not trusted.
    let part = tree::part_files(&ds).unwrap()[0].clone();
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[100] ^= 0x10;
    std::fs::write(&part, &bytes).unwrap();
    let e = read_verified(&ds, false).unwrap_err().to_string();
    assert!(e.contains("bad part"), "{e}");
}

#[test]
fn check_passes_a_finished_refined_sweep_and_names_what_an_unfinished_one_lacks() {
    let dir = scratch("refined");
    let spec = spec_of(REFINED);
    // Interrupted after the first level's chunks: not finished, and says so.
    let part = dir.join("part");
    let mut o = opts(&part, 3, true);
    o.resume = false;
    o.stop_after_chunks = Some(3);
    assert!(matches!(
        run_refined(&spec, &o, &mut ()).unwrap(),
        RefineOutcome::Stopped
    ));
    let chk = bin(&["check", s(&part)]);
    let t = text(&chk);
    assert_eq!(chk.status.code(), Some(1), "{t}");
    assert!(t.contains("NOT FINISHED: refinement level"), "{t}");
    // Finished: check passes, and the plan it computed is every row written.
    o.stop_after_chunks = None;
    o.resume = true;
    let RefineOutcome::Done(levels) = run_refined(&spec, &o, &mut ()).unwrap() else {
        panic!("not done")
    };
    assert!(levels.len() >= 2, "the sweep refines: {levels:?}");
    let chk = bin(&["check", s(&part)]);
    let t = text(&chk);
    assert!(chk.status.success(), "{t}");
    let planned: usize = levels.iter().map(|l| l.points).sum();
    assert!(t.contains(&format!("{planned} points")), "{t}");
    let a = checked(&part).unwrap();
    assert_eq!(a.health.rows, planned);
    // One row of the last level lost: check names the level again.
    let last = tree::part_files(&part).unwrap().pop().unwrap();
    std::fs::remove_file(&last).unwrap();
    let chk = bin(&["check", s(&part)]);
    let t = text(&chk);
    assert_eq!(chk.status.code(), Some(1), "{t}");
    assert!(t.contains("NOT FINISHED") && t.contains("missing"), "{t}");
}

/// 2 x 2 combinations, adaptive repeats 4..16.
const ADAPTIVE: &str = r#"name = "adaptive"
seed = 7
repeats = { min = 4, max = 16, ci_width = 0.45 }
[base]
n_legs = 4
n_nodes = 3
t_final = 0.5
[[axes]]
param = "k_p"
values = [5.0, 500.0]
[[axes]]
param = "alpha"
values = [50.0, 5000.0]
"#;

#[test]
fn check_passes_a_finished_adaptive_sweep_and_names_repeats_left() {
    let dir = scratch("adaptive");
    let spec = spec_of(ADAPTIVE);
    let plan = Plan::new(&spec).unwrap();
    let out = dir.join("ds");
    let mut o = opts(&out, 4, true);
    o.resume = false;
    o.stop_after_chunks = Some(2);
    assert!(matches!(
        run_adaptive(&spec, &plan, &o, &mut ()).unwrap(),
        AdaptiveOutcome::Stopped
    ));
    let chk = bin(&["check", s(&out)]);
    let t = text(&chk);
    assert_eq!(chk.status.code(), Some(1), "{t}");
    assert!(t.contains("NOT FINISHED: adaptive repeats"), "{t}");
    o.stop_after_chunks = None;
    o.resume = true;
    let AdaptiveOutcome::Done(rounds) = run_adaptive(&spec, &plan, &o, &mut ()).unwrap() else {
        panic!("not done")
    };
    let ran: usize = rounds.iter().map(|r| r.points_run).sum::<usize>() + 8;
    let chk = bin(&["check", s(&out)]);
    let t = text(&chk);
    assert!(chk.status.success(), "{t}");
    let a = checked(&out).unwrap();
    assert_eq!(a.health.rows, ran, "{:?}", a.health);
    assert_eq!(a.health.points as usize, ran);
}

#[test]
fn a_psi_init_axis_or_a_wrong_length_list_is_an_error_naming_the_axis() {
    let base = "name = \"p\"\n[base]\nn_legs = 5\nn_nodes = 3\nt_final = 0.2\n";
    let cases = [
        // Random phases (the default with repeats > 1) would replace the axis' values.
        format!(
            "repeats = 2\n{base}[[axes]]\nparam = \"psi_init\"\nvalues = [[0.0, 0.1, 0.2, 0.3, 0.4]]\n"
        ),
        format!(
            "random_phases = true\n{base}[[axes]]\nparam = \"psi_init\"\nvalues = [[0.0, 0.1, 0.2, 0.3, 0.4]]\n"
        ),
        // 4 values for 5 legs, on an axis, with or without random phases.
        format!("{base}[[axes]]\nparam = \"psi_init\"\nvalues = [[1.0, 1.0, 1.0, 1.0]]\n"),
        format!(
            "repeats = 2\nrandom_phases = true\n{base}[[axes]]\nparam = \"omega_legs\"\nvalues = [[1.0, 1.0, 1.0, 1.0]]\n"
        ),
    ];
    for text in &cases {
        let e = SweepSpec::from_str_named(text, "p.toml", "p")
            .and_then(|s| Plan::new(&s).map(|_| ()))
            .err()
            .unwrap_or_else(|| panic!("accepted:\n{text}"))
            .to_string();
        let axis = if text.contains("omega_legs") {
            "omega_legs"
        } else {
            "psi_init"
        };
        assert!(e.contains(axis), "{e}\n{text}");
    }
    // Without random phases, a right-length psi_init axis is a sweep like any other.
    let ok = format!(
        "random_phases = false\nrepeats = 2\n{base}[[axes]]\nparam = \"psi_init\"\nvalues = [[0.0, 0.1, 0.2, 0.3, 0.4]]\n"
    );
    let spec = SweepSpec::from_str_named(&ok, "p.toml", "p").unwrap();
    let plan = Plan::new(&spec).unwrap();
    assert_eq!(
        plan.points[1].cfg.params.psi_init,
        Some(vec![0.0, 0.1, 0.2, 0.3, 0.4])
    );
}

#[test]
fn a_quarantined_file_in_a_non_utf8_directory_keeps_its_reason() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("non-utf8");
    let ds = dir.join(std::ffi::OsStr::from_bytes(b"data\xff\xfeset"));
    run_lib(SWEEP, &ds, 8);
    let part = tree::part_files(&ds).unwrap()[0].clone();
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[50] ^= 1;
    std::fs::write(&part, &bytes).unwrap();
    let spec = spec_of(SWEEP);
    let plan = Plan::new(&spec).unwrap();
    let work = run::work(&spec, &plan, &opts(&ds, 8, true)).unwrap();
    assert_eq!(work.quarantined.len(), 1);
    let q = verify::quarantined(&ds);
    assert_eq!(q.len(), 1);
    assert!(q[0].1.contains("do not match its checksum"), "{:?}", q);
}

#[test]
fn validate_says_when_nothing_could_be_compared() {
    let dir = scratch("validate");
    // The reference cannot finish within max_steps = 1: every rerun fails.
    let failing = SWEEP.replacen("[[axes]]", "[solver]\nmax_steps = 1\n[[axes]]", 1);
    let file = write_sweep(&dir, "v.toml", &failing);
    let out = dir.join("ds");
    let o = bin(&[
        "sweep",
        s(&file),
        "--out",
        s(&out),
        "--quiet",
        "--validate",
        "2",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("lag_order none comparable") && !t.contains("0.00e0"),
        "{t}"
    );
}

/// The readers `tests/python/flip_readers.py` finds failing on each file, or `None`
/// when Python with duckdb and polars is not there (required where
/// METACHRON_REQUIRE_PYTHON=1, as in CI). The interpreter is `python3`, or the one
/// METACHRON_PYTHON names (a virtual environment's).
fn readers_failing_on(files: &[PathBuf]) -> Option<Vec<String>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/flip_readers.py");
    let required = std::env::var("METACHRON_REQUIRE_PYTHON").as_deref() == Ok("1");
    let python = std::env::var_os("METACHRON_PYTHON").unwrap_or_else(|| "python3".into());
    let o = Command::new(python)
        .arg(&script)
        .args(files)
        .output()
        .ok()
        .filter(|o| o.status.success());
    let Some(o) = o else {
        assert!(
            !required,
            "python3 with pyarrow, duckdb and polars is required"
        );
        return None;
    };
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("not installed") {
        assert!(!required, "{err}");
        println!("skip the readers: {err}");
        return None;
    }
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<String> = out
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap_or("").to_string())
        .collect();
    assert_eq!(lines.len(), files.len(), "{out}");
    Some(lines)
}

/// Byte flips at a few hundred offsets of a part, spread over the whole file (pages,
/// page headers, footer, magic): `check` rejects every one, so none that breaks
/// pyarrow, DuckDB or polars passes it.
#[test]
fn no_byte_flip_that_breaks_a_reader_passes_check() {
    let dir = scratch("flips");
    let ds = dir.join("ds");
    run_lib(SWEEP, &ds, 16);
    let part = tree::part_files(&ds).unwrap()[0].clone();
    let original = std::fs::read(&part).unwrap();
    let exp = run::expected(&spec_of(SWEEP)).unwrap();
    verify::check_part(&part, &exp).unwrap();
    let n = original.len();
    // 240 evenly spread offsets, the first and last 30 bytes (magic, footer length,
    // footer), and 60 pseudo-random ones; xor masks vary.
    let mut offsets: Vec<usize> = (0..240).map(|k| k * n / 240).collect();
    offsets.extend((0..30).chain(n - 30..n));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..60 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        offsets.push((x % n as u64) as usize);
    }
    offsets.sort_unstable();
    offsets.dedup();
    let copies = dir.join("copies");
    std::fs::create_dir_all(&copies).unwrap();
    let mut files = Vec::new();
    let mut passed_check = Vec::new();
    for (k, &at) in offsets.iter().enumerate() {
        let mut bytes = original.clone();
        bytes[at] ^= [0x01, 0x80, 0xff, 0x5a][k % 4];
        std::fs::write(&part, &bytes).unwrap();
        if verify::check_part(&part, &exp).is_ok() {
            passed_check.push(at);
        }
        let copy = copies.join(format!("flip-{at:06}.parquet"));
        std::fs::write(&copy, &bytes).unwrap();
        files.push(copy);
    }
    std::fs::write(&part, &original).unwrap();
    verify::check_part(&part, &exp).unwrap();
    // The control: the unflipped file reads everywhere.
    files.push(part.clone());
    let failing = readers_failing_on(&files);
    if let Some(failing) = &failing {
        assert_eq!(failing.last().map(String::as_str), Some("-"), "{failing:?}");
        let breaking: Vec<usize> = offsets
            .iter()
            .zip(failing)
            .filter(|(_, f)| f.as_str() != "-")
            .map(|(&at, _)| at)
            .collect();
        let by = |r: &str| failing.iter().filter(|f| f.contains(r)).count();
        let passing: Vec<&usize> = breaking
            .iter()
            .filter(|at| passed_check.contains(at))
            .collect();
        println!(
            "{} flips over {n} bytes: {} break a reader (pyarrow {}, duckdb {}, polars {}); \
             {} readable-breaking flips pass check",
            offsets.len(),
            breaking.len(),
            by("pyarrow"),
            by("duckdb"),
            by("polars"),
            passing.len()
        );
        assert!(
            !breaking.is_empty(),
            "no flip broke a reader: the probe is blind"
        );
        assert!(
            passing.is_empty(),
            "flips at {passing:?} break a reader and pass check"
        );
    }
    // Whatever the readers do, a part whose bytes changed is never trusted.
    assert!(
        passed_check.is_empty(),
        "flips at {passed_check:?} pass check"
    );
}

#[test]
fn garbage_in_the_environment_is_an_error_naming_the_variable() {
    let dir = scratch("env");
    let file = write_sweep(&dir, "trust.toml", SWEEP);
    let out = dir.join("ds");
    for (var, value) in [
        ("METACHRON_SIMD", "avx9000"),
        ("RAYON_NUM_THREADS", "lots"),
        ("SLURM_ARRAY_TASK_ID", "3"),
    ] {
        let o = common::bin::command()
            .args(["sweep", s(&file), "--out", s(&out), "--quiet"])
            .env_remove("SLURM_ARRAY_TASK_COUNT")
            .env(var, value)
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{var}: {t}");
        assert!(t.contains(var) && t.contains(value), "{var}: {t}");
        assert!(!out.join("shard=0").exists(), "{var}: it ran");
    }
}

/// Single-bit flips at seeded random places of a part, its checksum file recomputed
/// after each (a disk corrupted under a tool that re-sums, a careless copy): the
/// checksum no longer protects it, so `check` must find every file that pyarrow,
/// DuckDB or polars cannot read by its structure and its values. `METACHRON_FLIPS`
/// sets how many (300 by default; docs/replay-and-report.md records a run of 1000),
/// `METACHRON_FLIP_SEED` another seed for their places.
#[test]
fn no_bit_flip_with_a_recomputed_checksum_that_breaks_a_reader_passes_check() {
    let flips: usize = std::env::var("METACHRON_FLIPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let dir = scratch("resummed-flips");
    let ds = dir.join("ds");
    run_lib(SWEEP, &ds, 16);
    let part = tree::part_files(&ds).unwrap()[0].clone();
    let sum = metachron::dataset::schema::checksum_path(&part);
    let original = std::fs::read(&part).unwrap();
    let original_sum = std::fs::read(&sum).unwrap();
    let exp = run::expected(&spec_of(SWEEP)).unwrap();
    verify::check_part(&part, &exp).unwrap();
    let n = original.len();
    let copies = dir.join("copies");
    std::fs::create_dir_all(&copies).unwrap();
    let mut x: u64 = std::env::var("METACHRON_FLIP_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&seed| seed != 0)
        .unwrap_or(0x2545_f491_4f6c_dd1d);
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut files = Vec::new();
    let mut passed_check = Vec::new();
    let mut defects: Vec<Option<verify::Defect>> = Vec::new();
    for k in 0..flips {
        let at = (next() % n as u64) as usize;
        let bit = (next() % 8) as u8;
        let mut bytes = original.clone();
        bytes[at] ^= 1 << bit;
        std::fs::write(&part, &bytes).unwrap();
        std::fs::write(&sum, part::Checksum::of(&bytes).to_text()).unwrap();
        match verify::check_part(&part, &exp) {
            Ok(_) => {
                passed_check.push(k);
                defects.push(None);
            }
            Err(d) => {
                assert!(
                    !matches!(d, verify::Defect::Checksum(_)),
                    "flip {k}: the recomputed checksum is refused: {d}"
                );
                defects.push(Some(d));
            }
        }
        let copy = copies.join(format!("flip-{k:04}-at-{at:06}-bit-{bit}.parquet"));
        std::fs::write(&copy, &bytes).unwrap();
        files.push(copy);
    }
    std::fs::write(&part, &original).unwrap();
    std::fs::write(&sum, &original_sum).unwrap();
    verify::check_part(&part, &exp).unwrap();
    // Most flips land in values, whose digest catches them, or in the structure: the
    // check is not one that refuses nothing.
    assert!(
        passed_check.len() < flips / 2,
        "{} of {flips} flips pass check",
        passed_check.len()
    );
    files.push(part.clone());
    let Some(failing) = readers_failing_on(&files) else {
        return;
    };
    // The control: the unflipped part reads everywhere.
    assert_eq!(failing.last().map(String::as_str), Some("-"), "{failing:?}");
    let breaking: Vec<usize> = (0..flips).filter(|&k| failing[k] != "-").collect();
    let by = |r: &str| breaking.iter().filter(|&&k| failing[k].contains(r)).count();
    let escaped: Vec<String> = breaking
        .iter()
        .filter(|k| passed_check.contains(k))
        .map(|&k| format!("{} ({})", files[k].display(), failing[k]))
        .collect();
    let structural = breaking
        .iter()
        .filter(|&&k| matches!(defects[k], Some(verify::Defect::Structure(_))))
        .count();
    println!(
        "{flips} bit flips over {n} bytes, checksums recomputed: {} break a reader (pyarrow {}, \
         duckdb {}, polars {}; {structural} of them refused for their structure), {} pass \
         check, {} of those that break a reader pass check",
        breaking.len(),
        by("pyarrow"),
        by("duckdb"),
        by("polars"),
        passed_check.len(),
        escaped.len()
    );
    // Not blind: a fair share of the flips breaks a reader, some in the structure.
    assert!(
        breaking.len() >= flips / 5 && structural > 0,
        "{} of {flips} flips broke a reader ({structural} in the structure): the probe is \
         blind",
        breaking.len()
    );
    assert!(
        escaped.is_empty(),
        "flips that break a reader pass check:\n{}",
        escaped.join("\n")
    );
}

/// A page header whose first field is encoded with another wire type (the parquet
/// crate's decoder takes it, pyarrow and DuckDB do not), under a recomputed checksum:
/// `check` names the part and the header, and every reader refuses the dataset through
/// the same verification.
#[test]
fn every_reader_refuses_a_part_whose_page_header_is_not_canonical() {
    let dir = scratch("page-header");
    let ds = dir.join("ds");
    run_lib(SWEEP, &ds, 16);
    let part = tree::part_files(&ds).unwrap()[0].clone();
    let mut bytes = std::fs::read(&part).unwrap();
    // The first page header follows the magic: field 1 (type), an i32.
    assert_eq!(bytes[4], 0x15);
    bytes[4] = 0x16;
    std::fs::write(&part, &bytes).unwrap();
    std::fs::write(
        metachron::dataset::schema::checksum_path(&part),
        part::Checksum::of(&bytes).to_text(),
    )
    .unwrap();
    let defect =
        verify::check_part(&part, &run::expected(&spec_of(SWEEP)).unwrap()).expect_err("refused");
    assert!(matches!(defect, Defect::Structure(_)), "{defect:?}");
    let why = defect.to_string();
    assert!(
        why.contains("the page header at byte 4") && why.contains("PageHeader.type"),
        "{why}"
    );
    let o = bin(&["check", s(&ds)]);
    let t = text(&o);
    assert_ne!(o.status.code(), Some(0), "{t}");
    assert!(t.contains(s(&part)) && t.contains("page header"), "{t}");
    let out = |name: &str| dir.join(name);
    for args in [
        vec!["summarize", s(&ds), "--out", s(&out("sum.parquet"))],
        vec![
            "map",
            s(&ds),
            "--x",
            "alpha",
            "--y",
            "beta",
            "--out",
            s(&out("m.png")),
        ],
        vec!["report", s(&ds), "--out", s(&out("r.html"))],
    ] {
        let o = bin(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(
            t.contains(&format!("metachron check {}", s(&ds))),
            "{args:?}: {t}"
        );
    }
    // `replay` reads the good parts only: the part's rows are not there to replay.
    let o = bin(&["replay", s(&ds), "--point", "0"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
}
