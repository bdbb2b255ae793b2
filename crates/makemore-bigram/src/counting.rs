//! The counting model: a table of bigram counts, normalised into probabilities.

use data::makemore::VOCAB_SIZE;
use tensor::Tensor;

/// `N[a][b]`: how often symbol `b` follows symbol `a`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BigramCounts {
    counts: Vec<u32>,
}

impl BigramCounts {
    // ANCHOR: count
    /// Counts every `(current, next)` pair.
    pub fn from_pairs(pairs: &[(usize, usize)]) -> BigramCounts {
        let mut counts = vec![0u32; VOCAB_SIZE * VOCAB_SIZE];
        for &(a, b) in pairs {
            counts[a * VOCAB_SIZE + b] += 1;
        }
        BigramCounts { counts }
    }
    // ANCHOR_END: count

    /// `N[a, b]`.
    pub fn get(&self, a: usize, b: usize) -> u32 {
        self.counts[a * VOCAB_SIZE + b]
    }

    // ANCHOR: probabilities
    /// The lecture's `P = (N + smoothing).float(); P /= P.sum(1, keepdims=True)`:
    /// each row becomes the distribution of the next symbol. Adding a constant
    /// ("model smoothing") keeps unseen pairs from getting probability zero.
    pub fn probabilities(&self, smoothing: f32) -> Tensor {
        let n = Tensor::from_vec(
            self.counts.iter().map(|&c| c as f32).collect(),
            &[VOCAB_SIZE, VOCAB_SIZE],
        );
        let p = &n + smoothing; // (27, 27)
        p.div(&p.sum(1, true)) // (27, 27) / (27, 1) broadcasts over the columns
    }
    // ANCHOR_END: probabilities

    /// The same probabilities in f64, for an exact likelihood.
    pub fn probabilities_f64(&self, smoothing: f64) -> Vec<f64> {
        let mut p = vec![0.0; VOCAB_SIZE * VOCAB_SIZE];
        for a in 0..VOCAB_SIZE {
            let row = &self.counts[a * VOCAB_SIZE..(a + 1) * VOCAB_SIZE];
            let total: f64 = row.iter().map(|&c| c as f64 + smoothing).sum();
            for b in 0..VOCAB_SIZE {
                p[a * VOCAB_SIZE + b] = (row[b] as f64 + smoothing) / total;
            }
        }
        p
    }
}

// ANCHOR: nll
/// The average negative log-likelihood of the pairs under `probs` (row-major 27×27), in f64.
pub fn average_nll(probs: &[f64], pairs: &[(usize, usize)]) -> f64 {
    let log_likelihood: f64 = pairs
        .iter()
        .map(|&(a, b)| probs[a * VOCAB_SIZE + b].ln())
        .sum();
    -log_likelihood / pairs.len() as f64
}
// ANCHOR_END: nll

/// The notebook's own loop: `log_likelihood += torch.log(prob)` with f32 tensors.
///
/// The sum reaches −560,000; past 2¹⁹ an f32 holds only multiples of 1/16, so
/// each of the 228,146 additions rounds by up to 1/32. The result drifts from
/// the exact 2.4545768 to 2.4543562, which is what the lecture's code prints on
/// a fresh run.
pub fn average_nll_f32_running_sum(probs: &Tensor, pairs: &[(usize, usize)]) -> f32 {
    let p = probs.to_vec();
    let mut log_likelihood = 0.0f32;
    for &(a, b) in pairs {
        log_likelihood += p[a * VOCAB_SIZE + b].ln();
    }
    -log_likelihood / pairs.len() as f32
}
