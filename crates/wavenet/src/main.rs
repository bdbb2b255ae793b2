//! `wavenet lecture --out DIR [--quick] [--seed S] [--steps K] [--ladder]`: lecture 6 end to end.
//!
//! Builds the hierarchical model, checks the parameter count and PyTorch's
//! step-0 loss, trains 200k steps, evaluates in eval mode, plots the loss as
//! means over blocks of 1000 steps, prints the shape walk-through and samples,
//! and checks the convolution view. `--ladder` adds the performance log.

use autograd::Graph;
use batchnorm::diagnostics::line_plot;
use batchnorm::{every_10k, sample_name, split_loss};
use clap::{Args, Parser, Subcommand};
use data::makemore::Splits;
use report::{Run, RunArgs, Target};
use serde_json::{json, Value};
use std::process::ExitCode;
use wavenet::train::{train, Trained, BATCH_SIZE};
use wavenet::{conv_logits, Config, WaveNet};

const SEED: u64 = 42;
const STEPS: usize = 200_000;
/// What cell[15] prints after the 200k-step run.
const LECTURE_SAMPLES: &str =
    "arlij. chetta. heago. rocklei. hendrix. jamylie. broxin. denish. anslibt. marianah. \
astavia. annayve. aniah. jayce. nodiel. remita. niyelle. jaylene. aiyan. aubreana.";
const FIXTURE: &str = include_str!("../tests/fixtures/lecture6.json");
/// PyTorch's 200k-step runs of every row of the performance log (`make_fixtures.py --full`).
const FULL_FIXTURE: &str = include_str!("../tests/fixtures/lecture6_full.json");
/// The minibatch losses cell[10] prints every 10,000 steps (`{loss.item():.4f}`).
const NOTEBOOK_PRINTS: [f64; 20] = [
    3.3167, 2.0576, 2.0723, 2.5134, 2.1476, 1.7836, 2.2592, 1.9331, 1.6875, 2.0395, 1.7736, 1.9570,
    1.7465, 1.8126, 1.7406, 1.7466, 1.8806, 1.6266, 1.6476, 1.8555,
];
/// How far our losses may be from PyTorch's for the same seeded run: the two
/// make the same draws and stay within about 1e-5 of each other for 200k steps.
const TORCH_TOL: f64 = 1e-4;
/// The exception is the performance log's row with the batch-norm bug. Its
/// statistics run over the 32 examples of each position, and where a whole batch
/// starts with the same context (the leading `.`s) the batch variance is nearly
/// zero, so `1/sqrt(var + eps)` magnifies the last bit of every sum. The two runs
/// part within the first 1,000 steps (mean loss 2.50200 against 2.50177) and end
/// at train 1.93961 / val 2.02611 against PyTorch's 1.94070 / 2.02945, measured at
/// seed 42, the same on 1 and 2 threads. The gap, 0.0034, rounded up; the fixed
/// row ends 0.009 lower.
const BUG_ROW_TORCH_TOL: f64 = 0.005;
/// The notebook prints 4 decimals. Two of its twenty values sit on a rounding
/// boundary: PyTorch 2.15 running the same code here prints 1.9569 and 1.8805
/// where the notebook shows 1.9570 and 1.8806. So: within one unit of the last digit.
const NOTEBOOK_TOL: f64 = 1e-4;

/// The row of a fixture's `rows` with this name (the performance log's rows).
fn fixture_row<'a>(fixture: &'a Value, file: &str, name: &str) -> Result<&'a Value, String> {
    fixture["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name))
        .ok_or_else(|| format!("{file} has no row named {name:?}"))
}

/// PyTorch's prints for the steps this run reached.
fn torch_prints(row: &Value, n: usize) -> Vec<f64> {
    row["printed"]
        .as_array()
        .map(|xs| {
            xs.iter()
                .take(n)
                .map(|x| x.as_f64().unwrap_or(f64::NAN))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Parser)]
#[command(version, about = "Lecture 6: building a WaveNet")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the lecture: the hierarchical model, 200k steps, eval, samples, the convolution view.
    Lecture(LectureArgs),
}

