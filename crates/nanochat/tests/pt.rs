//! nanochat's own checkpoint files (`torch.save` archives), both ways, against nanochat itself
//! (`tests/fixtures/pt/make_fixtures.py` at 92d63d4, depth 2, the 512-token tokenizer):
//! - its float32 and bfloat16 checkpoints load here and give its logits within 1e-5 on a prompt,
//!   and its greedy continuation token for token;
//! - `base-train` resumed from its step-10 folder (optimizer state included) trains steps 10 to
//!   19 with the losses of its own resume, within 1e-5;
//! - the checkpoint `base-train --format pt` writes is the committed one, byte for byte, and
//!   the logits nanochat computed after loading that file are ours; its optimizer file is the
//!   one nanochat's base_train.py resumed from, and resumed here as nanochat resumes, steps 10
//!   to 19 have the losses nanochat's resume had, within 1e-5;
//! - checkpoint_manager.py's fixes for older files, and bad archives refused by name.

use clap::Parser;
use nanochat::base_train::run::base_train;
use nanochat::base_train::BaseTrainArgs;
use nanochat::checkpoint;
use nanochat::gpt::Gpt;
use nanochat::kv_cache::KvCache;
use nanochat::pt::{self, Obj, StoredTensor};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BaseTrainArgs,
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pt")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
        .unwrap()
}

