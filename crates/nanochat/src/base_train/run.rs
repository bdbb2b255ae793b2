//! base_train.py's loop, as it runs on one CPU process: evaluate bits per byte every
//! `--eval-every` steps and at the end, sample every `--sample-every`, save every
//! `--save-every` and at the end, and between them take a step and print its line.
//!
//! Two departures, both so that a run is whole on a CPU: the data can be any text
//! (`--input`), and a resumed run replays its loader to the batch it stopped at (nanochat
//! restarts at the next row group, dropping its buffer), so it continues bit for bit.

use super::{build_model, commas, python_e, validation_bpb, BaseTrain, BaseTrainArgs, Plan};
use crate::checkpoint::{self, LoopState, Meta};
use crate::core_eval::{evaluate_core, Bundle};
use crate::dataloader::{DocumentSource, InMemory};
use crate::documents::train_val_split;
use crate::gpt::{Gpt, GptConfig};
use crate::run_files::{Finished, Stage};
use crate::shards::ParquetShards;
use crate::tokenizer::Tokenizer;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Instant;

/// The prompts base_train samples from, greedily, 16 tokens each.
pub const SAMPLE_PROMPTS: [&str; 7] = [
    "The capital of France is",
    "The chemical symbol of gold is",
    "If yesterday was Friday, then tomorrow will be",
    "The opposite of hot is",
    "The planets of the solar system are:",
    "My favorite color is",
    "If 5*x + 3 = 13, then x is",
];

/// Refuses the flags this build cannot honour, with what to give instead.
fn check_flags(args: &BaseTrainArgs, print0: &mut dyn FnMut(String)) -> Result<(), String> {
    if !matches!(args.device_type.as_str(), "" | "cpu") {
        return Err(format!(
            "--device-type {}: this build trains on the CPU only (give --device-type cpu, or leave it out)",
            args.device_type
        ));
    }
    if args.fp8 {
        print0("Warning: FP8 training requires CUDA, ignoring --fp8 flag".into());
    }
    if args.run != "dummy" {
        print0(format!(
            "Warning: wandb logging is not part of this build; --run {} only names nothing",
            args.run
        ));
    }
    if args.depth == 0 {
        return Err("--depth must be at least 1".into());
    }
    if args.device_batch_size == 0 || args.max_seq_len < 2 {
        return Err("--device-batch-size must be at least 1 and --max-seq-len at least 2".into());
    }
    Ok(())
}

/// The text a run trains on: text files read into memory, or nanochat's parquet shards.
#[derive(Clone)]
pub enum Corpus {
    /// `--input`: files of documents, split as [`train_val_split`] splits them.
    Text(InMemory),
    /// The base folder's `base_data_climbmix/*.parquet`, read a row group at a time.
    Shards(ParquetShards),
}

impl DocumentSource for Corpus {
    fn num_files(&self) -> usize {
        match self {
            Corpus::Text(t) => t.num_files(),
            Corpus::Shards(s) => s.num_files(),
        }
    }
    fn num_row_groups(&mut self, file: usize) -> Result<usize, String> {
        match self {
            Corpus::Text(t) => t.num_row_groups(file),
            Corpus::Shards(s) => s.num_row_groups(file),
        }
    }
    fn read_row_group(&mut self, file: usize, row_group: usize) -> Result<Vec<String>, String> {
        match self {
            Corpus::Text(t) => t.read_row_group(file, row_group),
            Corpus::Shards(s) => s.read_row_group(file, row_group),
        }
    }
}

/// The train and val documents: `--input`, or nanochat's shards under the base folder.
pub fn corpus(input: Option<&Path>, base: &Path) -> Result<(Corpus, Corpus), String> {
    if let Some(path) = input {
        let (train, val) = train_val_split(path)?;
        return Ok((Corpus::Text(train), Corpus::Text(val)));
    }
    let dir = base.join("base_data_climbmix");
    if !dir.is_dir() {
        return Err(format!(
            "no --input given and no shards in {}: give --input (a text file, a .jsonl file or a \
             folder of them), or download nanochat's shards with `nanochat data`",
            dir.display()
        ));
    }
    let (train, val) = ParquetShards::train_val(&dir)?;
    Ok((Corpus::Shards(train), Corpus::Shards(val)))
}

/// Where the corpus came from, for error messages.
fn corpus_name(args: &BaseTrainArgs, base: &Path) -> String {
    match &args.input {
        Some(p) => p.display().to_string(),
        None => base.join("base_data_climbmix").display().to_string(),
    }
}

