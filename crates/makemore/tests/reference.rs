//! The pieces against their references: the file reading against Python
//! (`python_text.json`: `open(path, 'r').read().splitlines()`, `strip()`,
//! `sorted(set(…))`), and the LSTM cell against `torch.nn.LSTMCell`
//! (`lstm_cell.json`: its init from `torch.manual_seed(0)`, its forward and
//! every gradient).

use autograd::{ForwardPass, Graph, Init, Params};
use makemore::data::{words_from_bytes, Vocab};
use makemore::model::LstmCell;
use serde_json::Value;
use std::path::Path;
use tensor::rng::TorchGenerator;
use tensor::Tensor;

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn code_points(s: &str) -> Vec<u32> {
    s.chars().map(u32::from).collect()
}

#[test]
fn files_are_read_as_python_reads_them() {
    let fx = fixture("python_text.json");
    for case in fx["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let bytes: Vec<u8> = serde_json::from_value(case["input_bytes"].clone()).unwrap();
        let result = words_from_bytes(&bytes, name);
        if case.get("error").is_some_and(|e| !e.is_null()) {
            let err = result.expect_err(name).to_string();
            assert!(err.contains("byte offset 2"), "{name}: {err}");
            continue;
        }
        let words = result.unwrap();
        let expected: Vec<Vec<u32>> = serde_json::from_value(case["words"].clone()).unwrap();
        let ours: Vec<Vec<u32>> = words.iter().map(|w| code_points(w)).collect();
        assert_eq!(ours, expected, "{name}: the words");
        let vocab: Vec<u32> = Vocab::of(&words)
            .chars()
            .iter()
            .map(|&c| u32::from(c))
            .collect();
        let expected: Vec<u32> = serde_json::from_value(case["vocab"].clone()).unwrap();
        assert_eq!(vocab, expected, "{name}: the vocabulary");
    }
}

#[test]
fn isspace_is_pythons() {
    let fx = fixture("python_text.json");
    let python: Vec<u32> = serde_json::from_value(fx["isspace"].clone()).unwrap();
    let ours: Vec<u32> = (0..=0x10ffffu32)
        .filter_map(char::from_u32)
        .filter(|&c| makemore::data::python_isspace(c))
        .map(u32::from)
        .collect();
    assert_eq!(ours, python);
}

fn tensor(v: &Value) -> Tensor {
    let shape: Vec<usize> = serde_json::from_value(v["shape"].clone()).unwrap();
    let data: Vec<f32> = serde_json::from_value(v["data"].clone()).unwrap();
    Tensor::from_vec(data, &shape)
}

fn assert_close(name: &str, ours: &Tensor, theirs: &Tensor, tol: f32) {
    assert_eq!(ours.shape(), theirs.shape(), "{name}: shape");
    let gap = ours
        .to_vec()
        .iter()
        .zip(theirs.to_vec())
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(gap <= tol, "{name}: {gap:e} from PyTorch's");
}

#[test]
fn lstm_cell_is_torchs() {
    let fx = fixture("lstm_cell.json");
    let mut params = Params::new();
    let mut rng = TorchGenerator::manual_seed(0);
    let cell = {
        let mut init = Init::new(&mut params, &mut rng);
        LstmCell::new(&mut init, "cell", 5, 4)
    };
    // torch.manual_seed(0); nn.LSTMCell(5, 4): the same draws, bit for bit.
    for (name, id) in [
        ("weight_ih", cell.weight_ih),
        ("weight_hh", cell.weight_hh),
        ("bias_ih", cell.bias_ih),
        ("bias_hh", cell.bias_hh),
    ] {
        assert_eq!(
            params.value(id).to_vec(),
            tensor(&fx["init"][name]).to_vec(),
            "init {name}"
        );
        params.get_mut(id).value = tensor(&fx[name]);
    }
    let graph = Graph::new();
    let pass = ForwardPass::eval(&graph, &params);
    let x = graph.leaf(tensor(&fx["x"]));
    let h = graph.leaf(tensor(&fx["h"]));
    let c = graph.leaf(tensor(&fx["c"]));
    let (h2, c2) = cell.forward(&pass, x, (h, c));
    assert_close("h'", &h2.value(), &tensor(&fx["h2"]), 1e-6);
    assert_close("c'", &c2.value(), &tensor(&fx["c2"]), 1e-6);
    let gh = graph.constant(tensor(&fx["gh"]));
    let gc = graph.constant(tensor(&fx["gc"]));
    let loss = (h2 * gh).sum_all() + (c2 * gc).sum_all();
    assert!((loss.item() as f64 - fx["loss"].as_f64().unwrap()).abs() < 1e-5);
    let grads = loss.backward();
    for (name, var) in [("grad_x", x), ("grad_h", h), ("grad_c", c)] {
        assert_close(name, grads.of(var).unwrap(), &tensor(&fx[name]), 1e-6);
    }
    for (name, id) in [
        ("grad_weight_ih", cell.weight_ih),
        ("grad_weight_hh", cell.weight_hh),
        ("grad_bias_ih", cell.bias_ih),
        ("grad_bias_hh", cell.bias_hh),
    ] {
        let g = grads
            .params()
            .iter()
            .find(|(p, _)| *p == id)
            .unwrap()
            .1
            .clone();
        assert_close(name, &g, &tensor(&fx[name]), 1e-6);
    }
}
