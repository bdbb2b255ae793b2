//! `gpt2 sample` and `gpt2 logits`: the library's sampling ([`gpt2::sample`],
//! through the KV cache, [`gpt2::kv_cache`]) and its logits, on a model folder.

use tensor::rng::TorchGenerator;

/// `gpt2 sample`: continue a prompt, as build-nanogpt's demo does (top-k sampling).
#[derive(clap::Args)]
pub struct SampleArgs {
    /// Folder with config.json and model.safetensors.
    #[arg(long)]
    model: std::path::PathBuf,
    /// The text to continue.
    #[arg(long, default_value = "Hello, I'm a language model,")]
    prompt: String,
    /// How many continuations.
    #[arg(long, default_value_t = 5)]
    num_return_sequences: usize,
    /// Tokens per continuation, the prompt's included.
    #[arg(long, default_value_t = 30)]
    max_length: usize,
    /// Sample among this many most likely tokens.
    #[arg(long, default_value_t = 50)]
    top_k: usize,
    /// `torch.manual_seed` of the sampling generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

impl SampleArgs {
    /// Prints each continuation as `> text`.
    pub fn run(self) -> Result<(), String> {
        let tok = bpe::Gpt2Tokenizer::from_data_dir()
            .map_err(|e| e.to_string())?
            .into_inner();
        let ids = tok
            .encode(&self.prompt, &bpe::AllowedSpecial::NoneRaise)
            .map_err(|e| e.to_string())?;
        let ids: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
        let (gpt, params) = gpt2::hf::from_pretrained(&self.model)?;
        let mut rng = TorchGenerator::manual_seed(self.seed);
        // The cache draws the same tokens as the plain loop, without redoing the prefix.
        let rows = gpt2::kv_cache::generate(
            &gpt,
            &params,
            &ids,
            self.num_return_sequences,
            self.max_length,
            self.top_k,
            &mut rng,
        )?;
        for row in rows {
            let row: Vec<u32> = row.iter().map(|&i| i as u32).collect();
            let text = tok.decode_bytes(&row).map_err(|e| e.to_string())?;
            println!("> {}", String::from_utf8_lossy(&text));
        }
        Ok(())
    }
}

/// `gpt2 logits`: the logits of a token sequence as JSON, one row per position.
#[derive(clap::Args)]
pub struct LogitsArgs {
    /// Folder with config.json and model.safetensors.
    #[arg(long)]
    model: std::path::PathBuf,
    /// Comma-separated token ids.
    #[arg(long, value_delimiter = ',', required = true)]
    ids: Vec<usize>,
}

impl LogitsArgs {
    /// Prints [`gpt2::sample::logits`] as one JSON array of rows.
    pub fn run(self) -> Result<(), String> {
        use std::io::Write;
        let (gpt, params) = gpt2::hf::from_pretrained(&self.model)?;
        let logits = gpt2::sample::logits(&gpt, &params, &self.ids)?; // (T, V)
        let v = gpt.config.vocab_size;
        let values = logits.to_vec();
        let rows: Vec<&[f32]> = values.chunks(v).collect();
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &rows).map_err(|e| e.to_string())?;
        writeln!(out).map_err(|e| e.to_string())
    }
}
