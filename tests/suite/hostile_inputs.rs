//! Hostile input: extreme `--set` values, mutated sweep files and files that are no
//! sweep at all. Each case either exits 2 with a message that names the field, or runs
//! and ends (exit 0, or 1 for a point that is not ok) well within a watchdog's bound.
//! None may panic, and none may run on without limit.

use crate::common;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::scratch;

/// Far above what any case needs (the slowest runs into a 2 s --point-timeout): a
/// case still running then runs without limit.
const WATCHDOG: Duration = Duration::from_secs(120);

/// What a case must do.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Exit 2, the error naming this (the field, or the flag).
    Refused(&'static str),
    /// Run and end: exit 0 or 1 (a point that is not ok).
    Ends,
}

struct Outcome {
    code: Option<i32>,
    stderr: String,
}

fn run(args: &[&str]) -> Outcome {
    let mut child = common::bin::command()
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start metachron");
    // Drain stderr on a thread so that a chatty child never blocks on a full pipe.
    let mut pipe = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`metachron {}` ran on past the watchdog", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code(),
        stderr: reader.join().unwrap_or_default(),
    }
}

fn check(args: &[&str], expect: Expect) {
    let o = run(args);
    let what = format!("`metachron {}`", args.join(" "));
    assert!(
        !o.stderr.contains("panicked"),
        "{what} panicked: {}",
        o.stderr
    );
    match expect {
        Expect::Refused(name) => {
            assert_eq!(
                o.code,
                Some(2),
                "{what}: expected exit 2, stderr: {}",
                o.stderr
            );
            assert!(
                o.stderr.contains(name),
                "{what}: the error does not name `{name}`: {}",
                o.stderr
            );
        }
        Expect::Ends => assert!(
            matches!(o.code, Some(0 | 1)),
            "{what}: expected it to run and end (exit 0 or 1), got {:?}: {}",
            o.code,
            o.stderr
        ),
    }
}

