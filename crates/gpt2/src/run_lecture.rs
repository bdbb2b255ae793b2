//! `gpt2 lecture`: the video's first training stage against PyTorch, then
//! the `cpu` recipe, its targets, its exports and its sample.

use gpt2::ddp::SingleProcess;
use gpt2::recipe::{self, RecipeConfig, Split, Trainer};
use gpt2::train::{train, TrainStage};
use report::{Run, RunArgs, Target};
use serde_json::Value;
use tensor::rng::TorchGenerator;

/// PyTorch's runs of the video's stages (tests/fixtures/train_stages.py).
const STAGES_FIXTURE: &str = include_str!("../tests/fixtures/train_stages.json");
/// PyTorch's counts and init losses of the 124M models (tests/fixtures/make_fixtures.py).
const INIT_FIXTURE: &str = include_str!("../tests/fixtures/gpt2_124m_init.json");
/// PyTorch's run of the `cpu` recipe (tests/fixtures/cpu_stage.py).
const CPU_FIXTURE: &str = include_str!("../tests/fixtures/cpu_stage.json");
/// PyTorch's runs of the `cpu` recipe in float32 and under bfloat16 autocast, three seeds each
/// (tests/fixtures/cpu_stage.py --dtype … --seed …).
const DTYPES_FIXTURE: &str = include_str!("../tests/fixtures/cpu_stage_dtypes.json");

/// How far the val loss may be from PyTorch's run of the same recipe and
/// seed (the band). The first steps agree to 1e-5; float noise then
/// grows over 1,000 steps.
const TORCH_VAL_BAND: f64 = 0.02;

#[derive(clap::Args)]
pub struct LectureArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Continue the `cpu` stage from OUT/cpu/checkpoint.safetensors.
    #[arg(long)]
    pub resume: bool,
    /// Train on the shards `gpt2 prepare` wrote into DIR instead of tiny
    /// Shakespeare (20 val batches per evaluation, as build-nanogpt; the
    /// targets against PyTorch and the bigram then only report).
    #[arg(long)]
    pub data: Option<std::path::PathBuf>,
    /// The products' precision: bfloat16 trains the `cpu` recipe as build-nanogpt's
    /// train_gpt2.py does on a CPU (under bfloat16 autocast), against PyTorch's run of it, and
    /// writes into OUT/bfloat16.
    #[arg(long, default_value = "float32")]
    pub dtype: tensor::bf16::Precision,
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// A run's last val loss.
fn last_val(run: &Value) -> f64 {
    run["evals"]
        .as_array()
        .and_then(|e| e.last())
        .and_then(|e| e["val"].as_f64())
        .unwrap_or(f64::NAN)
}

/// The step-0 loss within 1e-5 and the first five within 1e-4 of PyTorch's.
fn first_steps_targets(s: &mut report::Stage, what: &str, ours: &[f32], theirs: &[f64]) {
    let ours: Vec<f64> = ours.iter().map(|&l| l as f64).collect();
    let five = theirs.len().min(5).min(ours.len().max(1));
    s.target(Target::exact(
        &format!("{what}: step-0 loss vs PyTorch"),
        theirs[0],
        1e-5,
        ours.first().copied().unwrap_or(f64::NAN),
    ));
    s.target(Target::all_within(
        &format!("{what}: first {five} losses vs PyTorch"),
        &theirs[..five],
        1e-4,
        &ours[..five.min(ours.len())],
    ));
}

