//! Sweep files: a sample file as written, axis kinds, masks as values, and
//! clear errors (file, key, allowed range) for bad files.

use metachron::sweep::{AxisKind, Plan, SweepSpec};

const SAMPLE: &str = r#"name = "small-coupling"
[base]
t_final = 3.0
[[axes]]
param = "alpha"
logspace = { start = 50.0, stop = 5000.0, num = 3 }
[[axes]]
param = "beta"
values = [50.0, 500.0]
"#;

fn parse(text: &str) -> Result<SweepSpec, String> {
    SweepSpec::from_str_named(text, "bad.toml", "bad").map_err(|e| e.to_string())
}

fn plan_err(text: &str) -> String {
    let spec = parse(text).expect("file parses");
    Plan::new(&spec).expect_err("plan must fail").to_string()
}

fn floats(v: &[toml::Value]) -> Vec<f64> {
    v.iter()
        .map(|x| x.as_float().or(x.as_integer().map(|i| i as f64)).unwrap())
        .collect()
}

#[test]
fn the_sample_file_runs_six_points() {
    let spec = parse(SAMPLE).unwrap();
    assert_eq!(spec.name, "small-coupling");
    assert_eq!(spec.point_count(), 6);
    assert_eq!(floats(&spec.axes[0].values), vec![50.0, 500.0, 5000.0]);
    assert_eq!(spec.axes[0].kind, AxisKind::Logspace);
    assert!(spec.axes[0].log);
    assert_eq!(floats(&spec.axes[1].values), vec![50.0, 500.0]);
    let plan = Plan::new(&spec).unwrap();
    assert_eq!(plan.points.len(), 6);
    // First axis outermost, ids 0..6, base applied everywhere.
    let ab: Vec<(f64, f64)> = plan
        .points
        .iter()
        .map(|p| (p.cfg.params.alpha, p.cfg.params.beta))
        .collect();
    assert_eq!(
        ab,
        vec![
            (50.0, 50.0),
            (50.0, 500.0),
            (500.0, 50.0),
            (500.0, 500.0),
            (5000.0, 50.0),
            (5000.0, 500.0)
        ]
    );
    for (k, p) in plan.points.iter().enumerate() {
        assert_eq!(p.point_id, k as u64);
        assert_eq!(p.cfg.params.t_final, 3.0);
        assert_eq!(p.cfg.params.psi_init, None);
    }
}

#[test]
fn shipped_sweeps_parse_and_plan() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/sweeps");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let spec = SweepSpec::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            let plan = Plan::new(&spec).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(plan.points.len(), spec.point_count(), "{}", path.display());
            n += 1;
        }
    }
    assert!(n >= 5, "expected the five shipped sweeps, found {n}");
}

