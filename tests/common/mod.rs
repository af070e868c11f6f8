#![allow(dead_code)]
pub mod energy;
pub mod gpu;
pub mod sweep;
pub mod validation;

use std::path::{Path, PathBuf};

/// An empty directory of the calling test's own, `target/tmp/<test file>/<name>`:
/// emptied first, so a rerun starts clean, and apart from every other test file's.
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(env!("CARGO_CRATE_NAME"))
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
