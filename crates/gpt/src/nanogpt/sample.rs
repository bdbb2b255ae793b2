//! nanoGPT's `sample.py` on an out dir of `gpt train`: seed, build the model
//! (its init draws come first, as sample.py builds it after seeding), load the
//! checkpoint's weights, then draw `num_samples` samples of `max_new_tokens`
//! characters each at `temperature` from the `top_k` most likely.

use super::checkpoint::{self, Checkpoint};
use super::train::TrainArgs;
use crate::generate::{generate, SampleOptions};
use crate::train::Trainer;
use std::path::PathBuf;

/// sample.py's configuration keys (`gpt sample --out-dir` parses them).
#[derive(Clone, Debug)]
pub struct SampleArgs {
    /// The out dir of `gpt train` (its ckpt.safetensors).
    pub out_dir: PathBuf,
    /// The prompt, or `FILE:path` to read it from a file.
    pub start: String,
    /// How many samples.
    pub num_samples: usize,
    /// Characters generated in each.
    pub max_new_tokens: usize,
    /// Divide the logits by this: < 1 less random, > 1 more.
    pub temperature: f32,
    /// Keep only the k most likely characters.
    pub top_k: usize,
    /// `torch.manual_seed`.
    pub seed: u64,
}

impl SampleArgs {
    /// sample.py's defaults: start "\n", 10 samples of 500 characters,
    /// temperature 0.8, top-k 200, seed 1337.
    pub fn new(out_dir: PathBuf) -> SampleArgs {
        SampleArgs {
            out_dir,
            start: "\n".into(),
            num_samples: 10,
            max_new_tokens: 500,
            temperature: 0.8,
            top_k: 200,
            seed: 1337,
        }
    }
}

/// The prompt: `--start` itself, or the file it names after `FILE:`.
pub fn start_text(start: &str) -> Result<String, String> {
    match start.strip_prefix("FILE:") {
        Some(path) => data::python_text::read(std::path::Path::new(path))
            .map_err(|e| format!("--start FILE:{path}: {e}")),
        None => Ok(start.to_string()),
    }
}

// ANCHOR: sample
/// sample.py: the samples, each the prompt followed by the generated characters.
pub fn sample(args: &SampleArgs) -> Result<Vec<String>, String> {
    if !(args.temperature > 0.0 && args.temperature.is_finite()) {
        return Err(format!(
            "--temperature must be positive, got {}",
            args.temperature
        ));
    }
    if args.top_k == 0 {
        return Err("--top-k must be at least 1".into());
    }
    let path = args.out_dir.join(checkpoint::FILE);
    let ckpt = Checkpoint::load(&path)?;
    let start = start_text(&args.start)?;
    let start_ids = ckpt
        .vocab
        .encode(&start)
        .map_err(|e| format!("--start: {e} of checkpoint {}", path.display()))?;
    if start_ids.is_empty() {
        return Err("--start is empty: give at least one character to start from".into());
    }
    let train = TrainArgs {
        seed: args.seed,
        ..ckpt.config.clone()
    };
    let mut trainer = Trainer::new(train.config(ckpt.model_args)); // torch.manual_seed(seed); GPT(gptconf)
    ckpt.restore(&mut trainer)
        .map_err(|e| format!("checkpoint {}: {e}", path.display()))?;
    let opts = SampleOptions {
        temperature: args.temperature,
        top_k: Some(args.top_k),
    };
    let mut rng = trainer.rng.borrow_mut();
    Ok((0..args.num_samples)
        .map(|_| {
            let ids = generate(
                &trainer.model,
                &trainer.params,
                &mut rng,
                &start_ids,
                args.max_new_tokens,
                opts,
            );
            ckpt.vocab.decode(&ids)
        })
        .collect())
}
// ANCHOR_END: sample
