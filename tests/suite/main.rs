//! The integration tests as one binary: the library and its dependencies are linked once
//! for all of them. Each module holds one subject (`cargo test --release --test suite
//! MODULE` runs one); `common` holds what they share (the binary runner, scratch
//! directories, the validation points).

mod common;

mod architecture;
mod atlas;
mod batch_validation;
mod broken_pipe;
mod contact_events;
mod couple;
mod coupling_law;
mod cpu_batch;
mod dataset_room;
mod first_hour;
mod gpu_budgets;
mod gpu_cli;
mod gpu_compensated;
mod gpu_degrade;
mod gpu_estimate;
mod gpu_f32;
mod gpu_terrain_math;
mod gpu_vs_cpu;
mod guarded_files;
mod hostile_inputs;
mod model_analytic;
mod observed_order;
mod outputs_and_cli;
mod readme_examples;
mod reference;
mod references;
mod replay;
mod report_browser;
mod robustness;
mod stages;
mod strict_thrift;
mod sweep_budget;
mod sweep_descriptions;
mod sweep_integrity;
mod sweep_plan;
mod sweep_resume;
mod sweep_spec;
mod sweep_trust;
mod terrain;
mod touchdown;
mod unattended_cli;
mod until_settled;
mod vocabulary;
mod waves;
mod wgsl_dump;
