//! Element-wise maths: binary ops that broadcast, 0/1 comparison masks, unary
//! functions, and the `+ - * /` operators.
//!
//! Every binary op goes through one function, [`Tensor::zip_map`], so broadcasting
//! and its error message live in one place.
//!
//! A large pass over contiguous values is cut into one piece per thread
//! ([`parallel_fill`]). Each element is computed by the same function either
//! way, so the result has the same bits on any number of threads.

use crate::broadcast::run_width;
use crate::numeric::{
    erf, exp_in_place, gelu_and_cdf_into, gelu_backward_into, gelu_grad_into, gelu_into,
    gelu_tanh_grad_into, gelu_tanh_into, normal_cdf_into, sum_squares_f64_blocked, tanh_into,
    SimdPath,
};
use crate::pool::{for_each_piece, SharedMut};
use crate::{broadcast_shapes, max_threads, Tensor};

/// An element-wise pass over fewer elements than this stays on one thread:
/// handing pieces to other threads costs a few microseconds.
const PARALLEL_FROM: usize = 1 << 15;

/// Fills `out` piece by piece, one piece per thread when `out` is large:
/// `fill(start, piece)` writes `out[start..start + piece.len()]`. Pieces start
/// at multiples of `align` (a row's length, for row-wise work).
pub fn parallel_fill(out: &mut [f32], align: usize, fill: impl Fn(usize, &mut [f32]) + Sync) {
    fill_in_pieces(out, align, threads_for(out.len()), fill);
}

/// `update(x, m, v, g)` for each index of four equally long slices, in pieces
/// across threads: an optimizer's one pass over a parameter, its two moments
/// and its gradient. Each index is updated once, by one thread.
pub fn parallel_update(
    xs: &mut [f32],
    ms: &mut [f32],
    vs: &mut [f32],
    gs: &[f32],
    update: impl Fn(&mut f32, &mut f32, &mut f32, f32) + Sync,
) {
    let len = xs.len();
    assert!(
        ms.len() == len && vs.len() == len && gs.len() == len,
        "parallel_update: lengths {len}, {}, {}, {}",
        ms.len(),
        vs.len(),
        gs.len()
    );
    let (ms, vs) = (SharedMut(ms.as_mut_ptr()), SharedMut(vs.as_mut_ptr()));
    parallel_fill(xs, 1, |start, piece| {
        // SAFETY: the pieces are disjoint ranges of `xs`; the same ranges of
        // `ms` and `vs`, which are as long and borrowed mutably for this
        // call, are touched by this piece only.
        let (ms, vs) = unsafe {
            (
                std::slice::from_raw_parts_mut(ms.ptr().add(start), piece.len()),
                std::slice::from_raw_parts_mut(vs.ptr().add(start), piece.len()),
            )
        };
        for (((x, m), v), &g) in piece.iter_mut().zip(ms).zip(vs).zip(&gs[start..]) {
            update(x, m, v, g);
        }
    });
}

/// How many elements each partial sum of [`sum_of_squares`] covers: a fixed
/// split, so that the thread count does not change the order of the sums.
const SUM_PIECE: usize = 1 << 15;

/// `Σ x²` in f64 over a whole slice (a gradient's share of
/// `clip_grad_norm_`'s norm): a partial sum for each [`SUM_PIECE`] elements,
/// taken in [`crate::numeric`]'s blocked order and spread over threads, then
/// the partial sums added in order. The same bits on any thread count; against
/// the in-order f64 sum it differs by at most `n·2⁻⁵²` of the sum, so the f32
/// norm it gives is nearly always the same float. The in-order sum is one
/// chain of dependent adds: 124M of them took 0.3 s of a GPT-2 step.
pub fn sum_of_squares(xs: &[f32]) -> f64 {
    sum_of_squares_on(xs, threads_for(xs.len()))
}

