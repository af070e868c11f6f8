//! Sweep files (TOML): a base parameter set plus axes.
//!
//! ```toml
//! name = "small-coupling"
//! seed = 1                  # random axes and random initial phases (default 0)
//! repeats = 1               # runs per parameter combination (default 1)
//! random_phases = false     # random initial basal angles (default: repeats > 1 with
//!                           # neither a phase_jitter nor terrain_seed_per_repeat)
//! terrain_seed_per_repeat = false  # every repeat on its own rough ground (default false)
//! combine = "product"       # or "zip": how the axes' values combine
//! [base]                    # parameters, as in a `simulate --config` file
//! t_final = 3.0
//! [solver] / [metrics] / [fixed_step]   # optional, as in a config file
//! [[axes]]
//! param = "alpha"
//! logspace = { start = 50.0, stop = 5000.0, num = 3 }
//! [[axes]]
//! param = "beta"
//! values = [50.0, 500.0]
//! ```
//!
//! Atlas keys (docs/atlas.md): `repeats = { min = 8, max = 256, ci_width = 0.1 }`
//! (adaptive repeats, [`crate::sweep::repeats`]), `until_settled = MAX_T` and a
//! `[refine]` table (adaptive refinement, [`crate::sweep::lattice`]).
//!
//! Axis kinds: `values` (any parameter, masks included), `linspace`, `logspace`,
//! `random` (uniform, or log-uniform with `log = true`) and `lhs` (Latin hypercube:
//! one sample per stratum, strata in a seeded random order; zip several `lhs` axes
//! to get a joint Latin hypercube design). Axes sharing a `group` name are zipped;
//! groups combine as a product.

use std::collections::HashMap;
use std::path::Path;

use crate::dataset::rows::Rows;
use crate::error::ParamError;
use crate::params::{
    is_param, is_text_param, parse_number, spec, unknown_param, ParamSpec, Params, CHOICE_PARAMS,
    LIST_PARAMS, MASK_PARAMS, PHASE_JITTER,
};
use crate::simulate::{ConfigError, RunConfig, SETTINGS_TABLES};
use crate::sweep::axis::{spaced_value, Axis, AxisKind, SweepAxes, MAX_POINTS};
use crate::sweep::input::{decode, Combine, RawAxis, RawRange, RawSweep, AXIS_KINDS};
use crate::sweep::lattice::{RawRefine, Refine};
use crate::sweep::repeats::{AdaptiveRepeats, RawRepeats};
use crate::sweep::rng::SplitMix64;
use crate::sweep::SweepError;

/// A parsed, checked sweep file.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// The file name used in messages.
    pub file: String,
    /// The file's text, written into every output file.
    pub text: String,
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub repeats: usize,
    pub random_phases: bool,
    /// Every repeat runs with its own `terrain_seed`
    /// ([`crate::sweep::plan::repeat_terrain_seed`]), written in its row.
    pub terrain_seed_per_repeat: bool,
    /// Parameters of `[base]` as written.
    pub base: toml::Table,
    /// Base configuration: `[base]` parameters and the `[solver]`, `[metrics]`,
    /// `[fixed_step]` settings.
    pub config: RunConfig,
    pub axes: Vec<Axis>,
    /// Axis indices per group: zipped within a group, product across groups
    /// (first group outermost).
    pub groups: Vec<Vec<usize>>,
    /// Adaptive repeats (`repeats = { min, max, ci_width }`); `repeats` is then `max`.
    pub adaptive: Option<AdaptiveRepeats>,
    /// Continue unsettled runs up to this horizon (s) (`until_settled = MAX_T`).
    pub until_settled: Option<f64>,
    /// Adaptive refinement (`[refine]`).
    pub refine: Option<Refine>,
}

