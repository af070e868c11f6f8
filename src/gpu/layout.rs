//! What host and shader share besides the per-instance constants ([`super::instance`])
//! and the state slots ([`super::tally`]): the integer structs (`#[repr(C)]`, bytemuck,
//! twins in `shaders/layout.wgsl`, checked member by member with naga), the matrix-set
//! layout, and the generated shader header ([`wgsl_header`]).

use bytemuck::{Pod, Zeroable};

use super::tally::StateLayout;
use super::Precision;
use crate::model::axoneme;
use crate::model::terrain::{Profile, HARMONICS};
use crate::params::Params;

/// Invocations a workgroup aims at: two NVIDIA warps, one AMD wave64; a robot's legs
/// never straddle workgroups, so a workgroup holds ⌊64/N⌋ robots.
pub const WORKGROUP_TARGET: usize = 64;

/// Robots per workgroup for N legs: as many whole robots as fit 64 invocations.
pub fn robots_per_workgroup(n_legs: usize) -> usize {
    (WORKGROUP_TARGET / n_legs).max(1)
}

/// Invocations per workgroup.
pub fn workgroup_size(n_legs: usize) -> usize {
    robots_per_workgroup(n_legs) * n_legs
}

/// Per-instance integers (WGSL `InstanceInts`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct InstanceInts {
    /// Index of the instance's matrix set in the matrix buffer.
    pub matrix_set: u32,
    /// Steps per output interval, and in the last (possibly shorter) interval.
    pub steps_per_sample: u32,
    pub steps_last: u32,
    /// Output samples after the initial one (the run ends at sample `n_samples`).
    pub n_samples: u32,
    /// First sample inside the metrics window.
    pub window_first: u32,
    /// First sample of the window's second half (the `settled` snapshot).
    pub window_mid: u32,
}

/// Per-dispatch control block (WGSL `Control`, a uniform).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Control {
    /// Instances in this batch (the SoA stride of the state buffer).
    pub batch: u32,
    /// Steps [step_begin, step_end) of every instance handled by this dispatch
    /// (step 0 = the initial sample).
    pub step_begin: u32,
    pub step_end: u32,
    pub _pad: u32,
}

/// Loop iterations one invocation runs per step: the kernel's only loop is the step
/// loop (every loop over nodes and legs is unrolled by the generator; a test counts
/// the loops in naga's IR), whatever the shape.
pub const LOOP_ITERATIONS_PER_STEP: u64 = 1;

/// Loop iterations a software adapter (llvmpipe/lavapipe) runs per invocation before
/// it cuts loops short; dispatches there are sized to stay below it.
pub const SOFTWARE_LOOP_BUDGET: u64 = 65535;

/// Status word per instance: 0 while running or finished, k + 1 when the state left the
/// physical range during output interval k (diverged at sample time t_k).
pub const STATUS_RUNNING: u32 = 0;

/// What a compiled kernel is specialised for: the robot's shape, and the model terms
/// its instances use (a batch whose instances have no internal couple runs a kernel
/// without one, so the term costs nothing where it is off; the same for the ground).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelShape {
    pub n_legs: usize,
    pub n_nodes: usize,
    pub couple: bool,
    /// The general contact (docs/model.md (T1)–(T4)): the terrain is not flat or the
    /// tips have Coulomb friction. Without it the contact is the paper's flat line and
    /// viscous tip, and the kernel is the one that knows nothing of terrain.
    pub ground: bool,
    /// Harmonics of the profile the ground kernel evaluates (none for a slope or
    /// Coulomb on flat ground, one for a sine, `terrain_modes` for the rough profile);
    /// 0 where `ground` is false.
    pub harmonics: usize,
    /// The coupling's law (cubic terms, dampers: docs/model.md, "The coupling's law").
    /// Without it the springs are the paper's linear ones.
    pub law: bool,
}

impl KernelShape {
    /// The kernel an instance with parameters `p` runs on. The ground's rule is the
    /// profile's (`Profile::is_flat`, `Profile::harmonics`), as in the instance record.
    pub fn of(p: &Params) -> KernelShape {
        let profile = Profile::new(p);
        let ground = !profile.is_flat() || p.mu_c != 0.0;
        let harmonics = profile.harmonics();
        KernelShape {
            n_legs: p.n_legs,
            n_nodes: p.n_nodes,
            couple: axoneme::has_couple(p),
            ground,
            harmonics: if ground { harmonics } else { 0 },
            law: p.has_coupling_law(),
        }
    }

    /// N legs of n nodes, no optional term.
    pub fn plain(n_legs: usize, n_nodes: usize) -> KernelShape {
        KernelShape {
            n_legs,
            n_nodes,
            couple: false,
            ground: false,
            harmonics: 0,
            law: false,
        }
    }

