//! nanochat on a CPU: Karpathy's "best ChatGPT that $100 can buy" (karpathy/nanochat at
//! commit 92d63d4), the last program of the Zero to Hero line, in Rust.
//!
//! Each of nanochat's scripts is a subcommand of the `nanochat` binary, with its flags, its
//! defaults and its printed lines:
//! - `tok-train`, `tok-eval`: the tokenizer (`scripts/tok_train.py`, `scripts/tok_eval.py`,
//!   `nanochat/tokenizer.py`), trained as the `rustbpe` package trains it and saved as the
//!   `tokenizer.pkl` nanochat reads.
//! - The pieces of `base-train` (`scripts/base_train.py`): the GPT of `nanochat/gpt.py`
//!   ([`gpt`]), `MuonAdamW` ([`optim`]), the best-fit loader ([`dataloader`]), bits per byte
//!   ([`loss_eval`]), the schedules and the training step ([`base_train`]); the loop with its
//!   printed lines, checkpoints ([`checkpoint`]) that resume bit for bit, and the run's
//!   `loss.csv` and `report.json` ([`run_files`]), on text files or nanochat's parquet
//!   shards ([`shards`], downloaded by `data`: [`download`]).
//! - `base-eval` (`scripts/base_eval.py`): greedy and sampled completions ([`engine`]), bits
//!   per byte and the CORE metric ([`core_eval`]) of a checkpoint ([`base_eval`]).
//! - `sft` (`scripts/chat_sft.py`): fine-tuning to chat ([`chat_sft`]) on a `TaskMixture` of
//!   conversations, spelling and arithmetic tasks ([`tasks`]); `chat-eval` (`scripts/chat_eval.py`)
//!   scores held-out problems ([`chat_eval`]).
//! - `chat` (`scripts/chat_cli.py`): a conversation in the terminal ([`chat_cli`]), through the
//!   engine with its KV cache ([`kv_cache`]) and calculator ([`calculator`]); `serve`
//!   (`scripts/chat_web.py` before commit da32e1d): the same in a browser ([`serve`]).
//!
//! Targets (`crates/nanochat/tests`, fixtures made by nanochat's own code): on tiny Shakespeare
//! and on a text beyond ASCII, at vocabularies of 512 and 4,096, the merge ranks equal to
//! rustbpe's, `tokenizer.pkl` equal byte for byte to the one nanochat saves, every encoding equal
//! to tiktoken's, and `render_conversation`'s ids and masks equal to nanochat's on 11
//! conversations with system messages, tool calls and truncation. For base_train.py, eight runs
//! (two texts, depths 2 and 4, sliding windows on and off): every tensor's name, shape and initial
//! bytes, the first loss within 1e-5, Muon's first update within 1e-5, bits per byte at step 0
//! within 1e-4, and 50 steps of losses within 1e-4 (at depth 4, while nanochat on 1 and on 2
//! threads agree with each other; see `tests/base_train.rs`). On a small eval bundle in
//! nanochat's format, every CORE example and the metric as `core_eval.py`'s; from the same
//! weights, the engine's samples token for token nanochat's, with and without the KV cache; the
//! calculator's answers `use_calculator`'s on 93 expressions but two it leaves out. For
//! chat_sft.py (with the fix of nanochat's #811/#817), the generated tasks conversation for
//! conversation, the first batch, and 19 steps of losses within 1e-4 or three times nanochat's
//! own 1-vs-2-thread spread (`tests/chat_sft.rs`). A model fine-tuned from scratch on the
//! arithmetic conversations answers held-out problems with the calculator at 0.9 or better on
//! each of three seeds (`tests/tool_use.rs`).

pub mod base_eval;
pub mod base_train;
pub mod calculator;
pub mod chat_cli;
pub mod chat_eval;
pub mod chat_sft;
pub mod checkpoint;
pub mod core_eval;
pub mod dataloader;
pub mod documents;
pub mod download;
pub mod engine;
pub mod gpt;
pub mod hub;
pub mod kv_cache;
pub mod loss_eval;
pub mod optim;
pub mod pickle;
pub mod pt;
pub mod run_files;
pub mod serve;
pub mod shards;
pub mod tasks;
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
