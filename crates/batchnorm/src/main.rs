//! `batchnorm lecture --out DIR [--quick] [--steps K] [--ladder] [--full]`: lecture 4 end to end.
//!
//! Stages: model A (step-0 loss, 200k steps, train/val bands), the gain
//! experiments and E01, model B (1,001 steps with the diagnostics PNGs, or
//! 200k with `--full`), and E02. `--ladder` adds the lecture's loss log.
//! Exact targets are PyTorch's numbers for the same draws
//! (`tests/fixtures/lecture4.json`, made by `make_fixtures.py` beside it).

use autograd::{Graph, Params, Sgd};
use batchnorm::deep::DeepNet;
use batchnorm::diagnostics::{histogram, line_plot, mean_std, saturated_percent, Series};
use batchnorm::fold::fold;
use batchnorm::model_a::{Init, ModelA};
use batchnorm::nn::{BatchNorm1d, Linear};
use batchnorm::{every_10k, sample_name, split_loss, step_lr};
use clap::{Args, Parser, Subcommand};
use data::makemore::{Dataset, Splits};
use report::{LogEvery, Run, RunArgs, Stage, Target};
use serde_json::{json, Value};
use std::process::ExitCode;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

const SEED: u64 = 2147483647;
const BATCH: usize = 32;
/// What cell[20] prints after the 1,001-step run, with `manual_seed(2147483647 + 10)`.
const LECTURE_SAMPLES: &str =
    "carpah. qarlileif. jmrix. thty. sacansa. jazhnte. dpn. arciigqeiunellaia. chriiv. kalein. \
dhlm. join. qhinn. sroin. arian. quiqaelogiearyxix. kaeklinsan. ed. ecoia. gtleley.";
const FIXTURE: &str = include_str!("../tests/fixtures/lecture4.json");
/// PyTorch's 200k-step runs of model A and the loss log (`make_fixtures.py --full`).
const FULL_FIXTURE: &str = include_str!("../tests/fixtures/lecture4_full.json");
/// The minibatch losses cell[7] prints every 10,000 steps (`{loss.item():.4f}`).
const NOTEBOOK_PRINTS: [f64; 20] = [
    3.3239, 2.0322, 2.5675, 2.0125, 2.2446, 1.8897, 2.0785, 2.3681, 2.2918, 2.0238, 2.3673, 2.3132,
    1.6414, 1.9311, 2.2231, 2.0027, 2.0997, 2.4949, 2.0199, 2.1707,
];
/// How far our final losses may be from PyTorch's for the same seeded 200k-step
/// run: the two runs make the same draws and track each other to about 1e-6.
const TORCH_TOL: f64 = 1e-4;
/// The exception: the loss log's first row starts from logits of ±30 (loss 27.9),
/// where the first steps' gradients amplify rounding differences, so the two runs
/// part within the first 10,000 steps. Measured at the lecture's seed (the same on
/// 1 and 2 threads): train 2.12188 against 2.12763, val 2.16453 against 2.17018;
/// the gap, 0.0058, rounded up. The next row is 0.05 away.
const ORIGINAL_TORCH_TOL: f64 = 0.01;

#[derive(Parser)]
#[command(version, about = "Lecture 4: activations, gradients, BatchNorm")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the lecture: model A, gain experiments, E01, model B with diagnostics, E02.
    Lecture(LectureArgs),
}

#[derive(Args)]
struct LectureArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Also run the lecture's loss log: five inits, 200k steps each.
    #[arg(long)]
    ladder: bool,
    /// Train model B for the full 200k steps (lr 0.01 from 150k) instead of the lecture's 1,001.
    #[arg(long)]
    full: bool,
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

