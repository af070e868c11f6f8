//! The WGSL program: the generated layout header followed by the stage files of
//! `shaders/` (one concern per file), parsed and validated by naga before wgpu sees it.

use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

use super::layout::wgsl_header;
use super::{GpuError, Precision};

/// The shader files in the order they are concatenated.
pub const SHADER_FILES: &[(&str, &str)] = &[
    ("layout.wgsl", include_str!("../../shaders/layout.wgsl")),
    ("math.wgsl", include_str!("../../shaders/math.wgsl")),
    ("fe.wgsl", include_str!("../../shaders/fe.wgsl")),
    ("dkd_step.wgsl", include_str!("../../shaders/dkd_step.wgsl")),
    ("metrics.wgsl", include_str!("../../shaders/metrics.wgsl")),
    ("advance.wgsl", include_str!("../../shaders/advance.wgsl")),
];

/// Entry point of the advance stage.
pub const ENTRY_POINT: &str = "advance";

/// Full WGSL source for a batch of robots with `n_legs` legs of `n_nodes` nodes.
pub fn source(n_legs: usize, n_nodes: usize, precision: Precision) -> String {
    let mut s = wgsl_header(n_legs, n_nodes, precision);
    for (name, text) in SHADER_FILES {
        s.push_str(&format!("\n// ---- shaders/{name}\n"));
        s.push_str(text);
    }
    s
}

/// Parse and validate with naga (what wgpu does too, but with readable errors here).
pub fn validate(src: &str) -> Result<(naga::Module, ModuleInfo), GpuError> {
    let module =
        naga::front::wgsl::parse_str(src).map_err(|e| GpuError::Shader(e.emit_to_string(src)))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::FLOAT64)
        .validate(&module)
        .map_err(|e| GpuError::Shader(format!("{:?}", e.into_inner())))?;
    Ok((module, info))
}

/// Math functions that SPIR-V (GLSL.std.450) defines for 16/32-bit floats only.
fn is_32_bit_only(f: naga::MathFunction) -> bool {
    use naga::MathFunction as F;
    matches!(
        f,
        F::Sin
            | F::Cos
            | F::Tan
            | F::Asin
            | F::Acos
            | F::Atan
            | F::Atan2
            | F::Sinh
            | F::Cosh
            | F::Tanh
            | F::Asinh
            | F::Acosh
            | F::Atanh
            | F::Exp
            | F::Exp2
            | F::Log
            | F::Log2
            | F::Pow
            | F::Radians
            | F::Degrees
    )
}

fn is_f64(inner: &naga::TypeInner) -> bool {
    match inner {
        naga::TypeInner::Scalar(s) | naga::TypeInner::Vector { scalar: s, .. } => {
            s.kind == naga::ScalarKind::Float && s.width == 8
        }
        _ => false,
    }
}

/// Every call of a 32-bit-only math function on a 64-bit argument, as "function: fun".
pub fn f64_transcendentals(module: &naga::Module, info: &ModuleInfo) -> Vec<String> {
    let mut found = Vec::new();
    let mut scan = |name: &str, f: &naga::Function, fi: &naga::valid::FunctionInfo| {
        for (_, expr) in f.expressions.iter() {
            if let naga::Expression::Math { fun, arg, .. } = expr {
                if is_32_bit_only(*fun) && is_f64(fi[*arg].ty.inner_with(&module.types)) {
                    found.push(format!("{name}: {fun:?}"));
                }
            }
        }
    };
    for (h, f) in module.functions.iter() {
        scan(f.name.as_deref().unwrap_or("?"), f, &info[h]);
    }
    for (k, ep) in module.entry_points.iter().enumerate() {
        scan(&ep.name, &ep.function, info.get_entry_point(k));
    }
    found
}

