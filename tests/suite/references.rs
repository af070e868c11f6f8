//! Every file of the repository that a comment, a doc page or a README names exists:
//! paths such as `src/model/body.rs`, `docs/gpu.md` or `sweeps/first.toml` written in
//! the sources, shaders, sweep files and Markdown, and the relative targets of Markdown
//! links. A renamed or removed file leaves no stale pointer behind.

use std::path::{Path, PathBuf};

/// The top-level folders whose files the project's texts refer to.
const ROOTS: [&str; 9] = [
    "src", "tests", "docs", "shaders", "sweeps", "benches", "examples", "assets", ".ci",
];

/// The files whose text is read for references.
fn texts(root: &Path) -> Vec<PathBuf> {
    let text = |p: &Path| {
        matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("rs" | "md" | "wgsl" | "toml" | "py" | "sh" | "sbatch")
        ) || p.file_name().is_some_and(|n| n == "run")
    };
    let mut out = vec![root.join("README.md"), root.join("Cargo.toml")];
    for r in ROOTS {
        out.extend(crate::common::files_under(&root.join(r), &text));
    }
    out
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// Repository paths named in `text`: a word that starts with one of [`ROOTS`] and a
/// slash and ends in a file name with an extension (trailing punctuation dropped).
fn named_paths(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !is_path_char(chars[i - 1]);
        if starts_word {
            let mut j = i;
            while j < chars.len() && is_path_char(chars[j]) {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            let word = word.trim_end_matches(['.', '/']);
            let rooted = ROOTS.iter().any(|r| word.starts_with(&format!("{r}/")));
            let file = word.rsplit('/').next().unwrap_or("");
            // A file name with an extension; globs and templates are not single paths.
            if rooted && file.contains('.') && !file.starts_with('.') {
                out.push(word.to_string());
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Relative targets of Markdown links `[text](target)` (anchors dropped; URLs and
/// absolute paths skipped).
fn link_targets(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(k) = rest.find("](") {
        rest = &rest[k + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split('#').next().unwrap_or("").trim();
        if !target.is_empty()
            && !target.contains("://")
            && !target.starts_with('/')
            && !target.starts_with("mailto:")
            && !target.contains(' ')
        {
            out.push(target.to_string());
        }
    }
    out
}

#[test]
fn every_file_named_in_the_sources_and_docs_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in texts(root) {
        // This file's own unit test spells made-up paths on purpose.
        if file.ends_with("tests/suite/references.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            for p in named_paths(line) {
                checked += 1;
                if !root.join(&p).exists() {
                    missing.push(format!("{rel}:{}: {p}", n + 1));
                }
            }
            if rel.ends_with(".md") {
                let dir = file.parent().unwrap_or(root);
                for t in link_targets(line) {
                    checked += 1;
                    if !dir.join(&t).exists() {
                        missing.push(format!("{rel}:{}: link {t}", n + 1));
                    }
                }
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} references found: is the scanner blind?"
    );
    assert!(
        missing.is_empty(),
        "named but absent:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_scanner_finds_paths_and_links_and_skips_the_rest() {
    assert_eq!(
        named_paths("see src/model/body.rs, and (docs/gpu.md). not src/ nor xsrc/a.rs"),
        vec!["src/model/body.rs", "docs/gpu.md"]
    );
    assert_eq!(
        named_paths("`tests/suite/*.rs` and sweeps/atlas-*.toml"),
        Vec::<String>::new()
    );
    assert_eq!(
        link_targets("[a](docs/x.md#y) [b](https://e.org/z.md) [c](../c.png)"),
        vec!["docs/x.md", "../c.png"]
    );
}