fn lecture(args: LectureArgs) -> Result<ExitCode, String> {
    let fixture: Value =
        serde_json::from_str(FIXTURE).map_err(|e| format!("lecture4.json: {e}"))?;
    std::fs::create_dir_all(&args.run.out)
        .map_err(|e| format!("{}: {e}", args.run.out.display()))?;
    let config = json!({
        "block_size": 3, "batch_size": BATCH, "generator_seed": SEED,
        "model_a": {"n_embd": 10, "n_hidden": 200, "steps": 200000, "lr": "0.1, 0.01 from 100000",
                    "batchnorm": "unbiased std, no eps, momentum 0.001"},
        "model_b": {"n_embd": 10, "n_hidden": 100, "hidden_layers": 5, "steps": if args.full { 200000 } else { 1001 },
                    "lr": "0.1, 0.01 from 150000", "batchnorm": "unbiased var, eps 1e-5, momentum 0.1"},
        "ladder": args.ladder,
    });
    let mut run = Run::new(4, "batchnorm", &args.run, SEED, config);
    if run.seed() != SEED {
        println!("note: the lecture's generator seed is {SEED}; exact targets assume it");
    }
    let splits = Splits::load(3).map_err(|e| e.to_string())?;
    println!(
        "examples: train {}, val {}, test {}",
        splits.train.len(),
        splits.dev.len(),
        splits.test.len()
    );
    let exact_gates = run.seed() == SEED;

    model_a_stage(&mut run, &splits, &fixture, exact_gates)?;
    gains_stage(&mut run, &splits, &fixture, exact_gates)?;
    zero_init_stage(&mut run, &splits)?;
    model_b_stage(&mut run, &splits, &fixture, exact_gates, args.full)?;
    if args.ladder {
        ladder_stage(&mut run, &splits)?;
    }
    Ok(run.finish())
}

fn num(v: &Value) -> f64 {
    v.as_f64().expect("a number in lecture4.json")
}

/// A target that gates only in the run it describes (full length, lecture seed).
fn gate_full(gates: bool, t: Target) -> Target {
    if gates {
        t
    } else {
        t.ungated()
    }
}

/// [`Target::all_within`] that only gates with the lecture's seed.
fn exact_list(gates: bool, name: &str, expected: &[f64], tol: f64, got: &[f64]) -> Target {
    gate_full(gates, Target::all_within(name, expected, tol, got))
}

/// An exact target that only gates with the lecture's seed.
fn exact(gates: bool, name: &str, expected: f64, tol: f64, got: f64) -> Target {
    gate_full(gates, Target::exact(name, expected, tol, got))
}

// ANCHOR: train_step
/// One SGD step on the loss of a minibatch: zero the grads, backward, `p.data += -lr * p.grad`.
fn sgd_step(params: &mut Params, loss: autograd::Var<'_>, lr: f32) {
    let grads = loss.backward();
    params.zero_grad();
    params.accumulate(&grads);
    Sgd::new(lr).step(params);
}
// ANCHOR_END: train_step

/// Trains model A (or a ladder row) for `steps` steps; returns the per-step losses and the loop's ms/step.
fn train_model_a(
    model: &mut ModelA,
    g: &mut TorchGenerator,
    train: &Dataset,
    steps: usize,
    stage: &mut Stage,
    label: &str,
) -> Result<(Vec<f32>, f64), String> {
    stage.start_training(label, steps, LogEvery::Mean(100));
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let (xb, yb) = train.minibatch(g, BATCH);
        let graph = Graph::new();
        let loss = model.forward(&graph, &xb, true).cross_entropy(&yb);
        let lv = loss.item();
        let lr = step_lr(i, 100_000);
        stage.observe(i, lv, lr)?;
        sgd_step(&mut model.params, loss, lr);
        losses.push(lv);
        if i % 10_000 == 0 {
            println!("{i:7}/{steps:7}: {lv:.4}");
        }
    }
    Ok((losses, stage.finish_training()))
}

fn eval_model_a(model: &mut ModelA, splits: &Splits) -> (f64, f64) {
    let train = split_loss(&splits.train, |graph, xb| model.forward(graph, xb, false));
    let val = split_loss(&splits.dev, |graph, xb| model.forward(graph, xb, false));
    (train, val)
}

