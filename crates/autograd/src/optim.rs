//! Optimizers and gradient clipping, with PyTorch's semantics.

use crate::params::{ParamId, Params};
use tensor::Tensor;

// ANCHOR: sgd
/// Plain stochastic gradient descent: `p.data += -lr * p.grad`, as in the makemore lectures.
#[derive(Clone, Debug)]
pub struct Sgd {
    /// The learning rate; change it between steps for the lectures' step decay.
    pub lr: f32,
}

impl Sgd {
    /// SGD with a learning rate.
    pub fn new(lr: f32) -> Sgd {
        Sgd { lr }
    }

    /// One update of every parameter that has a gradient.
    pub fn step(&self, params: &mut Params) {
        for (_, p) in params.iter_mut() {
            if let Some(grad) = &p.grad {
                let lr = self.lr;
                p.value = p.value.sub(&grad.mul_scalar(lr));
            }
        }
    }
}
// ANCHOR_END: sgd

/// AdamW's hyperparameters, with PyTorch's defaults.
#[derive(Clone, Debug)]
pub struct AdamWConfig {
    /// Learning rate (default 1e-3).
    pub lr: f32,
    /// β₁, β₂ (default 0.9, 0.999).
    pub betas: (f32, f32),
    /// ε added to the denominator (default 1e-8).
    pub eps: f32,
    /// Decoupled weight decay (default 0.01), for parameters in the decay group.
    pub weight_decay: f32,
}

impl Default for AdamWConfig {
    fn default() -> AdamWConfig {
        AdamWConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }
}

/// AdamW (Loshchilov & Hutter), as `torch.optim.AdamW` computes it on the CPU:
/// decoupled weight decay, bias-corrected moments, and parameter groups.
#[derive(Clone, Debug)]
pub struct AdamW {
    /// Hyperparameters; `lr` may change between steps (schedules).
    pub config: AdamWConfig,
    no_decay: Vec<ParamId>,
    step: u64,
    exp_avg: Vec<Option<Tensor>>,
    exp_avg_sq: Vec<Option<Tensor>>,
}

impl AdamW {
    /// AdamW that decays every parameter (a single parameter group).
    pub fn new(config: AdamWConfig) -> AdamW {
        AdamW {
            config,
            no_decay: Vec::new(),
            step: 0,
            exp_avg: Vec::new(),
            exp_avg_sq: Vec::new(),
        }
    }

    /// Two groups as nanoGPT makes them: weight decay only on parameters with two
    /// or more axes (matrices, embeddings), none on biases and norm gains.
    pub fn decay_matrices_only(config: AdamWConfig, params: &Params) -> AdamW {
        let mut opt = AdamW::new(config);
        opt.no_decay = params
            .iter()
            .filter(|(_, p)| p.value.ndim() < 2)
            .map(|(id, _)| id)
            .collect();
        opt
    }

    /// The number of steps taken.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// The first and second moments of a parameter, for checkpoints.
    pub fn moments(&self, id: ParamId) -> Option<(&Tensor, &Tensor)> {
        match (self.exp_avg.get(id.0), self.exp_avg_sq.get(id.0)) {
            (Some(Some(m)), Some(Some(v))) => Some((m, v)),
            _ => None,
        }
    }

    /// Restores the optimizer state from a checkpoint.
    pub fn restore(&mut self, step: u64, moments: Vec<Option<(Tensor, Tensor)>>) {
        self.step = step;
        self.exp_avg = moments
            .iter()
            .map(|m| m.as_ref().map(|(a, _)| a.clone()))
            .collect();
        self.exp_avg_sq = moments.into_iter().map(|m| m.map(|(_, b)| b)).collect();
    }

    // ANCHOR: adamw_step
    /// One update of every parameter that has a gradient.
    pub fn step(&mut self, params: &mut Params) {
        self.step += 1;
        let AdamWConfig {
            lr,
            betas: (beta1, beta2),
            eps,
            weight_decay,
        } = self.config;
        let t = self.step as i32;
        let bias_correction1 = 1.0 - beta1.powi(t);
        let bias_correction2_sqrt = (1.0 - beta2.powi(t)).sqrt();
        let step_size = lr / bias_correction1;
        self.exp_avg.resize(params.len(), None);
        self.exp_avg_sq.resize(params.len(), None);
        for (id, p) in params.iter_mut() {
            let Some(grad) = &p.grad else { continue };
            let decay = if self.no_decay.contains(&id) {
                0.0
            } else {
                weight_decay
            };
            let m = self.exp_avg[id.0].get_or_insert_with(|| Tensor::zeros(grad.shape()));
            let v = self.exp_avg_sq[id.0].get_or_insert_with(|| Tensor::zeros(grad.shape()));
            // In place: the graph that shared the value is gone by now.
            let mut value = p.value.view_mut();
            let mut m_view = m.view_mut();
            let mut v_view = v.view_mut();
            let update = |x: &mut f32, m: &mut f32, v: &mut f32, g: f32| {
                *x *= 1.0 - lr * decay; // decoupled weight decay
                *m += (g - *m) * (1.0 - beta1); // torch's lerp
                *v = *v * beta2 + (1.0 - beta2) * g * g;
                let denom = v.sqrt() / bias_correction2_sqrt + eps;
                *x += -step_size * *m / denom;
            };
            // A weight's gradient can come out of backward transposed.
            let grad = grad.contiguous();
            let slices = (
                value.as_slice_mut(),
                m_view.as_slice_mut(),
                v_view.as_slice_mut(),
                grad.array().as_slice(),
            );
            if let (Some(xs), Some(ms), Some(vs), Some(gs)) = slices {
                // Contiguous, as parameters are: a loop the compiler
                // vectorises, in pieces across threads.
                tensor::parallel_update(xs, ms, vs, gs, update);
            } else {
                ndarray::Zip::from(&mut value)
                    .and(&mut m_view)
                    .and(&mut v_view)
                    .and(&grad.view())
                    .for_each(|x, m, v, &g| update(x, m, v, g));
            }
        }
    }
    // ANCHOR_END: adamw_step
}

/// Rescales all gradients so that their global L2 norm is at most `max_norm`
/// (`torch.nn.utils.clip_grad_norm_`), and returns the norm before clipping.
pub fn clip_grad_norm(params: &mut Params, max_norm: f32) -> f32 {
    crate::profile::timed("clip_grad_norm", crate::profile::Phase::Update, || {
        clip(params, max_norm)
    })
}

fn clip(params: &mut Params, max_norm: f32) -> f32 {
    // Each gradient's Σ g² in f64 (blocked and across threads, the same bits
    // on any thread count: `tensor::sum_of_squares`), added in order.
    let total: f64 = params
        .iter()
        .filter_map(|(_, p)| p.grad.as_ref())
        .map(|g| match g.array().as_slice() {
            // Row-major, as `Params::accumulate` keeps gradients.
            Some(values) => tensor::sum_of_squares(values),
            None => tensor::sum_of_squares(&g.to_vec()),
        })
        .sum();
    let total = total.sqrt() as f32;
    let coef = (max_norm / (total + 1e-6)).min(1.0);
    if coef < 1.0 {
        for (_, p) in params.iter_mut() {
            if let Some(g) = &mut p.grad {
                let mut view = g.view_mut();
                match view.as_slice_mut() {
                    Some(values) => tensor::scale_in_place(values, coef), // `grads.mul_(coef)`
                    None => view.mapv_inplace(|x| x * coef),
                }
            }
        }
    }
    total
}
