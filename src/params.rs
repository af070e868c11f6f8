//! Every parameter of the model (docs/model.md) in one type, with the paper's run as defaults.
//!
//! The scalar fields are declared once in [`define_params!`]: that single table
//! generates the struct, its defaults, units, allowed ranges, `--set` parsing and
//! the typed columns that sweeps and Parquet outputs use. Angles are in radians
//! (a value may be written `90deg` wherever a parameter is parsed from text).

use std::f64::consts::FRAC_PI_2;

use serde::{Deserialize, Serialize};

use crate::error::{DerivedValue, ParamError};

/// Largest magnitude any scalar parameter may take, in its SI unit, and the smallest a
/// strictly positive one may take. Within these, the products the model forms (the leg's
/// mass matrix ρ·Δs³, its bending matrix K_M/Δs³, a step's h²·stiffness) stay many
/// orders of magnitude inside f64's normal range, so its matrices always invert; what
/// remains possible (a stiff leg needing a tiny step) is caught by the derived checks
/// ([`Params::check_derived`], the run's step and cost estimate).
pub const SCALE_MAX: f64 = 1e12;
/// See [`SCALE_MAX`].
pub const SCALE_MIN: f64 = 1e-12;

/// Allowed range of a scalar parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// A finite value of magnitude at most [`SCALE_MAX`].
    Finite,
    /// Strictly positive: in [[`SCALE_MIN`], [`SCALE_MAX`]].
    Positive,
    /// Zero or positive: in [0, [`SCALE_MAX`]].
    NonNegative,
    /// Integer in `[lo, hi]`.
    Int(usize, usize),
    /// A finite value in `[lo, hi]`: the physical range the model describes (a
    /// rotation rate beyond it, a terrain higher than it, leave the model's validity;
    /// docs/model.md, "Range of validity").
    Physical(f64, f64),
}

/// Largest basal or motor rotation rate (rad/s, either sign): 10⁴ rad/s, some 1600
/// turns a second, four orders of magnitude above the paper's 0.5 rad/s.
pub const MAX_RATE: f64 = 1e4;
/// Largest angle (rad, either sign) taken as an initial angle or phase: beyond it an
/// angle's sine keeps fewer than 10 significant digits.
pub const MAX_ANGLE: f64 = 1e6;
/// Largest terrain height (m): a thousand leg lengths of the paper's robot.
pub const MAX_TERRAIN_HEIGHT: f64 = 1e3;
/// Largest distance along y (m) where a terrain profile may start.
pub const MAX_DISTANCE: f64 = 1e6;

impl Range {
    /// The closed interval of admitted values.
    pub fn bounds(&self) -> (f64, f64) {
        match *self {
            Range::Finite => (-SCALE_MAX, SCALE_MAX),
            Range::Positive => (SCALE_MIN, SCALE_MAX),
            Range::NonNegative => (0.0, SCALE_MAX),
            Range::Int(lo, hi) => (lo as f64, hi as f64),
            Range::Physical(lo, hi) => (lo, hi),
        }
    }

    pub fn describe(&self) -> String {
        let (lo, hi) = self.bounds();
        match self {
            Range::Int(lo, hi) => format!("an integer in [{lo}, {hi}]"),
            Range::Finite => format!("a finite number in [{}, {}]", short(lo), short(hi)),
            Range::Positive => format!("a finite number > 0 in [{}, {}]", short(lo), short(hi)),
            Range::NonNegative => format!("a finite number >= 0, at most {}", short(hi)),
            Range::Physical(..) => format!("a finite number in [{}, {}]", short(lo), short(hi)),
        }
    }

    /// What a value outside the range breaks (the error's last words).
    pub fn breaks(&self) -> &'static str {
        match self {
            Range::Int(..) => "",
            Range::Physical(..) => "outside the range the model describes",
            _ => "beyond the model's scale its matrices and steps leave what f64 resolves",
        }
    }

    fn admits(&self, x: f64) -> bool {
        let (lo, hi) = self.bounds();
        let inside = x.is_finite() && x >= lo && x <= hi;
        match self {
            Range::Int(..) => inside && x.fract() == 0.0,
            _ => inside,
        }
    }
}

/// A bound as people write it: 1e9, 0.5, -1e9.
fn short(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-3) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Static description of one scalar parameter.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub unit: &'static str,
    pub range: Range,
    pub doc: &'static str,
}

/// Most legs a robot may have (GPU workgroups hold one thread per leg).
pub const MAX_LEGS: usize = 64;
/// Most nodes per leg (CPU stack buffers hold 4 * MAX_NODES unknowns; the GPU kernel keeps
/// 8n reals per invocation, within its private budget up to this n: src/gpu/budget.rs).
pub const MAX_NODES: usize = 12;
/// Most modes of the `rough` terrain (`terrain_modes`).
pub const MAX_TERRAIN_MODES: usize = 256;

