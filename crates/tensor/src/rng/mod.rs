//! PyTorch's CPU random generator, draw for draw, and CPython's `random`.
//!
//! # Why exact parity
//!
//! The lectures seed everything: `g = torch.Generator().manual_seed(2147483647)`
//! before the bigram model samples names, `torch.manual_seed(42)` before a GPT
//! is built, `random.seed(42); random.shuffle(words)` before names.txt is split.
//! If the Rust port only drew "some" normals, a learner would see other initial
//! weights, another first loss and other sampled names than the lecture, and
//! could never tell a bug from bad luck. With [`TorchGenerator`] the bigram model
//! samples `cexze.`, `momasurailezitynn.`, … exactly as the video does, and
//! `W = randn((27, 27), generator=g)` holds the lecture's very numbers.
//!
//! # What PyTorch does (CPU, torch 2.x)
//!
//! The engine is the 32-bit Mersenne Twister (`ATen/core/MT19937RNGEngine.h`),
//! seeded by `init_genrand` with the low 32 bits of the seed
//! (`CPUGeneratorImpl::set_current_seed`, which also drops the cached normal).
//! `random()` is one draw; `random64()` is `(first << 32) | second`
//! (`CPUGeneratorImpl.cpp`). Every distribution is a small transform of those
//! draws (`ATen/core/DistributionsHelper.h`, `TransformationHelper.h`), run
//! element by element in row-major order by the kernels of
//! `ATen/native/cpu/DistributionTemplates.h`:
//!
//! * `rand` / `uniform_(a, b)`: the low 24 bits of one draw times 2^-24, then
//!   `fma(x, b - a, a)` in f32 (GCC fused the `x * (to - from) + from`).
//! * a double uniform: the low 53 bits of `random64()` times 2^-53.
//! * `randn` / `normal_` below 16 elements: Box-Muller in f64,
//!   `r = sqrt(-2 log1p(-u2))`, `θ = 2π u1`; it returns `r cos θ` and caches
//!   `r sin θ` for the next call, across calls and kinds of call, until the
//!   next `manual_seed`. Output `fma(n, std, mean)` in f64, rounded to f32.
//! * `randn` / `normal_` from 16 elements: first one f32 uniform per element,
//!   then each block of 16 pairs element `j` with `j + 8` (`u1 = 1 - data[j]`,
//!   `u2 = data[j + 8]`). If the count is not a multiple of 16, the last 16
//!   elements are drawn again and transformed again. On x86-64 the transform is
//!   `normal_fill_16_AVX2` with the Cephes polynomials of `avx_mathfun.h`; see
//!   the `cephes` module for the fused multiply-adds that make it bit-exact.
//! * `randint(low, high)`: `random() % range + low`, or `random64()` once the
//!   range reaches 2^28 (`uniform_int_from_to_distribution`).
//! * `multinomial` with replacement and more than one sample
//!   (`native/cpu/MultinomialKernel.cpp`): an f32 running sum, divided by the
//!   total, last bucket forced to 1, then a binary search per double uniform.
//! * `multinomial` with one sample or without replacement (`Distributions.cpp`):
//!   `q = exponential_(1)`, i.e. `-log1p(-u)` per element from a double uniform,
//!   then `argmax(p / q)` (or `topk` for several samples).
//! * dropout (`F.dropout` on CPU goes through `bernoulli_(1 - p)`): one double
//!   uniform per element, kept if `u < 1 - p`.
//! * `randperm(n)`: `z = random() % (n - i)`, swap `r[i]` and `r[i + z]`, for
//!   `n` below `u32::MAX / 20`; above that an inside-out shuffle on `random64()`
//!   (`randperm_cpu` in `TensorFactories.cpp`). Both are implemented; only the
//!   first is checked against torch (the second needs n ≥ 214,748,364).
//!
//! # Which PyTorch
//!
//! The fixtures in `tests/fixtures/rng_torch.json` come from torch 2.15 (the
//! x86-64 Linux wheel) on an AMD EPYC; the fixture records `lscpu`'s vendor and
//! flags. Three things depend on the build and the CPU:
//!
//! * The chunked normal path is the AVX2 kernel on every x86-64 CPU with AVX2
//!   and FMA, Intel or AMD (AVX-512 machines fall back to it too: `normal_stub`
//!   has no AVX-512 kernel). ARM builds (Apple silicon) and CPUs without AVX2
//!   run a scalar `logf`/`sincosf` loop instead, whose last bits differ.
//! * The fused multiply-adds are GCC's choice when it built that wheel; they
//!   were read off the disassembly of its `libtorch_cpu.so`.
//! * `bernoulli_` (dropout) and `exponential_` (one-sample multinomial) take
//!   the default path above in this wheel for every vendor (no MKL call in its
//!   AVX2 kernels). Some older MKL builds sent them through MKL's own stream on
//!   Intel CPUs, which gives other masks and samples there.
//!
//! [`PyRandom`] (CPython's `random`) lives in the `pyrandom` crate, so that
//! the scalar `micrograd` crate can use it without tensors; it is re-exported here.

