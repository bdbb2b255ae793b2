//! `TorchGenerator` against PyTorch's own output (tests/fixtures/rng_torch.json,
//! made by make_rng_fixtures.py). Each fixture case is a seed and a list of calls
//! on one generator; the test replays the calls in order and wants every float
//! bit-equal and every integer equal.

use serde_json::Value;
use tensor::rng::{StateError, TorchGenerator, STATE_WORDS};
use tensor::Tensor;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rng_torch.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).expect("rng_torch.json is valid JSON")
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect()
}

fn f32s(v: &Value) -> Vec<f32> {
    // Every value was an f32 written through float(), so the f64 narrows exactly.
    v.as_array()
        .expect("floats")
        .iter()
        .map(|x| x.as_f64().expect("float") as f32)
        .collect()
}

fn i64s(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("ints")
        .iter()
        .map(|x| x.as_i64().expect("int"))
        .collect()
}

fn num(v: &Value) -> f32 {
    v.as_f64().expect("number") as f32
}

fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "{what}: element {i} is {g:e}, torch has {w:e} (diff {:e})",
            g - w
        );
    }
}

/// nn.Linear's bounds, computed in f64 as Python does and rounded once, like
/// `uniform_`'s cast: `kaiming_uniform_(a=sqrt(5))` for the weight, `1/sqrt(fan_in)` for the bias.
fn linear_init_bounds(fan_in: usize) -> (f32, f32) {
    let slope = 5f64.sqrt();
    let gain = (2.0 / (1.0 + slope.powi(2))).sqrt();
    let weight = 3f64.sqrt() * (gain / (fan_in as f64).sqrt());
    let bias = 1.0 / (fan_in as f64).sqrt();
    (weight as f32, bias as f32)
}

/// Replays one fixture case on a fresh generator; returns how many calls it checked.
fn replay(case: &Value) -> usize {
    let name = case["name"].as_str().expect("name");
    let seed = case["seed"].as_u64().expect("seed");
    let mut g = TorchGenerator::manual_seed(seed);
    let ops = case["ops"].as_array().expect("ops");
    for (k, op) in ops.iter().enumerate() {
        let kind = op["op"].as_str().expect("op");
        let what = format!("{name} call {k} ({kind})");
        match kind {
            "rand" => assert_bits(
                &what,
                &g.rand(&shape(&op["shape"])).to_vec(),
                &f32s(&op["out"]),
            ),
            "randn" => assert_bits(
                &what,
                &g.randn(&shape(&op["shape"])).to_vec(),
                &f32s(&op["out"]),
            ),
            "normal" => {
                let t = g.normal(num(&op["mean"]), num(&op["std"]), &shape(&op["shape"]));
                assert_bits(&what, &t.to_vec(), &f32s(&op["out"]));
            }
            "uniform" => {
                let t = g.uniform(num(&op["low"]), num(&op["high"]), &shape(&op["shape"]));
                assert_bits(&what, &t.to_vec(), &f32s(&op["out"]));
            }
            "randint" => {
                let low = op["low"].as_i64().expect("low");
                let high = op["high"].as_i64().expect("high");
                let got = g.randint(low, high, &shape(&op["shape"]));
                assert_eq!(got, i64s(&op["out"]), "{what}");
            }
            "randperm" => {
                let n = op["n"].as_u64().expect("n") as usize;
                assert_eq!(g.randperm(n), i64s(&op["out"]), "{what}");
            }
            "multinomial" => {
                let probs = Tensor::from_vec(f32s(&op["probs"]), &shape(&op["probs_shape"]));
                let n = op["num_samples"].as_u64().expect("num_samples") as usize;
                let replacement = op["replacement"].as_bool().expect("replacement");
                let got = g.multinomial(&probs, n, replacement);
                assert_eq!(got, i64s(&op["out"]), "{what}");
            }
            "linear" => {
                let fan_in = op["in"].as_u64().expect("in") as usize;
                let fan_out = op["out"].as_u64().expect("out") as usize;
                let (w_bound, b_bound) = linear_init_bounds(fan_in);
                let w = g.uniform(-w_bound, w_bound, &[fan_out, fan_in]);
                let b = g.uniform(-b_bound, b_bound, &[fan_out]);
                assert_bits(&format!("{what} weight"), &w.to_vec(), &f32s(&op["weight"]));
                assert_bits(&format!("{what} bias"), &b.to_vec(), &f32s(&op["bias"]));
            }
            "dropout" => {
                let p = num(&op["p"]);
                let dims = shape(&op["shape"]);
                let mask = g.bernoulli_keep_mask(p, &dims);
                assert_bits(&what, &mask.to_vec(), &f32s(&op["mask"]));
                let x = Tensor::from_vec(f32s(&op["x"]), &dims);
                let out = x.dropout_with_mask(&mask, p).to_vec();
                assert_bits(&what, &out, &f32s(&op["out"]));
            }
            other => panic!("{what}: unknown op {other}"),
        }
    }
    ops.len()
}

