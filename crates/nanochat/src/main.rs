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
    /// scripts/tok_train.py: train the BPE tokenizer (as rustbpe) and save tokenizer.pkl and token_bytes.pt.
    TokTrain(tok::TrainArgs),
    /// scripts/tok_eval.py: bytes per token beside GPT-2's and GPT-4's tokenizers.
    TokEval(tok::EvalArgs),
    /// scripts/base_train.py: pretrain the GPT on --input (or the downloaded shards), saving under base_checkpoints/.
    BaseTrain(Box<nanochat::base_train::BaseTrainArgs>),
    /// scripts/base_eval.py: a base checkpoint's samples, bits per byte and CORE metric.
    BaseEval(nanochat::base_eval::BaseEvalArgs),
    /// scripts/chat_sft.py: fine-tune a base checkpoint to chat, saving under chatsft_checkpoints/.
    Sft(Box<nanochat::chat_sft::SftArgs>),
    /// scripts/chat_eval.py: accuracy on held-out arithmetic and spelling problems.
    ChatEval(nanochat::chat_eval::ChatEvalArgs),
    /// chat_web.py (before da32e1d): a chat page on localhost, answers streamed.
    Serve(nanochat::serve::ServeArgs),
    /// scripts/chat_cli.py: talk to a model in the terminal.
    Chat(nanochat::chat_cli::ChatArgs),
    /// nanochat/dataset.py: download the pretraining shards (the first N and the val shard).
    Data(DataArgs),
}

/// `python -m nanochat.dataset`'s flags.
#[derive(clap::Args)]
struct DataArgs {
    /// Number of train shards to download (-1: all of them); the val shard always comes too.
    #[arg(short = 'n', long, default_value_t = -1, allow_negative_numbers = true)]
    num_files: i64,
    /// Number of parallel downloads.
    #[arg(short = 'w', long, default_value_t = 4)]
    num_workers: usize,
    /// Where the shards are published (not a dataset.py flag; its BASE_URL): a mirror, or a
    /// server of one's own.
    #[arg(long, default_value = nanochat::download::BASE_URL)]
    base_url: String,
}

fn main() -> ExitCode {
    let cli = flags::parse::<Cli>();
    // A step frees and allocates the same large tensors; kept, their pages are not zeroed anew.
    tensor::keep_freed_memory();
    let result = match cli.command {
        Command::TokTrain(args) => tok::train(args),
        Command::TokEval(args) => tok::eval(args),
        Command::BaseTrain(args) => base_train(*args),
        Command::Data(args) => data(args),
        Command::Chat(args) => chat(args),
        Command::Sft(args) => sft(*args),
        Command::Serve(args) => serve(args),
        Command::ChatEval(args) => {
            nanochat::chat_eval::chat_eval(&args, &nanochat::base_dir(), &mut |line| {
                println!("{line}")
            })
        }
        Command::BaseEval(args) => {
            nanochat::base_eval::base_eval(&args, &nanochat::base_dir(), &mut |line| {
                println!("{line}")
            })
        }
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
    nanochat::run_files::write_run_files(
        &finished,
        start.elapsed().as_secs_f64(),
        &nanochat::base_train::run::BASE_TRAIN,
    )?;
    println!(
        "Checkpoints, loss.csv and report.json in {}",
        finished.dir.display()
    );
    Ok(())
}

fn sft(args: nanochat::chat_sft::SftArgs) -> Result<(), String> {
    use nanochat::chat_sft::run::{chat_sft, CHAT_SFT};
    let start = std::time::Instant::now();
    let finished = chat_sft(&args, &nanochat::base_dir(), &mut |line| println!("{line}"))?;
    nanochat::run_files::write_run_files(&finished, start.elapsed().as_secs_f64(), &CHAT_SFT)?;
    println!(
        "Checkpoint, loss.csv and report.json in {}",
        finished.dir.display()
    );
    Ok(())
}

fn serve(args: nanochat::serve::ServeArgs) -> Result<(), String> {
    let base = nanochat::base_dir();
    let model = args.model.load(&base)?;
    let tokenizer = nanochat::Tokenizer::from_directory(&base.join("tokenizer"))?;
    nanochat::serve::serve(model, tokenizer, &args, &mut |address| {
        println!("Server ready at http://{address}")
    })
}

fn chat(args: nanochat::chat_cli::ChatArgs) -> Result<(), String> {
    use nanochat::chat_cli::chat;
    let base = nanochat::base_dir();
    let model = args.model.load(&base)?;
    let tokenizer = nanochat::Tokenizer::from_directory(&base.join("tokenizer"))?;
    if model.config.vocab_size != tokenizer.vocab_size() {
        return Err(format!(
            "the model's vocabulary has {} tokens, the tokenizer in {} has {}",
            model.config.vocab_size,
            base.join("tokenizer").display(),
            tokenizer.vocab_size()
        ));
    }
    let stdin = std::io::stdin();
    chat(
        &args,
        &model,
        &tokenizer,
        &mut stdin.lock(),
        &mut std::io::stdout(),
    )
}

fn data(args: DataArgs) -> Result<(), String> {
    use nanochat::download::{shards_to_download, Downloader};
    let dir = nanochat::base_dir().join("base_data_climbmix");
    let ids = shards_to_download(args.num_files);
    println!(
        "Downloading {} shards using {} workers...",
        ids.len(),
        args.num_workers
    );
    println!("Target directory: {}", dir.display());
    println!();
    let downloader = Downloader {
        workers: args.num_workers,
        base_url: args.base_url,
        ..Downloader::default()
    };
    downloader
        .download(&ids, &dir, &|line| println!("{line}"))
        .map(|_| ())
}
