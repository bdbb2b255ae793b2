//! nanoGPT's `sample.py` on an out dir of `gpt train`: seed, build the model
//! (its init draws come first, as sample.py builds it after seeding), load the
//! checkpoint's weights, then draw `num_samples` samples of `max_new_tokens`
//! characters each at `temperature` from the `top_k` most likely.

use super::checkpoint::{self, Checkpoint};
use crate::generate::{generate, SampleOptions};
use crate::train::Trainer;
use clap::Args;
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
    let opts = SampleOptions::checked(args.temperature, Some(args.top_k))?;
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
    let mut train = ckpt.config.clone();
    train.train_py.seed = args.seed;
    let mut trainer = Trainer::new(train.config(ckpt.model_args)); // torch.manual_seed(seed); GPT(gptconf)
    ckpt.restore(&mut trainer)
        .map_err(|e| format!("checkpoint {}: {e}", path.display()))?;
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

/// `gpt sample`'s flags: a lecture checkpoint (`--checkpoint`), or sample.py
/// on an out dir of `gpt train` (`--out-dir`).
#[derive(Args)]
#[command(args_override_self = true)]
pub struct SampleCommand {
    /// A checkpoint written by `gpt lecture` (OUT/STAGE.safetensors): the
    /// lecture's sampling, temperature 1.0 and no top-k by default.
    #[arg(long, required_unless_present = "out_dir", conflicts_with = "out_dir")]
    pub checkpoint: Option<PathBuf>,
    /// The out dir of `gpt train`: nanoGPT's sample.py, with its defaults
    /// (10 samples of 500 characters, temperature 0.8, top-k 200).
    #[arg(long, alias = "out")]
    pub out_dir: Option<PathBuf>,
    /// How many characters to generate (--checkpoint; default 500).
    #[arg(long, conflicts_with = "out_dir")]
    pub chars: Option<usize>,
    /// Seed of the sampling generator (nanoGPT's sample.py uses 1337).
    #[arg(long, default_value_t = 1337)]
    pub seed: u64,
    /// Divide the logits by this before sampling.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Sample only from the k most likely characters.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// The prompt, or FILE:path (--out-dir; default a newline).
    #[arg(long, conflicts_with = "checkpoint")]
    pub start: Option<String>,
    /// How many samples (--out-dir; default 10).
    #[arg(long, conflicts_with = "checkpoint")]
    pub num_samples: Option<usize>,
    /// Characters generated in each sample (--out-dir; default 500).
    #[arg(long, conflicts_with = "checkpoint")]
    pub max_new_tokens: Option<usize>,
    /// Only `cpu`: accepted so that nanoGPT's lines can be pasted.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Accepted for nanoGPT's lines; nothing to compile here.
    #[arg(long, default_value = "False", num_args = 0..=1, default_missing_value = "True",
          value_parser = super::configurator::python_bool)]
    pub compile: bool,
}

impl SampleCommand {
    /// Prints the samples: sample.py's, each followed by its dashes, or the
    /// lecture's one continuation of a newline.
    pub fn run(self) -> Result<(), String> {
        report::check_device(&self.device)?;
        if let Some(out_dir) = self.out_dir {
            let defaults = SampleArgs::new(out_dir);
            let sample_py = SampleArgs {
                start: self.start.unwrap_or(defaults.start.clone()),
                num_samples: self.num_samples.unwrap_or(defaults.num_samples),
                max_new_tokens: self.max_new_tokens.unwrap_or(defaults.max_new_tokens),
                temperature: self.temperature.unwrap_or(defaults.temperature),
                top_k: self.top_k.unwrap_or(defaults.top_k),
                seed: self.seed,
                ..defaults
            };
            for text in sample(&sample_py)? {
                println!("{text}");
                println!("---------------");
            }
            return Ok(());
        }
        let path = self
            .checkpoint
            .expect("clap requires --checkpoint or --out-dir");
        let opts = SampleOptions::checked(self.temperature.unwrap_or(1.0), self.top_k)?;
        let (trainer, vocab) = crate::checkpoint::load(&path)?;
        let mut rng = tensor::rng::TorchGenerator::manual_seed(self.seed);
        let chars = self.chars.unwrap_or(500);
        let ids = generate(&trainer.model, &trainer.params, &mut rng, &[0], chars, opts);
        println!("{}", vocab.decode(&ids[1..]));
        Ok(())
    }
}
