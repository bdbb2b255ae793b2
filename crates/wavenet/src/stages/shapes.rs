//! The shape walk-through (cell[9]), samples (cell[15]) and the convolution
//! view of "why convolutions".

use super::{LECTURE_SAMPLES, SEED, STEPS};
use autograd::Graph;
use batchnorm::sample_name;
use data::makemore::Splits;
use report::{Run, Target};
use wavenet::train::Trained;
use wavenet::{conv_logits, Config};

/// Checks the trained model's shapes, samples and convolution view.
pub fn run_stage(run: &mut Run, splits: &Splits, trained: Trained) -> Result<(), String> {
    let cfg = Config::lecture();
    let gates = run.seed() == SEED;
    let full = trained.losses.len() == STEPS;
    let Trained { mut net, mut g, .. } = trained;
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
    stage.set_source("shapes: the video at 00:21:36; samples: makemore_part5_cnn1.ipynb cell[15]; the convolution view: cell[19]");
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

    Ok(())
}
