//! What a sweep records in each part it writes: its file's text, name and hash, the
//! version, backend, adapter, the scheme that ran with its settings, and the
//! classification thresholds.

use crate::batch::Engine;
use crate::dataset::schema as k;
use crate::dataset::Shard;
use crate::simulate::Backend;
use crate::sweep::SweepSpec;

/// Fingerprint of a sweep file's text (resume refuses a directory of another sweep).
pub fn sweep_hash(spec: &SweepSpec) -> String {
    format!("{:016x}", crate::sweep::rng::fnv1a(spec.text.as_bytes()))
}

/// Scheme label of a backend: the fixed-step scheme or the reference method.
pub fn scheme_label(spec: &SweepSpec, backend: Backend) -> String {
    crate::simulate::scheme_name(&spec.config, backend)
}

/// What ran the points: the backend and its adapter (the GPU's name, type and
/// precision; the thread count on the CPU).
pub fn adapter_label(engine: &Engine) -> String {
    crate::batch::adapter_label(engine)
}

/// File metadata of a part: the sweep file, version, dataset format, backend, adapter,
/// the scheme that ran with its settings, and classification thresholds.
pub fn part_metadata(
    spec: &SweepSpec,
    engine: &Engine,
    shard: Shard,
    chunk_wall_seconds: f64,
) -> Vec<(String, String)> {
    let cfg = &spec.config;
    let backend = engine.backend();
    [
        (k::META_VERSION, crate::VERSION.to_string()),
        (k::META_FORMAT, k::FORMAT_VERSION.to_string()),
        (k::META_SWEEP, spec.text.clone()),
        (k::META_SWEEP_FILE, spec.file.clone()),
        (k::META_SWEEP_NAME, spec.name.clone()),
        (k::META_SWEEP_HASH, sweep_hash(spec)),
        (k::META_POINTS, spec.point_count().to_string()),
        (k::META_SHARD, shard.to_string()),
        (k::META_BACKEND, backend.label().into()),
        (k::META_ADAPTER, adapter_label(engine)),
        (k::META_METRICS_SETTINGS, ser(&cfg.metrics)),
        (k::META_THRESHOLDS, ser(&cfg.metrics.thresholds)),
        (k::META_CHUNK_WALL, format!("{chunk_wall_seconds:.3}")),
    ]
    .into_iter()
    .map(|(key, v)| (key.to_string(), v))
    // The scheme that ran, with its settings only.
    .chain(crate::simulate::scheme_metadata(cfg, backend))
    .collect()
}

fn ser<T: serde::Serialize>(v: &T) -> String {
    toml::to_string(v).unwrap_or_default()
}
