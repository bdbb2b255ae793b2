//! CPython's `random` module, bit for bit.
//!
//! The makemore lectures split names.txt with `random.seed(42); random.shuffle(words)`,
//! and micrograd draws its initial weights with `random.uniform(-1, 1)` after
//! `random.seed(1337)`. Both are the 32-bit Mersenne Twister (MT19937) plus a few
//! small transforms that CPython documents in `Modules/_randommodule.c` and
//! `Lib/random.py`. Reproducing them exactly gives a Rust learner the same split
//! (25,626 / 3,203 / 3,204 words) and the same initial weights as the lecture.
//!
//! The crate is dependency-free so that `micrograd` can use it without tensors.
//! [`Mt19937`] is public because PyTorch's CPU generator is the same twister
//! seeded differently (`tensor::rng::TorchGenerator` builds on it), and so is
//! numpy's legacy `RandomState` ([`numpy`]), which min-char-rnn.py draws from.
#![deny(missing_docs)]

mod mt19937;
pub mod numpy;
pub mod pcg64;

pub use mt19937::Mt19937;

/// CPython's `random.Random`: an MT19937 seeded the way `random.seed(int)` seeds it.
#[derive(Clone, Debug)]
pub struct PyRandom {
    mt: Mt19937,
}

impl PyRandom {
    /// `random.seed(n)` for a non-negative integer `n`.
    ///
    /// CPython splits `abs(n)` into 32-bit words, least significant first, and feeds
    /// them to `init_by_array`; zero becomes the one-word key `[0]`.
    pub fn seed(n: u64) -> PyRandom {
        let low = n as u32;
        let high = (n >> 32) as u32;
        let key: &[u32] = if high == 0 { &[low] } else { &[low, high] };
        PyRandom {
            mt: Mt19937::from_key(key),
        }
    }

    /// The next 32 raw bits of the twister (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// `random.random()`: a double in [0, 1) built from 27 + 26 bits of two draws.
    pub fn random(&mut self) -> f64 {
        let a = (self.mt.next_u32() >> 5) as f64;
        let b = (self.mt.next_u32() >> 6) as f64;
        (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
    }

    /// `random.uniform(a, b)`: `a + (b - a) * random()`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// `random.getrandbits(k)` for `k <= 64`.
    ///
    /// CPython fills 32-bit words least significant first; the last, partial word
    /// keeps the high bits of its draw.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        assert!(k <= 64, "getrandbits supports k <= 64 here, got {k}");
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return (self.mt.next_u32() >> (32 - k)) as u64;
        }
        let low = self.mt.next_u32() as u64;
        let high = (self.mt.next_u32() >> (64 - k)) as u64;
        low | (high << 32)
    }

    /// `random._randbelow(n)`: a uniform integer in [0, n) by rejection sampling
    /// on `n.bit_length()` random bits.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let k = 64 - n.leading_zeros();
        let mut r = self.getrandbits(k);
        while r >= n {
            r = self.getrandbits(k);
        }
        r
    }

    /// `random.randint(a, b)`: `a + _randbelow(b − a + 1)`, both ends included.
    pub fn randint(&mut self, a: i64, b: i64) -> i64 {
        a + self.randbelow((b - a + 1) as u64) as i64
    }

    /// `random.choice(seq)`: `seq[_randbelow(len(seq))]`; `None` for an empty `seq` (CPython
    /// raises `IndexError`).
    pub fn choice<'a, T>(&mut self, seq: &'a [T]) -> Option<&'a T> {
        if seq.is_empty() {
            return None;
        }
        Some(&seq[self.randbelow(seq.len() as u64) as usize])
    }

    /// `random.shuffle(x)`: Fisher-Yates from the back, as CPython writes it.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = self.randbelow(i as u64 + 1) as usize;
            x.swap(i, j);
        }
    }

    /// `random.sample(population, k)`: `k` distinct elements, as CPython's `Lib/random.py`
    /// draws them. While the population is no larger than a set of `k` would be, a pool is
    /// drawn from and refilled from its end; beyond that, indices are drawn until unseen.
    /// `None` where `k > population.len()` (CPython raises `ValueError`).
    pub fn sample<T: Clone>(&mut self, population: &[T], k: usize) -> Option<Vec<T>> {
        let n = population.len();
        if k > n {
            return None;
        }
        let mut setsize = 21; // size of a small set minus size of an empty list
        if k > 5 {
            // 4 ** _ceil(_log(k * 3, 4)): math.log(x, 4) is log(x) / log(4)
            let exponent = ((k * 3) as f64).ln() / 4f64.ln();
            setsize += 4usize.pow(exponent.ceil() as u32);
        }
        let mut result = Vec::with_capacity(k);
        if n <= setsize {
            let mut pool = population.to_vec();
            for i in 0..k {
                let j = self.randbelow((n - i) as u64) as usize;
                result.push(pool[j].clone());
                pool[j] = pool[n - i - 1].clone(); // move a non-selected item into the vacancy
            }
        } else {
            let mut selected = std::collections::HashSet::new();
            for _ in 0..k {
                let mut j = self.randbelow(n as u64) as usize;
                while selected.contains(&j) {
                    j = self.randbelow(n as u64) as usize;
                }
                selected.insert(j);
                result.push(population[j].clone());
            }
        }
        Some(result)
    }
}