/// The PyTorch row of `lecture4_full.json` for one row of the loss log.
fn torch_row(full: &Value, init: Init) -> &Value {
    let name = match init {
        Init::Original => "original",
        Init::FixSoftmax => "fix softmax",
        Init::FixTanh => "fix tanh",
        Init::Kaiming => "kaiming",
        Init::BatchNorm => "batch norm",
    };
    full["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["row"] == name))
        .unwrap_or_else(|| panic!("lecture4_full.json has no row {name:?}"))
}

fn model_a_stage(run: &mut Run, splits: &Splits, fx: &Value, gates: bool) -> Result<(), String> {
    let quick = run.quick();
    let steps = run
        .steps_override()
        .unwrap_or(if quick { 3000 } else { 200_000 });
    let full = steps == 200_000;
    let seed = run.seed();
    let stage = run.stage("model A: MLP + batch norm");
    let mut g = TorchGenerator::manual_seed(seed);
    let mut model = ModelA::new(Init::BatchNorm, &mut g);
    println!("parameters: {}", model.params.count());
    stage.target(Target::string(
        "model A parameters",
        "12097",
        &model.params.count().to_string(),
    ));
    let (losses, ms) = train_model_a(&mut model, &mut g, &splits.train, steps, stage, "model A")?;
    let reference = fx["model_a"]["losses"].as_array().expect("losses");
    stage.target(exact(
        gates,
        "model A step-0 loss (PyTorch)",
        3.3238626,
        1e-5,
        losses[0] as f64,
    ));
    if steps >= 5 {
        stage.target(exact(
            gates,
            "model A step-4 loss (PyTorch)",
            num(&reference[4]),
            1e-4,
            losses[4] as f64,
        ));
    }
    // The prints fall at steps 0, 10,000, …; a shorter run checks the ones it reaches.
    let printed = every_10k(&losses);
    let notebook = &NOTEBOOK_PRINTS[..printed.len().min(NOTEBOOK_PRINTS.len())];
    stage.target(exact_list(
        gates,
        "model A losses printed every 10,000 steps (cell[7], 4 decimals)",
        notebook,
        5e-5,
        &printed,
    ));
    let (train, val) = eval_model_a(&mut model, splits);
    println!("train {train:.6}\nval   {val:.6}");
    stage.set_steps(steps);
    stage.set_final("train", train);
    stage.set_final("val", val);
    stage.target(Target::info("model A ms per training step", ms));
    let band = |name: &str, expected: f64, got: f64| {
        let t = Target::band(name, expected, 0.03, got);
        if full {
            t
        } else {
            t.ungated()
        }
    };
    stage.target(band(
        "model A train loss (lecture)",
        2.0674145221710205,
        train,
    ));
    stage.target(band("model A val loss (lecture)", 2.1056840419769287, val));
    let torch = torch_row(
        &serde_json::from_str(FULL_FIXTURE).expect("JSON"),
        Init::BatchNorm,
    )
    .clone();
    for (split, got) in [("train", train), ("val", val)] {
        stage.target(gate_full(
            full && gates,
            Target::exact(
                &format!("model A {split} loss (PyTorch, same draws)"),
                num(&torch[split]),
                TORCH_TOL,
                got,
            ),
        ));
    }
    if quick && run_is_default(steps, 3000) {
        stage.target(Target::below(
            "model A train loss after 3000 steps",
            2.45,
            train,
        ));
    }
    Ok(())
}

fn run_is_default(steps: usize, default: usize) -> bool {
    steps == default
}

// ---------------------------------------------------------------- gains and E01

fn tanh_outputs(net: &DeepNet) -> Vec<usize> {
    net.layers
        .layers
        .iter()
        .enumerate()
        .filter(|(_, l)| l.name() == "Tanh")
        .map(|(i, _)| i)
        .collect()
}

/// Layer-by-layer statistics of one forward/backward pass.
struct Snapshot {
    /// (layer index, output, output's gradient) for every Tanh but the output layer.
    tanh: Vec<(usize, Tensor, Tensor)>,
    /// (shape, value, gradient) of every 2-D parameter.
    weights: Vec<(Vec<usize>, Tensor, Tensor)>,
}

fn print_snapshot(snap: &Snapshot) {
    for (i, t, _) in &snap.tanh {
        let (m, s) = mean_std(t);
        println!(
            "layer {i} ({:>10}): mean {m:+.2}, std {s:.2}, saturated: {:.2}%",
            "Tanh",
            saturated_percent(t)
        );
    }
    for (i, _, gr) in &snap.tanh {
        let (m, s) = mean_std(gr);
        println!("layer {i} ({:>10}): grad mean {m:+.6}, std {s:e}", "Tanh");
    }
    for (shape, v, gr) in &snap.weights {
        let (m, s) = mean_std(gr);
        println!(
            "weight {:>10} | mean {m:+.6} | std {s:e} | grad:data ratio {:e}",
            format!("{shape:?}"),
            s / mean_std(v).1
        );
    }
}

fn plot_snapshot(
    out: &std::path::Path,
    prefix: &str,
    title: &str,
    snap: &Snapshot,
) -> Result<(), String> {
    let hist = |which: usize| -> Vec<Series> {
        snap.tanh
            .iter()
            .map(|(i, t, gr)| {
                (
                    format!("layer {i} (Tanh)"),
                    histogram(if which == 0 { t } else { gr }, 100),
                )
            })
            .collect()
    };
    line_plot(
        &out.join(format!("{prefix}activations.png")),
        &format!("{title}activation distribution"),
        "tanh output",
        &hist(0),
        None,
    )?;
    line_plot(
        &out.join(format!("{prefix}gradients.png")),
        &format!("{title}gradient distribution"),
        "gradient of tanh output",
        &hist(1),
        None,
    )?;
    let weights: Vec<Series> = snap
        .weights
        .iter()
        .enumerate()
        .map(|(k, (shape, _, gr))| (format!("{k} {shape:?}"), histogram(gr, 100)))
        .collect();
    line_plot(
        &out.join(format!("{prefix}weight-gradients.png")),
        &format!("{title}weights gradient distribution"),
        "gradient",
        &weights,
        None,
    )
}

/// Runs one forward/backward step of `net` on a minibatch and keeps every statistic the lecture looks at.
fn snapshot_step(
    net: &mut DeepNet,
    xb: &[usize],
    yb: &[usize],
) -> (f32, Snapshot, autograd::Grads) {
    let tanh = tanh_outputs(net);
    let graph = Graph::new();
    let outs = net.forward_traced(&graph, xb);
    let loss = outs.last().expect("layers").cross_entropy(yb);
    let kept: Vec<_> = tanh.iter().map(|&i| outs[i].retain_grad()).collect();
    let grads = loss.backward();
    let snap_tanh = tanh
        .iter()
        .zip(&kept)
        .map(|(&i, v)| (i, v.value(), grads.of(*v).expect("retained").clone()))
        .collect();
    (
        loss.item(),
        Snapshot {
            tanh: snap_tanh,
            weights: Vec::new(),
        },
        grads,
    )
}

fn weight_stats(params: &Params) -> Vec<(Vec<usize>, Tensor, Tensor)> {
    params
        .iter()
        .filter(|(_, p)| p.value.ndim() == 2)
        .map(|(_, p)| {
            (
                p.value.shape().to_vec(),
                p.value.clone(),
                p.grad.clone().expect("grad"),
            )
        })
        .collect()
}

fn gains_stage(run: &mut Run, splits: &Splits, fx: &Value, gates: bool) -> Result<(), String> {
    let seed = run.seed();
    let mut plots = Vec::new();
    let stage = run.stage("gain experiments: deep Linear/Tanh stack without batch norm, at init");
    for reference in fx["gains"].as_array().expect("gains") {
        let name = reference["gain"].as_str().expect("gain");
        let gain = match name {
            "5/3" => (5.0f64 / 3.0) as f32,
            other => other.parse::<f32>().map_err(|e| e.to_string())?,
        };
        let mut g = TorchGenerator::manual_seed(seed);
        let mut net = DeepNet::new(&mut g, false, gain);
        let (xb, yb) = splits.train.minibatch(&mut g, BATCH);
        let (loss, mut snap, grads) = snapshot_step(&mut net, &xb, &yb);
        net.params.accumulate(&grads);
        snap.weights = weight_stats(&net.params);
        println!("-- gain {name}: step-0 loss {loss:.4}");
        print_snapshot(&snap);
        stage.target(exact(
            gates,
            &format!("gain {name}: step-0 loss"),
            num(&reference["loss"]),
            1e-5,
            loss as f64,
        ));
        let reference_tanh = reference["step0"]["tanh"].as_array().expect("tanh");
        stage.target(Target::string(
            &format!("gain {name}: tanh layers"),
            &reference_tanh.len().to_string(),
            &snap.tanh.len().to_string(),
        ));
        for ((i, t, gr), r) in snap.tanh.iter().zip(reference_tanh) {
            let (_, s) = mean_std(t);
            let (_, gs) = mean_std(gr);
            stage.target(exact(
                gates,
                &format!("gain {name}: layer {i} tanh std"),
                num(&r["std"]),
                1e-4,
                s,
            ));
            stage.target(exact(
                gates,
                &format!("gain {name}: layer {i} saturated %"),
                num(&r["saturated_percent"]),
                0.1,
                saturated_percent(t),
            ));
            let expected = num(&r["grad_std"]);
            stage.target(exact(
                gates,
                &format!("gain {name}: layer {i} tanh grad std"),
                expected,
                1e-3 * expected,
                gs,
            ));
        }
        plots.push((name.to_string(), snap));
    }
    for (name, snap) in &plots {
        let file = name.replace('/', "-");
        plot_snapshot(
            run.out_dir(),
            &format!("gain-{file}-"),
            &format!("gain {name}, no batch norm: "),
            snap,
        )?;
    }
    Ok(())
}

/// E01: every weight and bias at zero. Only b2 ever gets a gradient: h = tanh(0) = 0
/// blocks W2's gradient, W2 = 0 blocks everything below it. The net learns the
/// unconditional distribution of the next character and stops there.
fn zero_init_stage(run: &mut Run, splits: &Splits) -> Result<(), String> {
    let steps = if run.quick() { 2000 } else { 20_000 };
    let seed = run.seed();
    let stage = run.stage("E01: all-zero init");
    let mut g = TorchGenerator::manual_seed(seed);
    let mut model = ModelA::new(Init::Original, &mut g);
    for (_, p) in model.params.iter_mut() {
        p.value = p.value.mul_scalar(0.0);
    }
    let mut moved = std::collections::BTreeSet::new();
    let names: Vec<String> = model.params.iter().map(|(_, p)| p.name.clone()).collect();
    for i in 0..steps {
        let (xb, yb) = splits.train.minibatch(&mut g, BATCH);
        let graph = Graph::new();
        let loss = model.forward(&graph, &xb, true).cross_entropy(&yb);
        if !loss.item().is_finite() {
            return Err(format!("E01: the loss is {} at step {i}", loss.item()));
        }
        let grads = loss.backward();
        model.params.zero_grad();
        model.params.accumulate(&grads);
        for (id, p) in model.params.iter() {
            if p.grad
                .as_ref()
                .is_some_and(|gr| gr.to_vec().iter().any(|&x| x != 0.0))
            {
                moved.insert(names[id.0].clone());
            }
        }
        Sgd::new(0.1).step(&mut model.params);
    }
    let train = split_loss(&splits.train, |graph, xb| model.forward(graph, xb, false));
    // The best constant prediction: the entropy of the next-character frequencies.
    let mut counts = [0usize; 27];
    for &y in &splits.train.y {
        counts[y] += 1;
    }
    let n = splits.train.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| -(c as f64 / n) * (c as f64 / n).ln())
        .sum();
    let moved: Vec<String> = moved.into_iter().collect();
    println!("after {steps} steps: train loss {train:.4}; entropy of the next-character frequencies {entropy:.4}");
    println!(
        "parameters that ever received a nonzero gradient: {}",
        moved.join(", ")
    );
    stage.set_steps(steps);
    stage.set_final("train", train);
    stage.target(Target::string(
        "E01: parameters with a nonzero gradient",
        "b2",
        &moved.join(","),
    ));
    stage.target(Target::band(
        "E01: train loss vs unigram entropy",
        entropy,
        0.01,
        train,
    ));
    Ok(())
}

