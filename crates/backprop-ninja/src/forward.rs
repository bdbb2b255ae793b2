//! The forward pass "chunkated" into the notebook's atoms, recorded on the
//! autograd tape so that every intermediate's gradient can serve as the reference.

use crate::model::{Weights, BLOCK_SIZE, N_EMBD};
use autograd::{Graph, Var};
use tensor::Tensor;

/// The value of every intermediate of one forward pass.
#[derive(Clone, Debug)]
pub struct Atoms {
    /// `C[Xb]` (n, 3, 10).
    pub emb: Tensor,
    /// The three embeddings side by side (n, 30).
    pub embcat: Tensor,
    /// `embcat @ W1 + b1` (n, n_hidden).
    pub hprebn: Tensor,
    /// Batch mean (1, n_hidden).
    pub bnmeani: Tensor,
    /// `hprebn - bnmeani` (n, n_hidden).
    pub bndiff: Tensor,
    /// `bndiff**2` (n, n_hidden).
    pub bndiff2: Tensor,
    /// Unbiased batch variance (1, n_hidden).
    pub bnvar: Tensor,
    /// `(bnvar + 1e-5)**-0.5` (1, n_hidden).
    pub bnvar_inv: Tensor,
    /// Normalised pre-activation (n, n_hidden).
    pub bnraw: Tensor,
    /// `bngain * bnraw + bnbias` (n, n_hidden).
    pub hpreact: Tensor,
    /// `tanh(hpreact)` (n, n_hidden).
    pub h: Tensor,
    /// `h @ W2 + b2` (n, 27).
    pub logits: Tensor,
    /// Row maxima (n, 1).
    pub logit_maxes: Tensor,
    /// `logits - logit_maxes` (n, 27).
    pub norm_logits: Tensor,
    /// `exp(norm_logits)` (n, 27).
    pub counts: Tensor,
    /// Row sums (n, 1).
    pub counts_sum: Tensor,
    /// `counts_sum**-1` (n, 1).
    pub counts_sum_inv: Tensor,
    /// Softmax (n, 27).
    pub probs: Tensor,
    /// `log(probs)` (n, 27).
    pub logprobs: Tensor,
    /// `-logprobs[range(n), Yb].mean()`.
    pub loss: f32,
}

/// The gradient of the loss with respect to each of the 26 tensors of exercise 1.
#[derive(Clone, Debug)]
#[allow(missing_docs)]
pub struct AtomGrads {
    pub logprobs: Tensor,
    pub probs: Tensor,
    pub counts_sum_inv: Tensor,
    pub counts_sum: Tensor,
    pub counts: Tensor,
    pub norm_logits: Tensor,
    pub logit_maxes: Tensor,
    pub logits: Tensor,
    pub h: Tensor,
    pub w2: Tensor,
    pub b2: Tensor,
    pub hpreact: Tensor,
    pub bngain: Tensor,
    pub bnbias: Tensor,
    pub bnraw: Tensor,
    pub bnvar_inv: Tensor,
    pub bnvar: Tensor,
    pub bndiff2: Tensor,
    pub bndiff: Tensor,
    pub bnmeani: Tensor,
    pub hprebn: Tensor,
    pub embcat: Tensor,
    pub w1: Tensor,
    pub b1: Tensor,
    pub emb: Tensor,
    pub c: Tensor,
}

