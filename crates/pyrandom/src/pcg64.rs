//! numpy's modern generator, `np.random.default_rng(seed)`: `SeedSequence`, `PCG64` and
//! `Generator.permutation`.
//!
//! nanochat's `tasks/common.py` shuffles every Hugging Face dataset as `datasets` does,
//! `np.random.default_rng(seed).permutation(len(self))`. The pieces, as numpy 2 writes them
//! (`random/bit_generator.pyx`, `random/src/pcg64/pcg64.h`, `random/_generator.pyx`,
//! `random/src/distributions/distributions.c`):
//! - `SeedSequence(seed)` hashes the seed's 32-bit words into a pool of four, and
//!   `generate_state(4, uint64)` draws the 128-bit state and increment from it;
//! - `PCG64` steps a 128-bit LCG and outputs XSL-RR (the two halves XORed, rotated by the top
//!   six bits); a 32-bit draw uses half of a 64-bit one and keeps the other half;
//! - `permutation(n)` shuffles `arange(n)` from the back, each index drawn by
//!   `random_interval`: masked draws, rejected until within range.

/// `SeedSequence`'s hash constants.
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
const POOL_SIZE: usize = 4;

/// PCG's 128-bit multiplier.
const PCG_MULTIPLIER: u128 = (2_549_297_995_355_413_924u128 << 64) + 4_865_540_595_714_422_341u128;

fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut value = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    value = value.wrapping_mul(*hash_const);
    value ^ (value >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let result = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    result ^ (result >> XSHIFT)
}

/// `SeedSequence(seed).generate_state(4, np.uint64)`.
fn seed_sequence_state(seed: u64) -> [u64; 4] {
    // _coerce_to_uint32_array: the integer's 32-bit words, least significant first.
    let entropy: Vec<u32> = if seed >> 32 == 0 {
        vec![seed as u32]
    } else {
        vec![seed as u32, (seed >> 32) as u32]
    };
    let mut pool = [0u32; POOL_SIZE];
    let mut hash_const = INIT_A;
    for (i, slot) in pool.iter_mut().enumerate() {
        *slot = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash_const);
    }
    for i_src in 0..POOL_SIZE {
        for i_dst in 0..POOL_SIZE {
            if i_src != i_dst {
                let hashed = hashmix(pool[i_src], &mut hash_const);
                pool[i_dst] = mix(pool[i_dst], hashed);
            }
        }
    }
    for &word in entropy.iter().skip(POOL_SIZE) {
        for slot in pool.iter_mut() {
            let hashed = hashmix(word, &mut hash_const);
            *slot = mix(*slot, hashed);
        }
    }
    let mut hash_const = INIT_B;
    let mut words = [0u32; 8];
    for (i, word) in words.iter_mut().enumerate() {
        let mut value = pool[i % POOL_SIZE] ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_B);
        value = value.wrapping_mul(hash_const);
        *word = value ^ (value >> XSHIFT);
    }
    // The uint32 words viewed as little-endian uint64s.
    std::array::from_fn(|i| words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32)
}

/// `np.random.Generator(PCG64(seed))`, as `np.random.default_rng(seed)` makes it.
#[derive(Clone, Debug)]
pub struct Generator {
    state: u128,
    inc: u128,
    /// The upper half of the last 64-bit draw, for the next 32-bit one.
    saved_u32: Option<u32>,
}

impl Generator {
    /// `np.random.default_rng(seed)`.
    pub fn default_rng(seed: u64) -> Generator {
        let [s0, s1, i0, i1] = seed_sequence_state(seed);
        let initstate = (s0 as u128) << 64 | s1 as u128;
        let initseq = (i0 as u128) << 64 | i1 as u128;
        let mut rng = Generator {
            state: 0,
            inc: (initseq << 1) | 1,
            saved_u32: None,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(initstate);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self
            .state
            .wrapping_mul(PCG_MULTIPLIER)
            .wrapping_add(self.inc);
    }

    /// `next_uint64`: the XSL-RR output of the next state.
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let (high, low) = ((self.state >> 64) as u64, self.state as u64);
        (high ^ low).rotate_right((self.state >> 122) as u32)
    }

    /// `next_uint32`: the lower half of a 64-bit draw, its upper half kept for the next call.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(saved) = self.saved_u32.take() {
            return saved;
        }
        let next = self.next_u64();
        self.saved_u32 = Some((next >> 32) as u32);
        next as u32
    }

    /// `random_interval(max)`: uniform in `[0, max]`, by masked draws rejected above `max`.
    pub fn random_interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mut mask = max;
        for shift in [1, 2, 4, 8, 16, 32] {
            mask |= mask >> shift;
        }
        loop {
            let value = if max <= u32::MAX as u64 {
                (self.next_u32() as u64) & mask
            } else {
                self.next_u64() & mask
            };
            if value <= max {
                return value;
            }
        }
    }

    /// `Generator.permutation(n)`: `arange(n)` shuffled from the back.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.random_interval(i as u64) as usize;
            order.swap(i, j);
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Printed by numpy 2.4.6: `np.random.default_rng(42).bit_generator.random_raw(3)`.
    #[test]
    fn raw_draws_match_numpy() {
        let mut rng = Generator::default_rng(42);
        let raw: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(
            raw,
            [
                14276969152011380360,
                8095878257575067585,
                15838336090824644132
            ]
        );
    }

    // Printed by numpy 2.4.6: `np.random.default_rng(seed).permutation(n)`; 2**40 + 5 takes
    // two entropy words, 100,000 the 32-bit draws' rejection many times.
    #[test]
    fn permutations_match_numpy() {
        assert_eq!(
            Generator::default_rng(42).permutation(20),
            [15, 9, 14, 7, 12, 10, 6, 19, 3, 0, 16, 5, 11, 18, 2, 4, 17, 1, 13, 8]
        );
        assert_eq!(
            Generator::default_rng(0).permutation(10),
            [4, 6, 2, 7, 3, 5, 9, 0, 8, 1]
        );
        assert_eq!(
            Generator::default_rng((1 << 40) + 5).permutation(12),
            [9, 5, 1, 2, 8, 3, 0, 10, 7, 4, 6, 11]
        );
        assert_eq!(
            Generator::default_rng(42).permutation(100_000)[..5],
            [45262, 49850, 30394, 90177, 95569]
        );
    }
}
