//! `metachron params` and `metachron columns`: the parameter table and the vocabulary
//! of output columns, printed from the same declarations that the model, the GPU's
//! per-instance struct and the Parquet writers use.

use std::process::ExitCode;

use anyhow::Result;
use metachron::vocabulary::{Aggregate, Column, Kind, COLUMNS, METRICS};

/// Rows as aligned columns: every column as wide as its widest cell, the last one free.
fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let last = cells.len().saturating_sub(1);
        let mut s = String::new();
        for (k, c) in cells.into_iter().enumerate() {
            s.push_str(&c);
            if k < last {
                s.push_str(&" ".repeat(width[k] - c.chars().count() + 2));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.clone()));
        out.push('\n');
    }
    out
}

/// The parameter table: name, unit, default, admitted range and meaning.
pub fn params_table() -> String {
    let rows: Vec<Vec<String>> = metachron::params::table()
        .into_iter()
        .map(|r| {
            vec![
                r.name.to_string(),
                r.unit.to_string(),
                r.default,
                r.allowed,
                r.meaning,
            ]
        })
        .collect();
    aligned(&["name", "unit", "default", "allowed", "meaning"], &rows)
}

fn kind(k: Kind) -> &'static str {
    match k {
        Kind::Float => "float",
        Kind::UInt => "uint",
        Kind::Int => "int",
        Kind::Bool => "bool",
        Kind::Text => "text",
        Kind::FloatList => "list<float>",
        Kind::BoolList => "list<bool>",
    }
}

fn aggregate(a: Aggregate) -> &'static str {
    match a {
        Aggregate::PerClass => "mean/std per class",
        Aggregate::Fraction => "fraction",
        Aggregate::Key => "key",
        Aggregate::None => "-",
    }
}

/// The vocabulary: every metric, then every other column.
pub fn columns_table() -> String {
    let row = |c: &Column, group: &str| {
        vec![
            c.name.to_string(),
            group.to_string(),
            c.unit.to_string(),
            kind(c.kind).to_string(),
            aggregate(c.aggregate).to_string(),
            c.meaning.trim().to_string(),
        ]
    };
    let rows: Vec<Vec<String>> = METRICS
        .iter()
        .map(|c| row(c, "metric"))
        .chain(COLUMNS.iter().map(|c| row(c, "column")))
        .collect();
    aligned(
        &["name", "what", "unit", "type", "summarize", "meaning"],
        &rows,
    )
}

pub fn run_params() -> Result<ExitCode> {
    print!("{}", params_table());
    Ok(ExitCode::SUCCESS)
}

pub fn run_columns() -> Result<ExitCode> {
    print!("{}", columns_table());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use metachron::params::SCALAR_PARAMS;

    #[test]
    fn every_parameter_and_column_is_listed_once() {
        let params = params_table();
        for s in SCALAR_PARAMS {
            let lines = params
                .lines()
                .filter(|l| l.split_whitespace().next() == Some(s.name))
                .count();
            assert_eq!(lines, 1, "{}", s.name);
        }
        assert!(params.contains("flat | slope | sine | rough"));
        let columns = columns_table();
        assert_eq!(columns.lines().count(), 1 + METRICS.len() + COLUMNS.len());
        assert!(columns.lines().any(|l| l.starts_with("lag_order ")));
    }

    #[test]
    fn alignment_pads_all_but_the_last_column() {
        let t = aligned(&["a", "bb"], &[vec!["xyz".into(), "1".into()]]);
        assert_eq!(t, "a    bb\nxyz  1\n");
    }
}
