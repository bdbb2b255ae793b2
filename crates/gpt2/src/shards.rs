//! Token shards as build-nanogpt's `fineweb.py` and llm.c's `dev/data/` store
//! them, and the loader that walks them (build-nanogpt's final
//! `DataLoaderLite`, 69cb21f "switch to FineWeb EDU").
//!
//! Three formats, all uint16 GPT-2 tokens. Two are shards, each document
//! starting with `<|endoftext|>` (50256):
//! - `.npy`: NumPy's format, as `np.save` writes a `uint16` array
//!   (build-nanogpt's `write_datafile`);
//! - `.bin`: llm.c's (`dev/data/data_common.py`): a header of 256 little-endian
//!   int32 (magic 20240520, version 1, token count, zeros), then the tokens.
//!
//! Shard 0 is the validation split and the rest train (`fineweb.py`), named
//! `{prefix}_val_000000.npy`, `{prefix}_train_000001.npy`, … . The third is
//! nanoGPT's (`data/shakespeare/prepare.py`): one text split 90/10 by
//! characters into `train.bin` and `val.bin`, headerless, with no
//! end-of-text tokens. A folder's layout, not a file's extension, says which
//! reader applies ([`Layout::of`]). Files are memory-mapped: a batch reads
//! its `B·T+1` tokens from the page cache.

use memmap2::Mmap;
use std::path::{Path, PathBuf};
use tensor::rng::TorchGenerator;

/// `<|endoftext|>`, which starts every document.
pub const EOT: u16 = 50256;
/// llm.c's magic number for token files.
pub const LLMC_MAGIC: i32 = 20240520;
/// llm.c's token file version (uint16 tokens).
pub const LLMC_VERSION: i32 = 1;
const LLMC_HEADER_BYTES: usize = 256 * 4;

/// How much of a shard is read to check its header before it is mapped:
/// llm.c's header is 1,024 bytes and NumPy's a few dozen.
const SHARD_HEAD_BYTES: u64 = 64 * 1024;

/// A shard's file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ShardFormat {
    /// build-nanogpt's `.npy`.
    Npy,
    /// llm.c's `.bin`.
    Bin,
    /// nanoGPT's headerless `train.bin` and `val.bin`.
    Nanogpt,
}

impl ShardFormat {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            ShardFormat::Npy => "npy",
            ShardFormat::Bin | ShardFormat::Nanogpt => "bin",
        }
    }
}

/// The bytes of a shard holding `tokens` in `format`.
pub fn shard_bytes(format: ShardFormat, tokens: &[u16]) -> Vec<u8> {
    let mut out = match format {
        ShardFormat::Npy => {
            // NumPy format 1.0: magic, version, header length, then the header
            // dict padded with spaces and a newline to a multiple of 64 bytes.
            let dict = format!(
                "{{'descr': '<u2', 'fortran_order': False, 'shape': ({},), }}",
                tokens.len()
            );
            let unpadded = 10 + dict.len() + 1;
            let header_len = dict.len() + 1 + (64 - unpadded % 64) % 64;
            let mut out = b"\x93NUMPY\x01\x00".to_vec();
            out.extend((header_len as u16).to_le_bytes());
            out.extend(dict.as_bytes());
            out.resize(10 + header_len - 1, b' ');
            out.push(b'\n');
            out
        }
        ShardFormat::Bin => {
            let mut header = [0i32; 256];
            header[0] = LLMC_MAGIC;
            header[1] = LLMC_VERSION;
            header[2] = tokens.len() as i32;
            header.iter().flat_map(|v| v.to_le_bytes()).collect()
        }
        ShardFormat::Nanogpt => Vec::new(),
    };
    out.extend(gpt::nanogpt::prepare::uint16_bytes(tokens));
    out
}

