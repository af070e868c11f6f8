//! `sweep --backend gpu` estimates its time from the adapter that runs it: a probe
//! measured once per adapter and precision, cached in the user's cache directory, within
//! a factor 2 of the time the sweep then takes.

use crate::common;

use std::path::Path;

use common::scratch;

/// The seconds in "~4.2 s" or "~12 s" after `prefix` in `text`.
fn seconds_after(text: &str, prefix: &str) -> f64 {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no `{prefix}` in {text}"));
    let rest = &text[at + prefix.len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    assert!(rest[number.len()..].starts_with(" s"), "{rest}");
    number.parse().unwrap()
}

fn metachron(args: &[&str], dir: &Path, cache: &Path) -> String {
    let out = common::bin::command()
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    let (code, said, err) = common::bin::texts(&out);
    assert_eq!(code, 0, "{args:?}: {said}\n{err}");
    said
}

#[test]
fn gpu_estimates_come_from_the_adapter_within_a_factor_2() {
    if common::gpu::gpu_context("gpu_estimates_come_from_the_adapter").is_none() {
        return;
    }
    let dir = scratch("sizes");
    let cache = dir.join("cache");
    for (k, (points, t_final)) in [(16, 1.0), (32, 1.0), (64, 1.5)].into_iter().enumerate() {
        let name = format!("s{points}.toml");
        std::fs::write(
            dir.join(&name),
            format!(
                "name = \"s\"\n[base]\nt_final = {t_final}\n[[axes]]\nparam = \"k_p\"\n\
                 linspace = {{ start = 5.0, stop = 50.0, num = {points} }}\n"
            ),
        )
        .unwrap();
        let plan = metachron(
            &["sweep", &name, "--backend", "gpu", "--dry-run"],
            &dir,
            &cache,
        );
        // The first estimate measures the rate, the others read it from the cache.
        let source = if k == 0 {
            "(rate measured now"
        } else {
            "(rate cached in "
        };
        assert!(plan.contains(source), "{plan}");
        let estimate = seconds_after(&plan, "estimated time: ~");
        let out = format!("ds{points}");
        let ran = metachron(
            &["sweep", &name, "--out", &out, "--backend", "gpu", "--quiet"],
            &dir,
            &cache,
        );
        let wall = seconds_after(&ran, "chunks: wall ");
        eprintln!("{points} points of {t_final} s: estimated {estimate} s, ran {wall} s");
        assert!(
            estimate <= 2.0 * wall && wall <= 2.0 * estimate,
            "{points} points: estimated {estimate} s, ran {wall} s"
        );
    }
    let cached = std::fs::read_to_string(cache.join("metachron").join("gpu-rates.toml")).unwrap();
    assert!(
        cached.contains("robot_step = ") && cached.contains("gpu: "),
        "{cached}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
