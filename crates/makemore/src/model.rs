//! makemore.py's models, one type per class and in its order: the
//! Transformer (lecture 9's GPT-2, untied), the bag of words
//! (`CausalBoW`, `BoWBlock`, `BoW`), the recurrent nets (`RNNCell`,
//! `GRUCell`, and the `LSTMCell` makemore.py left out), the `MLP` and the
//! `Bigram`.
//!
//! Each is built in the order its PyTorch module constructs its layers, with
//! PyTorch's default initialisation (`nn.Linear`'s U(−1/√fan_in, 1/√fan_in),
//! `nn.Embedding`'s N(0, 1), `nn.LayerNorm`'s ones and zeros), so that after
//! `torch.manual_seed(3407)` and the data split it starts from makemore.py's
//! numbers; and each parameter carries its `state_dict` name.
//!
//! Which lecture built which class: the bigram is lecture 2's, the MLP lecture
//! 3's (Bengio et al. 2003), the RNN and GRU cells the recurrent nets lecture 6
//! points to, the bag of words the averaging trick of lecture 7, and the
//! Transformer is lecture 9's GPT-2 (lecture 7's, with GPT-2's GELU and biases).

use autograd::{ForwardPass, Init, ParamId, Params, Var};
use gpt::nn::{future_mask, Embedding, Linear};
use gpt2::model::{Gpt, GptConfig, InitScheme};
use serde::{Deserialize, Serialize};
use std::fmt;
use tensor::Tensor;

/// `--type`: which model to train.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelType {
    /// `Bigram`: a table of next-character logits.
    Bigram,
    /// `MLP`: Bengio et al. 2003.
    Mlp,
    /// `RNN` with `RNNCell`.
    Rnn,
    /// `RNN` with `GRUCell`.
    Gru,
    /// `BoW`: a causal bag of words and an MLP.
    Bow,
    /// `Transformer`: GPT-2's.
    Transformer,
    /// `RNN` with `nn.LSTMCell`, which makemore.py leaves out.
    Lstm,
}

impl ModelType {
    /// Every type, in `--type`'s help order.
    pub const ALL: [ModelType; 7] = [
        ModelType::Bigram,
        ModelType::Mlp,
        ModelType::Rnn,
        ModelType::Gru,
        ModelType::Bow,
        ModelType::Transformer,
        ModelType::Lstm,
    ];

    /// The `--type` name.
    pub fn name(self) -> &'static str {
        match self {
            ModelType::Bigram => "bigram",
            ModelType::Mlp => "mlp",
            ModelType::Rnn => "rnn",
            ModelType::Gru => "gru",
            ModelType::Bow => "bow",
            ModelType::Transformer => "transformer",
            ModelType::Lstm => "lstm",
        }
    }

    /// The type named `name`, or an error listing the types.
    pub fn parse(name: &str) -> Result<ModelType, String> {
        ModelType::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = ModelType::ALL.iter().map(|t| t.name()).collect();
                format!(
                    "model type {name:?} is not recognized; --type takes {}",
                    names.join("|")
                )
            })
    }
}

impl fmt::Display for ModelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// makemore.py's `ModelConfig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Length of the input sequences: the longest word plus the start token.
    pub block_size: usize,
    /// Tokens are in `0..vocab_size`: the characters and the start/stop token.
    pub vocab_size: usize,
    /// Transformer blocks (default 4).
    pub n_layer: usize,
    /// Feature channels of the embeddings (default 64).
    pub n_embd: usize,
    /// Feature channels elsewhere: the hidden state, the MLP's hidden layer (default 64).
    pub n_embd2: usize,
    /// Attention heads (default 4).
    pub n_head: usize,
}

// ---------------------------------------------------------------------------
// Transformer Language Model (*exactly* as used in GPT-2)

/// makemore.py's `Transformer`, `Block`, `CausalSelfAttention` and `NewGELU`
/// are GPT-2's model with PyTorch's default init and an untied head: lecture
/// 9's [`gpt2::model::Gpt`] as build-nanogpt had it before "weight tie the
/// embedding and unembedding matrix" ([`InitScheme::PyTorchDefaultUntied`]).
/// The same modules in the same order draw the same numbers and carry the
/// same `state_dict` names (`transformer.h.0.mlp.c_fc.weight`, …).
pub type Transformer = Gpt;

