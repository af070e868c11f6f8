//! DKD-dc: the fixed-step scheme of `notes/integrator-study.md`, written as the readable
//! CPU statement of what the batch engines compute.
//!
//! One step: half drift q += h/2·v; springs at the midpoint; one linearly implicit kick
//! per leg in which every velocity-proportional term (ζ damping, Bayo's penalty damping
//! with the drift-consistency term, the basal servo, tip friction) is implicit, solved by
//! Woodbury on the constant P = (ρ + hζ)M + θh²K_M·K; the body kick with implicit damping;
//! half drift with the new velocities. Elastic, spring, gravity and contact forces stay
//! explicit, so the step is bounded by the top bending mode: h < 2/ω_max (θ = 0).

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;
use crate::model::hermite::Dense;
use crate::model::robot::basal_gradient;
use crate::model::Robot;
use crate::params::{MAX_LEGS, MAX_NODES};
use crate::sample::{state_is_sane, Deadline, Sample, Status};

/// Fixed-step settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DkdSettings {
    /// Step (s); `None` picks `safety · 2/ω_max` of the instance, rounded so that the
    /// output interval is a whole number of steps.
    pub h: Option<f64>,
    /// Fraction of the explicit stability limit 2/ω_max used by the automatic step.
    pub safety: f64,
    /// Cap on the automatic step (s): soft legs have a low ω_max, and their stability
    /// limit alone would give steps too coarse for the walking metrics.
    pub max_step: f64,
    /// Implicitness of the bending force in the kick (0 = explicit, the study's DKD-dc).
    pub theta: f64,
    /// Step budget: steps allowed before the run ends as `budget_exceeded` (none: no limit).
    pub max_steps: Option<u64>,
}

impl Default for DkdSettings {
    fn default() -> Self {
        DkdSettings {
            h: None,
            safety: 0.85,
            max_step: 2.5e-4,
            theta: 0.0,
            max_steps: None,
        }
    }
}

impl DkdSettings {
    pub fn validate(&self) -> Result<(), SettingsError> {
        let bad = |field: &str, value: f64, allowed: &str| {
            Err(SettingsError::OutOfRange {
                field: field.into(),
                value,
                allowed: allowed.into(),
            })
        };
        if let Some(h) = self.h {
            if !(h.is_finite() && h > 0.0) {
                return bad("h", h, "a finite step > 0 (s)");
            }
        }
        if !(self.max_step.is_finite() && self.max_step > 0.0) {
            return bad("max_step", self.max_step, "a finite step > 0 (s)");
        }
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return bad("safety", self.safety, "(0, 1]");
        }
        if !(0.0..=1.0).contains(&self.theta) {
            return bad("theta", self.theta, "[0, 1]");
        }
        if self.max_steps == Some(0) {
            return bad("max_steps", 0.0, "an integer >= 1");
        }
        Ok(())
    }

    /// The step for `robot` given the output interval.
    pub fn step_for(&self, robot: &Robot, dt_out: f64) -> f64 {
        let h_max = self.h.unwrap_or_else(|| {
            (self.safety * 2.0 / top_bending_frequency(robot)).min(self.max_step)
        });
        dt_out / (dt_out / h_max).ceil()
    }
}

/// Largest natural frequency ω_max of a free leg: K_M·K φ = ω² ρM φ (power iteration).
pub fn top_bending_frequency(robot: &Robot) -> f64 {
    let m = 2 * robot.n_nodes;
    let p = &robot.p;
    let mut x: Vec<f64> = (0..m).map(|i| 1.0 + 0.1 * i as f64).collect();
    let mut y = vec![0.0; m];
    let mut z = vec![0.0; m];
    let mut lambda = 0.0;
    for _ in 0..500 {
        robot.fe.bending.mul(&x, &mut y);
        robot.mass_inv.mul(&y, &mut z);
        let norm = z.iter().map(|a| a * a).sum::<f64>().sqrt();
        let next = p.k_m * norm / x.iter().map(|a| a * a).sum::<f64>().sqrt();
        x.iter_mut().zip(&z).for_each(|(a, b)| *a = b / norm);
        if (next - lambda).abs() <= 1e-12 * next {
            lambda = next;
            break;
        }
        lambda = next;
    }
    lambda.sqrt()
}

