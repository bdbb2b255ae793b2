//! `Tensor::concat` along the last axis (the video's heads side by side),
//! which copies rows in parallel, against the element-by-element definition.

use tensor::rng::TorchGenerator;
use tensor::Tensor;

#[test]
fn concat_along_the_last_axis_puts_each_row_side_by_side() {
    let mut gen = TorchGenerator::manual_seed(3);
    for widths in [vec![4, 1, 5], vec![64; 6], vec![0, 3], vec![7]] {
        let lead = [3, 129];
        let parts: Vec<Tensor> = widths
            .iter()
            .map(|&w| gen.randn(&[lead[0], lead[1], w]))
            .collect();
        let joined = Tensor::concat(&parts.iter().collect::<Vec<_>>(), -1);
        let width: usize = widths.iter().sum();
        assert_eq!(joined.shape(), [lead[0], lead[1], width]);
        let got = joined.to_vec();
        let values: Vec<Vec<f32>> = parts.iter().map(Tensor::to_vec).collect();
        for row in 0..lead[0] * lead[1] {
            let mut offset = 0;
            for (part, &w) in values.iter().zip(&widths) {
                assert_eq!(
                    &got[row * width + offset..][..w],
                    &part[row * w..][..w],
                    "row {row}"
                );
                offset += w;
            }
        }
        // A strided part goes the general way, to the same values.
        let strided: Vec<Tensor> = parts
            .iter()
            .map(|p| p.transpose(0, 1).contiguous().transpose(0, 1))
            .collect();
        let general = Tensor::concat(&strided.iter().collect::<Vec<_>>(), -1);
        assert_eq!(general.to_vec(), got, "{widths:?}");
    }
}
