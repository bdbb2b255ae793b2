//! char-rnn's three models, `model/LSTM.lua`, `GRU.lua` and `RNN.lua`: one time
//! step of a stack of `num_layers` recurrent layers over a one-hot character,
//! then a linear decoder.
//!
//! Each layer reads the layer below's new hidden state (the first reads the
//! one-hot character), with dropout on that input from layer two up, and on the
//! top hidden state before the decoder. The decoder's logits go through
//! char-rnn's `LogSoftMax` and `ClassNLLCriterion`, which together are
//! [`Var::cross_entropy`] on the logits.
//!
//! Parameters are registered in the order the Lua code creates its `nn.Linear`
//! modules (weight `(out, in)`, then bias), which is the order of the one flat
//! vector that train.lua fills with `uniform(-0.08, 0.08)`.

use autograd::{ForwardPass, ParamId, Params, Var};
use tensor::rng::TorchGenerator;
use tensor::Tensor;

/// `-model`: which recurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `LSTM.lua`.
    Lstm,
    /// `GRU.lua`.
    Gru,
    /// `RNN.lua`, the vanilla RNN.
    Rnn,
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "lstm" => Ok(Kind::Lstm),
            "gru" => Ok(Kind::Gru),
            "rnn" => Ok(Kind::Rnn),
            other => Err(format!("unknown -model {other:?}: lstm, gru or rnn")),
        }
    }
}

impl Kind {
    /// The name `-model` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Lstm => "lstm",
            Kind::Gru => "gru",
            Kind::Rnn => "rnn",
        }
    }
}

/// An `nn.Linear(input, output)`.
#[derive(Clone, Copy, Debug)]
pub struct Linear {
    /// `(output, input)`.
    pub weight: ParamId,
    /// `(output,)`.
    pub bias: ParamId,
}

impl Linear {
    fn new(params: &mut Params, name: &str, input: usize, output: usize) -> Linear {
        Linear {
            weight: params.add(&format!("{name}.weight"), Tensor::zeros(&[output, input])),
            bias: params.add(&format!("{name}.bias"), Tensor::zeros(&[output])),
        }
    }

    /// `x @ weight.T + bias`.
    fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        x.linear(pass.param(self.weight), Some(pass.param(self.bias)))
    }
}

/// One layer's Linear modules, named as the Lua code names them.
#[derive(Clone, Debug)]
pub enum Layer {
    /// `i2h` and `h2h`, each producing the four gates' sums at once.
    Lstm {
        /// `nn.Linear(input_size_L, 4 * rnn_size)`, annotated `i2h_L`.
        i2h: Linear,
        /// `nn.Linear(rnn_size, 4 * rnn_size)`, annotated `h2h_L`.
        h2h: Linear,
    },
    /// A Linear pair per gate, then the candidate's two (h2h before i2h, as created).
    Gru {
        /// The update gate's input sum, from x.
        update_i2h: Linear,
        /// The update gate's input sum, from h.
        update_h2h: Linear,
        /// The reset gate's input sum, from x.
        reset_i2h: Linear,
        /// The reset gate's input sum, from h.
        reset_h2h: Linear,
        /// `p2`: from the reset-gated hidden state.
        candidate_h2h: Linear,
        /// `p1`: from x.
        candidate_i2h: Linear,
    },
    /// `i2h` and `h2h`.
    Rnn {
        /// `nn.Linear(input_size_L, rnn_size)`.
        i2h: Linear,
        /// `nn.Linear(rnn_size, rnn_size)`.
        h2h: Linear,
    },
}

/// The model: `protos.rnn`.
#[derive(Clone, Debug)]
pub struct CharRnn {
    /// `-model`.
    pub kind: Kind,
    /// Distinct bytes of the text.
    pub vocab_size: usize,
    /// `-rnn_size`.
    pub rnn_size: usize,
    /// Dropout on layer inputs from layer two up, and before the decoder.
    pub dropout: f32,
    /// `-num_layers` layers.
    pub layers: Vec<Layer>,
    /// `nn.Linear(rnn_size, vocab_size)`, annotated `decoder`.
    pub decoder: Linear,
}

