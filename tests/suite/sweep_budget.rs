//! Budgets: a point that would never finish ends as
//! `budget_exceeded` (time reached, NaN metrics, an `error` text) and the rest of its
//! chunk is written; step budgets of both engines; rows that are not `ok` say why.

use crate::common;

use common::scratch;
use metachron::batch::{run_batch, run_degrading, run_point, Engine};
use metachron::dataset::{rows, Column};
use metachron::error::SolverError;
use metachron::metrics::METRIC_COLUMNS;
use metachron::sample::Status;
use metachron::simulate::{Backend, PointResult, RunConfig};

fn small(t_final: f64) -> RunConfig {
    let mut c = RunConfig::default();
    c.params.n_legs = 3;
    c.params.n_nodes = 3;
    c.params.actuated = vec![true; 3];
    c.params.t_final = t_final;
    c
}

/// Every metric NaN; `t_run` (the horizon run, not a metric) is where the run stopped.
fn all_nan(r: &PointResult) -> bool {
    let m = &r.metrics;
    METRIC_COLUMNS
        .iter()
        .zip(m.scalars())
        .filter(|((name, _), _)| *name != "t_run")
        .all(|(_, x)| x.is_nan())
        && m.t_run == m.status.time()
        && m.pair_plv
            .iter()
            .chain(&m.leg_frequency)
            .all(|x| x.is_nan())
}

