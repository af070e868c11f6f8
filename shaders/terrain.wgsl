// The general contact (docs/model.md (T1)–(T4)), added to the ground kernel only (a
// batch on the paper's flat line without Coulomb friction runs a kernel without it).
// `ground_at(ri, u)`, the height and slope at u = y − y₀, is generated with the
// profile's number of harmonics (src/gpu/kernel.rs). CPU twins: `ground_at`,
// `tip_contact` and the terrain branch of `body_kick` in
// src/integrate/lanes/kernel.rs.

const LN2_HI: real = 6.93147180369123816490e-01;
const LN2_LO: real = 1.90821492927058770002e-10;
const INV_LN2: real = 1.44269504088896338700;

// tanh x, arithmetic only (math.wgsl says why): tanh|x| = −e/(e + 2), e = e^{−2|x|} − 1,
// with e^r − 1 = 2^k(e^s − 1) + (2^k − 1), r = k ln 2 + s, |s| ≤ ln 2/2, and e^s − 1 by
// Taylor to s¹⁴ (truncation < 3e-19 relative): free of cancellation near 0, where
// k = 0. Beyond |x| = 20, tanh x is ±1 to f64's precision. 2^k, k ∈ [−58, 0], is a
// product of exact powers of two chosen by k's bits.
fn tanh_real(x: real) -> real {
    let a = min(abs(x), 20.0);
    let r = -2.0 * a;
    let k = round(r * INV_LN2);
    let s = (r - k * LN2_HI) - k * LN2_LO;
    let es = s * (1.0 + s * 0.5 * (1.0 + s * (1.0 / 3.0) * (1.0 + s * 0.25 * (1.0 + s * 0.2
        * (1.0 + s * (1.0 / 6.0) * (1.0 + s * (1.0 / 7.0) * (1.0 + s * 0.125 * (1.0 + s * (1.0 / 9.0)
        * (1.0 + s * 0.1 * (1.0 + s * (1.0 / 11.0) * (1.0 + s * (1.0 / 12.0) * (1.0 + s * (1.0 / 13.0)
        * (1.0 + s * (1.0 / 14.0))))))))))))));
    let j = u32(-k);
    let one = real(1.0);
    let p2 = select(one, 0.5, (j & 1u) != 0u) * select(one, 0.25, (j & 2u) != 0u)
        * select(one, 0.0625, (j & 4u) != 0u) * select(one, 0.00390625, (j & 8u) != 0u)
        * select(one, 1.52587890625e-05, (j & 16u) != 0u)
        * select(one, 2.3283064365386963e-10, (j & 32u) != 0u);
    let em1 = p2 * es + (p2 - 1.0);
    let t = -em1 / (em1 + 2.0);
    return select(t, -t, x < 0.0);
}

// Penalty contact of one body point with the terrain, along its normal: ε·c·d·n =
// ε·c²·(X_t − x − h)·(1, σ) while d ≥ 0, and its torque about the centre of mass
// (CPU: the terrain branch of `body_kick`). `y_lo`: what the body's y lacks
// (its low word in the compensated f32 kernel, else 0), added to u = y − y₀.
fn point_contact_ground(ri: u32, body: vec3<real>, sc: vec2<real>, off: vec2<real>, y_lo: real) -> vec3<real> {
    let w = world(body, sc, off);
    let g = ground_at(ri, (w.y - instances[ri].terrain_start) + y_lo);
    let out = instances[ri].x_t - w.x - g.x;
    if out <= 0.0 {
        let c2 = 1.0 / (g.y * g.y + 1.0);
        let fx = instances[ri].epsilon * c2 * out;
        let fy = fx * g.y;
        return vec3<real>(fx, fy, (w.x - body.x) * fy - (w.y - body.y) * fx);
    }
    return vec3<real>(0.0, 0.0, 0.0);
}

// Both contact points P_1, P_2 on the terrain (the ground kernel's `body_contact`).
fn body_contact_ground(ri: u32, body: vec3<real>, sc: vec2<real>, y_lo: real) -> vec3<real> {
    let p1 = vec2<real>(instances[ri].p_first_x, instances[ri].p_first_y);
    let p2 = vec2<real>(instances[ri].p_second_x, instances[ri].p_second_y);
    return point_contact_ground(ri, body, sc, p1, y_lo) + point_contact_ground(ri, body, sc, p2, y_lo);
}
