//! `names.txt` the way lectures 2–6 use it.
//!
//! The notebooks build everything from `words = open('names.txt').read().splitlines()`:
//! a 27-symbol vocabulary with `.` marking both ends of a name, bigram pairs
//! (lecture 2), and from lecture 3 on a shuffled 80/10/10 split of the words and
//! fixed-size context windows. Doing it the same way here gives the same split
//! (25,626 / 3,203 / 3,204 words) and the same 182,625 / 22,655 / 22,866
//! training examples the lectures print.

use crate::DataError;
use tensor::rng::TorchGenerator;

/// Number of symbols: `.` plus `a`..=`z`.
pub const VOCAB_SIZE: usize = 27;

/// The 32,033 names of `names.txt`, in file order.
pub fn words() -> Result<Vec<String>, DataError> {
    let text = crate::read_text("names.txt")?;
    Ok(text.lines().map(str::to_string).collect())
}

/// The lecture's `stoi` / `itos`: `.` is 0, `a`..=`z` are 1..=26.
///
/// The notebook computes it as `sorted(set(''.join(words)))` shifted by one, with
/// `.` at 0; on names.txt that is exactly the alphabet (the tests check it).
#[derive(Clone, Debug)]
pub struct Vocab {
    itos: [char; VOCAB_SIZE],
}

impl Default for Vocab {
    fn default() -> Self {
        Vocab::new()
    }
}

impl Vocab {
    /// The 27-symbol vocabulary.
    pub fn new() -> Vocab {
        let mut itos = ['.'; VOCAB_SIZE];
        for (i, c) in ('a'..='z').enumerate() {
            itos[i + 1] = c;
        }
        Vocab { itos }
    }

    /// Number of symbols (27).
    pub fn len(&self) -> usize {
        VOCAB_SIZE
    }

    /// Always false: the vocabulary has 27 symbols.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The index of `c`, or `None` if `c` is not `.` or a lower-case ASCII letter.
    pub fn get(&self, c: char) -> Option<usize> {
        match c {
            '.' => Some(0),
            'a'..='z' => Some(c as usize - 'a' as usize + 1),
            _ => None,
        }
    }

    /// The index of `c`.
    ///
    /// # Panics
    /// If `c` is not in the vocabulary (the notebook's `stoi[c]` raises `KeyError`).
    pub fn stoi(&self, c: char) -> usize {
        self.get(c).unwrap_or_else(|| {
            panic!("{c:?} is not in the makemore vocabulary ('.' and 'a'..='z')")
        })
    }

    /// The symbol with index `i`.
    ///
    /// # Panics
    /// If `i >= 27`.
    pub fn itos(&self, i: usize) -> char {
        assert!(
            i < VOCAB_SIZE,
            "index {i} is outside the vocabulary (0..27)"
        );
        self.itos[i]
    }

    /// The indices of a word's characters (no `.` markers added).
    ///
    /// # Panics
    /// As [`Vocab::stoi`].
    pub fn encode(&self, word: &str) -> Vec<usize> {
        word.chars().map(|c| self.stoi(c)).collect()
    }

    /// The string for a list of indices.
    ///
    /// # Panics
    /// As [`Vocab::itos`].
    pub fn decode(&self, ix: &[usize]) -> String {
        ix.iter().map(|&i| self.itos(i)).collect()
    }
}

/// Words split into training, development (validation) and test sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The first 80% of the shuffled words.
    pub train: Vec<String>,
    /// The next 10%.
    pub dev: Vec<String>,
    /// The last 10%.
    pub test: Vec<String>,
}

// ANCHOR: lecture_split
/// The split of lectures 3–6: `random.seed(42); random.shuffle(words)`, then
/// `words[:n1]`, `words[n1:n2]`, `words[n2:]` with `n1 = int(0.8*n)`, `n2 = int(0.9*n)`.
pub fn lecture_split(mut words: Vec<String>) -> Split {
    pyrandom::PyRandom::seed(42).shuffle(&mut words);
    // Python multiplies as f64 and truncates; do the same so n1, n2 match exactly.
    let n = words.len();
    let n1 = (0.8 * n as f64) as usize;
    let n2 = (0.9 * n as f64) as usize;
    let test = words.split_off(n2);
    let dev = words.split_off(n1);
    Split {
        train: words,
        dev,
        test,
    }
}
// ANCHOR_END: lecture_split

// ANCHOR: build_dataset
/// The lecture's `build_dataset(words)`: for every word, a context of
/// `block_size` indices that starts as all `.` (0) and slides over the word and
/// its closing `.`; each context predicts the next symbol.
///
/// Returns `(X, Y)`: `X` is row-major, `Y.len()` rows of `block_size` indices.
///
/// # Panics
/// If a word has a character outside the vocabulary.
pub fn context_windows(words: &[String], block_size: usize) -> (Vec<usize>, Vec<usize>) {
    let vocab = Vocab::new();
    let mut x = Vec::new();
    let mut y = Vec::new();
    for w in words {
        let mut context = vec![0; block_size];
        for ch in w.chars().chain(std::iter::once('.')) {
            let ix = vocab.stoi(ch);
            x.extend_from_slice(&context);
            y.push(ix);
            // crop and append: context = context[1:] + [ix]
            if block_size > 0 {
                context.remove(0);
                context.push(ix);
            }
        }
    }
    (x, y)
}
// ANCHOR_END: build_dataset

