//! Sweeps the sweep tests share: run options, a small refined sweep, and the dataset
//! read as `check` and the readers read it.

use std::path::Path;

use metachron::batch::Engine;
use metachron::dataset::{Dataset, Rows, Verified, VerifyOptions};
use metachron::sweep::audit::recorded_sweep;
use metachron::sweep::run::{self, RunOptions, RunSummary};
use metachron::sweep::{Plan, Shard, SweepError, SweepSpec};

/// Options of a whole (unsharded) cpu sweep into `out`, `batch` points per chunk.
pub fn opts(out: &Path, batch: usize, resume: bool) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        engine: Engine::Cpu,
        batch,
        resume,
        shard: Shard::default(),
        stop_after_chunks: None,
        stop: Default::default(),
    }
}

/// The sweep file `text`, read as if from `NAME.toml`.
pub fn spec_named(text: &str, name: &str) -> SweepSpec {
    SweepSpec::from_str_named(text, &format!("{name}.toml"), name).unwrap()
}

/// Plan `spec` and run (or resume, as `o` says) the points not yet in `o.out` through
/// the library: what was already done when it started, what it quarantined and what ran.
pub fn run_sweep(
    spec: &SweepSpec,
    o: &RunOptions,
) -> (usize, Vec<metachron::dataset::Defect>, RunSummary) {
    let plan = Plan::new(spec).unwrap();
    let work = run::work(spec, &plan, o).unwrap();
    let summary = run::run(spec, &work.pending, o, |_| {}).unwrap();
    let quarantined = work.quarantined.iter().map(|(_, _, d)| d.clone()).collect();
    (work.already_done, quarantined, summary)
}

/// 3 legs x 3 nodes, 1 s, only leg 1 driven, alpha x beta on 3 x 3 grid values,
/// refined twice on the lag order: lattice 9 x 9.
pub const REFINED: &str = r#"name = "refined"
[base]
n_legs = 3
n_nodes = 3
t_final = 1.0
actuated = "first"
[[axes]]
param = "alpha"
logspace = { start = 10.0, stop = 10000.0, num = 3 }
[[axes]]
param = "beta"
logspace = { start = 10.0, stop = 10000.0, num = 3 }
[refine]
by = "lag_order"
threshold = 0.15
max_level = 2
max_points = 60
"#;

/// The dataset in `dir` judged as `metachron check` judges it: opened, every byte of
/// every part verified against its recorded sweep, nothing refused.
pub fn checked(dir: &Path) -> Result<Verified, SweepError> {
    let ds = Dataset::open(dir)?;
    let sweep = recorded_sweep(&ds)?;
    ds.verify(&sweep, VerifyOptions::full())
}

/// The dataset in `dir` read as its readers read it (`summarize`, `map`, `report`):
/// verified through the cache, refused unless complete and clean or
/// `allow_incomplete`, then its rows.
pub fn read_verified(dir: &Path, allow_incomplete: bool) -> Result<(Verified, Rows), SweepError> {
    let ds = Dataset::open(dir)?;
    let sweep = recorded_sweep(&ds)?;
    let mut v = ds.verify(&sweep, VerifyOptions::reader(allow_incomplete))?;
    let rows = v.rows()?;
    Ok((v, rows))
}
