//! The loaders the corpus damages, each with a valid file: the datasets, the
//! GPT checkpoints of lectures 7 and 9, OpenAI's weights in safetensors,
//! llm.c's model and tokenizer files, token shards, the tokenizer files of
//! lecture 8, the run reports, makemore's files, nanoGPT's prepared
//! folder (`meta.pkl`, headerless `.bin`), `gpt train`'s checkpoint,
//! `char-rnn train`'s, and nanochat's (model and optimizer, its own `.pt` model, `tokenizer.pkl`,
//! a parquet shard:
//! [`nanochat_files`]). Not here: HellaSwag's `.jsonl` (a free
//! text format, with its own tests in `gpt2`), Hugging Face's `config.json`
//! (only ever beside the weights, undamaged) and `cl100k_base.tiktoken`
//! (the same parser as `r50k_base`).

use crate::corpus::{header_edit, safetensors_claiming_more, safetensors_data};
use crate::corpus::{Loaded, Loader, Protection};
use std::path::{Path, PathBuf};

mod nanochat_files;
use nanochat_files::{
    nanochat_model, nanochat_optimizer, nanochat_pt_model, nanochat_shard, nanochat_tokenizer,
};

fn fixture(path: &str) -> Result<Vec<u8>, String> {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))
}

/// The loaders. Those whose valid file is a dataset or tokenizer file from
/// `data` (`ZTH_DATA`) are left out when it is `None`.
pub fn all(data: Option<&Path>) -> Result<Vec<Loader>, String> {
    let mut loaders = vec![
        gpt_checkpoint()?,
        gpt2_checkpoint()?,
        hugging_face()?,
        llmc_model()?,
        llmc_tokenizer()?,
        shard("npy")?,
        shard("bin")?,
        minbpe_model()?,
        run_report()?,
        loss_csv()?,
        makemore_file(MakemoreFile::Best)?,
        makemore_file(MakemoreFile::Last)?,
        nanogpt_meta()?,
        nanogpt_bin()?,
        nanogpt_checkpoint()?,
        char_rnn_checkpoint()?,
        nanochat_model()?,
        nanochat_optimizer()?,
        nanochat_pt_model()?,
        nanochat_tokenizer()?,
        nanochat_shard()?,
    ];
    if let Some(dir) = data {
        loaders.push(dataset(dir)?);
        loaders.push(tiktoken(dir)?);
        loaders.push(encoder_files(dir, "vocab.bpe", "encoder.json")?);
        loaders.push(encoder_files(dir, "encoder.json", "vocab.bpe")?);
    }
    Ok(loaders)
}

fn dataset(dir: &Path) -> Result<Loader, String> {
    let path = dir.join("names.txt");
    Ok(Loader {
        name: "dataset (catalogue SHA-256)",
        file_name: "names.txt".into(),
        valid: std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?,
        companions: vec![],
        protection: Protection::Checksum,
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            data::DataDir::explicit(dir)
                .read_text("names.txt")
                .map(|_| Loaded::Value)
                .map_err(|e| e.to_string())
        }),
        special: vec![],
    })
}

/// safetensors' own damage: a header length past the file, and a dtype and
/// a shape edited in the header.
fn safetensors_special(bytes: &[u8], shape: (&str, &str)) -> Vec<(String, Vec<u8>)> {
    vec![
        (
            "header length claims 1,000 more bytes".into(),
            safetensors_claiming_more(bytes, 1000),
        ),
        (
            "header length claims 2^40 more bytes".into(),
            safetensors_claiming_more(bytes, 1 << 40),
        ),
        (
            "dtype F32 edited to F16".into(),
            header_edit(bytes, "\"F32\"", "\"F16\""),
        ),
        (
            format!("shape {} edited to {}", shape.0, shape.1),
            header_edit(bytes, shape.0, shape.1),
        ),
    ]
}