impl rand::RngCore for PyRandom {
    fn next_u32(&mut self) -> u32 {
        self.mt.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.getrandbits(64)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(4) {
            let word = self.mt.next_u32().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Printed by CPython 3.11: `random.seed(42); [random.random() for _ in range(3)]`.
    #[test]
    fn random_matches_cpython_seed_42() {
        let mut rng = PyRandom::seed(42);
        assert_eq!(rng.random(), 0.6394267984578837);
        assert_eq!(rng.random(), 0.025010755222666936);
        assert_eq!(rng.random(), 0.27502931836911926);
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..100).collect();
        PyRandom::seed(7).shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(v, sorted);
    }

    // Printed by CPython 3.11.7: `random.Random(seed).sample(population, k)`, as nanochat's
    // core_eval.py draws its few-shot examples; 1000 items take the path of the set, the rest
    // the pool's (k = 8 makes the set 21 + 4^3 = 85 wide).
    #[test]
    fn sample_matches_cpython() {
        let range = |n: usize| (0..n).collect::<Vec<usize>>();
        assert_eq!(
            PyRandom::seed(1234).sample(&range(30), 5),
            Some(vec![24, 14, 3, 0, 2])
        );
        let without_3: Vec<usize> = (0..12).filter(|&i| i != 3).collect();
        assert_eq!(
            PyRandom::seed(1235).sample(&without_3, 5),
            Some(vec![7, 9, 8, 11, 1])
        );
        assert_eq!(
            PyRandom::seed(7).sample(&range(1000), 10),
            Some(vec![331, 970, 154, 404, 666, 49, 74, 840, 548, 96])
        );
        assert_eq!(
            PyRandom::seed(99).sample(&range(40), 8),
            Some(vec![25, 24, 12, 11, 14, 15, 8, 5])
        );
        assert_eq!(PyRandom::seed(1).sample(&range(3), 4), None);
    }

    // Printed by CPython 3.11.7: `r = random.Random(3); [r.randint(10, 999) for _ in range(5)],
    // r.choice('abcdefg'), r.choice(['x', 'y', 'z'])`, as the SFT tasks draw.
    #[test]
    fn randint_and_choice_match_cpython() {
        let mut rng = PyRandom::seed(3);
        let ints: Vec<i64> = (0..5).map(|_| rng.randint(10, 999)).collect();
        assert_eq!(ints, vec![253, 616, 567, 143, 388]);
        let letters: Vec<char> = "abcdefg".chars().collect();
        assert_eq!(rng.choice(&letters), Some(&'e'));
        assert_eq!(rng.choice(&["x", "y", "z"]), Some(&"y"));
        assert_eq!(rng.choice::<u8>(&[]), None);
    }
}
