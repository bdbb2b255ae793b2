//! Model A: the lecture-3 MLP fixed step by step, ending with one hand-written batch norm.
//!
//! Each [`LossLogRow`] is one row of the lecture's "loss log" (cell[11]); [`LossLogRow::BatchNorm`]
//! is the main run (cell[6], cell[7]): `W1·(5/3)/√30` and no `b1`, `W2·0.01`,
//! `b2·0`, and a batch norm with the **unbiased** standard deviation, **no
//! epsilon**, and running mean and std at momentum 0.001.

use autograd::{Graph, ParamId, Params, Var};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// One row of the lecture's loss log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossLogRow {
    /// Lecture 3's net: plain `randn` for every tensor (11,897 parameters).
    Original,
    /// "fix softmax confidently wrong": `W2·0.01`, `b2·0`.
    FixSoftmax,
    /// "fix tanh layer too saturated at init": also `W1·0.2`, `b1·0.01`.
    FixTanh,
    /// "use semi-principled kaiming init": `W1·(5/3)/√30` instead of `·0.2`.
    Kaiming,
    /// "add batch norm layer": model A (12,097 parameters).
    BatchNorm,
}

impl LossLogRow {
    /// Every row, in the lecture's order.
    pub const ALL: [LossLogRow; 5] = [
        LossLogRow::Original,
        LossLogRow::FixSoftmax,
        LossLogRow::FixTanh,
        LossLogRow::Kaiming,
        LossLogRow::BatchNorm,
    ];

    /// The row's label in the loss log.
    pub fn label(self) -> &'static str {
        match self {
            LossLogRow::Original => "original",
            LossLogRow::FixSoftmax => "fix softmax confidently wrong",
            LossLogRow::FixTanh => "fix tanh layer too saturated at init",
            LossLogRow::Kaiming => "kaiming init instead of hacky init",
            LossLogRow::BatchNorm => "add batch norm layer",
        }
    }

    /// The lecture's printed (train, val) for this row (part 3, cell[11]).
    pub fn lecture_losses(self) -> (f64, f64) {
        match self {
            LossLogRow::Original => (2.1245384216308594, 2.168196439743042),
            LossLogRow::FixSoftmax => (2.07, 2.13),
            LossLogRow::FixTanh => (2.0355966091156006, 2.1026785373687744),
            LossLogRow::Kaiming => (2.0376641750335693, 2.106989622116089),
            LossLogRow::BatchNorm => (2.0668270587921143, 2.104844808578491),
        }
    }
}

/// Embedding size (`n_embd`).
pub const N_EMBD: usize = 10;
/// Hidden units (`n_hidden`).
pub const N_HIDDEN: usize = 200;
/// Context length.
pub const BLOCK_SIZE: usize = 3;
/// Vocabulary size.
pub const VOCAB: usize = 27;

/// The MLP with an optional batch norm, its parameters and its running statistics.
pub struct Mlp {
    /// Every trainable tensor, in the lecture's `parameters` order.
    pub params: Params,
    c: ParamId,
    w1: ParamId,
    b1: Option<ParamId>,
    w2: ParamId,
    b2: ParamId,
    /// `(bngain, bnbias)` when the model has batch norm.
    bn: Option<(ParamId, ParamId)>,
    /// Buffer `bnmean_running`, `(1, n_hidden)`.
    pub bnmean_running: Tensor,
    /// Buffer `bnstd_running`, `(1, n_hidden)`.
    pub bnstd_running: Tensor,
}

