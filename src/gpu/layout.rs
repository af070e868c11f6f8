//! One source of truth for what host and shader share: the per-instance structs
//! (`#[repr(C)]`, bytemuck) and the state-slot layout. The WGSL twins of the structs
//! live in `shaders/layout.wgsl`; the slot constants are generated here into the shader
//! header ([`wgsl_header`]), and a test checks every WGSL struct member offset against
//! the host's with naga.

use bytemuck::{Pod, Zeroable};

use super::Precision;

/// Threads per workgroup: one thread integrates one robot instance.
pub const WORKGROUP_SIZE: u32 = 64;

/// Per-instance scalars of the model and the step (WGSL `Instance`, every field `real`).
/// Stored as f64 on the host; the f32 path narrows field by field (same order).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
pub struct InstanceParams {
    pub rho: f64,
    pub zeta: f64,
    pub k_m: f64,
    pub g: f64,
    pub lambda: f64,
    pub eta: f64,
    pub mu: f64,
    pub leg_length: f64,
    pub k_p: f64,
    pub x_t: f64,
    pub epsilon: f64,
    pub nu: f64,
    pub body_mass: f64,
    pub inertia: f64,
    pub alpha: f64,
    pub beta: f64,
    pub l_alpha: f64,
    pub l_beta: f64,
    /// Body-frame spring anchors b_0 and b_{N+1} (the end springs).
    pub b_first: [f64; 2],
    pub b_last: [f64; 2],
    /// Body-frame contact points P_1, P_2.
    pub p_points: [[f64; 2]; 2],
    /// Fixed step h and the kick's bending implicitness θ.
    pub h: f64,
    pub theta: f64,
}

/// Names of the [`InstanceParams`] members in order, as in `shaders/layout.wgsl`
/// (vectors count as one member there: `vec2<real>`).
pub const INSTANCE_MEMBERS: &[&str] = &[
    "rho",
    "zeta",
    "k_m",
    "g",
    "lambda",
    "eta",
    "mu",
    "leg_length",
    "k_p",
    "x_t",
    "epsilon",
    "nu",
    "body_mass",
    "inertia",
    "alpha",
    "beta",
    "l_alpha",
    "l_beta",
    "b_first",
    "b_last",
    "p_first",
    "p_second",
    "h",
    "theta",
];

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
}

/// Per-instance, per-leg inputs (WGSL `LegParams`), indexed `instance * N + leg`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
pub struct LegParams {
    /// Target rate ω_i (rad/s).
    pub omega: f64,
    /// 1 when the basal servo is on (and K_p > 0), else 0.
    pub actuated: f64,
    /// Body-frame anchor b_{i+1} of the leg's β spring.
    pub b_point: [f64; 2],
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

/// Upper bound on the loop iterations the kernel runs per step of one instance,
/// including one metrics push, counted loop by loop from `shaders/` (m = 2n, l = 4n).
/// Software adapters (llvmpipe/lavapipe) stop every loop of an invocation once 65535
/// iterations have run in total, so their dispatches are sized by this bound.
pub fn loop_iterations_per_step(n_legs: usize, n_nodes: usize) -> u64 {
    let (m, l, n) = (2 * n_nodes as u64, 4 * n_nodes as u64, n_legs as u64);
    let nq = n * l + 3;
    let dense = m + m * m;
    // kick_leg: 18 passes over l, 19 over m, six dense products, the Woodbury solve.
    let kick = 18 * l + 19 * m + 6 * dense + 120;
    let step = n * (kick + 2 * l) + 2 * nq + 4 * n + 8;
    let push = n * (l + 4 * m + 12) + 2 * n + nq;
    step + push
}

/// Loop iterations a software adapter runs per invocation before it cuts loops short.
pub const SOFTWARE_LOOP_BUDGET: u64 = 65535;

/// Status word per instance: 0 while running or finished, k + 1 when the state left the
/// physical range during output interval k (diverged at sample time t_k).
pub const STATUS_RUNNING: u32 = 0;

/// Layout of one matrix set: the component-block matrices of one leg (m = 2n).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatrixLayout {
    pub m: usize,
}

impl MatrixLayout {
    pub fn mass(&self) -> usize {
        0
    }
    pub fn bending(&self) -> usize {
        self.m * self.m
    }
    pub fn geometric(&self) -> usize {
        2 * self.m * self.m
    }
    pub fn p_inv(&self) -> usize {
        3 * self.m * self.m
    }
    pub fn load(&self) -> usize {
        4 * self.m * self.m
    }
    pub fn stride(&self) -> usize {
        4 * self.m * self.m + self.m
    }
}

