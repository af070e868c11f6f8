// Entry point: advance every instance through steps [ctl.step_begin, ctl.step_end)
// (step 0 stands for the initial sample); each completed output interval is followed
// by the divergence check and the metrics push. CPU twin: `dkd::integrate` feeding
// `MetricsAccumulator::push`. State stays resident between dispatches.

// The state is physical: every coordinate finite and below DIVERGENCE_BOUND, every
// velocity finite (comparisons, not isnan: NaN fails every `<`). CPU: `state_is_sane`.
fn state_is_sane(i: u32) -> bool {
    var ok = true;
    for (var k = 0u; k < NQ; k++) {
        ok = ok && abs(state[slot(SLOT_Q + k, i)]) < DIVERGENCE_BOUND
            && abs(state[slot(SLOT_V + k, i)]) <= REAL_MAX;
    }
    return ok;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn advance(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= ctl.batch || status[i] != 0u {
        return;
    }
    let ip = instances[i];
    let ni = ints[i];
    let mset = ni.matrix_set * MAT_STRIDE;
    let per = ni.steps_per_sample;
    let total = (ni.n_samples - 1u) * per + ni.steps_last;
    if ctl.step_begin == 0u {
        push_sample(i, ip, mset, 0u, ni.window_first);
    }
    var work = state[slot(SLOT_WORK, i)];
    let end = min(ctl.step_end, total + 1u);
    for (var s = max(ctl.step_begin, 1u); s < end; s++) {
        work += ip.h * dkd_step(i, ip, mset);
        // Step s ends output interval k when it completes a whole interval (the last
        // interval ends at the last step, t_final).
        var k = 0u;
        if s == total {
            k = ni.n_samples;
        } else if s % per == 0u && s / per < ni.n_samples {
            k = s / per;
        }
        if k > 0u {
            state[slot(SLOT_WORK, i)] = work;
            if !state_is_sane(i) {
                status[i] = k + 1u;
                return;
            }
            push_sample(i, ip, mset, k, ni.window_first);
        }
    }
    state[slot(SLOT_WORK, i)] = work;
}
