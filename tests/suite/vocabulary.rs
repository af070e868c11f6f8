//! Column and metric names are spelled once, in `src/vocabulary.rs` (parameter names in
//! the parameter table, `src/params.rs`): no other library or CLI source writes one as a
//! string literal, so a renamed column cannot leave a reader looking for the old name.

use std::collections::BTreeSet;
use std::path::Path;

use metachron::params::{CHOICE_PARAMS, LIST_PARAMS, SCALAR_PARAMS};
use metachron::vocabulary::{COLUMNS, METRICS};

/// Literals that spell a column's name but mean something else: (file, literal, why).
const OTHER_MEANINGS: &[(&str, &str, &str)] = &[
    (
        "src/dataset/strict_thrift.rs",
        "precision",
        "a field of parquet.thrift's DecimalType and SchemaElement, named in structure errors",
    ),
    (
        "src/cli/replay.rs",
        "combo",
        "the --combo flag's id in clap's attributes",
    ),
    (
        "src/gpu/device.rs",
        "adapter",
        "a field of the context's Debug output",
    ),
    (
        "src/gpu/device.rs",
        "precision",
        "a field of the context's Debug output",
    ),
    (
        "src/gpu/engine.rs",
        "status",
        "the label of the GPU's status buffer",
    ),
    (
        "src/dataset/manifest.rs",
        "backend",
        "which manifest entry differs, in an error",
    ),
];

/// The names to look for: every column and metric, and the list and choice parameters;
/// scalar parameters (`t_final`, a benchmark column too) are the parameter table's.
fn names() -> BTreeSet<&'static str> {
    METRICS
        .iter()
        .chain(COLUMNS)
        .map(|c| c.name)
        .chain(LIST_PARAMS.iter().copied())
        .chain(CHOICE_PARAMS.iter().copied())
        .filter(|n| SCALAR_PARAMS.iter().all(|s| s.name != *n))
        .collect()
}

/// `"name"` literals of `line` that are exactly one of `names`.
fn spelled<'a>(line: &'a str, names: &BTreeSet<&str>) -> Vec<&'a str> {
    line.split('"')
        .enumerate()
        // Odd pieces lie between a pair of quotes.
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s)
        .filter(|s| names.contains(s))
        .collect()
}

#[test]
fn no_source_spells_a_column_name_outside_the_vocabulary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let names = names();
    assert!(names.contains("class") && names.contains("lag_order") && names.contains("psi_init"));
    let files = crate::common::files_under(&root.join("src"), &|p| {
        p.extension().is_some_and(|x| x == "rs")
    });
    assert!(!files.is_empty(), "no sources under src/");
    let mut found = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "src/vocabulary.rs" || rel == "src/params.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        // Unit tests may build tables by hand.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for lit in spelled(line, &names) {
                if !OTHER_MEANINGS
                    .iter()
                    .any(|(f, l, _)| *f == rel && *l == lit)
                {
                    found.push(format!("{rel}:{}: \"{lit}\"", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "column names spelled outside src/vocabulary.rs (use its constants):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_a_spelled_name() {
    let names = names();
    assert_eq!(
        spelled(r#"ds.column("class"), "other", x"#, &names),
        vec!["class"]
    );
    assert!(spelled(r#"ds.column(CLASS)"#, &names).is_empty());
}

/// The files a run writes carry the vocabulary's units: a short `simulate` with its
/// metrics row and time series, every field that the vocabulary declares (per-leg time
/// series columns by their prefix) holding the declared unit in its metadata.
#[test]
fn written_files_carry_the_vocabularys_units() {
    use metachron::parquet::read_parquet;
    let dir = crate::common::scratch("units");
    let (metrics, series) = (dir.join("m.parquet"), dir.join("ts.parquet"));
    let (code, _, err) = crate::common::bin::run(&[
        "simulate",
        "--backend",
        "cpu",
        "--set",
        "t_final=0.2",
        "--quiet",
        "--metrics",
        metrics.to_str().unwrap(),
        "--out",
        series.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let declared = |name: &str| {
        METRICS
            .iter()
            .chain(COLUMNS)
            .find(|c| c.name == name)
            .map(|c| c.unit)
    };
    let mut checked = 0;
    for (file, per_leg_prefixes) in [(&metrics, false), (&series, true)] {
        let (batches, _) = read_parquet(file).unwrap();
        let schema = batches[0].schema();
        for f in schema.fields() {
            let name = f.name().as_str();
            // psi_3 -> psi: a time series' per-leg column is declared by its prefix.
            let base = match name.rsplit_once('_') {
                Some((p, i)) if per_leg_prefixes && i.bytes().all(|b| b.is_ascii_digit()) => p,
                _ => name,
            };
            if let Some(unit) = declared(base) {
                let written = f.metadata().get("unit").map(String::as_str).unwrap_or("");
                assert_eq!(written, unit, "{}: column {name}", file.display());
                checked += 1;
            }
        }
    }
    // Every metric and the outcome columns of the row, and the series' 9 legs x 4 + 5.
    assert!(
        checked >= METRICS.len() + 6 + 41,
        "only {checked} columns checked"
    );
}
