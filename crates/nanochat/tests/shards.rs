//! nanochat's parquet shards read with the `parquet` crate: every row group's texts equal to
//! what pyarrow reads back (`tests/fixtures/shards/make_shards.py`), the last shard as val, a
//! damaged shard refused naming the file, tok-train reading the train shards, and base-train
//! running on shards.

use nanochat::dataloader::DocumentSource;
use nanochat::shards::{list_parquet_files, ParquetShards};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shards")
}

fn read_all(source: &mut impl DocumentSource) -> Result<Vec<Vec<Vec<String>>>, String> {
    let mut files = Vec::new();
    for file in 0..source.num_files() {
        let mut groups = Vec::new();
        for group in 0..source.num_row_groups(file)? {
            groups.push(source.read_row_group(file, group)?);
        }
        files.push(groups);
    }
    Ok(files)
}

#[test]
fn every_row_group_reads_as_pyarrow_reads_it() {
    let expected: Vec<Vec<Vec<String>>> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    let files = list_parquet_files(&fixtures()).unwrap();
    assert_eq!(files.len(), 3);
    let ours = read_all(&mut ParquetShards::new(files)).unwrap();
    assert_eq!(ours, expected);
    let (mut train, mut val) = ParquetShards::train_val(&fixtures()).unwrap();
    assert_eq!(read_all(&mut train).unwrap(), expected[..2]);
    assert_eq!(read_all(&mut val).unwrap(), expected[2..]);
}

#[test]
fn tok_train_reads_the_train_shards_of_a_shards_folder() {
    // tok_train.py's parquets_iter_batched(split="train"): shards 0 and 1, not the val shard.
    let expected: Vec<Vec<Vec<String>>> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    let train: Vec<String> = expected[..2].iter().flatten().flatten().cloned().collect();
    let documents = nanochat::documents::tokenizer_documents(&fixtures()).unwrap();
    assert_eq!(documents, train);
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nanochat-shards-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn damaged(dir: &Path, damage: impl Fn(&mut Vec<u8>)) -> String {
    let path = dir.join("shard_00000.parquet");
    let mut bytes = std::fs::read(fixtures().join("shard_00000.parquet")).unwrap();
    damage(&mut bytes);
    std::fs::write(&path, &bytes).unwrap();
    match read_all(&mut ParquetShards::new(vec![path])) {
        Ok(_) => panic!("a damaged shard was read"),
        Err(e) => e,
    }
}

#[test]
fn a_damaged_shard_is_refused_naming_the_file() {
    let dir = temp_dir("damaged");
    let e = damaged(&dir, |b| b.truncate(b.len() - 100));
    assert!(
        e.contains("shard_00000.parquet") && e.contains("not a readable parquet file"),
        "{e}"
    );
    let e = damaged(&dir, |b| b.truncate(b.len() / 2));
    assert!(e.contains("shard_00000.parquet"), "{e}");
    let e = damaged(&dir, |b| {
        let n = b.len();
        b[n - 1] = b'X'; // the closing magic "PAR1"
    });
    assert!(e.contains("shard_00000.parquet"), "{e}");
    let e = match ParquetShards::train_val(&dir) {
        Ok(_) => panic!("one shard split into train and val"),
        Err(e) => e,
    };
    assert!(e.contains("1 parquet shard(s)"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn base_train_trains_on_shards() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: nanochat::base_train::BaseTrainArgs,
    }
    let base = temp_dir("base");
    std::fs::create_dir_all(base.join("tokenizer")).unwrap();
    let tokenizer = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/base_train/tokenizer_4096.pkl");
    std::fs::copy(tokenizer, base.join("tokenizer/tokenizer.pkl")).unwrap();
    std::fs::create_dir_all(base.join("base_data_climbmix")).unwrap();
    for f in list_parquet_files(&fixtures()).unwrap() {
        std::fs::copy(
            &f,
            base.join("base_data_climbmix").join(f.file_name().unwrap()),
        )
        .unwrap();
    }
    let argv = [
        "base_train",
        "--depth=1",
        "--max-seq-len=64",
        "--device-batch-size=2",
        "--total-batch-size=128",
        "--num-iterations=3",
        "--eval-every=3",
        "--eval-tokens=256",
        "--sample-every=-1",
    ];
    let args = flags::parse_from::<Cli>(argv).args;
    let mut lines = Vec::new();
    nanochat::base_train::run::base_train(&args, &base, &mut |l| lines.push(l)).unwrap();
    let bpb: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("Validation bpb"))
        .collect();
    assert_eq!(bpb.len(), 2, "{lines:#?}");
    assert!(base
        .join("base_checkpoints/d1/model_000003.safetensors")
        .is_file());
    std::fs::remove_dir_all(&base).unwrap();
}
