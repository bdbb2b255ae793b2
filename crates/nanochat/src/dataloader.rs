//! nanochat's `dataloader.py` at 92d63d4: documents from parquet row groups, tokenized with a
//! `<|bos|>` in front, packed into rows by best fit.
//!
//! Every row starts with `<|bos|>`. Each row takes the largest buffered document that still fits
//! whole; when none fits, the shortest is cropped to fill the row exactly. No padding: every
//! position is trained on, and about a third of the tokens are cropped away at T = 2048.

use serde::{Deserialize, Serialize};

use crate::tokenizer::Tokenizer;

/// Documents are tokenized this many at a time (`tokenizer_batch_size`).
pub const TOKENIZER_BATCH_SIZE: usize = 128;
/// The loader keeps at least this many documents to choose from (`buffer_size`).
pub const BUFFER_SIZE: usize = 1000;

/// Where the documents come from: files of row groups, as parquet shards are laid out.
pub trait DocumentSource {
    /// How many files.
    fn num_files(&self) -> usize;
    /// How many row groups file `file` has.
    fn num_row_groups(&mut self, file: usize) -> Result<usize, String>;
    /// The `text` column of one row group.
    fn read_row_group(&mut self, file: usize, row_group: usize) -> Result<Vec<String>, String>;
}

/// Documents held in memory: files of row groups of texts.
#[derive(Clone, Debug, Default)]
pub struct InMemory(pub Vec<Vec<Vec<String>>>);

impl DocumentSource for InMemory {
    fn num_files(&self) -> usize {
        self.0.len()
    }
    fn num_row_groups(&mut self, file: usize) -> Result<usize, String> {
        Ok(self.0[file].len())
    }
    fn read_row_group(&mut self, file: usize, row_group: usize) -> Result<Vec<String>, String> {
        Ok(self.0[file][row_group].clone())
    }
}

/// `dataloader_state_dict`: where the last documents came from, for resuming
/// (`{"pq_idx", "rg_idx", "epoch"}`; epochs count from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderState {
    /// The file.
    pub pq_idx: usize,
    /// The row group in it.
    pub rg_idx: usize,
    /// Passes over the data, from 1.
    pub epoch: usize,
}

/// `_document_batches`: documents, 128 at a time, round and round the files; a resumed loader
/// starts at the row group after the one it stopped in.
pub struct DocumentBatches<S: DocumentSource> {
    source: S,
    /// The next row group to read.
    pq_idx: usize,
    rg_idx: usize,
    epoch: usize,
    /// The row group being handed out, its position, and how far.
    current: Option<(Vec<String>, LoaderState, usize)>,
    /// Row groups read in this pass that held documents.
    found_any: bool,
}

impl<S: DocumentSource> DocumentBatches<S> {
    /// From the beginning, or after `resume`.
    pub fn new(source: S, resume: Option<LoaderState>) -> DocumentBatches<S> {
        let (pq_idx, rg_idx, epoch) = match resume {
            Some(s) => (s.pq_idx, s.rg_idx + 1, s.epoch),
            None => (0, 0, 1),
        };
        DocumentBatches {
            source,
            pq_idx,
            rg_idx,
            epoch,
            current: None,
            found_any: false,
        }
    }

    /// The next (up to) 128 documents and where they came from.
    pub fn next_batch(&mut self) -> Result<(Vec<String>, LoaderState), String> {
        loop {
            if let Some((docs, at, offset)) = &mut self.current {
                if *offset < docs.len() {
                    let end = (*offset + TOKENIZER_BATCH_SIZE).min(docs.len());
                    let batch = docs[*offset..end].to_vec();
                    *offset = end;
                    return Ok((batch, *at));
                }
                self.current = None;
                self.rg_idx += 1;
            }
            if self.pq_idx >= self.source.num_files() {
                if !self.found_any {
                    return Err("the data has no documents (every row group is empty)".into());
                }
                self.found_any = false;
                self.pq_idx = 0;
                self.rg_idx = 0;
                self.epoch += 1;
                continue;
            }
            if self.rg_idx >= self.source.num_row_groups(self.pq_idx)? {
                self.pq_idx += 1;
                self.rg_idx = 0;
                continue;
            }
            let docs = self.source.read_row_group(self.pq_idx, self.rg_idx)?;
            self.found_any |= !docs.is_empty();
            let at = LoaderState {
                pq_idx: self.pq_idx,
                rg_idx: self.rg_idx,
                epoch: self.epoch,
            };
            self.current = Some((docs, at, 0));
        }
    }
}

