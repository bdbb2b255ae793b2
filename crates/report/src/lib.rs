//! What every lecture run leaves behind, in one format.
//!
//! `cargo xtask lecture N` runs a lecture crate's binary, which trains and then
//! checks its numbers against the lecture's. This crate is the part they share:
//!
//! - [`RunArgs`]: the flags every lecture binary accepts (`--out`, `--quick`,
//!   `--seed`, `--steps`);
//! - [`Run`] and [`Stage`]: timing, the loss log and the [`Target`]s of each stage;
//! - [`Run::finish`]: writes `report.json` (schema version 1), `loss.csv`,
//!   `loss.png` and `loss.svg`, prints the targets table, and turns a failed
//!   target into a non-zero exit code;
//! - [`Stage::observe`]: what every training loop does after a step (the NaN
//!   check naming the step, progress, the `loss.csv` row, the loop's ms/step);
//! - [`Progress`]: a bar on a terminal, plain `step i/n: loss x` lines in CI logs;
//! - [`write_atomic`]: temp file + rename, so a crash never leaves half a file
//!   ([`write_atomic_set`] for files that belong together);
//! - [`page`]: `runs/index.html`, every run on one page, and its check in a
//!   real browser (the `runs-page` binary; `cargo xtask report`).
//!
//! Other tools read `report.json`, so its field names are fixed:
//!
//! ```json
//! {"schema_version": 1, "lecture": 3, "crate": "makemore-mlp", "mode": "full", "seed": 42,
//!  "config": {}, "wall_seconds": 95.1, "finished_at": "2026-12-01T10:58:37Z",
//!  "stages": [{"name": "mlp", "steps": 200000, "wall_seconds": 90.2, "ms_per_step": 0.45,
//!              "final": {"train": 2.13, "val": 2.17},
//!              "targets": [{"name": "val loss", "kind": "band", "expected": 2.1701,
//!                           "tolerance": 0.03, "measured": 2.168, "pass": true}]}]}
//! ```
//!
//! A tool's run (`makemore` on a learner's file) has `"lecture": 0` and
//! `"tool": "makemore"`, and lives in `runs/tools/<name>/`.
#![deny(missing_docs)]

mod atomic;
pub mod page;
pub mod plot;
mod progress;
mod run;
mod target;
pub mod tool_run;

pub use atomic::{check_out_dir, remove_stale_temps, write_atomic, write_atomic_set};
pub use progress::Progress;
pub use run::{
    loss_csv, read_loss_csv, utc_now, LogEvery, LossRow, Run, RunArgs, RunReport, Stage,
    StageReport, SCHEMA_VERSION,
};
pub use target::{Kind, Target};

/// Lets a closed stdout end the program quietly, as it ends `cat` or `grep`:
/// `gpt2 train … | head` stops once `head` has read its lines. Rust starts
/// programs with SIGPIPE ignored, so without this the next `println!` after
/// the reader has gone panics on the broken pipe. Call it first in `main`.
pub fn quiet_on_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: only restores the default action of SIGPIPE; called before any
    // other thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// This process's peak resident memory so far, in MiB: the kernel's
/// high-water mark (`VmHWM` in `/proc/self/status`); `None` where there is
/// no such file (not Linux).
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The machine's memory in bytes: `MemTotal` in `/proc/meminfo`; `None`
/// where there is no such file (not Linux). The tools refuse flags whose run
/// needs more than this before they allocate, since a failed allocation aborts
/// the process. The rule is MemTotal, not MemAvailable, so that the same flags
/// are refused or accepted on the same machine whatever else is running: what
/// is free at the moment is the kernel's to manage.
pub fn memory_total_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuses flags whose run needs more memory than the machine has
/// (`floats` f32s, such as nanoGPT's `gpt::nanogpt::configurator::training_floats`, against
/// [`memory_total_bytes`]), before anything
/// is allocated: an allocation that fails aborts the process.
pub fn check_memory(floats: Option<u64>, flags: &str) -> Result<(), String> {
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    let needed = floats.and_then(|f| f.checked_mul(4));
    let total = memory_total_bytes();
    match (needed, total) {
        (None, _) => Err(format!(
            "these flags ({flags}) describe a model and batch too large to count in memory"
        )),
        (Some(n), Some(t)) if n > t => Err(format!(
            "these flags ({flags}) need at least {:.1} GiB to train (parameters, gradients, \
             AdamW's moments and one micro-batch's activations); this machine has {:.1} GiB",
            gib(n),
            gib(t)
        )),
        _ => Ok(()),
    }
}

/// `--device`, as nanoGPT's and makemore.py's flags take it: these tools run
/// on the CPU only, so anything but `cpu` is refused by name.
pub fn check_device(device: &str) -> Result<(), String> {
    match device {
        "cpu" => Ok(()),
        other => Err(format!(
            "--device {other}: this implementation runs on the CPU only (no CUDA or MPS); use --device cpu"
        )),
    }
}

/// `<binary> lecture [flags]`: a lecture binary's command line, whose one
/// subcommand takes the lecture's flags `A` (their doc comment is its help).
#[derive(clap::Parser)]
struct LectureCli<A: clap::Args> {
    #[command(subcommand)]
    command: LectureCommand<A>,
}

#[derive(clap::Subcommand)]
enum LectureCommand<A: clap::Args> {
    Lecture(A),
}

/// A lecture binary's `main`: parses `<binary> lecture [flags]`, with `about`
/// heading its help, then runs `lecture` on the flags as [`main_with`] runs
/// its body.
pub fn lecture_main<A: clap::Args>(
    about: &'static str,
    threads_env: Result<(), String>,
    failure: u8,
    lecture: impl FnOnce(A) -> Result<std::process::ExitCode, String>,
) -> std::process::ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let command = LectureCli::<A>::command().about(about);
    let args = flags::normalize(&command, std::env::args_os());
    let matches = command.get_matches_from(args);
    let cli = LectureCli::<A>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let LectureCommand::Lecture(args) = cli.command;
    main_with(threads_env, failure, || lecture(args))
}

/// A training binary's `main`, after the flags' types: a closed stdout ends
/// it quietly ([`quiet_on_broken_pipe`]); a bad `ZTH_THREADS` (the result of
/// `tensor::check_threads_env`, passed in) is an error with exit code 2
/// before anything runs; then `body` runs, and its error is printed as
/// `error: …` with exit code `failure`.
pub fn main_with(
    threads_env: Result<(), String>,
    failure: u8,
    body: impl FnOnce() -> Result<std::process::ExitCode, String>,
) -> std::process::ExitCode {
    quiet_on_broken_pipe();
    let (result, code) = match threads_env {
        Err(e) => (Err(e), 2),
        Ok(()) => (body(), failure),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::ExitCode::from(code)
    })
}

/// `f"{n:,}"`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
