//! Data-parallel training, as build-nanogpt's ba2554a ("add
//! DistributedDataParallel training") does it with PyTorch's DDP, here over
//! MPI ([`crate::mpi`], behind the `mpi` feature):
//! - every process (rank) holds the whole model and the same initial weights;
//! - rank `r` of `world` reads every `world`-th micro-batch, starting at the
//!   `r`-th ([`crate::shards::DataLoader`]);
//! - after the last micro-step the gradients are averaged across ranks, once
//!   per optimizer step ([`average_gradients`]), so every rank takes the same
//!   AdamW step and the weights stay equal;
//! - the loss is averaged for the log, and only rank 0 writes the log, the
//!   checkpoints and the samples.
//!
//! With the same total batch, `world` ranks see the same tokens per step as
//! one process and sum the same gradients in another order, so the loss
//! curves agree to float rounding (`tests/ddp.rs`).
//!
//! DDP itself all-reduces inside `loss.backward()`, in 25 MB buckets as the
//! gradients become ready, and skips that while `require_backward_grad_sync`
//! is false. build-nanogpt sets it true on the last micro-step only; its
//! f6d194b (PR #30) moved the line above the forward pass, which reads it
//! too. Here the all-reduce is a line of its own after the micro-steps, so
//! there is no flag to set in the wrong place.

use autograd::Params;
use tensor::Tensor;

/// The processes of a run and the two collectives training needs. Every
/// rank must call each collective, in the same order, with the same sizes.
pub trait Collective {
    /// This process's rank, `0..world_size()`.
    fn rank(&self) -> usize;
    /// How many processes train together.
    fn world_size(&self) -> usize;
    /// Replaces `values` by their elementwise sum over all ranks, on every rank.
    fn all_reduce_sum(&self, values: &mut [f32], what: &str);
    /// Every rank's `values` (the same length on each), in rank order.
    fn all_gather(&self, values: &[u64], what: &str) -> Vec<u64>;
    /// Rank 0 logs, checkpoints and samples (build-nanogpt's `master_process`).
    fn is_master(&self) -> bool {
        self.rank() == 0
    }
    /// Prints `message` as this rank's error and ends every rank. A rank
    /// that fails alone must not just return: the others would wait for it
    /// at their next exchange, and it at `MPI_Finalize` for them.
    fn abort(&self, message: &str) -> ! {
        eprintln!("error: {message}");
        std::process::exit(1)
    }
}

/// A shared handle, so that the caller that made the ranks can still end
/// them after handing them to a [`crate::recipe::Trainer`].
impl<T: Collective + ?Sized> Collective for std::rc::Rc<T> {
    fn rank(&self) -> usize {
        (**self).rank()
    }
    fn world_size(&self) -> usize {
        (**self).world_size()
    }
    fn all_reduce_sum(&self, values: &mut [f32], what: &str) {
        (**self).all_reduce_sum(values, what)
    }
    fn all_gather(&self, values: &[u64], what: &str) -> Vec<u64> {
        (**self).all_gather(values, what)
    }
    fn abort(&self, message: &str) -> ! {
        (**self).abort(message)
    }
}

/// One process training alone: rank 0 of 1, every collective a no-op.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleProcess;

impl Collective for SingleProcess {
    fn rank(&self) -> usize {
        0
    }
    fn world_size(&self) -> usize {
        1
    }
    fn all_reduce_sum(&self, _values: &mut [f32], _what: &str) {}
    fn all_gather(&self, values: &[u64], _what: &str) -> Vec<u64> {
        values.to_vec()
    }
}

// ANCHOR: average_gradients
/// What DDP's backward hooks do: every parameter's gradient replaced by its
/// mean over the ranks, in one all-reduce of all of them. A parameter
/// without a gradient counts as zeros, so the buffer has the same layout on
/// every rank.
pub fn average_gradients(params: &mut Params, ddp: &dyn Collective) {
    let world = ddp.world_size();
    if world == 1 {
        return;
    }
    let mut flat = Vec::with_capacity(params.count()); // (N,)
    for (_, p) in params.iter() {
        match &p.grad {
            Some(g) => flat.extend_from_slice(&g.to_vec()),
            None => flat.resize(flat.len() + p.value.len(), 0.0),
        }
    }
    ddp.all_reduce_sum(&mut flat, "the gradients");
    let mut rest = &flat[..];
    for (_, p) in params.iter_mut() {
        let (mine, after) = rest.split_at(p.value.len());
        let mean: Vec<f32> = mine.iter().map(|&g| g / world as f32).collect();
        p.grad = Some(Tensor::from_vec(mean, p.value.shape()));
        rest = after;
    }
}
// ANCHOR_END: average_gradients

/// `dist.all_reduce(loss_accum, op=dist.ReduceOp.AVG)`: the mean of `value` over the ranks.
pub fn average(value: f32, ddp: &dyn Collective, what: &str) -> f32 {
    if ddp.world_size() == 1 {
        return value;
    }
    let mut sum = [value];
    ddp.all_reduce_sum(&mut sum, what);
    sum[0] / ddp.world_size() as f32
}