/// Lecture 7's bigram checkpoint after one step, so that it holds AdamW's moments.
pub fn bigram_checkpoint() -> Result<Vec<u8>, String> {
    use gpt::{Config, Stage, Trainer};
    let mut trainer = Trainer::new(Config::for_stage(Stage::Bigram));
    // One step, so that the checkpoint holds AdamW's moments too.
    let ids: Vec<usize> = (0..32 * 8).map(|i| (i * 7) % 65).collect();
    let targets: Vec<usize> = ids.iter().map(|i| (i + 1) % 65).collect();
    trainer.step(&ids, &targets);
    let chars: Vec<char> = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        .chars()
        .collect();
    let vocab = gpt::CharVocab::from_chars(chars);
    gpt::checkpoint::to_safetensors(&trainer, &vocab)
}

fn gpt_checkpoint() -> Result<Loader, String> {
    let valid = bigram_checkpoint()?;
    Ok(Loader {
        name: "GPT checkpoint (lecture 7)",
        file_name: "bigram.safetensors".into(),
        special: safetensors_special(&valid, ("[65,65]", "[65,64]")),
        valid,
        companions: vec![],
        protection: Protection::Checksum,
        load: Box::new(|path| gpt::checkpoint::load(path).map(|_| Loaded::Value)),
    })
}

fn tiny_split() -> gpt2::recipe::Split {
    let tokens: Vec<usize> = (0..4000).map(|i| (i * 13 + i / 7) % 64).collect();
    gpt2::recipe::Split::new(&tokens)
}

fn gpt2_checkpoint() -> Result<Loader, String> {
    use gpt2::recipe::{RecipeConfig, Trainer};
    let config = RecipeConfig {
        model: gpt2::GptConfig {
            block_size: 8,
            vocab_size: 64,
            n_layer: 1,
            n_head: 2,
            n_embd: 8,
        },
        b: 2,
        t: 8,
        total_batch_size: 16,
        schedule: gpt2::train::LrSchedule {
            max_lr: 1e-2,
            min_lr: 1e-3,
            warmup_steps: 1,
            max_steps: 4,
        },
        weight_decay: 0.1,
        eval_every: 2,
        val_steps: 1,
        checkpoint_every: 0,
        seed: 1337,
    };
    let trainer = Trainer::new(config, &tiny_split())?;
    let valid = gpt2::checkpoint::to_safetensors(&trainer, &[trainer.train_loader.state()])?;
    Ok(Loader {
        name: "GPT-2 recipe checkpoint (lecture 9)",
        file_name: "checkpoint.safetensors".into(),
        special: safetensors_special(&valid, ("[64,8]", "[64,9]")),
        valid,
        companions: vec![],
        protection: Protection::Checksum,
        load: Box::new(|path| gpt2::checkpoint::load(path, &tiny_split()).map(|_| Loaded::Value)),
    })
}

fn hugging_face() -> Result<Loader, String> {
    let valid = fixture("gpt2/tests/fixtures/tiny/model.safetensors")?;
    let data = safetensors_data(&valid);
    Ok(Loader {
        name: "GPT-2 weights (Hugging Face safetensors)",
        file_name: "model.safetensors".into(),
        special: safetensors_special(&valid, ("[64,32]", "[64,31]")),
        valid,
        companions: vec![(
            "config.json".into(),
            fixture("gpt2/tests/fixtures/tiny/config.json")?,
        )],
        protection: Protection::Data(Box::new(move |at| data.contains(&at))),
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            gpt2::hf::from_pretrained(dir).map(|_| Loaded::Value)
        }),
    })
}

/// llm.c's 256-word header, with word `k` set to `value`.
fn with_header_word(bytes: &[u8], k: usize, value: i32) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[4 * k..4 * k + 4].copy_from_slice(&value.to_le_bytes());
    out
}

