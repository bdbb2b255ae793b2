//! One error type for the crate: every failure names the file, line or token at fault.

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while loading, training, encoding or decoding.
#[derive(Debug)]
pub enum Error {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A data file is missing, or `ZTH_DATA` is not set.
    Data(String),
    /// A model, `.tiktoken`, `encoder.json` or `vocab.bpe` file is malformed.
    Format {
        /// The file (or a description of the input).
        path: String,
        /// 1-based line number, 0 when the problem is not tied to a line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A split pattern does not compile, or the regex engine gave up on an input.
    Regex(String),
    /// `decode` met an id that is neither in the vocabulary nor a special token.
    InvalidToken(u32),
    /// `encode(.., AllowedSpecial::NoneRaise)` met a special token in the text.
    DisallowedSpecial(String),
    /// Training could not run as asked (vocabulary too small, text too short, ...).
    Train(String),
    /// Any other invalid argument (special token ids that collide, a pattern that cannot be saved, ...).
    Invalid(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn format(path: impl fmt::Display, line: usize, msg: impl Into<String>) -> Error {
        Error::Format {
            path: path.to_string(),
            line,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Data(msg) => f.write_str(msg),
            Error::Format { path, line: 0, msg } => write!(f, "{path}: {msg}"),
            Error::Format { path, line, msg } => write!(f, "{path}:{line}: {msg}"),
            Error::Regex(msg) => write!(f, "split pattern: {msg}"),
            Error::InvalidToken(id) => write!(f, "invalid token id: {id}"),
            Error::DisallowedSpecial(tok) => write!(
                f,
                "the text contains the special token {tok:?}; pass allowed_special \"all\" (or a set \
                 naming it) to encode it as a special token, or \"none\" to encode it as ordinary text"
            ),
            Error::Train(msg) => write!(f, "training: {msg}"),
            Error::Invalid(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
