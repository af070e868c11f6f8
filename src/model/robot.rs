//! The whole robot: state layout, accelerations (35) + body equations, energy.
//!
//! Generalised coordinates `q` (length `nq = N·4n + 3`): leg i's 4n unknowns
//! `[a_1..a_n, b_1..b_n, c_1..c_n, d_1..d_n]` for i = 1..N, then `(X_b, Y_b, θ)`.
//! Velocities `v` use the same layout.

use super::axoneme::{self, couple_energy, couple_force};
use super::body::{BodyGeometry, BodyLoad};
use super::hermite::{assemble, Assembled, Dense};
use super::springs::{spring_energy, spring_pass, springs, Ends, Law, Spring};
use super::terrain::Profile;
use crate::params::{Params, MAX_LEGS, MAX_NODES};

/// Which contact forces act: tip contact per leg, then the body points P₁, P₂
/// (`model::contact` reads one off the state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContactMode {
    pub tip: [bool; MAX_LEGS],
    pub body: [bool; 2],
}

impl ContactMode {
    /// No contact anywhere.
    pub fn none() -> ContactMode {
        ContactMode {
            tip: [false; MAX_LEGS],
            body: [false; 2],
        }
    }

    /// Whether switching surface `k` (tips, then P₁, P₂) is in contact.
    pub fn get(&self, robot: &Robot, k: usize) -> bool {
        if k < robot.n_legs {
            self.tip[k]
        } else {
            self.body[k - robot.n_legs]
        }
    }

    pub fn set(&mut self, robot: &Robot, k: usize, on: bool) {
        if k < robot.n_legs {
            self.tip[k] = on;
        } else {
            self.body[k - robot.n_legs] = on;
        }
    }
}

/// Index helper for one leg's 4n unknowns.
#[derive(Debug, Clone, Copy)]
pub struct LegIndex {
    pub n: usize,
}

impl LegIndex {
    pub fn a(&self, k: usize) -> usize {
        k
    }
    pub fn b(&self, k: usize) -> usize {
        self.n + k
    }
    pub fn c(&self, k: usize) -> usize {
        2 * self.n + k
    }
    pub fn d(&self, k: usize) -> usize {
        3 * self.n + k
    }
    /// Tip node (last) index.
    pub fn tip(&self) -> usize {
        self.n - 1
    }
}

/// Energy breakdown (for conservation checks); gravity is measured from x = 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct Energy {
    pub kinetic: f64,
    pub bending: f64,
    pub springs: f64,
    pub gravity: f64,
    pub contact: f64,
    pub penalty: f64,
}

impl Energy {
    pub fn total(&self) -> f64 {
        self.kinetic + self.bending + self.springs + self.gravity + self.contact + self.penalty
    }
}

/// The inextensibility constraint of one leg at (q, v) (Bayo's penalty, docs/model.md (7)-(8)):
/// G q per component block, the residual V = qᵀGq − ℓ, vᵀGv and Jᵀv with J = 2Gq.
/// Shared by the reference's accelerations and the fixed-step kick.
#[derive(Debug, Clone, Copy)]
pub struct ConstraintTerms {
    pub gq: [f64; 4 * MAX_NODES],
    pub residual: f64,
    pub vgv: f64,
    pub jv: f64,
}

/// ∂ψ/∂(b₁, d₁) of the basal angle ψ = atan2(d₁, b₁): (−d₁, b₁)/(b₁² + d₁²). The servo's
/// generalised force is M0 times this, and ψ̇ its dot product with (ḃ₁, ḋ₁).
#[inline]
pub fn basal_gradient(b1: f64, d1: f64) -> [f64; 2] {
    let r2 = b1 * b1 + d1 * d1;
    [-d1 / r2, b1 / r2]
}

/// Power of the two actuations at one instant (summed over the legs it covers): the
/// basal servos' Σ|M0_i ψ̇_i| and the internal couples' Σ|Q_A,i·q̇_i|; and the power
/// the coupling's dampers dissipate, Σc·γ̇² (the whole robot's, set once).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Powers {
    pub servo: f64,
    pub couple: f64,
    pub coupling: f64,
}

impl std::ops::AddAssign for Powers {
    fn add_assign(&mut self, o: Powers) {
        self.servo += o.servo;
        self.couple += o.couple;
        self.coupling += o.coupling;
    }
}

