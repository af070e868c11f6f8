//! The binary as an unattended user runs it: memory does not
//! grow with t_final, unwritable outputs fail before any computing, and messages name
//! the field, the range and the user's path, once.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::scratch;
use metachron::parquet::read_parquet;

fn bin() -> Command {
    let mut c = common::bin::command();
    c.env("XDG_RUNTIME_DIR", "/tmp");
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run to the end, sampling the peak resident set (VmHWM, kB) from /proc while it runs.
fn run_measured(cmd: &mut Command) -> (Output, u64) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        let mut peak = 0u64;
        while rx.try_recv().is_err() {
            if let Ok(t) = std::fs::read_to_string(&status) {
                if let Some(kb) = t
                    .lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    peak = peak.max(kb);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        peak
    });
    let out = child.wait_with_output().unwrap();
    tx.send(()).unwrap();
    (out, watcher.join().unwrap())
}

/// Bounded memory: `--backend reference --set t_final=1e8` would need 80 GB for a table of
/// sample times; the run stays in flat memory until its budget ends it.
#[test]
fn reference_at_t_final_1e8_runs_in_flat_memory_until_its_budget() {
    if !Path::new("/proc/self/status").exists() {
        println!("skipped: no /proc to read peak memory from");
        return;
    }
    let (o, peak_kb) = run_measured(bin().args([
        "simulate",
        "--backend",
        "reference",
        "--set",
        "t_final=1e8",
        "--point-timeout",
        "3",
        "--quiet",
    ]));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}{}", stderr(&o));
    assert!(text.contains("status budget_exceeded"), "{text}");
    assert!(peak_kb > 0 && peak_kb < 100_000, "peak {peak_kb} kB");
}

/// Bounded memory: `--backend cpu --set t_final=1e9 --out x.parquet` would grow ~4.5 MB/s if
/// buffered; the time series is streamed as row groups: flat memory, and what was computed before
/// the budget ended the run is in the file.
#[test]
fn cpu_time_series_is_streamed_to_out() {
    let dir = scratch("stream");
    let out = dir.join("long.parquet");
    let (o, peak_kb) = run_measured(bin().args([
        "simulate",
        "--backend",
        "cpu",
        "--set",
        "t_final=1e8",
        "--set",
        "n_legs=3",
        "--set",
        "actuated=1,1,1",
        "--set",
        "n_nodes=3",
        "--point-timeout",
        "4",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (batches, meta) = read_parquet(&out).unwrap();
    let t: Vec<f64> = batches
        .iter()
        .flat_map(|b| {
            b.column_by_name("t")
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::Float64Array>()
                .unwrap()
                .values()
                .to_vec()
        })
        .collect();
    // More than one row group (4096 samples each) was written.
    assert!(t.len() > 4096, "only {} samples in 4 s", t.len());
    assert!(t.windows(2).all(|w| (w[1] - w[0] - 0.01).abs() < 1e-9));
    assert!(meta["metachron.solver_stats"].contains("steps"));
    assert!(peak_kb > 0 && peak_kb < 100_000, "peak {peak_kb} kB");
}

/// Unwritable outputs: an output that cannot be written is found before computing, and the
/// message names the user's path (never a temporary).
#[test]
fn unwritable_outputs_fail_before_computing() {
    let dir = scratch("unwritable");
    std::fs::create_dir_all(dir.join("adir")).unwrap();
    std::fs::write(dir.join("afile"), b"x").unwrap();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--out".into(), dir.join("adir").display().to_string()],
            "is a directory".into(),
        ),
        (
            vec![
                "--out".into(),
                dir.join("missing/x.parquet").display().to_string(),
            ],
            "does not exist".into(),
        ),
        (
            vec![
                "--metrics".into(),
                dir.join("afile/m.parquet").display().to_string(),
            ],
            "afile".into(),
        ),
    ];
    for (args, want) in cases {
        let t0 = Instant::now();
        // t_final = 1e3 on the reference would take hours (past the estimate's limit,
        // lifted here): failing first is the point.
        let o = bin()
            .args([
                "simulate",
                "--set",
                "t_final=1000",
                "--quiet",
                "--max-estimate",
                "inf",
            ])
            .args(&args)
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(want.as_str()) && !e.contains(".tmp-"),
            "{args:?}: {e}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "computed first: {args:?}"
        );
    }
    // A sweep whose --out is a file.
    let sweep = dir.join("s.toml");
    std::fs::write(
        &sweep,
        "[base]\nt_final = 1000.0\n[[axes]]\nparam = \"alpha\"\nvalues = [1.0, 2.0]\n",
    )
    .unwrap();
    let o = bin()
        .args([
            "sweep",
            sweep.to_str().unwrap(),
            "--out",
            dir.join("afile").to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("afile"), "{}", stderr(&o));

    // Read-only: a read-only tmpfs where mounting is permitted (as root in CI).
    let ro = dir.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "ro,size=1m",
            "tmpfs",
            ro.to_str().unwrap(),
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        println!("notice: read-only case skipped (cannot mount a tmpfs here)");
        return;
    }
    let t0 = Instant::now();
    let o1 = bin()
        .args([
            "simulate",
            "--set",
            "t_final=1000",
            "--quiet",
            "--max-estimate",
            "inf",
            "--out",
        ])
        .arg(ro.join("x.parquet"))
        .output()
        .unwrap();
    let o2 = bin()
        .args(["sweep", sweep.to_str().unwrap(), "--quiet", "--out"])
        .arg(ro.join("ds"))
        .output()
        .unwrap();
    let _ = Command::new("umount").arg(&ro).status();
    for o in [o1, o2] {
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("Read-only file system"),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(ro.to_str().unwrap()), "{}", stderr(&o));
    }
    assert!(t0.elapsed() < Duration::from_secs(10));
}

