// Shared structs and bindings. Host twins: src/gpu/layout.rs (a test checks every
// member offset with naga). The header generated there defines `real`, N_LEGS,
// N_NODES, M, L, NQ and the SLOT_* / MAT_* constants.

struct Instance {
    rho: real,
    zeta: real,
    k_m: real,
    g: real,
    lambda: real,
    eta: real,
    mu: real,
    leg_length: real,
    k_p: real,
    x_t: real,
    epsilon: real,
    nu: real,
    body_mass: real,
    inertia: real,
    alpha: real,
    beta: real,
    l_alpha: real,
    l_beta: real,
    b_first: vec2<real>,
    b_last: vec2<real>,
    p_first: vec2<real>,
    p_second: vec2<real>,
    h: real,
    theta: real,
}

struct InstanceInts {
    matrix_set: u32,
    steps_per_sample: u32,
    steps_last: u32,
    n_samples: u32,
    window_first: u32,
}

struct LegParams {
    omega: real,
    actuated: real,
    b_point: vec2<real>,
}

struct Control {
    batch: u32,
    step_begin: u32,
    step_end: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> ctl: Control;
@group(0) @binding(1) var<storage, read> instances: array<Instance>;
@group(0) @binding(2) var<storage, read> ints: array<InstanceInts>;
@group(0) @binding(3) var<storage, read> legs: array<LegParams>;
@group(0) @binding(4) var<storage, read> mats: array<real>;
@group(0) @binding(5) var<storage, read_write> state: array<real>;
@group(0) @binding(6) var<storage, read_write> status: array<u32>;

// Slot s of instance i (SoA: neighbouring threads touch neighbouring words).
fn slot(s: u32, i: u32) -> u32 {
    return s * ctl.batch + i;
}
