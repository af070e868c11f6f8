//! A reader that leaves (`metachron check DIR | head -1`) ends every printing command
//! quietly, by SIGPIPE as it ends `cat` (status 141 in a shell), never with a panic or
//! an `error:` line.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::scratch;

use common::bin::BIN;

/// A 2 x 2 sweep of 0.3 s runs, written into `dir/ds`.
fn small_dataset(dir: &Path) -> PathBuf {
    let sweep = dir.join("small.toml");
    std::fs::write(
        &sweep,
        "name = \"small\"\n[base]\nt_final = 0.3\n\
         [[axes]]\nparam = \"alpha\"\nvalues = [50.0, 500.0]\n\
         [[axes]]\nparam = \"beta\"\nvalues = [50.0, 500.0]\n",
    )
    .unwrap();
    let ds = dir.join("ds");
    let out = common::bin::command()
        .args([
            "sweep",
            sweep.to_str().unwrap(),
            "--out",
            ds.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    ds
}

/// Run `args` with a standard output whose reader is gone before the first write: the
/// pipe's read end is closed before the child starts (closing it after the spawn would
/// race a fast command, which could fill the pipe's buffer and exit first).
fn with_closed_stdout(args: &[&str], dir: &Path) -> (std::process::ExitStatus, String) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors; the read end is closed at once and the
    // write end is owned by the OwnedFd handed to the child.
    let write_end = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0, "pipe(2)");
        libc::close(fds[0]);
        std::os::fd::OwnedFd::from_raw_fd(fds[1])
    };
    let child = common::bin::command()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn commands(ds: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    vec![
        v(&["check", ds]),
        v(&["check", ds, "--json"]),
        v(&["summarize", ds, "--out", "summary.parquet"]),
        v(&["map", ds, "--x", "alpha", "--y", "beta", "--out", "map.png"]),
        v(&["replay", ds, "--point", "1", "--quiet"]),
        v(&[
            "simulate",
            "--backend",
            "cpu",
            "--set",
            "t_final=0.2",
            "--quiet",
        ]),
        v(&["sweep", "small.toml", "--dry-run"]),
        v(&["completions", "bash"]),
        v(&["man"]),
        v(&["--help"]),
    ]
}

#[test]
fn a_closed_stdout_ends_each_command_by_sigpipe_without_a_panic() {
    let dir = scratch("closed");
    let ds = small_dataset(&dir);
    let mut failures = Vec::new();
    for args in commands(ds.to_str().unwrap()) {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, stderr) = with_closed_stdout(&words, &dir);
        let said = format!(
            "`metachron {}`: {status:?}, stderr: {stderr}",
            words.join(" ")
        );
        if stderr.contains("panicked") || stderr.contains("error:") {
            failures.push(format!("{said} (a panic or an error on a closed stdout)"));
        }
        // clap prints --help itself and ignores a failed write: exit 0 is its answer.
        let quiet_end =
            status.signal() == Some(libc::SIGPIPE) || (words[0] == "--help" && status.success());
        if !quiet_end {
            failures.push(format!("{said} (expected the end by SIGPIPE)"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn piping_into_head_prints_one_line_and_no_panic() {
    let dir = scratch("head");
    let ds = small_dataset(&dir);
    let ds = ds.to_str().unwrap();
    let bash = Command::new("bash").arg("--version").output();
    if bash.is_err() {
        println!("skip: no bash here to run a pipeline");
        return;
    }
    for cmd in [
        format!("{BIN} check {ds}"),
        format!("{BIN} replay {ds} --point 2 --quiet"),
        format!("{BIN} simulate --backend cpu --set t_final=0.2 --quiet"),
        format!("{BIN} man"),
        format!("{BIN} completions zsh"),
    ] {
        // PIPESTATUS: metachron's own status, printed to stderr after the pipeline.
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "{cmd} | head -1; echo \"status=${{PIPESTATUS[0]}}\" >&2"
            ))
            .current_dir(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stdout.lines().count(), 1, "`{cmd} | head -1`: {stdout}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("error:"),
            "`{cmd} | head -1`: {stderr}"
        );
        // 141 when metachron wrote after head left; 0 when everything fit in the pipe
        // before head read its line.
        assert!(
            stderr.contains("status=141") || stderr.contains("status=0"),
            "`{cmd} | head -1`: {stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
