//! Downloading a file over HTTP with a progress bar: the one downloader behind
//! `cargo xtask data` (the datasets), `cargo xtask hub` (GPT-2's weights) and
//! nanochat's shards and Hub datasets.
//!
//! A download goes to a partial file first, which [`fetch_resuming`] continues
//! from its length with a range request if it is there, and is renamed into
//! place only once it is whole and checked ([`keep_if_sha256`], or the
//! caller's own check, such as a parquet footer). So an interrupted download
//! never leaves a file that looks done.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a download did not produce a good file.
#[derive(Debug)]
pub enum DownloadError {
    /// The server answered with an HTTP error status.
    Status {
        /// What was asked for.
        url: String,
        /// The status it answered.
        status: u16,
    },
    /// No answer, or not all of it: DNS, refused connection, TLS, timeout,
    /// dropped connection.
    Network {
        /// What was asked for.
        url: String,
        /// What went wrong.
        error: String,
    },
    /// The answer ended before the size the server announced; the part file
    /// stays, to be resumed.
    Short {
        /// What was asked for.
        url: String,
        /// Bytes in the part file.
        written: u64,
        /// Bytes announced.
        total: u64,
    },
    /// The bytes arrived but their SHA-256 is not the one expected.
    Checksum {
        /// Where they came from.
        url: String,
        /// The SHA-256 expected (the catalogue's, or the one the hub publishes).
        expected: String,
        /// The SHA-256 of what arrived.
        actual: String,
    },
    /// Writing the file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
}

impl fmt::Display for DownloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DownloadError::Status { url, status } => write!(f, "{url} answered HTTP {status}"),
            DownloadError::Network { url, error } => write!(
                f,
                "could not download {url}: {error} (is this machine offline?)"
            ),
            DownloadError::Short {
                url,
                written,
                total,
            } => write!(
                f,
                "{url}: {written} bytes arrived of the {total} announced; the download will resume"
            ),
            DownloadError::Checksum {
                url,
                expected,
                actual,
            } => write!(
                f,
                "{url} sent a file with SHA-256 {actual}, expected {expected}; \
                 the file was not saved"
            ),
            DownloadError::Io { path, error } => {
                write!(f, "cannot write {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for DownloadError {}

/// An HTTP client with the timeouts every download here uses, following up
/// to 10 redirects (0 when `follow_redirects` is false). HTTP error statuses
/// are answers, not errors: the caller reads the status.
pub fn agent(follow_redirects: bool) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .max_redirects(if follow_redirects { 10 } else { 0 })
        .http_status_as_error(false)
        .build()
        .into()
}

/// The progress bar of a download of `total` bytes (if known), labelled `name`.
pub fn progress_bar(total: Option<u64>, name: &str) -> indicatif::ProgressBar {
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::no_length(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:30} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message(name.to_string());
    bar
}

/// Downloads `url` into `part` with a progress bar labelled `name`,
/// continuing from `part`'s length if it exists: a range request, whose 206
/// answer is appended; a server that ignores the range sends the whole file
/// (200), which replaces it; 416 (a range past the end) means `part` is
/// already whole. The bytes written are checked against the size the server
/// announced: a download cut short is an error, and `part` stays to be
/// resumed.
pub fn fetch_resuming(url: &str, part: &Path, name: &str) -> Result<(), DownloadError> {
    let network = |error: String| DownloadError::Network {
        url: url.to_string(),
        error,
    };
    let io = |error| DownloadError::Io {
        path: part.to_path_buf(),
        error,
    };
    let have = std::fs::metadata(part).map_or(0, |m| m.len());
    let mut request = agent(true).get(url);
    if have > 0 {
        request = request.header("Range", &format!("bytes={have}-"));
    }
    let response = request.call().map_err(|e| network(e.to_string()))?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (append, total) = match status {
        // The rest of the file: "Content-Range: bytes N-M/TOTAL".
        206 => {
            let range = header("content-range").unwrap_or_default();
            (true, range.rsplit('/').next().and_then(|t| t.parse().ok()))
        }
        // The whole file (also when the server ignored the range).
        200 => (false, header("content-length").and_then(|l| l.parse().ok())),
        // A range past the end: the partial file is already whole, or wrong.
        416 if have > 0 => return Ok(()),
        _ => {
            return Err(DownloadError::Status {
                url: url.to_string(),
                status,
            })
        }
    };
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(part)
        .map_err(io)?;
    let start = if append { have } else { 0 };
    let bar = progress_bar(total, name);
    bar.set_position(start);
    if append {
        bar.println(format!("resuming {name} at byte {start}"));
    }
    let mut reader = response.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 20];
    let mut written = start;
    let outcome = loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) => break Err(network(e.to_string())),
        };
        if let Err(e) = out.write_all(&buf[..n]) {
            break Err(io(e));
        }
        written += n as u64;
        bar.set_position(written);
    };
    bar.finish_and_clear();
    outcome?;
    out.sync_all().map_err(io)?;
    match total {
        Some(total) if written != total => Err(DownloadError::Short {
            url: url.to_string(),
            written,
            total,
        }),
        _ => Ok(()),
    }
}

/// Renames the downloaded `part` to `dest` if its SHA-256 is one `accepts`
/// takes; otherwise removes it, and the error names both digests
/// (`expected`, the one to show, and the one that came from `url`).
pub fn keep_if_sha256(
    part: &Path,
    dest: &Path,
    url: &str,
    expected: &str,
    accepts: impl Fn(&str) -> bool,
) -> Result<(), DownloadError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| DownloadError::Io { path, error }
    };
    let actual = crate::sha256_file(part).map_err(io(part))?;
    if !accepts(&actual) {
        std::fs::remove_file(part).map_err(io(part))?;
        return Err(DownloadError::Checksum {
            url: url.to_string(),
            expected: expected.to_string(),
            actual,
        });
    }
    std::fs::rename(part, dest).map_err(io(dest))
}