fn header_word(bytes: &[u8], k: usize) -> i32 {
    i32::from_le_bytes(bytes[4 * k..4 * k + 4].try_into().expect("4 bytes"))
}

fn llmc_model() -> Result<Loader, String> {
    let valid = fixture("gpt2/tests/fixtures/tiny_vocab_llmc_fp32.bin")?;
    let special = vec![
        (
            "header V past the padded vocabulary Vp".into(),
            with_header_word(&valid, 3, header_word(&valid, 7) + 1),
        ),
        (
            "header L claims another layer".into(),
            with_header_word(&valid, 4, header_word(&valid, 4) + 1),
        ),
        (
            "version 3 (float32) edited to 5 (bfloat16)".into(),
            with_header_word(&valid, 1, 5),
        ),
        (
            "header C edited to 2^30".into(),
            with_header_word(&valid, 6, 1 << 30),
        ),
    ];
    Ok(Loader {
        name: "llm.c model (.bin)",
        file_name: "gpt2_124M.bin".into(),
        valid,
        companions: vec![],
        protection: Protection::Data(Box::new(|at| at >= 1024)),
        load: Box::new(|path| gpt2::llmc::read_model(path).map(|_| Loaded::Value)),
        special,
    })
}

fn llmc_tokenizer() -> Result<Loader, String> {
    let valid = fixture("gpt2/tests/fixtures/gpt2_tokenizer.bin")?;
    // The token bytes are data; the length byte before each is structure.
    let mut length_bytes = std::collections::HashSet::new();
    let mut at = 1024;
    while at < valid.len() {
        length_bytes.insert(at);
        at += 1 + valid[at] as usize;
    }
    let n = header_word(&valid, 2);
    let special = vec![
        (
            "count claims one more token".into(),
            with_header_word(&valid, 2, n + 1),
        ),
        (
            "end-of-text id past the tokens".into(),
            with_header_word(&valid, 3, n),
        ),
    ];
    Ok(Loader {
        name: "llm.c tokenizer (.bin)",
        file_name: "gpt2_tokenizer.bin".into(),
        valid,
        companions: vec![],
        protection: Protection::Data(Box::new(move |at| {
            at >= 1024 && !length_bytes.contains(&at)
        })),
        load: Box::new(|path| gpt2::llmc::read_tokenizer(path).map(|_| Loaded::Value)),
        special,
    })
}

fn shard(ext: &'static str) -> Result<Loader, String> {
    let valid = fixture(&format!("gpt2/tests/fixtures/shards/docs_val_000000.{ext}"))?;
    let data_start = match ext {
        "npy" => 10 + u16::from_le_bytes([valid[8], valid[9]]) as usize,
        _ => 1024,
    };
    let special = match ext {
        "npy" => {
            let header = String::from_utf8_lossy(&valid[..data_start]).to_string();
            let shape_at = header.find("'shape': (").expect("a shape") + 10;
            let mut more = valid.clone();
            more[shape_at] = b'9'; // the first digit of the length
            let retype = |to: &str| {
                let at = header.find("<u2").expect("<u2");
                let mut out = valid.clone();
                out[at..at + 3].copy_from_slice(to.as_bytes());
                out
            };
            vec![
                ("shape claims more tokens".to_string(), more),
                ("dtype <u2 edited to <i2".to_string(), retype("<i2")),
                ("dtype <u2 edited to <f2".to_string(), retype("<f2")),
            ]
        }
        _ => vec![
            (
                "count claims 1,000 more tokens".to_string(),
                with_header_word(&valid, 2, header_word(&valid, 2) + 1000),
            ),
            (
                "version edited to 2".to_string(),
                with_header_word(&valid, 1, 2),
            ),
        ],
    };
    Ok(Loader {
        name: if ext == "npy" {
            "token shard (.npy)"
        } else {
            "token shard (llm.c .bin)"
        },
        file_name: format!("docs_val_000000.{ext}"),
        valid,
        companions: vec![],
        protection: Protection::Data(Box::new(move |at| at >= data_start)),
        load: Box::new(|path| {
            let shards = gpt2::recipe::Tokens::Shards(vec![path.to_path_buf()]).open_for(50257)?;
            let _ = shards[0].read(0, shards[0].len());
            Ok(Loaded::Value)
        }),
        special,
    })
}

