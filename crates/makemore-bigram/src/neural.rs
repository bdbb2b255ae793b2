//! The neural bigram: one 27×27 linear layer, softmax, gradient descent.

use autograd::{Graph, ParamId, Params, Sgd, Var};
use data::makemore::VOCAB_SIZE;
use report::{LogEvery, Stage};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// How the current symbol enters the net.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// The lecture: `F.one_hot(xs, 27).float() @ W`.
    OneHot,
    /// Exercise E04: `W[xs]`. The same numbers without the 27-wide one-hot matrix.
    RowIndex,
}

/// Which loss formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossFormula {
    /// The lecture: `counts = logits.exp(); probs = counts / counts.sum(1)`,
    /// then the mean negative log-probability of the targets.
    Lecture,
    /// Exercise E05: `F.cross_entropy(logits, ys)`, which subtracts the row max
    /// before exponentiating and so cannot overflow.
    CrossEntropy,
}

/// The model: its weight matrix in a parameter store.
pub struct NeuralBigram {
    /// The parameters (just `W`).
    pub params: Params,
    /// `W`, (27, 27): row `i` holds the logits of the symbol after symbol `i`.
    pub w: ParamId,
}

/// The regularisation strength of the lecture: `0.01 * (W**2).mean()`.
pub const REGULARIZATION: f32 = 0.01;
/// The lecture's learning rate.
pub const LEARNING_RATE: f32 = 50.0;

impl NeuralBigram {
    /// `W = torch.randn((27, 27), generator=g)`.
    pub fn init(gen: &mut TorchGenerator) -> NeuralBigram {
        let mut params = Params::new();
        let w = params.add("W", gen.randn(&[VOCAB_SIZE, VOCAB_SIZE]));
        NeuralBigram { params, w }
    }

    /// The logits of the next symbol for each input symbol, on `graph`.
    pub fn logits<'g>(&self, graph: &'g Graph, xs: &[usize], encoding: Encoding) -> Var<'g> {
        let w = graph.param(&self.params, self.w);
        logits(w, xs, encoding)
    }

    /// The distribution of the symbol after `ix`, for sampling.
    pub fn next_probs(&self, ix: usize) -> Tensor {
        let graph = Graph::no_grad();
        let counts = self.logits(&graph, &[ix], Encoding::OneHot).exp(); // (1, 27)
        let probs = counts / counts.sum(1, true); // (1, 27)
        probs.value().reshape(&[VOCAB_SIZE])
    }

    // ANCHOR: training_step
    /// One full-batch step: forward, backward, `W.data += -lr * W.grad`.
    /// Returns the loss before the update.
    pub fn train_step(
        &mut self,
        xs: &[usize],
        ys: &[usize],
        encoding: Encoding,
        formula: LossFormula,
        lr: f32,
    ) -> f32 {
        let graph = Graph::new();
        let w = graph.param(&self.params, self.w);
        let loss = loss(w, xs, ys, encoding, formula);
        let grads = loss.backward();
        self.params.zero_grad();
        self.params.accumulate(&grads);
        Sgd::new(lr).step(&mut self.params);
        loss.item()
    }
    // ANCHOR_END: training_step
}

// ANCHOR: forward
/// `logits = xenc @ W` (or `W[xs]`): (N, 27).
pub fn logits<'g>(w: Var<'g>, xs: &[usize], encoding: Encoding) -> Var<'g> {
    match encoding {
        Encoding::OneHot => {
            let xenc = w.graph().constant(Tensor::one_hot(xs, VOCAB_SIZE)); // (N, 27)
            xenc.matmul(w) // (N, 27) @ (27, 27) -> (N, 27)
        }
        Encoding::RowIndex => w.index_rows(xs, &[xs.len()]), // (N, 27)
    }
}
// ANCHOR_END: forward

// ANCHOR: loss
/// The lecture's loss: mean negative log-likelihood of the targets plus `0.01·mean(W²)`.
pub fn loss<'g>(
    w: Var<'g>,
    xs: &[usize],
    ys: &[usize],
    encoding: Encoding,
    formula: LossFormula,
) -> Var<'g> {
    let logits = logits(w, xs, encoding); // (N, 27)
    let data_loss = match formula {
        LossFormula::Lecture => {
            let counts = logits.exp(); // (N, 27), "counts" as in N
            let probs = counts / counts.sum(1, true); // (N, 27), rows sum to 1
            -probs.gather_last(ys).log().mean_all() // probs[arange(N), ys]
        }
        LossFormula::CrossEntropy => logits.cross_entropy(ys),
    };
    data_loss + w.powf(2.0).mean_all() * REGULARIZATION
}
// ANCHOR_END: loss

// ANCHOR: train
/// Trains from `W = randn((27, 27))` for `steps` full-batch updates; returns the
/// model and the loss before each update. Stops on a NaN loss, naming the step.
#[allow(clippy::too_many_arguments)]
pub fn train(
    seed: u64,
    xs: &[usize],
    ys: &[usize],
    steps: usize,
    encoding: Encoding,
    formula: LossFormula,
    stage: &mut Stage,
    label: &str,
) -> Result<(NeuralBigram, Vec<f32>), String> {
    let mut model = NeuralBigram::init(&mut TorchGenerator::manual_seed(seed));
    stage.start_training(label, steps, LogEvery::Step(1));
    let mut losses = Vec::with_capacity(steps);
    for step in 0..steps {
        let loss = model.train_step(xs, ys, encoding, formula, LEARNING_RATE);
        stage.observe(step, loss, LEARNING_RATE)?;
        losses.push(loss);
    }
    stage.finish_training();
    Ok((model, losses))
}
// ANCHOR_END: train