/// `--set` values at and past every edge, on the cpu and reference backends.
#[test]
#[ignore = "long (the full suite runs it): about a hundred extreme --set runs on two backends, ~35 s of one core"]
fn extreme_set_values_are_refused_by_name_or_run_and_end() {
    use Expect::*;
    let cases: &[(&[&str], Expect)] = &[
        (&["leg_length=1e-300"], Refused("leg_length")),
        (&["leg_length=1e-8"], Refused("leg_length")),
        (&["leg_length=1e300"], Refused("leg_length")),
        (&["rho=1e-300"], Refused("rho")),
        (&["rho=1e300"], Refused("rho")),
        (&["k_m=1e300"], Refused("k_m")),
        (&["k_m=1e-300"], Refused("k_m")),
        (&["body_mass=1e-300"], Refused("body_mass")),
        (&["t_final=1e300"], Refused("t_final")),
        (&["t_final=1e18"], Refused("t_final")),
        (&["t_final=nan"], Refused("t_final")),
        (&["t_final=inf"], Refused("t_final")),
        (&["t_final=-1"], Refused("t_final")),
        (&["t_final=0"], Refused("t_final")),
        (&["alpha=-5"], Refused("alpha")),
        (&["n_legs=1000"], Refused("n_legs")),
        (&["n_legs=1e300"], Refused("n_legs")),
        (&["n_nodes=1"], Refused("n_nodes")),
        (&["n_nodes=2.5"], Refused("n_nodes")),
        (&["omega=1e300"], Refused("omega")),
        (&["psi1=1e300"], Refused("psi1")),
        (&["dphi=nan"], Refused("dphi")),
        (&["epsilon=1e300"], Refused("epsilon")),
        (&["lambda=1e-300"], Refused("lambda")),
        (&["zeta=-1"], Refused("zeta")),
        (&["g=1e300"], Refused("g")),
        (&["x_t=1e-300"], Refused("x_t")),
        (&["tau_t=0"], Refused("tau_t")),
        (&["l_alpha=1e300"], Refused("l_alpha")),
        (&["actuated=2,0"], Refused("actuated")),
        (&["psi_init=1,2"], Refused("psi_init")),
        (&["omega_legs=nan"], Refused("omega_legs")),
        (&["bogus=1"], Refused("bogus")),
        (&["alpha"], Refused("alpha")),
        // A tiny leg for its mesh: refused by the node spacing it gives.
        (&["leg_length=1e-5", "n_nodes=12"], Refused("n_nodes")),
        // Stiff legs need a tiny step: an hour-long run is refused with its estimate ...
        (&["k_m=1e9"], Refused("--max-estimate")),
        // ... and one bounded by --point-timeout runs and ends.
        (&["k_m=1e9", "t_final=50", "--point-timeout", "2"], Ends),
        (&["t_final=1e8", "--point-timeout", "2"], Ends),
        (&["t_final=0.05", "--dt-out", "1e-308"], Refused("dt_out")),
        (
            &["t_final=0.05", "--dt-out", "1e-12"],
            Refused("--max-estimate"),
        ),
        (
            &["t_final=0.05", "--max-estimate", "0"],
            Refused("--max-estimate"),
        ),
        (
            &["t_final=0.05", "--max-estimate", "nan"],
            Refused("--max-estimate"),
        ),
        (
            &["t_final=0.05", "--point-timeout", "-1"],
            Refused("point-timeout"),
        ),
        (&["epsilon=1e9", "t_final=0.05"], Ends),
        (&["lambda=1e9", "t_final=0.05"], Ends),
        (&["omega=1e6", "t_final=0.05"], Refused("omega")),
        (&["omega_legs=1e300,1", "n_legs=2"], Refused("omega_legs")),
        (&["terrain_height=1e12"], Refused("terrain_height")),
        (&["axo_omega=-1e5"], Refused("axo_omega")),
        (&["leg_length=1e-3", "n_nodes=2", "t_final=0.05"], Ends),
        (&["rho=1e9", "body_mass=1e-9", "t_final=0.05"], Ends),
    ];
    // A horizon of 4e12 fixed steps: below what the fixed-step engines resolve; the
    // adaptive reference has no fixed step, and its budget ends it.
    let long: &[(&[&str], Expect, &str)] = &[
        (
            &["t_final=1e9", "--point-timeout", "2"],
            Refused("fixed step h"),
            "cpu",
        ),
        (&["t_final=1e9", "--point-timeout", "2"], Ends, "reference"),
    ];
    let both = cases
        .iter()
        .flat_map(|(s, e)| [(*s, *e, "cpu"), (*s, *e, "reference")]);
    for (sets, expect, backend) in both.chain(long.iter().copied()) {
        {
            let slow = backend == "reference" && matches!(expect, Ends);
            if slow && !sets.contains(&"--point-timeout") {
                // The reference's share of the runs that end: only the bounded ones.
                continue;
            }
            let mut args = vec!["simulate", "--quiet", "--backend", backend];
            for s in sets.iter() {
                if s.starts_with("--") || !s.contains('=') && s.parse::<f64>().is_ok() {
                    args.push(s);
                } else {
                    args.extend(["--set", s]);
                }
            }
            check(&args, expect);
        }
    }
}

const BASE: &str = "name = \"hostile\"\n[base]\nn_legs = 3\nn_nodes = 3\nt_final = 0.05\n";
const AXIS: &str = "[[axes]]\nparam = \"alpha\"\nvalues = [50.0, 100.0]\n";

