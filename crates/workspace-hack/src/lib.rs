//! Nothing to read here: this crate only lists dependencies (see its
//! `Cargo.toml`), so that every build of the workspace turns on the same
//! features of the crates its members share, and no command rebuilds what
//! another built.
