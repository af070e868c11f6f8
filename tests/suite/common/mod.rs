#![allow(dead_code)]
pub mod bin;
pub mod energy;
pub mod gpu;
pub mod sweep;
pub mod validation;

use std::path::{Path, PathBuf};

/// Every file below `dir` (recursively) that `keep` accepts; a missing `dir` has none.
pub fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p, keep));
        } else if keep(&p) {
            out.push(p);
        }
    }
    out
}

/// The text of a file of the repository, by its path from the root.
pub fn repo_file(path: &str) -> String {
    let at = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&at).unwrap_or_else(|e| panic!("{}: {e}", at.display()))
}

/// An empty directory of the calling test module's own, `target/tmp/<module>/<name>`:
/// emptied first, so a rerun starts clean, and apart from every other module's (the
/// modules share one test binary, so the caller's file names the directory).
#[track_caller]
pub fn scratch(name: &str) -> PathBuf {
    let caller = Path::new(std::panic::Location::caller().file());
    let module = caller
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("suite");
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(module)
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
