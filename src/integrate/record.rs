//! The per-instance record of the fixed-step kick: everything the batch kernels read
//! about one robot, built once from its [`Robot`], step h and bending implicitness θ.
//!
//! - the parameters flagged `kernel` in the table of src/params.rs ([`KernelParams`]);
//! - the step-dependent constants derived from them ([`Derived`], declared below);
//! - the per-leg constants ([`LegConstants`]);
//! - the matrix set of one leg ([`MatrixSet`]): bending, geometric, P⁻¹, load, and the
//!   internal couple's quadrature where the instance has a couple.
//!
//! The lane kernel's [`BlockModel`](super::lanes::model::BlockModel) gathers W records
//! into SIMD lanes; the GPU host writes the same members, in the same order, into the
//! WGSL `Instance` and `LegParams` structs, whose declarations it generates from the
//! same name lists. A derived constant is therefore written once, here, in f64.

use crate::model::axoneme::{self, CoupleMatrices};
use crate::model::hermite::{BandLdlt, Dense};
use crate::model::terrain::{Profile, HARMONICS};
use crate::model::Robot;
use crate::params::KernelParams;

/// Declares a struct of named per-instance members generic over the value type (f64
/// for one instance, a lane vector for a block), with its member names in order, its
/// values in that order, and the gather of many instances into lanes. Each member is
/// `name = |context| value`.
macro_rules! constants {
    ($(#[$sdoc:meta])* $ty:ident, $ctx:ident: $cty:ty;
     $( $(#[$doc:meta])* $name:ident = $value:expr; )*) => {
        $(#[$sdoc])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $ty<T> {
            $( $(#[$doc])* pub $name: T, )*
        }

        impl<T: Copy> $ty<T> {
            /// Member names, in declaration order.
            pub const NAMES: &'static [&'static str] = &[ $( stringify!($name), )* ];

            /// Member values, in the order of [`Self::NAMES`].
            pub fn values(&self) -> Vec<T> {
                vec![ $( self.$name, )* ]
            }
        }

        impl $ty<f64> {
            /// Every member gathered across `lanes` by `lane_vector` (given `j ↦ value
            /// of lane j`), e.g. into one SIMD vector per member.
            pub fn gather<U>(lanes: &[Self], lane_vector: impl Fn(&dyn Fn(usize) -> f64) -> U) -> $ty<U> {
                $ty { $( $name: lane_vector(&|j| lanes[j].$name), )* }
            }

            fn build($ctx: $cty) -> Self {
                $ty { $( $name: $value, )* }
            }
        }
    };
}

/// What the derived members are computed from.
pub struct Context<'a> {
    pub robot: &'a Robot,
    pub h: f64,
    pub form: KickForm,
}

/// How the kick takes its terms: the bending's implicitness θ, and whether its velocity
/// terms are centred on the step (`DkdSettings::centres_velocity_terms`): the drag ζ of
/// the legs and the body by the trapezoidal rule, half at the incoming velocity and half
/// at the new one, rather than all at the new one; and the basal servo's gradient ∇ψ at
/// the step's end, q + (h/2)v, the middle of the drift its new velocity drives, rather
/// than at the midpoint. Each uncentred term is a first-order error of the scheme
/// (docs/integrators.md, "The observed order").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KickForm {
    pub theta: f64,
    pub centred: bool,
}

impl Context<'_> {
    /// k = 2hημ: the penalty damping's share of one step.
    fn k_pen(&self) -> f64 {
        let p = &self.robot.p;
        self.h * p.eta * p.mu * 2.0
    }

    /// K_p on leg `i` where the basal servo acts, else 0.
    fn servo_gain(&self, i: usize) -> f64 {
        let p = &self.robot.p;
        if p.actuated[i] {
            p.k_p
        } else {
            0.0
        }
    }

    /// The terrain's harmonic m (0-based) as the coefficients (a, b) of sin(mθ) and
    /// cos(mθ), θ = k·u: Aₘ sin(mθ + φₘ) = Aₘ cos φₘ·sin mθ + Aₘ sin φₘ·cos mθ
    /// ((0, 0) beyond the profile's harmonics).
    fn harmonic(&self, m: usize) -> [f64; 2] {
        harmonic(&self.robot.terrain, m)
    }

    /// A drag impulse factor h·c split into its parts at the new velocity and at the
    /// incoming one: (s·hc, (1 − s)·hc), s = 1 (backward Euler), or ½ (the trapezoidal
    /// rule) where the velocity terms are centred. At s = 1 the parts are hc and 0
    /// exactly.
    fn drag_split(&self, c: f64) -> [f64; 2] {
        let s = if self.form.centred { 0.5 } else { 1.0 };
        [s * self.h * c, (1.0 - s) * self.h * c]
    }

    /// a = (ρ − (1 − s)hζ)/(ρ + s·hζ), s the drag's new share (a = ρ/(ρ + hζ) at s = 1):
    /// the kick's inertia term (ρ − (1 − s)hζ)Mv is a·Pv − aθh²K_M·Kv − a·hC_b·E₁v.
    fn inertia_share(&self) -> f64 {
        let p = &self.robot.p;
        let [new, old] = self.drag_split(p.zeta);
        (p.rho - old) / (p.rho + new)
    }

    /// ζℓ²: the body's rotational damping.
    fn zeta_l2(&self) -> f64 {
        let p = &self.robot.p;
        p.zeta * p.leg_length * p.leg_length
    }

    /// C_b = 2c_α + c_β: the damping of the three springs at every leg base (two α and
    /// one β springs at each, the end legs' outer α springs included; N ≥ 2).
    fn base_damping(&self) -> f64 {
        let p = &self.robot.p;
        2.0 * p.alpha_damping + p.beta_damping
    }
}

/// Harmonic m (0-based) of `t` as the coefficients (a, b) of sin(mθ) and cos(mθ)
/// ([`Context::harmonic`]).
fn harmonic(t: &Profile, m: usize) -> [f64; 2] {
    match (t.amp.get(m), t.phase.get(m)) {
        (Some(&amp), Some(phase)) => {
            let (s, c) = phase.sin_cos();
            [amp * c, amp * s]
        }
        _ => [0.0; 2],
    }
}

constants! {
    /// Constants derived from the parameters, the step and the implicitness.
    Derived, c: &Context;
    /// The fixed step h (s).
    h = c.h;
    /// a = (ρ − (1 − s)hζ)/(ρ + s·hζ), s the drag's share at the new velocity (a =
    /// ρ/(ρ + hζ) uncentred): P⁻¹(ρ − (1 − s)hζ)Mv = a·v − aθh²K_M·P⁻¹Kv
    /// (docs/integrators.md).
    inertia_share = c.inertia_share();
    /// θ'h = (1 − a)θh: the kick's bending is taken at q − θ'hv once its inertia term
    /// has been rewritten through P.
    theta_h = (1.0 - c.inertia_share()) * c.form.theta * c.h;
    /// λη² and 2λημ: the penalty's stiffness and damping factors.
    lambda_eta2 = c.robot.p.lambda * c.robot.p.eta * c.robot.p.eta;
    lambda_2etamu = c.robot.p.lambda * c.robot.p.eta * c.robot.p.mu * 2.0;
    /// Woodbury column scales √(λ(1 + 2hημ)) (constraint) and √(hν) (tip friction).
    s_constraint = (c.robot.p.lambda * (c.k_pen() + 1.0)).sqrt();
    s_friction = (c.h * c.robot.p.nu).sqrt();
    /// ½h², and b = (3/2 + k)/(1 + k), k = 2hημ: the touchdown correction's shift of
    /// the midpoint and its weight of the old vᵀGv.
    half_h2 = c.h * c.h * 0.5;
    touchdown_old = (c.k_pen() + 1.5) / (c.k_pen() + 1.0);
    /// (1 − a)·C_b: the kick takes the dampers at each base as C_b·I implicit (in P) and
    /// the rest explicit; this is the explicit share's C_b·v_base net of the inertia
    /// term's −a·C_b·v_base (docs/integrators.md, "The coupling's dampers").
    base_damping_explicit = (1.0 - c.inertia_share()) * c.base_damping();
    /// The body's drag impulse factors at the new velocity, s·hζ and s·hζℓ² (s the
    /// drag's new share, [`KickForm::centred`]), and at the incoming one, (1 − s)·hζ and
    /// (1 − s)·hζℓ²: (m + s·hζ)v⁺ = (m − (1 − s)hζ)v + h·F, and ζℓ² for the rotation.
    body_drag = c.drag_split(c.robot.p.zeta)[0];
    body_drag_old = c.drag_split(c.robot.p.zeta)[1];
    body_turn_drag = c.drag_split(c.zeta_l2())[0];
    body_turn_drag_old = c.drag_split(c.zeta_l2())[1];
    /// How far ahead of the midpoint the servo takes its gradient ∇ψ, along the incoming
    /// velocity: h/2 where the velocity terms are centred (the step's end), else 0.
    servo_lead = if c.form.centred { 0.5 * c.h } else { 0.0 };
    /// The body's moment of inertia I_b.
    inertia = c.robot.body.inertia;
    /// Body-frame anchors B_1 and B_{N+2} of the end springs.
    b_first_x = c.robot.body.b_points[0][0];
    b_first_y = c.robot.body.b_points[0][1];
    b_last_x = c.robot.body.b_points[c.robot.n_legs + 1][0];
    b_last_y = c.robot.body.b_points[c.robot.n_legs + 1][1];
    /// Body-frame contact points P_1, P_2.
    p_first_x = c.robot.body.p_points[0][0];
    p_first_y = c.robot.body.p_points[0][1];
    p_second_x = c.robot.body.p_points[1][0];
    p_second_y = c.robot.body.p_points[1][1];
    /// The terrain profile (docs/model.md (T1)): h_p(u) = s·u + Σₘ (aₘ sin mθ + bₘ cos mθ),
    /// θ = k·u, u = y − y₀, blended in over 1/inv_blend. Flat ground is all zeros.
    terrain_slope = c.robot.terrain.slope;
    terrain_k = c.robot.terrain.k;
    terrain_start = c.robot.terrain.start;
    terrain_inv_blend = 1.0 / c.robot.terrain.blend;
    terrain_a1 = c.harmonic(0)[0];
    terrain_a2 = c.harmonic(1)[0];
    terrain_a3 = c.harmonic(2)[0];
    terrain_a4 = c.harmonic(3)[0];
    terrain_a5 = c.harmonic(4)[0];
    terrain_a6 = c.harmonic(5)[0];
    terrain_a7 = c.harmonic(6)[0];
    terrain_a8 = c.harmonic(7)[0];
    terrain_b1 = c.harmonic(0)[1];
    terrain_b2 = c.harmonic(1)[1];
    terrain_b3 = c.harmonic(2)[1];
    terrain_b4 = c.harmonic(3)[1];
    terrain_b5 = c.harmonic(4)[1];
    terrain_b6 = c.harmonic(5)[1];
    terrain_b7 = c.harmonic(6)[1];
    terrain_b8 = c.harmonic(7)[1];
}

impl<T: Copy> Derived<T> {
    /// The terrain's harmonic coefficients (aₘ, bₘ), m = 1..8.
    pub fn terrain_harmonics(&self) -> [[T; 2]; HARMONICS] {
        [
            [self.terrain_a1, self.terrain_b1],
            [self.terrain_a2, self.terrain_b2],
            [self.terrain_a3, self.terrain_b3],
            [self.terrain_a4, self.terrain_b4],
            [self.terrain_a5, self.terrain_b5],
            [self.terrain_a6, self.terrain_b6],
            [self.terrain_a7, self.terrain_b7],
            [self.terrain_a8, self.terrain_b8],
        ]
    }
}

constants! {
    /// Constants of one leg.
    LegConstants, c: (&Context, usize);
    /// Target rate ω_i (rad/s).
    omega = c.0.robot.p.leg_omega(c.1);
    /// K_p where the basal servo acts, else 0 (passive legs need no branch).
    k_p = c.0.servo_gain(c.1);
    /// The servo's Woodbury column scale √(h·k_p) (0 on a passive leg).
    s_servo = (c.0.h * c.0.servo_gain(c.1)).sqrt();
    /// Body-frame anchor B_{i+1} of the leg's β spring.
    b_point_x = c.0.robot.body.b_points[c.1 + 1][0];
    b_point_y = c.0.robot.body.b_points[c.1 + 1][1];
    /// The internal couple: amplitude f_A·A_i (0 where the leg's motors are off), and
    /// cos, sin of the leg's phase offset (i−1)Δφ_A, so that a step needs one sincos of
    /// ω_A t for every leg (cos θ_i = cos ω_At·cos φ_i − sin ω_At·sin φ_i).
    axo_amp = axoneme::amplitude(&c.0.robot.p, c.1);
    axo_cos = axoneme::phase(&c.0.robot.p, c.1, 0.0).cos();
    axo_sin = axoneme::phase(&c.0.robot.p, c.1, 0.0).sin();
}

/// The matrices of one leg's component block (m = 2n unknowns, row-major): instances
/// with equal sets share one on the GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixSet {
    pub bending: Dense,
    pub geometric: Dense,
    /// P⁻¹, P = (ρ + s·hζ)M + θh²K_M·K + hC_b·E₁ (s the drag's share at the new
    /// velocity; E₁: the base node's value unknown).
    pub p_inv: Dense,
    /// P's band LDLᵀ (the cpu kick solves with it; the GPU's multiplies by P⁻¹).
    pub p_factor: BandLdlt,
    /// ∫H of one component (gravity acts on the X component).
    pub load: Vec<f64>,
    /// The internal couple's B_c, B_s, where a leg of the instance has the couple.
    pub couple: Option<CoupleMatrices>,
}

