//! A dataset is read one way through: opened (its manifest), verified (every part
//! against the manifest and the sweep's plan), then its rows. What cannot be trusted is
//! refused at the step that finds it, with the file named.

use std::path::Path;

use crate::common::scratch;
use crate::common::sweep::{opts, run_sweep, spec_named};
use metachron::dataset::schema::MANIFEST_FILE;
use metachron::dataset::{tree, Dataset, DatasetError, Defect, VerifyOptions};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::SweepError;

/// 8 cheap points (3 legs x 3 nodes, 0.2 s), 2 per part.
const SWEEP: &str = r#"name = "room"
[base]
n_legs = 3
n_nodes = 3
t_final = 0.2
[[axes]]
param = "alpha"
values = [50.0, 500.0]
[[axes]]
param = "beta"
values = [50.0, 100.0, 200.0, 400.0]
"#;

fn written(name: &str) -> std::path::PathBuf {
    let dir = scratch(name).join("ds");
    run_sweep(&spec_named(SWEEP, "room"), &opts(&dir, 2, false));
    dir
}

/// Verify `dir` as a reader does (refusing what is not complete and clean).
fn read(dir: &Path) -> Result<metachron::dataset::Rows, SweepError> {
    let ds = Dataset::open(dir)?;
    let sweep = recorded_sweep(&ds)?;
    Ok(ds.verify(&sweep, VerifyOptions::reader(false))?.rows()?)
}

#[test]
fn a_written_sweep_opens_verifies_and_reads_its_rows() {
    let dir = written("room-good");
    let ds = Dataset::open(&dir).unwrap();
    assert_eq!(ds.manifest().sweep_name, "room");
    assert_eq!(ds.manifest().shards, 1);
    let sweep = recorded_sweep(&ds).unwrap();
    let mut v = ds.verify(&sweep, VerifyOptions::full()).unwrap();
    assert!(v.health.complete && v.health.clean, "{:?}", v.health);
    assert_eq!((v.health.good_parts, v.health.points), (4, 8));
    assert!(v.incomplete.is_none());
    let rows = v.rows().unwrap();
    assert_eq!(rows.len(), 8);
    let mut ids = rows.point_ids();
    ids.sort_unstable();
    assert_eq!(ids, (0..8).collect::<Vec<u64>>());
    // The readers' way, through the verification cache, reads the same rows.
    assert_eq!(read(&dir).unwrap().len(), 8);
    assert!(dir.join(".verified.json").exists());
}

#[test]
fn a_directory_without_a_dataset_is_refused_at_open() {
    let dir = scratch("room-empty");
    std::fs::create_dir_all(&dir).unwrap();
    match Dataset::open(&dir) {
        Err(DatasetError::NoDataset { dir: d, manifest }) => {
            assert_eq!(d, dir.display().to_string());
            assert_eq!(manifest, MANIFEST_FILE);
        }
        other => panic!("expected NoDataset, got {other:?}"),
    }
}

#[test]
fn a_corrupted_part_is_refused_by_verify_with_its_path() {
    let dir = written("room-corrupt");
    let part = tree::part_files(&dir).unwrap()[1].clone();
    let mut bytes = std::fs::read(&part).unwrap();
    bytes[100] ^= 0x10;
    std::fs::write(&part, &bytes).unwrap();

    let ds = Dataset::open(&dir).expect("the manifest is intact");
    let sweep = recorded_sweep(&ds).unwrap();
    let err = ds.verify(&sweep, VerifyOptions::reader(false)).unwrap_err();
    let SweepError::Data(DatasetError::Refused {
        dir: d,
        reasons,
        bad,
    }) = &err
    else {
        panic!("expected a refusal, got {err:?}");
    };
    assert_eq!(d, &dir.display().to_string());
    assert!(reasons.contains("1 bad part files"), "{reasons}");
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].0, part);
    assert!(matches!(bad[0].1, Defect::Checksum(_)), "{:?}", bad[0].1);
    assert!(err.to_string().contains("metachron check"), "{err}");

    // Allowed incomplete: the good parts' rows, and why the rest is missing.
    let ds = Dataset::open(&dir).unwrap();
    let mut v = ds.verify(&sweep, VerifyOptions::reader(true)).unwrap();
    assert_eq!(v.rows().unwrap().len(), 6);
    let why = v.incomplete.as_deref().unwrap();
    assert!(why.starts_with("6 of 8 planned points read"), "{why}");
    assert_eq!(v.health.bad_files[0].0, part.display().to_string());
}

/// A part's stamp as the verification cache records it: size, times and inode of the
/// part and of its checksum file.
fn stamp(part: &Path) -> Vec<i64> {
    use std::os::unix::fs::MetadataExt;
    let sum = metachron::dataset::schema::checksum_path(part);
    [part, sum.as_path()]
        .iter()
        .flat_map(|p| {
            let m = std::fs::symlink_metadata(p).unwrap();
            [
                m.len() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                m.ino() as i64,
            ]
        })
        .collect()
}

#[test]
fn a_verdict_cached_under_laxer_rules_is_checked_again() {
    use metachron::dataset::part::Checksum;
    use metachron::dataset::verify::CHECK_RULES;
    let dir = written("room-rules");
    assert_eq!(read(&dir).unwrap().len(), 8);
    // A part changed under its recomputed checksum, its cached stamp made to match:
    // the cache of the current rules trusts it (the cache is trusted by design), the
    // cache of earlier rules does not.
    let part = tree::part_files(&dir).unwrap()[1].clone();
    let mut bytes = std::fs::read(&part).unwrap();
    let n = bytes.len();
    bytes[n - 9] ^= 0x01; // the footer's last byte
    std::fs::write(&part, &bytes).unwrap();
    std::fs::write(
        metachron::dataset::schema::checksum_path(&part),
        Checksum::of(&bytes).to_text(),
    )
    .unwrap();
    let cache_path = dir.join(".verified.json");
    let mut cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache_path).unwrap()).unwrap();
    let key = part
        .strip_prefix(&dir)
        .unwrap()
        .to_string_lossy()
        .to_string();
    cache["parts"][&key]["stamp"] = serde_json::json!(stamp(&part));
    assert_eq!(cache["rules"], serde_json::json!(CHECK_RULES));
    std::fs::write(&cache_path, cache.to_string()).unwrap();
    let verdict = || -> Result<usize, SweepError> {
        let ds = Dataset::open(&dir)?;
        let sweep = recorded_sweep(&ds)?;
        Ok(ds
            .verify(&sweep, VerifyOptions::reader(false))?
            .health
            .good_parts)
    };
    assert_eq!(verdict().unwrap(), 4, "the current rules' verdict");
    for earlier in [serde_json::json!(CHECK_RULES - 1), serde_json::Value::Null] {
        match earlier {
            serde_json::Value::Null => cache.as_object_mut().unwrap().remove("rules"),
            v => cache.as_object_mut().unwrap().insert("rules".into(), v),
        };
        std::fs::write(&cache_path, cache.to_string()).unwrap();
        let err = verdict().expect_err("checked again and refused");
        assert!(err.to_string().contains("1 bad part files"), "{err}");
    }
}