macro_rules! define_params {
    ($( $name:ident : $ty:ident = $default:expr, $unit:literal, $range:expr, $doc:literal $(, $kernel:ident)?; )*) => {
        /// All model parameters (docs/model.md's names, snake_case, SI units, radians).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Params {
            $( #[doc = $doc] pub $name: $ty, )*
            /// Per-leg actuation mask (1 = basal servo on). Defaults to every leg.
            pub actuated: Vec<bool>,
            /// Explicit initial basal angles (rad), one per leg; overrides psi1 + (i-1) dphi.
            pub psi_init: Option<Vec<f64>>,
            /// Per-leg target rates (rad/s); overrides omega leg by leg.
            pub omega_legs: Option<Vec<f64>>,
            /// Per-leg mask of the internal couple (1 = the leg's motors act); `None`:
            /// every leg.
            pub axo_actuated: Option<Vec<bool>>,
            /// The terrain's profile (flat: the paper's line x = X_t).
            pub terrain: TerrainKind,
        }

        impl Default for Params {
            fn default() -> Self {
                let n_legs = 9;
                Params {
                    $( $name: $default, )*
                    actuated: vec![true; n_legs],
                    psi_init: None,
                    omega_legs: None,
                    axo_actuated: None,
                    terrain: TerrainKind::Flat,
                }
            }
        }

        /// The scalar parameters the batch kernels read per instance (rows flagged
        /// `kernel`), in declaration order. `T` is `f64` for one instance
        /// ([`KernelParams::of`]) and a SIMD lane vector for a block of them
        /// ([`KernelParams::gather`]); the GPU's `Instance` struct takes its leading
        /// members from [`KernelParams::NAMES`] (src/integrate/record.rs).
        pub struct KernelParams<T> {
            $( $( #[doc = $doc] pub $name: define_params!(@member T $kernel), )? )*
        }

        // Written out: `derive` does not see through the member type's macro.
        impl<T: Copy> Clone for KernelParams<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T: Copy> Copy for KernelParams<T> {}
        impl<T: Copy + PartialEq> PartialEq for KernelParams<T> {
            fn eq(&self, other: &Self) -> bool {
                self.values() == other.values()
            }
        }
        impl<T: Copy + std::fmt::Debug> std::fmt::Debug for KernelParams<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut d = f.debug_struct("KernelParams");
                for (name, value) in Self::NAMES.iter().zip(self.values()) {
                    d.field(name, &value);
                }
                d.finish()
            }
        }

        impl<T: Copy> KernelParams<T> {
            /// Member names, in declaration order.
            pub const NAMES: &'static [&'static str] = &[
                $( $( define_params!(@name $name $kernel), )? )*
            ];

            /// Member values, in the order of [`Self::NAMES`].
            pub fn values(&self) -> Vec<T> {
                let s = self;
                vec![ $( $( define_params!(@get s $name $kernel), )? )* ]
            }
        }

        impl KernelParams<f64> {
            /// The kernel's parameters of one instance.
            pub fn of(p: &Params) -> Self {
                KernelParams { $( $( $name: define_params!(@get p $name $kernel) as f64, )? )* }
            }

            /// Every member gathered across `lanes` by `lane_vector` (given member `j ↦
            /// value of lane j`), e.g. into one SIMD vector per member.
            pub fn gather<U>(lanes: &[Self], lane_vector: impl Fn(&dyn Fn(usize) -> f64) -> U) -> KernelParams<U> {
                KernelParams { $( $( $name: define_params!(@lanes lane_vector lanes $name $kernel), )? )* }
            }
        }

        /// The scalar parameters, in declaration order.
        pub const SCALAR_PARAMS: &[ParamSpec] = &[
            $( ParamSpec { name: stringify!($name), unit: $unit, range: $range, doc: $doc }, )*
        ];

        impl Params {
    /// Whether a spring kind has a Kelvin–Voigt damper (the coupling's dampers couple
    /// each base's acceleration to its neighbours' and the body's velocities).
    pub fn has_coupling_dampers(&self) -> bool {
        self.alpha_damping != 0.0 || self.beta_damping != 0.0
    }

    /// Whether the coupling's law is other than the paper's linear springs.
    pub fn has_coupling_law(&self) -> bool {
        self.has_coupling_dampers() || self.alpha_cubic != 0.0 || self.beta_cubic != 0.0
    }

            /// Value of a scalar parameter as f64 (integers converted), by name.
            pub fn scalar(&self, name: &str) -> Option<f64> {
                match name {
                    $( stringify!($name) => Some(self.$name as f64), )*
                    _ => None,
                }
            }

            /// Set a scalar parameter from an f64, checking integrality for integer fields.
            pub fn set_scalar(&mut self, name: &str, x: f64) -> Result<(), ParamError> {
                match name {
                    $( stringify!($name) => { self.$name = define_params!(@cast $ty, name, x)?; Ok(()) } )*
                    _ => Err(unknown_param(name)),
                }
            }
        }
    };
    (@cast usize, $name:expr, $x:expr) => {
        if $x.fract() == 0.0 && (0.0..=1e9).contains(&$x) { Ok($x as usize) } else {
            Err(ParamError::NotInteger {
                field: $name.to_string(),
                value: $x,
                allowed: SCALAR_PARAMS
                    .iter()
                    .find(|s| s.name == $name)
                    .map(|s| s.range.describe())
                    .unwrap_or_else(|| "an integer".into()),
            })
        }
    };
    (@cast f64, $name:expr, $x:expr) => { Ok::<f64, ParamError>($x) };
    (@member $t:ident kernel) => { $t };
    (@name $name:ident kernel) => { stringify!($name) };
    (@get $s:ident $name:ident kernel) => { $s.$name };
    (@lanes $f:ident $lanes:ident $name:ident kernel) => { $f(&|j| $lanes[j].$name) };
}

