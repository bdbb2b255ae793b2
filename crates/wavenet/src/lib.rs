//! Lecture 6, "Building makemore Part 5: Building a WaveNet".
//!
//! Lecture 4's MLP squashes its whole context into one hidden layer at once.
//! This lecture widens the context to 8 characters and fuses it slowly, as
//! WaveNet (van den Oord et al. 2016) does: pairs of characters, then pairs of
//! pairs, then pairs of those, each step a `Linear → BatchNorm1d → Tanh` block.
//!
//! The layers come from `batchnorm::nn`: lecture 6 is "a near copy paste of
//! the layers we have developed in Part 3", plus `Embedding`,
//! `FlattenConsecutive`, `Sequential` and batch norm over `(0, 1)` for 3-D
//! input, which live there too so both lectures run, and test, one module library.
//!
//! The final configuration ([`Config::lecture`]): block size 8, `Embedding(27, 24)`,
//! three `FlattenConsecutive(2) → Linear(·, 128, bias=false) → BatchNorm1d(128) → Tanh`
//! stages, then `Linear(128, 27)` with its weight·0.1: **76,579** parameters.
//! Everything is drawn from one generator, `torch.manual_seed(42)`: the layers
//! in creation order, then every minibatch. Targets: step-0 minibatch loss
//! **3.3167155** (PyTorch, same draws; exact); after 200,000 SGD steps (lr 0.1,
//! 0.01 from 150,000) train ≈ **1.7690**, val ≈ **1.9937** (the lecture's cell[13];
//! band ±0.03) and PyTorch's run with the same draws ± 1e-4
//! (`tests/fixtures/make_fixtures.py --full`), evaluated in eval mode with the
//! running statistics; the 20 losses cell[10] prints every 10,000 steps; the 20
//! samples of cell[15]. `--ladder` reruns the lecture's performance log.
//!
//! [`conv_logits`] is the lecture's closing "why convolutions?": the same
//! weights run over every position of a word at once, as a dilated causal
//! convolution, give the logits of all 8 separate forward passes.
#![deny(missing_docs)]

pub mod train;

use autograd::{ForwardPass, Graph, Init, Params, Var};
use batchnorm::nn::{BatchNorm1d, Embedding, FlattenConsecutive, Linear, Module, Sequential, Tanh};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// Vocabulary size.
pub const VOCAB: usize = 27;

/// One row of the lecture's performance log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The row's label.
    pub name: &'static str,
    /// Context length.
    pub block_size: usize,
    /// Embedding size.
    pub n_embd: usize,
    /// Hidden units per layer.
    pub n_hidden: usize,
    /// Three pairwise merges (true) or one flat hidden layer (false).
    pub hierarchical: bool,
    /// Batch norm over axis 0 only for 3-D input: the bug the lecture finds and fixes.
    pub batchnorm_bug: bool,
    /// The lecture's (train, val) for this row (part 5, cell[14]).
    pub lecture: (f64, f64),
}

impl Config {
    /// The lecture's final model.
    pub fn lecture() -> Config {
        Config::LADDER[4]
    }

    /// The performance log, in the lecture's order. The 68 comes from the video.
    pub const LADDER: [Config; 5] = [
        Config {
            name: "original",
            block_size: 3,
            n_embd: 10,
            n_hidden: 200,
            hierarchical: false,
            batchnorm_bug: false,
            lecture: (2.058, 2.105),
        },
        Config {
            name: "context 8, flat",
            block_size: 8,
            n_embd: 10,
            n_hidden: 200,
            hierarchical: false,
            batchnorm_bug: false,
            lecture: (1.918, 2.027),
        },
        Config {
            name: "hierarchical",
            block_size: 8,
            n_embd: 10,
            n_hidden: 68,
            hierarchical: true,
            batchnorm_bug: true,
            lecture: (1.941, 2.029),
        },
        Config {
            name: "batch-norm bug fixed",
            block_size: 8,
            n_embd: 10,
            n_hidden: 68,
            hierarchical: true,
            batchnorm_bug: false,
            lecture: (1.912, 2.022),
        },
        Config {
            name: "scaled up",
            block_size: 8,
            n_embd: 24,
            n_hidden: 128,
            hierarchical: true,
            batchnorm_bug: false,
            lecture: (1.7690284252166748, 1.9936515092849731),
        },
    ];
}

/// The model: its parameters and its layer stack.
pub struct WaveNet {
    /// `model.parameters()`, in layer order.
    pub params: Params,
    /// The layers, `Embedding` first.
    pub model: Sequential,
    /// The configuration it was built from.
    pub config: Config,
}

