//! The ground kernel's tanh (shaders/terrain.wgsl, `tanh_real`: arithmetic only, since
//! SPIR-V has no f64 tanh) on the test adapter in f64, against Rust's `f64::tanh`: the
//! Coulomb friction's tanh(v_t/v_C) and sech² must be the CPU twin's to round-off.
//! Skipped with a notice where no adapter exists, unless METACHRON_REQUIRE_GPU=1 (CI).

use crate::common;

use metachron::gpu::shader::TERRAIN_FILE;

/// tanh_real of every input, computed on the adapter in f64.
fn tanh_on_device(ctx: &metachron::gpu::GpuContext, xs: &[f64]) -> Vec<f64> {
    // The file's constants and tanh_real: what precedes the body-contact functions (which
    // need the kernel's bindings).
    let (head, _) = TERRAIN_FILE
        .1
        .split_once("// Penalty contact of one body point")
        .expect("tanh_real precedes the body contact in terrain.wgsl");
    assert!(head.contains("fn tanh_real"));
    let n = xs.len();
    let src = format!(
        "alias real = f64;\n@group(0) @binding(0) var<storage, read_write> io: array<f64>;\n{head}\n\
         @compute @workgroup_size(1) fn main() {{\n\
         for (var i = 0u; i < {n}u; i++) {{ io[{n}u + i] = tanh_real(io[i]); }}\n}}\n"
    );
    let mut data = xs.to_vec();
    data.extend(vec![0.0f64; n]);
    common::gpu::run_once(ctx, &src, &data)[n..].to_vec()
}

#[test]
fn the_shaders_tanh_is_f64_tanh_to_round_off() {
    let Some(ctx) = common::gpu::gpu_context("the_shaders_tanh") else {
        return;
    };
    // Zero, tiny (relative accuracy where tanh x ≈ x), either side of the reduction's
    // k = 0 boundary (|2x| = ln 2/2), moderate, the cut at 20, beyond it, both signs.
    let mut xs = vec![
        0.0, 1e-300, 1e-12, 1e-6, 0.01, 0.17, 0.1733, 0.1734, 0.3, 0.5,
    ];
    xs.extend([
        0.9, 1.0, 1.7, 2.5, 3.3, 5.0, 8.0, 12.5, 18.4, 19.9, 20.0, 21.0, 1e3,
    ]);
    let neg: Vec<f64> = xs.iter().map(|x| -x).collect();
    xs.extend(neg);
    // A sweep of v_t/v_C as the friction meets it.
    xs.extend((0..64).map(|k| (k as f64 - 31.5) * 0.173));
    let got = tanh_on_device(&ctx, &xs);
    let mut worst = 0.0f64;
    for (&x, &t) in xs.iter().zip(&got) {
        let want = x.tanh();
        let rel = if want == 0.0 {
            t.abs()
        } else {
            ((t - want) / want).abs()
        };
        worst = worst.max(rel);
        assert!(
            rel <= 4.0 * f64::EPSILON,
            "tanh({x}): shader {t}, f64 {want} ({rel:e})"
        );
        // sech² = 1 − tanh², the friction's damping, to round-off in absolute terms.
        assert!(((1.0 - t * t) - (1.0 - want * want)).abs() <= 4.0 * f64::EPSILON);
    }
    eprintln!("tanh_real: largest relative difference from f64::tanh {worst:.2e}");
}
