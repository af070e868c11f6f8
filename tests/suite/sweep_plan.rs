//! Planning: counts, product/zip, Latin hypercube stratification, determinism by
//! seed, random phases, and shards that are disjoint and cover the sweep.

use std::collections::HashSet;

use metachron::sweep::{Plan, Shard, SweepSpec};

fn spec(text: &str) -> SweepSpec {
    SweepSpec::from_str_named(text, "test.toml", "test").unwrap_or_else(|e| panic!("{e}"))
}

fn axis_values(s: &SweepSpec, i: usize) -> Vec<f64> {
    s.axes[i]
        .values
        .iter()
        .map(|v| v.as_float().unwrap())
        .collect()
}

#[test]
fn counts_of_product_zip_groups_and_repeats() {
    let axes = r#"
[[axes]]
param = "alpha"
linspace = { start = 100.0, stop = 400.0, num = 4 }
[[axes]]
param = "beta"
linspace = { start = 100.0, stop = 400.0, num = 4 }
[[axes]]
param = "k_p"
values = [100.0, 200.0, 300.0]
"#;
    assert_eq!(spec(axes).point_count(), 48);
    assert_eq!(spec(&format!("repeats = 3\n{axes}")).point_count(), 144);
    let zipped = spec(&format!("combine = \"zip\"\n{axes}").replace(
        "values = [100.0, 200.0, 300.0]",
        "values = [1.0, 2.0, 3.0, 4.0]",
    ));
    assert_eq!(zipped.point_count(), 4);
    let plan = Plan::new(&zipped).unwrap();
    for (k, p) in plan.points.iter().enumerate() {
        assert_eq!(p.cfg.params.alpha, p.cfg.params.beta);
        assert_eq!(p.cfg.params.k_p, (k + 1) as f64);
    }
    // Zipped lengths must agree.
    let e = SweepSpec::from_str_named(&format!("combine = \"zip\"\n{axes}"), "z.toml", "z")
        .unwrap_err();
    assert!(e.to_string().contains("equal lengths"), "{e}");
    // Groups: alpha and beta zipped, k_p in product.
    let grouped = spec(
        &axes
            .replace("param = \"alpha\"", "param = \"alpha\"\ngroup = \"ab\"")
            .replace("param = \"beta\"", "param = \"beta\"\ngroup = \"ab\""),
    );
    assert_eq!(grouped.point_count(), 12);
    let plan = Plan::new(&grouped).unwrap();
    assert!(plan
        .points
        .iter()
        .all(|p| p.cfg.params.alpha == p.cfg.params.beta));
    // Point ids are 0..n in order, combination-major with repeats innermost.
    let r = spec(&format!("repeats = 2\n{axes}"));
    let plan = Plan::new(&r).unwrap();
    for (k, p) in plan.points.iter().enumerate() {
        assert_eq!(p.point_id, k as u64);
        assert_eq!(p.combo, (k / 2) as u64);
        assert_eq!(p.repeat, (k % 2) as u32);
    }
}

#[test]
fn linspace_and_logspace_hit_their_ends() {
    let s = spec(
        r#"
[[axes]]
param = "alpha"
linspace = { start = 1.0, stop = 2.0, num = 5 }
[[axes]]
param = "beta"
logspace = { start = 10.0, stop = 10000.0, num = 4 }
"#,
    );
    assert_eq!(axis_values(&s, 0), vec![1.0, 1.25, 1.5, 1.75, 2.0]);
    assert_eq!(axis_values(&s, 1), vec![10.0, 100.0, 1000.0, 10000.0]);
}

#[test]
fn latin_hypercube_is_stratified_and_seeded() {
    let text = |seed: u64| {
        format!(
            r#"seed = {seed}
combine = "zip"
[[axes]]
param = "alpha"
lhs = {{ start = 10.0, stop = 1000.0, num = 20, log = true }}
[[axes]]
param = "beta"
lhs = {{ start = 0.0, stop = 2.0, num = 20 }}
"#
        )
    };
    let s = spec(&text(7));
    let a = axis_values(&s, 0);
    let b = axis_values(&s, 1);
    // One sample per stratum on each axis (log strata for the log axis).
    let strata = |xs: &[f64], f: &dyn Fn(f64) -> f64| {
        let mut seen: Vec<usize> = xs.iter().map(|&x| (f(x) * 20.0).floor() as usize).collect();
        seen.sort_unstable();
        seen
    };
    let all: Vec<usize> = (0..20).collect();
    assert_eq!(strata(&a, &|x| (x / 10.0).log10() / 2.0), all);
    assert_eq!(strata(&b, &|x| x / 2.0), all);
    // Not sorted (the strata are permuted), and the two axes are permuted independently.
    assert!(a.windows(2).any(|w| w[1] < w[0]));
    let order = |xs: &[f64]| {
        let mut idx: Vec<usize> = (0..xs.len()).collect();
        idx.sort_by(|&i, &j| xs[i].total_cmp(&xs[j]));
        idx
    };
    assert_ne!(order(&a), order(&b));
    // Determinism by seed.
    assert_eq!(axis_values(&spec(&text(7)), 0), a);
    assert_ne!(axis_values(&spec(&text(8)), 0), a);
}

