//! nanoGPT's `data/shakespeare_char/prepare.py` on any text: the sorted set of
//! code points as the vocabulary, the first 90% of the characters as train,
//! `train.bin` and `val.bin` as headerless little-endian uint16, and `meta.pkl`
//! with `vocab_size`, `itos` and `stoi`, which nanoGPT's `train.py` and
//! `sample.py` read.

use crate::data::{CharVocab, Shakespeare};
use serde_pickle::{HashableValue, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The files a prepared folder holds.
pub const TRAIN_BIN: &str = "train.bin";
/// The validation split.
pub const VAL_BIN: &str = "val.bin";
/// The vocabulary.
pub const META_PKL: &str = "meta.pkl";

/// uint16 ids: a vocabulary of more code points cannot be stored.
pub const MAX_VOCAB: usize = 1 << 16;

// ANCHOR: prepare
/// `prepare.py` on `text` (already read as Python reads it): `chars =
/// sorted(list(set(data)))`, `n = len(data)`, train `data[:int(n*0.9)]`, val
/// the rest. `name` names the text in errors.
pub fn prepare(text: &str, name: &str) -> Result<Shakespeare, String> {
    if text.is_empty() {
        return Err(format!("{name} is empty: there is no text to prepare"));
    }
    let data = Shakespeare::from_text(text); // chars, stoi, and the int(n*0.9) split
    if data.train.is_empty() {
        // One character: int(1*0.9) = 0 leaves train.bin empty.
        return Err(format!(
            "{name} holds a single character: its first 90%, the train split, would be empty"
        ));
    }
    if data.vocab.len() > MAX_VOCAB {
        return Err(format!(
            "{name} has {} distinct characters; train.bin stores ids as uint16, \
             so at most {MAX_VOCAB} fit",
            data.vocab.len()
        ));
    }
    Ok(data)
}
// ANCHOR_END: prepare

/// `meta.pkl`'s dict, `{'vocab_size': V, 'itos': {i: ch}, 'stoi': {ch: i}}`,
/// pickled (protocol 3; Python's `pickle.load` reads it to an equal dict).
pub fn meta_pickle(vocab: &CharVocab) -> Vec<u8> {
    let chars = vocab.chars();
    let itos = chars
        .iter()
        .enumerate()
        .map(|(i, c)| (HashableValue::I64(i as i64), Value::String(c.to_string())))
        .collect();
    let stoi = chars
        .iter()
        .enumerate()
        .map(|(i, c)| (HashableValue::String(c.to_string()), Value::I64(i as i64)))
        .collect();
    let meta = BTreeMap::from([
        (
            HashableValue::String("vocab_size".into()),
            Value::I64(chars.len() as i64),
        ),
        (HashableValue::String("itos".into()), Value::Dict(itos)),
        (HashableValue::String("stoi".into()), Value::Dict(stoi)),
    ]);
    serde_pickle::value_to_vec(&Value::Dict(meta), serde_pickle::SerOptions::new())
        .expect("a dict of ints and strings pickles")
}

/// The vocabulary of a `meta.pkl` as nanoGPT's `prepare.py` writes it: a dict
/// whose `itos` maps 0..V to single characters in increasing order and whose
/// `stoi` is its inverse. Anything else is an error saying what differs.
pub fn read_meta(bytes: &[u8], name: &str) -> Result<CharVocab, String> {
    let not = |why: String| {
        format!("{name} is not the meta.pkl of nanoGPT's char-level prepare.py: {why}")
    };
    let value = serde_pickle::value_from_slice(bytes, serde_pickle::DeOptions::new())
        .map_err(|e| not(format!("not a pickle ({e})")))?;
    let Value::Dict(meta) = value else {
        return Err(not("it holds no dict".into()));
    };
    let get = |key: &str| {
        meta.get(&HashableValue::String(key.into()))
            .ok_or_else(|| not(format!("it has no '{key}'")))
    };
    let vocab_size = match get("vocab_size")? {
        Value::I64(v) if (1..=MAX_VOCAB as i64).contains(v) => *v as usize,
        other => {
            return Err(not(format!(
                "vocab_size is {other:?}, not an int in 1..=65536"
            )))
        }
    };
    let Value::Dict(itos) = get("itos")? else {
        return Err(not("itos is not a dict".into()));
    };
    let Value::Dict(stoi) = get("stoi")? else {
        return Err(not("stoi is not a dict".into()));
    };
    if itos.len() != vocab_size || stoi.len() != vocab_size {
        return Err(not(format!(
            "vocab_size is {vocab_size} but itos has {} entries and stoi {}",
            itos.len(),
            stoi.len()
        )));
    }
    let mut chars = Vec::with_capacity(vocab_size);
    for i in 0..vocab_size {
        let c = match itos.get(&HashableValue::I64(i as i64)) {
            Some(Value::String(s)) if s.chars().count() == 1 => s.chars().next().unwrap(),
            Some(other) => return Err(not(format!("itos[{i}] is {other:?}, not one character"))),
            None => return Err(not(format!("itos has no id {i}"))),
        };
        if chars.last().is_some_and(|&last| last >= c) {
            return Err(not(format!(
                "itos[{i}] = {c:?} does not come after itos[{}] in code-point order",
                i - 1
            )));
        }
        match stoi.get(&HashableValue::String(c.to_string())) {
            Some(Value::I64(j)) if *j == i as i64 => {}
            other => return Err(not(format!("stoi[{c:?}] is {other:?}, not {i}"))),
        }
        chars.push(c);
    }
    Ok(CharVocab::from_chars(chars))
}

/// Little-endian uint16 bytes of `ids`, numpy's `tofile` on a uint16 array:
/// nanoGPT's headerless `.bin` format, which `gpt2 prepare --format nanogpt`
/// writes too.
pub fn uint16_bytes<T: Copy + TryInto<u16>>(ids: &[T]) -> Vec<u8> {
    ids.iter()
        .flat_map(|&i| i.try_into().ok().expect("ids fit uint16").to_le_bytes())
        .collect()
}

/// The number of tokens in a headerless uint16 file of `len` bytes: every
/// byte pair a token, from byte 0, so an empty file or an odd length is refused.
pub fn uint16_count(len: usize) -> Result<usize, String> {
    if len == 0 {
        return Err("empty: it holds no tokens".into());
    }
    if !len.is_multiple_of(2) {
        return Err(format!(
            "{len} bytes, an odd number: not a file of uint16 tokens"
        ));
    }
    Ok(len / 2)
}

/// Ids from a headerless uint16 file, each checked against the vocabulary.
pub fn read_uint16(bytes: &[u8], vocab_size: usize, name: &str) -> Result<Vec<usize>, String> {
    uint16_count(bytes.len()).map_err(|e| format!("{name}: {e}"))?;
    bytes
        .chunks_exact(2)
        .enumerate()
        .map(|(k, b)| {
            let id = u16::from_le_bytes([b[0], b[1]]) as usize;
            if id < vocab_size {
                Ok(id)
            } else {
                Err(format!(
                    "{name}: token {k} is id {id}, outside meta.pkl's vocabulary of {vocab_size}"
                ))
            }
        })
        .collect()
}

/// Writes `train.bin`, `val.bin` and `meta.pkl` into `dir` (created if
/// missing) as one set ([`report::write_atomic_set`]): all three are written
/// in full before the first is renamed into place, so a failed write leaves
/// the folder's old files; only a kill between the three renames could mix
/// old and new.
pub fn write_folder(dir: &Path, data: &Shakespeare) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create --out-dir {}: {e}", dir.display()))?;
    let files = [
        (dir.join(TRAIN_BIN), uint16_bytes(&data.train)),
        (dir.join(VAL_BIN), uint16_bytes(&data.val)),
        (dir.join(META_PKL), meta_pickle(&data.vocab)),
    ];
    let set: Vec<(&Path, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_path(), b.as_slice()))
        .collect();
    report::write_atomic_set(&set).map_err(|e| {
        format!(
            "cannot write {}, {} and {} into {}: {e}",
            TRAIN_BIN,
            VAL_BIN,
            META_PKL,
            dir.display()
        )
    })
}