/// `tokenizing_distributed_data_loader_with_state_bos_bestfit` on one process.
pub struct BestFitLoader<'t, S: DocumentSource> {
    batches: DocumentBatches<S>,
    tokenizer: &'t Tokenizer,
    /// Rows per batch.
    pub batch_size: usize,
    /// Tokens per row.
    pub seq_len: usize,
    buffer: Vec<Vec<u32>>,
    state: LoaderState,
}

impl<'t, S: DocumentSource> BestFitLoader<'t, S> {
    /// Batches of `batch_size` rows of `seq_len` tokens, from the beginning or after `resume`.
    pub fn new(
        tokenizer: &'t Tokenizer,
        source: S,
        batch_size: usize,
        seq_len: usize,
        resume: Option<LoaderState>,
    ) -> BestFitLoader<'t, S> {
        BestFitLoader {
            batches: DocumentBatches::new(source, resume),
            tokenizer,
            batch_size,
            seq_len,
            buffer: Vec::new(),
            state: LoaderState {
                pq_idx: 0,
                rg_idx: 0,
                epoch: 1,
            },
        }
    }

    /// `refill_buffer`: the next documents, each `<|bos|>` and its tokens.
    fn refill(&mut self) -> Result<(), String> {
        let (docs, at) = self.batches.next_batch()?;
        self.state = at;
        let bos = self.tokenizer.bos_token_id();
        for doc in docs {
            let mut tokens = vec![bos];
            tokens.extend(self.tokenizer.encode(&doc));
            self.buffer.push(tokens);
        }
        Ok(())
    }

    // ANCHOR: best_fit
    /// The next batch: inputs and targets, each `batch_size × seq_len` row-major, and where the
    /// documents came from.
    pub fn next_batch(&mut self) -> Result<(Vec<u32>, Vec<i32>, LoaderState), String> {
        let row_capacity = self.seq_len + 1;
        let mut rows = Vec::with_capacity(self.batch_size * row_capacity);
        for _ in 0..self.batch_size {
            let mut pos = 0;
            while pos < row_capacity {
                while self.buffer.len() < BUFFER_SIZE {
                    self.refill()?;
                }
                let remaining = row_capacity - pos;
                // The largest document that fits whole (the first of equals).
                let mut best: Option<(usize, usize)> = None;
                for (i, doc) in self.buffer.iter().enumerate() {
                    if doc.len() <= remaining && doc.len() > best.map_or(0, |b| b.1) {
                        best = Some((i, doc.len()));
                    }
                }
                if let Some((i, len)) = best {
                    rows.extend(self.buffer.remove(i));
                    pos += len;
                } else {
                    // Nothing fits: crop the shortest to fill the row exactly.
                    let shortest = (0..self.buffer.len())
                        .min_by_key(|&i| self.buffer[i].len())
                        .expect("a full buffer");
                    let doc = self.buffer.remove(shortest);
                    rows.extend_from_slice(&doc[..remaining]);
                    pos += remaining;
                }
            }
        }
        let mut inputs = Vec::with_capacity(self.batch_size * self.seq_len);
        let mut targets = Vec::with_capacity(self.batch_size * self.seq_len);
        for row in rows.chunks(row_capacity) {
            inputs.extend_from_slice(&row[..self.seq_len]);
            targets.extend(row[1..].iter().map(|&t| t as i32));
        }
        Ok((inputs, targets, self.state))
    }
    // ANCHOR_END: best_fit
}