/// `Transformer(config)`: GPT-2's modules in `__init__`'s order, PyTorch's
/// default init, the attention written out as makemore.py writes it (not the
/// fused op). GELU is GPT-2's tanh form, one op here where makemore.py's
/// `NewGELU` spells it out (`0.5 * x * (1.0 + tanh(√(2/π) * (x + 0.044715 * x³)))`).
pub fn transformer(init: &mut Init, config: &ModelConfig) -> Transformer {
    let shape = GptConfig {
        block_size: config.block_size,
        vocab_size: config.vocab_size,
        n_layer: config.n_layer,
        n_head: config.n_head,
        n_embd: config.n_embd,
    };
    let mut model = Gpt::new(init, shape, InitScheme::PyTorchDefaultUntied);
    model.set_flash(false);
    model
}

// ---------------------------------------------------------------------------
// Bag of Words (BoW) language model

// ANCHOR: causal_bow
/// `CausalBoW`: each position averages itself and every position before it,
/// weights made as attention's are, from zeros: `(B, T, C) -> (B, T, C)`.
pub fn causal_bow(x: Var<'_>) -> Var<'_> {
    let shape = x.shape();
    let (b, t) = (shape[0], shape[1]);
    let att = Tensor::zeros(&[t, t]).masked_fill(&future_mask(t), f32::NEG_INFINITY); // (T, T)
    let att = att.softmax(-1).broadcast_to(&[b, t, t]); // (B, T, T): row i is 1/(i+1) up to i
    x.graph().constant(att).matmul(x) // (B, T, T) @ (B, T, C) -> (B, T, C)
}
// ANCHOR_END: causal_bow

/// `BoWBlock`: the bag-of-words features, then an MLP.
#[derive(Clone, Debug)]
pub struct BowBlock {
    /// `mlp.c_fc`: `nn.Linear(n_embd, n_embd2)`.
    pub c_fc: Linear,
    /// `mlp.c_proj`: `nn.Linear(n_embd2, n_embd)`.
    pub c_proj: Linear,
}

impl BowBlock {
    /// Builds the MLP (`cbow` has no parameters).
    pub fn new(init: &mut Init, name: &str, config: &ModelConfig) -> BowBlock {
        let (c, c2) = (config.n_embd, config.n_embd2);
        BowBlock {
            c_fc: Linear::new(init, &format!("{name}.mlp.c_fc"), c, c2, true),
            c_proj: Linear::new(init, &format!("{name}.mlp.c_proj"), c2, c, true),
        }
    }

    /// `(B, T, C) -> (B, T, C)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, x: Var<'g>) -> Var<'g> {
        let x = x + causal_bow(x); // (B, T, C)
        let mlpf = |x| self.c_proj.forward(pass, self.c_fc.forward(pass, x).tanh());
        x + mlpf(x) // (B, T, C)
    }
}

/// `BoW`: token and position embeddings, averaged over the past, decoded by an MLP.
#[derive(Clone, Debug)]
pub struct Bow {
    /// Token embedding `(vocab_size, n_embd)`.
    pub wte: Embedding,
    /// Position embedding `(block_size, n_embd)`.
    pub wpe: Embedding,
    /// The context block.
    pub context_block: BowBlock,
    /// `nn.Linear(n_embd, vocab_size)`.
    pub lm_head: Linear,
    /// The longest context.
    pub block_size: usize,
}

impl Bow {
    /// Builds `wte`, `wpe`, `context_block`, then `lm_head`.
    pub fn new(init: &mut Init, config: &ModelConfig) -> Bow {
        Bow {
            wte: Embedding::new(init, "wte", config.vocab_size, config.n_embd),
            wpe: Embedding::new(init, "wpe", config.block_size, config.n_embd),
            context_block: BowBlock::new(init, "context_block", config),
            lm_head: Linear::new(init, "lm_head", config.n_embd, config.vocab_size, true),
            block_size: config.block_size,
        }
    }

    /// Tokens `(B, T)` to logits `(B, T, vocab_size)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        assert!(
            t <= self.block_size,
            "Cannot forward sequence of length {t}, block size is only {}",
            self.block_size
        );
        let pos: Vec<usize> = (0..t).collect(); // (T,)
        let tok_emb = self.wte.forward(pass, idx, &[b, t]); // (B, T, n_embd)
        let pos_emb = self.wpe.forward(pass, &pos, &[1, t]); // (1, T, n_embd)
        let x = self.context_block.forward(pass, tok_emb + pos_emb); // (B, T, n_embd)
        self.lm_head.forward(pass, x) // (B, T, vocab_size)
    }
}

