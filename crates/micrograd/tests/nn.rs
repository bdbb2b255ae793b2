//! Neurons, layers and MLPs: sizes, initial weights against CPython's `random`, and
//! the lecture's four-example regression against PyTorch.

use micrograd::{regression, values, Activation, Layer, Module, Neuron, MLP};
use pyrandom::PyRandom;
use serde_json::Value as Json;

fn floats(json: &Json) -> Vec<f64> {
    json.as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

#[test]
fn parameter_counts() {
    let mut rng = PyRandom::seed(1337);
    assert_eq!(MLP::lecture(3, &[4, 4, 1], &mut rng).parameters().len(), 41);
    assert_eq!(MLP::new(2, &[16, 16, 1], &mut rng).parameters().len(), 337);
}

#[test]
fn repo_mlp_has_relu_hidden_layers_and_a_linear_output() {
    let model = MLP::new(2, &[3, 1], &mut PyRandom::seed(1));
    assert_eq!(
        model.to_string(),
        "MLP of [Layer of [ReLUNeuron(2), ReLUNeuron(2), ReLUNeuron(2)], Layer of [LinearNeuron(3)]]"
    );
    assert!(model.layers[0].neurons.iter().all(|n| n.b.data() == 0.0));
}

#[test]
fn initial_weights_are_karpathys() {
    // pip micrograd after random.seed(1337): MLP(2, [16, 16, 1]).parameters().
    let fixture: Json =
        serde_json::from_str(include_str!("fixtures/pip_micrograd_demo.json")).unwrap();
    let want = floats(&fixture["init_params"]);
    let got: Vec<f64> = MLP::new(2, &[16, 16, 1], &mut PyRandom::seed(1337))
        .parameters()
        .iter()
        .map(|p| p.data())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn lecture_mlp_draws_weights_then_bias() {
    let fixture: Json =
        serde_json::from_str(include_str!("fixtures/lecture_regression.json")).unwrap();
    let want = floats(&fixture["init_params"]);
    let got: Vec<f64> = MLP::lecture(3, &[4, 4, 1], &mut PyRandom::seed(1337))
        .parameters()
        .iter()
        .map(|p| p.data())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn neuron_forward_and_backward() {
    // relu(b + w·x) with w = [0.5, -2], b = 0: 0.5·4 − 2·0.5 = 1.
    let neuron = Neuron::new(2, Activation::Relu, &mut PyRandom::seed(0));
    neuron.w[0].set_data(0.5);
    neuron.w[1].set_data(-2.0);
    let x = values(&[4.0, 0.5]);
    let out = neuron.forward(&x);
    out.backward();
    assert_eq!(out.data(), 1.0);
    let grads: Vec<f64> = neuron.parameters().iter().map(|p| p.grad()).collect();
    assert_eq!(grads, [4.0, 0.5, 1.0]);
    assert_eq!([x[0].grad(), x[1].grad()], [0.5, -2.0]);
    neuron.zero_grad();
    assert!(neuron.parameters().iter().all(|p| p.grad() == 0.0));
}

#[test]
fn layer_gives_one_output_per_neuron() {
    let layer = Layer::lecture(3, 4, &mut PyRandom::seed(7));
    assert_eq!(layer.forward(&values(&[1.0, 2.0, 3.0])).len(), 4);
    assert_eq!(layer.parameters().len(), 16);
}

#[test]
#[should_panic(expected = "a neuron with 3 weights got 2 inputs")]
fn wrong_input_size_names_both_sizes() {
    let neuron = Neuron::lecture(3, &mut PyRandom::seed(7));
    neuron.forward(&values(&[1.0, 2.0]));
}

#[test]
fn lecture_regression_matches_pytorch() {
    let fixture: Json =
        serde_json::from_str(include_str!("fixtures/lecture_regression.json")).unwrap();
    let want_loss = floats(&fixture["loss"]);
    let want_pred = floats(&fixture["predictions"]);
    let run = regression::run(1337, 20, 0.1, &mut report::Stage::standalone("regression")).unwrap();
    assert_eq!(run.parameters, 41);
    for (k, (got, want)) in run.losses.iter().zip(&want_loss).enumerate() {
        assert!(
            (got - want).abs() <= 1e-9,
            "step {k}: loss {got} vs PyTorch {want}"
        );
    }
    for (got, want) in run.predictions.iter().zip(&want_pred) {
        assert!(
            (got - want).abs() <= 1e-9,
            "prediction {got} vs PyTorch {want}"
        );
    }
    assert!(run.losses[19] < run.losses[0]);
    for (pred, y) in run.predictions.iter().zip(regression::YS) {
        assert_eq!(
            pred.signum(),
            y.signum(),
            "prediction {pred} for target {y}"
        );
    }
}