/// Writes a shard atomically: to a temporary name, then renamed.
pub fn write_shard(path: &Path, format: ShardFormat, tokens: &[u16]) -> Result<(), String> {
    if format == ShardFormat::Bin && tokens.len() > i32::MAX as usize {
        return Err(format!(
            "{}: llm.c's header counts tokens in an int32; {} do not fit",
            path.display(),
            tokens.len()
        ));
    }
    report::write_atomic(path, &shard_bytes(format, tokens))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Where the tokens start in a `.npy` file, checking that it holds one
/// little-endian uint16 vector filling the rest of the file.
fn npy_data_offset(bytes: &[u8], total: usize) -> Result<(usize, usize), String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic)".into());
    }
    let (header_start, header_len): (usize, usize) = match bytes[6] {
        1 => (10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 if bytes.len() >= 12 => (
            12,
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
        ),
        v => return Err(format!(".npy version {v} is not one NumPy writes")),
    };
    let offset = header_start
        .checked_add(header_len)
        .filter(|&o| o <= total)
        .ok_or("the .npy header runs past the end of the file")?;
    if offset > bytes.len() {
        return Err(format!(
            "the .npy header is {header_len} bytes; NumPy writes headers of a few dozen"
        ));
    }
    let header = std::str::from_utf8(&bytes[header_start..offset])
        .map_err(|_| "the .npy header is not text")?;
    // NumPy pads the dict with spaces and ends it with a newline: anything
    // else there is damage.
    let dict_end = header.rfind('}').map_or(0, |i| i + 1);
    if !header.ends_with('\n')
        || !header[dict_end..header.len() - 1]
            .trim_start_matches(' ')
            .is_empty()
    {
        return Err(format!(
            "the .npy header is damaged: after its dict comes {:?}, not spaces and a newline",
            &header[dict_end..]
        ));
    }
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    if !(compact.contains("'descr':'<u2'") || compact.contains("'descr':'|u2'")) {
        return Err(format!(
            "the .npy array is not uint16 little-endian (header {})",
            header.trim()
        ));
    }
    if !compact.contains("'fortran_order':False") {
        return Err("the .npy array is in Fortran order".into());
    }
    let shape = compact
        .split("'shape':(")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .ok_or("the .npy header has no shape")?;
    let dims: Vec<&str> = shape.split(',').filter(|d| !d.is_empty()).collect();
    let [n] = dims[..] else {
        return Err(format!(
            "the .npy array has shape ({shape}); a shard is one vector"
        ));
    };
    let n: usize = n
        .trim_end_matches('L')
        .parse()
        .map_err(|_| format!("the .npy shape ({shape}) is not a count"))?;
    let data = total - offset;
    if n.checked_mul(2) != Some(data) {
        return Err(format!(
            "the .npy header says {n} tokens but the file holds {data} bytes after it"
        ));
    }
    Ok((offset, n))
}

/// nanoGPT's headerless `.bin`: every byte pair a token, from byte 0.
fn headerless_length(total: usize) -> Result<(usize, usize), String> {
    Ok((0, gpt::nanogpt::prepare::uint16_count(total)?))
}

/// How a data folder holds its tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// nanoGPT's `train.bin` and `val.bin`.
    Nanogpt {
        /// `train.bin`.
        train: PathBuf,
        /// `val.bin`.
        val: PathBuf,
    },
    /// build-nanogpt's or llm.c's shards (`*_train_*`, `*_val_*`).
    Shards {
        /// The train shards, in order.
        train: Vec<PathBuf>,
        /// The val shards, in order.
        val: Vec<PathBuf>,
    },
}