/// Sweep files with one thing broken each, and files that are no sweep at all.
#[test]
fn mutated_sweep_files_are_refused_by_name_or_run_and_end() {
    use Expect::*;
    let dir = scratch("hostile-sweeps");
    let with = |base_extra: &str, rest: &str| format!("{BASE}{base_extra}{rest}");
    let cases: Vec<(String, Expect)> = vec![
        (with("", AXIS), Ends),
        (BASE.replace("0.05", "nan") + AXIS, Refused("t_final")),
        (BASE.replace("0.05", "1e300") + AXIS, Refused("t_final")),
        (with("leg_length = 1e-300\n", AXIS), Refused("leg_length")),
        (with("leg_length = 1e-8\n", AXIS), Refused("leg_length")),
        (with("rho = -1.0\n", AXIS), Refused("rho")),
        (with("n_nodes = 40\n", AXIS), Refused("n_nodes")),
        (
            with("", "[[axes]]\nparam = \"leg_length\"\nvalues = [1.0, 1e-300]\n"),
            Refused("leg_length"),
        ),
        (
            with("", "[[axes]]\nparam = \"k_m\"\nvalues = [50.0, 1e300]\n"),
            Refused("k_m"),
        ),
        (
            with("", "[[axes]]\nparam = \"leg_length\"\nvalues = [1.0, 1e-8]\n"),
            Refused("leg_length"),
        ),
        (
            with("", "[[axes]]\nparam = \"k_m\"\nvalues = [50.0, 1e9]\n")
                .replace("0.05", "5000.0"),
            Refused("k_m"),
        ),
        (
            with("", &format!("{AXIS}[metrics]\ndt_out = 1e-308\n")),
            Refused("dt_out"),
        ),
        (
            with("", &format!("{AXIS}[fixed_step]\nh = 1e-300\n")),
            Refused("fixed step h"),
        ),
        (
            with("", &format!("{AXIS}[fixed_step]\nmax_steps = 0\n")),
            Refused("max_steps"),
        ),
        (
            with("", "[[axes]]\nparam = \"alpha\"\nlinspace = { start = 1.0, stop = 2.0, num = 10000000000 }\n"),
            Refused("num"),
        ),
        (
            with("", "[[axes]]\nparam = \"alpha\"\nlogspace = { start = 0.0, stop = 2.0, num = 3 }\n"),
            Refused("start"),
        ),
        (
            with("", "[[axes]]\nparam = \"alpha\"\nlinspace = { start = -1e300, stop = 1e300, num = 3 }\n"),
            Refused("alpha"),
        ),
        (
            with("", "[[axes]]\nparam = \"t_final\"\nvalues = [0.05, 1e18]\n"),
            Refused("t_final"),
        ),
        (format!("repeats = 0\n{BASE}{AXIS}"), Refused("repeats")),
        (format!("bogus = 1\n{BASE}{AXIS}"), Refused("bogus")),
        (format!("{BASE}{AXIS}").replace("[[axes]]", "[[axes]]\nstart = 1"), Refused("start")),
        ("\u{0}\u{1}garbage = [".to_string(), Refused("hostile-")),
    ];
    for (k, (text, expect)) in cases.iter().enumerate() {
        let file = dir.join(format!("hostile-{k}.toml"));
        std::fs::write(&file, text).unwrap();
        let f = file.to_str().unwrap();
        check(&["sweep", f, "--dry-run"], *expect);
        if matches!(expect, Ends) {
            let out = dir.join(format!("out-{k}"));
            check(
                &["sweep", f, "--out", out.to_str().unwrap(), "--quiet"],
                Ends,
            );
        }
    }
    // A point that would run for hours in a sweep: refused with its estimate, or run
    // under --point-timeout and ended.
    let stiff = dir.join("stiff.toml");
    std::fs::write(
        &stiff,
        format!("{BASE}[[axes]]\nparam = \"k_m\"\nvalues = [50.0, 1e9]\n")
            .replace("0.05", "5000.0"),
    )
    .unwrap();
    let out = dir.join("out-stiff");
    let s = stiff.to_str().unwrap();
    let o = out.to_str().unwrap();
    check(
        &["sweep", s, "--out", o, "--quiet"],
        Refused("--max-estimate"),
    );
    check(
        &["sweep", s, "--out", o, "--quiet", "--point-timeout", "2"],
        Ends,
    );
}

/// Files that are not sweep or config files: devices, directories, huge files.
#[test]
fn input_files_are_read_with_a_size_limit() {
    use Expect::*;
    let dir = scratch("hostile-files");
    let huge = dir.join("huge.toml");
    let mut text = String::from(BASE);
    text.push_str(&"# padding\n".repeat(600_000));
    std::fs::write(&huge, text).unwrap();
    let h = huge.to_str().unwrap();
    // The directory's path is named in the error (a 'static copy for the table).
    let d: &'static str = Box::leak(dir.to_str().unwrap().to_string().into_boxed_str());
    // A device is refused before a byte is read (a FIFO likewise: guarded_files.rs).
    check(&["sweep", "/dev/zero", "--dry-run"], Refused("is a device"));
    check(
        &["simulate", "--config", "/dev/zero"],
        Refused("is a device"),
    );
    check(&["sweep", h, "--dry-run"], Refused("4 MiB"));
    check(&["simulate", "--config", h], Refused("4 MiB"));
    check(&["sweep", d, "--dry-run"], Refused(d));
    check(&["simulate", "--config", d], Refused(d));
}

