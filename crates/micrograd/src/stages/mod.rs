//! The lecture's stages as `main.rs` runs them, each checking its numbers.

pub mod examples;