// ---------------------------------------------------------------- model B and E02

fn model_b_stage(
    run: &mut Run,
    splits: &Splits,
    fx: &Value,
    gates: bool,
    full: bool,
) -> Result<(), String> {
    let default_steps = if full { 200_000 } else { 1001 };
    let steps = run.steps_override().unwrap_or(default_steps);
    let lecture_run = steps == 1001;
    let seed = run.seed();
    let out_dir = run.out_dir().to_path_buf();
    let stage = run.stage(if full {
        "model B: deep batch-norm net, 200k steps"
    } else {
        "model B: deep batch-norm net, the lecture's 1,001 steps"
    });
    let mut g = TorchGenerator::manual_seed(seed);
    let mut net = DeepNet::new(&mut g, true, 1.0);
    println!("parameters: {}", net.params.count());
    stage.target(Target::string(
        "model B parameters",
        "47024",
        &net.params.count().to_string(),
    ));
    let tanh = tanh_outputs(&net);
    stage.start_training("model B", steps, LogEvery::Mean(100));
    let mut ud: Vec<Vec<f64>> = Vec::new();
    let mut losses = Vec::new();
    let mut last = None;
    for i in 0..steps {
        let (xb, yb) = splits.train.minibatch(&mut g, BATCH);
        let graph = Graph::new();
        let outs = net.forward_traced(&graph, &xb);
        let loss = outs.last().expect("layers").cross_entropy(&yb);
        let lv = loss.item();
        let lr = step_lr(i, 150_000);
        stage.observe(i, lv, lr)?;
        let is_last = i + 1 == steps;
        let kept: Vec<_> = if is_last {
            tanh.iter().map(|&k| outs[k].retain_grad()).collect()
        } else {
            Vec::new()
        };
        let grads = loss.backward();
        if is_last {
            last = Some(
                tanh.iter()
                    .zip(&kept)
                    .map(|(&k, v)| (k, v.value(), grads.of(*v).expect("retained").clone()))
                    .collect::<Vec<_>>(),
            );
        }
        net.params.zero_grad();
        net.params.accumulate(&grads);
        Sgd::new(lr).step(&mut net.params);
        // update:data ratio of every 2-D parameter, after the update (cell[14]).
        if steps <= 10_000 || i % 100 == 0 {
            let row = net
                .params
                .iter()
                .filter(|(_, p)| p.value.ndim() == 2)
                .map(|(_, p)| {
                    let update = mean_std(&p.grad.as_ref().expect("grad").mul_scalar(lr)).1;
                    (update / mean_std(&p.value).1).log10()
                })
                .collect();
            ud.push(row);
        }
        losses.push(lv);
        if i % 10_000 == 0 {
            println!("{i:7}/{steps:7}: {lv:.4}");
        }
    }
    let ms = stage.finish_training();
    stage.target(exact(
        gates,
        "model B step-0 loss (PyTorch)",
        3.2870309,
        1e-5,
        losses[0] as f64,
    ));
    if steps >= 5 {
        stage.target(exact(
            gates,
            "model B step-4 loss (PyTorch)",
            num(&fx["model_b"]["losses"][4]),
            1e-4,
            losses[4] as f64,
        ));
    }
    stage.target(Target::info("model B ms per training step", ms));

    let snap = Snapshot {
        tanh: last.unwrap_or_default(),
        weights: weight_stats(&net.params),
    };
    println!("-- diagnostics after step {}", steps - 1);
    print_snapshot(&snap);
    let lecture_tanh = [
        (0.63, 2.78),
        (0.64, 2.56),
        (0.65, 2.25),
        (0.65, 1.69),
        (0.65, 1.88),
    ];
    let reference = &fx["model_b_1001"]["step1000"];
    let gate = |t: Target| if lecture_run && gates { t } else { t.ungated() };
    let reference_tanh = reference["tanh"].as_array().expect("tanh");
    // The zips below stop at the shortest list: first check that none is short.
    stage.target(Target::string(
        "model B tanh layers (lecture, PyTorch)",
        &format!("{} {}", lecture_tanh.len(), lecture_tanh.len()),
        &format!("{} {}", snap.tanh.len(), reference_tanh.len()),
    ));
    for ((i, t, gr), ((std, sat), r)) in snap
        .tanh
        .iter()
        .zip(lecture_tanh.iter().zip(reference_tanh))
    {
        let (_, s) = mean_std(t);
        stage.target(gate(Target::band(
            &format!("model B layer {i} tanh std (lecture)"),
            *std,
            0.02,
            s,
        )));
        stage.target(gate(Target::band(
            &format!("model B layer {i} saturated % (lecture)"),
            *sat,
            0.5,
            saturated_percent(t),
        )));
        let (_, gs) = mean_std(gr);
        let expected = num(&r["grad_std"]);
        stage.target(gate(Target::band(
            &format!("model B layer {i} tanh grad std (lecture)"),
            expected,
            0.1 * expected,
            gs,
        )));
    }
    let lecture_ratio = [8.0e-3, 4.9e-2, 7.0e-2, 6.1e-2, 5.6e-2, 5.6e-2, 1.16e-1];
    stage.target(Target::string(
        "model B weight matrices",
        &lecture_ratio.len().to_string(),
        &snap.weights.len().to_string(),
    ));
    for ((shape, v, gr), expected) in snap.weights.iter().zip(lecture_ratio) {
        let ratio = mean_std(gr).1 / mean_std(v).1;
        stage.target(gate(Target::band(
            &format!("model B {shape:?} grad:data ratio (lecture)"),
            expected,
            0.1 * expected,
            ratio,
        )));
    }
    plot_snapshot(&out_dir, "model-b-", "model B: ", &snap)?;
    let ud_series: Vec<Series> = (0..lecture_ratio.len())
        .map(|k| {
            let every = if steps <= 10_000 { 1 } else { 100 };
            (
                format!("param {k} {:?}", snap.weights[k].0),
                ud.iter()
                    .enumerate()
                    .map(|(j, row)| ((j * every) as f64, row[k]))
                    .collect(),
            )
        })
        .collect();
    line_plot(
        &out_dir.join("model-b-update-ratio.png"),
        "model B: log10 update:data ratio (guide: 1e-3)",
        "step",
        &ud_series,
        Some(-3.0),
    )?;

    for layer in &mut net.layers.layers {
        layer.set_training(false);
    }
    let train = split_loss(&splits.train, |graph, xb| net.forward(graph, xb));
    let val = split_loss(&splits.dev, |graph, xb| net.forward(graph, xb));
    println!("train {train:.6}\nval   {val:.6}");
    stage.set_steps(steps);
    stage.set_final("train", train);
    stage.set_final("val", val);
    if full {
        stage.target(Target::info("model B train loss after 200k steps", train));
        stage.target(Target::info("model B val loss after 200k steps", val));
    } else {
        stage.target(gate(Target::band(
            "model B train loss after 1,001 steps (lecture)",
            2.4002976417541504,
            0.03,
            train,
        )));
        stage.target(gate(Target::band(
            "model B val loss after 1,001 steps (lecture)",
            2.3982467651367188,
            0.03,
            val,
        )));
    }

    let mut g = TorchGenerator::manual_seed(SEED + 10);
    let names: Vec<String> = (0..20)
        .map(|_| sample_name(&mut g, 3, |graph, ctx| net.forward(graph, ctx)))
        .collect();
    println!("samples: {}", names.join(" "));
    // PyTorch samples these from the same weights (cell[20]); a rounding drift in training would change them.
    stage.target(gate(Target::string(
        "model B samples (lecture)",
        LECTURE_SAMPLES,
        &names.join(" "),
    )));

    e02_fold(stage, &net, &splits.dev)?;
    Ok(())
}

