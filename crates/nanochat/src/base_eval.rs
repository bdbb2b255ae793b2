//! nanochat's `scripts/base_eval.py`: a base checkpoint's greedy samples of base_train's
//! prompts, its bits per byte on the train and val splits, and the CORE metric on nanochat's
//! eval bundle ([`crate::core_eval`]), with its CSV under `base_eval/`.
//!
//! The samples come from [`crate::engine`], which has no KV cache and no calculator yet. The
//! eval bundle is not downloaded: where it is absent, `--eval core` says where to put it.

use crate::base_train::run::{corpus, greedy_sample, SAMPLE_PROMPTS};
use crate::checkpoint::{checkpoint_dir, last_step, load_model};
use crate::core_eval::{evaluate_core, results_csv, Bundle};
use crate::dataloader::BestFitLoader;
use crate::engine::{generate_batch, Sampling};
use crate::loss_eval::evaluate_bpb;
use crate::tokenizer::Tokenizer;
use clap::Args;
use std::path::{Path, PathBuf};

/// base_eval.py's flags, with its defaults but `--eval`'s.
#[derive(Args, Clone, Debug)]
#[command(args_override_self = true)]
pub struct BaseEvalArgs {
    /// Comma-separated evaluations: core, bpb, sample. core needs nanochat's eval bundle
    /// unzipped into the base folder ($NANOCHAT_BASE_DIR/eval_bundle, from
    /// <https://karpathy-public.s3.us-west-2.amazonaws.com/eval_bundle.zip>); without it, give
    /// --eval bpb,sample.
    #[arg(long, default_value = "core,bpb,sample")]
    pub eval: String,
    /// The checkpoint folder under base_checkpoints (default: the deepest dN there).
    #[arg(long)]
    pub model_tag: Option<String>,
    /// The step to load (default: the last).
    #[arg(long)]
    pub step: Option<usize>,
    /// Examples per CORE task (-1: all).
    #[arg(
        long,
        default_value_t = -1,
        allow_negative_numbers = true
    )]
    pub max_per_task: i64,
    /// Rows per forward pass for bpb.
    #[arg(long, default_value_t = 32)]
    pub device_batch_size: usize,
    /// Tokens evaluated per split for bpb.
    #[arg(long, default_value_t = 40 * 524288)]
    pub split_tokens: usize,
    /// cuda|cpu|mps; this build evaluates on the CPU.
    #[arg(long, default_value = "")]
    pub device_type: String,
    /// The text the splits come from, as base-train's --input (default: the parquet shards).
    #[arg(long, alias = "data")]
    pub input: Option<PathBuf>,
}

/// `find_largest_model`: the `dN` folder with the largest N, else the only folder.
pub(crate) fn default_model_tag(checkpoints: &Path) -> Result<String, String> {
    let entries =
        std::fs::read_dir(checkpoints).map_err(|e| format!("{}: {e}", checkpoints.display()))?;
    let tags: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let deepest = tags
        .iter()
        .filter_map(|t| Some((t.strip_prefix('d')?.parse::<usize>().ok()?, t)))
        .max();
    match (deepest, tags.as_slice()) {
        (Some((_, tag)), _) => Ok(tag.clone()),
        (None, [only]) => Ok(only.clone()),
        _ => Err(format!(
            "{}: no dN folder and not exactly one checkpoint folder; give --model-tag",
            checkpoints.display()
        )),
    }
}

