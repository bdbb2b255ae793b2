//! The datasets every lecture reads, found and checked the same way everywhere.
//!
//! Lectures 2–6 read `names.txt`, lecture 7 `tinyshakespeare.txt`, lecture 8
//! `taylorswift.txt` and the OpenAI tokenizer files, lecture 9 the tokenizers and
//! tinyshakespeare. The files are not in git (see `datasets/README.md`); this
//! crate knows each one's source, SHA-256 and licence ([`FILES`]) and finds them:
//!
//! 1. in `$ZTH_DATA` if that variable is set (a folder laid out like
//!    `datasets/`, with `tokenizers/` inside);
//! 2. otherwise in the workspace's `datasets/` folder, located at compile time;
//! 3. otherwise the caller gets a [`DataError`] that names the file, the folder,
//!    the URL and the checksum, and says how to get it (`cargo xtask data`, or
//!    `ZTH_DATA=DIR`).
//!
//! Every lookup hashes the file: a truncated download fails loudly here rather
//! than as a strange loss curve three lectures later. The files are small
//! (1.7 MB at most), so the check costs milliseconds.
//!
//! [`makemore`] turns `names.txt` into what lectures 2–6 train on, exactly as
//! the notebooks do (same vocabulary, same shuffled split, same context windows).
//! [`download`] is the one downloader of the workspace: these files
//! (`cargo xtask data`), GPT-2's weights and nanochat's shards.
#![deny(missing_docs)]

mod catalogue;
pub mod download;
mod error;
pub mod makemore;
pub mod python_text;

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use catalogue::{file, DataFile, FILES};
pub use error::{DataError, Origin};

/// The environment variable that points at a data folder.
pub const ENV_VAR: &str = "ZTH_DATA";

/// The workspace root: the folder with `Cargo.lock` and `datasets/`.
///
/// Under `cargo run` and `cargo test`, `CARGO_MANIFEST_DIR` is set at run time
/// to the running package's folder (`crates/<name>` or `xtask`), and the root
/// is its nearest ancestor holding `Cargo.lock`. That is preferred to the path
/// compiled into this crate, because checkouts sharing one `CARGO_TARGET_DIR`
/// can reuse each other's build of it. A binary started directly falls back to
/// the compiled-in path.
pub fn workspace_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        if let Some(root) = Path::new(&dir)
            .ancestors()
            .find(|d| d.join("Cargo.lock").is_file())
        {
            return root.to_path_buf();
        }
    }
    // crates/data -> crates -> workspace root
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/data sits two levels below the workspace root")
        .to_path_buf()
}

/// A folder that should hold the catalogue's files, and how it was chosen.
#[derive(Clone, Debug)]
pub struct DataDir {
    /// The folder.
    pub path: PathBuf,
    /// Why this folder (for error messages).
    pub origin: Origin,
}

impl DataDir {
    /// `$ZTH_DATA` if set and not empty, else the workspace's `datasets/`.
    pub fn resolve() -> DataDir {
        match std::env::var_os(ENV_VAR) {
            Some(dir) if !dir.is_empty() => DataDir {
                path: PathBuf::from(dir),
                origin: Origin::ZthData,
            },
            _ => DataDir {
                path: workspace_root().join("datasets"),
                origin: Origin::Workspace,
            },
        }
    }

    /// A folder chosen by the caller.
    pub fn explicit(path: impl Into<PathBuf>) -> DataDir {
        DataDir {
            path: path.into(),
            origin: Origin::Explicit,
        }
    }

    /// The path of catalogue file `name` in this folder, once its SHA-256 is checked.
    pub fn path(&self, name: &str) -> Result<PathBuf, DataError> {
        let file = file(name).ok_or_else(|| DataError::Unknown {
            name: name.to_string(),
        })?;
        let path = self.path.join(file.name);
        if path.exists() && !path.is_file() {
            return Err(DataError::Io {
                path,
                source: std::io::Error::other("it is not a regular file (a folder?)"),
            });
        }
        if !path.is_file() {
            return Err(DataError::Missing {
                file,
                dir: self.path.clone(),
                origin: self.origin,
            });
        }
        let actual = sha256_file(&path).map_err(|source| DataError::Io {
            path: path.clone(),
            source,
        })?;
        if !file.accepts(&actual) {
            return Err(DataError::Corrupt {
                file,
                dir: self.path.clone(),
                origin: self.origin,
                actual,
            });
        }
        Ok(path)
    }

    /// The checked contents of catalogue file `name`, as text.
    pub fn read_text(&self, name: &str) -> Result<String, DataError> {
        let path = self.path(name)?;
        std::fs::read_to_string(&path).map_err(|source| DataError::Io { path, source })
    }
}

/// [`DataDir::path`] in the folder [`DataDir::resolve`] picks.
pub fn path(name: &str) -> Result<PathBuf, DataError> {
    DataDir::resolve().path(name)
}

/// [`DataDir::read_text`] in the folder [`DataDir::resolve`] picks.
pub fn read_text(name: &str) -> Result<String, DataError> {
    DataDir::resolve().read_text(name)
}

/// SHA-256 of `bytes`, as lower-case hex (what `sha256sum` prints).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 of a file's contents, as lower-case hex, read in chunks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("data-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn sha256_of_abc_is_the_fips_180_example() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn every_catalogue_entry_is_well_formed() {
        for f in FILES {
            assert_eq!(f.sha256.len(), 64, "{}", f.name);
            assert!(f
                .sha256
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(f.url.starts_with("https://"), "{}", f.name);
            assert_eq!(file(f.name).unwrap().name, f.name);
        }
        assert_eq!(FILES.len(), 7);
    }

    #[test]
    fn a_missing_file_names_folder_url_checksum_and_both_ways_out() {
        let dir = temp_dir("missing");
        let err = DataDir::explicit(&dir).path("names.txt").unwrap_err();
        assert!(matches!(err, DataError::Missing { .. }));
        let msg = err.to_string();
        for needle in [
            "`names.txt` not found",
            dir.to_str().unwrap(),
            "https://raw.githubusercontent.com/karpathy/makemore/master/names.txt",
            "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d",
            "cargo xtask data",
            "ZTH_DATA=DIR",
        ] {
            assert!(msg.contains(needle), "{needle:?} not in:\n{msg}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_file_reports_both_checksums() {
        let dir = temp_dir("corrupt");
        std::fs::create_dir_all(dir.join("tokenizers")).unwrap();
        std::fs::write(dir.join("tokenizers/vocab.bpe"), b"abc").unwrap();
        let err = DataDir::explicit(&dir)
            .path("tokenizers/vocab.bpe")
            .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, DataError::Corrupt { .. }), "{msg}");
        for needle in [
            "`tokenizers/vocab.bpe`",
            "is corrupt",
            "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
            "cargo xtask data",
            "ZTH_DATA=DIR",
        ] {
            assert!(msg.contains(needle), "{needle:?} not in:\n{msg}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unknown_name_lists_the_catalogue() {
        let err = DataDir::explicit("/nonexistent")
            .path("shakespeare.txt")
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("unknown data file `shakespeare.txt`"), "{msg}");
        assert!(msg.contains("tinyshakespeare.txt"), "{msg}");
    }
}
