//! `cargo xtask`: the project's task runner (matklad's cargo-xtask convention).
//!
//! ```text
//! cargo xtask list                     lectures, their crates, and which exist yet
//! cargo xtask lecture N [--quick]      fetch the data, then train and check lecture N
//! cargo xtask data [NAME] [--check]    download / verify the datasets (`data gpt2`: OpenAI's weights)
//! cargo xtask test                     fetch the data, then run every test in release
//! cargo xtask ci [--full]             the gate (.ci/run), with a table of its sections' times
//! cargo xtask bench [--only G]         ours beside PyTorch, one table (runs/bench.json)
//! cargo xtask pages [--check]          refresh (or check) the code quoted in lectures/*.md
//! cargo xtask report [--check]         rebuild runs/index.html (and check it in Chromium)
//! cargo xtask faults [--ci]            the fault pass: bad files, NaNs, determinism, kills, fuzzing
//! cargo xtask fuzz TARGET [--time S]   one fuzz target (nightly Rust and cargo-fuzz)
//! cargo xtask assign N --out DIR       a student's copy of lecture N, its regions blanked
//! cargo xtask grade DIR [--json FILE]  grade a student's copy, region by region
//! cargo xtask grade --self-test [N …]  the round trip: reference, planted bug, blanks
//! ```
//!
//! The alias in `.cargo/config.toml` builds this crate in release, so that the
//! crates it shares with the lectures (`data`, `tensor`, …) are built once for
//! both (`crates/workspace-hack` gives them the same features); anything that
//! trains is spawned as `cargo run --release`.

mod assign;
mod bench;
mod ci;
mod data;
mod faults;
mod fuzz;
mod grade;
mod hub;
mod lecture;
mod list;
mod pages;
mod report;
mod test;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

/// What every task returns: the process's exit code, or a message for the user.
type TaskResult = Result<ExitCode, String>;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Tasks for the Zero to Hero workspace"
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// List the lectures, their crates and whether each crate exists yet.
    List(list::Args),
    /// Train lecture N and check its numbers (fetches its data first).
    Lecture(lecture::Args),
    /// Download missing or corrupt data files, or verify them with --check.
    Data(data::Args),
    /// Run `cargo test --workspace --release` with the data in place.
    Test(test::Args),
    /// The gate `.ci/run` runs, section by section (--full: what a change to its left-out paths needs).
    Ci(ci::Args),
    /// Time every workload beside PyTorch, as one table (issue 16), or one crate's benches.
    Bench(bench::Args),
    /// Refresh the code excerpts in lectures/*.md from the sources' anchors (or --check them).
    Pages(pages::Args),
    /// Rebuild runs/index.html from runs/ (and --check it in headless Chromium).
    Report(report::Args),
    /// The fault pass: bad files, NaN injection, determinism, kills, fuzzing.
    Faults(faults::Args),
    /// Run one fuzz target (needs nightly Rust and cargo-fuzz).
    Fuzz(fuzz::Args),
    /// Write a student's copy of lecture N with its regions blanked.
    Assign(assign::Args),
    /// Grade a student's copy region by region (or --self-test the round trip).
    Grade(grade::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::List(args) => list::run(args),
        Task::Lecture(args) => lecture::run(args),
        Task::Data(args) => data::run(args),
        Task::Test(args) => test::run(args),
        Task::Ci(args) => ci::run(args),
        Task::Bench(args) => bench::run(args),
        Task::Pages(args) => pages::run(args),
        Task::Report(args) => report::run(args),
        Task::Faults(args) => faults::run(args),
        Task::Fuzz(args) => fuzz::run(args),
        Task::Assign(args) => assign::run(args),
        Task::Grade(args) => grade::run(args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the folder with the top-level Cargo.toml).
fn workspace_root() -> PathBuf {
    ::data::workspace_root()
}

/// True if `crates/<name>/Cargo.toml` exists under `root`.
fn crate_exists(root: &Path, name: &str) -> bool {
    root.join("crates").join(name).join("Cargo.toml").is_file()
}

/// A `cargo` command: the one that is running us (`$CARGO`), so toolchains match.
fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root());
    cmd
}

/// The folder cargo builds into: `cargo metadata`'s `target_directory`, which
/// follows `CARGO_TARGET_DIR` and `build.target-dir`, so a task starts the
/// binary its build just made wherever that went.
fn target_dir() -> Result<PathBuf, String> {
    target_dir_of(cargo())
}

/// [`target_dir`] as `cargo` (a `cargo` command, with its environment) sees it.
fn target_dir_of(mut cargo: Command) -> Result<PathBuf, String> {
    let out = cargo
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    json_string_field(&String::from_utf8_lossy(&out.stdout), "target_directory")
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata printed no target_directory".into())
}

/// The string value of the first `"key":"…"` in a JSON text, unescaped
/// (xtask keeps to few dependencies, so no JSON parser).
fn json_string_field(json: &str, key: &str) -> Option<String> {
    let start = json.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut value = String::new();
    let mut chars = json[start..].chars();
    loop {
        match chars.next()? {
            '"' => return Some(value),
            '\\' => match chars.next()? {
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    value.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                'b' => value.push('\u{8}'),
                'f' => value.push('\u{c}'),
                c => value.push(c), // \" \\ \/
            },
            c => value.push(c),
        }
    }
}

/// Runs `cmd` with inherited stdio and passes its exit code on.
fn run_child(mut cmd: Command) -> TaskResult {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(code) => Ok(ExitCode::from(u8::try_from(code).unwrap_or(1).max(1))),
        None => Err(format!("{shown} was killed by a signal ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_folder_follows_cargo_target_dir() {
        let elsewhere = std::env::temp_dir().join("zth \"elsewhere\" é");
        let mut cmd = cargo();
        cmd.env("CARGO_TARGET_DIR", &elsewhere);
        assert_eq!(target_dir_of(cmd).unwrap(), elsewhere);
    }

    #[test]
    fn json_strings_are_unescaped() {
        let json = r#"{"a":1,"target_directory":"C:\\t \"x\" \u00e9\/y","b":"z"}"#;
        assert_eq!(
            json_string_field(json, "target_directory").as_deref(),
            Some("C:\\t \"x\" é/y")
        );
        assert_eq!(json_string_field(json, "missing"), None);
    }
}
