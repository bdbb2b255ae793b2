//! What goes wrong when a data file is looked up, worded so the reader can fix it.

use std::fmt;
use std::path::PathBuf;

use crate::catalogue::{DataFile, FILES};

/// How the data folder was chosen; the error messages say which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The `ZTH_DATA` environment variable.
    ZthData,
    /// The workspace's `datasets/` folder (`ZTH_DATA` unset).
    Workspace,
    /// A folder the caller named (`cargo xtask data --dir DIR`, tests).
    Explicit,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::ZthData => "the folder named by ZTH_DATA",
            Origin::Workspace => "the workspace's datasets/ folder; ZTH_DATA is not set",
            Origin::Explicit => "the folder given on the command line",
        })
    }
}

/// A data file could not be used.
#[derive(Debug)]
pub enum DataError {
    /// The name is not in the catalogue ([`FILES`]).
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The file is not in the data folder.
    Missing {
        /// The catalogue entry.
        file: &'static DataFile,
        /// The folder that was searched.
        dir: PathBuf,
        /// How that folder was chosen.
        origin: Origin,
    },
    /// The file is there but its SHA-256 is not the catalogue's.
    Corrupt {
        /// The catalogue entry.
        file: &'static DataFile,
        /// The folder that was searched.
        dir: PathBuf,
        /// How that folder was chosen.
        origin: Origin,
        /// SHA-256 of the bytes found.
        actual: String,
    },
    /// The file exists but could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::Unknown { name } => {
                let known: Vec<&str> = FILES.iter().map(|f| f.name).collect();
                write!(
                    f,
                    "unknown data file `{name}`; the catalogue has: {}",
                    known.join(", ")
                )
            }
            DataError::Missing { file, dir, origin } => {
                writeln!(
                    f,
                    "data file `{}` not found in {} ({origin}).",
                    file.name,
                    dir.display()
                )?;
                writeln!(f, "  source: {}", file.url)?;
                writeln!(f, "  sha256: {}", file.sha256)?;
                ways_out(f)
            }
            DataError::Corrupt {
                file,
                dir,
                origin,
                actual,
            } => {
                writeln!(
                    f,
                    "data file `{}` in {} ({origin}) is corrupt: its SHA-256 does not match \
                     (truncated download or a different version?).",
                    file.name,
                    dir.display()
                )?;
                writeln!(f, "  source:          {}", file.url)?;
                writeln!(f, "  expected sha256: {}", file.sha256)?;
                for other in file.also_accepted {
                    writeln!(f, "        or sha256: {other}")?;
                }
                writeln!(f, "  actual sha256:   {actual}")?;
                ways_out(f)
            }
            DataError::Io { path, source } => {
                write!(f, "cannot read data file {}: {source}", path.display())
            }
        }
    }
}

fn ways_out(f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(f, "Two ways out:")?;
    writeln!(
        f,
        "  - on a machine with network access, run `cargo xtask data`: it downloads \
         missing or corrupt files into this folder and checks their SHA-256;"
    )?;
    write!(
        f,
        "  - or set ZTH_DATA=DIR, a folder laid out like the project's datasets/ \
         (names.txt, tinyshakespeare.txt, taylorswift.txt, tokenizers/encoder.json, \
         tokenizers/vocab.bpe, tokenizers/r50k_base.tiktoken, tokenizers/cl100k_base.tiktoken)."
    )
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
