//! The dataset's names, written once: the format version, the directory layout
//! (manifest, shard directories, part files and their checksums, quarantine), the
//! file-metadata keys of a part and the columns readers look up by name. Writers and
//! readers both take them from here.

use std::path::{Path, PathBuf};

use crate::dataset::Shard;

/// Version of the dataset format (layout, manifest, part metadata, columns). Bump it
/// whenever a part written by this version could not be read as one by the previous
/// one (a column added, removed or retyped): a dataset of another version is refused
/// with both versions named, never quarantined. 2: the manifest and checksums; rows
/// with integer parameters as integers and the per-leg lists (`actuated`, `psi_init`,
/// `omega_legs`, `axo_actuated`) as list columns; each part names the scheme that ran
/// with its settings only. 3: the `antiphase` class (format 2 called those rows
/// `metachronal`), the `wave_direction` and `wave_sense` columns, `lag_max` and `d_min`
/// among the thresholds.
pub const FORMAT_VERSION: u32 = 3;

/// Datasets written before the manifest existed (parts only, no checksums).
pub const LEGACY_FORMAT_VERSION: u32 = 1;

// --- Layout: DIR/MANIFEST_FILE, DIR/shard=K/part-<first id>.parquet (+ CHECKSUM_EXT).

/// The dataset's manifest (sweep hash, shard layout, backend, format version).
pub const MANIFEST_FILE: &str = "metachron-dataset.json";
/// Lock guarding the manifest's creation and comparison (one for every shard layout).
pub const MANIFEST_LOCK: &str = ".manifest.lock";
/// Verification results of readers, per part, keyed by size and times (a cache).
pub const VERIFY_CACHE: &str = ".verified.json";
/// Where quarantined parts go (never read as parts).
pub const QUARANTINE_DIR: &str = "quarantine";
/// Prefix of a shard's directory: `shard=K`.
pub const SHARD_DIR_PREFIX: &str = "shard=";
/// Part files: `part-<first point id, 9 digits>.parquet`.
pub const PART_PREFIX: &str = "part-";
pub const PART_EXT: &str = ".parquet";
/// Beside each part: `part-….parquet.sum`, the checksum of the part's bytes.
pub const CHECKSUM_EXT: &str = ".sum";
/// The writer lock inside a shard's directory.
pub const SHARD_LOCK: &str = ".writer.lock";
/// `--validate`'s comparison files in DIR: `validation-shard<K>.csv`.
pub const VALIDATION_PREFIX: &str = "validation-shard";

/// Directory name of `shard`.
pub fn shard_dir_name(index: usize) -> String {
    format!("{SHARD_DIR_PREFIX}{index}")
}

