//! The per-instance constants the kernel reads, generated from two lists: the model
//! parameters flagged `gpu` in the table of `src/params.rs` ([`GPU_PARAMS`]) and the
//! derived quantities below ([`DERIVED`], [`LEG_FIELDS`]). The WGSL structs, their
//! member order and the host buffers all come from these lists, so a new parameter is
//! one `gpu` flag in the table plus the WGSL that uses it (as `instances[ri].name`).
//!
//! Every member is one `real` (vectors are split into `_x`, `_y`): the WGSL structs
//! then have no padding in either precision, member k sits at byte k·word.

use crate::model::Robot;
use crate::params::GPU_PARAMS;

/// What a derived value is computed from: the built robot and the step settings.
pub struct InstanceContext<'a> {
    pub robot: &'a Robot,
    pub h: f64,
    pub theta: f64,
}

/// One derived per-instance (or per-leg) quantity.
pub struct Derived<F> {
    pub name: &'static str,
    pub value: F,
}

type InstanceFn = fn(&InstanceContext) -> f64;
type LegFn = fn(&InstanceContext, usize) -> f64;

/// Derived per-instance quantities, after the table's parameters in `Instance`.
pub const DERIVED: &[Derived<InstanceFn>] = &[
    Derived {
        name: "inertia",
        value: |c| c.robot.body.inertia,
    },
    // Body-frame anchors b_0 and b_{N+1} of the end springs.
    Derived {
        name: "b_first_x",
        value: |c| c.robot.body.b_points[0][0],
    },
    Derived {
        name: "b_first_y",
        value: |c| c.robot.body.b_points[0][1],
    },
    Derived {
        name: "b_last_x",
        value: |c| c.robot.body.b_points[c.robot.n_legs + 1][0],
    },
    Derived {
        name: "b_last_y",
        value: |c| c.robot.body.b_points[c.robot.n_legs + 1][1],
    },
    // Body-frame contact points P_1, P_2.
    Derived {
        name: "p_first_x",
        value: |c| c.robot.body.p_points[0][0],
    },
    Derived {
        name: "p_first_y",
        value: |c| c.robot.body.p_points[0][1],
    },
    Derived {
        name: "p_second_x",
        value: |c| c.robot.body.p_points[1][0],
    },
    Derived {
        name: "p_second_y",
        value: |c| c.robot.body.p_points[1][1],
    },
    // The fixed step and the kick's bending implicitness θ.
    Derived {
        name: "h",
        value: |c| c.h,
    },
    Derived {
        name: "theta",
        value: |c| c.theta,
    },
];

/// Per-leg quantities (WGSL `LegParams`, indexed `instance * N + leg`).
pub const LEG_FIELDS: &[Derived<LegFn>] = &[
    // Target rate ω_i (rad/s).
    Derived {
        name: "omega",
        value: |c, i| c.robot.p.leg_omega(i),
    },
    // 1 when the basal servo is on (the kernel also needs K_p > 0), else 0.
    Derived {
        name: "actuated",
        value: |c, i| if c.robot.p.actuated[i] { 1.0 } else { 0.0 },
    },
    // Body-frame anchor b_{i+1} of the leg's β spring.
    Derived {
        name: "b_point_x",
        value: |c, i| c.robot.body.b_points[i + 1][0],
    },
    Derived {
        name: "b_point_y",
        value: |c, i| c.robot.body.b_points[i + 1][1],
    },
];

/// Member names of WGSL `Instance`, in order.
pub fn instance_members() -> Vec<&'static str> {
    GPU_PARAMS
        .iter()
        .copied()
        .chain(DERIVED.iter().map(|d| d.name))
        .collect()
}

/// Member names of WGSL `LegParams`, in order.
pub fn leg_members() -> Vec<&'static str> {
    LEG_FIELDS.iter().map(|d| d.name).collect()
}

/// One instance's `Instance` words (f64; narrowed to f32 on upload where needed).
pub fn instance_values(c: &InstanceContext) -> Vec<f64> {
    let p = &c.robot.p;
    GPU_PARAMS
        .iter()
        .map(|name| p.scalar(name).expect("GPU_PARAMS come from the table"))
        .chain(DERIVED.iter().map(|d| (d.value)(c)))
        .collect()
}

/// One instance's `LegParams` words, leg after leg.
pub fn leg_values(c: &InstanceContext) -> Vec<f64> {
    (0..c.robot.n_legs)
        .flat_map(|i| LEG_FIELDS.iter().map(move |d| (d.value)(c, i)))
        .collect()
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