/// Per-leg quantities the acceleration needs besides q and v.
#[derive(Debug, Clone, Copy)]
pub struct LegInputs {
    /// The leg (0-based) and the time: the internal couple's phase.
    pub leg: usize,
    pub t: f64,
    /// Spring force on the base node (a_1, c_1).
    pub base_force: [f64; 2],
    /// Target rate ω_i and whether the servo acts.
    pub omega: f64,
    pub actuated: bool,
    /// Whether the tip contact and friction act (see [`ContactMode`]).
    pub contact: bool,
}

/// Precomputed model for one parameter set.
#[derive(Debug, Clone)]
pub struct Robot {
    pub p: Params,
    pub n_legs: usize,
    pub n_nodes: usize,
    /// Unknowns per leg, 4n.
    pub leg_dofs: usize,
    pub fe: Assembled,
    /// (ρ M₁)⁻¹ for one component block.
    pub mass_inv: Dense,
    pub body: BodyGeometry,
    pub springs: Vec<Spring>,
    pub idx: LegIndex,
    /// The terrain's profile h(y).
    pub terrain: Profile,
}

impl Robot {
    /// Build the model; parameters must already be validated.
    pub fn new(p: &Params) -> Robot {
        let fe = assemble(p.n_nodes, p.leg_length);
        let mass_inv = fe
            .mass
            .scaled(p.rho)
            .inverse()
            .expect("Hermite mass matrix is SPD for rho > 0");
        Robot {
            n_legs: p.n_legs,
            n_nodes: p.n_nodes,
            leg_dofs: 4 * p.n_nodes,
            body: BodyGeometry::new(p),
            springs: springs(
                p.n_legs,
                Law {
                    k: p.alpha,
                    k3: p.alpha_cubic,
                    c: p.alpha_damping,
                    rest: p.l_alpha,
                },
                Law {
                    k: p.beta,
                    k3: p.beta_cubic,
                    c: p.beta_damping,
                    rest: p.l_beta,
                },
            ),
            idx: LegIndex { n: p.n_nodes },
            terrain: Profile::new(p),
            fe,
            mass_inv,
            p: p.clone(),
        }
    }

    /// Number of generalised coordinates, N·4n + 3.
    pub fn nq(&self) -> usize {
        self.n_legs * self.leg_dofs + 3
    }