// ---------------------------------------------------------------------------
// Recurrent Neural Net language model: a vanilla RNN, a GRU or an LSTM

/// `RNNCell`: `h_t = tanh(W [x_t, h_{t-1}] + b)`.
#[derive(Clone, Debug)]
pub struct RnnCell {
    /// `nn.Linear(n_embd + n_embd2, n_embd2)`.
    pub xh_to_h: Linear,
}

impl RnnCell {
    /// Draws `xh_to_h`.
    pub fn new(init: &mut Init, name: &str, config: &ModelConfig) -> RnnCell {
        let (c, c2) = (config.n_embd, config.n_embd2);
        RnnCell {
            xh_to_h: Linear::new(init, &format!("{name}.xh_to_h"), c + c2, c2, true),
        }
    }

    // ANCHOR: rnn_cell
    /// `(B, n_embd), (B, n_embd2) -> (B, n_embd2)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, xt: Var<'g>, hprev: Var<'g>) -> Var<'g> {
        let xh = Var::concat(&[xt, hprev], 1); // (B, n_embd + n_embd2)
        self.xh_to_h.forward(pass, xh).tanh() // (B, n_embd2)
    }
    // ANCHOR_END: rnn_cell
}

/// `GRUCell`: a reset gate, a candidate state and an update gate.
#[derive(Clone, Debug)]
pub struct GruCell {
    /// The update ("switch") gate.
    pub xh_to_z: Linear,
    /// The reset gate.
    pub xh_to_r: Linear,
    /// The candidate state.
    pub xh_to_hbar: Linear,
}

impl GruCell {
    /// Draws `xh_to_z`, `xh_to_r`, then `xh_to_hbar`.
    pub fn new(init: &mut Init, name: &str, config: &ModelConfig) -> GruCell {
        let (c, c2) = (config.n_embd, config.n_embd2);
        let mut linear = |n: &str| Linear::new(init, &format!("{name}.{n}"), c + c2, c2, true);
        GruCell {
            xh_to_z: linear("xh_to_z"),
            xh_to_r: linear("xh_to_r"),
            xh_to_hbar: linear("xh_to_hbar"),
        }
    }

    // ANCHOR: gru_cell
    /// `(B, n_embd), (B, n_embd2) -> (B, n_embd2)`.
    pub fn forward<'g>(&self, pass: &ForwardPass<'g, '_>, xt: Var<'g>, hprev: Var<'g>) -> Var<'g> {
        // The reset gate wipes some channels of the hidden state to zero.
        let xh = Var::concat(&[xt, hprev], 1); // (B, n_embd + n_embd2)
        let r = self.xh_to_r.forward(pass, xh).sigmoid(); // (B, n_embd2)
        let hprev_reset = r * hprev; // (B, n_embd2)

        // The candidate new hidden state.
        let xhr = Var::concat(&[xt, hprev_reset], 1); // (B, n_embd + n_embd2)
        let hbar = self.xh_to_hbar.forward(pass, xhr).tanh(); // (B, n_embd2)

        // The switch gate: how much of each channel to update, to blend with.
        let z = self.xh_to_z.forward(pass, xh).sigmoid(); // (B, n_embd2)
        z.neg().add_scalar(1.0) * hprev + z * hbar // (B, n_embd2): (1 - z) * hprev + z * hbar
    }
    // ANCHOR_END: gru_cell
}

/// `nn.LSTMCell(n_embd, n_embd2)`: PyTorch's cell, its weights named and
/// ordered as PyTorch's (`weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`), its
/// four gates stacked in PyTorch's order: input, forget, cell, output.
#[derive(Clone, Debug)]
pub struct LstmCell {
    /// `(4·n_embd2, n_embd)`.
    pub weight_ih: ParamId,
    /// `(4·n_embd2, n_embd2)`.
    pub weight_hh: ParamId,
    /// `(4·n_embd2,)`.
    pub bias_ih: ParamId,
    /// `(4·n_embd2,)`.
    pub bias_hh: ParamId,
}