/// The file's name for messages, and the errors that name a key in it.
struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, key: impl Into<String>, message: impl Into<String>) -> SweepError {
        SweepError::Key {
            file: self.file.to_string(),
            key: key.into(),
            message: message.into(),
        }
    }

    fn int(&self, key: &str, v: &toml::Value, lo: i64, hi: i64) -> Result<i64, SweepError> {
        match v {
            toml::Value::Integer(i) if (lo..=hi).contains(i) => Ok(*i),
            toml::Value::Integer(i) => Err(self.err(
                key,
                format!("{i} is out of range: allowed is an integer in [{lo}, {hi}]"),
            )),
            other => Err(self.err(
                key,
                format!(
                    "expected an integer in [{lo}, {hi}], got {} `{other}`",
                    other.type_str()
                ),
            )),
        }
    }

    fn number(&self, key: &str, v: &toml::Value) -> Result<f64, SweepError> {
        let x = match v {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            toml::Value::String(s) => {
                parse_number(key, s).map_err(|e| self.err(key, e.to_string()))?
            }
            other => {
                return Err(self.err(
                    key,
                    format!("expected a number, got {} `{other}`", other.type_str()),
                ))
            }
        };
        if !x.is_finite() {
            return Err(self.err(
                key,
                format!("{x} is out of range: allowed is a finite number"),
            ));
        }
        Ok(x)
    }
}

impl SweepSpec {
    /// Read and check a sweep file.
    pub fn from_file(path: &Path) -> Result<SweepSpec, SweepError> {
        let text = crate::input_file::read_limited(path).map_err(|source| SweepError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "sweep".into());
        Self::from_str_named(&text, &path.display().to_string(), &stem)
    }

    /// Parse a sweep from text; `file` names it in messages, `default_name` is used
    /// when the file has no `name`.
    pub fn from_str_named(
        text: &str,
        file: &str,
        default_name: &str,
    ) -> Result<SweepSpec, SweepError> {
        RawSweep::parse(text, file)?.check(text, file, default_name)
    }

    /// Random phases replace every point's psi_init: a `psi_init` axis with them on
    /// would be swept in name only.
    fn check_phase_axis(&self) -> Result<(), SweepError> {
        match self
            .axes
            .iter()
            .position(|a| a.param == crate::params::PSI_INIT)
        {
            Some(i) if self.random_phases => Err(SweepError::Key {
                file: self.file.clone(),
                key: format!("axes[{i}] `psi_init`"),
                message: "random initial phases (`random_phases = true`, the default with \
                          repeats > 1) would replace every value of this axis: set \
                          `random_phases = false` to sweep psi_init, or remove the axis"
                    .into(),
            }),
            _ => Ok(()),
        }
    }

