//! The compensated f32 kernel rests on error-free transformations (two-sum, Dekker's
//! product) surviving the adapter's shader compiler, which may treat float
//! addition as associative. Run here on the test adapter, against exact f64 values.
//! Skipped with a notice where no adapter exists, unless METACHRON_REQUIRE_GPU=1 (CI).

use crate::common;

use metachron::gpu::shader::COMPENSATED_FILE;

/// Run `body` (WGSL statements reading `io[0..8]` and writing `io[8..16]`) once.
fn run(ctx: &metachron::gpu::GpuContext, body: &str, input: [f32; 8]) -> Vec<f32> {
    let src = format!(
        "alias real = f32;\n@group(0) @binding(0) var<storage, read_write> io: array<f32>;\n{}\n\
         @compute @workgroup_size(1) fn main() {{\n{body}\n}}\n",
        COMPENSATED_FILE.1
    );
    let mut data = input.to_vec();
    data.extend([0.0f32; 8]);
    common::gpu::run_once(ctx, &src, &data)[8..].to_vec()
}

#[test]
fn error_free_transformations_survive_the_shader_compiler() {
    let Some(ctx) = common::gpu::gpu_context("error_free_transformations") else {
        return;
    };
    let (a, b) = (1.0f32 + 2f32.powi(-20), 3.0e-9f32);
    let (x, y) = (1.0f32 + 2f32.powi(-12), 1.0f32 - 2f32.powi(-13));
    let got = run(
        &ctx,
        "let one = io[0];\n\
         let s = two_sum(io[1], io[2], one); io[8] = s.x; io[9] = s.y;\n\
         let p = two_prod(io[3], io[4], one); io[10] = p.x; io[11] = p.y;\n\
         let t = df_add(vec2<f32>(io[1], 0.0), vec2<f32>(io[2], 0.0), one); io[12] = t.x; io[13] = t.y;\n\
         let w = two_sum(io[2], io[1], one); io[14] = w.x; io[15] = w.y;",
        [1.0, a, b, x, y, 0.0, 0.0, 0.0],
    );
    eprintln!("{got:?}");
    let exact_sum = f64::from(a) + f64::from(b);
    assert_eq!(got[0], exact_sum as f32, "two_sum's sum");
    assert_eq!(
        f64::from(got[0]) + f64::from(got[1]),
        exact_sum,
        "two_sum's error"
    );
    let exact_prod = f64::from(x) * f64::from(y);
    assert_eq!(got[2], exact_prod as f32, "two_prod's product");
    assert_eq!(
        f64::from(got[2]) + f64::from(got[3]),
        exact_prod,
        "two_prod's error"
    );
    assert_eq!(f64::from(got[4]) + f64::from(got[5]), exact_sum, "df_add");
    assert_eq!(
        f64::from(got[6]) + f64::from(got[7]),
        exact_sum,
        "two_sum, small + large"
    );
}
