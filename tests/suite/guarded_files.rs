//! Nothing outside the dataset is touched: every output refuses a path that is not a
//! new name or a regular file (links, FIFOs, device nodes, directories; made here in a
//! scratch directory, never the real /dev entries), a lock file that is a link is never
//! followed, a FIFO given as input fails at once, a write that fails (a file size limit
//! standing in for a full disk) leaves no file under the name, and outputs that would
//! make a dataset's readers count rows twice are refused.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::scratch;
use common::sweep::{opts, run_sweep, spec_named};
use metachron::sweep::SweepSpec;

/// 4 cheap points (3 legs x 3 nodes, 0.1 s).
const SWEEP: &str = r#"name = "guard"
[base]
n_legs = 3
n_nodes = 3
t_final = 0.1
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 2 }
[[axes]]
param = "beta"
values = [50.0, 200.0]
"#;

fn dataset(dir: &Path) -> PathBuf {
    let ds = dir.join("ds");
    run_sweep(&spec_named(SWEEP, "guard"), &opts(&ds, 4, true));
    ds
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Run `cmd` to the end, or kill it after `limit` (`None`: it blocked).
fn run_within(mut cmd: Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn bin_within(args: &[&str], secs: u64) -> Output {
    let mut cmd = common::bin::command();
    cmd.args(args);
    run_within(cmd, Duration::from_secs(secs))
        .unwrap_or_else(|| panic!("metachron {args:?} blocked for {secs} s"))
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(s(p)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// A character device node standing in for /dev/null (major 1, minor 3) inside the
/// scratch directory; `false` where this user may not make one.
fn mknod_null(p: &Path) -> bool {
    let c = std::ffi::CString::new(s(p)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) == 0 }
}

fn kind(p: &Path) -> String {
    use std::os::unix::fs::FileTypeExt;
    let ft = std::fs::symlink_metadata(p).unwrap().file_type();
    let name = if ft.is_symlink() {
        "link"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_char_device() {
        "char"
    } else if ft.is_dir() {
        "dir"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    };
    name.to_string()
}

#[test]
fn outputs_refuse_links_pipes_devices_and_directories() {
    let dir = scratch("guard-targets");
    let ds = dataset(&dir);
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    // Every hostile target, named as each command expects its output.
    let mut targets: Vec<(PathBuf, &str)> = Vec::new();
    for ext in ["parquet", "png"] {
        let link = dir.join(format!("link.{ext}"));
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        targets.push((link, "symbolic link"));
        let fifo = dir.join(format!("fifo.{ext}"));
        mkfifo(&fifo);
        targets.push((fifo, "FIFO"));
        let sub = dir.join(format!("sub.{ext}"));
        std::fs::create_dir(&sub).unwrap();
        targets.push((sub, "directory"));
        let dev = dir.join(format!("null.{ext}"));
        if mknod_null(&dev) {
            targets.push((dev, "character device"));
        }
    }
    for (t, what) in &targets {
        let before = kind(t);
        let args: Vec<&str> = if s(t).ends_with(".png") {
            vec!["map", s(&ds), "--x", "alpha", "--y", "beta", "--out", s(t)]
        } else {
            vec!["summarize", s(&ds), "--out", s(t)]
        };
        let o = bin_within(&args, 60);
        let msg = text(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {msg}");
        assert!(msg.contains(s(t)) && msg.contains(what), "{args:?}: {msg}");
        assert_eq!(kind(t), before, "{} was replaced", t.display());
        // simulate's outputs go the same way.
        if s(t).ends_with(".parquet") {
            for flag in ["--out", "--metrics"] {
                let o = bin_within(&["simulate", "--set", "t_final=0.01", flag, s(t)], 60);
                let msg = text(&o);
                assert_ne!(o.status.code(), Some(0), "simulate {flag}: {msg}");
                assert!(msg.contains(what), "simulate {flag}: {msg}");
                assert_eq!(kind(t), before);
            }
        }
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    // No temporaries left beside the refused targets.
    let stray: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn a_writer_lock_that_is_a_link_is_never_followed() {
    let dir = scratch("guard-lock");
    let ds = dataset(&dir);
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let lock = ds.join("shard=0/.writer.lock");
    let _ = std::fs::remove_file(&lock);
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let file = dir.join("guard.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let o = bin_within(
        &["sweep", s(&file), "--out", s(&ds), "--resume", "--quiet"],
        60,
    );
    let msg = text(&o);
    assert_ne!(o.status.code(), Some(0), "{msg}");
    assert!(
        msg.contains(".writer.lock") && msg.contains("symbolic link"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    assert_eq!(kind(&lock), "link");
}

#[test]
fn a_fifo_given_as_sweep_file_or_config_fails_at_once() {
    let dir = scratch("guard-fifo-in");
    let fifo = dir.join("in.toml");
    mkfifo(&fifo);
    let out = dir.join("out");
    for args in [
        vec!["sweep", s(&fifo), "--out", s(&out)],
        vec!["simulate", "--config", s(&fifo)],
    ] {
        let o = bin_within(&args, 20);
        let msg = text(&o);
        assert_ne!(o.status.code(), Some(0), "{args:?}: {msg}");
        assert!(
            msg.contains("FIFO") && msg.contains(s(&fifo)),
            "{args:?}: {msg}"
        );
    }
    assert!(!out.exists());
}

/// `metachron ARGS` under a file size limit of a few KB (writes past it fail with
/// EFBIG, the signal ignored), as on a disk that fills up.
fn bin_with_small_file_limit(args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -f 8 && trap '' XFSZ && exec \"$0\" \"$@\"")
        .arg(common::bin::BIN)
        .args(args);
    run_within(cmd, Duration::from_secs(120)).expect("finishes")
}

#[test]
fn a_write_that_fails_leaves_no_file_under_its_name() {
    let dir = scratch("guard-full");
    let ds = dataset(&dir);
    let png = dir.join("m.png");
    let o = bin_with_small_file_limit(&[
        "map",
        s(&ds),
        "--x",
        "alpha",
        "--y",
        "beta",
        "--out",
        s(&png),
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains(s(&png)), "{}", text(&o));
    let snaps = dir.join("snaps");
    let o = bin_with_small_file_limit(&[
        "simulate",
        "--set",
        "t_final=0.05",
        "--snapshots",
        s(&snaps),
        "--snapshot-times",
        "0.02",
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    // Nothing under a final name, no temporary left behind.
    let left: Vec<String> = [&dir, &snaps]
        .iter()
        .filter(|d| d.is_dir())
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".png") || n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // The same commands without the limit write their files (the limit was the cause).
    let o = bin_within(
        &[
            "map",
            s(&ds),
            "--x",
            "alpha",
            "--y",
            "beta",
            "--out",
            s(&png),
        ],
        60,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
}

#[test]
fn map_bounds_its_cells_and_its_file_type() {
    let dir = scratch("guard-map");
    let ds = dataset(&dir);
    let png = dir.join("m.png");
    for bins in ["0", "501", "5000", "18446744073709551615"] {
        let o = bin_within(
            &[
                "map",
                s(&ds),
                "--x",
                "alpha",
                "--y",
                "beta",
                "--bins",
                bins,
                "--out",
                s(&png),
            ],
            30,
        );
        let msg = text(&o);
        assert_ne!(o.status.code(), Some(0), "--bins {bins}: {msg}");
        assert!(
            msg.contains("--bins") && msg.contains("1 to 500"),
            "--bins {bins}: {msg}"
        );
    }
    let o = bin_within(
        &[
            "map",
            s(&ds),
            "--x",
            "alpha",
            "--y",
            "beta",
            "--bins",
            "500",
            "--out",
            s(&png),
        ],
        60,
    );
    assert!(o.status.success(), "{}", text(&o));
    let jpg = dir.join("m.jpg");
    let o = bin_within(
        &[
            "map",
            s(&ds),
            "--x",
            "alpha",
            "--y",
            "beta",
            "--out",
            s(&jpg),
        ],
        30,
    );
    let msg = text(&o);
    assert_ne!(o.status.code(), Some(0), "{msg}");
    assert!(msg.contains(".png or .svg"), "{msg}");
    assert!(!jpg.exists());
}

#[test]
fn nothing_is_written_inside_a_dataset_that_its_readers_would_count() {
    let dir = scratch("guard-nested");
    let ds = dataset(&dir);
    let inner = ds.join("summary.parquet");
    let o = bin_within(&["summarize", s(&ds), "--out", s(&inner)], 60);
    let msg = text(&o);
    assert_ne!(o.status.code(), Some(0), "{msg}");
    assert!(msg.contains("inside the dataset"), "{msg}");
    assert!(!inner.exists());
    let file = dir.join("guard.toml");
    std::fs::write(&file, SWEEP).unwrap();
    for nested in [ds.join("inner"), ds.join("shard=0/deeper")] {
        let o = bin_within(&["sweep", s(&file), "--out", s(&nested), "--quiet"], 60);
        let msg = text(&o);
        assert_ne!(o.status.code(), Some(0), "{msg}");
        assert!(msg.contains("inside the dataset"), "{msg}");
        assert!(!nested.exists());
    }
    // A run's time series and metrics, from `simulate` or from `replay` of the
    // dataset's own row: refused before anything runs, the path named.
    for (flag, name) in [("--out", "series.parquet"), ("--metrics", "row.parquet")] {
        let inner = ds.join("shard=0").join(name);
        let args = [
            vec!["simulate", "--set", "t_final=0.01"],
            vec!["replay", s(&ds), "--point", "0"],
        ];
        for mut a in args {
            a.extend([flag, s(&inner)]);
            let o = bin_within(&a, 60);
            let msg = text(&o);
            assert_ne!(o.status.code(), Some(0), "{a:?}: {msg}");
            assert!(
                msg.contains("inside the dataset") && msg.contains(s(&inner)),
                "{a:?}: {msg}"
            );
            assert!(!inner.exists(), "{a:?}");
        }
    }
    // Every other output too (pictures, the page, the GIF, benchmarks): one rule for
    // every file the dataset's sweep did not write, the path named in the error.
    let ds_s = s(&ds);
    let png = ds.join("m.png");
    let svg = ds.join("shard=0/m.svg");
    let html = ds.join("report.html");
    let gif = ds.join("walk.gif");
    let pics = ds.join("pics");
    let bench = ds.join("bench.parquet");
    let map = ["map", ds_s, "--x", "alpha", "--y", "beta", "--out"];
    let cases: Vec<(Vec<&str>, &Path)> = vec![
        ([&map[..], &[s(&png)]].concat(), &png),
        ([&map[..], &[s(&svg)]].concat(), &svg),
        (vec!["report", ds_s, "--out", s(&html)], &html),
        (
            vec!["simulate", "--set", "t_final=0.01", "--animate", s(&gif)],
            &gif,
        ),
        (
            vec!["replay", ds_s, "--point", "0", "--animate", s(&gif)],
            &gif,
        ),
        (
            vec!["simulate", "--set", "t_final=0.01", "--snapshots", s(&pics)],
            &pics,
        ),
        (
            vec!["replay", ds_s, "--point", "0", "--snapshots", ds_s],
            &ds,
        ),
        (vec!["bench", "--out", s(&bench)], &bench),
    ];
    // The readers' verification cache (a hidden file of the dataset's own) may change.
    let visible = |p: &Path| {
        !p.file_name()
            .is_some_and(|n| s(Path::new(n)).starts_with('.'))
    };
    let before = common::files_under(&ds, &visible);
    for (args, target) in &cases {
        let o = bin_within(args, 60);
        let msg = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {msg}");
        assert!(
            msg.contains("inside the dataset") && msg.contains(s(target)),
            "{args:?}: {msg}"
        );
    }
    assert_eq!(
        common::files_under(&ds, &visible),
        before,
        "nothing was added to the dataset"
    );
    assert!(!pics.exists());
    // Beside the dataset is fine, and the dataset is still clean.
    let o = bin_within(
        &["summarize", s(&ds), "--out", s(&dir.join("sum.parquet"))],
        60,
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = bin_within(&["check", s(&ds)], 60);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_refined_axis_named_twice_is_refused() {
    let text = format!(
        "{}[refine]\naxes = [\"alpha\", \"alpha\"]\nmax_level = 1\n",
        SWEEP.replace(
            "values = [50.0, 200.0]",
            "linspace = { start = 50.0, stop = 200.0, num = 2 }"
        )
    );
    let e = SweepSpec::from_str_named(&text, "dup.toml", "dup")
        .expect_err("refused")
        .to_string();
    assert!(e.contains("`alpha` is listed twice"), "{e}");
    let once = text.replace("[\"alpha\", \"alpha\"]", "[\"alpha\"]");
    assert!(SweepSpec::from_str_named(&once, "ok.toml", "ok").is_ok());
}
