// One DKD-dc step of one robot instance, state resident in `state`.
// CPU twin: `dkd::step` and `dkd::kick_leg` in src/integrate/dkd.rs (read them side by
// side: same order of operations, same names).

fn q_at(k: u32, i: u32) -> real {
    return state[slot(SLOT_Q + k, i)];
}

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

struct SpringPass {
    base_force: array<vec2<real>, N_LEGS>,
    // (F_x, F_y, torque) on the body.
    load: vec3<real>,
}

// Body anchor of a spring to the body from leg `leg`: b_0, b_{leg+1} or b_{N+1}.
fn body_spring(k: real, rest: real, base: vec2<real>, anchor: vec2<real>,
               body: vec3<real>, sc: vec2<real>, out: ptr<function, SpringPass>, leg: u32) {
    let b = world(body, sc, anchor);
    let f = spring_force(k, rest, base, b);
    (*out).base_force[leg] += f;
    let rx = b.x - body.x;
    let ry = b.y - body.y;
    (*out).load.x -= f.x;
    (*out).load.y -= f.y;
    (*out).load.z -= rx * f.y - ry * f.x;
}

// CPU: `springs` (the list's order) + `spring_pass` in src/model/springs.rs.
fn spring_pass(i: u32, ip: Instance, body: vec3<real>, sc: vec2<real>) -> SpringPass {
    var out: SpringPass;
    var bases: array<vec2<real>, N_LEGS>;
    for (var leg = 0u; leg < N_LEGS; leg++) {
        out.base_force[leg] = vec2<real>(0.0, 0.0);
        bases[leg] = vec2<real>(q_at(leg * L, i), q_at(leg * L + 2u * N_NODES, i));
    }
    out.load = vec3<real>(0.0, 0.0, 0.0);
    body_spring(ip.alpha, ip.l_alpha, bases[0], ip.b_first, body, sc, &out, 0u);
    for (var leg = 1u; leg < N_LEGS; leg++) {
        let f = spring_force(ip.alpha, ip.l_alpha, bases[leg], bases[leg - 1u]);
        out.base_force[leg] += f;
        out.base_force[leg - 1u] -= f;
    }
    body_spring(ip.alpha, ip.l_alpha, bases[N_LEGS - 1u], ip.b_last, body, sc, &out,
                N_LEGS - 1u);
    for (var leg = 0u; leg < N_LEGS; leg++) {
        let anchor = legs[i * N_LEGS + leg].b_point;
        body_spring(ip.beta, ip.l_beta, bases[leg], anchor, body, sc, &out, leg);
    }
    return out;
}

// Penalty contact of the body's two points with the terrain (CPU: `BodyGeometry::contact`).
fn body_contact(ip: Instance, body: vec3<real>, sc: vec2<real>) -> vec3<real> {
    var load = vec3<real>(0.0, 0.0, 0.0);
    let pts = array<vec2<real>, 2>(ip.p_first, ip.p_second);
    for (var k = 0u; k < 2u; k++) {
        let w = world(body, sc, pts[k]);
        if w.x >= ip.x_t {
            let f = ip.epsilon * (ip.x_t - w.x);
            load.x += f;
            load.z -= (w.y - body.y) * f;
        }
    }
    return load;
}

// Solve the k×k system (k ≤ 3) by Gaussian elimination with partial pivoting
// (CPU: `solve_small`; ties pick the last row, as Rust's `max_by` does).
fn solve_small(c_in: array<array<real, 3>, 3>, b_in: array<real, 3>, k: u32) -> array<real, 3> {
    var c = c_in;
    var b = b_in;
    for (var col = 0u; col < k; col++) {
        var piv = col;
        var best = abs(c[col][col]);
        for (var x = col + 1u; x < k; x++) {
            if abs(c[x][col]) >= best {
                best = abs(c[x][col]);
                piv = x;
            }
        }
        let row_tmp = c[col];
        c[col] = c[piv];
        c[piv] = row_tmp;
        let b_tmp = b[col];
        b[col] = b[piv];
        b[piv] = b_tmp;
        let pivot = c[col];
        for (var row = col + 1u; row < k; row++) {
            let f = c[row][col] / pivot[col];
            for (var cc = col; cc < k; cc++) {
                c[row][cc] -= f * pivot[cc];
            }
            b[row] -= f * b[col];
        }
    }
    var x: array<real, 3>;
    for (var rr = 0u; rr < k; rr++) {
        let row = k - 1u - rr;
        var s = b[row];
        for (var cc = row + 1u; cc < k; cc++) {
            s -= c[row][cc] * x[cc];
        }
        x[row] = s / c[row][row];
    }
    return x;
}

