//! `gpt lecture`: runs the lecture's stages and checks their numbers;
//! `gpt sample`: generates text from a checkpoint;
//! `gpt prepare`, `gpt train`, `gpt sample --out-dir`: nanoGPT's three
//! scripts on your own text ([`gpt::nanogpt`]).

mod own_text;
mod run_stage;

use clap::{Args, Parser, Subcommand};
use gpt::{generate, SampleOptions, Shakespeare, Stage, Trainer};
use report::{Run, RunArgs, Target};
use run_stage::{FIXTURE, TRAIN_FIXTURE};
use serde_json::{json, Value};
use std::process::ExitCode;

// Every step allocates and frees the same large activations; mimalloc keeps
// them (`tensor::keep_freed_memory`) instead of faulting fresh pages in each step.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "gpt",
    about = "Lecture 7: Let's build GPT, on tiny Shakespeare; nanoGPT on your own text"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train the lecture's stages and check them against the lecture's numbers.
    Lecture(LectureArgs),
    /// Generate text: from a lecture checkpoint (--checkpoint), or as
    /// nanoGPT's sample.py from an out dir of `gpt train` (--out-dir).
    #[command(args_override_self = true)]
    Sample(gpt::nanogpt::sample::SampleCommand),
    /// nanoGPT's char-level prepare.py: train.bin, val.bin and meta.pkl from any text.
    Prepare(gpt::nanogpt::prepare::PrepareArgs),
    /// nanoGPT's train.py on a prepared folder (defaults: its README's CPU line).
    /// As in nanoGPT's configurator, a later flag overrides an earlier one.
    #[command(args_override_self = true)]
    Train(gpt::nanogpt::configurator::TrainArgs),
}

#[derive(Args)]
pub struct LectureArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Run only this stage (repeatable). Default: bigram, layernorm, cpu.
    #[arg(long = "stage", value_enum)]
    pub stages: Vec<Stage>,
    /// Scale attention by head_size^-0.5 with N(0, 0.02) init (gpt.py after the video).
    #[arg(long)]
    pub head_size_scale: bool,
    /// Resume each stage from its checkpoint in --out, if there is one.
    #[arg(long)]
    pub resume: bool,
    /// Write the checkpoint every N iterations (default: at every evaluation;
    /// `full`, every 50). Not part of the configuration, so a run may resume
    /// with another value.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub checkpoint_every: Option<u64>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

#[derive(Args, Clone, Copy)]
pub struct SamplingArgs {
    /// Divide the logits by this before sampling.
    #[arg(long, default_value_t = 1.0)]
    temperature: f32,
    /// Sample only from the k most likely characters.
    #[arg(long)]
    top_k: Option<usize>,
}

impl SamplingArgs {
    fn options(self) -> Result<SampleOptions, String> {
        SampleOptions::checked(self.temperature, self.top_k)
    }
}

fn main() -> ExitCode {
    report::main_with(tensor::check_threads_env(), 1, || {
        tensor::keep_freed_memory();
        match flags::parse::<Cli>().command {
            Command::Lecture(args) => lecture(args),
            Command::Sample(args) => args.run().map(|()| ExitCode::SUCCESS),
            Command::Prepare(args) => args.run().map(|()| ExitCode::SUCCESS),
            Command::Train(args) => own_text::train(args),
        }
    })
}

fn lecture(args: LectureArgs) -> Result<ExitCode, String> {
    let opts = args.sampling.options()?;
    let stages = if !args.stages.is_empty() {
        args.stages.clone()
    } else if args.run.quick {
        // `full` only builds its model: the parameter count and the projected time.
        vec![Stage::Bigram, Stage::Layernorm, Stage::Cpu, Stage::Full]
    } else {
        vec![Stage::Bigram, Stage::Layernorm, Stage::Cpu]
    };
    let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture is JSON");
    let train_fixture: Value = serde_json::from_str(TRAIN_FIXTURE).expect("fixture is JSON");
    let config = json!({
        "stages": stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "head_size_scale": args.head_size_scale,
        "temperature": opts.temperature,
        "top_k": opts.top_k,
    });
    let mut run = Run::new(7, "gpt", &args.run, 1337, config)?;
    let data = Shakespeare::load().map_err(|e| e.to_string())?;
    println!(
        "tiny Shakespeare: {} characters, vocab {}, train {}, val {}",
        data.train.len() + data.val.len(),
        data.vocab.len(),
        data.train.len(),
        data.val.len()
    );
    {
        let stage = run.stage("data");
        stage.set_source(
            "ng-video-lecture gpt.py on input.txt (nanoGPT's shakespeare_char/prepare.py agrees)",
        );
        let hii = data.vocab.encode("hii there")?;
        stage.target(Target::string(
            "encode(\"hii there\")",
            "[46, 47, 47, 1, 58, 46, 43, 56, 43]",
            &format!("{hii:?}"),
        ));
        stage.target(Target::string(
            "vocab size",
            "65",
            &data.vocab.len().to_string(),
        ));
        stage.target(Target::string(
            "train/val split",
            "1003854/111540",
            &format!("{}/{}", data.train.len(), data.val.len()),
        ));
        stage.end();
    }
    let mut last: Option<Trainer> = None;
    for &stage in &stages {
        let trainer = run_stage::run_stage(
            &mut run,
            &args,
            stage,
            &data,
            (&fixture, &train_fixture),
            opts,
        )?;
        if trainer.iter > 0 {
            last = Some(trainer);
        }
    }
    if let Some(trainer) = last {
        // gpt.py's last line: 10,000 characters into more.txt (1,000 in a quick run).
        let n = if run.quick() { 1_000 } else { 10_000 };
        let mut rng = trainer.rng.borrow().clone();
        let ids = generate(&trainer.model, &trainer.params, &mut rng, &[0], n, opts);
        let path = run
            .write_file("more.txt", data.vocab.decode(&ids[1..]).as_bytes())
            .map_err(|e| format!("cannot write more.txt: {e}"))?;
        println!("wrote {n} characters to {}", path.display());
        if let gpt::stages::Model::Gpt(model) = &trainer.model {
            write_attention_map(&run, model, &trainer.params, &data, &ids)?;
        }
    }
    Ok(run.finish())
}

/// `attention.json` for the runs page: the weights of the last block's first
/// head on the first `block_size` ids of the generation (the start token, a
/// newline, included), one row per position, rounded to 4 decimals.
fn write_attention_map(
    run: &Run,
    model: &gpt::model::Gpt,
    params: &autograd::Params,
    data: &Shakespeare,
    sample: &[usize],
) -> Result<(), String> {
    let t = sample.len().min(model.config.block_size);
    let layer = model.config.n_layer - 1;
    let maps = model.attention_weights(params, &sample[..t]); // n_layer × (nh, T, T)
    let rows: Vec<Vec<f64>> = maps[layer].to_vec()[..t * t]
        .chunks(t)
        .map(|row| {
            row.iter()
                .map(|&p| (f64::from(p) * 1e4).round() / 1e4)
                .collect()
        })
        .collect();
    let tokens: Vec<String> = sample[..t]
        .iter()
        .map(|&id| data.vocab.decode(&[id]))
        .collect();
    let map = json!({"layer": layer, "head": 0, "tokens": tokens, "weights": rows});
    let path = run
        .write_file("attention.json", map.to_string().as_bytes())
        .map_err(|e| format!("cannot write attention.json: {e}"))?;
    println!(
        "wrote the attention map of block {layer}, head 0 to {}",
        path.display()
    );
    Ok(())
}
