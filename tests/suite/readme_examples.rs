//! Every command block of README.md and sweeps/README.md runs as printed.
//!
//! The harness reads the Markdown generically (other sections may come and go):
//! - a ```toml block whose first line is `# NAME.toml` is a file the examples use: it is
//!   written into the scratch directory first;
//! - every line of a ```sh / ```bash / ```console block is a command (`\` continues a line,
//!   `#` starts a comment), run in order, in one scratch directory per Markdown file that
//!   holds copies of `sweeps/` and `examples/`, so relative paths work as in a checkout;
//! - a ```text block whose lines start with `$ ` is a transcript: each `$ ` command runs,
//!   and the lines after it are lines its output must contain (`...` matches anything).
//!
//! How a command runs: `cargo run [--release] [..] -- ARGS` and `metachron ARGS` run the
//! release binary this test was built with; `python3 ...` runs when Python has duckdb
//! (required where METACHRON_REQUIRE_PYTHON=1, as in .ci/run); cargo's own commands
//! (`cargo test`, `cargo bench`, `cargo install`) are what runs this test, or build
//! steps, and are not repeated. A comment starting `long:` marks an example too long
//! for the test suite: it is skipped, and the same file must hold a shorter example of
//! the same subcommand (its twin). Any other program is an error here: add a rule for it.
//!
//! Every command must exit 0 (or the code its comment names, `exit 1`), print no
//! `error:` line on stderr unless it is expected to fail, and create the files it names
//! with --out, --metrics, --snapshots and --animate.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[derive(Debug, Clone, PartialEq)]
enum Block {
    /// Commands with their comments and the Markdown line they start on.
    Shell(Vec<Line>),
    /// A file the examples read: (name, text).
    File(String, String),
    /// `$ command` followed by the lines its output must contain.
    Transcript(Vec<(Line, Vec<String>)>),
}

#[derive(Debug, Clone, PartialEq)]
struct Line {
    words: Vec<String>,
    comment: String,
    at: usize,
}

/// Split one shell line into words (quotes and backslash escapes as sh does for the
/// forms the READMEs use) and its trailing comment.
fn split_shell(line: &str) -> Result<(Vec<String>, String), String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(format!("unclosed ' in: {line}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err(format!("unclosed \" in: {line}")),
                        },
                        Some(x) => cur.push(x),
                        None => return Err(format!("unclosed \" in: {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            '#' if !in_word => {
                let comment: String = chars.collect();
                return Ok((words, comment.trim().to_string()));
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok((words, String::new()))
}

/// The command lines of a block's text: `\`-continued lines joined, blank lines and
/// comment-only lines dropped.
fn command_lines(text: &[(usize, &str)]) -> Result<Vec<Line>, String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut start = 0;
    for &(at, raw) in text {
        let t = raw.trim_end();
        if pending.is_empty() {
            start = at;
        }
        if let Some(head) = t.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        let (words, comment) = split_shell(&pending)?;
        pending.clear();
        if !words.is_empty() {
            out.push(Line {
                words,
                comment,
                at: start,
            });
        }
    }
    Ok(out)
}

/// The blocks of a Markdown text that this test runs or uses.
fn parse_markdown(md: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut lines = md.lines().enumerate().map(|(i, l)| (i + 1, l));
    while let Some((_, l)) = lines.next() {
        let Some(info) = l.trim_start().strip_prefix("```") else {
            continue;
        };
        let lang = info.trim().to_string();
        let body: Vec<(usize, &str)> = lines
            .by_ref()
            .take_while(|(_, l)| !l.trim_start().starts_with("```"))
            .collect();
        match lang.as_str() {
            "sh" | "bash" | "console" | "shell" => {
                blocks.push(Block::Shell(command_lines(&body)?));
            }
            "toml" => {
                if let Some(name) = body
                    .first()
                    .and_then(|(_, l)| l.trim().strip_prefix('#'))
                    .map(str::trim)
                    .filter(|n| n.ends_with(".toml") && !n.contains(' '))
                {
                    let text: Vec<&str> = body.iter().map(|(_, l)| *l).collect();
                    blocks.push(Block::File(name.to_string(), text.join("\n") + "\n"));
                }
            }
            "text" if body.iter().any(|(_, l)| l.starts_with("$ ")) => {
                let mut items: Vec<(Line, Vec<String>)> = Vec::new();
                for &(at, l) in &body {
                    if let Some(cmd) = l.strip_prefix("$ ") {
                        let mut c = command_lines(&[(at, cmd)])?;
                        let line = c.pop().ok_or_else(|| format!("line {at}: empty $ line"))?;
                        items.push((line, Vec::new()));
                    } else if let Some((_, expect)) = items.last_mut() {
                        if !l.trim().is_empty() {
                            expect.push(l.trim_end().to_string());
                        }
                    } else {
                        return Err(format!("line {at}: output before the first `$ ` command"));
                    }
                }
                blocks.push(Block::Transcript(items));
            }
            _ => {}
        }
    }
    Ok(blocks)
}