mod cephes;

use crate::{KeepMask, Tensor};
use pyrandom::Mt19937;
pub use pyrandom::PyRandom;

/// `torch.Generator().manual_seed(s)`, or the global generator after `torch.manual_seed(s)`.
///
/// ```
/// use tensor::rng::TorchGenerator;
/// let mut g = TorchGenerator::manual_seed(2147483647);
/// let p = g.rand(&[3]).to_vec();
/// // torch.rand(3, generator=torch.Generator().manual_seed(2147483647))
/// assert_eq!(p, [0.70812887, 0.3542391, 0.10543233]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TorchGenerator {
    seed: u64,
    mt: Mt19937,
    /// The second Box-Muller normal, waiting for the next scalar-path draw.
    next_normal: Option<f64>,
}

/// Why [`TorchGenerator::from_state`] rejected a saved state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateError {
    /// The state is not [`STATE_WORDS`] words long.
    Length(usize),
    /// The twister's position is past its 624 words.
    Index(u32),
    /// The cached-normal flag is neither 0 nor 1.
    Flag(u32),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Length(n) => write!(
                f,
                "generator state has {n} words, expected {STATE_WORDS} (seed, index, normal cache, 624 twister words)"
            ),
            StateError::Index(i) => write!(f, "generator state index {i} is past 624"),
            StateError::Flag(v) => write!(f, "generator state normal-cache flag is {v}, expected 0 or 1"),
        }
    }
}

impl std::error::Error for StateError {}

const MT_WORDS: usize = 624;
/// Length of [`TorchGenerator::state`]: seed (2), index (1), cached normal (3), twister (624).
pub const STATE_WORDS: usize = 6 + MT_WORDS;

/// Below this many elements `normal_` takes the scalar Box-Muller path.
const CHUNK: usize = 16;

impl TorchGenerator {
    /// `torch.Generator().manual_seed(seed)`: `init_genrand` on the low 32 bits.
    pub fn manual_seed(seed: u64) -> TorchGenerator {
        TorchGenerator {
            seed,
            mt: Mt19937::from_seed(seed as u32),
            next_normal: None,
        }
    }

    /// The seed given to [`TorchGenerator::manual_seed`] (`g.initial_seed()`).
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// One raw 32-bit draw (`CPUGeneratorImpl::random`).
    pub fn random(&mut self) -> u32 {
        self.mt.next_u32()
    }

    /// Two draws, the first one high (`CPUGeneratorImpl::random64`).
    pub fn random64(&mut self) -> u64 {
        let hi = self.random() as u64;
        let lo = self.random() as u64;
        (hi << 32) | lo
    }

    /// `uniform_real_distribution<float>(0, 1)`: 24 random bits, exactly representable.
    fn uniform_f32(&mut self) -> f32 {
        (self.random() & 0x00ff_ffff) as f32 * (1.0 / 16_777_216.0)
    }

