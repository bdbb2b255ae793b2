//! nanochat's `optim.py` at 92d63d4: `MuonAdamW`, AdamW for the embeddings, the head and the
//! scalars, Muon for the blocks' matrices, on one process.
//!
//! Muon (Keller Jordan, modded-nanogpt) as nanochat runs it: Nesterov momentum, MuonEq's row
//! equilibration, five Polar Express steps (Amsel et al., arXiv 2505.16932) towards the nearest
//! orthogonal matrix, Muon+'s snap of the Frobenius norm to √min(m, n), NorMuon's per-row (or
//! per-column) second moment (arXiv 2510.05491), and cautious weight decay.
//!
//! Hyperparameters reach the fused steps as 0-D float32 tensors, so their arithmetic (`1 − lr·wd`,
//! `β^t`) is done here in f32 too.

use autograd::{ParamId, Params};
use serde::{Deserialize, Serialize};
use tensor::Tensor;

/// Polar Express' coefficients `(a, b, c)` for five steps (safety factor 2e-2, cushion 2).
pub const POLAR_EXPRESS_COEFFS: [(f64, f64, f64); 5] = [
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
];

/// What a group's parameters are trained with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Kind {
    /// AdamW with these betas, eps and (decoupled) weight decay.
    AdamW {
        /// `(β1, β2)`.
        betas: (f64, f64),
        /// Added to the denominator.
        eps: f64,
        /// Decoupled weight decay.
        weight_decay: f64,
    },
    /// Muon; every parameter of the group has the same shape.
    Muon {
        /// Nesterov momentum (base_train ramps it).
        momentum: f64,
        /// Polar Express steps.
        ns_steps: usize,
        /// β2 of the factored second moment.
        beta2: f64,
        /// Cautious weight decay (base_train decays it on a cosine).
        weight_decay: f64,
    },
}

/// One `param_groups` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The parameters, in the order `setup_optimizer` lists them.
    pub params: Vec<ParamId>,
    /// This step's learning rate.
    pub lr: f64,
    /// The learning rate the schedule multiplies.
    pub initial_lr: f64,
    /// AdamW or Muon, with their settings.
    pub kind: Kind,
}

/// A parameter's AdamW state.
#[derive(Clone, Debug, Default)]
pub struct AdamState {
    /// Steps taken.
    pub step: u64,
    /// First moment, the parameter's shape.
    pub exp_avg: Vec<f32>,
    /// Second moment.
    pub exp_avg_sq: Vec<f32>,
}

/// A Muon parameter's state.
#[derive(Clone, Debug, Default)]
pub struct MuonState {
    /// The momentum buffer, the parameter's shape.
    pub momentum_buffer: Vec<f32>,
    /// The factored second moment: one per row (m ≥ n) or per column.
    pub second_momentum_buffer: Vec<f32>,
}

/// `MuonAdamW(param_groups)`.
#[derive(Clone, Debug)]
pub struct MuonAdamW {
    /// The groups, AdamW's first.
    pub groups: Vec<Group>,
    /// AdamW state by parameter, empty until its first step.
    pub adam: Vec<Option<AdamState>>,
    /// Muon state by parameter.
    pub muon: Vec<Option<MuonState>>,
}

/// `torch.lerp(start, end, weight)` as PyTorch's CPU kernel computes it.
fn lerp(start: f32, end: f32, weight: f32) -> f32 {
    if weight.abs() < 0.5 {
        start + weight * (end - start)
    } else {
        end - (end - start) * (1.0 - weight)
    }
}

impl MuonAdamW {
    /// The optimizer over `params`, state created on first use.
    pub fn new(groups: Vec<Group>, params: &Params) -> MuonAdamW {
        MuonAdamW {
            groups,
            adam: vec![None; params.len()],
            muon: vec![None; params.len()],
        }
    }

    /// Every group's learning rate set to its `initial_lr × multiplier`; Muon's momentum and
    /// weight decay to the schedule's.
    pub fn schedule(&mut self, lr_multiplier: f64, muon_momentum: f64, muon_weight_decay: f64) {
        self.schedule_lr_and_momentum(lr_multiplier, muon_momentum);
        for group in &mut self.groups {
            if let Kind::Muon { weight_decay, .. } = &mut group.kind {
                *weight_decay = muon_weight_decay;
            }
        }
    }

