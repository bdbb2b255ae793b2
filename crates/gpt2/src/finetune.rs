//! `gpt2 finetune`: nanoGPT's `train.py` with `init_from` a GPT-2 in Hugging
//! Face's layout (karpathy/nanoGPT 3adf61e, `config/finetune_shakespeare.py`):
//! OpenAI's `gpt2` at any size, or any GPT-2 saved by `transformers`, trained
//! further on nanoGPT's headerless `train.bin` and `val.bin` (`gpt2 prepare
//! --format nanogpt`), and saved in Hugging Face's layout whenever the val
//! loss improves, so that `gpt2 sample` and `transformers` load it.
//!
//! As in nanoGPT: `torch.manual_seed(1337)` comes first, then `GPT(config)`
//! (its initial draws are spent, though the weights are replaced), then the
//! weights; the block size is cropped; AdamW decays the matrices only; the
//! gradients are clipped to norm 1; the loop takes `max_iters + 1` steps.
//! GPT-2 keeps its own tanh GELU.
//!
//! `config/finetune_shakespeare.py` trains `gpt2-xl` on 32 sequences of 1,024
//! tokens per iteration, evaluating 40 batches every 5 iterations: on two CPU
//! cores one such iteration of the 124M model would take minutes. The
//! defaults here keep its learning rate (3e-5, constant), batch size 1,
//! 20 iterations and evaluation every 5, and shrink the work per iteration
//! (block 256, 4 micro-steps, 8 evaluation batches) so that the 124M model's
//! 21 iterations and 5 evaluations take under 10 minutes on 2 cores.

use crate::hf;
use crate::model::Gpt;
use crate::shards::{Layout, ShardFormat, TokenShard};
use autograd::{AdamW, AdamWConfig, ForwardPass, Graph, Init, Params};
use clap::Args;
use gpt::nanogpt::configurator::TrainPyArgs;
use gpt::nanogpt::train::{self, Batch, History, LoopFlags, TrainPy};
use serde::Serialize;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tensor::rng::TorchGenerator;

/// `gpt2 finetune`'s flags: nanoGPT's train.py keys ([`TrainPyArgs`]) with
/// `config/finetune_shakespeare.py`'s values as defaults, scaled to a CPU
/// (it takes `gradient_accumulation_steps` 32, `block_size` 1024 and
/// `eval_iters` 40; here 4, 256 and 8), and the model, data and output folders.
#[derive(Args, Clone, Debug, Serialize)]
#[command(
    args_override_self = true,
    mut_arg("eval_interval", |a| a.default_value("5")),
    mut_arg("eval_iters", |a| a.default_value("8")),
    mut_arg("always_save_checkpoint", |a| a.default_value("False")),
    mut_arg("gradient_accumulation_steps", |a| a.default_value("4")),
    mut_arg("batch_size", |a| a.default_value("1")),
    mut_arg("block_size", |a| a.default_value("256")),
    mut_arg("learning_rate", |a| a.default_value("3e-5")),
    mut_arg("max_iters", |a| a.default_value("20")),
    mut_arg("decay_lr", |a| a.default_value("False"))
)]
pub struct FinetuneArgs {
    /// A GPT-2 in Hugging Face's layout: config.json and model.safetensors.
    #[arg(long)]
    pub model: PathBuf,
    /// nanoGPT's train.bin and val.bin of GPT-2 tokens (`gpt2 prepare --format nanogpt`).
    #[arg(long, alias = "dataset")]
    pub data: PathBuf,
    /// Where the fine-tuned model (config.json, model.safetensors), report.json, loss.csv and plots go.
    #[arg(long, alias = "out-dir")]
    pub out: PathBuf,
    /// train.py's keys that every loop reads.
    #[command(flatten)]
    #[serde(flatten)]
    pub train_py: TrainPyArgs,
}

impl FinetuneArgs {
    /// The flags' errors, each naming its flag (the checks `gpt train` makes).
    pub fn check(&self) -> Result<(), String> {
        gpt::nanogpt::configurator::check_utf8_paths(&[
            ("--model", &self.model),
            ("--data", &self.data),
            ("--out", &self.out),
        ])?;
        self.train_py.check()
    }
}

