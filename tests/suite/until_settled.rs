//! `--until-settled`: a run still changing at t_final continues from its kept state
//! (t_run > t_final), a settled one does not (t_run = t_final), on the cpu engine (solo
//! and in SIMD blocks) and on the GPU (resident state). A continued run is checked
//! against an independent single run: the same robot to the same horizon with the
//! window the continuation ends with (its last t_final/2), which must give the same
//! numbers bit for bit on the same engine (same step, same sample grid, same sums).
//! On the cpu engine the continuing lanes leave their blocks and go on in fresh ones;
//! every point must still get the bits of its single run in a block of its width.

use crate::common;

use common::scratch;
use metachron::batch::{run_batch, run_point, Engine};
use metachron::cpu_engine::run_batch_on;
use metachron::dataset::rows::read_unverified as read_dataset;
use metachron::dataset::Column;
use metachron::gpu::GpuEngine;
use metachron::integrate::lanes::Isa;
use metachron::metrics::Metrics;
use metachron::simulate::{PointResult, RunConfig};

/// 5 legs × 4 nodes over 2 s, continued up to 8 s.
fn point(k_p: f64, until_settled: Option<f64>) -> RunConfig {
    let mut c = RunConfig::default();
    for o in ["n_legs=5", "n_nodes=4", "t_final=2", "dphi=1.5"] {
        c.params.apply_override(o).unwrap();
    }
    c.params.k_p = k_p;
    c.until_settled = until_settled;
    c.validate().unwrap();
    c
}

/// Still changing at 2 s (locked on the third quarter, not on the last one): settles
/// by 4 s. Found by scanning K_p on the cpu engine.
fn changing() -> RunConfig {
    point(3.0, Some(8.0))
}

/// Settled at 2 s (a metachronal wave on both halves of the window).
fn settled() -> RunConfig {
    point(30.0, Some(8.0))
}

/// The single run a continued one must equal: to `t_run` in one go, window the last
/// t_final/2 (the window a continuation keeps), no continuation.
fn single_run_twin(c: &RunConfig, t_run: f64) -> RunConfig {
    let mut t = c.clone();
    let half = 0.5 * c.params.t_final;
    t.params.t_final = t_run;
    t.metrics.window_start = Some(t_run - half);
    t.until_settled = None;
    t.validate().unwrap();
    t
}

fn assert_same(what: &str, a: &PointResult, b: &PointResult) {
    let (m, n): (&Metrics, &Metrics) = (&a.metrics, &b.metrics);
    assert_eq!(m.status, n.status, "{what}: status");
    assert_eq!(m.class, n.class, "{what}: class");
    assert_eq!(m.settled, n.settled, "{what}: settled");
    assert_eq!(a.stats.steps, b.stats.steps, "{what}: steps");
    let cols = metachron::metrics::METRIC_COLUMNS;
    for ((c, x), y) in cols.iter().zip(m.scalars()).zip(n.scalars()) {
        assert!(
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
            "{what}: {} {x} vs {y}",
            c.0
        );
    }
}

/// The two cases on one engine: `run(cfgs)` returns results in order.
fn check_engine(engine: &str, run: &dyn Fn(&[RunConfig]) -> Vec<PointResult>) {
    let (c, s) = (changing(), settled());
    let r = run(&[c.clone(), s.clone()]);
    let (rc, rs) = (&r[0], &r[1]);
    assert!(
        rc.metrics.status.is_ok(),
        "{engine}: {:?}",
        rc.metrics.status
    );
    assert!(
        rc.metrics.t_run > c.params.t_final,
        "{engine}: an unsettled run continues: t_run {}",
        rc.metrics.t_run
    );
    assert_eq!(rc.metrics.t_run, 4.0, "{engine}: settles after one step");
    assert_eq!(rc.metrics.settled, Some(true), "{engine}");
    assert_eq!(
        rs.metrics.t_run, s.params.t_final,
        "{engine}: settled: no step"
    );
    assert_eq!(rs.metrics.settled, Some(true), "{engine}");
    // At t_final the changing run was not settled (that is why it went on).
    let mut once = c.clone();
    once.until_settled = None;
    let r0 = run(std::slice::from_ref(&once));
    assert_eq!(r0[0].metrics.settled, Some(false), "{engine}: at t_final");
    assert_eq!(r0[0].metrics.t_run, 2.0);
    // Independent check: the single runs to the same horizons.
    let twins = run(&[
        single_run_twin(&c, rc.metrics.t_run),
        single_run_twin(&s, rs.metrics.t_run),
    ]);
    assert_same(&format!("{engine}: continued"), rc, &twins[0]);
    // A settled run is the run without --until-settled (its window: the second half).
    let mut plain = s.clone();
    plain.until_settled = None;
    assert_same(
        &format!("{engine}: settled"),
        rs,
        &run(std::slice::from_ref(&plain))[0],
    );
}

