//! Every shipped sweep file (sweeps/*.toml) has a description, and what the description
//! states is what the file runs. The convention (sweeps/README.md) that makes it
//! checkable:
//!
//! - a run length `T s` is `t_final`; `T1-T2 s` is `t_final` continued up to
//!   `until_settled`; every description states its run length;
//! - a range `LO..HI UNIT` is the smallest and largest value of one of the file's axes
//!   whose parameter has that unit (`deg` for a parameter in radians); without a unit,
//!   of an axis in its parameter's own unit; after the word `repeats`, the adaptive
//!   repeats' `min..max`;
//! - `X UNIT steps` is the spacing of an evenly spaced axis of that unit; any other
//!   `X UNIT` is the base value of a parameter of that unit;
//! - `N legs` is `n_legs`, `N repeats` (or `N <word> repeats`) the fixed repeats, and
//!   `N x M lattice` the axes' value counts.
//!
//! A number matches to the precision it is written with: within half a unit of its
//! last digit (`31.6` stands for 31.6227…).

use std::path::Path;

use metachron::params::{parse_number, SCALAR_PARAMS};
use metachron::sweep::spec::SweepSpec;

/// A number as written in a description: its value and half a unit of its last digit.
#[derive(Debug, Clone, Copy)]
struct Written {
    value: f64,
    half_ulp: f64,
}

impl Written {
    fn parse(text: &str) -> Option<Written> {
        if text.is_empty() || !text.bytes().any(|b| b.is_ascii_digit()) {
            return None;
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
        {
            return None;
        }
        let value: f64 = text.parse().ok()?;
        let decimals = text.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
        Some(Written {
            value,
            half_ulp: 0.5 * 10f64.powi(-decimals),
        })
    }

    fn matches(&self, actual: f64) -> bool {
        (self.value - actual).abs() <= self.half_ulp + 1e-9 * actual.abs()
    }
}

/// `LO..HI`, `A-B` (a negative first number keeps its sign), or one number.
fn numbers(token: &str) -> Option<(Written, Option<Written>)> {
    if let Some((lo, hi)) = token.split_once("..") {
        return Some((Written::parse(lo)?, Some(Written::parse(hi)?)));
    }
    if let Some(at) = token.get(1..).and_then(|t| t.find('-')).map(|k| k + 1) {
        return Some((
            Written::parse(&token[..at])?,
            Some(Written::parse(&token[at + 1..])?),
        ));
    }
    Some((Written::parse(token)?, None))
}

/// The units a description may state: every parameter's unit, and degrees.
fn units() -> Vec<String> {
    let distinct: std::collections::BTreeSet<String> = SCALAR_PARAMS
        .iter()
        .map(|p| p.unit.to_string())
        .filter(|u| !u.is_empty() && u != "1")
        .chain(std::iter::once("deg".to_string()))
        .collect();
    let mut u: Vec<String> = distinct.into_iter().collect();
    // Longest first: `N m s` before `m` and `s`.
    u.sort_by_key(|x| std::cmp::Reverse(x.split(' ').count()));
    u
}

/// The unit of a parameter, if it is a scalar one.
fn unit_of(param: &str) -> Option<&'static str> {
    SCALAR_PARAMS
        .iter()
        .find(|p| p.name == param)
        .map(|p| p.unit)
}

/// `actual` (in the parameter's `unit`) in the `stated` unit, if they are the same
/// quantity: degrees for radians, else only the same unit.
fn in_stated(stated: Option<&str>, unit: &str, actual: f64) -> Option<f64> {
    match stated {
        None => Some(actual),
        Some("deg") if unit == "rad" => Some(actual.to_degrees()),
        Some(s) if s == unit => Some(actual),
        Some(_) => None,
    }
}

/// An axis' numeric values in its parameter's unit (`None` for a text or list axis).
fn axis_numbers(spec: &SweepSpec, k: usize) -> Option<Vec<f64>> {
    let ax = &spec.axes[k];
    ax.values
        .iter()
        .map(|v| match v {
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::Float(f) => Some(*f),
            toml::Value::String(s) => parse_number(&ax.param, s).ok(),
            _ => None,
        })
        .collect()
}