impl CharRnn {
    /// Registers the model's parameters in `params`, zero, in the Lua code's order.
    pub fn new(
        params: &mut Params,
        kind: Kind,
        vocab_size: usize,
        rnn_size: usize,
        num_layers: usize,
        dropout: f32,
    ) -> CharRnn {
        let h = rnn_size;
        let layers = (1..=num_layers)
            .map(|l| {
                let input = if l == 1 { vocab_size } else { h };
                let mut linear =
                    |name: &str, i, o| Linear::new(params, &format!("{name}_{l}"), i, o);
                match kind {
                    Kind::Lstm => Layer::Lstm {
                        i2h: linear("i2h", input, 4 * h),
                        h2h: linear("h2h", h, 4 * h),
                    },
                    Kind::Gru => Layer::Gru {
                        update_i2h: linear("update_i2h", input, h),
                        update_h2h: linear("update_h2h", h, h),
                        reset_i2h: linear("reset_i2h", input, h),
                        reset_h2h: linear("reset_h2h", h, h),
                        candidate_h2h: linear("candidate_h2h", h, h),
                        candidate_i2h: linear("candidate_i2h", input, h),
                    },
                    Kind::Rnn => Layer::Rnn {
                        i2h: linear("i2h", input, h),
                        h2h: linear("h2h", h, h),
                    },
                }
            })
            .collect();
        let decoder = Linear::new(params, "decoder", h, vocab_size);
        CharRnn {
            kind,
            vocab_size,
            rnn_size,
            dropout,
            layers,
            decoder,
        }
    }

    // ANCHOR: init
    /// train.lua's initialisation: `params:uniform(-0.08, 0.08)` over every
    /// parameter as one flat vector, then the LSTM's forget-gate biases set to 1.
    pub fn init(&self, params: &mut Params, rng: &mut TorchGenerator) {
        let flat = rng.uniform(-0.08, 0.08, &[params.count()]).to_vec();
        let mut at = 0;
        for (_, p) in params.iter_mut() {
            let n = p.value.len();
            p.value = Tensor::from_vec(flat[at..at + n].to_vec(), p.value.shape());
            at += n;
        }
        self.set_forget_biases(params);
    }
    // ANCHOR_END: init

    /// "initialize the LSTM forget gates with slightly higher biases to
    /// encourage remembering in the beginning": the second quarter of each
    /// `i2h` bias (the gates are i, f, o, g) set to 1. train.lua does it after
    /// `-init_from` too. Other models have no forget gate.
    pub fn set_forget_biases(&self, params: &mut Params) {
        let h = self.rnn_size;
        for layer in &self.layers {
            if let Layer::Lstm { i2h, .. } = layer {
                let bias = &mut params.get_mut(i2h.bias).value;
                let mut values = bias.to_vec();
                values[h..2 * h].fill(1.0);
                *bias = Tensor::from_vec(values, &[4 * h]);
            }
        }
    }

    /// Tensors of state per layer: the LSTM's `c` and `h`, the others' `h`.
    pub fn state_per_layer(&self) -> usize {
        match self.kind {
            Kind::Lstm => 2,
            Kind::Gru | Kind::Rnn => 1,
        }
    }

    /// `init_state`: zeros `(batch, rnn_size)` for every state tensor.
    pub fn zero_state(&self, batch: usize) -> Vec<Tensor> {
        let n = self.layers.len() * self.state_per_layer();
        vec![Tensor::zeros(&[batch, self.rnn_size]); n]
    }

    /// One time step: the characters `x_t` (one per row) and the previous
    /// state (`[c_1, h_1, c_2, h_2, …]` for the LSTM, `[h_1, h_2, …]`
    /// otherwise) to the next state and the decoder's logits `(B, vocab_size)`.
    pub fn step<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        x_t: &[usize],
        state: &[Var<'g>],
    ) -> (Vec<Var<'g>>, Var<'g>) {
        let mut next = Vec::with_capacity(state.len());
        let mut x = pass.graph.constant(Tensor::one_hot(x_t, self.vocab_size)); // (B, vocab_size): OneHot
        for (l, layer) in self.layers.iter().enumerate() {
            if l > 0 {
                x = pass.dropout(*next.last().expect("the layer below"), self.dropout);
                // (B, H)
            }
            match layer {
                Layer::Lstm { i2h, h2h } => {
                    let (c, h) = lstm(pass, i2h, h2h, x, state[2 * l], state[2 * l + 1]);
                    next.push(c);
                    next.push(h);
                }
                Layer::Gru {
                    update_i2h,
                    update_h2h,
                    reset_i2h,
                    reset_h2h,
                    candidate_h2h,
                    candidate_i2h,
                } => {
                    let gates = [update_i2h, update_h2h, reset_i2h, reset_h2h];
                    let candidate = [candidate_h2h, candidate_i2h];
                    next.push(gru(pass, gates, candidate, x, state[l]));
                }
                Layer::Rnn { i2h, h2h } => {
                    // ANCHOR: rnn_layer
                    let next_h = (i2h.forward(pass, x) + h2h.forward(pass, state[l])).tanh(); // (B, H)
                                                                                              // ANCHOR_END: rnn_layer
                    next.push(next_h);
                }
            }
        }
        let top_h = pass.dropout(*next.last().expect("at least one layer"), self.dropout); // (B, H)
        let logits = self.decoder.forward(pass, top_h); // (B, vocab_size)
        (next, logits)
    }
}