    /// `uniform_real_distribution<double>(0, 1)`: 53 random bits.
    fn uniform_f64(&mut self) -> f64 {
        (self.random64() & ((1 << 53) - 1)) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `normal_distribution<double>` with mean 0 and std 1, with torch's one-value cache.
    fn standard_normal_f64(&mut self) -> f64 {
        if let Some(cached) = self.next_normal.take() {
            return cached;
        }
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_normal = Some(r * theta.sin());
        r * theta.cos()
    }

    /// `torch.rand(shape, generator=g)`: uniform on [0, 1).
    pub fn rand(&mut self, shape: &[usize]) -> Tensor {
        self.uniform(0.0, 1.0, shape)
    }

    /// `torch.empty(shape).uniform_(low, high, generator=g)`, e.g. nn.Linear's default init.
    ///
    /// torch rounds the Python floats `low` and `high` to f32 before drawing, so
    /// pass bounds computed as Python computes them, in f64, rounded once: for
    /// `nn.Linear(fan_in, _)` the bias bound is `(1.0 / (fan_in as f64).sqrt()) as f32`.
    pub fn uniform(&mut self, low: f32, high: f32, shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        let range = high - low;
        let values = (0..n)
            .map(|_| self.uniform_f32().mul_add(range, low))
            .collect();
        Tensor::from_vec(values, shape)
    }

    /// `torch.randn(shape, generator=g)`: standard normals.
    pub fn randn(&mut self, shape: &[usize]) -> Tensor {
        self.normal(0.0, 1.0, shape)
    }

    // ANCHOR: normal
    /// `torch.empty(shape).normal_(mean, std, generator=g)` (what `nn.init.normal_` calls).
    ///
    /// Panics if `std` is negative or not finite, as torch raises.
    pub fn normal(&mut self, mean: f32, std: f32, shape: &[usize]) -> Tensor {
        assert!(
            std.is_finite() && std >= 0.0,
            "normal: std must be finite and >= 0, got {std}"
        );
        let n: usize = shape.iter().product();
        let values = if n >= CHUNK {
            self.normal_chunked(mean, std, n)
        } else {
            // torch keeps mean and std as the Python floats here; recover those from the f32s.
            let (mean, std) = (as_python_float(mean), as_python_float(std));
            (0..n)
                .map(|_| self.standard_normal_f64().mul_add(std, mean) as f32)
                .collect()
        };
        Tensor::from_vec(values, shape)
    }

    /// `normal_fill` + `normal_fill_16_AVX2`: 16 at a time, pairing `j` with `j + 8`.
    fn normal_chunked(&mut self, mean: f32, std: f32, n: usize) -> Vec<f32> {
        let mut data: Vec<f32> = (0..n).map(|_| self.uniform_f32()).collect();
        for start in (0..=n - CHUNK).step_by(CHUNK) {
            box_muller_16(&mut data[start..start + CHUNK], mean, std);
        }
        if !n.is_multiple_of(CHUNK) {
            // The tail that does not fill a block: redraw the last 16 and transform them.
            let tail = &mut data[n - CHUNK..];
            for v in tail.iter_mut() {
                *v = self.uniform_f32();
            }
            box_muller_16(tail, mean, std);
        }
        data
    }
    // ANCHOR_END: normal

    /// `torch.randint(low, high, shape, generator=g)`, row-major.
    ///
    /// Panics unless `low < high`, as torch raises.
    pub fn randint(&mut self, low: i64, high: i64, shape: &[usize]) -> Vec<i64> {
        assert!(
            low < high,
            "randint: expected low < high, got low={low} high={high}"
        );
        let range = high.wrapping_sub(low) as u64;
        let n: usize = shape.iter().product();
        (0..n)
            .map(|_| {
                let draw = if range >= 1 << 28 {
                    self.random64()
                } else {
                    self.random() as u64
                };
                (draw % range).wrapping_add(low as u64) as i64
            })
            .collect()
    }

    // ANCHOR: multinomial
    /// `torch.multinomial(probs, num_samples, replacement, generator=g)`, row-major.
    ///
    /// `probs` is 1-D (one distribution) or 2-D (one per row); rows need not sum to 1.
    /// Panics on the inputs torch rejects; [`TorchGenerator::try_multinomial`] returns them as errors.
    pub fn multinomial(
        &mut self,
        probs: &Tensor,
        num_samples: usize,
        replacement: bool,
    ) -> Vec<i64> {
        match self.try_multinomial(probs, num_samples, replacement) {
            Ok(samples) => samples,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`TorchGenerator::multinomial`], with torch's input errors as `Err`.
    ///
    /// Nothing is drawn when the input is rejected.
    pub fn try_multinomial(
        &mut self,
        probs: &Tensor,
        num_samples: usize,
        replacement: bool,
    ) -> Result<Vec<i64>, String> {
        let (rows, cols) = match *probs.shape() {
            [c] => (1, c),
            [r, c] => (r, c),
            ref s => {
                return Err(format!(
                    "multinomial: probs must be 1-D or 2-D, got shape {s:?}"
                ))
            }
        };
        if num_samples == 0 {
            return Err("multinomial: cannot sample n_sample <= 0 samples".into());
        }
        if !replacement && num_samples > cols {
            return Err(format!(
                "multinomial: cannot sample {num_samples} > {cols} categories without replacement"
            ));
        }
        let p = probs.to_vec();
        for row in p.chunks(cols.max(1)) {
            if row.iter().any(|&v| !(v >= 0.0 && v.is_finite())) {
                return Err(
                    "multinomial: probability tensor contains either `inf`, `nan` or element < 0"
                        .into(),
                );
            }
            if row.iter().sum::<f32>() <= 0.0 {
                return Err(
                    "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
                        .into(),
                );
            }
        }
        if rows == 0 || cols == 0 {
            return Ok(Vec::new());
        }

        if !replacement || num_samples == 1 {
            // Gumbel-max in exponential form: argmax(p / q) with q ~ Exp(1), one q per element.
            let scores: Vec<f32> = p
                .iter()
                .map(|&pi| {
                    let q = -(-self.uniform_f64()).ln_1p();
                    pi / q as f32
                })
                .collect();
            // torch takes argmax for one sample and topk for several; topk(1) is argmax.
            let (_, picks) = Tensor::from_vec(scores, &[rows, cols]).topk(num_samples);
            return Ok(picks.into_iter().map(|i| i as i64).collect());
        }

        let mut out = Vec::with_capacity(rows * num_samples);
        let mut cdf = vec![0f32; cols];
        for row in p.chunks(cols) {
            let mut sum = 0f32;
            for (c, &v) in cdf.iter_mut().zip(row) {
                sum += v;
                *c = sum;
            }
            for c in cdf.iter_mut() {
                *c /= sum;
            }
            cdf[cols - 1] = 1.0;
            for _ in 0..num_samples {
                let u = self.uniform_f64();
                // First bucket whose cumulative probability reaches u.
                let (mut lo, mut hi) = (0, cols);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if (cdf[mid] as f64) < u {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                out.push(lo as i64);
            }
        }
        Ok(out)
    }
    // ANCHOR_END: multinomial

    /// `torch.randperm(n, generator=g)`.
    pub fn randperm(&mut self, n: usize) -> Vec<i64> {
        if (n as u64) < u32::MAX as u64 / 20 {
            let mut r: Vec<i64> = (0..n as i64).collect();
            for i in 0..n.saturating_sub(1) {
                let z = self.random() as usize % (n - i);
                r.swap(i, i + z);
            }
            r
        } else {
            // Inside-out Fisher-Yates on 64-bit draws, as torch does for huge n.
            let mut r = vec![0i64; n];
            for i in 0..n {
                let z = (self.random64() % (i as u64 + 1)) as usize;
                r[i] = r[z];
                r[z] = i as i64;
            }
            r
        }
    }

    /// The 0/1 mask that `F.dropout(x, p_drop, training=True)` draws: 1 keeps an element.
    ///
    /// Dropout's output is `x * mask / (1 - p_drop)`. Panics unless `0 <= p_drop <= 1`.
    pub fn bernoulli_keep_mask(&mut self, p_drop: f32, shape: &[usize]) -> Tensor {
        assert!(
            (0.0..=1.0).contains(&p_drop),
            "dropout probability has to be between 0 and 1, but got {p_drop}"
        );
        let n: usize = shape.iter().product();
        // torch returns early, drawing nothing, for these two.
        if p_drop == 0.0 || p_drop == 1.0 {
            return Tensor::from_vec(vec![1.0 - p_drop; n], shape);
        }
        let mut mask = vec![0f32; n];
        self.keep_draws(p_drop, n, |i, keep| mask[i] = f32::from(u8::from(keep)));
        Tensor::from_vec(mask, shape)
    }

    /// [`TorchGenerator::bernoulli_keep_mask`]'s draws, the same ones in the
    /// same order, held as one bit each.
    pub fn bernoulli_keep_bits(&mut self, p_drop: f32, shape: &[usize]) -> KeepMask {
        assert!(
            (0.0..=1.0).contains(&p_drop),
            "dropout probability has to be between 0 and 1, but got {p_drop}"
        );
        let n: usize = shape.iter().product();
        let mut bits = vec![0u64; n.div_ceil(64)];
        if p_drop == 0.0 {
            // torch returns early, drawing nothing: every element kept.
            bits.fill(u64::MAX);
        } else if p_drop < 1.0 {
            self.keep_draws(p_drop, n, |i, keep| {
                bits[i / 64] |= u64::from(keep) << (i % 64)
            });
        }
        KeepMask::from_bits(bits, shape)
    }

    /// `n` Bernoulli draws of "kept", `uniform_f64() < 1 − p_drop` each, in
    /// order: two twister words apiece, fetched a block at a time.
    fn keep_draws(&mut self, p_drop: f32, n: usize, mut each: impl FnMut(usize, bool)) {
        const BLOCK: usize = 512;
        let keep = 1.0 - as_python_float(p_drop);
        let mut words = [0u32; 2 * BLOCK];
        let mut done = 0;
        while done < n {
            let take = (n - done).min(BLOCK);
            self.mt.fill_u32(&mut words[..2 * take]);
            for (j, pair) in words[..2 * take].chunks_exact(2).enumerate() {
                // random64: the first word high; then uniform_f64's 53 bits.
                let r = (u64::from(pair[0]) << 32) | u64::from(pair[1]);
                let u = (r & ((1 << 53) - 1)) as f64 * (1.0 / 9_007_199_254_740_992.0);
                each(done + j, u < keep);
            }
            done += take;
        }
    }

    /// The whole generator as [`STATE_WORDS`] words, for checkpoints:
    /// `[seed_lo, seed_hi, index, has_normal, normal_lo, normal_hi, mt[0..624]]`.
    pub fn state(&self) -> Vec<u32> {
        let (mt, index) = self.mt.state();
        let normal = self.next_normal.map_or(0, f64::to_bits);
        let mut words = vec![
            self.seed as u32,
            (self.seed >> 32) as u32,
            index as u32,
            self.next_normal.is_some() as u32,
            normal as u32,
            (normal >> 32) as u32,
        ];
        words.extend_from_slice(mt);
        words
    }

    /// Rebuilds a generator from [`TorchGenerator::state`].
    pub fn from_state(words: &[u32]) -> Result<TorchGenerator, StateError> {
        if words.len() != STATE_WORDS {
            return Err(StateError::Length(words.len()));
        }
        let index = words[2];
        if index as usize > MT_WORDS {
            return Err(StateError::Index(index));
        }
        let next_normal = match words[3] {
            0 => None,
            1 => Some(f64::from_bits(words[4] as u64 | (words[5] as u64) << 32)),
            flag => return Err(StateError::Flag(flag)),
        };
        let mut mt = [0u32; MT_WORDS];
        mt.copy_from_slice(&words[6..]);
        Ok(TorchGenerator {
            seed: words[0] as u64 | (words[1] as u64) << 32,
            mt: Mt19937::from_state(mt, index as usize),
            next_normal,
        })
    }
}

/// One 16-element block of `normal_fill_16_AVX2`: uniforms in, normals out.
fn box_muller_16(data: &mut [f32], mean: f32, std: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has FMA, checked just above.
        return unsafe { box_muller_16_fma(data, mean, std) };
    }
    box_muller_16_body(data, mean, std)
}

/// The same code compiled with FMA instructions: each `mul_add` becomes one
/// `vfmadd` instead of a call to libm's `fmaf`, about five times faster. The
/// results are the same bits, since `mul_add` always rounds once.
///
/// # Safety
/// The CPU must support FMA (the caller checks with `is_x86_feature_detected!`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn box_muller_16_fma(data: &mut [f32], mean: f32, std: f32) {
    box_muller_16_body(data, mean, std)
}

#[inline(always)]
fn box_muller_16_body(data: &mut [f32], mean: f32, std: f32) {
    const TWO_PI: f32 = f32::from_bits(0x40c9_0fdb); // (float)(2 * pi)
    for j in 0..CHUNK / 2 {
        let radius = (cephes::log(1.0 - data[j]) * -2.0).sqrt();
        let (sin, cos) = cephes::sincos(data[j + CHUNK / 2] * TWO_PI);
        data[j] = (radius * cos).mul_add(std, mean);
        data[j + CHUNK / 2] = (radius * sin).mul_add(std, mean);
    }
}

/// The Python float an f32 argument stands for: `0.1f32` becomes `0.1f64`, not
/// `0.10000000149…`. torch receives `p`, `mean` and `std` as Python floats and
/// uses them in f64 on some paths; the shortest decimal of the f32 is what the
/// lecture's code wrote.
fn as_python_float(x: f32) -> f64 {
    x.to_string()
        .parse()
        .expect("an f32 prints as a valid float")
}

impl rand::RngCore for TorchGenerator {
    fn next_u32(&mut self) -> u32 {
        self.random()
    }

    fn next_u64(&mut self) -> u64 {
        self.random64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(4) {
            let word = self.random().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The FMA-compiled block and the portable one must give the same bits.
    #[test]
    fn fma_and_portable_blocks_agree() {
        let mut g = TorchGenerator::manual_seed(7);
        for _ in 0..2000 {
            let uniforms: Vec<f32> = (0..CHUNK).map(|_| g.uniform_f32()).collect();
            let (mut a, mut b) = (uniforms.clone(), uniforms);
            box_muller_16(&mut a, 0.25, 1.5);
            box_muller_16_body(&mut b, 0.25, 1.5);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b));
        }
    }
}
