//! GPU options shared by the commands that can run on the device, and
//! `metachron devices` (the adapters, or the generated kernel of a shape).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use metachron::batch::Engine;
use metachron::gpu::layout::KernelShape;
use metachron::gpu::{self, shader, Gpu, GpuOptions, Precision, PrecisionChoice};
use metachron::params::{Range, MAX_TERRAIN_MODES};
use metachron::simulate::Backend;

#[derive(Args, Debug, Clone, Default)]
pub struct GpuArgs {
    /// GPU adapter to use: a case-insensitive part of its name as `metachron devices`
    /// lists it (default: a discrete GPU first, a software adapter last).
    #[arg(long, value_name = "NAME")]
    pub adapter: Option<String>,
    /// Floating-point precision of the GPU kernel: f64 needs SHADER_F64 (NVIDIA Vulkan,
    /// lavapipe); auto picks f64 where the adapter runs it fast (data-centre GPUs, CPU
    /// adapters), else the compensated f32 kernel (docs/gpu.md, "Precision").
    #[arg(long, value_enum, default_value_t = PrecisionChoice::Auto)]
    pub gpu_precision: PrecisionChoice,
}

impl GpuArgs {
    /// The engine for `backend`: on the GPU, the handle these flags choose (see
    /// [`GpuArgs::open`]); elsewhere these flags are refused.
    pub fn engine(&self, backend: Backend) -> Result<Engine> {
        if backend == Backend::Gpu {
            return Ok(Engine::Gpu(self.open()?));
        }
        anyhow::ensure!(
            !self.any_given(),
            "--adapter and --gpu-precision choose the GPU; they need --backend gpu"
        );
        Ok(match backend {
            Backend::Reference => Engine::Reference,
            Backend::Cpu | Backend::Gpu => Engine::Cpu,
        })
    }

    /// The GPU these flags choose, opened on first use, its notices printed as
    /// warnings. Environment variables METACHRON_ADAPTER / METACHRON_GPU_PRECISION fill
    /// what the flags leave open.
    pub fn open(&self) -> Result<Arc<Gpu>> {
        let env = GpuOptions::from_env()?;
        let opts = GpuOptions {
            adapter: self.adapter.clone().or(env.adapter),
            precision: if self.gpu_precision == PrecisionChoice::Auto {
                env.precision
            } else {
                self.gpu_precision
            },
        };
        let explicit = opts.adapter.clone();
        let handle = Gpu::new(opts).with_notice_sink(|m| eprintln!("warning: {m}"));
        quiet_window_system();
        // Only `--backend gpu` alone may fall back to the CPU; an adapter asked for by
        // name that cannot be opened is the user's mistake, not a reason to run elsewhere.
        if let Some(name) = explicit {
            handle
                .context()
                .with_context(|| format!("--adapter {name}"))?;
        }
        Ok(Arc::new(handle))
    }

    /// True when a flag (not the environment) asked for something GPU-specific.
    pub fn any_given(&self) -> bool {
        self.adapter.is_some() || self.gpu_precision != PrecisionChoice::Auto
    }
}

/// Vulkan's window-system layer prints `error: XDG_RUNTIME_DIR is invalid or not set`
/// when the variable is missing (batch jobs, containers), although compute never needs
/// a display. Give the process a private runtime directory instead, before any GPU use
/// and while the process is still single-threaded (setting the environment races with
/// threads reading it).
pub fn quiet_window_system() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()) {
        return;
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    let dir = std::env::temp_dir().join(format!("metachron-runtime-{user}"));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    if builder.create(&dir).is_ok() {
        std::env::set_var("XDG_RUNTIME_DIR", &dir);
    }
}

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// Print the WGSL kernel generated for LEGSxNODES (e.g. 9x7: 9 legs of 7 nodes),
    /// checked by naga, instead of listing the adapters: the program wgpu is given,
    /// readable like any shader file. Needs no GPU.
    #[arg(long, value_name = "LEGSxNODES")]
    pub dump_wgsl: Option<String>,
    /// With --dump-wgsl: the kernel with the internal couple term (axo_f != 0).
    #[arg(long, requires = "dump_wgsl")]
    pub couple: bool,
    /// With --dump-wgsl: the kernel for ground other than the paper's (a terrain profile
    /// or Coulomb friction) evaluating HARMONICS terrain harmonics (0 for a slope or
    /// Coulomb on flat ground, 1 for a sine, terrain_modes (8 by default) for the rough
    /// profile).
    #[arg(long, value_name = "HARMONICS", requires = "dump_wgsl")]
    pub ground: Option<usize>,
    /// With --dump-wgsl: the kernel's precision (f32 is the compensated kernel;
    /// default f64).
    #[arg(long, value_enum, requires = "dump_wgsl")]
    pub precision: Option<KernelPrecision>,
}

