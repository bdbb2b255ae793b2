//! min-char-rnn.py: "Minimal character-level Vanilla RNN model. Written by
//! Andrej Karpathy (@karpathy)", gist d4dee566867f8291f086, in float64.
//!
//! The gist reads top to bottom as: data I/O, hyperparameters, the model's
//! parameters, `lossFun` (the forward pass over 25 characters, then the
//! backward pass through time), `sample`, and the loop with Adagrad. This file
//! keeps that order and those names (`wxh` is `Wxh`, `dhnext` is `dhnext`).
//!
//! Vectors are the gist's column vectors (`(hidden_size, 1)` arrays) stored as
//! slices; matrices are row-major, as numpy's C order.
//!
//! What follows numpy to the bit, and what cannot:
//! - `np.exp`, `np.tanh`, `np.log` and `np.sqrt` are the C library's when
//!   numpy's SIMD dispatch is off, and so are Rust's `f64` methods;
//! - `np.sum` over the 65 (or any) probabilities is numpy's pairwise sum, done
//!   here in the same order ([`pairwise_sum`]);
//! - a product with a one-hot vector or an outer product is exact either way;
//! - the four matrix-vector products (`np.dot(Whh, h)`, `np.dot(Why, h)`,
//!   `np.dot(Why.T, dy)`, `np.dot(Whh.T, dhraw)`) are BLAS's `dgemv`, added
//!   here in the order of OpenBLAS's AVX2 kernels ([`crate::blas`]).

use crate::blas::{matvec, matvec_transposed};
use pyrandom::numpy::RandomState;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The gist's hyperparameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Hyperparameters {
    /// Size of the hidden layer of neurons (the gist's 100).
    pub hidden_size: usize,
    /// Number of steps to unroll the RNN for (the gist's 25).
    pub seq_length: usize,
    /// Adagrad's learning rate (the gist's 1e-1).
    pub learning_rate: f64,
}

impl Default for Hyperparameters {
    fn default() -> Self {
        Hyperparameters {
            hidden_size: 100,
            seq_length: 25,
            learning_rate: 1e-1,
        }
    }
}

/// The text as the gist reads it: `open(path, 'r').read()` decodes UTF-8 and
/// turns `\r\n` and lone `\r` into `\n` (Python's universal newlines); the
/// vocabulary is `sorted(set(data))`, by code point.
#[derive(Clone, Debug)]
pub struct Text {
    /// Where it came from, for errors: the file's path.
    pub name: String,
    /// The text as character ids.
    pub ids: Vec<usize>,
    /// `ix_to_char`.
    pub chars: Vec<char>,
}

impl Text {
    /// Reads `path` as the gist does; an unreadable or non-UTF-8 file is an
    /// error naming it.
    pub fn read(path: &Path) -> Result<Text, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{}: not UTF-8 text (invalid byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        Ok(Text::new(&path.display().to_string(), &text))
    }

    /// The gist's data I/O on a string already read, named `name` for errors.
    pub fn new(name: &str, text: &str) -> Text {
        let data: Vec<char> = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .collect();
        let char_to_ix: BTreeMap<char, usize> = {
            let mut set: Vec<char> = data.clone();
            set.sort_unstable();
            set.dedup();
            set.into_iter().enumerate().map(|(i, c)| (c, i)).collect()
        };
        Text {
            name: name.to_string(),
            ids: data.iter().map(|c| char_to_ix[c]).collect(),
            chars: char_to_ix.into_keys().collect(),
        }
    }

    /// `vocab_size`.
    pub fn vocab_size(&self) -> usize {
        self.chars.len()
    }
}

/// The model parameters, and (with the same shapes) their gradients and
/// Adagrad's memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Input to hidden, `(hidden_size, vocab_size)`.
    pub wxh: Vec<f64>,
    /// Hidden to hidden, `(hidden_size, hidden_size)`.
    pub whh: Vec<f64>,
    /// Hidden to output, `(vocab_size, hidden_size)`.
    pub why: Vec<f64>,
    /// Hidden bias, `(hidden_size, 1)`.
    pub bh: Vec<f64>,
    /// Output bias, `(vocab_size, 1)`.
    pub by: Vec<f64>,
}

impl Params {
    /// `np.zeros_like` of every parameter.
    pub fn zeros(hidden_size: usize, vocab_size: usize) -> Params {
        Params {
            wxh: vec![0.0; hidden_size * vocab_size],
            whh: vec![0.0; hidden_size * hidden_size],
            why: vec![0.0; vocab_size * hidden_size],
            bh: vec![0.0; hidden_size],
            by: vec![0.0; vocab_size],
        }
    }

