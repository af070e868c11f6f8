//! The module structure: no import circles, no arrow from a lower layer up to a higher
//! one. The graph is read from the sources themselves: every path that starts with
//! `crate::`, `super::`, `self::`, a child module's name or (in the binary)
//! `metachron::`, in `use` lines and in code alike, is an arrow from the module whose
//! file holds it to the module that declares the item (re-exports of a room's
//! `mod.rs` followed to the child that declares it). Comments, string literals and
//! `#[cfg(test)]` modules are left out: tests may reach anywhere.
//!
//! Two rules shape what counts as an arrow:
//! - a module's arrows to its own ancestors are not counted: what a room's `mod.rs`
//!   declares (its error type, its small shared enums) belongs to every module inside
//!   the room;
//! - the layers are the lines of lib.rs's module list, lowest first; a module may use
//!   modules of its own line (without circles) and of lines above it. The binary
//!   (`main.rs`, `cli/`) sits on top.
//!
//! Run `cargo test --release --test suite architecture` to see it hold.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module: the crate it belongs to and its path inside it (empty: the crate root).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Module {
    krate: Krate,
    path: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Krate {
    Lib,
    Bin,
}

impl Module {
    fn name(&self) -> String {
        let p = if self.path.is_empty() {
            "<root>".to_string()
        } else {
            self.path.join("::")
        };
        match self.krate {
            Krate::Lib => p,
            Krate::Bin => format!("bin:{p}"),
        }
    }

    fn is_ancestor_of(&self, other: &Module) -> bool {
        self.krate == other.krate
            && self.path.len() < other.path.len()
            && other.path[..self.path.len()] == self.path[..]
    }
}

