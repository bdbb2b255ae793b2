//! `char-rnn min | train | sample`: min-char-rnn.py, and char-rnn's `train.lua`
//! and `sample.lua` with their flags in either spelling (`-rnn_size 128` or
//! `--rnn-size 128`).
//!
//! `min` prints exactly the gist's lines: `data has … characters, … unique.`,
//! then every 100 iterations a 200-character sample between `----` lines and
//! `iter N, loss: L`. `train` prints train.lua's lines and writes its
//! checkpoints, with its record for the runs page ([`record`]); `sample`
//! writes sample.lua's bytes to stdout.

mod record;

use char_rnn::{min, sample, train};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

// Every step allocates and frees the same activations; mimalloc keeps them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// train.lua: a multi-layer LSTM, GRU or RNN on data_dir/input.txt.
    Train(train::Options),
    /// sample.lua: bytes from a checkpoint of `train`.
    Sample(sample::SampleOptions),
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
    let cli = flags::parse::<Cli>();
    report::main_with(tensor::check_threads_env(), 1, || match cli.command {
        Command::Min(args) => run_min(args),
        Command::Train(opt) => {
            let mut out = std::io::stdout().lock();
            let record = record::Record::start();
            let mut trainer = train::Trainer::new(opt, &mut out)?;
            let result = train::run(&mut trainer, &mut out, &mut |t| record.write(t, false));
            let finished = record.write(&trainer, true);
            result.and(finished)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sample(opt) => {
            let mut out = std::io::stdout().lock();
            sample::sample(&opt, &mut out, &mut std::io::stderr())?;
            Ok(ExitCode::SUCCESS)
        }
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