impl Layout {
    /// The layout of `dir`, told by what it holds: nanoGPT's `train.bin` and
    /// `val.bin`, or shards named `*_train_*` and `*_val_*`. A folder with
    /// both, or neither, is an error that says what each layout holds.
    pub fn of(dir: &Path) -> Result<Layout, String> {
        if !dir.is_dir() {
            return Err(format!("{}: not a folder", dir.display()));
        }
        let (train, val) = (dir.join("train.bin"), dir.join("val.bin"));
        let nanogpt = train.is_file() || val.is_file();
        let shards = (list_shards(dir, "train"), list_shards(dir, "val"));
        let has_shards = shards.0.is_ok() || shards.1.is_ok();
        match (nanogpt, has_shards) {
            (true, true) => Err(format!(
                "{}: holds both nanoGPT's train.bin/val.bin and token shards; keep one layout in a folder",
                dir.display()
            )),
            (true, false) => {
                if dir.join("meta.pkl").is_file() {
                    // prepare.py's character level: ids of a vocabulary of its own.
                    return Err(format!(
                        "{}: holds meta.pkl, so its train.bin and val.bin are character ids \
                         (`gpt prepare`, nanoGPT's shakespeare_char), not GPT-2's tokens; \
                         prepare the text into another folder with \
                         `gpt2 prepare --format nanogpt --input FILE --out NEW_DIR`",
                        dir.display()
                    ));
                }
                for path in [&train, &val] {
                    if !path.is_file() {
                        return Err(format!(
                            "{}: nanoGPT's layout needs both train.bin and val.bin; {} is missing",
                            dir.display(),
                            path.display()
                        ));
                    }
                }
                Ok(Layout::Nanogpt { train, val })
            }
            (false, true) => Ok(Layout::Shards {
                train: shards.0?,
                val: shards.1?,
            }),
            (false, false) => Err(format!(
                "{}: holds no tokens: neither nanoGPT's headerless train.bin and val.bin \
                 (`gpt2 prepare --format nanogpt`) nor shards named *_train_* and *_val_* \
                 (.npy as build-nanogpt writes them, .bin with llm.c's header; `gpt2 prepare`)",
                dir.display()
            )),
        }
    }
}

/// Where the tokens start in an llm.c `.bin` file, checking its header.
fn llmc_data_offset(bytes: &[u8], total: usize) -> Result<(usize, usize), String> {
    if total < LLMC_HEADER_BYTES || bytes.len() < LLMC_HEADER_BYTES {
        return Err(format!(
            "{total} bytes is shorter than llm.c's 1,024-byte header"
        ));
    }
    let word = |i: usize| i32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
    if word(0) != LLMC_MAGIC {
        return Err(format!(
            "bad magic {} (llm.c's token files start with {LLMC_MAGIC})",
            word(0)
        ));
    }
    if word(1) != LLMC_VERSION {
        return Err(format!(
            "version {} (llm.c's uint16 token files are version {LLMC_VERSION})",
            word(1)
        ));
    }
    let n = usize::try_from(word(2)).map_err(|_| format!("negative token count {}", word(2)))?;
    // llm.c's writer starts from `np.zeros(256)`: the words after the third are 0.
    if let Some(k) = (3..256).find(|&k| word(k) != 0) {
        return Err(format!(
            "header word {k} is {}, where llm.c writes 0 (damaged?)",
            word(k)
        ));
    }
    let data = total - LLMC_HEADER_BYTES;
    if n * 2 != data {
        return Err(format!(
            "the header says {n} tokens but the file holds {data} bytes after it"
        ));
    }
    Ok((LLMC_HEADER_BYTES, n))
}

/// A shard's tokens: memory-mapped from a file, or held in memory.
pub struct TokenShard {
    name: String,
    source: Source,
}

enum Source {
    Mapped {
        map: Mmap,
        offset: usize,
        len: usize,
        /// The file, and its size when its header was checked: every read
        /// checks that it still has that size.
        file: std::fs::File,
        size: u64,
    },
    Memory(Vec<u16>),
}

