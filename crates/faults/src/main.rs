//! `faults`: the fault pass's runs, each printing its figures; `cargo xtask
//! faults` builds the lectures and runs `faults all`.

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "faults",
    about = "The fault pass: bad files, kills, NaNs, determinism"
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
    /// Where the runs write (emptied after).
    #[arg(long, global = true, default_value_os_t = std::env::temp_dir().join("zth-faults"))]
    scratch: PathBuf,
}

#[derive(Subcommand)]
enum Task {
    /// Every loader against its corpus of bad files.
    Corpus,
    /// Kill lecture 7's cpu stage COUNT times and resume it.
    Kills {
        #[arg(long, default_value_t = 100)]
        count: usize,
        #[arg(long, default_value_t = 19)]
        seed: u64,
    },
    /// Inject NaNs into a run of lecture 7.
    Nan,
    /// Run lectures' --quick runs twice (and on one thread).
    Determinism {
        /// Lectures to check (default: all nine).
        #[arg(long, value_delimiter = ',')]
        lectures: Vec<u32>,
        /// Skip the one-thread comparison.
        #[arg(long)]
        no_threads: bool,
    },
    /// Write the fuzz targets' first inputs where their corpus is missing.
    Seeds,
    /// Replay every fuzz corpus and regression input through its target.
    Replay,
    /// The corpus, the NaNs, determinism and kills (`cargo xtask faults` adds the
    /// replay and fuzzing); --ci is the subset CI runs (10 kills, the fast lectures).
    All {
        #[arg(long)]
        ci: bool,
    },
}

fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent().map(PathBuf::from).unwrap_or_default()
}

fn corpus(scratch: &Path) -> Result<bool, String> {
    let data = std::env::var_os("ZTH_DATA").map(PathBuf::from);
    let tallies = faults::run_corpus(data.as_deref(), &scratch.join("corpus"))?;
    println!("== bad files\n{}", faults::corpus_table(&tallies));
    Ok(tallies
        .iter()
        .all(|t| t.panics() + t.silent() + t.unnamed() == 0))
}

fn kills(scratch: &Path, count: usize, seed: u64) -> Result<bool, String> {
    println!(
        "== kills ({count}, seed {seed}): lecture 7, cpu, 200 iterations, a checkpoint every 10"
    );
    let k = faults::kills::run(&bin_dir().join("gpt"), count, seed, &scratch.join("kills"))?;
    println!(
        "kills survived: {}/{} ({} during a write)\nresumed chains identical to the uninterrupted run: {}/{}",
        k.survived, k.kills, k.during_write, k.chains_identical, k.chains
    );
    for f in &k.failures {
        println!("  FAIL {f}");
    }
    Ok(k.failures.is_empty() && k.survived == k.kills && k.chains_identical == k.chains)
}

fn nan(scratch: &Path) -> Result<bool, String> {
    println!("== NaN injection: lecture 7, cpu");
    let cases = faults::nan::run(&bin_dir().join("gpt"), &scratch.join("nan"))?;
    for c in &cases {
        println!(
            "{:<48} exit {:?}, checkpoint {}: {}  {}",
            c.injection,
            c.exit_code,
            match (&c.checkpoint_clean, c.checkpoint) {
                (Ok(()), true) => "on disk, clean".to_string(),
                (Ok(()), false) => "none on disk".to_string(),
                (Err(e), _) => e.clone(),
            },
            c.message,
            if c.passed() { "PASS" } else { "FAIL" }
        );
    }
    Ok(cases.iter().all(|c| c.passed()))
}

fn determinism(scratch: &Path, lectures: &[u32], threads: bool) -> Result<bool, String> {
    println!("== determinism: --quick runs, the same seed");
    let checks = faults::determinism::run(&bin_dir(), lectures, threads, &scratch.join("det"))?;
    for c in &checks {
        match &c.difference {
            None => println!("lecture {} {:<20} identical", c.lecture, c.what),
            Some(d) => println!("lecture {} {:<20} DIFFERS: {d}", c.lecture, c.what),
        }
    }
    let passed = checks.iter().filter(|c| c.difference.is_none()).count();
    println!("determinism checks passed: {passed}/{}", checks.len());
    Ok(passed == checks.len())
}

fn replay(scratch: &Path) -> Result<bool, String> {
    println!("== fuzz corpora, replayed");
    let tokenizers = faults::fuzzing::Tokenizers::load()?;
    let mut ok = true;
    for target in faults::fuzzing::TARGETS {
        let inputs = faults::fuzzing::inputs(target);
        let mut failed = 0;
        for (path, bytes) in &inputs {
            let catalogue = scratch.join("catalogue");
            if let Err(e) = faults::fuzzing::run_target(&tokenizers, target, bytes, &catalogue) {
                failed += 1;
                println!("  FAIL {}: {e}", path.display());
            }
        }
        println!("{target:<14} {} inputs, {failed} failed", inputs.len());
        ok &= failed == 0;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    report::quiet_on_broken_pipe();
    let cli = flags::parse::<Cli>();
    let all_lectures: Vec<u32> = (1..=9).collect();
    let result = match cli.task {
        Task::Corpus => corpus(&cli.scratch),
        Task::Kills { count, seed } => kills(&cli.scratch, count, seed),
        Task::Nan => nan(&cli.scratch),
        Task::Seeds => (|| {
            let data = ::data::DataDir::resolve().path;
            let written = faults::fuzzing::write_seeds(&data)?;
            println!("wrote the seeds of: {}", written.join(", "));
            Ok(true)
        })(),
        Task::Replay => replay(&cli.scratch),
        Task::Determinism {
            lectures,
            no_threads,
        } => {
            let lectures = if lectures.is_empty() {
                all_lectures
            } else {
                lectures
            };
            determinism(&cli.scratch, &lectures, !no_threads)
        }
        Task::All { ci } => (|| {
            // CI's subset: the lectures that take seconds, and 10 kills.
            let (count, lectures) = match ci {
                true => (10, vec![1, 2, 3, 4, 5, 6, 8]),
                false => (100, all_lectures),
            };
            let results = [
                corpus(&cli.scratch)?,
                nan(&cli.scratch)?,
                determinism(&cli.scratch, &lectures, true)?,
                kills(&cli.scratch, count, 19)?,
            ];
            Ok(results.iter().all(|&ok| ok))
        })(),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("the fault pass found a fault (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
