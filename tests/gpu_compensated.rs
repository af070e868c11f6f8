//! The compensated f32 kernel rests on error-free transformations (two-sum, Dekker's
//! product) surviving the adapter's shader compiler, which may treat float
//! addition as associative. Run here on the test adapter, against exact f64 values.
//! Skipped with a notice where no adapter exists, unless METACHRON_REQUIRE_GPU=1 (CI).

mod common;

use metachron::gpu::shader::COMPENSATED_FILE;
use wgpu::util::DeviceExt;

/// Run `body` (WGSL statements reading `io[0..8]` and writing `io[8..16]`) once.
fn run(ctx: &metachron::gpu::GpuContext, body: &str, input: [f32; 8]) -> Vec<f32> {
    let src = format!(
        "alias real = f32;\n@group(0) @binding(0) var<storage, read_write> io: array<f32>;\n{}\n\
         @compute @workgroup_size(1) fn main() {{\n{body}\n}}\n",
        COMPENSATED_FILE.1
    );
    let dev = &ctx.device;
    let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(src.into()),
    });
    let pipeline = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let mut data = input.to_vec();
    data.extend([0.0f32; 8]);
    let buf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&data),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let out = dev.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buf.as_entire_binding(),
        }],
    });
    let mut enc = dev.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    enc.copy_buffer_to_buffer(&buf, 0, &out, 0, 64);
    ctx.queue.submit([enc.finish()]);
    out.map_async(wgpu::MapMode::Read, .., |_| {});
    dev.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let v: Vec<f32> = bytemuck::pod_collect_to_vec(&out.get_mapped_range(..).unwrap());
    v[8..].to_vec()
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
