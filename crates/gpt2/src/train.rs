//! build-nanogpt's training loop, as the video grows it. So far, its first two
//! stages on the model of those commits (PyTorch's default init, untied head,
//! 163,037,184 parameters, from `torch.manual_seed(1337)`):
//!
//! - `overfit-batch` (7822fce, "little loop crushes a little batch"): one
//!   batch of 4×32 tokens and AdamW at lr 3e-4 for 50 steps; the loss falls
//!   towards zero as the model memorizes it;
//! - `dataloader` (631f7d6, "add a DataLoaderLite"): the same loop, each step
//!   on the next 4×32 tokens of tiny Shakespeare.
//!
//! Both are checked against PyTorch running the commits' code on CPU
//! (`tests/fixtures/train_stages.py`).

use crate::model::{Gpt, GptConfig, InitScheme};
use autograd::{AdamW, AdamWConfig, ForwardPass, Graph, Init, Params};
use bpe::{AllowedSpecial, Gpt2Tokenizer};
use report::{LogEvery, Stage};
use tensor::rng::TorchGenerator;

/// Sequences per batch at these commits.
pub const B: usize = 4;
/// Tokens per sequence at these commits.
pub const T: usize = 32;

/// A stage of the video's training loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TrainStage {
    /// 7822fce: one batch, over and over.
    OverfitBatch,
    /// 631f7d6: DataLoaderLite over tiny Shakespeare.
    Dataloader,
}

// ANCHOR: data_loader_lite
/// `DataLoaderLite` (631f7d6): the tokens in order, `B·T` at a time, back to
/// the start when the next batch would run past the end.
pub struct DataLoaderLite {
    tokens: Vec<usize>,
    b: usize,
    t: usize,
    current_position: usize,
}

impl DataLoaderLite {
    /// A loader over `tokens`, which must hold at least one batch and its last target.
    pub fn new(tokens: Vec<usize>, b: usize, t: usize) -> Result<DataLoaderLite, String> {
        if tokens.len() < b * t + 1 {
            return Err(format!(
                "{} tokens cannot fill a batch of {b}×{t} and its targets",
                tokens.len()
            ));
        }
        Ok(DataLoaderLite {
            tokens,
            b,
            t,
            current_position: 0,
        })
    }

    /// The next `(x, y)`, each `(B, T)`, `y` shifted one token ahead.
    pub fn next_batch(&mut self) -> (Vec<usize>, Vec<usize>) {
        let n = self.b * self.t;
        let buf = &self.tokens[self.current_position..self.current_position + n + 1];
        let (x, y) = (buf[..n].to_vec(), buf[1..].to_vec());
        self.current_position += n;
        if self.current_position + n + 1 > self.tokens.len() {
            self.current_position = 0;
        }
        (x, y)
    }
}
// ANCHOR_END: data_loader_lite

// ANCHOR: train_step
/// One step: `optimizer.zero_grad()`, the loss, `loss.backward()`,
/// `optimizer.step()`. Returns the loss.
pub fn train_step(
    model: &Gpt,
    params: &mut Params,
    optimizer: &mut AdamW,
    (x, y): (&[usize], &[usize]),
    (b, t): (usize, usize),
) -> f32 {
    let graph = Graph::new();
    let loss = model.loss(&ForwardPass::eval(&graph, params), x, y, b, t); // scalar
    params.zero_grad();
    loss.backward_into(params);
    optimizer.step(params);
    loss.item()
}
// ANCHOR_END: train_step

/// Tiny Shakespeare's GPT-2 tokens.
pub fn shakespeare_tokens(chars: Option<usize>) -> Result<Vec<usize>, String> {
    let path = data::path("tinyshakespeare.txt").map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text: String = match chars {
        Some(n) => text.chars().take(n).collect(),
        None => text,
    };
    let tok = Gpt2Tokenizer::from_data_dir()
        .map_err(|e| e.to_string())?
        .into_inner();
    let ids = tok
        .encode(&text, &AllowedSpecial::NoneRaise)
        .map_err(|e| e.to_string())?;
    Ok(ids.into_iter().map(|i| i as usize).collect())
}

// ANCHOR: train
/// Runs `stage` for `steps` steps from `torch.manual_seed(1337)`, reporting
/// each loss to `report`; returns the losses.
pub fn train(stage: TrainStage, steps: usize, report: &mut Stage) -> Result<Vec<f32>, String> {
    let mut batches: Box<dyn FnMut() -> (Vec<usize>, Vec<usize>)> = match stage {
        TrainStage::OverfitBatch => {
            // The first B·T+1 tokens of the first 1,000 characters (92b5bf9).
            let tokens = shakespeare_tokens(Some(1000))?;
            let buf = tokens
                .get(..B * T + 1)
                .ok_or("tiny Shakespeare's first 1,000 characters are too short")?
                .to_vec();
            Box::new(move || (buf[..B * T].to_vec(), buf[1..].to_vec()))
        }
        TrainStage::Dataloader => {
            let mut loader = DataLoaderLite::new(shakespeare_tokens(None)?, B, T)?;
            Box::new(move || loader.next_batch())
        }
    };
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(1337);
    let config = GptConfig::preset("gpt2")?;
    let model = Gpt::new(
        &mut Init::new(&mut params, &mut rng),
        config,
        InitScheme::PyTorchDefaultUntied,
    );
    // torch.optim.AdamW(model.parameters(), lr=3e-4): β (0.9, 0.999), eps 1e-8, weight decay 0.01.
    let mut optimizer = AdamW::new(AdamWConfig {
        lr: 3e-4,
        ..AdamWConfig::default()
    });
    report.start_training(&format!("{stage:?}"), steps, LogEvery::Step(1));
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let (x, y) = batches();
        let loss = train_step(&model, &mut params, &mut optimizer, (&x, &y), (B, T));
        report.observe(i, loss, 3e-4f32)?;
        losses.push(loss);
    }
    report.finish_training();
    Ok(losses)
}
// ANCHOR_END: train