/// A file of the folder, or an error naming it and saying what the folder holds.
fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| {
        format!(
            "cannot read {}: {e}; a char-level data folder holds train.bin, val.bin and \
             meta.pkl (`gpt prepare --input FILE --out-dir DIR`)",
            path.display()
        )
    })
}

/// [`read_meta`] of a file.
pub fn read_meta_file(path: &Path) -> Result<CharVocab, String> {
    read_meta(&read_file(path)?, &path.display().to_string())
}

/// [`read_uint16`] of a file.
pub fn read_bin(path: &Path, vocab_size: usize) -> Result<Vec<usize>, String> {
    read_uint16(&read_file(path)?, vocab_size, &path.display().to_string())
}

/// A folder that `prepare.py` or [`write_folder`] wrote, read back.
pub fn read_folder(dir: &Path) -> Result<Shakespeare, String> {
    let vocab = read_meta_file(&dir.join(META_PKL))?;
    let train = read_bin(&dir.join(TRAIN_BIN), vocab.len())?;
    let val = read_bin(&dir.join(VAL_BIN), vocab.len())?;
    Ok(Shakespeare { vocab, train, val })
}

/// `gpt prepare`'s flags.
#[derive(clap::Args)]
pub struct PrepareArgs {
    /// The text, read as Python's open(path, 'r') reads it (UTF-8, universal newlines).
    #[arg(long)]
    pub input: std::path::PathBuf,
    /// Where train.bin, val.bin and meta.pkl go.
    #[arg(long, alias = "out")]
    pub out_dir: std::path::PathBuf,
}