#[test]
fn random_axes_stay_in_range_and_are_seeded() {
    let text = |seed: u64| {
        format!(
            "seed = {seed}\n[[axes]]\nparam = \"k_m\"\nrandom = {{ start = 5.0, stop = 500.0, num = 200, log = true }}\n"
        )
    };
    let v = axis_values(&spec(&text(1)), 0);
    assert!(v.iter().all(|&x| (5.0..=500.0).contains(&x)));
    // Log-uniform: about half the samples below the geometric midpoint 50.
    let below = v.iter().filter(|&&x| x < 50.0).count();
    assert!((70..130).contains(&below), "{below} of 200 below 50");
    assert_eq!(axis_values(&spec(&text(1)), 0), v);
    assert_ne!(axis_values(&spec(&text(2)), 0), v);
}

#[test]
fn repeats_get_seeded_random_initial_phases() {
    let text = "seed = 3\nrepeats = 4\n[base]\nn_legs = 5\n[[axes]]\nparam = \"alpha\"\nvalues = [50.0, 500.0]\n";
    let plan = Plan::new(&spec(text)).unwrap();
    assert_eq!(plan.points.len(), 8);
    let phases: Vec<Vec<f64>> = plan
        .points
        .iter()
        .map(|p| p.cfg.params.psi_init.clone().expect("random phases"))
        .collect();
    for ph in &phases {
        assert_eq!(ph.len(), 5);
        assert!(ph
            .iter()
            .all(|&x| (0.0..std::f64::consts::TAU).contains(&x)));
    }
    let distinct: HashSet<String> = phases.iter().map(|p| format!("{p:?}")).collect();
    assert_eq!(distinct.len(), 8);
    let again = Plan::new(&spec(text)).unwrap();
    assert_eq!(
        again.points[5].cfg.params.psi_init,
        plan.points[5].cfg.params.psi_init
    );
    let other = Plan::new(&spec(&text.replace("seed = 3", "seed = 4"))).unwrap();
    assert_ne!(
        other.points[5].cfg.params.psi_init,
        plan.points[5].cfg.params.psi_init
    );
    // Opting out keeps the base's phases.
    let fixed = Plan::new(&spec(&format!("random_phases = false\n{text}"))).unwrap();
    assert!(fixed.points.iter().all(|p| p.cfg.params.psi_init.is_none()));
}

#[test]
fn shards_are_disjoint_and_cover_the_sweep() {
    let s = spec("repeats = 3\n[[axes]]\nparam = \"alpha\"\nlinspace = { start = 1.0, stop = 9.0, num = 9 }\n");
    let plan = Plan::new(&s).unwrap();
    let all: HashSet<u64> = plan.points.iter().map(|p| p.point_id).collect();
    assert_eq!(all.len(), 27);
    for n in 1..=6 {
        let mut union = HashSet::new();
        let mut total = 0;
        for k in 0..n {
            let ids: Vec<u64> = plan
                .shard(Shard::parse(&format!("{k}/{n}")).unwrap())
                .iter()
                .map(|p| p.point_id)
                .collect();
            assert!((27 / n..=27 / n + 1).contains(&ids.len()), "balanced");
            total += ids.len();
            union.extend(ids);
        }
        assert_eq!(total, 27, "disjoint for N = {n}");
        assert_eq!(union, all, "covering for N = {n}");
    }
    for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
        let e = Shard::parse(bad).unwrap_err().to_string();
        assert!(e.contains("K/N"), "{bad}: {e}");
    }
}

#[test]
fn slurm_array_variables_select_the_shard() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(Shard::from_slurm(env(&[])).unwrap(), None);
    assert_eq!(
        Shard::from_slurm(env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "4")
        ]))
        .unwrap(),
        Some(Shard { index: 2, count: 4 })
    );
    // --array=1-4: ids 1..4 map to shards 0..3.
    assert_eq!(
        Shard::from_slurm(env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1")
        ]))
        .unwrap(),
        Some(Shard { index: 3, count: 4 })
    );
    assert!(Shard::from_slurm(env(&[
        ("SLURM_ARRAY_TASK_ID", "4"),
        ("SLURM_ARRAY_TASK_COUNT", "4")
    ]))
    .is_err());
    assert!(Shard::from_slurm(env(&[
        ("SLURM_ARRAY_TASK_ID", "x"),
        ("SLURM_ARRAY_TASK_COUNT", "4")
    ]))
    .is_err());
}