/// The two splits of a nanoGPT data folder, memory-mapped.
pub struct Data {
    /// `train.bin`.
    pub train: TokenShard,
    /// `val.bin`.
    pub val: TokenShard,
}

impl Data {
    /// Opens `dir`'s `train.bin` and `val.bin`, checking that every token is
    /// in the model's vocabulary and that each split holds a batch.
    pub fn open(dir: &Path, vocab_size: usize, block_size: usize) -> Result<Data, String> {
        let (train, val) = match Layout::of(dir)? {
            Layout::Nanogpt { train, val } => (train, val),
            Layout::Shards { .. } => {
                return Err(format!(
                    "{}: holds token shards; the fine-tune reads nanoGPT's train.bin and val.bin \
                     (`gpt2 prepare --format nanogpt --input FILE --out DIR`)",
                    dir.display()
                ))
            }
        };
        let open = |path: &Path| -> Result<TokenShard, String> {
            let shard = TokenShard::open_as(path, ShardFormat::Nanogpt)?;
            if let Some((i, token)) = shard.first_token_from(vocab_size) {
                return Err(format!(
                    "{}: token {i} is {token}, past the model's vocabulary of {vocab_size}",
                    path.display()
                ));
            }
            if shard.len() <= block_size {
                return Err(format!(
                    "{} holds {} tokens; a batch needs --block-size + 1 = {}",
                    path.display(),
                    shard.len(),
                    block_size + 1
                ));
            }
            Ok(shard)
        };
        Ok(Data {
            train: open(&train)?,
            val: open(&val)?,
        })
    }

    /// train.py's `get_batch`: `batch` random windows of `block` tokens
    /// (`torch.randint(len(data) - block_size, (batch_size,))`) and the same
    /// windows shifted by one, each `(B, T)` row-major.
    pub fn get_batch(
        &self,
        val: bool,
        batch: usize,
        block: usize,
        rng: &mut TorchGenerator,
    ) -> (Vec<usize>, Vec<usize>) {
        let data = if val { &self.val } else { &self.train };
        let offsets = rng.randint(0, (data.len() - block) as i64, &[batch]);
        let mut x = Vec::with_capacity(batch * block); // (B, T)
        let mut y = Vec::with_capacity(batch * block); // (B, T)
        for &i in &offsets {
            let window = data.read(i as usize, block + 1);
            x.extend_from_slice(&window[..block]);
            y.extend_from_slice(&window[1..]);
        }
        (x, y)
    }
}

/// A fine-tune in progress.
pub struct Finetune {
    /// The flags.
    pub args: FinetuneArgs,
    /// The model, cropped to `--block-size`.
    pub model: Gpt,
    /// Its parameters.
    pub params: Params,
    /// AdamW, decaying the matrices only.
    pub opt: AdamW,
    /// The one generator (`torch.manual_seed`).
    pub rng: RefCell<TorchGenerator>,
    /// The data.
    pub data: Data,
    /// The next iteration.
    pub iter: usize,
    /// The lowest val loss so far (1e9 before any evaluation).
    pub best_val_loss: f32,
    /// The logged losses, the evaluations, the iterations' times.
    pub history: History,
    /// The iterations at which the model was saved.
    pub saves: Vec<usize>,
}