impl LstmCell {
    /// `nn.LSTMCell(input, hidden)`: `reset_parameters` draws every parameter,
    /// in order, from U(−1/√hidden, 1/√hidden).
    pub fn new(init: &mut Init, name: &str, input: usize, hidden: usize) -> LstmCell {
        let bound = (1.0 / (hidden as f64).sqrt()) as f32;
        let mut draw = |n: &str, shape: &[usize]| {
            let value = init.rng.uniform(-bound, bound, shape);
            init.params.add(&format!("{name}.{n}"), value)
        };
        LstmCell {
            weight_ih: draw("weight_ih", &[4 * hidden, input]),
            weight_hh: draw("weight_hh", &[4 * hidden, hidden]),
            bias_ih: draw("bias_ih", &[4 * hidden]),
            bias_hh: draw("bias_hh", &[4 * hidden]),
        }
    }

    // ANCHOR: lstm_cell
    /// `(B, input), ((B, hidden), (B, hidden)) -> ((B, hidden), (B, hidden))`,
    /// as ATen's `LSTMCell` computes it on the CPU (`RNN.cpp`).
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        xt: Var<'g>,
        (hprev, cprev): (Var<'g>, Var<'g>),
    ) -> (Var<'g>, Var<'g>) {
        let hidden = hprev.shape()[1];
        let p = |id| pass.param(id);
        let gates = hprev.linear(p(self.weight_hh), Some(p(self.bias_hh)))
            + xt.linear(p(self.weight_ih), Some(p(self.bias_ih))); // (B, 4·hidden)
        let gate = |i: usize| gates.narrow(1, i * hidden, hidden); // (B, hidden)
        let ingate = gate(0).sigmoid(); // (B, hidden)
        let forgetgate = gate(1).sigmoid(); // (B, hidden)
        let cellgate = gate(2).tanh(); // (B, hidden)
        let outgate = gate(3).sigmoid(); // (B, hidden)
        let c = forgetgate * cprev + ingate * cellgate; // (B, hidden)
        let h = outgate * c.tanh(); // (B, hidden)
        (h, c)
    }
    // ANCHOR_END: lstm_cell
}

/// The recurrence inside [`Rnn`].
#[derive(Clone, Debug)]
pub enum Cell {
    /// `RNNCell`.
    Rnn(RnnCell),
    /// `GRUCell`.
    Gru(GruCell),
    /// `nn.LSTMCell`, with its cell state.
    Lstm(LstmCell),
}

/// makemore.py's `RNN`: a learned start state, token embeddings, a cell run
/// over time, and a linear decoder.
#[derive(Clone, Debug)]
pub struct Rnn {
    /// The starting hidden state `(1, n_embd2)`, learned.
    pub start: ParamId,
    /// The LSTM's starting cell state `(1, n_embd2)`, learned.
    pub start_c: Option<ParamId>,
    /// Token embeddings `(vocab_size, n_embd)`.
    pub wte: Embedding,
    /// The cell.
    pub cell: Cell,
    /// `nn.Linear(n_embd2, vocab_size)`.
    pub lm_head: Linear,
}

impl Rnn {
    /// Registers `start` (and `start_c`), then builds `wte`, the cell, `lm_head`.
    pub fn new(init: &mut Init, config: &ModelConfig, kind: ModelType) -> Rnn {
        let c2 = config.n_embd2;
        let start = init.params.add("start", Tensor::zeros(&[1, c2]));
        let start_c =
            (kind == ModelType::Lstm).then(|| init.params.add("start_c", Tensor::zeros(&[1, c2])));
        let wte = Embedding::new(init, "wte", config.vocab_size, config.n_embd);
        let cell = match kind {
            ModelType::Rnn => Cell::Rnn(RnnCell::new(init, "cell", config)),
            ModelType::Gru => Cell::Gru(GruCell::new(init, "cell", config)),
            ModelType::Lstm => Cell::Lstm(LstmCell::new(init, "cell", config.n_embd, c2)),
            other => unreachable!("{other} is not a recurrent net"),
        };
        let lm_head = Linear::new(init, "lm_head", c2, config.vocab_size, true);
        Rnn {
            start,
            start_c,
            wte,
            cell,
            lm_head,
        }
    }

