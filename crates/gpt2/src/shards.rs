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

mod loader;
mod prepare;

pub use loader::{DataLoader, LoaderState};
pub use prepare::{prepare, prepare_nanogpt, InputKind, PrepareArgs};

use memmap2::Mmap;
use std::path::{Path, PathBuf};

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