/// Replays every case whose name starts with `prefix`; returns the number of calls checked.
fn replay_all(prefix: &str) -> usize {
    let fx = fixture();
    let cases: Vec<&Value> = fx["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect();
    assert!(!cases.is_empty(), "no fixture case starts with {prefix}");
    cases.into_iter().map(replay).sum()
}

#[test]
fn fixture_was_made_on_an_avx2_x86_64() {
    let fx = fixture();
    let flags: Vec<&str> = fx["cpu"]["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(fx["cpu"]["machine"], "x86_64");
    assert!(
        flags.contains(&"avx2") && flags.contains(&"fma"),
        "{flags:?}"
    );
}

#[test]
fn rand_matches_torch() {
    assert_eq!(replay_all("rand/"), 3 * 4);
}

#[test]
fn randn_below_16_uses_scalar_box_muller() {
    for n in [1, 2, 5, 15] {
        assert_eq!(replay_all(&format!("randn/{n}/")), 4);
    }
}

#[test]
fn randn_from_16_uses_chunked_box_muller() {
    for n in ["16", "17", "31", "32", "33", "1000", "27x27"] {
        assert_eq!(replay_all(&format!("randn/{n}/")), 4);
    }
}

#[test]
fn randint_matches_torch_on_both_sides_of_2_pow_28() {
    assert_eq!(replay_all("randint/"), 7 * 4);
}

#[test]
fn randperm_matches_torch() {
    assert_eq!(replay_all("randperm/"), 6 * 4);
}

#[test]
fn multinomial_matches_torch() {
    assert_eq!(replay_all("multinomial/"), 10 * 4);
}

#[test]
fn normal_matches_torch() {
    assert_eq!(replay_all("normal/"), 5 * 4);
}

#[test]
fn uniform_matches_torch() {
    assert_eq!(replay_all("uniform/"), 4 * 4);
}

// torch.manual_seed(s); nn.Linear(27, 10), nn.Linear(30, 7), nn.Linear(3, 1).
#[test]
fn nn_linear_default_init_matches_torch() {
    assert_eq!(replay_all("linear/"), 3 * 4);
}

#[test]
fn dropout_mask_and_output_match_torch() {
    assert_eq!(replay_all("dropout/"), 3 * 4);
}

#[test]
fn mixed_calls_on_one_generator_match_torch() {
    assert_eq!(replay_all("mixed/"), 18 * 4);
}

#[test]
fn global_manual_seed_is_the_same_generator() {
    assert_eq!(replay_all("global/"), 6 * 4);
}

// Lecture 2: p = torch.rand(3, generator=g); p /= p.sum(); 100 samples.
#[test]
fn lecture2_multinomial_100_matches_torch() {
    assert_eq!(replay_all("lecture2/"), 2);
}

// The bigram model's sampling loop, with P = (N+1) normalised from names.txt.
#[test]
fn bigram_samples_are_the_lectures() {
    let fx = fixture();
    let p = f32s(&fx["bigram"]["P"]);
    let chars: Vec<char> = ".abcdefghijklmnopqrstuvwxyz".chars().collect();
    let mut g = TorchGenerator::manual_seed(2147483647);
    let mut names = Vec::new();
    for _ in 0..5 {
        let mut out = String::new();
        let mut ix = 0;
        loop {
            let row = Tensor::from_vec(p[ix * 27..(ix + 1) * 27].to_vec(), &[27]);
            ix = g.multinomial(&row, 1, true)[0] as usize;
            out.push(chars[ix]);
            if ix == 0 {
                break;
            }
        }
        names.push(out);
    }
    assert_eq!(
        names,
        [
            "cexze.",
            "momasurailezitynn.",
            "konimittain.",
            "llayn.",
            "ka."
        ]
    );
    let want: Vec<&str> = fx["bigram"]["names"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(names, want);
}

#[test]
fn state_round_trips_mid_sequence_with_a_cached_normal() {
    let mut g = TorchGenerator::manual_seed(42);
    g.randn(&[20]);
    g.randn(&[1]); // leaves the second Box-Muller normal cached
    let saved = g.state();
    assert_eq!(saved.len(), STATE_WORDS);
    assert_eq!(saved[3], 1, "the cached normal is part of the state");
    let after: Vec<f32> = g.randn(&[3]).to_vec();
    let draws: Vec<i64> = g.randint(0, 100, &[5]);

    let mut h = TorchGenerator::from_state(&saved).expect("valid state");
    assert_eq!(h.initial_seed(), 42);
    assert_eq!(h.randn(&[3]).to_vec(), after);
    assert_eq!(h.randint(0, 100, &[5]), draws);
    assert_eq!(h, g);
}

#[test]
fn from_state_rejects_bad_states() {
    let good = TorchGenerator::manual_seed(1).state();
    assert_eq!(
        TorchGenerator::from_state(&good[..10]),
        Err(StateError::Length(10))
    );
    let mut bad = good.clone();
    bad[2] = 625;
    assert_eq!(
        TorchGenerator::from_state(&bad),
        Err(StateError::Index(625))
    );
    let mut bad = good;
    bad[3] = 7;
    assert_eq!(TorchGenerator::from_state(&bad), Err(StateError::Flag(7)));
}

#[test]
fn manual_seed_keeps_the_low_32_bits() {
    // torch.Generator().manual_seed(2**32 + 5) draws like manual_seed(5).
    let mut a = TorchGenerator::manual_seed((1 << 32) + 5);
    let mut b = TorchGenerator::manual_seed(5);
    assert_eq!(a.rand(&[4]).to_vec(), b.rand(&[4]).to_vec());
    assert_eq!(a.initial_seed(), (1 << 32) + 5);
}

// std::mt19937 seeded with 5489 gives 4123659995 as its 10000th output (C++11 [rand.predef]).
#[test]
fn rng_core_exposes_the_raw_twister() {
    use rand::RngCore;
    let mut g = TorchGenerator::manual_seed(5489);
    let mut last = 0;
    for _ in 0..10000 {
        last = g.next_u32();
    }
    assert_eq!(last, 4123659995);
    let (mut a, mut b) = (
        TorchGenerator::manual_seed(3),
        TorchGenerator::manual_seed(3),
    );
    let hi = b.next_u32() as u64;
    let lo = b.next_u32() as u64;
    assert_eq!(a.next_u64(), hi << 32 | lo);
}

#[test]
fn multinomial_rejects_what_torch_rejects() {
    let mut g = TorchGenerator::manual_seed(0);
    let before = g.clone();
    let zeros = Tensor::from_vec(vec![0.0, 0.0], &[2]);
    assert!(g
        .try_multinomial(&zeros, 1, true)
        .unwrap_err()
        .contains("sum of probabilities"));
    let neg = Tensor::from_vec(vec![0.5, -0.1], &[2]);
    assert!(g
        .try_multinomial(&neg, 1, true)
        .unwrap_err()
        .contains("element < 0"));
    let two = Tensor::from_vec(vec![0.5, 0.5], &[2]);
    assert!(g
        .try_multinomial(&two, 3, false)
        .unwrap_err()
        .contains("without replacement"));
    assert_eq!(g, before, "a rejected call draws nothing");
}
