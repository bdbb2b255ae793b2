//! "PyTorch-ifying the code" and the four visualisations: the deep batch-norm
//! net trained for the lecture's 1,001 steps (or 200k with `--full`), its
//! diagnostics, samples, and exercise E02.

use super::{exact, num, SEED};
use batchnorm::diagnostics::{
    line_plot, mean_std, plot_snapshot, print_snapshot, saturated_percent, weight_stats, Series,
    Snapshot,
};
use batchnorm::fold::folded_logits_gap;
use batchnorm::torchified::TorchifiedMlp;
use batchnorm::train::train_torchified;
use batchnorm::{sample_name, split_loss};
use data::makemore::Splits;
use report::{Run, Target};
use serde_json::Value;
use tensor::rng::TorchGenerator;

/// What cell[20] prints after the 1,001-step run, with `manual_seed(2147483647 + 10)`.
const LECTURE_SAMPLES: &str =
    "carpah. qarlileif. jmrix. thty. sacansa. jazhnte. dpn. arciigqeiunellaia. chriiv. kalein. \
dhlm. join. qhinn. sroin. arian. quiqaelogiearyxix. kaeklinsan. ed. ecoia. gtleley.";
/// Each tanh layer's (std, saturation %) after step 1,000 (cell[15]).
const LECTURE_TANH: [(f64, f64); 5] = [
    (0.63, 2.78),
    (0.64, 2.56),
    (0.65, 2.25),
    (0.65, 1.69),
    (0.65, 1.88),
];
/// Each tanh layer's gradient std after step 1,000, as cell[16] prints it.
const LECTURE_GRAD_STD: [f64; 5] = [
    2.640702e-3,
    2.245584e-3,
    2.045742e-3,
    1.983134e-3,
    1.952382e-3,
];
/// Each weight's grad:data ratio after step 1,000 (cell[17]).
const LECTURE_GRAD_DATA: [f64; 7] = [8.0e-3, 4.9e-2, 7.0e-2, 6.1e-2, 5.6e-2, 5.6e-2, 1.16e-1];

/// Trains the torchified net and checks it against the lecture and PyTorch.
pub fn run_stage(
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
    stage.set_source(
        "makemore_part3_bn.ipynb cells 13, 15–17, 19, 20; PyTorch (step 0 and 4, grad std): tests/fixtures/make_fixtures.py",
    );
    let mut g = TorchGenerator::manual_seed(seed);
    let mut net = TorchifiedMlp::new(&mut g, true, 1.0);
    println!("parameters: {}", net.params.count());
    stage.target(Target::string(
        "model B parameters",
        "47024",
        &net.params.count().to_string(),
    ));
    let trained = train_torchified(&mut net, &mut g, &splits.train, steps, stage)?;
    let losses = &trained.losses;
    stage.target(exact(
        gates,
        "model B step-0 loss (PyTorch)",
        3.2870309,
        1e-5,
        losses[0] as f64,
    ));
    if steps >= 5 {
        let step4 = num(&fx["model_b"]["losses"][4]);
        stage.target(exact(
            gates,
            "model B step-4 loss (PyTorch)",
            step4,
            1e-4,
            losses[4] as f64,
        ));
    }
    stage.target(Target::info(
        "model B ms per training step",
        trained.ms_per_step,
    ));

    let snap = Snapshot {
        tanh: trained.last_tanh,
        weights: weight_stats(&net.params),
    };
    println!("-- diagnostics after step {}", steps - 1);
    print_snapshot(&snap);
    let reference = &fx["model_b_1001"]["step1000"];
    let gate = |t: Target| if lecture_run && gates { t } else { t.ungated() };
    // The zip below stops at the shortest list: first check that none is short.
    stage.target(Target::string(
        "model B tanh layers (lecture, PyTorch)",
        &format!("{} {}", LECTURE_TANH.len(), LECTURE_TANH.len()),
        &format!(
            "{} {}",
            snap.tanh.len(),
            reference["tanh"].as_array().map_or(0, |t| t.len())
        ),
    ));
    let reference_tanh = reference["tanh"].as_array().expect("tanh");
    for (t, ((std, sat), (grad_std, r))) in snap.tanh.iter().zip(
        LECTURE_TANH
            .iter()
            .zip(LECTURE_GRAD_STD.into_iter().zip(reference_tanh)),
    ) {
        let i = t.layer;
        let (_, s) = mean_std(&t.out);
        stage.target(gate(Target::band(
            &format!("model B layer {i} tanh std (lecture)"),
            *std,
            0.02,
            s,
        )));
        let saturated = saturated_percent(&t.out);
        let what = format!("model B layer {i} saturated % (lecture)");
        stage.target(gate(Target::band(&what, *sat, 0.5, saturated)));
        let (_, gs) = mean_std(&t.grad);
        let what = format!("model B layer {i} tanh grad std (lecture)");
        stage.target(gate(Target::band(&what, grad_std, 0.1 * grad_std, gs)));
        let torch = num(&r["grad_std"]);
        let what = format!("model B layer {i} tanh grad std (PyTorch, same draws)");
        stage.target(gate(Target::band(&what, torch, 0.1 * torch, gs)));
    }
    stage.target(Target::string(
        "model B weight matrices",
        &LECTURE_GRAD_DATA.len().to_string(),
        &snap.weights.len().to_string(),
    ));
    for (w, expected) in snap.weights.iter().zip(LECTURE_GRAD_DATA) {
        let ratio = mean_std(&w.grad).1 / mean_std(&w.value).1;
        let what = format!("model B {:?} grad:data ratio (lecture)", w.shape);
        stage.target(gate(Target::band(&what, expected, 0.1 * expected, ratio)));
    }
    plot_snapshot(&out_dir, "model-b-", "model B: ", &snap)?;
    let ud_series: Vec<Series> = (0..LECTURE_GRAD_DATA.len())
        .map(|k| {
            let points = trained
                .update_ratio_steps
                .iter()
                .zip(&trained.update_ratios);
            let points = points.map(|(&step, row)| (step as f64, row[k])).collect();
            (format!("param {k} {:?}", snap.weights[k].shape), points)
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
        let what = "model B train loss after 1,001 steps (lecture)";
        stage.target(gate(Target::band(what, 2.4002976417541504, 0.03, train)));
        let what = "model B val loss after 1,001 steps (lecture)";
        stage.target(gate(Target::band(what, 2.3982467651367188, 0.03, val)));
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

    let (folded, gap) = folded_logits_gap(&net, &splits.dev)?;
    println!("E02: {folded} batch norms folded into their Linear; max |logits difference| on val = {gap:e}");
    stage.target(Target::exact(
        "E02: folded vs unfolded logits, max |diff|",
        0.0,
        1e-5,
        gap as f64,
    ));
    Ok(())
}
