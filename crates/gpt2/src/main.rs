//! `gpt2 lecture`: the lecture run (`cargo xtask lecture 9`);
//! `gpt2 sample --model DIR`: build-nanogpt's sampling demo;
//! `gpt2 logits --model DIR --ids 1,2,3`: one JSON row of logits per position,
//! for checking a model against another implementation;
//! `gpt2 prepare --input FILE [--jsonl --field text] --out DIR`: token shards;
//! `gpt2 train --stage STAGE`: a stage of the video's loop, or with `cpu`
//! the recipe, data-parallel under `mpirun` with `--ddp`.
//!
//! `DIR` holds Hugging Face's `config.json` and `model.safetensors`, such as
//! the `gpt2` checkpoint or a model saved by `transformers`.

mod commands;
mod run_lecture;
mod train_cpu;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

// Every forward pass allocates and frees large activations; mimalloc keeps them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "gpt2",
    about = "Lecture 9: GPT-2 (124M), OpenAI's weights and sampling"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The lecture run: the first training stage against PyTorch, then the `cpu` recipe.
    Lecture(run_lecture::LectureArgs),
    /// Continue a prompt, as build-nanogpt's demo does (top-k sampling).
    Sample(commands::SampleArgs),
    /// Write a model as llm.c's checkpoint (gpt2_124M.bin's format).
    ToLlmc(gpt2::llmc::ToLlmcArgs),
    /// Read llm.c's checkpoint and save it in Hugging Face's layout.
    FromLlmc(gpt2::llmc::FromLlmcArgs),
    /// Score a model on HellaSwag the way build-nanogpt's hellaswag.py does.
    Eval(gpt2::hellaswag::EvalArgs),
    /// Train a stage of the video's loop (overfit-batch, dataloader, init,
    /// optimizer), or the `cpu` recipe, on one process or data-parallel.
    Train(train_cpu::TrainArgs),
    /// nanoGPT's train.py with init_from a GPT-2 folder: fine-tune it on
    /// nanoGPT's train.bin/val.bin (config/finetune_shakespeare.py, scaled to a CPU).
    Finetune(gpt2::finetune::FinetuneArgs),
    /// Print the logits of a token sequence as JSON, one row per position.
    Logits(commands::LogitsArgs),
    /// Tokenize text or JSON lines into token shards, as fineweb.py does; shard 0 is val.
    Prepare(gpt2::shards::PrepareArgs),
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Lecture(args) => return run_lecture::lecture(args),
        Command::Train(args) => return train_cpu::run(args),
        Command::Finetune(args) => gpt2::finetune::run(args)?,
        Command::Sample(args) => args.run()?,
        Command::ToLlmc(args) => args.run()?,
        Command::FromLlmc(args) => args.run()?,
        Command::Eval(args) => args.run()?,
        Command::Logits(args) => args.run()?,
        Command::Prepare(args) => args.run()?,
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    report::main_with(tensor::check_threads_env(), 1, || {
        gpt2::keep_freed_memory();
        run(flags::parse::<Cli>())
    })
}
