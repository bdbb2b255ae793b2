//! base_train.py's flags (`scripts/base_train.py`'s argparse at 92d63d4), with its defaults.

use crate::checkpoint::Format;
use clap::Args;

/// base_train.py's flags, with its defaults; each also spelled with underscores.
#[derive(Args, Clone, Debug, serde::Serialize)]
#[command(args_override_self = true)] // as argparse: a repeated flag, the last one counts
pub struct BaseTrainArgs {
    /// The wandb run name; only "dummy" (no logging) is supported.
    #[arg(long, default_value = "dummy")]
    pub run: String,
    /// cuda|cpu|mps; this build trains on the CPU ("" picks it).
    #[arg(long, default_value = "")]
    pub device_type: String,
    /// FP8 training needs an H100; refused here.
    #[arg(long)]
    pub fp8: bool,
    /// Transformer blocks.
    #[arg(long, default_value_t = 20)]
    pub depth: usize,
    /// model_dim = depth × aspect_ratio (rounded up to a multiple of head_dim).
    #[arg(long, default_value_t = 64)]
    pub aspect_ratio: usize,
    /// Target width of one attention head.
    #[arg(long, default_value_t = 128)]
    pub head_dim: usize,
    /// The longest context.
    #[arg(long, default_value_t = 2048)]
    pub max_seq_len: usize,
    /// Sliding windows tiled across the layers: L the whole context, S a quarter of it.
    #[arg(long, default_value = "SSSL")]
    pub window_pattern: String,
    /// Optimizer steps (-1: from --target-flops or --target-param-data-ratio).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub num_iterations: i64,
    /// Train until this many FLOPs (-1: off).
    #[arg(long, default_value_t = -1.0, allow_negative_numbers = true)]
    pub target_flops: f64,
    /// Tokens per scaling parameter (Chinchilla is 20; -1: off).
    #[arg(long, default_value_t = 12.0, allow_negative_numbers = true)]
    pub target_param_data_ratio: f64,
    /// Rows per forward pass.
    #[arg(long, default_value_t = 32)]
    pub device_batch_size: usize,
    /// Tokens per optimizer step (-1: from the scaling laws).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub total_batch_size: i64,
    /// AdamW's rate for the embeddings.
    #[arg(long, default_value_t = 0.3)]
    pub embedding_lr: f64,
    /// AdamW's rate for the head.
    #[arg(long, default_value_t = 0.008)]
    pub unembedding_lr: f64,
    /// Muon's cautious weight decay, at d12 (scaled for this run).
    #[arg(long, default_value_t = 0.28)]
    pub weight_decay: f64,
    /// Muon's rate for the matrices.
    #[arg(long, default_value_t = 0.02)]
    pub matrix_lr: f64,
    /// AdamW's rate for the per-layer scalars.
    #[arg(long, default_value_t = 0.5)]
    pub scalar_lr: f64,
    /// Steps of linear warmup.
    #[arg(long, default_value_t = 40)]
    pub warmup_steps: usize,
    /// The fraction of the steps spent in the warmdown.
    #[arg(long, default_value_t = 0.65)]
    pub warmdown_ratio: f64,
    /// The learning rate at the end, as a fraction of the peak.
    #[arg(long, default_value_t = 0.05)]
    pub final_lr_frac: f64,
    /// Resume from this step's checkpoint (-1: start afresh).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub resume_from_step: i64,
    /// Evaluate the validation bpb every this many steps (-1: never).
    #[arg(long, default_value_t = 250, allow_negative_numbers = true)]
    pub eval_every: i64,
    /// Tokens in each evaluation.
    #[arg(long, default_value_t = 80 * 524288)]
    pub eval_tokens: usize,
    /// The CORE metric every this many steps and at the last (-1: never); skipped, with a line
    /// saying so, where the base folder has no eval_bundle.
    #[arg(long, default_value_t = 2000, allow_negative_numbers = true)]
    pub core_metric_every: i64,
    /// Examples per task for the CORE metric.
    #[arg(long, default_value_t = 500)]
    pub core_metric_max_per_task: usize,
    /// Sample from the model every this many steps (-1: never).
    #[arg(long, default_value_t = 2000, allow_negative_numbers = true)]
    pub sample_every: i64,
    /// Save a checkpoint every this many steps (-1: only at the end).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub save_every: i64,
    /// The checkpoint folder's name under base_checkpoints (default dN, N the depth).
    #[arg(long)]
    pub model_tag: Option<String>,
    /// The text to train on, as tok-train's --input (not a base_train.py flag): a text file, a JSON-lines file, or a
    /// folder of .txt, .md and .jsonl files; the last file is val (one file: its last tenth).
    #[arg(long, alias = "data")]
    pub input: Option<std::path::PathBuf>,
    /// The checkpoint files (not a base_train.py flag): safetensors, or pt for nanochat's own
    /// `torch.save` files, which its scripts load.
    #[arg(long, value_enum, default_value_t = Format::Safetensors)]
    pub format: Format,
}
