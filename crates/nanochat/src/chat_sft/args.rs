//! chat_sft.py's flags (`scripts/chat_sft.py`'s argparse at 92d63d4), with its defaults.

use crate::checkpoint::Format;
use clap::Args;
use std::path::PathBuf;

/// chat_sft.py's flags, with its defaults (each also spelled with underscores), and the data
/// this build trains on in place of SmolTalk, MMLU and GSM8K.
#[derive(Args, Clone, Debug, serde::Serialize)]
#[command(args_override_self = true)]
pub struct SftArgs {
    /// The wandb run name; only "dummy" (no logging) is supported.
    #[arg(long, default_value = "dummy")]
    pub run: String,
    /// cuda|cpu|mps; this build trains on the CPU ("" picks it).
    #[arg(long, default_value = "")]
    pub device_type: String,
    /// The base checkpoint's folder under base_checkpoints (default: the largest model).
    #[arg(long)]
    pub model_tag: Option<String>,
    /// The base checkpoint's step (default: the last).
    #[arg(long)]
    pub model_step: Option<usize>,
    /// Warm-start the optimizer from the base checkpoint (0 = no, 1 = yes).
    #[arg(long, default_value_t = 1)]
    pub load_optimizer: u8,
    /// Optimizer steps (-1: one epoch of the mixture).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub num_iterations: i64,
    /// Tokens per row (default: the base's).
    #[arg(long)]
    pub max_seq_len: Option<usize>,
    /// Rows per forward pass (default: the base's).
    #[arg(long)]
    pub device_batch_size: Option<usize>,
    /// Tokens per optimizer step (default: the base's).
    #[arg(long)]
    pub total_batch_size: Option<usize>,
    /// AdamW's rate for the embeddings (default: the base's).
    #[arg(long)]
    pub embedding_lr: Option<f64>,
    /// AdamW's rate for the head (default: the base's).
    #[arg(long)]
    pub unembedding_lr: Option<f64>,
    /// Muon's rate for the matrices (default: the base's).
    #[arg(long)]
    pub matrix_lr: Option<f64>,
    /// The first learning rate, as a fraction of the base's.
    #[arg(long, default_value_t = 0.8)]
    pub init_lr_frac: f64,
    /// The fraction of the run spent warming up.
    #[arg(long, default_value_t = 0.0)]
    pub warmup_ratio: f64,
    /// The fraction of the run spent in the warmdown.
    #[arg(long, default_value_t = 0.5)]
    pub warmdown_ratio: f64,
    /// The learning rate at the end, as a fraction of the first.
    #[arg(long, default_value_t = 0.0)]
    pub final_lr_frac: f64,
    /// Evaluate the validation bpb every this many steps (-1: only at the end).
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    pub eval_every: i64,
    /// Tokens in each evaluation.
    #[arg(long, default_value_t = 40 * 524288)]
    pub eval_tokens: usize,
    /// The ChatCORE metric needs ARC, MMLU, GSM8K and HumanEval, which this build does not
    /// download; any value but -1 is said to be skipped.
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    pub chatcore_every: i64,
    /// Epochs of MMLU in nanochat's mixture (with --hub).
    #[arg(long, default_value_t = 3)]
    pub mmlu_epochs: usize,
    /// Epochs of GSM8K in nanochat's mixture (with --hub).
    #[arg(long, default_value_t = 4)]
    pub gsm8k_epochs: usize,
    /// Add nanochat's own mixture from the Hugging Face Hub (SmolTalk, MMLU × --mmlu-epochs,
    /// GSM8K × --gsm8k-epochs), downloaded once into task_data/ (not a chat_sft.py flag: there
    /// they are always in; on a CPU one epoch of them takes days).
    #[arg(long)]
    pub hub: bool,
    /// Where the Hub is: a mirror's address in place of https://huggingface.co (default:
    /// $HF_ENDPOINT, else the Hub).
    #[arg(long)]
    pub hub_endpoint: Option<String>,
    /// JSON-lines files of conversations in nanochat's format, `{"messages": [...]}` per line
    /// (not a chat_sft.py flag); each is one task of the mixture.
    #[arg(long)]
    pub conversations: Vec<PathBuf>,
    /// The word list of the spelling tasks, one word per line (default: names.txt).
    #[arg(long)]
    pub words: Option<PathBuf>,
    /// SimpleSpelling examples ("Spell the word: …"); a fifth as many, from the test seeds,
    /// join the validation mixture.
    #[arg(long, default_value_t = 1000)]
    pub simple_spelling: usize,
    /// SpellingBee examples ("How many r are in strawberry?"); a fifth as many validate.
    #[arg(long, default_value_t = 1000)]
    pub spelling_bee: usize,
    /// Arithmetic word problems answered with the calculator; a fifth as many validate.
    #[arg(long, default_value_t = 4000)]
    pub arithmetic: usize,
    /// The checkpoint files (not a chat_sft.py flag): safetensors, or pt for nanochat's own
    /// `torch.save` files, which its chat_cli.py loads.
    #[arg(long, value_enum, default_value_t = Format::Safetensors)]
    pub format: Format,
}