impl MatrixSet {
    fn new(c: &Context) -> MatrixSet {
        let (robot, h, theta) = (c.robot, c.h, c.form.theta);
        let p = &robot.p;
        let m = 2 * robot.n_nodes;
        let mut pm = Dense::zeros(m);
        pm.nodes = robot.fe.mass.nodes;
        let [drag, _] = c.drag_split(p.zeta);
        for i in 0..m * m {
            pm.a[i] =
                (p.rho + drag) * robot.fe.mass.a[i] + theta * h * h * p.k_m * robot.fe.bending.a[i];
        }
        // The coupling's dampers at the base (a_1 in X, c_1 in Y), implicit: hC_b on the
        // base's diagonal entry (0 without dampers).
        if c.base_damping() != 0.0 {
            pm.a[0] += h * c.base_damping();
        }
        MatrixSet {
            bending: robot.fe.bending.clone(),
            geometric: robot.fe.geometric.clone(),
            p_inv: pm.inverse().expect("P is SPD: ρ > 0 (checked), ζ, θ ≥ 0"),
            p_factor: BandLdlt::new(&pm).expect("P is SPD: ρ > 0 (checked), ζ, θ ≥ 0"),
            load: robot.fe.load.clone(),
            couple: axoneme::has_couple(p).then(|| CoupleMatrices::new(p)),
        }
    }

