//! Adaptive repeats (`repeats = { min, max, ci_width }` in a sweep file): the table,
//! checked, and the repeat counts it allows; [`crate::sweep::adaptive`] decides which
//! combinations get more.

use crate::sweep::SweepError;

/// `repeats = { min, max, ci_width }`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveRepeats {
    pub min: usize,
    pub max: usize,
    pub ci_width: f64,
}

const KEYS: &[&str] = &["min", "max", "ci_width"];

impl AdaptiveRepeats {
    pub fn parse(file: &str, mut t: toml::Table) -> Result<AdaptiveRepeats, SweepError> {
        let err = |key: &str, message: String| SweepError::Key {
            file: file.to_string(),
            key: format!("repeats.{key}"),
            message,
        };
        if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                k,
                "unknown key; adaptive repeats are { min = 8, max = 256, ci_width = 0.1 }".into(),
            ));
        }
        let mut int = |key: &str| match t.remove(key) {
            Some(toml::Value::Integer(i)) if (1..=1_000_000).contains(&i) => Ok(i as usize),
            Some(other) => Err(err(
                key,
                format!("expected an integer in [1, 1000000], got `{other}`"),
            )),
            None => Err(err(key, "missing: give min, max and ci_width".into())),
        };
        let (min, max) = (int("min")?, int("max")?);
        if max < min {
            return Err(err("max", format!("{max} is below min = {min}")));
        }
        let ci_width = match t.remove("ci_width") {
            Some(toml::Value::Float(x)) if x > 0.0 && x <= 1.0 => x,
            Some(other) => {
                return Err(err(
                    "ci_width",
                    format!("expected a number in (0, 1], got `{other}`"),
                ))
            }
            None => {
                return Err(err(
                    "ci_width",
                    "missing: give min, max and ci_width".into(),
                ))
            }
        };
        Ok(AdaptiveRepeats { min, max, ci_width })
    }

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
