//! nanochat's files for the corpus: the model, optimizer and metadata of a two-step
//! `nanochat base-train` run, `tokenizer.pkl` and a parquet shard.

use super::{fixture, safetensors_special};
use crate::corpus::{Loaded, Loader, Protection};
use std::path::{Path, PathBuf};

/// The base folder of a `nanochat base-train` run of two steps of a depth-1 model on a text
/// beyond ASCII, with the 4,096-token tokenizer of nanochat's fixtures: its checkpoint is in
/// `base_checkpoints/d1`.
fn nanochat_run() -> Result<PathBuf, String> {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: nanochat::base_train::BaseTrainArgs,
    }
    let base = std::env::temp_dir().join(format!("faults-nanochat-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("tokenizer"))
        .map_err(|e| format!("{}: {e}", base.display()))?;
    let pkl = fixture("nanochat/tests/fixtures/base_train/tokenizer_4096.pkl")?;
    std::fs::write(base.join("tokenizer/tokenizer.pkl"), pkl).map_err(|e| e.to_string())?;
    let text = "Über die Brücke, über das Feld 🙂\nΚαλημέρα, мир!\n\n".repeat(40);
    let input = base.join("input.txt");
    std::fs::write(&input, text).map_err(|e| e.to_string())?;
    let args = flags::try_parse_from::<Cli>([
        "base_train",
        "--depth=1",
        "--max-seq-len=32",
        "--device-batch-size=2",
        "--total-batch-size=64",
        "--num-iterations=2",
        "--eval-every=-1",
        "--sample-every=-1",
        &format!("--input={}", input.display()),
    ])
    .map_err(|e| e.to_string())?
    .args;
    nanochat::base_train::run::base_train(&args, &base, &mut |_| {})?;
    Ok(base)
}

/// nanochat's checkpoint files of step 2: the model, the optimizer and the metadata.
fn nanochat_files() -> Result<[Vec<u8>; 3], String> {
    let base = nanochat_run()?;
    let dir = base.join("base_checkpoints/d1");
    let read = |name: &str| std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let files = [
        read("model_000002.safetensors")?,
        read("optim_000002_rank0.safetensors")?,
        read("meta_000002.json")?,
    ];
    let _ = std::fs::remove_dir_all(&base);
    Ok(files)
}

/// `nanochat base-train`'s model file, read with its metadata beside it.
pub(super) fn nanochat_model() -> Result<Loader, String> {
    let [model, _, meta] = nanochat_files()?;
    let wte = ("[4096,128]".to_string(), "[4096,127]".to_string()); // depth 1: width 128, one head
    Ok(Loader {
        name: "nanochat model (base-train)",
        file_name: "model_000002.safetensors".into(),
        special: safetensors_special(&model, (&wte.0, &wte.1)),
        valid: model,
        companions: vec![("meta_000002.json".into(), meta)],
        protection: Protection::Checksum,
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            nanochat::checkpoint::load_model(dir, 2).map(|_| Loaded::Value)
        }),
    })
}

/// `nanochat base-train`'s optimizer file, read into the optimizer of the model beside it.
pub(super) fn nanochat_optimizer() -> Result<Loader, String> {
    let [model, optim, meta] = nanochat_files()?;
    let wte = ("[4096,128]".to_string(), "[4096,127]".to_string()); // depth 1: width 128, one head
    Ok(Loader {
        name: "nanochat optimizer (base-train)",
        file_name: "optim_000002_rank0.safetensors".into(),
        special: safetensors_special(&optim, (&wte.0, &wte.1)),
        valid: optim,
        companions: vec![
            ("meta_000002.json".into(), meta),
            ("model_000002.safetensors".into(), model),
        ],
        protection: Protection::Checksum,
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            let (model, _) = nanochat::checkpoint::load_model(dir, 2)?;
            let mut optimizer = model.setup_optimizer(0.004, 0.2, 0.02, 0.0, 0.5);
            nanochat::checkpoint::load_optimizer(dir, 2, &model, &mut optimizer)
                .map(|()| Loaded::Value)
        }),
    })
}

