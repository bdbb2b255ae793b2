//! One stage of `gpt lecture`: build or resume its trainer, train it with
//! [`gpt::train`], and check its numbers against the lecture and PyTorch.

use crate::LectureArgs;
use gpt::checkpoint;
use gpt::{generate, Config, SampleOptions, Shakespeare, Stage, Trainer};
use report::{Run, Target};
use serde_json::Value;

/// PyTorch's numbers for each stage (tests/fixtures/stages.py).
pub const FIXTURE: &str = include_str!("../tests/fixtures/stages.json");
/// PyTorch training the gated stages with the same draws (`stages.py --train`):
/// every evaluation of the full runs and of the quick runs.
pub const TRAIN_FIXTURE: &str = include_str!("../tests/fixtures/stages_train.json");

/// How far our val loss may be from PyTorch's for the same seeded run. Both make
/// the same draws (the first steps agree to 2e-5) and stay close, but not bit for
/// bit. Measured at seed 1337, the same on 1 and 2 threads:
///
/// | stage | ours | PyTorch |
/// |---|---|---|
/// | bigram, 3000 iterations | 2.4910617 | 2.4910619 |
/// | layernorm, 500 (`--quick`) | 2.4025180 | 2.4021735 |
/// | layernorm, 5000 | 2.0603912 | 2.0604873 |
/// | cpu, 100 (`--quick`) | 2.6275799 | 2.6275797 |
/// | cpu, 2000 | 1.8857312 | 1.8857315 |
///
/// Each tolerance is the stage's largest gap rounded up. They are far tighter than
/// the step the lecture's last change makes: `blocks`, layernorm without LayerNorm,
/// ends at 2.0799 in PyTorch.
fn torch_tolerance(stage: Stage) -> f64 {
    match stage {
        Stage::Layernorm => 5e-4,
        _ => 1e-4,
    }
}

/// PyTorch's val loss at the last evaluation of `stage`'s run, full or quick.
fn torch_val(train_fixture: &Value, stage: Stage, quick: bool) -> Option<f64> {
    let mode = if quick { "quick" } else { "full" };
    train_fixture[mode][stage.name()].as_array()?.last()?["val"].as_f64()
}

/// How many iterations `--quick` runs of a stage (`None`: the whole stage).
pub fn quick_iters(stage: Stage) -> Option<usize> {
    match stage {
        Stage::Bigram => None, // the whole stage takes seconds
        Stage::Layernorm => Some(500),
        Stage::Cpu => Some(100),
        _ => Some(0),
    }
}

