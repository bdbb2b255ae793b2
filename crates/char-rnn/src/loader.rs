//! char-rnn's `util/CharSplitLMMinibatchLoader.lua`: a text as a stream of
//! bytes, cut into `batch_size` rows and `seq_length` columns.
//!
//! `input.txt` is read as bytes (a character beyond ASCII is several of them,
//! as in char-rnn); the sorted distinct bytes are the vocabulary. The stream is
//! cut to a multiple of `batch_size × seq_length`, the targets are the stream
//! shifted by one with the last wrapping round to the first, and
//! `view(batch_size, -1)` makes each row one contiguous part of the text, so
//! batch `k + 1` continues every row of batch `k`: the hidden state carried
//! from one batch to the next reads on where it stopped. Batches go to train,
//! val and test by index.
//!
//! As char-rnn keeps `vocab.t7` and `data.t7` beside `input.txt`, this keeps
//! `vocab.json` and `data.bin` ([`Preprocessed`]), rebuilt when either is
//! missing or `input.txt` is newer than either.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The three splits, in char-rnn's order (its `split_index` 1, 2, 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The first `ntrain` batches.
    Train = 0,
    /// The next `nval`.
    Val = 1,
    /// The rest.
    Test = 2,
}

/// The batches of one text.
#[derive(Clone, Debug)]
pub struct Loader {
    /// Byte values by id (`ivocab`), sorted.
    pub vocab: Vec<u8>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Columns per batch.
    pub seq_length: usize,
    /// The stream's ids after the cut, `(batch_size, len / batch_size)` row-major.
    data: Vec<usize>,
    /// The targets: `data` shifted by one.
    ydata: Vec<usize>,
    /// Batches in all.
    pub nbatches: usize,
    /// Batches per split: train, val, test.
    pub split_sizes: [usize; 3],
    /// Each split's batch pointer, 1-based as char-rnn's (0: none read yet).
    batch_ix: [usize; 3],
}

impl Loader {
    /// `CharSplitLMMinibatchLoader.create(data_dir, batch_size, seq_length,
    /// {train_frac, val_frac, test_frac})` on `data_dir/input.txt`, through its
    /// preprocessed files; `log` gets char-rnn's lines about them.
    pub fn create(
        data_dir: &Path,
        batch_size: usize,
        seq_length: usize,
        train_frac: f64,
        val_frac: f64,
        log: &mut dyn Write,
    ) -> Result<Loader, String> {
        let input = data_dir.join("input.txt");
        if !input.is_file() {
            return Err(format!(
                "{}: no input.txt here (-data_dir names a folder holding input.txt)",
                data_dir.display()
            ));
        }
        let stream = Preprocessed::load_or_build(data_dir, log)?;
        Loader::from_bytes(
            &input, &stream, batch_size, seq_length, train_frac, val_frac,
        )
    }

    /// The loader on bytes already read from `input` (named in errors).
    pub fn from_bytes(
        input: &Path,
        bytes: &[u8],
        batch_size: usize,
        seq_length: usize,
        train_frac: f64,
        val_frac: f64,
    ) -> Result<Loader, String> {
        let fail = |e: String| format!("{}: {e}", input.display());
        if batch_size == 0 || seq_length == 0 {
            return Err(format!(
                "-batch_size and -seq_length must be at least 1 (got {batch_size} and {seq_length})"
            ));
        }
        for (name, f) in [("-train_frac", train_frac), ("-val_frac", val_frac)] {
            if !(0.0..=1.0).contains(&f) {
                return Err(format!(
                    "bad split fraction {f} for {name}, not between 0 and 1"
                ));
            }
        }
        if train_frac + val_frac > 1.0 + 1e-9 {
            return Err(format!(
                "-train_frac {train_frac} and -val_frac {val_frac} add up to more than 1"
            ));
        }
        let per_batch = batch_size * seq_length;
        if bytes.len() < per_batch + 1 {
            return Err(fail(format!(
                "{} bytes, fewer than one batch of {batch_size} x {seq_length} needs ({})",
                bytes.len(),
                per_batch + 1
            )));
        }
        let mut vocab: Vec<u8> = bytes.to_vec();
        vocab.sort_unstable();
        vocab.dedup();
        let mut id = [0usize; 256];
        for (i, &b) in vocab.iter().enumerate() {
            id[b as usize] = i;
        }
        // Cut off the end so that the batches divide evenly.
        let len = per_batch * (bytes.len() / per_batch);
        let data: Vec<usize> = bytes[..len].iter().map(|&b| id[b as usize]).collect();
        let mut ydata = data.clone();
        ydata[..len - 1].copy_from_slice(&data[1..]);
        ydata[len - 1] = data[0];
        let nbatches = len / per_batch;

        let test_frac = (1.0 - (train_frac + val_frac)).max(0.0);
        let ntrain = (nbatches as f64 * train_frac).floor() as usize;
        let (nval, ntest) = if test_frac == 0.0 {
            (nbatches - ntrain, 0)
        } else {
            let nval = (nbatches as f64 * val_frac).floor() as usize;
            (nval, nbatches - nval - ntrain)
        };
        Ok(Loader {
            vocab,
            batch_size,
            seq_length,
            data,
            ydata,
            nbatches,
            split_sizes: [ntrain, nval, ntest],
            batch_ix: [0; 3],
        })
    }