fn minbpe_model() -> Result<Loader, String> {
    let valid = fixture("bpe/tests/fixtures/minbpe/regex.model")?;
    let text = String::from_utf8(valid.clone()).map_err(|e| e.to_string())?;
    let lines: Vec<&str> = text.lines().collect();
    let specials: usize = lines[2].trim().parse().map_err(|_| "regex.model's count")?;
    let last = 255 + lines.len() - 3 - specials;
    // Each line merges the newest token with itself: its length doubles a line.
    let mut bomb = text.clone();
    for k in 0..48 {
        bomb.push_str(&format!("{0} {0}\n", last + k));
    }
    let mut bad_pattern = lines.clone();
    bad_pattern[1] = "(unclosed";
    let mut clash = lines.clone();
    let clash_line = format!("<|clash|> {}", last);
    clash[2] = "1";
    clash.insert(3, &clash_line);
    let clash = format!("{}\n", clash.join("\n"));
    let special = vec![
        (
            "48 merges that double a token's length".to_string(),
            bomb.into_bytes(),
        ),
        (
            "a pattern that does not compile".to_string(),
            format!("{}\n", bad_pattern.join("\n")).into_bytes(),
        ),
        (
            "a special token with a merge's id".to_string(),
            clash.into_bytes(),
        ),
    ];
    Ok(Loader {
        name: "minbpe .model (lecture 8)",
        file_name: "regex.model".into(),
        valid,
        companions: vec![],
        protection: Protection::WellFormed,
        load: Box::new(|path| {
            let model = bpe::model_file::load(path).map_err(|e| e.to_string())?;
            let canonical = bpe::model_file::model_text(
                &model.pattern,
                &model.special_tokens,
                model.merges.list(),
            )
            .map_err(|e| e.to_string())?;
            bpe::RegexTokenizer::load(path).map_err(|e| e.to_string())?;
            Ok(Loaded::Canonical(canonical.into_bytes()))
        }),
        special,
    })
}

fn tiktoken(dir: &Path) -> Result<Loader, String> {
    let path = dir.join("tokenizers/r50k_base.tiktoken");
    let valid = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut long = valid.clone();
    long.extend_from_slice(
        format!("{} 50256\n", report::page::base64(&vec![b'a'; 1 << 20])).as_bytes(),
    );
    let mut far = valid.clone();
    far.extend_from_slice(b"IQ== 99999999\n");
    let special = vec![
        ("a token of 1 MiB".to_string(), long),
        ("rank 99,999,999".to_string(), far),
    ];
    Ok(Loader {
        name: "tiktoken file (r50k_base)",
        file_name: "r50k_base.tiktoken".into(),
        valid,
        companions: vec![],
        protection: Protection::WellFormed,
        load: Box::new(|path| {
            bpe::Gpt2Tokenizer::from_tiktoken_file(path).map_err(|e| e.to_string())?;
            let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
            let name = path.display().to_string();
            let ranks = bpe::openai::parse_tiktoken(&text, &name).map_err(|e| e.to_string())?;
            let canonical: String = ranks
                .iter()
                .enumerate()
                .map(|(rank, token)| format!("{} {rank}\n", report::page::base64(token)))
                .collect();
            Ok(Loaded::Canonical(canonical.into_bytes()))
        }),
        special,
    })
}