impl TokenShard {
    /// Maps a `.npy` or llm.c `.bin` shard, by its extension, checking its
    /// header against its size.
    pub fn open(path: &Path) -> Result<TokenShard, String> {
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some("npy") => ShardFormat::Npy,
            Some("bin") => ShardFormat::Bin,
            _ => {
                return Err(format!(
                    "{}: a token shard ends in .npy or .bin",
                    path.display()
                ))
            }
        };
        TokenShard::open_as(path, format)
    }

    /// Maps a file in `format`, checking its header (if it has one) against its size.
    pub fn open_as(path: &Path, format: ShardFormat) -> Result<TokenShard, String> {
        use std::io::Read;
        let fail = |e: String| format!("{}: {e}", path.display());
        let mut file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        let size = file.metadata().map_err(|e| fail(e.to_string()))?.len();
        // The header, read plainly and checked against the file's size
        // before anything is mapped.
        let mut head = Vec::new();
        (&mut file)
            .take(SHARD_HEAD_BYTES)
            .read_to_end(&mut head)
            .map_err(|e| fail(e.to_string()))?;
        let total = usize::try_from(size).map_err(|_| fail("too large to map".into()))?;
        let (offset, len) = match format {
            ShardFormat::Npy => npy_data_offset(&head, total),
            ShardFormat::Bin => llmc_data_offset(&head, total),
            ShardFormat::Nanogpt => headerless_length(total),
        }
        .map_err(fail)?;
        // SAFETY: the map is read only, and its length is checked against
        // the size the header was checked against. Another process can still
        // shrink the file while it is mapped; `read` checks the size before
        // each copy, which leaves only a truncation between that check and the
        // copy (microseconds) to end the process with SIGBUS, as it would end
        // numpy's np.load(mmap_mode='r') or llm.c.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| fail(e.to_string()))?;
        if map.len() as u64 != size {
            return Err(fail(format!(
                "its size changed from {size} to {} bytes while it was being opened",
                map.len()
            )));
        }
        Ok(TokenShard {
            name: path.display().to_string(),
            source: Source::Mapped {
                map,
                offset,
                len,
                file,
                size,
            },
        })
    }

    /// Tokens held in memory, named for errors.
    pub fn from_tokens(name: &str, tokens: Vec<u16>) -> TokenShard {
        TokenShard {
            name: name.to_string(),
            source: Source::Memory(tokens),
        }
    }

    /// The shard's name: its path, or the name it was given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Mapped { len, .. } => *len,
            Source::Memory(tokens) => tokens.len(),
        }
    }

    /// Whether the shard holds no tokens.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tokens `start..start + n`. Panics past the end: the loader's checks
    /// make that impossible (see its property test).
    pub fn read(&self, start: usize, n: usize) -> Vec<usize> {
        assert!(
            start + n <= self.len(),
            "read of {start}..{} past the end of {} ({} tokens)",
            start + n,
            self.name,
            self.len()
        );
        match &self.source {
            Source::Mapped { map, offset, .. } => self.unchanged(map)
                [offset + 2 * start..offset + 2 * (start + n)]
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                .collect(),
            Source::Memory(tokens) => tokens[start..start + n]
                .iter()
                .map(|&t| t as usize)
                .collect(),
        }
    }

    /// The mapped bytes, after checking that the file still has the size its
    /// header was checked against: a file truncated under a mapping would
    /// end the process with SIGBUS at the copy. Stops with a message naming
    /// the file instead; the loader has no way to go on without its tokens.
    fn unchanged<'m>(&self, map: &'m Mmap) -> &'m [u8] {
        if let Source::Mapped { file, size, .. } = &self.source {
            let now = file.metadata().map(|m| m.len());
            if now.as_ref().ok() != Some(size) {
                panic!(
                    "{}: the shard's size changed while it was mapped ({size} bytes when opened, \
                     {now:?} now); refusing to read it",
                    self.name
                );
            }
        }
        map
    }

    /// The first token at or above `limit`, with its index, if any.
    pub fn first_token_from(&self, limit: usize) -> Option<(usize, usize)> {
        let found = match &self.source {
            Source::Mapped {
                map, offset, len, ..
            } => self.unchanged(map)[*offset..offset + 2 * len]
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
                .enumerate()
                .find(|&(_, t)| t >= limit),
            Source::Memory(tokens) => tokens
                .iter()
                .map(|&t| t as usize)
                .enumerate()
                .find(|&(_, t)| t >= limit),
        };
        found
    }

    /// Every token, for shuffling documents.
    fn all(&self) -> Vec<u16> {
        self.read(0, self.len())
            .into_iter()
            .map(|t| t as u16)
            .collect()
    }
}

