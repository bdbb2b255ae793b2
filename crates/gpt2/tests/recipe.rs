//! The `cpu` recipe's loop on a small model: a run stopped at a checkpoint
//! and resumed gives the uninterrupted run's losses, log and weights bit for
//! bit; a NaN stops the run naming the step with no checkpoint of that
//! state; damaged checkpoints are refused by name; the trained model exports
//! to OpenAI's and llm.c's layouts and loads back the same.

use gpt2::recipe::{self, RecipeConfig, Split, Trainer};
use gpt2::train::LrSchedule;
use gpt2::GptConfig;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gpt2-recipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A small model on the first 20,000 tokens of tiny Shakespeare: two
/// micro-steps per step, so accumulation is exercised too.
fn small() -> (RecipeConfig, Split) {
    let config = RecipeConfig {
        model: GptConfig {
            block_size: 16,
            vocab_size: 50304,
            n_layer: 2,
            n_head: 2,
            n_embd: 16,
        },
        b: 2,
        t: 16,
        total_batch_size: 64,
        schedule: LrSchedule {
            max_lr: 1e-2,
            min_lr: 1e-3,
            warmup_steps: 2,
            max_steps: 8,
        },
        weight_decay: 0.1,
        eval_every: 4,
        val_steps: 3,
        checkpoint_every: 0,
        seed: 1337,
    };
    let tokens = gpt2::train::shakespeare_tokens(Some(80_000)).unwrap();
    (config, Split::new(&tokens))
}

/// A fresh run of `config` in a new scratch folder `name` (also the stage's
/// label), trained until `stop` or to its end: the trainer, what the run
/// returned, and the folder, which then holds `checkpoint.safetensors`.
fn trained(
    name: &str,
    config: &RecipeConfig,
    split: &Split,
    stop: Option<usize>,
) -> (Trainer, recipe::Trained, PathBuf) {
    let dir = scratch(name);
    let mut trainer = Trainer::new(config.clone(), split).unwrap();
    let mut stage = report::Stage::standalone(name);
    let run = recipe::train(&mut trainer, split, &dir, &mut stage, stop).unwrap();
    (trainer, run, dir)
}

fn values(trainer: &Trainer) -> Vec<Vec<f32>> {
    trainer
        .params
        .iter()
        .map(|(_, p)| p.value.to_vec())
        .collect()
}