/// Slots of one instance's resident state (SoA: slot s of instance i is
/// `state[s * batch + i]`, so neighbouring threads read neighbouring words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateLayout {
    pub n_legs: usize,
    pub n_nodes: usize,
}

impl StateLayout {
    pub fn leg_dofs(&self) -> usize {
        4 * self.n_nodes
    }
    pub fn nq(&self) -> usize {
        self.n_legs * self.leg_dofs() + 3
    }
    pub fn q(&self) -> usize {
        0
    }
    pub fn v(&self) -> usize {
        self.nq()
    }
    /// Actuation work ∫Σ|M0ψ̇|dt accumulated every step.
    pub fn work(&self) -> usize {
        2 * self.nq()
    }
    /// Unwrapped phase φ_i (from 0 at t = 0), per leg.
    pub fn phi(&self) -> usize {
        self.work() + 1
    }
    /// φ_i at the first window sample.
    pub fn phi_start(&self) -> usize {
        self.phi() + self.n_legs
    }
    /// Previous sample's unit basal tangent (x, y) per leg.
    pub fn prev_tangent(&self) -> usize {
        self.phi_start() + self.n_legs
    }
    /// Σ e^{iΔ_i} over the window per neighbour pair (re, im).
    pub fn pair_sum(&self) -> usize {
        self.prev_tangent() + 2 * self.n_legs
    }
    /// Σ over window samples of |mean e^{iφ}|.
    pub fn kuramoto_sum(&self) -> usize {
        self.pair_sum() + 2 * (self.n_legs - 1)
    }
    pub fn first_y(&self) -> usize {
        self.kuramoto_sum() + 1
    }
    pub fn window_y(&self) -> usize {
        self.first_y() + 1
    }
    pub fn last_y(&self) -> usize {
        self.window_y() + 1
    }
    pub fn last_work(&self) -> usize {
        self.last_y() + 1
    }
    pub fn max_inext(&self) -> usize {
        self.last_work() + 1
    }
    /// Window samples with the tip in contact, per leg.
    pub fn contact_count(&self) -> usize {
        self.max_inext() + 1
    }
    pub fn slots(&self) -> usize {
        self.contact_count() + self.n_legs
    }
}

/// The generated head of every shader: sizes, the precision alias and the slot
/// constants of [`StateLayout`] and [`MatrixLayout`].
pub fn wgsl_header(n_legs: usize, n_nodes: usize, precision: Precision) -> String {
    let s = StateLayout { n_legs, n_nodes };
    let m = MatrixLayout { m: 2 * n_nodes };
    let (real, real_max) = match precision {
        Precision::F64 => ("f64", "1.7976931348623157e308"),
        Precision::F32 => ("f32", "3.4028234663852886e38"),
    };
    let mut h = String::new();
    h.push_str("// Generated by src/gpu/layout.rs: do not edit.\n");
    h.push_str(&format!("alias real = {real};\n"));
    h.push_str(&format!("const REAL_MAX: real = {real_max};\n"));
    h.push_str(&format!("const N_LEGS: u32 = {n_legs}u;\n"));
    h.push_str(&format!("const N_NODES: u32 = {n_nodes}u;\n"));
    h.push_str(&format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n"));
    h.push_str(&format!(
        "const DIVERGENCE_BOUND: real = {:e};\n",
        crate::sample::DIVERGENCE_BOUND
    ));
    let consts = [
        ("M", m.m),
        ("L", s.leg_dofs()),
        ("NQ", s.nq()),
        ("SLOT_Q", s.q()),
        ("SLOT_V", s.v()),
        ("SLOT_WORK", s.work()),
        ("SLOT_PHI", s.phi()),
        ("SLOT_PHI_START", s.phi_start()),
        ("SLOT_PREV_TANGENT", s.prev_tangent()),
        ("SLOT_PAIR_SUM", s.pair_sum()),
        ("SLOT_KURAMOTO", s.kuramoto_sum()),
        ("SLOT_FIRST_Y", s.first_y()),
        ("SLOT_WINDOW_Y", s.window_y()),
        ("SLOT_LAST_Y", s.last_y()),
        ("SLOT_LAST_WORK", s.last_work()),
        ("SLOT_MAX_INEXT", s.max_inext()),
        ("SLOT_CONTACT", s.contact_count()),
        ("SLOTS", s.slots()),
        ("MAT_MASS", m.mass()),
        ("MAT_BENDING", m.bending()),
        ("MAT_GEOMETRIC", m.geometric()),
        ("MAT_P_INV", m.p_inv()),
        ("MAT_LOAD", m.load()),
        ("MAT_STRIDE", m.stride()),
    ];
    for (name, value) in consts {
        h.push_str(&format!("const {name}: u32 = {value}u;\n"));
    }
    h
}