/// Runs base_eval.py's `sample`, `bpb` and `core`, in its order, on a base checkpoint under
/// `base`.
pub fn base_eval(
    args: &BaseEvalArgs,
    base: &Path,
    print0: &mut dyn FnMut(String),
) -> Result<(), String> {
    if !matches!(args.device_type.as_str(), "" | "cpu") {
        return Err(format!(
            "--device-type {}: this build evaluates on the CPU only",
            args.device_type
        ));
    }
    let modes: Vec<&str> = args.eval.split(',').map(str::trim).collect();
    if let Some(bad) = modes
        .iter()
        .find(|m| !matches!(**m, "bpb" | "sample" | "core"))
    {
        return Err(format!(
            "--eval: invalid mode {bad:?}; valid: core, bpb, sample"
        ));
    }
    // The bundle is read before anything runs, so that a missing one is said at once.
    let bundle = if modes.contains(&"core") {
        Some(Bundle::open(&base.join("eval_bundle")).map_err(|e| format!("--eval core: {e}"))?)
    } else {
        None
    };
    let tokenizer = Tokenizer::from_directory(&base.join("tokenizer"))?;
    let checkpoints = base.join("base_checkpoints");
    let tag = match &args.model_tag {
        Some(t) => t.clone(),
        None => default_model_tag(&checkpoints)?,
    };
    let dir = checkpoint_dir(base, &tag);
    let step = match args.step {
        Some(s) => s,
        None => last_step(&dir)?,
    };
    let (model, meta) = load_model(&dir, step)?;
    if model.config.vocab_size != tokenizer.vocab_size() {
        return Err(format!(
            "{}: the model's vocabulary has {} tokens, the tokenizer in {} has {}",
            dir.display(),
            model.config.vocab_size,
            base.join("tokenizer").display(),
            tokenizer.vocab_size()
        ));
    }
    let mut sorted = modes.clone();
    sorted.sort();
    sorted.dedup();
    print0(format!("Evaluating model: base_model (step {})", meta.step));
    print0(format!("Eval modes: {}", sorted.join(", ")));
    let rule = "=".repeat(80);
    if modes.contains(&"sample") {
        print0(format!("\n{rule}\nModel Samples\n{rule}"));
        print0("\nConditioned samples:".into());
        for prompt in SAMPLE_PROMPTS {
            let ids = greedy_sample(&model, &tokenizer, prompt, 16)?;
            print0("-".repeat(80));
            print0(tokenizer.decode(&ids)?);
        }
        print0("\nUnconditioned samples:".into());
        let bos = [tokenizer.bos_token_id()];
        for sample in generate_batch(&model, &tokenizer, &bos, Sampling::UNCONDITIONED)? {
            print0("-".repeat(80));
            print0(tokenizer.decode(&sample)?);
        }
    }
    if modes.contains(&"bpb") {
        print0(format!("\n{rule}\nBPB Evaluation\n{rule}"));
        let t = model.config.sequence_len;
        let tokens_per_step = args.device_batch_size * t;
        if tokens_per_step == 0 {
            return Err("--device-batch-size must be at least 1".into());
        }
        let mut split_tokens = args.split_tokens;
        if !split_tokens.is_multiple_of(tokens_per_step) {
            split_tokens = split_tokens / tokens_per_step * tokens_per_step;
            print0(format!(
                "Adjusted split_tokens to {split_tokens} (must be divisible by {tokens_per_step})"
            ));
        }
        let steps = split_tokens / tokens_per_step;
        let (train, val) = corpus(args.input.as_deref(), base)?;
        let token_bytes = tokenizer.token_bytes();
        for (name, source) in [("train", train), ("val", val)] {
            let mut loader =
                BestFitLoader::new(&tokenizer, source, args.device_batch_size, t, None);
            let mut next = || loader.next_batch().map(|(x, y, _)| (x, y));
            let bpb = evaluate_bpb(
                &model,
                &mut next,
                args.device_batch_size,
                steps,
                &token_bytes,
            )?;
            print0(format!("{name} bpb: {bpb:.6}"));
        }
    }
    if let Some(bundle) = bundle {
        print0(format!("\n{rule}\nCORE Evaluation\n{rule}"));
        let results = evaluate_core(&model, &tokenizer, &bundle, args.max_per_task, print0)?;
        let csv_path = base
            .join("base_eval")
            .join(format!("base_model_{:06}.csv", meta.step));
        if let Some(dir) = csv_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        report::write_atomic(&csv_path, results_csv(&results).as_bytes())
            .map_err(|e| format!("{}: {e}", csv_path.display()))?;
        print0(format!("\nResults written to: {}", csv_path.display()));
        print0(format!("CORE metric: {:.4}", results.core_metric));
    }
    Ok(())
}