/// Examples as the notebooks' `X` (n × block_size, row-major) and `Y` (n): the
/// one dataset type of lectures 3–6.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Contexts, `block_size` symbol indices per example.
    pub x: Vec<usize>,
    /// The symbol that follows each context.
    pub y: Vec<usize>,
    /// Symbols per context.
    pub block_size: usize,
}

impl Dataset {
    /// `Xtr, Ytr = build_dataset(words)` ([`context_windows`]).
    pub fn build(words: &[String], block_size: usize) -> Dataset {
        let (x, y) = context_windows(words, block_size);
        Dataset { x, y, block_size }
    }

    /// The number of examples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The contexts and targets of the examples `ix` (`Xtr[ix], Ytr[ix]`).
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
        self.rows(&self.minibatch_indices(g, batch_size))
    }
    // ANCHOR_END: minibatch

    /// The indices [`Dataset::minibatch`] draws.
    pub fn minibatch_indices(&self, g: &mut TorchGenerator, batch_size: usize) -> Vec<usize> {
        g.randint(0, self.len() as i64, &[batch_size])
            .into_iter()
            .map(|i| i as usize)
            .collect()
    }
}

/// The three datasets of lectures 3–6, from the lecture split of `names.txt`
/// (182,625 / 22,655 / 22,866 examples at block size 3).
#[derive(Clone, Debug)]
pub struct Splits {
    /// 80% of the shuffled words (`Xtr, Ytr`).
    pub train: Dataset,
    /// 10%, for choosing hyperparameters (`Xdev, Ydev`; the notebooks' "val").
    pub dev: Dataset,
    /// 10%, held out (`Xte, Yte`).
    pub test: Dataset,
}

impl Splits {
    /// Reads `names.txt`, shuffles and splits it as the lectures do, and builds
    /// the three datasets.
    pub fn load(block_size: usize) -> Result<Splits, DataError> {
        let split = lecture_split(words()?);
        Ok(Splits {
            train: Dataset::build(&split.train, block_size),
            dev: Dataset::build(&split.dev, block_size),
            test: Dataset::build(&split.test, block_size),
        })
    }
}

// ANCHOR: bigrams
/// Lecture 2's pairs: every word becomes `.` + word + `.`, and each pair of
/// neighbouring symbols is one example `(current, next)`.
///
/// # Panics
/// If a word has a character outside the vocabulary.
pub fn bigrams(words: &[String]) -> Vec<(usize, usize)> {
    let vocab = Vocab::new();
    let mut pairs = Vec::new();
    for w in words {
        let mut prev = 0;
        for ch in w.chars().chain(std::iter::once('.')) {
            let ix = vocab.stoi(ch);
            pairs.push((prev, ix));
            prev = ix;
        }
    }
    pairs
}
// ANCHOR_END: bigrams

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_matches_the_lecture_stoi() {
        let v = Vocab::new();
        assert_eq!(v.stoi('.'), 0);
        assert_eq!(v.stoi('a'), 1);
        assert_eq!(v.stoi('z'), 26);
        assert_eq!(v.itos(5), 'e');
        assert_eq!(v.encode("emma"), vec![5, 13, 13, 1]);
        assert_eq!(v.decode(&[5, 13, 13, 1, 0]), "emma.");
        assert_eq!(v.get('A'), None);
    }

    #[test]
    fn emma_gives_the_five_examples_the_lecture_prints() {
        // Part 2 prints for "emma" at block size 3:
        // ... ---> e, ..e ---> m, .em ---> m, emm ---> a, mma ---> .
        let (x, y) = context_windows(&["emma".to_string()], 3);
        let v = Vocab::new();
        let rows: Vec<String> = x.chunks(3).map(|r| v.decode(r)).collect();
        assert_eq!(rows, ["...", "..e", ".em", "emm", "mma"]);
        assert_eq!(v.decode(&y), "emma.");
    }

    #[test]
    fn emma_gives_five_bigrams() {
        let v = Vocab::new();
        let pairs = bigrams(&["emma".to_string()]);
        let shown: Vec<String> = pairs
            .iter()
            .map(|&(a, b)| format!("{}{}", v.itos(a), v.itos(b)))
            .collect();
        assert_eq!(shown, [".e", "em", "mm", "ma", "a."]);
    }

    #[test]
    fn split_sizes_follow_python_int_truncation() {
        // int(0.8*10) = 8, int(0.9*10) = 9: a 10-word list splits 8 / 1 / 1.
        let words: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
        let s = lecture_split(words);
        assert_eq!((s.train.len(), s.dev.len(), s.test.len()), (8, 1, 1));
    }
}
