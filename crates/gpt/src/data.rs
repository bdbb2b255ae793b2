//! Tiny Shakespeare as the lecture reads it: 65 sorted characters, a 90/10 split,
//! and `get_batch`, which draws random offsets from the generator.

use tensor::rng::TorchGenerator;

/// The character vocabulary: the sorted set of characters in the text
/// (`chars = sorted(list(set(text)))`), so '\n' is 0 and ' ' is 1.
#[derive(Clone, Debug, PartialEq)]
pub struct CharVocab {
    chars: Vec<char>,
}

impl CharVocab {
    /// The sorted distinct characters of `text`.
    pub fn from_text(text: &str) -> CharVocab {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        CharVocab { chars }
    }

    /// A vocabulary from its characters in id order (e.g. read from a checkpoint).
    pub fn from_chars(chars: Vec<char>) -> CharVocab {
        CharVocab { chars }
    }

    /// The characters in id order.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    /// The id of `c`, if it is in the vocabulary.
    pub fn id(&self, c: char) -> Option<usize> {
        self.chars.binary_search(&c).ok()
    }

    /// The number of characters, 65 for tiny Shakespeare.
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    // ANCHOR: encode
    /// `encode(s)`: each character's id, or an error naming a character not in the vocabulary.
    pub fn encode(&self, text: &str) -> Result<Vec<usize>, String> {
        text.chars()
            .map(|c| {
                self.chars.binary_search(&c).map_err(|_| {
                    format!(
                        "character {c:?} is not in the {}-character vocabulary",
                        self.len()
                    )
                })
            })
            .collect()
    }

    /// `decode(ids)`: the characters back. Panics on an id past the vocabulary.
    pub fn decode(&self, ids: &[usize]) -> String {
        ids.iter().map(|&i| self.chars[i]).collect()
    }
    // ANCHOR_END: encode
}

/// The encoded text split as the lecture splits it: `n = int(0.9*len(data))`,
/// train the first `n` ids, val the rest.
#[derive(Clone, Debug)]
pub struct Shakespeare {
    /// The vocabulary.
    pub vocab: CharVocab,
    /// The first 90% of the ids (1,003,854).
    pub train: Vec<usize>,
    /// The last 10% (111,540).
    pub val: Vec<usize>,
}

/// Which split to draw from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The first 90%.
    Train,
    /// The last 10%.
    Val,
}

impl Shakespeare {
    /// Reads `tinyshakespeare.txt` through the `data` crate (checksum-verified).
    pub fn load() -> Result<Shakespeare, data::DataError> {
        Ok(Shakespeare::from_text(&data::read_text(
            "tinyshakespeare.txt",
        )?))
    }

    /// Builds the vocabulary and the split from any text.
    pub fn from_text(text: &str) -> Shakespeare {
        let vocab = CharVocab::from_text(text);
        let ids = vocab
            .encode(text)
            .expect("every character is in its own vocabulary");
        let n = (0.9 * ids.len() as f64) as usize;
        Shakespeare {
            vocab,
            train: ids[..n].to_vec(),
            val: ids[n..].to_vec(),
        }
    }

    /// The ids of one split.
    pub fn split(&self, split: Split) -> &[usize] {
        match split {
            Split::Train => &self.train,
            Split::Val => &self.val,
        }
    }

    // ANCHOR: get_batch
    /// `get_batch(split)`: `batch` random windows of `block` ids and the same
    /// windows shifted by one, each row-major `(batch, block)`.
    ///
    /// The offsets are `torch.randint(len(data) - block_size, (batch_size,))`,
    /// drawn from `rng` exactly as torch draws them.
    pub fn get_batch(
        &self,
        split: Split,
        batch: usize,
        block: usize,
        rng: &mut TorchGenerator,
    ) -> (Vec<usize>, Vec<usize>) {
        let data = self.split(split);
        let offsets = rng.randint(0, (data.len() - block) as i64, &[batch]);
        let mut x = Vec::with_capacity(batch * block); // (B, T)
        let mut y = Vec::with_capacity(batch * block); // (B, T)
        for &i in &offsets {
            let i = i as usize;
            x.extend_from_slice(&data[i..i + block]);
            y.extend_from_slice(&data[i + 1..i + block + 1]);
        }
        (x, y)
    }
    // ANCHOR_END: get_batch
}
