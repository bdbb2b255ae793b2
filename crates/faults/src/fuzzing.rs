//! What the fuzz targets in `fuzz/` run, kept here on stable Rust so that a
//! test replays every committed corpus input and every input that ever
//! failed (`fuzz/corpus/<target>/`, `fuzz/regressions/<target>/`) without
//! libFuzzer. Each function returns `Err` for a wrong answer; a panic is a
//! finding too.

use bpe::{BasicTokenizer, Gpt2Tokenizer, Gpt4Tokenizer, RegexTokenizer};
use std::path::{Path, PathBuf};

/// The fuzz targets, by name (`cargo xtask fuzz TARGET`).
pub const TARGETS: [&str; 7] = [
    "encode_basic",
    "encode_regex",
    "encode_gpt2",
    "encode_gpt4",
    "checkpoint",
    "minbpe_model",
    "catalogue",
];

/// The workspace's `fuzz/` folder.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The tokenizers the round-trip targets encode with: lecture 8's minbpe
/// models, and GPT-2's and GPT-4's from the data folder.
pub struct Tokenizers {
    basic: BasicTokenizer,
    regex: RegexTokenizer,
    gpt2: Gpt2Tokenizer,
    gpt4: Gpt4Tokenizer,
}

impl Tokenizers {
    /// Loads them (GPT-2's and GPT-4's through `ZTH_DATA`).
    pub fn load() -> Result<Tokenizers, String> {
        let fixture = |name: &str| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../bpe/tests/fixtures/minbpe")
                .join(name)
        };
        let e = |e: bpe::Error| e.to_string();
        Ok(Tokenizers {
            basic: BasicTokenizer::load(fixture("basic.model")).map_err(e)?,
            regex: RegexTokenizer::load(fixture("regex.model")).map_err(e)?,
            gpt2: Gpt2Tokenizer::from_data_dir().map_err(e)?,
            gpt4: Gpt4Tokenizer::from_data_dir().map_err(e)?,
        })
    }
}

/// Encodes `bytes` with the tokenizer of `target` (`encode_basic`, …) and
/// decodes the ids back: they must give the same bytes. The basic
/// tokenizer's fast encoder must also agree with minbpe's plain loop.
pub fn round_trip(tokenizers: &Tokenizers, target: &str, bytes: &[u8]) -> Result<(), String> {
    let e = |e: bpe::Error| e.to_string();
    let (ids, decoded) = match target {
        "encode_basic" => {
            let ids = tokenizers.basic.encode(bytes);
            let plain = tokenizers.basic.merges().encode_plain(bytes);
            if ids != plain {
                return Err(format!("fast {ids:?} but plain {plain:?}"));
            }
            (ids.clone(), tokenizers.basic.decode_bytes(&ids).map_err(e)?)
        }
        _ => {
            let tokenizer: &RegexTokenizer = match target {
                "encode_regex" => &tokenizers.regex,
                "encode_gpt2" => &tokenizers.gpt2,
                "encode_gpt4" => &tokenizers.gpt4,
                other => return Err(format!("no round-trip target {other}")),
            };
            // A regex split over bytes that are not UTF-8 is an error, not a panic.
            let Ok(ids) = tokenizer.encode_ordinary(bytes) else {
                return match std::str::from_utf8(bytes) {
                    Ok(_) => Err("valid UTF-8 that does not encode".into()),
                    Err(_) => Ok(()),
                };
            };
            (ids.clone(), tokenizer.decode_bytes(&ids).map_err(e)?)
        }
    };
    if decoded != bytes {
        return Err(format!(
            "{bytes:?} encodes to {ids:?}, which decodes to {decoded:?}"
        ));
    }
    Ok(())
}

/// A round-trip fuzz target's body: the tokenizers loaded once per process,
/// then [`round_trip`], a wrong answer a panic (libFuzzer's finding).
pub fn fuzz_round_trip(target: &str, bytes: &[u8]) {
    static TOKENIZERS: std::sync::OnceLock<Tokenizers> = std::sync::OnceLock::new();
    let tokenizers = TOKENIZERS.get_or_init(|| Tokenizers::load().unwrap());
    if let Err(e) = round_trip(tokenizers, target, bytes) {
        panic!("{e}");
    }
}

/// Runs fuzz target `target` on `bytes` (`scratch` is the catalogue's folder).
pub fn run_target(
    tokenizers: &Tokenizers,
    target: &str,
    bytes: &[u8],
    scratch: &Path,
) -> Result<(), String> {
    match target {
        "checkpoint" => checkpoint(bytes),
        "minbpe_model" => minbpe_model(bytes),
        "catalogue" => catalogue(bytes, scratch),
        _ => round_trip(tokenizers, target, bytes),
    }
}

/// Loads `bytes` as a lecture 7 checkpoint: an error or a model, never a
/// panic; a model it accepts holds only finite numbers. The SHA-256 stops
/// nearly every mutation at the door, so the same bytes are also sealed
/// again with a fresh digest, which lets the damage reach the checks behind
/// it: the format, the config, the tensors' names, shapes and values.
pub fn checkpoint(bytes: &[u8]) -> Result<(), String> {
    accepted_is_finite(bytes)?;
    if let Some(sealed) = sealed_again(bytes) {
        accepted_is_finite(&sealed)?;
    }
    Ok(())
}