// One row per scalar parameter; a trailing `kernel` puts it into the per-instance
// constants the batch kernels read ([`KernelParams`]: the lane kernel's block model and
// the GPU's `Instance` struct, both built from src/integrate/record.rs), nothing else
// needs to change there.
define_params! {
    n_legs: usize = 9, "1", Range::Int(2, MAX_LEGS), "Number of legs N.";
    n_nodes: usize = 5, "1", Range::Int(2, MAX_NODES), "Finite-element nodes per leg n.";
    t_final: f64 = 50.0, "s", Range::Positive, "Simulated time t_f.";
    leg_length: f64 = 1.0, "m", Range::Positive, "Leg length l.", kernel;
    filament_gap: f64 = 0.05, "m", Range::Positive, "Distance a between the two filaments of a leg: the internal couple is a·F.", kernel;
    rho: f64 = 1.0, "kg/m", Range::Positive, "Linear mass density of a leg.", kernel;
    k_m: f64 = 50.0, "N m^2", Range::Positive, "Bending stiffness K_M.", kernel;
    body_mass: f64 = 0.01, "kg", Range::Positive, "Body (payload) mass m.", kernel;
    zeta: f64 = 5.0, "N s/m", Range::NonNegative, "Viscous damping coefficient.", kernel;
    alpha: f64 = 500.0, "N/m", Range::Positive, "Stiffness of the leg-leg and end springs (alpha).", kernel;
    beta: f64 = 500.0, "N/m", Range::Positive, "Stiffness of the leg-body springs (beta).", kernel;
    l_alpha: f64 = 1.0, "m", Range::Positive, "Rest length of the alpha springs.", kernel;
    l_beta: f64 = 0.5, "m", Range::Positive, "Rest length of the beta springs.", kernel;
    alpha_cubic: f64 = 0.0, "N/m^3", Range::Finite, "Cubic term k3 of the alpha springs' force k(L0 - l) + k3(L0 - l)^3 (0: linear, the paper; > 0 stiffening, < 0 softening).", kernel;
    beta_cubic: f64 = 0.0, "N/m^3", Range::Finite, "Cubic term k3 of the beta springs' force (0: linear, the paper).", kernel;
    alpha_damping: f64 = 0.0, "N s/m", Range::NonNegative, "Kelvin-Voigt damping c of the alpha springs: force -c dl/dt along the spring (0: elastic, the paper).", kernel;
    beta_damping: f64 = 0.0, "N s/m", Range::NonNegative, "Kelvin-Voigt damping c of the beta springs (0: elastic, the paper).", kernel;
    tau_t: f64 = 1.0, "m", Range::Positive, "Body thickness tau_T.";
    tau_c: f64 = 0.2, "m", Range::NonNegative, "Body clearance tau_C.";
    x_t: f64 = 1.0, "m", Range::Positive, "Terrain position X_t (x points down).", kernel;
    omega: f64 = 0.5, "rad/s", Range::Physical(-MAX_RATE, MAX_RATE), "Target basal rotation rate omega.";
    k_p: f64 = 500.0, "N m s", Range::NonNegative, "Basal rate servo gain K_p.", kernel;
    epsilon: f64 = 1000.0, "N/m", Range::NonNegative, "Contact penalty stiffness.", kernel;
    nu: f64 = 200.0, "N s/m", Range::NonNegative, "Tip friction (viscous) coefficient.", kernel;
    lambda: f64 = 10000.0, "1", Range::Positive, "Inextensibility penalty constant lambda.", kernel;
    eta: f64 = 175.0, "1/s", Range::NonNegative, "Penalty natural frequency eta.", kernel;
    mu: f64 = 50.0, "1", Range::NonNegative, "Penalty damping ratio mu.", kernel;
    g: f64 = 9.81, "m/s^2", Range::NonNegative, "Gravity (along +x).", kernel;
    psi1: f64 = 0.0, "rad", Range::Physical(-MAX_ANGLE, MAX_ANGLE), "Initial basal angle of leg 1.";
    dphi: f64 = FRAC_PI_2, "rad", Range::Physical(-MAX_ANGLE, MAX_ANGLE), "Initial phase step between neighbouring legs.";
    phase_jitter: f64 = 0.0, "rad", Range::Physical(0.0, MAX_ANGLE), "Half-width sigma of the uniform offsets in [-sigma, sigma] added to each leg's initial angle psi1 + (i-1) dphi, drawn per run and written as psi_init (0: the exact wave).";
    axo_f: f64 = 0.0, "N/m", Range::Finite, "Amplitude f_A of the axonemal motor force density (0: no internal couple, the paper's run).", kernel;
    axo_omega: f64 = 0.5, "rad/s", Range::Physical(-MAX_RATE, MAX_RATE), "Angular frequency of the motor force wave.", kernel;
    axo_k: f64 = 0.0, "rad/m", Range::Finite, "Wavenumber k_A of the motor force wave along the leg (0: standing).", kernel;
    axo_dphi: f64 = 0.0, "rad", Range::Physical(-MAX_ANGLE, MAX_ANGLE), "Phase step of the motor force wave between neighbouring legs.", kernel;
    terrain_angle: f64 = 0.0, "rad", Range::Finite, "Slope angle of the `slope` terrain, and the tilt of the `sine` and `rough` ones (positive: uphill towards +y), |angle| <= 80deg.";
    terrain_height: f64 = 0.05, "m", Range::Physical(0.0, MAX_TERRAIN_HEIGHT), "Amplitude of the `sine` terrain; RMS height of the `rough` one.";
    terrain_wavelength: f64 = 2.0, "m", Range::Positive, "Wavelength of the `sine` terrain; longest wavelength of the `rough` one.";
    terrain_phase: f64 = 0.0, "rad", Range::Physical(-MAX_ANGLE, MAX_ANGLE), "Phase of the `sine` terrain.";
    terrain_seed: usize = 1, "1", Range::Int(0, 4_294_967_295), "Seed of the `rough` terrain's phases (SplitMix64).";
    terrain_modes: usize = 8, "1", Range::Int(1, MAX_TERRAIN_MODES), "Modes M of the `rough` terrain (harmonics of terrain_wavelength, amplitudes 1/m).";
    terrain_start: f64 = 5.0, "m", Range::Physical(-MAX_DISTANCE, MAX_DISTANCE), "Where the profile starts along y (flat ground before it).";
    terrain_blend: f64 = 1.0, "m", Range::Positive, "Length over which the profile blends in (C1) from flat ground.";
    mu_c: f64 = 0.0, "1", Range::NonNegative, "Coulomb friction coefficient at the leg tips (0: purely viscous, the paper).", kernel;
    v_c: f64 = 0.01, "m/s", Range::Positive, "Regularisation speed of the Coulomb friction (tanh(v_t/v_c)).", kernel;
}

/// The terrain's profile kind (docs/model.md, "Terrain"): a text choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TerrainKind {
    /// h = 0: the paper's line x = X_t.
    #[default]
    Flat,
    /// h = tan(terrain_angle)·u.
    Slope,
    /// h = terrain_height·sin(2πu/terrain_wavelength + terrain_phase).
    Sine,
    /// `terrain_modes` harmonics with SplitMix64 phases, RMS terrain_height.
    Rough,
}

impl TerrainKind {
    /// Every kind, in the order of the docs.
    pub const ALL: [TerrainKind; 4] = [
        TerrainKind::Flat,
        TerrainKind::Slope,
        TerrainKind::Sine,
        TerrainKind::Rough,
    ];

