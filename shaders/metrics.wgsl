// Fragment, not a standalone file: the generator (src/gpu/kernel.rs) inlines it into the
// entry point after the sample barrier, where it folds output sample k into this leg's
// running sums (the `t_*` registers of src/gpu/tally.rs). CPU twin:
// `MetricsAccumulator::push` in src/metrics.rs. Defined before it: k, leg, ri,
// window_first, tangent (this leg's unit basal tangent), next (the next leg's), tip_x
// (the tip's x, plus the terrain's height h(y) there in the ground kernel: in contact at
// tip_x ≥ X_t), constraint (qᵀGq − ℓ of this leg), y_body, work_sum (Σ over legs) and kura
// (Σ over legs of e^{iφ} = (t_x, −t_y)). Angles are never formed except the
// per-sample phase increment, which `angle_of` computes from unit vectors.
if k == 0u {
    t_max_inext = 0.0;
    t_phi = 0.0;
    t_first_y = y_body;
} else {
    // Unwrapped φ = −ψ: subtract the turn from the previous sample's tangent.
    let cross = t_prev_tx * tangent.y - t_prev_ty * tangent.x;
    let dot = t_prev_tx * tangent.x + t_prev_ty * tangent.y;
    t_phi -= angle_of(cross, dot);
}
t_max_inext = max(t_max_inext, abs(constraint) / instances[ri].leg_length);
t_prev_tx = tangent.x;
t_prev_ty = tangent.y;
t_last_y = y_body;
t_last_work = work_sum;
if k >= window_first {
    if k == window_first {
        t_window_y = y_body;
        t_phi_start = t_phi;
        // The window's sums start here (a continued run's window restarts them).
        t_pair_re = 0.0;
        t_pair_im = 0.0;
        t_kuramoto_sum = 0.0;
        t_contact_count = 0.0;
    }
    if k == ints[ri].window_mid {
        t_mid_phi = t_phi;
        t_mid_pair_re = t_pair_re;
        t_mid_pair_im = t_pair_im;
    }
    // e^{iΔ_i} = e^{iφ_i} · conj(e^{iφ_{i+1}}).
    if leg + 1u < N_LEGS {
        let a = vec2<real>(tangent.x, -tangent.y);
        let b = vec2<real>(next.x, -next.y);
        t_pair_re += a.x * b.x + a.y * b.y;
        t_pair_im += a.y * b.x - a.x * b.y;
    }
    t_kuramoto_sum += sqrt(kura.x * kura.x + kura.y * kura.y) / real(N_LEGS);
    if tip_x >= instances[ri].x_t {
        t_contact_count += 1.0;
    }
}
