//! The data files, found and checksummed by the workspace's `data` crate: `$ZTH_DATA` (a folder
//! laid out like the workspace's `datasets/` folder), else `datasets/` itself (`cargo xtask data`).

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The checked path of a catalogue file, e.g. `"tokenizers/cl100k_base.tiktoken"`.
pub fn path(name: &str) -> Result<PathBuf> {
    ::data::path(name).map_err(|e| Error::Data(e.to_string()))
}

/// The bytes of a catalogue file.
pub fn read(name: &str) -> Result<Vec<u8>> {
    let p = path(name)?;
    std::fs::read(&p).map_err(|e| Error::io(&p, e))
}
