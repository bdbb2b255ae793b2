//! nanochat's GPT and base_train.py against nanochat's own code at 92d63d4 (fixtures made by
//! `tests/fixtures/base_train/make_fixtures.py`: base_train.py run on a CPU in float32, eager).
//!
//! Eight runs: tiny Shakespeare and a text in five scripts, depths 2 and 4, window patterns `SL`
//! and `L`, 50 steps each (100 forward passes where the batch takes two). For each: every
//! parameter's name, shape and initial bytes (seed 42), the first batch's inputs and targets,
//! every training loss (within 1e-4), Muon's first update of every matrix (within 1e-5 at 64
//! entries, and its norm within 1e-5 relative), and the validation bpb at steps 0, 25 and 50
//! (within 1e-4).
//!
//! At depth 4 the 1e-4 on losses holds only while nanochat agrees with itself. The step-0
//! gradients of the residual and x0 scalars are rounding noise there (zero in exact arithmetic:
//! every block starts as the identity, and the last RMSNorm cancels the scale of x0), AdamW
//! scales that noise up to a full step, and a loss spike near step 20 magnifies it. nanochat on 1
//! thread parts from nanochat on 2 by up to 5.7e-3 (the fixture's "losses_1_thread"). So at
//! depth 4 the losses are gated up to the step where those two part (step 18 to 40), and the bpb
//! at step 0; the run stops there, since nothing after it could fail (issue 60).

#![allow(non_snake_case)] // the tests are named as the runs: shakespeare_d2_SL

use std::path::PathBuf;

use autograd::{ForwardPass, Graph};
use clap::Parser;
use nanochat::base_train::{build_model, validation_bpb, BaseTrain, BaseTrainArgs, Plan};
use nanochat::dataloader::InMemory;
use nanochat::documents::split_text;
use nanochat::gpt::{Gpt, GptConfig};
use nanochat::pickle;
use nanochat::tokenizer::Tokenizer;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tensor::rng::TorchGenerator;

const RUNS: [&str; 8] = [
    "shakespeare_d2_SL",
    "shakespeare_d2_L",
    "shakespeare_d4_SL",
    "shakespeare_d4_L",
    "own_text_d2_SL",
    "own_text_d2_L",
    "own_text_d4_SL",
    "own_text_d4_L",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/base_train")
}

fn record(run: &str) -> Value {
    let path = fixtures().join(format!("{run}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn tokenizer() -> Tokenizer {
    let path = fixtures().join("tokenizer_4096.pkl");
    let state = pickle::loads(&std::fs::read(&path).unwrap()).unwrap();
    Tokenizer::from_state(state, "tokenizer_4096.pkl").unwrap()
}

/// The value of `--name=value` in the run's argv.
fn flag(record: &Value, name: &str) -> String {
    let prefix = format!("--{name}=");
    record["argv"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str().unwrap().strip_prefix(&prefix))
        .next()
        .unwrap_or_else(|| panic!("no --{name}"))
        .to_string()
}

/// base_train's model: depth and window pattern from the run, nanochat's defaults otherwise
/// (aspect ratio 64, head dimension 128).
fn model_of(record: &Value, vocab_size: usize) -> Gpt {
    let depth: usize = flag(record, "depth").parse().unwrap();
    let seq: usize = flag(record, "max-seq-len").parse().unwrap();
    let config = GptConfig::from_depth(
        depth,
        64,
        128,
        seq,
        vocab_size,
        &flag(record, "window-pattern"),
    )
    .unwrap();
    let mut rng = TorchGenerator::manual_seed(42);
    Gpt::new(config, &mut rng).unwrap()
}

fn rows(v: &Value) -> (Vec<u32>, Vec<i32>, usize) {
    let inputs = v["inputs"].as_array().unwrap();
    let flat = |key: &str| -> Vec<i64> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().iter().map(|x| x.as_i64().unwrap()))
            .collect()
    };
    let idx = flat("inputs").into_iter().map(|x| x as u32).collect();
    let targets = flat("targets").into_iter().map(|x| x as i32).collect();
    (idx, targets, inputs.len())
}

