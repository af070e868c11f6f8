//! The `metachron bench` table as Parquet: one row per measurement, the machine in
//! the file metadata.

use crate::bench::{BenchRow, Machine};
use crate::dataset::schema::{
    META_BENCH_CORES, META_BENCH_CPU_MODEL, META_BENCH_SIMD, META_BENCH_UNIX_TIME, META_VERSION,
};
use crate::error::OutputError;
use crate::parquet::{write_pending, PendingFile, TableBuilder};
use crate::vocabulary as voc;

/// Write the rows into `out`, created before the measurements (so an unwritable path
/// fails before minutes of work).
pub fn write_bench(
    out: PendingFile,
    rows: &[BenchRow],
    machine: &Machine,
) -> Result<(), OutputError> {
    let mut t = TableBuilder::default();
    let col = |f: fn(&BenchRow) -> String| rows.iter().map(f).collect::<Vec<_>>();
    t.string(voc::ENGINE, col(|r| r.engine.clone()));
    t.string(voc::ADAPTER, col(|r| r.adapter.clone()));
    t.string(voc::PRECISION, col(|r| r.precision.clone()));
    t.u32(
        voc::THREADS,
        "1",
        rows.iter().map(|r| r.threads as u32).collect(),
    );
    t.u32(
        voc::BATCH,
        "1",
        rows.iter().map(|r| r.batch as u32).collect(),
    );
    t.f64(voc::T_FINAL, "s", rows.iter().map(|r| r.t_final).collect());
    t.f64(voc::WALL_S, "s", rows.iter().map(|r| r.wall_s).collect());
    t.f64(
        voc::ROBOT_S_PER_S,
        "robot-s/s",
        rows.iter().map(|r| r.robot_s_per_s).collect(),
    );
    t.string(voc::SIMD, col(|r| r.simd.clone()));
    t.string(voc::SCHEME, col(|r| r.scheme.clone()));
    t.f64(
        voc::STEPS_PER_ROBOT_S,
        "1/s",
        rows.iter().map(|r| r.steps_per_robot_s).collect(),
    );
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let meta = [
        (META_VERSION, crate::VERSION.to_string()),
        (META_BENCH_CPU_MODEL, machine.cpu_model.clone()),
        (META_BENCH_CORES, machine.cores.to_string()),
        (META_BENCH_SIMD, machine.simd.clone()),
        (META_BENCH_UNIX_TIME, unix.to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v));
    write_pending(out, &t.finish()?, &meta)
}