/// The text of a source file with comments, string and char literals blanked (kept as
/// spaces, so braces in them cannot unbalance anything).
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !b[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('x', '\n', '\''), else a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)] mod NAME { … }` blocks.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(at) = out.find("#[cfg(test)]") {
        let rest = &out[at + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let Some(after_mod) = trimmed.strip_prefix("mod ") else {
            // Another item under cfg(test): blank the attribute only.
            out.replace_range(at..at + "#[cfg(test)]".len(), "");
            continue;
        };
        let Some(open) = after_mod.find('{') else {
            out.replace_range(at..at + "#[cfg(test)]".len(), "");
            continue;
        };
        let start = out.len() - after_mod.len() + open;
        let mut depth = 0usize;
        let mut end = out.len();
        for (k, ch) in out[start..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..end, "");
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path in `code` written as `a::b::…`, with use trees (`a::{b, c::{d, e}}`)
/// expanded; `pub use CHILD::…` re-exports are returned apart.
struct Paths {
    paths: Vec<Vec<String>>,
    reexports: Vec<Vec<String>>,
}

fn paths_in(code: &str) -> Paths {
    let c: Vec<char> = code.chars().collect();
    let mut paths = Vec::new();
    let mut reexports = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let starts_ident = is_ident_char(c[i])
            && !c[i].is_ascii_digit()
            && (i == 0 || !(is_ident_char(c[i - 1]) || c[i - 1] == ':'));
        if !starts_ident {
            i += 1;
            continue;
        }
        let before: String = c[i.saturating_sub(24)..i].iter().collect();
        let is_pub_use = before.trim_end().ends_with("pub use");
        let mut found = Vec::new();
        let end = use_tree(&c, i, Vec::new(), &mut found);
        for p in found.into_iter().filter(|p| p.len() > 1) {
            if is_pub_use {
                reexports.push(p);
            } else {
                paths.push(p);
            }
        }
        i = end.max(i + 1);
    }
    Paths { paths, reexports }
}

/// Parse a use tree (or a plain path) at `i` below `prefix`; push every full path.
fn use_tree(c: &[char], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let skip_ws = |mut i: usize| {
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let mut path = prefix;
    loop {
        i = skip_ws(i);
        if i < c.len() && c[i] == '{' {
            i += 1;
            loop {
                i = skip_ws(i);
                if i >= c.len() {
                    return i;
                }
                if c[i] == '}' {
                    return i + 1;
                }
                if c[i] == ',' {
                    i += 1;
                    continue;
                }
                let before = i;
                i = use_tree(c, i, path.clone(), out);
                if i == before {
                    i += 1;
                }
            }
        }
        if i < c.len() && c[i] == '*' {
            out.push(path);
            return i + 1;
        }
        let start = i;
        while i < c.len() && is_ident_char(c[i]) {
            i += 1;
        }
        if i == start {
            out.push(path);
            return i;
        }
        let seg: String = c[start..i].iter().collect();
        if seg != "self" || path.is_empty() {
            path.push(seg);
        }
        if c.get(i) == Some(&':') && c.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// The module graph of the sources under `src`.
struct Graph {
    modules: BTreeSet<Module>,
    arrows: BTreeSet<(Module, Module)>,
}

fn module_of(rel: &Path) -> Module {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let krate = if parts[0] == "main" || parts[0] == "cli" {
        Krate::Bin
    } else {
        Krate::Lib
    };
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    Module { krate, path: parts }
}

fn read_sources(dir: &Path, root: &Path, out: &mut Vec<(Module, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_sources(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&p).expect("a source file");
            let rel = p.strip_prefix(root).expect("under src");
            out.push((module_of(rel), text));
        }
    }
}

fn build_graph(sources: &[(Module, String)]) -> Graph {
    let modules: BTreeSet<Module> = sources.iter().map(|(m, _)| m.clone()).collect();
    let code: Vec<(Module, Paths)> = sources
        .iter()
        .map(|(m, t)| (m.clone(), paths_in(&without_test_modules(&code_only(t)))))
        .collect();
    let child = |m: &Module, name: &str| {
        let mut path = m.path.clone();
        path.push(name.to_string());
        let c = Module {
            krate: m.krate,
            path,
        };
        modules.contains(&c).then_some(c)
    };
    // Re-exports of a child's item: (module, item name) -> the child.
    let mut facade: BTreeMap<(Module, String), Module> = BTreeMap::new();
    let mut paths: Vec<(&Module, &Vec<String>)> = Vec::new();
    for (m, p) in &code {
        for r in &p.reexports {
            match child(m, &r[0]) {
                Some(c) => {
                    let item = r.last().expect("a path").clone();
                    facade.insert((m.clone(), item), c);
                }
                None => paths.push((m, r)),
            }
        }
        paths.extend(p.paths.iter().map(|path| (m, path)));
    }
    let mut arrows = BTreeSet::new();
    {
        for (m, path) in paths {
            let (mut base, rest): (Module, &[String]) = match path[0].as_str() {
                "crate" => (
                    Module {
                        krate: m.krate,
                        path: vec![],
                    },
                    &path[1..],
                ),
                "metachron" if m.krate == Krate::Bin => (
                    Module {
                        krate: Krate::Lib,
                        path: vec![],
                    },
                    &path[1..],
                ),
                "super" => {
                    let mut up = m.clone();
                    let mut rest = &path[..];
                    while rest.first().is_some_and(|s| s == "super") {
                        up.path.pop();
                        rest = &rest[1..];
                    }
                    (up, rest)
                }
                "self" => (m.clone(), &path[1..]),
                name if child(m, name).is_some() => (m.clone(), &path[..]),
                _ => continue,
            };
            for seg in rest {
                if let Some(c) = child(&base, seg) {
                    base = c;
                } else if let Some(c) = facade.get(&(base.clone(), seg.clone())) {
                    base = c.clone();
                } else {
                    break;
                }
            }
            if base != *m && !base.is_ancestor_of(m) {
                arrows.insert((m.clone(), base));
            }
        }
    }
    Graph { modules, arrows }
}

/// The layers of lib.rs's module list: one per `//! - ` line (continued by indented
/// `//!` lines), each the set of modules named there in [`backticks`].
fn layers_of(lib_rs: &str) -> Vec<BTreeSet<String>> {
    let mut layers: Vec<BTreeSet<String>> = Vec::new();
    let mut in_item = false;
    for line in lib_rs.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            break;
        };
        if let Some(item) = doc.strip_prefix(" - ") {
            layers.push(BTreeSet::new());
            in_item = true;
            names_in(item, layers.last_mut().expect("just pushed"));
        } else if in_item && doc.starts_with("   ") {
            names_in(doc, layers.last_mut().expect("an item"));
        } else {
            in_item = false;
        }
    }
    layers
}

