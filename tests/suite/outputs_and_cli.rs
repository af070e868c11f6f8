//! Parquet round trips, parameter errors and the `simulate` command end to end.

use crate::common;

use arrow_array::{Array, Float64Array, ListArray, StringArray, UInt32Array};
use common::scratch;
use metachron::batch::{run_point, Engine};
use metachron::error::ParamError;
use metachron::params::Params;
use metachron::parquet::{metrics_batch, read_parquet, timeseries_batch, write_atomic};
use metachron::simulate::RunConfig;

fn short_run() -> (RunConfig, metachron::simulate::PointResult) {
    let mut cfg = RunConfig::default();
    cfg.params.t_final = 0.2;
    cfg.params
        .apply_override("actuated=1,0,1,0,1,0,1,0,1")
        .unwrap();
    cfg.solver.rtol = 1e-4;
    let r = run_point(&cfg, &Engine::Reference, true, |_| {}).unwrap();
    (cfg, r)
}

#[test]
fn timeseries_and_metrics_round_trip_through_parquet() {
    let dir = scratch("roundtrip");
    let (cfg, r) = short_run();
    let meta = vec![(
        "metachron.version".to_string(),
        metachron::VERSION.to_string(),
    )];

    let ts = dir.join("run.parquet");
    write_atomic(&ts, &timeseries_batch(&r.samples, 9).unwrap(), &meta).unwrap();
    let (batches, kv) = read_parquet(&ts).unwrap();
    assert_eq!(
        kv.get("metachron.version").map(String::as_str),
        Some(metachron::VERSION)
    );
    let b = &batches[0];
    assert_eq!(b.num_rows(), r.samples.len());
    assert_eq!(b.num_rows(), 21);
    let psi3 = b
        .column_by_name("psi_3")
        .unwrap()
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    for (k, s) in r.samples.iter().enumerate() {
        assert_eq!(psi3.value(k), s.psi[2]);
    }
    let field = b.schema().field_with_name("tip_x_9").unwrap().clone();
    assert_eq!(field.metadata().get("unit").map(String::as_str), Some("m"));
    // No temporary file is left next to the output.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(leftovers.len(), 1);

    let mp = dir.join("metrics.parquet");
    write_atomic(
        &mp,
        &metrics_batch(&cfg.params, &r.metrics, "reference").unwrap(),
        &meta,
    )
    .unwrap();
    let (batches, _) = read_parquet(&mp).unwrap();
    let b = &batches[0];
    assert_eq!(b.num_rows(), 1);
    let col = |name: &str| {
        b.column_by_name(name)
            .unwrap_or_else(|| panic!("column {name}"))
            .clone()
    };
    let alpha = col("alpha");
    assert_eq!(
        alpha
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .value(0),
        500.0
    );
    let n_legs = col("n_legs");
    assert_eq!(
        n_legs
            .as_any()
            .downcast_ref::<UInt32Array>()
            .unwrap()
            .value(0),
        9
    );
    // The mask is a list of booleans, one per leg.
    let mask = col("actuated");
    let mask = mask.as_any().downcast_ref::<ListArray>().unwrap().value(0);
    let mask = mask
        .as_any()
        .downcast_ref::<arrow_array::BooleanArray>()
        .unwrap();
    let bits: Vec<bool> = (0..mask.len()).map(|i| mask.value(i)).collect();
    assert_eq!(
        bits,
        [true, false, true, false, true, false, true, false, true]
    );
    let lag = col("mean_lag");
    assert_eq!(
        lag.as_any()
            .downcast_ref::<Float64Array>()
            .unwrap()
            .value(0)
            .to_bits(),
        r.metrics.mean_lag.to_bits()
    );
    let status = col("status");
    assert_eq!(
        status
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .value(0),
        "ok"
    );
    let plv = col("pair_plv");
    let plv = plv.as_any().downcast_ref::<ListArray>().unwrap();
    assert_eq!(plv.value(0).len(), 8);
    assert_eq!(
        b.schema()
            .field_with_name("mean_speed")
            .unwrap()
            .metadata()
            .get("unit")
            .map(String::as_str),
        Some("m/s")
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_parameters_name_the_field_and_the_range() {
    let check = |assign: &str, needle: &str| {
        let mut p = Params::default();
        let err = p
            .apply_override(assign)
            .and_then(|_| p.validate())
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains(needle), "{assign}: `{text}` lacks `{needle}`");
        err
    };
    assert!(matches!(
        check("n_legs=1", "n_legs"),
        ParamError::OutOfRange { .. }
    ));
    check("n_legs=1", "[2, 64]");
    check("k_m=-3", "> 0");
    check("leg_length=0", "leg_length");
    check("body_mass=nan", "body_mass");
    check("rho=inf", "finite");
    check("n_nodes=2.5", "integer");
    assert!(matches!(
        check("alphaa=5", "alphaa"),
        ParamError::UnknownKey { .. }
    ));
    // A typo is answered with the parameter it was meant to be (params::SCALAR_PARAMS
    // has k_p and k_m, one edit away from k_q; nothing is near `temperature`).
    check(
        "k_q=5",
        "unknown parameter `k_q`; did you mean `k_m` or `k_p`?",
    );
    let far = check("temperature=5", "unknown parameter `temperature`");
    assert!(!far.to_string().contains("did you mean"), "{far}");
    check("actuated=1,0,1", "one per leg");
    check("actuated=1,x,1", "actuated");
    check("omega=fast", "omega");
    check("psi_init=0,1", "psi_init");
    assert!(matches!(
        check("alpha", "key=value"),
        ParamError::BadAssignment(_)
    ));
}

#[test]
fn config_files_reject_unknown_keys_and_accept_tables() {
    let ok = "alpha = 50\nbeta = 50.0\nactuated = \"first\"\n[solver]\nrtol = 1e-4\n[metrics]\ndt_out = 0.02\n";
    let cfg = RunConfig::from_toml_str(ok, "ok.toml").unwrap();
    assert_eq!(cfg.params.alpha, 50.0);
    assert_eq!(cfg.params.actuated.iter().filter(|&&a| a).count(), 1);
    assert_eq!(cfg.solver.rtol, 1e-4);
    assert_eq!(cfg.metrics.dt_out, 0.02);
    let err = RunConfig::from_toml_str("alphaa = 5.0\n", "bad.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.toml") && err.contains("alphaa"), "{err}");
    let err = RunConfig::from_toml_str("[solver]\nrtoll = 1\n", "bad.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("rtoll"), "{err}");
}

#[test]
fn simulate_command_writes_its_outputs_and_pictures() {
    let dir = scratch("cli");
    let out = common::bin::command()
        .args([
            "simulate",
            "--quiet",
            "--set",
            "t_final=0.3",
            "--set",
            "dphi=-90deg",
            "--rtol",
            "1e-4",
        ])
        .arg("--out")
        .arg(dir.join("run.parquet"))
        .arg("--metrics")
        .arg(dir.join("m.parquet"))
        .arg("--snapshots")
        .arg(dir.join("pics"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("lag order") && stdout.contains("status ok"),
        "{stdout}"
    );
    assert!(dir.join("run.parquet").is_file() && dir.join("m.parquet").is_file());
    let pngs = std::fs::read_dir(dir.join("pics")).unwrap().count();
    assert_eq!(pngs, 7, "6 snapshots + basal_angles.png");
    let (b, kv) = read_parquet(&dir.join("m.parquet")).unwrap();
    assert!(kv.get("metachron.solver").unwrap().contains("rtol"));
    let dphi = b[0].column_by_name("dphi").unwrap();
    let dphi = dphi
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .value(0);
    assert!((dphi + std::f64::consts::FRAC_PI_2).abs() < 1e-12);

    // A bad override is a clear error, exit code 2, and no output file.
    let bad = common::bin::command()
        .args(["simulate", "--quiet", "--set", "zeta=-1", "--metrics"])
        .arg(dir.join("never.parquet"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("zeta") && err.contains(">= 0"), "{err}");
    assert!(!dir.join("never.parquet").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_shipped_paper_point_file_is_the_default_configuration() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/paper-point.toml");
    let cfg = RunConfig::from_toml_file(&path).unwrap();
    cfg.validate().unwrap();
    let def = RunConfig::default();
    for spec in metachron::params::SCALAR_PARAMS {
        let (a, b) = (
            cfg.params.scalar(spec.name).unwrap(),
            def.params.scalar(spec.name).unwrap(),
        );
        assert!(
            (a - b).abs() <= 1e-15 * b.abs(),
            "{}: {a} vs {b}",
            spec.name
        );
    }
    assert_eq!(cfg.params.actuated, def.params.actuated);
    assert_eq!(cfg.solver, def.solver);
    let (t, d) = (cfg.metrics.thresholds, def.metrics.thresholds);
    assert!((t.slip_max - d.slip_max).abs() < 1e-15 && (t.lag_min - d.lag_min).abs() < 1e-15);
}

#[test]
fn simulate_runs_on_the_cpu_backend() {
    let out = common::bin::command()
        .args([
            "simulate",
            "--quiet",
            "--backend",
            "cpu",
            "--set",
            "t_final=0.5",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("backend cpu")
            && stdout.contains("fixed step")
            && stdout.contains("status ok"),
        "{stdout}"
    );
}
