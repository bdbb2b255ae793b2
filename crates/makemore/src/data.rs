//! makemore.py's `create_datasets` and `CharDataset`: one training thing per
//! line, read exactly as Python reads the file.
//!
//! makemore.py does `open(input_file, 'r').read().splitlines()`, then `strip()`
//! on every line, then drops the empty ones. Each step treats more characters
//! specially than Rust's `lines()` and `trim()`:
//!
//! - `open(…, 'r')` decodes UTF-8 and translates `\r\n` and a lone `\r` to `\n`
//!   (universal newlines);
//! - `str.splitlines()` also breaks at `\v`, `\f`, `\x1c`, `\x1d`, `\x1e`,
//!   U+0085, U+2028 and U+2029;
//! - `str.strip()` also strips `\x1c`–`\x1f`, which are not Unicode white space.
//!
//! A byte-order mark is not white space to Python, so it stays in the first
//! word and in the vocabulary, as it does in makemore.py.

use gpt::data::CharVocab;
use std::fmt;
use std::path::Path;
use tensor::rng::TorchGenerator;

/// Characters at which `str.splitlines()` breaks a line (after universal
/// newlines has turned every `\r` into `\n`).
const LINE_BREAKS: [char; 10] = [
    '\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\u{85}', '\u{2028}', '\u{2029}',
];