    /// The id of each byte value in the vocabulary (`vocab[c]`), if it has one.
    pub fn id_of(&self, byte: u8) -> Option<usize> {
        self.vocab.binary_search(&byte).ok()
    }

    /// `reset_batch_pointer(split)`: the next batch is the split's first.
    pub fn reset_batch_pointer(&mut self, split: Split) {
        self.batch_ix[split as usize] = 0;
    }

    // ANCHOR: next_batch
    /// `next_batch(split)`: the split's next `(x, y)`, cycling round, each
    /// `(seq_length, batch_size)` row-major, time first (train.lua's `prepro`
    /// transposes them so that `x[t]` is one time step of every row).
    pub fn next_batch(&mut self, split: Split) -> Result<(Vec<usize>, Vec<usize>), String> {
        let s = split as usize;
        if self.split_sizes[s] == 0 {
            return Err(format!(
                "a batch of the {split:?} split was asked for, but it has no data"
            ));
        }
        self.batch_ix[s] += 1;
        if self.batch_ix[s] > self.split_sizes[s] {
            self.batch_ix[s] = 1; // cycle around to the beginning
        }
        let ix = self.batch_ix[s] - 1 + self.split_sizes[..s].iter().sum::<usize>();
        let row_len = self.data.len() / self.batch_size; // the view(batch_size, -1)
        let column = |stream: &[usize]| -> Vec<usize> {
            let mut out = Vec::with_capacity(self.seq_length * self.batch_size);
            for t in 0..self.seq_length {
                for b in 0..self.batch_size {
                    out.push(stream[b * row_len + ix * self.seq_length + t]);
                }
            }
            out
        };
        Ok((column(&self.data), column(&self.ydata)))
    }
    // ANCHOR_END: next_batch
}

/// `vocab.json` and `data.bin` beside `input.txt`: the sorted distinct bytes,
/// and the text as one id per byte (`data.bin` starts with [`DATA_MAGIC`] and
/// the count, little-endian `u64`).
pub struct Preprocessed;

/// The first bytes of `data.bin`.
pub const DATA_MAGIC: &[u8; 8] = b"crnndat1";

impl Preprocessed {
    /// The text's bytes, from the preprocessed files when they are there and
    /// not older than `input.txt`, else from `input.txt`, writing the files
    /// (a folder that cannot be written to only warns: the files only save time).
    pub fn load_or_build(data_dir: &Path, log: &mut dyn Write) -> Result<Vec<u8>, String> {
        let input = data_dir.join("input.txt");
        let (vocab_file, data_file) = (data_dir.join("vocab.json"), data_dir.join("data.bin"));
        let w = |e: std::io::Error| format!("writing the log: {e}");
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let input_time = modified(&input);
        let fresh = |p: &Path| match (modified(p), input_time) {
            (Some(cached), Some(input)) => input <= cached,
            _ => false,
        };
        if fresh(&vocab_file) && fresh(&data_file) {
            writeln!(log, "loading data files...").map_err(w)?;
            return Preprocessed::load(&vocab_file, &data_file);
        }
        if vocab_file.exists() && data_file.exists() {
            writeln!(
                log,
                "vocab.json or data.bin detected as stale. Re-running preprocessing..."
            )
        } else {
            writeln!(
                log,
                "vocab.json and data.bin do not exist. Running preprocessing..."
            )
        }
        .map_err(w)?;
        writeln!(
            log,
            "one-time setup: preprocessing input text file {}...",
            input.display()
        )
        .map_err(w)?;
        let bytes = std::fs::read(&input).map_err(|e| format!("{}: {e}", input.display()))?;
        let mut vocab = bytes.clone();
        vocab.sort_unstable();
        vocab.dedup();
        let mut id = [0u8; 256];
        for (i, &b) in vocab.iter().enumerate() {
            id[b as usize] = i as u8; // at most 256 distinct bytes: ids fit a byte
        }
        let mut data = Vec::with_capacity(16 + bytes.len());
        data.extend_from_slice(DATA_MAGIC);
        data.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        data.extend(bytes.iter().map(|&b| id[b as usize]));
        let vocab_json = serde_json::to_vec(&vocab).expect("a list of bytes serialises");
        for (path, contents) in [(&vocab_file, &vocab_json), (&data_file, &data)] {
            writeln!(log, "saving {}", path.display()).map_err(w)?;
            if let Err(e) = report::write_atomic(path, contents) {
                eprintln!(
                    "warning: cannot write {} ({e}); the text is read again next time",
                    path.display()
                );
            }
        }
        Ok(bytes)
    }

