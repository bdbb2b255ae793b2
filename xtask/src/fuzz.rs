//! `cargo xtask fuzz TARGET [--time S] [--runs N]`: one coverage-guided
//! fuzz target of `fuzz/` (cargo-fuzz, libFuzzer, nightly Rust).
//!
//! New inputs go to a scratch corpus under `target/fuzz-corpus/TARGET`; the
//! committed corpus `fuzz/corpus/TARGET` is read as seeds and stays as it is.
//! An input that makes a target fail is written to `fuzz/artifacts/TARGET/`:
//! copy it into `fuzz/regressions/TARGET/`, where the `faults` crate's test
//! replays it on stable Rust for good.

use crate::{workspace_root, TaskResult};
use ::data::FILES;
use std::process::{Command, ExitCode, Stdio};

/// The targets: the `[[bin]]` names of `fuzz/Cargo.toml`, so that a target
/// added there (and to `faults::fuzzing`, which runs it) needs nothing here.
pub fn targets() -> Result<Vec<String>, String> {
    let path = workspace_root().join("fuzz/Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut targets = Vec::new();
    let mut in_bin = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(name) = line.strip_prefix("name = ").filter(|_| in_bin) {
            targets.push(name.trim_matches('"').to_string());
        }
    }
    Ok(targets)
}

/// How to get cargo-fuzz and its toolchain.
pub const INSTALL: &str = "rustup toolchain install nightly && cargo install cargo-fuzz";

#[derive(clap::Args)]
pub struct Args {
    /// A `[[bin]]` of fuzz/Cargo.toml: encode_basic, encode_regex, encode_gpt2,
    /// encode_gpt4, checkpoint, minbpe_model or catalogue.
    target: String,
    /// Stop after this many seconds.
    #[arg(long)]
    time: Option<u64>,
    /// Stop after this many inputs.
    #[arg(long)]
    runs: Option<u64>,
}

pub fn run(args: Args) -> TaskResult {
    let (runs, code) = fuzz(&args.target, args.time, args.runs)?;
    println!("{}: {runs} inputs", args.target);
    Ok(code)
}

/// The longest input libFuzzer makes: short texts keep minbpe's plain
/// encoder (the reference the fast one is checked against) quick; a
/// checkpoint seed is 52 KB.
fn max_len(target: &str) -> u32 {
    match target {
        "checkpoint" => 65_536,
        t if t.starts_with("encode_") => 1024,
        _ => 4096,
    }
}

/// `cargo +nightly`: rustup's proxy (not `$CARGO`, which is the stable
/// toolchain's own cargo and knows no `+nightly`), with the stable
/// toolchain's choice taken out of the environment.
fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(workspace_root())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .arg("+nightly");
    cmd
}

/// Runs `target`; returns how many inputs libFuzzer tried, and its exit code.
pub fn fuzz(target: &str, time: Option<u64>, runs: Option<u64>) -> Result<(u64, ExitCode), String> {
    let targets = targets()?;
    if !targets.iter().any(|t| t == target) {
        return Err(format!(
            "no fuzz target {target:?}; the targets: {}",
            targets.join(", ")
        ));
    }
    let names: Vec<&str> = FILES.iter().map(|f| f.name).collect();
    let data = crate::data::ensure(&names)?;
    let has_fuzz = nightly_cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_fuzz {
        return Err(format!(
            "fuzzing needs nightly Rust and cargo-fuzz: {INSTALL}"
        ));
    }
    let root = workspace_root();
    let scratch = root.join("target/fuzz-corpus").join(target);
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut cmd = nightly_cargo();
    cmd.env(::data::ENV_VAR, &data.path)
        .args(["fuzz", "run", "-O", "--sanitizer", "none", target])
        .arg(&scratch)
        .arg(root.join("fuzz/corpus").join(target))
        .arg("--")
        .arg(format!("-max_len={}", max_len(target)))
        .arg("-print_final_stats=1");
    if let Some(t) = time {
        cmd.arg(format!("-max_total_time={t}"));
    }
    if let Some(n) = runs {
        cmd.arg(format!("-runs={n}"));
    }
    eprintln!("{cmd:?}");
    let output = cmd
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot start cargo fuzz: {e}"))?;
    let log = String::from_utf8_lossy(&output.stderr);
    // libFuzzer's last word: "Done 1000000 runs in 93 second(s)", or on a
    // crash "stat::number_of_executed_units: N".
    let runs = log
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Done ")
                .and_then(|r| r.split(' ').next())
                .or_else(|| {
                    l.strip_prefix("stat::number_of_executed_units:")
                        .map(str::trim)
                })
        })
        .filter_map(|n| n.parse().ok())
        .next_back()
        .unwrap_or(0);
    let tail: Vec<&str> = log.lines().rev().take(25).collect();
    if !output.status.success() {
        eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
        return Ok((runs, ExitCode::FAILURE));
    }
    Ok((runs, ExitCode::SUCCESS))
}
