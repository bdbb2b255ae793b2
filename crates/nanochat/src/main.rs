//! `nanochat <script>`: nanochat's scripts as subcommands, with their flags in either spelling
//! (`--vocab-size=4096` or `--vocab-size 4096`), their defaults and their printed lines.
//! Everything is written under nanochat's base folder (`$NANOCHAT_BASE_DIR`, or
//! `~/.cache/nanochat`), as nanochat writes it.

mod tok;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// nanochat: from raw text to a model you can talk to, on a CPU.
#[derive(Parser)]
#[command(name = "nanochat", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// scripts/tok_train.py: train the BPE tokenizer (as rustbpe) and save tokenizer.pkl.
    TokTrain(tok::TrainArgs),
    /// scripts/tok_eval.py: bytes per token beside GPT-2's and GPT-4's tokenizers.
    TokEval(tok::EvalArgs),
    /// scripts/base_train.py: pretrain the GPT on --data, saving under base_checkpoints/.
    BaseTrain(Box<nanochat::base_train::BaseTrainArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::TokTrain(args) => tok::train(args),
        Command::TokEval(args) => tok::eval(args),
        Command::BaseTrain(args) => base_train(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn base_train(args: nanochat::base_train::BaseTrainArgs) -> Result<(), String> {
    let start = std::time::Instant::now();
    let mut print0 = |line: String| println!("{line}");
    let finished =
        nanochat::base_train::run::base_train(&args, &nanochat::base_dir(), &mut print0)?;
    nanochat::base_train::run::write_run_files(&finished, start.elapsed().as_secs_f64())?;
    println!(
        "Checkpoints, loss.csv and report.json in {}",
        finished.dir.display()
    );
    Ok(())
}