    /// What the repeats vary, checked together: random phases replace a jittered start
    /// (never silently), and per-repeat terrain seeds replace any `terrain_seed` given and
    /// act on `rough` ground only. `random_phases` is the file's own value.
    fn check_repeat_inputs(&self, random_phases: &Option<bool>) -> Result<(), SweepError> {
        let err = |key: &str, message: String| SweepError::Key {
            file: self.file.clone(),
            key: key.into(),
            message,
        };
        let jitter = self.base.contains_key(PHASE_JITTER) || self.axis(PHASE_JITTER).is_some();
        if jitter && *random_phases == Some(true) {
            return Err(err(
                "random_phases",
                "random initial phases replace every point's start, so the `phase_jitter` \
                 given would never act: remove one of them"
                    .into(),
            ));
        }
        if !self.terrain_seed_per_repeat {
            return Ok(());
        }
        let seed = "terrain_seed";
        if self.base.contains_key(seed) || self.axis(seed).is_some() {
            return Err(err(
                "terrain_seed_per_repeat",
                "every repeat gets its own `terrain_seed`, which would replace the one given \
                 in [base] or swept: remove it"
                    .into(),
            ));
        }
        let rough = crate::params::TerrainKind::Rough.label();
        let base_rough = self
            .base
            .get(crate::params::TERRAIN)
            .and_then(toml::Value::as_str)
            == Some(rough);
        let swept_rough = self
            .axis(crate::params::TERRAIN)
            .is_some_and(|a| a.values.iter().any(|v| v.as_str() == Some(rough)));
        if !(base_rough || swept_rough) {
            return Err(err(
                "terrain_seed_per_repeat",
                "the terrain seed shapes `rough` ground only: set `terrain = \"rough\"` in \
                 [base] (or sweep it), or remove the option"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The base must be valid in every field that no axis replaces.
    fn check_base(&self) -> Result<(), SweepError> {
        let swept = |f: &str| {
            self.axes.iter().any(|a| a.param == f)
                || (f == "dt_out" || f == "window_start") && self.axis("t_final").is_some()
                || LIST_PARAMS.contains(&f) && self.axis("n_legs").is_some()
        };
        let error = match self.config.validate() {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let inputs: Vec<String> = match &error {
            ConfigError::Param { source, .. } => {
                source.inputs().into_iter().map(String::from).collect()
            }
            ConfigError::Setting {
                source: crate::error::SettingsError::OutOfRange { field, .. },
                ..
            } => vec![field.clone()],
            _ => Vec::new(),
        };
        if inputs.iter().any(|f| swept(f)) {
            return Ok(());
        }
        Err(config_error(self.file.clone(), error))
    }

    /// Every axis value on its own over the base must be readable and in range
    /// (errors name the axis and its value); whole points are checked when planned.
    fn check_axis_values(&self) -> Result<(), SweepError> {
        for (i, a) in self.axes.iter().enumerate() {
            for v in &a.values {
                let mut t = self.base.clone();
                t.insert(a.param.clone(), v.clone());
                let checked = Params::from_toml_table(t).and_then(|p| match p.validate() {
                    Err(e @ ParamError::OutOfRange { .. })
                    | Err(e @ ParamError::NotInteger { .. })
                        if e.field() == a.param =>
                    {
                        Err(e)
                    }
                    _ => Ok(()),
                });
                if let Err(source) = checked {
                    return Err(SweepError::Config {
                        file: self.file.clone(),
                        context: format!("axes[{i}] `{}` = {v}", a.param),
                        cause: Box::new(ConfigError::Param {
                            path: "parameters".into(),
                            source,
                        }),
                    });
                }
            }
        }
        Ok(())
    }

    /// The axes, their groups and the repeats, as the refinement lattice reads them.
    pub fn shape(&self) -> SweepAxes<'_> {
        SweepAxes {
            file: &self.file,
            axes: &self.axes,
            groups: &self.groups,
            repeats: self.repeats,
        }
    }

    /// Number of parameter combinations (points / repeats).
    pub fn combinations(&self) -> usize {
        self.shape().combinations()
    }

    /// Total number of points (combinations × repeats).
    pub fn point_count(&self) -> usize {
        self.shape().point_count()
    }

    /// The axes that take more than one value among rows that agree on every parameter
    /// of `shown` (drawn, a facet, or averaged on purpose), with their values among
    /// `rows`: what a picture over `shown` would mix in one cell. An axis zipped with a
    /// shown one mixes nothing where the shown one's values tell the group's
    /// combinations apart (k_p with its zipped omega), and is named where they do not
    /// (a cubic term that is 0 for two laws of a group).
    pub fn hidden_axes(&self, rows: &Rows, shown: &[&str]) -> Vec<(String, Vec<String>)> {
        let cells: Vec<String> = (0..rows.len())
            .map(|r| {
                let key: Vec<String> = shown.iter().map(|s| rows.text_at(s, r)).collect();
                key.join("\u{1f}")
            })
            .collect();
        let mixes = |param: &str| {
            let mut seen: HashMap<&str, String> = HashMap::new();
            (0..rows.len()).any(|r| {
                let v = rows.text_at(param, r);
                seen.entry(cells[r].as_str()).or_insert_with(|| v.clone()) != &v
            })
        };
        self.axes
            .iter()
            .filter(|ax| !shown.contains(&ax.param.as_str()) && mixes(&ax.param))
            .map(|ax| (ax.param.clone(), rows.distinct(&ax.param)))
            .collect()
    }

    /// The axis sweeping `param`, if any.
    pub fn axis(&self, param: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.param == param)
    }
}

impl RawSweep {
    /// Check every value of the file, in one step, into the sweep it describes: the
    /// header, `[base]` and the settings tables, the axes and their groups, `[refine]`,
    /// then the base and every axis value as the points will read them.
    pub fn check(
        self,
        text: &str,
        file: &str,
        default_name: &str,
    ) -> Result<SweepSpec, SweepError> {
        let cx = Ctx { file };
        let head = Header::check(&cx, &self, default_name)?;
        let base = check_base_keys(&cx, self.base, head.random_phases)?;
        let settings = [
            ("solver", self.solver),
            ("metrics", self.metrics),
            ("fixed_step", self.fixed_step),
        ];
        let config = base_config(&cx, &base, settings)?;
        let axes = check_axes(&cx, self.axes, head.seed)?;
        let groups = group_axes(&cx, &axes, head.zip_all)?;
        check_point_count(&cx, &axes, &groups, head.repeats)?;

        // Every point continues to the same horizon (`sweep::run::apply_until_settled`).
        let config = RunConfig {
            until_settled: head.until_settled,
            ..config
        };
        let mut spec = SweepSpec {
            file: file.to_string(),
            text: text.to_string(),
            name: head.name,
            description: head.description,
            seed: head.seed,
            repeats: head.repeats,
            random_phases: head.random_phases,
            terrain_seed_per_repeat: head.terrain_seed_per_repeat,
            base,
            config,
            axes,
            groups,
            adaptive: head.adaptive,
            until_settled: head.until_settled,
            refine: None,
        };
        if let Some(t) = self.refine {
            let raw: RawRefine = decode(file, "refine", t)?;
            spec.refine = Some(raw.check(&spec.shape())?);
        }
        spec.check_base()?;
        spec.check_axis_values()?;
        spec.check_phase_axis()?;
        spec.check_repeat_inputs(&self.random_phases)?;
        Ok(spec)
    }
}

/// The top-level keys that are not tables, checked.
struct Header {
    name: String,
    description: String,
    seed: u64,
    repeats: usize,
    adaptive: Option<AdaptiveRepeats>,
    until_settled: Option<f64>,
    random_phases: bool,
    terrain_seed_per_repeat: bool,
    zip_all: bool,
}

impl Header {
    fn check(cx: &Ctx, raw: &RawSweep, default_name: &str) -> Result<Header, SweepError> {
        let seed = match &raw.seed {
            Some(v) => cx.int("seed", v, 0, i64::MAX)? as u64,
            None => 0,
        };
        let (repeats, adaptive) = match &raw.repeats {
            Some(toml::Value::Table(t)) => {
                let a = decode::<RawRepeats>(cx.file, "repeats", t.clone())?.check(cx.file)?;
                (a.max, Some(a))
            }
            Some(v) => (cx.int("repeats", v, 1, 1_000_000)? as usize, None),
            None => (1, None),
        };
        let until_settled = match &raw.until_settled {
            Some(v) => Some(cx.number("until_settled", v)?),
            None => None,
        };
        Ok(Header {
            name: raw.name.clone().unwrap_or_else(|| default_name.to_string()),
            description: raw.description.clone().unwrap_or_default(),
            seed,
            repeats,
            adaptive,
            until_settled,
            // Repeats that perturb the wave or change the ground ask about the wave's
            // robustness: they start from it unless random phases are asked for.
            random_phases: raw.random_phases.unwrap_or(
                repeats > 1 && !jitter_asked(raw) && raw.terrain_seed_per_repeat != Some(true),
            ),
            terrain_seed_per_repeat: raw.terrain_seed_per_repeat.unwrap_or(false),
            zip_all: raw.combine == Some(Combine::Zip),
        })
    }
}

/// Whether the file asks for a jittered start: `phase_jitter` in `[base]` or swept.
fn jitter_asked(raw: &RawSweep) -> bool {
    raw.base.contains_key(PHASE_JITTER)
        || raw
            .axes
            .iter()
            .any(|a| a.get("param").and_then(toml::Value::as_str) == Some(PHASE_JITTER))
}

/// `[base]` as written: known parameters only, and no `psi_init` that random phases
/// would replace.
fn check_base_keys(
    cx: &Ctx,
    base: toml::Table,
    random_phases: bool,
) -> Result<toml::Table, SweepError> {
    // Random phases replace every point's psi_init: never silently.
    if random_phases && base.contains_key(crate::params::PSI_INIT) {
        return Err(cx.err(
            "random_phases",
            "random initial phases (`random_phases = true`, the default with repeats > 1) \
             would replace the `psi_init` given in [base]: set `random_phases = false` to \
             keep it, or remove it",
        ));
    }
    if let Some(k) = base.keys().find(|k| !is_param(k)) {
        return Err(SweepError::Param {
            file: cx.file.to_string(),
            key: format!("base.{k}"),
            source: unknown_param(k),
        });
    }
    Ok(base)
}

/// The base configuration: `[base]` parameters plus the settings tables given, read
/// like a config file.
fn base_config(
    cx: &Ctx,
    base: &toml::Table,
    settings: [(&str, Option<toml::Table>); 3],
) -> Result<RunConfig, SweepError> {
    let mut cfg_table = base.clone();
    for (k, t) in settings {
        if let Some(t) = t {
            cfg_table.insert(k.to_string(), toml::Value::Table(t));
        }
    }
    let cfg_text = toml::to_string(&cfg_table).map_err(|e| SweepError::Toml {
        file: cx.file.to_string(),
        message: e.to_string(),
    })?;
    RunConfig::from_toml_str(&cfg_text, cx.file).map_err(|e| config_error(cx.file.into(), e))
}

/// A configuration error of the base, placed in its table: `[base]` for a parameter,
/// the settings table that holds a setting.
fn config_error(file: String, e: ConfigError) -> SweepError {
    let context = match &e {
        ConfigError::UnknownKey { source, .. } => {
            return SweepError::UnknownKey {
                file,
                source: source.clone(),
            }
        }
        ConfigError::Setting {
            source: crate::error::SettingsError::OutOfRange { field, .. },
            ..
        } => settings_table(field),
        ConfigError::Toml { message, .. } => {
            // The config reader names the settings table first ("[solver]: ...").
            let table = SETTINGS_TABLES
                .iter()
                .map(|t| format!("[{t}]"))
                .find(|t| message.starts_with(&format!("{t}: ")));
            if let Some(t) = table {
                let message = message[t.len() + 2..].to_string();
                return SweepError::Config {
                    file,
                    context: t,
                    cause: Box::new(ConfigError::Toml {
                        path: String::new(),
                        message,
                    }),
                };
            }
            "[base]".into()
        }
        _ => "[base]".into(),
    };
    SweepError::Config {
        file,
        context,
        cause: Box::new(e),
    }
}

/// The settings table that holds `field` ("[metrics]" for dt_out), by the tables' own keys.
fn settings_table(field: &str) -> String {
    let defaults = RunConfig::default();
    let tables = [
        ("solver", toml::Value::try_from(defaults.solver)),
        ("metrics", toml::Value::try_from(defaults.metrics)),
        ("fixed_step", toml::Value::try_from(defaults.fixed_step)),
    ];
    tables
        .into_iter()
        .find(|(_, v)| {
            v.as_ref()
                .ok()
                .and_then(|v| v.as_table())
                .is_some_and(|t| t.contains_key(field))
        })
        .map(|(t, _)| format!("[{t}]"))
        .unwrap_or_else(|| "settings".into())
}

/// The `[[axes]]`, each checked, no parameter swept twice.
fn check_axes(cx: &Ctx, tables: Vec<toml::Table>, seed: u64) -> Result<Vec<Axis>, SweepError> {
    let axes = tables
        .into_iter()
        .enumerate()
        .map(|(i, t)| check_axis(cx, i, t, seed))
        .collect::<Result<Vec<Axis>, SweepError>>()?;
    for (i, a) in axes.iter().enumerate() {
        if let Some(j) = axes[..i].iter().position(|b| b.param == a.param) {
            return Err(cx.err(
                format!("axes[{i}].param"),
                format!("`{}` is already swept by axes[{j}]", a.param),
            ));
        }
    }
    Ok(axes)
}

/// Groups: zipped within (equal lengths), product across, in order of first appearance.
fn group_axes(cx: &Ctx, axes: &[Axis], zip_all: bool) -> Result<Vec<Vec<usize>>, SweepError> {
    let mut groups: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (i, a) in axes.iter().enumerate() {
        let key = if zip_all {
            Some(String::new())
        } else {
            a.group.clone()
        };
        match groups.iter_mut().find(|(g, _)| key.is_some() && *g == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    for (_, members) in &groups {
        let n0 = axes[members[0]].values.len();
        for &m in &members[1..] {
            if axes[m].values.len() != n0 {
                return Err(cx.err(
                    format!("axes[{m}]"),
                    format!(
                        "zipped axes need equal lengths: `{}` has {} values, `{}` has {n0}",
                        axes[m].param,
                        axes[m].values.len(),
                        axes[members[0]].param
                    ),
                ));
            }
        }
    }
    Ok(groups.into_iter().map(|(_, m)| m).collect())
}

/// At most [`MAX_POINTS`] points (combinations x repeats, without overflow).
fn check_point_count(
    cx: &Ctx,
    axes: &[Axis],
    groups: &[Vec<usize>],
    repeats: usize,
) -> Result<(), SweepError> {
    let combos = groups
        .iter()
        .try_fold(1usize, |acc, g| acc.checked_mul(axes[g[0]].values.len()));
    match combos.and_then(|c| c.checked_mul(repeats)) {
        Some(n) if n <= MAX_POINTS => Ok(()),
        _ => Err(cx.err(
            "axes",
            format!("the sweep has more than {MAX_POINTS} points: split it"),
        )),
    }
}

/// Check `axes[i]`: its parameter, group and values (listed, or generated from a range
/// with `seed`), each key named in its error.
fn check_axis(cx: &Ctx, i: usize, t: toml::Table, seed: u64) -> Result<Axis, SweepError> {
    let raw: RawAxis = decode(cx.file, &format!("axes[{i}]"), t)?;
    let (param, scalar) = axis_param(cx, i, raw.param.clone())?;
    let group = raw.group.clone();
    let (kind_key, body) = axis_kind(cx, i, &param, raw.kinds())?;
    let (kind, log, values) = if kind_key == "values" {
        let values = listed_values(cx, i, &param, scalar.is_some(), body)?;
        (AxisKind::Values, false, values)
    } else {
        // Generated axes: only scalar parameters.
        let Some(sp) = scalar else {
            return Err(cx.err(
                format!("axes[{i}].{kind_key}"),
                format!("`{param}` is a per-leg list: sweep it with `values`"),
            ));
        };
        let r = AxisRange::check(cx, i, kind_key, body)?;
        let values = r.generate(cx, i, &param, sp, seed)?;
        (r.kind, r.log, values)
    };
    Ok(Axis {
        param,
        kind,
        log,
        group,
        values,
    })
}

/// `axes[i].param`: the parameter's name and, for a scalar one, its spec (per-leg lists
/// and choices have none); an unknown name is refused with the closest known one.
fn axis_param(
    cx: &Ctx,
    i: usize,
    param: Option<String>,
) -> Result<(String, Option<&'static ParamSpec>), SweepError> {
    let at = format!("axes[{i}].param");
    let Some(param) = param else {
        return Err(cx.err(at, "missing: every axis names its parameter"));
    };
    let scalar = spec(&param);
    if scalar.is_none() && !is_text_param(&param) {
        return Err(SweepError::Param {
            file: cx.file.to_string(),
            key: at,
            source: unknown_param(&param),
        });
    }
    Ok((param, scalar))
}

/// The one way the axis gives its values, of those its table holds.
fn axis_kind(
    cx: &Ctx,
    i: usize,
    param: &str,
    mut kinds: Vec<(&'static str, toml::Value)>,
) -> Result<(&'static str, toml::Value), SweepError> {
    match kinds.len() {
        1 => Ok(kinds.remove(0)),
        0 => Err(cx.err(
            format!("axes[{i}]"),
            format!(
                "axis `{param}` has no values: give one of {}",
                AXIS_KINDS.join(", ")
            ),
        )),
        _ => Err(cx.err(
            format!("axes[{i}]"),
            format!(
                "axis `{param}` has {}: give exactly one",
                kinds
                    .iter()
                    .map(|(k, _)| *k)
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        )),
    }
}

/// A `values = [...]` list: numbers for a scalar parameter, lists or names for a
/// per-leg one (read in full when a point is planned).
fn listed_values(
    cx: &Ctx,
    i: usize,
    param: &str,
    scalar: bool,
    body: toml::Value,
) -> Result<Vec<toml::Value>, SweepError> {
    let list = match body {
        toml::Value::Array(a) => a,
        other => {
            return Err(cx.err(
                format!("axes[{i}].values"),
                format!("expected an array of values, got {}", other.type_str()),
            ))
        }
    };
    if list.is_empty() {
        return Err(cx.err(
            format!("axes[{i}].values"),
            "empty axis: give at least one value",
        ));
    }
    for (j, x) in list.iter().enumerate() {
        let ok = matches!(
            (scalar, x),
            (
                true,
                toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::String(_)
            ) | (false, toml::Value::Array(_) | toml::Value::String(_))
        );
        if !ok {
            let expected = if scalar {
                "a number (angles may be written \"90deg\")"
            } else if CHOICE_PARAMS.contains(&param) {
                "a name (for terrain: \"flat\", \"slope\", \"sine\", \"rough\")"
            } else if MASK_PARAMS.contains(&param) {
                "a mask name (\"all\", \"none\", \"first\", \"every_other\") or a list of 0/1"
            } else {
                "a list of numbers, one per leg"
            };
            return Err(cx.err(
                format!("axes[{i}].values[{j}]"),
                format!("expected {expected}, got {} `{x}`", x.type_str()),
            ));
        }
    }
    Ok(list)
}

/// A generated axis: `{ start, stop, num }` (and `log` for random and lhs), checked.
struct AxisRange {
    kind: AxisKind,
    kind_key: &'static str,
    start: f64,
    stop: f64,
    num: usize,
    log: bool,
}

impl AxisRange {
    fn check(
        cx: &Ctx,
        i: usize,
        kind_key: &'static str,
        body: toml::Value,
    ) -> Result<AxisRange, SweepError> {
        let toml::Value::Table(table) = body else {
            return Err(cx.err(
                format!("axes[{i}].{kind_key}"),
                format!(
                    "expected a table {{ start = .., stop = .., num = .. }}, got {}",
                    body.type_str()
                ),
            ));
        };
        let r: RawRange = decode(cx.file, &format!("axes[{i}].{kind_key}"), table)?;
        let key = |k: &str| format!("axes[{i}].{kind_key}.{k}");
        let need = |v: Option<toml::Value>, k: &str| {
            v.ok_or_else(|| {
                cx.err(
                    key(k),
                    format!("missing: `{kind_key}` needs start, stop and num"),
                )
            })
        };
        let start = cx.number(&key("start"), &need(r.start, "start")?)?;
        let stop = cx.number(&key("stop"), &need(r.stop, "stop")?)?;
        let num = match need(r.num, "num")? {
            toml::Value::Integer(0) => {
                return Err(cx.err(key("num"), "empty axis: num must be >= 1"))
            }
            v => cx.int(&key("num"), &v, 1, MAX_POINTS as i64)? as usize,
        };
        let log_flag = match r.log {
            None => false,
            Some(b) if kind_key == "random" || kind_key == "lhs" => b,
            Some(other) => {
                return Err(cx.err(
                    key("log"),
                    format!("expected true or false (random and lhs only), got `{other}`"),
                ))
            }
        };
        let (kind, log) = match kind_key {
            "linspace" => (AxisKind::Linspace, false),
            "logspace" => (AxisKind::Logspace, true),
            "random" => (AxisKind::Random, log_flag),
            _ => (AxisKind::Lhs, log_flag),
        };
        if log && (start <= 0.0 || stop <= 0.0) {
            let (k, x) = if start <= 0.0 {
                ("start", start)
            } else {
                ("stop", stop)
            };
            return Err(cx.err(
                key(k),
                format!("{x} is out of range: a log-spaced axis needs start and stop > 0"),
            ));
        }
        Ok(AxisRange {
            kind,
            kind_key,
            start,
            stop,
            num,
            log,
        })
    }

    /// The axis' values (integers for an integer parameter).
    fn generate(
        &self,
        cx: &Ctx,
        i: usize,
        param: &str,
        sp: &crate::params::ParamSpec,
        seed: u64,
    ) -> Result<Vec<toml::Value>, SweepError> {
        let at = format!("axes[{i}].{}", self.kind_key);
        let is_int = matches!(sp.range, crate::params::Range::Int(..));
        if is_int && self.kind != AxisKind::Linspace {
            return Err(cx.err(
                at,
                format!("`{param}` is an integer: sweep it with `values` or `linspace`"),
            ));
        }
        let (start, stop, num, log) = (self.start, self.stop, self.num, self.log);
        let lerp = |u: f64| {
            if log {
                start * (stop / start).powf(u)
            } else {
                start + (stop - start) * u
            }
        };
        let mut rng = SplitMix64::derive(seed, &[i as u64 + 1]);
        let xs: Vec<f64> = match self.kind {
            AxisKind::Linspace | AxisKind::Logspace => (0..num)
                .map(|k| spaced_value(start, stop, log, k, num))
                .collect(),
            AxisKind::Random => (0..num).map(|_| lerp(rng.next_f64())).collect(),
            AxisKind::Lhs => {
                let perm = rng.permutation(num);
                perm.iter()
                    .map(|&s| lerp((s as f64 + rng.next_f64()) / num as f64))
                    .collect()
            }
            AxisKind::Values => unreachable!("a listed axis is not generated"),
        };
        xs.into_iter()
            .map(|x| {
                if !is_int {
                    return Ok(toml::Value::Float(x));
                }
                let r = x.round();
                if (x - r).abs() > 1e-9 {
                    return Err(cx.err(
                        at.clone(),
                        format!("`{param}` is an integer but the axis gives {x}"),
                    ));
                }
                Ok(toml::Value::Integer(r as i64))
            })
            .collect()
    }
}