    /// The name used in files and on the command line.
    pub fn label(self) -> &'static str {
        match self {
            TerrainKind::Flat => "flat",
            TerrainKind::Slope => "slope",
            TerrainKind::Sine => "sine",
            TerrainKind::Rough => "rough",
        }
    }

    /// The kind named `text` (`terrain`'s allowed values otherwise).
    pub fn parse(text: &str) -> Result<TerrainKind, ParamError> {
        TerrainKind::ALL
            .into_iter()
            .find(|k| k.label() == text.trim())
            .ok_or_else(|| ParamError::BadValue {
                field: "terrain".into(),
                value: text.to_string(),
                expected: "one of flat, slope, sine, rough".into(),
            })
    }
}

/// Steepest slope the `slope` terrain takes (rad): beyond it the ground is a wall, which
/// a penalty along the normal with c = cos(angle) → 0 cannot carry.
pub const MAX_TERRAIN_ANGLE: f64 = 80.0 * std::f64::consts::PI / 180.0;

/// Smallest node spacing of a leg relative to the robot's size: f64 carries ~16 digits,
/// and an element's shape must keep at least 10 of them next to coordinates of that size.
pub const MIN_RELATIVE_SPACING: f64 = 1e-6;

/// The per-leg list parameters and the choice, by name (each a column of its own).
pub const ACTUATED: &str = "actuated";
pub const PSI_INIT: &str = "psi_init";
pub const OMEGA_LEGS: &str = "omega_legs";
pub const AXO_ACTUATED: &str = "axo_actuated";
pub const TERRAIN: &str = "terrain";
/// The jittered start's half-width (a scalar of the table, named where sweeps ask for it).
pub const PHASE_JITTER: &str = "phase_jitter";

/// Names accepted for the per-leg list parameters.
pub const LIST_PARAMS: &[&str] = &[ACTUATED, PSI_INIT, OMEGA_LEGS, AXO_ACTUATED];

/// Parameters that take a name from a fixed list (text in files and datasets).
pub const CHOICE_PARAMS: &[&str] = &[TERRAIN];

/// Whether `name` is a parameter written as text rather than one number: a per-leg list
/// or a choice.
pub fn is_text_param(name: &str) -> bool {
    LIST_PARAMS.contains(&name) || CHOICE_PARAMS.contains(&name)
}

/// The per-leg lists that are masks (0/1 per leg, or a mask name).
pub const MASK_PARAMS: &[&str] = &[ACTUATED, AXO_ACTUATED];

/// A parameter written as text (a per-leg list or a choice), for listings.
#[derive(Debug, Clone, Copy)]
pub struct TextParamSpec {
    pub name: &'static str,
    /// Unit of the list's entries ("1" for masks, "" for a choice).
    pub unit: &'static str,
    /// The default as written in a file.
    pub default: &'static str,
    /// What the value may be, in words.
    pub allowed: fn() -> String,
    pub doc: &'static str,
}

/// What a mask parameter may be: a mask name or one 0/1 per leg ([`parse_mask`]'s names).
fn mask_allowed() -> String {
    "all | none | first | every_other | one 0/1 per leg".into()
}

/// The text parameters' one-line descriptions (the order of [`LIST_PARAMS`], then
/// [`CHOICE_PARAMS`]).
pub const TEXT_PARAMS: &[TextParamSpec] = &[
    TextParamSpec {
        name: ACTUATED,
        unit: "1",
        default: "all",
        allowed: mask_allowed,
        doc: "Per-leg actuation mask (1 = basal servo on)",
    },
    TextParamSpec {
        name: PSI_INIT,
        unit: "rad",
        default: "(psi1 + (i-1) dphi)",
        allowed: || "one angle per leg".into(),
        doc: "Explicit initial basal angles; overrides psi1 + (i-1) dphi",
    },
    TextParamSpec {
        name: OMEGA_LEGS,
        unit: "rad/s",
        default: "(omega for every leg)",
        allowed: || "one rate per leg".into(),
        doc: "Per-leg target rates; overrides omega leg by leg",
    },
    TextParamSpec {
        name: AXO_ACTUATED,
        unit: "1",
        default: "all",
        allowed: mask_allowed,
        doc: "Per-leg mask of the internal couple (1 = the leg's motors act)",
    },
    TextParamSpec {
        name: TERRAIN,
        unit: "",
        default: "flat",
        allowed: || TerrainKind::ALL.map(TerrainKind::label).join(" | "),
        doc: "The terrain's profile (flat: the paper's line x = X_t)",
    },
];

/// One row of the parameter table (`metachron params`, the Python package's `params()`):
/// every field as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamRow {
    pub name: &'static str,
    pub unit: &'static str,
    /// The default as written in a file (empty where a scalar has none).
    pub default: String,
    /// The allowed values, in words.
    pub allowed: String,
    pub meaning: String,
}

/// The parameter table: every scalar parameter in declaration order, then the text
/// parameters.
pub fn table() -> Vec<ParamRow> {
    let defaults = Params::default();
    let scalars = SCALAR_PARAMS.iter().map(|s| ParamRow {
        name: s.name,
        unit: s.unit,
        default: defaults
            .scalar(s.name)
            .map_or(String::new(), |v| v.to_string()),
        allowed: s.range.describe(),
        meaning: s.doc.trim().to_string(),
    });
    let texts = TEXT_PARAMS.iter().map(|t| ParamRow {
        name: t.name,
        unit: t.unit,
        default: t.default.to_string(),
        allowed: (t.allowed)(),
        meaning: t.doc.to_string(),
    });
    scalars.chain(texts).collect()
}

