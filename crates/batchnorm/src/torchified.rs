//! Model B, the "PyTorch-ified" deep network (cell[13]), and the same stack
//! without batch norm for the lecture's gain experiments.
//!
//! With batch norm: `C`, then five `Linear(bias=false) → BatchNorm1d → Tanh`
//! blocks of 100 units and `Linear(100, 27, bias=false) → BatchNorm1d(27)`, the
//! last gamma scaled by 0.1 ("make less confident"): 47,024 parameters.
//! Without: `Linear(bias=true) → Tanh` blocks, the last layer's weight scaled by
//! 0.1, and every other Linear weight multiplied by the gain under study.

use crate::nn::{BatchNorm1d, Linear, Module, Sequential, Tanh};
use autograd::{ForwardPass, Graph, Init, ParamId, Params, Var};
use tensor::rng::TorchGenerator;

/// Embedding size.
pub const N_EMBD: usize = 10;
/// Units per hidden layer.
pub const N_HIDDEN: usize = 100;
/// Context length.
pub const BLOCK_SIZE: usize = 3;
/// Vocabulary size.
pub const VOCAB: usize = 27;
/// Hidden blocks.
pub const DEPTH: usize = 5;

/// The embedding table and the layer stack.
pub struct TorchifiedMlp {
    /// `[C] + [p for layer in layers for p in layer.parameters()]`.
    pub params: Params,
    /// The embedding table, `(27, 10)`.
    pub c: ParamId,
    /// The layers.
    pub layers: Sequential,
}

impl TorchifiedMlp {
    // ANCHOR: model_b
    /// Draws `C` and then each Linear's weight from `g`, in the lecture's order.
    /// `gain` multiplies every Linear weight but the last (the lecture's `5/3` experiments).
    pub fn new(g: &mut TorchGenerator, batchnorm: bool, gain: f32) -> TorchifiedMlp {
        let mut params = Params::new();
        let mut init = Init::new(&mut params, g);
        let c = init.params.add("C", init.rng.randn(&[VOCAB, N_EMBD]));
        let mut layers: Vec<Box<dyn Module>> = Vec::new();
        for i in 0..DEPTH {
            let fan_in = if i == 0 {
                N_EMBD * BLOCK_SIZE
            } else {
                N_HIDDEN
            };
            let linear = Linear::new(
                &mut init,
                &format!("layer{i}"),
                fan_in,
                N_HIDDEN,
                !batchnorm,
            );
            let w = init.params.get_mut(linear.weight);
            w.value = w.value.mul_scalar(gain);
            layers.push(Box::new(linear));
            if batchnorm {
                layers.push(Box::new(BatchNorm1d::new(
                    &mut init,
                    &format!("bn{i}"),
                    N_HIDDEN,
                )));
            }
            layers.push(Box::new(Tanh));
        }
        let last = Linear::new(&mut init, "out", N_HIDDEN, VOCAB, !batchnorm);
        if batchnorm {
            layers.push(Box::new(last));
            let bn = BatchNorm1d::new(&mut init, "bn_out", VOCAB);
            let gamma = init.params.get_mut(bn.gamma);
            gamma.value = gamma.value.mul_scalar(0.1); // last layer: make less confident
            layers.push(Box::new(bn));
        } else {
            let w = init.params.get_mut(last.weight);
            w.value = w.value.mul_scalar(0.1);
            layers.push(Box::new(last));
        }
        TorchifiedMlp {
            params,
            c,
            layers: Sequential::new(layers),
        }
    }
    // ANCHOR_END: model_b

    /// Every layer's output for contexts `xb` (row-major `(B, 3)`); the last is the logits `(B, 27)`.
    pub fn forward_traced<'g>(&mut self, graph: &'g Graph, xb: &[usize]) -> Vec<Var<'g>> {
        let b = xb.len() / BLOCK_SIZE;
        let emb = graph
            .param(&self.params, self.c)
            .index_rows(xb, &[b, BLOCK_SIZE]); // (B, 3, 10)
        let x = emb.reshape(&[b, BLOCK_SIZE * N_EMBD]); // (B, 30)
        self.layers
            .forward_traced(&ForwardPass::eval(graph, &self.params), x)
    }

    /// The indices of the Tanh layers in the stack (the lecture's `isinstance(layer, Tanh)`).
    pub fn tanh_layers(&self) -> Vec<usize> {
        let layers = self.layers.layers.iter().enumerate();
        layers
            .filter(|(_, l)| l.name() == "Tanh")
            .map(|(i, _)| i)
            .collect()
    }

    /// The logits `(B, 27)`.
    pub fn forward<'g>(&mut self, graph: &'g Graph, xb: &[usize]) -> Var<'g> {
        let b = xb.len() / BLOCK_SIZE;
        let emb = graph
            .param(&self.params, self.c)
            .index_rows(xb, &[b, BLOCK_SIZE]); // (B, 3, 10)
        let x = emb.reshape(&[b, BLOCK_SIZE * N_EMBD]); // (B, 30)
        self.layers
            .forward(&ForwardPass::eval(graph, &self.params), x)
    }
}