    /// The gist's initialisation: each matrix `np.random.randn(...) * 0.01`, in
    /// the order `Wxh`, `Whh`, `Why`; the biases zero.
    pub fn init(hidden_size: usize, vocab_size: usize, rng: &mut RandomState) -> Params {
        let mut draw =
            |n: usize| -> Vec<f64> { rng.randn(n).into_iter().map(|x| x * 0.01).collect() };
        let wxh = draw(hidden_size * vocab_size);
        let whh = draw(hidden_size * hidden_size);
        let why = draw(vocab_size * hidden_size);
        Params {
            wxh,
            whh,
            why,
            bh: vec![0.0; hidden_size],
            by: vec![0.0; vocab_size],
        }
    }

    fn hidden_size(&self) -> usize {
        self.bh.len()
    }

    fn vocab_size(&self) -> usize {
        self.by.len()
    }

    /// The five arrays in the gist's order, for the loops over all of them.
    fn arrays_mut(&mut self) -> [&mut Vec<f64>; 5] {
        [
            &mut self.wxh,
            &mut self.whh,
            &mut self.why,
            &mut self.bh,
            &mut self.by,
        ]
    }
}

/// `acc += np.dot(u, v.T)`: the outer product added into a row-major matrix.
fn add_outer(acc: &mut [f64], u: &[f64], v: &[f64]) {
    for (row, &ui) in acc.chunks_exact_mut(v.len()).zip(u) {
        row.iter_mut().zip(v).for_each(|(a, &vj)| *a += ui * vj);
    }
}

/// numpy's `np.sum` of a contiguous float64 array: eight running sums over
/// blocks of up to 128, halves above that (`DOUBLE_pairwise_sum` in numpy's
/// `loops_utils.h.src`), added to the reduction's identity 0.
pub fn pairwise_sum(a: &[f64]) -> f64 {
    fn block(a: &[f64]) -> f64 {
        let n = a.len();
        if n < 8 {
            return a.iter().fold(0.0, |s, x| s + x);
        }
        if n <= 128 {
            let mut r = [0.0; 8];
            r.copy_from_slice(&a[..8]);
            let whole = n - n % 8;
            for chunk in a[8..whole].chunks_exact(8) {
                r.iter_mut().zip(chunk).for_each(|(r, x)| *r += x);
            }
            let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            return a[whole..].iter().fold(res, |s, x| s + x);
        }
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        block(&a[..n2]) + block(&a[n2..])
    }
    0.0 + block(a)
}

// ANCHOR: min_step
/// One step of the RNN: `h = tanh(Wxh x + Whh h + bh)`, `y = Why h + by`, and
/// `p = exp(y) / sum(exp(y))`, with `x` the one-hot vector of character `ix`.
fn step(params: &Params, ix: usize, h_prev: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let vocab_size = params.vocab_size();
    let whh_h = matvec(&params.whh, h_prev);
    let h: Vec<f64> = (0..params.hidden_size())
        .map(|i| (params.wxh[i * vocab_size + ix] + whh_h[i] + params.bh[i]).tanh())
        .collect();
    let y: Vec<f64> = matvec(&params.why, &h)
        .iter()
        .zip(&params.by)
        .map(|(y, b)| y + b)
        .collect();
    let exp_y: Vec<f64> = y.iter().map(|v| v.exp()).collect();
    let total = pairwise_sum(&exp_y);
    let p = exp_y.iter().map(|e| e / total).collect();
    (h, p)
}
// ANCHOR_END: min_step

/// What `lossFun` returns: the loss summed over the sequence, the clipped
/// gradients, and the last hidden state.
#[derive(Clone, Debug)]
pub struct LossAndGrads {
    /// `-log p(target)` summed over the sequence.
    pub loss: f64,
    /// `dWxh, dWhh, dWhy, dbh, dby`, each clipped to [-5, 5].
    pub grads: Params,
    /// `hs[len(inputs)-1]`.
    pub h_last: Vec<f64>,
}

