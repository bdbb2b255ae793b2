//! `char-rnn train`'s record, beside its checkpoints in `-checkpoint_dir`:
//! `report.json`, `loss.csv` and the loss plot, and `samples.txt` (200 bytes
//! at temperature 0.8 from the model just evaluated), written after every
//! validation and at the end, and mirrored onto the runs page.

use char_rnn::sample::{self, SampleOptions};
use char_rnn::train::Trainer;
use report::tool_run::{self, ToolReport};
use std::path::PathBuf;
use std::time::Instant;
use tensor::rng::TorchGenerator;

/// The files of a run that the runs page shows.
const RECORD: [&str; 5] = [
    "report.json",
    "loss.csv",
    "loss.png",
    "loss.svg",
    "samples.txt",
];

/// When the run started, to stamp its wall time.
pub struct Record {
    started: Instant,
}

impl Record {
    pub fn start() -> Record {
        Record {
            started: Instant::now(),
        }
    }

    /// Everything into the checkpoint dir, then the runs page. `done` stamps
    /// the finish time.
    pub fn write(&self, trainer: &Trainer, done: bool) -> Result<(), String> {
        let opt = &trainer.opt;
        let dir = &opt.checkpoint_dir;
        let rows: Vec<report::LossRow> = trainer
            .train_losses
            .iter()
            .enumerate()
            .map(|(i, &train)| report::LossRow {
                step: i,
                stage: "train".into(),
                train,
                // train.lua's `i` is 1-based: the row of step i-1 ends iteration i.
                val: trainer.val_losses.get(&(i + 1)).copied(),
                lr: None,
            })
            .collect();
        tool_run::write_loss_files(dir, "char-rnn train", &rows)?;
        let mut final_losses = std::collections::BTreeMap::new();
        let mut targets = Vec::new();
        if let Some(&last) = trainer.train_losses.last() {
            final_losses.insert("train".to_string(), last);
        }
        if let Some((&i, &val)) = trainer.val_losses.iter().next_back() {
            final_losses.insert("val".to_string(), val);
            let epoch = i as f64 / trainer.loader.split_sizes[0] as f64;
            targets.push(report::Target::info(
                &format!("val loss at iteration {i} (epoch {epoch:.2})"),
                val,
            ));
            self.write_samples(trainer, i)?;
        }
        let ran = trainer.train_losses.len();
        ToolReport {
            tool: "char-rnn".into(),
            crate_name: "char-rnn".into(),
            seed: opt.seed,
            config: serde_json::to_value(opt).map_err(|e| e.to_string())?,
            stage: opt.model.clone(),
            steps: trainer.iteration,
            ms_per_step: (ran > 0).then(|| trainer.train_seconds * 1000.0 / ran as f64),
            final_losses,
            source: format!(
                "char-rnn's train.lua (karpathy/char-rnn 6f9487a) on {}, iterations 1 to {}",
                opt.data_dir.join("input.txt").display(),
                trainer.iteration
            ),
            targets,
        }
        .write(dir, self.started.elapsed().as_secs_f64(), done)?;
        tool_run::mirror_to_runs_page(
            tool_run::runs_folder(&data::workspace_root()),
            "char-rnn",
            dir,
            &RECORD,
        );
        Ok(())
    }

    /// sample.lua's 200 bytes at temperature 0.8 from the model as it stands,
    /// drawn from a generator of their own so that training's draws (the
    /// dropout masks) stay those of a run without a record.
    fn write_samples(&self, trainer: &Trainer, iteration: usize) -> Result<(), String> {
        let opt = SampleOptions {
            model: PathBuf::new(),
            seed: trainer.opt.seed,
            sample: 1,
            primetext: String::new(),
            length: 200,
            temperature: 0.8,
            gpuid: -1,
            opencl: 0,
            verbose: 0,
        };
        let mut rng = TorchGenerator::manual_seed(opt.seed);
        let mut bytes = Vec::new();
        sample::generate(
            &trainer.model,
            &trainer.params,
            &trainer.loader.vocab,
            &opt,
            &mut rng,
            &mut bytes,
            &mut |_| Ok(()),
        )?;
        let text = format!(
            "iteration {iteration}, temperature 0.8, seed {}:\n{}",
            opt.seed,
            String::from_utf8_lossy(&bytes)
        );
        let path = trainer.opt.checkpoint_dir.join("samples.txt");
        report::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}