fn names_in(text: &str, into: &mut BTreeSet<String>) {
    for part in text.split("[`").skip(1) {
        if let Some(name) = part.split("`]").next() {
            into.insert(name.to_string());
        }
    }
}

/// What is wrong with a graph, given the layer of each module (`None`: unknown).
#[derive(Debug, Default)]
struct Findings {
    circles: Vec<(Module, Module)>,
    upward: Vec<(Module, Module)>,
}

fn judge(
    modules: &BTreeSet<Module>,
    arrows: &BTreeSet<(Module, Module)>,
    layer: &dyn Fn(&Module) -> usize,
) -> Findings {
    let next = |m: &Module| -> Vec<&Module> {
        arrows
            .iter()
            .filter(|(a, _)| a == m)
            .map(|(_, b)| b)
            .collect()
    };
    let reaches = |from: &Module, to: &Module| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(m) = stack.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m) {
                stack.extend(next(m));
            }
        }
        false
    };
    let mut f = Findings::default();
    for (a, b) in arrows {
        debug_assert!(modules.contains(a) && modules.contains(b));
        if reaches(b, a) {
            f.circles.push((a.clone(), b.clone()));
        }
        if layer(b) > layer(a) {
            f.upward.push((a.clone(), b.clone()));
        }
    }
    f
}

fn module_named(name: &str) -> Module {
    Module {
        krate: Krate::Lib,
        path: name.split("::").map(str::to_string).collect(),
    }
}