fn encoder_files(dir: &Path, damaged: &str, beside: &str) -> Result<Loader, String> {
    let read = |name: &str| {
        let path = dir.join("tokenizers").join(name);
        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    Ok(Loader {
        name: if damaged == "vocab.bpe" {
            "GPT-2 vocab.bpe (beside encoder.json)"
        } else {
            "GPT-2 encoder.json (beside vocab.bpe)"
        },
        file_name: damaged.to_string(),
        valid: read(damaged)?,
        companions: vec![(beside.to_string(), read(beside)?)],
        protection: Protection::WellFormed,
        load: Box::new(|path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            let tokenizer = bpe::Gpt2Tokenizer::from_encoder_files(
                dir.join("encoder.json"),
                dir.join("vocab.bpe"),
            )
            .map_err(|e| e.to_string())?;
            // What was read: the merges in order (which make every token).
            let merges: Vec<u8> = tokenizer
                .merges()
                .list()
                .iter()
                .flat_map(|(a, b)| [a.to_le_bytes(), b.to_le_bytes()].concat())
                .collect();
            Ok(Loaded::Canonical(merges))
        }),
        special: vec![],
    })
}

/// A report.json and loss.csv as `report::Run` writes them.
fn run_files() -> Result<(Vec<u8>, Vec<u8>), String> {
    let out: PathBuf = std::env::temp_dir().join(format!("faults-run-{}", std::process::id()));
    let args = report::RunArgs {
        out: out.clone(),
        quick: true,
        seed: None,
        steps: None,
    };
    let mut run = report::Run::new(7, "faults", &args, 1337, serde_json::json!({"lr": 0.1}))?;
    let stage = run.stage("train");
    stage.start_training("train", 40, report::LogEvery::Step(1));
    for step in 0..40 {
        stage
            .observe(step, 4.2 / (1.0 + step as f64 / 7.0), 1e-3)
            .map_err(|e| e.to_string())?;
    }
    stage.set_final("val", 2.0612);
    stage.target(report::Target::band("val loss", 2.06, 0.05, 2.0612));
    let _ = run.finish();
    let read = |name: &str| std::fs::read(out.join(name)).map_err(|e| format!("{name}: {e}"));
    let files = (read("report.json")?, read("loss.csv")?);
    let _ = std::fs::remove_dir_all(&out);
    Ok(files)
}

fn run_report() -> Result<Loader, String> {
    Ok(Loader {
        name: "report.json (runs page)",
        file_name: "report.json".into(),
        valid: run_files()?.0,
        companions: vec![],
        protection: Protection::WellFormed,
        load: Box::new(|path| {
            let report = report::page::read_report(path)?;
            Ok(Loaded::Canonical(
                serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?,
            ))
        }),
        special: vec![],
    })
}

fn loss_csv() -> Result<Loader, String> {
    Ok(Loader {
        name: "loss.csv (runs page)",
        file_name: "loss.csv".into(),
        valid: run_files()?.1,
        companions: vec![],
        protection: Protection::WellFormed,
        load: Box::new(|path| {
            let rows = report::read_loss_csv(path)?;
            let rows: Vec<&report::LossRow> = rows.iter().collect();
            Ok(Loaded::Canonical(
                report::loss_csv(&rows).map_err(|e| e.to_string())?,
            ))
        }),
        special: vec![],
    })
}

/// The two files of a makemore work dir.
#[derive(Clone, Copy)]
enum MakemoreFile {
    /// `model.safetensors`: makemore.py's `state_dict`.
    Best,
    /// `last.safetensors`: the state to resume from.
    Last,
}

/// A tiny makemore model (an MLP on twelve words) after one step.
fn makemore_trainer() -> makemore::Trainer {
    let words = "emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily";
    let words = words.split(' ').map(str::to_string).collect();
    let cfg = makemore::TrainConfig {
        kind: makemore::ModelType::Mlp,
        n_embd: 4,
        n_embd2: 8,
        ..makemore::TrainConfig::default()
    };
    makemore::Trainer::new(cfg, words).expect("twelve words make a split")
}