/// Does `line` match `pattern`, where `...` stands for any text?
fn matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    let line = line.trim_end();
    if parts.len() == 1 {
        return line == pattern.trim_end();
    }
    let (first, last) = (parts[0], parts[parts.len() - 1].trim_end());
    if !line.starts_with(first) || !line[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(k) => rest = &rest[k + mid.len()..],
            None => return false,
        }
    }
    true
}

/// What the harness does with a command.
#[derive(Debug, PartialEq)]
enum Action {
    /// Run the metachron binary with these arguments.
    Metachron(Vec<String>),
    /// Run this program (words[0]) with these arguments.
    Program(Vec<String>),
    /// Do not run: the reason.
    Skip(String),
}

fn classify(line: &Line) -> Result<Action, String> {
    let w = &line.words;
    if line.comment.starts_with("long:") {
        return Ok(Action::Skip("marked long: its twin runs instead".into()));
    }
    match w[0].as_str() {
        "metachron" => Ok(Action::Metachron(w[1..].to_vec())),
        "cargo" => match w.get(1).map(String::as_str) {
            Some("run") => {
                let sep = w
                    .iter()
                    .position(|x| x == "--")
                    .ok_or("`cargo run` without `--`: no arguments for metachron")?;
                if w[2..sep].iter().any(|x| x == "--example" || x == "--bin") {
                    return Ok(Action::Skip("runs another target".into()));
                }
                Ok(Action::Metachron(w[sep + 1..].to_vec()))
            }
            Some("test" | "bench" | "install" | "build" | "doc" | "fmt" | "clippy") => Ok(
                Action::Skip("cargo's own command (this test runs inside `cargo test`)".into()),
            ),
            other => Err(format!("unknown cargo command {other:?}")),
        },
        "python3" | "python" => Ok(Action::Program(w.clone())),
        "sbatch" => Ok(Action::Skip(
            "needs a Slurm cluster: tests/slurm/run-array.sh submits the script to one in CI".into(),
        )),
        // `VAR=value program ...`: the program decides.
        env if env.contains('=') && w.len() > 1 => classify(&Line {
            words: w[1..].to_vec(),
            ..line.clone()
        }),
        other => Err(format!(
            "program `{other}` has no rule in tests/suite/readme_examples.rs: add one (run it, or skip it with a reason)"
        )),
    }
}

/// The metachron subcommand a line runs (or would run, were it not `long:`).
fn subcommand(line: &Line) -> Option<String> {
    let plain = Line {
        comment: String::new(),
        ..line.clone()
    };
    match classify(&plain) {
        Ok(Action::Metachron(a)) => a.first().cloned(),
        _ => None,
    }
}

