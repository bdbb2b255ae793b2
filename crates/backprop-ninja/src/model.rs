//! The network's parameters and their deliberately unusual init.

use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// Symbols: `.` and a–z.
pub const VOCAB_SIZE: usize = 27;
/// Characters of context.
pub const BLOCK_SIZE: usize = 3;
/// Embedding dimensions per character.
pub const N_EMBD: usize = 10;

/// The seven parameter tensors, in the notebook's order.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Embedding table (27, 10).
    pub c: Tensor,
    /// First layer (30, n_hidden).
    pub w1: Tensor,
    /// First-layer bias (n_hidden); batch norm subtracts it right away, it is kept to
    /// check its gradient.
    pub b1: Tensor,
    /// Second layer (n_hidden, 27).
    pub w2: Tensor,
    /// Second-layer bias (27).
    pub b2: Tensor,
    /// Batch-norm gain (1, n_hidden).
    pub bngain: Tensor,
    /// Batch-norm shift (1, n_hidden).
    pub bnbias: Tensor,
}

impl Weights {
    // ANCHOR: init
    /// The notebook's init: `g` for C, W1, b1, W2, b2; `global` (torch's global
    /// generator) for bngain and bnbias.
    pub fn init(n_hidden: usize, g: &mut TorchGenerator, global: &mut TorchGenerator) -> Weights {
        let fan_in = N_EMBD * BLOCK_SIZE;
        // `randn(...) * (5/3)/((n_embd*block_size)**0.5)`: a multiply, then a divide.
        let gain = (5.0f64 / 3.0) as f32;
        let root = (fan_in as f64).sqrt() as f32;
        let c = g.randn(&[VOCAB_SIZE, N_EMBD]);
        let w1 = g
            .randn(&[fan_in, n_hidden])
            .mul_scalar(gain)
            .map(|x| x / root);
        let b1 = g.randn(&[n_hidden]).mul_scalar(0.1);
        let w2 = g.randn(&[n_hidden, VOCAB_SIZE]).mul_scalar(0.1);
        let b2 = g.randn(&[VOCAB_SIZE]).mul_scalar(0.1);
        let bngain = global.randn(&[1, n_hidden]).mul_scalar(0.1).add_scalar(1.0);
        let bnbias = global.randn(&[1, n_hidden]).mul_scalar(0.1);
        Weights {
            c,
            w1,
            b1,
            w2,
            b2,
            bngain,
            bnbias,
        }
    }
    // ANCHOR_END: init

    /// The tensors in the notebook's `parameters` order.
    pub fn tensors(&self) -> [&Tensor; 7] {
        [
            &self.c,
            &self.w1,
            &self.b1,
            &self.w2,
            &self.b2,
            &self.bngain,
            &self.bnbias,
        ]
    }

    /// The number of scalars (4,137 for 64 hidden units, 12,297 for 200).
    pub fn count(&self) -> usize {
        self.tensors().iter().map(|t| t.len()).sum()
    }
}