// ANCHOR: e02
/// E02: the folded network (Linear with bias, Tanh) against model B in eval mode, on the val split.
fn e02_fold(stage: &mut Stage, net: &DeepNet, val: &Dataset) -> Result<(), String> {
    let layers = &net.layers.layers;
    let mut folded = Vec::new();
    let mut k = 0;
    while k < layers.len() {
        let linear = layers[k]
            .as_any()
            .downcast_ref::<Linear>()
            .ok_or("E02: expected a Linear")?;
        let bn = layers[k + 1]
            .as_any()
            .downcast_ref::<BatchNorm1d>()
            .ok_or("E02: expected a BatchNorm1d")?;
        folded.push(fold(linear, bn, &net.params));
        k += if k + 2 < layers.len() { 3 } else { 2 };
    }
    let (xv, _) = val.range(0, val.len());
    let n = val.len();
    let graph = Graph::no_grad();
    let mut unfolded_net = NetRef(net);
    let reference = unfolded_net.logits(&graph, &xv);
    let c = net.params.value(net.c);
    let mut x = c.index_rows(&xv, &[n, 3]).reshape(&[n, 30]); // (N, 30)
    for (j, (w, b)) in folded.iter().enumerate() {
        x = x.matmul(w).add(b); // (N, fan_out)
        if j + 1 < folded.len() {
            x = x.tanh();
        }
    }
    let maxdiff = x
        .sub(&reference)
        .to_vec()
        .iter()
        .fold(0.0f32, |m, d| m.max(d.abs()));
    println!("E02: {} batch norms folded into their Linear; max |logits difference| on val = {maxdiff:e}", folded.len());
    stage.target(Target::exact(
        "E02: folded vs unfolded logits, max |diff|",
        0.0,
        1e-5,
        maxdiff as f64,
    ));
    Ok(())
}
// ANCHOR_END: e02