impl Finetune {
    /// train.py up to its loop, with `init_from` a GPT-2 folder.
    pub fn start(args: FinetuneArgs) -> Result<Finetune, String> {
        args.check()?;
        let config = hf::read_config(&args.model.join("config.json"))?;
        if args.train_py.block_size > config.block_size {
            return Err(format!(
                "--block-size {} is longer than the {} positions of {}",
                args.train_py.block_size,
                config.block_size,
                args.model.display()
            ));
        }
        let model_args = gpt::model::GptConfig {
            block_size: config.block_size,
            vocab_size: config.vocab_size,
            n_layer: config.n_layer,
            n_head: config.n_head,
            n_embd: config.n_embd,
            dropout: args.train_py.dropout,
            bias: true,
        };
        use gpt::nanogpt::configurator::training_floats;
        use report::check_memory;
        let cropped = gpt::model::GptConfig {
            block_size: args.train_py.block_size,
            ..model_args
        };
        check_memory(
            training_floats(&cropped, args.train_py.batch_size),
            "--batch-size, --block-size and the model's size",
        )?;
        let tokens = args.train_py.gradient_accumulation_steps
            * args.train_py.batch_size
            * args.train_py.block_size;
        println!(
            "tokens per iteration will be: {}",
            gpt::nanogpt::prepare::thousands(tokens)
        );
        println!("Initializing from GPT-2 weights: {}", args.model.display());
        let mut rng = TorchGenerator::manual_seed(args.train_py.seed);
        // ANCHOR: load_pretrained
        // GPT.from_pretrained builds GPT(config) first: its initial draws are
        // spent before the weights replace them, so the batches that follow
        // come from where nanoGPT's do.
        {
            let mut spent = Params::new();
            let mut init = Init::new(&mut spent, &mut rng);
            gpt::model::Gpt::new(&mut init, model_args);
        }
        let (mut model, mut params) = hf::from_pretrained(&args.model)?;
        model.set_dropout(args.train_py.dropout); // override_args = dict(dropout=dropout)
        if args.train_py.block_size < model.config.block_size {
            model.crop_block_size(&mut params, args.train_py.block_size); // model surgery
        }
        // ANCHOR_END: load_pretrained
        let n = params.count() - model.config.block_size * model.config.n_embd;
        println!("number of parameters: {:.2}M", n as f64 / 1e6);
        let data = Data::open(
            &args.data,
            model.config.vocab_size,
            args.train_py.block_size,
        )?;
        let opt = AdamW::decay_matrices_only(
            AdamWConfig {
                lr: args.train_py.learning_rate,
                betas: (args.train_py.beta1, args.train_py.beta2),
                eps: 1e-8,
                weight_decay: args.train_py.weight_decay,
            },
            &params,
        );
        Ok(Finetune {
            args,
            model,
            params,
            opt,
            rng: RefCell::new(rng),
            data,
            iter: 0,
            best_val_loss: 1e9,
            history: History::default(),
            saves: Vec::new(),
        })
    }

    fn batch(&self, val: bool) -> (Vec<usize>, Vec<usize>) {
        let (b, t) = (self.args.train_py.batch_size, self.args.train_py.block_size);
        self.data.get_batch(val, b, t, &mut self.rng.borrow_mut())
    }

    /// `estimate_loss()`: the mean loss of `eval_iters` batches of each split,
    /// without dropout or a graph.
    pub fn estimate_loss(&self) -> (f32, f32) {
        let (b, t) = (self.args.train_py.batch_size, self.args.train_py.block_size);
        let mut means = [0f32; 2];
        for (mean, val) in means.iter_mut().zip([false, true]) {
            let mut sum = 0f64;
            for _ in 0..self.args.train_py.eval_iters {
                let (x, y) = self.batch(val); // (B, T), (B, T)
                let graph = Graph::no_grad();
                let pass = ForwardPass::eval(&graph, &self.params);
                sum += self.model.loss(&pass, &x, &y, b, t).item() as f64;
            }
            *mean = (sum / self.args.train_py.eval_iters as f64) as f32;
        }
        (means[0], means[1])
    }
}

/// The fine-tune is train.py's run with GPT-2's model, saved in Hugging
/// Face's layout: [`train::train`] drives it, as it drives `gpt train`.
impl TrainPy for Finetune {
    fn loop_flags(&self) -> LoopFlags {
        let c = &self.model.config;
        let model = gpt::model::GptConfig {
            block_size: c.block_size,
            vocab_size: c.vocab_size,
            n_layer: c.n_layer,
            n_head: c.n_head,
            n_embd: c.n_embd,
            dropout: self.args.train_py.dropout,
            bias: true,
        };
        LoopFlags {
            eval_interval: self.args.train_py.eval_interval,
            log_interval: self.args.train_py.log_interval,
            max_iters: self.args.train_py.max_iters,
            eval_only: false,
            always_save_checkpoint: self.args.train_py.always_save_checkpoint,
            schedule: self.args.train_py.schedule(),
            model,
            n_params: self.params.count() - c.block_size * c.n_embd,
            fwdbwd_per_iter: self.args.train_py.batch_size
                * self.args.train_py.gradient_accumulation_steps,
        }
    }

