//! `scatter_add_rows`, an embedding's backward, against the dense f64
//! accumulation it replaced: every row of the table, looked up or not, to the
//! bit, with repeated lookups summed in lookup order.

use tensor::rng::TorchGenerator;
use tensor::Tensor;

#[test]
fn only_the_rows_looked_up_get_sums_and_they_are_the_dense_sums() {
    let mut gen = TorchGenerator::manual_seed(11);
    let (rows, width) = (1000, 24);
    // Repeats (row 7 many times), the first and last rows, most rows never.
    let mut idx: Vec<usize> = (0..300).map(|n| (n * 37) % 97).collect();
    idx.extend([7; 50]);
    idx.extend([0, rows - 1, 7]);
    let src = gen.randn(&[idx.len(), width]);
    let values = src.to_vec();
    let mut dense = vec![0f64; rows * width];
    for (n, &i) in idx.iter().enumerate() {
        for j in 0..width {
            dense[i * width + j] += values[n * width + j] as f64;
        }
    }
    let want: Vec<u32> = dense.iter().map(|&v| (v as f32).to_bits()).collect();
    let got = Tensor::scatter_add_rows(rows, &idx, &src);
    assert_eq!(got.shape(), [rows, width]);
    let got: Vec<u32> = got.to_vec().iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want);
}
