//! nanochat on a CPU: Karpathy's "best ChatGPT that $100 can buy" (karpathy/nanochat at
//! commit 92d63d4), the last program of the Zero to Hero line, in Rust.
//!
//! Each of nanochat's scripts is a subcommand of the `nanochat` binary, with its flags, its
//! defaults and its printed lines:
//! - `tok-train`, `tok-eval`: the tokenizer (`scripts/tok_train.py`, `scripts/tok_eval.py`,
//!   `nanochat/tokenizer.py`), trained as the `rustbpe` package trains it and saved as the
//!   `tokenizer.pkl` nanochat reads.
//!
//! Targets (`crates/nanochat/tests`, fixtures made by nanochat's own code): on tiny Shakespeare
//! and on a text beyond ASCII, at vocabularies of 512 and 4,096, the merge ranks equal to
//! rustbpe's, `tokenizer.pkl` equal byte for byte to the one nanochat saves, every encoding equal
//! to tiktoken's, and `render_conversation`'s ids and masks equal to nanochat's on 11
//! conversations with system messages, tool calls and truncation.

pub mod dataloader;
pub mod documents;
pub mod gpt;
pub mod loss_eval;
pub mod optim;
pub mod pickle;
pub mod tokenizer;

pub use tokenizer::{Conversation, Tokenizer, SPECIAL_TOKENS};

use std::path::PathBuf;

/// nanochat's `get_base_dir()`: `$NANOCHAT_BASE_DIR`, or `~/.cache/nanochat`.
pub fn base_dir() -> PathBuf {
    match std::env::var_os("NANOCHAT_BASE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache").join("nanochat")
        }
    }
}
