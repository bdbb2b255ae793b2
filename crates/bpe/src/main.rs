//! `bpe`: train, encode, decode and measure tokenizers from the command line, and run lecture 8.
//!
//! ```text
//! cargo run -p bpe --release -- train --vocab-size 512 --pattern gpt4 --input taylorswift.txt --out models/regex
//! cargo run -p bpe --release -- encode --model models/regex.model notes.txt > ids.json
//! cargo run -p bpe --release -- encode --encoding cl100k_base notes.txt
//! cargo run -p bpe --release -- decode --encoding cl100k_base ids.json
//! cargo run -p bpe --release -- stats --encoding r50k_base notes.txt
//! cargo run -p bpe --release -- lecture --out runs/lecture-08
//! ```

mod commands;
mod lecture;
mod stats;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "bpe",
    about = "Lecture 8: the GPT tokenizer from scratch (minbpe)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a tokenizer and write PREFIX.model and PREFIX.vocab (minbpe's format).
    Train(commands::TrainArgs),
    /// Encode FILE (`-` for stdin) and print the ids as a JSON array.
    Encode(commands::EncodeArgs),
    /// Decode a JSON array of ids from FILE (`-` for stdin) and write the bytes to stdout.
    Decode(commands::DecodeArgs),
    /// Encode FILE and report tokens, compression ratio and throughput.
    Stats(stats::StatsArgs),
    /// The whole lecture-8 run: train, check the targets, GPT-2/GPT-4 parity, the demo.
    Lecture(lecture::LectureArgs),
}

fn run(cli: Cli) -> commands::BoxResult<ExitCode> {
    match cli.command {
        Command::Train(args) => args.run()?,
        Command::Encode(args) => args.run()?,
        Command::Decode(args) => args.run()?,
        Command::Stats(args) => args.run()?,
        Command::Lecture(args) => return lecture::run(args),
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    report::quiet_on_broken_pipe();
    match run(flags::parse::<Cli>()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
