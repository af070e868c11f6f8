//! GPU test support: a context of the tests' own, or a printed notice and a skip
//! (a failure instead when METACHRON_REQUIRE_GPU=1, as in CI with lavapipe).

use metachron::gpu::{GpuContext, GpuOptions};

pub fn gpu_context(test: &str) -> Option<GpuContext> {
    let opts = GpuOptions::from_env().expect("GPU options from the environment");
    match GpuContext::new(&opts) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("METACHRON_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: METACHRON_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("SKIPPED {test}: no GPU adapter ({e})");
            None
        }
    }
}

/// Run `src` (a compute shader with entry point `main` and one read-write storage
/// buffer at binding 0) once in a single workgroup on `data`, and return the buffer's
/// contents afterwards: small on-adapter checks of shader arithmetic.
pub fn run_once<T: bytemuck::Pod>(ctx: &GpuContext, src: &str, data: &[T]) -> Vec<T> {
    use wgpu::util::DeviceExt;
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
    let bytes = std::mem::size_of_val(data) as u64;
    let buf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(data),
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    });
    let out = dev.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
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
    enc.copy_buffer_to_buffer(&buf, 0, &out, 0, bytes);
    ctx.queue.submit([enc.finish()]);
    out.map_async(wgpu::MapMode::Read, .., |_| {});
    dev.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    bytemuck::pod_collect_to_vec(&out.get_mapped_range(..).unwrap())
}
