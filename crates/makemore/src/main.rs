//! `makemore -i FILE -o DIR [flags]`: makemore.py's command line.
//!
//! The flags, their short names and their defaults are makemore.py's, so a
//! learner who knows `python makemore.py -i names.txt -o names` types the same.

use clap::Parser;
use makemore::{ModelType, Options, TrainConfig};
use std::path::PathBuf;
use std::process::ExitCode;

// Every step allocates and frees the same activations; mimalloc keeps them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Make More: give it a file of things, one per line, and it makes more like them.
#[derive(Parser)]
#[command(
    name = "makemore",
    about,
    allow_negative_numbers = true,
    args_override_self = true
)]
struct Cli {
    /// Input file with things one per line (default: names.txt from the data folder).
    #[arg(short = 'i', long)]
    input_file: Option<PathBuf>,
    /// Output working directory.
    #[arg(short = 'o', long, default_value = "out")]
    work_dir: PathBuf,
    /// Resume optimization from the work dir's last state (step, weights, AdamW, generators).
    #[arg(long)]
    resume: bool,
    /// Just sample 50 things from the work dir's best model and quit, don't train.
    #[arg(long)]
    sample_only: bool,
    /// Number of data workers (accepted for makemore.py's sake; it changes no random draw).
    #[arg(short = 'n', long, default_value_t = 4)]
    num_workers: usize,
    /// Max number of optimization steps in total, a resumed run's included, or -1 for infinite.
    #[arg(long, default_value_t = -1)]
    max_steps: i64,
    /// Device to use for compute: only cpu.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// Seed.
    #[arg(long, default_value_t = 3407)]
    seed: u64,
    /// Top-k for sampling, -1 means no top-k.
    #[arg(long, default_value_t = -1)]
    top_k: i64,
    /// Model class type to use: bigram|mlp|rnn|gru|bow|transformer|lstm.
    #[arg(long = "type", default_value = "transformer")]
    kind: String,
    /// Number of layers.
    #[arg(long, default_value_t = 4)]
    n_layer: usize,
    /// Number of heads (in a transformer).
    #[arg(long, default_value_t = 4)]
    n_head: usize,
    /// Number of feature channels in the model.
    #[arg(long, default_value_t = 64)]
    n_embd: usize,
    /// Number of feature channels elsewhere in the model.
    #[arg(long, default_value_t = 64)]
    n_embd2: usize,
    /// Batch size during optimization.
    #[arg(short = 'b', long, default_value_t = 32)]
    batch_size: usize,
    /// Learning rate.
    #[arg(short = 'l', long, default_value_t = 5e-4)]
    learning_rate: f64,
    /// Weight decay.
    #[arg(short = 'w', long, default_value_t = 0.01)]
    weight_decay: f64,
}

fn options(cli: Cli) -> Result<Options, String> {
    report::check_device(&cli.device)?;
    let kind = ModelType::parse(&cli.kind).map_err(|e| format!("--type: {e}"))?;
    let top_k = match cli.top_k {
        -1 => None,
        k if k >= 1 => Some(k as usize),
        k => {
            return Err(format!(
                "--top-k {k}: give a number of tokens >= 1, or -1 for no top-k"
            ))
        }
    };
    if cli.max_steps < -1 {
        return Err(format!(
            "--max-steps {}: give a step count >= 0, or -1 for no limit",
            cli.max_steps
        ));
    }
    for (flag, v) in [
        ("--batch-size", cli.batch_size),
        ("--n-embd", cli.n_embd),
        ("--n-embd2", cli.n_embd2),
        ("--n-head", cli.n_head),
    ] {
        if v == 0 {
            return Err(format!("{flag} 0: it must be at least 1"));
        }
    }
    for (flag, v) in [
        ("--learning-rate", cli.learning_rate),
        ("--weight-decay", cli.weight_decay),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!(
                "{flag} {v}: give a finite number >= 0, as torch.optim.AdamW asks"
            ));
        }
    }
    if kind == ModelType::Transformer && !cli.n_embd.is_multiple_of(cli.n_head) {
        return Err(format!(
            "--n-embd {} is not a multiple of --n-head {}: the transformer splits its channels among the heads",
            cli.n_embd, cli.n_head
        ));
    }
    Ok(Options {
        input_file: cli.input_file,
        work_dir: cli.work_dir,
        resume: cli.resume,
        sample_only: cli.sample_only,
        num_workers: cli.num_workers,
        max_steps: cli.max_steps,
        train: TrainConfig {
            kind,
            n_layer: cli.n_layer,
            n_head: cli.n_head,
            n_embd: cli.n_embd,
            n_embd2: cli.n_embd2,
            batch_size: cli.batch_size,
            learning_rate: cli.learning_rate,
            weight_decay: cli.weight_decay,
            seed: cli.seed,
            top_k,
        },
    })
}

fn main() -> ExitCode {
    report::quiet_on_broken_pipe();
    if let Err(e) = tensor::check_threads_env() {
        eprintln!("makemore: error: {e}");
        return ExitCode::from(2);
    }
    match options(flags::parse::<Cli>()).and_then(|o| makemore::run(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("makemore: error: {e}");
            ExitCode::FAILURE
        }
    }
}
