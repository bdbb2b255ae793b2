//! chat_sft.py's script around the step: its flags, what it inherits from the base checkpoint,
//! the data mixture, the loop with its evaluations and printed lines, and the checkpoint under
//! `chatsft_checkpoints/`.

use super::{Sft, SftArgs, SftBatches, SftSchedule};
use crate::base_eval::default_model_tag;
use crate::checkpoint::{self, LoopState, Meta};
use crate::dataloader::LoaderState;
use crate::loss_eval::evaluate_bpb;
use crate::run_files::{Finished, Stage};
use crate::tasks::{
    read_words, Arithmetic, Conversations, SimpleSpelling, SpellingBee, Split, Task, TaskMixture,
};
use crate::tokenizer::Tokenizer;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// chat_sft.py's runs.
pub const CHAT_SFT: Stage = Stage {
    tool: "nanochat-sft",
    stage: "chat-sft",
    source: "karpathy/nanochat@92d63d4 scripts/chat_sft.py",
};

/// Tasks of a mixture, in order.
pub type Tasks = Vec<Box<dyn Task>>;

/// nanochat's own mixture from the Hub: SmolTalk, MMLU's auxiliary_train `--mmlu-epochs`
/// times and GSM8K's train `--gsm8k-epochs` times; for validation SmolTalk's test, MMLU's
/// test to 5,200 and GSM8K's test to 420, each shuffled by seed 42.
pub fn hub_tasks(
    args: &SftArgs,
    base: &Path,
    say: &mut dyn FnMut(String),
) -> Result<(Tasks, Tasks), String> {
    use crate::hub::{default_endpoint, load_hub_dataset_from};
    use crate::tasks::{gsm8k_row_conversation, mmlu_conversation, smoltalk_conversation, HubTask};
    use std::sync::Arc;
    let endpoint = args.hub_endpoint.clone().unwrap_or_else(default_endpoint);
    let mut load = |repo: &str, subset: &str, split: &str, stop, convert, name: &str| {
        let rows = load_hub_dataset_from(&endpoint, base, repo, subset, split, say)?.shuffle(42);
        HubTask::new(Arc::new(rows), stop, convert, name)
    };
    let smoltalk = load(
        "HuggingFaceTB/smol-smoltalk",
        "default",
        "train",
        None,
        smoltalk_conversation,
        "SmolTalk",
    )?;
    let mmlu = load(
        "cais/mmlu",
        "all",
        "auxiliary_train",
        None,
        mmlu_conversation,
        "MMLU",
    )?;
    let gsm8k = load(
        "openai/gsm8k",
        "main",
        "train",
        None,
        gsm8k_row_conversation,
        "GSM8K",
    )?;
    let mut train: Vec<Box<dyn Task>> = vec![Box::new(smoltalk)];
    train.extend((0..args.mmlu_epochs).map(|_| Box::new(mmlu.clone()) as Box<dyn Task>));
    train.extend((0..args.gsm8k_epochs).map(|_| Box::new(gsm8k.clone()) as Box<dyn Task>));
    let val: Vec<Box<dyn Task>> = vec![
        Box::new(load(
            "HuggingFaceTB/smol-smoltalk",
            "default",
            "test",
            None,
            smoltalk_conversation,
            "SmolTalk",
        )?),
        Box::new(load(
            "cais/mmlu",
            "all",
            "test",
            Some(5200),
            mmlu_conversation,
            "MMLU",
        )?),
        Box::new(load(
            "openai/gsm8k",
            "main",
            "test",
            Some(420),
            gsm8k_row_conversation,
            "GSM8K",
        )?),
    ];
    Ok((train, val))
}

