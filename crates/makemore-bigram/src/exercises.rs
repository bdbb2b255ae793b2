//! The lecture's exercises (from the video description).
//!
//! - E01: a trigram model (two characters predict the third), by counting.
//! - E02: train on 80% of the words, evaluate on the dev and test 10%s.
//! - E03: tune the trigram's smoothing on dev; evaluate the best once on test.
//! - E04: index rows of `W` instead of multiplying one-hot vectors
//!   ([`crate::neural::Encoding::RowIndex`]).
//! - E05: `F.cross_entropy` instead of the hand-written softmax
//!   ([`crate::neural::LossFormula::CrossEntropy`]).
//!
//! Choice: the trigram's context starts as `..`, the lecture-3 way
//! (`data::makemore::context_windows(words, 2)`), so it predicts every character
//! of every name, including the first, and its likelihood covers the same
//! 228,146 predictions as the bigram's.

use data::makemore::VOCAB_SIZE;

/// Counts of (two-symbol context, next symbol): 729 contexts × 27.
#[derive(Clone, Debug)]
pub struct TrigramCounts {
    counts: Vec<u32>,
}

/// A two-symbol context as one row index: `27·a + b`.
fn context_id(a: usize, b: usize) -> usize {
    a * VOCAB_SIZE + b
}

impl TrigramCounts {
    // ANCHOR: trigram_count
    /// Counts from context windows of size 2 (`x` row-major, two per example).
    pub fn from_windows(x: &[usize], y: &[usize]) -> TrigramCounts {
        let mut counts = vec![0u32; VOCAB_SIZE * VOCAB_SIZE * VOCAB_SIZE];
        for (ctx, &next) in x.chunks_exact(2).zip(y) {
            counts[context_id(ctx[0], ctx[1]) * VOCAB_SIZE + next] += 1;
        }
        TrigramCounts { counts }
    }
    // ANCHOR_END: trigram_count

    /// The average negative log-likelihood, in f64, of the examples under the
    /// counts plus `smoothing`, normalised per context.
    pub fn average_nll(&self, smoothing: f64, x: &[usize], y: &[usize]) -> f64 {
        let row_totals: Vec<f64> = self
            .counts
            .chunks_exact(VOCAB_SIZE)
            .map(|row| row.iter().map(|&c| c as f64 + smoothing).sum())
            .collect();
        let log_likelihood: f64 = x
            .chunks_exact(2)
            .zip(y)
            .map(|(ctx, &next)| {
                let row = context_id(ctx[0], ctx[1]);
                ((self.counts[row * VOCAB_SIZE + next] as f64 + smoothing) / row_totals[row]).ln()
            })
            .sum();
        -log_likelihood / y.len() as f64
    }
}

/// The smoothing strengths E03 tries on the dev set.
pub const SMOOTHING_GRID: [f64; 9] = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0];

/// E03: the smoothing with the lowest dev NLL, and that NLL.
pub fn tune_smoothing(counts: &TrigramCounts, dev_x: &[usize], dev_y: &[usize]) -> (f64, f64) {
    SMOOTHING_GRID
        .iter()
        .map(|&k| (k, counts.average_nll(k, dev_x, dev_y)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a non-empty grid")
}
