//! `cargo xtask`: the project's task runner.
fn main() {
    eprintln!("cargo xtask: no tasks yet");
    std::process::exit(2);
}
