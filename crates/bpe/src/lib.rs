//! Lecture 8, "Let's build the GPT Tokenizer": byte-level BPE from scratch, after karpathy/minbpe,
//! matching OpenAI's tokenizers byte for byte.
//!
//! A tokenizer is an ordered list of merges. Training starts from the 256 byte values and
//! repeatedly fuses the most frequent adjacent pair into a new token; encoding replays the merges
//! in the order they were learned; decoding concatenates the bytes of each token.
//!
//! - [`BasicTokenizer`]: BPE on the raw bytes of the whole text.
//! - [`RegexTokenizer`]: first splits the text with GPT-2's or GPT-4's pattern ([`split`]) so that
//!   no merge crosses a word/number/punctuation/whitespace boundary, and handles special tokens.
//! - [`Gpt4Tokenizer`] / [`Gpt2Tokenizer`]: OpenAI's `cl100k_base` and `r50k_base` rebuilt as merge
//!   lists from their `.tiktoken` files (and GPT-2's original `encoder.json` + `vocab.bpe`).
//!
//! Targets (`cargo xtask lecture 8`): trained to vocab 512 on taylorswift.txt exactly as minbpe's
//! `train.py`, the file encodes to **78,746** tokens (Basic) and **87,339** (Regex, GPT-4 pattern),
//! with minbpe's merges; `"hello123!!!? (안녕하세요!) 😉"` encodes to
//! `[15339, 4513, 12340, 30, 320, 31495, 230, 75265, 243, 92245, 16715, 57037]` with GPT-4, as
//! tiktoken's `cl100k_base` does, and so do whole files.
//!
//! ```
//! use bpe::{BasicTokenizer, RegexTokenizer, AllowedSpecial};
//! let mut t = BasicTokenizer::new();
//! t.train("aaabdaaabac", 256 + 3, false).unwrap();
//! assert_eq!(t.encode("aaabdaaabac"), [258, 100, 258, 97, 99]); // Wikipedia's BPE example
//!
//! let mut r = RegexTokenizer::default(); // GPT-4 split pattern
//! r.register_special_tokens(&[("<|endoftext|>", 100257)]).unwrap();
//! let ids = r.encode("<|endoftext|>hi", &AllowedSpecial::All).unwrap();
//! assert_eq!(ids, [100257, 104, 105]);
//! assert_eq!(r.decode(&ids).unwrap(), "<|endoftext|>hi");
//! ```
#![deny(missing_docs)]

pub mod data;
mod error;
pub mod merges;
pub mod model_file;
pub mod openai;
pub mod rustbpe;
pub mod split;
mod tokenizer;
pub mod train;

pub use error::{Error, Result};
pub use merges::{Merges, Pair};
pub use openai::{Gpt2Tokenizer, Gpt4Tokenizer, GPT2_SPECIAL_TOKENS, GPT4_SPECIAL_TOKENS};
pub use split::{Splitter, GPT2_SPLIT_PATTERN, GPT4_SPLIT_PATTERN, NANOCHAT_SPLIT_PATTERN};
pub use tokenizer::{print_merges, AllowedSpecial, BasicTokenizer, RegexTokenizer};
pub use train::{Algorithm, MergeRecord, TieBreak};

/// Token ids as a compact JSON array, `[1,2,3]` (what `bpe encode` prints).
pub fn ids_json(ids: &[u32]) -> String {
    let mut s = String::with_capacity(ids.len() * 6 + 2);
    s.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&id.to_string());
    }
    s.push(']');
    s
}

/// SHA-256 of [`ids_json`]: a fingerprint of a long encoding, comparable with Python's
/// `hashlib.sha256(json.dumps(ids, separators=(",", ":")).encode()).hexdigest()`.
pub fn ids_sha256(ids: &[u32]) -> String {
    ::data::sha256_hex(ids_json(ids).as_bytes())
}

/// One tokenizer's view of a text, as the tiktokenizer app in the lecture shows
/// it: every token's id and its bytes, `{"name", "ids", "pieces"}`. A piece can
/// be part of a UTF-8 character (a Korean syllable split over two tokens). The
/// runs page (`runs/index.html`) colours the pieces by id.
pub fn token_view(
    name: &str,
    ids: &[u32],
    decode_bytes: impl Fn(&[u32]) -> Result<Vec<u8>>,
) -> Result<serde_json::Value> {
    let pieces = ids
        .iter()
        .map(|&id| decode_bytes(&[id]))
        .collect::<Result<Vec<Vec<u8>>>>()?;
    Ok(serde_json::json!({"name": name, "ids": ids, "pieces": pieces}))
}
