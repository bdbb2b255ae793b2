//! Exercise E02: fold a trained `BatchNorm1d` into the `Linear` before it.
//!
//! In evaluation mode batch norm is a fixed affine map per feature:
//! `y = gamma · (x@W − mean) / sqrt(var + eps) + beta`. With
//! `s = gamma / sqrt(var + eps)` that is `x @ (W·s) + (beta − mean·s)`: one
//! Linear layer with a bias, and no batch norm left at inference.

use crate::nn::{BatchNorm1d, Linear};
use crate::torchified::TorchifiedMlp;
use autograd::Params;
use data::makemore::Dataset;
use tensor::Tensor;

// ANCHOR: fold
/// The weight `(fan_in, fan_out)` and bias `(fan_out,)` of the Linear that
/// equals `bn(linear(x))` in evaluation mode. The fold is computed in f64 and
/// rounded once, so the folded layer differs from the pair only by the
/// rounding of its own forward pass.
pub fn fold(linear: &Linear, bn: &BatchNorm1d, params: &Params) -> (Tensor, Tensor) {
    let w = params.value(linear.weight);
    let (fan_in, fan_out) = (w.shape()[0], w.shape()[1]);
    let gamma = params.value(bn.gamma).to_vec();
    let beta = params.value(bn.beta).to_vec();
    let mean = bn.running_mean.to_vec();
    let var = bn.running_var.to_vec();
    let bias0 = linear.bias.map(|b| params.value(b).to_vec());
    let scale: Vec<f64> = (0..fan_out)
        .map(|j| gamma[j] as f64 / (var[j] as f64 + bn.eps as f64).sqrt())
        .collect();
    let w = w.to_vec();
    let folded_w: Vec<f32> = (0..fan_in * fan_out)
        .map(|k| (w[k] as f64 * scale[k % fan_out]) as f32)
        .collect();
    let folded_b: Vec<f32> = (0..fan_out)
        .map(|j| {
            let b = bias0.as_ref().map_or(0.0, |b| b[j] as f64);
            (beta[j] as f64 + (b - mean[j] as f64) * scale[j]) as f32
        })
        .collect();
    (
        Tensor::from_vec(folded_w, &[fan_in, fan_out]),
        Tensor::from_vec(folded_b, &[fan_out]),
    )
}
// ANCHOR_END: fold

// ANCHOR: e02
/// E02 on the trained torchified net: folds every `Linear → BatchNorm1d` pair
/// and runs the folded network (Linear with bias, Tanh) over `val`. Returns
/// how many pairs were folded and the largest logit difference from the net in
/// evaluation mode.
pub fn folded_logits_gap(net: &TorchifiedMlp, val: &Dataset) -> Result<(usize, f32), String> {
    let layers = &net.layers.layers;
    let mut folded = Vec::new();
    let mut k = 0;
    while k < layers.len() {
        let linear = layers[k]
            .as_any()
            .downcast_ref::<Linear>()
            .ok_or("E02: expected a Linear")?;
        let bn = layers[k + 1]
            .as_any()
            .downcast_ref::<BatchNorm1d>()
            .ok_or("E02: expected a BatchNorm1d")?;
        folded.push(fold(linear, bn, &net.params));
        k += if k + 2 < layers.len() { 3 } else { 2 };
    }
    let (xv, _) = val.range(0, val.len());
    let n = val.len();
    let reference = eval_logits(net, &xv);
    let c = net.params.value(net.c);
    let mut x = c.index_rows(&xv, &[n, 3]).reshape(&[n, 30]); // (N, 30)
    for (j, (w, b)) in folded.iter().enumerate() {
        x = x.matmul(w).add(b); // (N, fan_out)
        if j + 1 < folded.len() {
            x = x.tanh();
        }
    }
    let gap = x
        .sub(&reference)
        .to_vec()
        .iter()
        .fold(0.0f32, |m, d| m.max(d.abs()));
    Ok((folded.len(), gap))
}
// ANCHOR_END: e02

/// The torchified net's logits in evaluation mode, computed from a shared
/// reference (in evaluation mode batch norm changes no state).
fn eval_logits(net: &TorchifiedMlp, xb: &[usize]) -> Tensor {
    let n = xb.len() / 3;
    let mut x = net
        .params
        .value(net.c)
        .index_rows(xb, &[n, 3])
        .reshape(&[n, 30]); // (N, 30)
    for layer in &net.layers.layers {
        x = if let Some(l) = layer.as_any().downcast_ref::<Linear>() {
            x.matmul(net.params.value(l.weight)) // (N, fan_out)
        } else if let Some(bn) = layer.as_any().downcast_ref::<BatchNorm1d>() {
            let xhat = x
                .sub(&bn.running_mean)
                .div(&bn.running_var.add_scalar(bn.eps).sqrt());
            net.params
                .value(bn.gamma)
                .mul(&xhat)
                .add(net.params.value(bn.beta)) // (N, fan_out)
        } else {
            x.tanh()
        };
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Module;
    use autograd::Graph;
    #[allow(unused_imports)]
    use autograd::{ForwardPass, Init, Params};
    #[allow(unused_imports)]
    use tensor::rng::TorchGenerator;

    #[test]
    fn folded_linear_equals_linear_then_batchnorm_in_eval_mode() {
        let mut g = TorchGenerator::manual_seed(7);
        let mut params = Params::new();
        let mut linear = Linear::new(&mut Init::new(&mut params, &mut g), "l", 6, 4, true);
        params.get_mut(linear.bias.unwrap()).value = g.randn(&[4]);
        let mut bn = BatchNorm1d::new(
            &mut Init::new(&mut params, &mut TorchGenerator::manual_seed(0)),
            "bn",
            4,
        );
        params.get_mut(bn.gamma).value = g.randn(&[4]);
        params.get_mut(bn.beta).value = g.randn(&[4]);
        bn.running_mean = g.randn(&[4]);
        bn.running_var = g.rand(&[4]).add_scalar(0.5);
        bn.set_training(false);

        let x = g.randn(&[5, 6]);
        let graph = Graph::no_grad();
        let h = linear.forward(
            &ForwardPass::eval(&graph, &params),
            graph.constant(x.clone()),
        );
        let want = bn.forward(&ForwardPass::eval(&graph, &params), h).value();
        let (w, b) = fold(&linear, &bn, &params);
        let got = x.matmul(&w).add(&b);
        for (g, w) in got.to_vec().iter().zip(want.to_vec()) {
            assert!((g - w).abs() < 1e-5, "folded {g}, unfolded {w}");
        }
    }
}