    /// The set's identity: the bits of every entry (equal keys, equal matrices).
    pub fn key(&self) -> Vec<u64> {
        let couple = self.couple.iter().flat_map(|c| [&c.cos.a, &c.sin.a]);
        [
            &self.bending.a,
            &self.geometric.a,
            &self.p_inv.a,
            &self.load,
        ]
        .into_iter()
        .chain(couple)
        .flatten()
        .map(|x| x.to_bits())
        .collect()
    }
}

/// Everything the batch kernels read about one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceRecord {
    pub n_legs: usize,
    pub n_nodes: usize,
    pub params: KernelParams<f64>,
    pub derived: Derived<f64>,
    pub legs: Vec<LegConstants<f64>>,
    pub matrices: MatrixSet,
    /// The terrain is the paper's flat line (`Profile::is_flat`).
    flat: bool,
    /// Harmonics of the terrain in use (`Profile::harmonics`).
    harmonics: usize,
    /// The coefficients (aₘ, bₘ) of the harmonics beyond the [`HARMONICS`] in
    /// [`Derived`] (m = 9..M of a rough profile with more modes; empty otherwise).
    pub terrain_extra: Vec<[f64; 2]>,
}

impl InstanceRecord {
    /// The record of `robot` stepped with h and bending implicitness θ, its velocity
    /// terms uncentred (`dkd-dc`'s kick).
    pub fn new(robot: &Robot, h: f64, theta: f64) -> InstanceRecord {
        Self::with_form(
            robot,
            h,
            KickForm {
                theta,
                centred: false,
            },
        )
    }