#[test]
fn cpu_solo_continues_unsettled_runs_only() {
    check_engine("cpu solo", &|cfgs| {
        cfgs.iter()
            .map(|c| run_point(c, &Engine::Cpu, false, |_| {}).unwrap())
            .collect()
    });
}

#[test]
fn cpu_blocks_continue_unsettled_lanes_only() {
    // Every call fills its blocks with copies, so each lane runs in a block of the
    // vector unit's width (a lane's result is bit-identical in any block of one width).
    check_engine("cpu blocks", &|cfgs| {
        let many: Vec<RunConfig> = cfgs.iter().cycle().take(8 * cfgs.len()).cloned().collect();
        let r: Vec<PointResult> = run_batch(&many, &Engine::Cpu)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        for (i, x) in r.iter().enumerate() {
            assert_same("copies", x, &r[i % cfgs.len()]);
        }
        r.into_iter().take(cfgs.len()).collect()
    });
}

/// `n` copies of each of `cfgs`, in order: each runs in blocks of the full width.
fn copies(cfgs: &[RunConfig], n: usize) -> Vec<RunConfig> {
    cfgs.iter()
        .flat_map(|c| std::iter::repeat_n(c.clone(), n))
        .collect()
}

fn cpu(cfgs: &[RunConfig]) -> Vec<PointResult> {
    run_batch(cfgs, &Engine::Cpu)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn cpu_batch_gathers_continuing_lanes_into_fresh_blocks_bit_for_bit() {
    // A batch where some runs continue and others do not, with and without the internal
    // couple (whose phase reads the step count: a continued lane must carry it on), and
    // one run whose step cap falls inside its continuation. 20 points: no block of one
    // lane on any width (the one-lane kernel is checked below).
    let w = Isa::detect().lanes();
    let mut cfgs = Vec::new();
    for couple in [&[][..], &["axo_f=350", "axo_omega=3"][..]] {
        for k_p in [2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 10.0, 15.0, 30.0] {
            let mut c = point(k_p, Some(8.0));
            for o in couple {
                c.params.apply_override(o).unwrap();
            }
            c.validate().unwrap();
            cfgs.push(c);
        }
    }
    cfgs.push(settled());
    let mut capped = changing();
    capped.until_settled = None;
    let at_t_final = cpu(std::slice::from_ref(&capped))[0].stats.steps;
    let cap = 3 * at_t_final / 2;
    capped.until_settled = Some(8.0);
    capped.fixed_step.max_steps = Some(cap as u64);
    cfgs.insert(3, capped);
    assert_eq!(cfgs.len() % 2, 0);

    let r = cpu(&cfgs);
    let continued = cfgs
        .iter()
        .zip(&r)
        .filter(|(c, x)| x.metrics.t_run > c.params.t_final)
        .count();
    assert!(
        (6..cfgs.len() - 6).contains(&continued),
        "a mix of continuing and finished runs: {continued} of {} continued",
        cfgs.len()
    );
    // The step cap counts from the run's start, across the lane's blocks.
    let h = r[3].stats.fixed_step;
    assert_eq!(r[3].stats.steps, cap, "capped: steps");
    assert_eq!(
        r[3].metrics.status,
        metachron::sample::Status::BudgetExceeded {
            time: cap as f64 * h
        },
        "capped: status"
    );
    assert_eq!(r[3].metrics.t_run, cap as f64 * h, "capped: t_run");
    // The independent reference: every other point as the single run it stands for (to
    // its t_run, the continuation's window; a finished one as run without
    // continuation), in blocks of the full width where nothing continues.
    let singles: Vec<RunConfig> = cfgs
        .iter()
        .zip(&r)
        .map(|(c, x)| {
            if x.metrics.t_run > c.params.t_final && x.metrics.status.is_ok() {
                single_run_twin(c, x.metrics.t_run)
            } else {
                let mut plain = c.clone();
                plain.until_settled = None;
                plain
            }
        })
        .collect();
    let reference = cpu(&copies(&singles, w));
    for (i, (c, x)) in cfgs.iter().zip(&r).enumerate() {
        if i == 3 {
            continue;
        }
        let what = format!(
            "point {i} (k_p {}, t_run {})",
            c.params.k_p, x.metrics.t_run
        );
        assert_same(&what, x, &reference[i * w]);
        assert_eq!(
            x.stats.steps as f64,
            (x.metrics.t_run / x.stats.fixed_step).round(),
            "{what}: steps to t_run"
        );
    }
}

#[test]
fn cpu_continuing_lane_keeps_the_width_of_its_first_block() {
    // A lone instance runs the one-lane kernel and continues on it; a lane whose block
    // mates have all finished continues in a padded block of the full width (the two
    // kernels may round differently), on every instruction set this CPU has.
    let (c, s) = (changing(), settled());
    let twin = single_run_twin(&c, 4.0);
    for isa in ["avx512", "avx2", "portable"]
        .into_iter()
        .filter_map(Isa::named)
    {
        let run = |cfgs: &[RunConfig]| -> Vec<PointResult> {
            run_batch_on(isa, cfgs)
                .into_iter()
                .map(Result::unwrap)
                .collect()
        };
        let what = |case: &str| format!("{}: {case}", isa.label());
        let alone = &run(std::slice::from_ref(&c))[0];
        assert_eq!(alone.metrics.t_run, 4.0, "{}", what("alone"));
        assert_same(&what("alone"), alone, &run(std::slice::from_ref(&twin))[0]);
        let pair = run(&[c.clone(), s.clone()]);
        assert_eq!(pair[0].metrics.t_run, 4.0);
        assert_same(
            &what("with a finished block mate"),
            &pair[0],
            &run(&copies(std::slice::from_ref(&twin), isa.lanes()))[0],
        );
    }
}

#[test]
fn gpu_continues_unsettled_instances_from_resident_state() {
    let Some(ctx) = common::gpu::gpu_context("gpu_continues_unsettled_instances") else {
        return;
    };
    let mut engine = GpuEngine::new(&ctx);
    // Several dispatches per segment: continuation crosses dispatch boundaries.
    engine.steps_per_dispatch = Some(3000);
    let gpu = |cfgs: &[RunConfig]| engine.run(cfgs).expect("gpu batch");
    check_engine("gpu", &gpu);
    // And the GPU's continued rows agree with the cpu engine's: same horizon, class and
    // settled flag, metrics to round-off (summation order, FMA, the shader's sin/cos).
    let cfgs = [changing(), settled()];
    for (g, c) in gpu(&cfgs).iter().zip(&cfgs) {
        let cpu = run_point(c, &Engine::Cpu, false, |_| {}).unwrap();
        assert_eq!(g.metrics.t_run, cpu.metrics.t_run);
        assert_eq!(g.metrics.class, cpu.metrics.class);
        assert_eq!(g.metrics.settled, cpu.metrics.settled);
        assert_eq!(g.stats.steps, cpu.stats.steps);
        for (x, y) in g.metrics.scalars().iter().zip(cpu.metrics.scalars()) {
            assert!((x - y).abs() <= 1e-9 * y.abs().max(1.0), "gpu {x} cpu {y}");
        }
    }
}

#[test]
fn gpu_reports_settled_like_the_cpu() {
    let Some(ctx) = common::gpu::gpu_context("gpu_reports_settled_like_the_cpu") else {
        return;
    };
    // Both values of the flag, without continuation: the kernel's midpoint snapshot.
    let mut cfgs = vec![point(3.0, None), point(30.0, None)];
    cfgs.extend(
        common::validation::validation_points()
            .into_iter()
            .map(|(_, mut c)| {
                c.params.t_final = 0.5;
                c
            }),
    );
    let gpu = GpuEngine::new(&ctx).run(&cfgs).expect("gpu batch");
    let mut seen = Vec::new();
    for (g, c) in gpu.iter().zip(&cfgs) {
        let cpu = run_point(c, &Engine::Cpu, false, |_| {}).unwrap();
        assert_eq!(g.metrics.settled, cpu.metrics.settled, "{:?}", c.params);
        seen.push(g.metrics.settled);
    }
    assert!(
        seen.contains(&Some(true)) && seen.contains(&Some(false)),
        "{seen:?}"
    );
}

fn sweep(args: &[&str]) -> std::process::Output {
    common::bin::command()
        .arg("sweep")
        .args(args)
        .arg("--quiet")
        .output()
        .unwrap()
}

const SWEEP: &str = "name = \"u\"\n[base]\nt_final = 2.0\nn_legs = 5\nn_nodes = 4\ndphi = 1.5\n\
                     [[axes]]\nparam = \"k_p\"\nvalues = [3.0, 30.0]\n";

fn num(dir: &std::path::Path, col: &str) -> Vec<f64> {
    let ds = read_dataset(dir).unwrap();
    let ids = ds.point_ids();
    let Some(Column::Num(v)) = ds.column(col) else {
        panic!("{col}")
    };
    let mut rows: Vec<(u64, f64)> = ids.into_iter().zip(v.iter().copied()).collect();
    rows.sort_by_key(|r| r.0);
    rows.into_iter().map(|r| r.1).collect()
}

#[test]
fn sweep_rows_record_the_horizon_run_and_resume_keeps_it() {
    let dir = scratch("sweep");
    let file = dir.join("u.toml");
    std::fs::write(&file, format!("until_settled = 8.0\n{SWEEP}")).unwrap();
    let out = dir.join("out");
    let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
    let st = sweep(&[f, "--out", o, "--backend", "cpu", "--batch", "1"]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(num(&out, "t_run"), [4.0, 2.0]);
    assert_eq!(num(&out, "settled"), [1.0, 1.0]);
    // Resuming a complete dataset runs nothing and keeps the rows; --validate reruns
    // each row on the reference to the horizon it records, with the continuation's window.
    let st = sweep(&[
        f,
        "--out",
        o,
        "--backend",
        "cpu",
        "--resume",
        "--validate",
        "2",
    ]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(num(&out, "t_run"), [4.0, 2.0]);
    let csv = std::fs::read_to_string(out.join("validation-shard0.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for line in lines {
        let v: Vec<&str> = line.split(',').collect();
        let f = |name: &str| v[col(name)].parse::<f64>().unwrap();
        assert_eq!(f("t_run_sweep"), f("t_run_reference"), "{line}");
        // The stiff reference and the fixed-step engine agree closely on the same window.
        assert!(
            (f("lag_order_sweep") - f("lag_order_reference")).abs() < 1e-3,
            "{line}"
        );
    }

    // The same sweep with the horizon on the command line: the same rows; resuming
    // it without the flag would mix horizons and is refused.
    let plain = dir.join("plain.toml");
    std::fs::write(&plain, SWEEP).unwrap();
    let out2 = dir.join("out2");
    let (p, o2) = (plain.to_str().unwrap(), out2.to_str().unwrap());
    let st = sweep(&[
        p,
        "--out",
        o2,
        "--backend",
        "cpu",
        "--until-settled",
        "8",
        "--batch",
        "1",
    ]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(num(&out2, "t_run"), [4.0, 2.0]);
    assert_eq!(num(&out2, "lag_order"), num(&out, "lag_order"));
    let st = sweep(&[p, "--out", o2, "--backend", "cpu", "--resume"]);
    assert_eq!(st.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&st.stderr).contains("different sweep"),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulate_continues_on_cpu_and_refuses_on_the_reference() {
    let args = [
        "simulate",
        "--set",
        "n_legs=5",
        "--set",
        "n_nodes=4",
        "--set",
        "t_final=2",
        "--set",
        "dphi=1.5",
        "--set",
        "k_p=3",
        "--quiet",
    ];
    let run = |extra: &[&str]| {
        common::bin::command()
            .args(args)
            .args(extra)
            .output()
            .unwrap()
    };
    let st = run(&["--until-settled", "8", "--backend", "cpu"]);
    let text = String::from_utf8_lossy(&st.stdout);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(
        text.contains("horizon t_run        4 s | settled yes"),
        "{text}"
    );
    let st = run(&["--until-settled", "8", "--backend", "reference"]);
    assert_eq!(st.status.code(), Some(2));
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(
        err.contains("--until-settled") && err.contains("reference"),
        "{err}"
    );
    // A horizon that allows no continuation step is refused with the allowed range.
    let st = run(&["--until-settled", "3", "--backend", "cpu"]);
    assert_eq!(st.status.code(), Some(2));
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(
        err.contains("until_settled") && err.contains(">= 2 t_final"),
        "{err}"
    );
}
