// Springs and body contact, per leg (CPU twin: `spring_pass` in src/model/springs.rs,
// `BodyGeometry::contact_in` in src/model/body.rs). Each leg's invocation computes the
// springs at its own base; the loads on the body are summed over legs afterwards.

// Spring between an anchor p and another point o: force on p (CPU: `spring_force`).
fn spring_force(k: real, rest: real, p: vec2<real>, o: vec2<real>) -> vec2<real> {
    let d = p - o;
    let gamma = sqrt(d.x * d.x + d.y * d.y);
    let f = k * (rest - gamma) / gamma;
    return vec2<real>(f * d.x, f * d.y);
}

// Body-frame offset to world (CPU: `BodyGeometry::world`); sc = (sin θ, cos θ).
fn world(body: vec3<real>, sc: vec2<real>, off: vec2<real>) -> vec2<real> {
    return vec2<real>(
        body.x + sc.y * off.x - sc.x * off.y,
        body.y + sc.x * off.x + sc.y * off.y,
    );
}

// Force f on a leg base from a spring to body point b: the reaction on the body.
fn body_reaction(f: vec2<real>, b: vec2<real>, body: vec3<real>) -> vec3<real> {
    let rx = b.x - body.x;
    let ry = b.y - body.y;
    return vec3<real>(-f.x, -f.y, -(rx * f.y - ry * f.x));
}

struct SpringShare {
    // Spring force on this leg's base (a_1, c_1).
    base: vec2<real>,
    // This leg's springs' load on the body (F_x, F_y, τ).
    load: vec3<real>,
}

// The springs at leg `leg` (lane `lid`; its neighbours are lanes lid ± 1), summed in
// the CPU's spring-list order: α to b_0 (first leg), α to the previous and to the next
// leg, α to b_{N+1} (last leg), β to b_{leg+1}. Springs a leg does not have add zero
// (select, not branches: no mutable local).
fn leg_springs(ri: u32, leg: u32, lid: u32, body: vec3<real>, sc: vec2<real>) -> SpringShare {
    let alpha = instances[ri].alpha;
    let l_alpha = instances[ri].l_alpha;
    let zero = vec2<real>(0.0, 0.0);
    let p = wg_base[lid];
    let b_first = world(body, sc, vec2<real>(instances[ri].b_first_x, instances[ri].b_first_y));
    let f_first = select(zero, spring_force(alpha, l_alpha, p, b_first), leg == 0u);
    let prev = wg_base[select(lid, lid - 1u, leg > 0u)];
    let f_prev = select(zero, spring_force(alpha, l_alpha, p, prev), leg > 0u);
    let next = wg_base[select(lid, lid + 1u, leg + 1u < N_LEGS)];
    let f_next = select(zero, spring_force(alpha, l_alpha, next, p), leg + 1u < N_LEGS);
    let b_last = world(body, sc, vec2<real>(instances[ri].b_last_x, instances[ri].b_last_y));
    let f_last = select(zero, spring_force(alpha, l_alpha, p, b_last), leg + 1u == N_LEGS);
    let lp = legs[ri * N_LEGS + leg];
    let b = world(body, sc, vec2<real>(lp.b_point_x, lp.b_point_y));
    let f_beta = spring_force(instances[ri].beta, instances[ri].l_beta, p, b);
    let base = f_first + f_prev - f_next + f_last + f_beta;
    let load = body_reaction(f_first, b_first, body) + body_reaction(f_last, b_last, body)
        + body_reaction(f_beta, b, body);
    return SpringShare(base, load);
}

// Penalty contact of one body point with the terrain: (F_x, 0, τ).
fn point_contact(ri: u32, body: vec3<real>, sc: vec2<real>, off: vec2<real>) -> vec3<real> {
    let w = world(body, sc, off);
    let x_t = instances[ri].x_t;
    if w.x >= x_t {
        let f = instances[ri].epsilon * (x_t - w.x);
        return vec3<real>(f, 0.0, -(w.y - body.y) * f);
    }
    return vec3<real>(0.0, 0.0, 0.0);
}

// Both contact points P_1, P_2 (CPU: `BodyGeometry::contact_in`).
fn body_contact(ri: u32, body: vec3<real>, sc: vec2<real>) -> vec3<real> {
    let p1 = vec2<real>(instances[ri].p_first_x, instances[ri].p_first_y);
    let p2 = vec2<real>(instances[ri].p_second_x, instances[ri].p_second_y);
    return point_contact(ri, body, sc, p1) + point_contact(ri, body, sc, p2);
}