/// Per-instance constants of the kick for step h.
#[derive(Debug, Clone)]
pub struct KickConstants {
    pub h: f64,
    pub theta: f64,
    /// P⁻¹ for one component block, P = (ρ + hζ)M + θh²K_M·K.
    pub p_inv: Dense,
}

impl KickConstants {
    pub fn new(robot: &Robot, h: f64, theta: f64) -> KickConstants {
        let p = &robot.p;
        let m = 2 * robot.n_nodes;
        let mut pm = Dense::zeros(m);
        for i in 0..m * m {
            pm.a[i] = (p.rho + h * p.zeta) * robot.fe.mass.a[i]
                + theta * h * h * p.k_m * robot.fe.bending.a[i];
        }
        KickConstants {
            h,
            theta,
            p_inv: pm.inverse().expect("P is SPD"),
        }
    }
}

/// Apply P⁻¹ (block-diagonal, same block for X and Y) to x.
fn p_inv_apply(k: &KickConstants, m: usize, x: &[f64], y: &mut [f64]) {
    k.p_inv.mul(&x[..m], &mut y[..m]);
    k.p_inv.mul(&x[m..], &mut y[m..]);
}

/// One leg's kick at the midpoint `q` with old velocity `v`, writing `v_new`.
/// Returns the actuation power |M0 ψ̇| at the new velocity.
pub fn kick_leg(
    robot: &Robot,
    k: &KickConstants,
    leg: usize,
    q: &[f64],
    v: &[f64],
    base_force: [f64; 2],
    v_new: &mut [f64],
) -> f64 {
    const L: usize = 4 * MAX_NODES;
    let p = &robot.p;
    let ix = robot.idx;
    let m = 2 * robot.n_nodes;
    let l = 2 * m;
    let h = k.h;
    let (mut tmp, mut r, mut z) = ([0.0; L], [0.0; L], [0.0; L]);
    let (mut w, mut mv) = ([[0.0; L]; 3], [0.0; L]);
    // Constraint quantities at the midpoint.
    let ct = robot.constraint_terms(q, v);
    let mut j = [0.0; L];
    for (ji, g) in j[..l].iter_mut().zip(&ct.gq[..l]) {
        *ji = 2.0 * g;
    }
    let j = &j[..l];
    let (v_res, s, jv) = (ct.residual, ct.vgv, ct.jv);
    // The drift-consistency ("dc") term: the drift adds h²vᵀGv to V every step.
    let pen = p.lambda * (2.0 * s + p.eta * p.eta * v_res) + 2.0 * p.lambda * p.eta * p.mu * h * s;
    // Explicit force F_exp.
    for c in 0..2 {
        let rg = c * m..(c + 1) * m;
        for i in rg.clone() {
            tmp[i] = q[i] - k.theta * h * v[i];
        }
        robot.fe.bending.mul(&tmp[rg.clone()], &mut mv[rg.clone()]);
        for i in rg {
            r[i] = -p.k_m * mv[i];
        }
    }
    for (ri, f) in r[..m].iter_mut().zip(&robot.fe.load) {
        *ri += p.rho * p.g * f;
    }
    for (ri, ji) in r[..l].iter_mut().zip(j) {
        *ri -= pen * ji;
    }
    r[ix.a(0)] += base_force[0];
    r[ix.c(0)] += base_force[1];
    let [gb, gd] = basal_gradient(q[ix.b(0)], q[ix.d(0)]);
    let actuated = p.actuated[leg] && p.k_p > 0.0;
    let omega = p.leg_omega(leg);
    if actuated {
        r[ix.b(0)] -= p.k_p * omega * gb;
        r[ix.d(0)] -= p.k_p * omega * gd;
    }
    let tip = ix.tip();
    let contact = q[ix.a(tip)] >= p.x_t;
    if contact {
        r[ix.a(tip)] += p.epsilon * (p.x_t - q[ix.a(tip)]);
    }
    // r = ρMv + λJ(Jᵀv) + h·F_exp
    robot.fe.mass.mul(&v[..m], &mut mv[..m]);
    robot.fe.mass.mul(&v[m..l], &mut mv[m..l]);
    for i in 0..l {
        r[i] = p.rho * mv[i] + p.lambda * j[i] * jv + h * r[i];
    }
    // Woodbury with the active scaled columns u₁ (J), u₂ (servo), u₃ (friction).
    p_inv_apply(k, m, &r[..l], &mut z[..l]);
    let mut cols = 0;
    let mut u_dot_z = [0.0; 3];
    // u₁ = √(λ(1 + 2hημ))·J
    let s1 = (p.lambda * (1.0 + 2.0 * h * p.eta * p.mu)).sqrt();
    let mut u1_buf = [0.0; L];
    for (u, x) in u1_buf[..l].iter_mut().zip(j) {
        *u = s1 * x;
    }
    let u1 = &u1_buf[..l];
    p_inv_apply(k, m, u1, &mut w[0][..l]);
    u_dot_z[0] = u1.iter().zip(&z[..l]).map(|(a, b)| a * b).sum();
    cols += 1;
    // Sparse columns as (index, value) lists (at most two entries, two columns).
    let mut sparse_buf = [[(0usize, 0.0f64); 2]; 2];
    let mut sparse_len = [0usize; 2];
    let mut n_sparse = 0;
    if actuated {
        let s2 = (h * p.k_p).sqrt();
        sparse_buf[n_sparse] = [(ix.b(0), s2 * gb), (ix.d(0), s2 * gd)];
        sparse_len[n_sparse] = 2;
        n_sparse += 1;
    }
    if contact && p.nu > 0.0 {
        sparse_buf[n_sparse] = [(ix.c(tip), (h * p.nu).sqrt()), (0, 0.0)];
        sparse_len[n_sparse] = 1;
        n_sparse += 1;
    }
    let sparse: [&[(usize, f64)]; 2] = [
        &sparse_buf[0][..sparse_len[0]],
        &sparse_buf[1][..sparse_len[1]],
    ];
    let sparse = &sparse[..n_sparse];
    for u in sparse {
        let wc = &mut w[cols];
        for x in wc[..l].iter_mut() {
            *x = 0.0;
        }
        // W = P⁻¹u: columns of the block inverse scaled by u's entries.
        for &(idx, val) in u.iter() {
            let (blk, local) = (idx / m, idx % m);
            for row in 0..m {
                wc[blk * m + row] += val * k.p_inv.get(row, local);
            }
        }
        u_dot_z[cols] = u.iter().map(|&(idx, val)| val * z[idx]).sum();
        cols += 1;
    }
    // C = I + UᵀW (k×k, SPD); solve C y = Uᵀz by Gaussian elimination (k ≤ 3).
    let mut c = [[0.0; 3]; 3];
    let u_dot = |col: usize, x: &[f64]| -> f64 {
        if col == 0 {
            u1.iter().zip(x).map(|(a, b)| a * b).sum()
        } else {
            sparse[col - 1].iter().map(|&(idx, val)| val * x[idx]).sum()
        }
    };
    for (a, row) in c.iter_mut().enumerate().take(cols) {
        for (b, x) in row.iter_mut().enumerate().take(cols) {
            *x = u_dot(a, &w[b][..l]) + if a == b { 1.0 } else { 0.0 };
        }
    }
    let y = solve_small(c, u_dot_z, cols);
    for i in 0..l {
        let mut x = z[i];
        for (col, yc) in y.iter().enumerate().take(cols) {
            x -= w[col][i] * yc;
        }
        v_new[i] = x;
    }
    if actuated {
        let psi_dot = gb * v_new[ix.b(0)] + gd * v_new[ix.d(0)];
        (p.k_p * (-omega - psi_dot) * psi_dot).abs()
    } else {
        0.0
    }
}

