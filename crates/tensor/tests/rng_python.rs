//! `tensor::rng::PyRandom` against CPython's `random` (tests/fixtures/rng_python.json,
//! made by make_rng_fixtures.py), and the makemore split of names.txt.

use serde_json::Value;
use tensor::rng::PyRandom;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rng_python.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).expect("rng_python.json is valid JSON")
}

fn seeds() -> Vec<Value> {
    fixture()["seeds"].as_array().expect("seeds").clone()
}

fn seed_of(case: &Value) -> u64 {
    case["seed"].as_u64().expect("seed fits u64")
}

#[test]
fn random_is_bit_exact() {
    let cases = seeds();
    assert!(cases.iter().any(|c| seed_of(c) > u32::MAX as u64));
    for case in cases {
        let mut rng = PyRandom::seed(seed_of(&case));
        for (i, want) in case["random"]
            .as_array()
            .expect("random")
            .iter()
            .enumerate()
        {
            let want = want.as_f64().expect("float");
            let got = rng.random();
            assert!(
                got.to_bits() == want.to_bits(),
                "seed {}: random() #{i} is {got}, CPython has {want}",
                seed_of(&case)
            );
        }
    }
}

#[test]
fn getrandbits_1_to_64_matches() {
    for case in seeds() {
        let mut rng = PyRandom::seed(seed_of(&case));
        let want = case["getrandbits"].as_array().expect("getrandbits");
        assert_eq!(want.len(), 64);
        for (k, w) in (1..=64).zip(want) {
            assert_eq!(
                rng.getrandbits(k),
                w.as_u64().expect("u64"),
                "seed {}: getrandbits({k})",
                seed_of(&case)
            );
        }
    }
}

#[test]
fn shuffle_matches() {
    for case in seeds() {
        let mut rng = PyRandom::seed(seed_of(&case));
        for n in [1usize, 2, 10, 100] {
            let mut xs: Vec<u64> = (0..n as u64).collect();
            rng.shuffle(&mut xs);
            let want: Vec<u64> = case["shuffle"][n.to_string()]
                .as_array()
                .expect("shuffle")
                .iter()
                .map(|v| v.as_u64().expect("int"))
                .collect();
            assert_eq!(xs, want, "seed {}: shuffle(range({n}))", seed_of(&case));
        }
    }
}

#[test]
fn uniform_minus_one_one_matches() {
    for case in seeds() {
        let mut rng = PyRandom::seed(seed_of(&case));
        for want in case["uniform"].as_array().expect("uniform") {
            let want = want.as_f64().expect("float");
            assert_eq!(rng.uniform(-1.0, 1.0).to_bits(), want.to_bits());
        }
    }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

// makemore: random.seed(42); random.shuffle(words); 80/10/10 split.
#[test]
fn names_split_matches_the_lecture() {
    let dir = std::env::var("ZTH_DATA").unwrap_or_else(|_| {
        panic!("set ZTH_DATA=path/to/datasets (the folder holding names.txt) to run this test")
    });
    let path = std::path::Path::new(&dir).join("names.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}; is ZTH_DATA right?", path.display()));
    let mut words: Vec<&str> = text.lines().collect();
    PyRandom::seed(42).shuffle(&mut words);

    let want = &fixture()["names_split"];
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("words")
            .iter()
            .map(|w| w.as_str().expect("word").to_string())
            .collect()
    };
    assert_eq!(&words[..3], ["yuheng", "diondre", "xavien"]);
    assert_eq!(words.len() as u64, want["count"].as_u64().expect("count"));
    assert_eq!(words[..10].to_vec(), strs(&want["first"]));
    assert_eq!(words[words.len() - 10..].to_vec(), strs(&want["last"]));
    assert_eq!(
        fnv1a64(words.join("\n").as_bytes()),
        want["fnv1a64"].as_u64().expect("hash")
    );
    let n1 = (0.8 * words.len() as f64) as usize;
    let n2 = (0.9 * words.len() as f64) as usize;
    assert_eq!([n1, n2 - n1, words.len() - n2], [25626, 3203, 3204]);
}
