//! makemore.py's `__main__`, printing its lines in its format, plus what
//! every run of this workspace leaves: `loss.csv`, the loss plot, and a
//! resume state.

use crate::checkpoint::{self, load_best, load_last, save_best, save_last};
use crate::data::read_words;
use crate::model::ModelType;
use crate::tensorboard::{wall_time_now, EventWriter};
use crate::train::{python_repr, TrainConfig, Trainer};
use report::LossRow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The flags of makemore.py.
#[derive(Clone, Debug)]
pub struct Options {
    /// `-i/--input-file`; `None` is names.txt from the data catalogue.
    pub input_file: Option<PathBuf>,
    /// `-o/--work-dir`.
    pub work_dir: PathBuf,
    /// `--resume`: continue from the work dir's last state.
    pub resume: bool,
    /// `--sample-only`: print 50 samples from the best model and exit.
    pub sample_only: bool,
    /// `-n/--num-workers`: accepted, changes no draw.
    pub num_workers: usize,
    /// `--max-steps`: total steps, a resumed run's included; -1 runs until stopped.
    pub max_steps: i64,
    /// The model and training flags.
    pub train: TrainConfig,
}

/// Set by SIGINT: the loop saves its state and stops after the current step.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A second Ctrl-C ends the program at once, as it would without us.
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Stops the run at the next step boundary on Ctrl-C, instead of dying mid-write.
fn catch_interrupt() {
    let handler: extern "C" fn(libc::c_int) = on_sigint;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// `print(vars(args))`, as Python prints the dict.
fn args_line(o: &Options, input: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let py_bool = |b: bool| if b { "True" } else { "False" };
    let t = &o.train;
    format!(
        "{{'input_file': {}, 'work_dir': {}, 'resume': {}, 'sample_only': {}, 'num_workers': {}, \
         'max_steps': {}, 'device': 'cpu', 'seed': {}, 'top_k': {}, 'type': {}, 'n_layer': {}, \
         'n_head': {}, 'n_embd': {}, 'n_embd2': {}, 'batch_size': {}, 'learning_rate': {}, \
         'weight_decay': {}}}",
        quote(input),
        quote(&o.work_dir.to_string_lossy()),
        py_bool(o.resume),
        py_bool(o.sample_only),
        o.num_workers,
        o.max_steps,
        t.seed,
        t.top_k.map_or(-1, |k| k as i64),
        quote(t.kind.name()),
        t.n_layer,
        t.n_head,
        t.n_embd,
        t.n_embd2,
        t.batch_size,
        python_repr(t.learning_rate),
        python_repr(t.weight_decay),
    )
}

/// Runs makemore: sample only, or train (from scratch or resumed) until
/// `--max-steps` or Ctrl-C. Returns an error message naming the file, line or
/// flag at fault.
pub fn run(o: &Options) -> Result<(), String> {
    let (input, input_name) = match &o.input_file {
        Some(p) => (p.clone(), p.to_string_lossy().into_owned()),
        None => (
            data::path("names.txt").map_err(|e| e.to_string())?,
            "names.txt".to_string(),
        ),
    };
    println!("{}", args_line(o, &input_name));
    report::check_out_dir("--work-dir", &o.work_dir)?;
    let words = read_words(&input).map_err(|e| e.to_string())?;
    let mut trainer = Trainer::new(o.train.clone(), words)
        .map_err(|e| format!("input file {}: {e}", input.display()))?;
    println!("{}", trainer.data.summary());
    let c = trainer.config;
    println!(
        "dataset determined that: vocab_size={}, block_size={}",
        c.vocab_size, c.block_size
    );
    if o.train.kind == ModelType::Transformer {
        println!(
            "number of parameters: {:.2}M",
            trainer.transformer_params() as f64 / 1e6
        );
    }
    println!("model #params: {}", trainer.params.count());
    if let Some(k) = o.train.top_k.filter(|&k| k > c.vocab_size) {
        return Err(format!(
            "--top-k {k}: the vocabulary of input file {} has only {} tokens",
            input.display(),
            c.vocab_size
        ));
    }
    let last = o.work_dir.join(checkpoint::LAST);
    if !o.resume && !o.sample_only && last.exists() {
        return Err(format!(
            "{} holds a run already; pass --resume to continue it, or give another --work-dir \
             (a new run here would replace it)",
            last.display()
        ));
    }
    if o.sample_only {
        println!("resuming from existing model in the workdir");
        load_best(&o.work_dir, &mut trainer)?;
        println!("{}", trainer.samples(50).print_block());
        return Ok(());
    }
    if o.resume {
        println!("resuming from existing model in the workdir");
        load_last(&o.work_dir, &mut trainer)?;
        println!("resumed at step {}", trainer.step);
        if o.max_steps >= 0 && trainer.step as i64 >= o.max_steps {
            println!(
                "--max-steps {} counts the steps already taken: nothing left to do",
                o.max_steps
            );
            return Ok(());
        }
    }
    train_loop(o, &mut trainer)
}

/// The loop of makemore.py's main, from `trainer.step` on.
fn train_loop(o: &Options, trainer: &mut Trainer) -> Result<(), String> {
    catch_interrupt();
    let dir = &o.work_dir;
    let csv = dir.join("loss.csv");
    let mut rows: Vec<LossRow> = if o.resume && csv.exists() {
        report::read_loss_csv(&csv)?
            .into_iter()
            .filter(|r| r.step < trainer.step)
            .collect()
    } else {
        Vec::new()
    };
    let mut tb = EventWriter::create(dir)
        .map_err(|e| format!("cannot write TensorBoard events in {}: {e}", dir.display()))?;
    let tb_path = tb.path().to_path_buf();
    trainer.start_loader();
    let mut record = Record::new(o, trainer);
    let mut saved_at = o.resume.then_some(trainer.step); // the state last.safetensors holds
    loop {
        if o.max_steps >= 0 && trainer.step as i64 >= o.max_steps {
            break;
        }
        let step = trainer.step;
        let t0 = Instant::now();
        let loss = trainer.step();
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        record.step_ms.push(ms);
        if !loss.is_finite() {
            // Nothing is saved: the update made with it has spoiled the weights.
            let kept = match saved_at {
                Some(s) => format!(
                    "the state of step {s} is in {}",
                    dir.join(checkpoint::LAST).display()
                ),
                None => "no state of this run was saved".to_string(),
            };
            return Err(format!(
                "the loss is {loss} at step {step}; stopping ({kept})"
            ));
        }
        // The steps makemore.py prints, and each evaluation's (its val set below).
        if step.is_multiple_of(10) || step.is_multiple_of(500) {
            rows.push(LossRow {
                step,
                stage: o.train.kind.name().to_string(),
                train: loss as f64,
                val: None,
                lr: Some(o.train.learning_rate),
            });
        }
        if step.is_multiple_of(10) {
            println!(
                "step {step} | loss {:.4} | step time {ms:.2}ms",
                loss as f64
            );
        }
        if step > 0 && step.is_multiple_of(500) {
            let train_loss = trainer.evaluate(false);
            let test_loss = trainer.evaluate(true);
            let now = wall_time_now();
            let tb_err = |e: std::io::Error| format!("cannot write {}: {e}", tb_path.display());
            tb.add_scalar("Loss/train", train_loss, step as i64, now)
                .map_err(tb_err)?;
            tb.add_scalar("Loss/test", test_loss, step as i64, now)
                .map_err(tb_err)?;
            tb.flush().map_err(tb_err)?;
            if !(train_loss.is_finite() && test_loss.is_finite()) {
                return Err(format!(
                    "the evaluation at step {step} gave train loss {train_loss}, test loss {test_loss}; \
                     stopping, with nothing saved from this step"
                ));
            }
            rows.last_mut().expect("pushed above").val = Some(test_loss as f64);
            record.last_eval = Some((step, train_loss, test_loss));
            println!(
                "step {step} train loss: {} test loss: {}",
                python_repr(train_loss as f64),
                python_repr(test_loss as f64)
            );
            if trainer.best_loss.is_none_or(|best| test_loss < best) {
                let out_path = dir.join(checkpoint::BEST);
                println!(
                    "test loss {} is the best so far, saving model to {}",
                    python_repr(test_loss as f64),
                    out_path.display()
                );
                save_best(dir, trainer, test_loss)?;
                trainer.best_loss = Some(test_loss);
            }
        }
        if step > 0 && step.is_multiple_of(200) {
            let block = trainer.samples(10).print_block();
            println!("{block}");
            record.samples = Some((step, block));
        }
        if step > 0 && step.is_multiple_of(500) {
            save_last(dir, trainer)?;
            report::tool_run::write_loss_files(dir, "makemore", &rows)?;
            record.write(dir, trainer, false)?;
            saved_at = Some(trainer.step);
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            println!(
                "interrupted at step {}: saving the state to resume from",
                trainer.step
            );
            break;
        }
    }
    if saved_at != Some(trainer.step) {
        save_last(dir, trainer)?;
        report::tool_run::write_loss_files(dir, "makemore", &rows)?;
    }
    record.write(dir, trainer, true)?;
    Ok(())
}

/// What the run's `report.json` says, kept up to date as the loop goes.
struct Record {
    started: Instant,
    input: String,
    first_step: usize,
    step_ms: Vec<f64>,
    last_eval: Option<(usize, f32, f32)>,
    samples: Option<(usize, String)>,
    config: serde_json::Value,
}

impl Record {
    fn new(o: &Options, trainer: &Trainer) -> Record {
        let input = o
            .input_file
            .as_ref()
            .map_or("names.txt".to_string(), |p| p.display().to_string());
        let c = &trainer.config;
        let t = &o.train;
        let config = serde_json::json!({
            "input_file": input,
            "work_dir": o.work_dir.display().to_string(),
            "type": t.kind.name(),
            "n_layer": t.n_layer, "n_head": t.n_head, "n_embd": t.n_embd, "n_embd2": t.n_embd2,
            "batch_size": t.batch_size, "learning_rate": t.learning_rate,
            "weight_decay": t.weight_decay, "top_k": t.top_k,
            "words": trainer.data.all_words, "vocab_size": c.vocab_size,
            "block_size": c.block_size, "params": trainer.params.count(),
        });
        Record {
            started: Instant::now(),
            input,
            first_step: trainer.step,
            step_ms: Vec::new(),
            last_eval: None,
            samples: None,
            config,
        }
    }

    /// `report.json` and `samples.txt` in the work dir, and the run mirrored
    /// onto the runs page.
    /// `done` marks the run finished; until then the page shows no finish time.
    fn write(&self, dir: &Path, trainer: &Trainer, done: bool) -> Result<(), String> {
        let mut final_losses = std::collections::BTreeMap::new();
        let mut targets = Vec::new();
        if let Some((step, train, test)) = self.last_eval {
            final_losses.insert("train".to_string(), train as f64);
            final_losses.insert("test".to_string(), test as f64);
            targets.push(report::Target::info(
                &format!("train loss at step {step}"),
                train as f64,
            ));
            targets.push(report::Target::info(
                &format!("test loss at step {step}"),
                test as f64,
            ));
        }
        if let Some(best) = trainer.best_loss {
            targets.push(report::Target::info(
                "best test loss (model.safetensors)",
                best as f64,
            ));
        }
        let ms = (!self.step_ms.is_empty())
            .then(|| self.step_ms.iter().sum::<f64>() / self.step_ms.len() as f64);
        report::tool_run::ToolReport {
            tool: "makemore".into(),
            crate_name: "makemore".into(),
            seed: trainer.cfg.seed,
            config: self.config.clone(),
            stage: trainer.cfg.kind.name().to_string(),
            steps: trainer.step,
            ms_per_step: ms,
            final_losses,
            source: format!(
                "makemore.py (karpathy/makemore 988aa59) on {}, steps {} to {}",
                self.input, self.first_step, trainer.step
            ),
            targets,
        }
        .write(dir, self.started.elapsed().as_secs_f64(), done)?;
        if let Some((step, block)) = &self.samples {
            let path = dir.join("samples.txt");
            report::write_atomic(&path, format!("step {step}\n{block}\n").as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        report::tool_run::mirror_to_runs_page(
            report::tool_run::runs_folder(&data::workspace_root()),
            "makemore",
            dir,
            &[
                "report.json",
                "loss.csv",
                "loss.png",
                "loss.svg",
                "samples.txt",
            ],
        );
        Ok(())
    }
}
