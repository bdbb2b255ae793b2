//! `bpe train`, `bpe encode` and `bpe decode`: each one's flags and the code
//! that runs it, and what they share with `bpe stats` (the tokenizer flags,
//! reading a file or stdin).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use bpe::{
    Algorithm, AllowedSpecial, Gpt2Tokenizer, Gpt4Tokenizer, RegexTokenizer, GPT2_SPLIT_PATTERN,
    GPT4_SPLIT_PATTERN,
};
use clap::{Args, ValueEnum};

/// Any error, shown as its message.
pub type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

/// `bpe train`.
#[derive(Args)]
pub struct TrainArgs {
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

impl TrainArgs {
    /// Trains on the input and writes the model and vocab files.
    pub fn run(self) -> BoxResult<()> {
        let text = read_input(&self.input)?;
        // The folder PREFIX.model goes into, checked before the training.
        let folder = self.out.parent().filter(|p| !p.as_os_str().is_empty());
        report::check_out_dir("--out", folder.unwrap_or(Path::new(".")))?;
        let pattern = match self.pattern {
            PatternArg::Gpt2 => GPT2_SPLIT_PATTERN,
            PatternArg::Gpt4 => GPT4_SPLIT_PATTERN,
            PatternArg::None => "",
        };
        let algo = match self.algorithm {
            AlgorithmArg::Incremental => Algorithm::Incremental,
            AlgorithmArg::Plain => Algorithm::Plain,
        };
        let mut tok = RegexTokenizer::new(pattern)?;
        let t0 = Instant::now();
        let records = tok.train_with(&text, self.vocab_size, algo)?;
        let secs = t0.elapsed().as_secs_f64();
        if self.verbose {
            bpe::print_merges(&records, tok.merges());
        }
        let (model, vocab) = tok.save(&self.out)?;
        eprintln!(
            "trained {} merges in {secs:.3} s; wrote {} and {}",
            records.len(),
            model.display(),
            vocab.display()
        );
        Ok(())
    }
}

/// `bpe encode`.
#[derive(Args)]
pub struct EncodeArgs {
    #[command(flatten)]
    tok: TokArgs,
    /// Special tokens that may appear in the text as themselves.
    #[arg(long, value_enum, default_value = "none-raise")]
    allowed_special: AllowedArg,
    /// The text to encode.
    file: PathBuf,
}

impl EncodeArgs {
    /// Prints the ids of the file's text as a JSON array.
    pub fn run(self) -> BoxResult<()> {
        let tok = load_tokenizer(&self.tok)?;
        let text = read_input(&self.file)?;
        let ids = tok.encode(&text, &self.allowed_special.get())?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", bpe::ids_json(&ids))?;
        Ok(())
    }
}

/// `bpe decode`.
#[derive(Args)]
pub struct DecodeArgs {
    #[command(flatten)]
    tok: TokArgs,
    /// A file holding a JSON array of token ids.
    file: PathBuf,
}

impl DecodeArgs {
    /// Writes the bytes of the file's ids to stdout.
    pub fn run(self) -> BoxResult<()> {
        let tok = load_tokenizer(&self.tok)?;
        let text = read_input(&self.file)?;
        let ids: Vec<u32> = serde_json::from_slice(&text).map_err(|e| {
            format!(
                "{}: expected a JSON array of token ids: {e}",
                self.file.display()
            )
        })?;
        let bytes = tok.decode_bytes(&ids)?;
        std::io::stdout().lock().write_all(&bytes)?;
        Ok(())
    }
}

/// Which tokenizer: a trained model, or one of OpenAI's.
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct TokArgs {
    /// A model written by `train` (or by minbpe's Python): PREFIX.model.
    #[arg(long)]
    model: Option<PathBuf>,
    /// A pretrained OpenAI tokenizer, read from $ZTH_DATA/tokenizers.
    #[arg(long, value_enum)]
    encoding: Option<EncodingArg>,
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

/// `--allowed-special`: tiktoken's `allowed_special`.
#[derive(Clone, Copy, ValueEnum)]
pub enum AllowedArg {
    All,
    None,
    #[value(name = "none_raise", alias = "none-raise")]
    NoneRaise,
}

impl AllowedArg {
    /// The tokenizer's setting.
    pub fn get(self) -> AllowedSpecial {
        match self {
            AllowedArg::All => AllowedSpecial::All,
            AllowedArg::None => AllowedSpecial::None,
            AllowedArg::NoneRaise => AllowedSpecial::NoneRaise,
        }
    }
}

/// The bytes of `path`, or of stdin for `-`.
pub fn read_input(path: &Path) -> BoxResult<Vec<u8>> {
    if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()).into())
    }
}

/// The tokenizer the flags name.
pub fn load_tokenizer(args: &TokArgs) -> BoxResult<RegexTokenizer> {
    Ok(match (&args.model, args.encoding) {
        (Some(model), _) => RegexTokenizer::load(model)?,
        (None, Some(EncodingArg::Cl100kBase)) => Gpt4Tokenizer::from_data_dir()?.into_inner(),
        (None, Some(EncodingArg::R50kBase)) => Gpt2Tokenizer::from_data_dir()?.into_inner(),
        (None, Some(EncodingArg::Gpt2)) => Gpt2Tokenizer::from_data_dir_encoder()?.into_inner(),
        (None, None) => unreachable!("clap requires --model or --encoding"),
    })
}