/// A sweep with one point that never finishes, scaled to a test: 12 points, one of which (K_M = 1e12:
/// a fixed step of ~1e-8 s) would run for hours; `--point-timeout 2` ends it and the
/// 11 others are written `ok`, all in one chunk.
#[test]
fn a_never_finishing_point_ends_over_budget_and_its_chunk_is_written() {
    let dir = scratch("budget");
    let vals: Vec<String> = (0..11).map(|i| format!("{}.0", 40 + i)).collect();
    let text = format!(
        "name = \"budget\"\n[base]\nn_legs = 3\nn_nodes = 3\nt_final = 0.3\n[[axes]]\nparam = \"k_m\"\nvalues = [{}, 1e12]\n",
        vals.join(", ")
    );
    let file = dir.join("budget.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let o = common::bin::command()
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--point-timeout", "2", "--batch", "12", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ds = rows::read_unverified(&out).unwrap();
    assert_eq!(ds.len(), 12);
    let text = |n: &str| match ds.column(n) {
        Some(Column::Text(v)) => v.clone(),
        _ => panic!("{n}"),
    };
    let num = |n: &str| match ds.column(n) {
        Some(Column::Num(v)) => v.clone(),
        _ => panic!("{n}"),
    };
    let (status, error, k_m) = (text("status"), text("error"), num("k_m"));
    let (time, disp, work) = (num("status_time"), num("displacement"), num("work"));
    for i in 0..12 {
        if k_m[i] == 1e12 {
            assert_eq!(status[i], "budget_exceeded");
            assert!(error[i].contains("budget exceeded"), "{}", error[i]);
            assert!(time[i] > 0.0 && time[i] < 0.3, "time reached {}", time[i]);
            assert!(disp[i].is_nan() && work[i].is_nan());
        } else {
            assert_eq!(status[i], "ok", "k_m = {}: {}", k_m[i], error[i]);
            assert!(error[i].is_empty() && disp[i].is_finite() && work[i].is_finite());
        }
    }
    let o = common::bin::command()
        .args(["check", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

/// Step budgets: `[fixed_step] max_steps` and `[solver] max_steps` end a run as
/// `budget_exceeded` after exactly that many steps, at the time those steps reach.
#[test]
fn step_budgets_end_both_engines_at_the_step_count() {
    let mut c = small(0.2);
    c.fixed_step.max_steps = Some(100);
    let r = run_point(&c, &Engine::Cpu, false, |_| {}).unwrap();
    assert_eq!(r.stats.steps, 100);
    match r.metrics.status {
        Status::BudgetExceeded { time } => {
            assert!((time - 100.0 * r.stats.fixed_step).abs() < 1e-12, "{time}")
        }
        s => panic!("{s:?}"),
    }
    assert!(all_nan(&r));

    let mut c = small(0.2);
    c.solver.max_steps = 50;
    let r = run_point(&c, &Engine::Reference, false, |_| {}).unwrap();
    assert_eq!(r.stats.steps, 50);
    assert!(
        matches!(r.metrics.status, Status::BudgetExceeded { time } if time > 0.0 && time < 0.2)
    );
    assert!(all_nan(&r));

    // Zero is refused by name, never taken as "no limit".
    let mut c = small(0.2);
    c.fixed_step.max_steps = Some(0);
    assert!(c.validate().unwrap_err().to_string().contains("max_steps"));
}

/// A wall-time budget on the reference stops a run of t_final = 1e8 s (1e10 output
/// samples) after the timeout, each point's clock starting when that point starts.
#[test]
fn point_timeout_stops_the_reference_and_each_point_has_its_own_clock() {
    let mut c = small(1e8);
    c.point_timeout = Some(0.5);
    let t0 = std::time::Instant::now();
    let r = run_batch(&[c.clone(), c], &Engine::Reference);
    let wall = t0.elapsed().as_secs_f64();
    for r in &r {
        let r = r.as_ref().unwrap();
        assert!(matches!(r.metrics.status, Status::BudgetExceeded { .. }));
        assert!(
            r.wall_seconds >= 0.5 && r.wall_seconds < 5.0,
            "{}",
            r.wall_seconds
        );
    }
    assert!(wall < 20.0, "{wall}");
}

/// Rows of a diverged run carry NaN metrics (before: displacement = 0, work = 0).
#[test]
fn diverged_runs_have_nan_metrics_and_say_why() {
    let mut c = small(0.5);
    c.fixed_step.h = Some(0.05); // far above 2/ω_max: the explicit elastic force blows up
    let r = run_point(&c, &Engine::Cpu, false, |_| {}).unwrap();
    assert!(
        matches!(r.metrics.status, Status::Diverged { .. }),
        "{:?}",
        r.metrics.status
    );
    assert!(all_nan(&r));
    assert!(r.metrics.status.describe().contains("finite range"));
}

/// GPU fault degradation (item 9), with a stand-in device that cannot run batches
/// above 3 points and fails outright on one poisoned point: batches are split and
/// retried, the poisoned point runs on the fallback, every point comes back in order.
#[test]
fn device_faults_split_the_batch_then_fall_back_per_point() {
    let cfgs: Vec<RunConfig> = (0..10)
        .map(|i| {
            let mut c = small(0.05);
            c.params.alpha = 100.0 + i as f64;
            c
        })
        .collect();
    let mut device_calls = Vec::new();
    let mut device = |part: &[RunConfig]| -> Result<Vec<PointResult>, SolverError> {
        device_calls.push(part.len());
        if part.len() > 3 || part.iter().any(|c| c.params.alpha == 107.0) {
            return Err(SolverError::gpu("out of memory"));
        }
        // The "device" result: the cpu engine, labelled as the device would.
        Ok(part
            .iter()
            .map(|c| {
                let mut r = run_point(c, &Engine::Cpu, false, |_| {}).unwrap();
                r.backend = Backend::Gpu;
                r
            })
            .collect())
    };
    let mut fell_back = Vec::new();
    let mut fallback = |part: &[RunConfig]| {
        fell_back.extend(part.iter().map(|c| c.params.alpha));
        run_batch(part, &Engine::Cpu)
    };
    let out = run_degrading(&cfgs, &mut device, &mut fallback, &|_| {});
    assert_eq!(out.len(), 10);
    for (c, r) in cfgs.iter().zip(&out) {
        let r = r.as_ref().unwrap();
        let alone = run_point(c, &Engine::Cpu, false, |_| {}).unwrap();
        assert_eq!(
            r.metrics.lag_order.to_bits(),
            alone.metrics.lag_order.to_bits()
        );
        let want = if c.params.alpha == 107.0 {
            Backend::Cpu
        } else {
            Backend::Gpu
        };
        assert_eq!(r.backend, want, "alpha {}", c.params.alpha);
    }
    assert_eq!(fell_back, vec![107.0]);
    assert!(device_calls.iter().all(|&n| n >= 1) && device_calls[0] == 10);
}

/// A refined sweep on the reference plans its later levels from its results, and every
/// level's points get the default budget a plain sweep's get: a robot whose estimate
/// is a fraction of a second but whose penalty (lambda = 1e10) makes the reference
/// crawl for minutes ends as budget_exceeded after the least budget (10 s), in its row.
#[test]
fn refined_reference_points_end_at_the_default_budget() {
    let dir = scratch("refined-budget");
    let file = dir.join("stiff.toml");
    std::fs::write(
        &file,
        "name = \"stiff\"\n[base]\nn_legs = 3\nn_nodes = 3\nt_final = 0.2\nlambda = 1e10\n\
         [[axes]]\nparam = \"alpha\"\nlinspace = { start = 50.0, stop = 100.0, num = 2 }\n\
         [refine]\nmax_level = 1\n",
    )
    .unwrap();
    let out = dir.join("out");
    let start = std::time::Instant::now();
    let o = common::bin::command()
        .args(["sweep", file.to_str().unwrap(), "--backend", "reference"])
        .args(["--out", out.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let wall = start.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        wall < 10.0 * metachron::cost::MIN_BUDGET,
        "{wall:.1} s: the points ran past their budget"
    );
    let ds = rows::read_unverified(&out).unwrap();
    assert_eq!(ds.len(), 2);
    match ds.column("status") {
        Some(Column::Text(s)) => assert!(
            s.iter().all(|s| s == "budget_exceeded"),
            "{s:?} after {wall:.1} s"
        ),
        _ => panic!("status"),
    }
    // Its plan says what all levels may cost: level 1 halves the one refined axis'
    // interval, so at most 3 points (the level-0 pair and their midpoint).
    let o = common::bin::command()
        .args([
            "sweep",
            file.to_str().unwrap(),
            "--backend",
            "reference",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(
        plan.contains("estimated time: ~")
            && plan.contains("at most (3 points, each at level 0's mean estimate); level 0: ~"),
        "{plan}"
    );
}