fn makemore_file(which: MakemoreFile) -> Result<Loader, String> {
    let dir = std::env::temp_dir().join(format!("faults-makemore-{}", std::process::id()));
    let mut trainer = makemore_trainer();
    trainer.step();
    let (name, file_name) = match which {
        MakemoreFile::Best => {
            makemore::checkpoint::save_best(&dir, &trainer, 3.0)?;
            (
                "makemore best model (state_dict)",
                makemore::checkpoint::BEST,
            )
        }
        MakemoreFile::Last => {
            makemore::checkpoint::save_last(&dir, &trainer)?;
            ("makemore resume state", makemore::checkpoint::LAST)
        }
    };
    let path = dir.join(file_name);
    let valid = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Loader {
        name,
        file_name: file_name.into(),
        // The MLP's wte: 17 characters, the start token and <BLANK>, by n_embd 4.
        special: safetensors_special(&valid, ("[19,4]", "[19,5]")),
        valid,
        companions: vec![],
        protection: Protection::Checksum,
        load: Box::new(move |path| {
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut trainer = makemore_trainer();
            match which {
                MakemoreFile::Best => makemore::checkpoint::load_best(dir, &mut trainer),
                MakemoreFile::Last => makemore::checkpoint::load_last(dir, &mut trainer),
            }
            .map(|()| Loaded::Value)
        }),
    })
}

/// A prepared folder of nanoGPT's char level, as `gpt prepare` writes it.
fn nanogpt_folder() -> (Vec<u8>, Vec<u8>) {
    let text = "Über die Brücke, über das Feld 🙂\nΚαλημέρα, мир!\n".repeat(4);
    let data = gpt::nanogpt::prepare::prepare(&text, "text").expect("a text");
    (
        gpt::nanogpt::prepare::meta_pickle(&data.vocab),
        gpt::nanogpt::prepare::uint16_bytes(&data.val),
    )
}

/// What a prepared folder loads to: the vocabulary (meta.pkl as our writer
/// writes it) and the val ids.
fn nanogpt_loaded(path: &Path) -> Result<Loaded, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let vocab = gpt::nanogpt::prepare::read_meta_file(&dir.join("meta.pkl"))?;
    let val = gpt::nanogpt::prepare::read_bin(&dir.join("val.bin"), vocab.len())?;
    let mut canonical = gpt::nanogpt::prepare::meta_pickle(&vocab);
    canonical.extend(gpt::nanogpt::prepare::uint16_bytes(&val));
    Ok(Loaded::Canonical(canonical))
}

fn nanogpt_meta() -> Result<Loader, String> {
    let (meta, val) = nanogpt_folder();
    Ok(Loader {
        name: "nanoGPT meta.pkl (beside val.bin)",
        file_name: "meta.pkl".into(),
        valid: meta,
        companions: vec![("val.bin".into(), val)],
        // A pickle has no checksum; nothing in it is free data either: itos and
        // stoi hold each character twice, so a damaged one is refused.
        protection: Protection::Data(Box::new(|_| false)),
        load: Box::new(nanogpt_loaded),
        special: vec![],
    })
}

fn nanogpt_bin() -> Result<Loader, String> {
    let (meta, val) = nanogpt_folder();
    Ok(Loader {
        name: "nanoGPT val.bin (headerless uint16, beside meta.pkl)",
        file_name: "val.bin".into(),
        valid: val,
        companions: vec![("meta.pkl".into(), meta)],
        // Every byte is data, and there is no length to check a cut against:
        // an id changed to another in the vocabulary, or fewer ids, load.
        protection: Protection::Headerless(2),
        load: Box::new(nanogpt_loaded),
        special: vec![],
    })
}