// ANCHOR: lstm_layer
/// LSTM.lua's layer: the four gates' input sums at once, `i2h(x) + h2h(h)`,
/// split in char-rnn's order (input, forget, output, then the tanh "write input").
fn lstm<'g>(
    pass: &ForwardPass<'g, '_>,
    i2h: &Linear,
    h2h: &Linear,
    x: Var<'g>,
    prev_c: Var<'g>,
    prev_h: Var<'g>,
) -> (Var<'g>, Var<'g>) {
    let h = prev_h.shape()[1];
    let all_input_sums = i2h.forward(pass, x) + h2h.forward(pass, prev_h); // (B, 4H)
    let n = |k: usize| all_input_sums.narrow(1, k * h, h); // (B, H)
    let in_gate = n(0).sigmoid(); // (B, H)
    let forget_gate = n(1).sigmoid(); // (B, H)
    let out_gate = n(2).sigmoid(); // (B, H)
    let in_transform = n(3).tanh(); // (B, H)
    let next_c = forget_gate * prev_c + in_gate * in_transform; // (B, H)
    let next_h = out_gate * next_c.tanh(); // (B, H)
    (next_c, next_h)
}
// ANCHOR_END: lstm_layer

// ANCHOR: gru_layer
/// GRU.lua's layer, which is not `torch.nn.GRU`: the candidate is
/// `tanh(W x + U (r ⊙ h))` (the reset gate applied before the product), and
/// the new state is `z ⊙ h̃ + (1 − z) ⊙ h`.
fn gru<'g>(
    pass: &ForwardPass<'g, '_>,
    [update_i2h, update_h2h, reset_i2h, reset_h2h]: [&Linear; 4],
    [candidate_h2h, candidate_i2h]: [&Linear; 2],
    x: Var<'g>,
    prev_h: Var<'g>,
) -> Var<'g> {
    let update_gate = (update_i2h.forward(pass, x) + update_h2h.forward(pass, prev_h)).sigmoid(); // (B, H)
    let reset_gate = (reset_i2h.forward(pass, x) + reset_h2h.forward(pass, prev_h)).sigmoid(); // (B, H)
    let gated_hidden = reset_gate * prev_h; // (B, H)
    let p2 = candidate_h2h.forward(pass, gated_hidden); // (B, H)
    let p1 = candidate_i2h.forward(pass, x); // (B, H)
    let hidden_candidate = (p1 + p2).tanh(); // (B, H)
    let zh = update_gate * hidden_candidate; // (B, H)
    let zhm1 = update_gate.mul_scalar(-1.0).add_scalar(1.0) * prev_h; // (B, H)
    zh + zhm1
}
// ANCHOR_END: gru_layer

#[cfg(test)]
mod tests {
    use super::*;

    /// train.lua prints 240,321 for the default LSTM on tinyshakespeare.txt
    /// (65 characters, 2 layers of 128).
    #[test]
    fn default_lstm_has_char_rnns_parameter_count() {
        let mut params = Params::new();
        CharRnn::new(&mut params, Kind::Lstm, 65, 128, 2, 0.0);
        assert_eq!(params.count(), 240_321);
    }

    #[test]
    fn forget_gate_biases_are_one_after_init() {
        let mut params = Params::new();
        let model = CharRnn::new(&mut params, Kind::Lstm, 5, 3, 2, 0.0);
        model.init(&mut params, &mut TorchGenerator::manual_seed(1));
        for layer in &model.layers {
            let Layer::Lstm { i2h, h2h } = layer else {
                unreachable!()
            };
            let b = params.value(i2h.bias).to_vec();
            assert_eq!(&b[3..6], [1.0; 3]);
            assert!(b[..3]
                .iter()
                .chain(&b[6..])
                .all(|v| v.abs() <= 0.08 && *v != 1.0));
            assert!(params
                .value(h2h.bias)
                .to_vec()
                .iter()
                .all(|v| v.abs() <= 0.08));
        }
    }
}
