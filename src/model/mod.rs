//! The model of docs/model.md: Hermite legs with Bayo's penalty, springs, servo,
//! contact and the rigid body. This is the readable statement of the equations;
//! the WGSL kernels are its fast twin.

pub mod axoneme;
pub mod body;
pub mod contact;
pub mod hermite;
pub mod robot;
pub mod springs;
pub mod terrain;

pub use body::{BodyGeometry, BodyLoad};
pub use robot::{ContactMode, Energy, LegIndex, Powers, Robot};
