//! `python -m nanochat.dataset -n N`: the pretraining shards of ClimbMix, downloaded into
//! `<base>/base_data_climbmix/`: the first N train shards and always the last one, val.
//!
//! As nanochat's `download_single_file`, with three additions, since the source publishes no
//! checksums: a partial download (`.tmp`) resumes where it stopped (an HTTP range request),
//! each file's size is checked against the one the server announced, and each file's parquet
//! footer is read before the file is renamed into place. A file already there is kept if its
//! footer reads, and downloaded again if not.

use parquet::file::reader::SerializedFileReader;
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
            match data::download::fetch_resuming(&url, &tmp, &name)
                .map_err(|e| e.to_string())
                .and_then(|()| footer_reads(&tmp))
            {
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
