//! The per-instance constants the kernel reads: the members of the instance record
//! (src/integrate/record.rs), in its order. WGSL `Instance` holds the table's kernel
//! parameters then the derived constants, `LegParams` the per-leg constants; their
//! declarations, member order and the host buffers all come from the record's name
//! lists, so a new parameter is one `kernel` flag in the table of src/params.rs plus the
//! WGSL that uses it (as `instances[ri].name`).
//!
//! Every member is one `real`: the WGSL structs then have no padding in either
//! precision, member k sits at byte k·word.

use crate::integrate::record::{Derived, InstanceRecord, LegConstants};
use crate::params::KernelParams;

/// Member names of WGSL `Instance`, in order.
pub fn instance_members() -> Vec<&'static str> {
    KernelParams::<f64>::NAMES
        .iter()
        .chain(Derived::<f64>::NAMES)
        .copied()
        .collect()
}

/// Member names of WGSL `LegParams`, in order.
pub fn leg_members() -> Vec<&'static str> {
    LegConstants::<f64>::NAMES.to_vec()
}

/// One instance's `Instance` words (f64; narrowed to f32 on upload where needed).
pub fn instance_values(r: &InstanceRecord) -> Vec<f64> {
    let mut words = r.params.values();
    words.extend(r.derived.values());
    words
}

/// One instance's `LegParams` words, leg after leg.
pub fn leg_values(r: &InstanceRecord) -> Vec<f64> {
    r.legs.iter().flat_map(|l| l.values()).collect()
}

/// The WGSL declarations of `Instance` and `LegParams`.
pub fn wgsl_structs() -> String {
    let decl = |name: &str, members: Vec<&str>| {
        let mut s = format!("struct {name} {{\n");
        for m in members {
            s.push_str(&format!("    {m}: real,\n"));
        }
        s.push_str("}\n");
        s
    };
    decl("Instance", instance_members()) + &decl("LegParams", leg_members())
}