/// The gist's `lossFun(inputs, targets, hprev)`: forward through the sequence,
/// then backpropagation through time.
pub fn loss_fun(
    params: &Params,
    inputs: &[usize],
    targets: &[usize],
    hprev: &[f64],
) -> LossAndGrads {
    // ANCHOR: min_forward
    let mut hs: Vec<Vec<f64>> = vec![hprev.to_vec()]; // hs[t + 1] is the gist's hs[t]
    let mut ps: Vec<Vec<f64>> = Vec::with_capacity(inputs.len());
    let mut loss = 0.0;
    for (t, (&ix, &target)) in inputs.iter().zip(targets).enumerate() {
        let (h, p) = step(params, ix, &hs[t]);
        loss += -p[target].ln(); // softmax (cross-entropy loss)
        hs.push(h);
        ps.push(p);
    }
    // ANCHOR_END: min_forward
    // ANCHOR: min_backward
    let (hidden_size, vocab_size) = (params.hidden_size(), params.vocab_size());
    let mut grads = Params::zeros(hidden_size, vocab_size);
    let mut dhnext = vec![0.0; hidden_size];
    for t in (0..inputs.len()).rev() {
        let mut dy = ps[t].clone();
        dy[targets[t]] -= 1.0; // backprop into y
        add_outer(&mut grads.why, &dy, &hs[t + 1]);
        grads.by.iter_mut().zip(&dy).for_each(|(g, d)| *g += d);
        let dh: Vec<f64> = matvec_transposed(&params.why, &dy, hidden_size)
            .iter()
            .zip(&dhnext)
            .map(|(a, b)| a + b)
            .collect(); // backprop into h
        let dhraw: Vec<f64> = hs[t + 1]
            .iter()
            .zip(&dh)
            .map(|(h, d)| (1.0 - h * h) * d)
            .collect(); // through tanh
        grads.bh.iter_mut().zip(&dhraw).for_each(|(g, d)| *g += d);
        for (i, d) in dhraw.iter().enumerate() {
            grads.wxh[i * vocab_size + inputs[t]] += d; // np.dot(dhraw, xs[t].T), x one-hot
        }
        add_outer(&mut grads.whh, &dhraw, &hs[t]);
        dhnext = matvec_transposed(&params.whh, &dhraw, hidden_size);
    }
    for dparam in grads.arrays_mut() {
        dparam.iter_mut().for_each(|g| *g = g.clamp(-5.0, 5.0)); // mitigate exploding gradients
    }
    // ANCHOR_END: min_backward
    LossAndGrads {
        loss,
        grads,
        h_last: hs.pop().expect("at least the initial state"),
    }
}

// ANCHOR: min_sample
/// The gist's `sample(h, seed_ix, n)`: `n` character ids drawn one at a time,
/// each fed back in, from hidden state `h` and the seed character `seed_ix`.
pub fn sample(
    params: &Params,
    h: &[f64],
    seed_ix: usize,
    n: usize,
    rng: &mut RandomState,
) -> Vec<usize> {
    let mut h = h.to_vec();
    let mut ix = seed_ix;
    let mut ixes = Vec::with_capacity(n);
    for _ in 0..n {
        let (h_next, p) = step(params, ix, &h);
        h = h_next;
        ix = rng.choice(&p).expect("softmax probabilities sum to 1");
        ixes.push(ix);
    }
    ixes
}
// ANCHOR_END: min_sample

// ANCHOR: adagrad
/// Adagrad, as the gist writes it: `mem += dparam * dparam`, then
/// `param += -learning_rate * dparam / np.sqrt(mem + 1e-8)`.
pub fn adagrad_update(
    params: &mut Params,
    grads: &mut Params,
    mem: &mut Params,
    learning_rate: f64,
) {
    for ((param, dparam), mem) in params
        .arrays_mut()
        .into_iter()
        .zip(grads.arrays_mut())
        .zip(mem.arrays_mut())
    {
        for ((p, d), m) in param.iter_mut().zip(dparam.iter()).zip(mem.iter_mut()) {
            *m += d * d;
            *p += -learning_rate * d / (*m + 1e-8).sqrt();
        }
    }
}
// ANCHOR_END: adagrad

/// One iteration's losses, as the loop sees them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Iteration {
    /// The iteration counter `n`.
    pub n: usize,
    /// `lossFun`'s loss for this iteration's 25 characters.
    pub loss: f64,
    /// `smooth_loss * 0.999 + loss * 0.001`.
    pub smooth_loss: f64,
}

