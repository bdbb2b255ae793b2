//! A binary op whose one operand is constant along the other's trailing axes
//! (`counts / counts.sum(1, keepdim=True)`, a row's max or its norm) against
//! the same op on both operands made whole first: the same bits, whichever
//! side is the small one, and across the threads' pieces. And the row sums
//! that make such an operand, against a sum in order.

use tensor::rng::TorchGenerator;
use tensor::Tensor;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

/// `small` spread over `large` by hand: each element of `large` reads
/// `small` at the same index, at 0 along `small`'s axes of size 1, and along
/// the leading axes `small` lacks. (Not `broadcast_to`, which takes the path
/// under test.)
fn spread(small: &Tensor, large: &[usize]) -> Tensor {
    let values = small.to_vec();
    let mut shape = vec![1; large.len() - small.ndim()];
    shape.extend_from_slice(small.shape());
    let whole = (0..large.iter().product())
        .map(|flat: usize| {
            let (mut rest, mut at, mut stride) = (flat, 0, 1);
            for axis in (0..large.len()).rev() {
                let i = rest % large[axis];
                rest /= large[axis];
                if shape[axis] != 1 {
                    at += i * stride;
                }
                stride *= shape[axis];
            }
            values[at]
        })
        .collect();
    Tensor::from_vec(whole, large)
}

/// `small` against `large`, divided both ways and subtracted both ways: the
/// shape and bits of the same ops on `small` spread whole.
fn same_bits_as_spread(gen: &mut TorchGenerator, small: &[usize], large: &[usize]) {
    let (s, l) = (gen.randn(small), gen.randn(large));
    let s_whole = spread(&s, large);
    for (name, got, want) in [
        ("large / small", l.div(&s), l.div(&s_whole)),
        ("small / large", s.div(&l), s_whole.div(&l)),
        ("large - small", l.sub(&s), l.sub(&s_whole)),
        ("small - large", s.sub(&l), s_whole.sub(&l)),
    ] {
        assert_eq!(got.shape(), large, "{name} {small:?} {large:?}");
        assert_eq!(bits(&got), bits(&want), "{name} {small:?} {large:?}");
    }
}

#[test]
fn a_value_per_row_gives_the_bits_of_the_whole_broadcast() {
    let mut gen = TorchGenerator::manual_seed(3);
    // (small, large): the bigram's rows, a batch of rows, all ones, a wide run.
    let shapes: [(&[usize], &[usize]); 5] = [
        (&[228_146, 1], &[228_146, 27]),
        (&[5, 1], &[5, 7]),
        (&[2, 3, 1], &[2, 3, 4]),
        (&[4, 1, 1], &[4, 3, 5]),
        (&[1, 1], &[3, 4]),
    ];
    for (small, large) in shapes {
        same_bits_as_spread(&mut gen, small, large);
    }
}

#[test]
fn a_row_sum_gives_the_bits_of_an_in_order_f64_sum() {
    let mut gen = TorchGenerator::manual_seed(4);
    for shape in [&[228_146, 27][..], &[3, 5, 7], &[9, 1], &[13, 64]] {
        let t = gen.randn(shape);
        let width = shape[shape.len() - 1];
        let want: Vec<u32> = t
            .to_vec()
            .chunks(width)
            .map(|row| (row.iter().map(|&x| x as f64).sum::<f64>() as f32).to_bits())
            .collect();
        let got = t.sum(-1, true);
        let mut kept = shape.to_vec();
        *kept.last_mut().expect("an axis") = 1;
        assert_eq!(got.shape(), kept, "{shape:?}");
        assert_eq!(bits(&got), want, "{shape:?}");
    }
    let empty_rows = Tensor::zeros(&[2, 0]).sum(-1, true);
    assert_eq!(
        empty_rows.to_vec(),
        [0.0, 0.0],
        "rows of no elements sum to 0"
    );
}

#[test]
fn a_row_value_spread_over_its_row_is_the_broadcast() {
    let mut gen = TorchGenerator::manual_seed(5);
    for (small, large) in [(&[4096, 1][..], &[4096, 27][..]), (&[2, 3, 1], &[2, 3, 5])] {
        let s = gen.randn(small);
        let want: Vec<f32> = s
            .to_vec()
            .iter()
            .flat_map(|&v| std::iter::repeat_n(v, large[large.len() - 1]))
            .collect();
        assert_eq!(
            s.broadcast_to(large).to_vec(),
            want,
            "{small:?} to {large:?}"
        );
    }
}

#[test]
fn a_one_element_operand_or_a_bias_gives_the_bits_of_the_whole_broadcast() {
    let mut gen = TorchGenerator::manual_seed(6);
    // (small, large): a scalar of each rank (the first in pieces across
    // threads), an empty result, and a bias with fewer axes.
    let shapes: [(&[usize], &[usize]); 7] = [
        (&[], &[228_146, 27]),
        (&[1], &[228_146, 27]),
        (&[1, 1], &[5, 7]),
        (&[1, 1, 1], &[2, 3, 4]),
        (&[1], &[0, 3]),
        (&[7], &[5, 7]),
        (&[1, 64], &[4096, 64]),
    ];
    for (small, large) in shapes {
        same_bits_as_spread(&mut gen, small, large);
    }
    // More axes on the one-element side: the result takes them.
    let (s, l) = (gen.randn(&[1, 1, 1]), gen.randn(&[4]));
    let got = l.sub(&s);
    assert_eq!(got.shape(), [1, 1, 4]);
    let want: Vec<f32> = l.to_vec().iter().map(|&x| x - s.to_vec()[0]).collect();
    assert_eq!(bits(&got), bits(&Tensor::from_vec(want, &[1, 1, 4])));
}
