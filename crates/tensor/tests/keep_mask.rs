//! Dropout's keep mask held as bits: the same draws as the `f32` mask, and
//! the same dropout, bit for bit, whole or a few leading rows at a time.

use tensor::rng::TorchGenerator;
use tensor::{KeepMask, Tensor};

#[test]
fn the_bit_mask_holds_the_f32_masks_draws() {
    for (p, shape) in [
        (0.2, vec![3, 70, 11]),
        (0.5, vec![1]),
        (0.0, vec![5, 9]),
        (1.0, vec![130]),
    ] {
        let mut as_floats = TorchGenerator::manual_seed(1337);
        let mut as_bits = as_floats.clone();
        let mask = as_floats.bernoulli_keep_mask(p, &shape);
        let bits = as_bits.bernoulli_keep_bits(p, &shape);
        assert_eq!(bits.unpack().to_vec(), mask.to_vec(), "p = {p}");
        assert_eq!(
            KeepMask::pack(&mask).unpack().to_vec(),
            mask.to_vec(),
            "p = {p}: packed"
        );
        // Both left the generator at the same place.
        assert_eq!(
            as_floats.random(),
            as_bits.random(),
            "p = {p}: the next draw"
        );
    }
}

#[test]
fn dropout_from_bits_gives_the_masks_bits() {
    let mut gen = TorchGenerator::manual_seed(7);
    let x = gen.randn(&[4, 3, 50]);
    // Infinities and NaN go through `x * m * scale` as they do with the f32 mask.
    let x = Tensor::from_vec(
        x.to_vec()
            .into_iter()
            .enumerate()
            .map(|(i, v)| match i {
                0 => f32::INFINITY,
                1 => f32::NAN,
                _ => v,
            })
            .collect(),
        x.shape(),
    );
    let mask = gen.bernoulli_keep_mask(0.3, x.shape());
    let keep = KeepMask::pack(&mask);
    let same = |a: &Tensor, b: &Tensor| {
        a.to_vec()
            .iter()
            .zip(b.to_vec())
            .all(|(x, y)| x.to_bits() == y.to_bits())
    };
    assert!(same(
        &x.dropout_with_keep(&keep, 0, 0.3),
        &x.dropout_with_mask(&mask, 0.3)
    ));
    // Rows 1..4 alone: the mask's elements from row 1 on.
    let rows = x.narrow(0, 1, 3);
    let expected = rows.dropout_with_mask(&mask.narrow(0, 1, 3).contiguous(), 0.3);
    assert!(same(&rows.dropout_with_keep(&keep, 150, 0.3), &expected));
}

#[test]
#[should_panic(expected = "dropout: elements 150..750 of a keep mask of [4, 3, 50]")]
fn dropout_from_bits_names_a_mask_too_short() {
    let keep = KeepMask::pack(&Tensor::ones(&[4, 3, 50]));
    Tensor::ones(&[4, 3, 50]).dropout_with_keep(&keep, 150, 0.1);
}