#[test]
fn a_resumed_run_continues_the_same_losses_log_and_weights_bit_for_bit() {
    let (config, split) = small();
    let (straight, all, straight_dir) = trained("straight", &config, &split, None);
    assert_eq!(all.losses.len(), 8);
    assert_eq!(
        all.evals.iter().map(|e| e.step).collect::<Vec<_>>(),
        [0, 4, 8]
    );
    assert!(all.evals[2].val < all.evals[0].val, "{:?}", all.evals);

    let (first, head, stopped_dir) = trained("stopped", &config, &split, Some(3));
    assert_eq!(head.losses, all.losses[..3]);
    drop(first);
    let checkpoint = stopped_dir.join("checkpoint.safetensors");
    let mut resumed = gpt2::checkpoint::load(&checkpoint, &split).unwrap();
    assert_eq!(resumed.step, 3);
    let tail = recipe::train(
        &mut resumed,
        &split,
        &stopped_dir,
        &mut report::Stage::standalone("c"),
        None,
    )
    .unwrap();
    let bits = |xs: &[f32]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&tail.losses), bits(&all.losses[3..]));
    assert_eq!(values(&resumed), values(&straight));
    let log = |dir: &PathBuf| std::fs::read_to_string(dir.join("log.txt")).unwrap();
    assert_eq!(log(&stopped_dir), log(&straight_dir));
    assert!(log(&straight_dir).starts_with("0 val "));
    assert!(log(&straight_dir).contains("\n7 train "));
    for dir in [straight_dir, stopped_dir] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn a_nan_stops_the_run_naming_the_step_and_writes_no_checkpoint_of_it() {
    let (mut config, split) = small();
    // A rate of infinity turns the weights to NaN in the first update, and
    // the second step's loss is NaN.
    config.schedule.max_lr = f64::INFINITY;
    for (checkpoint_every, named) in [
        (0, "the loss is NaN at step 1"),
        (1, "not finite after step 0"),
    ] {
        config.checkpoint_every = checkpoint_every;
        let dir = scratch("nan");
        let mut trainer = Trainer::new(config.clone(), &split).unwrap();
        let err = recipe::train(
            &mut trainer,
            &split,
            &dir,
            &mut report::Stage::standalone("nan"),
            None,
        )
        .err()
        .expect("a NaN is an error");
        assert!(err.contains(named), "{err}");
        assert!(!dir.join("checkpoint.safetensors").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn damaged_checkpoints_are_refused_naming_the_file() {
    let (config, split) = small();
    let dir = scratch("damaged");
    let trainer = Trainer::new(config, &split).unwrap();
    let path = dir.join("checkpoint.safetensors");
    gpt2::checkpoint::save(&path, &trainer).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    let err = gpt2::checkpoint::load(&path, &split).err().unwrap();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("truncated"),
        "{err}"
    );
    std::fs::write(&path, b"not a checkpoint").unwrap();
    assert!(gpt2::checkpoint::load(&path, &split).is_err());
    let missing = dir.join("none.safetensors");
    let err = gpt2::checkpoint::load(&missing, &split).err().unwrap();
    assert!(err.contains("none.safetensors"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_trained_model_exports_to_openais_and_llm_cs_layouts_and_loads_back() {
    let (mut config, split) = small();
    config.schedule.max_steps = 3;
    let (trainer, _, dir) = trained("export", &config, &split, None);
    let ids: Vec<usize> = split.val.in_memory().unwrap()[..16]
        .iter()
        .map(|&t| t as usize)
        .collect();
    let ours = gpt2::sample::logits(&trainer.model, &trainer.params, &ids)
        .unwrap()
        .to_vec();

    gpt2::hf::save_pretrained(&dir.join("hf"), &trainer.model, &trainer.params).unwrap();
    let (model, params) = gpt2::hf::from_pretrained(&dir.join("hf")).unwrap();
    assert_eq!(model.config, trainer.model.config);
    assert_eq!(
        gpt2::sample::logits(&model, &params, &ids)
            .unwrap()
            .to_vec(),
        ours
    );

    let bin = dir.join("model.bin");
    gpt2::llmc::write_model(
        &bin,
        &trainer.model,
        &trainer.params,
        gpt2::llmc::Dtype::F32,
    )
    .unwrap();
    let (model, params) = gpt2::llmc::read_model(&bin).unwrap();
    assert_eq!(model.config, trainer.model.config);
    assert_eq!(
        gpt2::sample::logits(&model, &params, &ids)
            .unwrap()
            .to_vec(),
        ours
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_bigram_bar_is_lecture_twos_count_model_at_its_best_smoothing() {
    // Two tokens alternating: the bigram predicts perfectly as alpha -> 0.
    let tokens: Vec<usize> = (0..1000).map(|i| i % 2).collect();
    let (alpha, loss) = recipe::bigram_val_loss(&Split::new(&tokens)).unwrap();
    assert_eq!(alpha, 1e-4);
    // (count + α) / (row + α·V) with count = row ≈ 449, V = 50,257.
    let row: f64 = 449.0;
    let want = -((row + 1e-4) / (row + 1e-4 * 50257.0)).ln();
    assert!((loss - want).abs() < 1e-3, "{loss} vs {want}");
}

#[test]
fn the_recipe_trains_on_prepared_shards_as_on_the_same_tokens_in_memory() {
    use gpt2::recipe::Tokens;
    use gpt2::shards::{prepare, InputKind, ShardFormat};
    let (mut config, _) = small();
    config.schedule.max_steps = 3;
    let dir = scratch("shards");
    let text: String = data::read_text("tinyshakespeare.txt")
        .unwrap()
        .chars()
        .take(20_000)
        .collect();
    let input = dir.join("tiny.txt");
    std::fs::write(&input, text).unwrap();
    let written = prepare(
        &input,
        &InputKind::Text,
        &dir.join("shards"),
        "tiny",
        2000,
        ShardFormat::Bin,
    )
    .unwrap();
    assert!(written.len() > 2);
    let on_disk = Split::from_dir(&dir.join("shards")).unwrap();
    let first = |t: &Tokens| -> Vec<u16> {
        let shard = &t.open().unwrap()[0];
        shard
            .read(0, shard.len())
            .into_iter()
            .map(|t| t as u16)
            .collect()
    };
    // Six micro-batches of 32 stay inside the first train shard's 2,000 tokens.
    let in_memory = Split {
        train: Tokens::Memory("train".into(), first(&on_disk.train)),
        val: Tokens::Memory("val".into(), first(&on_disk.val)),
    };
    let mut runs = Vec::new();
    for split in [&on_disk, &in_memory] {
        let mut trainer = Trainer::new(config.clone(), split).unwrap();
        let out = dir.join(format!("run{}", runs.len()));
        runs.push(
            recipe::train(
                &mut trainer,
                split,
                &out,
                &mut report::Stage::standalone("s"),
                None,
            )
            .unwrap(),
        );
    }
    assert_eq!(runs[0].losses, runs[1].losses);
    assert_eq!(runs[0].evals, runs[1].evals);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_saved_models_val_loss_is_transformers_own() {
    // A random model saved by transformers stands in for OpenAI's weights
    // (fixtures/pretrained_val_loss.py scores it the same way).
    let want: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/pretrained_val_loss.json")).unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-vocab");
    let loss = recipe::pretrained_val_loss(&dir, &Split::shakespeare().unwrap()).unwrap();
    let want = want["val_loss"].as_f64().unwrap();
    assert!((loss - want).abs() < 1e-5, "{loss} vs transformers' {want}");
}

#[test]
fn a_checkpoint_resumes_only_on_its_own_data_and_a_stop_before_it_trains_nothing() {
    let (config, split) = small();
    let (_, _, dir) = trained("guard", &config, &split, Some(3));
    let checkpoint = dir.join("checkpoint.safetensors");
    let tokens = gpt2::train::shakespeare_tokens(Some(60_000)).unwrap();
    let err = gpt2::checkpoint::load(&checkpoint, &Split::new(&tokens))
        .err()
        .unwrap();
    assert!(
        err.contains("trained on") && err.contains("checkpoint.safetensors"),
        "{err}"
    );
    // Resumed at step 3, a stop at step 2 is already past: no step is taken.
    let mut resumed = gpt2::checkpoint::load(&checkpoint, &split).unwrap();
    let run = recipe::train(
        &mut resumed,
        &split,
        &dir,
        &mut report::Stage::standalone("h"),
        Some(2),
    )
    .unwrap();
    assert!(run.losses.is_empty());
    assert_eq!(resumed.step, 3);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_recipe_whose_warmup_outlasts_it_is_refused() {
    let (mut config, split) = small();
    config.schedule.warmup_steps = config.schedule.max_steps;
    let err = Trainer::new(config.clone(), &split).err().unwrap();
    assert!(err.contains("warmup"), "{err}");
    // Cutting a recipe shortens its warmup with it.
    let cut = RecipeConfig::cpu().with_steps(12);
    assert_eq!((cut.schedule.max_steps, cut.schedule.warmup_steps), (12, 6));
    assert!(cut.validate(1).is_ok());
}

#[test]
fn a_val_split_too_short_for_one_batch_is_an_error_not_a_zero_loss() {
    let (config, split) = small();
    let short = Split {
        train: split.train,
        val: recipe::Tokens::Memory("the val split".into(), vec![1; config.b * config.t]),
    };
    let trainer = Trainer::new(config, &short).unwrap();
    let err = trainer.val_loss(&short).unwrap_err();
    assert!(
        err.contains("the val split") && err.contains("cannot fill one val batch"),
        "{err}"
    );
}

/// Rewrites the metadata of a safetensors file (the 8-byte header length,
/// then the JSON header); tensor offsets count from the header's end.
fn with_metadata(
    bytes: &[u8],
    edit: impl Fn(&mut serde_json::Map<String, serde_json::Value>),
) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    edit(header["__metadata__"].as_object_mut().unwrap());
    let json = serde_json::to_vec(&header).unwrap();
    [
        &(json.len() as u64).to_le_bytes()[..],
        &json,
        &bytes[8 + n..],
    ]
    .concat()
}

#[test]
fn a_checkpoint_from_before_data_parallel_training_still_resumes() {
    let (mut config, split) = small();
    config.schedule.max_steps = 3;
    let (trainer, _, dir) = trained("format-1", &config, &split, None);
    let path = dir.join("checkpoint.safetensors");
    // Format 1 had one process's `loader` where format 2 has `loaders` and
    // `world_size`, and no `sha256` (format 3).
    let old = with_metadata(&std::fs::read(&path).unwrap(), |meta| {
        meta.remove("sha256");
        let loaders: Vec<serde_json::Value> =
            serde_json::from_str(meta["loaders"].as_str().unwrap()).unwrap();
        meta.insert("loader".into(), loaders[0].to_string().into());
        meta.remove("loaders");
        meta.remove("world_size");
        meta.insert("format".into(), "zero-to-hero/gpt2-recipe/1".into());
    });
    std::fs::write(&path, old).unwrap();
    let resumed = gpt2::checkpoint::load(&path, &split).unwrap();
    assert_eq!(resumed.step, 3);
    assert_eq!(resumed.train_loader.state(), trainer.train_loader.state());
    assert_eq!(values(&resumed), values(&trainer));
    std::fs::remove_dir_all(dir).unwrap();
}
