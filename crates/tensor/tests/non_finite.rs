//! `Tensor::non_finite_kinds`, which the NaN diagnosis keeps for a freed
//! value: each kind found wherever it sits, in any thread's piece, and the
//! largest finite values not mistaken for infinities.

use tensor::Tensor;

#[test]
fn each_kind_is_found_wherever_it_sits() {
    let len = 1 << 20; // several pieces on two threads
    let with = |at: usize, v: f32| {
        let mut values = vec![1.5f32; len];
        values[at] = v;
        Tensor::from_vec(values, &[len / 64, 64])
    };
    assert_eq!(with(0, f32::MAX).non_finite_kinds(), [false; 3]);
    assert_eq!(with(len - 1, -f32::MAX).non_finite_kinds(), [false; 3]);
    assert_eq!(
        with(len - 1, f32::NAN).non_finite_kinds(),
        [true, false, false]
    );
    assert_eq!(
        with(len / 2 + 3, f32::INFINITY).non_finite_kinds(),
        [false, true, false]
    );
    assert_eq!(
        with(7, f32::NEG_INFINITY).non_finite_kinds(),
        [false, false, true]
    );
    let mut all = vec![0.0f32; 6];
    all[1] = -f32::NAN;
    all[3] = f32::INFINITY;
    all[5] = f32::NEG_INFINITY;
    let t = Tensor::from_vec(all, &[2, 3]);
    assert_eq!(t.non_finite_kinds(), [true, true, true]);
    // A transposed view goes element by element.
    assert_eq!(t.transpose(0, 1).non_finite_kinds(), [true, true, true]);
    assert_eq!(with(0, 2.0).transpose(0, 1).non_finite_kinds(), [false; 3]);
}