/// The file and the place inside it are each named once.
#[test]
fn messages_name_the_file_and_the_place_once() {
    let dir = scratch("hostile-messages");
    let file = dir.join("e.toml");
    std::fs::write(&file, "name = \"e\"\n[base]\nt_final = nan\n").unwrap();
    let f = file.to_str().unwrap();
    let o = run(&["sweep", f, "--dry-run"]);
    assert_eq!(o.code, Some(2));
    assert_eq!(o.stderr.matches(f).count(), 1, "{}", o.stderr);
    assert_eq!(o.stderr.matches("[base]").count(), 1, "{}", o.stderr);
    assert!(o.stderr.contains("`t_final`"), "{}", o.stderr);
    std::fs::write(
        &file,
        "name = \"e\"\n[base]\nt_final = 1.0\n[metrics]\ndt_out = 5.0\n",
    )
    .unwrap();
    let o = run(&["sweep", f, "--dry-run"]);
    assert_eq!(o.code, Some(2));
    assert_eq!(o.stderr.matches(f).count(), 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("[metrics]: setting `dt_out`"),
        "{}",
        o.stderr
    );
}

/// Studies and probes: run by hand (`--ignored`), not by the suite.
mod study {
    /// The hostile probe (run once, figures in docs/replay-and-report.md, "Hostile input
    /// probe"): seeded hostile `--set` values on every parameter and mutated sweep files,
    /// through the library as the command line uses it. Counts panics, accepted runs that
    /// take more than 10x their estimate, and `ok` runs above the inextensibility limit;
    /// panics and `ok` runs above the limit must be 0. `METACHRON_PROBE_CASES` sets the number of `--set` cases
    /// (default 1000; as many sweep mutations).
    ///
    /// `cargo test --release --test suite hostile_probe -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn hostile_probe() {
        use metachron::batch::{run_point, Engine};
        use metachron::cost::{estimate, Mode, MEASURED};
        use metachron::params::{LIST_PARAMS, SCALAR_PARAMS};
        use metachron::sample::MAX_INEXTENSIBILITY;
        use metachron::simulate::{Backend, RunConfig};
        use std::panic::{catch_unwind, AssertUnwindSafe};