impl Params {
    /// Check every field, then the values derived from several ([`Params::check_derived`]);
    /// the first violation is reported with its name, its allowed range and what it breaks.
    pub fn validate(&self) -> Result<(), ParamError> {
        for spec in SCALAR_PARAMS {
            let x = self.scalar(spec.name).expect("every spec has a field");
            if !spec.range.admits(x) {
                let breaks = spec.range.breaks();
                return Err(ParamError::OutOfRange {
                    field: spec.name.to_string(),
                    value: x,
                    allowed: if breaks.is_empty() {
                        spec.range.describe()
                    } else {
                        format!("{} ({breaks})", spec.range.describe())
                    },
                });
            }
        }
        let n = self.n_legs;
        for (field, len) in [
            ("actuated", Some(self.actuated.len())),
            ("axo_actuated", self.axo_actuated.as_ref().map(Vec::len)),
        ] {
            if let Some(len) = len.filter(|&len| len != n) {
                return Err(ParamError::WrongLength {
                    field: field.into(),
                    len,
                    n_legs: n,
                });
            }
        }
        for (field, list) in [
            ("psi_init", &self.psi_init),
            ("omega_legs", &self.omega_legs),
        ] {
            if let Some(list) = list {
                if list.len() != n {
                    return Err(ParamError::WrongLength {
                        field: field.into(),
                        len: list.len(),
                        n_legs: n,
                    });
                }
                let bound = if field == OMEGA_LEGS {
                    MAX_RATE
                } else {
                    MAX_ANGLE
                };
                if let Some(&x) = list.iter().find(|x| !(x.is_finite() && x.abs() <= bound)) {
                    return Err(ParamError::OutOfRange {
                        field: field.into(),
                        value: x,
                        allowed: format!(
                            "finite numbers in [{}, {}] (outside it the model does not hold)",
                            short(-bound),
                            short(bound)
                        ),
                    });
                }
            }
        }
        if self.terrain_angle.abs() > MAX_TERRAIN_ANGLE {
            return Err(ParamError::OutOfRange {
                field: "terrain_angle".into(),
                value: self.terrain_angle,
                allowed: "|terrain_angle| <= 80deg (1.396 rad): steeper ground is a wall the \
                          normal penalty cannot carry"
                    .into(),
            });
        }
        self.check_derived()
    }

    /// Size of the robot (m): the largest of its leg, its body's length and the terrain's
    /// distance, the scale of every coordinate it has.
    pub fn robot_size(&self) -> f64 {
        let body = 2.0 * self.tau_t + (self.n_legs as f64 + 1.0) * self.l_alpha;
        self.leg_length.max(body).max(self.x_t)
    }

    /// Values derived from several parameters: the node spacing of the leg's mesh must
    /// be resolved at the robot's size (coordinates are stored in f64 at that scale).
    /// The step and the sample count are checked with the run's settings
    /// (`crate::cost::check`).
    pub fn check_derived(&self) -> Result<(), ParamError> {
        let spacing = self.leg_length / (self.n_nodes as f64 - 1.0);
        let size = self.robot_size();
        if spacing < MIN_RELATIVE_SPACING * size {
            return Err(ParamError::Derived(Box::new(DerivedValue {
                field: "node spacing leg_length/(n_nodes - 1)".into(),
                value: spacing,
                allowed: format!(
                    ">= {MIN_RELATIVE_SPACING:e} x the robot's size ({size:e} m: the largest of \
                     leg_length, the body's length 2 tau_t + (n_legs + 1) l_alpha, and x_t)"
                ),
                breaks: "coordinates of that size keep fewer than 10 significant digits of \
                         one element's shape, and the leg's matrices lose theirs"
                    .into(),
                change: "raise leg_length or lower n_nodes".into(),
                inputs: vec!["leg_length", "n_nodes", "n_legs", "tau_t", "l_alpha", "x_t"],
            })));
        }
        Ok(())
    }

    /// Initial basal angle of leg `i` (0-based).
    pub fn initial_angle(&self, i: usize) -> f64 {
        match &self.psi_init {
            Some(list) => list[i],
            None => self.psi1 + i as f64 * self.dphi,
        }
    }

    /// The initial angles of a run whose start is jittered: the wave ψ_1 + (i−1)Δφ plus
    /// one offset per leg, `phase_jitter`·(2u − 1) with u uniform in [0, 1) from
    /// `uniform`. `None` without a jitter or when `psi_init` is given (it overrides the
    /// wave, jittered or not).
    pub fn jittered_start(&self, mut uniform: impl FnMut() -> f64) -> Option<Vec<f64>> {
        if self.phase_jitter == 0.0 || self.psi_init.is_some() {
            return None;
        }
        Some(
            (0..self.n_legs)
                .map(|i| self.initial_angle(i) + self.phase_jitter * (2.0 * uniform() - 1.0))
                .collect(),
        )
    }

    /// Target rate of leg `i` (0-based).
    pub fn leg_omega(&self, i: usize) -> f64 {
        match &self.omega_legs {
            Some(list) => list[i],
            None => self.omega,
        }
    }

    /// Whether leg `i`'s (0-based) internal couple acts (`axo_actuated`).
    pub fn axo_acts(&self, i: usize) -> bool {
        self.axo_actuated.as_ref().is_none_or(|mask| mask[i])
    }

    /// The internal-couple mask, one entry per leg.
    pub fn axo_mask(&self) -> Vec<bool> {
        (0..self.n_legs).map(|i| self.axo_acts(i)).collect()
    }