    // ANCHOR: rnn_forward
    /// Tokens `(B, T)` to logits `(B, T, vocab_size)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        let emb = self.wte.forward(pass, idx, &[b, t]); // (B, T, n_embd), all at once
        let c = emb.shape()[2];
        let expand = |id| pass.param(id).index_rows(&vec![0; b], &[b]); // (1, n) -> (B, n)
        let mut hprev = expand(self.start); // (B, n_embd2)
        let mut cprev = self.start_c.map(expand); // (B, n_embd2), the LSTM's
        let mut hiddens = Vec::with_capacity(t);
        for i in 0..t {
            let xt = emb.narrow(1, i, 1).reshape(&[b, c]); // (B, n_embd)
            hprev = match &self.cell {
                Cell::Rnn(cell) => cell.forward(pass, xt, hprev),
                Cell::Gru(cell) => cell.forward(pass, xt, hprev),
                Cell::Lstm(cell) => {
                    let (h, c) =
                        cell.forward(pass, xt, (hprev, cprev.expect("an LSTM has start_c")));
                    cprev = Some(c);
                    h
                }
            }; // (B, n_embd2)
            hiddens.push(hprev);
        }
        let hidden = Var::stack(&hiddens, 1); // (B, T, n_embd2)
        self.lm_head.forward(pass, hidden) // (B, T, vocab_size)
    }
    // ANCHOR_END: rnn_forward
}

// ---------------------------------------------------------------------------
// MLP language model

/// makemore.py's `MLP`: the embeddings of the previous `block_size` tokens,
/// concatenated, through one tanh layer (Bengio et al. 2003).
#[derive(Clone, Debug)]
pub struct Mlp {
    /// Token embeddings `(vocab_size + 1, n_embd)`: the extra row is `<BLANK>`,
    /// the token before the beginning of the input.
    pub wte: Embedding,
    /// `mlp.0`: `nn.Linear(block_size · n_embd, n_embd2)`.
    pub hidden: Linear,
    /// `mlp.2`: `nn.Linear(n_embd2, vocab_size)`.
    pub out: Linear,
    /// The context length.
    pub block_size: usize,
    /// `<BLANK>` is token `vocab_size`.
    pub vocab_size: usize,
}

impl Mlp {
    /// Builds `wte`, then `mlp.0` and `mlp.2` (`mlp.1` is the tanh).
    pub fn new(init: &mut Init, config: &ModelConfig) -> Mlp {
        let (c, c2, v, bs) = (
            config.n_embd,
            config.n_embd2,
            config.vocab_size,
            config.block_size,
        );
        Mlp {
            wte: Embedding::new(init, "wte", v + 1, c),
            hidden: Linear::new(init, "mlp.0", bs * c, c2, true),
            out: Linear::new(init, "mlp.2", c2, v, true),
            block_size: bs,
            vocab_size: v,
        }
    }

    // ANCHOR: mlp_forward
    /// Tokens `(B, T)` to logits `(B, T, vocab_size)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        // For each position, the tokens k = 0..block_size places back, <BLANK>
        // before the start: what makemore.py gathers with torch.roll(idx, 1, 1),
        // looked up in one go instead of block_size lookups and a concat.
        let bs = self.block_size;
        let context: Vec<usize> = (0..b * t)
            .flat_map(|i| {
                (0..bs).map(move |k| {
                    if i % t >= k {
                        idx[i - k]
                    } else {
                        self.vocab_size
                    }
                })
            })
            .collect(); // (B, T, block_size)
        let embs = self.wte.forward(pass, &context, &[b, t, bs]); // (B, T, block_size, n_embd)
        let c = embs.shape()[3];
        let x = embs.reshape(&[b, t, bs * c]); // (B, T, block_size · n_embd), as torch.cat(embs, -1)
        let h = self.hidden.forward(pass, x).tanh(); // (B, T, n_embd2)
        self.out.forward(pass, h) // (B, T, vocab_size)
    }
    // ANCHOR_END: mlp_forward
}

// ---------------------------------------------------------------------------
// Bigram language model

/// A lookup table of logits for the next character given the previous one.
#[derive(Clone, Debug)]
pub struct Bigram {
    /// `(vocab_size, vocab_size)`, zeros at init.
    pub logits: ParamId,
}

impl Bigram {
    /// Registers `logits`; draws nothing.
    pub fn new(init: &mut Init, config: &ModelConfig) -> Bigram {
        let n = config.vocab_size;
        Bigram {
            logits: init.params.add("logits", Tensor::zeros(&[n, n])),
        }
    }

    // ANCHOR: bigram_forward
    /// Tokens `(B, T)` to logits `(B, T, vocab_size)`: 'forward pass', lol.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        pass.param(self.logits).index_rows(idx, &[b, t]) // (B, T, vocab_size)
    }
    // ANCHOR_END: bigram_forward
}

