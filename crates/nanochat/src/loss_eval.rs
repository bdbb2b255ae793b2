//! nanochat's `loss_eval.py`: bits per byte, a loss that does not depend on the vocabulary.

use crate::gpt::Gpt;

/// A batch of `B × T` inputs and targets, row-major, as the loaders hand them out.
pub type Batch = (Vec<u32>, Vec<i32>);

// ANCHOR: evaluate_bpb
/// `evaluate_bpb`: over `steps` batches, the summed loss in nats of the targets that are text
/// (special tokens have no bytes and are left out, as are targets of −1), divided by
/// ln 2 × the bytes those targets stand for. The sum is kept in f32, as nanochat keeps it.
pub fn evaluate_bpb(
    model: &Gpt,
    next_batch: &mut dyn FnMut() -> Result<Batch, String>,
    batch_size: usize,
    steps: usize,
    token_bytes: &[u32],
) -> Result<f64, String> {
    let mut total_nats = 0f32;
    let mut total_bytes = 0u64;
    for _ in 0..steps {
        let (x, y) = next_batch()?;
        let losses = model.token_losses(&x, &y, batch_size); // (B·T)
        let mut nats = 0f32;
        for (&loss, &target) in losses.iter().zip(&y) {
            let bytes = if target < 0 {
                0
            } else {
                token_bytes[target as usize]
            };
            nats += if bytes > 0 { loss } else { 0.0 };
            total_bytes += bytes as u64;
        }
        total_nats += nats;
    }
    if total_bytes == 0 {
        return Ok(f64::INFINITY);
    }
    Ok(total_nats as f64 / (std::f64::consts::LN_2 * total_bytes as f64))
}
// ANCHOR_END: evaluate_bpb
