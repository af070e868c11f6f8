// Bindings, the host-filled integer structs and the workgroup exchange arrays. The
// generated header before this file (src/gpu/layout.rs) defines `real`, the sizes and
// slot constants and the `Instance` / `LegParams` structs (src/gpu/instance.rs).

struct InstanceInts {
    matrix_set: u32,
    steps_per_sample: u32,
    steps_last: u32,
    n_samples: u32,
    window_first: u32,
    window_mid: u32,
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

// What the legs of a robot exchange each step, one entry per invocation: the basal
// point (a_1, c_1) after the first half drift, the leg's share of the spring load on
// the body (F_x, F_y, τ), and at output samples (unit tangent x, y, work, sane).
var<workgroup> wg_base: array<vec2<real>, WORKGROUP_SIZE>;
var<workgroup> wg_load: array<vec4<real>, WORKGROUP_SIZE>;
var<workgroup> wg_sample: array<vec4<real>, WORKGROUP_SIZE>;

// Slot s of instance i (SoA: the state is read once per dispatch and written once).
fn slot(s: u32, i: u32) -> u32 {
    return s * ctl.batch + i;
}

// The output sample that step s completes, or NO_SAMPLE (step 0 stands for the
// initial sample; the last interval ends at the last step, t_final). CPU twin:
// `SampleSchedule` in src/integrate/schedule.rs.
const NO_SAMPLE: u32 = 0xffffffffu;
fn sample_index(s: u32, per: u32, total: u32, n_samples: u32) -> u32 {
    if s == 0u {
        return 0u;
    }
    if s == total {
        return n_samples;
    }
    if s % per == 0u && s / per < n_samples {
        return s / per;
    }
    return NO_SAMPLE;
}
