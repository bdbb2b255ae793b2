//! nanochat's `load_hub_dataset` and `HubDataset` (`tasks/common.py`): a Hugging Face dataset
//! read from the parquet export the Hub makes of every dataset, downloaded once into
//! `<base>/task_data/<owner>--<name>/<subset>/<split>/`, and shuffled as `datasets` shuffles,
//! `np.random.default_rng(seed).permutation(n)` ([`pyrandom::pcg64`]).
//!
//! The shard list comes from `https://huggingface.co/api/datasets/<repo>/parquet/<subset>/<split>`
//! (`--hub-endpoint` or `$HF_ENDPOINT` in place of `https://huggingface.co`, for a mirror);
//! `manifest.json` is
//! written after the last shard, so its presence means the download is whole.

use parquet::file::reader::{FileReader, SerializedFileReader};
use pyrandom::pcg64::Generator;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The rows of a dataset, each a JSON object of its columns, in an optional shuffled order.
#[derive(Clone, Debug)]
pub struct HubDataset {
    rows: Vec<Value>,
    permutation: Option<Vec<usize>>,
}

impl HubDataset {
    /// The rows as read.
    pub fn new(rows: Vec<Value>) -> HubDataset {
        HubDataset {
            rows,
            permutation: None,
        }
    }

    /// `shuffle(seed)`: the order of `datasets.Dataset.shuffle(seed=seed)`.
    pub fn shuffle(self, seed: u64) -> HubDataset {
        let permutation = Generator::default_rng(seed).permutation(self.rows.len());
        HubDataset {
            rows: self.rows,
            permutation: Some(permutation),
        }
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `index`-th row in the shuffled order.
    pub fn row(&self, index: usize) -> &Value {
        let physical = self.permutation.as_ref().map_or(index, |p| p[index]);
        &self.rows[physical]
    }
}

/// The Hub's address: `$HF_ENDPOINT` (a mirror) or `https://huggingface.co`.
pub fn default_endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".into())
}

fn get(url: &str) -> Result<Vec<u8>, String> {
    let mut response = data::download::agent(true)
        .get(url)
        .call()
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err(format!("{url} answered HTTP {status}"));
    }
    response
        .body_mut()
        .with_config()
        .limit(4 << 30)
        .read_to_vec()
        .map_err(|e| format!("{url}: {e}"))
}

/// Where `repo_id`'s `subset`/`split` is kept under `base`.
pub fn shards_dir(base: &Path, repo_id: &str, subset: &str, split: &str) -> PathBuf {
    base.join("task_data")
        .join(repo_id.replace('/', "--"))
        .join(subset)
        .join(split)
}

/// `load_hub_dataset(repo_id, subset, split)` from the Hub at `endpoint`: the rows of every
/// shard, downloading them first if the manifest is not there; `say` hears of each download.
pub fn load_hub_dataset_from(
    endpoint: &str,
    base: &Path,
    repo_id: &str,
    subset: &str,
    split: &str,
    say: &mut dyn FnMut(String),
) -> Result<HubDataset, String> {
    let dir = shards_dir(base, repo_id, subset, split);
    let manifest = dir.join("manifest.json");
    if !manifest.exists() {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let endpoint = endpoint.trim_end_matches('/');
        let listing_url = format!("{endpoint}/api/datasets/{repo_id}/parquet/{subset}/{split}");
        let listing: Vec<String> = serde_json::from_slice(&get(&listing_url)?)
            .map_err(|e| format!("{listing_url}: not a list of shard URLs ({e})"))?;
        let mut names = Vec::new();
        for (i, url) in listing.iter().enumerate() {
            say(format!("Downloading {url} ..."));
            let name = format!("{i:05}.parquet");
            report::write_atomic(&dir.join(&name), &get(url)?)
                .map_err(|e| format!("{}: {e}", dir.join(&name).display()))?;
            names.push(name);
        }
        let json = serde_json::to_vec(&names).map_err(|e| e.to_string())?;
        report::write_atomic(&manifest, &json)
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
    }
    let text = std::fs::read(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let names: Vec<String> = serde_json::from_slice(&text)
        .map_err(|e| format!("{}: not a list of shard names ({e})", manifest.display()))?;
    let mut rows = Vec::new();
    for name in names {
        rows.extend(read_rows(&dir.join(name))?);
    }
    Ok(HubDataset::new(rows))
}

/// Every row of a parquet file, each as a JSON object of its columns (lists as arrays, structs
/// as objects).
pub fn read_rows(path: &Path) -> Result<Vec<Value>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| format!("{}: not a readable parquet file ({e})", path.display()))?;
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    rows.map(|row| {
        row.map(|r| r.to_json_value())
            .map_err(|e| format!("{}: a row cannot be read ({e})", path.display()))
    })
    .collect()
}