// ---------------------------------------------------------------------------

/// One of the models, as `model` in makemore.py's main.
#[derive(Clone, Debug)]
pub enum Model {
    /// `--type transformer`.
    Transformer(Transformer),
    /// `--type bow`.
    Bow(Bow),
    /// `--type rnn`, `gru` or `lstm`.
    Rnn(Rnn),
    /// `--type mlp`.
    Mlp(Mlp),
    /// `--type bigram`.
    Bigram(Bigram),
}

impl Model {
    /// Builds the model of `kind`, drawing from `init` in PyTorch's order.
    pub fn new(kind: ModelType, config: &ModelConfig, init: &mut Init) -> Model {
        match kind {
            ModelType::Transformer => Model::Transformer(transformer(init, config)),
            ModelType::Bigram => Model::Bigram(Bigram::new(init, config)),
            ModelType::Mlp => Model::Mlp(Mlp::new(init, config)),
            ModelType::Rnn | ModelType::Gru | ModelType::Lstm => {
                Model::Rnn(Rnn::new(init, config, kind))
            }
            ModelType::Bow => Model::Bow(Bow::new(init, config)),
        }
    }

    /// Tokens `(B, T)` to logits `(B, T, vocab_size)`.
    pub fn forward<'g>(
        &self,
        pass: &ForwardPass<'g, '_>,
        idx: &[usize],
        b: usize,
        t: usize,
    ) -> Var<'g> {
        match self {
            Model::Transformer(m) => m.forward(pass, idx, b, t),
            Model::Bow(m) => m.forward(pass, idx, b, t),
            Model::Rnn(m) => m.forward(pass, idx, b, t),
            Model::Mlp(m) => m.forward(pass, idx, b, t),
            Model::Bigram(m) => m.forward(pass, idx, b, t),
        }
    }

    /// `get_block_size()`: the longest context `generate` feeds it.
    pub fn block_size(&self, config: &ModelConfig) -> usize {
        match self {
            Model::Bigram(_) => 1, // only one previous character is needed
            _ => config.block_size,
        }
    }

    /// The buffers of the `state_dict`, each with the parameter it comes just
    /// before: the causal masks, `torch.tril(torch.ones(T, T))`.
    pub fn buffers(kind: ModelType, config: &ModelConfig) -> Vec<(String, Tensor, String)> {
        let bs = config.block_size;
        let tril = Tensor::tril_ones(bs, bs);
        match kind {
            ModelType::Transformer => (0..config.n_layer)
                .map(|i| {
                    (
                        format!("transformer.h.{i}.attn.bias"),
                        tril.reshape(&[1, 1, bs, bs]),
                        format!("transformer.h.{i}.attn.c_attn.weight"),
                    )
                })
                .collect(),
            ModelType::Bow => vec![(
                "context_block.cbow.bias".to_string(),
                tril.reshape(&[1, bs, bs]),
                "context_block.mlp.c_fc.weight".to_string(),
            )],
            _ => Vec::new(),
        }
    }
}

/// `model.state_dict()`: every parameter and buffer, in PyTorch's order.
pub fn state_dict(kind: ModelType, config: &ModelConfig, params: &Params) -> Vec<(String, Tensor)> {
    let buffers = Model::buffers(kind, config);
    let mut out = Vec::new();
    for (_, p) in params.iter() {
        for (name, value, before) in &buffers {
            if *before == p.name {
                out.push((name.clone(), value.clone()));
            }
        }
        out.push((p.name.clone(), p.value.clone()));
    }
    out
}

// ANCHOR: loss
/// `F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-1)`:
/// the mean over the positions whose target is not -1.
pub fn cross_entropy_ignoring_padding<'g>(logits: Var<'g>, targets: &[i64]) -> Var<'g> {
    let v = *logits
        .shape()
        .last()
        .expect("logits have a vocabulary axis");
    let logits = logits.reshape(&[targets.len(), v]); // (B·T, V)
    let kept: Vec<usize> = (0..targets.len()).filter(|&i| targets[i] != -1).collect();
    let kept_targets: Vec<usize> = kept.iter().map(|&i| targets[i] as usize).collect();
    logits
        .index_rows(&kept, &[kept.len()]) // (N, V): the positions that count
        .cross_entropy_fast(&kept_targets) // F.cross_entropy, exps in f64 lanes
}
// ANCHOR_END: loss