/// Eval-mode logits of model B through a shared reference (batch norm in eval mode changes nothing).
struct NetRef<'a>(&'a DeepNet);

impl NetRef<'_> {
    fn logits(&mut self, graph: &Graph, xb: &[usize]) -> Tensor {
        let net = self.0;
        let n = xb.len() / 3;
        let mut x = graph
            .param(&net.params, net.c)
            .index_rows(xb, &[n, 3])
            .reshape(&[n, 30])
            .value();
        for layer in &net.layers.layers {
            x = if let Some(l) = layer.as_any().downcast_ref::<Linear>() {
                x.matmul(net.params.value(l.weight))
            } else if let Some(bn) = layer.as_any().downcast_ref::<BatchNorm1d>() {
                let xhat = x
                    .sub(&bn.running_mean)
                    .div(&bn.running_var.add_scalar(bn.eps).sqrt());
                net.params
                    .value(bn.gamma)
                    .mul(&xhat)
                    .add(net.params.value(bn.beta))
            } else {
                x.tanh()
            };
        }
        x
    }
}

// ---------------------------------------------------------------- ladder

fn ladder_stage(run: &mut Run, splits: &Splits) -> Result<(), String> {
    let steps = run
        .steps_override()
        .unwrap_or(if run.quick() { 3000 } else { 200_000 });
    let full = steps == 200_000;
    let seed = run.seed();
    let gates = run.seed() == SEED;
    let torch: Value = serde_json::from_str(FULL_FIXTURE).expect("JSON");
    let stage = run.stage("loss log (--ladder)");
    let mut rows = Vec::new();
    for init in Init::ALL {
        let mut g = TorchGenerator::manual_seed(seed);
        let mut model = ModelA::new(init, &mut g);
        println!("-- {} ({} parameters)", init.label(), model.params.count());
        let (losses, ms) = train_model_a(
            &mut model,
            &mut g,
            &splits.train,
            steps,
            stage,
            init.label(),
        )?;
        let (train, val) = eval_model_a(&mut model, splits);
        let (lt, lv) = init.lecture_losses();
        rows.push((init, train, val));
        let reference = torch_row(&torch, init);
        let (printed, tol) = if init == Init::Original {
            (vec![losses[0] as f64], ORIGINAL_TORCH_TOL) // see ORIGINAL_TORCH_TOL
        } else {
            (every_10k(&losses), TORCH_TOL)
        };
        let printed_what = if init == Init::Original {
            "step-0 loss"
        } else {
            "losses every 10,000 steps"
        };
        let torch_printed: Vec<f64> = reference["printed"]
            .as_array()
            .expect("printed")
            .iter()
            .map(num)
            .take(printed.len())
            .collect();
        stage.target(exact_list(
            gates,
            &format!("ladder {}: {printed_what} (PyTorch)", init.label()),
            &torch_printed,
            TORCH_TOL,
            &printed,
        ));
        stage.target(Target::string(
            &format!("ladder {}: parameters (PyTorch)", init.label()),
            &reference["params"].to_string(),
            &model.params.count().to_string(),
        ));
        for (split, got, expected) in [("train", train, lt), ("val", val, lv)] {
            let t = Target::band(
                &format!("ladder {}: {split} (lecture)", init.label()),
                expected,
                0.03,
                got,
            );
            stage.target(if full { t } else { t.ungated() });
            stage.target(gate_full(
                full && gates,
                Target::exact(
                    &format!("ladder {}: {split} (PyTorch, same draws)", init.label()),
                    num(&reference[split]),
                    tol,
                    got,
                ),
            ));
        }
        stage.target(Target::info(
            &format!("ladder {}: ms per step", init.label()),
            ms,
        ));
    }
    println!(
        "\n| change | ours train | ours val | lecture train | lecture val |\n|---|---|---|---|---|"
    );
    for (init, train, val) in rows {
        let (lt, lv) = init.lecture_losses();
        println!(
            "| {} | {train:.4} | {val:.4} | {lt:.4} | {lv:.4} |",
            init.label()
        );
    }
    stage.set_steps(steps * Init::ALL.len());
    Ok(())
}
