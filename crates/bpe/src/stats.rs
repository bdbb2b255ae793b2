//! `bpe stats`: what a tokenizer does to a file: tokens, compression ratio,
//! encode and decode speed, and whether the round trip is exact.

use bpe::AllowedSpecial;
use bpe::RegexTokenizer;
use std::path::Path;
use std::time::Instant;

/// Encodes `text` (best of 3 timed runs), decodes it back and prints the figures.
pub fn print(
    tok: &RegexTokenizer,
    text: &[u8],
    allowed: &AllowedSpecial,
    file: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
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
