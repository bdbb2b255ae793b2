//! `gpt2 lecture`: the lecture run (`cargo xtask lecture 9`);
//! `gpt2 sample --model DIR`: build-nanogpt's sampling demo;
//! `gpt2 logits --model DIR --ids 1,2,3`: one JSON row of logits per position,
//! for checking a model against another implementation;
//! `gpt2 prepare --input FILE [--jsonl --field text] --out DIR`: token shards;
//! `gpt2 train --stage STAGE`: a stage of the video's loop, or with `cpu`
//! the recipe, data-parallel under `mpirun` with `--ddp`.
//!
//! `DIR` holds Hugging Face's `config.json` and `model.safetensors`, such as
//! the `gpt2` checkpoint or a model saved by `transformers`.

mod run_lecture;
mod train_cpu;

use bpe::{AllowedSpecial, Gpt2Tokenizer};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tensor::rng::TorchGenerator;

// Every forward pass allocates and frees large activations; mimalloc keeps them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "gpt2",
    about = "Lecture 9: GPT-2 (124M), OpenAI's weights and sampling"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `gpt2 train --stage`: the video's stages and the `cpu` recipe.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum StageArg {
    /// 7822fce: one batch, over and over.
    OverfitBatch,
    /// 631f7d6: DataLoaderLite over tiny Shakespeare.
    Dataloader,
    /// ec39245, 9ac321e: the tied head and GPT-2's init.
    Init,
    /// 7230096 to 01be6b3: AdamW, clipping, the schedule, accumulation.
    Optimizer,
    /// The whole recipe, scaled to a CPU; `--ddp` under mpirun.
    Cpu,
}

