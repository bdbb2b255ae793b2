//! The lecture's examples: contexts of `block_size` characters and the next one.

use data::makemore::{context_windows, lecture_split, words};
use data::DataError;
use tensor::rng::TorchGenerator;

/// Examples as the notebook's `X` (n × block_size, row-major) and `Y` (n).
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Contexts, `block_size` indices per example.
    pub x: Vec<usize>,
    /// The character that follows each context.
    pub y: Vec<usize>,
    /// Characters per context.
    pub block_size: usize,
}

impl Dataset {
    /// The lecture's `build_dataset(words)`.
    pub fn from_words(words: &[String], block_size: usize) -> Dataset {
        let (x, y) = context_windows(words, block_size);
        Dataset { x, y, block_size }
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The examples at `ix` (`Xtr[ix], Ytr[ix]`).
    pub fn rows(&self, ix: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let mut x = Vec::with_capacity(ix.len() * self.block_size);
        let mut y = Vec::with_capacity(ix.len());
        for &i in ix {
            x.extend_from_slice(&self.x[i * self.block_size..(i + 1) * self.block_size]);
            y.push(self.y[i]);
        }
        (x, y)
    }
}

/// Train, dev and test examples from the lecture split of `names.txt`
/// (182,625 / 22,655 / 22,866 at block size 3).
#[derive(Clone, Debug)]
pub struct Splits {
    /// 80% of the shuffled words.
    pub train: Dataset,
    /// 10%, for choosing hyperparameters.
    pub dev: Dataset,
    /// 10%, held out.
    pub test: Dataset,
}

impl Splits {
    /// Reads `names.txt` (via the `data` crate), shuffles and splits it as the lecture does.
    pub fn load(block_size: usize) -> Result<Splits, DataError> {
        let split = lecture_split(words()?);
        Ok(Splits {
            train: Dataset::from_words(&split.train, block_size),
            dev: Dataset::from_words(&split.dev, block_size),
            test: Dataset::from_words(&split.test, block_size),
        })
    }
}

/// `ix = torch.randint(0, Xtr.shape[0], (batch,))`, drawn from `g`.
pub fn minibatch(g: &mut TorchGenerator, n: usize, batch: usize) -> Vec<usize> {
    g.randint(0, n as i64, &[batch])
        .into_iter()
        .map(|i| i as usize)
        .collect()
}
