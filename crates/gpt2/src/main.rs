//! `gpt2 logits --model DIR --ids 1,2,3`: one JSON row of logits per position,
//! for checking a model against another implementation.
//!
//! `DIR` holds Hugging Face's `config.json` and `model.safetensors`, such as
//! the `gpt2` checkpoint or a model saved by `transformers`.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

// Every forward pass allocates and frees large activations; mimalloc keeps them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "gpt2", about = "Lecture 9: GPT-2 (124M) and OpenAI's weights")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the logits of a token sequence as JSON, one row per position.
    Logits {
        /// Folder with config.json and model.safetensors.
        #[arg(long)]
        model: PathBuf,
        /// Comma-separated token ids.
        #[arg(long, value_delimiter = ',', required = true)]
        ids: Vec<usize>,
    },
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Logits { model, ids } => {
            let (gpt, params) = gpt2::hf::from_pretrained(&model)?;
            let logits = gpt2::sample::logits(&gpt, &params, &ids)?; // (T, V)
            let v = gpt.config.vocab_size;
            let values = logits.to_vec();
            let rows: Vec<&[f32]> = values.chunks(v).collect();
            let mut out = std::io::stdout().lock();
            serde_json::to_writer(&mut out, &rows).map_err(|e| e.to_string())?;
            writeln!(out).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