fn python_has_duckdb() -> bool {
    Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The exit code a command's comment announces (`exit 1`), else 0.
fn expected_code(comment: &str) -> i32 {
    comment
        .split("exit ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// Paths the command says it writes.
fn named_outputs(args: &[String]) -> Vec<PathBuf> {
    args.windows(2)
        .filter(|p| ["--out", "--metrics", "--snapshots", "--animate"].contains(&p[0].as_str()))
        .map(|p| PathBuf::from(&p[1]))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Run one command in `dir`; returns its stdout + stderr, or a failure description.
fn run_one(md: &str, line: &Line, dir: &Path) -> Result<Option<String>, String> {
    let at = format!("{md}:{}: `{}`", line.at, line.words.join(" "));
    let (mut cmd, args) = match classify(line).map_err(|e| format!("{at}: {e}"))? {
        Action::Skip(why) => {
            println!("skip {at}: {why}");
            return Ok(None);
        }
        Action::Metachron(args) => (crate::common::bin::command(), args),
        Action::Program(words) => {
            if !python_has_duckdb() {
                if std::env::var("METACHRON_REQUIRE_PYTHON").as_deref() == Ok("1") {
                    return Err(format!(
                        "{at}: python3 with duckdb is required (METACHRON_REQUIRE_PYTHON=1)"
                    ));
                }
                println!("skip {at}: python3 with duckdb not installed (pip install duckdb)");
                return Ok(None);
            }
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]);
            (c, Vec::new())
        }
    };
    println!("run  {at}");
    let out = cmd
        .args(&args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("{at}: cannot start: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let want = expected_code(&line.comment);
    let shown = format!("--- stdout\n{stdout}--- stderr\n{stderr}");
    if out.status.code() != Some(want) {
        return Err(format!(
            "{at}: exit {:?}, the README expects {want}\n{shown}",
            out.status.code()
        ));
    }
    if want == 0 {
        if let Some(l) = stderr.lines().find(|l| l.contains("error:")) {
            return Err(format!(
                "{at}: succeeded but printed an error line: {l}\n{shown}"
            ));
        }
        for p in named_outputs(&args) {
            if !dir.join(&p).exists() {
                return Err(format!("{at}: {} was not written\n{shown}", p.display()));
            }
        }
    }
    Ok(Some(stdout + &stderr))
}

/// Run every example of one Markdown file; returns the failures.
fn run_markdown(rel: &str) -> Vec<String> {
    let md = std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap();
    let blocks = match parse_markdown(&md) {
        Ok(b) => b,
        Err(e) => return vec![format!("{rel}: {e}")],
    };
    let dir = std::env::temp_dir().join(format!(
        "metachron-readme-{}-{}",
        rel.replace('/', "_"),
        std::process::id()
    ));
    std::fs::remove_dir_all(&dir).ok();
    copy_dir(&Path::new(ROOT).join("sweeps"), &dir.join("sweeps"));
    copy_dir(&Path::new(ROOT).join("examples"), &dir.join("examples"));
    for b in &blocks {
        if let Block::File(name, text) = b {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    let mut failures = Vec::new();
    let mut ran_subcommands = Vec::new();
    let mut long_subcommands = Vec::new();
    for b in &blocks {
        let items: Vec<(&Line, &[String])> = match b {
            Block::Shell(lines) => lines.iter().map(|l| (l, &[][..])).collect(),
            Block::Transcript(items) => items.iter().map(|(l, e)| (l, e.as_slice())).collect(),
            Block::File(..) => continue,
        };
        for (line, expect) in items {
            let sub = subcommand(line);
            if line.comment.starts_with("long:") {
                long_subcommands.push((line.at, sub.clone()));
            }
            match run_one(rel, line, &dir) {
                Ok(Some(output)) => {
                    if let Some(s) = sub {
                        ran_subcommands.push(s);
                    }
                    for pat in expect {
                        if !output.lines().any(|l| matches(pat, l)) {
                            failures.push(format!(
                                "{rel}:{}: the output has no line matching `{pat}`\n{output}",
                                line.at
                            ));
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => failures.push(e),
            }
        }
    }
    for (at, sub) in long_subcommands {
        if !sub.as_ref().is_some_and(|s| ran_subcommands.contains(s)) {
            failures.push(format!(
                "{rel}:{at}: a `long:` example needs a shorter twin of the same subcommand ({sub:?}) that the test runs"
            ));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    failures
}

#[test]
fn readme_examples_run_as_printed() {
    let failures = run_markdown("README.md");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn sweeps_readme_examples_run_as_printed() {
    let failures = run_markdown("sweeps/README.md");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// The harness itself: a parser that found nothing would pass every README.

#[test]
fn shell_lines_split_like_sh() {
    let (w, c) = split_shell(r#"python3 -c "print(\"a b\")" 'x y' z\ w  # note"#).unwrap();
    assert_eq!(w, ["python3", "-c", "print(\"a b\")", "x y", "z w"]);
    assert_eq!(c, "note");
    let (w, c) = split_shell("metachron sweep a#b").unwrap();
    assert_eq!(w, ["metachron", "sweep", "a#b"]);
    assert_eq!(c, "");
    assert!(split_shell("echo \"open").is_err());
}

#[test]
fn markdown_blocks_are_found_and_classified() {
    let md = "text\n```sh\ncargo run --release -- simulate \\\n    --set a=1   # c\n\ncargo test --release\n```\n\
              ```toml\n# p.toml\nx = 1\n```\n```toml\nno = \"name\"\n```\n\
              ```text\n$ metachron map d  # exit 2\nerror: ...\n```\n";
    let blocks = parse_markdown(md).unwrap();
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    let Block::Shell(lines) = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].at, 3);
    assert_eq!(
        classify(&lines[0]).unwrap(),
        Action::Metachron(vec!["simulate".into(), "--set".into(), "a=1".into()])
    );
    assert!(matches!(classify(&lines[1]).unwrap(), Action::Skip(_)));
    assert_eq!(
        blocks[1],
        Block::File("p.toml".into(), "# p.toml\nx = 1\n".into())
    );
    let Block::Transcript(items) = &blocks[2] else {
        panic!("{blocks:?}")
    };
    assert_eq!(expected_code(&items[0].0.comment), 2);
    assert_eq!(items[0].1, ["error: ..."]);
    let unknown = Line {
        words: vec!["qsub".into()],
        comment: String::new(),
        at: 1,
    };
    assert!(classify(&unknown).is_err());
    // An environment assignment defers to the program after it.
    let env = Line {
        words: vec!["X=1".into(), "qsub".into()],
        comment: String::new(),
        at: 1,
    };
    assert!(classify(&env).is_err());
    let env = Line {
        words: vec!["X=1".into(), "sbatch".into()],
        comment: String::new(),
        at: 1,
    };
    assert!(matches!(classify(&env).unwrap(), Action::Skip(_)));
}

#[test]
fn output_patterns_match_with_ellipses() {
    assert!(matches(
        "status ok | class ...",
        "status ok | class metachronal"
    ));
    assert!(matches("  lag order R  ...", "  lag order R  0.999"));
    assert!(matches("a...c...e", "abcde"));
    assert!(!matches("a...c...e", "abdex"));
    assert!(!matches("status ok", "status ok at t = 3"));
    assert!(matches("...diverged...", "class diverged at 3"));
}