    /// The record of `robot` stepped with h under the kick's `form`.
    pub fn with_form(robot: &Robot, h: f64, form: KickForm) -> InstanceRecord {
        let c = Context { robot, h, form };
        let profile = Profile::new(&robot.p);
        InstanceRecord {
            n_legs: robot.n_legs,
            n_nodes: robot.n_nodes,
            params: KernelParams::of(&robot.p),
            derived: Derived::build(&c),
            legs: (0..robot.n_legs)
                .map(|i| LegConstants::build((&c, i)))
                .collect(),
            matrices: MatrixSet::new(&c),
            flat: profile.is_flat(),
            harmonics: profile.harmonics(),
            terrain_extra: (HARMONICS..profile.harmonics())
                .map(|m| harmonic(&profile, m))
                .collect(),
        }
    }

    pub fn h(&self) -> f64 {
        self.derived.h
    }

    /// Whether a leg of the instance has the internal couple.
    pub fn has_couple(&self) -> bool {
        self.matrices.couple.is_some()
    }

    /// Harmonics of the terrain in use (`Profile::harmonics`: 0 for flat ground and for
    /// a slope).
    pub fn terrain_harmonics(&self) -> usize {
        self.harmonics
    }

    /// Whether the terrain is the paper's flat line (`Profile::is_flat`).
    pub fn terrain_is_flat(&self) -> bool {
        self.flat
    }

