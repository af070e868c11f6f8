// The coupling's law (docs/model.md, "The coupling's law"): each spring's cubic term and
// Kelvin–Voigt damper, and the split that keeps the dampers implicit (docs/integrators.md);
// added for kernels whose instances have the law only (CPU twin: `spring_loads_law` in
// src/integrate/lanes/kernel.rs, `spring_pass` in src/model/springs.rs).

// The bases' velocities (a_1', c_1') at the step's start, beside `wg_base`; each leg's
// share of the dampers' matrix A on the body's velocity (xx, yy, θθ, xy in `wg_damp_a`,
// xθ, yθ in `wg_damp_b`); its pull's matrix G_i by columns (`wg_pull`, `wg_pull_y`), and
// after its kick the pull G_i·u_i itself (in `wg_pull`).
var<workgroup> wg_base_v: array<vec2<real>, WORKGROUP_SIZE>;
var<workgroup> wg_damp_a: array<vec4<real>, WORKGROUP_SIZE>;
var<workgroup> wg_damp_b: array<vec2<real>, WORKGROUP_SIZE>;
var<workgroup> wg_pull: array<vec4<real>, WORKGROUP_SIZE>;
var<workgroup> wg_pull_y: array<vec4<real>, WORKGROUP_SIZE>;

// One spring under the coupling's law, seen from its end p (CPU: `LawForce`).
struct LawSpring {
    // [k(L0 − γ) + k₃(L0 − γ)³ − c·γ̇]·e on p, and its elastic part.
    force: vec2<real>,
    elastic: vec2<real>,
    // e = (p − o)/γ.
    e: vec2<real>,
    // c·γ̇², the power its damper dissipates.
    power: real,
}

// The coupling's law on one spring from p (velocity vp) to o (velocity vo) (CPU:
// `law_force` in src/integrate/lanes/kernel.rs).
fn law_force(law: vec4<real>, p: vec2<real>, o: vec2<real>, vp: vec2<real>, vo: vec2<real>) -> LawSpring {
    let d = p - o;
    let gamma = sqrt(d.x * d.x + d.y * d.y);
    let s = law.w - gamma;
    let rate = (d.x * (vp.x - vo.x) + d.y * (vp.y - vo.y)) / gamma;
    let elastic = (law.x * s + law.y * s * s * s) / gamma;
    let f = elastic - law.z * rate / gamma;
    return LawSpring(f * d, elastic * d, d / gamma, law.z * rate * rate);
}

// Velocity of the body point at world position b: (Ẋ_b − θ̇·r_y, Ẏ_b + θ̇·r_x), r = b − r_C.
fn point_velocity(body: vec3<real>, vb: vec3<real>, b: vec2<real>) -> vec2<real> {
    return vec2<real>(vb.x - vb.z * (b.y - body.y), vb.y + vb.z * (b.x - body.x));
}

// The damper c of a spring from this leg's base to body point b, on the body: its
// share c·w·wᵀ of A (w = (e, r × e)) and c·w, whose product with e·u is its pull.
struct BodyDamper {
    a_lo: vec4<real>,
    a_hi: vec2<real>,
    cw: vec3<real>,
}

fn body_damper(c: real, e: vec2<real>, b: vec2<real>, body: vec3<real>) -> BodyDamper {
    let w = vec3<real>(e.x, e.y, (b.x - body.x) * e.y - (b.y - body.y) * e.x);
    let cw = c * w;
    return BodyDamper(vec4<real>(cw.x * w.x, cw.y * w.y, cw.z * w.z, cw.x * w.y), vec2<real>(cw.x * w.z, cw.y * w.z), cw);
}

struct LawShare {
    // Spring force on this leg's base, with the dampers' explicit share (1 − a)·C_b·u.
    base: vec2<real>,
    // This leg's springs' elastic load on the body.
    load: vec3<real>,
    // This leg's share of A (see `wg_damp_a`, `wg_damp_b`).
    a_lo: vec4<real>,
    a_hi: vec2<real>,
    // G_i by columns: the pull on the body is pull_x·u.x + pull_y·u.y.
    pull_x: vec3<real>,
    pull_y: vec3<real>,
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
    let zero = vec2<real>(0.0, 0.0);
    let p = wg_base[lid];
    let u = wg_base_v[lid];
    let is_first = leg == 0u;
    let is_last = leg + 1u == N_LEGS;
    // Every spring computed, the ones this leg does not have masked out (no branches,
    // no local variables: the end legs' neighbours index this leg itself).
    let b_first = world(body, sc, vec2<real>(instances[ri].b_first_x, instances[ri].b_first_y));
    let s_first = law_force(alpha, p, b_first, u, point_velocity(body, vb, b_first));
    let ip = select(lid, lid - 1u, leg > 0u);
    let s_prev = law_force(alpha, p, wg_base[ip], u, wg_base_v[ip]);
    let inx = select(lid, lid + 1u, !is_last);
    let s_next = law_force(alpha, wg_base[inx], p, wg_base_v[inx], u);
    let b_last = world(body, sc, vec2<real>(instances[ri].b_last_x, instances[ri].b_last_y));
    let s_last = law_force(alpha, p, b_last, u, point_velocity(body, vb, b_last));
    let lp = legs[ri * N_LEGS + leg];
    let b = world(body, sc, vec2<real>(lp.b_point_x, lp.b_point_y));
    let s_beta = law_force(beta, p, b, u, point_velocity(body, vb, b));
    let base = select(zero, s_first.force, is_first) + select(zero, s_prev.force, leg > 0u)
        - select(zero, s_next.force, !is_last) + select(zero, s_last.force, is_last) + s_beta.force
        + instances[ri].base_damping_explicit * u;
    let load = body_reaction(select(zero, s_first.elastic, is_first), b_first, body)
        + body_reaction(select(zero, s_last.elastic, is_last), b_last, body)
        + body_reaction(s_beta.elastic, b, body);
    let d_first = body_damper(select(0.0, alpha.z, is_first), s_first.e, b_first, body);
    let d_last = body_damper(select(0.0, alpha.z, is_last), s_last.e, b_last, body);
    let d_beta = body_damper(beta.z, s_beta.e, b, body);
    let power = select(0.0, s_first.power, is_first) + select(0.0, s_prev.power, leg > 0u)
        + select(0.0, s_last.power, is_last) + s_beta.power;
    return LawShare(
        base,
        load,
        d_beta.a_lo + d_first.a_lo + d_last.a_lo,
        d_beta.a_hi + d_first.a_hi + d_last.a_hi,
        d_beta.cw * s_beta.e.x + d_first.cw * s_first.e.x + d_last.cw * s_last.e.x,
        d_beta.cw * s_beta.e.y + d_first.cw * s_first.e.y + d_last.cw * s_last.e.y,
        power,
    );
}
