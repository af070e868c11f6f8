//! The lane kernel and the generated WGSL kernel are twins stage by stage: the CPU's
//! `step` calls the stages of `STEP_STAGES` in its order, every generated kernel
//! (plain and compensated, with and without the couple and the ground) emits the same
//! stages in the same order, and each stage has a generator function of the same name.
//! A stage added, renamed or moved on one side only fails here.

use metachron::gpu::kernel::Arith;
use metachron::gpu::layout::KernelShape;
use metachron::gpu::shader;
use metachron::gpu::Precision;
use metachron::integrate::lanes::kernel::STEP_STAGES;

use crate::common::repo_file;

/// The body of `fn NAME` in `src` (from its opening brace to the brace that closes it at
/// the same indentation).
fn fn_body<'a>(src: &'a str, signature: &str) -> &'a str {
    let at = src
        .find(signature)
        .unwrap_or_else(|| panic!("no `{signature}` in the source"));
    let open = at + src[at..].find("{\n").expect("a body");
    let close = open + src[open..].find("\n}\n").expect("the body's end");
    &src[open..close]
}

/// The stage names `body` calls, in the order of their first call.
fn stages_called(body: &str) -> Vec<&'static str> {
    let mut calls: Vec<(usize, &'static str)> = STEP_STAGES
        .iter()
        .filter_map(|&name| {
            let call = [format!("{name}::<"), format!("{name}(")]
                .iter()
                .filter_map(|c| body.find(c.as_str()))
                .min()?;
            Some((call, name))
        })
        .collect();
    calls.sort();
    calls.into_iter().map(|(_, name)| name).collect()
}

/// The `// @stage NAME` markers of generated WGSL, in order.
fn stage_markers(wgsl: &str) -> Vec<String> {
    wgsl.lines()
        .filter_map(|l| l.trim().strip_prefix("// @stage "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_lane_kernel_calls_every_stage_in_order() {
    let src = repo_file("src/integrate/lanes/kernel.rs");
    let body = fn_body(&src, "pub fn step<");
    assert_eq!(stages_called(body), STEP_STAGES);
    for name in STEP_STAGES {
        assert!(
            src.contains(&format!("fn {name}<")),
            "the lane kernel has no stage function `{name}`"
        );
    }
}

#[test]
fn every_generated_kernel_emits_the_lane_kernels_stages_in_order() {
    let plain = KernelShape::plain(9, 5);
    let shapes = [
        plain,
        KernelShape {
            couple: true,
            ..KernelShape::plain(4, 7)
        },
        KernelShape {
            ground: true,
            harmonics: 8,
            ..plain
        },
        KernelShape {
            couple: true,
            ground: true,
            harmonics: 1,
            ..KernelShape::plain(2, 12)
        },
    ];
    for shape in shapes {
        for (precision, arith) in [
            (Precision::F64, Arith::Plain),
            (Precision::F32, Arith::Compensated),
        ] {
            let wgsl = shader::source_with(shape, precision, arith);
            assert_eq!(
                stage_markers(&wgsl),
                STEP_STAGES,
                "{shape:?} in {arith:?}: the generated step's stages"
            );
        }
    }
    let generator = repo_file("src/gpu/kernel.rs");
    for name in STEP_STAGES {
        assert!(
            generator.contains(&format!("fn {name}(c: &mut Code")),
            "the WGSL generator has no stage function `{name}`"
        );
    }
}

/// Longest function the model, the integrators and the GPU kernel generator may hold:
/// about a screen, so that a stage reads at once.
const MAX_FUNCTION_LINES: usize = 110;

/// (name, lines) of every function with a body in `src`: from its `fn` line to the
/// brace that closes it at the same indentation.
fn function_lengths(src: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let signature = ["pub fn ", "fn ", "pub(crate) fn ", "pub(super) fn "]
            .iter()
            .find_map(|p| code.strip_prefix(p));
        let Some(rest) = signature else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if code.ends_with(';') || name.is_empty() {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            out.push((name, end + 2));
        }
    }
    out
}

#[test]
fn no_function_of_the_model_integrators_or_kernels_is_longer_than_a_screen() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src/model", "src/integrate"] {
        files.extend(crate::common::files_under(&root.join(dir), &|p| {
            p.extension().is_some_and(|e| e == "rs")
        }));
    }
    files.push(root.join("src/gpu/kernel.rs"));
    let (mut long, mut counted) = (Vec::new(), 0);
    for file in &files {
        let src = std::fs::read_to_string(file).expect("a source file");
        let lengths = function_lengths(&src);
        counted += lengths.len();
        for (name, n) in lengths {
            if n > MAX_FUNCTION_LINES {
                long.push(format!("{}: fn {name}, {n} lines", file.display()));
            }
        }
    }
    // The count reads these rooms' functions at all (a few hundred of them).
    assert!(counted > 200, "only {counted} functions found");
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_count_reads_a_function_to_its_closing_brace() {
    let src = "fn short() {\n    let x = 1;\n}\n\nimpl A {\n    pub fn long(&self) {\n        a();\n        b();\n    }\n}\n";
    assert_eq!(
        function_lengths(src),
        [("short".to_string(), 3), ("long".to_string(), 4)]
    );
}