#[test]
fn masks_angles_and_lists_are_values() {
    let spec = parse(
        r#"
[base]
n_legs = 5
[[axes]]
param = "actuated"
values = ["all", "first", "every_other", [1, 0, 0, 0, 1]]
[[axes]]
param = "dphi"
linspace = { start = "-90deg", stop = "90deg", num = 3 }
"#,
    )
    .unwrap();
    let plan = Plan::new(&spec).unwrap();
    assert_eq!(plan.points.len(), 12);
    let masks: Vec<Vec<bool>> = plan
        .points
        .iter()
        .step_by(3)
        .map(|p| p.cfg.params.actuated.clone())
        .collect();
    let (t, f) = (true, false);
    assert_eq!(
        masks,
        vec![
            vec![t; 5],
            vec![t, f, f, f, f],
            vec![t, f, t, f, t],
            vec![t, f, f, f, t]
        ]
    );
    let dphi: Vec<f64> = plan.points[..3].iter().map(|p| p.cfg.params.dphi).collect();
    assert!((dphi[0] + std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert!(dphi[1].abs() < 1e-12);
    assert!((dphi[2] - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
}

#[test]
fn unknown_keys_anywhere_are_named() {
    let e = parse(&SAMPLE.replace("t_final = 3.0", "t_final = 3.0\nalphaa = 5.0")).unwrap_err();
    assert!(e.contains("bad.toml") && e.contains("alphaa"), "{e}");
    let e = parse(&format!("repeatz = 3\n{SAMPLE}")).unwrap_err();
    assert!(e.contains("`repeatz`") && e.contains("unknown key"), "{e}");
    let e =
        parse(&SAMPLE.replace("values = [50.0, 500.0]", "values = [50.0]\nstepz = 2")).unwrap_err();
    assert!(e.contains("`stepz` in axes[1]"), "{e}");
    let e = parse(&SAMPLE.replace("num = 3 }", "num = 3, base = 10 }")).unwrap_err();
    assert!(e.contains("`base` in axes[0].logspace"), "{e}");
    let e = parse(&SAMPLE.replace("param = \"beta\"", "param = \"betta\"")).unwrap_err();
    assert!(e.contains("axes[1].param") && e.contains("betta"), "{e}");
    let e = parse(&format!("{SAMPLE}\n[metrics]\nplv_minn = 0.5\n")).unwrap_err();
    assert!(e.contains("plv_minn"), "{e}");
}

#[test]
fn unknown_keys_are_answered_with_the_closest_allowed_key() {
    let cases = [
        // Top level.
        (
            format!("axs = 1\n{SAMPLE}"),
            "bad.toml: unknown key `axs` at the top level; did you mean `axes`?",
        ),
        // In an axis, and in its range.
        (
            SAMPLE.replace("param = \"beta\"", "parm = \"beta\""),
            "bad.toml: unknown key `parm` in axes[1]; did you mean `param`?",
        ),
        (
            SAMPLE.replace("num = 3 }", "nmu = 3 }"),
            "unknown key `nmu` in axes[0].logspace; did you mean `num`?",
        ),
        // In [refine] and in adaptive repeats.
        (
            format!("{SAMPLE}[refine]\nmax_levle = 2\n"),
            "bad.toml: unknown key `max_levle` in [refine]; did you mean `max_level`?",
        ),
        (
            format!("repeats = {{ min = 2, max = 4, ci_widht = 0.1 }}\n{SAMPLE}"),
            "unknown key `ci_widht` in repeats; did you mean `ci_width`?",
        ),
        // Parameters in [base] and on an axis, and a settings table's key.
        (
            SAMPLE.replace("t_final = 3.0", "t_final = 3.0\nk_q = 5.0"),
            "`base.k_q`: unknown parameter `k_q`; did you mean `k_m` or `k_p`?",
        ),
        (
            SAMPLE.replace("param = \"beta\"", "param = \"betta\""),
            "`axes[1].param`: unknown parameter `betta`; did you mean `beta`?",
        ),
        (
            format!("{SAMPLE}\n[metrics]\nplv_minn = 0.5\n"),
            "unknown key `plv_minn` in [metrics]; did you mean `plv_min`?",
        ),
    ];
    for (text, want) in cases {
        let e = parse(&text).unwrap_err();
        assert!(e.contains(want), "{e}\nlacks: {want}");
    }
    // The allowed keys are listed; a name far from all of them gets no guess.
    let e = parse(&format!("temperature = 3\n{SAMPLE}")).unwrap_err();
    assert!(
        e.contains("unknown key `temperature` at the top level (allowed: name, description"),
        "{e}"
    );
}

#[test]
fn wrong_types_are_named_with_what_is_expected() {
    let e = parse(&SAMPLE.replace("num = 3", "num = \"three\"")).unwrap_err();
    assert!(
        e.contains("axes[0].logspace.num") && e.contains("integer"),
        "{e}"
    );
    let e = parse(&SAMPLE.replace("values = [50.0, 500.0]", "values = \"50\"")).unwrap_err();
    assert!(e.contains("axes[1].values") && e.contains("array"), "{e}");
    let e = parse(&SAMPLE.replace("values = [50.0, 500.0]", "values = [50.0, true]")).unwrap_err();
    assert!(
        e.contains("axes[1].values[1]") && e.contains("number"),
        "{e}"
    );
    let e = parse(&SAMPLE.replace("t_final = 3.0", "t_final = true")).unwrap_err();
    assert!(e.contains("t_final") && e.contains("number"), "{e}");
    let e = parse(&format!("repeats = 2.5\n{SAMPLE}")).unwrap_err();
    assert!(e.contains("`repeats`") && e.contains("integer"), "{e}");
}

#[test]
fn empty_axes_are_errors() {
    let e = parse(&SAMPLE.replace("values = [50.0, 500.0]", "values = []")).unwrap_err();
    assert!(
        e.contains("axes[1].values") && e.contains("empty axis"),
        "{e}"
    );
    let e = parse(&SAMPLE.replace("num = 3", "num = 0")).unwrap_err();
    assert!(
        e.contains("axes[0].logspace.num") && e.contains("empty axis"),
        "{e}"
    );
    let e = parse(&SAMPLE.replace("values = [50.0, 500.0]\n", "")).unwrap_err();
    assert!(e.contains("axes[1]") && e.contains("no values"), "{e}");
}

#[test]
fn out_of_range_values_name_the_key_and_the_allowed_range() {
    let e = parse(&SAMPLE.replace("values = [50.0, 500.0]", "values = [50.0, -5.0]")).unwrap_err();
    assert!(
        e.contains("axes[1]") && e.contains("beta") && e.contains("allowed is a finite number > 0"),
        "{e}"
    );
    let e = parse(&SAMPLE.replace("t_final = 3.0", "t_final = 3.0\nn_legs = 100")).unwrap_err();
    assert!(e.contains("n_legs") && e.contains("[2, 64]"), "{e}");
    let e = parse(&SAMPLE.replace("start = 50.0", "start = 0.0")).unwrap_err();
    assert!(
        e.contains("axes[0].logspace.start") && e.contains("> 0"),
        "{e}"
    );
    let e = parse(&SAMPLE.replace("param = \"beta\"", "param = \"n_legs\"")).unwrap_err();
    assert!(e.contains("n_legs") && e.contains("integer"), "{e}");
    let e = parse(&format!("seed = -1\n{SAMPLE}")).unwrap_err();
    assert!(e.contains("`seed`") && e.contains("allowed"), "{e}");
    // A mask of the wrong length is found when the point is planned, naming the point.
    let e = plan_err("[base]\nn_legs = 4\n[[axes]]\nparam = \"actuated\"\nvalues = [[1, 0]]\n");
    assert!(
        e.contains("point 0") && e.contains("actuated") && e.contains("n_legs = 4"),
        "{e}"
    );
    // t_final swept below dt_out: the settings' range is named.
    let e = plan_err("[[axes]]\nparam = \"t_final\"\nvalues = [0.001]\n");
    assert!(e.contains("dt_out") && e.contains("allowed"), "{e}");
}

/// Every shipped sweep file (sweeps/, examples/, tests/) as planned: point and
/// combination counts, the header, each axis' values and a digest of every planned
/// point's configuration, one block per file.
fn plan_digest() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<std::path::PathBuf> = ["sweeps", "examples", "tests/python"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut out = String::new();
    for path in files {
        let name = path.strip_prefix(root).unwrap().display().to_string();
        let Ok(spec) = SweepSpec::from_file(&path) else {
            out.push_str(&format!("{name}: not a sweep file\n"));
            continue;
        };
        out.push_str(&format!(
            "{name}: name={} points={} combos={} repeats={} seed={} random_phases={} \
             adaptive={:?} until_settled={:?} groups={:?}\n  refine={:?}\n",
            spec.name,
            spec.point_count(),
            spec.combinations(),
            spec.repeats,
            spec.seed,
            spec.random_phases,
            spec.adaptive,
            spec.until_settled,
            spec.groups,
            spec.refine,
        ));
        for a in &spec.axes {
            let values: Vec<String> = a.values.iter().map(|v| v.to_string()).collect();
            out.push_str(&format!(
                "  axis {} {:?} log={} group={:?} [{}]\n",
                a.param,
                a.kind,
                a.log,
                a.group,
                values.join(", ")
            ));
        }
        let plan = Plan::new(&spec).unwrap();
        // FNV-1a over every point's id, combination, repeat, level and configuration.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for p in &plan.points {
            let text = format!(
                "{} {} {} {} {:?}",
                p.point_id, p.combo, p.repeat, p.level, p.cfg
            );
            for b in text.bytes() {
                h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
        out.push_str(&format!(
            "  plan {} points fnv1a={h:016x}\n",
            plan.points.len()
        ));
    }
    out
}

/// The shipped sweep files plan exactly the points recorded in
/// tests/suite/golden/sweep_plans.txt (written by the reader these files were
/// designed with; `METACHRON_BLESS=1` rewrites it after a deliberate change).
#[test]
fn shipped_sweeps_plan_the_recorded_points() {
    let golden =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/golden/sweep_plans.txt");
    let now = plan_digest();
    if std::env::var_os("METACHRON_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &now).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    for (a, b) in want.lines().zip(now.lines()) {
        assert_eq!(a, b, "a shipped sweep plans differently");
    }
    assert_eq!(want.lines().count(), now.lines().count());
}