#[test]
fn the_initial_weights_are_nanochats_bit_for_bit() {
    let vocab = tokenizer().vocab_size();
    for run in RUNS {
        let record = record(run);
        let model = model_of(&record, vocab);
        let expected = record["params"].as_array().unwrap();
        let ours: Vec<_> = model.params.iter().collect();
        assert_eq!(
            ours.len(),
            expected.len(),
            "{run}: the number of parameters"
        );
        for ((_, p), e) in ours.iter().zip(expected) {
            let name = e[0].as_str().unwrap();
            assert_eq!(p.name, name, "{run}");
            let shape: Vec<usize> = e[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(p.value.shape(), &shape[..], "{run} {name}");
            let bytes: Vec<u8> = p
                .value
                .to_vec()
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            let sha = format!("{:x}", Sha256::digest(&bytes));
            assert_eq!(
                sha,
                e[2].as_str().unwrap(),
                "{run} {name}: the initial values differ"
            );
        }
    }
}

#[test]
fn the_scaling_parameters_counted_from_the_config_are_the_models() {
    let vocab = tokenizer().vocab_size();
    for run in RUNS {
        let model = model_of(&record(run), vocab);
        let group = |name: &str| match name {
            "transformer.wte.weight" => "wte",
            "lm_head.weight" => "lm_head",
            n if n.starts_with("value_embeds.") => "value_embeds",
            n if n.starts_with("transformer.h.") => "transformer_matrices",
            _ => "scalars",
        };
        let mut built = std::collections::HashMap::new();
        for (_, p) in model.params.iter() {
            *built.entry(group(&p.name)).or_insert(0) += p.value.len();
            *built.entry("total").or_insert(0) += p.value.len();
        }
        for (name, counted) in model.config.num_scaling_params() {
            assert_eq!(counted, built[name], "{run}: {name}");
        }
    }
}

#[test]
fn the_first_loss_is_nanochats() {
    let vocab = tokenizer().vocab_size();
    for run in RUNS {
        let record = record(run);
        let model = model_of(&record, vocab);
        let (idx, targets, b) = rows(&record);
        let graph = Graph::new();
        let pass = ForwardPass::eval(&graph, &model.params);
        let loss = model.loss(&pass, &idx, &targets, b).item();
        let expected = record["losses"][0].as_f64().unwrap();
        let gap = (loss as f64 - expected).abs();
        assert!(
            gap <= 1e-5,
            "{run}: first loss {loss} vs nanochat's {expected} (gap {gap:.2e})"
        );
        eprintln!("{run}: first loss {loss} vs {expected} (gap {gap:.1e})");
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BaseTrainArgs,
}

fn args_of(record: &Value) -> BaseTrainArgs {
    let argv = record["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap());
    flags::parse_from::<Cli>(std::iter::once("base_train").chain(argv)).args
}

/// The fixture's documents: the text cut at blank lines, the last tenth (at least one) for
/// validation, each split one parquet file of one row group.
fn sources(record: &Value) -> (InMemory, InMemory) {
    let path = match record["text"].as_str().unwrap() {
        "shakespeare" => data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}")),
        _ => data::workspace_root().join("crates/gpt/tests/fixtures/nanogpt/own_text.txt"),
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let docs: Vec<String> = split_text(&text).map(str::to_string).collect();
    let n_val = (docs.len() / 10).max(1);
    let (train, val) = docs.split_at(docs.len() - n_val);
    (
        InMemory(vec![vec![train.to_vec()]]),
        InMemory(vec![vec![val.to_vec()]]),
    )
}

fn fifty_steps(run: &str) {
    let record = record(run);
    let tokenizer = tokenizer();
    let args = args_of(&record);
    let model = build_model(&args, tokenizer.vocab_size()).unwrap();
    let mut quiet = |_: String| {};
    let mut plan = Plan::new(&args, &model, &mut quiet).unwrap();
    plan.horizon(&args, &mut quiet).unwrap();
    let (train, val) = sources(&record);
    let mut run_state = BaseTrain::new(&args, model, &plan, &tokenizer, train, None).unwrap();
    let (idx, targets, _) = rows(&record);
    assert_eq!(run_state.next.0, idx, "{run}: the first batch's inputs");
    assert_eq!(
        run_state.next.1, targets,
        "{run}: the first batch's targets"
    );

    let token_bytes = tokenizer.token_bytes();
    let expected_losses: Vec<f64> = record["losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let expected_bpb: Vec<f64> = record["val_bpb"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    // nanochat against itself on 1 thread (depth 4 only): where its own two runs part by more
    // than 1e-4, rounding noise has been magnified past what any reimplementation can follow.
    let own = |key: &str| {
        record.get(key).map(|v| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect::<Vec<f64>>()
        })
    };
    let (own_losses, own_bpb) = (own("losses_1_thread"), own("val_bpb_1_thread"));
    let agree_until = match &own_losses {
        Some(own) => own
            .iter()
            .zip(&expected_losses)
            .position(|(a, b)| (a - b).abs() > 1e-4)
            .unwrap_or(own.len()),
        None => expected_losses.len(),
    };
    // Past those losses and the step-0 bpb nothing could be gated: the run stops there.
    let gated_evaluations = if own_bpb.is_some() {
        1
    } else {
        expected_bpb.len()
    };
    let mut losses = Vec::new();
    let mut bpb = Vec::new();
    for step in 0..=plan.num_iterations {
        if step % 25 == 0 && bpb.len() < gated_evaluations {
            bpb.push(
                validation_bpb(
                    &args,
                    &run_state.model,
                    &tokenizer,
                    val.clone(),
                    &token_bytes,
                )
                .unwrap(),
            );
        }
        if step == plan.num_iterations || losses.len() >= agree_until {
            break;
        }
        let before: Vec<(String, Vec<f32>)> = run_state
            .model
            .matrix_params()
            .iter()
            .map(|&id| {
                (
                    run_state.model.params.get(id).name.clone(),
                    run_state.model.params.value(id).to_vec(),
                )
            })
            .collect();
        losses.extend(run_state.train_step().unwrap());
        if step == 0 {
            check_muon_update(run, &record["muon_update"], &before, &run_state.model);
        }
    }
    if agree_until == expected_losses.len() {
        assert_eq!(losses.len(), expected_losses.len(), "{run}: forward passes");
        assert_eq!(bpb.len(), expected_bpb.len(), "{run}: evaluations");
    }
    assert!(losses.len() >= agree_until, "{run}: forward passes");
    let losses: Vec<f64> = losses.iter().map(|&l| l as f64).collect();
    for (i, (&ours, &theirs)) in losses
        .iter()
        .zip(&expected_losses)
        .enumerate()
        .take(agree_until)
    {
        let gap = (ours - theirs).abs();
        assert!(
            gap <= 1e-4,
            "{run}: loss {i}: {ours} vs nanochat's {theirs} (gap {gap:.2e})"
        );
    }
    for (i, (&ours, &theirs)) in bpb
        .iter()
        .zip(&expected_bpb)
        .enumerate()
        .take(gated_evaluations)
    {
        let gap = (ours - theirs).abs();
        assert!(
            gap <= 1e-4,
            "{run}: bpb at step {}: {ours:.6} vs nanochat's {theirs} (gap {gap:.2e})",
            25 * i
        );
    }
    let our_gap = losses
        .iter()
        .zip(&expected_losses)
        .map(|(a, b)| (a - b).abs())
        .fold(0f64, f64::max);
    eprintln!(
        "{run}: {} losses (gated: {agree_until}), the largest gap {our_gap:.1e}; bpb {bpb:.6?} vs {:?}",
        losses.len(),
        &expected_bpb[..bpb.len()]
    );
}

fn check_muon_update(run: &str, expected: &Value, before: &[(String, Vec<f32>)], model: &Gpt) {
    let expected = expected.as_object().unwrap();
    assert_eq!(expected.len(), before.len(), "{run}: Muon's matrices");
    for (id, (name, old)) in model.matrix_params().iter().zip(before) {
        let new = model.params.value(*id).to_vec();
        let update: Vec<f64> = new
            .iter()
            .zip(old)
            .map(|(&a, &b)| a as f64 - b as f64)
            .collect();
        let e = &expected[name.as_str()];
        let norm = update.iter().map(|d| d * d).sum::<f64>().sqrt();
        let their_norm = e["norm"].as_f64().unwrap();
        assert!(
            (norm - their_norm).abs() <= 1e-5 * their_norm.max(1e-12),
            "{run} {name}: the update's norm {norm:e} vs {their_norm:e}"
        );
        for (at, v) in e["at"]
            .as_array()
            .unwrap()
            .iter()
            .zip(e["values"].as_array().unwrap())
        {
            let (at, v) = (at.as_u64().unwrap() as usize, v.as_f64().unwrap());
            assert!(
                (update[at] - v).abs() <= 1e-5,
                "{run} {name}[{at}]: {} vs {v}",
                update[at]
            );
        }
    }
}

macro_rules! fifty_steps {
    ($($name:ident),*) => {$(
        #[test]
        fn $name() {
            fifty_steps(stringify!($name));
        }
    )*};
}

fifty_steps!(
    shakespeare_d2_SL,
    shakespeare_d2_L,
    shakespeare_d4_SL,
    shakespeare_d4_L,
    own_text_d2_SL,
    own_text_d2_L,
    own_text_d4_SL,
    own_text_d4_L
);
