//! Neurons, layers and multi-layer perceptrons built from [`Value`]s (micrograd's `nn.py`).
//!
//! Two variants, because the lecture and the repository differ:
//!
//! | | bias at init | hidden layers | last layer |
//! |---|---|---|---|
//! | repo `nn.py` ([`MLP::new`]) | 0 | ReLU | linear |
//! | lecture notebook ([`MLP::lecture`]) | `uniform(-1, 1)` | tanh | tanh |
//!
//! Weights are `random.uniform(-1, 1)` draws from CPython's generator, taken in the
//! order Python takes them: layer by layer, neuron by neuron, weights then (in the
//! lecture) the bias. So `PyRandom::seed(1337)` gives the very weights of
//! `random.seed(1337); MLP(2, [16, 16, 1])`.

use std::fmt;

use pyrandom::PyRandom;

use crate::Value;

/// Anything with trainable parameters.
pub trait Module {
    /// Every trainable value, in a fixed order (micrograd's `parameters()`).
    fn parameters(&self) -> Vec<Value>;

    /// Sets every parameter's gradient to 0, before the next backward pass.
    fn zero_grad(&self) {
        for p in self.parameters() {
            p.set_grad(0.0);
        }
    }
}

/// What a neuron applies to its weighted sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// None: the repo's output layer.
    Linear,
    /// `max(0, x)`: the repo's hidden layers.
    Relu,
    /// The lecture's choice, on every layer.
    Tanh,
}

/// One neuron: `activation(w · x + b)`.
pub struct Neuron {
    /// One weight per input.
    pub w: Vec<Value>,
    /// The bias.
    pub b: Value,
    /// Applied to `w · x + b`.
    pub activation: Activation,
}

impl Neuron {
    /// The repo's neuron: weights `uniform(-1, 1)`, bias 0.
    pub fn new(nin: usize, activation: Activation, rng: &mut PyRandom) -> Neuron {
        let w = (0..nin)
            .map(|_| Value::new(rng.uniform(-1.0, 1.0)))
            .collect();
        Neuron {
            w,
            b: Value::new(0.0),
            activation,
        }
    }

    /// The lecture's neuron: weights then bias drawn from `uniform(-1, 1)`, tanh.
    pub fn lecture(nin: usize, rng: &mut PyRandom) -> Neuron {
        let w = (0..nin)
            .map(|_| Value::new(rng.uniform(-1.0, 1.0)))
            .collect();
        let b = Value::new(rng.uniform(-1.0, 1.0));
        Neuron {
            w,
            b,
            activation: Activation::Tanh,
        }
    }

    /// The neuron's output for one input vector.
    ///
    /// Panics with "a neuron with {weights} weights got {inputs} inputs" if `x`
    /// does not have one entry per weight (Python's `zip` would silently drop
    /// the extra ones).
    // ANCHOR: neuron_forward
    pub fn forward(&self, x: &[Value]) -> Value {
        assert_eq!(
            x.len(),
            self.w.len(),
            "a neuron with {} weights got {} inputs",
            self.w.len(),
            x.len()
        );
        // Same order as `sum((wi*xi for wi, xi in zip(self.w, x)), self.b)`.
        let mut act = self.b.clone();
        for (wi, xi) in self.w.iter().zip(x) {
            act = &act + &(wi * xi);
        }
        match self.activation {
            Activation::Linear => act,
            Activation::Relu => act.relu(),
            Activation::Tanh => act.tanh(),
        }
    }
    // ANCHOR_END: neuron_forward
}

impl Module for Neuron {
    fn parameters(&self) -> Vec<Value> {
        let mut params = self.w.clone();
        params.push(self.b.clone());
        params
    }
}

/// Neurons that all see the same inputs.
pub struct Layer {
    /// One neuron per output.
    pub neurons: Vec<Neuron>,
}

impl Layer {
    /// `nout` repo neurons with `nin` inputs each.
    pub fn new(nin: usize, nout: usize, activation: Activation, rng: &mut PyRandom) -> Layer {
        let neurons = (0..nout)
            .map(|_| Neuron::new(nin, activation, rng))
            .collect();
        Layer { neurons }
    }

    /// `nout` lecture neurons with `nin` inputs each.
    pub fn lecture(nin: usize, nout: usize, rng: &mut PyRandom) -> Layer {
        let neurons = (0..nout).map(|_| Neuron::lecture(nin, rng)).collect();
        Layer { neurons }
    }

    /// One output per neuron.
    pub fn forward(&self, x: &[Value]) -> Vec<Value> {
        self.neurons.iter().map(|n| n.forward(x)).collect()
    }
}

impl Module for Layer {
    fn parameters(&self) -> Vec<Value> {
        self.neurons.iter().flat_map(|n| n.parameters()).collect()
    }
}

/// A multi-layer perceptron: layers applied one after the other.
pub struct MLP {
    /// The layers, input side first.
    pub layers: Vec<Layer>,
}

impl MLP {
    /// The repo's MLP: ReLU hidden layers and a linear last layer, zero biases.
    /// `MLP::new(2, &[16, 16, 1], rng)` is the moons demo's model.
    pub fn new(nin: usize, nouts: &[usize], rng: &mut PyRandom) -> MLP {
        let mut layers = Vec::new();
        let mut fan_in = nin;
        for (i, &nout) in nouts.iter().enumerate() {
            let last = i + 1 == nouts.len();
            let activation = if last {
                Activation::Linear
            } else {
                Activation::Relu
            };
            layers.push(Layer::new(fan_in, nout, activation, rng));
            fan_in = nout;
        }
        MLP { layers }
    }

    /// The lecture's MLP: tanh everywhere, random biases.
    /// `MLP::lecture(3, &[4, 4, 1], rng)` is the four-example regression's model.
    pub fn lecture(nin: usize, nouts: &[usize], rng: &mut PyRandom) -> MLP {
        let mut layers = Vec::new();
        let mut fan_in = nin;
        for &nout in nouts {
            layers.push(Layer::lecture(fan_in, nout, rng));
            fan_in = nout;
        }
        MLP { layers }
    }

    /// The last layer's outputs for one input vector.
    // ANCHOR: mlp_forward
    pub fn forward(&self, x: &[Value]) -> Vec<Value> {
        let mut x = x.to_vec();
        for layer in &self.layers {
            x = layer.forward(&x);
        }
        x
    }
    // ANCHOR_END: mlp_forward
}

impl Module for MLP {
    fn parameters(&self) -> Vec<Value> {
        self.layers.iter().flat_map(|l| l.parameters()).collect()
    }
}

impl fmt::Display for Neuron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.activation {
            Activation::Linear => "Linear",
            Activation::Relu => "ReLU",
            Activation::Tanh => "Tanh",
        };
        write!(f, "{kind}Neuron({})", self.w.len())
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neurons: Vec<String> = self.neurons.iter().map(|n| n.to_string()).collect();
        write!(f, "Layer of [{}]", neurons.join(", "))
    }
}

impl fmt::Display for MLP {
    /// micrograd's `repr`: `MLP of [Layer of [ReLUNeuron(2), ...], ...]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layers: Vec<String> = self.layers.iter().map(|l| l.to_string()).collect();
        write!(f, "MLP of [{}]", layers.join(", "))
    }
}
