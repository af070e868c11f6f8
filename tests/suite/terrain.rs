//! Terrain profiles and Coulomb friction, docs/model.md (T1)–(T5), against independent
//! statements of them: the normal force as the gradient of the penalty's energy where
//! the ground is straight, energy conservation on a slope on the reference, the reference
//! on every batch engine, lane independence in SIMD blocks, and the regularised Coulomb
//! law's stick and slip on an incline.

use crate::common;

use common::energy::run_without_dissipation;
use common::validation::{assert_lanes_independent, disagreements, point, run_engines};
use metachron::batch::{run_batch, Engine};
use metachron::model::terrain::Profile;
use metachron::params::{Params, TerrainKind};
use metachron::simulate::RunConfig;

fn params(overrides: &[&str]) -> Params {
    let mut p = Params::default();
    for o in overrides {
        p.apply_override(o).unwrap();
    }
    p.validate().unwrap();
    p
}

/// On a straight slope the normal force ε·c·d·n is −∇ of ½ε c² d² (central differences
/// of the energy), and on a curved profile it is normal to the tangent and of size ε·c·d.
#[test]
fn the_normal_force_is_the_penalty_gradient_on_a_slope_and_normal_on_a_curve() {
    let p = params(&["terrain=slope", "terrain_angle=12deg", "terrain_start=0"]);
    let pr = Profile::new(&p);
    let (x, y) = (1.2, 3.0);
    let f = pr.frame(x, y, p.x_t).normal_force(p.epsilon);
    let e = |x: f64, y: f64| pr.frame(x, y, p.x_t).energy(p.epsilon);
    let h = 1e-6;
    let grad = [
        (e(x + h, y) - e(x - h, y)) / (2.0 * h),
        (e(x, y + h) - e(x, y - h)) / (2.0 * h),
    ];
    for k in 0..2 {
        assert!(
            (f[k] + grad[k]).abs() < 1e-6 * f[k].abs().max(1.0),
            "component {k}: force {} vs -grad {}",
            f[k],
            -grad[k]
        );
    }
    let p = params(&["terrain=rough", "terrain_start=0", "terrain_height=0.2"]);
    let pr = Profile::new(&p);
    let fr = pr.frame(1.1, 2.7, p.x_t);
    let f = fr.normal_force(p.epsilon);
    assert!((f[0] * fr.tangent[0] + f[1] * fr.tangent[1]).abs() < 1e-12);
    let size = (f[0] * f[0] + f[1] * f[1]).sqrt();
    assert!((size - p.epsilon * fr.c * fr.depth).abs() < 1e-9 * size);
    assert!(fr.c < 0.999, "the point is where the ground slopes");
}

/// Without dissipation or actuation, kinetic + bending + springs + gravity + contact +
/// penalty energy is conserved on a straight slope (docs/model.md (T3)): the front leg's
/// tip starts 5 cm inside the slope and is thrown off it, so the contact energy itself
/// changes by far more than the drift.
#[test]
#[ignore = "long (the full suite runs it): an energy balance on the reference striking a slope, ~40 s of one core"]
fn energy_is_conserved_striking_a_slope_on_the_reference() {
    let (mut totals, mut contact) = (Vec::new(), Vec::new());
    let mut kinetic: f64 = 0.0;
    run_without_dissipation(
        &[
            "actuated=none",
            "terrain=slope",
            "terrain_angle=1deg",
            "terrain_start=1",
            "terrain_blend=1",
        ],
        |r, s| {
            let e = r.energy(&s.q, &s.v);
            kinetic = kinetic.max(e.kinetic);
            totals.push(e.total());
            contact.push(e.contact);
        },
    );
    let spread = |x: &[f64]| x.iter().map(|e| (e - x[0]).abs()).fold(0.0, f64::max);
    let drift = spread(&totals);
    assert!(kinetic > 1.0, "kinetic {kinetic}");
    assert!(drift < 1e-4 * kinetic, "drift {drift} of kinetic {kinetic}");
    assert!(
        spread(&contact) > 100.0 * drift,
        "contact energy {:?}",
        spread(&contact)
    );
}