/// Refuses training documents with fewer tokens (a `<|bos|>` before each) than one row needs;
/// reads only as far as it takes to find enough.
fn check_enough_tokens(
    train: &Corpus,
    tokenizer: &Tokenizer,
    args: &BaseTrainArgs,
    name: &str,
) -> Result<(), String> {
    let needed = args.max_seq_len + 1;
    let mut source = train.clone();
    let mut tokens = 0;
    for file in 0..source.num_files() {
        for group in 0..source.num_row_groups(file)? {
            for doc in source.read_row_group(file, group)? {
                tokens += 1 + tokenizer.encode(&doc).len();
                if tokens >= needed {
                    return Ok(());
                }
            }
        }
    }
    Err(format!(
        "{name}: its training documents hold {tokens} tokens, fewer than one row of {needed} \
         (--max-seq-len {} + 1); give more text or a shorter --max-seq-len",
        args.max_seq_len
    ))
}

/// SHA-256 over the documents (text) or the shards' names and sizes (parquet), each field
/// prefixed with its length.
fn corpus_digest(corpus: &Corpus) -> String {
    let mut sha = Sha256::new();
    let mut field = |bytes: &[u8]| {
        sha.update((bytes.len() as u64).to_le_bytes());
        sha.update(bytes);
    };
    match corpus {
        Corpus::Text(docs) => docs
            .0
            .iter()
            .flatten()
            .flatten()
            .for_each(|d| field(d.as_bytes())),
        Corpus::Shards(shards) => {
            for f in shards.files() {
                field(f.file_name().map_or(&[][..], |n| n.as_encoded_bytes()));
                let size = std::fs::metadata(f).map_or(0, |m| m.len());
                field(&size.to_le_bytes());
            }
        }
    }
    sha.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuses a model and batch that cannot fit in this machine's memory, before anything is
/// allocated: the parameters, their gradients and two optimizer moments, and one micro-batch's
/// activations (about 24 floats per layer and channel, and 3 per vocabulary entry, a token).
fn check_memory(args: &BaseTrainArgs, c: &GptConfig) -> Result<(), String> {
    let (l, e, v) = (
        c.n_layer as u64,
        c.n_embd as u64,
        c.padded_vocab_size() as u64,
    );
    let kv = (c.n_kv_head * c.head_dim()) as u64;
    // The matrices and the head (the scaling parameters), the embedding, the value embeddings.
    let floats = (|| {
        let matrices = l.checked_mul(e.checked_mul(e)?.checked_mul(12)?)?;
        let tables = v.checked_mul(
            e.checked_add(kv.checked_mul(l.div_ceil(2))?)?
                .checked_add(e)?,
        )?;
        let params = matrices.checked_add(tables)?;
        let per_token = l
            .checked_mul(e)?
            .checked_mul(24)?
            .checked_add(v.checked_mul(3)?)?;
        let tokens = (args.device_batch_size as u64).checked_mul(args.max_seq_len as u64)?;
        params
            .checked_mul(4)?
            .checked_add(tokens.checked_mul(per_token)?)
    })();
    report::check_memory(
        floats,
        &format!(
            "--depth {} --device-batch-size {} --max-seq-len {}",
            args.depth, args.device_batch_size, args.max_seq_len
        ),
    )
}

/// Greedy continuation of `prompt` (after `<|bos|>`) by up to `max_tokens` tokens, stopping at
/// `<|bos|>` or `<|assistant_end|>` as nanochat's engine does; the prompt's ids included.
pub fn greedy_sample(
    model: &Gpt,
    tokenizer: &Tokenizer,
    prompt: &str,
    max_tokens: usize,
) -> Result<Vec<u32>, String> {
    let bos = tokenizer.bos_token_id();
    let assistant_end = tokenizer.encode_special("<|assistant_end|>")?;
    let mut ids = vec![bos];
    ids.extend(tokenizer.encode(prompt));
    for _ in 0..max_tokens {
        let window = &ids[ids.len().saturating_sub(model.config.sequence_len)..];
        let graph = autograd::Graph::no_grad();
        let pass = autograd::ForwardPass::eval(&graph, &model.params);
        let logits = model.forward(&pass, window, 1, None).value(); // (1, T, V)
        let v = model.config.vocab_size;
        let last = logits.to_vec()[(window.len() - 1) * v..].to_vec(); // (V,)
        let next = tensor::Tensor::from_vec(last, &[v]).argmax(0)[0] as u32;
        if next == bos || next == assistant_end {
            break;
        }
        ids.push(next);
    }
    Ok(ids)
}

/// The model config as base_train prints it (`json.dumps(..., indent=2)`).
fn config_json(model: &Gpt) -> String {
    let c = &model.config;
    format!(
        "{{\n  \"sequence_len\": {},\n  \"vocab_size\": {},\n  \"n_layer\": {},\n  \"n_head\": {},\n  \
         \"n_kv_head\": {},\n  \"n_embd\": {},\n  \"window_pattern\": \"{}\"\n}}",
        c.sequence_len, c.vocab_size, c.n_layer, c.n_head, c.n_kv_head, c.n_embd, c.window_pattern
    )
}

// ANCHOR: base_train
/// Runs `scripts/base_train.py` with `args`, reading the tokenizer from `<base>/tokenizer` and
/// writing checkpoints under `<base>/base_checkpoints/<model tag>`; `print0` gets each line.
pub fn base_train(
    args: &BaseTrainArgs,
    base: &Path,
    print0: &mut dyn FnMut(String),
) -> Result<Finished, String> {
    check_flags(args, print0)?;
    let tokenizer = Tokenizer::from_directory(&base.join("tokenizer"))?;
    let token_bytes = tokenizer.token_bytes();
    let (train, val) = corpus(args.input.as_deref(), base)?;
    check_enough_tokens(&train, &tokenizer, args, &corpus_name(args, base))?;
    print0(format!("Vocab size: {}", commas(tokenizer.vocab_size())));
    let model_tag = args.model_tag.clone().unwrap_or(format!("d{}", args.depth));
    let dir = checkpoint::checkpoint_dir(base, &model_tag);
    let config = GptConfig::from_depth(
        args.depth,
        args.aspect_ratio,
        args.head_dim,
        args.max_seq_len,
        tokenizer.vocab_size(),
        &args.window_pattern,
    )?;
    check_memory(args, &config)?;
    let mut model = build_model(args, tokenizer.vocab_size())?;
    print0(format!("Model config:\n{}", config_json(&model)));
    let resumed = if args.resume_from_step >= 0 {
        let step = args.resume_from_step as usize;
        print0(format!("Resuming optimization from step {step}"));
        let (saved, meta) = checkpoint::load_model(&dir, step)?;
        if saved.config != model.config {
            return Err(format!(
                "{}: the checkpoint of step {step} is a model of another shape ({:?}) than these flags build",
                dir.display(),
                saved.config
            ));
        }
        if meta
            .corpus_sha256
            .as_ref()
            .is_some_and(|d| *d != corpus_digest(&train))
        {
            return Err(format!(
                "{}: the checkpoint of step {step} was trained on other documents than {}",
                dir.display(),
                corpus_name(args, base)
            ));
        }
        model = saved;
        Some(meta)
    } else {
        None
    };
    print0("Parameter counts:".into());
    for (key, value) in model.num_scaling_params() {
        print0(format!("{key:24}: {}", commas(value)));
    }
    print0(format!(
        "Estimated FLOPs per token: {}",
        python_e(model.estimate_flops())
    ));
    let mut plan = Plan::new(args, &model, print0)?;
    print0(format!(
        "Scaling the LR for the AdamW parameters ∝1/√({}/768) = {:.6}",
        model.config.n_embd,
        (model.config.n_embd as f64 / 768.0).powf(-0.5)
    ));
    plan.horizon(args, print0)?;
    let corpus_sha256 = corpus_digest(&train);
    // nanochat's own checkpoints resume as base_train.py does: the loader restarts after the
    // row group it stopped in. Ours replay the loader to the very batch (below).
    let loader_resume = resumed
        .as_ref()
        .filter(|meta| meta.batches_drawn.is_none())
        .map(|meta| meta.dataloader_state_dict);
    let mut run = BaseTrain::new(args, model, &plan, &tokenizer, train, loader_resume)?;
    let (mut loop_state, mut val_bpb, mut losses, mut evals) = match &resumed {
        Some(meta) => {
            checkpoint::load_optimizer(&dir, meta.step, &run.model, &mut run.optimizer)?;
            // Replay the loader to the batch the saved run was about to train on.
            while run.batches_drawn < meta.batches_drawn.unwrap_or(0) {
                run.next = run.loader.next_batch()?;
                run.batches_drawn += 1;
            }
            run.step = meta.step;
            (
                meta.loop_state.clone(),
                meta.val_bpb,
                meta.losses.clone(),
                meta.evals.clone(),
            )
        }
        None => {
            let fresh = LoopState {
                min_val_bpb: f64::INFINITY,
                ..LoopState::default()
            };
            (fresh, None, Vec::new(), Vec::new())
        }
    };
    let tokens_per_fwdbwd = args.device_batch_size * args.max_seq_len;
    print0(format!(
        "Tokens / micro-batch / rank: {} x {} = {}",
        args.device_batch_size,
        args.max_seq_len,
        commas(tokens_per_fwdbwd)
    ));
    print0(format!(
        "Tokens / micro-batch: {}",
        commas(tokens_per_fwdbwd)
    ));
    print0(format!(
        "Total batch size {} => gradient accumulation steps: {}",
        commas(plan.total_batch_size),
        plan.grad_accum_steps
    ));

    // The CORE metric needs nanochat's eval bundle in the base folder; without one it is
    // skipped, said once, where nanochat would download it.
    let core_bundle = if args.core_metric_every > 0 {
        match Bundle::open(&base.join("eval_bundle")) {
            Ok(bundle) => Some(bundle),
            Err(e) => {
                print0(format!("CORE metric skipped: {e}"));
                None
            }
        }
    } else {
        None
    };

    let num_iterations = plan.num_iterations;
    let mut meta;
    loop {
        let step = run.step;
        let last_step = step == num_iterations;
        if args.eval_every > 0 && (last_step || step as i64 % args.eval_every == 0) {
            let bpb = validation_bpb(args, &run.model, &tokenizer, val.clone(), &token_bytes)?;
            print0(format!("Step {step:05} | Validation bpb: {bpb:.6}"));
            loop_state.min_val_bpb = loop_state.min_val_bpb.min(bpb);
            val_bpb = Some(bpb);
            if !evals.iter().any(|&(s, _)| s == step) {
                evals.push((step, bpb));
            }
        }
        if let Some(bundle) = &core_bundle {
            if last_step || (step > 0 && step as i64 % args.core_metric_every == 0) {
                let max_per_task = args.core_metric_max_per_task as i64;
                let results = evaluate_core(&run.model, &tokenizer, bundle, max_per_task, print0)?;
                print0(format!(
                    "Step {step:05} | CORE metric: {:.4}",
                    results.core_metric
                ));
            }
        }
        if args.sample_every > 0
            && (last_step || (step > 0 && step as i64 % args.sample_every == 0))
        {
            for prompt in SAMPLE_PROMPTS {
                let ids = greedy_sample(&run.model, &tokenizer, prompt, 16)?;
                print0(tokenizer.decode(&ids)?);
            }
        }
        meta = Meta {
            step,
            val_bpb,
            model_config: run.model.config.clone(),
            user_config: serde_json::to_value(args).map_err(|e| e.to_string())?,
            device_batch_size: args.device_batch_size,
            max_seq_len: args.max_seq_len,
            total_batch_size: plan.total_batch_size,
            dataloader_state_dict: run.next.2,
            loop_state: loop_state.clone(),
            batches_drawn: Some(run.batches_drawn),
            corpus_sha256: Some(corpus_sha256.clone()),
            losses: losses.clone(),
            evals: evals.clone(),
        };
        let periodic = step > 0
            && step as i64 != args.resume_from_step
            && args.save_every > 0
            && step as i64 % args.save_every == 0;
        if last_step || periodic {
            checkpoint::save(&dir, &meta, &run.model, &run.optimizer, args.format)?;
        }
        if last_step {
            break;
        }

        let t0 = Instant::now();
        let lrm = run.schedule.lr_multiplier(step);
        let step_losses = run.train_step()?;
        let dt = t0.elapsed().as_secs_f64();
        let train_loss = *step_losses.last().expect("one forward pass or more");
        losses.extend(step_losses.iter().map(|&l| (step, l)));
        loop_state.smooth_train_loss = 0.9 * loop_state.smooth_train_loss + 0.1 * train_loss as f64;
        let debiased = loop_state.smooth_train_loss / (1.0 - 0.9f64.powi(step as i32 + 1));
        if step > 10 {
            loop_state.total_training_time += dt;
        }
        let eta = if step > 10 {
            let per_step = loop_state.total_training_time / (step - 10) as f64;
            format!(
                " | eta: {:.1}m",
                (num_iterations - step) as f64 * per_step / 60.0
            )
        } else {
            String::new()
        };
        let state = run.next.2;
        print0(format!(
            "step {step:05}/{num_iterations:05} ({:.2}%) | loss: {debiased:.6} | lrm: {lrm:.2} | dt: {:.2}ms | \
             tok/sec: {} | bf16_mfu: 0.00 | epoch: {} pq: {} rg: {} | total time: {:.2}m{eta}",
            100.0 * step as f64 / num_iterations as f64,
            dt * 1000.0,
            commas((plan.total_batch_size as f64 / dt) as usize),
            state.epoch,
            state.pq_idx,
            state.rg_idx,
            loop_state.total_training_time / 60.0
        ));
    }
    print0(format!(
        "Total training time: {:.2}m",
        loop_state.total_training_time / 60.0
    ));
    if val_bpb.is_some() {
        print0(format!(
            "Minimum validation bpb: {:.6}",
            loop_state.min_val_bpb
        ));
    }
    Ok(Finished { meta, dir })
}
// ANCHOR_END: base_train

/// base_train.py's runs.
pub const BASE_TRAIN: Stage = Stage {
    tool: "nanochat-base",
    stage: "base-train",
    source: "karpathy/nanochat@92d63d4 scripts/base_train.py",
};
