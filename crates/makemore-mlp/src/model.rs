//! The MLP: an embedding table, one tanh hidden layer, a linear output layer.

use autograd::{Graph, ParamId, Params, Var};
use data::makemore::Dataset;
use tensor::rng::TorchGenerator;

/// The sizes of the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Symbols in the vocabulary (27: `.` and a–z).
    pub vocab_size: usize,
    /// Characters of context (3).
    pub block_size: usize,
    /// Dimensions of each character's embedding (10).
    pub n_embd: usize,
    /// Units in the tanh layer (200).
    pub n_hidden: usize,
}

impl Default for Config {
    /// The lecture's final configuration.
    fn default() -> Config {
        Config {
            vocab_size: 27,
            block_size: 3,
            n_embd: 10,
            n_hidden: 200,
        }
    }
}

/// The network's parameters, in the lecture's order `[C, W1, b1, W2, b2]`.
pub struct Mlp {
    /// Sizes.
    pub config: Config,
    /// The five tensors; `params.count()` is the lecture's `sum(p.nelement() ...)`.
    pub params: Params,
    /// Embedding table (vocab_size, n_embd).
    pub c: ParamId,
    /// Hidden weights (block_size·n_embd, n_hidden).
    pub w1: ParamId,
    /// Hidden biases (n_hidden).
    pub b1: ParamId,
    /// Output weights (n_hidden, vocab_size).
    pub w2: ParamId,
    /// Output biases (vocab_size).
    pub b2: ParamId,
}

impl Mlp {
    // ANCHOR: init
    /// Draws the parameters from `g` in the notebook's order, all plain `randn`.
    pub fn init(config: Config, g: &mut TorchGenerator) -> Mlp {
        let Config {
            vocab_size,
            block_size,
            n_embd,
            n_hidden,
        } = config;
        let mut params = Params::new();
        let c = params.add("C", g.randn(&[vocab_size, n_embd]));
        let w1 = params.add("W1", g.randn(&[block_size * n_embd, n_hidden]));
        let b1 = params.add("b1", g.randn(&[n_hidden]));
        let w2 = params.add("W2", g.randn(&[n_hidden, vocab_size]));
        let b2 = params.add("b2", g.randn(&[vocab_size]));
        Mlp {
            config,
            params,
            c,
            w1,
            b1,
            w2,
            b2,
        }
    }
    // ANCHOR_END: init

    // ANCHOR: fixed_init
    /// Exercise E02: the same draws, with the output layer scaled so the initial
    /// logits are nearly equal and the first loss is close to `-ln(1/27)`.
    ///
    /// With `randn` weights the logits spread over tens of units, so the net starts
    /// confidently wrong (loss 26). Shrinking `W2` by 100 and zeroing `b2` makes
    /// every logit ≈ 0, i.e. a near-uniform prediction.
    pub fn fix_output_init(&mut self) {
        let w2 = self.params.get_mut(self.w2);
        w2.value = w2.value.mul_scalar(0.01);
        let b2 = self.params.get_mut(self.b2);
        b2.value = b2.value.mul_scalar(0.0);
    }
    // ANCHOR_END: fixed_init

    // ANCHOR: forward
    /// The logits for a batch of contexts `x` (row-major, `block_size` per row).
    pub fn forward<'g>(&self, graph: &'g Graph, x: &[usize]) -> Var<'g> {
        let Config {
            block_size, n_embd, ..
        } = self.config;
        let b = x.len() / block_size;
        let c = graph.param(&self.params, self.c);
        let w1 = graph.param(&self.params, self.w1);
        let b1 = graph.param(&self.params, self.b1);
        let w2 = graph.param(&self.params, self.w2);
        let b2 = graph.param(&self.params, self.b2);
        let emb = c.index_rows(x, &[b, block_size]); // (B, block_size, n_embd)
        let embcat = emb.reshape(&[b, block_size * n_embd]); // (B, block_size·n_embd)
        let h = (embcat.matmul(w1) + b1).tanh(); // (B, n_hidden)
        h.matmul(w2) + b2 // (B, vocab_size)
    }
    // ANCHOR_END: forward

    /// `F.cross_entropy` of the whole dataset in one batch, without a tape: the
    /// lecture's full-split evaluation.
    pub fn loss(&self, data: &Dataset) -> f32 {
        let graph = Graph::no_grad();
        self.forward(&graph, &data.x).cross_entropy(&data.y).item()
    }
}