    pub fn leg<'a>(&self, q: &'a [f64], i: usize) -> &'a [f64] {
        &q[i * self.leg_dofs..(i + 1) * self.leg_dofs]
    }

    pub fn body_of<'a>(&self, q: &'a [f64]) -> &'a [f64] {
        let o = self.n_legs * self.leg_dofs;
        &q[o..o + 3]
    }

    /// Base position (a_1, c_1) of leg i.
    pub fn base(&self, q: &[f64], i: usize) -> [f64; 2] {
        let l = self.leg(q, i);
        [l[self.idx.a(0)], l[self.idx.c(0)]]
    }

    /// Basal angle ψ_i = atan2(d_1, b_1).
    pub fn basal_angle(&self, q: &[f64], i: usize) -> f64 {
        let l = self.leg(q, i);
        l[self.idx.d(0)].atan2(l[self.idx.b(0)])
    }

    /// Tip position (X_i(ℓ), Y_i(ℓ)).
    pub fn tip(&self, q: &[f64], i: usize) -> [f64; 2] {
        let l = self.leg(q, i);
        [l[self.idx.a(self.idx.tip())], l[self.idx.c(self.idx.tip())]]
    }

    /// Contact point of switching surface `k`: the tip of leg k < N, else the body
    /// point P_{k−N+1}.
    pub fn contact_point(&self, q: &[f64], k: usize) -> [f64; 2] {
        if k < self.n_legs {
            self.tip(q, k)
        } else {
            BodyGeometry::world(self.body_of(q), self.body.p_points[k - self.n_legs])
        }
    }

    /// Inextensibility residual V = qᵀGq − ℓ of one leg.
    pub fn constraint(&self, leg_q: &[f64]) -> f64 {
        let m = 2 * self.n_nodes;
        self.fe.geometric.quad(&leg_q[..m]) + self.fe.geometric.quad(&leg_q[m..])
            - self.p.leg_length
    }

    /// The paper's initial state: straight legs at ψ_i(0), body at (X_b(0), 0, 0), at rest.
    pub fn initial_state(&self) -> (Vec<f64>, Vec<f64>) {
        let p = &self.p;
        let mut q = vec![0.0; self.nq()];
        let h = p.leg_length / (self.n_nodes - 1) as f64;
        for i in 0..self.n_legs {
            let psi = p.initial_angle(i);
            let yi = -((p.n_legs as f64 + 1.0) / 2.0 - (i as f64 + 1.0)) * p.l_alpha;
            let o = i * self.leg_dofs;
            for k in 0..self.n_nodes {
                let s = k as f64 * h;
                q[o + self.idx.a(k)] = s * psi.cos();
                q[o + self.idx.b(k)] = psi.cos();
                q[o + self.idx.c(k)] = yi + s * psi.sin();
                q[o + self.idx.d(k)] = psi.sin();
            }
        }
        let ob = self.n_legs * self.leg_dofs;
        q[ob] = self.body.xb0;
        (q, vec![0.0; self.nq()])
    }

    /// Spring forces on every leg base, the springs' load on the body and the power
    /// their dampers dissipate (velocities `v`).
    pub fn spring_pass(
        &self,
        q: &[f64],
        v: &[f64],
        base_force: &mut [[f64; 2]],
    ) -> (BodyLoad, f64) {
        let mut bases = [[0.0; 2]; MAX_LEGS];
        let mut bases_v = [[0.0; 2]; MAX_LEGS];
        for i in 0..self.n_legs {
            bases[i] = self.base(q, i);
            bases_v[i] = self.base(v, i);
        }
        let ends = Ends {
            bases: &bases[..self.n_legs],
            bases_v: &bases_v[..self.n_legs],
            body: self.body_of(q),
            body_v: self.body_of(v),
        };
        spring_pass(&self.springs, &self.body, &ends, base_force)
    }

    /// The constraint terms of one leg (`q`, `v`: that leg's unknowns).
    pub fn constraint_terms(&self, q: &[f64], v: &[f64]) -> ConstraintTerms {
        let m = 2 * self.n_nodes;
        let l = 2 * m;
        let mut gq = [0.0; 4 * MAX_NODES];
        self.fe.geometric.mul(&q[..m], &mut gq[..m]);
        self.fe.geometric.mul(&q[m..l], &mut gq[m..l]);
        let residual =
            q[..l].iter().zip(&gq[..l]).map(|(a, b)| a * b).sum::<f64>() - self.p.leg_length;
        let jv = 2.0 * v[..l].iter().zip(&gq[..l]).map(|(a, b)| a * b).sum::<f64>();
        let vgv = self.fe.geometric.quad(&v[..m]) + self.fe.geometric.quad(&v[m..l]);
        ConstraintTerms {
            gq,
            residual,
            vgv,
            jv,
        }
    }

    /// Leg acceleration from (35) with Bayo's penalty, solved by Sherman–Morrison.
    /// Returns the leg's actuation powers: the servo's |M0 ψ̇| and the couple's |Q_A·q̇|.
    pub fn leg_acceleration(
        &self,
        q: &[f64],
        v: &[f64],
        inp: LegInputs,
        acc: &mut [f64],
    ) -> Powers {
        let p = &self.p;
        let m = 2 * self.n_nodes;
        let ix = self.idx;
        // Stack buffers sized for the largest leg (no allocation in the hot path).
        const L: usize = 4 * MAX_NODES;
        let (mut f_buf, mut gq_buf, mut tmp_buf, mut w_buf) =
            ([0.0; L], [0.0; L], [0.0; L], [0.0; L]);
        let (f, gq, tmp, w) = (
            &mut f_buf[..2 * m],
            &mut gq_buf[..2 * m],
            &mut tmp_buf[..m],
            &mut w_buf[..2 * m],
        );
        // J = 2 G q and the constraint quantities.
        let ct = self.constraint_terms(q, v);
        gq.copy_from_slice(&ct.gq[..2 * m]);
        let (v_res, jv, s) = (ct.residual, ct.jv, ct.vgv);
        let pen = p.lambda * (2.0 * s + 2.0 * p.eta * p.mu * jv + p.eta * p.eta * v_res);
        for c in 0..2 {
            let r = c * m..(c + 1) * m;
            // −ζ M v
            self.fe.mass.mul(&v[r.clone()], tmp);
            for (fi, t) in f[r.clone()].iter_mut().zip(tmp.iter()) {
                *fi = -p.zeta * t;
            }
            // −K_M K q
            self.fe.bending.mul(&q[r.clone()], tmp);
            for (fi, t) in f[r.clone()].iter_mut().zip(tmp.iter()) {
                *fi -= p.k_m * t;
            }
        }
        for (k, l) in self.fe.load.iter().enumerate() {
            f[k] += p.rho * p.g * l;
        }
        for (fi, g) in f.iter_mut().zip(gq.iter()) {
            *fi -= pen * 2.0 * g;
        }
        // Springs on the base node.
        f[ix.a(0)] += inp.base_force[0];
        f[ix.c(0)] += inp.base_force[1];
        // Basal servo (16) with generalised force M0 ∂ψ/∂q.
        let [gb, gd] = basal_gradient(q[ix.b(0)], q[ix.d(0)]);
        let psi_dot = gb * v[ix.b(0)] + gd * v[ix.d(0)];
        let mut power = Powers::default();
        if inp.actuated {
            let m0 = p.k_p * (-inp.omega - psi_dot);
            f[ix.b(0)] += m0 * gb;
            f[ix.d(0)] += m0 * gd;
            power.servo = (m0 * psi_dot).abs();
        }
        // The internal couple (A4), where this leg's motors act.
        if axoneme::amplitude(p, inp.leg) != 0.0 {
            let mut qa = [0.0; L];
            couple_force(p, inp.leg, q, inp.t, &mut qa[..2 * m]);
            for (fi, x) in f.iter_mut().zip(&qa) {
                *fi += x;
            }
            power.couple = qa.iter().zip(v).map(|(a, b)| a * b).sum::<f64>().abs();
        }
        // Tip contact while the contact mode says so (T3, T4): the normal penalty
        // ε·c·d·n and the tangential friction F_T·t.
        if inp.contact {
            let (ta, tc) = (ix.a(ix.tip()), ix.c(ix.tip()));
            let frame = self.terrain.frame(q[ta], q[tc], p.x_t);
            let f_n = frame.normal_force(p.epsilon);
            let f_t = frame.friction(p, [v[ta], v[tc]]);
            f[ta] += f_n[0] + f_t * frame.tangent[0];
            f[tc] += f_n[1] + f_t * frame.tangent[1];
        }
        // (ρM + λJJᵀ) a = f: z = A⁻¹f, w = A⁻¹J, a = z − w λ(Jᵀz)/(1 + λJᵀw).
        for c in 0..2 {
            let r = c * m..(c + 1) * m;
            self.mass_inv.mul(&f[r.clone()], &mut acc[r.clone()]);
            self.mass_inv.mul(&gq[r.clone()], &mut w[r.clone()]);
        }
        // With J = 2Gq: Jᵀz = 2 gqᵀz, Jᵀw' = 2 gqᵀ(A⁻¹·2gq) and the update uses w' = 2w.
        let jz: f64 = 2.0 * gq.iter().zip(acc.iter()).map(|(a, b)| a * b).sum::<f64>();
        let jw: f64 = 4.0 * gq.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>();
        let coef = p.lambda * jz / (1.0 + p.lambda * jw);
        for (a, wi) in acc.iter_mut().zip(w.iter()) {
            *a -= coef * 2.0 * wi;
        }
        power
    }

    /// Body accelerations from the spring load (springs already summed), with the
    /// terrain penalty at the body points that `contact` switches on.
    pub fn body_acceleration(
        &self,
        body_q: &[f64],
        body_v: &[f64],
        springs: BodyLoad,
        contact: [bool; 2],
    ) -> [f64; 3] {
        let p = &self.p;
        let mut load = springs;
        load.add(
            self.body
                .contact_in(body_q, &self.terrain, p.x_t, p.epsilon, contact),
        );
        let fx = p.body_mass * p.g - p.zeta * body_v[0] + load.fx;
        let fy = -p.zeta * body_v[1] + load.fy;
        let tq = -p.zeta * p.leg_length * p.leg_length * body_v[2] + load.torque;
        [fx / p.body_mass, fy / p.body_mass, tq / self.body.inertia]
    }

    /// Accelerations of all coordinates at time t; returns the actuation powers summed
    /// over the legs.
    pub fn accelerations(&self, t: f64, q: &[f64], v: &[f64], acc: &mut [f64]) -> Powers {
        self.accelerations_in(t, q, v, acc, &ContactMode::of_state(self, q))
    }

    /// [`Robot::accelerations`] with the contact forces of `mode` (held by an
    /// event-locating solver) instead of those the state's gaps select.
    pub fn accelerations_in(
        &self,
        t: f64,
        q: &[f64],
        v: &[f64],
        acc: &mut [f64],
        mode: &ContactMode,
    ) -> Powers {
        let mut base_force = [[0.0; 2]; MAX_LEGS];
        let (body_load, dissipation) = self.spring_pass(q, v, &mut base_force[..self.n_legs]);
        let l = self.leg_dofs;
        let mut power = Powers {
            coupling: dissipation,
            ..Powers::default()
        };
        for (i, &force) in base_force.iter().enumerate().take(self.n_legs) {
            let r = i * l..(i + 1) * l;
            let inp = LegInputs {
                leg: i,
                t,
                base_force: force,
                omega: self.p.leg_omega(i),
                actuated: self.p.actuated[i],
                contact: mode.tip[i],
            };
            power += self.leg_acceleration(&q[r.clone()], &v[r.clone()], inp, &mut acc[r]);
        }
        let o = self.n_legs * l;
        let ab = self.body_acceleration(&q[o..o + 3], &v[o..o + 3], body_load, mode.body);
        acc[o..o + 3].copy_from_slice(&ab);
        power
    }

    /// The internal couples' energy Σ_i E_A,i at time t (A3): with ω_A = 0 it joins
    /// [`Energy::total`] in the conserved sum.
    pub fn couple_energy(&self, t: f64, q: &[f64]) -> f64 {
        (0..self.n_legs)
            .map(|i| couple_energy(&self.p, i, self.leg(q, i), t))
            .sum()
    }

    /// Total mechanical energy and its parts (Bayo's penalty counted as ½λ(V̇² + η²V²)).
    pub fn energy(&self, q: &[f64], v: &[f64]) -> Energy {
        let p = &self.p;
        let m = 2 * self.n_nodes;
        let mut e = Energy::default();
        let mut gq = vec![0.0; m];
        for i in 0..self.n_legs {
            let (lq, lv) = (self.leg(q, i), self.leg(v, i));
            for c in 0..2 {
                let r = c * m..(c + 1) * m;
                e.kinetic += 0.5 * p.rho * self.fe.mass.quad(&lv[r.clone()]);
                e.bending += 0.5 * p.k_m * self.fe.bending.quad(&lq[r.clone()]);
            }
            e.gravity -= p.rho
                * p.g
                * self
                    .fe
                    .load
                    .iter()
                    .zip(&lq[..m])
                    .map(|(a, b)| a * b)
                    .sum::<f64>();
            let tip = self.tip(q, i);
            e.contact += self.terrain.frame(tip[0], tip[1], p.x_t).energy(p.epsilon);
            let vr = self.constraint(lq);
            let mut vdot = 0.0;
            for c in 0..2 {
                let r = c * m..(c + 1) * m;
                self.fe.geometric.mul(&lq[r.clone()], &mut gq);
                vdot += 2.0 * gq.iter().zip(&lv[r]).map(|(a, b)| a * b).sum::<f64>();
            }
            e.penalty += 0.5 * p.lambda * (vdot * vdot + p.eta * p.eta * vr * vr);
        }
        let (bq, bv) = (self.body_of(q), self.body_of(v));
        e.kinetic += 0.5 * p.body_mass * (bv[0] * bv[0] + bv[1] * bv[1])
            + 0.5 * self.body.inertia * bv[2] * bv[2];
        e.gravity -= p.body_mass * p.g * bq[0];
        e.contact += self
            .body
            .contact_energy(bq, &self.terrain, p.x_t, p.epsilon);
        let bases: Vec<[f64; 2]> = (0..self.n_legs).map(|i| self.base(q, i)).collect();
        e.springs = spring_energy(&self.springs, &self.body, &bases, bq);
        e
    }
}