/// [`sum_of_squares`] with its pieces split between `threads`.
fn sum_of_squares_on(xs: &[f32], threads: usize) -> f64 {
    let pieces = xs.len().div_ceil(SUM_PIECE);
    let mut partial = vec![0f64; pieces];
    let path = SimdPath::best();
    fill_in_pieces(&mut partial, 1, threads, |start, out| {
        for (k, sum) in out.iter_mut().enumerate() {
            let from = (start + k) * SUM_PIECE;
            let piece = &xs[from..(from + SUM_PIECE).min(xs.len())];
            *sum = sum_squares_f64_blocked(piece, path);
        }
    });
    partial.iter().fold(0.0, |total, &sum| total + sum)
}

/// `x ·= factor` for every element, in pieces across threads (the rescaling
/// of `clip_grad_norm_`).
pub fn scale_in_place(xs: &mut [f32], factor: f32) {
    parallel_fill(xs, 1, |_, piece| {
        for x in piece {
            *x *= factor;
        }
    });
}

/// How many threads a pass over `len` elements is split between.
pub(crate) fn threads_for(len: usize) -> usize {
    if len < PARALLEL_FROM {
        1
    } else {
        max_threads().min(len / (PARALLEL_FROM / 2))
    }
}

/// A new vector of `len` values, written piece by piece as [`parallel_fill`]
/// writes them, but into memory that is not zeroed first (zeroing every
/// op's output took a tenth of lecture 7's step). `fill(start, piece)` must
/// write every element of its piece.
pub(crate) fn parallel_collect(
    len: usize,
    align: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<f32>]) + Sync,
) -> Vec<f32> {
    let mut out = Vec::with_capacity(len);
    fill_in_pieces(
        &mut out.spare_capacity_mut()[..len],
        align,
        threads_for(len),
        fill,
    );
    // SAFETY: the pieces cover `0..len`, and `fill` wrote each of them whole.
    unsafe { out.set_len(len) };
    out
}

/// Which non-finite value `v` is: 0 for NaN, 1 for `+inf`, 2 for `-inf`
/// (the order of [`Tensor::non_finite_kinds`]); `None` when it is finite.
pub fn non_finite_kind(v: f32) -> Option<usize> {
    if v.is_nan() {
        Some(0)
    } else if v.is_infinite() {
        Some(if v > 0.0 { 1 } else { 2 })
    } else {
        None
    }
}

