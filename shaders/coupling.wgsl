// The coupling's law (docs/model.md, "The coupling's law"): each spring's cubic term and
// Kelvin–Voigt damper, and the split that keeps the dampers implicit (docs/integrators.md);
// added for kernels whose instances have the law only (CPU twin: `spring_loads_law` in
// src/integrate/lanes/kernel.rs, `spring_pass` in src/model/springs.rs).

// The bases' velocities (a_1', c_1') at the step's start, beside `wg_base`, and each
// leg's share of the body's implicit damping D_b (x, y, θ).
var<workgroup> wg_base_v: array<vec2<real>, WORKGROUP_SIZE>;
var<workgroup> wg_damp: array<vec4<real>, WORKGROUP_SIZE>;

// The coupling's law on one spring from p (velocity vp) to o (velocity vo): the force
// [k(L0 − γ) + k₃(L0 − γ)³ − c·γ̇]·e on p in .xy, the power c·γ̇² its damper dissipates
// in .z (CPU: `law_force` in src/integrate/lanes/kernel.rs).
fn law_force(law: vec4<real>, p: vec2<real>, o: vec2<real>, vp: vec2<real>, vo: vec2<real>) -> vec3<real> {
    let d = p - o;
    let gamma = sqrt(d.x * d.x + d.y * d.y);
    let s = law.w - gamma;
    let rate = (d.x * (vp.x - vo.x) + d.y * (vp.y - vo.y)) / gamma;
    let f = (law.x * s + law.y * s * s * s - law.z * rate) / gamma;
    return vec3<real>(f * d.x, f * d.y, law.z * rate * rate);
}

// Velocity of the body point at world position b: (Ẋ_b − θ̇·r_y, Ẏ_b + θ̇·r_x), r = b − r_C.
fn point_velocity(body: vec3<real>, vb: vec3<real>, b: vec2<real>) -> vec2<real> {
    return vec2<real>(vb.x - vb.z * (b.y - body.y), vb.y + vb.z * (b.x - body.x));
}

// A damper c to body point b: its share c·(2, 2, 2|r|²) of the body's implicit damping.
fn body_damping(c: real, b: vec2<real>, body: vec3<real>) -> vec3<real> {
    let rx = b.x - body.x;
    let ry = b.y - body.y;
    return vec3<real>(2.0 * c, 2.0 * c, 2.0 * c * (rx * rx + ry * ry));
}

struct LawShare {
    // Spring force on this leg's base, with the dampers' explicit share (1 − a)·C_b·u.
    base: vec2<real>,
    // This leg's springs' load on the body, with D_b's share times the body velocity.
    load: vec3<real>,
    // This leg's share of the body's implicit damping D_b.
    damping: vec3<real>,
    // The power dissipated by the dampers this leg counts (α to the previous leg, not
    // to the next: that one is the next leg's).
    dissipation: real,
}

// `leg_springs` under the coupling's law (CPU: `spring_loads_law` in
// src/integrate/lanes/kernel.rs), with the bases' velocities in `wg_base_v` and the
// body's velocity vb.
fn leg_springs_law(ri: u32, leg: u32, lid: u32, body: vec3<real>, vb: vec3<real>, sc: vec2<real>) -> LawShare {
    let alpha = vec4<real>(instances[ri].alpha, instances[ri].alpha_cubic, instances[ri].alpha_damping, instances[ri].l_alpha);
    let beta = vec4<real>(instances[ri].beta, instances[ri].beta_cubic, instances[ri].beta_damping, instances[ri].l_beta);
    let zero = vec3<real>(0.0, 0.0, 0.0);
    let p = wg_base[lid];
    let u = wg_base_v[lid];
    let b_first = world(body, sc, vec2<real>(instances[ri].b_first_x, instances[ri].b_first_y));
    let f_first = select(zero, law_force(alpha, p, b_first, u, point_velocity(body, vb, b_first)), leg == 0u);
    let ip = select(lid, lid - 1u, leg > 0u);
    let f_prev = select(zero, law_force(alpha, p, wg_base[ip], u, wg_base_v[ip]), leg > 0u);
    let inx = select(lid, lid + 1u, leg + 1u < N_LEGS);
    let f_next = select(zero, law_force(alpha, wg_base[inx], p, wg_base_v[inx], u), leg + 1u < N_LEGS);
    let b_last = world(body, sc, vec2<real>(instances[ri].b_last_x, instances[ri].b_last_y));
    let f_last = select(zero, law_force(alpha, p, b_last, u, point_velocity(body, vb, b_last)), leg + 1u == N_LEGS);
    let lp = legs[ri * N_LEGS + leg];
    let b = world(body, sc, vec2<real>(lp.b_point_x, lp.b_point_y));
    let f_beta = law_force(beta, p, b, u, point_velocity(body, vb, b));
    let base = f_first.xy + f_prev.xy - f_next.xy + f_last.xy + f_beta.xy
        + instances[ri].base_damping_explicit * u;
    let damping = select(zero, body_damping(alpha.z, b_first, body), leg == 0u)
        + select(zero, body_damping(alpha.z, b_last, body), leg + 1u == N_LEGS)
        + body_damping(beta.z, b, body);
    let load = body_reaction(f_first.xy, b_first, body) + body_reaction(f_last.xy, b_last, body)
        + body_reaction(f_beta.xy, b, body) + damping * vb;
    return LawShare(base, load, damping, f_first.z + f_prev.z + f_last.z + f_beta.z);
}