/// The four terrain points over 3 s, each reaching its ground within the run: a slope the
/// front legs climb, a sine and a rough profile under the whole robot, and Coulomb friction
/// on flat ground.
fn terrain_points() -> Vec<(&'static str, RunConfig)> {
    vec![
        (
            "slope",
            point(&["terrain=slope", "terrain_angle=4deg", "terrain_start=3.5"]),
        ),
        (
            "sine",
            point(&[
                "terrain=sine",
                "terrain_height=0.04",
                "terrain_wavelength=1.5",
                "terrain_start=-8",
            ]),
        ),
        (
            "rough",
            point(&[
                "terrain=rough",
                "terrain_height=0.03",
                "terrain_seed=7",
                "terrain_start=-8",
            ]),
        ),
        ("coulomb", point(&["mu_c=0.4"])),
    ]
}

#[test]
#[ignore = "long (the full suite runs it): ground points on the reference and both batch engines, ~1 min of one core"]
fn batch_engines_match_the_reference_on_terrain() {
    let points = terrain_points();
    let cfgs: Vec<RunConfig> = points.iter().map(|(_, c)| c.clone()).collect();
    let runs = run_engines(&cfgs, "batch_engines_match_the_reference_on_terrain");
    let mut failures = Vec::new();
    for (k, ((name, _), r)) in points.iter().zip(&runs.reference).enumerate() {
        let rm = &r.metrics;
        assert!(rm.status.is_ok(), "{name}: reference {:?}", rm.status);
        for (engine, results) in &runs.engines {
            let f = &results[k].metrics;
            eprintln!(
                "{engine} {name:>8}: disp {:.6} vs {:.6}, lag {:.6} vs {:.6}, work {:.4} vs {:.4}, duty {:.4} vs {:.4}",
                f.displacement, rm.displacement, f.mean_lag, rm.mean_lag, f.work, rm.work,
                f.duty_factor, rm.duty_factor
            );
            failures.extend(disagreements(&format!("{engine} {name}"), f, rm));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each profile changes the run (the ground is felt), and the flat default with μ_C = 0
/// is the paper's run to the bit.
#[test]
fn every_ground_is_felt_and_the_default_is_flat() {
    let mut cfgs: Vec<RunConfig> = terrain_points().into_iter().map(|(_, c)| c).collect();
    let flat = point(&[]);
    cfgs.push(flat.clone());
    cfgs.push(point(&[
        "terrain=flat",
        "terrain_height=0.3",
        "terrain_start=-8",
    ]));
    for c in &mut cfgs {
        c.params.t_final = 1.0;
    }
    let runs = run_batch(&cfgs, &Engine::Cpu);
    let m = |k: usize| runs[k].as_ref().unwrap().metrics.clone();
    let n = cfgs.len();
    for k in 0..n - 2 {
        assert_ne!(
            m(k).scalars(),
            m(n - 2).scalars(),
            "point {k} feels no ground"
        );
    }
    // Flat ground ignores the other profiles' parameters.
    assert_eq!(m(n - 1).scalars(), m(n - 2).scalars());
    assert_eq!(cfgs[n - 1].params.terrain, TerrainKind::Flat);
}

/// A lane's result does not depend on its neighbours in a SIMD block: terrain points run
/// alone and side by side with flat points give the same bits, and so do the flat points
/// (whose lanes then add exact zeros).
#[test]
fn lanes_on_different_grounds_share_a_block() {
    let mut cfgs: Vec<RunConfig> = terrain_points().into_iter().map(|(_, c)| c).collect();
    cfgs.extend([point(&[]), point(&["alpha=80"])]);
    assert_lanes_independent(cfgs);
}

/// A robot standing still on a 3° incline (every leg straight down, servos holding rate 0,
/// no viscous tip friction) slips or sticks as the regularised Coulomb law says. Along
/// the slope, weight W sin α against the legs' and body's drag ζ(Nℓ + 1)·v and the
/// friction μ_C W cos α tanh(v/v_C) (the normal loads sum to W cos α): the steady speed
/// solves W sin α = ζ(Nℓ + 1) v + μ_C W cos α tanh(v/v_C). Steeper than atan μ_C the robot
/// slides at the drag-limited speed; gentler, it creeps at about v_C·atanh(tan α/μ_C).
#[test]
fn an_incline_steeper_than_atan_mu_slides_and_a_gentler_one_creeps() {
    let alpha = 3f64.to_radians();
    let (start, ground_under_origin) = (-20.0, 1.0);
    for mu_c in [0.02, 0.5] {
        let mut cfg = point(&[
            "psi_init=0,0,0,0,0,0,0,0,0",
            "omega=0",
            "nu=0",
            "terrain=slope",
            "terrain_angle=3deg",
        ]);
        let p = &mut cfg.params;
        p.mu_c = mu_c;
        p.terrain_start = start;
        // The slope passes x = 1 (the tips) under y = 0.
        p.x_t = ground_under_origin - start * alpha.tan();
        p.t_final = 10.0;
        cfg.validate().unwrap();
        let p = cfg.params.clone();
        let weight = (p.body_mass + p.n_legs as f64 * p.rho * p.leg_length) * p.g;
        let drag = p.zeta * (p.n_legs as f64 * p.leg_length + 1.0);
        let excess = |v: f64| {
            weight * alpha.sin() - drag * v - mu_c * weight * alpha.cos() * (v / p.v_c).tanh()
        };
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if excess(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let expect = -lo;
        let r = run_batch(std::slice::from_ref(&cfg), &Engine::Cpu);
        let m = &r[0].as_ref().unwrap().metrics;
        eprintln!(
            "mu_c {mu_c}: mean speed {:.6e} m/s, steady speed {expect:.6e} m/s",
            m.mean_speed
        );
        let tol = if mu_c < alpha.tan() { 0.03 } else { 0.10 };
        assert!(
            (m.mean_speed - expect).abs() <= tol * expect.abs(),
            "mu_c {mu_c}: speed {} vs {expect}",
            m.mean_speed
        );
        assert_eq!(m.duty_factor, 1.0, "every tip stays on the ground");
    }
}

/// A tilted sine (uphill) and a tilted rough profile with more modes than the
/// instance's constants hold (downhill), the front legs on them: every engine agrees
/// with the reference (the f64 and the compensated f32 GPU kernels included).
#[test]
#[ignore = "long (the full suite runs it): tilted ground points on the reference and both batch engines, ~30 s of one core"]
fn tilted_sine_and_rough_agree_across_engines() {
    let points = [
        (
            "tilted sine",
            point(&[
                "terrain=sine",
                "terrain_angle=4deg",
                "terrain_height=0.04",
                "terrain_wavelength=1.5",
                "terrain_start=3.5",
            ]),
        ),
        (
            "tilted rough, 12 modes",
            point(&[
                "terrain=rough",
                "terrain_angle=-3deg",
                "terrain_height=0.03",
                "terrain_modes=12",
                "terrain_wavelength=4",
                "terrain_seed=7",
                "terrain_start=3.5",
            ]),
        ),
    ];
    let cfgs: Vec<RunConfig> = points.iter().map(|(_, c)| c.clone()).collect();
    let mut runs = run_engines(&cfgs, "tilted_sine_and_rough_agree_across_engines");
    if let Some(ctx) = crate::common::gpu::gpu_context("tilted terrain on the f32 kernel") {
        let f32 = metachron::gpu::GpuContext::new(&metachron::gpu::GpuOptions {
            precision: metachron::gpu::PrecisionChoice::F32,
            ..metachron::gpu::GpuOptions::from_env().expect("GPU options")
        })
        .expect("an adapter that runs f64 runs f32");
        drop(ctx);
        let out = metachron::gpu::GpuEngine::new(&f32)
            .run(&cfgs)
            .expect("f32 kernel runs");
        runs.engines.push(("gpu f32", out));
    }
    let mut failures = Vec::new();
    for (k, ((name, _), r)) in points.iter().zip(&runs.reference).enumerate() {
        let rm = &r.metrics;
        assert!(rm.status.is_ok(), "{name}: reference {:?}", rm.status);
        assert!(rm.duty_factor > 0.0, "{name}: the tips touch the ground");
        for (engine, results) in &runs.engines {
            let f = &results[k].metrics;
            eprintln!(
                "{engine} {name:>22}: disp {:.6} vs {:.6}, lag {:.6} vs {:.6}, work {:.4} vs {:.4}",
                f.displacement, rm.displacement, f.mean_lag, rm.mean_lag, f.work, rm.work
            );
            failures.extend(disagreements(&format!("{engine} {name}"), f, rm));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// With terrain_height = 0 the sine and the rough profile are the slope at their angle:
/// the same ground at every y, and the same run to the bit on the reference and the
/// cpu engine.
#[test]
#[ignore = "long (the full suite runs it): the slope against flat sine and rough ground on the reference, ~25 s of one core"]
fn sine_and_rough_without_height_are_the_slope() {
    let slope = ["terrain=slope", "terrain_angle=5deg", "terrain_start=3.5"];
    let with = |kind: &'static str| {
        let mut o = slope.to_vec();
        o[0] = kind;
        o.extend(["terrain_height=0", "terrain_modes=20", "terrain_seed=3"]);
        o
    };
    let grounds = [slope.to_vec(), with("terrain=sine"), with("terrain=rough")];
    let profiles: Vec<Profile> = grounds.iter().map(|o| Profile::new(&params(o))).collect();
    for y in (0..400).map(|i| -2.0 + 0.025 * i as f64) {
        for pr in &profiles[1..] {
            assert_eq!(pr.height(y), profiles[0].height(y), "at y = {y}");
        }
    }
    let mut cfgs: Vec<RunConfig> = grounds.iter().map(|o| point(o)).collect();
    for c in &mut cfgs {
        c.params.t_final = 1.0;
    }
    for engine in [Engine::Reference, Engine::Cpu] {
        let runs = run_batch(&cfgs, &engine);
        let m = |k: usize| runs[k].as_ref().unwrap().metrics.clone();
        assert!(m(0).duty_factor > 0.0);
        for k in 1..cfgs.len() {
            assert_eq!(m(k).scalars(), m(0).scalars(), "{engine:?} ground {k}");
            assert_eq!(m(k).pair_lag, m(0).pair_lag, "{engine:?} ground {k}");
        }
    }
}

/// Lines of `stderr` that warn of `name`.
fn warnings_of<'a>(stderr: &'a str, name: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("warning:") && l.contains(&format!("`{name}`")))
        .collect()
}

/// A value the run cannot use is named once, by a warning, on `simulate` (with
/// --quiet too) and on a sweep whose axis mixes profiles (once, not per point); values
/// the run uses, and defaults, warn of nothing.
#[test]
fn values_that_cannot_act_warn_once_by_name() {
    let (code, _, err) = common::bin::run(&[
        "simulate",
        "--quiet",
        "--set",
        "t_final=0.05",
        "--set",
        "terrain_height=0.2",
        "--set",
        "v_c=0.05",
        "--set",
        "axo_k=2",
        "--set",
        "terrain_start=2",
    ]);
    assert_eq!(code, 0, "{err}");
    for name in ["terrain_height", "v_c", "axo_k", "terrain_start"] {
        assert_eq!(warnings_of(&err, name).len(), 1, "{name}: {err}");
    }
    assert_eq!(
        err.lines().filter(|l| l.starts_with("warning:")).count(),
        4,
        "{err}"
    );
    let (code, _, err) = common::bin::run(&[
        "simulate",
        "--set",
        "t_final=0.05",
        "--set",
        "terrain=rough",
        "--set",
        "terrain_seed=9",
        "--set",
        "terrain_modes=10",
        "--set",
        "terrain_start=20",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning:"), "{err}");

    let dir = common::scratch("values_that_cannot_act_warn_once_by_name");
    let spec = dir.join("mixed.toml");
    std::fs::write(
        &spec,
        "name = \"mixed\"\nrepeats = 2\n[base]\nt_final = 0.05\nterrain_seed = 7\n\
         terrain_phase = 0.5\ndphi = 1.0\n\
         [[axes]]\nparam = \"terrain\"\nvalues = [\"flat\", \"sine\", \"rough\"]\n\
         [[axes]]\nparam = \"k_p\"\nvalues = [100, 200]\n",
    )
    .unwrap();
    let (code, _, err) =
        common::bin::run_in(&["sweep", "mixed.toml", "--dry-run", "--quiet"], &dir);
    assert_eq!(code, 0, "{err}");
    // The seed cannot act on flat ground nor on the sine, the phase on flat ground and
    // on the rough profile, dphi under the random initial phases that repeats > 1
    // bring: each is named once, however many points it concerns.
    for name in ["terrain_seed", "terrain_phase", "dphi"] {
        assert_eq!(warnings_of(&err, name).len(), 1, "{name}: {err}");
    }
    assert!(warnings_of(&err, "dphi")[0].contains("random"), "{err}");
    assert!(
        warnings_of(&err, "terrain_seed")[0].contains("at 8 of 12 points"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("warning:")).count(),
        3,
        "{err}"
    );
}
