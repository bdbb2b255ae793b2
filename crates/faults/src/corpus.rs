//! Bad files for every loader, made from valid ones, and what each loader did
//! with them (see the crate doc for what counts as silent).

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// What a loader made of one bad file.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Refused, with an error naming the file or its folder.
    Refused,
    /// Refused, but the error names neither the file nor its folder.
    Unnamed(String),
    /// Accepted damage that a format without a checksum cannot see.
    UnprotectedData,
    /// Accepted, and what was read is what the undamaged file holds (a text
    /// format's final newline, base64's unused bits).
    Unchanged,
    /// Accepted damage that it should have refused.
    Silent,
    /// Panicked, with this message.
    Panicked(String),
}

/// What a loader returns for a file it accepts.
pub enum Loaded {
    /// Nothing to compare: judged by [`Protection`] alone.
    Value,
    /// The bytes the format's own writer makes of what was read.
    Canonical(Vec<u8>),
}

/// How much of a format is protected, which decides when an accepted bad
/// file is silent.
pub enum Protection {
    /// A SHA-256 covers the whole file: nothing damaged may be accepted.
    Checksum,
    /// No checksum, but everything outside the data bytes is checked:
    /// an accepted flip of a byte for which this returns true is unprotected data.
    Data(Box<dyn Fn(usize) -> bool>),
    /// A headerless array of items of this many bytes (nanoGPT's `.bin`):
    /// every byte is data and the file's length is the array's, so a flip
    /// and a cut at an item boundary are unprotected data.
    Headerless(usize),
    /// A text format: an accepted file must be well formed, its bytes what
    /// [`Loaded::Canonical`] returns.
    WellFormed,
}

/// The damage done to one file.
pub enum Damage {
    /// The file's bytes are these; `flipped` is the byte a bit flip changed.
    Bytes {
        bytes: Vec<u8>,
        flipped: Option<usize>,
    },
    /// A folder where the file should be.
    Folder,
    /// A symbolic link to nothing.
    DanglingLink,
    /// A symbolic link to itself.
    LinkLoop,
    /// The file's folder is a file (`ENOTDIR`).
    UnderAFile,
}

/// One bad file.
pub struct Case {
    /// What was done, for the table and for failures.
    pub what: String,
    /// The damage.
    pub damage: Damage,
}

/// The loaded value's checker.
type LoadFn = Box<dyn Fn(&Path) -> Result<Loaded, String>>;

/// A loader and the valid file its bad files are made from.
pub struct Loader {
    /// What it loads, for the table.
    pub name: &'static str,
    /// The name the file must have in its folder.
    pub file_name: String,
    /// The valid file.
    pub valid: Vec<u8>,
    /// Files the loader reads beside it, undamaged.
    pub companions: Vec<(String, Vec<u8>)>,
    /// When an accepted bad file is silent.
    pub protection: Protection,
    /// Loads the file at the path.
    pub load: LoadFn,
    /// Damage particular to the format: a header claiming more data, the
    /// wrong dtype or shape.
    pub special: Vec<(String, Vec<u8>)>,
}

/// What one loader did with its cases.
pub struct Tally {
    /// The loader.
    pub name: &'static str,
    /// Cases tried.
    pub cases: usize,
    /// Each case that was not simply refused by name: (what, outcome).
    pub notable: Vec<(String, Outcome)>,
}

impl Tally {
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.notable.iter().filter(|(_, o)| f(o)).count()
    }
    /// Cases refused with an error naming the file.
    pub fn refused(&self) -> usize {
        self.cases - self.notable.len()
    }
    /// Cases refused without naming the file.
    pub fn unnamed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Unnamed(_)))
    }
    /// Cases that panicked.
    pub fn panics(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Panicked(_)))
    }
    /// Cases accepted silently.
    pub fn silent(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Silent))
    }
    /// Cases accepted as unprotected data.
    pub fn unprotected(&self) -> usize {
        self.count(|o| matches!(o, Outcome::UnprotectedData))
    }
    /// Cases accepted that read what the undamaged file holds.
    pub fn unchanged(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Unchanged))
    }
}