/// The shards of `split` (`"train"` or `"val"`) in `dir`: the `.npy` and
/// `.bin` files whose name holds `_{split}_`, sorted by name, as
/// build-nanogpt's loader lists them.
pub fn list_shards(dir: &Path, split: &str) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ext = path.extension().and_then(|e| e.to_str());
        if name.contains(&format!("_{split}_")) && matches!(ext, Some("npy" | "bin")) {
            paths.push(path);
        }
    }
    paths.sort();
    let npy = paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "npy"))
        .count();
    if npy > 0 && npy < paths.len() {
        return Err(format!(
            "{}: holds both .npy and .bin {split} shards; keep one format in a folder",
            dir.display()
        ));
    }
    if paths.is_empty() {
        return Err(format!(
            "{}: no {split} shards (files named *_{split}_*.npy or .bin; `gpt2 prepare` writes them)",
            dir.display()
        ));
    }
    Ok(paths)
}

/// splitmix64's finalizer of `a` and `b`: distinct seeds for each (seed,
/// epoch) and (epoch, shard), where a sum would make seed 8's first epoch
/// seed 7's second.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where a loader is: enough to continue from a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LoaderState {
    /// Passes over all shards completed.
    pub epoch: u64,
    /// The index, in this epoch's order, of the shard being read.
    pub current_shard: usize,
    /// The next read's start in that shard.
    pub current_position: usize,
}

// ANCHOR: data_loader
/// build-nanogpt's final `DataLoaderLite`: process `rank` of `world` starts at
/// `B·T·rank`, strides `B·T·world`, and moves to the next shard when
/// `pos + B·T·world + 1 > len`, back to the first after the last.
///
/// With `shuffle`, each epoch visits the shards in a new order and each
/// shard's documents (split before each `<|endoftext|>`) in a new order,
/// from `seed` and the epoch (what build-nanogpt's users ask for in its PR #52);
/// a shuffled shard is read into memory to be reordered.
pub struct DataLoader {
    shards: Vec<TokenShard>,
    b: usize,
    t: usize,
    rank: usize,
    world: usize,
    shuffle: Option<u64>,
    order: Vec<usize>,
    shuffled: Option<TokenShard>,
    state: LoaderState,
}

impl DataLoader {
    /// A loader over `shards`, each of which must hold one stride of every
    /// process and a last target: `B·T·world + 1` tokens.
    pub fn new(
        shards: Vec<TokenShard>,
        (b, t): (usize, usize),
        (rank, world): (usize, usize),
        shuffle: Option<u64>,
    ) -> Result<DataLoader, String> {
        if b == 0 || t == 0 || world == 0 || rank >= world {
            return Err(format!(
                "a loader needs B, T and world above 0 and rank below world (B={b}, T={t}, rank {rank} of {world})"
            ));
        }
        if shards.is_empty() {
            return Err("a loader needs at least one shard".into());
        }
        let stride = b * t * world;
        for shard in &shards {
            if shard.len() < stride + 1 {
                return Err(format!(
                    "{}: {} tokens cannot fill one step of {world} process(es) at {b}×{t} and its last target ({} tokens)",
                    shard.name(),
                    shard.len(),
                    stride + 1
                ));
            }
        }
        let mut loader = DataLoader {
            order: (0..shards.len()).collect(),
            shards,
            b,
            t,
            rank,
            world,
            shuffle,
            shuffled: None,
            state: LoaderState {
                epoch: 0,
                current_shard: 0,
                current_position: 0,
            },
        };
        loader.reset();
        Ok(loader)
    }

    /// Back to the first shard of epoch 0 (build-nanogpt resets the val loader before each evaluation).
    pub fn reset(&mut self) {
        self.restore(LoaderState {
            epoch: 0,
            current_shard: 0,
            current_position: self.b * self.t * self.rank,
        })
        .expect("the start is always a valid state");
    }

    /// Where the loader is.
    pub fn state(&self) -> LoaderState {
        self.state
    }

    /// Continues from a saved state, checking that it fits these shards; on
    /// an error the loader stays where it was.
    pub fn restore(&mut self, state: LoaderState) -> Result<(), String> {
        if state.current_shard >= self.shards.len() {
            return Err(format!(
                "the saved loader is at shard {} of {}",
                state.current_shard,
                self.shards.len()
            ));
        }
        let saved = (self.state, self.order.clone(), self.shuffled.take());
        self.state = state;
        self.order = self.epoch_order(state.epoch);
        self.load_shard();
        let len = self.current().len();
        if state
            .current_position
            .checked_add(self.b * self.t + 1)
            .is_none_or(|end| end > len)
        {
            let err = format!(
                "the saved loader reads {}..{} of {}, which holds {len} tokens",
                state.current_position,
                state.current_position.saturating_add(self.b * self.t + 1),
                self.current().name()
            );
            (self.state, self.order, self.shuffled) = saved;
            return Err(err);
        }
        Ok(())
    }

    fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        match self.shuffle {
            None => (0..self.shards.len()).collect(),
            Some(seed) => TorchGenerator::manual_seed(mix(seed, epoch))
                .randperm(self.shards.len())
                .into_iter()
                .map(|i| i as usize)
                .collect(),
        }
    }

    /// With shuffling, reads the current shard with its documents reordered.
    fn load_shard(&mut self) {
        self.shuffled = self.shuffle.map(|seed| {
            let shard = &self.shards[self.order[self.state.current_shard]];
            let tokens = shard.all();
            let mut starts: Vec<usize> = (0..tokens.len())
                .filter(|&i| i == 0 || tokens[i] == EOT)
                .collect();
            starts.push(tokens.len());
            let docs: Vec<&[u16]> = starts.windows(2).map(|w| &tokens[w[0]..w[1]]).collect();
            let shard_seed = mix(
                mix(seed, self.state.epoch),
                1 + self.state.current_shard as u64,
            );
            let perm = TorchGenerator::manual_seed(shard_seed).randperm(docs.len());
            let reordered = perm
                .iter()
                .flat_map(|&i| docs[i as usize].iter().copied())
                .collect();
            TokenShard::from_tokens(shard.name(), reordered)
        });
    }

    fn current(&self) -> &TokenShard {
        match &self.shuffled {
            Some(shard) => shard,
            None => &self.shards[self.order[self.state.current_shard]],
        }
    }

    /// The next `(x, y)`, each `(B, T)` row-major, `y` one token ahead.
    pub fn next_batch(&mut self) -> (Vec<usize>, Vec<usize>) {
        let n = self.b * self.t;
        let buf = self.current().read(self.state.current_position, n + 1);
        let (x, y) = (buf[..n].to_vec(), buf[1..].to_vec());
        let stride = n * self.world;
        self.state.current_position += stride;
        if self.state.current_position + stride + 1 > self.current().len() {
            self.state.current_shard += 1;
            if self.state.current_shard == self.shards.len() {
                self.state.current_shard = 0;
                self.state.epoch += 1;
                self.order = self.epoch_order(self.state.epoch);
            }
            self.load_shard();
            self.state.current_position = n * self.rank;
        }
        (x, y)
    }
}
// ANCHOR_END: data_loader

/// What `gpt2 prepare` reads: plain text (one document) or JSON lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// The whole file is one document.
    Text,
    /// One JSON object per line, the document in this string field
    /// (FineWeb-Edu's rows keep it in `text`).
    Jsonl {
        /// The field holding the document.
        field: String,
    },
}

/// The documents of `input`, each tokenized as `fineweb.py`'s `tokenize`:
/// `<|endoftext|>` then `encode_ordinary(text)` (special tokens in the text
/// are plain text), checked to fit uint16. Calls `each` per document with
/// the bytes read so far.
fn for_each_document(
    input: &Path,
    kind: &InputKind,
    tokenizer: &bpe::RegexTokenizer,
    each: &mut dyn FnMut(Vec<u16>, u64) -> Result<(), String>,
) -> Result<(), String> {
    let fail = |e: String| format!("{}: {e}", input.display());
    let tokenize = |doc: &str| -> Result<Vec<u16>, String> {
        let ids = tokenizer.encode_ordinary(doc).map_err(|e| e.to_string())?;
        let mut tokens = Vec::with_capacity(ids.len() + 1);
        tokens.push(EOT);
        for id in ids {
            tokens.push(u16::try_from(id).map_err(|_| format!("token {id} does not fit uint16"))?);
        }
        Ok(tokens)
    };
    match kind {
        InputKind::Text => {
            let text = std::fs::read_to_string(input).map_err(|e| fail(e.to_string()))?;
            each(tokenize(&text).map_err(fail)?, text.len() as u64)
        }
        InputKind::Jsonl { field } => {
            // Streamed line by line: FineWeb-Edu's export runs to tens of GB.
            let file = std::fs::File::open(input).map_err(|e| fail(e.to_string()))?;
            let mut read = 0u64;
            for (i, line) in std::io::BufRead::lines(std::io::BufReader::new(file)).enumerate() {
                let line = line.map_err(|e| fail(format!("line {}: {e}", i + 1)))?;
                read += line.len() as u64 + 1;
                if line.trim().is_empty() {
                    continue;
                }
                let row: serde_json::Value = serde_json::from_str(&line)
                    .map_err(|e| fail(format!("line {}: not JSON: {e}", i + 1)))?;
                let doc = row
                    .get(field)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| fail(format!("line {}: no string field {field:?}", i + 1)))?;
                each(
                    tokenize(doc).map_err(|e| fail(format!("line {}: {e}", i + 1)))?,
                    read,
                )?;
            }
            Ok(())
        }
    }
}