/// The train and validation mixtures: with `--hub`, nanochat's own tasks first (where they can
/// be had; where not, that is said and the run goes on), then the conversation files,
/// SimpleSpelling, SpellingBee and the arithmetic problems; validation takes a fifth of each
/// generated task from its test seeds.
pub fn mixtures(
    args: &SftArgs,
    base: &Path,
    say: &mut dyn FnMut(String),
) -> Result<(TaskMixture, TaskMixture), String> {
    let mut train: Vec<Box<dyn Task>> = Vec::new();
    let mut val: Vec<Box<dyn Task>> = Vec::new();
    if args.hub {
        match hub_tasks(args, base, say) {
            Ok((hub_train, hub_val)) => {
                train.extend(hub_train);
                val.extend(hub_val);
            }
            Err(e) => say(format!(
                "SmolTalk, MMLU and GSM8K are not available ({e}): training on the local tasks"
            )),
        }
    }
    for path in &args.conversations {
        train.push(Box::new(Conversations::read(path)?));
    }
    if args.simple_spelling > 0 || args.spelling_bee > 0 {
        let path = match &args.words {
            Some(p) => p.clone(),
            None => data::path("names.txt").map_err(|e| e.to_string())?,
        };
        let words = read_words(&path)?;
        for (size, simple) in [(args.simple_spelling, true), (args.spelling_bee, false)] {
            if size == 0 {
                continue;
            }
            let task = |size, split| -> Box<dyn Task> {
                if simple {
                    Box::new(SimpleSpelling::new(words.clone(), size, split))
                } else {
                    Box::new(SpellingBee::new(words.clone(), size, split))
                }
            };
            train.push(task(size, Split::Train));
            val.push(task((size / 5).max(1), Split::Test));
        }
    }
    if args.arithmetic > 0 {
        train.push(Box::new(Arithmetic::new(args.arithmetic, Split::Train)));
        val.push(Box::new(Arithmetic::new(
            (args.arithmetic / 5).max(1),
            Split::Test,
        )));
    }
    if train.is_empty() {
        return Err("no SFT data: give --conversations, or a nonzero --simple-spelling, --spelling-bee or --arithmetic".into());
    }
    if val.is_empty() {
        val.push(Box::new(Conversations::read(&args.conversations[0])?));
    }
    Ok((TaskMixture::new(train), TaskMixture::new(val)))
}

/// The value a flag resolves to: given, or the base's, or chat_sft.py's fallback; said as
/// chat_sft.py says it.
fn inherit<T: PartialEq + std::fmt::Display + Copy>(
    name: &str,
    given: Option<T>,
    pretrain: Option<T>,
    fallback: T,
    print0: &mut dyn FnMut(String),
) -> T {
    match (given, pretrain) {
        (None, _) => {
            let resolved = pretrain.unwrap_or(fallback);
            print0(format!(
                "Inherited {name}={resolved} from pretrained checkpoint"
            ));
            resolved
        }
        (Some(v), Some(p)) if v != p => {
            print0(format!(
                "NOTE: --{}={v} overrides pretrained value of {p}",
                name.replace('_', "-")
            ));
            v
        }
        (Some(v), _) => {
            print0(format!("Using {name}={v}"));
            v
        }
    }
}

/// The base checkpoint's folder and step: `--model-tag` or the largest model, `--model-step`
/// or the last.
fn base_checkpoint(args: &SftArgs, base: &Path) -> Result<(PathBuf, usize), String> {
    let checkpoints = base.join("base_checkpoints");
    let tag = match &args.model_tag {
        Some(t) => t.clone(),
        None => default_model_tag(&checkpoints)?,
    };
    let dir = checkpoints.join(tag);
    let step = match args.model_step {
        Some(s) => s,
        None => checkpoint::last_step(&dir)?,
    };
    Ok((dir, step))
}

