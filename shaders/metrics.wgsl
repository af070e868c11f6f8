// Online coordination metrics: one output sample folded into the instance's running
// sums. CPU twin: `MetricsAccumulator::push` in src/metrics.rs (and `Sample::from_state`
// for what a sample holds). Angles are never formed except the per-sample phase
// increment, which `angle_of` computes from unit vectors.

fn push_sample(i: u32, ip: Instance, mset: u32, k: u32, window_first: u32) {
    let o = N_LEGS * L;
    let y_body = q_at(o + 1u, i);
    var tangent: array<vec2<real>, N_LEGS>;
    var tip_x: array<real, N_LEGS>;
    var max_inext = state[slot(SLOT_MAX_INEXT, i)];
    if k == 0u {
        max_inext = 0.0;
    }
    for (var leg = 0u; leg < N_LEGS; leg++) {
        var q: LegVec;
        for (var c = 0u; c < L; c++) {
            q[c] = q_at(leg * L + c, i);
        }
        let b1 = q[N_NODES];
        let d1 = q[3u * N_NODES];
        let r = sqrt(b1 * b1 + d1 * d1);
        tangent[leg] = vec2<real>(b1 / r, d1 / r);
        tip_x[leg] = q[N_NODES - 1u];
        let constraint = fe_quad(mset + MAT_GEOMETRIC, &q, 0u)
            + fe_quad(mset + MAT_GEOMETRIC, &q, M) - ip.leg_length;
        max_inext = max(max_inext, abs(constraint) / ip.leg_length);
        // Unwrapped φ = −ψ: subtract the turn from the previous sample's tangent.
        let ps = slot(SLOT_PREV_TANGENT + 2u * leg, i);
        let px = slot(SLOT_PREV_TANGENT + 2u * leg + 1u, i);
        if k == 0u {
            state[slot(SLOT_PHI + leg, i)] = 0.0;
        } else {
            let prev = vec2<real>(state[ps], state[px]);
            let cross = prev.x * tangent[leg].y - prev.y * tangent[leg].x;
            let dot = prev.x * tangent[leg].x + prev.y * tangent[leg].y;
            state[slot(SLOT_PHI + leg, i)] -= angle_of(cross, dot);
        }
        state[ps] = tangent[leg].x;
        state[px] = tangent[leg].y;
    }
    state[slot(SLOT_MAX_INEXT, i)] = max_inext;
    if k == 0u {
        state[slot(SLOT_FIRST_Y, i)] = y_body;
    }
    state[slot(SLOT_LAST_Y, i)] = y_body;
    state[slot(SLOT_LAST_WORK, i)] = state[slot(SLOT_WORK, i)];
    if k < window_first {
        return;
    }
    if k == window_first {
        state[slot(SLOT_WINDOW_Y, i)] = y_body;
        for (var leg = 0u; leg < N_LEGS; leg++) {
            state[slot(SLOT_PHI_START + leg, i)] = state[slot(SLOT_PHI + leg, i)];
        }
    }
    // e^{iφ_j} = (t_x, −t_y); e^{iΔ_i} = e^{iφ_i} · conj(e^{iφ_{i+1}}).
    for (var pair = 0u; pair + 1u < N_LEGS; pair++) {
        let a = vec2<real>(tangent[pair].x, -tangent[pair].y);
        let b = vec2<real>(tangent[pair + 1u].x, -tangent[pair + 1u].y);
        state[slot(SLOT_PAIR_SUM + 2u * pair, i)] += a.x * b.x + a.y * b.y;
        state[slot(SLOT_PAIR_SUM + 2u * pair + 1u, i)] += a.y * b.x - a.x * b.y;
    }
    var sx = real(0.0);
    var sy = real(0.0);
    for (var leg = 0u; leg < N_LEGS; leg++) {
        sx += tangent[leg].x;
        sy += -tangent[leg].y;
    }
    state[slot(SLOT_KURAMOTO, i)] += sqrt(sx * sx + sy * sy) / real(N_LEGS);
    for (var leg = 0u; leg < N_LEGS; leg++) {
        if tip_x[leg] >= ip.x_t {
            state[slot(SLOT_CONTACT + leg, i)] += 1.0;
        }
    }
}
