//! The `cmp` helper of the backprop-ninja notebook.

use tensor::Tensor;

/// How a tensor compares with a reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CmpResult {
    /// Bit-for-bit equal.
    pub exact: bool,
    /// `torch.allclose`: |a − b| ≤ 1e-8 + 1e-5·|b| everywhere.
    pub approximate: bool,
    /// The largest absolute difference.
    pub maxdiff: f32,
}

/// Compares `ours` with `reference` and prints one line, as the lecture-5 notebook's
/// `cmp(s, dt, t)` does: `name | exact: … | approximate: … | maxdiff: …`.
pub fn cmp(name: &str, ours: &Tensor, reference: &Tensor) -> CmpResult {
    assert_eq!(ours.shape(), reference.shape(), "cmp {name}: shapes differ");
    let (a, b) = (ours.to_vec(), reference.to_vec());
    let exact = a
        .iter()
        .zip(&b)
        .all(|(x, y)| x.to_bits() == y.to_bits() || x == y);
    let approximate = a
        .iter()
        .zip(&b)
        .all(|(x, y)| (x - y).abs() <= 1e-8 + 1e-5 * y.abs());
    let maxdiff = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    println!(
        "{name:<15} | exact: {exact:<5} | approximate: {approximate:<5} | maxdiff: {maxdiff:e}"
    );
    CmpResult {
        exact,
        approximate,
        maxdiff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_exact_approximate_and_maxdiff() {
        let a = Tensor::from_vec(vec![1.0, 2.0], &[2]);
        let b = Tensor::from_vec(vec![1.0, 2.000001], &[2]);
        assert_eq!(
            cmp("same", &a, &a),
            CmpResult {
                exact: true,
                approximate: true,
                maxdiff: 0.0
            }
        );
        let r = cmp("close", &a, &b);
        assert!(!r.exact && r.approximate);
        assert!((r.maxdiff - 9.536743e-7).abs() < 1e-12);
        assert!(!cmp("far", &a, &Tensor::from_vec(vec![1.0, 2.1], &[2])).approximate);
    }
}