    fn iter(&self) -> usize {
        self.iter
    }

    fn train_batch(&self) -> Batch {
        self.batch(false)
    }

    fn estimate_loss(&self) -> (f32, f32) {
        Finetune::estimate_loss(self)
    }

    // ANCHOR: finetune_step
    /// One iteration of train.py ([`train::micro_steps`]) on GPT-2's loss.
    fn step(&mut self, batch: &mut Batch, lr: f32) -> f32 {
        let (b, t) = (self.args.train_py.batch_size, self.args.train_py.block_size);
        let flags = self.args.train_py.step_flags(lr);
        let (model, data, rng) = (&self.model, &self.data, &self.rng);
        let loss = train::micro_steps(
            &mut self.params,
            &mut self.opt,
            rng,
            flags,
            batch,
            |pass, (x, y)| model.loss(pass, x, y, b, t),
            || data.get_batch(false, b, t, &mut rng.borrow_mut()),
        );
        self.iter += 1;
        loss
    }
    // ANCHOR_END: finetune_step

    fn history(&mut self) -> &mut History {
        &mut self.history
    }

    fn best_val_loss(&mut self) -> &mut f32 {
        &mut self.best_val_loss
    }

    fn save(&mut self, iter: usize) -> Result<(), String> {
        println!("saving the model to {}", self.args.out.display());
        hf::save_pretrained(&self.args.out, &self.model, &self.params)?;
        self.saves.push(iter);
        Ok(())
    }
}

/// The files of a fine-tune that the runs page shows.
const RECORD: [&str; 4] = ["report.json", "loss.csv", "loss.png", "loss.svg"];

/// `gpt2 finetune`: checks `--out`, fine-tunes, and keeps the record
/// (`report.json`, `loss.csv`, the plots) in `--out` after every evaluation
/// and at the end, mirrored onto the runs page.
pub fn run(args: FinetuneArgs) -> Result<(), String> {
    args.check()?;
    let _precision = tensor::bf16::precision_scope(args.train_py.precision()?);
    report::check_out_dir("--out", &args.out)?;
    if args.out.join("model.safetensors").exists() {
        return Err(format!(
            "--out {} already holds a model (model.safetensors); give another --out",
            args.out.display()
        ));
    }
    let started = Instant::now();
    let mut ft = Finetune::start(args)?;
    let result = train::train(&mut ft, |ft| write_record(ft, started, false));
    let finished = write_record(&ft, started, true);
    result.and(finished)
}

fn write_record(ft: &Finetune, started: Instant, done: bool) -> Result<(), String> {
    use report::tool_run;
    let dir = &ft.args.out;
    let schedule = ft.args.train_py.schedule();
    let h = &ft.history;
    let rows = train::loss_rows(&h.losses, &h.evals, "finetune", schedule);
    tool_run::write_loss_files(dir, "GPT-2 fine-tune", &rows)?;
    // Before (iteration 0) and after: the first and the last evaluation.
    let (final_losses, mut targets) = train::eval_figures(&h.evals);
    if let Some(&iter) = ft.saves.last() {
        targets.push(report::Target::info(
            &format!("best val loss (saved at iteration {iter})"),
            ft.best_val_loss as f64,
        ));
    }
    tool_run::ToolReport {
        tool: "gpt2-finetune".into(),
        crate_name: "gpt2".into(),
        seed: ft.args.train_py.seed,
        config: serde_json::to_value(&ft.args).map_err(|e| e.to_string())?,
        stage: "finetune".into(),
        steps: ft.iter,
        ms_per_step: (!h.step_ms.is_empty())
            .then(|| h.step_ms.iter().sum::<f64>() / h.step_ms.len() as f64),
        final_losses,
        source: format!(
            "nanoGPT's train.py with init_from {} (karpathy/nanoGPT 3adf61e, \
             config/finetune_shakespeare.py scaled to a CPU) on {}",
            ft.args.model.display(),
            ft.args.data.display()
        ),
        targets,
    }
    .write(dir, started.elapsed().as_secs_f64(), done)?;
    tool_run::mirror_to_runs_page(
        tool_run::runs_folder(&data::workspace_root()),
        "gpt2-finetune",
        dir,
        &RECORD,
    );
    Ok(())
}
