//! `metachron devices --dump-wgsl LEGSxNODES`: the generated kernel as a reader sees it,
//! the same text the GPU host hands to wgpu, valid WGSL, and no GPU needed to print it.

use crate::common;

use metachron::gpu::layout::KernelShape;
use metachron::gpu::shader::{self, ENTRY_POINT};
use metachron::gpu::Precision;

fn entry_declared(src: &str) -> bool {
    src.contains(&format!("fn {ENTRY_POINT}("))
}

#[test]
fn the_dump_is_the_kernel_the_host_builds_and_naga_accepts_it() {
    let (code, out, err) = common::bin::run(&["devices", "--dump-wgsl", "9x7"]);
    assert_eq!(code, 0, "{err}");
    let (module, _) = shader::validate(&out).expect("the dumped kernel validates");
    assert!(
        module.entry_points.iter().any(|e| e.name == ENTRY_POINT),
        "no `{ENTRY_POINT}` entry point in the dump"
    );
    assert!(entry_declared(&out));
    assert_eq!(
        out,
        shader::source(KernelShape::plain(9, 7), Precision::F64)
    );
    assert!(
        !out.contains("shaders/compensated.wgsl"),
        "f64 is the default"
    );
}

#[test]
fn couple_and_f32_change_the_kernel_that_is_dumped() {
    let (code, out, err) = common::bin::run(&[
        "devices",
        "--dump-wgsl",
        "4x5",
        "--couple",
        "--precision",
        "f32",
    ]);
    assert_eq!(code, 0, "{err}");
    shader::validate(&out).expect("the dumped kernel validates");
    assert!(entry_declared(&out));
    let shape = KernelShape {
        couple: true,
        ..KernelShape::plain(4, 5)
    };
    assert_eq!(out, shader::source(shape, Precision::F32));
    assert!(
        out.contains("shaders/compensated.wgsl"),
        "f32 is compensated"
    );
    assert_ne!(
        out,
        shader::source(KernelShape::plain(4, 5), Precision::F32)
    );
}

#[test]
fn the_ground_kernel_is_dumped_with_its_harmonics() {
    let (code, out, err) = common::bin::run(&["devices", "--dump-wgsl", "9x5", "--ground", "8"]);
    assert_eq!(code, 0, "{err}");
    shader::validate(&out).expect("the dumped kernel validates");
    assert_eq!(
        out,
        shader::source(KernelShape::on_ground(9, 5, 8), Precision::F64)
    );
    assert!(out.contains("fn ground_at"), "the terrain is evaluated");
    // A rough profile with more modes reads the rest from its matrix set.
    let (code, out, err) = common::bin::run(&["devices", "--dump-wgsl", "9x5", "--ground", "12"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        shader::source(KernelShape::on_ground(9, 5, 12), Precision::F64)
    );
    let (code, _, err) = common::bin::run(&["devices", "--dump-wgsl", "9x5", "--ground", "257"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--ground 257") && err.contains("[0, 256]"),
        "{err}"
    );
}

#[test]
fn a_shape_out_of_range_or_unreadable_is_refused_by_name() {
    let (code, out, err) = common::bin::run(&["devices", "--dump-wgsl", "1x7"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("n_legs") && err.contains("an integer in [2,"),
        "{err}"
    );
    let (code, _, err) = common::bin::run(&["devices", "--dump-wgsl", "9x700"]);
    assert_eq!(code, 2);
    assert!(err.contains("n_nodes"), "{err}");
    let (code, _, err) = common::bin::run(&["devices", "--dump-wgsl", "nine"]);
    assert_eq!(code, 2);
    assert!(err.contains("LEGSxNODES"), "{err}");
    let (code, _, err) = common::bin::run(&["devices", "--couple"]);
    assert_eq!(code, 2);
    assert!(err.contains("--dump-wgsl"), "{err}");
}
