//! GPU faults degrade, never lose work, on a real adapter (lavapipe
//! in CI): with buffer limits forced far below one instance, every chunk fails on the
//! device, is split, and runs on the cpu engine with a notice; the dataset is complete,
//! each row says `cpu`, and the rows equal a cpu sweep's.

use crate::common;

use std::path::Path;

use metachron::dataset::rows::read_unverified as read_dataset;
use metachron::dataset::Column;

const SWEEP: &str = "name = \"degrade\"\n[base]\nn_legs = 3\nn_nodes = 3\nt_final = 0.2\n[[axes]]\nparam = \"alpha\"\nvalues = [50.0, 100.0, 200.0, 400.0]\n";

#[test]
fn batches_that_do_not_fit_the_device_fall_back_to_cpu() {
    if common::gpu::gpu_context("batches_that_do_not_fit_the_device_fall_back_to_cpu").is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu-degrade");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("degrade.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let run = |out: &str, backend: &str, cap: Option<&str>| {
        let mut c = common::bin::command();
        c.env("XDG_RUNTIME_DIR", "/tmp").env("RUST_BACKTRACE", "0");
        if let Some(cap) = cap {
            c.env("METACHRON_GPU_MAX_BUFFER_BYTES", cap);
        }
        let o = c
            .args(["sweep", file.to_str().unwrap(), "--out"])
            .arg(dir.join(out))
            .args(["--backend", backend, "--batch", "2", "--quiet"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = run("gpu", "gpu", Some("64"));
    assert!(
        err.contains("running such points on the cpu engine"),
        "{err}"
    );
    run("cpu", "cpu", None);
    let (g, c) = (
        read_dataset(&dir.join("gpu")).unwrap(),
        read_dataset(&dir.join("cpu")).unwrap(),
    );
    assert_eq!(g.len(), 4);
    match g.column("backend") {
        Some(Column::Text(v)) => assert!(v.iter().all(|b| b == "cpu"), "{v:?}"),
        _ => panic!("no backend column"),
    }
    let ids = |d: &metachron::dataset::Rows| d.point_ids();
    for name in ["lag_order", "displacement", "work"] {
        let (Some(Column::Num(a)), Some(Column::Num(b))) = (g.column(name), c.column(name)) else {
            panic!("{name}");
        };
        for (i, id) in ids(&g).iter().enumerate() {
            let j = ids(&c).iter().position(|x| x == id).unwrap();
            assert_eq!(a[i].to_bits(), b[j].to_bits(), "{name} of point {id}");
        }
    }
}
