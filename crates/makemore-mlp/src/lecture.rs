//! `makemore-mlp lecture`: lecture 3 end to end (the split, the init loss, the
//! optional learning-rate search, 200,000 steps, the samples), checked against
//! the lecture's and PyTorch's numbers.

use clap::Args;
use data::makemore::Splits;
use makemore_mlp::{
    embedding_plot, lr_find, lr_find_plot, sample, train, uniform_loss, Config, Mlp,
};
use report::{Run, RunArgs, Target};
use serde_json::json;
use std::process::ExitCode;
use tensor::rng::TorchGenerator;

/// The notebook's generator seed for the init.
const INIT_SEED: u64 = 2147483647;
/// Lecture steps and the quick run's length.
const STEPS: usize = 200_000;
const QUICK_STEPS: usize = 5_000;

// Reference values. Lecture: karpathy/nn-zero-to-hero,
// lectures/makemore/makemore_part2_mlp.ipynb; PyTorch: tests/fixtures/mlp_torch.py
// (same draws, global generator seeded 42 for the minibatches, which the
// notebook left unseeded).
const INIT_LOSS: f64 = 26.004692; // PyTorch, full training split
const FIXED_INIT_LOSS: f64 = 3.3078656; // PyTorch, W2·0.01, b2·0
const STEP0_LOSS: f64 = 28.234291; // PyTorch, first minibatch with seed 42
const QUICK_DEV: f64 = 2.6920488; // PyTorch, dev loss after 5,000 steps with seed 42
const TRAIN: f64 = 2.1260; // lecture, cell[29]
const DEV: f64 = 2.1701; // lecture, cell[30]
                         // Lecture 4's loss log, row "fix softmax confidently wrong" (W2·0.01, b2·0).
const FIXED_TRAIN: f64 = 2.07;
const FIXED_DEV: f64 = 2.13;
const BAND: f64 = 0.03;
/// PyTorch's 200k-step run with the same draws (`mlp_torch.py --full`).
const TORCH_FULL: &str = include_str!("../tests/fixtures/mlp_torch_full.json");
/// Ours and PyTorch's runs make the same draws, but their rounding differs from
/// the first steps on (tanh, and the order of matmul sums), so they drift apart.
/// Measured at seed 42, the same on 1 and 2 threads: after 5,000 steps dev 2.69083
/// against 2.69205; after 200,000 train 2.11999 against 2.12004 and dev 2.16260
/// against 2.16382. Each tolerance is the largest gap, 0.0012, rounded up.
const QUICK_TOL: f64 = 0.002;
const FULL_TOL: f64 = 0.002;

/// Train the lecture's MLP and check its numbers.
#[derive(Args)]
pub struct LectureArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Also run the learning-rate search (1,000 steps over lr = 10^linspace(-3, 0)).
    #[arg(long)]
    lr_find: bool,
    /// Exercise E02: start from W2·0.01, b2·0, so the first loss is near -ln(1/27).
    #[arg(long)]
    fixed_init: bool,
}

