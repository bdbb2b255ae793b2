//! The state of makemore.py's main (the split, the model, AdamW, the global
//! generator, the training loader) and what the loop does with it: a step,
//! `evaluate` and `print_samples`. The loop itself is in [`crate::run`].

use crate::data::{create_datasets, Datasets, InputError};
use crate::loader::{eval_batches, InfiniteSampler};
use crate::model::{cross_entropy_ignoring_padding, Model, ModelConfig, ModelType};
use crate::sample::{samples, Sampler, Samples};
use autograd::{AdamW, AdamWConfig, ForwardPass, Graph, Init, Params};
use serde::{Deserialize, Serialize};
use tensor::rng::TorchGenerator;

/// makemore.py's flags that shape the model and its training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// `--type`.
    pub kind: ModelType,
    /// `--n-layer`.
    pub n_layer: usize,
    /// `--n-head`.
    pub n_head: usize,
    /// `--n-embd`.
    pub n_embd: usize,
    /// `--n-embd2`.
    pub n_embd2: usize,
    /// `--batch-size`.
    pub batch_size: usize,
    /// `--learning-rate`.
    pub learning_rate: f64,
    /// `--weight-decay`.
    pub weight_decay: f64,
    /// `--seed`.
    pub seed: u64,
    /// `--top-k`, `None` for -1.
    pub top_k: Option<usize>,
}

impl Default for TrainConfig {
    /// makemore.py's defaults.
    fn default() -> TrainConfig {
        TrainConfig {
            kind: ModelType::Transformer,
            n_layer: 4,
            n_head: 4,
            n_embd: 64,
            n_embd2: 64,
            batch_size: 32,
            learning_rate: 5e-4,
            weight_decay: 0.01,
            seed: 3407,
            top_k: None,
        }
    }
}

/// Everything the loop holds: makemore.py's module-level state.
pub struct Trainer {
    /// The flags.
    pub cfg: TrainConfig,
    /// `ModelConfig` as the dataset determined it.
    pub config: ModelConfig,
    /// The split.
    pub data: Datasets,
    /// The model.
    pub model: Model,
    /// Its parameters, in PyTorch's registration order.
    pub params: Params,
    /// `torch.optim.AdamW(…, betas=(0.9, 0.99), eps=1e-8)`.
    pub opt: AdamW,
    /// PyTorch's global generator (`torch.manual_seed(args.seed)`).
    pub global: TorchGenerator,
    /// The training loader's sampler (`None` until training starts, as the
    /// loader is made after `--sample-only` exits).
    pub sampler: Option<InfiniteSampler>,
    /// Steps taken.
    pub step: usize,
    /// The best test loss so far.
    pub best_loss: Option<f32>,
}

impl Trainer {
    /// makemore.py's set-up up to the optimizer: the seed, the split, the model.
    pub fn new(cfg: TrainConfig, words: Vec<String>) -> Result<Trainer, InputError> {
        let heads_fit = cfg.n_head > 0 && cfg.n_embd.is_multiple_of(cfg.n_head);
        if cfg.kind == ModelType::Transformer && !heads_fit {
            return Err(InputError(format!(
                "--n-embd {} is not a multiple of --n-head {}",
                cfg.n_embd, cfg.n_head
            )));
        }
        let mut global = TorchGenerator::manual_seed(cfg.seed);
        let data = create_datasets(words, &mut global)?;
        let config = ModelConfig {
            block_size: data.train.output_length(),
            vocab_size: data.vocab.size(),
            n_layer: cfg.n_layer,
            n_embd: cfg.n_embd,
            n_embd2: cfg.n_embd2,
            n_head: cfg.n_head,
        };
        let need = estimated_step_bytes(cfg.kind, &config, cfg.batch_size);
        if let Some(have) = report::memory_total_bytes().map(|b| b as f64) {
            if need > have {
                return Err(InputError(format!(
                    "its longest line has {} characters, so a {} step on a batch of {} would need \
                     about {:.1} GiB and this machine has {:.1} GiB; split the long lines, or use a \
                     smaller --batch-size or model",
                    config.block_size - 1,
                    cfg.kind,
                    cfg.batch_size,
                    need / 1073741824.0,
                    have / 1073741824.0
                )));
            }
        }
        let mut params = Params::new();
        let model = {
            let mut init = Init::new(&mut params, &mut global);
            Model::new(cfg.kind, &config, &mut init)
        };
        let opt = AdamW::new(AdamWConfig {
            lr: cfg.learning_rate as f32,
            betas: (0.9, 0.99),
            eps: 1e-8,
            weight_decay: cfg.weight_decay as f32,
        });
        Ok(Trainer {
            cfg,
            config,
            data,
            model,
            params,
            opt,
            global,
            sampler: None,
            step: 0,
            best_loss: None,
        })
    }

    /// `InfiniteDataLoader(train_dataset, …)`: made once, after the optimizer.
    pub fn start_loader(&mut self) {
        if self.sampler.is_none() {
            self.sampler = Some(InfiniteSampler::new(
                self.data.train.len(),
                &mut self.global,
            ));
        }
    }

    /// The transformer's "number of parameters", which leaves out `lm_head`.
    pub fn transformer_params(&self) -> usize {
        self.params
            .iter()
            .filter(|(_, p)| p.name.starts_with("transformer."))
            .map(|(_, p)| p.value.len())
            .sum()
    }