    /// Apply one `key=value` override (the `--set` syntax).
    ///
    /// Changing `n_legs` resizes a default (all-true) actuation mask so that
    /// "every leg" stays the default whatever N is.
    pub fn apply_override(&mut self, assignment: &str) -> Result<(), ParamError> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| ParamError::BadAssignment(assignment.to_string()))?;
        self.set_text(key.trim(), value.trim())
    }

    /// Set a parameter from its textual value.
    pub fn set_text(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        match key {
            "actuated" => {
                self.actuated = parse_mask(key, value, self.n_legs)?;
                Ok(())
            }
            "axo_actuated" => {
                self.axo_actuated = Some(parse_mask(key, value, self.n_legs)?);
                Ok(())
            }
            "psi_init" => {
                self.psi_init = Some(parse_list(key, value)?);
                Ok(())
            }
            "omega_legs" => {
                self.omega_legs = Some(parse_list(key, value)?);
                Ok(())
            }
            "terrain" => {
                self.terrain = TerrainKind::parse(value)?;
                Ok(())
            }
            _ => {
                if self.scalar(key).is_none() {
                    return Err(unknown_param(key));
                }
                let x = parse_number(key, value)?;
                self.set_scalar(key, x)?;
                if key == "n_legs" {
                    self.resize_default_mask();
                }
                Ok(())
            }
        }
    }

    /// Keep an all-actuated mask all-actuated when N changes.
    pub fn resize_default_mask(&mut self) {
        if self.actuated.iter().all(|&a| a) {
            self.actuated = vec![true; self.n_legs];
        }
    }

    /// Read parameters from a TOML table (unknown keys are errors naming the key).
    pub fn from_toml_table(table: toml::Table) -> Result<Params, ParamError> {
        let mut p = Params::default();
        let mut mask_given = false;
        // Apply n_legs first so that a named mask (`"first"`) sees the right N.
        if let Some(v) = table.get("n_legs") {
            p.set_text("n_legs", &toml_scalar_text("n_legs", v)?)?;
        }
        for (key, v) in &table {
            if key == "n_legs" {
                continue;
            }
            match key.as_str() {
                "actuated" | "axo_actuated" => {
                    let mask = match v {
                        toml::Value::String(s) => parse_mask(key, s, p.n_legs)?,
                        toml::Value::Array(a) => a
                            .iter()
                            .map(|x| match x {
                                toml::Value::Boolean(b) => Ok(*b),
                                toml::Value::Integer(i) if *i == 0 || *i == 1 => Ok(*i == 1),
                                _ => Err(ParamError::BadValue {
                                    field: key.clone(),
                                    value: x.to_string(),
                                    expected: "a list of 0/1 or true/false".into(),
                                }),
                            })
                            .collect::<Result<_, _>>()?,
                        _ => {
                            return Err(ParamError::BadValue {
                                field: key.clone(),
                                value: v.to_string(),
                                expected: "a mask name or a list of 0/1".into(),
                            })
                        }
                    };
                    if key == "actuated" {
                        mask_given = true;
                        p.actuated = mask;
                    } else {
                        p.axo_actuated = Some(mask);
                    }
                }
                "terrain" => match v {
                    toml::Value::String(s) => p.terrain = TerrainKind::parse(s)?,
                    _ => {
                        return Err(ParamError::BadValue {
                            field: key.clone(),
                            value: v.to_string(),
                            expected: "one of \"flat\", \"slope\", \"sine\", \"rough\"".into(),
                        })
                    }
                },
                "psi_init" | "omega_legs" => {
                    let list = toml_number_list(key, v)?;
                    if key == "psi_init" {
                        p.psi_init = Some(list);
                    } else {
                        p.omega_legs = Some(list);
                    }
                }
                _ => p.set_text(key, &toml_scalar_text(key, v)?)?,
            }
        }
        if !mask_given {
            p.actuated = vec![true; p.n_legs];
        }
        Ok(p)
    }

    /// The parameters as a TOML table (lists included), e.g. for file metadata.
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

fn toml_scalar_text(key: &str, v: &toml::Value) -> Result<String, ParamError> {
    match v {
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(format!("{f:e}")),
        toml::Value::String(s) => Ok(s.clone()),
        _ => Err(ParamError::BadValue {
            field: key.to_string(),
            value: v.to_string(),
            expected: "a number".into(),
        }),
    }
}

fn toml_number_list(key: &str, v: &toml::Value) -> Result<Vec<f64>, ParamError> {
    let bad = || ParamError::BadValue {
        field: key.to_string(),
        value: v.to_string(),
        expected: "a list of numbers".into(),
    };
    match v {
        toml::Value::Array(a) => a
            .iter()
            .map(|x| match x {
                toml::Value::Integer(i) => Ok(*i as f64),
                toml::Value::Float(f) => Ok(*f),
                toml::Value::String(s) => parse_number(key, s),
                _ => Err(bad()),
            })
            .collect(),
        toml::Value::String(s) => parse_list(key, s),
        _ => Err(bad()),
    }
}

/// Parse a number; `90deg` is converted to radians. NaN and infinities are rejected.
pub fn parse_number(field: &str, text: &str) -> Result<f64, ParamError> {
    let t = text.trim();
    let (body, scale) = match t.strip_suffix("deg") {
        Some(b) => (b.trim(), std::f64::consts::PI / 180.0),
        None => (t, 1.0),
    };
    let x: f64 = body.parse().map_err(|_| ParamError::BadValue {
        field: field.to_string(),
        value: text.to_string(),
        expected: "a number (angles may end in `deg`)".into(),
    })?;
    if !x.is_finite() {
        return Err(ParamError::OutOfRange {
            field: field.to_string(),
            value: x,
            allowed: "a finite number".into(),
        });
    }
    Ok(x * scale)
}

/// Parse a comma-separated list of numbers, optionally in brackets.
pub fn parse_list(field: &str, text: &str) -> Result<Vec<f64>, ParamError> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| parse_number(field, s))
        .collect()
}

/// Parse an actuation mask: a name (`all`, `none`, `first`, `every_other`) or a list of 0/1.
pub fn parse_mask(field: &str, text: &str, n_legs: usize) -> Result<Vec<bool>, ParamError> {
    let t = text.trim();
    match t {
        "all" => return Ok(vec![true; n_legs]),
        "none" => return Ok(vec![false; n_legs]),
        "first" => return Ok((0..n_legs).map(|i| i == 0).collect()),
        "every_other" => return Ok((0..n_legs).map(|i| i % 2 == 0).collect()),
        _ => {}
    }
    let inner = t.trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(|s| match s.trim() {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            other => Err(ParamError::BadValue {
                field: field.into(),
                value: other.to_string(),
                expected: "all, none, first, every_other, or a list of 0/1".into(),
            }),
        })
        .collect()
}

/// A parameter whose value cannot act in a run: it differs from its default, but the
/// rest of the run leaves it nothing to do (a `terrain_*` value the chosen profile does
/// not use, a motor-wave parameter without the couple, v_c without Coulomb friction, an
/// initial phase step where every leg's angle is given). Runs and sweeps warn of it by
/// name; it changes nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Inert {
    pub name: &'static str,
    /// The value as given.
    pub value: String,
    /// Why it cannot act.
    pub reason: String,
}