impl Mlp {
    // ANCHOR: init
    /// Draws the parameters from `g` in the lecture's order: C, W1, (b1), W2, b2.
    pub fn new(init: LossLogRow, g: &mut TorchGenerator) -> Mlp {
        let fan_in = N_EMBD * BLOCK_SIZE;
        let mut params = Params::new();
        let c = params.add("C", g.randn(&[VOCAB, N_EMBD]));
        let w1 = g.randn(&[fan_in, N_HIDDEN]);
        let w1 = match init {
            LossLogRow::Original | LossLogRow::FixSoftmax => w1,
            LossLogRow::FixTanh => w1.mul_scalar(0.2),
            // `* (5/3) / (30**0.5)`: two roundings, as Python evaluates it left to right.
            LossLogRow::Kaiming | LossLogRow::BatchNorm => {
                let root = (fan_in as f64).sqrt() as f32;
                w1.mul_scalar((5.0f64 / 3.0) as f32).map(|w| w / root)
            }
        };
        let w1 = params.add("W1", w1);
        let b1 = match init {
            LossLogRow::BatchNorm => None, // "useless because of BN"
            LossLogRow::Original | LossLogRow::FixSoftmax => Some(g.randn(&[N_HIDDEN])),
            LossLogRow::FixTanh | LossLogRow::Kaiming => {
                Some(g.randn(&[N_HIDDEN]).mul_scalar(0.01))
            }
        }
        .map(|b| params.add("b1", b));
        let (w2, b2) = (g.randn(&[N_HIDDEN, VOCAB]), g.randn(&[VOCAB]));
        let (w2, b2) = match init {
            LossLogRow::Original => (w2, b2),
            _ => (w2.mul_scalar(0.01), b2.mul_scalar(0.0)),
        };
        let w2 = params.add("W2", w2);
        let b2 = params.add("b2", b2);
        let bn = (init == LossLogRow::BatchNorm).then(|| {
            (
                params.add("bngain", Tensor::ones(&[1, N_HIDDEN])),
                params.add("bnbias", Tensor::zeros(&[1, N_HIDDEN])),
            )
        });
        Mlp {
            params,
            c,
            w1,
            b1,
            w2,
            b2,
            bn,
            bnmean_running: Tensor::zeros(&[1, N_HIDDEN]),
            bnstd_running: Tensor::ones(&[1, N_HIDDEN]),
        }
    }
    // ANCHOR_END: init

    // ANCHOR: forward
    /// The logits for contexts `xb` (row-major `(B, 3)`). In training mode the
    /// batch norm uses the batch's statistics and updates the running ones; in
    /// evaluation mode it uses the running ones (cell[10]).
    pub fn forward<'g>(&mut self, graph: &'g Graph, xb: &[usize], training: bool) -> Var<'g> {
        let b = xb.len() / BLOCK_SIZE;
        let p = |id| graph.param(&self.params, id);
        let emb = p(self.c).index_rows(xb, &[b, BLOCK_SIZE]); // (B, 3, 10)
        let embcat = emb.reshape(&[b, BLOCK_SIZE * N_EMBD]); // (B, 30)
        let mut hpreact = embcat.matmul(p(self.w1)); // (B, 200)
        if let Some(b1) = self.b1 {
            hpreact = hpreact + p(b1);
        }
        if let Some((bngain, bnbias)) = self.bn {
            let (bnmeani, bnstdi) = if training {
                (hpreact.mean(0, true), hpreact.std(0, true, true)) // (1, 200)
            } else {
                (
                    graph.constant(self.bnmean_running.clone()),
                    graph.constant(self.bnstd_running.clone()),
                )
            };
            hpreact = p(bngain) * (hpreact - bnmeani) / bnstdi + p(bnbias); // (B, 200)
            if training {
                self.bnmean_running = self
                    .bnmean_running
                    .mul_scalar(0.999)
                    .add(&bnmeani.value().mul_scalar(0.001));
                self.bnstd_running = self
                    .bnstd_running
                    .mul_scalar(0.999)
                    .add(&bnstdi.value().mul_scalar(0.001));
            }
        }
        let h = hpreact.tanh(); // (B, 200)
        h.matmul(p(self.w2)) + p(self.b2) // (B, 27)
    }
    // ANCHOR_END: forward
}
