//! Adaptive repeats (`repeats = { min, max, ci_width }` in a sweep file): the table
//! ([`RawRepeats`]) checked, and the repeat counts it allows; [`crate::sweep::adaptive`]
//! decides which combinations get more.

use serde::Deserialize;

use crate::sweep::SweepError;

/// `repeats = { min, max, ci_width }`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveRepeats {
    pub min: usize,
    pub max: usize,
    pub ci_width: f64,
}

/// Adaptive repeats: `repeats = { min, max, ci_width }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRepeats {
    pub min: Option<toml::Value>,
    pub max: Option<toml::Value>,
    pub ci_width: Option<f64>,
}

impl RawRepeats {
    /// Check the table: `min` and `max` integers in [1, 1000000] with `min <= max`,
    /// `ci_width` in (0, 1].
    pub fn check(self, file: &str) -> Result<AdaptiveRepeats, SweepError> {
        let err = |key: &str, message: String| SweepError::Key {
            file: file.to_string(),
            key: format!("repeats.{key}"),
            message,
        };
        let missing = |key: &str| err(key, "missing: give min, max and ci_width".into());
        let int = |key: &str, v: Option<toml::Value>| match v {
            Some(toml::Value::Integer(i)) if (1..=1_000_000).contains(&i) => Ok(i as usize),
            Some(other) => Err(err(
                key,
                format!("expected an integer in [1, 1000000], got `{other}`"),
            )),
            None => Err(missing(key)),
        };
        let (min, max) = (int("min", self.min)?, int("max", self.max)?);
        if max < min {
            return Err(err("max", format!("{max} is below min = {min}")));
        }
        let ci_width = match self.ci_width {
            Some(x) if x > 0.0 && x <= 1.0 => x,
            Some(other) => {
                return Err(err(
                    "ci_width",
                    format!("expected a number in (0, 1], got `{other}`"),
                ))
            }
            None => return Err(missing("ci_width")),
        };
        Ok(AdaptiveRepeats { min, max, ci_width })
    }
}

impl AdaptiveRepeats {
    /// The repeat counts a combination may reach: min, 2·min, 4·min, …, max.
    pub fn targets(&self) -> Vec<usize> {
        let mut out = vec![self.min];
        while *out.last().unwrap_or(&self.max) < self.max {
            let next = (out[out.len() - 1] * 2).min(self.max);
            out.push(next);
        }
        out
    }
}

impl std::fmt::Display for AdaptiveRepeats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "adaptive repeats {}..{} until every class fraction's Wilson 95 % interval is \
             narrower than {}",
            self.min, self.max, self.ci_width
        )
    }
}