/// What in `spec.description` disagrees with `spec`, one line each.
fn disagreements(spec: &SweepSpec) -> Vec<String> {
    let text = spec.description.replace(['−', '–'], "-");
    let tokens: Vec<String> = text
        .replace(['(', ')', ',', ';'], " ")
        .split_whitespace()
        .map(|t| t.trim_end_matches(['.', ':']).to_string())
        .collect();
    let units = units();
    let mut out = Vec::new();
    let mut run_length = false;
    let p = &spec.config.params;
    let axes: Vec<(String, Vec<f64>)> = (0..spec.axes.len())
        .filter_map(|k| Some((spec.axes[k].param.clone(), axis_numbers(spec, k)?)))
        .collect();
    let mut i = 0;
    while i < tokens.len() {
        if let Some(approx) = tokens[i].strip_prefix('~').filter(|t| numbers(t).is_some()) {
            out.push(format!(
                "`~{approx}` is approximate: a description states the file's own values \
                 exactly (an outcome, such as the distance walked, is not one)"
            ));
            i += 1;
            continue;
        }
        let Some((a, b)) = numbers(&tokens[i]) else {
            i += 1;
            continue;
        };
        // The unit: the longest known unit the next tokens spell.
        let mut unit = None;
        let mut next = i + 1;
        for u in &units {
            let n = u.split(' ').count();
            if i + 1 + n <= tokens.len() && tokens[i + 1..i + 1 + n].join(" ") == *u {
                unit = Some(u.as_str());
                next = i + 1 + n;
                break;
            }
        }
        let word = |k: usize| tokens.get(k).map(String::as_str).unwrap_or("");
        let said = &tokens[i];
        match (unit, b) {
            (Some("s"), hi) => {
                run_length = true;
                let ok = a.matches(p.t_final)
                    && match (hi, spec.until_settled) {
                        (None, None) => true,
                        (Some(h), Some(u)) => h.matches(u),
                        _ => false,
                    };
                if !ok {
                    out.push(format!(
                        "run length `{said} s`: the file runs t_final = {} s{}",
                        p.t_final,
                        spec.until_settled
                            .map(|u| format!(", continued up to until_settled = {u} s"))
                            .unwrap_or_default()
                    ));
                }
            }
            (_, Some(hi)) if i > 0 && word(i - 1) == "repeats" => {
                let ok = spec
                    .adaptive
                    .as_ref()
                    .is_some_and(|r| a.matches(r.min as f64) && hi.matches(r.max as f64));
                if !ok {
                    out.push(format!(
                        "repeats `{said}`: the file has {}",
                        match &spec.adaptive {
                            Some(r) => format!("adaptive repeats {}..{}", r.min, r.max),
                            None => format!("{} repeats", spec.repeats),
                        }
                    ));
                }
            }
            (_, Some(hi)) => {
                let mut seen = Vec::new();
                let found = axes.iter().any(|(param, values)| {
                    let Some(u) = unit_of(param) else {
                        return false;
                    };
                    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
                    let top = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    match (in_stated(unit, u, lo), in_stated(unit, u, top)) {
                        (Some(l), Some(h)) => {
                            seen.push(format!("{param} {l:.4}..{h:.4}"));
                            a.matches(l) && hi.matches(h)
                        }
                        _ => false,
                    }
                });
                if !found {
                    out.push(format!(
                        "range `{said}{}` is no axis' smallest..largest value; the axes in \
                         that unit: {}",
                        unit.map(|u| format!(" {u}")).unwrap_or_default(),
                        if seen.is_empty() {
                            "none".to_string()
                        } else {
                            seen.join(", ")
                        }
                    ));
                }
            }
            (Some(u), None) if word(next) == "steps" => {
                let found = axes.iter().any(|(param, values)| {
                    let Some(pu) = unit_of(param) else {
                        return false;
                    };
                    let mut v: Vec<f64> = values
                        .iter()
                        .filter_map(|&x| in_stated(Some(u), pu, x))
                        .collect();
                    v.sort_by(f64::total_cmp);
                    v.len() > 1 && v.windows(2).all(|w| a.matches(w[1] - w[0]))
                });
                if !found {
                    out.push(format!("`{said} {u} steps`: no axis of that unit steps so"));
                }
            }
            (Some(u), None) => {
                let found = SCALAR_PARAMS.iter().any(|sp| {
                    p.scalar(sp.name)
                        .and_then(|x| in_stated(Some(u), sp.unit, x))
                        .is_some_and(|x| a.matches(x))
                });
                if !found {
                    out.push(format!(
                        "`{said} {u}` is no parameter's value in the file's base"
                    ));
                }
            }
            (None, None) => {
                let (w1, w2, w3) = (word(i + 1), word(i + 2), word(i + 3));
                if w1 == "legs" {
                    if !a.matches(p.n_legs as f64) {
                        out.push(format!(
                            "`{said} legs`: the file's robot has n_legs = {}",
                            p.n_legs
                        ));
                    }
                } else if w1 == "repeats" || w2 == "repeats" {
                    if spec.adaptive.is_some() || !a.matches(spec.repeats as f64) {
                        out.push(format!(
                            "`{said} repeats`: the file has {} repeats{}",
                            spec.repeats,
                            if spec.adaptive.is_some() {
                                " (adaptive)"
                            } else {
                                ""
                            }
                        ));
                    }
                } else if w1 == "x" && w3 == "lattice" {
                    let counts: Vec<usize> = spec.axes.iter().map(|ax| ax.values.len()).collect();
                    let stated = [Written::parse(said), Written::parse(w2)];
                    let ok = counts.len() == 2
                        && stated
                            .iter()
                            .zip(&counts)
                            .all(|(s, &c)| s.is_some_and(|s| s.matches(c as f64)));
                    if !ok {
                        out.push(format!(
                            "`{said} x {w2} lattice`: the axes hold {counts:?} values"
                        ));
                    }
                }
            }
        }
        i = next;
    }
    if !run_length {
        out.push(format!(
            "states no run length (`{} s`{})",
            p.t_final,
            spec.until_settled
                .map(|u| format!(", or `{}-{u} s`", p.t_final))
                .unwrap_or_default()
        ));
    }
    out
}