    /// chat_sft.py's schedule: every group's learning rate and Muon's momentum; the weight
    /// decay left as it is.
    pub fn schedule_lr_and_momentum(&mut self, lr_multiplier: f64, muon_momentum: f64) {
        for group in &mut self.groups {
            group.lr = group.initial_lr * lr_multiplier;
            if let Kind::Muon { momentum, .. } = &mut group.kind {
                *momentum = muon_momentum;
            }
        }
    }

    /// `optimizer.step()`: every parameter with a gradient, updated in place.
    pub fn step(&mut self, params: &mut Params) {
        for group in &self.groups {
            for &id in &group.params {
                let Some(grad) = params.get(id).grad.as_ref().map(Tensor::to_vec) else {
                    continue;
                };
                let param = params.get_mut(id);
                let shape = param.value.shape().to_vec();
                let mut p = param.value.to_vec();
                match group.kind {
                    Kind::AdamW {
                        betas,
                        eps,
                        weight_decay,
                    } => {
                        let state = self.adam[id.0].get_or_insert_with(|| AdamState {
                            step: 0,
                            exp_avg: vec![0.0; p.len()],
                            exp_avg_sq: vec![0.0; p.len()],
                        });
                        state.step += 1;
                        adamw_step(&mut p, &grad, state, group.lr, betas, eps, weight_decay);
                    }
                    Kind::Muon {
                        momentum,
                        ns_steps,
                        beta2,
                        weight_decay,
                    } => {
                        let (m, n) = (shape[0], shape[1]);
                        let state = self.muon[id.0].get_or_insert_with(|| MuonState {
                            momentum_buffer: vec![0.0; p.len()],
                            second_momentum_buffer: vec![0.0; if m >= n { m } else { n }],
                        });
                        // Tall matrices take a larger step: lr·√max(1, m/n).
                        let lr = group.lr * (m as f64 / n as f64).max(1.0).sqrt();
                        let hyper = MuonStep {
                            momentum: momentum as f32,
                            lr: lr as f32,
                            weight_decay: weight_decay as f32,
                            beta2: beta2 as f32,
                            ns_steps,
                        };
                        muon_step(&mut p, grad, (m, n), state, &hyper);
                    }
                }
                param.value = Tensor::from_vec(p, &shape);
            }
        }
    }
}

// ANCHOR: adamw_step
/// `adamw_step_fused`: decoupled weight decay, the two running averages, bias correction, the
/// update; in f32 throughout, as the 0-D tensors hold the hyperparameters.
fn adamw_step(
    p: &mut [f32],
    grad: &[f32],
    state: &mut AdamState,
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
) {
    let (lr, eps, wd) = (lr as f32, eps as f32, weight_decay as f32);
    let (beta1, beta2) = (betas.0 as f32, betas.1 as f32);
    let step = state.step as f32;
    let decay = 1.0 - lr * wd;
    let bias1 = 1.0 - beta1.powf(step);
    let bias2 = 1.0 - beta2.powf(step);
    let step_size = lr / bias1;
    for i in 0..p.len() {
        let g = grad[i];
        let m = lerp(state.exp_avg[i], g, 1.0 - beta1);
        let v = lerp(state.exp_avg_sq[i], g * g, 1.0 - beta2);
        state.exp_avg[i] = m;
        state.exp_avg_sq[i] = v;
        let denom = (v / bias2).sqrt() + eps;
        p[i] = p[i] * decay + -step_size * (m / denom);
    }
}
// ANCHOR_END: adamw_step

/// One Muon group's hyperparameters for this step, as f32.
struct MuonStep {
    momentum: f32,
    lr: f32,
    weight_decay: f32,
    beta2: f32,
    ns_steps: usize,
}

/// The Frobenius norm, accumulated in f64.
fn frobenius(x: &[f32]) -> f32 {
    x.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt() as f32
}