/// Solve the k×k system (k ≤ 3) by Gaussian elimination with partial pivoting.
fn solve_small(mut c: [[f64; 3]; 3], mut b: [f64; 3], k: usize) -> [f64; 3] {
    for col in 0..k {
        let piv = (col..k)
            .max_by(|&x, &y| c[x][col].abs().total_cmp(&c[y][col].abs()))
            .unwrap_or(col);
        c.swap(col, piv);
        b.swap(col, piv);
        let pivot = c[col];
        for row in col + 1..k {
            let f = c[row][col] / pivot[col];
            for (x, p) in c[row][col..k].iter_mut().zip(&pivot[col..k]) {
                *x -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..k).rev() {
        let mut s = b[row];
        for cc in row + 1..k {
            s -= c[row][cc] * x[cc];
        }
        x[row] = s / c[row][row];
    }
    x
}

/// Statistics of a fixed-step run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DkdStats {
    pub steps: usize,
    pub h: f64,
}

/// One DKD-dc step of the whole robot (q, v advanced in place); returns the actuation
/// power summed over legs.
pub fn step(robot: &Robot, k: &KickConstants, q: &mut [f64], v: &mut [f64]) -> f64 {
    let h = k.h;
    let p = &robot.p;
    let nq = robot.nq();
    let l = robot.leg_dofs;
    for i in 0..nq {
        q[i] += 0.5 * h * v[i];
    }
    // Stack buffers, as in `Robot::accelerations`: no allocation per step.
    let mut base_force = [[0.0; 2]; MAX_LEGS];
    let springs = robot.spring_pass(q, &mut base_force[..robot.n_legs]);
    let mut power = 0.0;
    let mut v_buf = [0.0; 4 * MAX_NODES];
    let v_new = &mut v_buf[..l];
    for (i, &f) in base_force[..robot.n_legs].iter().enumerate() {
        let r = i * l..(i + 1) * l;
        power += kick_leg(robot, k, i, &q[r.clone()], &v[r.clone()], f, v_new);
        v[r].copy_from_slice(v_new);
    }
    // Body: explicit loads, implicit damping.
    let o = robot.n_legs * l;
    let mut load = springs;
    load.add(robot.body.contact(&q[o..o + 3], p.x_t, p.epsilon));
    let m = p.body_mass;
    v[o] = (m * v[o] + h * (m * p.g + load.fx)) / (m + h * p.zeta);
    v[o + 1] = (m * v[o + 1] + h * load.fy) / (m + h * p.zeta);
    let ib = robot.body.inertia;
    let zl2 = p.zeta * p.leg_length * p.leg_length;
    v[o + 2] = (ib * v[o + 2] + h * load.torque) / (ib + h * zl2);
    for i in 0..nq {
        q[i] += 0.5 * h * v[i];
    }
    power
}

/// Integrate with DKD-dc, emitting samples every `dt_out` (a whole number of steps).
/// The budget (`settings.max_steps`, `deadline`) is checked between steps, so a point
/// whose single output interval never ends (h = 1e-12 s) still stops.
pub fn integrate(
    robot: &Robot,
    settings: &DkdSettings,
    dt_out: f64,
    deadline: Deadline,
    on_sample: &mut dyn FnMut(&Sample),
    on_progress: &mut dyn FnMut(f64),
) -> (Status, DkdStats) {
    let t_final = robot.p.t_final;
    let h = settings.step_for(robot, dt_out);
    let per_sample = (dt_out / h).round() as usize;
    let k = KickConstants::new(robot, h, settings.theta);
    let (mut q, mut v) = robot.initial_state();
    let mut work = 0.0;
    on_sample(&Sample::from_state(robot, 0.0, &q, 0.0));
    let n_samples = (t_final / dt_out - 1e-9).ceil() as usize;
    let mut stats = DkdStats { steps: 0, h };
    for s in 1..=n_samples {
        let t_s = (s as f64 * dt_out).min(t_final);
        let steps = if s == n_samples {
            ((t_final - (s - 1) as f64 * dt_out) / h).round().max(1.0) as usize
        } else {
            per_sample
        };
        for done in 0..steps {
            let over_steps = settings.max_steps.is_some_and(|m| stats.steps as u64 >= m);
            // The clock is read every 1024 steps (a step is ~µs; a read is ~25 ns).
            if over_steps || (stats.steps % 1024 == 0 && deadline.passed()) {
                let t_reached = (s - 1) as f64 * dt_out + done as f64 * h;
                return (Status::BudgetExceeded { time: t_reached }, stats);
            }
            work += h * step(robot, &k, &mut q, &mut v);
            stats.steps += 1;
        }
        if !state_is_sane(&q) || !v.iter().all(|x| x.is_finite()) {
            return (Status::Diverged { time: t_s }, stats);
        }
        on_sample(&Sample::from_state(robot, t_s, &q, work));
        on_progress(t_s);
    }
    (Status::Ok, stats)
}