fn shipped() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps");
    let mut files =
        crate::common::files_under(&dir, &|p| p.extension().is_some_and(|x| x == "toml"));
    files.sort();
    files
}

#[test]
fn every_shipped_sweep_files_description_agrees_with_its_axes() {
    let files = shipped();
    assert!(files.len() >= 10, "only {} sweep files found", files.len());
    let mut wrong = Vec::new();
    for f in &files {
        let spec = SweepSpec::from_file(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if spec.description.trim().is_empty() {
            wrong.push(format!("{name}: no description"));
            continue;
        }
        for d in disagreements(&spec) {
            wrong.push(format!("{name}: \"{}\": {d}", spec.description));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The file's own text with its description replaced by `description`.
fn with_description(file: &str, description: &str) -> SweepSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sweeps")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("description"))
        .unwrap()
        .to_string();
    let text = text.replace(&line, &format!("description = \"{description}\""));
    SweepSpec::from_str_named(&text, file, "sweep").unwrap()
}

#[test]
fn a_description_that_misstates_its_axes_is_caught() {
    // terrain.toml sweeps the slope over −24..24° for 20 s: a description of −8..8°,
    // an approximate distance and no run length disagrees three times.
    let found = disagreements(&with_description(
        "terrain.toml",
        "slope angle (−8..8 deg) x basal servo gain K_p (log 10..1000 N m s), ~4 m",
    ));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains("`-8..8 deg`"), "{found:?}");
    assert!(
        found[0].contains("terrain_angle -24.0000..24.0000"),
        "{found:?}"
    );
    assert!(found[1].contains("`~4` is approximate"), "{found:?}");
    assert!(found[2].contains("no run length"), "{found:?}");
    // The same range in radians is a wrong unit for degrees' numbers.
    let found = disagreements(&with_description(
        "terrain.toml",
        "slope (-24..24 rad) x K_p (log 10..1000 N m s), 20 s",
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    // A run length other than t_final, legs other than n_legs, repeats, steps.
    for (file, text, what) in [
        (
            "terrain.toml",
            "slope (-24..24 deg) x K_p, 10 s",
            "run length",
        ),
        ("atlas-basins.toml", "K_p x alpha, 7 legs, 10 s", "legs"),
        (
            "emergence.toml",
            "random phases (6 repeats), 30 s",
            "repeats",
        ),
        (
            "atlas-basins.toml",
            "adaptive repeats 8..16, 10 s",
            "repeats",
        ),
        (
            "phase-lag.toml",
            "dphi (-165..180 deg, 10 deg steps), 20 s",
            "steps",
        ),
        (
            "paper.toml",
            "9 legs, 60 deg initial phase step, 50 s",
            "60 deg",
        ),
        (
            "atlas-lag-relaxation-dense.toml",
            "4-20 s, 65 x 65 lattice",
            "until_settled",
        ),
        (
            "atlas-lag-relaxation-dense.toml",
            "4-16 s, 33 x 65 lattice",
            "lattice",
        ),
        ("coupling.toml", "alpha x beta, 10..1000 N/m, 6 s", "range"),
    ] {
        let found = disagreements(&with_description(file, text));
        assert_eq!(found.len(), 1, "{file}: {text}: {found:?}");
        assert!(found[0].contains(what), "{file}: {text}: {found:?}");
    }
    // And the true statements pass: the checker is not merely strict.
    for (file, text) in [
        (
            "terrain.toml",
            "slope (−24..24 deg) x K_p (log 10..1000 N m s), 20 s",
        ),
        ("paper.toml", "9 legs, 90 deg initial phase step, 50 s"),
        (
            "atlas-servo-lag-strong.toml",
            "K_p (31.6..1000) x dphi (0..180 deg), 10 s",
        ),
        ("atlas-lag-relaxation-dense.toml", "4-16 s, 65 x 65 lattice"),
    ] {
        let found = disagreements(&with_description(file, text));
        assert!(found.is_empty(), "{file}: {text}: {found:?}");
    }
}