impl Tensor {
    /// Which non-finite values the tensor holds: `[NaN, +inf, -inf]`. One
    /// cheap test per value, in pieces across threads; the kinds are told
    /// apart only where something is off.
    pub fn non_finite_kinds(&self) -> [bool; 3] {
        let kinds = |values: &mut dyn Iterator<Item = f32>| {
            let mut held = [false; 3];
            for kind in values.filter_map(non_finite_kind) {
                held[kind] = true;
            }
            held
        };
        let Some(values) = self.data.as_slice_memory_order() else {
            return kinds(&mut self.data.iter().copied());
        };
        let found = std::sync::Mutex::new([false; 3]);
        let threads = threads_for(values.len());
        let per_piece = values.len().div_ceil(threads.max(1)).max(1);
        for_each_piece(values.len().div_ceil(per_piece), |piece| {
            let part = &values[piece * per_piece..values.len().min((piece + 1) * per_piece)];
            // The largest magnitude's bits, an integer maximum the compiler
            // vectorises (a fold of bools it left scalar): above f32::MAX's
            // is off, above +inf's is NaN.
            let largest = part
                .iter()
                .fold(0u32, |largest, v| largest.max(v.to_bits() & 0x7fff_ffff));
            if largest > f32::MAX.to_bits() {
                // Each infinity is one bit pattern; a masked attention's -inf
                // is off on every step, so this pass is vectorised too.
                let (inf, neg_inf) = (f32::INFINITY.to_bits(), f32::NEG_INFINITY.to_bits());
                let (pos, neg) = part.iter().fold((0u32, 0u32), |(pos, neg), v| {
                    let bits = v.to_bits();
                    (
                        pos | u32::from(bits == inf),
                        neg | u32::from(bits == neg_inf),
                    )
                });
                let held = [largest > inf, pos != 0, neg != 0];
                let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                for (f, h) in found.iter_mut().zip(held) {
                    *f |= h;
                }
            }
        });
        found.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// How the smaller operand of a broadcast lines up with the larger one, in
/// memory order, when no broadcast view is needed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Repeat {
    /// One value for every element: a one-element operand.
    Scalar,
    /// `small[i]` for the i-th run of this many consecutive elements: a row's
    /// sum or max kept with `keepdim`.
    Runs(usize),
    /// `small` whole, row after row: `small[j]` for the j-th element of each
    /// row. A bias, a norm's gain.
    Rows,
}

impl Repeat {
    /// How `small` repeats over `large`, where broadcasting the two gives
    /// `large`'s shape; `None` when neither way fits.
    fn of(small: &[usize], large: &[usize]) -> Option<Repeat> {
        let count: usize = small.iter().product();
        if small.len() > large.len() || count == 0 {
            return None;
        }
        if count == 1 {
            return Some(Repeat::Scalar);
        }
        if let Some(width) = run_width(small, large) {
            return Some(Repeat::Runs(width));
        }
        let ones = small.iter().take_while(|&&d| d == 1).count();
        large.ends_with(&small[ones..]).then_some(Repeat::Rows)
    }
}

/// `f(x, v)` for each element `x` of `large`, with `v` the element of `small`
/// that `repeat` pairs it with.
fn map_repeated(
    large: &[f32],
    small: &[f32],
    repeat: Repeat,
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Vec<f32> {
    let width = match repeat {
        Repeat::Scalar => return map_slice(large, |x| f(x, small[0])),
        Repeat::Runs(width) => width,
        Repeat::Rows => small.len(),
    };
    parallel_collect(large.len(), width, |start, piece| {
        let rows = piece.chunks_mut(width).zip(large[start..].chunks(width));
        for (row, (out, xs)) in rows.enumerate() {
            // One loop for both: only which element of `small` goes with
            // `x` differs, the row's or the column's.
            match repeat {
                Repeat::Runs(_) => {
                    let v = small[start / width + row];
                    for (o, &x) in out.iter_mut().zip(xs) {
                        o.write(f(x, v));
                    }
                }
                _ => {
                    for ((o, &x), &v) in out.iter_mut().zip(xs).zip(small) {
                        o.write(f(x, v));
                    }
                }
            }
        }
    })
}

/// [`parallel_fill`] with the number of pieces given.
pub(crate) fn fill_in_pieces<T: Send>(
    out: &mut [T],
    align: usize,
    threads: usize,
    fill: impl Fn(usize, &mut [T]) + Sync,
) {
    let align = align.max(1);
    let rows = out.len() / align;
    if threads <= 1 || rows < 2 {
        fill(0, out);
        return;
    }
    let piece = rows.div_ceil(threads) * align;
    let (len, out) = (out.len(), SharedMut(out.as_mut_ptr()));
    for_each_piece(len.div_ceil(piece), |i| {
        let start = i * piece;
        // SAFETY: piece i is `out[start..start + piece]`, written by this piece only.
        let chunk =
            unsafe { std::slice::from_raw_parts_mut(out.ptr().add(start), piece.min(len - start)) };
        fill(start, chunk);
    });
}

/// `f` applied to every element of contiguous `values`, in parallel when large.
fn map_slice(values: &[f32], f: impl Fn(f32) -> f32 + Sync) -> Vec<f32> {
    parallel_collect(values.len(), 1, |start, piece| {
        for (o, &x) in piece.iter_mut().zip(&values[start..]) {
            o.write(f(x));
        }
    })
}
use ndarray::{IxDyn, Zip};
use std::mem::MaybeUninit;
use std::ops::{Add, Div, Mul, Neg, Sub};

impl Tensor {
    /// Applies `f` to pairs of elements after broadcasting both operands
    /// (`torch` style). Panics naming both shapes if they do not broadcast.
    pub fn zip_map(&self, other: &Tensor, f: impl Fn(f32, f32) -> f32 + Sync) -> Tensor {
        if let (Some(a), Some(b)) = (self.data.as_slice(), other.data.as_slice()) {
            if self.shape() == other.shape() {
                let out = parallel_collect(a.len(), 1, |start, piece| {
                    for ((o, &a), &b) in piece.iter_mut().zip(&a[start..]).zip(&b[start..]) {
                        o.write(f(a, b));
                    }
                });
                return Tensor::from_vec(out, self.shape());
            }
            // One operand repeated over the other (a scalar, a row's sum, a
            // bias), on either side: straight from memory, with no broadcast
            // view. Each element is still `f` of the pair broadcasting gives.
            if let Some(repeat) = Repeat::of(other.shape(), self.shape()) {
                return Tensor::from_vec(map_repeated(a, b, repeat, &f), self.shape());
            }
            if let Some(repeat) = Repeat::of(self.shape(), other.shape()) {
                let out = map_repeated(b, a, repeat, |b, a| f(a, b));
                return Tensor::from_vec(out, other.shape());
            }
        }
        if self.shape() == other.shape() {
            let out = Zip::from(&self.data)
                .and(&other.data)
                .map_collect(|&a, &b| f(a, b));
            return Tensor::from_array(out);
        }
        let shape = broadcast_shapes(self.shape(), other.shape()).unwrap_or_else(|e| panic!("{e}"));
        // Broadcast views have stride 0 on stretched axes, so nothing is copied.
        let a = self.data.broadcast(IxDyn(&shape)).expect("checked shape");
        let b = other.data.broadcast(IxDyn(&shape)).expect("checked shape");
        Tensor::from_array(Zip::from(&a).and(&b).map_collect(|&a, &b| f(a, b)))
    }

    /// Applies `f` to every element.
    pub fn map(&self, f: impl Fn(f32) -> f32 + Sync) -> Tensor {
        if let Some(values) = self.data.as_slice() {
            return Tensor::from_vec(map_slice(values, f), self.shape());
        }
        Tensor::from_array(self.data.map(|&x| f(x)))
    }

    /// `self + other`, broadcasting.
    pub fn add(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a + b)
    }

    /// `self - other`, broadcasting.
    pub fn sub(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a - b)
    }

