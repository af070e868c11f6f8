//! What a new user meets in the first hour, beyond the README's examples
//! (tests/suite/readme_examples.rs): no GPU noise on CPU runs, GPU flags that fail loudly,
//! snapshot directories that do not mix runs, the installed-binary helpers.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::scratch;

use common::bin::BIN;

fn run(args: &[&str], dir: &Path) -> Output {
    common::bin::command()
        .args(args)
        .current_dir(dir)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("METACHRON_ADAPTER")
        .env_remove("METACHRON_GPU_PRECISION")
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// A cpu or reference run must not touch Vulkan: opening an instance without
/// XDG_RUNTIME_DIR made lavapipe's window-system layer print `error: XDG_RUNTIME_DIR
/// is invalid or not set` (where lavapipe is installed, as in CI).
#[test]
fn cpu_and_reference_runs_print_nothing_on_stderr() {
    let dir = scratch("quiet");
    for backend in ["cpu", "reference"] {
        let o = run(
            &[
                "simulate",
                "--quiet",
                "--backend",
                backend,
                "--set",
                "t_final=0.05",
            ],
            &dir,
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{backend}: {out}{err}");
        assert!(out.contains(&format!("backend {backend}")), "{out}");
        assert_eq!(err.trim(), "", "{backend} printed on stderr");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Only `--backend gpu` alone may fall back to the CPU: an adapter asked for by name
/// that does not exist is an error (exit 2) naming it, on simulate and sweep; GPU flags
/// without `--backend gpu` are an error rather than silently ignored.
#[test]
fn a_named_adapter_that_does_not_exist_is_an_error() {
    let dir = scratch("adapter");
    let sweep = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/ci-sweep.toml");
    let cases: [Vec<&str>; 2] = [
        vec!["simulate", "--quiet", "--set", "t_final=0.05"],
        vec!["sweep", sweep, "--quiet", "--out", "out"],
    ];
    for base in cases {
        let mut args = base.clone();
        args.extend(["--backend", "gpu", "--adapter", "no-such-adapter-4711"]);
        let o = run(&args, &dir);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains("no-such-adapter-4711"), "{err}");
        assert!(!out.contains("status ok") && !out.contains("ran "), "{out}");

        let mut args = base.clone();
        args.extend(["--gpu-precision", "f32"]);
        let o = run(&args, &dir);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--backend gpu"), "{err}");
    }
    assert!(!dir.join("out").exists(), "a refused sweep wrote a dataset");
    std::fs::remove_dir_all(&dir).ok();
}

fn pictures(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_reused_snapshot_directory_holds_only_the_new_run() {
    let dir = scratch("snapshots");
    let pics = dir.join("pics");
    std::fs::create_dir_all(&pics).unwrap();
    std::fs::write(pics.join("notes.txt"), "mine").unwrap();
    std::fs::write(pics.join("snapshot_mine.jpg"), "mine too").unwrap();
    let first = run(
        &[
            "simulate",
            "--quiet",
            "--backend",
            "cpu",
            "--set",
            "t_final=0.2",
            "--snapshots",
            "pics",
            "--snapshot-times",
            "0,0.1,0.2",
        ],
        &dir,
    );
    assert_eq!(first.status.code(), Some(0), "{:?}", text(&first));
    assert_eq!(
        pictures(&pics),
        [
            "basal_angles.png",
            "notes.txt",
            "snapshot_mine.jpg",
            "snapshot_t000.00.png",
            "snapshot_t000.10.png",
            "snapshot_t000.20.png"
        ]
    );
    let second = run(
        &[
            "simulate",
            "--quiet",
            "--backend",
            "cpu",
            "--set",
            "t_final=0.1",
            "--snapshots",
            "pics",
            "--snapshot-times",
            "0.05",
        ],
        &dir,
    );
    assert_eq!(second.status.code(), Some(0), "{:?}", text(&second));
    assert_eq!(
        pictures(&pics),
        [
            "basal_angles.png",
            "notes.txt",
            "snapshot_mine.jpg",
            "snapshot_t000.05.png"
        ]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn completions_and_man_page_cover_the_subcommands() {
    let dir = scratch("completions");
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell], &dir);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{shell}: {err}");
        for word in ["simulate", "sweep", "map", "devices", "snapshots"] {
            assert!(out.contains(word), "{shell} completions lack {word}");
        }
    }
    let o = run(&["completions", "tcsh"], &dir);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
    let o = run(&["man"], &dir);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        out.starts_with(".ie") || out.contains(".TH metachron"),
        "{}",
        &out[..out.len().min(200)]
    );
    assert!(out.contains("simulate") && out.contains("sweep"));
    std::fs::remove_dir_all(&dir).ok();
}

/// sweeps/slurm-array.sbatch finds the binary through METACHRON or PATH, and says
/// how to provide it when neither works (tests/slurm/run-array.sh runs it
/// under a scheduler; here it runs as a plain script, one array task).
#[test]
fn the_sbatch_script_finds_the_binary_or_says_how() {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/sweeps/slurm-array.sbatch");
    let sweep = format!("{root}/tests/python/ci-sweep.toml");
    let dir = scratch("sbatch");
    let missing = Command::new("bash")
        .arg(&script)
        .args([&sweep, "out"])
        .current_dir(&dir)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("METACHRON")
        .output()
        .unwrap();
    let (_, err) = text(&missing);
    assert_eq!(missing.status.code(), Some(127), "{err}");
    assert!(
        err.contains("cargo install --locked --path .") && err.contains("METACHRON="),
        "{err}"
    );

    let ok = Command::new("bash")
        .arg(&script)
        .args([&sweep, "out"])
        .current_dir(&dir)
        .env("METACHRON", BIN)
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_TASK_COUNT", "2")
        .env("SLURM_ARRAY_TASK_MIN", "0")
        .output()
        .unwrap();
    let (out, err) = text(&ok);
    assert_eq!(ok.status.code(), Some(0), "{out}{err}");
    let parts: Vec<_> = std::fs::read_dir(dir.join("out/shard=1"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .collect();
    assert!(!parts.is_empty(), "no part file in out/shard=1: {out}{err}");
    assert!(
        !dir.join("out/shard=0").exists(),
        "task 1 of 2 wrote shard 0"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let be = |k: usize| u32::from_be_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
    (be(16), be(20))
}

fn draw_model_figure(path: &Path) {
    let robot = metachron::model::Robot::new(&metachron::params::Params::default());
    metachron::output::plots::model_figure(&robot, path).unwrap();
}

/// docs/model.md's figure is drawn by this code: the committed PNG has the size the
/// code draws now (regenerate with `cargo test --release --test suite first_hour::study -- --ignored`).
#[test]
fn the_model_figure_is_drawn_by_metachron() {
    let dir = scratch("figure");
    let fresh = dir.join("robot.png");
    draw_model_figure(&fresh);
    let size = png_size(&fresh);
    assert!(size.0 >= 800 && size.1 >= 150, "{size:?}");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/robot.png");
    assert_eq!(
        png_size(&committed),
        size,
        "docs/robot.png is stale: regenerate it"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Studies and probes: run by hand (`--ignored`), not by the suite.
mod study {
    use super::*;

    #[test]
    #[ignore = "writes docs/robot.png"]
    fn regenerate_the_model_figure() {
        draw_model_figure(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/robot.png"));
    }
}