// ANCHOR: polar_express
/// Polar Express: `x` (m, n), scaled below norm 1, pushed towards `U Vᵀ` of its SVD by `steps`
/// odd polynomials `a·X + b·(X Xᵀ) X + c·(X Xᵀ)² X`, on the smaller Gram matrix.
pub fn polar_express(x: &[f32], (m, n): (usize, usize), steps: usize) -> Vec<f32> {
    let fro = frobenius(x);
    let scale = fro * 1.01 + 1e-6;
    let mut x = Tensor::from_vec(x.iter().map(|&v| v / scale).collect(), &[m, n]); // (m, n)
    for &(a, b, c) in &POLAR_EXPRESS_COEFFS[..steps] {
        let (a, b, c) = (a as f32, b as f32, c as f32);
        x = if m > n {
            let gram = x.t().matmul(&x); // (n, n)
            let poly = &gram.mul_scalar(b) + &gram.matmul(&gram).mul_scalar(c); // (n, n)
            &x.mul_scalar(a) + &x.matmul(&poly) // (m, n)
        } else {
            let gram = x.matmul(&x.t()); // (m, m)
            let poly = &gram.mul_scalar(b) + &gram.matmul(&gram).mul_scalar(c); // (m, m)
            &x.mul_scalar(a) + &poly.matmul(&x) // (m, n)
        };
    }
    x.to_vec()
}
// ANCHOR_END: polar_express

// ANCHOR: muon_step
/// `muon_step_fused` on one matrix `p` (m, n) with its gradient.
fn muon_step(
    p: &mut [f32],
    mut grad: Vec<f32>,
    (m, n): (usize, usize),
    state: &mut MuonState,
    h: &MuonStep,
) {
    // Nesterov momentum: the buffer follows the gradient, the step looks one step ahead.
    for (g, buf) in grad.iter_mut().zip(state.momentum_buffer.iter_mut()) {
        *buf = lerp(*buf, *g, 1.0 - h.momentum);
        *g = lerp(*g, *buf, h.momentum);
    }
    // MuonEq: every row rescaled to the mean row norm, for a better conditioned spectrum.
    let target = frobenius(&grad) / (m as f32).sqrt();
    for row in grad.chunks_mut(n) {
        let factor = target / frobenius(row).max(1e-6);
        row.iter_mut().for_each(|v| *v *= factor);
    }
    let mut g = polar_express(&grad, (m, n), h.ns_steps);
    // Muon+: the norm of an exactly semi-orthogonal matrix.
    let factor = (m.min(n) as f32).sqrt() / frobenius(&g).max(1e-6);
    g.iter_mut().for_each(|v| *v *= factor);
    // NorMuon: a second moment per row (m ≥ n) or per column, keeping the update's total norm.
    let by_row = m >= n;
    let reduced = if by_row { n } else { m };
    let mut v_mean = vec![0f32; if by_row { m } else { n }];
    for i in 0..m {
        for j in 0..n {
            let sq = g[i * n + j] * g[i * n + j];
            v_mean[if by_row { i } else { j }] += sq;
        }
    }
    v_mean.iter_mut().for_each(|v| *v /= reduced as f32);
    let v_norm = (v_mean.iter().map(|&v| v as f64).sum::<f64>() as f32 * reduced as f32).sqrt();
    let second = &mut state.second_momentum_buffer;
    let mut step_size = vec![0f32; v_mean.len()];
    let mut scaled_sq_sum = 0f64;
    for k in 0..v_mean.len() {
        second[k] = lerp(second[k], v_mean[k], 1.0 - h.beta2);
        step_size[k] = 1.0 / second[k].max(1e-10).sqrt();
        scaled_sq_sum += (v_mean[k] * reduced as f32 * step_size[k] * step_size[k]) as f64;
    }
    let v_norm_new = (scaled_sq_sum as f32).sqrt();
    let ratio = v_norm / v_norm_new.max(1e-10);
    // Cautious weight decay: only where the update and the weight agree in sign.
    let decay = h.lr * h.weight_decay;
    for i in 0..m {
        for j in 0..n {
            let k = i * n + j;
            let update = g[k] * (step_size[if by_row { i } else { j }] * ratio);
            let mask = if update * p[k] >= 0.0 { 1.0 } else { 0.0 };
            p[k] -= h.lr * update + decay * p[k] * mask;
        }
    }
}
// ANCHOR_END: muon_step
