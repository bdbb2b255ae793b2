//! `char-rnn min` against min-char-rnn.py run by numpy
//! (`tests/fixtures/min/make_fixtures.sh`): the initial weights bit for bit,
//! every printed line, and every iteration's loss in full precision.

use char_rnn::min::{self, Hyperparameters, Iteration, Params, Text};
use pyrandom::numpy::RandomState;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/min")
        .join(name)
}

/// The record's lines: `NAME sha256 first three values` for each matrix, then
/// `n loss smooth_loss` for each iteration.
struct Record {
    weights: Vec<(String, String, Vec<f64>)>,
    iterations: Vec<Iteration>,
}

fn read_record(name: &str) -> Record {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut record = Record {
        weights: vec![],
        iterations: vec![],
    };
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f[0].starts_with('W') {
            let firsts = f[2..].iter().map(|v| v.parse().unwrap()).collect();
            record
                .weights
                .push((f[0].to_string(), f[1].to_string(), firsts));
        } else {
            record.iterations.push(Iteration {
                n: f[0].parse().unwrap(),
                loss: f[1].parse().unwrap(),
                smooth_loss: f[2].parse().unwrap(),
            });
        }
    }
    record
}

fn sha256_le(values: &[f64]) -> String {
    let mut hasher = Sha256::new();
    values.iter().for_each(|v| hasher.update(v.to_le_bytes()));
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs the gist for `iters` iterations and checks it against NAME.out and NAME.record.
fn check(name: &str, input: &Path, seed: u32, iters: usize) {
    let text = Text::read(input).unwrap();
    let record = read_record(&format!("{name}.record"));

    let params = Params::init(100, text.vocab_size(), &mut RandomState::seed(seed));
    for (matrix, (label, sha, firsts)) in [&params.wxh, &params.whh, &params.why]
        .iter()
        .zip(&record.weights)
    {
        assert_eq!(&matrix[..3], &firsts[..], "{name}: {label}'s first values");
        assert_eq!(&sha256_le(matrix), sha, "{name}: {label}'s bytes");
    }

    let mut out = Vec::new();
    let mut worst = (0.0f64, 0usize);
    let mut seen = 0;
    min::train(
        &text,
        &Hyperparameters::default(),
        seed,
        Some(iters),
        &mut out,
        |it| {
            let theirs = record.iterations[it.n];
            assert_eq!(theirs.n, it.n);
            let gap = (it.smooth_loss - theirs.smooth_loss)
                .abs()
                .max((it.loss - theirs.loss).abs());
            if gap > worst.0 {
                worst = (gap, it.n);
            }
            seen += 1;
        },
    )
    .unwrap();
    assert_eq!(seen, iters);
    eprintln!(
        "{name}: largest |loss - numpy's| over {iters} iterations: {:e} at iteration {}",
        worst.0, worst.1
    );
    assert_eq!(
        worst.0, 0.0,
        "{name}: a loss differs from numpy's at iteration {}",
        worst.1
    );

    // The gist prints a block every 100 iterations: ours are numpy's first ones.
    let ours = String::from_utf8(out).unwrap();
    let theirs = std::fs::read_to_string(fixture(&format!("{name}.out"))).unwrap();
    assert_eq!(
        ours.matches("\niter ").count(),
        iters.div_ceil(100),
        "{name}: the blocks"
    );
    assert!(ours.ends_with('\n'), "{name}: the last line");
    assert_eq!(ours, theirs[..ours.len()], "{name}: the printed lines");
}

#[test]
fn gist_on_tiny_shakespeare() {
    let input = data::path("tinyshakespeare.txt").unwrap_or_else(|e| panic!("{e}"));
    check("shakespeare", &input, 42, 2000);
}

#[test]
fn gist_on_a_text_beyond_ascii() {
    let text =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../gpt/tests/fixtures/nanogpt/own_text.txt");
    check("own_text", &text, 7, 2000);
}

#[test]
fn too_short_a_text_is_refused() {
    let text = Text::new("abc.txt", "abc");
    let err = min::train(
        &text,
        &Hyperparameters::default(),
        1,
        Some(1),
        &mut Vec::new(),
        |_| {},
    )
    .unwrap_err();
    assert!(
        err.starts_with("abc.txt: the text has 3 characters"),
        "{err}"
    );
}