#[test]
fn no_circles_and_no_upward_arrows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&src, &src, &mut sources);
    let graph = build_graph(&sources);
    assert!(
        graph.arrows.len() > 100,
        "the reader found only {} arrows: it no longer reads the sources",
        graph.arrows.len()
    );

    let lib_rs = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let layers = layers_of(&lib_rs);
    let top: BTreeSet<&str> = graph
        .modules
        .iter()
        .filter(|m| m.krate == Krate::Lib && m.path.len() == 1)
        .map(|m| m.path[0].as_str())
        .collect();
    for name in &top {
        let n = layers.iter().filter(|l| l.contains(*name)).count();
        assert_eq!(
            n, 1,
            "lib.rs's module list names `{name}` {n} times, not once"
        );
    }
    let layer = |m: &Module| match (m.krate, m.path.first()) {
        (Krate::Bin, _) => layers.len(),
        (Krate::Lib, None) => 0,
        (Krate::Lib, Some(top)) => layers
            .iter()
            .position(|l| l.contains(top))
            .expect("every module is listed"),
    };

    let f = judge(&graph.modules, &graph.arrows, &layer);
    let show = |v: &[(Module, Module)]| {
        v.iter()
            .map(|(a, b)| format!("  {} -> {}", a.name(), b.name()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        f.circles.is_empty(),
        "arrows on an import circle:\n{}",
        show(&f.circles)
    );
    assert!(
        f.upward.is_empty(),
        "arrows from a lower layer up to a higher one (layers: lib.rs's module list):\n{}",
        show(&f.upward)
    );
}

#[test]
fn the_check_finds_a_circle_and_an_upward_arrow_in_a_small_graph() {
    let (a, b, c) = (module_named("a"), module_named("b"), module_named("c::d"));
    let modules: BTreeSet<Module> = [a.clone(), b.clone(), c.clone()].into();
    // Layers: a lowest, then b, then c.
    let layer = |m: &Module| match m.path[0].as_str() {
        "a" => 0,
        "b" => 1,
        _ => 2,
    };
    let clean: BTreeSet<_> = [(b.clone(), a.clone()), (c.clone(), b.clone())].into();
    let f = judge(&modules, &clean, &layer);
    assert!(f.circles.is_empty() && f.upward.is_empty(), "{f:?}");

    let mut bad = clean.clone();
    bad.insert((a.clone(), c.clone()));
    let f = judge(&modules, &bad, &layer);
    assert_eq!(f.upward, vec![(a.clone(), c.clone())]);
    assert_eq!(f.circles.len(), 3, "every arrow of a -> c -> b -> a: {f:?}");
}

#[test]
fn the_reader_follows_use_trees_and_skips_comments_strings_and_tests() {
    let lib = "//! - [`a`], [`b`]: low;\n//!   [`c`] too;\n//! - [`room`]: high.\npub mod a;";
    let layers = layers_of(lib);
    assert_eq!(layers.len(), 2);
    assert!(layers[0].contains("c") && layers[1].contains("room"));

    let sources = vec![
        (module_named("a"), "pub struct A;".to_string()),
        (
            module_named("b"),
            "use crate::{a::A, room::{self, Thing}};\n\
             // use crate::c::C;\n\
             const S: &str = \"crate::c::C\";\n\
             #[cfg(test)]\nmod tests { use crate::c::C; fn f() { let _ = '{'; } }"
                .to_string(),
        ),
        (module_named("c"), "pub struct C;".to_string()),
        (
            module_named("room"),
            "mod inner;\npub use inner::Thing;\npub enum E {}".to_string(),
        ),
        (
            module_named("room::inner"),
            "use super::E; fn f() -> crate::c::C { crate::c::C }".to_string(),
        ),
    ];
    let g = build_graph(&sources);
    let names: BTreeSet<(String, String)> =
        g.arrows.iter().map(|(a, b)| (a.name(), b.name())).collect();
    let want: BTreeSet<(String, String)> = [
        ("b", "a"),
        ("b", "room"),
        ("b", "room::inner"),
        ("room::inner", "c"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(names, want);
}

/// Calls that create, replace, rename or open a file outside the two file primitives
/// (`output_file`: every write; `input_file`: every read of a user's file).
const FILE_CALLS: &[&str] = &[
    "File::create",
    "File::open",
    "fs::write",
    "fs::rename",
    "fs::copy",
    "hard_link",
    "OpenOptions",
    "create_new",
    "BitMapBackend::new",
    "SVGBackend::new",
    "save_buffer",
];

/// Where `code` (comments and strings blanked, test modules left out) calls one of
/// [`FILE_CALLS`]: `(call, line)`.
fn file_calls(code: &str) -> Vec<(&'static str, usize)> {
    let code = without_test_modules(&code_only(code));
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for call in FILE_CALLS {
            let hit = line.match_indices(call).any(|(i, _)| {
                !line[..i].chars().next_back().is_some_and(is_ident_char)
                    && !line[i + call.len()..]
                        .chars()
                        .next()
                        .is_some_and(is_ident_char)
            });
            if hit {
                found.push((*call, n + 1));
            }
        }
    }
    found
}

#[test]
fn every_file_is_written_through_output_file_and_read_through_input_file() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_sources(&src, &src, &mut sources);
    let primitives = ["output_file", "input_file"];
    let mut bypass = Vec::new();
    let mut in_primitives = 0;
    for (module, text) in &sources {
        let calls = file_calls(text);
        if module.krate == Krate::Lib
            && module.path.len() == 1
            && primitives.contains(&module.path[0].as_str())
        {
            in_primitives += calls.len();
            continue;
        }
        for (call, line) in calls {
            bypass.push(format!("{}: line {line}: {call}", module.name()));
        }
    }
    assert!(
        in_primitives >= 3,
        "the primitives themselves call {in_primitives} of the listed functions: the check no longer sees them"
    );
    assert!(
        bypass.is_empty(),
        "files written or opened outside src/output_file.rs and src/input_file.rs \
         (go through PendingFile, write_bytes, write_new, open_lock, open_regular):\n{}",
        bypass.join("\n")
    );
}

#[test]
fn the_file_call_check_sees_a_bypass_and_skips_comments_and_strings() {
    let code = "fn f() {\n    // std::fs::write(p, b)\n    let s = \"File::create\";\n    std::fs::write(p, b).unwrap();\n    let o = OpenOptions::new();\n    let x = my_hard_link_count();\n}\n";
    assert_eq!(file_calls(code), vec![("fs::write", 4), ("OpenOptions", 5)]);
}
