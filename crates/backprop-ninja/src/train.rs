//! Exercise 4: training the hidden-200 net with the manual backward only.

use crate::backward::{d_c, d_emb, d_hpreact, linear_backward};
use crate::fused::{batchnorm_backward, cross_entropy_backward};
use crate::model::{Weights, BLOCK_SIZE, N_EMBD};
use data::makemore::Dataset;
use data::makemore::Vocab;
use report::{LogEvery, Stage};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// The minibatch size (`batch_size = 32`, cell[22]).
pub const BATCH_SIZE: usize = 32;

/// The learning rate of step `i`: `lr = 0.1 if i < 100000 else 0.01` (cell[22]).
pub fn lecture_lr(i: usize) -> f32 {
    autograd::step_decay(i, 0.1, &[(100_000, 0.01)])
}

/// Batch-norm statistics: a batch's, or the training set's after calibration.
#[derive(Clone, Debug)]
pub struct BnStats {
    /// Mean of the pre-activations (1, n_hidden).
    pub mean: Tensor,
    /// Unbiased variance (1, n_hidden).
    pub var: Tensor,
}

/// What the forward pass keeps for backward.
struct Saved {
    embcat: Tensor,
    bnvar_inv: Tensor,
    bnraw: Tensor,
    h: Tensor,
    logits: Tensor,
}

/// The forward pass with batch norm in one expression; `stats = None` uses the
/// batch's own mean and variance (training), `Some` fixed ones (evaluation).
fn forward(w: &Weights, x: &[usize], stats: Option<&BnStats>) -> Saved {
    let n = x.len() / BLOCK_SIZE;
    let emb = w.c.index_rows(x, &[n, BLOCK_SIZE]); // (n, 3, 10)
    let embcat = emb.reshape(&[n, BLOCK_SIZE * N_EMBD]); // (n, 30)
    let hprebn = embcat.matmul(&w.w1).add(&w.b1); // (n, n_hidden)
    let (mean, var) = match stats {
        Some(s) => (s.mean.clone(), s.var.clone()),
        None => (hprebn.mean(0, true), hprebn.var(0, true, true)),
    };
    let bnvar_inv = var.add_scalar(1e-5).powf(-0.5); // (1, n_hidden)
    let bnraw = hprebn.sub(&mean).mul(&bnvar_inv); // (n, n_hidden)
    let hpreact = w.bngain.mul(&bnraw).add(&w.bnbias); // (n, n_hidden)
    let h = hpreact.tanh(); // (n, n_hidden)
    let logits = h.matmul(&w.w2).add(&w.b2); // (n, 27)
    Saved {
        embcat,
        bnvar_inv,
        bnraw,
        h,
        logits,
    }
}

// ANCHOR: manual_train_step
/// One SGD step with the hand-written backward (no tape); returns the batch loss.
pub fn train_step(w: &mut Weights, xb: &[usize], yb: &[usize], lr: f32) -> f32 {
    let s = forward(w, xb, None);
    let loss = s.logits.cross_entropy(yb).item();

    let d_logits = cross_entropy_backward(&s.logits, yb);
    // 2nd layer
    let (d_h, d_w2, d_b2) = linear_backward(&s.h, &w.w2, &d_logits);
    // tanh
    let d_hpreact = d_hpreact(&s.h, &d_h);
    // batch norm
    let d_bngain = s.bnraw.mul(&d_hpreact).sum(0, true);
    let d_bnbias = d_hpreact.sum(0, true);
    let d_hprebn = batchnorm_backward(&w.bngain, &s.bnvar_inv, &s.bnraw, &d_hpreact);
    // 1st layer
    let (d_embcat, d_w1, d_b1) = linear_backward(&s.embcat, &w.w1, &d_hprebn);
    // embedding
    let n = yb.len();
    let d_c = d_c(&w.c, xb, &d_emb(&[n, BLOCK_SIZE, N_EMBD], &d_embcat));

    let update = |p: &mut Tensor, g: &Tensor| *p = p.sub(&g.mul_scalar(lr));
    update(&mut w.c, &d_c);
    update(&mut w.w1, &d_w1);
    update(&mut w.b1, &d_b1);
    update(&mut w.w2, &d_w2);
    update(&mut w.b2, &d_b2);
    update(&mut w.bngain, &d_bngain);
    update(&mut w.bnbias, &d_bnbias);
    loss
}
// ANCHOR_END: manual_train_step

// ANCHOR: train
/// Exercise 4's loop (cell[22]): minibatches of 32 from `g`, the manual step, the
/// learning rate decayed at step 100,000. Returns every step's minibatch loss and
/// the loop's milliseconds per step.
pub fn train(
    w: &mut Weights,
    train: &Dataset,
    g: &mut TorchGenerator,
    steps: usize,
    stage: &mut Stage,
) -> Result<(Vec<f32>, f64), String> {
    stage.start_training("manual backward", steps, LogEvery::Step(100));
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let (xb, yb) = train.minibatch(g, BATCH_SIZE);
        let lr = lecture_lr(i);
        let loss = train_step(w, &xb, &yb, lr);
        stage.observe(i, loss, lr)?;
        losses.push(loss);
    }
    Ok((losses, stage.finish_training()))
}
// ANCHOR_END: train

// ANCHOR: calibrate
/// After training: the mean and unbiased variance of the pre-activations over the
/// whole training set, to use at evaluation instead of a batch's.
pub fn calibrate(w: &Weights, train: &Dataset) -> BnStats {
    let n = train.len();
    let emb = w.c.index_rows(&train.x, &[n, BLOCK_SIZE]); // (N, 3, 10)
    let hpreact = emb
        .reshape(&[n, BLOCK_SIZE * N_EMBD])
        .matmul(&w.w1)
        .add(&w.b1); // (N, n_hidden)
    BnStats {
        mean: hpreact.mean(0, true),
        var: hpreact.var(0, true, true),
    }
}
// ANCHOR_END: calibrate

/// `F.cross_entropy` over a whole split with the calibrated statistics.
pub fn split_loss(w: &Weights, stats: &BnStats, data: &Dataset) -> f32 {
    forward(w, &data.x, Some(stats))
        .logits
        .cross_entropy(&data.y)
        .item()
}

/// `n` names from the calibrated net, drawn from `g` as the notebook samples.
pub fn sample(w: &Weights, stats: &BnStats, g: &mut TorchGenerator, n: usize) -> Vec<String> {
    let vocab = Vocab::new();
    (0..n)
        .map(|_| {
            let mut out = Vec::new();
            let mut context = vec![0; BLOCK_SIZE];
            loop {
                let probs = forward(w, &context, Some(stats)).logits.softmax(1); // (1, 27)
                let ix = g.multinomial(&probs, 1, false)[0] as usize;
                context.remove(0);
                context.push(ix);
                out.push(ix);
                if ix == 0 {
                    break;
                }
            }
            vocab.decode(&out)
        })
        .collect()
}