/// `bytes` with their `sha256` recomputed over what they hold, if they are
/// a safetensors file of f32 tensors.
fn sealed_again(bytes: &[u8]) -> Option<Vec<u8>> {
    let st = safetensors::SafeTensors::deserialize(bytes).ok()?;
    let (_, header) = safetensors::SafeTensors::read_metadata(bytes).ok()?;
    let mut metadata = header.metadata().clone().unwrap_or_default();
    metadata.remove(checkpoint_file::SHA256_KEY);
    let tensors: Option<Vec<checkpoint_file::NamedTensor>> = st
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            (view.dtype() == safetensors::Dtype::F32)
                .then(|| (name, view.shape().to_vec(), view.data().to_vec()))
        })
        .collect();
    checkpoint_file::serialize_with_digest(&tensors?, metadata).ok()
}

fn accepted_is_finite(bytes: &[u8]) -> Result<(), String> {
    if let Ok((trainer, _)) = gpt::checkpoint::from_safetensors(bytes) {
        if let Some(p) = trainer.params.first_not_finite() {
            return Err(format!(
                "accepted a checkpoint whose {} is not finite",
                p.name
            ));
        }
    }
    Ok(())
}

/// Parses `bytes` as a minbpe `.model` file and builds its tokenizer: an
/// error or a tokenizer, never a panic. The tokenizer encodes a sample
/// and decodes it back unchanged, or refuses it with an error (a pattern
/// that leaves text unmatched must not drop it silently: regression
/// `crash-ec0998…`).
pub fn minbpe_model(bytes: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(());
    };
    let Ok(model) = bpe::model_file::parse_model(text, "fuzz.model") else {
        return Ok(());
    };
    let Ok(tokenizer) = RegexTokenizer::from_model_file(model) else {
        return Ok(());
    };
    let sample = b"hello world 123";
    let Ok(ids) = tokenizer.encode_ordinary(sample) else {
        return Ok(());
    };
    let decoded = tokenizer.decode_bytes(&ids).map_err(|e| e.to_string())?;
    if decoded != sample {
        return Err(format!("a loaded model decodes {sample:?} to {decoded:?}"));
    }
    Ok(())
}

/// The data catalogue's check: the input is a file name, a zero byte, then
/// the file's contents. A catalogue name is written into `scratch` and
/// resolved there, which must succeed exactly when its SHA-256 is one the
/// catalogue accepts; any other name must be refused as unknown.
pub fn catalogue(bytes: &[u8], scratch: &Path) -> Result<(), String> {
    let split = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let name = String::from_utf8_lossy(&bytes[..split]).to_string();
    let contents = bytes.get(split + 1..).unwrap_or_default();
    let dir = data::DataDir::explicit(scratch);
    match data::file(&name) {
        None => match dir.path(&name) {
            Err(data::DataError::Unknown { .. }) => Ok(()),
            other => Err(format!(
                "{name:?} is not in the catalogue, yet gave {other:?}"
            )),
        },
        Some(file) => {
            let path = scratch.join(file.name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&path, contents).map_err(|e| e.to_string())?;
            let accepted = dir.path(&name).is_ok();
            let _ = std::fs::remove_file(&path);
            let should = file.accepts(&data::sha256_hex(contents));
            match accepted == should {
                true => Ok(()),
                false => Err(format!(
                    "{name:?} with {} bytes: resolved {accepted}, but its SHA-256 says {should}",
                    contents.len()
                )),
            }
        }
    }
}

/// Every input in `fuzz/corpus/TARGET` and `fuzz/regressions/TARGET`.
pub fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut inputs = Vec::new();
    for kind in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            if let Ok(bytes) = std::fs::read(&path) {
                inputs.push((path, bytes));
            }
        }
    }
    inputs
}

/// The first inputs of each target's corpus, written where a target's folder
/// is missing: texts in several scripts, lecture 7's bigram checkpoint,
/// minbpe's model files, and catalogue names with their files' starts.
pub fn write_seeds(data: &Path) -> Result<Vec<String>, String> {
    let texts: Vec<Vec<u8>> = vec![
        b"hello world".to_vec(),
        "안녕하세요 👋 (hello in Korean!) 12345 678 \n\n\t  "
            .as_bytes()
            .to_vec(),
        b"First Citizen:\nBefore we proceed any further, hear me speak.\n".to_vec(),
        b"<|endoftext|>I'm   so   done...   it's 2024!!".to_vec(),
        vec![0xff, 0xfe, b'a', 0x80, b' ', 0xc3, 0xa9],
    ];
    let minbpe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bpe/tests/fixtures/minbpe");
    let read = |p: PathBuf| std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()));
    let names = read(data.join("names.txt"))?;
    let mut seeds: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("encode_basic", texts.clone()),
        ("encode_regex", texts.clone()),
        ("encode_gpt2", texts.clone()),
        ("encode_gpt4", texts),
        ("checkpoint", vec![crate::loaders::bigram_checkpoint()?]),
        (
            "minbpe_model",
            vec![
                read(minbpe.join("basic.model"))?,
                read(minbpe.join("regex.model"))?,
                read(minbpe.join("llama.model"))?,
            ],
        ),
    ];
    let mut catalogue = Vec::new();
    for (name, contents) in [
        ("names.txt", names[..100].to_vec()),
        ("tokenizers/r50k_base.tiktoken", b"IQ== 0\n".to_vec()),
        ("not-in-the-catalogue.txt", b"x".to_vec()),
    ] {
        catalogue.push([name.as_bytes(), &[0], &contents].concat());
    }
    seeds.push(("catalogue", catalogue));
    let mut written = Vec::new();
    for (target, inputs) in seeds {
        let dir = fuzz_dir().join("corpus").join(target);
        if dir.exists() {
            continue;
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (i, input) in inputs.iter().enumerate() {
            let path = dir.join(format!("seed-{i}"));
            std::fs::write(&path, input).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        written.push(target.to_string());
    }
    Ok(written)
}
