//! GPU test support: a context of the tests' own, or a printed notice and a skip
//! (a failure instead when METACHRON_REQUIRE_GPU=1, as in CI with lavapipe).

use metachron::gpu::{GpuContext, GpuOptions};

pub fn gpu_context(test: &str) -> Option<GpuContext> {
    let opts = GpuOptions::from_env().expect("GPU options from the environment");
    match GpuContext::new(&opts) {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("METACHRON_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: METACHRON_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("SKIPPED {test}: no GPU adapter ({e})");
            None
        }
    }
}