/// The shard index of a directory name `shard=K`.
pub fn shard_of_dir_name(name: &str) -> Option<usize> {
    let k = name.strip_prefix(SHARD_DIR_PREFIX)?;
    (!k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        .then(|| k.parse().ok())
        .flatten()
}

/// Path of the part file that starts at `first_point_id` in `shard`.
pub fn part_path(dir: &Path, shard: Shard, first_point_id: u64) -> PathBuf {
    dir.join(shard_dir_name(shard.index))
        .join(format!("{PART_PREFIX}{first_point_id:09}{PART_EXT}"))
}

/// Whether a file name is a part's: `part-<digits>.parquet`.
pub fn is_part_name(name: &str) -> bool {
    name.strip_prefix(PART_PREFIX)
        .and_then(|r| r.strip_suffix(PART_EXT))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The checksum file of a part.
pub fn checksum_path(part: &Path) -> PathBuf {
    let mut name = part.file_name().unwrap_or_default().to_os_string();
    name.push(CHECKSUM_EXT);
    part.with_file_name(name)
}

/// Whether a file name is a part's checksum: `part-<digits>.parquet.sum`.
pub fn is_checksum_name(name: &str) -> bool {
    name.strip_suffix(CHECKSUM_EXT).is_some_and(is_part_name)
}

/// Whether a file name is a killed writer's temporary of a part or of its checksum
/// (`.part-….parquet.tmp-<pid>`, `.part-….parquet.sum.tmp-<pid>`).
pub fn is_part_temporary(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|n| n.split_once(".tmp-"))
        .is_some_and(|(target, pid)| {
            (is_part_name(target) || is_checksum_name(target))
                && pid.bytes().all(|b| b.is_ascii_digit())
        })
}

// --- File metadata of a part.

/// The sweep file's text.
pub const META_SWEEP: &str = "metachron.sweep";
pub const META_SWEEP_FILE: &str = "metachron.sweep_file";
pub const META_SWEEP_NAME: &str = "metachron.sweep_name";
pub const META_SWEEP_HASH: &str = "metachron.sweep_hash";
/// The metachron version that wrote the part.
pub const META_VERSION: &str = "metachron.version";
/// The dataset format version ([`FORMAT_VERSION`]).
pub const META_FORMAT: &str = "metachron.format";
pub const META_POINTS: &str = "metachron.points";
pub const META_SHARD: &str = "metachron.shard";
pub const META_BACKEND: &str = "metachron.backend";
pub const META_ADAPTER: &str = "metachron.adapter";
/// The scheme and its settings, written by every run (`simulate::scheme_metadata`).
pub use crate::simulate::{META_FIXED_STEP, META_SCHEME, META_SOLVER};
pub const META_METRICS_SETTINGS: &str = "metachron.metrics_settings";
pub const META_THRESHOLDS: &str = "metachron.thresholds";
pub const META_CHUNK_WALL: &str = "metachron.chunk_wall_seconds";
pub const META_FIRST_ID: &str = "metachron.first_point_id";
pub const META_LAST_ID: &str = "metachron.last_point_id";
pub const META_ROWS: &str = "metachron.rows";
pub const META_DIGEST: &str = "metachron.content_digest";

// --- File metadata of a single run (`metachron simulate`).

/// The run's parameters as TOML.
pub const META_PARAMS: &str = "metachron.params";
/// The solver's step counts and timings as TOML.
pub const META_SOLVER_STATS: &str = "metachron.solver_stats";
/// The dataset and point a replayed run reproduces (`metachron replay`).
pub const META_REPLAY_OF: &str = "metachron.replay_of";

// --- File metadata of a benchmark table (`metachron bench`): the machine it ran on.

pub const META_BENCH_CPU_MODEL: &str = "metachron.bench.cpu_model";
pub const META_BENCH_CORES: &str = "metachron.bench.cores";
pub const META_BENCH_SIMD: &str = "metachron.bench.simd";
/// When the measurements ended, in seconds since the Unix epoch.
pub const META_BENCH_UNIX_TIME: &str = "metachron.bench.unix_time";

// --- File metadata of a summary (`metachron summarize`).

/// The dataset a summary was made from.
pub const META_SUMMARY_OF: &str = "metachron.summary_of";
pub const META_INTERVAL: &str = "metachron.interval";
/// Present when a summary covers only part of its dataset (`--allow-incomplete`).
pub const META_INCOMPLETE: &str = "metachron.incomplete";

// --- Columns readers look up by name (declared in the vocabulary).

pub use crate::vocabulary::metric::t_run as COL_T_RUN;
pub use crate::vocabulary::{
    BACKEND as COL_BACKEND, CLASS as COL_CLASS, COMBO as COL_COMBO, ERROR as COL_ERROR,
    LEVEL as COL_LEVEL, POINT_ID as COL_POINT_ID, REPEAT as COL_REPEAT, SCHEME as COL_SCHEME,
    SETTLED as COL_SETTLED, STATUS as COL_STATUS, STEP as COL_STEP,
    WAVE_DIRECTION as COL_WAVE_DIRECTION, WAVE_SENSE as COL_WAVE_SENSE,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognised_exactly() {
        assert!(is_part_name("part-000000012.parquet"));
        assert!(!is_part_name("part-.parquet"));
        assert!(!is_part_name("._part-000000012.parquet"));
        assert!(!is_part_name("part-12a.parquet"));
        assert!(is_checksum_name("part-000000012.parquet.sum"));
        assert!(is_part_temporary(".part-000000012.parquet.tmp-123"));
        assert!(is_part_temporary(".part-000000012.parquet.sum.tmp-9"));
        assert!(!is_part_temporary(".x.parquet.tmp-1"));
        assert_eq!(shard_of_dir_name("shard=3"), Some(3));
        assert_eq!(shard_of_dir_name("shard=x"), None);
        assert_eq!(shard_of_dir_name("shard="), None);
        let p = part_path(Path::new("d"), Shard::default(), 7);
        assert_eq!(p, Path::new("d/shard=0/part-000000007.parquet"));
        assert_eq!(
            checksum_path(&p),
            Path::new("d/shard=0/part-000000007.parquet.sum")
        );
    }
}
