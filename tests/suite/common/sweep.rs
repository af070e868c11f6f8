//! Sweeps the sweep tests share: run options and a small refined sweep.

use std::path::Path;

use metachron::simulate::Backend;
use metachron::sweep::run::RunOptions;
use metachron::sweep::Shard;

/// Options of a whole (unsharded) cpu sweep into `out`, `batch` points per chunk.
pub fn opts(out: &Path, batch: usize, resume: bool) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        backend: Backend::Cpu,
        batch,
        resume,
        shard: Shard::default(),
        stop_after_chunks: None,
    }
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