/// The gist's main loop: `max_iters` iterations (`None`: forever, as the gist),
/// with its lines written to `out` and every iteration passed to `on_iteration`.
/// Returns the trained parameters.
pub fn train(
    text: &Text,
    hp: &Hyperparameters,
    seed: u32,
    max_iters: Option<usize>,
    out: &mut dyn Write,
    mut on_iteration: impl FnMut(Iteration),
) -> Result<Params, String> {
    let (data, seq_length) = (&text.ids, hp.seq_length);
    if seq_length == 0 || hp.hidden_size == 0 {
        return Err("the hidden size and the sequence length must be at least 1".into());
    }
    if data.len() < seq_length + 1 {
        return Err(format!(
            "{}: the text has {} characters; one sequence of {seq_length} needs {}",
            text.name,
            data.len(),
            seq_length + 1
        ));
    }
    let write_err = |e: std::io::Error| format!("writing the output: {e}");
    let vocab_size = text.vocab_size();
    writeln!(
        out,
        "data has {} characters, {vocab_size} unique.",
        data.len()
    )
    .map_err(write_err)?;

    let mut rng = RandomState::seed(seed);
    let mut params = Params::init(hp.hidden_size, vocab_size, &mut rng);
    let mut mem = Params::zeros(hp.hidden_size, vocab_size); // memory variables for Adagrad
    let mut smooth_loss = -(1.0 / vocab_size as f64).ln() * seq_length as f64; // loss at iteration 0
    let mut hprev = vec![0.0; hp.hidden_size];
    let mut p = 0;
    let mut n = 0;
    while max_iters.is_none_or(|m| n < m) {
        // Sweep from left to right in steps seq_length long.
        if p + seq_length + 1 >= data.len() || n == 0 {
            hprev = vec![0.0; hp.hidden_size]; // reset RNN memory
            p = 0; // go from start of data
        }
        let inputs = &data[p..p + seq_length];
        let targets = &data[p + 1..p + seq_length + 1];

        if n % 100 == 0 {
            let sample_ix = sample(&params, &hprev, inputs[0], 200, &mut rng);
            let txt: String = sample_ix.iter().map(|&ix| text.chars[ix]).collect();
            writeln!(out, "----\n {txt} \n----").map_err(write_err)?;
        }

        let LossAndGrads {
            loss,
            mut grads,
            h_last,
        } = loss_fun(&params, inputs, targets, &hprev);
        hprev = h_last;
        smooth_loss = smooth_loss * 0.999 + loss * 0.001;
        if n % 100 == 0 {
            writeln!(out, "iter {n}, loss: {smooth_loss:.6}").map_err(write_err)?;
        }
        if !loss.is_finite() {
            return Err(format!("the loss is {loss} at iteration {n}"));
        }
        on_iteration(Iteration {
            n,
            loss,
            smooth_loss,
        });

        adagrad_update(&mut params, &mut grads, &mut mem, hp.learning_rate);
        p += seq_length; // move data pointer
        n += 1;
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gradient of `lossFun` against central differences of its loss, on a
    /// tiny model, in the weights the clip does not touch.
    #[test]
    fn loss_fun_gradients_match_finite_differences() {
        let text = Text::new("test", "hello world, hello rnn");
        let mut rng = RandomState::seed(3);
        let mut params = Params::init(8, text.vocab_size(), &mut rng);
        params.wxh.iter_mut().for_each(|w| *w *= 50.0); // away from the linear regime
        params.whh.iter_mut().for_each(|w| *w *= 50.0);
        params.why.iter_mut().for_each(|w| *w *= 50.0);
        let hprev: Vec<f64> = (0..8).map(|i| 0.1 * i as f64 - 0.3).collect();
        let (inputs, targets) = (&text.ids[..6], &text.ids[1..7]);
        let analytic = loss_fun(&params, inputs, targets, &hprev).grads;
        let eps = 1e-5;
        let mut worst: f64 = 0.0;
        for which in 0..5 {
            let len = params.clone().arrays_mut()[which].len();
            for k in 0..len {
                let at = |delta: f64| {
                    let mut p = params.clone();
                    p.arrays_mut()[which][k] += delta;
                    loss_fun(&p, inputs, targets, &hprev).loss
                };
                let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
                let mut a = analytic.clone();
                let g = a.arrays_mut()[which][k];
                assert!(g.abs() < 5.0, "the test's model should not clip");
                worst = worst.max((g - numeric).abs() / (1e-8 + g.abs() + numeric.abs()));
            }
        }
        assert!(worst < 1e-6, "largest relative error {worst:e}");
    }

    #[test]
    fn pairwise_sum_orders_as_numpy() {
        // 1e16 + 1 + … : the order decides which ones survive. With 17 terms
        // numpy sums r[0..8] over two blocks of 8, then adds the 17th.
        let mut a = vec![1.0; 17];
        a[0] = 1e16;
        assert_eq!(pairwise_sum(&a), ((1e16 + 1.0) + 2.0) + 2.0 * 6.0 + 1.0);
        assert_eq!(pairwise_sum(&[0.5; 3]), 1.5);
    }

    #[test]
    fn text_reads_as_python_does() {
        let text = Text::new("test", "b\r\na\rb");
        assert_eq!(text.chars, ['\n', 'a', 'b']);
        assert_eq!(text.ids, [2, 0, 1, 0, 2]);
    }
}
