//! `python -m nanochat.dataset -n N`: the pretraining shards of ClimbMix, downloaded into
//! `<base>/base_data_climbmix/`: the first N train shards and always the last one, val.
//!
//! As nanochat's `download_single_file`, with three additions, since the source publishes no
//! checksums: a partial download (`.tmp`) resumes where it stopped (an HTTP range request),
//! each file's size is checked against the one the server announced, and each file's parquet
//! footer is read before the file is renamed into place. A file already there is kept if its
//! footer reads, and downloaded again if not.

use parquet::file::reader::SerializedFileReader;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Where nanochat's shards are published (`BASE_URL` at 92d63d4).
pub const BASE_URL: &str =
    "https://huggingface.co/datasets/karpathy/climbmix-400b-shuffle/resolve/main";
/// The last shard, `shard_06542.parquet`: val.
pub const MAX_SHARD: usize = 6542;

/// `index_to_filename`.
pub fn shard_name(index: usize) -> String {
    format!("shard_{index:05}.parquet")
}

/// How downloads are made: from where, how many at once, how many tries.
#[derive(Clone, Debug)]
pub struct Downloader {
    /// The folder the file names are appended to.
    pub base_url: String,
    /// Files downloaded at once.
    pub workers: usize,
    /// Tries per file.
    pub max_attempts: u32,
    /// The wait after the first failed try; it doubles after each (nanochat: 2 s).
    pub backoff: Duration,
}

impl Default for Downloader {
    fn default() -> Downloader {
        Downloader {
            base_url: BASE_URL.into(),
            workers: 4,
            max_attempts: 5,
            backoff: Duration::from_secs(2),
        }
    }
}

/// The shard indices `-n N` asks for: the first N (all train shards for -1), then val.
pub fn shards_to_download(num_files: i64) -> Vec<usize> {
    let n = if num_files < 0 {
        MAX_SHARD
    } else {
        (num_files as usize).min(MAX_SHARD)
    };
    (0..n).chain(std::iter::once(MAX_SHARD)).collect()
}

/// Whether `path` is a whole parquet file: its footer and metadata read.
pub fn footer_reads(path: &Path) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    SerializedFileReader::new(file)
        .map(|_| ())
        .map_err(|e| format!("{}: not a whole parquet file ({e})", path.display()))
}

impl Downloader {
    /// Downloads `indices` into `dir`, `workers` at a time; `say` gets each line. Returns the
    /// number of files now in place, and an error naming every file that could not be had.
    pub fn download(
        &self,
        indices: &[usize],
        dir: &Path,
        say: &(dyn Fn(String) + Sync),
    ) -> Result<usize, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let next = AtomicUsize::new(0);
        let failures = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..self.workers.max(1).min(indices.len()) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&index) = indices.get(i) else { break };
                    if let Err(e) = self.download_one(index, dir, say) {
                        failures.lock().expect("no worker panics").push(e);
                    }
                });
            }
        });
        let failures = failures.into_inner().expect("no worker panics");
        let done = indices.len() - failures.len();
        say(format!(
            "Done! Downloaded: {done}/{} shards to {}",
            indices.len(),
            dir.display()
        ));
        if failures.is_empty() {
            Ok(done)
        } else {
            Err(failures.join("\n"))
        }
    }

    // ANCHOR: download_single_file
    /// `download_single_file`: one shard, with retries and a doubling wait between them.
    pub fn download_one(
        &self,
        index: usize,
        dir: &Path,
        say: &(dyn Fn(String) + Sync),
    ) -> Result<PathBuf, String> {
        let name = shard_name(index);
        let path = dir.join(&name);
        if path.exists() {
            match footer_reads(&path) {
                Ok(()) => {
                    say(format!("Skipping {} (already exists)", path.display()));
                    return Ok(path);
                }
                Err(e) => say(format!("{e}; downloading it again")),
            }
        }
        let url = format!("{}/{name}", self.base_url.trim_end_matches('/'));
        let tmp = dir.join(format!("{name}.tmp"));
        say(format!("Downloading {name}..."));
        let mut wait = self.backoff;
        for attempt in 1..=self.max_attempts {
            match fetch_resuming(&url, &tmp).and_then(|()| footer_reads(&tmp)) {
                Ok(()) => {
                    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
                    say(format!("Successfully downloaded {name}"));
                    return Ok(path);
                }
                Err(e) => {
                    say(format!(
                        "Attempt {attempt}/{} failed for {name}: {e}",
                        self.max_attempts
                    ));
                    if e.contains("not a whole parquet file") {
                        // Whole as announced but not parquet: resuming would only append to it.
                        let _ = std::fs::remove_file(&tmp);
                    }
                    if attempt < self.max_attempts {
                        say(format!(
                            "Waiting {} seconds before retry...",
                            wait.as_secs_f64()
                        ));
                        std::thread::sleep(wait);
                        wait *= 2;
                    }
                }
            }
        }
        let _ = std::fs::remove_file(&tmp);
        Err(format!(
            "Failed to download {name} from {url} after {} attempts",
            self.max_attempts
        ))
    }
    // ANCHOR_END: download_single_file
}

/// Downloads `url` into `tmp`, continuing from its length if it exists (a range request;
/// a server that ignores the range sends the whole file, which replaces it), and checks the
/// final size against the one the server announced.
fn fetch_resuming(url: &str, tmp: &Path) -> Result<(), String> {
    let have = std::fs::metadata(tmp).map_or(0, |m| m.len());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(url);
    if have > 0 {
        request = request.header("Range", &format!("bytes={have}-"));
    }
    let response = request.call().map_err(|e| format!("{url}: {e}"))?;
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
            let total = range.rsplit('/').next().and_then(|t| t.parse::<u64>().ok());
            (true, total)
        }
        // The whole file (also when the server ignored the range).
        200 => (
            false,
            header("content-length").and_then(|l| l.parse::<u64>().ok()),
        ),
        // A range past the end: the partial file is already whole, or wrong.
        416 if have > 0 => return Ok(()),
        _ => return Err(format!("{url} answered HTTP {status}")),
    };
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    let start = if append { have } else { 0 };
    let bar = indicatif::ProgressBar::new(total.unwrap_or(0));
    bar.set_position(start);
    if total.is_none() {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut reader = response.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 20];
    let mut written = start;
    loop {
        let n = reader.read(&mut buf).map_err(|e| format!("{url}: {e}"))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        written += n as u64;
        bar.set_position(written);
    }
    out.sync_all()
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    bar.finish_and_clear();
    match total {
        Some(total) if written != total => Err(format!(
            "{url}: {written} bytes arrived of the {total} announced; the download will resume"
        )),
        _ => Ok(()),
    }
}