impl WaveNet {
    // ANCHOR: model
    /// Builds the layers, drawing each weight from `g` in creation order, then
    /// scales the last layer's weight by 0.1 ("make less confident").
    pub fn new(config: Config, g: &mut TorchGenerator) -> WaveNet {
        let Config {
            block_size,
            n_embd,
            n_hidden,
            ..
        } = config;
        let mut params = Params::new();
        let mut init = Init::new(&mut params, g);
        let mut layers: Vec<Box<dyn Module>> = vec![Box::new(Embedding::new(
            &mut init,
            "embedding",
            VOCAB,
            n_embd,
        ))];
        if config.hierarchical {
            let mut fan_in = n_embd * 2;
            for i in 0..3 {
                let linear = Linear::new(&mut init, &format!("linear{i}"), fan_in, n_hidden, false);
                let mut bn = BatchNorm1d::new(&mut init, &format!("bn{i}"), n_hidden);
                bn.batch_axis_only = config.batchnorm_bug;
                layers.push(Box::new(FlattenConsecutive::new(2)));
                layers.push(Box::new(linear));
                layers.push(Box::new(bn));
                layers.push(Box::new(Tanh));
                fan_in = n_hidden * 2;
            }
        } else {
            layers.push(Box::new(FlattenConsecutive::new(block_size)));
            layers.push(Box::new(Linear::new(
                &mut init,
                "linear0",
                n_embd * block_size,
                n_hidden,
                false,
            )));
            layers.push(Box::new(BatchNorm1d::new(&mut init, "bn0", n_hidden)));
            layers.push(Box::new(Tanh));
        }
        let last = Linear::new(&mut init, "out", n_hidden, VOCAB, true);
        let w = init.params.get_mut(last.weight);
        w.value = w.value.mul_scalar(0.1);
        layers.push(Box::new(last));
        WaveNet {
            params,
            model: Sequential::new(layers),
            config,
        }
    }
    // ANCHOR_END: model

    /// The logits `(B, 27)` for contexts `xb`, row-major `(B, block_size)`.
    pub fn forward<'g>(&mut self, graph: &'g Graph, xb: &[usize]) -> Var<'g> {
        let x = graph.constant(indices(xb, self.config.block_size)); // (B, T)
        self.model
            .forward(&ForwardPass::eval(graph, &self.params), x)
    }

    /// Training (batch statistics) or evaluation (running statistics) mode.
    pub fn set_training(&mut self, training: bool) {
        self.model.set_training(training);
    }

    // ANCHOR: shapes
    /// The lecture's walk-through: each layer's name and output shape for contexts `xb`.
    /// Runs in evaluation mode, so the running statistics stay as they are.
    pub fn shapes(&mut self, xb: &[usize]) -> Vec<(&'static str, Vec<usize>)> {
        self.set_training(false);
        let graph = Graph::no_grad();
        let x = graph.constant(indices(xb, self.config.block_size));
        let outs = self
            .model
            .forward_traced(&ForwardPass::eval(&graph, &self.params), x);
        self.set_training(true);
        self.model
            .layers
            .iter()
            .zip(outs)
            .map(|(l, o)| (l.name(), o.shape()))
            .collect()
    }
    // ANCHOR_END: shapes
}

/// Symbol indices as the `f32` tensor `Embedding` reads, `(B, block_size)`.
pub fn indices(xb: &[usize], block_size: usize) -> Tensor {
    Tensor::from_vec(
        xb.iter().map(|&i| i as f32).collect(),
        &[xb.len() / block_size, block_size],
    )
}

// ANCHOR: conv
/// "Why convolutions?": the logits for every position of `sequence` at once.
///
/// The hierarchical model looks at characters in pairs, then pairs of pairs,
/// then pairs of those. Instead of cutting a word into 8 separate contexts,
/// run each stage over *every* position of the whole padded sequence: stage
/// `k` joins position `t` with position `t − 2^k` (a causal convolution with
/// kernel 2 and dilation 1, 2, 4). Each intermediate vector is then computed
/// once and shared by all the contexts that contain it. Position `t` of the
/// result depends on `sequence[t−7..=t]` exactly as the model's forward pass on
/// that context does, so the last `sequence.len() − 7` rows are those logits.
/// Evaluation mode only (batch norm is then a fixed per-channel map).
pub fn conv_logits(net: &WaveNet, sequence: &[usize]) -> Tensor {
    let layers = &net.model.layers;
    let params = &net.params;
    let table = layers[0]
        .as_any()
        .downcast_ref::<Embedding>()
        .expect("Embedding first");
    let mut x = params
        .value(table.weight)
        .index_rows(sequence, &[sequence.len()]); // (L, C)
    let mut dilation = 1;
    let mut k = 1;
    while let Some(flat) = layers[k].as_any().downcast_ref::<FlattenConsecutive>() {
        assert_eq!(
            flat.n, 2,
            "conv_logits: the hierarchical model merges pairs"
        );
        let linear = layers[k + 1]
            .as_any()
            .downcast_ref::<Linear>()
            .expect("Linear");
        let bn = layers[k + 2]
            .as_any()
            .downcast_ref::<BatchNorm1d>()
            .expect("BatchNorm1d");
        let len = x.shape()[0];
        // Join each position with the one `dilation` steps back: (L − d, 2C).
        let pairs = Tensor::concat(
            &[
                &x.narrow(0, 0, len - dilation),
                &x.narrow(0, dilation, len - dilation),
            ],
            1,
        );
        let h = pairs.matmul(params.value(linear.weight)); // (L − d, H)
        let xhat = h
            .sub(&bn.running_mean)
            .div(&bn.running_var.add_scalar(bn.eps).sqrt());
        x = params
            .value(bn.gamma)
            .mul(&xhat)
            .add(params.value(bn.beta))
            .tanh(); // (L − d, H)
        dilation *= 2;
        k += 4;
    }
    let out = layers[k]
        .as_any()
        .downcast_ref::<Linear>()
        .expect("the output Linear");
    let logits = x
        .matmul(params.value(out.weight))
        .add(params.value(out.bias.expect("output bias"))); // (L − 7, 27)
    logits
}
// ANCHOR_END: conv