pub fn lecture(mut args: LectureArgs) -> Result<std::process::ExitCode, String> {
    let bfloat16 = args.dtype == tensor::bf16::Precision::Bfloat16;
    if bfloat16 {
        args.run.out = args.run.out.join("bfloat16");
    }
    let stages: Value = serde_json::from_str(STAGES_FIXTURE).expect("fixture is JSON");
    let init: Value = serde_json::from_str(INIT_FIXTURE).expect("fixture is JSON");
    let cpu: Value = serde_json::from_str(CPU_FIXTURE).expect("fixture is JSON");
    let mut config = RecipeConfig::cpu();
    if let Some(seed) = args.run.seed {
        config.seed = seed;
    }
    if args.data.is_some() {
        config.val_steps = 20;
    }
    if let Some(steps) = args.run.steps {
        // A shorter run ends its schedule there (the targets then only report).
        config = config.with_steps(steps);
    }
    let mut recorded = serde_json::to_value(&config).expect("JSON");
    recorded["dtype"] = format!("{:?}", args.dtype).to_lowercase().into();
    let mut run = Run::new(9, "gpt2", &args.run, config.seed, recorded)?;
    let quick = run.quick();
    let steps_override = run.steps_override();
    let full = !quick && steps_override.is_none() && config.seed == 1337 && args.data.is_none();

    // The 124M-class model of 7822fce on its one batch, against PyTorch (in float32: its
    // reference steps are float32's).
    if bfloat16 {
        println!("overfit-batch: left out under --dtype bfloat16 (PyTorch's steps are float32)");
    } else {
        let s = run.stage("overfit-batch");
        s.set_source("PyTorch: tests/fixtures/train_stages.py (build-nanogpt 7822fce); the 124M count: tests/fixtures/make_fixtures.py");
        let tied = gpt2::GptConfig::preset("gpt2")?
            .parameter_count()
            .unwrap_or(0);
        s.target(Target::exact(
            "GPT-2 124M parameters (tied head)",
            init["gpt2_init"]["parameters"].as_f64().unwrap_or(f64::NAN),
            0.0,
            tied as f64,
        ));
        let logs = train(TrainStage::OverfitBatch, 5, s)?;
        let losses: Vec<f32> = logs.iter().map(|l| l.loss).collect();
        first_steps_targets(
            s,
            "overfit-batch",
            &losses,
            &floats(&stages["overfit-batch"]),
        );
        s.set_final("train", losses[4] as f64);
    }

    let split = match &args.data {
        Some(dir) => Split::from_dir(dir)?,
        None => Split::shakespeare()?,
    };
    let count = |t: &recipe::Tokens| -> Result<usize, String> {
        Ok(t.open()?.iter().map(|s| s.len()).sum())
    };
    println!(
        "{}: train {} tokens, val {}",
        args.data
            .as_ref()
            .map_or("tiny Shakespeare".into(), |d| d.display().to_string()),
        count(&split.train)?,
        count(&split.val)?
    );
    let out = run.out_dir().join("cpu");
    let checkpoint = out.join("checkpoint.safetensors");
    let s = run.stage(if bfloat16 { "cpu-bfloat16" } else { "cpu" });
    s.set_source("PyTorch: tests/fixtures/cpu_stage.py (build-nanogpt train_gpt2.py at efedfac, narrowed); the bigram bar counted here");
    let _precision = tensor::bf16::precision_scope(args.dtype);
    if bfloat16 {
        println!("products in bfloat16 ({})", tensor::bf16::kernel());
    }
    let mut trainer = match args.resume {
        true => gpt2::checkpoint::resume(&checkpoint, &split, &config, Box::new(SingleProcess))?,
        false => Trainer::new(config.clone(), &split)?,
    };
    let params = trainer.params.count();
    s.target(Target::exact(
        "cpu model parameters",
        cpu["parameters"].as_f64().unwrap_or(f64::NAN),
        0.0,
        params as f64,
    ));
    // --quick keeps the recipe's schedule, so its first steps are PyTorch's.
    let stop_after = quick.then_some(5);
    let start_step = trainer.step;
    let trained = recipe::train(&mut trainer, &split, &out, s, stop_after)?;
    let val = trained.evals.last().map_or(f64::NAN, |e| e.val as f64);
    s.set_final("val", val);
    if let Some(&last) = trained.losses.last() {
        s.set_final("train", last as f64);
    }
    let band = if bfloat16 {
        let runs: Value = serde_json::from_str(DTYPES_FIXTURE).expect("fixture is JSON");
        let torch = BfloatReference::from_runs(&runs, &config.seed.to_string());
        if start_step == 0 {
            torch.first_steps_targets(s, &trained.losses);
        }
        Target::band(
            "cpu val loss vs PyTorch's bfloat16 autocast run (b: its largest bf16-f32 gap over 3 seeds)",
            last_val(&torch.run),
            torch.val_gap,
            val,
        )
    } else {
        if start_step == 0 {
            first_steps_targets(s, "cpu", &trained.losses, &floats(&cpu["losses"]));
        }
        Target::band(
            "cpu val loss vs PyTorch's run",
            last_val(&cpu),
            TORCH_VAL_BAND,
            val,
        )
    };
    let (alpha, bigram) = recipe::bigram_val_loss(&split).unwrap_or((f64::NAN, f64::NAN));
    println!("counted token bigram (add-{alpha} smoothing): val loss {bigram:.4}");
    let below = Target::below(
        "cpu val loss below the best add-α token bigram's",
        bigram,
        val,
    );
    if full && trainer.step == config.schedule.max_steps {
        s.target(band);
        s.target(below);
    } else if !quick {
        s.target(band.ungated());
        s.target(below.ungated());
    }
    if trained.losses.is_empty() {
        println!("the checkpoint is at the recipe's last step: nothing left to train");
    } else {
        s.target(Target::info(
            "tokens/s in training steps",
            trained.tokens_per_second,
        ));
        let peak = recipe::matmul_peak_flops();
        s.target(Target::info(
            "fraction of gemm's measured peak",
            trained.flops_per_second / peak,
        ));
    }
    if !quick {
        let model_dir = out.join("model");
        gpt2::hf::save_pretrained(&model_dir, &trainer.model, &trainer.params)?;
        gpt2::llmc::write_model(
            &out.join("gpt2_cpu.bin"),
            &trainer.model,
            &trainer.params,
            gpt2::llmc::Dtype::F32,
        )?;
        println!(
            "saved {} and {}",
            model_dir.display(),
            out.join("gpt2_cpu.bin").display()
        );
        print_samples(&trainer.model, &trainer.params)?;
    }
    if !quick && !bfloat16 {
        openai_weights(&mut run, &split, args.data.is_none())?;
    }
    Ok(run.finish())
}