impl AtomGrads {
    /// The 26 gradients with the notebook's names, in the order its `cmp` lines print.
    pub fn named(&self) -> [(&'static str, &Tensor); 26] {
        [
            ("logprobs", &self.logprobs),
            ("probs", &self.probs),
            ("counts_sum_inv", &self.counts_sum_inv),
            ("counts_sum", &self.counts_sum),
            ("counts", &self.counts),
            ("norm_logits", &self.norm_logits),
            ("logit_maxes", &self.logit_maxes),
            ("logits", &self.logits),
            ("h", &self.h),
            ("W2", &self.w2),
            ("b2", &self.b2),
            ("hpreact", &self.hpreact),
            ("bngain", &self.bngain),
            ("bnbias", &self.bnbias),
            ("bnraw", &self.bnraw),
            ("bnvar_inv", &self.bnvar_inv),
            ("bnvar", &self.bnvar),
            ("bndiff2", &self.bndiff2),
            ("bndiff", &self.bndiff),
            ("bnmeani", &self.bnmeani),
            ("hprebn", &self.hprebn),
            ("embcat", &self.embcat),
            ("W1", &self.w1),
            ("b1", &self.b1),
            ("emb", &self.emb),
            ("C", &self.c),
        ]
    }
}

// ANCHOR: forward
/// Runs the chunkated forward pass on a batch (`xb` row-major, 3 per row) and
/// backpropagates with autograd, keeping every intermediate's gradient
/// (the notebook's `retain_grad()` on each atom, then `loss.backward()`).
pub fn forward_with_autograd(w: &Weights, xb: &[usize], yb: &[usize]) -> (Atoms, AtomGrads) {
    let n = yb.len();
    let graph = Graph::new();
    let leaf = |t: &Tensor| graph.leaf(t.clone());
    let (c, w1, b1, w2, b2) = (
        leaf(&w.c),
        leaf(&w.w1),
        leaf(&w.b1),
        leaf(&w.w2),
        leaf(&w.b2),
    );
    let (bngain, bnbias) = (leaf(&w.bngain), leaf(&w.bnbias));
    fn keep(v: Var<'_>) -> Var<'_> {
        v.retain_grad()
    }

    let emb = keep(c.index_rows(xb, &[n, BLOCK_SIZE])); // (n, 3, 10)
    let embcat = keep(emb.reshape(&[n, BLOCK_SIZE * N_EMBD])); // (n, 30)
                                                               // Linear layer 1
    let hprebn = keep(embcat.matmul(w1) + b1); // (n, n_hidden)
                                               // BatchNorm layer
    let bnmeani = keep(hprebn.sum(0, true).mul_scalar(1.0 / n as f32)); // (1, n_hidden)
    let bndiff = keep(hprebn - bnmeani); // (n, n_hidden)
    let bndiff2 = keep(bndiff.powf(2.0)); // (n, n_hidden)
                                          // Bessel's correction: divide by n-1, not n.
    let bnvar = keep(bndiff2.sum(0, true).mul_scalar(1.0 / (n - 1) as f32)); // (1, n_hidden)
    let bnvar_inv = keep(bnvar.add_scalar(1e-5).powf(-0.5)); // (1, n_hidden)
    let bnraw = keep(bndiff * bnvar_inv); // (n, n_hidden)
    let hpreact = keep(bngain * bnraw + bnbias); // (n, n_hidden)
                                                 // Non-linearity
    let h = keep(hpreact.tanh()); // (n, n_hidden)
                                  // Linear layer 2
    let logits = keep(h.matmul(w2) + b2); // (n, 27)
                                          // Cross-entropy, written out
    let logit_maxes = keep(logits.max(1, true)); // (n, 1)
    let norm_logits = keep(logits - logit_maxes); // (n, 27), max subtracted for stability
    let counts = keep(norm_logits.exp()); // (n, 27)
    let counts_sum = keep(counts.sum(1, true)); // (n, 1)
    let counts_sum_inv = keep(counts_sum.powf(-1.0)); // (n, 1)
    let probs = keep(counts * counts_sum_inv); // (n, 27)
    let logprobs = keep(probs.log()); // (n, 27)
    let loss = -logprobs.gather_last(yb).mean_all(); // ()
                                                     // ANCHOR_END: forward

    let grads = loss.backward();
    let g = |v: Var<'_>| {
        grads
            .of(v)
            .expect("every atom retains its gradient")
            .clone()
    };
    let atoms = Atoms {
        emb: emb.value(),
        embcat: embcat.value(),
        hprebn: hprebn.value(),
        bnmeani: bnmeani.value(),
        bndiff: bndiff.value(),
        bndiff2: bndiff2.value(),
        bnvar: bnvar.value(),
        bnvar_inv: bnvar_inv.value(),
        bnraw: bnraw.value(),
        hpreact: hpreact.value(),
        h: h.value(),
        logits: logits.value(),
        logit_maxes: logit_maxes.value(),
        norm_logits: norm_logits.value(),
        counts: counts.value(),
        counts_sum: counts_sum.value(),
        counts_sum_inv: counts_sum_inv.value(),
        probs: probs.value(),
        logprobs: logprobs.value(),
        loss: loss.item(),
    };
    let reference = AtomGrads {
        logprobs: g(logprobs),
        probs: g(probs),
        counts_sum_inv: g(counts_sum_inv),
        counts_sum: g(counts_sum),
        counts: g(counts),
        norm_logits: g(norm_logits),
        logit_maxes: g(logit_maxes),
        logits: g(logits),
        h: g(h),
        w2: g(w2),
        b2: g(b2),
        hpreact: g(hpreact),
        bngain: g(bngain),
        bnbias: g(bnbias),
        bnraw: g(bnraw),
        bnvar_inv: g(bnvar_inv),
        bnvar: g(bnvar),
        bndiff2: g(bndiff2),
        bndiff: g(bndiff),
        bnmeani: g(bnmeani),
        hprebn: g(hprebn),
        embcat: g(embcat),
        w1: g(w1),
        b1: g(b1),
        emb: g(emb),
        c: g(c),
    };
    (atoms, reference)
}