/// A fresh base folder holding the fixtures' 512-token tokenizer.
fn base_folder(name: &str) -> PathBuf {
    let base = std::env::temp_dir().join(format!("nanochat-pt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("tokenizer")).unwrap();
    std::fs::copy(
        fixtures().join("../tokenizer/shakespeare_512.pkl"),
        base.join("tokenizer/tokenizer.pkl"),
    )
    .unwrap();
    base
}

/// A fresh base folder holding nanochat's float32 step-10 checkpoint (model, optimizer and
/// metadata) as `base_checkpoints/f32`, and that folder.
fn with_nanochats_checkpoint(name: &str) -> (PathBuf, PathBuf) {
    let base = base_folder(name);
    let dir = base.join("base_checkpoints/f32");
    std::fs::create_dir_all(&dir).unwrap();
    for file in [
        "model_000010.pt",
        "optim_000010_rank0.pt",
        "meta_000010.json",
    ] {
        std::fs::copy(fixtures().join("f32").join(file), dir.join(file)).unwrap();
    }
    (base, dir)
}

/// base_train.py's flags of the fixture's runs, on tiny Shakespeare, and `extra`.
fn train(base: &Path, extra: &[&str]) -> checkpoint::Meta {
    let shakespeare = data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    let mut argv = vec!["base_train".to_string()];
    for a in expected()["argv"].as_array().unwrap() {
        argv.push(a.as_str().unwrap().to_string());
    }
    argv.push(format!("--input={}", shakespeare.display()));
    argv.extend(extra.iter().map(|s| s.to_string()));
    let args = flags::try_parse_from::<Cli>(argv)
        .unwrap_or_else(|e| panic!("{e}"))
        .args;
    base_train(&args, base, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .meta
}

fn logits(model: &Gpt, tokens: &[u32]) -> Vec<f32> {
    let mut cache = KvCache::new(model.config.n_layer);
    model
        .forward_cached(tokens, 1, &mut cache)
        .unwrap()
        .to_vec() // (1, T, V)
}

/// `GPT.generate(tokens, n, temperature=0)`: the whole sequence again each step, the argmax
/// (the first of equal values, as torch.argmax) taken.
fn greedy(model: &Gpt, tokens: &[u32], n: usize) -> Vec<u32> {
    let mut ids = tokens.to_vec();
    let v = model.config.vocab_size;
    for _ in 0..n {
        let all = logits(model, &ids);
        let last = &all[all.len() - v..];
        let mut best = 0;
        for (i, &x) in last.iter().enumerate() {
            if x > last[best] {
                best = i;
            }
        }
        ids.push(best as u32);
    }
    ids[tokens.len()..].to_vec()
}

/// Our logits and greedy continuation of the fixture's prompt against what nanochat's
/// `build_model` gave for the same checkpoint.
fn check_against_nanochat(model: &Gpt, theirs: &Value, what: &str) {
    let numbers = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let tokens: Vec<u32> = numbers(&theirs["tokens"])
        .iter()
        .map(|&t| t as u32)
        .collect();
    let ours = logits(model, &tokens);
    let v = model.config.vocab_size;
    let at: Vec<usize> = numbers(&theirs["logits_at"])
        .iter()
        .map(|&i| i as usize)
        .collect();
    let mut worst = 0f64;
    for (t, row) in theirs["logits"].as_array().unwrap().iter().enumerate() {
        for (&i, want) in at.iter().zip(numbers(row)) {
            worst = worst.max((ours[t * v + i] as f64 - want).abs());
        }
    }
    let last = &ours[(tokens.len() - 1) * v..];
    for (o, want) in last.iter().zip(numbers(&theirs["last_logits"])) {
        worst = worst.max((*o as f64 - want).abs());
    }
    eprintln!("{what}: logits within {worst:e} of nanochat's");
    assert!(
        worst <= 1e-5,
        "{what}: logits differ from nanochat's by {worst:e}"
    );
    let want: Vec<u32> = numbers(&theirs["greedy"])
        .iter()
        .map(|&t| t as u32)
        .collect();
    assert_eq!(
        greedy(model, &tokens, want.len()),
        want,
        "{what}: greedy continuation"
    );
}

#[test]
fn nanochats_checkpoints_give_its_logits_and_greedy_continuation() {
    let expected = expected();
    for (tag, step) in [("f32", 10), ("bf16", 2)] {
        let (model, meta) = checkpoint::load_model(&fixtures().join(tag), step).unwrap();
        assert_eq!(meta.step, step);
        assert_eq!(
            meta.batches_drawn, None,
            "nanochat's metadata has no batches_drawn"
        );
        check_against_nanochat(&model, &expected[tag], tag);
    }
}

#[test]
fn resumed_from_nanochats_optimizer_state_the_losses_are_its_resumes() {
    let (base, _) = with_nanochats_checkpoint("resume");
    let meta = train(
        &base,
        &[
            "--num-iterations=20",
            "--model-tag=f32",
            "--resume-from-step=10",
        ],
    );
    assert_losses(&meta.losses, &expected()["resumed_losses"]);
    let _ = std::fs::remove_dir_all(&base);
}

/// Each step's loss within 1e-5 of nanochat's.
fn assert_losses(ours: &[(usize, f32)], theirs: &Value) {
    let theirs: Vec<f64> = theirs
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(ours.len(), theirs.len(), "{ours:?}");
    let worst = ours
        .iter()
        .zip(&theirs)
        .map(|((_, o), t)| (*o as f64 - t).abs())
        .fold(0f64, f64::max);
    eprintln!("losses within {worst:e} of nanochat's resume");
    for ((step, o), t) in ours.iter().zip(&theirs) {
        assert!(
            (*o as f64 - t).abs() <= 1e-5,
            "step {step}: loss {o}, nanochat's resume {t}"
        );
    }
}

#[test]
fn our_pt_checkpoint_is_the_committed_one_and_gives_the_logits_nanochat_read_from_it() {
    let expected = expected();
    let base = base_folder("ours");
    train(
        &base,
        &["--num-iterations=10", "--model-tag=ours", "--format=pt"],
    );
    let dir = base.join("base_checkpoints/ours");
    let written = std::fs::read(dir.join("model_000010.pt")).unwrap();
    let committed = std::fs::read(fixtures().join("ours/model_000010.pt")).unwrap();
    assert!(
        written == committed,
        "base-train --format pt no longer writes tests/fixtures/pt/ours/model_000010.pt \
         (make it again, with expected.json's ours_command, and rerun make_fixtures.py)"
    );
    let (model, _) = checkpoint::load_model(&fixtures().join("ours"), 10).unwrap();
    check_against_nanochat(&model, &expected["ours"], "ours");

    // nanochat's base_train.py resumed from our optimizer file (these bytes), and so do we, as
    // base_train.py resumes (the loader restarted after its row group): the same losses.
    let optim = std::fs::read(dir.join("optim_000010_rank0.pt")).unwrap();
    let digest: String = Sha256::digest(&optim)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, expected["ours_optim_sha256"].as_str().unwrap());
    let theirs_way = base.join("base_checkpoints/theirs_way");
    std::fs::create_dir_all(&theirs_way).unwrap();
    for file in ["model_000010.pt", "optim_000010_rank0.pt"] {
        std::fs::copy(dir.join(file), theirs_way.join(file)).unwrap();
    }
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta_000010.json")).unwrap())
            .unwrap();
    for key in ["batches_drawn", "corpus_sha256", "losses", "evals"] {
        meta.as_object_mut().unwrap().remove(key);
    }
    std::fs::write(theirs_way.join("meta_000010.json"), meta.to_string()).unwrap();
    let resumed = train(
        &base,
        &[
            "--num-iterations=20",
            "--model-tag=theirs_way",
            "--resume-from-step=10",
        ],
    );
    assert_losses(&resumed.losses, &expected["ours_resumed_losses"]);

    // The optimizer file reads back into the state the safetensors file holds.
    train(&base, &["--num-iterations=10", "--model-tag=st"]);
    let st = base.join("base_checkpoints/st");
    let mut from_pt = model.setup_optimizer(0.0, 0.0, 0.0, 0.0, 0.0);
    let mut from_st = from_pt.clone();
    checkpoint::load_optimizer(&dir, 10, &model, &mut from_pt).unwrap();
    checkpoint::load_optimizer(&st, 10, &model, &mut from_st).unwrap();
    assert!(
        from_pt.adam.iter().flatten().count() == 8 && from_pt.muon.iter().flatten().count() == 13
    );
    for (a, b) in from_pt.adam.iter().zip(&from_st.adam) {
        let key = |s: &Option<nanochat::optim::AdamState>| {
            s.as_ref()
                .map(|s| (s.step, s.exp_avg.clone(), s.exp_avg_sq.clone()))
        };
        assert_eq!(key(a), key(b));
    }
    for (a, b) in from_pt.muon.iter().zip(&from_st.muon) {
        let key = |s: &Option<nanochat::optim::MuonState>| {
            s.as_ref()
                .map(|s| (s.momentum_buffer.clone(), s.second_momentum_buffer.clone()))
        };
        assert_eq!(key(a), key(b));
    }
    assert_eq!(from_pt.groups, from_st.groups);
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn token_bytes_pt_is_tok_trains_both_ways() {
    let dir = base_folder("token-bytes").join("tokenizer");
    let tokenizer = nanochat::Tokenizer::from_directory(&dir).unwrap();
    let ours = std::fs::read(tokenizer.save_token_bytes(&dir).unwrap()).unwrap();
    let theirs = std::fs::read(fixtures().join("token_bytes.pt")).unwrap();
    let counts: Vec<i32> = tokenizer.token_bytes().iter().map(|&b| b as i32).collect();
    let tensor = Obj::Tensor(StoredTensor::i32(&[512], &counts));
    assert_eq!(
        pt::load(&theirs).unwrap(),
        tensor,
        "tok_train.py's token_bytes.pt"
    );
    assert!(
        ours == std::fs::read(fixtures().join("ours/token_bytes.pt")).unwrap(),
        "save_token_bytes no longer writes tests/fixtures/pt/ours/token_bytes.pt"
    );
    let read_by_torch: Vec<i32> = expected()["ours_token_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as i32)
        .collect();
    assert_eq!(read_by_torch, counts, "torch.load of ours");
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

/// A copy of the f32 fixture's step 10 in a fresh folder, the model's state_dict changed by
/// `edit` and the metadata by `edit_meta`.
fn edited(
    name: &str,
    edit: impl FnOnce(&mut Vec<(Obj, Obj)>),
    edit_meta: impl FnOnce(&mut Value),
) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nanochat-pt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(fixtures().join("f32/model_000010.pt")).unwrap();
    let Obj::Dict(mut items) = pt::load(&bytes).unwrap() else {
        panic!("a state_dict")
    };
    edit(&mut items);
    let bytes = pt::save("model_000010", &Obj::OrderedDict(items)).unwrap();
    std::fs::write(dir.join("model_000010.pt"), bytes).unwrap();
    let text = std::fs::read_to_string(fixtures().join("f32/meta_000010.json")).unwrap();
    let mut meta: Value = serde_json::from_str(&text.replace("Infinity", "null")).unwrap();
    edit_meta(&mut meta);
    std::fs::write(dir.join("meta_000010.json"), meta.to_string()).unwrap();
    dir
}

fn name_of(k: &Obj) -> &str {
    match k {
        Obj::Str(s) => s,
        _ => panic!("a name"),
    }
}

#[test]
fn older_and_compiled_checkpoints_are_patched_as_checkpoint_manager_does() {
    let (original, _) = checkpoint::load_model(&fixtures().join("f32"), 10).unwrap();
    let dir = edited(
        "patched",
        |items| {
            items.retain(|(k, _)| !matches!(name_of(k), "resid_lambdas" | "x0_lambdas"));
            for (k, _) in items.iter_mut() {
                *k = Obj::Str(format!("_orig_mod.{}", name_of(k)));
            }
        },
        |meta| {
            meta["model_config"]
                .as_object_mut()
                .unwrap()
                .remove("window_pattern");
        },
    );
    let (patched, meta) = checkpoint::load_model(&dir, 10).unwrap();
    assert_eq!(meta.model_config.window_pattern, "L");
    for ((_, p), (_, q)) in patched.params.iter().zip(original.params.iter()) {
        match p.name.as_str() {
            "resid_lambdas" => assert_eq!(p.value.to_vec(), vec![1.0; 2]),
            "x0_lambdas" => assert_eq!(p.value.to_vec(), vec![0.0; 2]),
            _ => assert_eq!(p.value.to_vec(), q.value.to_vec(), "{}", p.name),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The error of loading `dir`'s step 10, which must name the file.
fn refusal(dir: &Path) -> String {
    let err = checkpoint::load_model(dir, 10).map(|_| ()).unwrap_err();
    assert!(err.contains("model_000010.pt"), "{err}");
    err
}

#[test]
fn bad_archives_are_refused_by_name() {
    // Truncated: the zip's directory is at its end.
    let dir = edited("truncated", |_| {}, |_| {});
    let bytes = std::fs::read(dir.join("model_000010.pt")).unwrap();
    std::fs::write(dir.join("model_000010.pt"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(refusal(&dir).contains("not a torch.save archive"));

    // A weight stored as int64.
    let dir = edited(
        "dtype",
        |items| {
            let wte = items
                .iter_mut()
                .find(|(k, _)| name_of(k) == "transformer.wte.weight");
            let Some((_, Obj::Tensor(t))) = wte else {
                panic!("wte")
            };
            *t = StoredTensor {
                dtype: pt::Dtype::I64,
                shape: t.shape.clone(),
                data: vec![0; t.numel() * 8],
            };
        },
        |_| {},
    );
    assert!(refusal(&dir).contains("transformer.wte.weight is int64"));

    // A shape that is not the config's.
    let dir = edited(
        "shape",
        |items| {
            let head = items
                .iter_mut()
                .find(|(k, _)| name_of(k) == "lm_head.weight");
            let Some((_, Obj::Tensor(t))) = head else {
                panic!("lm_head")
            };
            *t = StoredTensor::f32(&[511, 32], &vec![0.0; 511 * 32]);
        },
        |_| {},
    );
    assert!(refusal(&dir).contains("lm_head.weight has the shape [511, 32]"));

    // A key the model has not, and one it lacks.
    let dir = edited(
        "keys",
        |items| {
            for (k, _) in items
                .iter_mut()
                .filter(|(k, _)| name_of(k) == "smear_gate.weight")
            {
                *k = Obj::Str("smear_gate.bias".into());
            }
        },
        |_| {},
    );
    assert!(refusal(&dir).contains("lacks smear_gate.weight"));

    // Hostile pickles: a call of os.system, and INST, an opcode torch.save never writes.
    for (what, pickle, says) in [
        (
            "global",
            &b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R."[..],
            "names os.system",
        ),
        ("inst", &b"\x80\x02(ios\nsystem\n."[..], "opcode 0x69"),
    ] {
        let dir = edited(what, |_| {}, |_| {});
        let bytes = pt::archive("model_000010", pickle, &[]).unwrap();
        std::fs::write(dir.join("model_000010.pt"), bytes).unwrap();
        let err = refusal(&dir);
        assert!(err.contains(says), "{what}: {err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    // An optimizer sharded over two ranks.
    let dir = edited("sharded", |_| {}, |_| {});
    for r in 0..2 {
        std::fs::copy(
            fixtures().join("f32/optim_000010_rank0.pt"),
            dir.join(format!("optim_000010_rank{r}.pt")),
        )
        .unwrap();
    }
    let (model, _) = checkpoint::load_model(&dir, 10).unwrap();
    let mut optimizer = model.setup_optimizer(0.0, 0.0, 0.0, 0.0, 0.0);
    let err = checkpoint::load_optimizer(&dir, 10, &model, &mut optimizer).unwrap_err();
    assert!(err.contains("sharded over 2 ranks"), "{err}");

    // Both formats at one step.
    std::fs::write(dir.join("model_000010.safetensors"), b"").unwrap();
    let err = checkpoint::load_model(&dir, 10).map(|_| ()).unwrap_err();
    assert!(err.contains("remove the one not to load"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn views_of_larger_storages_are_read_through_their_offset_and_strides() {
    let views = pt::load(&std::fs::read(fixtures().join("views.pt")).unwrap()).unwrap();
    let values = |name: &str| match views.get(name) {
        Some(Obj::Tensor(t)) => (t.shape.clone(), t.to_f32(name).unwrap()),
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(
        values("transposed"),
        (vec![3, 2], vec![0., 3., 1., 4., 2., 5.])
    );
    assert_eq!(values("sliced"), (vec![4], vec![3., 4., 5., 6.]));
    assert_eq!(values("scalar"), (vec![], vec![5.]));
}

/// A fuzzer's work without libFuzzer (which needs nightly Rust): 3,000 damaged copies of the
/// f32 model's pickle (bytes flipped, cut, repeated, inserted), each re-archived with valid
/// CRCs and the real storages so that the damage reaches the unpickler and the tensor
/// rebuilder: every one an answer or an error, never a panic.
#[test]
fn damaged_pickles_are_refused_without_a_panic() {
    let valid = std::fs::read(fixtures().join("f32/model_000010.pt")).unwrap();
    let Obj::Dict(items) = pt::load(&valid).unwrap() else {
        panic!("a state_dict")
    };
    let storages: Vec<Vec<u8>> = items
        .iter()
        .map(|(_, v)| match v {
            Obj::Tensor(t) => t.data.clone(),
            _ => panic!("a tensor"),
        })
        .collect();
    let storages: Vec<&[u8]> = storages.iter().map(Vec::as_slice).collect();
    let pickle = {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&valid)).unwrap();
        let mut entry = zip.by_name("model_000010/data.pkl").unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut out).unwrap();
        out
    };
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..3000 {
        let mut p = pickle.clone();
        for _ in 0..1 + next(4) {
            let at = next(p.len());
            match next(4) {
                0 => p[at] ^= 1 << next(8),
                1 => p.truncate(at),
                2 => {
                    let end = (at + 1 + next(16)).min(p.len());
                    let piece = p[at..end].to_vec();
                    p.splice(at..at, piece);
                }
                _ => p.insert(at, next(256) as u8),
            }
            if p.is_empty() {
                p.push(b'.');
            }
        }
        let archive = pt::archive("model_000010", &p, &storages).unwrap();
        let result = std::panic::catch_unwind(|| pt::load(&archive));
        match result {
            Ok(Ok(_)) => accepted += 1,
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("round {round}: pt::load panicked on {p:?}"),
        }
    }
    assert!(refused > 2000, "{accepted} accepted, {refused} refused");
}

#[derive(Parser)]
struct SftCli {
    #[command(flatten)]
    args: nanochat::chat_sft::SftArgs,
}

/// The path of a model pretrained on a GPU and fine-tuned here: `sft` from nanochat's own base
/// checkpoint (its optimizer state warm-started), writing nanochat's files with `--format pt`,
/// which load back as the model that was fine-tuned.
#[test]
fn sft_from_nanochats_base_writes_its_files() {
    let (base, dir) = with_nanochats_checkpoint("sft");
    let names = data::path("names.txt").unwrap_or_else(|e| panic!("{e}"));
    let argv = [
        "chat_sft".to_string(),
        "--model-tag=f32".into(),
        "--num-iterations=3".into(),
        "--eval-every=-1".into(),
        "--eval-tokens=1024".into(),
        "--chatcore-every=-1".into(),
        format!("--words={}", names.display()),
        "--simple-spelling=100".into(),
        "--spelling-bee=100".into(),
        "--arithmetic=200".into(),
        "--format=pt".into(),
    ];
    let args = flags::try_parse_from::<SftCli>(argv)
        .unwrap_or_else(|e| panic!("{e}"))
        .args;
    let finished = nanochat::chat_sft::run::chat_sft(&args, &base, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let out = base.join("chatsft_checkpoints/f32");
    let step = finished.meta.step;
    let written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for file in [
        format!("model_{step:06}.pt"),
        format!("optim_{step:06}_rank0.pt"),
        format!("meta_{step:06}.json"),
    ] {
        assert!(written.contains(&file), "{file}: {written:?}");
    }
    let (tuned, meta) = checkpoint::load_model(&out, step).unwrap();
    let (base_model, _) = checkpoint::load_model(&dir, 10).unwrap();
    assert_eq!(meta.losses.len(), finished.meta.losses.len());
    let differs = tuned
        .params
        .iter()
        .zip(base_model.params.iter())
        .any(|((_, a), (_, b))| a.value.to_vec() != b.value.to_vec());
    assert!(
        differs,
        "three steps of SFT left every weight of the base as it was"
    );
    let _ = std::fs::remove_dir_all(&base);
}