// ANCHOR: prepare
/// `fineweb.py`: tokenizes `input` into shards of `shard_tokens` tokens in
/// `out`, filling each shard to the brim and carrying a document that does
/// not fit into the next; the last shard holds what is left. Shard 0 is
/// `val`, the rest `train`. Returns the paths written.
pub fn prepare(
    input: &Path,
    kind: &InputKind,
    out: &Path,
    prefix: &str,
    shard_tokens: usize,
    format: ShardFormat,
) -> Result<Vec<PathBuf>, String> {
    if format == ShardFormat::Nanogpt {
        if *kind != InputKind::Text {
            return Err(
                "--format nanogpt reads one text, as nanoGPT's data/shakespeare/prepare.py does; \
                 --jsonl makes shards (--format npy or bin)"
                    .into(),
            );
        }
        return prepare_nanogpt(input, out);
    }
    if shard_tokens == 0 {
        return Err("--shard-tokens must be above 0".into());
    }
    let size = std::fs::metadata(input)
        .map_err(|e| format!("{}: {e}", input.display()))?
        .len();
    report::check_out_dir("--out", out)?;
    for split in ["val", "train"] {
        if let Ok(existing) = list_shards(out, split) {
            if let Some(old) = existing.iter().find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{prefix}_{split}_")))
            }) {
                return Err(format!(
                    "{}: already holds shards ({}); remove them or choose another --out or --prefix",
                    out.display(),
                    old.display()
                ));
            }
        }
    }
    let tokenizer = bpe::Gpt2Tokenizer::from_data_dir()
        .map_err(|e| e.to_string())?
        .into_inner();
    let bar = indicatif::ProgressBar::new(size);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "tokenizing [{bar:40}] {bytes}/{total_bytes} ({eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut written = Vec::new();
    let mut shard: Vec<u16> = Vec::with_capacity(shard_tokens);
    let write = |shard: &[u16], written: &mut Vec<PathBuf>| -> Result<(), String> {
        let index = written.len();
        let split = if index == 0 { "val" } else { "train" };
        let path = out.join(format!(
            "{prefix}_{split}_{index:06}.{}",
            format.extension()
        ));
        write_shard(&path, format, shard)?;
        written.push(path);
        Ok(())
    };
    let mut text_tokens = 0; // the tokens besides each document's end-of-text
    for_each_document(input, kind, &tokenizer, &mut |tokens, read| {
        text_tokens += tokens.len() - 1;
        let mut rest = &tokens[..];
        while shard.len() + rest.len() >= shard_tokens {
            let take = shard_tokens - shard.len();
            shard.extend_from_slice(&rest[..take]);
            write(&shard, &mut written)?;
            shard.clear();
            rest = &rest[take..];
        }
        shard.extend_from_slice(rest);
        bar.set_position(read);
        Ok(())
    })?;
    if text_tokens == 0 {
        // Only end-of-text tokens: nothing to train on.
        for path in &written {
            let _ = std::fs::remove_file(path);
        }
        return Err(format!(
            "input file {}: it holds no text to tokenize",
            input.display()
        ));
    }
    if !shard.is_empty() {
        write(&shard, &mut written)?;
    }
    bar.finish_and_clear();
    Ok(written)
}
// ANCHOR_END: prepare