    /// `self * other`, broadcasting.
    pub fn mul(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a * b)
    }

    /// `self / other`, broadcasting.
    pub fn div(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| a / b)
    }

    /// `torch.pow(self, other)` with a tensor exponent, broadcasting.
    pub fn pow(&self, exponent: &Tensor) -> Tensor {
        self.zip_map(exponent, f32::powf)
    }

    /// `torch.maximum`: the larger element; NaN wins, as in PyTorch.
    pub fn maximum(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| if a.is_nan() || a > b { a } else { b })
    }

    /// `torch.minimum`: the smaller element; NaN wins, as in PyTorch.
    pub fn minimum(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| if a.is_nan() || a < b { a } else { b })
    }

    /// `self == other` as a 1.0/0.0 mask.
    pub fn eq(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a == b))
    }

    /// `self != other` as a 1.0/0.0 mask.
    pub fn ne(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a != b))
    }

    /// `self < other` as a 1.0/0.0 mask.
    pub fn lt(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a < b))
    }

    /// `self <= other` as a 1.0/0.0 mask.
    pub fn le(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a <= b))
    }

    /// `self > other` as a 1.0/0.0 mask.
    pub fn gt(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a > b))
    }

    /// `self >= other` as a 1.0/0.0 mask.
    pub fn ge(&self, other: &Tensor) -> Tensor {
        self.zip_map(other, |a, b| mask(a >= b))
    }

    /// `self + value`.
    pub fn add_scalar(&self, value: f32) -> Tensor {
        self.map(|x| x + value)
    }

    /// `self * value`.
    pub fn mul_scalar(&self, value: f32) -> Tensor {
        self.map(|x| x * value)
    }

    /// `-self`.
    pub fn neg(&self) -> Tensor {
        self.map(|x| -x)
    }

    /// `|self|`.
    pub fn abs(&self) -> Tensor {
        self.map(f32::abs)
    }

    /// `self ** exponent`. Like PyTorch, the common exponents use exact
    /// multiplications or `sqrt` instead of the general `pow`.
    pub fn powf(&self, exponent: f32) -> Tensor {
        match exponent {
            0.5 => self.map(f32::sqrt),
            2.0 => self.map(|x| x * x),
            3.0 => self.map(|x| x * x * x),
            -0.5 => self.map(|x| 1.0 / x.sqrt()),
            -1.0 => self.map(|x| 1.0 / x),
            -2.0 => self.map(|x| 1.0 / (x * x)),
            _ => self.map(|x| x.powf(exponent)),
        }
    }

    /// `e ** self`, with `f32::exp`'s bits ([`crate::exp_in_place`]).
    pub fn exp(&self) -> Tensor {
        let src = self.contiguous();
        let values = src.data.as_slice().expect("contiguous");
        let mut out = vec![0f32; values.len()];
        parallel_fill(&mut out, 1, |start, piece| {
            piece.copy_from_slice(&values[start..start + piece.len()]);
            exp_in_place(piece);
        });
        Tensor::from_vec(out, self.shape())
    }

    /// The natural logarithm.
    pub fn log(&self) -> Tensor {
        self.map(f32::ln)
    }

    /// `log(1 + self)`, accurate near zero.
    pub fn log1p(&self) -> Tensor {
        self.map(f32::ln_1p)
    }

    /// The sine.
    pub fn sin(&self) -> Tensor {
        self.map(f32::sin)
    }

    /// The cosine.
    pub fn cos(&self) -> Tensor {
        self.map(f32::cos)
    }

    /// The hyperbolic tangent.
    pub fn tanh(&self) -> Tensor {
        let src = self.contiguous();
        let values = src.data.as_slice().expect("contiguous");
        let mut out = vec![0.0f32; values.len()];
        parallel_fill(&mut out, 1, |start, piece| {
            tanh_into(&values[start..start + piece.len()], piece)
        });
        Tensor::from_vec(out, self.shape())
    }

    /// The square root.
    pub fn sqrt(&self) -> Tensor {
        self.map(f32::sqrt)
    }

    /// `max(self, 0)`; NaN stays NaN as in PyTorch.
    pub fn relu(&self) -> Tensor {
        self.map(|x| if x > 0.0 || x.is_nan() { x } else { 0.0 })
    }

    /// `1 / (1 + e ** -self)`.
    pub fn sigmoid(&self) -> Tensor {
        self.map(|x| 1.0 / (1.0 + (-x).exp()))
    }

    /// The error function, element-wise.
    pub fn erf(&self) -> Tensor {
        self.map(|x| erf(x as f64) as f32)
    }

    /// `F.gelu(x)`: `x * Φ(x) = x/2 * (1 + erf(x/√2))`, with `Φ` from [`crate::normal_cdf`]
    /// (relative error below 1.2e-7, one `exp`), since GELU runs on every hidden
    /// unit of a transformer and the series of [`erf`] is too slow for that.
    pub fn gelu(&self) -> Tensor {
        self.slice_kernel(gelu_into)
    }

    /// Exact GELU's derivative `Φ(x) + x·φ(x)` at every element, given
    /// `cdf = Φ(x)` of the same shape ([`crate::gelu_grad`]).
    pub fn gelu_grad(&self, cdf: &Tensor) -> Tensor {
        assert_eq!(self.shape(), cdf.shape(), "gelu_grad: Φ's shape differs");
        let (x, cdf) = (self.contiguous(), cdf.contiguous());
        let (xs, cs) = (
            x.data.as_slice().expect("contiguous"),
            cdf.data.as_slice().expect("contiguous"),
        );
        let path = SimdPath::best();
        let mut out = vec![0f32; xs.len()];
        parallel_fill(&mut out, 1, |start, piece| {
            let end = start + piece.len();
            gelu_grad_into(&xs[start..end], &cs[start..end], piece, path)
        });
        Tensor::from_vec(out, self.shape())
    }

    /// [`Tensor::gelu`] and [`Tensor::normal_cdf`] of the same input in one pass:
    /// `(x·Φ(x), Φ(x))`, the output of exact GELU and what its backward keeps.
    pub fn gelu_and_cdf(&self) -> (Tensor, Tensor) {
        let src = self.contiguous();
        let values = src.data.as_slice().expect("contiguous");
        let path = SimdPath::best();
        let (mut out, mut cdf) = (vec![0f32; values.len()], vec![0f32; values.len()]);
        let cdf_ptr = SharedMut(cdf.as_mut_ptr());
        parallel_fill(&mut out, 1, |start, piece| {
            // SAFETY: each piece writes the same range of `cdf` as of `out`, and the
            // pieces are disjoint; `cdf` is as long as `out` and outlives the call.
            let cdf =
                unsafe { std::slice::from_raw_parts_mut(cdf_ptr.ptr().add(start), piece.len()) };
            gelu_and_cdf_into(&values[start..start + piece.len()], piece, cdf, path)
        });
        (
            Tensor::from_vec(out, self.shape()),
            Tensor::from_vec(cdf, self.shape()),
        )
    }

    /// Exact GELU's backward, `grad · (Φ(x) + x·φ(x))`, for `self` = x, given
    /// `cdf = Φ(x)`: [`Tensor::gelu_grad`] and the product in one pass, the same bits.
    pub fn gelu_backward(&self, cdf: &Tensor, grad: &Tensor) -> Tensor {
        assert!(
            self.shape() == cdf.shape() && self.shape() == grad.shape(),
            "gelu_backward: shapes {:?}, {:?} (Φ), {:?} (grad) differ",
            self.shape(),
            cdf.shape(),
            grad.shape()
        );
        let (x, cdf, grad) = (self.contiguous(), cdf.contiguous(), grad.contiguous());
        fn slice(t: &Tensor) -> &[f32] {
            t.data.as_slice().expect("contiguous")
        }
        let (xs, cs, gs) = (slice(&x), slice(&cdf), slice(&grad));
        let path = SimdPath::best();
        let mut out = vec![0f32; xs.len()];
        parallel_fill(&mut out, 1, |start, piece| {
            let at = start..start + piece.len();
            gelu_backward_into(&xs[at.clone()], &cs[at.clone()], &gs[at], piece, path)
        });
        Tensor::from_vec(out, self.shape())
    }

    /// `Φ(x)`, the standard normal CDF, element-wise ([`crate::normal_cdf`]).
    pub fn normal_cdf(&self) -> Tensor {
        self.slice_kernel(normal_cdf_into)
    }

    /// A kernel over contiguous values, on the CPU's widest path, in parallel when large.
    fn slice_kernel(&self, kernel: fn(&[f32], &mut [f32], SimdPath)) -> Tensor {
        let src = self.contiguous();
        let values = src.data.as_slice().expect("contiguous");
        let path = SimdPath::best();
        let mut out = vec![0f32; values.len()];
        parallel_fill(&mut out, 1, |start, piece| {
            kernel(&values[start..start + piece.len()], piece, path)
        });
        Tensor::from_vec(out, self.shape())
    }

    /// `F.gelu(x, approximate='tanh')`, GPT-2's activation:
    /// `x/2 * (1 + tanh(√(2/π) * (x + 0.044715 x³)))` ([`crate::gelu_tanh`]).
    pub fn gelu_tanh(&self) -> Tensor {
        self.slice_kernel(gelu_tanh_into)
    }

    /// The tanh GELU's derivative at every element ([`crate::gelu_tanh_grad`]),
    /// what its backward multiplies the incoming gradient by.
    pub fn gelu_tanh_grad(&self) -> Tensor {
        self.slice_kernel(gelu_tanh_grad_into)
    }
}

