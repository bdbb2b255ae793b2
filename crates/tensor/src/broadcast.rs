//! PyTorch broadcasting: shapes line up from the right, and an axis of size 1
//! stretches to match the other operand.
//!
//! [`Tensor::sum_to_shape`] is the reverse trip. Every broadcasting op's backward
//! receives a gradient of the broadcast shape and must add up the copies that the
//! stretch made, so that each operand gets a gradient of its own shape.

use crate::Tensor;
use ndarray::IxDyn;

/// Two shapes that do not broadcast together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    /// The left operand's shape.
    pub left: Vec<usize>,
    /// The right operand's shape.
    pub right: Vec<usize>,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot broadcast {:?} with {:?}", self.left, self.right)
    }
}

impl std::error::Error for ShapeError {}

/// The shape two operands broadcast to (`torch.broadcast_shapes`).
///
/// ```
/// use tensor::broadcast_shapes;
/// assert_eq!(broadcast_shapes(&[5, 1, 3], &[1, 2, 1]).unwrap(), vec![5, 2, 3]);
/// assert_eq!(
///     broadcast_shapes(&[2, 3], &[4]).unwrap_err().to_string(),
///     "cannot broadcast [2, 3] with [4]"
/// );
/// ```
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>, ShapeError> {
    let ndim = a.len().max(b.len());
    let mut out = vec![0; ndim];
    for i in 0..ndim {
        // Missing leading axes count as size 1.
        let da = if i < ndim - a.len() {
            1
        } else {
            a[i - (ndim - a.len())]
        };
        let db = if i < ndim - b.len() {
            1
        } else {
            b[i - (ndim - b.len())]
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(ShapeError {
                left: a.to_vec(),
                right: b.to_vec(),
            });
        };
    }
    Ok(out)
}

/// When `small` is `large` with its trailing axes set to 1 (a row's sum kept
/// with `keepdim`), the number of elements of `large` that share one element
/// of `small`: a run of that many, one run per element, in memory order.
pub(crate) fn run_width(small: &[usize], large: &[usize]) -> Option<usize> {
    if small.len() != large.len() || small.contains(&0) {
        return None;
    }
    let kept = small.iter().rposition(|&d| d != 1).map_or(0, |i| i + 1);
    let width: usize = large[kept..].iter().product();
    (small[..kept] == large[..kept] && width > 1).then_some(width)
}

impl Tensor {
    /// The tensor stretched to `shape` (`tensor.expand(shape)`), copied into its
    /// own buffer. Panics if the shape is not a broadcast of this one.
    pub fn broadcast_to(&self, shape: &[usize]) -> Tensor {
        if self.shape() == shape {
            return self.clone();
        }
        if let (Some(width), Some(values)) = (run_width(self.shape(), shape), self.data.as_slice())
        {
            // One value per run (a row's gradient spread over the row).
            let out = crate::elementwise::parallel_collect(
                values.len() * width,
                width,
                |start, piece| {
                    for (run, &v) in piece.chunks_mut(width).zip(&values[start / width..]) {
                        run.fill(std::mem::MaybeUninit::new(v));
                    }
                },
            );
            return Tensor::from_vec(out, shape);
        }
        let view = self
            .data
            .broadcast(IxDyn(shape))
            .unwrap_or_else(|| panic!("cannot broadcast {:?} to {:?}", self.shape(), shape));
        Tensor::from_array(view.to_owned())
    }

    /// Sums over the axes that broadcasting stretched, so a gradient of the
    /// broadcast shape comes back to an operand of shape `shape`.
    ///
    /// ```
    /// use tensor::Tensor;
    /// let g = Tensor::ones(&[2, 3, 4]);
    /// assert_eq!(g.sum_to_shape(&[3, 1]).to_vec(), vec![8.0; 3]);
    /// ```
    pub fn sum_to_shape(&self, shape: &[usize]) -> Tensor {
        if self.shape() == shape {
            return self.clone();
        }
        let ndim = self.ndim();
        let fits = shape.len() <= ndim
            && shape
                .iter()
                .zip(&self.shape()[ndim - shape.len()..])
                .all(|(&t, &s)| t == s || t == 1);
        assert!(
            fits,
            "cannot sum {:?} down to {:?}: not a broadcast of it",
            self.shape(),
            shape
        );
        let lead = ndim - shape.len();
        let axes: Vec<isize> = (0..ndim)
            .filter(|&i| i < lead || (shape[i - lead] == 1 && self.shape()[i] != 1))
            .map(|i| i as isize)
            .collect();
        self.sum_axes(&axes, true).reshape(shape)
    }
}