#[derive(Args)]
struct LectureArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Also run the lecture's performance log: five configurations, 200k steps each.
    #[arg(long)]
    ladder: bool,
}

fn main() -> ExitCode {
    let Command::Lecture(args) = Cli::parse().command;
    match lecture(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn evaluate(net: &mut WaveNet, splits: &Splits) -> (f64, f64) {
    net.set_training(false);
    let train = split_loss(&splits.train, |graph, xb| net.forward(graph, xb));
    let val = split_loss(&splits.dev, |graph, xb| net.forward(graph, xb));
    (train, val)
}

fn lecture(args: LectureArgs) -> Result<ExitCode, String> {
    let fixture: Value =
        serde_json::from_str(FIXTURE).map_err(|e| format!("lecture6.json: {e}"))?;
    std::fs::create_dir_all(&args.run.out)
        .map_err(|e| format!("{}: {e}", args.run.out.display()))?;
    let cfg = Config::lecture();
    let config = json!({
        "block_size": cfg.block_size, "n_embd": cfg.n_embd, "n_hidden": cfg.n_hidden, "batch_size": BATCH_SIZE,
        "steps": STEPS, "lr": "0.1, 0.01 from 150000", "seed": "torch.manual_seed(42): layers, then minibatches",
        "batchnorm": "over (0, 1) for 3-D input, unbiased var, eps 1e-5, momentum 0.1", "ladder": args.ladder,
    });
    let mut run = Run::new(6, "wavenet", &args.run, SEED, config);
    let seed = run.seed();
    let gates = seed == SEED;
    let quick = run.quick();
    let steps = run
        .steps_override()
        .unwrap_or(if quick { 2000 } else { STEPS });
    let full = steps == STEPS;
    let splits = Splits::load(cfg.block_size).map_err(|e| e.to_string())?;
    println!(
        "examples: train {}, val {}, test {}",
        splits.train.len(),
        splits.dev.len(),
        splits.test.len()
    );
    let reference = fixture_row(&fixture, "lecture6.json", cfg.name)?;
    let full_fixture: Value = serde_json::from_str(FULL_FIXTURE).expect("fixture is JSON");
    let torch = fixture_row(&full_fixture, "lecture6_full.json", cfg.name)?;

    let stage = run.stage("hierarchical model");
    let Trained {
        mut net,
        mut g,
        losses,
        ms_per_step,
    } = train(cfg, seed, &splits.train, steps, stage, "wavenet")?;
    stage.target(Target::string(
        "parameters",
        "76579",
        &net.params.count().to_string(),
    ));
    let exact = |name: &str, expected: f64, tol: f64, got: f64| {
        let t = Target::exact(name, expected, tol, got);
        if gates {
            t
        } else {
            t.ungated()
        }
    };
    let exact_list = |name: &str, expected: &[f64], tol: f64, got: &[f64]| {
        let t = Target::all_within(name, expected, tol, got);
        if gates {
            t
        } else {
            t.ungated()
        }
    };
    stage.target(exact(
        "step-0 loss (PyTorch)",
        3.3167155,
        1e-5,
        losses[0] as f64,
    ));
    if steps >= 5 {
        stage.target(exact(
            "step-4 loss (PyTorch)",
            reference["losses"][4].as_f64().unwrap_or(f64::NAN),
            1e-4,
            losses[4] as f64,
        ));
    }
    let printed = every_10k(&losses);
    stage.target(exact_list(
        "losses printed every 10,000 steps (cell[10], 4 decimals)",
        &NOTEBOOK_PRINTS[..printed.len().min(NOTEBOOK_PRINTS.len())],
        NOTEBOOK_TOL,
        &printed,
    ));
    stage.target(exact_list(
        "losses every 10,000 steps (PyTorch, same draws)",
        &torch_prints(torch, printed.len()),
        TORCH_TOL,
        &printed,
    ));
    stage.target(Target::info("ms per training step", ms_per_step));
    let (train_loss, val_loss) = evaluate(&mut net, &splits);
    println!("train {train_loss:.6}\nval   {val_loss:.6}");
    stage.set_steps(steps);
    stage.set_final("train", train_loss);
    stage.set_final("val", val_loss);
    let band = |name: &str, expected: f64, got: f64| {
        let t = Target::band(name, expected, 0.03, got);
        if full {
            t
        } else {
            t.ungated()
        }
    };
    stage.target(band("train loss (lecture)", cfg.lecture.0, train_loss));
    stage.target(band("val loss (lecture)", cfg.lecture.1, val_loss));
    for (split, got) in [("train", train_loss), ("val", val_loss)] {
        let t = Target::exact(
            &format!("{split} loss (PyTorch, same draws)"),
            torch[split].as_f64().unwrap_or(f64::NAN),
            TORCH_TOL,
            got,
        );
        stage.target(if full && gates { t } else { t.ungated() });
    }
    if quick && steps == 2000 {
        stage.target(Target::below(
            "train loss after 2000 steps",
            2.45,
            train_loss,
        ));
    }

    // The loss curve as the lecture plots it: means over blocks of 1000 steps.
    let blocks: Vec<(f64, f64)> = losses
        .chunks_exact(1000)
        .enumerate()
        .map(|(k, c)| {
            (
                k as f64,
                c.iter().map(|&l| (l as f64).log10()).sum::<f64>() / 1000.0,
            )
        })
        .collect();
    if !blocks.is_empty() {
        line_plot(
            &run.out_dir().join("loss-blocks.png"),
            "log10 loss, mean over blocks of 1000 steps",
            "block of 1000 steps",
            &[("train".to_string(), blocks)],
            None,
        )?;
    }

    // The shape walk-through, on the first four training contexts.
    let (x4, _) = splits.train.range(0, 4);
    let shapes = net.shapes(&x4);
    let mut walk = Vec::new();
    for (name, shape) in &shapes {
        println!("{name:>18} : {shape:?}");
        walk.push(format!("{name} {shape:?}"));
    }
    let expected_walk = "Embedding [4, 8, 24]; FlattenConsecutive [4, 4, 48]; Linear [4, 4, 128]; BatchNorm1d [4, 4, 128]; Tanh [4, 4, 128]; \
FlattenConsecutive [4, 2, 256]; Linear [4, 2, 128]; BatchNorm1d [4, 2, 128]; Tanh [4, 2, 128]; \
FlattenConsecutive [4, 256]; Linear [4, 128]; BatchNorm1d [4, 128]; Tanh [4, 128]; Linear [4, 27]";
    let stage = run.stage("shapes, samples and the convolution view");
    stage.target(Target::string(
        "layer shapes for a batch of 4",
        expected_walk,
        &walk.join("; "),
    ));

    // Samples continue from the global generator, as the notebook's cell[15] does.
    net.set_training(false);
    let names: Vec<String> = (0..20)
        .map(|_| sample_name(&mut g, cfg.block_size, |graph, ctx| net.forward(graph, ctx)))
        .collect();
    println!("samples: {}", names.join(" "));
    // PyTorch's global generator after the same 200k steps draws these (cell[15]);
    // a rounding drift anywhere in training would change them.
    let t = Target::string(
        "samples after the full run (lecture)",
        LECTURE_SAMPLES,
        &names.join(" "),
    );
    stage.target(if full && gates { t } else { t.ungated() });

    // Why convolutions: Xtr[7:15] are the 8 contexts of "diondre"; one pass over the padded word gives all 8.
    let (x8, _) = splits.train.range(7, 15);
    let graph = Graph::no_grad();
    let separate = net.forward(&graph, &x8).value(); // (8, 27)
    let mut word = x8[..cfg.block_size].to_vec();
    word.extend(splits.train.y[7..15].iter().take(7));
    let conv = conv_logits(&net, &word); // (8, 27)
    let maxdiff = separate
        .sub(&conv)
        .to_vec()
        .iter()
        .fold(0.0f32, |m, d| m.max(d.abs()));
    println!("convolution view of \"diondre\": 8 positions in one pass, max |logits difference| {maxdiff:e}");
    stage.target(Target::exact(
        "convolution view vs 8 forward passes, max |diff|",
        0.0,
        1e-5,
        maxdiff as f64,
    ));

    if args.ladder {
        ladder(&mut run, &fixture, gates)?;
    }
    Ok(run.finish())
}

fn ladder(run: &mut Run, fixture: &Value, gates: bool) -> Result<(), String> {
    let steps = run
        .steps_override()
        .unwrap_or(if run.quick() { 2000 } else { STEPS });
    let full = steps == STEPS;
    let seed = run.seed();
    let full_fixture: Value = serde_json::from_str(FULL_FIXTURE).expect("fixture is JSON");
    let stage = run.stage("performance log (--ladder)");
    let mut rows = Vec::new();
    for config in Config::LADDER.iter() {
        let reference = fixture_row(fixture, "lecture6.json", config.name)?;
        let torch = fixture_row(&full_fixture, "lecture6_full.json", config.name)?;
        let splits = Splits::load(config.block_size).map_err(|e| e.to_string())?;
        let mut trained = train(*config, seed, &splits.train, steps, stage, config.name)?;
        let params = trained.net.params.count();
        stage.target(Target::string(
            &format!("{}: parameters", config.name),
            &reference["params"].to_string(),
            &params.to_string(),
        ));
        let t = Target::exact(
            &format!("{}: step-0 loss (PyTorch)", config.name),
            reference["losses"][0].as_f64().unwrap_or(f64::NAN),
            1e-5,
            trained.losses[0] as f64,
        );
        stage.target(if gates { t } else { t.ungated() });
        // See BUG_ROW_TORCH_TOL: that row's losses part from PyTorch's after step 0
        // (checked above), so only its final losses are compared, more loosely.
        let tol = if config.batchnorm_bug {
            BUG_ROW_TORCH_TOL
        } else {
            let printed = every_10k(&trained.losses);
            let t = Target::all_within(
                &format!("{}: losses every 10,000 steps (PyTorch)", config.name),
                &torch_prints(torch, printed.len()),
                TORCH_TOL,
                &printed,
            );
            stage.target(if gates { t } else { t.ungated() });
            TORCH_TOL
        };
        let (train_loss, val_loss) = evaluate(&mut trained.net, &splits);
        for (split, got, expected) in [
            ("train", train_loss, config.lecture.0),
            ("val", val_loss, config.lecture.1),
        ] {
            let t = Target::band(
                &format!("{}: {split} (lecture)", config.name),
                expected,
                0.03,
                got,
            );
            stage.target(if full { t } else { t.ungated() });
            let t = Target::exact(
                &format!("{}: {split} (PyTorch, same draws)", config.name),
                torch[split].as_f64().unwrap_or(f64::NAN),
                tol,
                got,
            );
            stage.target(if full && gates { t } else { t.ungated() });
        }
        stage.target(Target::info(
            &format!("{}: ms per step", config.name),
            trained.ms_per_step,
        ));
        rows.push((config, params, train_loss, val_loss));
    }
    println!("\n| run | params | ours train / val | lecture train / val |\n|---|---|---|---|");
    for (c, params, t, v) in rows {
        println!(
            "| {} | {params} | {t:.3} / {v:.3} | {:.3} / {:.3} |",
            c.name, c.lecture.0, c.lecture.1
        );
    }
    stage.set_steps(steps * Config::LADDER.len());
    Ok(())
}