// Operators take the left-hand tensor by reference only. An impl for an owned
// `Tensor` receiver would shadow the inherent `a.mul(&b)`: method lookup tries
// by-value trait methods before by-reference inherent ones, and would move `a`.
macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:tt) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.zip_map(rhs, |a, b| a $op b)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self $op &rhs
            }
        }
        impl $trait<f32> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: f32) -> Tensor {
                self.map(|a| a $op rhs)
            }
        }
        impl $trait<&Tensor> for f32 {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                rhs.map(|b| self $op b)
            }
        }
        impl $trait<Tensor> for f32 {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self $op &rhs
            }
        }
    };
}

binary_operator!(Add, add, +);
binary_operator!(Sub, sub, -);
binary_operator!(Mul, mul, *);
binary_operator!(Div, div, /);

impl Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        self.map(|x| -x)
    }
}

fn mask(condition: bool) -> f32 {
    if condition {
        1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_operand_takes_the_path_that_reads_it_in_memory_order() {
        use super::Repeat::{self, Rows, Runs, Scalar};
        let cases: [(&[usize], &[usize], Option<Repeat>); 8] = [
            (&[], &[300, 128], Some(Scalar)),
            (&[1], &[300, 128], Some(Scalar)),
            (&[1, 1, 1], &[2, 3, 4], Some(Scalar)),
            (&[300, 1], &[300, 128], Some(Runs(128))),
            (&[128], &[300, 128], Some(Rows)),
            (&[1, 300, 128], &[2, 300, 128], Some(Rows)),
            (&[1, 1, 1], &[4], None),
            (&[3, 1], &[1, 4], None),
        ];
        for (small, large, want) in cases {
            assert_eq!(Repeat::of(small, large), want, "{small:?} over {large:?}");
        }
    }

    use super::*;
    use crate::normal_cdf;

    fn values(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7919) % 2003) as f32 / 250.0 - 4.0)
            .collect()
    }

    /// Cutting a pass into pieces changes no bit: an element-wise function and
    /// a row-wise one (rows of 37, a row's sum reused), on 1 to 5 threads.
    #[test]
    fn pieces_give_the_same_bits_as_one_pass() {
        let x = values(100_003 - 100_003 % 37);
        let gelu = |start: usize, piece: &mut [f32]| {
            for (o, &x) in piece.iter_mut().zip(&x[start..]) {
                *o = x * normal_cdf(x);
            }
        };
        let rows = |start: usize, piece: &mut [f32]| {
            for (o, x) in piece.chunks_mut(37).zip(x[start..].chunks(37)) {
                let sum: f32 = x.iter().sum();
                for (o, &x) in o.iter_mut().zip(x) {
                    *o = x / sum;
                }
            }
        };
        let mut one = vec![0f32; x.len()];
        fill_in_pieces(&mut one, 1, 1, gelu);
        let mut one_rows = vec![0f32; x.len()];
        fill_in_pieces(&mut one_rows, 37, 1, rows);
        for threads in 2..=5 {
            let mut many = vec![f32::NAN; x.len()];
            fill_in_pieces(&mut many, 1, threads, gelu);
            assert_eq!(bits(&many), bits(&one), "{threads} threads");
            let mut many = vec![f32::NAN; x.len()];
            fill_in_pieces(&mut many, 37, threads, rows);
            assert_eq!(bits(&many), bits(&one_rows), "{threads} threads, rows");
        }
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The row-by-row path for a trailing operand (a bias) agrees with
    /// ndarray's broadcast, including an operand with leading ones.
    #[test]
    fn a_trailing_operand_broadcasts_as_ndarray_does() {
        let a = Tensor::from_vec(values(3 * 300 * 128), &[3, 300, 128]);
        for shape in [
            vec![128],
            vec![1, 128],
            vec![300, 128],
            vec![1, 1, 1],
            vec![1, 300, 128],
        ] {
            let n: usize = shape.iter().product();
            let b = Tensor::from_vec(values(n + 5)[5..].to_vec(), &shape);
            let got = a.sub(&b);
            let stretched = b.data.broadcast(IxDyn(a.shape())).expect("broadcasts");
            let want = Zip::from(&a.data)
                .and(&stretched)
                .map_collect(|&a, &b| a - b);
            assert_eq!(got.shape(), a.shape(), "{shape:?}");
            assert_eq!(
                bits(&got.to_vec()),
                bits(&want.iter().copied().collect::<Vec<_>>()),
                "{shape:?}"
            );
        }
    }
}