/// Truncations, bit flips, the loader's special damage, and the four ways a
/// path can fail to be a readable file.
pub fn cases(loader: &Loader) -> Vec<Case> {
    let valid = &loader.valid;
    let len = valid.len();
    let mut cuts: Vec<usize> = [0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 64, 100, 255, 256]
        .into_iter()
        .chain([511, 1023, 1024, 1025, len - 2, len - 1])
        .chain((1..12).map(|i| i * len / 12))
        .filter(|&n| n < len)
        .collect();
    cuts.sort();
    cuts.dedup();
    let mut cases: Vec<Case> = cuts
        .into_iter()
        .map(|n| Case {
            what: format!("truncated to {n} of {len} bytes"),
            damage: Damage::Bytes {
                bytes: valid[..n].to_vec(),
                flipped: None,
            },
        })
        .collect();
    // Half the flips in the first 1,100 bytes, where the headers are; half
    // spread over the whole file.
    let head = len.min(1100);
    let positions = (0..16)
        .map(|i| (i * 67 + 5) % head)
        .chain((0..16).map(|i| (2 * i + 1) * len / 32));
    for (i, at) in positions.enumerate() {
        let bit = (at * 7 + i) % 8;
        let mut bytes = valid.clone();
        bytes[at] ^= 1 << bit;
        cases.push(Case {
            what: format!("bit {bit} of byte {at} flipped"),
            damage: Damage::Bytes {
                bytes,
                flipped: Some(at),
            },
        });
    }
    for (what, bytes) in &loader.special {
        cases.push(Case {
            what: what.clone(),
            damage: Damage::Bytes {
                bytes: bytes.clone(),
                flipped: None,
            },
        });
    }
    for (what, damage) in [
        ("a folder", Damage::Folder),
        ("a dangling symbolic link", Damage::DanglingLink),
        ("a symbolic link to itself", Damage::LinkLoop),
        ("inside a file, not a folder", Damage::UnderAFile),
    ] {
        cases.push(Case {
            what: what.to_string(),
            damage,
        });
    }
    cases
}

/// Runs every case of `loader` in folders under `scratch`, after checking
/// that the valid file loads.
pub fn run(loader: &Loader, scratch: &Path) -> Result<Tally, String> {
    let dir = scratch.join(loader.name.replace([' ', '/', '.'], "-"));
    let valid = Case {
        what: "the valid file".into(),
        damage: Damage::Bytes {
            bytes: loader.valid.clone(),
            flipped: None,
        },
    };
    let original = match attempt(loader, &valid, &dir.join("valid")) {
        Ok(Ok(Loaded::Canonical(bytes))) => Some(bytes),
        Ok(Ok(Loaded::Value)) => None,
        Ok(Err(e)) | Err(e) => {
            return Err(format!(
                "{}: the valid file does not load: {e}",
                loader.name
            ))
        }
    };
    let cases = cases(loader);
    let mut notable = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let case_dir = dir.join(i.to_string());
        let outcome = outcome(loader, case, &case_dir, original.as_deref());
        let _ = std::fs::remove_dir_all(&case_dir);
        if outcome != Outcome::Refused {
            notable.push((case.what.clone(), outcome));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Tally {
        name: loader.name,
        cases: cases.len(),
        notable,
    })
}

/// Lays out `case` in `dir` and loads it, catching a panic.
fn attempt(loader: &Loader, case: &Case, dir: &Path) -> Result<Result<Loaded, String>, String> {
    let _ = std::fs::remove_dir_all(dir);
    let path = lay_out(loader, case, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    match catch_unwind(AssertUnwindSafe(|| (loader.load)(&path))) {
        Ok(result) => Ok(result),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panic: {message}"))
        }
    }
}