/// Messages: each message names the field and its range, once.
#[test]
fn messages_name_the_field_and_range_once() {
    let dir = scratch("messages");
    let cfg = dir.join("sweep-as-config.toml");
    std::fs::write(&cfg, "[base]\nalpha = 5\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--set", "n_legs=-3"], "an integer in [2, 64]"),
        (vec!["--atol", "-1"], "`atol` = -1 is out of range"),
        (
            vec!["--config", cfg.to_str().unwrap()],
            "belongs in a sweep file",
        ),
        (vec!["--point-timeout", "0"], "--point-timeout"),
    ];
    for (args, want) in cases {
        let o = bin().arg("simulate").args(&args).output().unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(e.matches(want).count(), 1, "said more than once: {e}");
    }
    // random_phases (the default with repeats > 1) never silently replaces psi_init.
    let sweep = dir.join("phases.toml");
    std::fs::write(
        &sweep,
        "repeats = 2\n[base]\nn_legs = 3\nactuated = [1, 1, 1]\npsi_init = [0.0, 1.0, 2.0]\n[[axes]]\nparam = \"alpha\"\nvalues = [1.0]\n",
    )
    .unwrap();
    let o = bin()
        .args(["sweep", sweep.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("psi_init"), "{}", stderr(&o));
}

/// Temporaries: a killed `simulate` left `.run.parquet.tmp-PID` forever; the next write of
/// the same file removes temporaries whose process is gone (and only those).
#[test]
fn temporaries_of_dead_writers_are_removed() {
    let dir = scratch("stale");
    let out = dir.join("run.parquet");
    let dead = dir.join(".run.parquet.tmp-999999999");
    std::fs::write(&dead, b"half").unwrap();
    let alive = dir.join(format!(".run.parquet.tmp-{}", std::process::id()));
    std::fs::write(&alive, b"mine").unwrap();
    let o = bin()
        .args([
            "simulate",
            "--backend",
            "cpu",
            "--set",
            "t_final=0.05",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.exists() && !dead.exists() && alive.exists());
}
