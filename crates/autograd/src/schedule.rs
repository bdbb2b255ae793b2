//! Learning-rate schedules of the lectures.

/// Step decay: `base` until the first boundary, then each boundary's rate.
/// The makemore lectures use `step_decay(i, 0.1, &[(100_000, 0.01)])`.
pub fn step_decay(step: usize, base: f32, boundaries: &[(usize, f32)]) -> f32 {
    boundaries
        .iter()
        .rfind(|(at, _)| step >= *at)
        .map_or(base, |&(_, lr)| lr)
}

/// nanoGPT's schedule: linear warmup `lr·(it+1)/(warmup+1)`, then cosine decay to
/// `min_lr` at `decay_iters`, then `min_lr`.
pub fn nanogpt_warmup_cosine(
    it: usize,
    lr: f32,
    warmup: usize,
    decay_iters: usize,
    min_lr: f32,
) -> f32 {
    if it < warmup {
        return lr * (it as f32 + 1.0) / (warmup as f32 + 1.0);
    }
    if it > decay_iters {
        return min_lr;
    }
    let ratio = (it - warmup) as f64 / (decay_iters - warmup) as f64;
    let coeff = 0.5 * (1.0 + (std::f64::consts::PI * ratio).cos());
    min_lr + (coeff as f32) * (lr - min_lr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_decay_switches_at_the_boundary() {
        assert_eq!(step_decay(99_999, 0.1, &[(100_000, 0.01)]), 0.1);
        assert_eq!(step_decay(100_000, 0.1, &[(100_000, 0.01)]), 0.01);
    }

    // nanoGPT's get_lr with learning_rate 1e-3, warmup 100, lr_decay_iters 2000, min_lr 1e-4.
    #[test]
    fn warmup_cosine_matches_nanogpt() {
        assert!((nanogpt_warmup_cosine(0, 1e-3, 100, 2000, 1e-4) - 1e-3 / 101.0).abs() < 1e-12);
        assert!((nanogpt_warmup_cosine(100, 1e-3, 100, 2000, 1e-4) - 1e-3).abs() < 1e-9);
        assert!((nanogpt_warmup_cosine(1050, 1e-3, 100, 2000, 1e-4) - 5.5e-4).abs() < 1e-9);
        assert!((nanogpt_warmup_cosine(2000, 1e-3, 100, 2000, 1e-4) - 1e-4).abs() < 1e-9);
    }
}
