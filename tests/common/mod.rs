#![allow(dead_code)]
pub mod gpu;
pub mod validation;
