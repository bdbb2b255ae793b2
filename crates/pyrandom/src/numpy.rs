//! numpy's legacy generator, `np.random.seed` / `np.random.randn` / `np.random.choice`.
//!
//! min-char-rnn.py (Karpathy's gist d4dee566867f8291f086) draws its weights with
//! `np.random.randn` and samples with `np.random.choice(range(n), p=p)`. Both go
//! through numpy's `RandomState`, which keeps the pre-1.17 algorithms frozen
//! (numpy's `random/src/legacy/legacy-distributions.c` and `mtrand.pyx`):
//! - `seed(n)` seeds MT19937 with `init_genrand(n)`, not CPython's `init_by_array`;
//! - `random_sample()` is the same 53-bit double as CPython's `random()`;
//! - `randn` is the Marsaglia polar method, which makes two normals per accepted
//!   pair, returns `f * x2` and keeps `f * x1` for the next call;
//! - `choice` with `p` draws one double and finds it in the normalised running sum.

use crate::Mt19937;

/// `np.random.RandomState`, legacy seeding and distributions.
#[derive(Clone, Debug)]
pub struct RandomState {
    mt: Mt19937,
    /// The polar method's second normal, waiting for the next `gauss` call.
    cached_gauss: Option<f64>,
}

impl RandomState {
    /// `np.random.seed(n)` for `0 <= n < 2**32`.
    pub fn seed(n: u32) -> RandomState {
        RandomState {
            mt: Mt19937::from_seed(n),
            cached_gauss: None,
        }
    }

    /// `random_sample()`: a double in [0, 1) from 27 + 26 bits of two draws.
    pub fn random_sample(&mut self) -> f64 {
        let a = (self.mt.next_u32() >> 5) as f64;
        let b = (self.mt.next_u32() >> 6) as f64;
        (a * 67108864.0 + b) / 9007199254740992.0
    }

    // ANCHOR: legacy_gauss
    /// One standard normal, `legacy_gauss`: the polar method with its cached half.
    pub fn gauss(&mut self) -> f64 {
        if let Some(g) = self.cached_gauss.take() {
            return g;
        }
        let (x1, x2, r2) = loop {
            let x1 = 2.0 * self.random_sample() - 1.0;
            let x2 = 2.0 * self.random_sample() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                break (x1, x2, r2);
            }
        };
        let f = (-2.0 * r2.ln() / r2).sqrt();
        self.cached_gauss = Some(f * x1);
        f * x2
    }
    // ANCHOR_END: legacy_gauss

    /// `randn(d0, d1, …)` with `len` elements in C order.
    pub fn randn(&mut self, len: usize) -> Vec<f64> {
        (0..len).map(|_| self.gauss()).collect()
    }

    /// `choice(range(len(p)), p=p)`: one index drawn with probabilities `p`.
    ///
    /// numpy checks that `p` sums to 1 within `sqrt(eps)` (with a Kahan sum), then
    /// searches one uniform draw in `cdf = p.cumsum(); cdf /= cdf[-1]`, taking the
    /// first entry greater than it (`searchsorted(side='right')`).
    pub fn choice(&mut self, p: &[f64]) -> Result<usize, ChoiceError> {
        if p.is_empty() {
            return Err(ChoiceError::Empty);
        }
        if p.iter().any(|x| x.is_nan() || *x < 0.0) {
            return Err(ChoiceError::Negative);
        }
        let total = kahan_sum(p);
        if (total - 1.0).abs() > f64::EPSILON.sqrt() {
            return Err(ChoiceError::NotNormalised(total));
        }
        let mut cdf = Vec::with_capacity(p.len());
        let mut running = 0.0;
        for &x in p {
            running += x;
            cdf.push(running);
        }
        let last = running;
        cdf.iter_mut().for_each(|c| *c /= last);
        let u = self.random_sample();
        // searchsorted(side='right'): the number of entries <= u; never past the end,
        // but numpy would return len(p) if u >= cdf[-1], which cannot happen as u < 1.
        Ok(cdf.partition_point(|&c| c <= u).min(p.len() - 1))
    }
}

/// Why `choice` refused its probabilities, in numpy's words.
#[derive(Clone, Debug, PartialEq)]
pub enum ChoiceError {
    /// "a must be non-empty"
    Empty,
    /// "probabilities are not non-negative"
    Negative,
    /// "probabilities do not sum to 1", with the sum.
    NotNormalised(f64),
}

impl std::fmt::Display for ChoiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChoiceError::Empty => write!(f, "a must be non-empty"),
            ChoiceError::Negative => write!(f, "probabilities are not non-negative"),
            ChoiceError::NotNormalised(s) => write!(f, "probabilities do not sum to 1 ({s})"),
        }
    }
}

impl std::error::Error for ChoiceError {}

/// numpy's `kahan_sum` (mtrand.pyx), used only for the check on `p`.
fn kahan_sum(xs: &[f64]) -> f64 {
    let mut sum = xs[0];
    let mut c = 0.0;
    for &x in &xs[1..] {
        let y = x - c;
        let t = sum + y;
        c = (t - sum) - y;
        sum = t;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    // numpy 2.x: `np.random.seed(42); np.random.random_sample(3)`.
    #[test]
    fn random_sample_matches_numpy_seed_42() {
        let mut rs = RandomState::seed(42);
        assert_eq!(rs.random_sample(), 0.3745401188473625);
        assert_eq!(rs.random_sample(), 0.9507143064099162);
        assert_eq!(rs.random_sample(), 0.7319939418114051);
    }

    // numpy 2.x: `np.random.seed(42); np.random.randn(4)`.
    #[test]
    fn randn_matches_numpy_seed_42() {
        let mut rs = RandomState::seed(42);
        assert_eq!(
            rs.randn(4),
            [
                0.4967141530112327,
                -0.13826430117118466,
                0.6476885381006925,
                1.5230298564080254
            ]
        );
    }

    // numpy 2.x: `np.random.seed(0); [np.random.choice(range(4), p=[.1,.2,.3,.4]) for _ in range(8)]`.
    #[test]
    fn choice_matches_numpy_seed_0() {
        let mut rs = RandomState::seed(0);
        let p = [0.1, 0.2, 0.3, 0.4];
        let got: Vec<usize> = (0..8).map(|_| rs.choice(&p).unwrap()).collect();
        assert_eq!(got, [2, 3, 3, 2, 2, 3, 2, 3]);
    }

    #[test]
    fn choice_refuses_what_numpy_refuses() {
        let mut rs = RandomState::seed(0);
        assert_eq!(rs.choice(&[]), Err(ChoiceError::Empty));
        assert_eq!(rs.choice(&[0.5, -0.1, 0.6]), Err(ChoiceError::Negative));
        assert!(matches!(
            rs.choice(&[0.5, 0.6]),
            Err(ChoiceError::NotNormalised(_))
        ));
    }
}