/// A model file nanochat's own `save_checkpoint` wrote (`torch.save`, the f32 fixture of
/// `nanochat/tests/fixtures/pt`). Every storage is under the zip's CRC-32, the headers are
/// checked by the zip reader and the pickle by the restricted unpickler, so an accepted damaged
/// file must read the same weights. Special: a weight stored as int64, a shape that is not the
/// config's, a pickle that calls `os.system`, and one with INST (an opcode torch.save never
/// writes).
pub(super) fn nanochat_pt_model() -> Result<Loader, String> {
    use nanochat::pt::{self, Obj, StoredTensor};
    let valid = fixture("nanochat/tests/fixtures/pt/f32/model_000010.pt")?;
    let meta = fixture("nanochat/tests/fixtures/pt/f32/meta_000010.json")?;
    let Obj::Dict(items) = pt::load(&valid)? else {
        return Err("the pt fixture is not a state_dict".into());
    };
    let edited = |name: &str, tensor: StoredTensor| -> Result<Vec<u8>, String> {
        let mut items = items.clone();
        for (k, v) in items.iter_mut() {
            if *k == Obj::Str(name.into()) {
                *v = Obj::Tensor(tensor.clone());
            }
        }
        pt::save("model_000010", &Obj::OrderedDict(items))
    };
    let wte_i64 = StoredTensor {
        dtype: pt::Dtype::I64,
        shape: vec![512, 32],
        data: vec![0; 512 * 32 * 8],
    };
    let special = vec![
        (
            "wte stored as int64".to_string(),
            edited("transformer.wte.weight", wte_i64)?,
        ),
        (
            "lm_head of shape [511, 32]".to_string(),
            edited(
                "lm_head.weight",
                StoredTensor::f32(&[511, 32], &vec![0.0; 511 * 32]),
            )?,
        ),
        (
            "a pickle calling os.system".to_string(),
            pt::archive(
                "model_000010",
                b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R.",
                &[],
            )?,
        ),
        (
            "a pickle with INST".to_string(),
            pt::archive("model_000010", b"\x80\x02(ios\nsystem\n.", &[])?,
        ),
    ];
    Ok(Loader {
        name: "nanochat model (.pt, nanochat's own)",
        file_name: "model_000010.pt".into(),
        special,
        valid,
        companions: vec![("meta_000010.json".into(), meta)],
        protection: Protection::Checksum,
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            let (model, _) = nanochat::checkpoint::load_model(dir, 10)?;
            let weights = model.params.iter().flat_map(|(_, p)| p.value.to_vec());
            Ok(Loaded::Canonical(
                weights.flat_map(f32::to_le_bytes).collect(),
            ))
        }),
    })
}

/// nanochat's `tokenizer.pkl` (a pickled tiktoken `Encoding`, no checksum): an accepted file
/// must pickle back to its own bytes.
pub(super) fn nanochat_tokenizer() -> Result<Loader, String> {
    Ok(Loader {
        name: "nanochat tokenizer.pkl",
        file_name: "tokenizer.pkl".into(),
        valid: fixture("nanochat/tests/fixtures/base_train/tokenizer_4096.pkl")?,
        companions: vec![],
        protection: Protection::WellFormed,
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            let tokenizer = nanochat::Tokenizer::from_directory(dir)?;
            Ok(Loaded::Canonical(nanochat::pickle::dumps(
                tokenizer.state(),
            )))
        }),
        special: vec![],
    })
}

/// A parquet shard as nanochat's are written (zstd, pyarrow): no checksum over the pages, so
/// an accepted flip inside a column chunk is unprotected data; outside them (the footer, the
/// magic) it must be refused or change nothing that is read.
pub(super) fn nanochat_shard() -> Result<Loader, String> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let valid = fixture("nanochat/tests/fixtures/shards/shard_00000.parquet")?;
    let reader =
        SerializedFileReader::new(bytes::Bytes::from(valid.clone())).map_err(|e| e.to_string())?;
    let mut chunks = Vec::new();
    for group in reader.metadata().row_groups() {
        for column in group.columns() {
            let start = column
                .dictionary_page_offset()
                .unwrap_or(column.data_page_offset())
                .max(0) as usize;
            chunks.push(start..start + column.compressed_size().max(0) as usize);
        }
    }
    Ok(Loader {
        name: "nanochat parquet shard",
        file_name: "shard_00000.parquet".into(),
        valid,
        companions: vec![],
        protection: Protection::Data(Box::new(move |at| chunks.iter().any(|c| c.contains(&at)))),
        load: Box::new(|path| {
            use nanochat::dataloader::DocumentSource;
            let mut shards = nanochat::shards::ParquetShards::new(vec![path.to_path_buf()]);
            let mut texts = Vec::new();
            for group in 0..shards.num_row_groups(0)? {
                texts.push(shards.read_row_group(0, group)?);
            }
            // What was read, so that a flip in metadata no reader uses (statistics, pyarrow's
            // schema) is seen to change nothing.
            Ok(Loaded::Canonical(
                serde_json::to_vec(&texts).map_err(|e| e.to_string())?,
            ))
        }),
        special: vec![],
    })
}
