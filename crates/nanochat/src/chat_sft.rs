//! nanochat's `scripts/chat_sft.py` at 92d63d4: supervised fine-tuning of a base checkpoint into
//! a model that chats, on one CPU process.
//!
//! In the script's order: the base model and what it was trained with (sequence length, batch,
//! learning rates) inherited unless a flag overrides it; a fresh MuonAdamW (weight decay 0) whose
//! momenta, moments and group settings are warm-started from the base checkpoint, its learning
//! rates then set to `--init-lr-frac` of the base's; conversations packed best-fit into rows that
//! start with `<|bos|>`, padded (never cropped) when nothing fits, and trained only where the
//! conversation's mask is 1; the learning rate flat, then down to `--final-lr-frac` over the last
//! half of the epoch; Muon's momentum 0.85 → 0.95 over 300 steps.
//!
//! One fix, the one of nanochat's pull requests #811 and #817: each conversation is rendered to
//! at most a row's capacity. At the pin it is rendered to 2,048 tokens, so on a CPU-sized row a
//! longer conversation never fits, never leaves the buffer, and once the buffer is all such
//! conversations every row is padding and the loss is NaN.
//!
//! The data is a [`TaskMixture`]: the user's JSON-lines conversations, the spelling tasks over a
//! word list, and arithmetic word problems that call the calculator ([`crate::tasks`]).

mod args;
pub mod run;

pub use args::SftArgs;

use crate::base_train::{forward_backward, optimizer_step};
use crate::gpt::Gpt;
use crate::optim::MuonAdamW;
use crate::tasks::Task;
use crate::tokenizer::Tokenizer;

/// Conversations held back for the best fit (`buffer_size`).
pub const BUFFER_SIZE: usize = 100;

/// `sft_data_generator_bos_bestfit`: batches of conversations packed into rows of
/// `seq_len + 1` tokens, with the loop's progress (`last_step`, `approx_progress`,
/// `current_epoch`) kept here rather than in globals.
pub struct SftBatches<'a> {
    dataset: &'a dyn Task,
    tokenizer: &'a Tokenizer,
    /// Rows per batch.
    pub batch_size: usize,
    /// Tokens per row of inputs.
    pub seq_len: usize,
    /// The training split (which ends the run), or the validation split.
    train: bool,
    /// `--num-iterations`, or −1 for one epoch.
    num_iterations: i64,
    buffer: Vec<(Vec<u32>, Vec<u8>)>,
    cursor: usize,
    consumed: usize,
    epoch: usize,
    it: i64,
    /// The last batch of the run has been handed out.
    pub last_step: bool,
    /// From 0 to 1 over the run: steps taken over `--num-iterations`, or conversations used
    /// over the dataset.
    pub approx_progress: f64,
    /// The epoch the last conversation fetched belongs to.
    pub current_epoch: usize,
}

impl<'a> SftBatches<'a> {
    /// Batches of `batch_size × seq_len` over `dataset`; `train` for the split whose end
    /// ends the run.
    pub fn new(
        dataset: &'a dyn Task,
        tokenizer: &'a Tokenizer,
        batch_size: usize,
        seq_len: usize,
        train: bool,
        num_iterations: i64,
    ) -> Result<SftBatches<'a>, String> {
        if dataset.is_empty() {
            return Err("the SFT mixture has no conversations".into());
        }
        Ok(SftBatches {
            dataset,
            tokenizer,
            batch_size,
            seq_len,
            train,
            num_iterations,
            buffer: Vec::with_capacity(BUFFER_SIZE),
            cursor: 0,
            consumed: 0,
            epoch: 1,
            it: 0,
            last_step: false,
            approx_progress: 0.0,
            current_epoch: 1,
        })
    }

    /// `refill_buffer`: conversations rendered, with the fix, to a row's capacity at most.
    fn refill(&mut self) -> Result<(), String> {
        let row_capacity = self.seq_len + 1;
        while self.buffer.len() < BUFFER_SIZE {
            let conversation = self.dataset.example(self.cursor);
            let rendered = self
                .tokenizer
                .render_conversation(&conversation, row_capacity)
                .map_err(|e| format!("conversation {} of the mixture: {e}", self.cursor))?;
            self.buffer.push(rendered);
            self.cursor += 1;
            if self.cursor >= self.dataset.len() {
                self.cursor %= self.dataset.len();
                self.epoch += 1;
            }
        }
        Ok(())
    }

    // ANCHOR: sft_packing
    /// The next batch: inputs, and targets that are −1 wherever the mask is 0 or the row is
    /// padding. Each row is filled with the longest conversation that still fits, again and
    /// again; when none fits, the rest of the row is `<|bos|>` padding.
    pub fn next_batch(&mut self) -> Result<(Vec<u32>, Vec<i32>), String> {
        let row_capacity = self.seq_len + 1;
        let bos = self.tokenizer.bos_token_id();
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        for _ in 0..self.batch_size {
            let (mut row, mut mask) = (Vec::with_capacity(row_capacity), Vec::new());
            let mut content_len = row_capacity;
            while row.len() < row_capacity {
                self.refill()?;
                let remaining = row_capacity - row.len();
                let mut best: Option<(usize, usize)> = None; // (index, length): the first longest
                for (i, (conversation, _)) in self.buffer.iter().enumerate() {
                    let len = conversation.len();
                    if len <= remaining && len > best.map_or(0, |b| b.1) {
                        best = Some((i, len));
                    }
                }
                if let Some((i, _)) = best {
                    let (ids, conversation_mask) = self.buffer.remove(i);
                    row.extend(ids);
                    mask.extend(conversation_mask);
                    self.consumed += 1;
                } else {
                    content_len = row.len();
                    row.resize(row_capacity, bos);
                    mask.resize(row_capacity, 0);
                }
            }
            inputs.extend_from_slice(&row[..self.seq_len]);
            for j in 1..row_capacity {
                let trained = mask[j] == 1 && j < content_len; // padding is never trained
                targets.push(if trained { row[j] as i32 } else { -1 });
            }
        }
        self.it += 1;
        if self.train {
            if 0 < self.num_iterations && self.num_iterations <= self.it {
                self.last_step = true;
            }
            self.current_epoch = self.epoch;
            self.approx_progress = if self.num_iterations > 0 {
                self.it as f64 / self.num_iterations as f64
            } else {
                self.consumed as f64 / self.dataset.len() as f64
            };
            if self.consumed >= self.dataset.len() {
                self.last_step = true;
            }
        }
        Ok((inputs, targets))
    }
    // ANCHOR_END: sft_packing
}

