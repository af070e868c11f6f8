//! Adapter discovery and device creation, apart from any computation: the engine
//! takes a [`GpuContext`], tests make their own.

use super::{GpuError, Precision, PrecisionChoice};

/// How to pick the adapter and the precision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuOptions {
    /// Case-insensitive substring of the adapter name; `None` prefers a discrete GPU.
    pub adapter: Option<String>,
    pub precision: PrecisionChoice,
}

/// What `metachron devices` prints of one adapter.
#[derive(Debug, Clone)]
pub struct AdapterSummary {
    pub name: String,
    /// PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, ...).
    pub vendor: u32,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub shader_f64: bool,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_storage_buffers_per_shader_stage: u32,
}

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    desc.backends = wgpu::Backends::VULKAN;
    wgpu::Instance::new(desc)
}

fn summary(a: &wgpu::Adapter) -> AdapterSummary {
    let info = a.get_info();
    let limits = a.limits();
    AdapterSummary {
        name: info.name.clone(),
        vendor: info.vendor,
        backend: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver: format!("{} {}", info.driver, info.driver_info)
            .trim()
            .to_string(),
        shader_f64: a.features().contains(wgpu::Features::SHADER_F64),
        max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
        max_buffer_size: limits.max_buffer_size,
        max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
        max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
    }
}

/// Every adapter wgpu can see.
pub fn list_adapters() -> Vec<AdapterSummary> {
    let inst = instance();
    pollster::block_on(inst.enumerate_adapters(wgpu::Backends::VULKAN))
        .iter()
        .map(summary)
        .collect()
}

fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// An open device and what the engine needs to know about it. Cloning it shares the
/// device (wgpu's handles are reference-counted).
#[derive(Clone)]
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter: AdapterSummary,
    pub precision: Precision,
    pub limits: wgpu::Limits,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter.name)
            .field("precision", &self.precision)
            .finish()
    }
}

impl GpuContext {
    /// Open the adapter `opts` asks for (a discrete GPU first, the CPU adapter last).
    pub fn new(opts: &GpuOptions) -> Result<GpuContext, GpuError> {
        let inst = instance();
        let mut adapters = pollster::block_on(inst.enumerate_adapters(wgpu::Backends::VULKAN));
        if adapters.is_empty() {
            return Err(GpuError::NoAdapter);
        }
        adapters.sort_by_key(|a| rank(a.get_info().device_type));
        let adapter = match &opts.adapter {
            Some(wanted) => {
                let w = wanted.to_lowercase();
                let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&w))
                    .ok_or_else(|| GpuError::AdapterNotFound {
                        wanted: wanted.clone(),
                        available: names.join(", "),
                    })?
            }
            None => adapters.remove(0),
        };
        let s = summary(&adapter);
        let precision = match (opts.precision, s.shader_f64) {
            (PrecisionChoice::F32, _) => Precision::F32,
            (PrecisionChoice::Auto, _) => auto_precision(&s),
            (PrecisionChoice::F64, true) => Precision::F64,
            (PrecisionChoice::F64, false) => return Err(GpuError::NoF64 { adapter: s.name }),
        };
        let features = match precision {
            Precision::F64 => wgpu::Features::SHADER_F64,
            Precision::F32 => wgpu::Features::empty(),
        };
        // Ask for the adapter's own buffer limits: big batches need big state buffers.
        let al = adapter.limits();
        // METACHRON_GPU_MAX_BUFFER_BYTES caps both (tests of batches that do not fit).
        let cap = std::env::var("METACHRON_GPU_MAX_BUFFER_BYTES")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: al.max_storage_buffer_binding_size.min(cap),
            max_buffer_size: al.max_buffer_size.min(cap),
            max_storage_buffers_per_shader_stage: al.max_storage_buffers_per_shader_stage.min(8),
            ..wgpu::Limits::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("metachron"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device {
            adapter: s.name.clone(),
            message: e.to_string(),
        })?;
        Ok(GpuContext {
            device,
            queue,
            adapter: s,
            precision,
            limits,
        })
    }
}

