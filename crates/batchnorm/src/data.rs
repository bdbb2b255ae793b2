//! The lecture split as flat index arrays, and the minibatch draw.

use data::makemore::{context_windows, lecture_split, words};
use data::DataError;
use tensor::rng::TorchGenerator;

/// Context windows of one split: `x` row-major `(n, block_size)`, `y` `(n,)`.
#[derive(Clone, Debug)]
pub struct Examples {
    /// Contexts, `n · block_size` symbol indices.
    pub x: Vec<usize>,
    /// The symbol that follows each context.
    pub y: Vec<usize>,
    /// Symbols per context.
    pub block_size: usize,
}

impl Examples {
    /// The number of examples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The contexts and targets of the examples `ix` (the lecture's `Xtr[ix], Ytr[ix]`).
    pub fn rows(&self, ix: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let b = self.block_size;
        let mut xb = Vec::with_capacity(ix.len() * b);
        let mut yb = Vec::with_capacity(ix.len());
        for &i in ix {
            xb.extend_from_slice(&self.x[i * b..(i + 1) * b]);
            yb.push(self.y[i]);
        }
        (xb, yb)
    }

    /// Examples `start..end`, for evaluating a split in chunks.
    pub fn range(&self, start: usize, end: usize) -> (Vec<usize>, Vec<usize>) {
        let b = self.block_size;
        (
            self.x[start * b..end * b].to_vec(),
            self.y[start..end].to_vec(),
        )
    }

    // ANCHOR: minibatch
    /// `ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)`, then those rows.
    pub fn minibatch(&self, g: &mut TorchGenerator, batch_size: usize) -> (Vec<usize>, Vec<usize>) {
        let ix: Vec<usize> = g
            .randint(0, self.len() as i64, &[batch_size])
            .into_iter()
            .map(|i| i as usize)
            .collect();
        self.rows(&ix)
    }
    // ANCHOR_END: minibatch
}

/// The three splits of lectures 3–6 (`random.seed(42)` shuffle, 80/10/10).
#[derive(Clone, Debug)]
pub struct Splits {
    /// 182,625 examples.
    pub train: Examples,
    /// 22,655 examples.
    pub val: Examples,
    /// 22,866 examples.
    pub test: Examples,
}

impl Splits {
    /// Reads names.txt through the `data` crate and builds the windows.
    pub fn load(block_size: usize) -> Result<Splits, DataError> {
        let split = lecture_split(words()?);
        let build = |w: &[String]| {
            let (x, y) = context_windows(w, block_size);
            Examples { x, y, block_size }
        };
        Ok(Splits {
            train: build(&split.train),
            val: build(&split.dev),
            test: build(&split.test),
        })
    }
}
