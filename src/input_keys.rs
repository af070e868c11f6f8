//! Keys of input files (sweep files, config files, `--set`) checked against what the
//! typed structs that read them accept: an unknown key is refused with its place and
//! the closest allowed key, so that a typo reads as one ("unknown key `axs` at the top
//! level; did you mean `axes`?").

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A key that no field of its table takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown key `{key}` {place}{} (allowed: {})", did_you_mean(.suggestions), .allowed.join(", "))]
pub struct UnknownKey {
    pub key: String,
    /// Where it was, with its preposition: "at the top level", "in [refine]", "in axes[1]".
    pub place: String,
    /// The allowed keys closest to `key`, when any is close enough to be a typo.
    pub suggestions: Vec<String>,
    pub allowed: Vec<String>,
}

/// "; did you mean `x`?" (or "`x` or `y`") for suggestions, nothing without one.
pub fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        return String::new();
    }
    let names: Vec<String> = suggestions.iter().map(|s| format!("`{s}`")).collect();
    format!("; did you mean {}?", names.join(" or "))
}

impl UnknownKey {
    /// The first key of `keys` that `allowed` lacks, refused with the closest allowed one.
    pub fn check<'a>(
        keys: impl IntoIterator<Item = &'a String>,
        place: &str,
        allowed: &[&str],
    ) -> Result<(), UnknownKey> {
        match keys.into_iter().find(|k| !allowed.contains(&k.as_str())) {
            Some(key) => Err(UnknownKey {
                key: key.clone(),
                place: place.to_string(),
                suggestions: closest(key, allowed.iter().copied()),
                allowed: allowed.iter().map(|s| s.to_string()).collect(),
            }),
            None => Ok(()),
        }
    }

    /// Check `table`'s keys against the fields of `T`.
    pub fn check_fields<'de, T: Deserialize<'de>>(
        table: &toml::Table,
        place: &str,
    ) -> Result<(), UnknownKey> {
        Self::check(table.keys(), place, fields::<T>())
    }
}

/// The allowed names closest to `name` by Damerau-Levenshtein distance (all that tie,
/// in their order, at most three), when they are close enough to be a typo of it: at
/// most one edit in three characters, and at least one.
pub fn closest<'a>(name: &str, allowed: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let limit = (name.chars().count() / 3).max(1);
    let near: Vec<(usize, &str)> = allowed
        .into_iter()
        .map(|a| (strsim::damerau_levenshtein(name, a), a))
        .filter(|&(d, _)| d <= limit)
        .collect();
    let Some(best) = near.iter().map(|&(d, _)| d).min() else {
        return Vec::new();
    };
    near.into_iter()
        .filter(|&(d, _)| d == best)
        .take(3)
        .map(|(_, a)| a.to_string())
        .collect()
}

/// The field names a `#[derive(Deserialize)]` struct accepts (after renames), as its
/// derived code announces them to the deserializer; empty for anything that is not a
/// plain struct (a map, or a struct with a flattened field).
pub fn fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut probe = FieldProbe { fields: &[] };
    // The probe always fails: it only listens to what the struct asks for.
    let _ = T::deserialize(&mut probe);
    probe.fields
}

/// The keys of `T::default()` written out: every field of a settings table, those of
/// a flattened inner table included (which [`fields`] cannot see), `None` ones too.
pub fn default_fields<T: serde::Serialize + Default>() -> Vec<String> {
    match serde_json::to_value(T::default()) {
        Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// A deserializer that records the field list of the struct asked of it and stops.
struct FieldProbe {
    fields: &'static [&'static str],
}

impl<'de> Deserializer<'de> for &mut FieldProbe {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("field probe"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.fields = fields;
        Err(de::Error::custom("field probe"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        axes: u32,
        #[serde(rename = "seed")]
        the_seed: u32,
    }

    #[test]
    fn fields_are_the_structs_own_names() {
        assert_eq!(fields::<Two>(), &["axes", "seed"]);
        assert!(fields::<toml::Table>().is_empty());
    }

    #[derive(serde::Serialize, Default)]
    struct Outer {
        step: Option<f64>,
        #[serde(flatten)]
        inner: Inner,
    }

    #[derive(serde::Serialize, Default)]
    struct Inner {
        plv_min: f64,
    }

    #[test]
    fn default_fields_see_flattened_and_absent_ones() {
        assert_eq!(default_fields::<Outer>(), ["plv_min", "step"]);
    }

    #[test]
    fn close_names_are_suggested_and_far_ones_not() {
        let allowed = ["axes", "seed", "name", "k_p", "k_m"];
        assert_eq!(closest("axs", allowed), ["axes"]);
        assert_eq!(closest("k_q", allowed), ["k_p", "k_m"]);
        assert_eq!(closest("sede", allowed), ["seed"]);
        assert!(closest("temperature", allowed).is_empty());
        let e = UnknownKey::check([&"axs".to_string()], "at the top level", &["name", "axes"])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown key `axs` at the top level; did you mean `axes`? (allowed: name, axes)"
        );
    }
}
