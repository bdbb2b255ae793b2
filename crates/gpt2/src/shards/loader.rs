//! The loader that walks the shards: build-nanogpt's final `DataLoaderLite`
//! (69cb21f "switch to FineWeb EDU"), with an epoch's shuffle and a state to
//! resume from.

use super::*;
use tensor::rng::TorchGenerator;

/// splitmix64's finalizer of `a` and `b`: distinct seeds for each (seed,
/// epoch) and (epoch, shard), where a sum would make seed 8's first epoch
/// seed 7's second.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where a loader is: enough to continue from a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LoaderState {
    /// Passes over all shards completed.
    pub epoch: u64,
    /// The index, in this epoch's order, of the shard being read.
    pub current_shard: usize,
    /// The next read's start in that shard.
    pub current_position: usize,
}

// ANCHOR: data_loader
/// build-nanogpt's final `DataLoaderLite`: process `rank` of `world` starts at
/// `B·T·rank`, strides `B·T·world`, and moves to the next shard when
/// `pos + B·T·world + 1 > len`, back to the first after the last.
///
/// With `shuffle`, each epoch visits the shards in a new order and each
/// shard's documents (split before each `<|endoftext|>`) in a new order,
/// from `seed` and the epoch (what build-nanogpt's users ask for in its PR #52);
/// a shuffled shard is read into memory to be reordered.
pub struct DataLoader {
    shards: Vec<TokenShard>,
    b: usize,
    t: usize,
    rank: usize,
    world: usize,
    shuffle: Option<u64>,
    order: Vec<usize>,
    shuffled: Option<TokenShard>,
    state: LoaderState,
}

impl DataLoader {
    /// A loader over `shards`, each of which must hold one stride of every
    /// process and a last target: `B·T·world + 1` tokens.
    pub fn new(
        shards: Vec<TokenShard>,
        (b, t): (usize, usize),
        (rank, world): (usize, usize),
        shuffle: Option<u64>,
    ) -> Result<DataLoader, String> {
        if b == 0 || t == 0 || world == 0 || rank >= world {
            return Err(format!(
                "a loader needs B, T and world above 0 and rank below world (B={b}, T={t}, rank {rank} of {world})"
            ));
        }
        if shards.is_empty() {
            return Err("a loader needs at least one shard".into());
        }
        let stride = b * t * world;
        for shard in &shards {
            if shard.len() < stride + 1 {
                return Err(format!(
                    "{}: {} tokens cannot fill one step of {world} process(es) at {b}×{t} and its last target ({} tokens)",
                    shard.name(),
                    shard.len(),
                    stride + 1
                ));
            }
        }
        let mut loader = DataLoader {
            order: (0..shards.len()).collect(),
            shards,
            b,
            t,
            rank,
            world,
            shuffle,
            shuffled: None,
            state: LoaderState {
                epoch: 0,
                current_shard: 0,
                current_position: 0,
            },
        };
        loader.reset();
        Ok(loader)
    }

    /// Back to the first shard of epoch 0 (build-nanogpt resets the val loader before each evaluation).
    pub fn reset(&mut self) {
        self.restore(LoaderState {
            epoch: 0,
            current_shard: 0,
            current_position: self.b * self.t * self.rank,
        })
        .expect("the start is always a valid state");
    }

    /// Where the loader is.
    pub fn state(&self) -> LoaderState {
        self.state
    }

    /// Continues from a saved state, checking that it fits these shards; on
    /// an error the loader stays where it was.
    pub fn restore(&mut self, state: LoaderState) -> Result<(), String> {
        if state.current_shard >= self.shards.len() {
            return Err(format!(
                "the saved loader is at shard {} of {}",
                state.current_shard,
                self.shards.len()
            ));
        }
        let saved = (self.state, self.order.clone(), self.shuffled.take());
        self.state = state;
        self.order = self.epoch_order(state.epoch);
        self.load_shard();
        let len = self.current().len();
        if state
            .current_position
            .checked_add(self.b * self.t + 1)
            .is_none_or(|end| end > len)
        {
            let err = format!(
                "the saved loader reads {}..{} of {}, which holds {len} tokens",
                state.current_position,
                state.current_position.saturating_add(self.b * self.t + 1),
                self.current().name()
            );
            (self.state, self.order, self.shuffled) = saved;
            return Err(err);
        }
        Ok(())
    }

    fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        match self.shuffle {
            None => (0..self.shards.len()).collect(),
            Some(seed) => TorchGenerator::manual_seed(mix(seed, epoch))
                .randperm(self.shards.len())
                .into_iter()
                .map(|i| i as usize)
                .collect(),
        }
    }

    /// With shuffling, reads the current shard with its documents reordered.
    fn load_shard(&mut self) {
        self.shuffled = self.shuffle.map(|seed| {
            let shard = &self.shards[self.order[self.state.current_shard]];
            let tokens = shard.all();
            let mut starts: Vec<usize> = (0..tokens.len())
                .filter(|&i| i == 0 || tokens[i] == EOT)
                .collect();
            starts.push(tokens.len());
            let docs: Vec<&[u16]> = starts.windows(2).map(|w| &tokens[w[0]..w[1]]).collect();
            let shard_seed = mix(
                mix(seed, self.state.epoch),
                1 + self.state.current_shard as u64,
            );
            let perm = TorchGenerator::manual_seed(shard_seed).randperm(docs.len());
            let reordered = perm
                .iter()
                .flat_map(|&i| docs[i as usize].iter().copied())
                .collect();
            TokenShard::from_tokens(shard.name(), reordered)
        });
    }

    fn current(&self) -> &TokenShard {
        match &self.shuffled {
            Some(shard) => shard,
            None => &self.shards[self.order[self.state.current_shard]],
        }
    }

    /// The next `(x, y)`, each `(B, T)` row-major, `y` one token ahead.
    pub fn next_batch(&mut self) -> (Vec<usize>, Vec<usize>) {
        let n = self.b * self.t;
        let buf = self.current().read(self.state.current_position, n + 1);
        let (x, y) = (buf[..n].to_vec(), buf[1..].to_vec());
        let stride = n * self.world;
        self.state.current_position += stride;
        if self.state.current_position + stride + 1 > self.current().len() {
            self.state.current_shard += 1;
            if self.state.current_shard == self.shards.len() {
                self.state.current_shard = 0;
                self.state.epoch += 1;
                self.order = self.epoch_order(self.state.epoch);
            }
            self.load_shard();
            self.state.current_position = n * self.rank;
        }
        (x, y)
    }
}
// ANCHOR_END: data_loader
