//! The per-lane constants of a block of W robots of one shape (N legs, n nodes): every
//! parameter may differ between lanes. Built once per block from the lanes' [`Robot`]s
//! and step sizes; the kernel only reads it.

use super::simd::L;
use crate::integrate::dkd::KickConstants;
use crate::model::hermite::Dense;
use crate::model::Robot;

/// A Hermite matrix of one component block in banded form: row i has six nonzero
/// columns (value and slope unknowns of nodes k−1, k, k+1, k = i mod n) in
/// increasing order; at the end nodes the missing ones carry a zero coefficient and
/// a valid column, so every row is the same six fused multiply-adds.
#[derive(Debug, Clone)]
pub struct Banded<const W: usize> {
    pub coef: Vec<[L<W>; 6]>,
}

/// The six columns of row i of a component block (nodes k−1, k, k+1 of the value
/// and slope unknowns, k = i mod n, clamped at the ends where the coefficient is 0).
/// Computed, not looked up: with n known at compile time they are constants.
#[inline(always)]
pub fn band(n: usize, i: usize) -> [usize; 6] {
    let k = i % n;
    let (lo, hi) = (k.saturating_sub(1), (k + 1).min(n - 1));
    [lo, k, hi, n + lo, n + k, n + hi]
}

impl<const W: usize> Banded<W> {
    fn new(lanes: &[&Dense; W], n: usize) -> Self {
        let coef = (0..2 * n)
            .map(|i| {
                let k = i % n;
                let present = [k > 0, true, k + 1 < n, k > 0, true, k + 1 < n];
                let mut row = [L::zero(); 6];
                for (c, slot) in row.iter_mut().enumerate() {
                    if present[c] {
                        for (j, d) in lanes.iter().enumerate() {
                            slot.0[j] = d.get(i, band(n, i)[c]);
                        }
                    }
                }
                row
            })
            .collect();
        Banded { coef }
    }
}

/// Constants of one block. Field names follow the CPU model (`Params`, `Robot`).
#[derive(Debug, Clone)]
pub struct BlockModel<const W: usize> {
    pub n_legs: usize,
    pub n_nodes: usize,
    pub bending: Banded<W>,
    pub geometric: Banded<W>,
    /// h·ρg·load vector of the X component (the only one gravity acts on): the weight's
    /// impulse over one step.
    pub weight_impulse: Vec<L<W>>,
    /// P⁻¹ of one component block, row-major m×m, m = 2n.
    pub p_inv: Vec<L<W>>,
    pub h: L<W>,
    /// θ'h = (1 − a)θh: the kick's bending is taken at q − θ'hv once its inertia term
    /// ρMv has been rewritten through P (see `inertia_share`).
    pub theta_h: L<W>,
    /// ½h², and b = (3/2 + k)/(1 + k), k = 2hημ: the touchdown correction's shift of
    /// the midpoint and its weight of the old vᵀGv (`kernel::kick_leg`).
    pub half_h2: L<W>,
    pub touchdown_old: L<W>,
    /// Whether θ' = 0 in every lane (the default): bending at q, in the pass over q.
    pub explicit_bending: bool,
    /// a = ρ/(ρ + hζ): P⁻¹ρMv = a·v − aθh²K_M·P⁻¹Kv.
    pub inertia_share: L<W>,
    pub k_m: L<W>,
    pub lambda: L<W>,
    /// λη² and 2λημ: the penalty's stiffness and damping factors.
    pub lambda_eta2: L<W>,
    pub lambda_2etamu: L<W>,
    pub leg_length: L<W>,
    pub x_t: L<W>,
    pub epsilon: L<W>,
    /// Woodbury column scales: √(λ(1 + 2hημ)) (constraint), √(h K_p) (servo), √(h ν)
    /// (tip friction).
    pub s_constraint: L<W>,
    pub s_friction: L<W>,
    /// Per leg: K_p where the servo acts, else 0 (so passive legs need no branch),
    /// and its Woodbury column scale √(h K_p).
    pub k_p_leg: Vec<L<W>>,
    pub s_servo_leg: Vec<L<W>>,
    pub omega_leg: Vec<L<W>>,
    pub alpha: L<W>,
    pub beta: L<W>,
    pub l_alpha: L<W>,
    pub l_beta: L<W>,
    /// Body points B_1..B_{N+2} and contact points P_1, P_2 in the body frame.
    pub b_points: Vec<[L<W>; 2]>,
    pub p_points: [[L<W>; 2]; 2],
    pub body_mass: L<W>,
    pub inertia: L<W>,
    pub g: L<W>,
    pub zeta: L<W>,
    /// ζℓ²: the body's rotational damping.
    pub zeta_l2: L<W>,
}