/// Adapters whose f64 runs at 1/2 of the f32 rate or better, by PCI vendor id and a
/// name substring (case-insensitive). Every other GPU (GeForce, RTX and Quadro,
/// NVIDIA's L4/L40/A10/T4, Radeon, Intel Arc and integrated parts, Apple, mobile) runs
/// f64 at 1/16–1/64 of f32, or not at all. docs/gpu.md ("Precision") has the table and
/// the cost count it rests on.
pub const FAST_F64: &[(u32, &[&str])] = &[
    // NVIDIA data-centre parts: P100, V100, A100/A800/A30, H100/H800/H200/GH200, B100/B200/GB200.
    (
        0x10de,
        &[
            "p100", "v100", "a100", "a800", "a30", "h100", "h800", "h200", "b100", "b200",
            "titan v",
        ],
    ),
    // AMD Instinct (MI50 … MI300).
    (
        0x1002,
        &[
            "instinct", "mi50", "mi60", "mi100", "mi210", "mi250", "mi300",
        ],
    ),
    // Intel Data Center GPU Max (Ponte Vecchio).
    (0x8086, &["data center gpu max"]),
];

/// `--gpu-precision auto`: f64 where the adapter has it and runs it fast (a CPU
/// adapter, whose f64 SIMD runs at half its f32 rate, or a part of [`FAST_F64`]);
/// the compensated f32 kernel everywhere else.
pub fn auto_precision(a: &AdapterSummary) -> Precision {
    let name = a.name.to_lowercase();
    let fast = a.device_type == "Cpu"
        || FAST_F64
            .iter()
            .any(|(v, parts)| *v == a.vendor && parts.iter().any(|p| name.contains(p)));
    if a.shader_f64 && fast {
        Precision::F64
    } else {
        Precision::F32
    }
}

impl GpuOptions {
    /// `METACHRON_ADAPTER` (name substring) and `METACHRON_GPU_PRECISION` (auto|f64|f32).
    pub fn from_env() -> Result<GpuOptions, GpuError> {
        let adapter = std::env::var("METACHRON_ADAPTER")
            .ok()
            .filter(|s| !s.is_empty());
        let precision = match std::env::var("METACHRON_GPU_PRECISION").as_deref() {
            Err(_) | Ok("") | Ok("auto") => PrecisionChoice::Auto,
            Ok("f64") => PrecisionChoice::F64,
            Ok("f32") => PrecisionChoice::F32,
            Ok(other) => {
                return Err(GpuError::Environment {
                    variable: "METACHRON_GPU_PRECISION",
                    value: other.to_string(),
                    allowed: "auto, f64, f32",
                })
            }
        };
        Ok(GpuOptions { adapter, precision })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(vendor: u32, name: &str, device_type: &str, shader_f64: bool) -> AdapterSummary {
        AdapterSummary {
            name: name.into(),
            vendor,
            backend: "Vulkan".into(),
            device_type: device_type.into(),
            driver: String::new(),
            shader_f64,
            max_storage_buffer_binding_size: 0,
            max_buffer_size: 0,
            max_compute_workgroups_per_dimension: 0,
            max_storage_buffers_per_shader_stage: 0,
        }
    }

    #[test]
    fn auto_takes_f64_only_where_it_is_fast() {
        let d = "DiscreteGpu";
        for (a, want) in [
            (adapter(0x10de, "NVIDIA H200", d, true), Precision::F64),
            (
                adapter(0x10de, "NVIDIA A100-SXM4-80GB", d, true),
                Precision::F64,
            ),
            (
                adapter(0x10de, "NVIDIA GeForce RTX 4090", d, true),
                Precision::F32,
            ),
            (adapter(0x10de, "NVIDIA L40S", d, true), Precision::F32),
            (
                adapter(0x1002, "AMD Instinct MI250X", d, true),
                Precision::F64,
            ),
            (
                adapter(0x1002, "AMD Radeon RX 7900 XTX", d, true),
                Precision::F32,
            ),
            (
                adapter(0x8086, "Intel(R) Arc(tm) A770", d, false),
                Precision::F32,
            ),
            (
                adapter(0x10005, "llvmpipe (LLVM 19.1.7, 256 bits)", "Cpu", true),
                Precision::F64,
            ),
            // No SHADER_F64: f32 whatever the table says.
            (adapter(0x10de, "NVIDIA H100", d, false), Precision::F32),
            // A name from the table under another vendor is not that part.
            (adapter(0x1002, "H100 lookalike", d, true), Precision::F32),
        ] {
            assert_eq!(auto_precision(&a), want, "{}", a.name);
        }
    }
}