/// Runs `stage` and adds its targets to `run`.
pub fn run_stage(
    run: &mut Run,
    args: &LectureArgs,
    stage: Stage,
    data: &Shakespeare,
    (fixture, train_fixture): (&Value, &Value),
    opts: SampleOptions,
) -> Result<Trainer, String> {
    let mut cfg = Config::for_stage(stage).with_head_size_scale(args.head_size_scale);
    if let Some(seed) = args.run.seed {
        cfg.train.seed = seed;
    }
    // `--steps` wins over the quick plan: the quick targets then do not apply.
    let quick = run.quick() && run.steps_override().is_none() && quick_iters(stage).is_some();
    let mut steps = run.steps_override().or(if run.quick() {
        quick_iters(stage)
    } else {
        None
    });
    if stage == Stage::Full && steps.is_none() && run.quick() {
        steps = Some(0);
    }
    if let Some(n) = steps {
        cfg.train.max_iters = n;
        if cfg.train.nanogpt_loop {
            cfg.train.eval_interval = cfg.train.eval_interval.min(n.max(1));
        } else {
            cfg.train.eval_last = true;
        }
    }
    let fixture_key = if cfg.head_size_scale() {
        format!("{}-head-size-scale", stage.name())
    } else {
        stage.name().to_string()
    };
    let reference = &fixture[fixture_key.as_str()];
    let ckpt_path = run.out_dir().join(format!("{}.safetensors", stage.name()));

    println!(
        "\n== stage {}: lecture val {}",
        stage.name(),
        stage.lecture_val()
    );
    let mut trainer = if args.resume && ckpt_path.exists() {
        let (t, _) = checkpoint::load(&ckpt_path)?;
        if t.cfg != cfg {
            return Err(format!(
                "checkpoint {} was written with a different configuration",
                ckpt_path.display()
            ));
        }
        println!(
            "resuming from {} at iteration {}",
            ckpt_path.display(),
            t.iter
        );
        t
    } else {
        Trainer::new(cfg.clone())
    };
    let n_params = trainer.params.count();
    println!("{:.6} M parameters", n_params as f64 / 1e6);

    let s = run.stage(stage.name());
    s.set_source(stage.source());
    if let Some(want) = reference["params"].as_u64() {
        s.target(Target::string(
            "parameters",
            &want.to_string(),
            &n_params.to_string(),
        ));
    }
    if stage == Stage::Full {
        s.target(Target::info(
            "projected hours on this machine",
            projected_hours(&cfg, n_params),
        ));
        if cfg.train.max_iters == 0 {
            s.end();
            return Ok(trainer);
        }
    }
    // A `full` step takes about 24 s here: checkpoint every 50 steps, not every 500.
    let checkpoint_every = match args.checkpoint_every {
        Some(n) => n as usize,
        None if stage == Stage::Full => 50,
        None => cfg.train.eval_interval,
    };
    let trained = gpt::train(&mut trainer, data, s, &ckpt_path, checkpoint_every)?;
    s.set_steps(trained.steps);
    if let Some(step0) = trained
        .evals
        .first()
        .filter(|e| e.iter == 0 && cfg.train.seed == 1337)
    {
        for (split, got) in [("train", step0.train), ("val", step0.val)] {
            if let Some(want) = reference[format!("step0_{split}")].as_f64() {
                s.target(Target::exact(
                    &format!("step-0 {split} loss (PyTorch)"),
                    want,
                    1e-4,
                    got as f64,
                ));
            }
        }
    }
    // A run resumed from a finished checkpoint trains nothing and so reaches no
    // scheduled evaluation: evaluate the final model once, so its targets are real.
    let scheduled_eval = trained.evals.last().copied();
    let last_eval = scheduled_eval.or_else(|| {
        (cfg.train.max_iters > 0).then(|| {
            let e = trainer.estimate_loss(data);
            println!(
                "after resuming at iteration {}: train loss {:.4}, val loss {:.4}",
                e.iter, e.train, e.val
            );
            e
        })
    });
    if let Some(e) = last_eval {
        s.set_final("train", e.train as f64);
        s.set_final("val", e.val as f64);
        let full_run = steps.is_none();
        let band = Target::band(
            stage.lecture_val_target(),
            stage.lecture_val(),
            0.05,
            e.val as f64,
        );
        s.target(if stage.gated() && full_run {
            band
        } else {
            band.ungated()
        });
        // PyTorch's number is for the evaluation the schedule makes, with the
        // lecture's seed: anything else reports it without gating.
        if let Some(want) = torch_val(train_fixture, stage, quick).filter(|_| full_run || quick) {
            let name = format!(
                "val loss after {} iterations (PyTorch, same draws)",
                cfg.train.max_iters
            );
            let t = Target::band(&name, want, torch_tolerance(stage), e.val as f64);
            let gates = stage.gated() && scheduled_eval.is_some() && cfg.train.seed == 1337;
            s.target(if gates { t } else { t.ungated() });
        }
    }
    if trained.steps > 0 {
        let ms = trained.ms_per_step;
        println!("{} iterations, {ms:.1} ms per training step", trained.steps);
        s.target(Target::info("ms per training step", ms));
        // The 6·N + attention count holds for the transformers with blocks.
        if matches!(
            stage,
            Stage::Cpu | Stage::Full | Stage::Layernorm | Stage::Blocks
        ) {
            let gflops = cfg.flops_per_iter(n_params) / (ms / 1000.0) / 1e9;
            println!("{gflops:.1} GFLOP/s in the training steps");
            s.target(Target::info("GFLOP/s in training steps", gflops));
        }
    }
    // The lecture's last lines: 500 characters from a newline.
    let ids = generate(
        &trainer.model,
        &trainer.params,
        &mut trainer.rng.borrow_mut(),
        &[0],
        500,
        opts,
    );
    println!(
        "--- 500 characters from stage {} ---\n{}\n---",
        stage.name(),
        data.vocab.decode(&ids[1..])
    );
    s.end();
    Ok(trainer)
}

/// gpt.py's cost on this machine: 6·N·tokens per step for the weights, 1/3 of
/// that per eval batch, for the iterations this run will do (all 5000 unless
/// `--steps`), at what a `full` step sustains on the lecture's 2-core machine
/// (benches/train_step.rs --stage full: 24 s per step, 48 GFLOP/s, loaded).
fn projected_hours(cfg: &Config, n_params: usize) -> f64 {
    let iters = if cfg.train.max_iters == 0 {
        Config::for_stage(cfg.stage).train.max_iters
    } else {
        cfg.train.max_iters
    };
    let step_flops = cfg.flops_per_iter(n_params);
    let evals = (iters - 1) / cfg.train.eval_interval + 2; // every 500, and the last
    let eval_flops = step_flops / 3.0 * (evals * 2 * cfg.train.eval_iters) as f64;
    let total = step_flops * iters as f64 + eval_flops;
    let gflops = 45.0;
    let hours = total / (gflops * 1e9) / 3600.0;
    println!(
        "projected for {iters} iterations: {:.2} TFLOP per step, {:.1} PFLOP with the evaluations; \
         about {hours:.0} hours at {gflops} GFLOP/s (the video: 15 minutes on an A100)",
        step_flops / 1e12,
        total / 1e15,
    );
    hours
}