// ANCHOR: chat_sft
/// Runs `scripts/chat_sft.py` with `args` from the base checkpoint under `base`, writing the
/// fine-tuned model under `<base>/chatsft_checkpoints/<model tag>`; `print0` gets each line.
pub fn chat_sft(
    args: &SftArgs,
    base: &Path,
    print0: &mut dyn FnMut(String),
) -> Result<Finished, String> {
    if !matches!(args.device_type.as_str(), "" | "cpu") {
        return Err(format!(
            "--device-type {}: this build trains on the CPU only",
            args.device_type
        ));
    }
    let tokenizer = Tokenizer::from_directory(&base.join("tokenizer"))?;
    let (base_dir, base_step) = base_checkpoint(args, base)?;
    let (model, meta) = checkpoint::load_model(&base_dir, base_step)?;
    if model.config.vocab_size != tokenizer.vocab_size() {
        return Err(format!(
            "{}: the model's vocabulary has {} tokens, the tokenizer in {} has {}",
            base_dir.display(),
            model.config.vocab_size,
            base.join("tokenizer").display(),
            tokenizer.vocab_size()
        ));
    }
    let user_config = |key: &str| meta.user_config.get(key).and_then(|v| v.as_f64());
    let max_seq_len = inherit(
        "max_seq_len",
        args.max_seq_len,
        Some(meta.max_seq_len),
        2048,
        print0,
    );
    let device_batch_size = inherit(
        "device_batch_size",
        args.device_batch_size,
        Some(meta.device_batch_size),
        32,
        print0,
    );
    let total_batch_size = inherit(
        "total_batch_size",
        args.total_batch_size,
        Some(meta.total_batch_size),
        524288,
        print0,
    );
    let embedding_lr = inherit(
        "embedding_lr",
        args.embedding_lr,
        user_config("embedding_lr"),
        0.3,
        print0,
    );
    let unembedding_lr = inherit(
        "unembedding_lr",
        args.unembedding_lr,
        user_config("unembedding_lr"),
        0.004,
        print0,
    );
    let matrix_lr = inherit(
        "matrix_lr",
        args.matrix_lr,
        user_config("matrix_lr"),
        0.02,
        print0,
    );
    let tokens_per_fwdbwd = device_batch_size * max_seq_len;
    if tokens_per_fwdbwd == 0 || total_batch_size % tokens_per_fwdbwd != 0 {
        return Err(format!(
            "total_batch_size ({total_batch_size}) must be a multiple of {tokens_per_fwdbwd}."
        ));
    }
    let grad_accum_steps = total_batch_size / tokens_per_fwdbwd;
    let commas = report::thousands;
    print0(format!(
        "Tokens / micro-batch / rank: {device_batch_size} x {max_seq_len} = {}",
        commas(tokens_per_fwdbwd)
    ));
    print0(format!(
        "Tokens / micro-batch: {}",
        commas(tokens_per_fwdbwd)
    ));
    print0(format!(
        "Total batch size {} => gradient accumulation steps: {grad_accum_steps}",
        commas(total_batch_size)
    ));
    let token_bytes = tokenizer.token_bytes();

    print0(format!(
        "Scaling the LR for the AdamW parameters ∝1/√({}/768) = {:.6}",
        model.config.n_embd,
        (model.config.n_embd as f64 / 768.0).powf(-0.5)
    ));
    let mut optimizer = model.setup_optimizer(unembedding_lr, embedding_lr, matrix_lr, 0.0, 0.5);
    if args.load_optimizer != 0 {
        // load_state_dict brings back the base's settings; the fresh learning rates are kept.
        checkpoint::load_optimizer(&base_dir, base_step, &model, &mut optimizer)?;
        print0(
            "Loaded optimizer state from pretrained checkpoint (momentum buffers only, LRs reset)"
                .into(),
        );
    }
    for group in &mut optimizer.groups {
        group.lr *= args.init_lr_frac;
        group.initial_lr = group.lr;
    }

    let (train, val) = mixtures(args, base, print0)?;
    print0(format!(
        "Training mixture: {} rows ({}conversations x{}, spelling {} + {}, arithmetic {})",
        commas(train.len()),
        if args.hub {
            format!("MMLU x{}, GSM8K x{}, ", args.mmlu_epochs, args.gsm8k_epochs)
        } else {
            String::new()
        },
        args.conversations.len(),
        args.simple_spelling,
        args.spelling_bee,
        args.arithmetic
    ));
    if args.chatcore_every > 0 {
        print0("ChatCORE skipped: this build does not run ARC, MMLU, GSM8K and HumanEval's evaluations".into());
    }
    let schedule = SftSchedule {
        warmup_ratio: args.warmup_ratio,
        warmdown_ratio: args.warmdown_ratio,
        final_lr_frac: args.final_lr_frac,
    };
    let batches = SftBatches::new(
        &train,
        &tokenizer,
        device_batch_size,
        max_seq_len,
        true,
        args.num_iterations,
    )?;
    let mut run = Sft::new(model, optimizer, schedule, grad_accum_steps, batches)?;

    let model_tag = args
        .model_tag
        .clone()
        .unwrap_or(format!("d{}", run.model.config.n_layer));
    let dir = base.join("chatsft_checkpoints").join(&model_tag);
    let mut loop_state = LoopState {
        min_val_bpb: f64::INFINITY,
        ..LoopState::default()
    };
    let (mut losses, mut evals, mut val_bpb) = (Vec::new(), Vec::new(), None);
    loop {
        let step = run.step;
        let last_step = run.batches.last_step;
        if last_step || (args.eval_every > 0 && step as i64 % args.eval_every == 0) {
            let mut val_batches =
                SftBatches::new(&val, &tokenizer, device_batch_size, max_seq_len, false, -1)?;
            let eval_steps = args.eval_tokens / tokens_per_fwdbwd;
            let mut next = || val_batches.next_batch();
            let bpb = evaluate_bpb(
                &run.model,
                &mut next,
                device_batch_size,
                eval_steps,
                &token_bytes,
            )?;
            print0(format!("Step {step:05} | Validation bpb: {bpb:.4}"));
            loop_state.min_val_bpb = loop_state.min_val_bpb.min(bpb);
            val_bpb = Some(bpb);
            evals.push((step, bpb));
        }
        if last_step {
            let meta = Meta {
                step,
                val_bpb,
                model_config: run.model.config.clone(),
                user_config: serde_json::to_value(args).map_err(|e| e.to_string())?,
                device_batch_size,
                max_seq_len,
                total_batch_size,
                dataloader_state_dict: LoaderState {
                    pq_idx: 0,
                    rg_idx: 0,
                    epoch: run.batches.current_epoch,
                },
                loop_state: loop_state.clone(),
                batches_drawn: None,
                corpus_sha256: None,
                losses,
                evals,
            };
            checkpoint::save(&dir, &meta, &run.model, &run.optimizer, args.format)?;
            print0(format!("Peak memory usage: {:.2}MiB", 0.0));
            print0(format!(
                "Total training time: {:.2}m",
                loop_state.total_training_time / 60.0
            ));
            print0(format!(
                "Minimum validation bpb: {:.4}",
                loop_state.min_val_bpb
            ));
            return Ok(Finished { meta, dir });
        }

        let t0 = Instant::now();
        let (step_losses, lrm) = run.train_step()?;
        let dt = t0.elapsed().as_secs_f64();
        let train_loss = *step_losses.last().expect("one forward pass or more");
        losses.extend(step_losses.iter().map(|&l| (step, l)));
        let step = run.step;
        loop_state.smooth_train_loss = 0.9 * loop_state.smooth_train_loss + 0.1 * train_loss as f64;
        let debiased = loop_state.smooth_train_loss / (1.0 - 0.9f64.powi(step as i32 + 1));
        if step > 10 {
            loop_state.total_training_time += dt;
        }
        print0(format!(
            "step {step:05} ({:.2}%) | loss: {debiased:.6} | lrm: {lrm:.2} | dt: {:.2}ms | tok/sec: {} | mfu: 0.00 | epoch: {} | total time: {:.2}m",
            100.0 * run.progress,
            dt * 1000.0,
            commas((total_batch_size as f64 / dt) as usize),
            run.batches.current_epoch,
            loop_state.total_training_time / 60.0
        ));
    }
}
// ANCHOR_END: chat_sft