/// Byte offsets of the members of WGSL struct `name` (for the layout test).
pub fn struct_offsets(module: &naga::Module, name: &str) -> Option<(Vec<(String, u32)>, u32)> {
    module.types.iter().find_map(|(_, ty)| {
        if ty.name.as_deref() != Some(name) {
            return None;
        }
        match &ty.inner {
            naga::TypeInner::Struct { members, span } => Some((
                members
                    .iter()
                    .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                    .collect(),
                *span,
            )),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::layout::*;
    use std::mem::{offset_of, size_of};

    fn module(p: Precision) -> (naga::Module, ModuleInfo) {
        validate(&source(9, 5, p)).expect("shader validates")
    }

    #[test]
    fn shaders_validate_for_both_precisions_and_several_sizes() {
        for p in [Precision::F64, Precision::F32] {
            for (n, m) in [(2, 2), (9, 5), (5, 12), (64, 3)] {
                validate(&source(n, m, p)).unwrap_or_else(|e| panic!("{n} legs, {m} nodes: {e}"));
            }
        }
    }

    #[test]
    fn no_32_bit_only_math_on_f64() {
        let (m, info) = module(Precision::F64);
        let bad = f64_transcendentals(&m, &info);
        assert!(bad.is_empty(), "f64 transcendental in the kernel: {bad:?}");
    }

    #[test]
    fn the_transcendental_check_catches_one() {
        let src = format!(
            "{}\nfn sneaky(x: real) -> real {{ return sin(x) + exp(x); }}\n",
            source(9, 5, Precision::F64)
        );
        let (m, info) = validate(&src).expect("still valid WGSL");
        let bad = f64_transcendentals(&m, &info);
        assert_eq!(
            bad,
            vec!["sneaky: Sin".to_string(), "sneaky: Exp".to_string()]
        );
    }

    /// Every host struct matches its WGSL twin member by member, in both precisions.
    #[test]
    fn host_and_wgsl_layouts_agree() {
        for (p, word) in [(Precision::F64, 8usize), (Precision::F32, 4)] {
            let (m, _) = module(p);
            let scale = |off: usize| (off / 8 * word) as u32;
            let (members, span) = struct_offsets(&m, "Instance").expect("Instance");
            let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, INSTANCE_MEMBERS);
            let host = [
                offset_of!(InstanceParams, rho),
                offset_of!(InstanceParams, zeta),
                offset_of!(InstanceParams, k_m),
                offset_of!(InstanceParams, g),
                offset_of!(InstanceParams, lambda),
                offset_of!(InstanceParams, eta),
                offset_of!(InstanceParams, mu),
                offset_of!(InstanceParams, leg_length),
                offset_of!(InstanceParams, k_p),
                offset_of!(InstanceParams, x_t),
                offset_of!(InstanceParams, epsilon),
                offset_of!(InstanceParams, nu),
                offset_of!(InstanceParams, body_mass),
                offset_of!(InstanceParams, inertia),
                offset_of!(InstanceParams, alpha),
                offset_of!(InstanceParams, beta),
                offset_of!(InstanceParams, l_alpha),
                offset_of!(InstanceParams, l_beta),
                offset_of!(InstanceParams, b_first),
                offset_of!(InstanceParams, b_last),
                offset_of!(InstanceParams, p_points),
                offset_of!(InstanceParams, p_points) + 16,
                offset_of!(InstanceParams, h),
                offset_of!(InstanceParams, theta),
            ];
            for ((name, off), h) in members.iter().zip(host) {
                assert_eq!(*off, scale(h), "Instance.{name} ({p:?})");
            }
            assert_eq!(span, scale(size_of::<InstanceParams>()), "Instance size");

            let (members, span) = struct_offsets(&m, "LegParams").expect("LegParams");
            let host = [
                offset_of!(LegParams, omega),
                offset_of!(LegParams, actuated),
                offset_of!(LegParams, b_point),
            ];
            for ((name, off), h) in members.iter().zip(host) {
                assert_eq!(*off, scale(h), "LegParams.{name} ({p:?})");
            }
            assert_eq!(span, scale(size_of::<LegParams>()));

            let (members, span) = struct_offsets(&m, "InstanceInts").expect("InstanceInts");
            let host = [
                offset_of!(InstanceInts, matrix_set),
                offset_of!(InstanceInts, steps_per_sample),
                offset_of!(InstanceInts, steps_last),
                offset_of!(InstanceInts, n_samples),
                offset_of!(InstanceInts, window_first),
            ];
            assert_eq!(members.len(), host.len());
            for ((name, off), h) in members.iter().zip(host) {
                assert_eq!(*off as usize, h, "InstanceInts.{name}");
            }
            assert_eq!(span as usize, size_of::<InstanceInts>());

            let (members, span) = struct_offsets(&m, "Control").expect("Control");
            assert_eq!(members.len(), 4);
            assert_eq!(members[2].1 as usize, offset_of!(Control, step_end));
            assert_eq!(span as usize, size_of::<Control>());
        }
    }
}