/// Runs the lecture; the exit code says whether every gated target passed.
pub fn run(args: LectureArgs) -> Result<ExitCode, String> {
    let config = Config::default();
    let quick = args.run.quick;
    let steps = args
        .run
        .steps
        .unwrap_or(if quick { QUICK_STEPS } else { STEPS });
    let mut run = Run::new(
        3,
        "makemore-mlp",
        &args.run,
        42,
        json!({
            "block_size": config.block_size, "n_embd": config.n_embd, "n_hidden": config.n_hidden,
            "batch_size": makemore_mlp::BATCH_SIZE, "steps": steps, "lr": "0.1, 0.01 from step 100000",
            "init_seed": INIT_SEED, "fixed_init": args.fixed_init, "lr_find": args.lr_find,
        }),
    )?;
    let seed = run.seed();
    // Numbers tied to the default seed's minibatches are only checked for that seed.
    let lecture_seed = seed == 42;

    let splits = Splits::load(config.block_size).map_err(|e| e.to_string())?;
    let mut model = Mlp::init(config, &mut TorchGenerator::manual_seed(INIT_SEED));
    if args.fixed_init {
        model.fix_output_init();
    }

    let stage = run.stage("init");

    stage.set_source("makemore_part3_bn.ipynb cell[5] (split), makemore_part2_mlp.ipynb cell[23]; PyTorch: tests/fixtures/mlp_torch.py");
    for (name, expected, got) in [
        ("train examples", 182_625, splits.train.len()),
        ("dev examples", 22_655, splits.dev.len()),
        ("test examples", 22_866, splits.test.len()),
        ("parameters", 11_897, model.params.count()),
    ] {
        stage.target(Target::string(
            name,
            &expected.to_string(),
            &got.to_string(),
        ));
    }
    let init_loss = model.loss(&splits.train) as f64;
    println!("init loss (full train split): {init_loss:.6}");
    let expected_init = if args.fixed_init {
        FIXED_INIT_LOSS
    } else {
        INIT_LOSS
    };
    stage.target(Target::exact(
        "init loss (train)",
        expected_init,
        1e-4,
        init_loss,
    ));
    // What a net that knows nothing would score, for comparison with the init loss.
    stage.target(Target::info(
        "uniform loss -ln(1/27)",
        uniform_loss() as f64,
    ));

    if args.lr_find {
        let stage = run.stage("lr-find");
        let mut probe = Mlp::init(config, &mut TorchGenerator::manual_seed(INIT_SEED));
        if args.fixed_init {
            probe.fix_output_init();
        }
        // Its own copy of the global generator, so --lr-find leaves the main run unchanged.
        let mut global = TorchGenerator::manual_seed(seed);
        let points = lr_find(&mut probe, &splits.train, &mut global, 1000);
        let mut csv = String::from("step,lre,lr,loss\n");
        for (i, p) in points.iter().enumerate() {
            csv.push_str(&format!("{i},{},{},{}\n", p.lre, p.lr, p.loss));
        }
        // The valley of a 50-step moving average is where the lecture reads off its rate.
        let window = 50;
        let best = (0..=points.len() - window)
            .map(|i| {
                let mean =
                    points[i..i + window].iter().map(|p| p.loss).sum::<f32>() / window as f32;
                (points[i + window / 2].lr, mean)
            })
            .filter(|(_, m)| m.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(f32::NAN, |(lr, _)| lr);
        println!("lr-find: lowest smoothed loss at lr ≈ {best:.3}");
        stage.target(Target::info("lr at lowest smoothed loss", best as f64));
        stage.set_steps(points.len());
        stage.end();
        run.write_file("lr_find.csv", csv.as_bytes())
            .map_err(|e| format!("lr_find.csv: {e}"))?;
        lr_find_plot(&points, &run.out_dir().join("lr_find.png"))?;
    }

    let stage = run.stage("mlp");

    stage.set_source(
        "makemore_part2_mlp.ipynb cells 29–30; PyTorch, same draws: tests/fixtures/mlp_torch.py",
    );
    let mut global = TorchGenerator::manual_seed(seed);
    let (losses, loop_ms) = train(&mut model, &splits.train, &mut global, steps, stage)?;
    if lecture_seed && !args.fixed_init {
        if let Some(&first) = losses.first() {
            stage.target(Target::exact(
                "step-0 minibatch loss",
                STEP0_LOSS,
                1e-4,
                first as f64,
            ));
        }
    }
    // The stage's own ms_per_step also counts the full-split evaluation below.
    stage.target(Target::info("ms per training step (loop only)", loop_ms));
    let train = model.loss(&splits.train) as f64;
    let dev = model.loss(&splits.dev) as f64;
    println!("train {train:.4}  dev {dev:.4}");
    stage.set_final("train", train);
    stage.set_final("val", dev);
    if quick && steps == QUICK_STEPS && !args.fixed_init {
        let t = Target::band(
            "dev loss after 5000 steps (PyTorch, same draws)",
            QUICK_DEV,
            QUICK_TOL,
            dev,
        );
        stage.target(if lecture_seed { t } else { t.ungated() });
    } else if !quick {
        // With the fixed init, the numbers are lecture 4's loss log (part 3, cell[11]).
        let (t, d, source) = if args.fixed_init {
            (FIXED_TRAIN, FIXED_DEV, " (lecture 4's loss log, cell[11])")
        } else {
            (TRAIN, DEV, "")
        };
        let full = args.run.steps.is_none();
        for target in [
            Target::band(&format!("train loss{source}"), t, BAND, train),
            Target::band(&format!("dev loss{source}"), d, BAND, dev),
        ] {
            stage.target(if full { target } else { target.ungated() });
        }
        if !args.fixed_init {
            let torch: serde_json::Value =
                serde_json::from_str(TORCH_FULL).expect("fixture is JSON");
            for (split, got) in [("train", train), ("dev", dev)] {
                let target = Target::band(
                    &format!("{split} loss (PyTorch, same draws)"),
                    torch[split].as_f64().unwrap_or(f64::NAN),
                    FULL_TOL,
                    got,
                );
                stage.target(if full && lecture_seed {
                    target
                } else {
                    target.ungated()
                });
            }
        }
    }

    let stage = run.stage("sample");
    let names = sample(&model, &mut TorchGenerator::manual_seed(INIT_SEED + 10), 20);
    for name in &names {
        println!("{name}");
    }
    let mean_len = names.iter().map(|n| n.len()).sum::<usize>() as f64 / names.len() as f64;
    stage.target(Target::info("mean sample length", mean_len));
    stage.end();
    run.write_file("samples.txt", (names.join("\n") + "\n").as_bytes())
        .map_err(|e| format!("samples.txt: {e}"))?;
    embedding_plot(
        model.params.value(model.c),
        &run.out_dir().join("embedding.png"),
    )?;
    Ok(run.finish())
}