/// A fingerprint of every weight's bits (FNV-1a), equal on two ranks only if
/// their weights are.
pub fn weights_fingerprint(params: &Params) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for (_, p) in params.iter() {
        for v in p.value.to_vec() {
            for byte in v.to_bits().to_le_bytes() {
                hash = (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    hash
}

/// Checks that every rank holds rank 0's weights, as averaged gradients
/// and equal optimizer steps keep them; an MPI library that reduced in a
/// different order on different ranks would show here.
pub fn check_in_sync(params: &Params, ddp: &dyn Collective, step: usize) -> Result<(), String> {
    if ddp.world_size() == 1 {
        return Ok(());
    }
    let all = ddp.all_gather(&[weights_fingerprint(params)], "the weights' fingerprints");
    match all.iter().position(|&f| f != all[0]) {
        None => Ok(()),
        Some(rank) => Err(format!(
            "after step {step}, rank {rank}'s weights differ from rank 0's; the ranks have diverged"
        )),
    }
}

/// The world size that a launcher gives this process in its environment
/// (OpenMPI's `mpirun`, MPICH's, PMIx's and Slurm's `srun`), if one launched it.
pub fn launched_world_size() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_SIZE",
        "SLURM_NTASKS",
    ]
    .iter()
    .find_map(|n| std::env::var(n).ok()?.trim().parse::<usize>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Rank 0 of two, whose partner's every value is `partner`.
    struct PairedWith {
        partner: f32,
        sizes: RefCell<Vec<usize>>,
    }

    impl Collective for PairedWith {
        fn rank(&self) -> usize {
            0
        }
        fn world_size(&self) -> usize {
            2
        }
        fn all_reduce_sum(&self, values: &mut [f32], _what: &str) {
            self.sizes.borrow_mut().push(values.len());
            values.iter_mut().for_each(|v| *v += self.partner);
        }
        fn all_gather(&self, values: &[u64], _what: &str) -> Vec<u64> {
            [values, values].concat()
        }
    }

    #[test]
    fn gradients_become_the_mean_and_a_missing_one_counts_as_zeros() {
        let mut params = Params::new();
        let a = params.add("a", Tensor::from_vec(vec![0.0; 3], &[3]));
        let b = params.add("b", Tensor::from_vec(vec![0.0; 2], &[1, 2]));
        params.get_mut(a).grad = Some(Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]));
        let ddp = PairedWith {
            partner: 5.0,
            sizes: RefCell::new(Vec::new()),
        };
        average_gradients(&mut params, &ddp);
        assert_eq!(
            *ddp.sizes.borrow(),
            vec![5],
            "one all-reduce of all 5 entries"
        );
        let grad = |id| params.get(id).grad.as_ref().unwrap().to_vec();
        assert_eq!(grad(a), vec![3.0, 3.5, 4.0]);
        assert_eq!(grad(b), vec![2.5, 2.5]);
        assert_eq!(params.get(b).grad.as_ref().unwrap().shape(), &[1, 2]);
        assert_eq!(average(1.0, &ddp, "loss"), 3.0);
    }

    #[test]
    fn an_accumulated_step_exchanges_the_gradients_once_not_per_micro_step() {
        use crate::model::{Gpt, GptConfig, InitScheme};
        use crate::train::{accumulated_step, configure_optimizers};

        let config = GptConfig {
            block_size: 8,
            vocab_size: 16,
            n_layer: 1,
            n_head: 2,
            n_embd: 8,
        };
        let (model, mut params) = Gpt::seeded(config, InitScheme::Gpt2, 1337);
        let mut optimizer = configure_optimizers(&params, 0.1, 6e-4);
        let ids: Vec<usize> = (0..2 * 8 + 1).map(|i| (i * 5) % 16).collect();
        let mut next_batch = || (ids[..16].to_vec(), ids[1..].to_vec());
        let ddp = PairedWith {
            partner: 0.0,
            sizes: RefCell::new(Vec::new()),
        };
        // 4 micro-steps; build-nanogpt's DDP syncs only on the last (f6d194b).
        accumulated_step(
            &model,
            &mut params,
            &mut optimizer,
            &mut next_batch,
            (2, 8),
            4,
            6e-4,
            &ddp,
        );
        assert_eq!(
            *ddp.sizes.borrow(),
            vec![params.count(), 1],
            "the gradients once, then the loss"
        );
    }

    #[test]
    fn one_process_changes_nothing() {
        let mut params = Params::new();
        let a = params.add("a", Tensor::from_vec(vec![0.0; 2], &[2]));
        params.get_mut(a).grad = Some(Tensor::from_vec(vec![0.1, 0.7], &[2]));
        average_gradients(&mut params, &SingleProcess);
        assert_eq!(
            params.get(a).grad.as_ref().unwrap().to_vec(),
            vec![0.1, 0.7]
        );
        assert_eq!(average(0.3, &SingleProcess, "loss"), 0.3);
        assert!(check_in_sync(&params, &SingleProcess, 0).is_ok());
    }

    #[test]
    fn a_changed_weight_changes_the_fingerprint() {
        let mut params = Params::new();
        let a = params.add("a", Tensor::from_vec(vec![1.0, 2.0], &[2]));
        let before = weights_fingerprint(&params);
        params.get_mut(a).value =
            Tensor::from_vec(vec![1.0, f32::from_bits(2.0f32.to_bits() + 1)], &[2]);
        assert_ne!(weights_fingerprint(&params), before);
    }
}
