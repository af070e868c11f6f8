//! Every parameter of the model (docs/model.md) in one type, with the paper's run as defaults.
//!
//! The scalar fields are declared once in [`define_params!`]: that single table
//! generates the struct, its defaults, units, allowed ranges, `--set` parsing and
//! the typed columns that sweeps and Parquet outputs use. Angles are in radians
//! (a value may be written `90deg` wherever a parameter is parsed from text).

use std::f64::consts::FRAC_PI_2;

use serde::{Deserialize, Serialize};

use crate::error::ParamError;

/// Allowed range of a scalar parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Any finite value.
    Finite,
    /// Strictly positive and finite.
    Positive,
    /// Zero or positive, finite.
    NonNegative,
    /// Integer in `[lo, hi]`.
    Int(usize, usize),
}

impl Range {
    pub fn describe(&self) -> String {
        match self {
            Range::Finite => "any finite number".into(),
            Range::Positive => "a finite number > 0".into(),
            Range::NonNegative => "a finite number >= 0".into(),
            Range::Int(lo, hi) => format!("an integer in [{lo}, {hi}]"),
        }
    }

    fn admits(&self, x: f64) -> bool {
        match self {
            Range::Finite => x.is_finite(),
            Range::Positive => x.is_finite() && x > 0.0,
            Range::NonNegative => x.is_finite() && x >= 0.0,
            Range::Int(lo, hi) => x.fract() == 0.0 && x >= *lo as f64 && x <= *hi as f64,
        }
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
                    _ => Err(ParamError::UnknownKey(name.to_string())),
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
    tau_t: f64 = 1.0, "m", Range::Positive, "Body thickness tau_T.";
    tau_c: f64 = 0.2, "m", Range::NonNegative, "Body clearance tau_C.";
    x_t: f64 = 1.0, "m", Range::Positive, "Terrain position X_t (x points down).", kernel;
    omega: f64 = 0.5, "rad/s", Range::Finite, "Target basal rotation rate omega.";
    k_p: f64 = 500.0, "N m s", Range::NonNegative, "Basal rate servo gain K_p.", kernel;
    epsilon: f64 = 1000.0, "N/m", Range::NonNegative, "Contact penalty stiffness.", kernel;
    nu: f64 = 200.0, "N s/m", Range::NonNegative, "Tip friction (viscous) coefficient.", kernel;
    lambda: f64 = 10000.0, "1", Range::Positive, "Inextensibility penalty constant lambda.", kernel;
    eta: f64 = 175.0, "1/s", Range::NonNegative, "Penalty natural frequency eta.", kernel;
    mu: f64 = 50.0, "1", Range::NonNegative, "Penalty damping ratio mu.", kernel;
    g: f64 = 9.81, "m/s^2", Range::NonNegative, "Gravity (along +x).", kernel;
    psi1: f64 = 0.0, "rad", Range::Finite, "Initial basal angle of leg 1.";
    dphi: f64 = FRAC_PI_2, "rad", Range::Finite, "Initial phase step between neighbouring legs.";
    axo_f: f64 = 0.0, "N/m", Range::Finite, "Amplitude f_A of the axonemal motor force density (0: no internal couple, the paper's run).", kernel;
    axo_omega: f64 = 0.5, "rad/s", Range::Finite, "Angular frequency of the motor force wave.", kernel;
    axo_k: f64 = 0.0, "rad/m", Range::Finite, "Wavenumber k_A of the motor force wave along the leg (0: standing).", kernel;
    axo_dphi: f64 = 0.0, "rad", Range::Finite, "Phase step of the motor force wave between neighbouring legs.", kernel;
}

/// Names accepted for the per-leg list parameters.
pub const LIST_PARAMS: &[&str] = &["actuated", "psi_init", "omega_legs", "axo_actuated"];

/// The per-leg lists that are masks (0/1 per leg, or a mask name).
pub const MASK_PARAMS: &[&str] = &["actuated", "axo_actuated"];

impl Params {
    /// Check every field; the first violation is reported with its name and allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        for spec in SCALAR_PARAMS {
            let x = self.scalar(spec.name).expect("every spec has a field");
            if !spec.range.admits(x) {
                return Err(ParamError::OutOfRange {
                    field: spec.name.to_string(),
                    value: x,
                    allowed: spec.range.describe(),
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
                if let Some(&x) = list.iter().find(|x| !x.is_finite()) {
                    return Err(ParamError::OutOfRange {
                        field: field.into(),
                        value: x,
                        allowed: "finite numbers".into(),
                    });
                }
            }
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
            _ => {
                if self.scalar(key).is_none() {
                    return Err(ParamError::UnknownKey(key.to_string()));
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

    #[test]
    fn every_spec_has_a_field() {
        let p = Params::default();
        for s in SCALAR_PARAMS {
            assert!(p.scalar(s.name).is_some(), "{}", s.name);
        }
        assert_eq!(SCALAR_PARAMS.len(), 30);
        let kernel = KernelParams::of(&p);
        for (name, value) in KernelParams::<f64>::NAMES.iter().zip(kernel.values()) {
            assert_eq!(p.scalar(name), Some(value), "{name}");
        }
        let names = KernelParams::<f64>::NAMES;
        assert!(names.contains(&"k_p") && !names.contains(&"t_final"));
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
}