/// `gpt train`'s `ckpt.safetensors` after one step of a tiny model on the
/// text of [`nanogpt_folder`], with a loss and an evaluation in its history.
fn nanogpt_checkpoint() -> Result<Loader, String> {
    use clap::Parser;
    use gpt::nanogpt::checkpoint::Checkpoint;
    use gpt::nanogpt::configurator::TrainArgs;
    use gpt::nanogpt::train::{History, Run};
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: TrainArgs,
    }
    let args = flags::try_parse_from::<Cli>([
        "train",
        "--data=prepared",
        "--n_layer=1",
        "--n_head=2",
        "--n_embd=16",
        "--block_size=8",
        "--batch_size=2",
    ])
    .map_err(|e| e.to_string())?
    .args;
    let text = "Über die Brücke, über das Feld 🙂\nΚαλημέρα, мир!\n".repeat(4);
    let data = gpt::nanogpt::prepare::prepare(&text, "text")?;
    let vocab_size = data.vocab.len();
    let mut run = Run {
        trainer: gpt::Trainer::new(args.config(args.model_args(vocab_size))),
        args,
        data,
        best_val_loss: 3.5,
        history: History {
            losses: vec![(0, 3.6)],
            evals: vec![(0, 3.6, 3.5)],
            step_ms: vec![],
        },
    };
    let mut batch = run.trainer.get_batch(&run.data, gpt::Split::Train);
    gpt::nanogpt::train::TrainPy::step(&mut run, &mut batch, 1e-3);
    let valid = run.checkpoint().to_bytes()?;
    let wte = (format!("[{vocab_size},16]"), format!("[{vocab_size},15]"));
    Ok(Loader {
        name: "nanoGPT checkpoint (gpt train)",
        file_name: gpt::nanogpt::checkpoint::FILE.into(),
        special: safetensors_special(&valid, (&wte.0, &wte.1)),
        valid,
        companions: vec![],
        protection: Protection::Checksum,
        load: Box::new(|path| {
            let ckpt = Checkpoint::load(path)?;
            let mut trainer = gpt::Trainer::new(ckpt.config.config(ckpt.model_args));
            ckpt.restore(&mut trainer)?;
            Ok(Loaded::Value)
        }),
    })
}

/// `char-rnn train`'s checkpoint after two iterations of a tiny LSTM on a
/// text beyond ASCII, with its validation loss.
fn char_rnn_checkpoint() -> Result<Loader, String> {
    use char_rnn::checkpoint::Checkpoint;
    use char_rnn::loader::Split;
    use char_rnn::train::{Options, Trainer};
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        opt: Options,
    }
    let dir = std::env::temp_dir().join(format!("faults-char-rnn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let text = "Über die Brücke, über das Feld 🙂\nΚαλημέρα, мир!\n".repeat(8);
    std::fs::write(dir.join("input.txt"), text).map_err(|e| e.to_string())?;
    let opt = flags::try_parse_from::<Cli>([
        "train",
        &format!("--data-dir={}", dir.display()),
        "--rnn-size=8",
        "--batch-size=2",
        "--seq-length=5",
        "--train-frac=0.8",
        "--val-frac=0.2",
    ])
    .map_err(|e| e.to_string())?
    .opt;
    let mut trainer = Trainer::new(opt, &mut std::io::sink())?;
    trainer.step()?;
    trainer.step()?;
    let val_loss = trainer.eval_split(Split::Val)?;
    let valid = trainer.checkpoint(val_loss).to_bytes()?;
    let _ = std::fs::remove_dir_all(&dir);
    let vocab = trainer.loader.vocab.len();
    let decoder = (format!("[{vocab},8]"), format!("[{vocab},7]"));
    Ok(Loader {
        name: "char-rnn checkpoint (char-rnn train)",
        file_name: "lm_lstm_epoch0.05_3.0000.safetensors".into(),
        special: safetensors_special(&valid, (&decoder.0, &decoder.1)),
        valid,
        companions: vec![],
        protection: Protection::Checksum,
        load: Box::new(|path| Checkpoint::load(path).map(|_| Loaded::Value)),
    })
}