// ANCHOR: prepare_nanogpt
/// nanoGPT's `data/shakespeare/prepare.py` on any text: read as Python's
/// `open(path, 'r', encoding='utf-8')` reads it, split at `int(n*0.9)`
/// characters, each part `encode_ordinary`'d with GPT-2's tokenizer (no
/// end-of-text tokens), written headerless to `out/train.bin` and
/// `out/val.bin`. Returns the two paths.
pub fn prepare_nanogpt(input: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    let text = data::python_text::read(input)?;
    let n = text.chars().count();
    let cut = (n as f64 * 0.9) as usize; // int(n*0.9)
    let at = text.char_indices().nth(cut).map_or(text.len(), |(i, _)| i);
    let (train, val) = text.split_at(at);
    let tokenizer = bpe::Gpt2Tokenizer::from_data_dir()
        .map_err(|e| e.to_string())?
        .into_inner();
    let encode = |part: &str, split: &str| -> Result<Vec<u16>, String> {
        let ids = tokenizer.encode_ordinary(part).map_err(|e| e.to_string())?;
        if ids.is_empty() {
            return Err(format!(
                "input file {}: its {split} split ({} of {n} characters) holds no tokens; \
                 give a longer text",
                input.display(),
                part.chars().count()
            ));
        }
        ids.iter()
            .map(|&id| u16::try_from(id).map_err(|_| format!("token {id} does not fit uint16")))
            .collect()
    };
    let (train, val) = (encode(train, "train")?, encode(val, "val")?);
    report::check_out_dir("--out", out)?;
    let mut written = Vec::new();
    for (name, tokens) in [("train.bin", &train), ("val.bin", &val)] {
        let path = out.join(name);
        write_shard(&path, ShardFormat::Nanogpt, tokens)?;
        written.push(path);
    }
    Ok(written)
}
// ANCHOR_END: prepare_nanogpt

/// `gpt2 prepare`: tokenize text or JSON lines into token shards, as fineweb.py does.
#[derive(clap::Args)]
pub struct PrepareArgs {
    /// A text file (one document) or, with --jsonl, one JSON object per line.
    #[arg(long)]
    input: PathBuf,
    /// Read --input as JSON lines.
    #[arg(long)]
    jsonl: bool,
    /// The JSON field holding each document.
    #[arg(long, default_value = "text")]
    field: String,
    /// Folder for the shards (`--out-dir` too, as `gpt prepare` spells it).
    #[arg(long, alias = "out-dir", alias = "out_dir")]
    out: PathBuf,
    /// Tokens per shard (fineweb.py: 100,000,000).
    #[arg(long, default_value_t = 100_000_000)]
    shard_tokens: usize,
    /// build-nanogpt's .npy shards, llm.c's .bin shards, or nanoGPT's
    /// headerless train.bin and val.bin (a 90/10 split of one text, as
    /// its data/shakespeare/prepare.py writes them).
    #[arg(long, value_enum, default_value = "npy")]
    format: ShardFormat,
    /// The shards' names start with this (fineweb.py: edufineweb).
    #[arg(long)]
    prefix: Option<String>,
}

impl PrepareArgs {
    /// Writes the shards and prints each one's token count.
    pub fn run(self) -> Result<(), String> {
        let kind = match self.jsonl {
            true => InputKind::Jsonl { field: self.field },
            false => InputKind::Text,
        };
        let stem = self
            .input
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("shard");
        let prefix = self.prefix.unwrap_or_else(|| stem.to_string());
        let written = prepare(
            &self.input,
            &kind,
            &self.out,
            &prefix,
            self.shard_tokens,
            self.format,
        )?;
        for path in written {
            let tokens = match self.format {
                ShardFormat::Nanogpt => TokenShard::open_as(&path, self.format)?.len(),
                _ => TokenShard::open(&path)?.len(),
            };
            println!("{}: {tokens} tokens", path.display());
        }
        Ok(())
    }
}