impl PrepareArgs {
    /// Prepares the folder and prints prepare.py's lines.
    pub fn run(self) -> Result<(), String> {
        print!("{}", prepare_file(&self.input, &self.out_dir)?);
        Ok(())
    }
}

/// `gpt prepare`: reads `input` as Python does, prepares it, and writes the
/// folder; every check runs before anything is written, so a bad input leaves
/// `out_dir` as it was. Returns prepare.py's printed lines.
pub fn prepare_file(input: &Path, out_dir: &Path) -> Result<String, String> {
    let text = data::python_text::read(input)?;
    let data = prepare(&text, &format!("input file {}", input.display()))?;
    write_folder(out_dir, &data)?;
    let n = data.train.len() + data.val.len();
    Ok(format!(
        "length of dataset in characters: {}\nall the unique characters: {}\nvocab size: {}\n\
         train has {} tokens\nval has {} tokens\nwrote {}, {} and {} to {}\n",
        thousands(n),
        data.vocab.chars().iter().collect::<String>(),
        thousands(data.vocab.len()),
        thousands(data.train.len()),
        thousands(data.val.len()),
        TRAIN_BIN,
        VAL_BIN,
        META_PKL,
        out_dir.display()
    ))
}

/// `f"{n:,}"` (report's, which every tool prints with).
pub use report::thousands;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_pickle_reads_back() {
        let data = prepare("héllo wörld 🙂\n", "t").unwrap();
        let vocab = read_meta(&meta_pickle(&data.vocab), "meta.pkl").unwrap();
        assert_eq!(vocab, data.vocab);
    }

    #[test]
    fn empty_text_and_odd_bins_are_errors() {
        assert!(prepare("", "input.txt")
            .unwrap_err()
            .contains("input.txt is empty"));
        let err = prepare("x", "input.txt").unwrap_err();
        assert!(err.contains("train split, would be empty"), "{err}");
        let two = prepare("xy", "input.txt").unwrap(); // int(2*0.9) = 1
        assert_eq!((two.train.len(), two.val.len()), (1, 1));
        let err = read_uint16(&[1, 0, 2], 10, "val.bin").unwrap_err();
        assert!(err.contains("odd number"), "{err}");
        let err = read_uint16(&[9, 0], 5, "val.bin").unwrap_err();
        assert!(err.contains("token 0 is id 9"), "{err}");
    }

    #[test]
    fn thousands_groups_like_python() {
        assert_eq!(thousands(768), "768");
        assert_eq!(thousands(802_816), "802,816");
        assert_eq!(thousands(1_003_854), "1,003,854");
    }
}