/// `str.isspace()`: Unicode's White_Space, which is what Rust's
/// `char::is_whitespace` tests, plus the four information separators
/// `\x1c`–`\x1f`, whose bidirectional class Python also counts.
pub fn python_isspace(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Why an input file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

// ANCHOR: words_from_bytes
/// The words of `bytes` as makemore.py's `create_datasets` finds them:
/// `[w.strip() for w in data.splitlines()]`, the empty ones dropped. Bytes that
/// are not UTF-8 are an error naming the line and the byte offset.
pub fn words_from_bytes(bytes: &[u8], name: &str) -> Result<Vec<String>, InputError> {
    let text = data::python_text::decode_utf8(bytes, name).map_err(|e| {
        InputError(format!(
            "{e}; makemore reads its input as UTF-8, one thing per line"
        ))
    })?;
    let words = text
        .split(|c: char| LINE_BREAKS.contains(&c)) // universal newlines, then splitlines()
        .map(|line| line.trim_matches(python_isspace)) // strip()
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    Ok(words)
}
// ANCHOR_END: words_from_bytes

/// [`words_from_bytes`] of a file, with errors naming the file.
pub fn read_words(path: &Path) -> Result<Vec<String>, InputError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| InputError(format!("cannot read input file {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(InputError(format!(
            "input file {} is a folder; give a text file with one thing per line",
            path.display()
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| InputError(format!("cannot read input file {}: {e}", path.display())))?;
    words_from_bytes(&bytes, &format!("input file {}", path.display()))
}

/// The vocabulary: `sorted(list(set(''.join(words))))`, code points in order.
/// Index 0 is the start and stop token, so character `i` of the list is token
/// `i + 1`: lecture 7's character vocabulary ([`CharVocab`]) shifted by one.
#[derive(Clone, Debug, PartialEq)]
pub struct Vocab {
    chars: CharVocab,
}

impl Vocab {
    /// The sorted set of every character in `words`.
    pub fn of(words: &[String]) -> Vocab {
        Vocab {
            chars: CharVocab::from_text(&words.concat()),
        }
    }

    /// A vocabulary from its characters, sorted and distinct (a checkpoint's).
    pub fn from_chars(chars: Vec<char>) -> Result<Vocab, String> {
        if chars.windows(2).any(|w| w[0] >= w[1]) {
            return Err("vocabulary is not sorted and distinct".into());
        }
        Ok(Vocab {
            chars: CharVocab::from_chars(chars),
        })
    }

    /// The characters, in token order from token 1.
    pub fn chars(&self) -> &[char] {
        self.chars.chars()
    }

    /// `get_vocab_size()`: the characters and the special token 0.
    pub fn size(&self) -> usize {
        self.chars.len() + 1
    }

    /// `stoi[c]`, if `c` is in the vocabulary.
    pub fn stoi(&self, c: char) -> Option<usize> {
        self.chars.id(c).map(|i| i + 1)
    }

    /// `decode`: tokens 1.. back to their characters (0 must be cropped first).
    pub fn decode(&self, ix: &[usize]) -> String {
        ix.iter().map(|&i| self.chars.chars()[i - 1]).collect()
    }
}

/// makemore.py's `CharDataset`: words, the shared vocabulary and the longest
/// word's length, which fixes every example's length.
#[derive(Clone, Debug)]
pub struct CharDataset {
    /// The words, in split order.
    pub words: Vec<String>,
    /// Every word as tokens.
    pub encoded: Vec<Vec<usize>>,
    /// The longest word of the whole file, in characters.
    pub max_word_length: usize,
    sorted: Vec<String>,
}

impl CharDataset {
    /// Encodes `words` with `vocab`; every character must be in it.
    pub fn new(words: Vec<String>, vocab: &Vocab, max_word_length: usize) -> CharDataset {
        let encoded = words
            .iter()
            .map(|w| {
                w.chars()
                    .map(|c| vocab.stoi(c).expect("vocabulary built from these words"))
                    .collect()
            })
            .collect();
        let mut sorted = words.clone();
        sorted.sort_unstable();
        CharDataset {
            words,
            encoded,
            max_word_length,
            sorted,
        }
    }

    /// `len(dataset)`.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether it holds no word.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// `contains(word)`: `word in self.words`.
    pub fn contains(&self, word: &str) -> bool {
        self.sorted
            .binary_search_by(|w| w.as_str().cmp(word))
            .is_ok()
    }

    /// `get_output_length()`: the start token and the longest word.
    pub fn output_length(&self) -> usize {
        self.max_word_length + 1
    }

    // ANCHOR: get_item
    /// `__getitem__`, written into `x` and `y` (each `output_length()` long):
    /// `x` is 0 then the word, `y` the word then 0, then -1 (no loss) to the end.
    pub fn item_into(&self, idx: usize, x: &mut [usize], y: &mut [i64]) {
        let ix = &self.encoded[idx];
        x.fill(0);
        y.fill(0);
        x[1..1 + ix.len()].copy_from_slice(ix);
        for (t, &i) in y.iter_mut().zip(ix) {
            *t = i as i64;
        }
        for t in y.iter_mut().skip(ix.len() + 1) {
            *t = -1; // index -1 masks the loss at the inactive locations
        }
    }
    // ANCHOR_END: get_item

    /// A batch of examples, as `default_collate` stacks them: `(B, T)` each, row-major.
    pub fn batch(&self, indices: &[usize]) -> (Vec<usize>, Vec<i64>) {
        let t = self.output_length();
        let mut x = vec![0usize; indices.len() * t];
        let mut y = vec![0i64; indices.len() * t];
        for (k, &i) in indices.iter().enumerate() {
            self.item_into(i, &mut x[k * t..(k + 1) * t], &mut y[k * t..(k + 1) * t]);
        }
        (x, y)
    }
}

/// What `create_datasets` returns and prints.
#[derive(Clone, Debug)]
pub struct Datasets {
    /// Every word of the file, in file order.
    pub all_words: usize,
    /// The vocabulary of the whole file.
    pub vocab: Vocab,
    /// The training split.
    pub train: CharDataset,
    /// The test split.
    pub test: CharDataset,
}

// ANCHOR: create_datasets
/// makemore.py's split: `test_set_size = min(1000, int(n · 0.1))` words, chosen
/// by `torch.randperm(n)` on the global generator; the rest is train, in
/// permutation order.
pub fn create_datasets(
    words: Vec<String>,
    rng: &mut TorchGenerator,
) -> Result<Datasets, InputError> {
    let n = words.len();
    if n == 0 {
        return Err(InputError(
            "it holds no words: every line is empty or white space".into(),
        ));
    }
    let test_set_size = 1000.min((n as f64 * 0.1) as usize);
    if test_set_size == 0 {
        // makemore.py's rp[:-0] is empty: it would train on nothing.
        return Err(InputError(format!(
            "it holds {n} words; makemore holds out int(n * 0.1) of them for the test set, \
             so it needs at least 10 to have a test set and a training set"
        )));
    }
    let vocab = Vocab::of(&words);
    let max_word_length = words.iter().map(|w| w.chars().count()).max().unwrap_or(0);
    let rp = rng.randperm(n);
    let (train_ix, test_ix) = rp.split_at(n - test_set_size);
    let pick = |ix: &[i64]| ix.iter().map(|&i| words[i as usize].clone()).collect();
    let train = CharDataset::new(pick(train_ix), &vocab, max_word_length);
    let test = CharDataset::new(pick(test_ix), &vocab, max_word_length);
    Ok(Datasets {
        all_words: n,
        vocab,
        train,
        test,
    })
}
// ANCHOR_END: create_datasets

impl Datasets {
    /// The lines `create_datasets` prints.
    pub fn summary(&self) -> String {
        format!(
            "number of examples in the dataset: {}\n\
             max word length: {}\n\
             number of unique characters in the vocabulary: {}\n\
             vocabulary:\n{}\n\
             split up the dataset into {} training examples and {} test examples",
            self.all_words,
            self.train.max_word_length,
            self.vocab.chars().len(),
            self.vocab.chars().iter().collect::<String>(),
            self.train.len(),
            self.test.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universal_newlines_splitlines_and_strip() {
        let words = words_from_bytes(b"ab\r\ncd\ref\x0bgh\x1c \x1fij\x1f\n\n  \t\n", "t").unwrap();
        assert_eq!(words, ["ab", "cd", "ef", "gh", "ij"]);
    }

    #[test]
    fn non_utf8_names_line_and_offset() {
        let err = words_from_bytes(b"ok\nfine\nbad\xff\n", "input file x.txt").unwrap_err();
        assert!(err.0.contains("x.txt"), "{err}");
        assert!(err.0.contains("line 3, byte offset 11"), "{err}");
    }

    #[test]
    fn fewer_than_ten_words_has_no_test_set() {
        let words: Vec<String> = (0..9).map(|i| format!("w{i}")).collect();
        let mut g = TorchGenerator::manual_seed(3407);
        let err = create_datasets(words, &mut g).unwrap_err();
        assert!(err.0.contains("at least 10"), "{err}");
    }

    #[test]
    fn item_marks_padding_with_minus_one() {
        let words = vec!["ab".to_string(), "abcd".to_string()];
        let vocab = Vocab::of(&words);
        let ds = CharDataset::new(words, &vocab, 4);
        let (x, y) = ds.batch(&[0]);
        assert_eq!(x, [0, 1, 2, 0, 0]);
        assert_eq!(y, [1, 2, 0, -1, -1]);
    }
}