    /// N legs of n nodes on general ground with `harmonics` terrain harmonics.
    pub fn on_ground(n_legs: usize, n_nodes: usize, harmonics: usize) -> KernelShape {
        KernelShape {
            ground: true,
            harmonics,
            ..KernelShape::plain(n_legs, n_nodes)
        }
    }

    /// The state slots of this shape's kernel in `precision` (f32 is compensated).
    pub fn state(&self, precision: Precision) -> StateLayout {
        StateLayout::new(self.n_legs, self.n_nodes, precision)
    }

    pub fn matrices(&self) -> MatrixLayout {
        MatrixLayout {
            m: 2 * self.n_nodes,
            couple: self.couple,
            terrain_extra: self.harmonics.saturating_sub(HARMONICS),
        }
    }
}

/// Layout of one matrix set: the component-block matrices of one leg (m = 2n), and the
/// internal couple's B_c, B_s in a kernel with the couple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatrixLayout {
    pub m: usize,
    pub couple: bool,
    /// Harmonics of the terrain beyond the [`HARMONICS`] among the instance's
    /// constants (a rough profile with more modes): their (aₘ, bₘ) close the set.
    pub terrain_extra: usize,
}

impl MatrixLayout {
    /// The kick needs no mass matrix: its inertia term is a·v after the solve.
    pub fn bending(&self) -> usize {
        0
    }
    pub fn geometric(&self) -> usize {
        self.m * self.m
    }
    pub fn p_inv(&self) -> usize {
        2 * self.m * self.m
    }
    pub fn load(&self) -> usize {
        3 * self.m * self.m
    }
    /// G − f32(G): what the f32 kernel adds to the rounded G where V = qᵀGq − ℓ must be
    /// exact (the compensated constraint at output samples; unused in f64).
    pub fn geometric_lo(&self) -> usize {
        3 * self.m * self.m + self.m
    }
    /// ℓ − f32(ℓ), the same for the leg length (ℓ is part of the set's key).
    pub fn leg_length_lo(&self) -> usize {
        4 * self.m * self.m + self.m
    }
    /// The constant 1, read at run time: multiplying by it keeps a shader compiler
    /// from rewriting the f32 kernel's error-free sums algebraically (see kernel.rs).
    pub fn one(&self) -> usize {
        4 * self.m * self.m + self.m + 1
    }
    /// The internal couple's B_c and B_s follow the words every kernel has.
    pub fn couple_cos(&self) -> usize {
        4 * self.m * self.m + self.m + 2
    }
    pub fn couple_sin(&self) -> usize {
        5 * self.m * self.m + self.m + 2
    }
    /// (aₘ, bₘ) of the terrain's harmonics m = 9..M, after everything else.
    pub fn terrain_extra(&self) -> usize {
        let couple = if self.couple { 2 * self.m * self.m } else { 0 };
        4 * self.m * self.m + self.m + 2 + couple
    }
    pub fn stride(&self) -> usize {
        self.terrain_extra() + 2 * self.terrain_extra
    }
}

/// The generated head of every shader: the precision alias, sizes, the state and
/// matrix-set constants, and the per-instance structs.
pub fn wgsl_header(shape: KernelShape, precision: Precision) -> String {
    let KernelShape {
        n_legs, n_nodes, ..
    } = shape;
    let s = shape.state(precision);
    let m = shape.matrices();
    let (real, real_max) = match precision {
        Precision::F64 => ("f64", "1.7976931348623157e308"),
        Precision::F32 => ("f32", "3.4028234663852886e38"),
    };
    let mut h = String::new();
    h.push_str("// Generated by src/gpu/layout.rs: do not edit.\n");
    h.push_str(&format!("alias real = {real};\n"));
    h.push_str(&format!("const REAL_MAX: real = {real_max};\n"));
    h.push_str(&format!(
        "const DIVERGENCE_BOUND: real = {:e};\n",
        crate::sample::DIVERGENCE_BOUND
    ));
    let consts = [
        ("N_LEGS", n_legs),
        ("N_NODES", n_nodes),
        ("ROBOTS_PER_WORKGROUP", robots_per_workgroup(n_legs)),
        ("WORKGROUP_SIZE", workgroup_size(n_legs)),
        ("L", s.leg_dofs()),
        ("NQ", s.nq()),
        ("MAT_STRIDE", m.stride()),
    ];
    for (name, value) in consts {
        h.push_str(&format!("const {name}: u32 = {value}u;\n"));
    }
    h.push_str(&super::instance::wgsl_structs());
    h
}
