//! `bpe stats`: what a tokenizer does to a file: tokens, compression ratio,
//! encode and decode speed, and whether the round trip is exact.

use crate::commands::{load_tokenizer, read_input, AllowedArg, BoxResult, TokArgs};
use bpe::AllowedSpecial;
use bpe::RegexTokenizer;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `bpe stats`.
#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    tok: TokArgs,
    /// Special tokens that may appear in the text as themselves.
    #[arg(long, value_enum, default_value = "none")]
    allowed_special: AllowedArg,
    /// The text to measure.
    file: PathBuf,
}

impl StatsArgs {
    /// Encodes the file and prints what [`print`] measures.
    pub fn run(self) -> BoxResult<()> {
        let tok = load_tokenizer(&self.tok)?;
        let text = read_input(&self.file)?;
        print(&tok, &text, &self.allowed_special.get(), &self.file)
    }
}

/// Encodes `text` (best of 3 timed runs), decodes it back and prints the figures.
pub fn print(
    tok: &RegexTokenizer,
    text: &[u8],
    allowed: &AllowedSpecial,
    file: &Path,
) -> BoxResult<()> {
    let ids = tok.encode(text, allowed)?; // warm-up, and the count
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        std::hint::black_box(tok.encode(text, allowed)?);
        best = best.min(t0.elapsed().as_secs_f64());
    }
    let t0 = Instant::now();
    let back = tok.decode_bytes(&ids)?;
    let dsecs = t0.elapsed().as_secs_f64();
    let mb = text.len() as f64 / 1e6;
    println!("file:              {}", file.display());
    println!("bytes:             {}", text.len());
    println!("tokens:            {}", ids.len());
    println!(
        "compression ratio: {:.4} bytes/token",
        text.len() as f64 / ids.len().max(1) as f64
    );
    println!("encode:            {:.2} MB/s (best of 3)", mb / best);
    println!("decode:            {:.2} MB/s", mb / dsecs);
    println!(
        "round trip:        {}",
        if back == text { "exact" } else { "DIFFERS" }
    );
    Ok(())
}
