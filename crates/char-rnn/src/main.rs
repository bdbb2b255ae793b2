//! `char-rnn min --input FILE [--seed S] [--max-iters N]`: min-char-rnn.py.
//!
//! Prints exactly the gist's lines: `data has … characters, … unique.`, then
//! every 100 iterations a 200-character sample between `----` lines and
//! `iter N, loss: L`.

use char_rnn::min;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// char-rnn: character-level language models on any text.
#[derive(Parser)]
#[command(name = "char-rnn", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// min-char-rnn.py: a vanilla RNN in float64 with Adagrad, as Karpathy's gist.
    Min(MinArgs),
}

#[derive(clap::Args)]
struct MinArgs {
    /// A plain text file (UTF-8), read as the gist's `open(path, 'r').read()`.
    #[arg(long)]
    input: PathBuf,
    /// `np.random.seed(seed)` before the weights are drawn.
    #[arg(long, default_value_t = 42)]
    seed: u32,
    /// Stop after this many iterations (the gist runs until interrupted).
    #[arg(long)]
    max_iters: Option<usize>,
    /// Size of the hidden layer of neurons.
    #[arg(long, default_value_t = 100)]
    hidden_size: usize,
    /// Number of steps to unroll the RNN for.
    #[arg(long, default_value_t = 25)]
    seq_length: usize,
    /// Adagrad's learning rate.
    #[arg(long, default_value_t = 1e-1)]
    learning_rate: f64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    report::main_with(Ok(()), 1, || match cli.command {
        Command::Min(args) => run_min(args),
    })
}

fn run_min(args: MinArgs) -> Result<ExitCode, String> {
    let text = min::Text::read(&args.input)?;
    let hp = min::Hyperparameters {
        hidden_size: args.hidden_size,
        seq_length: args.seq_length,
        learning_rate: args.learning_rate,
    };
    let mut out = std::io::stdout().lock();
    min::train(&text, &hp, args.seed, args.max_iters, &mut out, |_| {})?;
    Ok(ExitCode::SUCCESS)
}
