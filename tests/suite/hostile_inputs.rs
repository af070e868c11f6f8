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
        (&["omega=1e6", "t_final=0.05"], Ends),
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
    check(&["sweep", "/dev/zero", "--dry-run"], Refused("4 MiB"));
    check(&["simulate", "--config", "/dev/zero"], Refused("4 MiB"));
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