    // ANCHOR: train_step
    /// One step: the next batch, forward, `zero_grad`, backward, AdamW.
    /// Returns the batch's loss.
    pub fn step(&mut self) -> f32 {
        self.start_loader();
        let b = self.cfg.batch_size;
        let sampler = self.sampler.as_mut().expect("started above");
        let indices = sampler.next_batch(b, &mut self.global);
        let (x, y) = self.data.train.batch(&indices); // (B, T) each
        let t = self.config.block_size;
        let loss = {
            let graph = Graph::new();
            let pass = ForwardPass::eval(&graph, &self.params); // no dropout anywhere
            let logits = self.model.forward(&pass, &x, b, t); // (B, T, V)
            let loss = cross_entropy_ignoring_padding(logits, &y); // scalar
            self.params.zero_grad();
            loss.backward_into(&mut self.params);
            loss.item()
        }; // the graph is freed here, before AdamW writes the weights
        self.opt.step(&mut self.params);
        self.step += 1;
        loss
    }
    // ANCHOR_END: train_step

    // ANCHOR: evaluate
    /// `evaluate(model, dataset, batch_size=100, max_batches=10)`: the mean of
    /// 11 shuffled batches' losses. makemore.py takes it in f32
    /// (`torch.tensor(losses).mean()`); this adds in f64 and rounds once, which
    /// can differ from it in the last bit.
    pub fn evaluate(&mut self, test: bool) -> f32 {
        let dataset = if test {
            &self.data.test
        } else {
            &self.data.train
        };
        let batches = eval_batches(dataset.len(), 100, 10, &mut self.global);
        let t = self.config.block_size;
        let losses: Vec<f32> = batches
            .iter()
            .map(|indices| {
                let (x, y) = dataset.batch(indices);
                let graph = Graph::no_grad();
                let pass = ForwardPass::eval(&graph, &self.params);
                let logits = self.model.forward(&pass, &x, indices.len(), t);
                cross_entropy_ignoring_padding(logits, &y).item()
            })
            .collect();
        let sum: f64 = losses.iter().map(|&l| l as f64).sum();
        (sum / losses.len() as f64) as f32
    }
    // ANCHOR_END: evaluate

    /// `print_samples(num)`'s words, from the global generator.
    pub fn samples(&mut self, num: usize) -> Samples {
        let sampler = Sampler {
            model: &self.model,
            params: &self.params,
            config: &self.config,
        };
        samples(
            &sampler,
            num,
            self.cfg.top_k,
            &self.data.vocab,
            &self.data.train,
            &self.data.test,
            &mut self.global,
        )
    }
}

/// Roughly the bytes one training step holds at its peak: the weights with
/// their gradient and AdamW's two moments, and the activations the tape keeps.
pub fn estimated_step_bytes(kind: ModelType, c: &ModelConfig, batch: usize) -> f64 {
    let (b, t, v) = (batch as f64, c.block_size as f64, c.vocab_size as f64);
    let (e, e2, l, nh) = (
        c.n_embd as f64,
        c.n_embd2 as f64,
        c.n_layer as f64,
        c.n_head as f64,
    );
    let (weights, per_position, attention) = match kind {
        ModelType::Bigram => (v * v, 4.0 * v, 0.0),
        ModelType::Mlp => (
            (v + 1.0) * e + t * e * e2 + e2 * v,
            3.0 * t * e + 4.0 * e2 + 4.0 * v,
            0.0,
        ),
        ModelType::Rnn | ModelType::Gru | ModelType::Lstm => (
            v * e + 12.0 * (e + e2) * e2 + e2 * v,
            // each step's narrow keeps a zero-padded (B, T, n_embd) gradient
            t * e + 16.0 * (e + e2) + 4.0 * v,
            0.0,
        ),
        ModelType::Bow => (
            v * e + t * e + 2.0 * e * e2 + e * v,
            10.0 * e + 4.0 * e2 + 4.0 * v,
            t * 4.0,
        ),
        ModelType::Transformer => (
            v * e + t * e + l * 12.0 * e * e + e * v,
            l * 30.0 * e + 4.0 * v,
            l * nh * t * 4.0,
        ),
    };
    4.0 * (4.0 * weights + b * t * (per_position + attention))
}

/// A loss as Python's `repr(float)` prints it: the shortest digits that
/// read back to the same double, with an exponent below 1e-4 or from 1e16.
pub fn python_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let a = x.abs();
    if !(1e-4..1e16).contains(&a) {
        // Rust's {:e} gives the shortest digits too: 1.5e-5 -> Python's 1.5e-05.
        let s = format!("{x:e}");
        let (mantissa, exp) = s.split_once('e').expect("{:e} has an exponent");
        let exp: i32 = exp.parse().expect("an integer exponent");
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let s = format!("{x}");
    if s.contains('.') {
        s
    } else {
        s + ".0"
    }
}

#[cfg(test)]
mod tests {
    use super::python_repr;

    #[test]
    fn repr_matches_python() {
        assert_eq!(python_repr(2.2451934814453125), "2.2451934814453125");
        assert_eq!(python_repr(3.0), "3.0");
        assert_eq!(python_repr(1.5e-5), "1.5e-05");
        assert_eq!(python_repr(0.0005), "0.0005");
        assert_eq!(python_repr(1e16), "1e+16");
    }
}