fn outcome(loader: &Loader, case: &Case, dir: &Path, original: Option<&[u8]>) -> Outcome {
    let result = match attempt(loader, case, dir) {
        Ok(result) => result,
        Err(panic) => return Outcome::Panicked(panic),
    };
    match result {
        Err(message) => {
            let named =
                message.contains(&dir.display().to_string()) || message.contains(&loader.file_name);
            if named {
                Outcome::Refused
            } else {
                Outcome::Unnamed(message)
            }
        }
        Ok(loaded) => match (&loader.protection, &case.damage, loaded) {
            (
                Protection::Data(is_data),
                Damage::Bytes {
                    flipped: Some(at), ..
                },
                _,
            ) if is_data(*at) => Outcome::UnprotectedData,
            (Protection::Headerless(item), Damage::Bytes { bytes, flipped }, _)
                if flipped.is_some()
                    || (loader.valid.starts_with(bytes) && bytes.len().is_multiple_of(*item)) =>
            {
                Outcome::UnprotectedData
            }
            (Protection::WellFormed, Damage::Bytes { bytes, .. }, Loaded::Canonical(canon))
                if canon == *bytes || numbers_aside(&canon) == numbers_aside(bytes) =>
            {
                Outcome::UnprotectedData
            }
            (_, _, Loaded::Canonical(canon)) if Some(canon.as_slice()) == original => {
                Outcome::Unchanged
            }
            _ => Outcome::Silent,
        },
    }
}

/// `text` with every run of number characters replaced by `#`: two texts
/// that agree on this differ only in their numbers ("080" for "280", a loss
/// with its last digit changed to a trailing zero), which a text format
/// without a checksum cannot tell from other numbers.
fn numbers_aside(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for &b in text {
        let number = b.is_ascii_digit() || b"+-.eE".contains(&b);
        if !number {
            out.push(b);
        } else if out.last() != Some(&b'#') {
            out.push(b'#');
        }
    }
    out
}

/// Writes the companions and the damaged file into `dir`; returns the path
/// the loader is given.
fn lay_out(loader: &Loader, case: &Case, dir: &Path) -> std::io::Result<PathBuf> {
    let folder = match case.damage {
        Damage::UnderAFile => {
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join("a-file"), b"not a folder")?;
            return Ok(dir.join("a-file").join(&loader.file_name));
        }
        _ => dir,
    };
    std::fs::create_dir_all(folder)?;
    for (name, bytes) in &loader.companions {
        std::fs::write(folder.join(name), bytes)?;
    }
    let path = folder.join(&loader.file_name);
    match &case.damage {
        Damage::Bytes { bytes, .. } => std::fs::write(&path, bytes)?,
        Damage::Folder => std::fs::create_dir(&path)?,
        Damage::DanglingLink => std::os::unix::fs::symlink(folder.join("nothing-here"), &path)?,
        Damage::LinkLoop => std::os::unix::fs::symlink(&path, &path)?,
        Damage::UnderAFile => unreachable!("handled above"),
    }
    Ok(path)
}

/// The byte range of a safetensors file's tensor data (after its header).
pub fn safetensors_data(bytes: &[u8]) -> Range<usize> {
    let header = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    8 + header..bytes.len()
}

/// A safetensors file whose header length claims `extra` more bytes than it has.
pub fn safetensors_claiming_more(bytes: &[u8], extra: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let header = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    out[..8].copy_from_slice(&(header + extra).to_le_bytes());
    out
}

/// `bytes` with the first `from` in its header replaced by `to`, of the same length.
pub fn header_edit(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a header edit keeps the length");
    let end = 8 + (safetensors_data(bytes).start - 8).min(bytes.len() - 8);
    let at = bytes[..end]
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .unwrap_or_else(|| panic!("{from:?} is not in the header"));
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to.as_bytes());
    out
}