    /// Whether the coupling's law is other than the paper's linear springs.
    pub fn has_coupling_law(&self) -> bool {
        let p = &self.params;
        p.alpha_cubic != 0.0
            || p.beta_cubic != 0.0
            || p.alpha_damping != 0.0
            || p.beta_damping != 0.0
    }

    /// Whether the instance stands on anything but the paper's ground: a profile that is
    /// not flat, or Coulomb friction at the tips. Without either the kick's contact is
    /// the paper's (17) and skips the terrain and the friction's linearisation.
    pub fn has_ground(&self) -> bool {
        !self.flat || self.params.mu_c != 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;

    /// The uncentred form is `dkd-dc`'s kick to the bit: the drag all at the new velocity
    /// (a = ρ/(ρ + hζ), the body's m + hζ), none of it at the incoming one, and the servo's
    /// gradient at the midpoint. The centred form splits the drag in halves and leads the
    /// gradient by h/2.
    #[test]
    fn the_kick_forms_take_the_drag_and_the_servo_as_stated() {
        let p = Params {
            zeta: 7.0,
            rho: 1.3,
            ..Params::default()
        };
        let robot = Robot::new(&p);
        let h = 3e-4;
        let plain = InstanceRecord::new(&robot, h, 0.25).derived;
        let turn = h * (p.zeta * p.leg_length * p.leg_length);
        assert_eq!(plain.inertia_share, p.rho / (p.rho + h * p.zeta));
        assert_eq!([plain.body_drag, plain.body_turn_drag], [h * p.zeta, turn]);
        assert_eq!(
            [
                plain.body_drag_old,
                plain.body_turn_drag_old,
                plain.servo_lead
            ],
            [0.0; 3]
        );
        let form = KickForm {
            theta: 0.25,
            centred: true,
        };
        let centred = InstanceRecord::with_form(&robot, h, form).derived;
        let half = 0.5 * h * p.zeta;
        assert!((centred.inertia_share - (p.rho - half) / (p.rho + half)).abs() < 1e-15);
        assert_eq!(centred.body_drag, centred.body_drag_old);
        assert!((centred.body_drag - half).abs() < 1e-18);
        assert_eq!(centred.body_turn_drag, centred.body_turn_drag_old);
        assert!((centred.body_turn_drag - 0.5 * turn).abs() < 1e-18);
        assert_eq!(centred.servo_lead, 0.5 * h);
    }
}
