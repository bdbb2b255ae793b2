//! `cargo xtask lecture 2`: the counting model, then the neural bigram for 200 updates.

mod stages;

use clap::{Parser, Subcommand, ValueEnum};
use data::makemore::{bigrams, words};
use makemore_bigram::counting::{average_nll, average_nll_f32_running_sum, BigramCounts};
use makemore_bigram::neural::{train, Encoding, LossFormula, LEARNING_RATE};
use makemore_bigram::sampling::sample_names;
use makemore_bigram::LECTURE_SEED;
use report::{Run, RunArgs, Target};
use std::process::ExitCode;
use tensor::rng::TorchGenerator;

// Each full-batch step allocates and frees tensors of 228,146 × 27 floats; glibc
// hands such blocks back to the OS on every free, and the page faults of taking
// them again cost as much as the arithmetic. mimalloc keeps them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "Lecture 2: the bigram language model (makemore part 1)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the lecture and check its numbers.
    Lecture {
        #[command(flatten)]
        run: RunArgs,
        /// Also run these exercises (repeatable).
        #[arg(long = "exercise", value_enum)]
        exercises: Vec<Exercise>,
        /// Run all five exercises.
        #[arg(long)]
        all_exercises: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Exercise {
    /// A trigram model by counting.
    E01,
    /// Train/dev/test evaluation of the bigram and trigram.
    E02,
    /// Tune the trigram's smoothing on dev.
    E03,
    /// Row indexing instead of one-hot.
    E04,
    /// F.cross_entropy instead of the hand-written softmax.
    E05,
}

/// What PyTorch prints for the lecture's code (tests/fixtures/bigram_torch.json).
const COUNTING_SAMPLES: [&str; 5] = [
    "cexze.",
    "momasurailezitynn.",
    "konimittain.",
    "llayn.",
    "ka.",
];
const NEURAL_SAMPLES: [&str; 5] = [
    "cexze.",
    "momasurailezityha.",
    "konimittain.",
    "llayn.",
    "ka.",
];
const NLL_F64: f64 = 2.4545768201157023;
const NLL_F32_RUNNING_SUM: f64 = 2.4543561935424805;
const LOSS_AT_STEP: [(usize, f64); 4] = [
    (0, 3.768618583679199),
    (19, 2.5886809825897217),
    (99, 2.4901304244995117),
    (199, 2.4829957485198975),
];
const FULL_STEPS: usize = 200;
const QUICK_STEPS: usize = 20;

fn main() -> ExitCode {
    report::main_with(tensor::check_threads_env(), 2, || {
        let Command::Lecture {
            run: args,
            exercises,
            all_exercises,
        } = flags::parse::<Cli>().command;
        lecture(&args, exercises, all_exercises).map_err(|e| e.to_string())
    })
}

fn lecture(
    args: &RunArgs,
    mut exercises: Vec<Exercise>,
    all: bool,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    if all {
        exercises = Exercise::value_variants().to_vec();
    }
    let steps = args
        .steps
        .unwrap_or(if args.quick { QUICK_STEPS } else { FULL_STEPS });
    let config = serde_json::json!({
        "smoothing": 1, "learning_rate": LEARNING_RATE, "regularization": 0.01, "steps": steps,
        "generator": "torch.Generator().manual_seed(seed)", "exercises": format!("{exercises:?}"),
    });
    let mut run = Run::new(2, "makemore-bigram", args, LECTURE_SEED, config)?;
    let seed = run.seed();
    let seeded_as_lecture = seed == LECTURE_SEED;
    let words = words()?;
    let pairs = bigrams(&words);

    // 1. The counting model.
    let counts = BigramCounts::from_pairs(&pairs);
    let p = counts.probabilities(1.0);
    let stage = run.stage("counting");
    stage.set_source("makemore_part1_bigrams.ipynb cells 23, 26, 56; PyTorch: tests/fixtures/make_bigram_fixtures.py");
    stage.target(Target::string(
        "number of bigrams",
        "228146",
        &pairs.len().to_string(),
    ));
    let nll = average_nll(&counts.probabilities_f64(1.0), &pairs);
    stage.set_final("train", nll);
    // Cell 26 printed 2.4765, from a P the notebook had overwritten before;
    // the cell's code on a fresh kernel gives these (the notes' §2).
    stage.target(Target::exact(
        "average NLL, f64 (derived: cell 26's code on a fresh kernel)",
        NLL_F64,
        1e-6,
        nll,
    ));
    // The notebook sums f32 log-probabilities one at a time; the rounding of that
    // running sum is why it prints 2.4543562 rather than 2.4545768.
    let nll_f32 = average_nll_f32_running_sum(&p, &pairs) as f64;
    stage.target(Target::exact(
        "average NLL, f32 running sum (PyTorch, fresh kernel)",
        NLL_F32_RUNNING_SUM,
        1e-6,
        nll_f32,
    ));
    let samples = sample_names(&mut TorchGenerator::manual_seed(seed), 5, |ix| {
        p.narrow(0, ix, 1).reshape(&[27])
    });
    println!("samples: {}", samples.join(" "));
    let target = Target::string(
        "samples (PyTorch, fresh kernel)",
        &COUNTING_SAMPLES.join(" "),
        &samples.join(" "),
    );
    stage.target(if seeded_as_lecture {
        target
    } else {
        target.ungated()
    });

    // 2. The neural bigram, full batch.
    let xs: Vec<usize> = pairs.iter().map(|&(a, _)| a).collect();
    let ys: Vec<usize> = pairs.iter().map(|&(_, b)| b).collect();
    let stage = run.stage("neural");
    stage.set_source("makemore_part1_bigrams.ipynb cells 55–58, run in PyTorch by tests/fixtures/make_bigram_fixtures.py");
    let (model, losses) = train(
        seed,
        &xs,
        &ys,
        steps,
        Encoding::OneHot,
        LossFormula::Lecture,
        stage,
        "neural bigram",
    )?;
    stage.set_final("train", *losses.last().unwrap_or(&f32::NAN) as f64);
    for (step, expected) in LOSS_AT_STEP {
        if let Some(&loss) = losses.get(step) {
            let name = format!("loss after {step} updates");
            let target = Target::exact(&name, expected, 1e-5, loss as f64);
            stage.target(if seeded_as_lecture {
                target
            } else {
                target.ungated()
            });
        }
    }
    let samples = sample_names(&mut TorchGenerator::manual_seed(seed), 5, |ix| {
        model.next_probs(ix)
    });
    println!("samples: {}", samples.join(" "));
    let target = Target::string(
        &format!("samples after {steps} updates"),
        &NEURAL_SAMPLES.join(" "),
        &samples.join(" "),
    );
    stage.target(if seeded_as_lecture && steps == FULL_STEPS {
        target
    } else {
        target.ungated()
    });

    // 3. The exercises, on request.
    if exercises.contains(&Exercise::E01)
        || exercises.contains(&Exercise::E02)
        || exercises.contains(&Exercise::E03)
    {
        stages::trigram_exercises(&mut run, &words, &exercises, nll);
    }
    for (exercise, encoding, formula) in [
        (Exercise::E04, Encoding::RowIndex, LossFormula::Lecture),
        (Exercise::E05, Encoding::OneHot, LossFormula::CrossEntropy),
    ] {
        if !exercises.contains(&exercise) {
            continue;
        }
        let name = format!("{exercise:?}");
        let stage = run.stage(&name);
        let (variant, variant_losses) =
            train(seed, &xs, &ys, steps, encoding, formula, stage, &name)?;
        let maxdiff = losses
            .iter()
            .zip(&variant_losses)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        stage.target(Target::below(
            "max |loss − lecture loss| over all steps",
            1e-5,
            maxdiff as f64,
        ));
        let variant_samples = sample_names(&mut TorchGenerator::manual_seed(seed), 5, |ix| {
            variant.next_probs(ix)
        });
        stage.target(Target::string(
            "samples equal the lecture model's",
            &samples.join(" "),
            &variant_samples.join(" "),
        ));
    }
    Ok(run.finish())
}
