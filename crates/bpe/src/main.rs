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

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bpe::{
    Algorithm, AllowedSpecial, Gpt2Tokenizer, Gpt4Tokenizer, RegexTokenizer, GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
};
use clap::{Args, Parser, Subcommand, ValueEnum};

mod lecture;
mod stats;

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
    Train {
        /// Vocabulary size: 256 byte tokens + the number of merges to learn.
        #[arg(long)]
        vocab_size: usize,
        /// Split pattern: GPT-2's, GPT-4's, or none (BasicTokenizer).
        #[arg(long, value_enum, default_value = "gpt4")]
        pattern: PatternArg,
        /// Text to train on (any bytes; invalid UTF-8 is kept).
        #[arg(long)]
        input: PathBuf,
        /// Output prefix: writes PREFIX.model and PREFIX.vocab.
        #[arg(long)]
        out: PathBuf,
        /// Training algorithm (both pick the same merges).
        #[arg(long, value_enum, default_value = "incremental")]
        algorithm: AlgorithmArg,
        /// Print every merge as minbpe's verbose training does.
        #[arg(long)]
        verbose: bool,
    },
    /// Encode FILE (`-` for stdin) and print the ids as a JSON array.
    Encode {
        #[command(flatten)]
        tok: TokArgs,
        /// Special tokens that may appear in the text as themselves.
        #[arg(long, value_enum, default_value = "none-raise")]
        allowed_special: AllowedArg,
        /// The text to encode.
        file: PathBuf,
    },
    /// Decode a JSON array of ids from FILE (`-` for stdin) and write the bytes to stdout.
    Decode {
        #[command(flatten)]
        tok: TokArgs,
        /// A file holding a JSON array of token ids.
        file: PathBuf,
    },
    /// Encode FILE and report tokens, compression ratio and throughput.
    Stats {
        #[command(flatten)]
        tok: TokArgs,
        /// Special tokens that may appear in the text as themselves.
        #[arg(long, value_enum, default_value = "none")]
        allowed_special: AllowedArg,
        /// The text to measure.
        file: PathBuf,
    },
    /// The whole lecture-8 run: train, check the targets, GPT-2/GPT-4 parity, the demo.
    Lecture(lecture::LectureArgs),
}

#[derive(Args)]
#[group(required = true, multiple = false)]
struct TokArgs {
    /// A model written by `train` (or by minbpe's Python): PREFIX.model.
    #[arg(long)]
    model: Option<PathBuf>,
    /// A pretrained OpenAI tokenizer, read from $ZTH_DATA/tokenizers.
    #[arg(long, value_enum)]
    encoding: Option<EncodingArg>,
}

#[derive(Clone, Copy, ValueEnum)]
enum PatternArg {
    Gpt2,
    Gpt4,
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum AlgorithmArg {
    Incremental,
    Plain,
}

#[derive(Clone, Copy, ValueEnum)]
enum EncodingArg {
    /// GPT-4, from cl100k_base.tiktoken.
    #[value(name = "cl100k_base")]
    Cl100kBase,
    /// GPT-2, from r50k_base.tiktoken.
    #[value(name = "r50k_base")]
    R50kBase,
    /// GPT-2, from OpenAI's original encoder.json + vocab.bpe.
    Gpt2,
}

#[derive(Clone, Copy, ValueEnum)]
enum AllowedArg {
    All,
    None,
    #[value(name = "none_raise", alias = "none-raise")]
    NoneRaise,
}

impl AllowedArg {
    fn get(self) -> AllowedSpecial {
        match self {
            AllowedArg::All => AllowedSpecial::All,
            AllowedArg::None => AllowedSpecial::None,
            AllowedArg::NoneRaise => AllowedSpecial::NoneRaise,
        }
    }
}

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

fn read_input(path: &Path) -> BoxResult<Vec<u8>> {
    if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()).into())
    }
}

fn load_tokenizer(args: &TokArgs) -> BoxResult<RegexTokenizer> {
    Ok(match (&args.model, args.encoding) {
        (Some(model), _) => RegexTokenizer::load(model)?,
        (None, Some(EncodingArg::Cl100kBase)) => Gpt4Tokenizer::from_data_dir()?.into_inner(),
        (None, Some(EncodingArg::R50kBase)) => Gpt2Tokenizer::from_data_dir()?.into_inner(),
        (None, Some(EncodingArg::Gpt2)) => Gpt2Tokenizer::from_data_dir_encoder()?.into_inner(),
        (None, None) => unreachable!("clap requires --model or --encoding"),
    })
}

fn run(cli: Cli) -> BoxResult<ExitCode> {
    match cli.command {
        Command::Train {
            vocab_size,
            pattern,
            input,
            out,
            algorithm,
            verbose,
        } => {
            let text = read_input(&input)?;
            // The folder PREFIX.model goes into, checked before the training.
            let folder = out.parent().filter(|p| !p.as_os_str().is_empty());
            report::check_out_dir("--out", folder.unwrap_or(Path::new(".")))?;
            let pattern = match pattern {
                PatternArg::Gpt2 => GPT2_SPLIT_PATTERN,
                PatternArg::Gpt4 => GPT4_SPLIT_PATTERN,
                PatternArg::None => "",
            };
            let algo = match algorithm {
                AlgorithmArg::Incremental => Algorithm::Incremental,
                AlgorithmArg::Plain => Algorithm::Plain,
            };
            let mut tok = RegexTokenizer::new(pattern)?;
            let t0 = Instant::now();
            let records = tok.train_with(&text, vocab_size, algo)?;
            let secs = t0.elapsed().as_secs_f64();
            if verbose {
                bpe::print_merges(&records, tok.merges());
            }
            let (model, vocab) = tok.save(&out)?;
            eprintln!(
                "trained {} merges in {secs:.3} s; wrote {} and {}",
                records.len(),
                model.display(),
                vocab.display()
            );
        }
        Command::Encode {
            tok,
            allowed_special,
            file,
        } => {
            let tok = load_tokenizer(&tok)?;
            let text = read_input(&file)?;
            let ids = tok.encode(&text, &allowed_special.get())?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", bpe::ids_json(&ids))?;
        }
        Command::Decode { tok, file } => {
            let tok = load_tokenizer(&tok)?;
            let text = read_input(&file)?;
            let ids: Vec<u32> = serde_json::from_slice(&text).map_err(|e| {
                format!(
                    "{}: expected a JSON array of token ids: {e}",
                    file.display()
                )
            })?;
            let bytes = tok.decode_bytes(&ids)?;
            std::io::stdout().lock().write_all(&bytes)?;
        }
        Command::Stats {
            tok,
            allowed_special,
            file,
        } => {
            let tok = load_tokenizer(&tok)?;
            let text = read_input(&file)?;
            stats::print(&tok, &text, &allowed_special.get(), &file)?;
        }
        Command::Lecture(args) => return lecture::run(args),
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    report::quiet_on_broken_pipe();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