    /// The text's bytes back from `vocab.json` and `data.bin`; a damaged file
    /// is refused by name.
    fn load(vocab_file: &Path, data_file: &Path) -> Result<Vec<u8>, String> {
        let damaged = |p: &PathBuf, what: String| {
            format!(
                "{}: {what}; delete it and it is rebuilt from input.txt",
                p.display()
            )
        };
        let vocab_file = vocab_file.to_path_buf();
        let data_file = data_file.to_path_buf();
        let json =
            std::fs::read(&vocab_file).map_err(|e| format!("{}: {e}", vocab_file.display()))?;
        let vocab: Vec<u8> = serde_json::from_slice(&json)
            .map_err(|e| damaged(&vocab_file, format!("not a list of byte values ({e})")))?;
        if vocab.windows(2).any(|p| p[0] >= p[1]) {
            return Err(damaged(
                &vocab_file,
                "the bytes are not sorted and distinct".into(),
            ));
        }
        let data =
            std::fs::read(&data_file).map_err(|e| format!("{}: {e}", data_file.display()))?;
        if data.len() < 16 || &data[..8] != DATA_MAGIC {
            return Err(damaged(&data_file, "not a char-rnn data file".into()));
        }
        let count = u64::from_le_bytes(data[8..16].try_into().expect("8 bytes"));
        if count != (data.len() - 16) as u64 {
            return Err(damaged(
                &data_file,
                format!(
                    "the header says {count} bytes, the file holds {}",
                    data.len() - 16
                ),
            ));
        }
        data[16..]
            .iter()
            .map(|&i| vocab.get(i as usize).copied())
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| {
                damaged(
                    &data_file,
                    format!("an id past the {} in vocab.json", vocab.len()),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_continue_each_row_and_targets_wrap() {
        // 26 bytes, batch 2 x seq 3: cut to 24, rows "abcdefghijkl" and "mnopqrstuvwx".
        let text: Vec<u8> = (b'a'..=b'z').collect();
        let mut l = Loader::from_bytes(Path::new("t"), &text, 2, 3, 0.5, 0.5).unwrap();
        assert_eq!((l.nbatches, l.split_sizes), (4, [2, 2, 0]));
        let (x, y) = l.next_batch(Split::Train).unwrap();
        assert_eq!(x, [0, 12, 1, 13, 2, 14]); // a m, b n, c o
        assert_eq!(y, [1, 13, 2, 14, 3, 15]);
        let (x, _) = l.next_batch(Split::Train).unwrap();
        assert_eq!(x, [3, 15, 4, 16, 5, 17]); // d p: each row reads on
        l.next_batch(Split::Val).unwrap();
        let (_, y) = l.next_batch(Split::Val).unwrap();
        assert_eq!(y[5], 0, "the last target wraps round to the first byte");
        let (x, _) = l.next_batch(Split::Train).unwrap();
        assert_eq!(x[0], 0, "the train split cycles");
    }

    #[test]
    fn preprocessed_files_are_kept_and_rebuilt_when_the_text_is_newer() {
        let dir = std::env::temp_dir().join(format!("char-rnn-prepro-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let text = "héllo wörld\n".repeat(20);
        std::fs::write(dir.join("input.txt"), &text).unwrap();
        let mut log = Vec::new();
        let first = Preprocessed::load_or_build(&dir, &mut log).unwrap();
        let second = Preprocessed::load_or_build(&dir, &mut log).unwrap();
        assert_eq!(
            (first.as_slice(), second.as_slice()),
            (text.as_bytes(), text.as_bytes())
        );
        let log_text = String::from_utf8(log).unwrap();
        assert!(
            log_text.contains("do not exist. Running preprocessing"),
            "{log_text}"
        );
        assert!(log_text.ends_with("loading data files...\n"), "{log_text}");

        // A newer input.txt is read again, and the files follow it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("input.txt"), "abcabc").unwrap();
        let mut log = Vec::new();
        assert_eq!(
            Preprocessed::load_or_build(&dir, &mut log).unwrap(),
            b"abcabc"
        );
        assert!(String::from_utf8(log)
            .unwrap()
            .contains("detected as stale"));
        assert_eq!(
            std::fs::read(dir.join("vocab.json")).unwrap(),
            b"[97,98,99]"
        );

        // A damaged file is refused by name.
        let data = dir.join("data.bin");
        let mut bytes = std::fs::read(&data).unwrap();
        bytes[16] = 7; // an id past the three in vocab.json
        std::fs::write(&data, &bytes).unwrap();
        let err = Preprocessed::load_or_build(&dir, &mut Vec::new()).unwrap_err();
        assert!(
            err.contains("data.bin") && err.contains("an id past the 3"),
            "{err}"
        );
        std::fs::write(&data, &bytes[..20]).unwrap();
        let err = Preprocessed::load_or_build(&dir, &mut Vec::new()).unwrap_err();
        assert!(
            err.contains("the header says 6 bytes, the file holds 4"),
            "{err}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