/// The precision of a dumped kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelPrecision {
    F64,
    F32,
}

/// `LEGSxNODES` as a kernel shape, each count within its parameter's range.
fn parse_shape(text: &str, couple: bool, ground: Option<usize>) -> Result<KernelShape> {
    let (legs, nodes) = text.split_once(['x', 'X']).with_context(|| {
        format!("--dump-wgsl `{text}`: expected LEGSxNODES, e.g. 9x7 (9 legs of 7 nodes)")
    })?;
    let count = |name: &str, v: &str| -> Result<usize> {
        let range = metachron::params::spec(name)
            .map(|s| s.range)
            .with_context(|| format!("no parameter `{name}`"))?;
        let Range::Int(lo, hi) = range else {
            anyhow::bail!("parameter `{name}` is not a count");
        };
        v.trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .with_context(|| {
                format!(
                    "--dump-wgsl `{text}`: {name} = `{v}`: allowed is {}",
                    range.describe()
                )
            })
    };
    let harmonics = ground.unwrap_or(0);
    if harmonics > MAX_TERRAIN_MODES {
        anyhow::bail!("--ground {harmonics}: allowed is an integer in [0, {MAX_TERRAIN_MODES}]");
    }
    Ok(KernelShape {
        n_legs: count("n_legs", legs)?,
        n_nodes: count("n_nodes", nodes)?,
        couple,
        ground: ground.is_some(),
        harmonics,
        law: false,
    })
}

/// `metachron devices`: every adapter wgpu sees, with what metachron needs of it; with
/// `--dump-wgsl`, the generated kernel of a shape instead.
pub fn devices(args: DevicesArgs) -> Result<ExitCode> {
    if let Some(text) = &args.dump_wgsl {
        let shape = parse_shape(text, args.couple, args.ground)?;
        let precision = match args.precision.unwrap_or(KernelPrecision::F64) {
            KernelPrecision::F64 => Precision::F64,
            KernelPrecision::F32 => Precision::F32,
        };
        let src = shader::source(shape, precision);
        shader::validate(&src)
            .map_err(anyhow::Error::msg)
            .context("the generated kernel does not validate")?;
        std::io::Write::write_all(&mut std::io::stdout(), src.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    quiet_window_system();
    let adapters = gpu::list_adapters();
    if adapters.is_empty() {
        println!("no GPU adapter found (Vulkan). Without one, --backend gpu falls back to the CPU batch.");
        println!(
            "For a software adapter: apt-get install -y mesa-vulkan-drivers libvulkan1 (lavapipe)."
        );
        return Ok(ExitCode::SUCCESS);
    }
    for (i, a) in adapters.iter().enumerate() {
        println!("[{i}] {}", a.name);
        println!(
            "    backend {} | type {} | driver {}",
            a.backend, a.device_type, a.driver
        );
        println!(
            "    SHADER_F64 {} | max storage binding {} MiB | max buffer {} MiB | max workgroups/dim {} | storage buffers/stage {}",
            if a.shader_f64 { "yes" } else { "no (f32 kernel)" },
            a.max_storage_buffer_binding_size >> 20,
            a.max_buffer_size >> 20,
            a.max_compute_workgroups_per_dimension,
            a.max_storage_buffers_per_shader_stage
        );
    }
    Ok(ExitCode::SUCCESS)
}