        let cases: usize = std::env::var("METACHRON_PROBE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        const FIXED: &[&str] = &[
            "0", "-0", "-1", "1e-320", "1e-300", "1e-12", "1e-6", "0.5", "2.5", "1e6", "1e12",
            "1e13", "1e300", "-1e300", "1e308", "nan", "inf", "-inf", "abc", "", "90deg", "1,2",
            "1,2,3", "true", "0x10",
        ];
        let value = |next: &mut dyn FnMut() -> u64| -> String {
            if next() % 3 == 0 {
                FIXED[(next() % FIXED.len() as u64) as usize].to_string()
            } else {
                let e = (next() % 31) as f64 - 15.0 + (next() % 1000) as f64 / 1000.0;
                let sign = if next() % 4 == 0 { "-" } else { "" };
                format!("{sign}{:e}", 10f64.powf(e))
            }
        };
        let names: Vec<&str> = SCALAR_PARAMS
            .iter()
            .map(|s| s.name)
            .chain(LIST_PARAMS.iter().copied())
            .chain(["terrain"])
            .collect();
        let (mut refused, mut estimate_refused, mut ran, mut panics) = (0, 0, 0, 0);
        let (mut over_10x, mut invalid_ok, mut invalid_model) = (0, 0, 0);
        let mut worst_ratio: f64 = 0.0;
        for case in 0..cases {
            let k = 1 + (next() % 2) as usize;
            let sets: Vec<String> = (0..k)
                .map(|_| {
                    let name = names[(next() % names.len() as u64) as usize];
                    format!("{name}={}", value(&mut next))
                })
                .collect();
            let backend = if case % 5 == 0 {
                Backend::Reference
            } else {
                Backend::Cpu
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let mut cfg = RunConfig::default();
                for base in ["n_legs=3", "n_nodes=3", "t_final=0.2"] {
                    cfg.params.apply_override(base).unwrap();
                }
                for s in &sets {
                    if cfg.params.apply_override(s).is_err() {
                        return None;
                    }
                }
                if cfg.params.validate().is_err() {
                    return None;
                }
                let est = match estimate(&cfg, backend, Mode::Solo, &MEASURED) {
                    Ok(e) if e.seconds <= 20.0 => e,
                    _ => return Some(None),
                };
                // A watchdog: a run past it counts as over 10x (estimates here are <= 20 s, but
                // most are far below 2 s).
                cfg.point_timeout = Some(20.0);
                let engine = match backend {
                    Backend::Reference => Engine::Reference,
                    _ => Engine::Cpu,
                };
                let t = std::time::Instant::now();
                let r = run_point(&cfg, &engine, false, |_| {});
                Some(Some((est.seconds, t.elapsed().as_secs_f64(), r.ok())))
            }));
            match outcome {
                Err(_) => {
                    panics += 1;
                    println!("PANIC: {sets:?} on {backend:?}");
                }
                Ok(None) => refused += 1,
                Ok(Some(None)) => estimate_refused += 1,
                Ok(Some(Some((est, wall, r)))) => {
                    ran += 1;
                    // Estimates are printed to 0.1 s at the least (a process starts in less).
                    let ratio = wall / est.max(0.1);
                    worst_ratio = worst_ratio.max(ratio);
                    if ratio > 10.0 {
                        over_10x += 1;
                        println!(
                            "OVER 10x: {sets:?} on {backend:?}: {wall:.2} s, estimate {est:.3} s"
                        );
                    }
                    if let Some(r) = r {
                        let m = &r.metrics;
                        if m.status.label() == "invalid_model" {
                            invalid_model += 1;
                        }
                        let above = m.max_inextensibility > MAX_INEXTENSIBILITY
                            || m.max_inextensibility.is_nan();
                        if m.status.is_ok() && above {
                            invalid_ok += 1;
                            println!("OK ABOVE THE LIMIT: {sets:?}: {}", m.max_inextensibility);
                        }
                    }
                }
            }
        }
        // Sweep-file mutations: a key's value replaced, a line dropped or doubled.
        let base = "name = \"probe\"\nseed = 3\nrepeats = 2\n[base]\nn_legs = 3\nn_nodes = 3\nt_final = 0.1\n[[axes]]\nparam = \"alpha\"\nlogspace = { start = 50.0, stop = 5000.0, num = 3 }\n[[axes]]\nparam = \"beta\"\nvalues = [50.0, 200.0]\n[refine]\nmax_level = 1\n";
        let lines: Vec<&str> = base.lines().collect();
        let (mut sweep_refused, mut sweep_planned, mut sweep_panics) = (0, 0, 0);
        for _ in 0..cases {
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            let i = (next() % out.len() as u64) as usize;
            match next() % 4 {
                0 => {
                    out.remove(i);
                }
                1 => {
                    let l = out[i].clone();
                    out.insert(i, l);
                }
                _ => {
                    if let Some((key, _)) = out[i].clone().split_once(" = ") {
                        out[i] = format!("{key} = {}", value(&mut next));
                    }
                }
            }
            let text = out.join("\n") + "\n";
            match catch_unwind(AssertUnwindSafe(|| {
                metachron::sweep::SweepSpec::from_str_named(&text, "probe.toml", "probe")
                    .ok()
                    .and_then(|spec| metachron::sweep::Plan::new(&spec).ok())
                    .is_some()
            })) {
                Err(_) => {
                    sweep_panics += 1;
                    println!("PANIC on the sweep file:\n{text}");
                }
                Ok(true) => sweep_planned += 1,
                Ok(false) => sweep_refused += 1,
            }
        }
        println!(
            "--set cases {cases}: refused {refused}, refused by the estimate {estimate_refused}, \
             ran {ran} (invalid_model {invalid_model}); panics {panics}, over 10x the estimate \
             {over_10x} (worst {worst_ratio:.1}x), ok above |V|/l {MAX_INEXTENSIBILITY:e}: {invalid_ok}"
        );
        println!(
            "sweep mutations {cases}: refused {sweep_refused}, planned {sweep_planned}, panics {sweep_panics}"
        );
        // Runs over 10x their estimate are reported, not asserted: the reference's estimate
        // does not yet follow the friction and penalty stiffness (docs/replay-and-report.md).
        assert_eq!((panics, sweep_panics, invalid_ok), (0, 0, 0));
    }
}
