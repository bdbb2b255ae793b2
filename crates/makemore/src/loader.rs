//! The draws behind makemore.py's two data loaders, from PyTorch's
//! `torch/utils/data` (`DataLoader`, `RandomSampler`, `BatchSampler`).
//!
//! Each `iter(DataLoader(…))` first draws a base seed for its workers from the
//! global generator (`_BaseDataLoaderIter.__init__`: one int64 `random_()`),
//! whether or not it has workers. Its `RandomSampler` has no generator of its
//! own, so when the first batch is asked for it draws another int64 from the
//! global generator and seeds a fresh `torch.Generator` with it:
//!
//! - `InfiniteDataLoader` (training) samples with replacement: indices come in
//!   chunks of `torch.randint(n, (32,))` on that generator, and each batch
//!   takes the next `batch_size` of them;
//! - `evaluate` shuffles: one `torch.randperm(n)` on that generator, cut into
//!   batches of 100.
//!
//! An int64 `random_()` is `random64() mod 2^63` (`uniform_int_distribution`
//! in ATen's `DistributionsHelper.h`).

use serde::{Deserialize, Serialize};
use tensor::rng::TorchGenerator;

/// `torch.empty((), dtype=torch.int64).random_(generator=g).item()`.
pub fn int64_seed(g: &mut TorchGenerator) -> u64 {
    g.random64() % (1u64 << 63)
}

/// `RandomSampler(replacement=True)` yields `randint` chunks of this many.
const CHUNK: usize = 32;

/// makemore.py's `InfiniteDataLoader`: batches of indices drawn with
/// replacement, forever.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InfiniteSampler {
    /// How many examples there are to draw from.
    pub n: usize,
    /// The sampler's own generator, seeded from the global one at the first
    /// batch (`None` before it).
    pub generator: Option<Vec<u32>>,
    /// Indices of the current `randint` chunk not yet taken by a batch.
    pub pending: Vec<usize>,
}

impl InfiniteSampler {
    /// `InfiniteDataLoader(dataset)`: `iter(DataLoader(…))` draws the workers'
    /// base seed from the global generator at once.
    pub fn new(n: usize, global: &mut TorchGenerator) -> InfiniteSampler {
        let _base_seed = int64_seed(global);
        InfiniteSampler {
            n,
            generator: None,
            pending: Vec::new(),
        }
    }

    // ANCHOR: infinite_data_loader
    /// The next `batch_size` indices; the first call seeds the sampler's
    /// generator from the global one.
    pub fn next_batch(&mut self, batch_size: usize, global: &mut TorchGenerator) -> Vec<usize> {
        let mut g = match &self.generator {
            Some(state) => TorchGenerator::from_state(state).expect("a state this sampler saved"),
            None => TorchGenerator::manual_seed(int64_seed(global)),
        };
        let mut batch = Vec::with_capacity(batch_size);
        while batch.len() < batch_size {
            if self.pending.is_empty() {
                let chunk = g.randint(0, self.n as i64, &[CHUNK]);
                self.pending = chunk.into_iter().rev().map(|i| i as usize).collect();
            }
            batch.push(self.pending.pop().expect("refilled above"));
        }
        self.generator = Some(g.state());
        batch
    }
    // ANCHOR_END: infinite_data_loader
}

/// The batches `evaluate` sees: `DataLoader(dataset, shuffle=True,
/// batch_size)`, stopped after batch `max_batches` (the loop appends the
/// batch's loss before it checks `i >= max_batches`, so it sees one more).
pub fn eval_batches(
    n: usize,
    batch_size: usize,
    max_batches: usize,
    global: &mut TorchGenerator,
) -> Vec<Vec<usize>> {
    let _base_seed = int64_seed(global);
    let mut g = TorchGenerator::manual_seed(int64_seed(global));
    let order: Vec<usize> = g.randperm(n).into_iter().map(|i| i as usize).collect();
    order
        .chunks(batch_size)
        .take(max_batches + 1)
        .map(<[usize]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_larger_than_a_chunk_spans_chunks() {
        let mut global = TorchGenerator::manual_seed(1);
        let mut a = InfiniteSampler::new(1000, &mut global.clone());
        let mut b = a.clone();
        let mut g2 = global.clone();
        let whole = a.next_batch(50, &mut global);
        let mut split = b.next_batch(20, &mut g2);
        split.extend(b.next_batch(30, &mut g2));
        assert_eq!(whole, split);
        assert_eq!(a, b);
    }
}