impl std::fmt::Display for Inert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` = {} cannot act and is ignored: {}",
            self.name, self.value, self.reason
        )
    }
}

impl TerrainKind {
    /// The `terrain_*` parameters the profile reads (the rest cannot act on it).
    pub fn uses(self, name: &str) -> bool {
        let used: &[&str] = match self {
            TerrainKind::Flat => &[],
            TerrainKind::Slope => &["terrain_angle", "terrain_start", "terrain_blend"],
            TerrainKind::Sine => &[
                "terrain_angle",
                "terrain_height",
                "terrain_wavelength",
                "terrain_phase",
                "terrain_start",
                "terrain_blend",
            ],
            TerrainKind::Rough => &[
                "terrain_angle",
                "terrain_height",
                "terrain_wavelength",
                "terrain_seed",
                "terrain_modes",
                "terrain_start",
                "terrain_blend",
            ],
        };
        used.contains(&name)
    }
}

impl Params {
    /// Every parameter whose value cannot act in this run ([`Inert`]), in the order of
    /// the parameter table.
    pub fn inert(&self) -> Vec<Inert> {
        let default = Params::default();
        let mut out = Vec::new();
        let terrain = format!("the `{}` terrain does not use it", self.terrain.label());
        let couple = "axo_f = 0: there is no internal couple".to_string();
        let coulomb = "mu_c = 0: there is no Coulomb friction".to_string();
        let phases = "psi_init gives every leg's initial angle".to_string();
        let rates = "omega_legs gives every leg's rate".to_string();
        for spec in SCALAR_PARAMS {
            let name = spec.name;
            let reason = match name {
                _ if name.starts_with("terrain_") && !self.terrain.uses(name) => &terrain,
                "axo_omega" | "axo_k" | "axo_dphi" | "filament_gap" if self.axo_f == 0.0 => &couple,
                "v_c" if self.mu_c == 0.0 => &coulomb,
                // A jittered start's psi_init is drawn around psi1 + (i-1) dphi: they act.
                "psi1" | "dphi" if self.psi_init.is_some() && self.phase_jitter == 0.0 => &phases,
                "omega" if self.omega_legs.is_some() => &rates,
                _ => continue,
            };
            let value = self.scalar(name);
            if value != default.scalar(name) {
                out.push(Inert {
                    name,
                    value: value.map_or_else(String::new, |x| x.to_string()),
                    reason: reason.clone(),
                });
            }
        }
        let mask = self.axo_mask();
        if self.axo_f == 0.0 && mask.iter().any(|&on| !on) {
            out.push(Inert {
                name: AXO_ACTUATED,
                value: mask
                    .iter()
                    .map(|&on| if on { "1" } else { "0" })
                    .collect::<Vec<_>>()
                    .join(","),
                reason: couple,
            });
        }
        out
    }
}

/// The parameters that cannot act in some of `runs`, each once (with the first such
/// run's value and reason) and with the number of runs where it cannot: what a sweep
/// warns of, however many of its points share it.
pub fn inert_once<'a>(runs: impl IntoIterator<Item = &'a Params>) -> Vec<(Inert, usize)> {
    let mut out: Vec<(Inert, usize)> = Vec::new();
    for p in runs {
        for i in p.inert() {
            match out.iter_mut().find(|(o, _)| o.name == i.name) {
                Some((_, count)) => *count += 1,
                None => out.push((i, 1)),
            }
        }
    }
    out
}

/// Every parameter's name: the scalars, then the per-leg lists and the choices.
pub fn param_names() -> impl Iterator<Item = &'static str> {
    SCALAR_PARAMS
        .iter()
        .map(|s| s.name)
        .chain(LIST_PARAMS.iter().copied())
        .chain(CHOICE_PARAMS.iter().copied())
}

/// Whether `name` is a parameter (a scalar, a per-leg list or a choice).
pub fn is_param(name: &str) -> bool {
    spec(name).is_some() || is_text_param(name)
}

/// The error for a name that is no parameter, with the closest parameter's name
/// (`k_q` → "did you mean `k_m` or `k_p`?").
pub fn unknown_param(name: &str) -> ParamError {
    ParamError::UnknownKey {
        name: name.to_string(),
        suggestions: crate::input_keys::closest(name, param_names()),
    }
}

/// Specification of a scalar parameter by name.
pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    SCALAR_PARAMS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_the_papers() {
        let p = Params::default();
        p.validate().unwrap();
        assert_eq!(p.n_legs, 9);
        assert_eq!(p.actuated.len(), 9);
        assert_eq!(p.k_p, 500.0);
        assert!((p.dphi - FRAC_PI_2).abs() < 1e-15);
    }

    /// A jittered start: within σ of the wave leg by leg, the offsets the draws' (2u − 1)σ;
    /// nothing drawn without a jitter or with an explicit psi_init.
    #[test]
    fn jittered_start_offsets_the_wave_by_at_most_sigma() {
        let mut p = Params::default();
        assert_eq!(p.jittered_start(|| 0.9), None);
        assert!(spec(PHASE_JITTER).is_some_and(|s| s.range == Range::Physical(0.0, MAX_ANGLE)));
        p.phase_jitter = 0.3;
        let draws = [0.0, 0.5, 0.75, 1.0 - f64::EPSILON];
        let mut k = 0;
        let psi = p
            .jittered_start(|| {
                k += 1;
                draws[(k - 1) % 4]
            })
            .unwrap();
        assert_eq!(psi.len(), 9);
        for (i, a) in psi.iter().enumerate() {
            let want = i as f64 * FRAC_PI_2 + 0.3 * (2.0 * draws[i % 4] - 1.0);
            assert!((a - want).abs() < 1e-15, "leg {i}: {a} vs {want}");
        }
        p.psi_init = Some(vec![0.0; 9]);
        assert_eq!(p.jittered_start(|| 0.9), None);
    }

    /// A jittered start's psi_init is drawn around psi1 + (i−1)·dphi, so psi1 acts; an
    /// explicit psi_init without a jitter leaves it nothing to do.
    #[test]
    fn a_jittered_start_keeps_psi1_acting() {
        let mut p = Params {
            psi1: 0.5,
            phase_jitter: 0.2,
            ..Params::default()
        };
        let mut u = 0.3;
        p.psi_init = p.jittered_start(|| {
            u = (u + 0.37) % 1.0;
            u
        });
        assert!(p.psi_init.is_some());
        assert!(p.inert().iter().all(|i| i.name != "psi1"));
        p.phase_jitter = 0.0;
        assert!(p.inert().iter().any(|i| i.name == "psi1"));
    }

    #[test]
    fn every_spec_has_a_field() {
        let p = Params::default();
        for s in SCALAR_PARAMS {
            assert!(p.scalar(s.name).is_some(), "{}", s.name);
        }
        assert_eq!(SCALAR_PARAMS.len(), 45);
        let kernel = KernelParams::of(&p);
        for (name, value) in KernelParams::<f64>::NAMES.iter().zip(kernel.values()) {
            assert_eq!(p.scalar(name), Some(value), "{name}");
        }
        let names = KernelParams::<f64>::NAMES;
        assert!(names.contains(&"k_p") && !names.contains(&"t_final"));
    }

    /// Every parameter set inside the ranges builds its robot: the leg's mass matrix
    /// inverts at every corner of leg_length, rho, n_nodes and the robot's size.
    #[test]
    fn every_valid_corner_of_the_ranges_builds_its_matrices() {
        let mut valid = 0;
        for leg_length in [SCALE_MIN, 1e-6, 1e-3, 1.0, SCALE_MAX] {
            for rho in [SCALE_MIN, 1.0, SCALE_MAX] {
                for n_nodes in [2, MAX_NODES] {
                    for l_alpha in [SCALE_MIN, 1.0, SCALE_MAX] {
                        let p = Params {
                            leg_length,
                            rho,
                            n_nodes,
                            l_alpha,
                            tau_t: SCALE_MIN,
                            x_t: SCALE_MIN,
                            ..Params::default()
                        };
                        if p.validate().is_err() {
                            continue;
                        }
                        valid += 1;
                        let robot = crate::model::Robot::new(&p);
                        assert!(robot.mass_inv.a.iter().all(|x| x.is_finite()), "{p:?}");
                    }
                }
            }
        }
        assert!(valid >= 30, "only {valid} corners are valid");
    }

    #[test]
    fn ranges_name_the_field_and_a_leg_too_short_for_its_mesh_is_refused() {
        let mut p = Params {
            leg_length: 1e-300,
            ..Params::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(
            e.contains("`leg_length` = 1e-300") && e.contains("[1e-12, 1e12]"),
            "{e}"
        );
        // In range, but 1e-8 m spread over 4 elements next to a 12 m body.
        p.leg_length = 1e-8;
        let e = p.validate().unwrap_err();
        assert!(e.inputs().contains(&"leg_length") && e.inputs().contains(&"n_nodes"));
        assert!(
            e.to_string().contains("raise leg_length or lower n_nodes"),
            "{e}"
        );
        p.n_nodes = 2;
        p.leg_length = 2e-5;
        p.validate().unwrap();
    }

    #[test]
    fn overrides_parse_degrees_masks_and_resize() {
        let mut p = Params::default();
        p.apply_override("dphi=-90deg").unwrap();
        assert!((p.dphi + FRAC_PI_2).abs() < 1e-12);
        p.apply_override("n_legs=5").unwrap();
        assert_eq!(p.actuated, vec![true; 5]);
        p.apply_override("actuated=1,0,0,0,0").unwrap();
        assert_eq!(p.actuated, vec![true, false, false, false, false]);
        p.apply_override("actuated=every_other").unwrap();
        assert_eq!(p.actuated, vec![true, false, true, false, true]);
        p.validate().unwrap();
    }

    /// Each profile reads its own `terrain_*` values; a non-default one it does not read
    /// is named, and so are the couple's values without a couple, v_c without Coulomb
    /// friction and the phase step where psi_init gives every angle. Defaults name none.
    #[test]
    fn values_that_cannot_act_are_named_once() {
        let names = |p: &Params| p.inert().iter().map(|i| i.name).collect::<Vec<_>>();
        assert!(Params::default().inert().is_empty());
        let mut p = Params {
            terrain_angle: 0.1,
            terrain_height: 0.2,
            terrain_wavelength: 3.0,
            terrain_phase: 1.0,
            terrain_seed: 5,
            terrain_modes: 12,
            terrain_start: 2.0,
            ..Params::default()
        };
        let all = [
            "terrain_angle",
            "terrain_height",
            "terrain_wavelength",
            "terrain_phase",
            "terrain_seed",
            "terrain_modes",
            "terrain_start",
        ];
        assert_eq!(names(&p), all);
        let unused = |kind: TerrainKind| {
            all.iter()
                .filter(|n| !kind.uses(n))
                .copied()
                .collect::<Vec<_>>()
        };
        for (kind, expect) in [
            (
                TerrainKind::Slope,
                vec![
                    "terrain_height",
                    "terrain_wavelength",
                    "terrain_phase",
                    "terrain_seed",
                    "terrain_modes",
                ],
            ),
            (TerrainKind::Sine, vec!["terrain_seed", "terrain_modes"]),
            (TerrainKind::Rough, vec!["terrain_phase"]),
        ] {
            p.terrain = kind;
            assert_eq!(names(&p), expect, "{kind:?}");
            assert_eq!(unused(kind), expect, "{kind:?}");
        }
        let p = Params {
            axo_k: 2.0,
            axo_actuated: Some(vec![false; 9]),
            v_c: 0.1,
            dphi: 1.0,
            psi_init: Some(vec![0.0; 9]),
            ..Params::default()
        };
        assert_eq!(names(&p), ["dphi", "axo_k", "v_c", "axo_actuated"]);
        let acting = Params {
            axo_f: 1.0,
            mu_c: 0.2,
            psi_init: None,
            ..p.clone()
        };
        assert!(acting.inert().is_empty(), "{:?}", acting.inert());
        let once = inert_once([&p, &acting, &p]);
        assert_eq!(
            once.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>(),
            p.inert()
        );
        assert!(once.iter().all(|&(_, count)| count == 2));
    }
}