/// PyTorch's `cpu` recipe under bfloat16 autocast at the run's seed, and the tolerances its
/// own runs measure, each the largest |bfloat16 − float32| of PyTorch's runs over the
/// fixture's three seeds: of the first five steps' losses (one tolerance for all five: a
/// single step's gap can be near zero by chance), and of the final val loss (b).
struct BfloatReference {
    /// The bfloat16 run at this seed.
    run: Value,
    /// The first five steps' tolerance.
    first_steps_gap: f64,
    /// b: the final val loss's tolerance.
    val_gap: f64,
}

impl BfloatReference {
    fn from_runs(runs: &Value, seed: &str) -> BfloatReference {
        let seeds: Vec<(&Value, &Value)> = runs["bfloat16"]
            .as_object()
            .map(|by_seed| {
                by_seed
                    .iter()
                    .filter_map(|(seed, b)| Some((b, runs["float32"].get(seed)?)))
                    .collect()
            })
            .unwrap_or_default();
        let gap = |f: &dyn Fn(&Value) -> f64| {
            seeds
                .iter()
                .map(|(b, f32)| (f(b) - f(f32)).abs())
                .fold(f64::NAN, f64::max)
        };
        let step =
            |i: usize| move |r: &Value| floats(&r["losses"]).get(i).copied().unwrap_or(f64::NAN);
        BfloatReference {
            run: runs["bfloat16"][seed].clone(),
            first_steps_gap: (0..5).map(|i| gap(&step(i))).fold(f64::NAN, f64::max),
            val_gap: gap(&last_val),
        }
    }

    /// The first five losses within the first steps' tolerance of PyTorch's.
    fn first_steps_targets(&self, s: &mut report::Stage, ours: &[f32]) {
        let theirs = floats(&self.run["losses"]);
        let ours: Vec<f64> = ours.iter().take(5).map(|&l| l as f64).collect();
        s.target(Target::all_within(
            "cpu-bfloat16: first 5 losses vs PyTorch's autocast (tolerance: its largest bf16-f32 gap in them over 3 seeds)",
            &theirs[..5.min(theirs.len())],
            self.first_steps_gap,
            &ours,
        ));
    }
}

/// build-nanogpt's sample: four continuations of its prompt, 32 tokens each, top-k 50, seed 42.
fn print_samples(model: &gpt2::Gpt, params: &autograd::Params) -> Result<(), String> {
    let tok = bpe::Gpt2Tokenizer::from_data_dir()
        .map_err(|e| e.to_string())?
        .into_inner();
    let prompt = "Hello, I'm a language model,";
    let ids: Vec<usize> = tok
        .encode_ordinary(prompt)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|i| i as usize)
        .collect();
    let mut rng = TorchGenerator::manual_seed(42);
    let rows = gpt2::sample::generate(model, params, &ids, 4, 32, 50, &mut rng)?;
    for row in rows {
        let ids: Vec<u32> = row
            .iter()
            .filter(|&&i| i < 50257)
            .map(|&i| i as u32)
            .collect();
        println!("sample: {}", tok.decode(&ids).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// With OpenAI's weights in the data folder (`cargo xtask data gpt2`), their
/// val loss on the same split and a sample; reported, not gated.
fn openai_weights(run: &mut Run, split: &Split, shakespeare: bool) -> Result<(), String> {
    let Some(dir) = data::path("tinyshakespeare.txt")
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("gpt2")))
        .filter(|d| d.join("model.safetensors").exists())
    else {
        println!("OpenAI's GPT-2 weights are not in the data folder (`cargo xtask data gpt2` fetches them); skipping their val loss");
        return Ok(());
    };
    let s = run.stage("openai-gpt2");
    let loss = recipe::pretrained_val_loss(&dir, split)?;
    let name = if shakespeare {
        "OpenAI GPT-2 124M val loss on tiny Shakespeare"
    } else {
        "OpenAI GPT-2 124M val loss on the first val shard"
    };
    s.target(Target::info(name, loss));
    s.set_final("val", loss);
    let (model, params) = gpt2::hf::from_pretrained(&dir)?;
    print_samples(&model, &params)
}