#[derive(Subcommand)]
enum Command {
    /// The lecture run: the first training stage against PyTorch, then the `cpu` recipe.
    Lecture(run_lecture::LectureArgs),
    /// Continue a prompt, as build-nanogpt's demo does (top-k sampling).
    Sample {
        /// Folder with config.json and model.safetensors.
        #[arg(long)]
        model: PathBuf,
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
    },
    /// Write a model as llm.c's checkpoint (gpt2_124M.bin's format).
    ToLlmc {
        /// Folder with config.json and model.safetensors.
        #[arg(long)]
        model: PathBuf,
        /// The checkpoint to write.
        #[arg(long)]
        out: PathBuf,
        /// Store bfloat16 (llm.c's version 5) instead of float32 (version 3).
        #[arg(long)]
        bf16: bool,
    },
    /// Read llm.c's checkpoint and save it in Hugging Face's layout.
    FromLlmc {
        /// An llm.c checkpoint (version 3 or 5).
        #[arg(long)]
        checkpoint: PathBuf,
        /// Folder for config.json and model.safetensors.
        #[arg(long)]
        out: PathBuf,
    },
    /// Score a model on HellaSwag the way build-nanogpt's hellaswag.py does.
    Eval {
        /// The benchmark (only `hellaswag`).
        #[arg(value_parser = ["hellaswag"])]
        benchmark: String,
        /// Folder with config.json and model.safetensors.
        #[arg(long)]
        model: PathBuf,
        /// The examples: rowanz/hellaswag's data/hellaswag_val.jsonl, or a file in its format.
        #[arg(long)]
        file: PathBuf,
        /// Score only the first N examples.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Train a stage of the video's loop (overfit-batch, dataloader, init,
    /// optimizer), or the `cpu` recipe, on one process or data-parallel.
    Train {
        /// The stage.
        #[arg(long, value_enum)]
        stage: StageArg,
        /// Steps (the video's stages: 50; cpu: the recipe's 500).
        #[arg(long)]
        steps: Option<usize>,
        #[command(flatten)]
        cpu: train_cpu::CpuArgs,
    },
    /// nanoGPT's train.py with init_from a GPT-2 folder: fine-tune it on
    /// nanoGPT's train.bin/val.bin (config/finetune_shakespeare.py, scaled to a CPU).
    Finetune(gpt2::finetune::FinetuneArgs),
    /// Print the logits of a token sequence as JSON, one row per position.
    Logits {
        /// Folder with config.json and model.safetensors.
        #[arg(long)]
        model: PathBuf,
        /// Comma-separated token ids.
        #[arg(long, value_delimiter = ',', required = true)]
        ids: Vec<usize>,
    },
    /// Tokenize text or JSON lines into token shards, as fineweb.py does; shard 0 is val.
    Prepare {
        /// A text file (one document) or, with --jsonl, one JSON object per line.
        #[arg(long)]
        input: PathBuf,
        /// Read --input as JSON lines.
        #[arg(long)]
        jsonl: bool,
        /// The JSON field holding each document.
        #[arg(long, default_value = "text")]
        field: String,
        /// Folder for the shards.
        #[arg(long)]
        out: PathBuf,
        /// Tokens per shard (fineweb.py: 100,000,000).
        #[arg(long, default_value_t = 100_000_000)]
        shard_tokens: usize,
        /// build-nanogpt's .npy shards, llm.c's .bin shards, or nanoGPT's
        /// headerless train.bin and val.bin (a 90/10 split of one text, as
        /// its data/shakespeare/prepare.py writes them).
        #[arg(long, value_enum, default_value = "npy")]
        format: gpt2::shards::ShardFormat,
        /// The shards' names start with this (fineweb.py: edufineweb).
        #[arg(long)]
        prefix: Option<String>,
    },
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Lecture(args) => return run_lecture::lecture(args),
        Command::Finetune(args) => gpt2::finetune::run(args)?,
        Command::Sample {
            model,
            prompt,
            num_return_sequences,
            max_length,
            top_k,
            seed,
        } => {
            let tok = Gpt2Tokenizer::from_data_dir()
                .map_err(|e| e.to_string())?
                .into_inner();
            let ids = tok
                .encode(&prompt, &AllowedSpecial::NoneRaise)
                .map_err(|e| e.to_string())?;
            let ids: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
            let (gpt, params) = gpt2::hf::from_pretrained(&model)?;
            let mut rng = TorchGenerator::manual_seed(seed);
            // The cache draws the same tokens as the plain loop, without redoing the prefix.
            let rows = gpt2::kv_cache::generate(
                &gpt,
                &params,
                &ids,
                num_return_sequences,
                max_length,
                top_k,
                &mut rng,
            )?;
            for row in rows {
                let row: Vec<u32> = row.iter().map(|&i| i as u32).collect();
                let text = tok.decode_bytes(&row).map_err(|e| e.to_string())?;
                println!("> {}", String::from_utf8_lossy(&text));
            }
        }
        Command::ToLlmc { model, out, bf16 } => {
            let (gpt, params) = gpt2::hf::from_pretrained(&model)?;
            let dtype = if bf16 {
                gpt2::llmc::Dtype::Bf16
            } else {
                gpt2::llmc::Dtype::F32
            };
            gpt2::llmc::write_model(&out, &gpt, &params, dtype)?;
            println!("wrote {}", out.display());
        }
        Command::FromLlmc { checkpoint, out } => {
            let (gpt, params) = gpt2::llmc::read_model(&checkpoint)?;
            gpt2::hf::save_pretrained(&out, &gpt, &params)?;
            println!("wrote {}", out.display());
        }
        Command::Eval {
            benchmark: _,
            model,
            file,
            limit,
        } => {
            let mut examples = gpt2::hellaswag::read_examples(&file)?;
            examples.truncate(limit.unwrap_or(usize::MAX));
            let tok = Gpt2Tokenizer::from_data_dir()
                .map_err(|e| e.to_string())?
                .into_inner();
            let (gpt, params) = gpt2::hf::from_pretrained(&model)?;
            let n = examples.len();
            let acc = gpt2::hellaswag::evaluate(&gpt, &params, &tok, &examples, |a| {
                if a.total % 100 == 0 || a.total == n {
                    eprintln!(
                        "{}/{n} acc_norm: {}/{}={:.4}",
                        a.total,
                        a.correct_norm,
                        a.total,
                        a.acc_norm()
                    );
                }
            })?;
            println!(
                "hellaswag: {} examples, acc {:.4}, acc_norm {:.4}",
                acc.total,
                acc.acc(),
                acc.acc_norm()
            );
        }
        Command::Train {
            stage: StageArg::Cpu,
            steps,
            cpu,
        } => return train_cpu::train(cpu, steps),
        Command::Train { stage, steps, cpu } => {
            if cpu.any_set() {
                return Err(
                    "--out, --resume, --data, --batch-size, --total-batch-size, \
                    --val-steps, --checkpoint-every, --stop-after and --ddp are for --stage cpu"
                        .into(),
                );
            }
            let stage = match stage {
                StageArg::OverfitBatch => gpt2::train::TrainStage::OverfitBatch,
                StageArg::Dataloader => gpt2::train::TrainStage::Dataloader,
                StageArg::Init => gpt2::train::TrainStage::Init,
                StageArg::Optimizer | StageArg::Cpu => gpt2::train::TrainStage::Optimizer,
            };
            let steps = steps.unwrap_or(50);
            let mut report = report::Stage::standalone("train");
            let logs = gpt2::train::train(stage, steps, &mut report)?;
            for (step, log) in logs.iter().enumerate() {
                match log.norm {
                    // The print of 5215868 and after.
                    Some(norm) => println!(
                        "step {step:4} | loss: {:.6} | lr {:.4e} | norm: {norm:.4}",
                        log.loss, log.lr
                    ),
                    None => println!("step {step}, loss: {}", log.loss),
                }
            }
            if steps == 50 {
                // The stage as the video runs it: its last loss against PyTorch's.
                let (want, band) = gpt2::train::pytorch_final(stage);
                let got = logs.last().map_or(f64::NAN, |l| l.loss as f64);
                let pass = (got - want).abs() <= band;
                let verdict = if pass { "PASS" } else { "FAIL" };
                println!("final loss {got} vs PyTorch's {want} ± {band}: {verdict}");
                if !pass {
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        Command::Logits { model, ids } => {
            let (gpt, params) = gpt2::hf::from_pretrained(&model)?;
            let logits = gpt2::sample::logits(&gpt, &params, &ids)?; // (T, V)
            let v = gpt.config.vocab_size;
            let values = logits.to_vec();
            let rows: Vec<&[f32]> = values.chunks(v).collect();
            let mut out = std::io::stdout().lock();
            serde_json::to_writer(&mut out, &rows).map_err(|e| e.to_string())?;
            writeln!(out).map_err(|e| e.to_string())?;
        }
        Command::Prepare {
            input,
            jsonl,
            field,
            out,
            shard_tokens,
            format,
            prefix,
        } => {
            let kind = match jsonl {
                true => gpt2::shards::InputKind::Jsonl { field },
                false => gpt2::shards::InputKind::Text,
            };
            let stem = input
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("shard");
            let prefix = prefix.unwrap_or_else(|| stem.to_string());
            let written =
                gpt2::shards::prepare(&input, &kind, &out, &prefix, shard_tokens, format)?;
            for path in written {
                let tokens = match format {
                    gpt2::shards::ShardFormat::Nanogpt => {
                        gpt2::shards::TokenShard::open_as(&path, format)?.len()
                    }
                    _ => gpt2::shards::TokenShard::open(&path)?.len(),
                };
                println!("{}: {tokens} tokens", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    report::quiet_on_broken_pipe();
    if let Err(e) = tensor::check_threads_env() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    gpt2::keep_freed_memory();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
