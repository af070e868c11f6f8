//! The GPU backend as a user meets it on the command line.

use crate::common;

/// A short paper run on the gpu backend.
const GPU_RUN: &[&str] = &[
    "simulate",
    "--backend",
    "gpu",
    "--set",
    "t_final=0.2",
    "--quiet",
];

#[test]
fn simulate_on_the_gpu_reports_the_adapter_and_the_metrics() {
    let Some(ctx) = common::gpu::gpu_context("simulate_on_the_gpu") else {
        return;
    };
    let (code, out, err) = common::bin::run_with(GPU_RUN, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("backend gpu ({}", ctx.adapter.name)),
        "{out}"
    );
    assert!(out.contains("status ok"), "{out}");
    let (code, out, _) = common::bin::run_with(&["devices"], &[]);
    assert_eq!(code, 0);
    assert!(
        out.contains(&ctx.adapter.name) && out.contains("SHADER_F64"),
        "{out}"
    );
}

#[test]
fn without_a_usable_adapter_gpu_falls_back_to_the_cpu_batch_with_a_notice() {
    // No usable adapter: the Vulkan loader is pointed at no driver. (A named adapter that
    // does not exist is an error, not a fallback: tests/suite/first_hour.rs.)
    let no_driver = [
        ("VK_ICD_FILENAMES", "/nonexistent/icd.json"),
        ("VK_DRIVER_FILES", "/nonexistent/icd.json"),
    ];
    let (code, out, err) = common::bin::run_with(GPU_RUN, &no_driver);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("GPU backend unavailable"), "{err}");
    assert!(out.contains("backend cpu"), "{out}");
}

#[test]
fn gpu_refuses_time_series_outputs_with_a_clear_error() {
    let dir = std::env::temp_dir().join("metachron-gpu-cli");
    let path = dir.join("ts.parquet");
    let (code, _, err) = common::bin::run_with(
        &[
            "simulate",
            "--backend",
            "gpu",
            "--set",
            "t_final=0.2",
            "--out",
            path.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--out") && err.contains("--backend cpu"),
        "{err}"
    );
    assert!(!path.exists());
}