impl<const W: usize> BlockModel<W> {
    /// The block of `robots` (all of one shape) with steps `h` and implicitness θ.
    /// Lanes beyond `robots.len()` repeat the first robot (padding).
    pub fn new(robots: &[&Robot], h: &[f64], theta: &[f64]) -> Self {
        assert!(!robots.is_empty() && robots.len() <= W && h.len() == robots.len());
        let lane = |j: usize| j.min(robots.len() - 1);
        let r: [&Robot; W] = std::array::from_fn(|j| robots[lane(j)]);
        let hs: [f64; W] = std::array::from_fn(|j| h[lane(j)]);
        let th: [f64; W] = std::array::from_fn(|j| theta[lane(j)]);
        let (n_legs, n_nodes) = (r[0].n_legs, r[0].n_nodes);
        assert!(r.iter().all(|x| x.n_legs == n_legs && x.n_nodes == n_nodes));
        let per = |f: &dyn Fn(usize) -> f64| L(std::array::from_fn(f));
        let par = |f: &dyn Fn(&crate::params::Params) -> f64| per(&|j| f(&r[j].p));
        let m = 2 * n_nodes;
        let kicks: Vec<KickConstants> = (0..W)
            .map(|j| KickConstants::new(r[j], hs[j], th[j]))
            .collect();
        let p_inv = (0..m * m).map(|e| per(&|j| kicks[j].p_inv.a[e])).collect();
        let h = L(hs);
        let lambda = par(&|p| p.lambda);
        let eta = par(&|p| p.eta);
        let mu = par(&|p| p.mu);
        let k_pen = h * eta * mu * 2.0;
        let inertia_share = par(&|p| p.rho) / (par(&|p| p.rho) + h * par(&|p| p.zeta));
        let theta_h = (L::splat(1.0) - inertia_share) * L(th) * h;
        let k_p_leg: Vec<L<W>> = (0..n_legs)
            .map(|i| per(&|j| if r[j].p.actuated[i] { r[j].p.k_p } else { 0.0 }))
            .collect();
        BlockModel {
            n_legs,
            n_nodes,
            bending: Banded::new(&std::array::from_fn(|j| &r[j].fe.bending), n_nodes),
            geometric: Banded::new(&std::array::from_fn(|j| &r[j].fe.geometric), n_nodes),
            weight_impulse: (0..m)
                .map(|k| per(&|j| hs[j] * r[j].p.rho * r[j].p.g * r[j].fe.load[k]))
                .collect(),
            p_inv,
            h,
            theta_h,
            half_h2: h * h * 0.5,
            touchdown_old: (k_pen + 1.5) / (k_pen + 1.0),
            explicit_bending: theta_h.0.iter().all(|&x| x == 0.0),
            inertia_share,
            k_m: par(&|p| p.k_m),
            lambda,
            lambda_eta2: lambda * eta * eta,
            lambda_2etamu: lambda * eta * mu * 2.0,
            leg_length: par(&|p| p.leg_length),
            x_t: par(&|p| p.x_t),
            epsilon: par(&|p| p.epsilon),
            s_constraint: (lambda * (h * eta * mu * 2.0 + 1.0)).sqrt(),
            s_friction: (h * par(&|p| p.nu)).sqrt(),
            k_p_leg: k_p_leg.clone(),
            s_servo_leg: k_p_leg.iter().map(|&k| (h * k).sqrt()).collect(),
            omega_leg: (0..n_legs).map(|i| per(&|j| r[j].p.leg_omega(i))).collect(),
            alpha: par(&|p| p.alpha),
            beta: par(&|p| p.beta),
            l_alpha: par(&|p| p.l_alpha),
            l_beta: par(&|p| p.l_beta),
            b_points: (0..n_legs + 2)
                .map(|b| [0, 1].map(|c| per(&|j| r[j].body.b_points[b][c])))
                .collect(),
            p_points: [0, 1].map(|pt| [0, 1].map(|c| per(&|j| r[j].body.p_points[pt][c]))),
            body_mass: par(&|p| p.body_mass),
            inertia: per(&|j| r[j].body.inertia),
            g: par(&|p| p.g),
            zeta: par(&|p| p.zeta),
            zeta_l2: par(&|p| p.zeta * p.leg_length * p.leg_length),
        }
    }
}