/// chat_sft.py's schedules, over the progress through the data rather than steps.
#[derive(Clone, Copy, Debug)]
pub struct SftSchedule {
    /// The fraction of the run spent warming up (0 by default).
    pub warmup_ratio: f64,
    /// The fraction spent in the linear warmdown.
    pub warmdown_ratio: f64,
    /// The learning rate at the end, as a fraction.
    pub final_lr_frac: f64,
}

impl SftSchedule {
    // ANCHOR: sft_schedules
    /// `get_lr_multiplier(progress)`: warmup, flat, then linear to `final_lr_frac`.
    pub fn lr_multiplier(&self, progress: f64) -> f64 {
        if progress < self.warmup_ratio {
            (progress + 1e-8) / self.warmup_ratio
        } else if progress <= 1.0 - self.warmdown_ratio {
            1.0
        } else {
            let decay = (progress - (1.0 - self.warmdown_ratio)) / self.warmdown_ratio;
            (1.0 - decay) * 1.0 + decay * self.final_lr_frac
        }
    }

    /// `get_muon_momentum(it)`: 0.85 → 0.95 over the first 300 steps.
    pub fn muon_momentum(it: usize) -> f64 {
        let frac = (it as f64 / 300.0).min(1.0);
        (1.0 - frac) * 0.85 + frac * 0.95
    }
    // ANCHOR_END: sft_schedules
}

/// A fine-tuning run: the model, its optimizer, the batches and the next one.
pub struct Sft<'a> {
    /// The model being fine-tuned.
    pub model: Gpt,
    /// MuonAdamW over it.
    pub optimizer: MuonAdamW,
    /// The schedules.
    pub schedule: SftSchedule,
    /// Forward passes per step.
    pub grad_accum_steps: usize,
    /// The training batches.
    pub batches: SftBatches<'a>,
    /// The batch the next forward pass takes.
    pub next: (Vec<u32>, Vec<i32>),
    /// The progress the learning rate follows; it only grows.
    pub progress: f64,
    /// Steps taken.
    pub step: usize,
}

impl<'a> Sft<'a> {
    /// The run, with its first batch fetched.
    pub fn new(
        model: Gpt,
        optimizer: MuonAdamW,
        schedule: SftSchedule,
        grad_accum_steps: usize,
        mut batches: SftBatches<'a>,
    ) -> Result<Sft<'a>, String> {
        let next = batches.next_batch()?;
        Ok(Sft {
            model,
            optimizer,
            schedule,
            grad_accum_steps,
            batches,
            next,
            progress: 0.0,
            step: 0,
        })
    }

    // ANCHOR: sft_step
    /// One optimizer step over `grad_accum_steps` batches, each loss divided by their number,
    /// the learning rate from the progress so far and Muon's momentum from the step. Returns
    /// each forward pass's loss and the learning-rate multiplier.
    pub fn train_step(&mut self) -> Result<(Vec<f32>, f64), String> {
        let mut losses = Vec::with_capacity(self.grad_accum_steps);
        for _ in 0..self.grad_accum_steps {
            let (x, y) = &self.next;
            let (b, scale) = (self.batches.batch_size, self.grad_accum_steps);
            losses.push(forward_backward(
                &mut self.model,
                x,
                y,
                b,
                scale,
                self.step,
            )?);
            self.next = self.batches.next_batch()?;
            self.progress = self.progress.max(self.batches.approx_progress);
        }
        let lrm = self.schedule.lr_multiplier(self.progress);
        let momentum = SftSchedule::muon_momentum(self.step);
        self.optimizer.schedule_lr_and_momentum(lrm, momentum);
        optimizer_step(&mut self.model, &mut self.optimizer, self.step)?;
        self.step += 1;
        Ok((losses, lrm))
    }
    // ANCHOR_END: sft_step
}
