//! Empty: a build script makes cargo build the host dependencies listed
//! under `[build-dependencies]`, as the proc macros' builds see them.
fn main() {}