// One leg's kick at the midpoint q with old velocity v, writing the new velocity into
// v_new; returns the actuation power |M0 ψ̇| at the new velocity. CPU: `kick_leg`.
fn kick_leg(ip: Instance, lp: LegParams, mset: u32, q: ptr<function, LegVec>,
            v: ptr<function, LegVec>, base_force: vec2<real>,
            v_new: ptr<function, LegVec>) -> real {
    let h = ip.h;
    var gq: LegVec;
    var tmp: LegVec;
    var r: LegVec;
    var z: LegVec;
    var mv: LegVec;
    var j: LegVec;
    var u1: LegVec;
    var w: array<LegVec, 3>;
    // Constraint quantities at the midpoint.
    fe_mul(mset + MAT_GEOMETRIC, q, 0u, &gq);
    fe_mul(mset + MAT_GEOMETRIC, q, M, &gq);
    var v_res = real(0.0);
    for (var k = 0u; k < L; k++) {
        j[k] = 2.0 * gq[k];
        v_res += (*q)[k] * gq[k];
    }
    v_res -= ip.leg_length;
    let s = fe_quad(mset + MAT_GEOMETRIC, v, 0u) + fe_quad(mset + MAT_GEOMETRIC, v, M);
    var jv = real(0.0);
    for (var k = 0u; k < L; k++) {
        jv += j[k] * (*v)[k];
    }
    // The drift-consistency ("dc") term.
    let pen = ip.lambda * (2.0 * s + ip.eta * ip.eta * v_res)
        + 2.0 * ip.lambda * ip.eta * ip.mu * h * s;
    // Explicit force F_exp.
    for (var k = 0u; k < L; k++) {
        tmp[k] = (*q)[k] - ip.theta * h * (*v)[k];
    }
    fe_mul(mset + MAT_BENDING, &tmp, 0u, &mv);
    fe_mul(mset + MAT_BENDING, &tmp, M, &mv);
    for (var k = 0u; k < L; k++) {
        r[k] = -ip.k_m * mv[k];
    }
    for (var k = 0u; k < M; k++) {
        r[k] += ip.rho * ip.g * mats[mset + MAT_LOAD + k];
    }
    for (var k = 0u; k < L; k++) {
        r[k] -= pen * j[k];
    }
    let ia0 = 0u;
    let ib0 = N_NODES;
    let ic0 = 2u * N_NODES;
    let id0 = 3u * N_NODES;
    let tip = N_NODES - 1u;
    r[ia0] += base_force.x;
    r[ic0] += base_force.y;
    let b1 = (*q)[ib0];
    let d1 = (*q)[id0];
    let r2 = b1 * b1 + d1 * d1;
    let gb = -d1 / r2;
    let gd = b1 / r2;
    let actuated = lp.actuated > 0.5 && ip.k_p > 0.0;
    let omega = lp.omega;
    if actuated {
        r[ib0] -= ip.k_p * omega * gb;
        r[id0] -= ip.k_p * omega * gd;
    }
    let contact = (*q)[tip] >= ip.x_t;
    if contact {
        r[tip] += ip.epsilon * (ip.x_t - (*q)[tip]);
    }
    // r = ρMv + λJ(Jᵀv) + h·F_exp
    fe_mul(mset + MAT_MASS, v, 0u, &mv);
    fe_mul(mset + MAT_MASS, v, M, &mv);
    for (var k = 0u; k < L; k++) {
        r[k] = ip.rho * mv[k] + ip.lambda * j[k] * jv + h * r[k];
    }
    // Woodbury with the active scaled columns u₁ (J), u₂ (servo), u₃ (friction).
    dense_mul(mset + MAT_P_INV, &r, 0u, &z);
    dense_mul(mset + MAT_P_INV, &r, M, &z);
    var u_dot_z: array<real, 3>;
    let s1 = sqrt(ip.lambda * (1.0 + 2.0 * h * ip.eta * ip.mu));
    for (var k = 0u; k < L; k++) {
        u1[k] = s1 * j[k];
    }
    var w0: LegVec;
    dense_mul(mset + MAT_P_INV, &u1, 0u, &w0);
    dense_mul(mset + MAT_P_INV, &u1, M, &w0);
    w[0] = w0;
    var uz = real(0.0);
    for (var k = 0u; k < L; k++) {
        uz += u1[k] * z[k];
    }
    u_dot_z[0] = uz;
    var cols = 1u;
    // Sparse columns as (index, value) lists.
    var sp_idx: array<array<u32, 2>, 2>;
    var sp_val: array<array<real, 2>, 2>;
    var sp_len: array<u32, 2>;
    var n_sparse = 0u;
    if actuated {
        let s2 = sqrt(h * ip.k_p);
        sp_idx[n_sparse] = array<u32, 2>(ib0, id0);
        sp_val[n_sparse] = array<real, 2>(s2 * gb, s2 * gd);
        sp_len[n_sparse] = 2u;
        n_sparse += 1u;
    }
    if contact && ip.nu > 0.0 {
        sp_idx[n_sparse] = array<u32, 2>(2u * N_NODES + tip, 0u);
        sp_val[n_sparse] = array<real, 2>(sqrt(h * ip.nu), 0.0);
        sp_len[n_sparse] = 1u;
        n_sparse += 1u;
    }
    for (var sc = 0u; sc < n_sparse; sc++) {
        var wc: LegVec;
        for (var k = 0u; k < L; k++) {
            wc[k] = 0.0;
        }
        // W = P⁻¹u: columns of the block inverse scaled by u's entries.
        var dz = real(0.0);
        for (var e = 0u; e < sp_len[sc]; e++) {
            let idx = sp_idx[sc][e];
            let val = sp_val[sc][e];
            let blk = idx / M;
            let local = idx % M;
            for (var row = 0u; row < M; row++) {
                wc[blk * M + row] += val * mats[mset + MAT_P_INV + row * M + local];
            }
            dz += val * z[idx];
        }
        w[cols] = wc;
        u_dot_z[cols] = dz;
        cols += 1u;
    }
    // C = I + UᵀW (k×k, SPD); solve C y = Uᵀz.
    var c: array<array<real, 3>, 3>;
    for (var a = 0u; a < cols; a++) {
        for (var b = 0u; b < cols; b++) {
            var d = real(0.0);
            if a == 0u {
                for (var k = 0u; k < L; k++) {
                    d += u1[k] * w[b][k];
                }
            } else {
                for (var e = 0u; e < sp_len[a - 1u]; e++) {
                    d += sp_val[a - 1u][e] * w[b][sp_idx[a - 1u][e]];
                }
            }
            c[a][b] = d + select(real(0.0), real(1.0), a == b);
        }
    }
    let y = solve_small(c, u_dot_z, cols);
    for (var k = 0u; k < L; k++) {
        var x = z[k];
        for (var col = 0u; col < cols; col++) {
            x -= w[col][k] * y[col];
        }
        (*v_new)[k] = x;
    }
    if actuated {
        let psi_dot = gb * (*v_new)[ib0] + gd * (*v_new)[id0];
        return abs(ip.k_p * (-omega - psi_dot) * psi_dot);
    }
    return 0.0;
}

