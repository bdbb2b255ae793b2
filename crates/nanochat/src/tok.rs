//! `nanochat tok-train` and `nanochat tok-eval`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nanochat::documents::tokenizer_documents;
use nanochat::tokenizer::{text_iterator, Tokenizer};
use report::thousands;

/// scripts/tok_train.py's flags, and where the text comes from.
#[derive(clap::Args)]
pub struct TrainArgs {
    /// Maximum characters to train on.
    #[arg(long, default_value_t = 2_000_000_000)]
    max_chars: usize,
    /// Maximum characters per document.
    #[arg(long, default_value_t = 10_000)]
    doc_cap: usize,
    /// Vocabulary size, the 9 special tokens included.
    #[arg(long, default_value_t = 32768)]
    vocab_size: usize,
    /// The text: a file (documents between blank lines), a .jsonl file of {"text": …}, a
    /// folder of them, or a folder of nanochat's parquet shards (its train shards, as
    /// tok_train.py). Default: the base folder's base_data_climbmix, where `nanochat data` and
    /// nanochat's dataset.py put the shards.
    #[arg(long)]
    input: Option<PathBuf>,
}

fn input_or_default(input: Option<PathBuf>) -> PathBuf {
    input.unwrap_or_else(|| nanochat::base_dir().join("base_data_climbmix"))
}

/// tok_train.py's "Quick inline sanity check".
const TEST_TEXT: &str = "Hello world! This is a test.
Numbers: 123, 4567, 89
Contractions: I'm, you're, it's
Special chars: @#$%^&*()
Unicode: 你好世界 🌍";

pub fn train(args: TrainArgs) -> Result<(), String> {
    println!("max_chars: {}", thousands(args.max_chars));
    println!("doc_cap: {}", thousands(args.doc_cap));
    println!("vocab_size: {}", thousands(args.vocab_size));
    let input = input_or_default(args.input);
    let documents = tokenizer_documents(&input)?;
    let docs = text_iterator(
        documents.iter().map(String::as_str),
        args.doc_cap,
        args.max_chars,
    );
    let t0 = Instant::now();
    let tokenizer = Tokenizer::train_from_documents(&docs, args.vocab_size)?;
    println!("Training time: {:.2}s", t0.elapsed().as_secs_f64());
    if tokenizer.vocab_size() != args.vocab_size {
        // rustbpe stops when no pair is left; say so rather than hide it.
        println!(
            "note: {} allows only {} merges, so the vocabulary has {} tokens, not {}",
            input.display(),
            tokenizer.vocab_size() - 256 - nanochat::SPECIAL_TOKENS.len(),
            tokenizer.vocab_size(),
            args.vocab_size
        );
    }
    let path = tokenizer.save(&nanochat::base_dir().join("tokenizer"))?;
    println!("Saved tokenizer encoding to {}", path.display());
    let path = tokenizer.save_token_bytes(&nanochat::base_dir().join("tokenizer"))?;
    println!("Saved token_bytes to {}", path.display());
    let back = tokenizer.decode(&tokenizer.encode(TEST_TEXT))?;
    if back != TEST_TEXT {
        return Err("the trained tokenizer does not decode its own encoding back".into());
    }
    Ok(())
}

/// scripts/tok_eval.py on the texts at hand.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// Text files to measure (each whole).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

struct Measured {
    bytes: usize,
    tokens: usize,
}

impl Measured {
    fn ratio(&self) -> f64 {
        self.bytes as f64 / self.tokens as f64
    }
}

fn measure(
    encode: &dyn Fn(&str) -> Result<Vec<u32>, String>,
    text: &str,
) -> Result<Measured, String> {
    let tokens = encode(text)?.len();
    Ok(Measured {
        bytes: text.len(),
        tokens: tokens.max(1),
    })
}

fn name_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub fn eval(args: EvalArgs) -> Result<(), String> {
    let ours = Tokenizer::from_directory(&nanochat::base_dir().join("tokenizer"))?;
    let gpt2 = bpe::Gpt2Tokenizer::from_data_dir().map_err(|e| e.to_string())?;
    let gpt4 = bpe::Gpt4Tokenizer::from_data_dir().map_err(|e| e.to_string())?;
    let mut texts = Vec::new();
    for f in &args.files {
        let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{}: not UTF-8 (at byte {})",
                f.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        texts.push((name_of(f), text));
    }
    let plain = |t: &bpe::RegexTokenizer, s: &str| t.encode_ordinary(s).map_err(|e| e.to_string());
    let mut results: Vec<[Measured; 3]> = Vec::new();
    for (_, text) in &texts {
        results.push([
            measure(&|s| plain(&gpt2, s), text)?,
            measure(&|s| plain(&gpt4, s), text)?,
            measure(&|s| Ok(ours.encode(s)), text)?,
        ]);
    }
    println!("\nVocab sizes:");
    println!("GPT-2: {}", n_vocab(&gpt2));
    println!("GPT-4: {}", n_vocab(&gpt4));
    println!("Ours: {}", ours.vocab_size());
    let color = std::io::stdout().is_terminal();
    for (b, baseline) in [(0, "GPT-2"), (1, "GPT-4")] {
        print_comparison(baseline, &texts, &results, b, color);
    }
    Ok(())
}

/// tiktoken's `n_vocab`: the largest id, special tokens included, plus one.
fn n_vocab(t: &bpe::RegexTokenizer) -> usize {
    let top = t.special_tokens().iter().map(|&(_, id)| id as usize + 1);
    top.chain([t.merges().vocab_size()]).max().unwrap_or(0)
}

/// tok_eval.py's `print_comparison`, its columns and colors (green is the better ratio).
fn print_comparison(
    baseline: &str,
    texts: &[(String, String)],
    results: &[[Measured; 3]],
    b: usize,
    color: bool,
) {
    let (green, red, reset) = if color {
        ("\x1b[92m", "\x1b[91m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    println!("\nComparison with {baseline}:");
    println!("{}", "=".repeat(95));
    println!(
        "{:<10} {:<8} {:<15} {:<15} {:<12} {:<10}",
        "Text Type", "Bytes", baseline, "Ours", "Relative", "Better"
    );
    println!(
        "{:10} {:8} {:<7} {:<7} {:<7} {:<7} {:<12}",
        "", "", "Tokens", "Ratio", "Tokens", "Ratio", "Diff %"
    );
    println!("{}", "-".repeat(95));
    for ((name, _), r) in texts.iter().zip(results) {
        let (base, ours) = (&r[b], &r[2]);
        let relative = (base.tokens as f64 - ours.tokens as f64) / base.tokens as f64 * 100.0;
        let (bc, oc, better, dc) = if base.ratio() > ours.ratio() {
            (green, red, baseline, red)
        } else if ours.ratio() > base.ratio() {
            (red, green, "Ours", green)
        } else {
            ("", "", "Tie", "")
        };
        println!(
            "{name:<10} {:<8} {bc}{:<7}{reset} {bc}{:<7.2}{reset} {oc}{:<7}{reset} {oc}{:<7.2}{reset} {dc}{relative:+7.1}%{reset}     {better:<10}",
            base.bytes, base.tokens, base.ratio(), ours.tokens, ours.ratio()
        );
    }
}
