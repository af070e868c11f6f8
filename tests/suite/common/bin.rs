//! The one way the tests start the `metachron` binary.

use std::path::Path;
use std::process::{Command, Output};

/// The binary cargo built for this test run.
pub const BIN: &str = env!("CARGO_BIN_EXE_metachron");

/// A `metachron` command, not yet started: add arguments, environment, a directory.
pub fn command() -> Command {
    Command::new(BIN)
}

/// A finished run as (exit code, stdout, stderr); -1 when a signal ended it.
pub fn texts(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run `metachron ARGS` to the end with the environment `env` added.
pub fn run_with(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = command();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    texts(&cmd.output().expect("metachron starts"))
}

/// Run `metachron ARGS` to the end.
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_with(args, &[])
}

/// Run `metachron ARGS` to the end in the working directory `dir`.
pub fn run_in(args: &[&str], dir: &Path) -> (i32, String, String) {
    texts(
        &command()
            .args(args)
            .current_dir(dir)
            .output()
            .expect("metachron starts"),
    )
}
