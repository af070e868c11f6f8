//! A sweep file as written: the typed tables serde reads it into, each table's keys
//! checked by name first (an unknown key is refused with its place and the closest
//! allowed key, [`crate::input_keys`]). Values whose errors must name an allowed range
//! are kept as written here; [`crate::sweep::spec`] checks them all, in one step, into a
//! [`crate::sweep::SweepSpec`].

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::input_keys::UnknownKey;
use crate::sweep::SweepError;

/// The top level of a sweep file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    pub name: Option<String>,
    pub description: Option<String>,
    /// An integer in [0, 2^63): the seed of random axes and random initial phases.
    pub seed: Option<toml::Value>,
    /// Runs per combination: an integer, or `{ min, max, ci_width }`
    /// ([`crate::sweep::repeats::RawRepeats`]).
    pub repeats: Option<toml::Value>,
    pub random_phases: Option<bool>,
    /// Every repeat runs on its own `rough` ground (its own `terrain_seed`).
    pub terrain_seed_per_repeat: Option<bool>,
    pub combine: Option<Combine>,
    /// Parameters, as in a `simulate --config` file.
    #[serde(default)]
    pub base: toml::Table,
    pub solver: Option<toml::Table>,
    pub metrics: Option<toml::Table>,
    pub fixed_step: Option<toml::Table>,
    /// The `[[axes]]`, each read as a [`RawAxis`].
    #[serde(default)]
    pub axes: Vec<toml::Table>,
    /// Continue unsettled runs up to this horizon (s).
    pub until_settled: Option<toml::Value>,
    /// `[refine]`, read as a [`crate::sweep::lattice::RawRefine`].
    pub refine: Option<toml::Table>,
}

/// How the axes' values combine (`combine = "product"` or `"zip"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Combine {
    #[default]
    Product,
    Zip,
}

/// One `[[axes]]` table: its parameter, group and exactly one way of giving values.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAxis {
    pub param: Option<String>,
    pub group: Option<String>,
    /// Values as listed (numbers, per-leg lists or names: checked by the parameter).
    pub values: Option<toml::Value>,
    /// `{ start, stop, num }`, read as a [`RawRange`].
    pub linspace: Option<toml::Value>,
    pub logspace: Option<toml::Value>,
    pub random: Option<toml::Value>,
    pub lhs: Option<toml::Value>,
}

/// Names of the ways an axis gives its values, in [`RawAxis`]'s order.
pub const AXIS_KINDS: [&str; 5] = ["values", "linspace", "logspace", "random", "lhs"];

impl RawAxis {
    /// The ways of giving values present in the table, with their names.
    pub fn kinds(self) -> Vec<(&'static str, toml::Value)> {
        let all = [
            self.values,
            self.linspace,
            self.logspace,
            self.random,
            self.lhs,
        ];
        AXIS_KINDS
            .into_iter()
            .zip(all)
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect()
    }
}

/// A generated axis: `{ start, stop, num }`, and `log` for random and lhs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRange {
    pub start: Option<toml::Value>,
    pub stop: Option<toml::Value>,
    pub num: Option<toml::Value>,
    pub log: Option<bool>,
}

impl RawSweep {
    /// Parse the file's TOML into its tables.
    pub fn parse(text: &str, file: &str) -> Result<RawSweep, SweepError> {
        let top: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| SweepError::Toml {
                file: file.to_string(),
                message: e.to_string(),
            })?;
        decode(file, "", top)
    }
}

/// Read `table`, found at `place` ("" for the top level, else a dotted key such as
/// `axes[1]`), as a `T`: its keys checked first, then its values' types (an error
/// names the key it is about).
pub fn decode<T: DeserializeOwned>(
    file: &str,
    place: &str,
    table: toml::Table,
) -> Result<T, SweepError> {
    let phrase = match place {
        "" => "at the top level".to_string(),
        "refine" | "base" | "solver" | "metrics" | "fixed_step" => format!("in [{place}]"),
        _ => format!("in {place}"),
    };
    UnknownKey::check_fields::<T>(&table, &phrase).map_err(|source| SweepError::UnknownKey {
        file: file.to_string(),
        source: Box::new(source),
    })?;
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            let key = error_key(&e);
            SweepError::Key {
                file: file.to_string(),
                key: [place, key.as_str()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("."),
                message: e.message().to_string(),
            }
        })
}

/// The dotted key a deserialization error is about (toml writes it last, as
/// "in `a.b`"), or "" when it names none.
fn error_key(e: &toml::de::Error) -> String {
    let text = e.to_string();
    text.lines()
        .last()
        .and_then(|l| l.strip_prefix("in `"))
        .and_then(|l| l.strip_suffix('`'))
        .unwrap_or_default()
        .to_string()
}