#[cfg(test)]
mod gelu_pass_tests {
    use crate::Tensor;

    /// The one-pass forward and backward give the bits of the passes they replace, across
    /// GELU's range (both tails, zero, the infinities and NaN), on a length that leaves
    /// a tail after the widest lanes.
    #[test]
    fn exact_gelu_in_one_pass_gives_the_separate_passes_bits() {
        let mut values: Vec<f32> = (0..4099).map(|i| (i as f32 - 2049.0) / 90.0).collect();
        values.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -13.5,
            13.5,
        ]);
        let n = values.len();
        let x = Tensor::from_vec(values, &[n]);
        let grad = Tensor::from_vec(
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
                .collect(),
            &[n],
        );
        let bits = |t: &Tensor| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let (out, cdf) = x.gelu_and_cdf();
        assert_eq!(bits(&out), bits(&x.gelu()));
        assert_eq!(bits(&cdf), bits(&x.normal_cdf()));
        assert_eq!(
            bits(&x.gelu_backward(&cdf, &grad)),
            bits(&grad.mul(&x.gelu_grad(&cdf)))
        );
    }
}

#[cfg(test)]
mod sum_tests {
    use super::*;

    /// The same bits on 1, 2 and 3 threads, on every path; within `n·2⁻⁵²` of
    /// the in-order sum; and the empty slice sums to 0.
    #[test]
    fn sum_of_squares_is_blocked_in_a_fixed_order() {
        let mut g = crate::rng::TorchGenerator::manual_seed(3);
        for n in [
            0,
            1,
            17,
            SUM_PIECE - 1,
            SUM_PIECE,
            3 * SUM_PIECE + 5,
            1_000_003,
        ] {
            let xs = g.randn(&[n]).to_vec();
            let in_order: f64 = xs.iter().map(|&x| x as f64 * x as f64).sum();
            let one = sum_of_squares_on(&xs, 1);
            for threads in [2, 3] {
                assert_eq!(
                    sum_of_squares_on(&xs, threads).to_bits(),
                    one.to_bits(),
                    "n = {n}"
                );
            }
            if n <= SUM_PIECE {
                // One piece: the blocked kernel itself, the same on every path.
                for path in SimdPath::available() {
                    let whole = sum_squares_f64_blocked(&xs, path);
                    assert_eq!(whole.to_bits(), one.to_bits(), "n = {n} on {path:?}");
                }
            }
            assert!(
                (one - in_order).abs() <= n as f64 * f64::EPSILON * in_order,
                "n = {n}: {one} vs {in_order} in order"
            );
        }
        assert_eq!(sum_of_squares(&[]), 0.0);
    }
}
