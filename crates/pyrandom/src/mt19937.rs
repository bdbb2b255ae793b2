//! The 32-bit Mersenne Twister of Matsumoto and Nishimura (1998), as in `mt19937ar.c`.

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// MT19937 with both of the reference seeding routines.
///
/// `from_seed` is `init_genrand` (what PyTorch's `manual_seed` uses);
/// `from_key` is `init_by_array` (what CPython's `random.seed` uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mt19937 {
    state: [u32; N],
    index: usize,
}

impl Mt19937 {
    /// `init_genrand(seed)`.
    pub fn from_seed(seed: u32) -> Mt19937 {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: N }
    }

    /// `init_by_array(key)`.
    pub fn from_key(key: &[u32]) -> Mt19937 {
        assert!(!key.is_empty(), "init_by_array needs a non-empty key");
        let mut mt = Mt19937::from_seed(19_650_218);
        let s = &mut mt.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = s[i - 1];
            s[i] = (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = s[i - 1];
            s[i] =
                (s[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    /// `genrand_int32`: the next tempered 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// The next `out.len()` outputs, as that many calls of [`Mt19937::next_u32`]
    /// would give them, a block at a time (the tempering vectorises).
    pub fn fill_u32(&mut self, out: &mut [u32]) {
        let mut filled = 0;
        while filled < out.len() {
            if self.index >= N {
                self.twist();
            }
            let take = (N - self.index).min(out.len() - filled);
            let words = &self.state[self.index..self.index + take];
            for (o, &word) in out[filled..filled + take].iter_mut().zip(words) {
                let mut y = word;
                y ^= y >> 11;
                y ^= (y << 7) & 0x9d2c_5680;
                y ^= (y << 15) & 0xefc6_0000;
                y ^= y >> 18;
                *o = y;
            }
            self.index += take;
            filled += take;
        }
    }

    /// The next 624 state words. `mt19937ar.c`'s three loops, which need no
    /// `% N` (word `k + M` has wrapped to `k + M − N` from `k = N − M` on).
    fn twist(&mut self) {
        fn mix(this: u32, next: u32, far: u32) -> u32 {
            let y = (this & UPPER_MASK) | (next & LOWER_MASK);
            far ^ (y >> 1) ^ ((y & 1).wrapping_neg() & MATRIX_A)
        }
        let s = &mut self.state;
        for k in 0..N - M {
            s[k] = mix(s[k], s[k + 1], s[k + M]);
        }
        for k in N - M..N - 1 {
            s[k] = mix(s[k], s[k + 1], s[k + M - N]);
        }
        s[N - 1] = mix(s[N - 1], s[0], s[M - 1]);
        self.index = 0;
    }

    /// The 624 state words and the position in them, for checkpoints.
    pub fn state(&self) -> (&[u32; N], usize) {
        (&self.state, self.index)
    }

    /// Rebuilds a twister from [`Mt19937::state`].
    pub fn from_state(state: [u32; N], index: usize) -> Mt19937 {
        assert!(index <= N, "MT19937 index {index} is past {N}");
        Mt19937 { state, index }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The reference output of mt19937ar.c: init_by_array({0x123, 0x234, 0x345, 0x456}).
    #[test]
    fn init_by_array_matches_reference_output() {
        let mut mt = Mt19937::from_key(&[0x123, 0x234, 0x345, 0x456]);
        let first: Vec<u32> = (0..5).map(|_| mt.next_u32()).collect();
        assert_eq!(
            first,
            [1067595299, 955945823, 477289528, 4107218783, 4228976476]
        );
    }

    // std::mt19937 with the default seed 5489: the 10000th output is 4123659995 (C++11 [rand.predef]).
    #[test]
    fn init_genrand_matches_cpp_standard() {
        let mut mt = Mt19937::from_seed(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = mt.next_u32();
        }
        assert_eq!(last, 4123659995);
    }

    // A block fill is the same stream as one output at a time, across twists
    // and from any position.
    #[test]
    fn fill_u32_gives_next_u32s_stream() {
        let (mut one, mut block) = (Mt19937::from_seed(1337), Mt19937::from_seed(1337));
        for len in [1, 5, 623, 624, 625, 2000, 0, 3] {
            let mut words = vec![0; len];
            block.fill_u32(&mut words);
            let expected: Vec<u32> = (0..len).map(|_| one.next_u32()).collect();
            assert_eq!(words, expected, "a block of {len}");
        }
        assert_eq!(one, block);
    }
}