// One DKD-dc step of instance i (q, v advanced in place in `state`); returns the
// actuation power summed over legs. CPU: `dkd::step`.
fn dkd_step(i: u32, ip: Instance, mset: u32) -> real {
    let h = ip.h;
    for (var k = 0u; k < NQ; k++) {
        state[slot(SLOT_Q + k, i)] += 0.5 * h * state[slot(SLOT_V + k, i)];
    }
    let o = N_LEGS * L;
    let body = vec3<real>(q_at(o, i), q_at(o + 1u, i), q_at(o + 2u, i));
    let sc = sincos(body.z);
    let sp = spring_pass(i, ip, body, sc);
    var power = real(0.0);
    for (var leg = 0u; leg < N_LEGS; leg++) {
        var q: LegVec;
        var v: LegVec;
        var v_new: LegVec;
        for (var k = 0u; k < L; k++) {
            q[k] = state[slot(SLOT_Q + leg * L + k, i)];
            v[k] = state[slot(SLOT_V + leg * L + k, i)];
        }
        power += kick_leg(ip, legs[i * N_LEGS + leg], mset, &q, &v, sp.base_force[leg], &v_new);
        for (var k = 0u; k < L; k++) {
            state[slot(SLOT_V + leg * L + k, i)] = v_new[k];
        }
    }
    // Body: explicit loads, implicit damping.
    let load = sp.load + body_contact(ip, body, sc);
    let m = ip.body_mass;
    let vo = SLOT_V + o;
    state[slot(vo, i)] = (m * state[slot(vo, i)] + h * (m * ip.g + load.x)) / (m + h * ip.zeta);
    state[slot(vo + 1u, i)] = (m * state[slot(vo + 1u, i)] + h * load.y) / (m + h * ip.zeta);
    let ib = ip.inertia;
    let zl2 = ip.zeta * ip.leg_length * ip.leg_length;
    state[slot(vo + 2u, i)] = (ib * state[slot(vo + 2u, i)] + h * load.z) / (ib + h * zl2);
    for (var k = 0u; k < NQ; k++) {
        state[slot(SLOT_Q + k, i)] += 0.5 * h * state[slot(SLOT_V + k, i)];
    }
    return power;
}
